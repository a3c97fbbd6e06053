"""The chen-ldp and squarecb-ldp devices against a dishonest server (Chen et al. 2025, Algorithms 6 and 8).

The server chooses every public array a device reads.  Each device declares the states it accepts
(``public_space``), checks its own inputs, clips its own pre-noise message (``encode``) and adds
the noise it declares (``noise``), so that for every state of its space two neighbouring users'
encoded messages are at most ``sensitivity().bound`` apart in units of that noise.  Tested here:
the reproduction of the weight ``w = 100 e_1`` that broke chen-ldp's gradient bound, the online
path's noise (``randomize - encode``), the adversarial property over drawn public states (random
and extreme), the rejection of states outside the space and of malformed inputs, and every clip of
the two devices at, just inside and beyond its bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm as normal

import privbandits as pb
from privbandits.algorithms.chen.ldp import GRADIENT, IDLE, NORMALIZE, ChenLDPClient
from privbandits.algorithms.chen.squarecb_ldp import GRADIENT as SQ_GRADIENT
from privbandits.algorithms.chen.squarecb_ldp import IDLE as SQ_IDLE
from privbandits.algorithms.chen.squarecb_ldp import SquareCBLDPClient
from privbandits.auditing import CLIENT_PATHS
from privbandits.core.errors import PrivbanditsError, ValidationError
from privbandits.core.messages import PublicState
from privbandits.core.public_space import PublicStateError, dims_of
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.engine import protocol
from privbandits.privacy.device import whitened_distance
from privbandits.regression.dimfree import improper_sgd_gradients
from privbandits.regression.links import LinkConstants, link_constants
from privbandits.regression.matrices import clip_rows
from privbandits.regression.normalization import normalization_encode
from privbandits.regression.reweighted import reweighted_gradient

IDENTITY = link_constants("identity")
#: Relative slack of a whitened distance at its bound (floating-point rounding of the clips).
RTOL = 1e-9


def _reset(name: str, d: int = 2, K: int = 3, R: int = 1, **params: Any) -> Any:
    alg = pb.make(name, **params)
    spec = pb.SyntheticEnv(d=d, K=K).reset(R, make_streams(0), 1000)
    alg.reset(spec, R, make_streams(0))
    return alg


def _with(public: PublicState, **fields: Any) -> PublicState:
    """``public`` with ``fields`` replaced (what a dishonest server may send instead)."""
    out = dict(public)
    out.update({k: np.asarray(v) for k, v in fields.items()})
    return PublicState(out)


def _tile(x: np.ndarray, R: int, K: int) -> np.ndarray:
    """Contexts ``(R, K, d)`` showing ``x`` on every arm."""
    return np.ascontiguousarray(np.broadcast_to(x, (R, K, x.size)), dtype=float)


# ================================================================================================
# issue 21: the server's weight w = 100 e_1
# ================================================================================================
def test_weight_100_e1_gives_a_clipped_message_within_the_sensitivity() -> None:
    """``pub.update(slot=[2], U=I, w=[[100, 0]])``, context ``e_1``, reward -1: the prediction 100 is
    clipped to 1, the message before noise is ``2 e_1`` (it was ``101 e_1``), every neighbour is within
    the accounted sensitivity, and the mean of 20,000 users' messages is ``2 e_1`` within 5 standard
    errors."""
    alg = _reset("chen-ldp", epsilon=1.0)
    client, spec = alg.client, alg.spec
    pub = _with(alg.server.public_state(), slot=[GRADIENT], U=np.eye(2)[None], w=[[100.0, 0.0]])
    e1 = _tile(np.array([1.0, 0.0]), 1, spec.K)
    a0 = np.zeros(1, dtype=np.int64)
    E = client.encode(0, pub, e1, a0, np.array([-1.0]))
    np.testing.assert_allclose(E[0, 4:], [2.0, 0.0], rtol=1e-15)
    np.testing.assert_array_equal(E[0, :4], 0.0)
    scale = client.noise(0, pub, e1, a0).scale
    bound = client.sensitivity().bound
    for x, y in [
        ([-1.0, 0.0], 1.0),
        ([-1.0, 0.0], -1.0),
        ([1.0, 0.0], 1.0),
        ([0.0, 1.0], 21.0),
        ([0.6, 0.8], -21.0),
        ([0.0, 0.0], 0.0),
    ]:
        E1 = client.encode(0, pub, _tile(np.array(x), 1, spec.K), a0, np.array([y]))
        assert whitened_distance(E, E1, scale, "l2")[0] <= bound * (1 + RTOL)
    # the online path through the round protocol: the mean message is the clipped gradient
    n = 20_000
    pubs = PublicState({k: np.repeat(v, n, axis=0) for k, v in pub.items()})
    msg = protocol.device_randomize(
        client,
        spec,
        0,
        pubs,
        _tile(np.array([1.0, 0.0]), n, spec.K),
        np.zeros(n, dtype=np.int64),
        np.full(n, -1.0),
        np.random.default_rng(7),
    )
    std = 4.0 * client.sigma
    assert np.all(np.abs(msg["g"].mean(axis=0) - [2.0, 0.0]) <= 5.0 * std / math.sqrt(n))
    np.testing.assert_array_equal(msg["X"], 0.0)


def test_the_audit_cases_reach_the_accounted_sensitivity() -> None:
    """The client-path audits of chen-ldp and squarecb-ldp run at a public state and a pair whose encoded
    messages are ``cos(1e-3)`` times the accounted sensitivity apart (at least ``1 - 1e-6`` of it, never
    more), so an under-noised twin is within the audit's reach."""
    for name in ("chen-ldp", "squarecb-ldp"):
        case = CLIENT_PATHS[f"client:{name}"]
        spec = case.spec()
        alg = case.build(case.params)
        alg.reset(spec, 1, make_streams(0))
        assert case.public is not None
        pub = PublicState({k: np.asarray(v) for k, v in alg.server.public_state().items()})
        for key, value in case.public(spec).items():
            pub = _with(pub, **{key: np.broadcast_to(value, pub[key].shape).astype(pub[key].dtype)})
        ((u, v),) = case.pairs(spec)
        a0 = np.zeros(1, dtype=np.int64)
        E = [
            alg.client.encode(0, pub, user.contexts[None], a0, np.array([user.reward]))
            for user in (u, v)
        ]
        scale = alg.client.noise(0, pub, u.contexts[None], a0).scale
        dist = whitened_distance(E[0], E[1], scale, "l2")[0]
        bound = alg.client.sensitivity().bound
        assert (1 - 1e-6) * bound <= dist <= bound * (1 + RTOL), name


