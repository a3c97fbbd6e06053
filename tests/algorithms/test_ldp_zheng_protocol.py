"""Protocol of LDP-UCB / LDP-GLOC: drivers, trust boundary, public state, presets, guarantees, settings.

Spec zheng2020-ldp-bandits.md section 7 items 8 and 16, section 8 A2/A6; spec han2021-ldp-glb.md
section 4 (multi-parameter block features).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from privbandits.algorithms import make
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.algorithms.ldp_zheng import LDPGLOC, LDPUCB
from privbandits.algorithms.ldp_zheng.constants import BETA_CODES, beta, regularizer, upsilon
from privbandits.core.errors import (
    DataBoundError,
    NotResetError,
    TrustBoundaryError,
    ValidationError,
)
from privbandits.core.links import get_link
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.envs.synthetic import SyntheticEnv
from privbandits.privacy.calibration import gaussian_epsilon
from privbandits.simulate import simulate

ALGS = [
    ("ldp-ucb", "identity", "gaussian"),
    ("ldp-gloc", "logistic", "bernoulli"),
    ("ldp-gloc", "identity", "gaussian"),
]


def _env(link="identity", noise="gaussian", setting="single", **kw):
    return SyntheticEnv(d=2, K=4, setting=setting, link=link, noise=noise, **kw)


def _sim(alg, env, T, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        return simulate(alg, env, T, **kw)


def _reset(alg, env, R, seed=0):
    streams = make_streams(seed)
    spec = env.reset(R, streams, 100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        alg.reset(spec, R, streams)
    return alg


# --- the two drivers run the same steps --------------------------------------------------------------
@pytest.mark.parametrize("name, link, noise", ALGS)
@pytest.mark.parametrize(
    "setting, features", [("single", "shared"), ("multi", "shared"), ("multi", "block")]
)
@pytest.mark.parametrize("kw", [{}, {"preset": "authors_code"}, {"mechanism": "laplace"}])
def test_reference_equals_compiled(name, link, noise, setting, features, kw):
    runs = [
        _sim(
            make(name, epsilon=2.0, **kw),
            _env(link, noise, setting, features=features),
            150,
            replications=3,
            seed=7,
            engine=engine,
        )
        for engine in ("reference", "compiled")
    ]
    ref, comp = runs
    assert ref.engine == "reference" and comp.engine == "compiled"
    np.testing.assert_allclose(ref.regret, comp.regret, rtol=0, atol=1e-9)
    np.testing.assert_allclose(ref.reward, comp.reward, rtol=0, atol=1e-9)
    np.testing.assert_allclose(ref.estimation_error, comp.estimation_error, rtol=0, atol=1e-9)


# --- trust boundary (item 8) ----------------------------------------------------------------------
@pytest.mark.parametrize("name, link, noise", ALGS)
@pytest.mark.parametrize("setting", ["single", "multi"])
def test_server_only_receives_noisy_messages(name, link, noise, setting):
    """Instrument the user->server channel: every payload is a PrivatizedMessage whose every released
    coordinate differs from the user's noiseless statistic; raw (x, y, arm) never reach the server."""
    alg = make(name, epsilon=2.0)
    env = _env(link, noise, setting)
    _sim(alg, env, 1, replications=2, seed=0)  # builds the roles
    seen: list[tuple[object, tuple]] = []
    received: list[object] = []
    client_randomize, server_receive = type(alg.client).randomize, type(alg.server).receive

    def spy_randomize(self, t, public, contexts, actions, rewards, rng):
        msg = client_randomize(self, t, public, contexts, actions, rewards, rng)
        seen.append((msg, (public, contexts.copy(), actions.copy(), np.array(rewards, copy=True))))
        return msg

    def spy_receive(self, t, message):
        received.append(message)
        return server_receive(self, t, message)

    mp = pytest.MonkeyPatch()
    mp.setattr(type(alg.client), "randomize", spy_randomize)
    mp.setattr(type(alg.server), "receive", spy_receive)
    try:
        _sim(alg, env, 30, replications=3, seed=1, engine="reference")
    finally:
        mp.undo()
    assert len(received) == 30 and all(isinstance(m, PrivatizedMessage) for m in received)
    K, d = 4, 2
    D = K * d if setting == "multi" else d
    res = alg.resolved_params()
    iu = np.triu_indices(D)
    for msg, (public, X, a, r) in seen:
        if setting == "multi":
            x = np.zeros((3, K, d))
            x[np.arange(3), a] = X
            x = x.reshape(3, D)
        else:
            x = X[np.arange(3), a]
        y = np.clip(r, res["reward_lo"], res["reward_hi"])
        raw = {"V": (x[:, :, None] * x[:, None, :])[:, iu[0], iu[1]]}
        if name == "ldp-ucb":
            raw["u"] = y[:, None] * x
        else:
            raw["u"] = np.einsum("rd,rd->r", x, public["theta_hat"])[:, None] * x
        got = {"V": msg.payload["V"][:, iu[0], iu[1]], "u": msg.payload["u"]}
        for key, stat in raw.items():
            assert np.all(got[key] != stat), key  # noise on every released coordinate
        assert set(msg.payload) == ({"V", "u"} if name == "ldp-ucb" else {"V", "u", "g"})
        assert msg.payload["V"].shape[1:] == (
            D,
            D,
        )  # full K d in the multi setting: the arm is hidden


