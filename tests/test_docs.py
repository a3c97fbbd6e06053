"""The generated reference pages cover the code: every CLI command and option, every TOML key,
every registered algorithm and its parameters; the examples in the hand-written pages are valid."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from docgen import (
    cli_commands,
    family_of,
    list_families,
    render_cli_reference,
    render_family_page,
    render_toml_reference,
    toml_keys,
)
from docgen.numpydoc import parameter_docs, rst_to_markdown
from docgen.toml_reference import undocumented_keys

from privbandits.algorithms import available
from privbandits.experiments.config import parse_config

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_cli_reference_lists_every_command_and_option() -> None:
    text = render_cli_reference()
    commands = cli_commands()
    assert {"demo", "run", "sweep", "reproduce", "plot", "export", "list", "audit"} <= set(commands)
    for command, names in commands.items():
        assert f"\n## {command}\n" in text, command
        section = text.split(f"\n## {command}\n", 1)[1].split("\n## ", 1)[0]
        for name in names:
            assert f"`{name}`" in section, (command, name)
    assert "`--grid`, `-g`" in text and "`--horizon`, `-T`" in text


def test_toml_reference_lists_every_key() -> None:
    assert undocumented_keys() == [], (
        "give these configuration keys a description in docgen.toml_reference.KEY_DOCS"
    )
    text = render_toml_reference()
    for table, keys in toml_keys().items():
        for key in keys:
            assert f"`{key}`" in text, (table, key)
    for heading in (
        "## Top level",
        "## [env]",
        "## [[algorithms]]",
        "## [quick]",
        "## [plot]",
        "## [report]",
        "## `params` versus `grid`",
    ):
        assert heading in text
    assert "| `horizon` | integer >= 1 | required |" in text
    assert (
        '| `band` | "ci95" \\| "se" \\| number >= 0 | "ci95" |' in text
    )  # default read from PlotConfig


def test_every_algorithm_has_a_family_page_with_its_parameters() -> None:
    families = list_families()
    assert sum(len(v) for v in families.values()) == len(available())
    for family, classes in families.items():
        handwritten = DOCS / "algorithms" / f"{family}.md"
        page = render_family_page(family, handwritten.read_text() if handwritten.exists() else None)
        assert "<!-- privbandits:family -->" not in page
        for cls in classes:
            assert family_of(cls) == family
            section = page.split(f"## `{cls.name}` {{#{cls.name}}}", 1)[1].split("\n## ", 1)[0]
            for param in cls.param_names():
                assert f"| `{param}` |" in section, (cls.name, param)
    assert (
        family_of(available()["ldp-sgd"]) == "ldp-glb"
        and family_of(available()["linucb"]) == "baselines"
    )


def test_family_page_without_handwritten_text_is_generated_from_the_package() -> None:
    page = render_family_page("ldp-zheng")
    assert page.startswith("# Locally private contextual bandits of Zheng")
    assert "## `ldp-ucb` {#ldp-ucb}" in page and "| `epsilon` |" in page


def test_numpydoc_parameters_are_read() -> None:
    class Example:
        """Summary.

        Parameters
        ----------
        a, b : int
            First line
            second line with :class:`~x.y.Z`.
        c :
            Untyped.

        Returns
        -------
        None
        """

    docs = parameter_docs(Example)
    assert docs == {
        "a": ("int", "First line second line with `Z`."),
        "b": ("int", "First line second line with `Z`."),
        "c": ("", "Untyped."),
    }
    assert rst_to_markdown("``x`` and :mod:`privbandits.core`") == "`x` and `privbandits.core`"


def _toml_blocks() -> list[tuple[str, str]]:
    blocks = []
    for page in sorted(DOCS.glob("*.md")):
        for i, block in enumerate(re.findall(r"```toml\n(.*?)```", page.read_text(), flags=re.S)):
            if "[[algorithms]]" in block and "horizon" in block:
                blocks.append((f"{page.name}#{i}", block))
    return blocks


@pytest.mark.parametrize(
    ("where", "text"), _toml_blocks(), ids=lambda v: v if "#" in str(v) else ""
)
def test_documented_configurations_are_valid(where: str, text: str) -> None:
    if "\n[service]" in text:  # a served configuration (privbandits serve)
        from privbandits.service.config import parse_service_config

        served = parse_service_config(tomllib.loads(text), source=where)
        assert served.algorithm and served.horizon >= 1
        return
    cfg = parse_config(text, source=where)
    assert cfg.units()


def test_documented_configurations_exist() -> None:
    assert {w.split("#")[0] for w, _ in _toml_blocks()} >= {
        "getting-started.md",
        "configuration.md",
    }


SRC = Path(__file__).resolve().parents[1] / "src" / "privbandits"


def _source_texts() -> list[tuple[str, str]]:
    return [
        (str(p.relative_to(SRC)), p.read_text(encoding="utf-8"))
        for p in sorted(SRC.rglob("*"))
        if p.suffix in (".py", ".toml")
    ]


def test_corrections_cited_in_the_code_are_documented() -> None:
    """Every "correction Han21-4" a docstring or message cites is listed on a family page."""
    listed = set(
        re.findall(
            r"\*\*((?:Han21|Zheng20|Hanna22)-\d+) —",
            "".join(p.read_text() for p in (DOCS / "algorithms").glob("*.md")),
        )
    )
    cited = {
        m
        for _, text in _source_texts()
        for m in re.findall(r"\b((?:Han21|Zheng20|Hanna22)-\d+)\b", text)
    }
    assert cited and cited <= listed, sorted(cited - listed)


def test_concepts_sections_cited_in_the_code_exist() -> None:
    headings = {
        h.strip().lower()
        for h in re.findall(r"^## (.+)$", (DOCS / "concepts.md").read_text(), flags=re.M)
    }
    cited = {
        m.lower()
        for _, text in _source_texts()
        for m in re.findall(r"Concepts: ([a-z][a-z ]+[a-z])", text)
    }
    missing = [c for c in cited if not any(c.startswith(h) for h in headings)]
    assert cited and not missing, missing


def test_code_cites_no_file_a_user_does_not_have() -> None:
    pattern = re.compile(
        r"DESIGN section|spec section|spec §|\bspecs?/|docs/[\w./-]+\.md|\[CHOICE\]"
    )
    offenders = [
        (name, m.group(0)) for name, text in _source_texts() for m in pattern.finditer(text)
    ]
    assert offenders == []