def test_normalization_slot_attains_the_sensitivity() -> None:
    """``U = 2 I``, users ``e_1`` and ``e_2``: the matrices are exactly ``sqrt(2) ||U||`` apart."""
    alg = _reset("chen-ldp")
    pub = _with(alg.server.public_state(), slot=[NORMALIZE], U=2.0 * np.eye(2)[None])
    a0 = np.zeros(1, dtype=np.int64)
    E = [alg.client.encode(0, pub, _tile(x, 1, 3), a0, np.zeros(1)) for x in np.eye(2)]
    scale = alg.client.noise(0, pub, _tile(np.eye(2)[0], 1, 3), a0).scale
    assert whitened_distance(E[0], E[1], scale, "l2")[0] == pytest.approx(
        alg.client.sensitivity().bound, rel=1e-12
    )


# ================================================================================================
# the online path: randomize - encode has the declared noise
# ================================================================================================
def noise_matches(D: np.ndarray, variance: np.ndarray, alpha: float = 1e-6) -> bool:
    """Whether the differences ``D = randomize - encode`` (n users, m coordinates) have mean 0 and the
    declared ``variance`` per coordinate (Gaussian), each coordinate's mean and variance tested at a
    z-bound with Bonferroni over the ``2 m`` tests (``alpha`` in all); coordinates declared exact must
    be exactly 0.  The variance of the sample variance of Gaussian noise is ``2 v^2 / (n - 1)``."""
    n, m = D.shape
    exact = variance == 0.0
    if not np.all(D[:, exact] == 0.0):
        return False
    noisy = ~exact
    if not noisy.any():
        return True
    z = normal.isf(alpha / (2.0 * 2.0 * int(noisy.sum())))
    v = variance[noisy]
    mean_ok = np.abs(D[:, noisy].mean(axis=0)) <= z * np.sqrt(v / n)
    var_ok = np.abs(D[:, noisy].var(axis=0, ddof=1) - v) <= z * v * math.sqrt(2.0 / (n - 1))
    return bool(np.all(mean_ok) and np.all(var_ok))


