"""The devices of hanna-local, hanna-shuffle and shuffle-glm keep their guarantee against a dishonest server.

Hanna et al. (2022), Algorithms 2-3 (Laplace reports of a clipped reward) and Sarmasarkar (2026),
Algorithm 1 with the Cheu et al. summations of Appendix T (the matrix message ``R2(w_t x_t x_t^T)``
and the ``P_GD`` gradient messages of Algorithm 7).  In the local and shuffle models the server
(and the analyzer behind the shuffler) chooses every public state a device reads; the shuffler is
trusted only to permute.  Tested here, for each device:

* the noise measured on the path that runs: ``randomize - encode`` over many users has the declared
  mean and variance (tolerances from the sample size; each check is also run on a half-noise sample
  and must flag it);
* the invariant ``whitened_distance(encode(D), encode(D')) <= sensitivity().bound`` over public
  states drawn from the declared space (random and extreme) and neighbouring users at the extremes
  (rewards far outside the range, contexts on the bound), and that the bound is reached;
* every clip and range check at, just inside and beyond its bound;
* a malformed public state raises ``PublicStateError``, a wrongly shaped input ``ValidationError``
  (before any compiled step runs).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from privbandits.algorithms.hanna import HannaLocal, HannaShuffle
from privbandits.algorithms.hanna.elimination import max_pulls, n_batches
from privbandits.algorithms.sarmasarkar.shuffle_glm import (
    MINV_MAX,
    ShuffleGLM,
    ShuffleGLMClient,
    scale_weights,
)
from privbandits.core.errors import DataBoundError, TrustBoundaryError, ValidationError
from privbandits.core.links import get_link
from privbandits.core.messages import PublicState
from privbandits.core.public_space import PublicStateError, dims_of
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy import cheu
from privbandits.privacy.device import whitened_distance
from privbandits.privacy.laplace_shuffle import laplace_randomizer
from privbandits.privacy.samplers import laplace_randomize

#: T = 3000: the last batch the schedule can plan (2013 pulls) cannot complete, so its size is not calibrated
HANNA_SPEC = EnvSpec(d=2, K=4, horizon=3000, fixed_actions=True)  # rewards in [-1, 1]
GLM_SPEC = EnvSpec(
    d=2, K=5, horizon=400, link=get_link("logistic"), reward_range=(0.0, 1.0), theta_bound=2.0
)
#: a reward range that |mu - r| can exceed: the P_GD gradient clip binds on honest data
GLM_SPEC_NARROW = dataclasses.replace(GLM_SPEC, reward_range=(0.0, 0.5))
#: the public action catalogue of the Hanna problem (rows of norm <= 1)
CATALOGUE = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [-0.6, 0.0]])
#: z-bound of every statistical check (each test makes at most ~10 checks: Bonferroni at 1e-5)
Z = 5.0

REWARDS = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([-1e6, 1e6, -1.0, 1.0, 0.0, 0.5])
)


def _reset(alg: Any, spec: EnvSpec, R: int = 1) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg.reset(spec, R, make_streams(0))
    return alg


@functools.cache
def _hanna(name: str, preset: str = "strict") -> Any:
    alg = (
        HannaLocal(1.0, preset=preset)
        if name == "hanna-local"
        else HannaShuffle(1.0, preset=preset)
    )
    return _reset(alg, HANNA_SPEC)


@functools.cache
def _glm(narrow: bool = False) -> ShuffleGLM:
    alg = _reset(ShuffleGLM(epsilon=2.0, delta=1e-3), GLM_SPEC_NARROW if narrow else GLM_SPEC)
    assert isinstance(alg, ShuffleGLM)
    return alg


def _glm_client(narrow: bool = False) -> ShuffleGLMClient:
    """A fresh device (no held users) of the ShuffleGLM plan."""
    alg = _glm(narrow)
    return ShuffleGLMClient(alg.plan, alg.spec)


def _catalogue(R: int) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(CATALOGUE, (R,) + CATALOGUE.shape))


def _local_public(
    R: int, committed: np.ndarray | None = None, remaining: np.ndarray | None = None
) -> PublicState:
    rem = np.full((R, HANNA_SPEC.K), 5, dtype=np.int64) if remaining is None else remaining
    com = np.full(R, -1, dtype=np.int64) if committed is None else committed
    return PublicState(
        {"batch": np.ones(R, dtype=np.int64), "counts": rem, "committed": com, "remaining": rem}
    )


def _glm_public(
    R: int, batch: int, rng: np.random.Generator | None = None, **override: np.ndarray
) -> PublicState:
    """A public state of the ShuffleGLM server in ``batch``: random published estimates in the S ball
    and random PSD inverses (the honest server's look), fields overridden by ``override``."""
    plan = _glm().plan
    M, d = plan.n_batches, plan.d
    rng = np.random.default_rng(0) if rng is None else rng
    theta = rng.normal(size=(R, M, d))
    theta *= np.minimum(1.0, 0.9 * plan.S / np.linalg.norm(theta, axis=-1, keepdims=True))
    A = rng.normal(size=(R, M, d, d))
    Minv = np.einsum("rmij,rmkj->rmik", A, A) / d + 0.05 * np.eye(d)
    fields = {
        "batch": np.full(R, batch, dtype=np.int64),
        "theta": theta,
        "Minv": Minv,
        "gd_batch": np.full(R, batch, dtype=np.int64),
        "theta_gd": np.zeros((R, d)),
    }
    fields.update(override)
    return PublicState(fields)


def _glm_contexts(
    rng: np.random.Generator, shape: tuple[int, ...], on_bound: bool = False
) -> np.ndarray:
    """Contexts ``shape + (K, d)`` in the unit ball (on the sphere with ``on_bound``)."""
    X = rng.normal(size=shape + (GLM_SPEC.K, GLM_SPEC.d))
    n = np.linalg.norm(X, axis=-1, keepdims=True)
    return X / n if on_bound else X / np.maximum(n, 1.0) * rng.random(shape + (GLM_SPEC.K, 1))


def _upper_frobenius(upper: np.ndarray, d: int) -> np.ndarray:
    """Frobenius norm of the symmetric matrices whose upper triangles (numpy.triu_indices order) are ``upper``."""
    i, j = np.triu_indices(d)
    weight = np.where(i == j, 1.0, 2.0)
    return np.sqrt(np.einsum("...l,l->...", upper * upper, weight))


# ----------------------------------------------------------------------------------------------------------
# statistical checks of the online noise (thresholds from the sample size)
# ----------------------------------------------------------------------------------------------------------
def _laplace_ok(diff: np.ndarray, b: np.ndarray) -> bool:
    """``diff / b`` is Lap(1): mean 0 (sd sqrt(2/N)), E z^2 = 2 (Var z^2 = 24 - 4 = 20), E|z| = 1 (Var |z| = 1)."""
    z = diff / b
    N = z.size
    return bool(
        abs(z.mean()) <= Z * math.sqrt(2.0 / N)
        and abs((z * z).mean() - 2.0) <= Z * math.sqrt(20.0 / N)
        and abs(np.abs(z).mean() - 1.0) <= Z / math.sqrt(N)
    )


def _unbiased_ok(diff: np.ndarray, variance: np.ndarray) -> bool:
    """``diff / sqrt(variance)`` per coordinate (last axis): mean 0 (sd 1/sqrt(N)) and E z^2 = 1, the
    latter's standard error ``sqrt((E z^4 - 1) / N)`` from the sample's fourth moment."""
    z = (diff / np.sqrt(variance)).reshape(-1, diff.shape[-1])
    N = z.shape[0]
    m2 = (z * z).mean(axis=0)
    m4 = (z**4).mean(axis=0)
    return bool(
        np.all(np.abs(z.mean(axis=0)) <= Z / math.sqrt(N))
        and np.all(np.abs(m2 - 1.0) <= Z * np.sqrt(np.maximum(m4 - 1.0, 1e-12) / N))
    )


def test_statistical_checks_flag_half_noise() -> None:
    # the checks themselves: exact samples pass, half-noise samples (std / 2) fail
    rng = np.random.default_rng(1)
    b = rng.uniform(0.5, 3.0, 100_000)
    lap = rng.laplace(0.0, b)
    assert _laplace_ok(lap, b) and not _laplace_ok(lap / 2, b)
    var = rng.uniform(1.0, 50.0, (100_000, 3))
    gauss = rng.normal(0.0, np.sqrt(var))
    assert _unbiased_ok(gauss, var) and not _unbiased_ok(gauss / 2, var)


# ----------------------------------------------------------------------------------------------------------
# online-path noise: randomize - encode has the declared noise
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", ["strict", "paper"])
def test_hanna_local_online_noise(preset: str) -> None:
    client = _hanna("hanna-local", preset).client
    N = 100_000
    rng = np.random.default_rng(2)
    committed = np.where(rng.random(N) < 0.2, rng.integers(0, HANNA_SPEC.K, N), -1)
    public = _local_public(
        N, committed, rng.integers(0, 4, (N, HANNA_SPEC.K)) + np.eye(HANNA_SPEC.K, dtype=int)[0]
    )
    X = _catalogue(N)
    a = client.choose(0, public, X, rng)
    y = rng.uniform(-3.0, 3.0, N)  # a third of them outside [-1, 1]
    msg = client.randomize(0, public, X, a, y, rng)
    enc = client.encode(0, public, X, a, y)
    noise = client.noise(0, public, X, a)
    assert noise.kind == "laplace" and noise.scale.shape == enc.shape == (N, 2)
    np.testing.assert_array_equal(msg["action"], enc[:, 0])  # the public action: exact
    assert np.all(noise.scale[:, 0] == 0.0)
    diff = msg["reward_hat"] - enc[:, 1]
    b = noise.scale[:, 1]
    report = committed < 0
    assert np.all(diff[~report] == 0.0) and np.all(
        b[~report] == 0.0
    )  # the commit phase sends (-1, 0)
    np.testing.assert_allclose(noise.variance, 2.0 * noise.scale**2)
    assert np.all(b[report] == client.scale)
    assert _laplace_ok(diff[report], b[report])
    assert not _laplace_ok(
        diff[report] / 2, b[report]
    )  # the check has power against half the noise


@pytest.mark.parametrize("preset", ["strict", "paper"])
def test_hanna_shuffle_online_noise(preset: str) -> None:
    client = _hanna("hanna-shuffle", preset).client
    sizes = np.asarray(client.budget.sizes)
    N = 100_000
    rng = np.random.default_rng(3)
    pick = rng.random(N)
    # calibrated batch sizes, the commit phase (0) and a batch the horizon cuts (not calibrated)
    n = np.where(pick < 0.8, rng.choice(sizes, N), np.where(pick < 0.9, 0, max_pulls(HANNA_SPEC)))
    public = PublicState({"action": rng.integers(0, HANNA_SPEC.K, N), "n": n})
    X = _catalogue(N)
    a = client.choose(0, public, X, rng)
    y = rng.uniform(-3.0, 3.0, N)
    msg = client.randomize(0, public, X, a, y, rng)
    enc = client.encode(0, public, X, a, y)
    noise = client.noise(0, public, X, a)
    diff = msg["reward_hat"] - enc[:, 0]
    b = noise.scale[:, 0]
    assert np.all(diff[n == 0] == 0.0) and np.all(b[n == 0] == 0.0)
    assert np.all(b[n > 0] > 0)
    assert _laplace_ok(diff[n > 0], b[n > 0])
    assert not _laplace_ok(diff[n > 0] / 2, b[n > 0])


def test_shuffle_glm_matrix_message_online_noise() -> None:
    client = _glm_client()
    N = 40_000
    rng = np.random.default_rng(4)
    for batch in (0, 2):
        public = _glm_public(N, batch, rng)
        X = _glm_contexts(rng, (N,))
        a = rng.integers(0, GLM_SPEC.K, N)
        y = rng.random(N)
        msg = client.randomize(0, public, X, a, y, rng)
        enc = client.encode(0, public, X, a, y)
        noise = client.noise(0, public, X, a)
        assert noise.kind == "unbiased" and np.all(noise.scale == 1.0)
        diff = msg["count"] - enc
        assert _unbiased_ok(diff, noise.variance), batch
        assert not _unbiased_ok(diff / 2, noise.variance), batch


def test_shuffle_glm_pgd_messages_online_noise() -> None:
    client = _glm_client()
    plan = client.plan
    n, R = plan.lengths[0], 3000
    rng = np.random.default_rng(5)
    public = _glm_public(R, 0, rng)
    X = _glm_contexts(rng, (n, R))
    a = rng.integers(0, GLM_SPEC.K, (n, R))
    client.randomize_batch(0, public, X, a, rng.random((n, R)), rng)
    theta = rng.normal(size=(R, plan.d))
    theta *= plan.S / np.linalg.norm(theta, axis=1, keepdims=True)  # on the boundary of the S ball
    gd = _glm_public(R, 0, rng, theta_gd=theta)
    msgs = client.respond(n - 1, gd, rng)
    enc = client.respond_encode(n - 1, gd)
    noise = client.respond_noise(n - 1, gd)
    assert len(msgs) == n and enc.shape == noise.variance.shape == (n, R, plan.d)
    diff = np.stack([m["count"] for m in msgs]) - enc
    assert _unbiased_ok(diff, noise.variance)
    assert not _unbiased_ok(diff / 2, noise.variance)


# ----------------------------------------------------------------------------------------------------------
# the device message equals the offline release function bit for bit (same seeded generator)
# ----------------------------------------------------------------------------------------------------------
def test_device_messages_equal_the_offline_randomizers() -> None:
    N = 500
    rng = np.random.default_rng(6)
    y = rng.uniform(-3.0, 3.0, N)
    X, a = _catalogue(N), rng.integers(0, HANNA_SPEC.K, N)
    local = _hanna("hanna-local").client
    out = np.empty(N)
    laplace_randomize(np.random.default_rng(7), y, -1.0, 1.0, np.full(N, local.scale), out)
    msg = local.randomize(0, _local_public(N), X, a, y, np.random.default_rng(7))
    np.testing.assert_array_equal(msg["reward_hat"], out)
    shuffle = _hanna("hanna-shuffle").client
    size = max(k for k in shuffle.budget.sizes if k <= N)  # one complete batch of `size` users
    ys, Xs, As = y[:size], X[:size], a[:size]
    offline = laplace_randomizer(
        ys[None],
        np.zeros((1, size), dtype=np.int64),
        shuffle.budget.params(size),
        np.random.default_rng(8),
    )["reward_hat"][0]
    msg = shuffle.randomize(
        0,
        PublicState({"action": As, "n": np.full(size, size)}),
        Xs,
        As,
        ys,
        np.random.default_rng(8),
    )
    np.testing.assert_array_equal(msg["reward_hat"], offline)
    glm = _glm_client()
    public = _glm_public(N, 1, rng)
    Xg = _glm_contexts(rng, (N,))
    x = Xg[np.arange(N), a]
    params = glm.plan.matrix[1]
    weights = scale_weights(
        x[:, None, :], public["theta"][:, 0], public["Minv"][:, 0], glm.plan, GLM_SPEC.link
    )[:, 0]
    w, _ = cheu.encode_rank_one(x, weights, params.Delta)
    offline_glm = cheu.local_randomizer(w, params, np.random.default_rng(9))["count"]
    msg = glm.randomize(0, public, Xg, a, rng.random(N), np.random.default_rng(9))
    np.testing.assert_array_equal(msg["count"], offline_glm)


# ----------------------------------------------------------------------------------------------------------
# the invariant over the declared public-state space (adversarial server)
# ----------------------------------------------------------------------------------------------------------
def _distance(
    client: Any,
    public: PublicState,
    X0: np.ndarray,
    a0: np.ndarray,
    y0: np.ndarray,
    X1: np.ndarray,
    a1: np.ndarray,
    y1: np.ndarray,
) -> np.ndarray:
    e0 = client.encode(0, public, X0, a0, y0)
    e1 = client.encode(0, public, X1, a1, y1)
    scale = client.noise(0, public, X0, a0).scale
    np.testing.assert_array_equal(
        scale, client.noise(0, public, X1, a1).scale
    )  # the noise is not the user's
    return whitened_distance(e0, e1, scale, client.sensitivity().norm)


@pytest.mark.parametrize("name", ["hanna-local", "hanna-shuffle"])
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), extreme=st.booleans(), y0=REWARDS, y1=REWARDS)
@example(seed=0, extreme=True, y0=-1e6, y1=1e6)
def test_hanna_devices_hold_their_sensitivity_on_every_public_state(
    name: str, seed: int, extreme: bool, y0: float, y1: float
) -> None:
    client = _hanna(name).client
    R = 6
    rng = np.random.default_rng(seed)
    public = client.public_space().draw(dims_of(HANNA_SPEC, R), rng, extreme)
    X, a = (
        _catalogue(R),
        rng.integers(0, HANNA_SPEC.K, R),
    )  # actions are public: the same for both users
    dist = _distance(client, public, X, a, np.full(R, y0), X, a, np.full(R, y1))
    assert np.all(dist <= client.sensitivity().bound * (1 + 1e-12)), (dist, client.sensitivity())


