"""MkDocs hooks: generate the reference pages from the code at build time (nothing generated is committed).

- ``reference/toml.md``: the experiment TOML reference (``scripts/docgen/toml_reference.py``);
- ``reference/cli.md``: the command-line reference (``scripts/docgen/cli_reference.py``);
- ``reference/experiments.md``: the shipped experiment files, verbatim;
- ``reference/compatibility.md``: which algorithm runs on which environment kind, and why not;
- ``algorithms/<family>.md``: one page per algorithm family of the registry; a hand-written page
  in ``docs/algorithms/`` gets its generated part where it has the family marker;
- ``api/<module>.md``: one mkdocstrings page per public module;
- ``notebooks/<name>.md``: each ``docs/notebooks/<name>.ipynb``, executed at build time.

The nav entries ``GENERATED:algorithms`` and ``GENERATED:api`` of ``mkdocs.yml`` are replaced by
the generated pages, so a newly registered algorithm family or a new module appears by itself.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # docgen: the page generators

import docgen
from docgen.algorithm_reference import family_title
from docgen.compatibility import render_compatibility_page
from docgen.notebook import notebook_pages
from mkdocs.structure.files import File, Files


def _family_pages(docs_dir: Path) -> dict[str, tuple[str, str]]:
    """Family -> (page path, markdown)."""
    pages = {}
    for family in docgen.list_families():
        handwritten = docs_dir / "algorithms" / f"{family}.md"
        text = handwritten.read_text(encoding="utf-8") if handwritten.exists() else None
        pages[family] = (f"algorithms/{family}.md", docgen.render_family_page(family, text))
    return pages


def _page_title(markdown: str) -> str:
    """The text of the page's first level-1 heading ("" if none)."""
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def _api_pages() -> dict[str, tuple[str, str]]:
    pages = {}
    for module in docgen.api_modules():
        body = f"# `{module}`\n\n::: {module}\n    options:\n      show_root_heading: false\n"
        pages[module] = (f"api/{module}.md", body)
    return pages


def _experiments_page() -> str:
    from privbandits.experiments.presets import available_presets, preset_text

    out = [
        "# Shipped experiments",
        "",
        "The experiment files shipped with the library: run one with `privbandits reproduce NAME` "
        "(`--quick` for a short run), or copy it as the starting point of your own configuration "
        "(`privbandits run my.toml`).  Each is an ordinary experiment file in the format of the "
        "[TOML reference](toml.md).",
        "",
    ]
    for name, title in available_presets().items():
        out += [f"## {name}", "", title, "", "```toml", preset_text(name).rstrip(), "```", ""]
    return "\n".join(out)


def on_config(config: Any) -> Any:
    """Replace the ``GENERATED:...`` nav placeholders by the generated pages."""
    docs_dir = Path(config["docs_dir"])
    families = _family_pages(docs_dir)
    api = _api_pages()

    def expand(items: list[Any]) -> list[Any]:
        out: list[Any] = []
        for item in items:
            if item == "GENERATED:algorithms":
                out += [
                    {_page_title(text) or family_title(f): path}
                    for f, (path, text) in families.items()
                ]
            elif item == "GENERATED:api":
                groups: dict[str, list[Any]] = {}
                for module, (path, _) in api.items():
                    top = ".".join(module.split(".")[:2])
                    groups.setdefault(top, []).append({module: path})
                out += [{top: entries} for top, entries in groups.items()]
            elif isinstance(item, dict):
                out.append({k: expand(v) if isinstance(v, list) else v for k, v in item.items()})
            else:
                out.append(item)
        return out

    config["nav"] = expand(config["nav"])
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Expand the all-algorithms marker of the algorithms index."""
    marker = "<!-- privbandits:all-algorithms -->"
    if marker not in markdown:
        return markdown
    parts = []
    for family, classes in docgen.list_families().items():
        table = docgen.render_algorithm_table(classes, link=False)
        parts += [f"## [{family_title(family)}]({family}.md)", "", table, ""]
    return markdown.replace(marker, "\n".join(parts))


_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|obj|exc|ref):(?=<code)")
_TILDE = re.compile(r"(<code[^>]*>)~")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Drop the reStructuredText role prefixes (``:func:`` ...) that docstrings use for Sphinx."""
    return _TILDE.sub(r"\1", _ROLE.sub("", html))


def on_files(files: Files, config: Any) -> Files:
    """Add the generated pages (replacing hand-written family pages by their expanded form)."""
    docs_dir = Path(config["docs_dir"])
    generated = {
        "reference/toml.md": docgen.render_toml_reference(),
        "reference/cli.md": docgen.render_cli_reference(),
        "reference/experiments.md": _experiments_page(),
        "reference/compatibility.md": render_compatibility_page(),
    }
    generated.update(dict(_family_pages(docs_dir).values()))
    generated.update(dict(_api_pages().values()))
    generated.update(notebook_pages(docs_dir))  # executed now: a failing cell fails the build
    for path, content in generated.items():
        existing = files.get_file_from_path(path)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, path, content=content))
    return files