def _mixed_chen_state(alg: Any, n: int, rng: np.random.Generator) -> PublicState:
    """A state with every slot among the users, a non-identity ``U`` (norm 3) and a large ``w``."""
    d = alg.spec.d
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    U = Q @ np.diag(np.linspace(0.5, 3.0, d)) @ Q.T
    U = (U + U.T) / 2
    base = alg.server.public_state()
    pub = {k: np.repeat(np.asarray(v)[:1], n, axis=0) for k, v in base.items()}
    pub["slot"] = np.asarray([IDLE, NORMALIZE, GRADIENT])[np.arange(n) % 3]
    pub["U"] = np.broadcast_to(U, (n, d, d)).copy()
    pub["w"] = np.broadcast_to(np.linspace(-5.0, 5.0, d), (n, d)).copy()
    return PublicState(pub)


def test_chen_online_noise_is_the_declared_noise() -> None:
    """``randomize - encode`` over 30,000 users (idle, normalization and gradient slots): mean 0 and the
    declared variance on every coordinate, exactly 0 where no noise is declared; the same check
    rejects the differences at half the noise."""
    n = 30_000
    alg = _reset("chen-ldp", d=3, K=2, epsilon=1.0)
    client, spec = alg.client, alg.spec
    rng = np.random.default_rng(11)
    pub = _mixed_chen_state(alg, n, rng)
    X = rng.standard_normal((n, spec.K, spec.d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=2, keepdims=True))
    a = rng.integers(0, spec.K, n)
    y = rng.uniform(-3.0, 3.0, n)
    msg = client.randomize(0, pub, X, a, y, np.random.default_rng(12))
    flat = np.concatenate([msg["X"].reshape(n, -1), msg["g"]], axis=1)
    D = flat - client.encode(0, pub, X, a, y)
    var = client.noise(0, pub, X, a).variance
    for slot in (IDLE, NORMALIZE, GRADIENT):
        rows = pub["slot"] == slot
        assert np.all(
            var[rows] == var[rows][:1]
        )  # one U for all: one variance per coordinate and slot
        assert noise_matches(D[rows], var[rows][0]), slot
        if slot != IDLE:
            assert not noise_matches(0.5 * D[rows], var[rows][0]), slot
    assert np.all(var[pub["slot"] == IDLE] == 0.0)


def test_squarecb_online_noise_is_the_declared_noise() -> None:
    """As for chen-ldp: ``randomize - encode`` over 30,000 users of gradient and idle slots."""
    n = 30_000
    alg = _reset("squarecb-ldp", d=3, K=2, epsilon=1.0)
    client, spec = alg.client, alg.spec
    rng = np.random.default_rng(13)
    pub = PublicState(
        slot=np.where(np.arange(n) % 2 == 0, SQ_GRADIENT, SQ_IDLE),
        theta_sgd=rng.normal(0, 3, (n, 3)),
        theta_hat=np.zeros((n, 3)),
        gamma=np.zeros(n),
    )
    X = rng.standard_normal((n, spec.K, spec.d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=2, keepdims=True))
    a = rng.integers(0, spec.K, n)
    y = rng.uniform(-3.0, 3.0, n)
    D = client.randomize(0, pub, X, a, y, np.random.default_rng(14))["g"] - client.encode(
        0, pub, X, a, y
    )
    var = client.noise(0, pub, X, a).variance
    for slot in (SQ_IDLE, SQ_GRADIENT):
        rows = pub["slot"] == slot
        assert noise_matches(D[rows], var[rows][0]), slot
    assert not noise_matches(
        0.5 * D[pub["slot"] == SQ_GRADIENT], var[pub["slot"] == SQ_GRADIENT][0]
    )
    np.testing.assert_allclose(
        var[pub["slot"] == SQ_GRADIENT], (8.0 * client.sigma) ** 2, rtol=1e-15
    )


