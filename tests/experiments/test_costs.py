"""The cost model that balances fused groups over workers (experiments/costs.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from privbandits.experiments.costs import (
    DEFAULT_KERNEL_NS,
    KERNEL_NS,
    interp_d,
    makespan,
    split_by_cost,
    unit_cost,
)


def test_makespan_is_the_longest_processing_time_first_schedule() -> None:
    # 3 -> worker 0; 2 -> worker 1; 2 -> worker 1 (the least loaded): loads 3 and 4
    assert makespan([2.0, 3.0, 2.0], 2) == 4.0
    assert makespan([5.0, 1.0], 1) == 6.0
    assert makespan([], 3) == 0.0
    assert makespan([1.0, 1.0, 1.0], 0) == 3.0  # at least one worker


def test_split_by_cost_keeps_each_parts_order() -> None:
    # costs 4, 3, 2, 1: 4 -> part 0, 3 -> part 1, 2 -> part 1 (3 < 4), 1 -> part 0 (4 < 5)
    assert split_by_cost([0, 1, 2, 3], [4.0, 3.0, 2.0, 1.0], 2) == [[0, 3], [1, 2]]
    assert split_by_cost([7], [0.0] * 8, 3) == [[7]]  # empty parts dropped


def test_interp_d_interpolates_and_extrapolates_by_the_last_slope() -> None:
    table = {2: 100.0, 5: 400.0, 10: 900.0}
    assert interp_d(table, 1) == 100.0
    assert interp_d(table, 3) == pytest.approx(200.0)
    assert interp_d(table, 10) == pytest.approx(900.0)
    assert interp_d(table, 20) == pytest.approx(1900.0)
    assert interp_d({2: 10.0, 5: 1.0}, 50) == 1.0  # never below one ns


def test_the_table_covers_the_benchmarked_dimensions() -> None:
    for name, table in KERNEL_NS.items():
        assert sorted(table) == [2, 5, 10, 20], name
        assert all(v > 0 for v in table.values()), name


def _unit(**kw):
    base = dict(
        algorithm="ldp-ols", env={"d": 2, "K": 10}, engine="auto", horizon=100, replications=2
    )
    base.update(kw)
    return SimpleNamespace(**base)


def test_unit_cost_scales_with_rounds_arms_and_the_driver() -> None:
    k, e = unit_cost(_unit())
    assert k == pytest.approx(200 * KERNEL_NS["ldp-ols"][2])
    assert e == pytest.approx(200 * 150.0)  # K d + 1 = 21 draws at ENV_NS / 21 each
    k21, e21 = unit_cost(_unit(env={"d": 2, "K": 21}))
    assert k21 == pytest.approx(2 * k) and e21 == pytest.approx(e * 43 / 21)
    assert unit_cost(_unit(engine="reference"))[0] == pytest.approx(5 * k)
    unknown = unit_cost(_unit(algorithm="not-in-the-table"))[0]
    assert unknown == pytest.approx(200 * DEFAULT_KERNEL_NS)
    assert unit_cost(_unit(env={"d": "x", "K": None}))[0] == pytest.approx(k)  # not synthetic


def test_a_group_is_tried_in_two_to_parts_pieces_only(monkeypatch) -> None:
    """fused_groups splits the costliest group into m = 2 .. parts pieces (its docstring), never
    more pieces than workers, on groups of 1 to 8 units with random costs."""
    import random

    from privbandits.experiments import units

    tried: list[tuple[int, int, int]] = []
    orig = units.split_by_cost

    def spy(members: list[int], kernel, m: int) -> list[list[int]]:
        tried.append((m, len(members), parts))
        return orig(members, kernel, m)

    monkeypatch.setattr(units, "split_by_cost", spy)
    monkeypatch.setattr(units, "fusion_key", lambda u: u.key)
    rng = random.Random(1)
    for _ in range(300):
        n, parts = rng.randint(2, 8), rng.randint(2, 4)
        us = [SimpleNamespace(key=rng.randint(0, 2), i=i) for i in range(n)]
        kc = [rng.choice([1, 2, 3, 5, 8, 13]) for _ in range(n)]
        ec = [rng.choice([0, 0, 1, 2]) for _ in range(n)]
        groups = units.fused_groups(us, parts, lambda u: (kc[u.i], ec[u.i]))
        assert sorted(i for g in groups for i in g) == list(range(n))
    assert tried and all(2 <= m <= min(p, size) for m, size, p in tried)
    assert any(m == p for m, _, p in tried)  # the full range is tried
