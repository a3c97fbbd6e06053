"""Regression baselines: SSP ridge, clipped DP-GD, least squares (calibration, statistics, widths)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.core.errors import ValidationError
from privbandits.regression import DPGradientDescent, LeastSquares, SSPRidge
from privbandits.regression.baselines import SSP_SENSITIVITY, ssp_statistic

from .helpers import covariates, rademacher, unit


def _data(n: int, d: int, c: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    theta = unit(d, rng)
    X = covariates(n, d, c, rng)
    return X, rademacher(X @ theta, rng), theta


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 10))
def test_ssp_statistic_sensitivity(seed: int, d: int, n: int) -> None:
    """Replace-one distance of (upper(X^T X), X^T y) <= 3/sqrt(2); the Frobenius form of the bound is
    attained at unit covariates with <x, x'> = 1/2 and opposite responses."""
    rng = np.random.default_rng(seed)
    X, y = covariates(n, d, 1.0, rng), rng.uniform(-1, 1, size=n)
    X2, y2 = X.copy(), y.copy()
    X2[-1], y2[-1] = unit(d, rng) * rng.uniform(0, 1), rng.choice([-1.0, 1.0])
    assert np.linalg.norm(ssp_statistic(X, y) - ssp_statistic(X2, y2)) <= SSP_SENSITIVITY + 1e-12
    x, xp = np.array([1.0, 0.0]), np.array([0.5, math.sqrt(0.75)])
    frob = np.linalg.norm(np.outer(x, x) - np.outer(xp, xp)) ** 2 + np.linalg.norm(x + xp) ** 2
    assert math.sqrt(frob) == pytest.approx(SSP_SENSITIVITY)


def test_ssp_calibration_against_dp_accounting() -> None:
    from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

    X, y, _ = _data(1000, 3, 0.0, 0)
    est = SSPRidge(0.7, 1e-6)
    g = est.fit(X, y, 0).guarantee
    assert g.epsilon == pytest.approx(0.7, rel=1e-6) and g.epsilon <= 0.7 * (1 + 1e-9)
    pl = GaussianPrivacyLoss(est.std, sensitivity=SSP_SENSITIVITY)
    assert pl.get_delta_for_epsilon(0.7) == pytest.approx(1e-6, rel=1e-4)


def test_ssp_noise_distribution(rng: np.random.Generator) -> None:
    """Over R = 4000 fits the released Gram entries and X^T y scatter around the clean values with std
    sigma sqrt(6): mean within 5 SE, variance within 12% (relative SE sqrt(2/R) = 2.2%)."""
    X, y, _ = _data(50, 2, 0.0, 1)
    est = SSPRidge(1.0)
    R = 4000
    from privbandits.regression.releases import privatize_vector

    clean = ssp_statistic(X, y)
    draws = np.stack([privatize_vector(clean, est.std, rng) for _ in range(R)])
    assert np.all(np.abs(draws.mean(0) - clean) <= 5 * est.std / math.sqrt(R))
    np.testing.assert_allclose(draws.var(0), est.std**2, rtol=0.12)


def test_dpgd_calibration_against_dp_accounting() -> None:
    """T Gaussian steps of multiplier s / Delta: our zCDP + CKS epsilon vs dp-accounting's RDP accountant
    (same RDP curve; dp-accounting optimizes over a finite order grid, so it is >= ours, within 2%)."""
    import dp_accounting

    X, y, _ = _data(2000, 3, 0.0, 2)
    est = DPGradientDescent(1.0, 1e-5, steps=25)
    e = est.fit(X, y, 0)
    assert e.guarantee.epsilon == pytest.approx(1.0, rel=1e-6)
    r = e.ledger.releases[0]
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(r.std / r.sensitivity), 25)
    ref = acc.get_epsilon(1e-5)
    assert e.guarantee.epsilon <= ref * (1 + 1e-9)
    assert e.guarantee.epsilon == pytest.approx(ref, rel=0.02)


def test_dpgd_noiseless_matches_gradient_descent() -> None:
    X, y, _ = _data(3000, 3, 0.0, 3)
    e = DPGradientDescent(math.inf, steps=300).fit(X, y, 0)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    if np.linalg.norm(ols) < 1:
        np.testing.assert_allclose(e.theta, ols, atol=1e-3)
    assert not e.guarantee.is_private and np.all(e.width(X) == 2.0)


@pytest.mark.parametrize("make", [lambda: LeastSquares(), lambda: SSPRidge(0.5)])
def test_ridge_widths_cover_across_seeds(make) -> None:  # type: ignore[no-untyped-def]
    """Self-normalized widths (failure_prob 0.05) cover f* at all held-out points in >= 47 of 50 seeds."""
    ok = 0
    for seed in range(50):
        X, y, theta = _data(5000, 3, 3.0, seed)
        e = make().fit(X, y, seed)
        Xt = covariates(2000, 3, 3.0, np.random.default_rng(seed + 1000))
        ok += int(np.all(np.abs(e.predict(Xt) - Xt @ theta) <= e.width(Xt)))
    assert ok >= 47


def test_ssp_non_private_equals_least_squares() -> None:
    X, y, _ = _data(2000, 4, 2.0, 4)
    a, b = SSPRidge(math.inf).fit(X, y, 0), LeastSquares().fit(X, y)
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-10)


def test_baseline_parameters_are_validated() -> None:
    with pytest.raises(ValidationError, match="ridge"):
        LeastSquares(ridge=0.0)
    with pytest.raises(ValidationError, match="steps"):
        DPGradientDescent(1.0, steps=0)
    with pytest.raises(ValidationError, match="delta"):
        SSPRidge(1.0, 1.5)