def test_noise_check_has_power() -> None:
    """The check itself: Gaussian differences of the declared variance pass, half or 0.8 of the std, a
    shifted mean or a non-zero exact coordinate fail."""
    rng = np.random.default_rng(5)
    v = np.array([4.0, 9.0, 0.0])
    D = rng.standard_normal((30_000, 3)) * np.sqrt(v)
    assert noise_matches(D, v)
    assert not noise_matches(0.5 * D, v) and not noise_matches(0.8 * D, v)
    assert not noise_matches(D + np.array([0.2, 0.0, 0.0]), v)
    E = D.copy()
    E[0, 2] = 1e-12
    assert not noise_matches(E, v)


# ================================================================================================
# the adversarial property over the declared public space
# ================================================================================================
@dataclass
class Device:
    name: str
    d: int
    K: int


DEVICES = [
    Device("chen-ldp", 2, 3),
    Device("chen-ldp", 3, 2),
    Device("squarecb-ldp", 2, 3),
    Device("squarecb-ldp", 4, 2),
]
_CLIENTS: dict[tuple[str, int, int], Any] = {}


def _client(dev: Device) -> Any:
    key = (dev.name, dev.d, dev.K)
    if key not in _CLIENTS:
        _CLIENTS[key] = _reset(dev.name, d=dev.d, K=dev.K, epsilon=1.0).client
    return _CLIENTS[key]


def _users(
    rng: np.random.Generator, R: int, K: int, d: int, extreme: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Contexts in the unit ball (on its sphere and on the axes when ``extreme``), arms, rewards far
    outside [-1, 1] as well as inside."""
    X = rng.standard_normal((R, K, d))
    if extreme:
        X /= np.linalg.norm(X, axis=2, keepdims=True)
        axes = rng.random(R) < 0.5
        X[axes] = 0.0
        X[axes, :, rng.integers(0, d)] = rng.choice([-1.0, 1.0])
    else:
        X *= rng.uniform(0.0, 1.0, (R, K, 1)) / np.maximum(
            np.linalg.norm(X, axis=2, keepdims=True), 1e-300
        )
    a = rng.integers(0, K, R)
    y = (
        rng.choice([-1e6, -21.0, -1.0, 0.0, 1.0, 21.0, 1e6], R)
        if extreme
        else rng.uniform(-5, 5, R)
    )
    return X, a, y


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    extreme=st.booleans(),
    which=st.sampled_from(range(len(DEVICES))),
)
def test_neighbours_are_within_the_sensitivity_for_every_public_state(
    seed: int, extreme: bool, which: int
) -> None:
    """For public states drawn from the device's declared space (random members and the extremes of
    every range: ``U`` and ``w`` entries at +-1e12, every slot), and 16 pairs of users (contexts in
    the unit ball, any arm, rewards up to 1e6), the whitened distance of their encoded messages is at
    most the accounted sensitivity; the noise does not depend on the user's data."""
    dev = DEVICES[which]
    client = _client(dev)
    spec = client.spec
    rng = np.random.default_rng(seed)
    R = 16
    pub = client.public_space().draw(dims_of(spec, R), rng, extreme=extreme)
    pub = client.public_space().validate(pub, dims_of(spec, R))  # a member of the space
    X0, a0, y0 = _users(rng, R, dev.K, dev.d, extreme)
    X1, a1, y1 = _users(rng, R, dev.K, dev.d, extreme)
    E0, E1 = client.encode(0, pub, X0, a0, y0), client.encode(0, pub, X1, a1, y1)
    n0, n1 = client.noise(0, pub, X0, a0), client.noise(0, pub, X1, a1)
    np.testing.assert_array_equal(n0.scale, n1.scale)
    assert np.all(np.isfinite(E0)) and np.all(np.isfinite(n0.scale))
    dist = whitened_distance(E0, E1, n0.scale, client.sensitivity().norm)
    assert np.all(dist <= client.sensitivity().bound * (1 + RTOL)), (
        dist.max(),
        client.sensitivity().bound,
    )


