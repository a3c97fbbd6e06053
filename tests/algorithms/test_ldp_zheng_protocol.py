"""Protocol of LDP-UCB / LDP-GLOC: trust boundary, public state, presets, guarantees, settings.

Spec zheng2020-ldp-bandits.md section 7 items 8 and 16, section 8 A2/A6; spec han2021-ldp-glb.md
section 4 (multi-parameter block features).
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from privbandits.algorithms import make
from privbandits.algorithms.base import Server
from privbandits.algorithms.ldp_zheng import LDPGLOC, LDPUCB, GLOCServer, NoisyRidgeServer
from privbandits.algorithms.ldp_zheng.constants import beta_ucb_paper, upsilon
from privbandits.core.errors import PrivbanditsError, TrustBoundaryError, ValidationError
from privbandits.core.links import get_link
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.envs.synthetic import SyntheticEnv
from privbandits.privacy.mechanisms import gaussian_epsilon, laplace_epsilon
from privbandits.simulate import simulate

ALGS = [("ldp-ucb", "identity", "gaussian"), ("ldp-gloc", "logistic", "bernoulli"), ("ldp-gloc", "identity", "gaussian")]


def _env(link="identity", noise="gaussian", setting="single", **kw):
    return SyntheticEnv(d=2, K=4, setting=setting, link=link, noise=noise, **kw)


# --- trust boundary (item 8) ----------------------------------------------------------------------
@pytest.mark.parametrize("name, link, noise", ALGS)
@pytest.mark.parametrize("setting", ["single", "multi"])
def test_server_only_receives_noisy_messages(name, link, noise, setting):
    """Instrument the user->server channel: every payload is a PrivatizedMessage whose every coordinate
    differs from the user's noiseless statistic; the raw (x, y, arm) never reaches the server."""
    alg = make(name, epsilon=2.0)
    seen: list[tuple[object, tuple]] = []
    env = _env(link, noise, setting)
    simulate(alg, env, 1, replications=2, seed=0)  # builds client and server
    client_randomize = type(alg.client).randomize

    def spy_randomize(self, t, public, contexts, actions, rewards, rng):
        msg = client_randomize(self, t, public, contexts, actions, rewards, rng)
        seen.append((msg, (public, contexts.copy(), actions.copy(), np.array(rewards, copy=True))))
        return msg

    received: list[object] = []
    server_receive = type(alg.server).receive

    def spy_receive(self, t, message):
        received.append(message)
        return server_receive(self, t, message)

    mp = pytest.MonkeyPatch()
    mp.setattr(type(alg.client), "randomize", spy_randomize)
    mp.setattr(type(alg.server), "receive", spy_receive)
    try:
        simulate(alg, env, 30, replications=3, seed=1)
    finally:
        mp.undo()
    assert len(received) == 30 and all(isinstance(m, PrivatizedMessage) for m in received)
    for msg, (public, X, a, r) in seen:
        x = alg.features.chosen(X, a)
        x = x * np.minimum(1.0, 1.0 / np.linalg.norm(x, axis=1))[:, None]
        raw = {"V": x[:, :, None] * x[:, None, :]}
        y = np.clip(r, *alg.calibration.reward_interval)
        if name == "ldp-ucb":
            raw["u"] = y[:, None] * x
        else:
            z = np.einsum("rd,rd->r", x, public["theta_hat"])
            raw["u"] = z[:, None] * x
        for key, stat in raw.items():
            assert np.all(msg.payload[key] != stat), key  # noise on every coordinate
        assert set(msg.payload) == ({"V", "u"} if name == "ldp-ucb" else {"V", "u", "g"})
        assert msg.payload["V"].shape[1:] == (alg.features.D, alg.features.D)  # full K d in the multi setting


@pytest.mark.parametrize("cls", [NoisyRidgeServer, GLOCServer])
def test_server_api_has_no_raw_data_entry(cls):
    """No server method takes contexts, actions or rewards."""
    forbidden = {"contexts", "context", "actions", "action", "rewards", "reward", "x", "y"}
    for name, fn in inspect.getmembers(cls, inspect.isfunction):
        params = set(inspect.signature(fn).parameters)
        assert not params & forbidden, (name, params & forbidden)
    assert issubclass(cls, Server)


@pytest.mark.parametrize("name", ["ldp-ucb", "ldp-gloc"])
def test_server_rejects_anything_but_its_privatized_messages(name):
    alg = make(name)
    simulate(alg, _env(), 1, replications=2, seed=0)
    server = alg.server
    n0 = server.n
    R, D = 2, alg.features.D
    good = {"V": np.zeros((R, D, D)), "u": np.zeros((R, D))}
    if name == "ldp-gloc":
        good["g"] = np.zeros((R, D))
    for bad in (np.zeros((R, D)), good, (np.zeros((R, D)), np.zeros(R)),
                PrivatizedMessage(good, mechanism="raw"),
                PrivatizedMessage({k: v for k, v in good.items() if k != "u"}, mechanism=f"{name}/gaussian"),
                PrivatizedMessage({**good, "u": np.zeros((R, D + 1))}, mechanism=f"{name}/gaussian")):
        with pytest.raises(TrustBoundaryError):
            server.receive(0, bad)
    assert server.n == n0


