"""Algorithms 5 and 6 of Chen et al. (2025): sensitivity, calibration, dimension-free error."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.regression import ImproperBatchSGD
from privbandits.regression.dimfree import (
    SQ_GRADIENT_SENSITIVITY,
    improper_sgd_messages,
    improper_sgd_pass,
)

from .helpers import covariates, unit


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 5),
    st.integers(1, 6),
    st.integers(1, 5),
    st.sampled_from([0.25, 0.5, 1.0]),
)
def test_output_sensitivity_of_the_batched_pass(
    seed: int, d: int, N: int, K: int, eta: float
) -> None:
    """Spec item 12: the whole noiseless pass moves by at most 8 eta / N when one sample is replaced
    (non-expansive projected steps), including extreme responses."""
    rng = np.random.default_rng(seed)
    n = N * K
    X, y = covariates(n, d, 1.0, rng), rng.choice([-1.0, 1.0], size=n)
    i = int(rng.integers(n))
    X2, y2 = X.copy(), y.copy()
    X2[i], y2[i] = unit(d, rng), -y[i]
    diff = np.linalg.norm(improper_sgd_pass(X, y, K, eta) - improper_sgd_pass(X2, y2, K, eta))
    assert diff <= SQ_GRADIENT_SENSITIVITY * eta / N + 1e-12


def test_message_sensitivity_and_noise(rng: np.random.Generator) -> None:
    """One user's gradient has norm <= 4 whatever the public theta; messages are unbiased with std 8 sigma
    (20000 messages: mean within 5 SE, variance within 5%)."""
    theta = 50 * rng.normal(size=3)
    X, y = covariates(1000, 3, 0.0, rng), rng.choice([-1.0, 1.0], size=1000)
    g = improper_sgd_messages(theta, X, y, 0.0, rng)
    assert np.linalg.norm(g, axis=1).max() <= 4.0 + 1e-12
    R, sigma = 20_000, 0.7
    msgs = improper_sgd_messages(theta, np.broadcast_to(X[0], (R, 3)), np.full(R, y[0]), sigma, rng)
    std = 8 * sigma
    assert np.all(np.abs(msgs.mean(0) - g[0]) <= 5 * std / math.sqrt(R))
    np.testing.assert_allclose(msgs.var(0), std**2, rtol=0.05)


@pytest.mark.parametrize("mode", ["jdp", "ldp"])
def test_guarantee_matches_dp_accounting(mode: str) -> None:
    from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

    rng = np.random.default_rng(0)
    X, y = covariates(5000, 4, 0.0, rng), rng.choice([-1.0, 1.0], size=5000)
    e = ImproperBatchSGD(0.8, 1e-6, mode=mode).fit(X, y, 0)
    assert e.guarantee.epsilon == pytest.approx(0.8, rel=1e-6)
    assert e.guarantee.model == ("central" if mode == "jdp" else "local")
    for r in e.ledger.releases:
        assert GaussianPrivacyLoss(r.std, sensitivity=r.sensitivity).get_delta_for_epsilon(
            0.8
        ) <= 1e-6 * (1 + 1e-6)


def _sigma_error(d: int, seed: int, epsilon: float, n: int = 20_000) -> tuple[float, float, float]:
    rng = np.random.default_rng([seed, d])
    ev = np.arange(1, d + 1) ** -1.5
    ev /= ev.sum()  # tr Sigma = 1
    X = rng.normal(size=(n, d)) * np.sqrt(ev)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    theta = np.zeros(d)
    theta[0] = 1.0  # ||theta*|| = 1 on the top direction
    y = np.where(rng.random(n) < (1 + X @ theta) / 2, 1.0, -1.0)
    e = ImproperBatchSGD(epsilon).fit(X, y, seed)
    Xt = rng.normal(size=(20_000, d)) * np.sqrt(ev)
    std = e.ledger.releases[0].std
    return float(np.mean((Xt @ (e.theta - theta)) ** 2)), float(np.linalg.norm(e.theta)), std


@pytest.mark.slow
def test_jdp_error_is_dimension_free() -> None:
    """Spec item 21: with tr Sigma = 1 the statistical part (the noiseless pass) has a Sigma-error at
    d = 1000 within 2x of d = 10 (2 seeds each), and the output noise has the same std at both d, so its
    expected Sigma-error std^2 tr Sigma is d-free, while ||theta_hat|| ~ std sqrt(d) grows with d."""
    stat10 = np.mean([_sigma_error(10, s, math.inf)[0] for s in range(2)])
    stat1000 = np.mean([_sigma_error(1000, s, math.inf)[0] for s in range(2)])
    assert stat1000 <= 2.0 * stat10
    _, norm10, std10 = _sigma_error(10, 0, 1.0)
    _, norm1000, std1000 = _sigma_error(1000, 0, 1.0)
    assert std10 == std1000 > 0.0
    assert norm1000 > 2.0 * norm10 and norm1000 == pytest.approx(std1000 * math.sqrt(1000), rel=0.3)
