"""ECOLog (Faury et al. 2022, the no-warm-up variant of the authors' public code): its constants,
its regularised step against the public code's whitened-coordinate iteration, its invariants and
that it learns."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import sqrtm

import privbandits as pb
from privbandits.algorithms.glm.ecolog import (
    ECOLog,
    _solve,
    ecolog_gamma,
    ecolog_iterations,
    ecolog_step,
)
from privbandits.core.errors import ValidationError


def test_constants_are_the_public_codes() -> None:
    """gamma_t, the step size and the iteration count of the code, evaluated by hand."""
    lam, t, delta = 10.0, 7.0, 0.05
    assert ecolog_gamma(lam, t, delta) == pytest.approx(
        math.sqrt(10) / 2 + 2 * math.log(2 * math.sqrt(1 + 7 / 40) / 0.05) / math.sqrt(10),
        rel=1e-14,
    )
    assert ecolog_step(3.5) == pytest.approx(0.75 / (0.25 + 1 / 2.75), rel=1e-14)
    # int((1/0.75) * ceil((9/4 + 3.5/8) * ln(3.5 * 100))) = int(1.333.. * ceil(15.73..)) = 21
    assert ecolog_iterations(3.5, 100.0) == 21
    assert ECOLog().lam == 10.0


def _whitened_reference(V, x, y, theta_t, S, n_iter, eta, bar):
    """The public code's iteration in z = V^{1/2} theta (its projection replaced by the exact one:
    only used where the iterates stay inside the ball)."""
    Vh = np.real(sqrtm(V))
    Vih = np.real(sqrtm(np.linalg.inv(V)))
    z_t = Vh @ theta_t
    z = z_t.copy()
    u = Vih @ x
    for _ in range(n_iter):
        p = 1 / (1 + np.exp(-(z @ u)))
        g = 2 * p - 1 if bar else p - y
        z = z - eta * (z - z_t + g * u)
        assert (Vih @ z) @ (Vih @ z) <= S * S  # inside: no projection
    return Vih @ z


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    y=st.sampled_from([0.0, 1.0]),
    bar=st.booleans(),
)
def test_step_in_theta_coordinates_equals_the_codes_whitened_step(seed, y, bar) -> None:
    """theta <- theta - eta (theta - theta_t + g V^-1 x) is the code's z-iteration mapped back."""
    rng = np.random.default_rng(seed)
    d, S = 3, 3.5  # the iterates start at ||theta_t|| = 0.5 and stay inside: no projection
    A = rng.normal(size=(d, d))
    V = A @ A.T + 2 * np.eye(d)
    x = rng.normal(size=d)
    x /= max(1.0, np.linalg.norm(x))
    theta_t = rng.normal(size=d)
    theta_t *= 0.5 / np.linalg.norm(theta_t)
    n_iter, eta = 12, ecolog_step(S)
    out = np.empty(d)
    scratch = [np.empty(d), np.empty(d), np.empty((d, d)), np.empty(d), np.empty(d)]
    _solve(V, np.linalg.inv(V), x, y, theta_t, S, n_iter, eta, bar, scratch[0], out, scratch[1],
           scratch[2], scratch[3], scratch[4])  # fmt: skip
    ref = _whitened_reference(V, x, y, theta_t, S, n_iter, eta, bar)
    np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-10)


def _run(T: int = 1500, R: int = 4, seed: int = 0, **kw):
    env = pb.SyntheticEnv(
        d=3, K=10, link="logistic", noise="bernoulli", theta_norm=2.0, contexts="ball"
    )
    alg = ECOLog(**kw)
    res = pb.simulate(alg, env, horizon=T, replications=R, seed=seed)
    return alg, res


def test_invariants_after_a_run() -> None:
    """theta stays in the ball ||theta|| <= S, V~^{-1} is the inverse of V~, V~ - lambda I is PSD."""
    alg, _ = _run(T=400, R=3)
    V, V_inv, theta = alg.kernel.state[0], alg.kernel.state[1], alg.kernel.state[2]
    S = alg.calibration.constants.S
    assert np.all(np.linalg.norm(theta, axis=1) <= S * (1 + 1e-9))
    for r in range(3):
        np.testing.assert_allclose(V[r] @ V_inv[r], np.eye(3), atol=1e-8)
        assert np.linalg.eigvalsh(V[r] - alg.lam * np.eye(3)).min() >= -1e-9
    assert np.all(alg.radius > 0) and np.all(alg.condition_failures >= 0)


def test_learns_a_logistic_bandit() -> None:
    """Final regret far below uniform play's on the same seeds: uniform's regret grows linearly,
    ECOLog's mean over 4 replications is below half of it (the gap is > 10 standard errors)."""
    _, res = _run()
    env = pb.SyntheticEnv(
        d=3, K=10, link="logistic", noise="bernoulli", theta_norm=2.0, contexts="ball"
    )
    uni = pb.simulate(pb.make("uniform"), env, horizon=1500, replications=4, seed=0)
    ours, base = res.final_regret, uni.final_regret
    assert ours.mean() < 0.5 * base.mean()


def test_logistic_only() -> None:
    env = pb.SyntheticEnv(d=2, K=4, link="probit", noise="bernoulli")
    with pytest.raises(ValidationError, match="logistic"):
        pb.simulate(ECOLog(), env, horizon=10, replications=1, seed=0)
