"""User-side randomizers of LDP-UCB / LDP-GLOC: noise law, unbiasedness, sensitivity after clipping.

Spec zheng2020-ldp-bandits.md, section 7 items 4-6 and 16.  Statistical thresholds (fixed seeds):
with ``n`` i.i.d. draws and ``m`` tested coordinates, a sample mean must lie within ``z sigma /
sqrt(n)`` and ``n s^2 / sigma^2`` within the chi-square(``n``) quantiles, both at the two-sided level
``1e-3 / m`` (Bonferroni); a Laplace sample variance uses the normal approximation with variance
``20 b^4 / n`` (kurtosis 6).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.algorithms.ldp_zheng import LDPGLOC, LDPUCB
from privbandits.algorithms.ldp_zheng.calibration import outer_vector_sensitivity
from privbandits.core.errors import DataBoundError, ValidationError
from privbandits.core.links import get_link
from privbandits.core.messages import PublicState
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.samplers import add_gaussian, add_symmetric_gaussian

LEVEL = 1e-3


def _reset(alg, R, d=3, K=4, link="identity", reward_range=(-1.0, 1.0), T=1000, setting="single"):
    lo, hi = reward_range
    spec = EnvSpec(
        d=d,
        K=K,
        setting=setting,
        horizon=T,
        link=get_link(link),
        reward_range=(lo, hi),
        reward_bound=max(abs(lo), abs(hi)),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        alg.reset(spec, R, make_streams(5))
    return alg


def _one_context_batch(R, d, K, rng):
    X = rng.standard_normal((K, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return np.broadcast_to(X, (R, K, d)).copy()


def _check_gaussian_noise(noise: np.ndarray, sigma: float) -> None:
    """Columns of ``noise`` (n, m): i.i.d. N(0, sigma^2) (mean and variance tests at level LEVEL / m)."""
    n, m = noise.shape
    a = LEVEL / m
    z = stats.norm.ppf(1 - a / 2)
    assert np.abs(noise.mean(axis=0)).max() <= z * sigma / math.sqrt(n)
    chi = n * noise.var(axis=0) / sigma**2  # ~ chi2(n - 1) with the mean removed
    assert chi.min() >= stats.chi2.ppf(a / 2, n - 1) and chi.max() <= stats.chi2.ppf(
        1 - a / 2, n - 1
    )


def _noiseless(k):
    """The kernel's parameters with every noise scale set to 0 (the message is the clipped statistic)."""
    client = list(k.params[1])
    n_scales = 2 if len(client) == 8 else 3
    for i in range(5, 5 + n_scales):
        client[i] = 0.0
    return (k.params[0], tuple(client)) + tuple(k.params[2:])


def _randomize(k, params, public, X, a, y, rng):
    out = np.empty((X.shape[0], k.message.size))
    k.loops.randomize_all(
        params,
        tuple(public),
        0,
        np.ascontiguousarray(X, dtype=float),
        np.asarray(a, dtype=np.int64),
        np.asarray(y, dtype=float),
        rng,
        out,
    )
    return k.message.split(out)


# --- the noise law of the messages (items 4-5) --------------------------------------------------
@pytest.mark.parametrize(
    "preset, kw",
    [
        ("strict", {}),
        ("paper", {}),
        ("authors_code", {}),
        ("authors_code", {"reference_code": "zheng2020"}),
    ],
)
def test_ldp_ucb_message_is_unbiased_with_the_calibrated_noise(preset, kw):
    """E[x x^T + B] = x x^T and E[y x + xi] = y x; B symmetric; every released coordinate (upper
    triangle and vector) has std sigma, independently."""
    R, d, K = 20000, 3, 4
    alg = _reset(LDPUCB(epsilon=2.0, delta=0.05, preset=preset, **kw), R, d, K)
    X = _one_context_batch(R, d, K, np.random.default_rng(1))
    msg = alg.client.randomize(
        0, alg.server.public_state(), X, np.full(R, 2), np.full(R, 0.6), alg.streams.client
    )
    x = X[0, 2]
    np.testing.assert_array_equal(msg["V"], msg["V"].transpose(0, 2, 1))
    iu = np.triu_indices(d)
    noise = np.concatenate(
        [(msg["V"] - np.outer(x, x))[:, iu[0], iu[1]], msg["u"] - 0.6 * x], axis=1
    )
    sigma = alg.resolved_params()["sigma"]
    _check_gaussian_noise(noise, sigma)
    C = np.corrcoef(noise.T)
    assert np.abs(C - np.eye(C.shape[0])).max() < 5 / math.sqrt(R)