@pytest.mark.parametrize("name", ["hanna-local", "hanna-shuffle"])
def test_hanna_sensitivity_is_reached_at_the_extremes(name: str) -> None:
    # an audit at the worst public state reaches the accounted bound: every user reports, at the
    # least-noise batch size, rewards far outside the range on either side
    client = _hanna(name).client
    R = 3
    if name == "hanna-local":
        public = _local_public(R)
        assert client.sensitivity().bound == pytest.approx(_hanna(name).guarantee.epsilon)
    else:
        sizes = np.asarray(client.budget.sizes)
        worst = sizes[np.argmin(client.scales(sizes))]
        public = PublicState({"action": np.zeros(R, dtype=np.int64), "n": np.full(R, worst)})
        assert client.sensitivity().bound == pytest.approx(_hanna(name).guarantee.local_epsilon)
    X, a = _catalogue(R), np.zeros(R, dtype=np.int64)
    dist = _distance(client, public, X, a, np.full(R, -1e6), X, a, np.full(R, 1e6))
    np.testing.assert_allclose(dist, client.sensitivity().bound, rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), extreme=st.booleans(), y0=REWARDS, y1=REWARDS)
@example(seed=0, extreme=True, y0=-1e6, y1=1e6)
def test_shuffle_glm_matrix_message_holds_its_sensitivity_on_every_public_state(
    seed: int, extreme: bool, y0: float, y1: float
) -> None:
    client = _glm_client()
    R = 4
    rng = np.random.default_rng(seed)
    public = client.public_space().draw(dims_of(GLM_SPEC, R), rng, extreme)
    public = PublicState(
        {
            **dict(public),
            "batch": np.full(R, public["batch"][0]),
            "gd_batch": np.full(R, public["batch"][0]),
        }
    )  # one schedule for every replication
    X0, X1 = _glm_contexts(rng, (R,), extreme), _glm_contexts(rng, (R,), extreme)
    a0, a1 = (
        rng.integers(0, GLM_SPEC.K, R),
        rng.integers(0, GLM_SPEC.K, R),
    )  # the played arm is the user's data
    dist = _distance(client, public, X0, a0, np.full(R, y0), X1, a1, np.full(R, y1))
    assert np.all(dist <= client.sensitivity().bound * (1 + 1e-12)), dist