@pytest.mark.parametrize("name", ["chen-ldp", "squarecb-ldp"])
def test_candidate_worst_users_at_extreme_states_stay_within_the_sensitivity(name: str) -> None:
    """At 100 extreme states each, in every slot the server may choose, users along the weight, the
    axes and the extreme eigenvectors of ``U`` (both signs, rewards -1 and 1): every pair is within
    the sensitivity."""
    client = _reset(name, d=3, K=2, epsilon=1.0).client
    spec = client.spec
    rng = np.random.default_rng(21)
    bound = client.sensitivity().bound
    slots = (IDLE, NORMALIZE, GRADIENT) if name == "chen-ldp" else (SQ_IDLE, SQ_GRADIENT)
    key = "w" if name == "chen-ldp" else "theta_sgd"
    best = 0.0
    for i in range(100):
        drawn = client.public_space().draw(dims_of(spec, 1), rng, extreme=True)
        pub = client.public_space().validate(
            _with(drawn, slot=[slots[i % len(slots)]]), dims_of(spec, 1)
        )
        w = pub[key][0]
        dirs = [w / max(np.linalg.norm(w), 1e-300), np.eye(3)[0], np.eye(3)[1]]
        if name == "chen-ldp":
            _, vecs = np.linalg.eigh(pub["U"][0])
            dirs += [vecs[:, -1], vecs[:, 0]]
        users = [(s * u, y) for u in dirs for s in (1.0, -1.0) for y in (-1.0, 1.0)]
        a0 = np.zeros(1, dtype=np.int64)
        E = [client.encode(0, pub, _tile(x, 1, 2), a0, np.array([y])) for x, y in users]
        scale = client.noise(0, pub, _tile(dirs[1], 1, 2), a0).scale
        for j in range(len(E)):
            for k in range(j):
                dist = whitened_distance(E[j], E[k], scale, "l2")[0]
                assert dist <= bound * (1 + RTOL)
                best = max(best, dist)
    assert best >= 0.5 * bound  # the candidates are not trivially close


# ================================================================================================
# the device refuses what is outside its space, and malformed inputs
# ================================================================================================
def _chen_bad_states(pub: PublicState, J: int) -> dict[str, dict[str, Any]]:
    d = pub["U"].shape[-1]
    nonsym = np.eye(d)
    nonsym[0, 1] = 0.5
    return {
        "slot 3": {"slot": [3]},
        "U shape": {"U": np.eye(d + 1)[None]},
        "U not symmetric": {"U": nonsym[None]},
        "U NaN": {"U": np.full((1, d, d), np.nan)},
        "U too large": {"U": 2e12 * np.eye(d)[None]},
        "w too large": {"w": np.full((1, d), 2e12)},
        "w infinite": {"w": np.full((1, d), np.inf)},
        "n_boards > J": {"n_boards": [J + 1]},
        "n_boards < 0": {"n_boards": [-1]},
        "board_theta outside the ball": {"board_theta": np.full((1, J, d), 2.0)},
        "board_scale negative": {"board_scale": np.full((1, J), -1.0)},
        "board_U shape": {"board_U": np.zeros((1, J + 1, d, d))},
        "slot float": {"slot": [1.5]},
    }


def test_chen_device_refuses_states_outside_its_space() -> None:
    """Called directly or through the round protocol, choose / encode / noise / randomize refuse every
    state outside the declared space with :class:`PublicStateError` (and an unknown or missing field)."""
    alg = _reset("chen-ldp")
    client, spec = alg.client, alg.spec
    honest = alg.server.public_state()
    J = honest["board_theta"].shape[1]
    X, a, y = _tile(np.array([0.6, 0.8]), 1, 3), np.zeros(1, dtype=np.int64), np.array([0.5])
    rng = np.random.default_rng(0)
    client.randomize(0, honest, X, a, y, rng)  # the honest state is accepted
    cases = {k: _with(honest, **v) for k, v in _chen_bad_states(honest, J).items()}
    cases["unknown field"] = PublicState({**honest, "epsilon": np.array([100.0])})
    cases["missing field"] = PublicState({k: v for k, v in honest.items() if k != "w"})
    for what, bad in cases.items():
        for call in (
            lambda p: client.randomize(0, p, X, a, y, rng),
            lambda p: client.choose(0, p, X, rng),
            lambda p: client.encode(0, p, X, a, y),
            lambda p: client.noise(0, p, X, a),
            lambda p: protocol.device_randomize(client, spec, 0, p, X, a, y, rng),
            lambda p: protocol.device_choose(client, spec, 0, p, X, rng),
        ):
            with pytest.raises(PublicStateError):
                call(bad)
                pytest.fail(what)