# --- public state and index conventions (A2, A6) ---------------------------------------------------
def test_public_state_round_one_and_regularized_once():
    alg = LDPUCB(epsilon=1.0, delta=0.1)
    env = _env()
    simulate(alg, env, 1, replications=3, seed=0)
    alg.reset(alg.spec, 3, make_streams(2))
    s = alg.server
    pub = s.public_state()
    assert isinstance(pub, PublicState) and set(pub) == {"theta", "M", "beta"}
    c1 = 2 * upsilon(1, alg.sigma, 2, alg.T, 0.1)
    np.testing.assert_allclose(pub["M"], np.broadcast_to(np.eye(2) / c1, (3, 2, 2)))
    np.testing.assert_array_equal(pub["theta"], 0.0)
    assert float(pub["beta"]) == pytest.approx(beta_ucb_paper(1, alg.sigma, 2, alg.T, 0.1))
    # feed 5 messages: M = (V_5 + c_5 I)^{-1} with V_5 the raw noisy sum (regularizer added once)
    rng = np.random.default_rng(0)
    V = np.zeros((3, 2, 2))
    u = np.zeros((3, 2))
    for t in range(5):
        m = {"V": rng.standard_normal((3, 2, 2)), "u": rng.standard_normal((3, 2))}
        m["V"] = m["V"] + m["V"].transpose(0, 2, 1)
        V += m["V"]
        u += m["u"]
        s.receive(t, PrivatizedMessage(m, mechanism="ldp-ucb/gaussian"))
    c5 = 2 * upsilon(5, alg.sigma, 2, alg.T, 0.1)
    M = np.linalg.inv(V + c5 * np.eye(2))
    np.testing.assert_allclose(s.public_state()["M"], M, rtol=1e-12)
    np.testing.assert_allclose(s.public_state()["theta"], np.einsum("rde,re->rd", M, u), rtol=1e-10)
    assert float(s.public_state()["beta"]) == pytest.approx(beta_ucb_paper(5, alg.sigma, 2, alg.T, 0.1))


def test_zheng_demo_conventions():
    """authors_code / zheng2020: round-1 inverse (0.1 I)^{-1} = 10 I, beta_t at the current index, squared bonus."""
    alg = LDPUCB(preset="authors_code", reference_code="zheng2020", delta=0.1)
    simulate(alg, _env(), 1, replications=2, seed=0)
    alg.reset(alg.spec, 2, make_streams(0))
    pub = alg.server.public_state()
    np.testing.assert_allclose(pub["M"], np.broadcast_to(10 * np.eye(2), (2, 2, 2)))
    assert alg.calibration.bonus == "squared"
    alg.server.receive(0, PrivatizedMessage({"V": np.zeros((2, 2, 2)), "u": np.zeros((2, 2))},
                                            mechanism="ldp-ucb/gaussian"))
    assert alg.server.beta == pytest.approx(beta_ucb_paper(2, alg.sigma, 2, alg.T, 0.1))


def test_han_code_starts_gram_at_identity():
    alg = LDPUCB(preset="authors_code")
    simulate(alg, _env(), 1, replications=2, seed=0)
    alg.reset(alg.spec, 2, make_streams(0))
    np.testing.assert_array_equal(alg.server.V, np.broadcast_to(np.eye(2), (2, 2, 2)))
    alg = LDPUCB(preset="authors_code")
    simulate(alg, _env(setting="multi"), 1, replications=2, seed=0)
    alg.reset(alg.spec, 2, make_streams(0))
    np.testing.assert_array_equal(alg.server.V, 0.0)


def test_non_pd_regularized_matrix_is_shifted_with_warning():
    server = NoisyRidgeServer(2, 2, "m", sigma=1.0, T=100, alpha=0.1, c_factor=1e-9, beta=lambda s: 1.0)
    V = np.stack([np.diag([-5.0, 1.0]), np.eye(2)])
    with pytest.warns(RuntimeWarning, match="not positive definite"):
        server.receive(0, PrivatizedMessage({"V": V, "u": np.ones((2, 2))}, mechanism="m"))
    assert server.n_shifted == 1
    assert np.all(np.linalg.eigvalsh(server.M) > 0)