def test_shuffle_glm_matrix_sensitivity_is_reached_at_the_extremes() -> None:
    # the batch of the largest precision g, estimates 0 and inverses 0 (weight 1/kappa*), two users
    # whose arms are orthogonal unit vectors: the encodings differ by sqrt(2) g in counts
    client = _glm_client()
    plan = client.plan
    k = int(np.argmax([p.g for p in plan.matrix]))
    R, d, M = 2, plan.d, plan.n_batches
    public = _glm_public(R, k, theta=np.zeros((R, M, d)), Minv=np.zeros((R, M, d, d)))
    X0 = np.zeros((R, GLM_SPEC.K, d))
    X1 = np.zeros((R, GLM_SPEC.K, d))
    X0[:, :, 0] = 1.0
    X1[:, :, 1] = 1.0
    a = np.zeros(R, dtype=np.int64)
    dist = _distance(client, public, X0, a, np.zeros(R), X1, a, np.ones(R))
    np.testing.assert_allclose(dist, client.sensitivity().bound, rtol=1e-12)
    assert client.sensitivity().bound == pytest.approx(math.sqrt(2.0) * plan.matrix[k].g)


def _held_client(
    X: np.ndarray, a: np.ndarray, y: np.ndarray, narrow: bool = False
) -> ShuffleGLMClient:
    """A device holding the users of batch 0 (``X`` (n, R, K, d), ``a`` and ``y`` (n, R))."""
    client = _glm_client(narrow)
    R = X.shape[1]
    client.randomize_batch(0, _glm_public(R, 0), X, a, y, np.random.default_rng(0))
    return client


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    extreme=st.booleans(),
    y0=REWARDS,
    y1=REWARDS,
    narrow=st.booleans(),
)
@example(seed=0, extreme=True, y0=-1e6, y1=1e6, narrow=True)
def test_shuffle_glm_pgd_messages_hold_their_sensitivity_on_every_public_state(
    seed: int, extreme: bool, y0: float, y1: float, narrow: bool
) -> None:
    plan = _glm(narrow).plan
    n, R = plan.lengths[0], 3
    rng = np.random.default_rng(seed)
    X = _glm_contexts(rng, (n, R), extreme)
    a = rng.integers(0, GLM_SPEC.K, (n, R))
    y = rng.random((n, R))
    j = int(rng.integers(n))  # the neighbouring datasets differ in user j only
    X1, a1, y1s = X.copy(), a.copy(), y.copy()
    X1[j], a1[j] = _glm_contexts(rng, (R,), extreme), rng.integers(0, GLM_SPEC.K, R)
    y[j], y1s[j] = y0, y1
    c0, c1 = _held_client(X, a, y, narrow), _held_client(X1, a1, y1s, narrow)
    drawn = c0.public_space().draw(dims_of(GLM_SPEC, R), rng, extreme)
    public = PublicState(
        {
            **dict(drawn),
            "batch": np.zeros(R, dtype=np.int64),
            "gd_batch": np.zeros(R, dtype=np.int64),
        }
    )
    e0, e1 = c0.respond_encode(0, public), c1.respond_encode(0, public)
    others = np.arange(n) != j
    np.testing.assert_array_equal(e0[others], e1[others])
    dist = whitened_distance(e0[j], e1[j], c0.respond_noise(0, public).scale[j], "l2")
    assert np.all(dist <= c0.respond_sensitivity().bound * (1 + 1e-12)), dist


