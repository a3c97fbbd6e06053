"""Compare a paper's claimed ordering of algorithms with the measured final regrets.

``claimed_order = ["a", "b", "c"]`` claims ``regret(a) < regret(b) < regret(c)`` at the horizon
(lowest regret first).  The check is made separately in every *cell* (combination of grid values,
e.g. each epsilon); a series without a grid parameter (a non-private baseline) takes part in every
cell.  Each adjacent pair is reported with both means, their standard errors and
``z = (mean_b - mean_a) / sqrt(se_a^2 + se_b^2)``; nothing is tuned, the numbers are what they are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from privbandits.experiments.summary import Series, fmt_num, format_values

__all__ = ["OrderCheck", "PairCheck", "check_claimed_order"]


@dataclass(frozen=True)
class PairCheck:
    """One claimed inequality ``better < worse`` of final mean regret."""

    better: str
    worse: str
    mean_better: float
    se_better: float
    mean_worse: float
    se_worse: float

    @property
    def agree(self) -> bool:
        return self.mean_better < self.mean_worse

    @property
    def z(self) -> float:
        se = math.hypot(self.se_better, self.se_worse)
        diff = self.mean_worse - self.mean_better
        return diff / se if se > 0 else math.copysign(math.inf, diff) if diff else 0.0

    def __str__(self) -> str:
        verdict = "agree" if self.agree else "DISAGREE"
        return (f"{self.better} ({fmt_num(self.mean_better)} ± {fmt_num(self.se_better, 2)} se) < "
                f"{self.worse} ({fmt_num(self.mean_worse)} ± {fmt_num(self.se_worse, 2)} se): "
                f"{verdict}, z = {self.z:.2f}")


@dataclass(frozen=True)
class OrderCheck:
    """The claimed order checked in one cell."""

    cell: dict[str, Any]
    pairs: tuple[PairCheck, ...]
    missing: tuple[str, ...] = field(default=())

    @property
    def agree(self) -> bool:
        return bool(self.pairs) and not self.missing and all(p.agree for p in self.pairs)

    @property
    def cell_name(self) -> str:
        return format_values(self.cell) if self.cell else "all runs"


def _matches(s: Series, item: str) -> bool:
    return s.label == item or s.algorithm == item


def check_claimed_order(claimed: Sequence[str], series: Sequence[Series]) -> list[OrderCheck]:
    """Check ``claimed`` (lowest final regret first) in every grid cell of ``series``."""
    if len(claimed) < 2:
        return []
    involved = [s for s in series if any(_matches(s, c) for c in claimed)]
    keys = sorted({k for s in involved for k in s.grid})
    cells: list[dict[str, Any]] = []
    for s in involved:
        if all(k in s.grid for k in keys):
            cell = {k: s.grid[k] for k in keys}
            if cell not in cells:
                cells.append(cell)
    if not cells:
        cells = [{}]
    checks = []
    for cell in cells:
        chosen: list[Series] = []
        missing: list[str] = []
        for item in claimed:
            cands = [s for s in involved if _matches(s, item)
                     and all(s.grid.get(k, cell[k]) == cell[k] for k in cell)]
            if len(cands) == 1:
                chosen.append(cands[0])
            else:
                missing.append(item)
        pairs = tuple(PairCheck(a.label, b.label, a.final_mean, a.final_se, b.final_mean, b.final_se)
                      for a, b in zip(chosen, chosen[1:]))
        checks.append(OrderCheck(cell=cell, pairs=pairs, missing=tuple(missing)))
    return checks
