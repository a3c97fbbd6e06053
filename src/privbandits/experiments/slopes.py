"""Growth of regret with the horizon: measured log-log slopes beside the theory's exponents.

A regret bound ``O~(T^a)`` predicts slope ``a`` of ``log R(t)`` against ``log t``.  The measured
slope of a series is the least-squares slope of its mean cumulative regret over the late-phase
checkpoints ``t`` in ``[T / 10, T]`` (the late phase of the run).  For an
algorithm whose constants are tuned for the run's horizon ``T`` this is the growth of the
cumulative-regret curve of that run, an approximation of the regret-vs-``T`` exponent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from privbandits.experiments.summary import Series

__all__ = ["loglog_slope", "loglog_slopes", "slope_rows"]


def loglog_slope(t: np.ndarray, regret: np.ndarray, start: float = 0.1) -> float:
    """Least-squares slope of ``log regret`` on ``log t`` over ``t >= start * max(t)`` (positive
    regret only); NaN when fewer than two such points."""
    t = np.asarray(t, dtype=float)
    r = np.asarray(regret, dtype=float)
    keep = (t >= start * t.max()) & (r > 0) & np.isfinite(r)
    if keep.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(t[keep]), np.log(r[keep]), 1)[0])


def loglog_slopes(t: np.ndarray, regret: np.ndarray, start: float = 0.1) -> np.ndarray:
    """:func:`loglog_slope` of every row of ``regret`` (one run each, shape ``(runs, len(t))``)."""
    return np.asarray([loglog_slope(t, row, start) for row in np.atleast_2d(regret)], dtype=float)


def slope_rows(series: Sequence[Series], theory: Mapping[str, float]) -> list[dict[str, str]]:
    """One row per series whose label has a theoretical exponent in ``theory``."""
    rows = []
    for s in series:
        if s.label not in theory:
            continue
        mean, _std = s.curve()
        slope = loglog_slope(s.checkpoints, mean)
        rows.append(
            {
                "series": s.name,
                "theory": f"{theory[s.label]:g}",
                "measured slope (t in [T/10, T])": "n/a" if np.isnan(slope) else f"{slope:.3f}",
                "final regret": f"{s.final_mean:.4g}",
            }
        )
    return rows