def test_squarecb_device_refuses_states_outside_its_space() -> None:
    alg = _reset("squarecb-ldp")
    client, spec = alg.client, alg.spec
    honest = alg.server.public_state()
    X, a, y = _tile(np.array([0.6, 0.8]), 1, 3), np.zeros(1, dtype=np.int64), np.array([0.5])
    rng = np.random.default_rng(0)
    client.randomize(0, honest, X, a, y, rng)
    bad = [
        {"slot": [1]},
        {"theta_sgd": np.full((1, 2), 2e12)},
        {"theta_sgd": np.full((1, 3), 0.1)},
        {"theta_hat": np.full((1, 2), np.nan)},
        {"gamma": [-1.0]},
        {"gamma": [np.inf]},
    ]
    for fields in bad:
        for call in (
            lambda p: client.randomize(0, p, X, a, y, rng),
            lambda p: client.choose(0, p, X, rng),
            lambda p: client.encode(0, p, X, a, y),
            lambda p: client.noise(0, p, X, a),
            lambda p: protocol.device_randomize(client, spec, 0, p, X, a, y, rng),
        ):
            with pytest.raises(PublicStateError):
                call(_with(honest, **fields))


@pytest.mark.parametrize("name", ["chen-ldp", "squarecb-ldp"])
def test_devices_refuse_malformed_inputs(name: str) -> None:
    """Contexts with d + 1 features, an action equal to K, a short rewards array, a context above the
    bound, NaN rewards: a clear error from every entry point, no message."""
    alg = _reset(name, R=2)
    client = alg.client
    pub = alg.server.public_state()
    X, a, y = _tile(np.array([0.6, 0.8]), 2, 3), np.zeros(2, dtype=np.int64), np.array([0.5, -0.5])
    rng = np.random.default_rng(0)
    bad = [
        (_tile(np.array([0.6, 0.8, 0.0]), 2, 3), a, y),
        (X, np.array([0, 3]), y),
        (X, a, y[:1]),
        (_tile(np.array([1.0, 1.0]), 2, 3), a, y),
        (X, a, np.array([np.nan, 0.0])),
        (X[:, 0], a, y),
        (X, np.array([0.5, 0.0]), y),
    ]
    for Xb, ab, yb in bad:
        with pytest.raises(PrivbanditsError):
            client.randomize(0, pub, Xb, ab, yb, rng)
        with pytest.raises(PrivbanditsError):
            client.encode(0, pub, Xb, ab, yb)
    with pytest.raises(ValidationError):
        client.choose(0, pub, _tile(np.array([0.6, 0.8, 0.0]), 2, 3), rng)


# ================================================================================================
# every clip at, just inside and beyond its bound
# ================================================================================================
def test_clip_rows_at_inside_and_beyond_the_bound() -> None:
    """At and inside the radius a row is unchanged (to rounding); beyond it has the radius, in its own
    direction; rows of tiny (1e-160) or huge entries are measured without under- or overflow."""
    rng = np.random.default_rng(1)
    u = rng.standard_normal((6, 4))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    b = 2.0
    for f in (1.0, 1.0 - 1e-9, 0.5, 0.0):
        np.testing.assert_allclose(clip_rows(f * b * u, b), f * b * u, rtol=1e-15, atol=0)
    for f in (1.0 + 1e-9, 2.0, 1e150):
        out = clip_rows(f * b * u, b)
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), b, rtol=1e-13)
        np.testing.assert_allclose(out / b, u, rtol=1e-12, atol=1e-15)
    out = (
        clip_rows(1e-160 * u, 0.5e-160) * 1e160
    )  # subnormal squares: the norm is taken in scaled units
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 0.5, rtol=1e-12)
    np.testing.assert_allclose(clip_rows(1e-160 * u, 1e-160) * 1e160, u, rtol=1e-12)
    tiny = np.array(
        [[0.0, 0.0, 4.45e-309]]
    )  # a subnormal row well inside: unchanged, no overflow warning
    np.testing.assert_array_equal(clip_rows(tiny, 4.0), tiny)
    out = clip_rows(3.0 * u[:3], np.array([1.0, 3.0, 0.0]))  # one radius per row, radius 0
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), [1.0, 3.0, 0.0], rtol=1e-13)