# ----------------------------------------------------------------------------------------------------------
# every clip and range check at, just inside and beyond its bound
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["hanna-local", "hanna-shuffle"])
def test_hanna_reward_clip_at_inside_and_beyond(name: str) -> None:
    client = _hanna(name).client
    eps = 1e-9
    y = np.array([1.0, 1.0 - eps, 1.0 + eps, 1e6, -1.0, -1.0 + eps, -1.0 - eps, -1e6])
    want = np.array([1.0, 1.0 - eps, 1.0, 1.0, -1.0, -1.0 + eps, -1.0, -1.0])
    R = y.size
    a = np.zeros(R, dtype=np.int64)
    if name == "hanna-local":
        public = _local_public(R)
        col = 1
    else:
        public = PublicState({"action": a, "n": np.full(R, client.budget.sizes[0])})
        col = 0
    np.testing.assert_array_equal(client.encode(0, public, _catalogue(R), a, y)[:, col], want)


def test_hanna_shuffle_scale_never_below_the_calibrated_ones() -> None:
    # a batch size the calibration does not account (a batch cut by the horizon, or one a dishonest
    # server makes up) gets the largest calibrated scale; calibrated sizes get their own
    client = _hanna("hanna-shuffle").client
    sizes = np.asarray(client.budget.sizes)
    np.testing.assert_array_equal(client.scales(sizes), client.budget.scales(sizes))
    other = np.setdiff1d(np.arange(1, max_pulls(HANNA_SPEC) + 1), sizes)[[0, -1]]
    np.testing.assert_array_equal(client.scales(other), client.budget.scales(sizes).max())
    assert client.scales(np.array([0]))[0] == 0.0


