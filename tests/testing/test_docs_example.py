"""The "Add your own algorithm" page's example, run verbatim: a local-DP device of one's own passes
the shipped checks and its adversarial audit (passes at the claim, half-noise twin flagged)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "add-your-own-algorithm.md"


def test_add_your_own_algorithm_page_runs_verbatim() -> None:
    text = PAGE.read_text(encoding="utf-8")
    text = text[
        text.index("## A local-DP device") :
    ]  # the device example (the curators come first)
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 4
    ns: dict[str, object] = {"__name__": "docs_example"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for i, code in enumerate(blocks):
            exec(compile(code, f"{PAGE}:block{i}", "exec"), ns)
    lines = out.getvalue().splitlines()
    assert "local" in lines[0]  # the guarantee
    statuses = eval(lines[1])  # {check: status}
    assert (
        set(statuses.values()) <= {"passed", "skipped"}
        and statuses["adversarial_server"] == "passed"
    )
    assert lines[-1].endswith("True True"), lines[-1]  # twin flagged, passed
    assert "w = 100" in lines[-1]
