"""Say when an algorithm does not learn: each series against ``uniform`` on the same seeds.

An algorithm that never leaves its exploration phase at the horizon run has the regret of uniform
play, and a comparison of it with another algorithm says nothing about learning.  When an
experiment runs the ``uniform`` baseline, every other series of the same cell (the same
environment values) is compared with it by the claims' test (one-sided Student t, paired over
common random numbers): *learns* when its final regret is significantly below uniform's, *no
learning detected* otherwise (within noise of uniform, or above it) and also when, although
significantly below, it is still at least :data:`NEAR_UNIFORM` of uniform's at T (the algorithm
has not left its exploration phase); *too few runs* when a series has fewer than
:data:`~privbandits.experiments.claims.MIN_RUNS` runs.

The length of the exploration phase is read off the curves: the last checkpoint ``t`` at which
the series' mean cumulative regret is still at least :data:`NEAR_UNIFORM` of uniform's
(uniform play's regret grows linearly; an algorithm that explores as uniformly as it does keeps
the ratio near 1 until it starts exploiting).  When that is ``T`` itself the report says the
exploration phase lasts at least ``T`` rounds at these constants.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from privbandits.experiments.claims import Comparison, compare
from privbandits.experiments.summary import Series, fmt_num

__all__ = [
    "NEAR_UNIFORM",
    "LearningCheck",
    "exploration_rounds",
    "learning_checks",
    "render_learning",
]

#: Registry name of the reference every series is checked against.
REFERENCE = "uniform"
#: A series whose mean cumulative regret is at least this fraction of uniform play's is exploring.
NEAR_UNIFORM = 0.9


def exploration_rounds(s: Series, ref: Series) -> int | None:
    """The last checkpoint at which ``s``'s mean cumulative regret is at least
    :data:`NEAR_UNIFORM` of ``ref``'s (0 when never; None when the curves share no checkpoints)."""
    t_s, t_r = np.asarray(s.checkpoints), np.asarray(ref.checkpoints)
    common, i_s, i_r = np.intersect1d(t_s, t_r, return_indices=True)
    if common.size == 0:
        return None
    mean_s, mean_r = s.curve()[0][i_s], ref.curve()[0][i_r]
    exploring = (mean_r > 0) & (mean_s >= NEAR_UNIFORM * mean_r)
    return int(common[exploring][-1]) if exploring.any() else 0


@dataclass(frozen=True)
class LearningCheck:
    """One series against uniform play on the same seeds."""

    series: str
    comparison: Comparison
    horizon: int
    #: Last checkpoint with regret >= NEAR_UNIFORM of uniform's (see :func:`exploration_rounds`).
    explores_until: int | None = None

    @property
    def near_uniform(self) -> bool:
        """Final mean regret at least :data:`NEAR_UNIFORM` of uniform's."""
        c = self.comparison
        return c.mean_worse > 0 and c.mean_better >= NEAR_UNIFORM * c.mean_worse

    @property
    def verdict(self) -> str:
        v = self.comparison.verdict
        if v == "too few runs":
            return "too few runs" if not self.near_uniform else "no learning detected"
        return "learns" if v == "agree" and not self.near_uniform else "no learning detected"

    def phase(self) -> str:
        """The exploration phase's length in words."""
        n = self.explores_until
        if n is None:
            return ""
        if n >= self.horizon:
            return (
                f"the exploration phase lasts at least T = {self.horizon:g} rounds at these constants "
                f"(regret at least {NEAR_UNIFORM:.0%} of uniform play's at every checkpoint)"
            )
        if n == 0:
            return "its regret is below uniform play's from the first checkpoint on"
        return (
            f"the exploration phase lasts ~{n:g} rounds at these constants (regret at least "
            f"{NEAR_UNIFORM:.0%} of uniform play's until then)"
        )

    def line(self) -> str:
        c = self.comparison
        what = (
            f"final regret {fmt_num(c.mean_better)} against uniform's {fmt_num(c.mean_worse)} "
            f"(t = {c.t:.2f}, df = {c.df:.3g}, t* = {c.t_crit:.2f})"
        )
        if self.verdict == "no learning detected":
            phase = self.phase()
            return (
                f"**{self.series}: no learning detected at T = {self.horizon:g}**: {what}"
                + (f"; {phase}" if phase else "")
                + (
                    f" (final regret {c.mean_better / c.mean_worse:.0%} of uniform play's)"
                    if self.near_uniform
                    else ""
                )
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
            out.append(
                LearningCheck(
                    s.name,
                    compare(s, cands[0], level),
                    s.horizon,
                    exploration_rounds(s, cands[0]),
                )
            )
    return out


def render_learning(checks: Sequence[LearningCheck]) -> list[str]:
    """Markdown lines of the report's learning section (empty without checks)."""
    if not checks:
        return []
    flagged = [c for c in checks if c.verdict == "no learning detected"]
    head = (
        f"{len(flagged)} of {len(checks)} series show no learning: their final regret is not significantly "
        f"below uniform play on the same seeds, or is still at least {NEAR_UNIFORM:.0%} of it."
        if flagged
        else f"Every one of the {len(checks)} series checked has a final regret significantly below uniform play "
        "on the same seeds (or too few runs to say)."
    )
    return [
        "## Learning check",
        "",
        "Each series against the `uniform` baseline of the same cell (one-sided Student t-test, paired over "
        f"common random numbers; a series still at {NEAR_UNIFORM:.0%} of uniform's regret at T counts as not "
        f"learning).  {head}",
        "",
        *[f"- {c.line()}" for c in checks],
        "",
    ]