class _SteepLink:
    """A stand-in link ``nu(z) = c z`` (``c > 1`` leaves [-1, 1]: only the norm clip can bound ``g``)."""

    def __init__(self, c: float) -> None:
        self.c = c

    def mu(self, z: np.ndarray) -> np.ndarray:
        return self.c * np.asarray(z)


def _g(z: float, y: float, link: LinkConstants = IDENTITY) -> np.ndarray:
    """The re-weighted gradient of the user ``e_1`` at prediction ``z`` (``U = I``, ``w = z e_1``)."""
    return reweighted_gradient(
        np.eye(2), np.array([z, 0.0]), np.array([[1.0, 0.0]]), np.array([y]), link
    )[0]


def test_reweighted_gradient_clips_the_prediction() -> None:
    """``y = 0.5`` keeps ``|nu - y| < 2`` so only the prediction clip acts: at ``z = 1`` and just inside the
    residual follows ``z``; beyond (``1 + 1e-9``, 1.5, 100, 1e12) it is the residual at 1; the same below."""
    for s in (1.0, -1.0):
        y = 0.5 * s
        assert _g(s * 1.0, y)[0] == pytest.approx(s * 0.5, abs=1e-15)
        assert _g(s * (1 - 1e-9), y)[0] == pytest.approx(s * (0.5 - 1e-9), abs=1e-15)
        for z in (1 + 1e-9, 1.5, 100.0, 1e12):
            np.testing.assert_array_equal(_g(s * z, y), _g(s * 1.0, y))


def test_reweighted_gradient_clips_the_response() -> None:
    for s in (1.0, -1.0):
        assert _g(0.0, s * 1.0)[0] == pytest.approx(-s, abs=1e-15)
        assert _g(0.0, s * (1 - 1e-9))[0] == pytest.approx(-s * (1 - 1e-9), abs=1e-15)
        for y in (1 + 1e-9, 21.0, 1e6):
            np.testing.assert_array_equal(_g(0.0, s * y), _g(0.0, s * 1.0))


def test_reweighted_gradient_clips_the_gradient_norm() -> None:
    """With a link leaving [-1, 1] (``nu(1) = c``, ``y = -1``): at ``c = 1`` the norm is 2, just inside
    it follows ``c``, beyond (``c = 1 + 1e-9``, 1.5, 1e6) it is 2 in the same direction."""

    def g(c: float) -> np.ndarray:
        return _g(1.0, -1.0, LinkConstants(_SteepLink(c), 1.0, 1.0))  # type: ignore[arg-type]

    assert np.linalg.norm(g(1.0)) == pytest.approx(2.0, rel=1e-15)
    assert np.linalg.norm(g(1.0 - 2e-9)) == pytest.approx(2.0 - 2e-9, rel=1e-15)
    for c in (1 + 1e-9, 1.5, 1e6):
        np.testing.assert_allclose(g(c), [2.0, 0.0], rtol=1e-15)


def test_normalization_message_is_clipped_to_the_operator_norm() -> None:
    """``||X||_F = ||U phi||``: at the top singular vector of ``U`` (norm ``||U||``) unchanged, just inside
    unchanged, for a feature beyond the unit ball (``1 + 1e-9``, 2; the device refuses such inputs, the
    clip holds anyway) exactly ``||U||``; per-user matrices, tiny and huge scales alike."""
    rng = np.random.default_rng(3)
    for scale in (1.0, 1e-150, 1e10, 1e-160):
        A = rng.standard_normal((3, 3))
        U = scale * (A + A.T)
        s = np.linalg.norm(U, 2)
        vals, vecs = np.linalg.eigh(U)
        top = vecs[:, np.argmax(np.abs(vals))]
        for f in (1.0, 1 - 1e-9):
            X = normalization_encode(U, f * top[None])[0]
            if scale < 1e-155:  # subnormal squares: the clip still bounds the message
                assert np.linalg.norm(X / s) <= 1.0 + 1e-12
                continue
            assert np.linalg.norm(X / s) == pytest.approx(f, rel=1e-12)
        for f in (1 + 1e-9, 2.0, 1e6):
            X = normalization_encode(U, f * top[None])[0]
            if scale < 1e-155:
                assert np.linalg.norm(X / s) <= 1.0 + 1e-12
                continue
            assert np.linalg.norm(X / s) == pytest.approx(1.0, rel=1e-12)
            np.testing.assert_allclose(X, X.T, rtol=1e-12, atol=0)
        if scale >= 1e-155:  # one matrix per user, each message clipped to its own ||U||
            Xs = normalization_encode(np.stack([U, 2 * U]), np.stack([2 * top, 2 * top]))
            np.testing.assert_allclose(
                np.linalg.norm(Xs.reshape(2, -1) / s, axis=1), [1.0, 2.0], rtol=1e-12
            )


