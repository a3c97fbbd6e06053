"""The compiled rounds of chen-jdp / chen-elim and the SquareCB family against their numpy steps.

:mod:`privbandits.algorithms.chen.jdp_kernel` and :mod:`privbandits.algorithms.chen.squarecb_kernel`
run the rounds of the numpy roles of :mod:`privbandits.algorithms.chen` on the compiled driver.
The conformance suite compares whole trajectories of the two drivers; here: the device's clips
(squarecb-ldp's gradient beyond every bound), the curators' stored data (rewards and features
beyond their bounds), the compiled Algorithm 2 fit against the numpy estimator, and the IGW choice.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import privbandits as pb
from privbandits.algorithms.chen.jdp_kernel import fit_jdp
from privbandits.algorithms.chen.ldp_kernel import epoch_table
from privbandits.algorithms.chen.squarecb import igw_sample
from privbandits.algorithms.chen.squarecb_kernel import igw_choose, ldp_encode
from privbandits.algorithms.chen.squarecb_ldp import GRADIENT, IDLE
from privbandits.core.rng import make_streams
from privbandits.engine.compiled import compiled_kernel
from privbandits.regression import ReweightedRegression
from privbandits.regression.dimfree import improper_sgd_gradients


def _reset(name: str, d: int = 3, K: int = 5, R: int = 2, T: int = 400, **params: Any) -> Any:
    alg = pb.make(name, **params)
    spec = pb.SyntheticEnv(d=d, K=K).reset(R, make_streams(0), T)
    alg.reset(spec, R, make_streams(0))
    return alg


def test_igw_choice_equals_the_numpy_inverse_cdf() -> None:
    """The compiled IGW choice is the numpy ``igw_sample`` on the clipped scores (scores beyond
    [-1, 1] on both sides, ties, gamma 0 and large), for 4000 draws."""
    rng = np.random.default_rng(3)
    for _ in range(4000):
        X = rng.standard_normal((6, 3)) * rng.choice([0.1, 1.0, 10.0])
        if rng.random() < 0.2:
            X[3] = X[1]  # a tie
        theta = rng.standard_normal(3)
        gamma = float(rng.choice([0.0, 0.5, 30.0, 1e6]))
        u = float(rng.random())
        want = igw_sample(np.clip(X @ theta, -1.0, 1.0), gamma, u)
        assert igw_choose(X, theta, gamma, u, np.empty(6), np.empty(6)) == want


def test_squarecb_ldp_compiled_encode_equals_the_device_beyond_every_clip() -> None:
    """squarecb-ldp's compiled ``encode`` equals the numpy device's gradient on 400 users whose
    iterate sends the prediction beyond [-1, 1] (entries up to 50), rewards up to 3 and features
    of norm up to 4 (the gradient clip to norm 4 acts); an IDLE slot sends zeros."""
    alg = _reset("squarecb-ldp", m0=4)
    k = compiled_kernel(alg)
    assert k is not None
    rng = np.random.default_rng(0)
    n, d = 400, 3
    theta = rng.uniform(-50.0, 50.0, (n, d))
    X = rng.standard_normal((n, 5, d)) * rng.uniform(0.1, 4.0, (n, 1, 1))
    a = rng.integers(0, 5, n)
    y = rng.uniform(-3.0, 3.0, n)
    want = improper_sgd_gradients(theta, X[np.arange(n), a], y)
    assert np.any(np.linalg.norm(want, axis=1) > 3.999)  # the norm clip acted
    out = np.empty(d)
    for r in range(n):
        public = (np.array([GRADIENT]), theta[r : r + 1], np.zeros((1, d)), np.zeros(1))
        ldp_encode(k.params, public, 0, 0, X[r], int(a[r]), float(y[r]), out)
        np.testing.assert_allclose(out, want[r], rtol=1e-12, atol=1e-12)
        assert np.linalg.norm(out) <= 4.0 * (1 + 1e-12)
        idle = (np.array([IDLE]),) + public[1:]
        ldp_encode(k.params, idle, 0, 0, X[r], int(a[r]), float(y[r]), out)
        assert not out.any()


@pytest.mark.parametrize("name", ["chen-jdp", "chen-elim", "squarecb-jdp", "squarecb"])
def test_compiled_curators_store_clipped_rewards_and_unit_features(name: str) -> None:
    """The compiled curators store the reward clipped into [-1, 1] (at, just inside, 1e-9 and
    1e300 beyond) and the chosen feature scaled into the unit ball (norm 5 -> 1; norm 0.5 kept)."""
    params = {"first_epoch": 32, "min_fit": 30} if name.startswith("chen") else {"m0": 4}
    alg = _reset(name, R=1, **params)
    k = compiled_kernel(alg)
    assert k is not None
    Xb, yb = k.state[0], k.state[1]
    rng = np.random.default_rng(1)
    for i, (y, want) in enumerate(
        [(1.0, 1.0), (-(1 - 1e-9), -(1 - 1e-9)), (1 + 1e-9, 1.0), (-1e300, -1.0), (1e300, 1.0)]
    ):
        X = rng.standard_normal((5, 3))
        X[2] *= (5.0 if i % 2 else 0.5) / np.linalg.norm(X[2])
        k.update(k.params, k.state, 0, i, X, 2, y, np.random.default_rng(0))
        assert yb[0, i] == want
        np.testing.assert_allclose(
            Xb[0, i], X[2] / max(1.0, np.linalg.norm(X[2])), rtol=1e-15, atol=0
        )


@pytest.mark.parametrize("link", ["identity", "logistic"])
def test_compiled_algorithm_2_equals_the_numpy_estimator(link: str) -> None:
    """Without noise (sigma = 0) the compiled fit of Algorithm 2 returns the numpy estimator's
    ``theta = U w`` and ``U`` to rounding, on responses beyond [-1, 1] (clipped by both)."""
    rng = np.random.default_rng(2)
    n, d = 600, 3
    X = rng.standard_normal((n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.clip(X @ np.array([0.6, -0.3, 0.2]) + rng.normal(0, 0.3, n), -3, 3) * 1.5
    reg = ReweightedRegression(np.inf, 1e-5, link=link, failure_prob=0.01, c_b=0.1)
    est = reg.fit(X, y, 0)
    row = epoch_table(reg, np.array([n]), 1, d)[0]
    theta, U = fit_jdp(
        X, y, row, reg.K, 0.0, 1.0 / (2.0 * reg.link.L_nu), reg.link.link.code, make_rng()
    )
    np.testing.assert_allclose(U, est.width_matrix, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(theta, est.theta, rtol=1e-9, atol=1e-12)
    assert np.abs(y).max() > 1.0


def make_rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["chen-jdp", "squarecb-jdp", "squarecb-ldp"])
def test_compiled_private_fits_draw_the_noise(name: str) -> None:
    """The private compiled rounds draw their noise: the same seed on two privacy levels gives
    different estimates, and a level gives the reference driver's estimate (the defect a kernel
    with the noise left out would show)."""
    params: dict[str, Any] = (
        {"first_epoch": 32, "min_fit": 30} if name.startswith("chen") else {"m0": 4}
    )
    env = pb.SyntheticEnv(d=3, K=5)
    est = {}
    for eps in (0.5, 1e4):
        for engine in ("reference", "compiled"):
            res = pb.simulate(
                pb.make(name, epsilon=eps, **params),
                env,
                horizon=300,
                replications=2,
                seed=4,
                checkpoints=4,
                engine=engine,
            )
            assert res.engine == engine
            est[eps, engine] = np.asarray(res.estimation_error)
        np.testing.assert_allclose(est[eps, "compiled"], est[eps, "reference"], atol=1e-9)
    assert not np.allclose(est[0.5, "compiled"], est[1e4, "compiled"])