@pytest.mark.parametrize("name", ["ldp-ucb", "ldp-gloc"])
def test_server_rejects_anything_but_its_privatized_messages(name):
    alg = make(name)
    _reset(alg, _env(), 2)
    server = alg.server
    theta0 = server.public_state()["theta"].copy()
    R, D = 2, 2
    good = {"V": np.zeros((R, D, D)), "u": np.ones((R, D))}
    if name == "ldp-gloc":
        good["g"] = np.zeros((R, D))
    for bad in (
        np.zeros((R, D)),
        good,
        (np.zeros((R, D)), np.zeros(R)),
        PrivatizedMessage(good, mechanism="raw"),
        PrivatizedMessage(
            {k: v for k, v in good.items() if k != "u"}, mechanism=f"{name}/gaussian"
        ),
    ):
        with pytest.raises(TrustBoundaryError):
            server.receive(0, bad)
    np.testing.assert_array_equal(server.public_state()["theta"], theta0)
    server.receive(0, PrivatizedMessage(good, mechanism=f"{name}/gaussian"))
    assert np.all(server.public_state()["theta"] != theta0)


# --- public state and index conventions (A2, A6) ---------------------------------------------------
def test_public_state_round_one_and_regularized_once():
    alg = _reset(LDPUCB(epsilon=1.0, delta=0.1), _env(), 3)
    T, sigma = alg.resolved_params()["T"], alg.resolved_params()["sigma"]
    s = alg.server
    pub = s.public_state()
    assert isinstance(pub, PublicState) and set(pub) == {"theta", "M", "beta"}
    c1 = regularizer(1.0, sigma, 2, T, 0.1, 2.0)
    np.testing.assert_allclose(pub["M"], np.broadcast_to(np.eye(2) / c1, (3, 2, 2)))
    np.testing.assert_array_equal(pub["theta"], 0.0)
    np.testing.assert_allclose(
        pub["beta"], beta(BETA_CODES["ucb-paper"], 1.0, sigma, 0.0, 1.0, 2, T, 0.1)
    )
    # feed 5 messages: M = (V_5 + c_5 I)^{-1} with V_5 the raw noisy sum (the regularizer added once)
    rng = np.random.default_rng(0)
    V = np.zeros((3, 2, 2))
    u = np.zeros((3, 2))
    for t in range(5):
        m = {"V": rng.standard_normal((3, 2, 2)), "u": rng.standard_normal((3, 2))}
        m["V"] = m["V"] + m["V"].transpose(0, 2, 1)
        V += m["V"]
        u += m["u"]
        s.receive(t, PrivatizedMessage(m, mechanism="ldp-ucb/gaussian"))
    c5 = regularizer(5.0, sigma, 2, T, 0.1, 2.0)
    M = np.linalg.inv(V + c5 * np.eye(2))
    np.testing.assert_allclose(s.public_state()["M"], M, rtol=1e-12)
    np.testing.assert_allclose(s.public_state()["theta"], np.einsum("rde,re->rd", M, u), rtol=1e-10)
    np.testing.assert_allclose(
        s.public_state()["beta"], beta(BETA_CODES["ucb-paper"], 5.0, sigma, 0.0, 1.0, 2, T, 0.1)
    )