def test_square_loss_gradient_clips() -> None:
    """Prediction, response and norm clips of the square-loss gradient ``2(clip(<phi, theta>) - clip(y)) phi``."""
    e1 = np.array([[1.0, 0.0]])

    def g(theta1: float, y: float, r: float = 1.0) -> np.ndarray:
        return improper_sgd_gradients(np.array([theta1, 0.0]), r * e1, np.array([y]))[0]

    for s in (1.0, -1.0):
        # prediction: y = 0.5 s keeps the residual below 2
        assert g(s, 0.5 * s)[0] == pytest.approx(s * 1.0, abs=1e-15)
        assert g(s * (1 - 1e-9), 0.5 * s)[0] == pytest.approx(s * (1.0 - 2e-9), abs=1e-15)
        for z in (1 + 1e-9, 7.5, 1e12):
            np.testing.assert_array_equal(g(s * z, 0.5 * s), g(s, 0.5 * s))
        # response
        assert g(0.0, s)[0] == pytest.approx(-2 * s, abs=1e-15)
        assert g(0.0, s * (1 - 1e-9))[0] == pytest.approx(-2 * s * (1 - 1e-9), abs=1e-15)
        for y in (1 + 1e-9, 21.0, 1e6):
            np.testing.assert_array_equal(g(0.0, s * y), g(0.0, s))
    # norm: |residual| = 2 with a feature at, inside and beyond the unit ball (theta scaled to keep the
    # prediction clipped at 1)
    assert np.linalg.norm(g(10.0, -1.0)) == pytest.approx(4.0, rel=1e-15)
    assert np.linalg.norm(g(10.0, -1.0, 1 - 1e-9)) == pytest.approx(4.0 * (1 - 1e-9), rel=1e-15)
    for r in (1 + 1e-9, 2.0, 1e6):
        np.testing.assert_allclose(g(10.0, -1.0, r), [4.0, 0.0], rtol=1e-15)


def test_noiseless_clients_have_no_local_guarantee() -> None:
    spec = EnvSpec(d=2, K=3, horizon=10)
    for client in (ChenLDPClient(0.0, IDENTITY, 2.0, spec, 1), SquareCBLDPClient(0.0, spec)):
        with pytest.raises(PrivbanditsError):
            client.sensitivity()


def test_public_check_remembers_only_identical_states() -> None:
    """The device's check answers a state identical in fields, dtypes, shapes and values to the last
    accepted one without validating it again, and validates everything else: a changed value, a
    changed dtype, an added or removed field, NaN."""
    from privbandits.algorithms.chen.device import PublicCheck

    alg = _reset("chen-ldp")
    honest = alg.server.public_state()
    check = PublicCheck(alg.client.public_space(), alg.spec)
    calls: list[int] = []
    space = check.space

    class Counting:
        def validate(self, public: Any, dims: Any) -> PublicState:
            calls.append(1)
            return space.validate(public, dims)

    check.space = Counting()  # type: ignore[assignment]
    first = check(honest, 1)
    assert check(PublicState(dict(honest)), 1) is first and check(dict(first), 1) is first
    assert len(calls) == 1
    for bad in (
        {"w": np.full((1, 2), 2e12)},
        {"w": np.full((1, 2), np.nan)},
        {"slot": [7]},
        {"slot": np.array([1.5])},
    ):
        with pytest.raises(PublicStateError):
            check(_with(honest, **bad), 1)
    assert (
        check(_with(honest, slot=np.array([1.0])), 1)["slot"].dtype == np.int64
    )  # an exact float is validated
    with pytest.raises(PublicStateError):
        check(PublicState({**honest, "extra": np.zeros(1)}), 1)
    with pytest.raises(PublicStateError):
        check(PublicState({k: v for k, v in honest.items() if k != "U"}), 1)
    assert check(honest, 1)["w"].shape == (1, 2)
