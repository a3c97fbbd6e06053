"""Checked expectations: Student verdicts with a minimum of runs, slope claims, the learning check."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privbandits.experiments.claims import (
    MIN_RUNS,
    Claim,
    compare,
    evaluate_claims,
    replication_slopes,
)
from privbandits.experiments.learning import learning_checks, render_learning
from privbandits.experiments.summary import Series
from privbandits.privacy.guarantee import NON_PRIVATE

T = 10_000
CKPT = np.unique(np.geomspace(10, T, 30).astype(int))


def _power_series(
    label: str,
    exponent: np.ndarray | float,
    n: int,
    *,
    algorithm: str | None = None,
    scale: float = 5.0,
    seed: int = 0,
    grid: dict | None = None,
) -> Series:
    """Runs whose regret grows as scale * t^exponent (one exponent per run), times a little noise."""
    rng = np.random.default_rng(seed)
    a = np.broadcast_to(np.asarray(exponent, dtype=float), (n,))
    regret = (
        scale * CKPT[None, :] ** a[:, None] * np.exp(0.01 * rng.standard_normal((n, CKPT.size)))
    )
    g = grid or {}
    return Series(
        label=label,
        algorithm=algorithm or label,
        grid=dict(g),
        params=dict(g),
        horizon=T,
        trust_model="local",
        preset="strict",
        guarantee=NON_PRIVATE,
        seeds=(0,),
        checkpoints=CKPT.astype(float),
        regret=regret,
        wall_time=0.0,
    )


def test_a_comparison_with_few_runs_has_no_verdict() -> None:
    """Three runs that would pass a normal z-test (anti-conservative) get 'too few runs'."""
    few = [_power_series(n, e, 3, seed=i) for i, (n, e) in enumerate((("a", 0.5), ("b", 0.6)))]
    (r,) = evaluate_claims([Claim("order", ("a", "b"))], few)
    assert r.verdict == "too few runs" and f"a verdict needs {MIN_RUNS}" in r.lines()[0]


@pytest.mark.parametrize("df", [2, 4, 9])
def test_the_critical_value_is_students(df: int) -> None:
    n = df + 1
    a = _power_series("a", 0.5, n)
    b = _power_series("b", 0.5, n, seed=1)
    c = compare(a, b)
    assert c.paired and c.df == df and c.t_crit == pytest.approx(stats.t.ppf(0.95, df))
    assert c.t_crit > 1.6449  # larger than the normal one: the z-test was anti-conservative


def test_welch_degrees_of_freedom_on_unpaired_series() -> None:
    a = _power_series("a", 0.5, 8)
    b = _power_series("b", 0.5, 6, seed=1)
    b = Series(**{**b.__dict__, "seeds": (1,)})
    c = compare(a, b)
    va, vb = a.final.var(ddof=1) / 8, b.final.var(ddof=1) / 6
    want = (va + vb) ** 2 / (va * va / 7 + vb * vb / 5)
    assert not c.paired and c.df == pytest.approx(want)


def test_replication_slopes_recover_the_exponent() -> None:
    exps = np.linspace(0.3, 0.7, 10)
    s = _power_series("a", exps, 10)
    assert replication_slopes(s) == pytest.approx(exps, abs=0.01)


@pytest.mark.parametrize(
    ("exponent", "claimed", "tol", "direction", "verdict"),
    [
        (0.5, 0.5, 0.1, "near", "agree"),
        (0.99, 0.5, 0.1, "near", "disagree"),  # the convex expectation of 1/2 against a measured ~1
        (0.95, 0.8, 0.0, "at_most", "disagree"),  # "at most about 0.8" against a measured 0.95
        (0.7, 0.8, 0.0, "at_most", "agree"),
        (0.6, 0.5, 0.1, "near", "inconclusive"),  # on the boundary of the range: within noise
    ],
)
def test_slope_claim_verdicts(
    exponent: float, claimed: float, tol: float, direction: str, verdict: str
) -> None:
    rng = np.random.default_rng(3)
    exps = exponent + 0.02 * rng.standard_normal(10)
    if verdict == "inconclusive":
        exps = exps - exps.mean() + exponent  # mean exactly on the boundary
    s = _power_series("a", exps, 10)
    (r,) = evaluate_claims(
        [Claim("slope", ("a",), exponent=claimed, tolerance=tol, direction=direction)], [s]
    )
    assert r.verdict == verdict, r.lines()


def test_learning_check_flags_a_series_at_uniform_regret() -> None:
    """A series whose regret equals uniform's on the same seeds is flagged; one far below is not;
    each is compared with the uniform series of its own cell."""
    n = 10
    uni = _power_series("uniform", 1.0, n, algorithm="uniform", seed=0, grid={"d": 2})
    same = _power_series("stuck", 1.0, n, seed=0, grid={"d": 2, "epsilon": 1.0})
    good = _power_series("learner", 0.5, n, seed=0, grid={"d": 2, "epsilon": 1.0})
    other_cell = _power_series("uniform", 0.1, n, algorithm="uniform", seed=0, grid={"d": 5})
    checks = {c.series: c for c in learning_checks([uni, same, good, other_cell])}
    assert checks["stuck (d=2, epsilon=1)"].verdict == "no learning detected"
    assert checks["learner (d=2, epsilon=1)"].verdict == "learns"
    lines = "\n".join(render_learning(list(checks.values())))
    assert (
        "no learning detected at T = 10000" in lines and "1 of 2 series show no learning" in lines
    )


def test_no_learning_check_without_a_uniform_series() -> None:
    assert learning_checks([_power_series("a", 0.5, 5)]) == []
    assert render_learning([]) == []


def test_t_statistic_is_the_paired_mean_over_its_standard_error() -> None:
    a, b = _power_series("a", 0.5, 7), _power_series("b", 0.55, 7)
    c = compare(a, b)
    d = b.final - a.final
    assert c.t == pytest.approx(d.mean() / (d.std(ddof=1) / math.sqrt(7)))
