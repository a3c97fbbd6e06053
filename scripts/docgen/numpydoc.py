"""A small reader of the ``Parameters`` section of numpydoc docstrings."""

from __future__ import annotations

import inspect
import re

__all__ = ["first_paragraph", "parameter_docs", "rst_to_markdown"]

_HEADER = re.compile(r"^\s*-{3,}\s*$")
_ENTRY = re.compile(r"^(?P<names>[A-Za-z_][\w, ]*?)\s*(?::\s*(?P<type>.*))?$")
_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|obj|exc):`~?([^`]+)`")


def rst_to_markdown(text: str) -> str:
    """Inline reStructuredText of docstrings as markdown: roles and double backquotes as code spans."""
    text = _ROLE.sub(
        lambda m: (
            "`"
            + (
                m.group(1).rsplit(".", 1)[-1]
                if m.group(0).split("`")[1].startswith("~")
                else m.group(1)
            )
            + "`"
        ),
        text,
    )
    return text.replace("``", "`")


def first_paragraph(obj: object) -> str:
    """The first paragraph of ``obj``'s docstring, joined into one line ("" without docstring)."""
    doc = inspect.getdoc(obj) or ""
    para = doc.strip().split("\n\n", 1)[0]
    return rst_to_markdown(" ".join(para.split()))


def parameter_docs(obj: object) -> dict[str, tuple[str, str]]:
    """``name -> (type, description)`` from the ``Parameters`` section of ``obj``'s docstring.

    Entries naming several parameters (``eta0, t0 : float``) give each the same text.  Descriptions
    are joined into one line.
    """
    doc = inspect.getdoc(obj) or ""
    lines = doc.splitlines()
    out: dict[str, tuple[str, str]] = {}
    start = None
    for i in range(len(lines) - 1):
        if lines[i].strip() == "Parameters" and _HEADER.match(lines[i + 1]):
            start = i + 2
            break
    if start is None:
        return out
    names: list[str] = []
    ptype = ""
    desc: list[str] = []

    def flush() -> None:
        for n in names:
            out[n] = (ptype, rst_to_markdown(" ".join(" ".join(desc).split())))

    i = start
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and _HEADER.match(lines[i + 1]) and line.strip():
            break  # next section
        if line and not line[0].isspace():
            m = _ENTRY.match(line.strip())
            flush()
            names, desc = [], []
            ptype = ""
            if m:
                names = [n.strip() for n in m.group("names").split(",") if n.strip()]
                ptype = (m.group("type") or "").strip()
        elif line.strip():
            desc.append(line.strip())
        i += 1
    flush()
    return out