def test_shuffle_glm_weight_clip_at_inside_and_beyond() -> None:
    plan = _glm().plan
    link = GLM_SPEC.link
    x = np.array([[[0.6, 0.8]]])
    at = scale_weights(x, np.zeros((1, 2)), np.zeros((1, 2, 2)), plan, link)  # z = 0, beta = 1
    assert at[0, 0] == 1.0 / plan.kappa_star
    inside = scale_weights(x, np.array([[0.1, 0.0]]), np.zeros((1, 2, 2)), plan, link)
    assert 0.0 < inside[0, 0] < 1.0 / plan.kappa_star
    tight = dataclasses.replace(plan, kappa_star=2.0 * plan.kappa_star)  # a cap below sup mu'
    for theta in (np.zeros((1, 2)), np.array([[0.01, 0.0]])):
        assert (
            scale_weights(x, theta, np.zeros((1, 2, 2)), tight, link)[0, 0]
            == 1.0 / tight.kappa_star
        )


# at the bound the norm is the bound whether or not rounding counts the input as clipped (None)
@pytest.mark.parametrize(
    ("factor", "clipped"), [(1.0, None), (1.0 - 1e-9, False), (1.0 + 1e-9, True), (1e6, True)]
)
def test_frobenius_clip_of_the_matrix_input(factor: float, clipped: bool | None) -> None:
    Delta, d = 2.5, 3
    x = np.array([0.6, 0.0, 0.8]) * math.sqrt(Delta * factor)  # ||x x^T||_F = Delta * factor
    w, n_clipped = cheu.encode_rank_one(x[None], 1.0, Delta)
    fro = _upper_frobenius(w - Delta, d)[0]
    assert clipped is None or n_clipped == int(clipped)
    assert fro == pytest.approx(Delta if clipped else Delta * factor, rel=1e-12)


def test_device_matrix_input_reaches_the_frobenius_bound_and_no_further() -> None:
    # on the device the bound is met exactly by a context on the sphere at weight 1/kappa* (batch >= 1)
    # or 1 (warm-up); a context beyond the bound is refused before it is encoded
    client = _glm_client()
    plan = client.plan
    R, M, d = 1, plan.n_batches, plan.d
    X = np.zeros((R, GLM_SPEC.K, d))
    X[:, :, 0] = 1.0
    a = np.zeros(R, dtype=np.int64)
    for k in (0, 1):
        public = _glm_public(R, k, theta=np.zeros((R, M, d)), Minv=np.zeros((R, M, d, d)))
        p = plan.matrix[k]
        w = (client.encode(0, public, X, a, np.zeros(R)) - p.b * p.p) * p.Delta / p.g
        assert _upper_frobenius(w - p.Delta, d)[0] == pytest.approx(p.Delta, rel=1e-12)
        inside = client.encode(0, public, X * (1 - 1e-9), a, np.zeros(R))
        w_in = (inside - p.b * p.p) * p.Delta / p.g
        assert _upper_frobenius(w_in - p.Delta, d)[0] < p.Delta
        with pytest.raises(DataBoundError, match="context_bound"):
            client.encode(0, public, X * (1 + 1e-6), a, np.zeros(R))


