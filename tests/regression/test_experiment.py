"""The regression error experiment and the bandit preset run and report sensible numbers."""

from __future__ import annotations

import math

from privbandits.experiments.presets import available_presets, load_preset
from privbandits.experiments.regression_experiment import coverage_rows, error_rows


def test_error_rows_compare_the_estimators() -> None:
    rows = error_rows(
        [{"block": "t", "n": 20_000, "d": 2, "epsilon": 1.0, "c": 0.0}], seeds=1, n_test=5000
    )
    by = {r["estimator"]: r for r in rows}
    assert set(by) == {"reweighted", "reweighted-bernstein", "ssp-ridge", "dp-gd", "least-squares"}
    # least squares at n = 2e4, d = 2: L1 error ~ sqrt(d/n) ~ 0.01; every private estimator is far better
    # than the trivial theta = 0 (L1 error E|<phi, theta*>| ~ 0.5)
    assert by["least-squares"]["l1"] < 0.03
    for name in ("reweighted", "ssp-ridge", "dp-gd"):
        assert by[name]["l1"] < 0.3
        assert by[name]["epsilon_accounted"] <= 1.0 + 1e-9
    assert by["reweighted"]["all_covered"] and by["least-squares"]["all_covered"]


def test_coverage_rows_report_the_needed_multiplier() -> None:
    rows = coverage_rows([2000], 2, [math.inf], seeds=3, n_test=2000)
    assert len(rows) == 3 and all(0.0 < r["c_b_needed"] <= 1.0 for r in rows)


def test_bandit_preset_loads() -> None:
    assert "chen2025-bandit" in available_presets()
    cfg = load_preset("chen2025-bandit")
    names = {a.name for a in cfg.algorithms}
    assert {"chen-jdp", "chen-ldp", "chen-elim", "linucb", "uniform"} <= names