def test_laplace_message_noise_law():
    R, d, K = 40000, 2, 3
    alg = _reset(LDPUCB(epsilon=2.0, mechanism="laplace"), R, d, K)
    X = _one_context_batch(R, d, K, np.random.default_rng(2))
    msg = alg.client.randomize(
        0,
        alg.server.public_state(),
        X,
        np.zeros(R, dtype=int),
        np.full(R, -0.3),
        alg.streams.client,
    )
    x = X[0, 0]
    iu = np.triu_indices(d)
    noise = np.concatenate(
        [(msg["V"] - np.outer(x, x))[:, iu[0], iu[1]], msg["u"] + 0.3 * x], axis=1
    )
    b = alg.resolved_params()["scale_V"]
    m = noise.shape[1]
    z = stats.norm.ppf(1 - LEVEL / m / 2)
    assert np.abs(noise.mean(axis=0)).max() <= z * math.sqrt(2) * b / math.sqrt(R)
    var = noise.var(axis=0)
    assert np.abs(var / (2 * b * b) - 1).max() <= z * math.sqrt(5 / R)  # var of s^2: 20 b^4 / n
    np.testing.assert_array_equal(msg["V"], msg["V"].transpose(0, 2, 1))


def test_noise_comes_from_the_samplers_in_the_documented_order():
    """The message is the clipped statistic plus exactly the draws of add_symmetric_gaussian (B) and
    then add_gaussian (xi) on the client stream."""
    R, d, K = 3, 3, 4
    alg = _reset(LDPUCB(), R, d, K)
    k = alg.kernel
    X = _one_context_batch(R, d, K, np.random.default_rng(3))
    a, y = np.array([0, 1, 3]), np.array([0.2, -0.5, 0.9])
    msg = _randomize(k, k.params, k.public, X, a, y, np.random.default_rng(11))
    rng = np.random.default_rng(11)
    s = alg.resolved_params()["sigma"]
    for r in range(R):
        B, xi = np.zeros((d, d)), np.zeros(d)
        add_symmetric_gaussian(rng, s, B)
        add_gaussian(rng, s, xi)
        x = X[r, a[r]]
        np.testing.assert_allclose(msg["V"][r], np.outer(x, x) + B, rtol=0, atol=1e-12)
        np.testing.assert_allclose(msg["u"][r], y[r] * x + xi, rtol=0, atol=1e-12)


@pytest.mark.parametrize("link, lo, hi", [("logistic", 0.0, 1.0), ("identity", -1.0, 1.0)])
def test_ldp_gloc_messages_unbiased(link, lo, hi):
    """E[z x + xi] = z x with z = x^T theta_hat, and E[grad + r] = clipped (g(x^T theta_hat) - y) x; the
    gradient noise has std sigma_g (= C sigma for the logistic link: Alg. 3's ``C sigma``)."""
    R, d, K = 20000, 2, 3
    alg = _reset(LDPGLOC(epsilon=3.0, delta=0.05), R, d, K, link=link, reward_range=(lo, hi))
    X = _one_context_batch(R, d, K, np.random.default_rng(4))
    theta_hat = np.array([0.6, -0.3])
    pub = PublicState(dict(alg.server.public_state()), theta_hat=np.broadcast_to(theta_hat, (R, d)))
    msg = alg.client.randomize(
        0, pub, X, np.zeros(R, dtype=int), np.full(R, hi), alg.streams.client
    )
    res = alg.resolved_params()
    x = X[0, 0]
    z = x @ theta_hat
    grad = (get_link(link).mu(z) - hi) * x
    grad *= min(1.0, res["grad_clip"] / np.linalg.norm(grad))
    iu = np.triu_indices(d)
    _check_gaussian_noise(
        np.concatenate([(msg["V"] - np.outer(x, x))[:, iu[0], iu[1]], msg["u"] - z * x], axis=1),
        res["sigma"],
    )
    _check_gaussian_noise(msg["g"] - grad, res["scale_g"])
    if link == "logistic":
        assert res["scale_g"] == pytest.approx(res["link_bound"] * res["sigma"])