# --- LDP-GLOC online learner (item 16) -------------------------------------------------------------
def test_gloc_online_iterate_stays_in_unit_ball():
    alg = LDPGLOC(epsilon=0.5)
    norms: list[np.ndarray] = []
    absorb = GLOCServer._absorb

    def spy(self, message):
        absorb(self, message)
        norms.append(np.linalg.norm(self.theta_hat, axis=-1))

    mp = pytest.MonkeyPatch()
    mp.setattr(GLOCServer, "_absorb", spy)
    try:
        res = simulate(alg, _env("logistic", "bernoulli"), 200, replications=4, seed=3)
    finally:
        mp.undo()
    norms_arr = np.array(norms)
    assert norms_arr.shape == (200, 4) and np.all(norms_arr <= 1 + 1e-12)
    # with eps = 0.5 the noisy gradient is huge: the projection is active
    assert np.any(norms_arr > 1 - 1e-9)
    assert res.guarantee.model == "local"


def test_gloc_authors_code_has_no_projection_and_random_init():
    alg = LDPGLOC(epsilon=0.5, preset="authors_code")
    simulate(alg, _env("logistic", "bernoulli"), 1, replications=4, seed=3)
    alg.reset(alg.spec, 4, make_streams(1))
    np.testing.assert_allclose(np.linalg.norm(alg.online_estimate(), axis=-1), 1.0)
    simulate(alg, _env("logistic", "bernoulli"), 100, replications=4, seed=3)
    assert np.linalg.norm(alg.online_estimate(), axis=-1).max() > 1.5


# --- guarantees from the noise actually added ------------------------------------------------------
def test_ucb_guarantee_is_accounted_from_the_noise():
    alg = LDPUCB(epsilon=1.0, delta=0.1)
    res = simulate(alg, _env(), 2, replications=1, seed=0)
    g = res.guarantee
    s = alg.sigma
    want = gaussian_epsilon(s, 0.05, math.sqrt(2)) + gaussian_epsilon(s, 0.05, 2.0)
    assert g.model == "local" and g.unit == "user"
    assert g.epsilon == pytest.approx(want, rel=1e-9) and g.delta == pytest.approx(0.1)
    assert g.epsilon <= 1.0 and "strict" in g.notes
    # Laplace: pure, and the split uses the whole budget
    lap = LDPUCB(epsilon=1.5, mechanism="laplace")
    res = simulate(lap, _env(), 2, replications=1, seed=0)
    assert res.guarantee.delta == 0.0 and res.guarantee.epsilon == pytest.approx(1.5)


def test_gloc_paper_preset_reveals_unclipped_gradient():
    """Linear link: |g(z) - y| reaches 2 > C = 1, so the paper's noise C sigma under-covers the unclipped
    gradient (spec A7): its part exceeds its (eps/3, delta/3) budget; strict clips and stays within it."""
    eps, delta = 1.0, 0.01
    strict_alg = LDPGLOC(epsilon=eps, delta=delta)
    strict = simulate(strict_alg, _env(), 2, replications=1, seed=0).guarantee
    paper_alg = LDPGLOC(epsilon=eps, delta=delta, preset="paper")
    paper = simulate(paper_alg, _env(), 2, replications=1, seed=0).guarantee
    assert strict.epsilon <= eps and strict.epsilon < paper.epsilon
    assert paper_alg.calibration.scale_g == pytest.approx(strict_alg.calibration.scale_g)  # same noise
    assert paper_alg.calibration.grad_bound == pytest.approx(2.0) and paper_alg.calibration.grad_clip is None
    assert gaussian_epsilon(paper_alg.calibration.scale_g, delta / 3, 2 * 2.0) > eps / 3
    assert gaussian_epsilon(strict_alg.calibration.scale_g, delta / 3, 2 * 1.0) <= eps / 3
    # logistic: C = g(1) bounds the gradient, paper == strict
    s = simulate(LDPGLOC(epsilon=eps, delta=delta), _env("logistic", "bernoulli"), 2, seed=0).guarantee
    p = simulate(LDPGLOC(epsilon=eps, delta=delta, preset="paper"), _env("logistic", "bernoulli"), 2,
                 seed=0).guarantee
    assert s.epsilon == pytest.approx(p.epsilon) and p.epsilon <= eps


def test_gloc_laplace_guarantee():
    alg = LDPGLOC(epsilon=2.0, mechanism="laplace")
    g = simulate(alg, _env("logistic", "bernoulli"), 2, seed=0).guarantee
    assert g.delta == 0.0
    parts = alg.calibration.parts
    assert g.epsilon == pytest.approx(sum(laplace_epsilon(p.scale, p.sensitivity) for p in parts))
    assert g.epsilon == pytest.approx(2.0)


def test_guarantee_needs_reset():
    with pytest.raises(PrivbanditsError, match="reset"):
        _ = LDPUCB().guarantee


