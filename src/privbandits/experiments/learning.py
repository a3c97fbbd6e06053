"""Say when an algorithm does not learn: each series against ``uniform`` on the same seeds.

An algorithm that never leaves its exploration phase at the horizon run has the regret of uniform
play, and a comparison of it with another algorithm says nothing about learning.  When an
experiment runs the ``uniform`` baseline, every other series of the same cell (the same
environment values) is compared with it by the claims' test (one-sided Student t, paired over
common random numbers): *learns* when its final regret is significantly below uniform's, *no
learning detected* otherwise (within noise of uniform, or above it), *too few runs* when a series
has fewer than :data:`~privbandits.experiments.claims.MIN_RUNS` runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from privbandits.experiments.claims import Comparison, compare
from privbandits.experiments.summary import Series, fmt_num

__all__ = ["LearningCheck", "learning_checks", "render_learning"]

#: Registry name of the reference every series is checked against.
REFERENCE = "uniform"


@dataclass(frozen=True)
class LearningCheck:
    """One series against uniform play on the same seeds."""

    series: str
    comparison: Comparison
    horizon: int

    @property
    def verdict(self) -> str:
        v = self.comparison.verdict
        return (
            "learns"
            if v == "agree"
            else "too few runs"
            if v == "too few runs"
            else "no learning detected"
        )

    def line(self) -> str:
        c = self.comparison
        what = (
            f"final regret {fmt_num(c.mean_better)} against uniform's {fmt_num(c.mean_worse)} "
            f"(t = {c.t:.2f}, df = {c.df:.3g}, t* = {c.t_crit:.2f})"
        )
        if self.verdict == "no learning detected":
            return (
                f"**{self.series}: no learning detected at T = {self.horizon:g}**: {what}; the algorithm "
                "has not left its exploration phase at this horizon and these constants, or does not learn"
            )
        return f"{self.series}: {self.verdict}: {what}"


def _same_cell(s: Series, ref: Series) -> bool:
    return all(s.grid.get(k, v) == v for k, v in ref.grid.items())


def learning_checks(series: Sequence[Series], level: float = 0.05) -> list[LearningCheck]:
    """Every non-uniform series compared with the uniform series of its cell (none without one)."""
    refs = [s for s in series if s.algorithm == REFERENCE]
    out = []
    for s in series:
        if s.algorithm == REFERENCE:
            continue
        cands = [r for r in refs if _same_cell(s, r) and r.horizon == s.horizon]
        if len(cands) == 1:
            out.append(LearningCheck(s.name, compare(s, cands[0], level), s.horizon))
    return out


def render_learning(checks: Sequence[LearningCheck]) -> list[str]:
    """Markdown lines of the report's learning section (empty without checks)."""
    if not checks:
        return []
    flagged = [c for c in checks if c.verdict == "no learning detected"]
    head = (
        f"{len(flagged)} of {len(checks)} series show no learning: their final regret is not significantly "
        "below uniform play on the same seeds."
        if flagged
        else f"Every one of the {len(checks)} series checked has a final regret significantly below uniform play "
        "on the same seeds (or too few runs to say)."
    )
    return [
        "## Learning check",
        "",
        "Each series against the `uniform` baseline of the same cell (one-sided Student t-test, paired over "
        f"common random numbers).  {head}",
        "",
        *[f"- {c.line()}" for c in checks],
        "",
    ]