# --- sensitivity after clipping (items 6, 16) --------------------------------------------------------
def _upper(V):
    iu = np.triu_indices(V.shape[-1])
    return V[:, iu[0], iu[1]]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.floats(0.1, 5.0))
def test_ldp_ucb_clipped_statistics_have_bounded_sensitivity(seed, scale):
    """Any two users (data possibly far outside the bounds, fed to the randomizer directly): the
    clipped statistic (ut(x x^T), y x) differs by at most the joint sensitivity the noise is
    calibrated for."""
    rng = np.random.default_rng(seed)
    R, d, K = 64, 3, 2
    alg = _reset(LDPUCB(), R, d, K)
    k = alg.kernel
    X = rng.standard_normal((R, K, d)) * scale
    y = rng.standard_normal(R) * 3 * scale
    m = _randomize(k, _noiseless(k), k.public, X, np.zeros(R, dtype=int), y, rng)
    stat = np.concatenate([_upper(m["V"]), m["u"]], axis=1)
    dist = np.linalg.norm(stat[:, None] - stat[None], axis=-1)
    assert dist.max() <= outer_vector_sensitivity(1.0, -1.0, 1.0) * (1 + 1e-12)
    assert np.linalg.norm(m["u"], axis=1).max() <= 1 + 1e-12


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_ldp_gloc_clipped_gradient_and_relabel_bounds(seed):
    """Logistic link: |z_t| <= 1 and the gradient norm <= g(1) = 0.731 = C (item 16)."""
    rng = np.random.default_rng(seed)
    R, d, K = 64, 2, 3
    alg = _reset(LDPGLOC(), R, d, K, link="logistic", reward_range=(0.0, 1.0))
    k = alg.kernel
    X = rng.standard_normal((R, K, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=-1, keepdims=True))
    th = rng.standard_normal((R, d))
    th /= np.maximum(1.0, np.linalg.norm(th, axis=-1, keepdims=True))  # theta_hat in W
    public = (k.public[0], k.public[1], k.public[2], th)
    y = rng.integers(0, 2, R).astype(float)
    m = _randomize(k, _noiseless(k), public, X, np.zeros(R, dtype=int), y, rng)
    x = X[:, 0]
    assert np.all(np.linalg.norm(m["g"], axis=1) <= 1 / (1 + math.exp(-1)) + 1e-12)
    z = np.einsum("rd,rd->r", x, th)
    np.testing.assert_allclose(m["u"], z[:, None] * x, atol=1e-14)
    assert np.all(np.abs(z) <= 1 + 1e-12)


@pytest.mark.parametrize("preset", ["strict", "paper"])
def test_gloc_client_does_not_trust_the_broadcast_iterate(preset):
    """A broadcast theta_hat far outside W cannot inflate what the user reports: |z| and the
    gradient stay within the bounds the accountant uses."""
    R, d, K = 200, 2, 3
    rng = np.random.default_rng(6)
    alg = _reset(LDPGLOC(preset=preset), R, d, K, link="identity")
    k = alg.kernel
    X = _one_context_batch(R, d, K, rng)
    public = (k.public[0], k.public[1], k.public[2], rng.standard_normal((R, d)) * 100)
    m = _randomize(k, _noiseless(k), public, X, np.zeros(R, dtype=int), rng.uniform(-1, 1, R), rng)
    x = X[:, 0]
    z = np.einsum("rd,rd->r", m["u"], x)  # ||x|| = 1
    res = alg.resolved_params()
    assert np.all(np.abs(z) <= res["z_bound"] + 1e-12)
    assert np.all(np.linalg.norm(m["g"], axis=1) <= res["grad_bound"] + 1e-12)