def test_zheng_demo_conventions():
    """authors_code / zheng2020: round-1 inverse (0.1 I)^{-1} = 10 I, beta_t at the current index, squared bonus."""
    alg = _reset(LDPUCB(preset="authors_code", reference_code="zheng2020", delta=0.1), _env(), 2)
    res = alg.resolved_params()
    np.testing.assert_allclose(
        alg.server.public_state()["M"], np.broadcast_to(10 * np.eye(2), (2, 2, 2))
    )
    assert res["bonus"] == "squared" and res["beta_index"] == "current"
    alg.server.receive(
        0,
        PrivatizedMessage(
            {"V": np.zeros((2, 2, 2)), "u": np.zeros((2, 2))}, mechanism="ldp-ucb/gaussian"
        ),
    )
    np.testing.assert_allclose(
        alg.server.public_state()["beta"],
        beta(BETA_CODES["ucb-paper"], 2.0, res["sigma"], 0.0, 1.0, 2, res["T"], 0.1),
    )


def test_han_code_starts_gram_at_identity():
    alg = _reset(LDPUCB(preset="authors_code"), _env(), 2)
    res = alg.resolved_params()
    c1 = regularizer(1.0, res["sigma"], 2, res["T"], 0.1, 2.0)
    np.testing.assert_allclose(
        alg.server.public_state()["M"], np.broadcast_to(np.eye(2) / (1 + c1), (2, 2, 2))
    )
    alg = _reset(LDPUCB(preset="authors_code"), _env(setting="multi"), 2)
    assert alg.resolved_params()["V0"] == 0.0


def test_non_pd_regularized_matrix_is_shifted():
    """A noisy Gram sum that is not PD after regularization is shifted by |lambda_min| + Upsilon_t."""
    alg = _reset(LDPUCB(c_factor=1e-9), _env(), 2)
    V = np.stack([np.diag([-5.0, 1.0]), np.eye(2)])
    alg.server.receive(
        0, PrivatizedMessage({"V": V, "u": np.ones((2, 2))}, mechanism="ldp-ucb/gaussian")
    )
    np.testing.assert_array_equal(alg.n_shifted(), [1, 0])
    M = alg.server.public_state()["M"]
    res = alg.resolved_params()
    c1 = regularizer(1.0, res["sigma"], 2, res["T"], 0.1, 1e-9)
    shift = (
        5.0 - c1 + upsilon(1.0, res["sigma"], 2, res["T"], 0.1)
    )  # |lambda_min(V + c I)| + Upsilon_1
    np.testing.assert_allclose(
        M[0], np.linalg.inv(np.diag([-5.0, 1.0]) + (c1 + shift) * np.eye(2)), rtol=1e-9
    )
    np.testing.assert_allclose(M[1], np.linalg.inv((1 + c1) * np.eye(2)), rtol=1e-12)


# --- LDP-GLOC online learner (item 16) -------------------------------------------------------------
def test_gloc_online_iterate_stays_in_unit_ball():
    alg = make("ldp-gloc", epsilon=0.5)
    env = _env("logistic", "bernoulli")
    _reset(alg, env, 4, seed=3)
    norms = []
    for t in range(200):
        X = env.next_round()
        public = alg.server.public_state()
        a = alg.client.choose(t, public, X, alg.streams.policy)
        r, _ = env.step(a)
        alg.server.receive(t, alg.client.randomize(t, public, X, a, r, alg.streams.client))
        norms.append(np.linalg.norm(alg.online_estimate(), axis=-1))
    norms_arr = np.array(norms)
    assert np.all(norms_arr <= 1 + 1e-12)
    assert np.any(
        norms_arr > 1 - 1e-9
    )  # with eps = 0.5 the noisy gradient is large: the projection acts


def test_gloc_authors_code_has_no_projection_and_random_init():
    alg = _reset(
        LDPGLOC(epsilon=0.5, preset="authors_code"), _env("logistic", "bernoulli"), 4, seed=1
    )
    np.testing.assert_allclose(np.linalg.norm(alg.online_estimate(), axis=-1), 1.0)
    np.testing.assert_allclose(
        np.linalg.norm(alg.estimate(), axis=-1), 1.0
    )  # theta_tilde_0: random too
    _sim(alg, _env("logistic", "bernoulli"), 100, replications=4, seed=3)
    assert np.linalg.norm(alg.online_estimate(), axis=-1).max() > 1.5


