"""Estimated cost of a work unit, and the schedule that balances fused groups over workers.

Estimates only: they decide how the runner splits fused groups across worker processes
(:func:`~privbandits.experiments.units.fused_groups`), never what a unit computes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "DEFAULT_KERNEL_NS",
    "ENV_NS",
    "KERNEL_NS",
    "interp_d",
    "makespan",
    "split_by_cost",
    "unit_cost",
]

#: Estimated compiled cost of one replication-round, in ns on the 2-core reference machine, by
#: algorithm and dimension d (K = 10): the "compiled total" minus the environment floor of the
#: scaling table of benchmarks/RESULTS.md ("How cost grows with d, K, R and T").  Used only to
#: balance fused groups over workers (:func:`~privbandits.experiments.units.fused_groups`),
#: never for results.
KERNEL_NS: dict[str, dict[int, float]] = {
    "glm-ucb": {2: 512, 5: 606, 10: 832, 20: 1855},
    "gloc": {2: 433, 5: 517, 10: 794, 20: 2106},
    "greedy-ols": {2: 354, 5: 473, 10: 724, 20: 2186},
    "greedy-sgd": {2: 150, 5: 166, 10: 178, 20: 261},
    "ldp-gloc": {2: 637, 5: 954, 10: 1784, 20: 6012},
    "ldp-ols": {2: 337, 5: 495, 10: 913, 20: 3105},
    "ldp-sgd": {2: 298, 5: 345, 10: 369, 20: 540},
    "ldp-ucb": {2: 494, 5: 831, 10: 1654, 20: 5705},
    "linucb": {2: 235, 5: 318, 10: 558, 20: 1570},
    "uniform": {2: 7, 5: 4, 10: 1, 20: 9},
}
#: Estimated cost of an algorithm missing from :data:`KERNEL_NS` (at d = 2, K = 10; scaled like
#: ldp-ols) and of the environment's draws per replication-round (``ENV_NS * K d / 20``).
DEFAULT_KERNEL_NS = 500.0
ENV_NS = 150.0


def interp_d(table: dict[int, float], d: int) -> float:
    """``table`` (cost by d) linearly interpolated at ``d`` (extrapolated by the last slope)."""
    ds = sorted(table)
    if d <= ds[0]:
        return table[ds[0]]
    for a, b in zip(ds, ds[1:]):
        if d <= b or b == ds[-1]:
            return max(table[a] + (table[b] - table[a]) * (d - a) / (b - a), 1.0)
    return table[ds[-1]]  # pragma: no cover - unreachable


def unit_cost(unit: Any) -> tuple[float, float]:
    """Estimated cost of ``unit`` as ``(kernel, environment)`` in replication-round-nanoseconds:
    ``T R`` times the algorithm's per-round cost (:data:`KERNEL_NS` at the unit's ``d``, scaled
    linearly in ``K`` about K = 10) and the environment's share (``K d + 1`` draws).  Units not
    on the synthetic environment use d = 2, K = 10.  An estimate for scheduling only."""
    d = int(unit.env.get("d", 2)) if isinstance(unit.env.get("d", 2), int) else 2
    K = int(unit.env.get("K", 10)) if isinstance(unit.env.get("K", 10), int) else 10
    table = KERNEL_NS.get(unit.algorithm)
    base = (
        interp_d(table, d)
        if table is not None
        else DEFAULT_KERNEL_NS * interp_d(KERNEL_NS["ldp-ols"], d) / KERNEL_NS["ldp-ols"][2]
    )
    if unit.engine not in ("auto", "compiled"):
        base *= 5.0  # the reference driver: ~5x the compiled one (benchmarks/RESULTS.md)
    rr = float(unit.horizon) * float(unit.replications)
    k_scale = (1.0 + K) / 11.0
    return rr * base * k_scale, rr * ENV_NS * (K * d + 1) / 21.0


def makespan(costs: Sequence[float], parts: int) -> float:
    """Longest-processing-time-first schedule of ``costs`` on ``parts`` workers: its makespan."""
    loads = [0.0] * max(1, parts)
    for c in sorted(costs, reverse=True):
        loads[loads.index(min(loads))] += c
    return max(loads)


def split_by_cost(members: list[int], kernel: Sequence[float], m: int) -> list[list[int]]:
    """``members`` in ``m`` parts of near-equal kernel cost (longest-processing-time first; each
    part keeps the units' original order)."""
    parts: list[list[int]] = [[] for _ in range(m)]
    loads = [0.0] * m
    for i in sorted(members, key=lambda i: (-kernel[i], i)):
        j = loads.index(min(loads))
        parts[j].append(i)
        loads[j] += kernel[i]
    return [sorted(p) for p in parts if p]