@pytest.mark.parametrize(
    ("factor", "clipped"), [(1.0, None), (1.0 - 1e-9, False), (1.0 + 1e-9, True), (1e6, True)]
)
def test_gradient_clip_of_the_pgd_input(factor: float, clipped: bool | None) -> None:
    L = 1.7
    v = np.array([[0.6, -0.8]]) * L * factor
    w, n_clipped = cheu.encode_vectors(v, L)
    assert clipped is None or n_clipped == int(clipped)
    assert np.linalg.norm(w - L) == pytest.approx(L if clipped else L * factor, rel=1e-12)


def _pgd_input(client: ShuffleGLMClient, public: PublicState) -> np.ndarray:
    """The held users' clipped P_GD inputs (n, R, d), decoded from the expected counts."""
    p = client.plan.vector[0]
    assert p is not None
    return (client.respond_encode(0, public) - p.b * p.p) * p.Delta / p.g - p.Delta


def test_device_pgd_gradient_is_clipped_at_a_server_chosen_iterate() -> None:
    # reward range [0, 0.5]: |mu - r| reaches sigmoid(S) = 0.88 > r_hi - r_lo, so the gradient at an iterate
    # on the S sphere along the users' arm u exceeds L; the device projects it onto the L ball (norm L,
    # direction u: not a coordinate clip).  At theta_s = 0 it is (1/2 - r) u, inside the ball, unchanged.
    plan = _glm(narrow=True).plan
    n, R, d, M = plan.lengths[0], 2, plan.d, plan.n_batches
    L = plan.vector[0].Delta  # type: ignore[union-attr]
    u = np.array([0.6, 0.8])
    X = np.zeros((n, R, GLM_SPEC.K, d))
    X[...] = u
    client = _held_client(X, np.zeros((n, R), dtype=np.int64), np.zeros((n, R)), narrow=True)
    theta = np.broadcast_to(plan.S * u, (R, d)).copy()
    base = {"theta": np.zeros((R, M, d)), "Minv": np.broadcast_to(np.eye(d), (R, M, d, d)).copy()}
    beyond = _pgd_input(client, _glm_public(R, 0, theta_gd=theta, **base))
    raw = 1.0 / (1.0 + math.exp(-plan.S)) + plan.lam_max / n * plan.S
    assert raw > L and raw * u.max() < L  # beyond the ball, every coordinate inside [-L, L]
    np.testing.assert_allclose(beyond, np.broadcast_to(L * u, beyond.shape), rtol=1e-12)
    inside = _pgd_input(client, _glm_public(R, 0, theta_gd=np.zeros((R, d)), **base))
    np.testing.assert_allclose(inside, np.broadcast_to(0.5 * u, inside.shape), rtol=1e-12)
    with pytest.raises(
        PublicStateError, match="theta_gd"
    ):  # an iterate outside the S ball is refused
        client.respond_encode(0, _glm_public(R, 0, theta_gd=theta * (1 + 1e-6), **base))


def _with(public: PublicState, **fields: Any) -> PublicState:
    return PublicState({**dict(public), **fields})


def _range_cases() -> list[tuple[str, Callable[[], tuple[Any, PublicState, int]], bool]]:
    """(label, builder -> (client, public state, R), accepted)."""
    R = 2
    K, top = HANNA_SPEC.K, max_pulls(HANNA_SPEC)
    local = _local_public(R)
    last = n_batches(HANNA_SPEC.horizon) + 1
    cases: list[tuple[str, Callable[[], tuple[Any, PublicState, int]], bool]] = []

    def add(label: str, name: str, public: PublicState, ok: bool) -> None:
        cases.append(
            (
                label,
                lambda: (_hanna(name).client if name != "glm" else _glm_client(), public, R),
                ok,
            )
        )

    for v, ok in ((K - 1, True), (-1, True), (K, False), (-2, False)):
        add(f"committed={v}", "hanna-local", _with(local, committed=np.array([v, -1])), ok)
    for v, ok in ((top, True), (top - 1, True), (top + 1, False), (-1, False)):
        rem = np.full((R, K), 1)
        rem[0, 0] = v
        add(f"remaining={v}", "hanna-local", _with(local, remaining=rem), ok)
        add(f"counts={v}", "hanna-local", _with(local, counts=rem), ok)
    for v, ok in ((last, True), (1, True), (last + 1, False), (0, False)):
        add(f"batch={v}", "hanna-local", _with(local, batch=np.full(R, v)), ok)
    shuffle = PublicState({"action": np.zeros(R, dtype=np.int64), "n": np.zeros(R, dtype=np.int64)})
    for v, ok in ((top, True), (0, True), (top + 1, False), (-1, False)):
        add(f"n={v}", "hanna-shuffle", _with(shuffle, n=np.array([v, 0])), ok)
    for v, ok in ((K - 1, True), (0, True), (K, False), (-1, False)):
        add(f"action={v}", "hanna-shuffle", _with(shuffle, action=np.array([v, 0])), ok)
    plan = _glm().plan
    M, d, S = plan.n_batches, plan.d, plan.S
    glm = _glm_public(R, 1)
    for v, ok in ((M - 1, True), (0, True), (M, False), (-1, False)):
        add(f"batch={v}", "glm", _with(glm, batch=np.full(R, v), gd_batch=np.full(R, v)), ok)
    for f, ok in ((1.0, True), (1.0 - 1e-9, True), (1.0 + 1e-6, False), (1e6, False)):
        th = np.zeros((R, M, d))
        th[0, 1, 0] = S * f
        add(f"theta={f}S", "glm", _with(glm, theta=th), ok)
        add(f"theta_gd={f}S", "glm", _with(glm, theta_gd=th[:, 1]), ok)
    for v, ok in ((MINV_MAX, True), (MINV_MAX * (1 - 1e-9), True), (MINV_MAX * (1 + 1e-6), False)):
        Mi = np.broadcast_to(np.eye(d), (R, M, d, d)).copy()
        Mi[0, 0, 0, 0] = v
        add(f"Minv={v:g}", "glm", _with(glm, Minv=Mi), ok)
    for lam, ok in ((0.0, True), (1e-3, True), (-1e-3, False)):
        Mi = np.broadcast_to(np.eye(d), (R, M, d, d)).copy()
        Mi[0, 0, 0, 0] = lam  # smallest eigenvalue
        add(f"Minv eig {lam:g}", "glm", _with(glm, Minv=Mi), ok)
    asym = np.broadcast_to(np.eye(d), (R, M, d, d)).copy()
    asym[0, 0, 0, 1] = 0.1
    add("Minv asymmetric", "glm", _with(glm, Minv=asym), False)
    return cases


