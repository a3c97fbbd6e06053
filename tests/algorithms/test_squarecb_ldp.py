"""SquareCB on Algorithm 6 (``squarecb-ldp``): message sensitivity, the server's online Algorithm 6, the
noise of the client path, the public schedule and the trust boundary (Chen et al. 2025, Section 6)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privbandits as pb
from privbandits.algorithms.chen.squarecb_ldp import (
    GRADIENT,
    IDLE,
    SquareCBLDPClient,
    SquareCBLDPServer,
    ldp_rate,
)
from privbandits.auditing import CLIENT_PATHS, near_parallel_pairs
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.spec import EnvSpec
from privbandits.privacy.calibration import gaussian_sigma_analytic
from privbandits.regression import ImproperBatchSGD

unit = st.floats(-1.0, 1.0, allow_nan=False)


def _ball(v: list[float]) -> np.ndarray:
    x = np.asarray(v)
    return x / max(1.0, float(np.linalg.norm(x)))


def _message(theta: np.ndarray, phi: np.ndarray, y: float, slot: int = GRADIENT) -> np.ndarray:
    """The noiseless message of one user holding ``(phi, y)`` under the iterate ``theta``."""
    client = SquareCBLDPClient(0.0, EnvSpec(d=phi.size, K=1, horizon=10))
    public = PublicState(
        slot=np.array([slot]),
        theta_sgd=theta[None],
        theta_hat=np.zeros((1, phi.size)),
        gamma=np.zeros(1),
    )
    msg = client.randomize(
        0,
        public,
        phi[None, None],
        np.zeros(1, dtype=np.int64),
        np.array([y]),
        np.random.default_rng(0),
    )
    return np.asarray(msg["g"][0])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-50, 50), min_size=3, max_size=3),
    st.lists(unit, min_size=3, max_size=3),
    st.lists(unit, min_size=3, max_size=3),
    st.floats(-30, 30),
    st.floats(-30, 30),
)
def test_message_sensitivity_is_at_most_eight(
    theta: list[float], a: list[float], b: list[float], ya: float, yb: float
) -> None:
    """Spec section 9, item 12 (Alg 6): for any public iterate (improper, any norm), features in the unit
    ball and rewards anywhere (the client clips them), two users' messages differ by at most 8."""
    th = np.asarray(theta)
    ga, gb = _message(th, _ball(a), ya), _message(th, _ball(b), yb)
    assert np.linalg.norm(ga - gb) <= 8.0 + 1e-12
    assert np.linalg.norm(ga) <= 4.0 + 1e-12


def test_the_audit_pair_nearly_attains_the_sensitivity() -> None:
    """The bound 8 is tight over the server's iterates: the audit's pair is ``8 cos(a)`` apart (``a = 1e-3``)."""
    spec = EnvSpec(d=2, K=3, horizon=10)
    ((u, v),) = near_parallel_pairs(spec)
    theta = np.asarray(CLIENT_PATHS["client:squarecb-ldp"].public(spec)["theta_sgd"])  # type: ignore[misc]
    dist = np.linalg.norm(
        _message(theta, u.contexts[0], float(u.reward))
        - _message(theta, v.contexts[0], float(v.reward))
    )
    assert dist == pytest.approx(8.0 * math.cos(1e-3), rel=1e-12)
    assert dist >= 8.0 * (1 - 1e-6)


def test_idle_users_send_a_constant() -> None:
    rng = np.random.default_rng(1)
    for _ in range(5):
        phi = _ball(list(rng.uniform(-1, 1, 3)))
        assert np.array_equal(
            _message(rng.normal(size=3), phi, float(rng.uniform(-1, 1)), IDLE), np.zeros(3)
        )


def test_client_noise_has_the_calibrated_standard_deviation() -> None:
    """Each coordinate of a message is the clipped gradient plus N(0, (8 sigma)^2): the sample standard
    deviation over n = 20,000 users lies within 5 standard errors (``std / sqrt(2 n)``) of ``8 sigma``."""
    sigma = gaussian_sigma_analytic(1.0, 1e-5)
    n, d = 20_000, 3
    client = SquareCBLDPClient(sigma, EnvSpec(d=d, K=1, horizon=10))
    phi = np.tile(np.array([0.6, 0.0, 0.8]), (n, 1, 1))
    theta = np.tile(np.array([1.0, 0.5, 0.0]), (n, 1))
    public = PublicState(
        slot=np.full(n, GRADIENT), theta_sgd=theta, theta_hat=np.zeros((n, d)), gamma=np.zeros(n)
    )
    y = np.full(n, 0.3)
    g = np.asarray(
        client.randomize(0, public, phi, np.zeros(n, dtype=np.int64), y, np.random.default_rng(2))[
            "g"
        ]
    )
    exact = 2.0 * (0.6 - 0.3) * np.array([0.6, 0.0, 0.8])
    noise = g - exact
    std = 8.0 * sigma
    assert np.all(np.abs(noise.std(axis=0, ddof=1) - std) <= 5.0 * std / math.sqrt(2 * n))
    assert np.all(np.abs(noise.mean(axis=0)) <= 5.0 * std / math.sqrt(n))