# --- guarantees from the noise actually added ------------------------------------------------------
def test_guarantee_is_accounted_from_the_noise():
    alg = LDPUCB(epsilon=1.0, delta=0.1)
    g = _sim(alg, _env(), 2, replications=1, seed=0).guarantee
    assert g.model == "local" and g.unit == "user"
    assert 0.9 <= g.epsilon <= 1.0 and g.delta == pytest.approx(0.1) and "strict" in g.notes
    lap = LDPUCB(epsilon=1.5, mechanism="laplace")
    res = _sim(lap, _env(), 2, replications=1, seed=0)
    assert res.guarantee.delta == 0.0 and res.guarantee.epsilon == pytest.approx(1.5)


def test_gloc_paper_preset_reveals_unclipped_gradient():
    """Linear link: |g(z) - y| reaches 2 > C = 1, so the paper's gradient noise C sigma under-covers the
    unclipped gradient (spec A7): that part alone exceeds its (eps/3, delta/3) budget, and the
    accounted guarantee is weaker than with clipping; strict clips and meets the request."""
    eps, delta = 1.0, 0.01
    paper = _sim(LDPGLOC(epsilon=eps, delta=delta, preset="paper"), _env(), 2, seed=0)
    res = paper.resolved_params
    assert res["grad_clip"] is None and res["grad_bound"] == pytest.approx(2.0)
    assert (
        gaussian_epsilon(res["scale_g"], delta / 3, 2 * 2.0)
        > eps / 3
        >= gaussian_epsilon(res["scale_g"], delta / 3, 2 * 1.0)
    )
    clipped = _sim(
        LDPGLOC(epsilon=eps, delta=delta, preset="paper", clip_grad=True), _env(), 2, seed=0
    )
    assert clipped.resolved_params["scale_g"] == pytest.approx(res["scale_g"])  # same noise ...
    assert (
        paper.guarantee.epsilon > clipped.guarantee.epsilon
    )  # ... weaker guarantee without clipping
    strict = _sim(LDPGLOC(epsilon=eps, delta=delta), _env(), 2, seed=0).guarantee
    assert 0.9 * eps <= strict.epsilon <= eps


def test_classic_formula_above_its_range_warns():
    """The classic sqrt(2 ln(1.25/delta)) formula is not a proof at large epsilon: at (20, 0.4) the
    paper's noise is accounted above the request and the base class warns with the accounted value."""
    with pytest.warns(CalibrationWarning, match="weaker than the request"):
        res = simulate(LDPUCB(epsilon=20.0, delta=0.4, preset="paper"), _env(), 2, seed=0)
    assert res.guarantee.epsilon > 20.0
    strict = _sim(LDPUCB(epsilon=20.0, delta=0.4), _env(), 2, seed=0).guarantee
    assert 18.0 <= strict.epsilon <= 20.0


def test_gloc_laplace_guarantee():
    alg = LDPGLOC(epsilon=2.0, mechanism="laplace")
    g = _sim(alg, _env("logistic", "bernoulli"), 2, seed=0).guarantee
    assert g.delta == 0.0 and g.epsilon == pytest.approx(2.0)


@pytest.mark.parametrize("cls", [LDPUCB, LDPGLOC])
def test_guarantee_needs_reset(cls):
    alg = cls()
    with pytest.raises(NotResetError, match="reset"):
        _ = alg.guarantee
    spec = EnvSpec(d=2, K=3, horizon=100)
    assert 0.9 <= alg.guarantee_for(spec).epsilon <= 1.0


@pytest.mark.parametrize("preset", ["strict", "paper", "authors_code"])
def test_preset_is_recorded(preset):
    res = _sim(LDPGLOC(preset=preset), _env("logistic", "bernoulli"), 5, replications=2, seed=0)
    assert res.preset == preset and res.params["preset"] == preset
    assert res.resolved_params["sigma"] > 0