@pytest.mark.parametrize(
    ("label", "build", "ok"), _range_cases(), ids=[c[0] for c in _range_cases()]
)
def test_public_state_range_checks_at_inside_and_beyond(
    label: str, build: Callable[[], tuple[Any, PublicState, int]], ok: bool
) -> None:
    client, public, R = build()
    spec = HANNA_SPEC if not isinstance(client, ShuffleGLMClient) else GLM_SPEC
    X = _catalogue(R) if spec is HANNA_SPEC else _glm_contexts(np.random.default_rng(0), (R,))
    a, y = np.zeros(R, dtype=np.int64), np.zeros(R)
    if ok:
        client.public_space().validate(public, dims_of(spec, R))
        client.encode(0, public, X, a, y)
    else:
        with pytest.raises(PublicStateError):
            client.encode(0, public, X, a, y)
        with pytest.raises(PublicStateError):
            client.randomize(0, public, X, a, y, np.random.default_rng(0))


@pytest.mark.parametrize("name", ["hanna-local", "hanna-shuffle", "glm"])
def test_contexts_at_and_beyond_the_bound(name: str) -> None:
    client = _glm_client() if name == "glm" else _hanna(name).client
    R = 1
    if name == "glm":
        public, X = _glm_public(R, 1), _glm_contexts(np.random.default_rng(0), (R,), on_bound=True)
    else:
        public = (
            _local_public(R)
            if name == "hanna-local"
            else PublicState(
                {"action": np.zeros(R, dtype=np.int64), "n": np.zeros(R, dtype=np.int64)}
            )
        )
        X = _catalogue(R) / np.linalg.norm(CATALOGUE, axis=1).max()  # the longest row on the sphere
    a, y = np.zeros(R, dtype=np.int64), np.zeros(R)
    client.encode(0, public, X, a, y)
    client.encode(0, public, X * (1 - 1e-9), a, y)
    with pytest.raises(DataBoundError):
        client.randomize(0, public, X * (1 + 1e-6), a, y, np.random.default_rng(0))


# ----------------------------------------------------------------------------------------------------------
# malformed public states and wrongly shaped inputs
# ----------------------------------------------------------------------------------------------------------
def _device(name: str) -> tuple[Any, PublicState, EnvSpec, np.ndarray]:
    R = 3
    if name == "hanna-local":
        return _hanna(name).client, _local_public(R), HANNA_SPEC, _catalogue(R)
    if name == "hanna-shuffle":
        public = PublicState(
            {
                "action": np.zeros(R, dtype=np.int64),
                "n": np.full(R, _hanna(name).client.budget.sizes[0]),
            }
        )
        return _hanna(name).client, public, HANNA_SPEC, _catalogue(R)
    return _glm_client(), _glm_public(R, 1), GLM_SPEC, _glm_contexts(np.random.default_rng(0), (R,))


def _malformed(public: PublicState) -> list[tuple[str, Any]]:
    first = next(iter(public))
    out: list[tuple[str, Any]] = [
        ("missing field", {k: v for k, v in public.items() if k != first}),
        ("extra field", {**dict(public), "epsilon": np.array(100.0)}),
        ("raw contexts", {**dict(public), "contexts": np.zeros((3, 2))}),
        ("wrong shape", {**dict(public), first: np.concatenate([public[first], public[first]])}),
        ("not a mapping", [public[k] for k in public]),
    ]
    for k, v in public.items():
        if v.dtype.kind == "f":
            bad = v.copy()
            bad.reshape(-1)[0] = np.nan
            out.append((f"NaN in {k}", {**dict(public), k: bad}))
        else:
            out.append((f"non-integer {k}", {**dict(public), k: v + 0.5}))
    return out


@pytest.mark.parametrize("name", ["hanna-local", "hanna-shuffle", "glm"])
def test_malformed_public_state_is_refused(name: str) -> None:
    client, public, _spec, X = _device(name)
    R = X.shape[0]
    a, y = np.zeros(R, dtype=np.int64), np.zeros(R)
    rng = np.random.default_rng(0)
    calls = {
        "choose": lambda p: client.choose(0, p, X, rng),
        "randomize": lambda p: client.randomize(0, p, X, a, y, rng),
        "encode": lambda p: client.encode(0, p, X, a, y),
        "noise": lambda p: client.noise(0, p, X, a),
    }
    for label, bad in _malformed(public):
        for call, f in calls.items():
            try:
                f(bad)
            except PublicStateError:
                continue
            pytest.fail(f"{name}.{call} accepted a public state with {label}")