def test_authors_code_gloc_needs_gradient_clipping():
    with pytest.raises(ValidationError, match="clip_grad"):
        LDPGLOC(preset="authors_code", clip_grad=False)


# --- the user's own data is checked before it is privatized --------------------------------------
@pytest.mark.parametrize("cls", [LDPUCB, LDPGLOC])
def test_client_rejects_non_finite_or_out_of_bound_data(cls):
    R, d, K = 2, 2, 3
    alg = _reset(cls(), R, d, K)
    X = _one_context_batch(R, d, K, np.random.default_rng(7))
    pub = alg.server.public_state()
    a, y = np.zeros(R, dtype=int), np.zeros(R)
    bad_X = X.copy()
    bad_X[1, 0, 0] = np.inf
    with pytest.raises(DataBoundError, match="contexts"):
        alg.client.randomize(0, pub, bad_X, a, y, alg.streams.client)
    with pytest.raises(DataBoundError, match="rewards"):
        alg.client.randomize(0, pub, X, a, np.array([0.0, np.nan]), alg.streams.client)
    with pytest.raises(DataBoundError, match="context_bound"):
        alg.client.randomize(0, pub, 2 * X, a, y, alg.streams.client)
    msg = alg.client.randomize(0, pub, X, a, y, alg.streams.client)
    assert all(np.isfinite(v).all() for v in msg.payload.values())


# --- the declared output ranges (the service refuses reports outside them) --------------------------
@pytest.mark.parametrize(
    "cls, kw",
    [
        (LDPUCB, {}),
        (LDPUCB, {"preset": "authors_code"}),
        (LDPGLOC, {}),
        (LDPGLOC, {"preset": "authors_code"}),
    ],
    ids=["ucb", "ucb-authors", "gloc", "gloc-authors"],
)
def test_output_ranges_are_the_clipped_statistic_plus_the_noise_tail(cls, kw):
    """Each declared bound is the largest entry of the clipped statistic plus ``Z_TAIL`` noise
    stds: users at the clipping extremes (context along an axis beyond ``C_B``, reward beyond the
    range, the broadcast iterate far outside ``W``) attain the statistic's part exactly (a range
    without it, or with the environment's bounds instead of the clipping bounds, fails), and every
    genuine report lies within the bound."""
    from privbandits.privacy.ranges import Z_TAIL

    R, d, K = 4000, 3, 2
    alg = _reset(cls(epsilon=2.0, **kw), R, d, K, reward_range=(-1.0, 1.0))
    c, k = alg.calibration.constants, alg.kernel
    ranges = alg.output_ranges()
    fields = {"V": c.scale_V, "u": c.scale_u}
    if cls is LDPGLOC:
        fields["g"] = c.scale_g
    assert set(ranges) == set(fields) and ranges["V"].symmetric
    rng = np.random.default_rng(8)
    X = np.zeros((R, K, d))
    X[:, :, 0] = 10.0  # beyond every context bound, along e_1
    y = np.where(np.arange(R) % 2 == 0, -10.0, 10.0)
    public = tuple(k.public)
    if cls is LDPGLOC:  # relabel z = x^T theta_hat at its clip
        th = np.zeros((R, d))
        th[:, 0] = 100.0
        public = (*public[:3], th)
    a = np.zeros(R, dtype=int)
    clean = _randomize(k, _noiseless(k), public, X, a, y, rng)
    noisy = _randomize(k, k.params, public, X, a, y, rng)
    for name, std in fields.items():
        bound = ranges[name].bound
        assert np.abs(clean[name]).max() == pytest.approx(bound - Z_TAIL * std, rel=1e-12)
        assert np.abs(noisy[name]).max() <= bound


@pytest.mark.parametrize(
    "cls, kw",
    [
        (LDPUCB, {"mechanism": "laplace"}),
        (LDPUCB, {"clip": False}),
        (LDPGLOC, {"mechanism": "laplace"}),
    ],
)
def test_no_output_range_without_a_bounded_report(cls, kw):
    alg = _reset(cls(**kw), 2)
    assert alg.output_ranges() == {}