# --- settings: block features -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, link, noise", [("ldp-ucb", "identity", "gaussian"), ("gloc", "logistic", "bernoulli")]
)
def test_plain_multi_equals_block_env(name, link, noise):
    """Block features built by the user (plain multi setting) give the same run as the environment's
    block features (SyntheticEnv(setting="multi", features="block"))."""
    kw = {"epsilon": 5.0} if name.startswith("ldp") else {}
    a = _sim(make(name, **kw), _env(link, noise, setting="multi"), 300, replications=3, seed=4)
    b = _sim(
        make(name, **kw),
        _env(link, noise, setting="multi", features="block"),
        300,
        replications=3,
        seed=4,
    )
    np.testing.assert_allclose(a.regret, b.regret, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(a.estimation_error, b.estimation_error, rtol=1e-6)


def test_gloc_multi_domain_is_a_product_of_arm_balls():
    """Plain multi setting: W = product of per-arm unit balls, so |z| <= 1 keeps the single-parameter
    calibration; with the environment's block features (a single-parameter problem in K d with
    ||theta*|| <= sqrt(K)) W is the ball of radius sqrt(K) and the noise grows accordingly."""
    plain = LDPGLOC(epsilon=0.5)
    _sim(plain, _env(setting="multi"), 300, replications=3, seed=4)
    blocks = np.linalg.norm(plain.online_estimate(), axis=-1)  # (R, K)
    assert blocks.shape == (3, 4) and np.all(blocks <= 1 + 1e-12) and np.any(blocks > 1 - 1e-9)
    assert plain.resolved_params()["blockwise"] and plain.resolved_params()[
        "z_bound"
    ] == pytest.approx(1.0)
    env_block = LDPGLOC(epsilon=0.5)
    _sim(env_block, _env(setting="multi", features="block"), 2, replications=3, seed=4)
    assert not env_block.resolved_params()["blockwise"]
    assert env_block.resolved_params()["theta_radius"] == pytest.approx(2.0)  # sqrt(K), K = 4
    assert env_block.resolved_params()["sigma"] > plain.resolved_params()["sigma"]


def test_multi_estimate_shape():
    alg = LDPUCB()
    _sim(alg, _env(setting="multi"), 5, replications=3, seed=0)
    assert alg.estimate().shape == (3, 4, 2)


def test_determinism():
    a = _sim(make("ldp-gloc"), _env("logistic", "bernoulli"), 200, replications=2, seed=9)
    b = _sim(make("ldp-gloc"), _env("logistic", "bernoulli"), 200, replications=2, seed=9)
    np.testing.assert_array_equal(a.regret, b.regret)


# --- non-finite user data ---------------------------------------------------------------------------
class _NaNRewardEnv(SyntheticEnv):
    """A synthetic environment whose round-3 rewards are NaN in replication 1."""

    def next_chunk(self):  # type: ignore[no-untyped-def]
        ch = super().next_chunk()
        if ch.t0 <= 3 < ch.t0 + ch.B:
            ch.rewards[3 - ch.t0, 1, :] = np.nan
        return ch


@pytest.mark.parametrize("name", ["ldp-ucb", "ldp-gloc"])
@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_nan_reward_raises_instead_of_a_nan_message(name, engine):
    with pytest.raises(DataBoundError, match="NaN"):
        _sim(make(name), _NaNRewardEnv(d=2, K=3), 10, replications=2, engine=engine)


# --- validation -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"preset": "loose"}, "preset"),
        ({"alpha": 1.5}, "alpha"),
        ({"beta_scale": -1.0}, "beta_scale"),
        ({"mechanism": "rr"}, "mechanism"),
        ({"clip": 1}, "clip"),
        ({"reference_code": "x"}, "reference_code"),
        ({"noise_split": "x"}, "noise_split"),
        ({"horizon": 1}, "horizon"),
        ({"preset": "authors_code", "mechanism": "laplace"}, "mechanism"),
    ],
)
def test_ldp_ucb_validation(kwargs, match):
    with pytest.raises(ValidationError, match=match):
        LDPUCB(**kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"zeta": "fast"}, "zeta"),
        ({"zeta": -0.1}, "zeta"),
        ({"beta_formula": "paper"}, "beta_formula"),
        ({"clip_grad": 0}, "clip_grad"),
        ({"theta_radius": 0.0}, "theta_radius"),
    ],
)
def test_ldp_gloc_validation(kwargs, match):
    with pytest.raises(ValidationError, match=match):
        LDPGLOC(**kwargs)


def test_ldp_ucb_is_linear_only_and_gloc_needs_a_slope():
    with pytest.raises(ValidationError, match="links"):
        simulate(LDPUCB(), _env("logistic", "bernoulli"), 2)
    spec = EnvSpec(
        d=2, K=2, horizon=10, link=get_link("probit"), context_bound=40.0, reward_range=(0.0, 1.0)
    )
    with pytest.raises(ValidationError, match="slope"):
        LDPGLOC().reset(spec, 1, make_streams(0))


def test_parameters_round_trip():
    alg = LDPGLOC(epsilon=2.0, zeta="paper", theta_radius=1.5)
    again = LDPGLOC(**alg.get_params())
    assert again.get_params() == alg.get_params()
    assert math.isclose(again.epsilon, 2.0)