def test_server_runs_algorithm_6_online() -> None:
    """Without noise, the server's batches (theta_{k-1} published to batch k) reproduce the offline
    LDP_Improper_BatchSGD with the epoch's (K, eta) on the same users; the schedule uses K N users and
    leaves the rest idle; the posted learning rate is c_gamma sqrt(A / E(n))."""
    d, n, A = 3, 5000, 4
    rng = np.random.default_rng(3)
    theta = rng.normal(size=d)
    theta /= np.linalg.norm(theta)
    Phi = rng.normal(size=(n, d))
    Phi /= np.linalg.norm(Phi, axis=1, keepdims=True)
    y = np.where(rng.random(n) < (1 + Phi @ theta) / 2, 1.0, -1.0)
    oracle = ImproperBatchSGD(20.0, mode="ldp")
    K, eta = oracle.steps(n)
    assert K > 1  # several batches, so the online iterate matters
    server = SquareCBLDPServer(1, EnvSpec(d=d, K=A, horizon=n), oracle, np.array([n]), c_gamma=0.7)
    client = SquareCBLDPClient(0.0, EnvSpec(d=d, K=1, horizon=n))
    slots = []
    for t in range(n):
        public = server.public_state()
        slots.append(int(public["slot"][0]))
        server.receive(
            t,
            client.randomize(
                t, public, Phi[t][None, None], np.zeros(1, dtype=np.int64), y[t : t + 1], rng
            ),
        )
    offline = ImproperBatchSGD(math.inf, mode="ldp", K=K, eta=eta).fit(Phi, y, 0)
    np.testing.assert_allclose(server.estimate()[0], offline.theta, rtol=1e-10, atol=1e-13)
    N = n // K
    assert slots.count(GRADIENT) == K * N and slots.count(IDLE) == n - K * N
    assert slots[: K * N] == [GRADIENT] * (K * N)
    assert server.gamma[0] == pytest.approx(0.7 * math.sqrt(A / ldp_rate(n, oracle.sigma)))


def test_server_accepts_only_its_privatized_messages() -> None:
    server = SquareCBLDPServer(
        1, EnvSpec(d=2, K=3, horizon=100), ImproperBatchSGD(1.0, mode="ldp"), np.array([100]), 1.0
    )
    with pytest.raises(TrustBoundaryError):
        server.receive(0, {"g": np.zeros((1, 2))})  # type: ignore[arg-type]
    with pytest.raises(TrustBoundaryError):
        server.receive(0, PrivatizedMessage({"g": np.zeros((1, 2))}, "other-mechanism"))


def test_first_epoch_plays_uniformly() -> None:
    """Before any release (theta_hat = 0, gamma = 0) the IGW draw is uniform over the A actions: every
    count of 60,000 draws lies within 5 binomial standard deviations of n / A."""
    n, A, d = 60_000, 5, 2
    client = SquareCBLDPClient(1.0, EnvSpec(d=d, K=A, horizon=10))
    public = PublicState(
        slot=np.full(n, IDLE),
        theta_sgd=np.zeros((n, d)),
        theta_hat=np.zeros((n, d)),
        gamma=np.zeros(n),
    )
    X = np.random.default_rng(4).uniform(-0.5, 0.5, size=(n, A, d))
    counts = np.bincount(client.choose(0, public, X, np.random.default_rng(5)), minlength=A)
    p = 1.0 / A
    assert np.all(np.abs(counts - n * p) <= 5.0 * math.sqrt(n * p * (1 - p)))


def test_guarantee_is_the_accounted_gaussian_release() -> None:
    env = pb.SyntheticEnv(d=3, K=4)
    alg = pb.make("squarecb-ldp", epsilon=0.7, delta=1e-6, m0=4)
    pb.simulate(alg, env, horizon=64, replications=1)
    g = alg.guarantee
    assert g.model == "local" and g.epsilon == pytest.approx(0.7, rel=1e-6) and g.delta == 1e-6
    with pytest.raises(ValidationError, match="classic"):
        pb.make("squarecb-ldp", epsilon=1.5, gaussian="classic")
    with pytest.raises(ValidationError, match="context_bound <= 1"):
        pb.simulate(
            pb.make("squarecb-ldp"),
            pb.SyntheticEnv(d=3, K=4, context_bound=2.0),
            horizon=10,
            replications=1,
        )


def test_learns_at_weak_privacy_on_a_linear_bandit() -> None:
    """At epsilon = 50 (noise std 8 sigma ~ 1.1 per message) SquareCB on Algorithm 6 beats the uniform
    policy (T = 4096, 2 seeds; observed about 0.37x of its regret)."""
    env = pb.SyntheticEnv(d=3, K=6, noise="rademacher")
    sq = pb.simulate(
        pb.make("squarecb-ldp", epsilon=50.0, m0=7), env, horizon=4096, replications=2, seed=1
    ).summary()["mean"]
    un = pb.simulate(pb.make("uniform"), env, horizon=4096, replications=2, seed=1).summary()[
        "mean"
    ]
    assert sq < 0.7 * un