@pytest.mark.parametrize("name", ["hanna-local", "hanna-shuffle", "glm"])
def test_wrongly_shaped_inputs_are_refused(name: str) -> None:
    client, public, spec, X = _device(name)
    R = X.shape[0]
    a, y = np.zeros(R, dtype=np.int64), np.zeros(R)
    rng = np.random.default_rng(0)
    wide = np.concatenate([X, np.zeros(X.shape[:-1] + (1,))], axis=-1)  # d + 1 features
    bad_inputs = [
        (wide, a, y),
        (X[:, 0], a, y),
        (X[None], a, y),  # contexts: d + 1 features, (R, d), one axis more
        (X, np.full(R, spec.K), y),
        (X, np.full(R, -1), y),
        (X, a + 0.5, y),
        (X, a[:-1], y),  # actions
        (X, a, y[:-1]),
        (X, a, y[:, None]),
        (X, a, np.array(["1"] * R)),  # rewards
    ]
    for Xb, ab, yb in bad_inputs:
        with pytest.raises(ValidationError):
            client.randomize(0, public, Xb, ab, yb, rng)
        with pytest.raises(ValidationError):
            client.encode(0, public, Xb, ab, yb)
    for Xb in (wide, X[:, 0]):
        with pytest.raises(ValidationError):
            client.choose(0, public, Xb, rng)
    with pytest.raises(DataBoundError):  # non-finite rewards
        client.randomize(0, public, X, a, np.full(R, np.nan), rng)


def test_shuffle_glm_batch_paths_check_their_inputs() -> None:
    client = _glm_client()
    n, R = 4, 3
    rng = np.random.default_rng(0)
    public = _glm_public(R, 1)
    X = _glm_contexts(rng, (n, R))
    a, y = np.zeros((n, R), dtype=np.int64), np.zeros((n, R))
    client.choose_batch(0, public, X, rng)
    wide = np.concatenate([X, np.zeros(X.shape[:-1] + (1,))], axis=-1)
    for Xb in (wide, X[0], X[..., 0]):
        with pytest.raises(ValidationError):
            client.choose_batch(0, public, Xb, rng)
    for Xb, ab, yb in (
        (wide, a, y),
        (X, a.T, y),
        (X, a + GLM_SPEC.K, y),
        (X, a, y[:, :-1]),
        (X, a, y.T),
    ):
        with pytest.raises(ValidationError):
            client.randomize_batch(0, public, Xb, ab, yb, rng)
    with pytest.raises(DataBoundError):
        client.randomize_batch(0, public, X * 2.0, a, y, rng)
    for _, bad in _malformed(public):
        with pytest.raises(PublicStateError):
            client.choose_batch(0, bad, X, rng)
        with pytest.raises(PublicStateError):
            client.randomize_batch(0, bad, X, a, y, rng)
    mixed = _with(public, batch=np.array([1, 2, 1]))  # every replication follows one schedule
    with pytest.raises(PublicStateError, match="same public batch"):
        client.randomize_batch(0, mixed, X, a, y, rng)


def test_shuffle_glm_pgd_rounds_validate_the_public_state() -> None:
    plan = _glm().plan
    n, R = plan.lengths[0], 2
    rng = np.random.default_rng(0)
    with pytest.raises(TrustBoundaryError, match="holds no user"):
        _glm_client().respond(0, _glm_public(R, 0), rng)
    client = _held_client(
        _glm_contexts(rng, (n, R)), np.zeros((n, R), dtype=np.int64), rng.random((n, R))
    )
    good = _glm_public(R, 0)
    assert len(client.respond(0, good, rng)) == n
    for _, bad in _malformed(good):
        with pytest.raises(PublicStateError):
            client.respond(0, bad, rng)
    with pytest.raises(
        PublicStateError, match="not that batch"
    ):  # a round for users of another batch
        client.respond(0, _with(good, gd_batch=np.ones(R, dtype=np.int64)), rng)
    with pytest.raises(PublicStateError):  # the iterate outside the S ball
        client.respond(0, _with(good, theta_gd=np.full((R, plan.d), plan.S)), rng)


def test_hanna_local_refuses_a_schedule_without_a_pull() -> None:
    client = _hanna("hanna-local").client
    R = 2
    public = _local_public(R, remaining=np.zeros((R, HANNA_SPEC.K), dtype=np.int64))
    with pytest.raises(PublicStateError, match="no pull"):
        client.choose(0, public, _catalogue(R), np.random.default_rng(0))
    committed = _local_public(
        R, committed=np.array([2, 3]), remaining=np.zeros((R, HANNA_SPEC.K), dtype=np.int64)
    )
    np.testing.assert_array_equal(
        client.choose(0, committed, _catalogue(R), np.random.default_rng(0)), [2, 3]
    )


def test_hanna_shuffler_checks_the_server_schedule_before_drawing_slots() -> None:
    # the trusted shuffler draws slots from the untrusted server's counts: a batch larger than any the
    # schedule can plan (a memory bomb) or an arm outside the catalogue is refused; the honest schedule passes
    alg = _reset(HannaShuffle(1.0), HANNA_SPEC, R=2)
    alg.start_batches(_catalogue(2))
    honest = alg.server.public_state()
    assert set(alg.shuffler.assign(0, honest)) == {"action", "n"}
    top = max_pulls(HANNA_SPEC)
    for bad in (
        {"counts": np.full((2, HANNA_SPEC.K), top)},  # every entry in range, the batch total not
        {"counts": np.full((2, HANNA_SPEC.K), top + 1)},
        {"committed": np.array([HANNA_SPEC.K, -1])},
        {"batch": np.zeros(2, dtype=np.int64)},
    ):
        shuffler = _reset(HannaShuffle(1.0), HANNA_SPEC, R=2).shuffler
        with pytest.raises(PublicStateError):
            shuffler.assign(0, _with(honest, **bad))
