"""Execute the documentation's notebooks at build time and render them as pages.

A notebook (``docs/notebooks/*.ipynb``, nbformat 4) is run top to bottom in one fresh namespace,
in a temporary working directory, the way a kernel runs it: each code cell's printed output is kept,
and when its last statement is an expression, that value is displayed (its ``_repr_html_`` if it
has one, else its ``repr``).  The page shows the markdown cells, the code and the outputs, so the
outputs on the site are always those of the current version; an exception in a cell fails the
build with the cell's number.  The ``.ipynb`` itself is published beside the page for download.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CellOutput", "execute_notebook", "notebook_pages", "render_notebook"]


@dataclass(frozen=True)
class CellOutput:
    """What one cell produced: its kind, its source, printed text and the displayed value."""

    kind: str
    source: str
    stdout: str = ""
    html: str = ""
    text: str = ""


class NotebookError(RuntimeError):
    """A cell of a documentation notebook raised."""


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def execute_notebook(path: str | Path) -> list[CellOutput]:
    """Run every code cell of the notebook at ``path``; returns each cell with its outputs."""
    path = Path(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    ns: dict[str, Any] = {"__name__": "__main__"}
    out: list[CellOutput] = []
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            for i, cell in enumerate(nb["cells"]):
                src = _source(cell)
                if cell["cell_type"] != "code":
                    out.append(CellOutput(cell["cell_type"], src))
                    continue
                out.append(_run_cell(path, i, src, ns))
        finally:
            os.chdir(cwd)
    return out


def _run_cell(path: Path, i: int, src: str, ns: dict[str, Any]) -> CellOutput:
    tree = ast.parse(src, filename=f"{path.name}[{i}]")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(tree, f"{path.name}[cell {i}]", "exec"), ns)
            value = eval(compile(last, f"{path.name}[cell {i}]", "eval"), ns) if last else None
    except Exception as exc:
        raise NotebookError(f"{path.name}: cell {i} raised {type(exc).__name__}: {exc}") from exc
    html = text = ""
    if value is not None:
        to_html = getattr(value, "_repr_html_", None)
        html = to_html() if callable(to_html) else ""
        text = "" if html else repr(value)
    return CellOutput("code", src, buf.getvalue(), html or "", text)


def render_notebook(path: str | Path, cells: list[CellOutput] | None = None) -> str:
    """The executed notebook as a markdown page (with a link to the ``.ipynb``)."""
    path = Path(path)
    cells = execute_notebook(path) if cells is None else cells
    parts: list[str] = []
    for k, cell in enumerate(cells):
        if cell.kind == "markdown":
            parts.append(cell.source.strip())
            if k == 0:
                parts.append(f"[Download the notebook]({path.name}) (`{path.name}`).")
            continue
        if cell.kind != "code":
            continue
        parts.append(f"```python\n{cell.source.rstrip()}\n```")
        if cell.stdout.strip():
            parts.append(f"```text\n{cell.stdout.rstrip()}\n```")
        if cell.html:
            parts.append(f'<div class="nb-output">\n{cell.html.strip()}\n</div>')
        elif cell.text:
            parts.append(f"```text\n{cell.text.rstrip()}\n```")
    return "\n\n".join(parts) + "\n"


def notebook_pages(docs_dir: str | Path) -> dict[str, str]:
    """Page path -> markdown of every ``notebooks/*.ipynb`` under ``docs_dir`` (executed now)."""
    docs_dir = Path(docs_dir)
    return {
        str(nb.relative_to(docs_dir).with_suffix(".md")): render_notebook(nb)
        for nb in sorted((docs_dir / "notebooks").glob("*.ipynb"))
    }