@pytest.mark.parametrize("preset", ["strict", "paper", "authors_code"])
def test_preset_is_recorded(preset):
    res = simulate(LDPGLOC(preset=preset), _env("logistic", "bernoulli"), 5, replications=2, seed=0)
    assert res.preset == preset and res.params["preset"] == preset


# --- settings: block features -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ldp-ucb", "gloc"])
def test_plain_multi_equals_block_env(name):
    """Block features built by the client (plain multi setting) give the same run as the environment's
    block features (SyntheticEnv(setting="multi", features="block"))."""
    kw = {"epsilon": 5.0} if name.startswith("ldp") else {}
    a = simulate(make(name, **kw), _env(setting="multi"), 300, replications=3, seed=4)
    b = simulate(make(name, **kw), _env(setting="multi", features="block"), 300, replications=3, seed=4)
    np.testing.assert_allclose(a.regret, b.regret, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(a.estimation_error, b.estimation_error, rtol=1e-6)


def test_gloc_multi_domain_is_a_product_of_arm_balls():
    """Plain multi setting: W = product of per-arm unit balls, so |z| <= 1 keeps the single-parameter
    calibration; with the environment's block features (a single-parameter problem in K d with
    ||theta*|| <= sqrt(K)) W is the ball of radius sqrt(K) and the noise grows accordingly."""
    plain = LDPGLOC(epsilon=0.5)
    simulate(plain, _env(setting="multi"), 300, replications=3, seed=4)
    blocks = np.linalg.norm(plain.online_estimate(), axis=-1)  # (R, K)
    assert blocks.shape == (3, 4) and np.all(blocks <= 1 + 1e-12) and np.any(blocks > 1 - 1e-9)
    assert plain.calibration.blockwise and plain.calibration.z_bound == pytest.approx(1.0)
    env_block = LDPGLOC(epsilon=0.5)
    simulate(env_block, _env(setting="multi", features="block"), 2, replications=3, seed=4)
    assert not env_block.calibration.blockwise
    assert env_block.calibration.theta_radius == pytest.approx(2.0)  # sqrt(K), K = 4
    assert env_block.sigma > plain.sigma


def test_multi_estimate_shape():
    alg = LDPUCB()
    simulate(alg, _env(setting="multi"), 5, replications=3, seed=0)
    assert alg.estimate().shape == (3, 4, 2)


def test_determinism():
    a = simulate(make("ldp-gloc"), _env("logistic", "bernoulli"), 200, replications=2, seed=9)
    b = simulate(make("ldp-gloc"), _env("logistic", "bernoulli"), 200, replications=2, seed=9)
    np.testing.assert_array_equal(a.regret, b.regret)


# --- validation -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, match",
    [({"epsilon": 0.0}, "epsilon"), ({"delta": 1.0}, "delta"), ({"preset": "loose"}, "preset"),
     ({"alpha": 1.5}, "alpha"), ({"beta_scale": -1.0}, "beta_scale"), ({"mechanism": "rr"}, "mechanism"),
     ({"clip": 1}, "clip"), ({"reference_code": "x"}, "reference_code")],
)
def test_ldp_ucb_validation(kwargs, match):
    with pytest.raises(ValidationError, match=match):
        LDPUCB(**kwargs)


def test_authors_code_is_gaussian_only_and_ucb_linear_only():
    with pytest.raises(ValidationError, match="mechanism"):
        simulate(LDPUCB(preset="authors_code", mechanism="laplace"), _env(), 2)
    with pytest.raises(ValidationError, match="links"):
        simulate(LDPUCB(), _env("logistic", "bernoulli"), 2)
    with pytest.raises(ValidationError, match="zeta"):
        LDPGLOC(zeta="fast")
    with pytest.raises(ValidationError, match="zeta"):
        LDPGLOC(zeta=-0.1)


def test_spec_guard_for_flat_link():
    spec = EnvSpec(d=2, K=2, horizon=10, link=get_link("probit"), context_bound=40.0, reward_range=(0.0, 1.0))
    with pytest.raises(ValidationError, match="slope"):
        LDPGLOC().reset(spec, 1, make_streams(0))


def test_argmax_ties_breaks_ties_uniformly():
    from privbandits.algorithms.ldp_zheng.features import argmax_ties

    rng = np.random.default_rng(0)
    scores = rng.standard_normal((50, 7))
    np.testing.assert_array_equal(argmax_ties(scores, rng), scores.argmax(axis=1))
    n = 30000
    tied = np.broadcast_to(np.array([0.3, 1.0, -2.0, 1.0]), (n, 4))
    a = argmax_ties(tied, rng)
    assert set(np.unique(a)) == {1, 3}
    # frequency of arm 1 ~ Binomial(n, 1/2)/n: se = 0.5/sqrt(n)
    assert abs((a == 1).mean() - 0.5) < 5 * 0.5 / math.sqrt(n)
