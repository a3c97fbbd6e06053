"""Algorithm family pages: the registered algorithms grouped by family, with their parameters.

A family is the package (or module) of :mod:`privbandits.algorithms` that defines the algorithm;
the single-module non-private baselines share the page ``baselines``.  A family page is either
written by hand (``docs/algorithms/<family>.md``, with the marker :data:`FAMILY_MARKER` where the
generated part goes) or, for a family without one, generated from the package docstring, so an
algorithm registered later appears in the documentation without further work.
"""

from __future__ import annotations

import inspect
from typing import Any

from docgen.numpydoc import first_paragraph, parameter_docs, rst_to_markdown

__all__ = [
    "BASELINE_MODULES",
    "FAMILY_MARKER",
    "family_of",
    "list_families",
    "render_algorithm_table",
    "render_family_page",
    "render_parameters",
]

#: Marker a hand-written family page puts where the generated algorithm sections go.
FAMILY_MARKER = "<!-- privbandits:family -->"

#: Packages of :mod:`privbandits.algorithms` whose algorithms are documented together as baselines.
BASELINE_MODULES: tuple[str, ...] = ("linear", "glm")

_PREFIX = "privbandits.algorithms."


def family_of(cls: type) -> str:
    """The family page name of algorithm class ``cls`` (``"ldp-glb"``, ``"hanna"``, ``"baselines"``)."""
    module = cls.__module__
    if not module.startswith(_PREFIX):
        return "other"
    top = module[len(_PREFIX) :].split(".", 1)[0]
    return "baselines" if top in BASELINE_MODULES else top.replace("_", "-")


def list_families() -> dict[str, list[type]]:
    """Family page name -> its registered algorithm classes (registry order); the paper families
    sorted by name, then the baselines."""
    from privbandits.algorithms import available

    out: dict[str, list[type]] = {}
    for cls in available().values():
        out.setdefault(family_of(cls), []).append(cls)
    return dict(sorted(out.items(), key=lambda item: (item[0] in ("baselines", "other"), item[0])))


def family_title(family: str) -> str:
    """Page title: the first line of the family package's docstring (or the family name)."""
    import importlib

    if family in ("baselines", "other"):
        return {"baselines": "Non-private baselines", "other": "Other algorithms"}[family]
    try:
        mod = importlib.import_module(_PREFIX + family.replace("-", "_"))
    except ImportError:
        return family
    line = first_paragraph(mod).split(":", 1)[0].strip().rstrip(".")
    return line or family


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(value: Any) -> str:
    if value is inspect.Parameter.empty:
        return "required"
    if value is None:
        return "`None`"
    return f"`{value!r}`" if not isinstance(value, str) else f'`"{value}"`'


def render_parameters(cls: type) -> str:
    """Markdown table of ``cls``'s constructor parameters: default, allowed values, meaning."""
    sig = getattr(cls, "_signature", None)
    if sig is None:
        return "No parameters."
    docs = parameter_docs(cls)
    constraints = cls.all_constraints()  # type: ignore[attr-defined]
    rows = ["| parameter | default | allowed | meaning |", "|---|---|---|---|"]
    for name, p in list(sig.parameters.items())[1:]:
        c = constraints.get(name)
        allowed = c.describe() if c is not None else "any"
        rows.append(
            f"| `{name}` | {_cell(_default(p.default))} | {_cell(allowed)} | "
            f"{_cell(docs.get(name, ('', ''))[1])} |"
        )
    return "\n".join(rows)


def render_algorithm_table(classes: list[type], link: bool = True) -> str:
    """Markdown table: name, paper, trust model, settings, links of each algorithm in ``classes``."""
    rows = ["| name | paper | trust model | settings | reward links |", "|---|---|---|---|---|"]
    for cls in classes:
        name = f"[`{cls.name}`](#{cls.name})" if link else f"`{cls.name}`"  # type: ignore[attr-defined]
        rows.append(
            f"| {name} | {_cell(cls.paper)} | {cls.trust_model} | "  # type: ignore[attr-defined]
            f"{', '.join(cls.settings)} | {', '.join(cls.links)} |"
        )  # type: ignore[attr-defined]
    return "\n".join(rows)


def _algorithm_section(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    body = doc.split("\nParameters\n", 1)[0].strip()
    return "\n".join(
        [
            f"## `{cls.name}` {{#{cls.name}}}",
            "",  # type: ignore[attr-defined]
            f"`{cls.__module__}.{cls.__qualname__}` (trust model: {cls.trust_model}; "  # type: ignore[attr-defined]
            f"settings: {', '.join(cls.settings)}; links: {', '.join(cls.links)}; "  # type: ignore[attr-defined]
            f"{cls.paper or 'no paper'}).",
            "",  # type: ignore[attr-defined]
            rst_to_markdown(body),
            "",
            "### Parameters",
            "",
            render_parameters(cls),
            "",
        ]
    )


def render_family_sections(family: str) -> str:
    """The generated part of a family page: its algorithm table and one section per algorithm."""
    classes = list_families().get(family, [])
    parts = [render_algorithm_table(classes), ""] + [_algorithm_section(c) for c in classes]
    return "\n".join(parts)


def render_family_page(family: str, handwritten: str | None = None) -> str:
    """A family page: ``handwritten`` with the marker expanded, or a page from the package docstring."""
    sections = render_family_sections(family)
    if handwritten is not None:
        if FAMILY_MARKER not in handwritten:
            return handwritten.rstrip() + "\n\n" + sections
        return handwritten.replace(FAMILY_MARKER, sections)
    import importlib

    intro = ""
    try:
        intro = inspect.getdoc(importlib.import_module(_PREFIX + family.replace("-", "_"))) or ""
    except ImportError:
        pass
    intro = rst_to_markdown(intro)
    return "\n".join([f"# {family_title(family)}", "", intro, "", sections])
