"""Local randomizers of LDP-UCB / LDP-GLOC: noise law, unbiasedness, sensitivity after clipping.

Spec zheng2020-ldp-bandits.md, section 7 items 4-6 and 16.  Statistical thresholds: a sample mean
of n i.i.d. draws with std s has standard error s / sqrt(n); we allow 5 standard errors.  A sample
variance of n Gaussian draws has relative standard error sqrt(2 / n).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.algorithms.ldp_zheng import LDPGLOC, LDPUCB
from privbandits.algorithms.ldp_zheng.randomizer import (
    SymmetricNoise,
    VectorNoise,
    clip_interval,
    clip_norm,
)
from privbandits.core.links import get_link
from privbandits.core.messages import PublicState
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.mechanisms import (
    sample_gaussian,
    sample_laplace,
    sample_symmetric_gaussian,
)


def _reset(alg, R, d=3, K=4, link="identity", reward_range=(-1.0, 1.0), T=1000, setting="single"):
    lo, hi = reward_range
    spec = EnvSpec(d=d, K=K, setting=setting, horizon=T, link=get_link(link), reward_range=(lo, hi),
                   reward_bound=max(abs(lo), abs(hi)))
    alg.reset(spec, R, make_streams(5))
    return alg


# --- symmetric noise -------------------------------------------------------------------------------
def test_fast_symmetric_noise_is_bit_identical_to_mechanism():
    """The fast path (cached triangle indices) makes the same draws as the library mechanism."""
    noise = SymmetricNoise(6, 2.5)
    a = noise.sample(np.random.default_rng(11), 7)
    b = sample_symmetric_gaussian(np.random.default_rng(11), (7,), 6, 2.5)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(noise.sample_reference(np.random.default_rng(3), 4),
                                  noise.sample(np.random.default_rng(3), 4))


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_symmetric_noise_law(rng, mechanism):
    """Symmetric; diagonal and off-diagonal entries both have variance sigma^2 (2 b^2 for Laplace);
    distinct upper-triangle entries uncorrelated."""
    n, d, scale = 40000, 3, 1.7
    W = SymmetricNoise(d, scale, mechanism).sample(rng, n)
    np.testing.assert_array_equal(W, W.transpose(0, 2, 1))
    var = scale**2 if mechanism == "gaussian" else 2 * scale**2
    # relative se of a sample variance: sqrt(2/n) (Gaussian), sqrt(5/n) (Laplace: kurtosis 6)
    rse = math.sqrt((2 if mechanism == "gaussian" else 5) / n)
    for i, j in [(0, 0), (1, 1), (0, 1), (0, 2), (1, 2)]:
        assert abs(W[:, i, j].var() / var - 1) < 5 * rse
    iu = np.triu_indices(d)
    C = np.corrcoef(W[:, iu[0], iu[1]].T)
    assert np.abs(C - np.eye(C.shape[0])).max() < 5 / math.sqrt(n)


# --- unbiasedness of messages (item 5) ------------------------------------------------------------
def _one_context_batch(R, d, K, rng):
    X = rng.standard_normal((K, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return np.broadcast_to(X, (R, K, d)).copy()


@pytest.mark.parametrize("preset", ["strict", "paper", "authors_code"])
def test_ldp_ucb_messages_unbiased_with_calibrated_variance(rng, preset):
    """E[x x^T + B] = x x^T and E[y x + xi] = y x; per-entry std equals the calibrated sigma."""
    R, d, K = 20000, 3, 4
    alg = _reset(LDPUCB(epsilon=2.0, delta=0.05, preset=preset), R, d, K)
    X = _one_context_batch(R, d, K, rng)
    a = np.full(R, 2)
    y = np.full(R, 0.6)
    pub = alg.server.public_state()
    msg = alg.client.randomize(0, pub, X, a, y, alg.streams.client)
    x = X[0, 2]
    s = alg.sigma
    se = s / math.sqrt(R)
    assert np.abs(msg["V"].mean(0) - np.outer(x, x)).max() < 5 * se
    assert np.abs(msg["u"].mean(0) - 0.6 * x).max() < 5 * se
    assert abs(msg["V"][:, 0, 1].std() / s - 1) < 5 * math.sqrt(2 / R)
    assert abs(msg["u"][:, 2].std() / s - 1) < 5 * math.sqrt(2 / R)


@pytest.mark.parametrize("link, lo, hi", [("logistic", 0.0, 1.0), ("identity", -1.0, 1.0)])
def test_ldp_gloc_messages_unbiased(rng, link, lo, hi):
    """E[z x + xi] = z x with z = x^T theta_hat, and E[grad + r] = clipped (g(x^T theta_hat) - y) x."""
    R, d, K = 20000, 2, 3
    alg = _reset(LDPGLOC(epsilon=3.0, delta=0.05), R, d, K, link=link, reward_range=(lo, hi))
    X = _one_context_batch(R, d, K, rng)
    theta_hat = np.array([0.6, -0.3])
    pub = PublicState(dict(alg.server.public_state()), theta_hat=np.broadcast_to(theta_hat, (R, d)))
    y = np.full(R, hi)
    msg = alg.client.randomize(0, pub, X, np.zeros(R, dtype=int), y, alg.streams.client)
    x = X[0, 0]
    z = x @ theta_hat
    grad = (get_link(link).mu(z) - hi) * x
    cal = alg.calibration
    grad *= min(1.0, cal.grad_clip / np.linalg.norm(grad))
    assert np.abs(msg["V"].mean(0) - np.outer(x, x)).max() < 5 * cal.scale_V / math.sqrt(R)
    assert np.abs(msg["u"].mean(0) - z * x).max() < 5 * cal.scale_u / math.sqrt(R)
    assert np.abs(msg["g"].mean(0) - grad).max() < 5 * cal.scale_g / math.sqrt(R)
    assert abs(msg["g"][:, 0].std() / cal.scale_g - 1) < 5 * math.sqrt(2 / R)
    if link == "logistic":  # item 2 / Alg. 3: gradient noise C sigma
        assert cal.scale_g == pytest.approx(cal.link_bound * alg.sigma)


# --- sensitivity after clipping (item 6, 16) --------------------------------------------------------
def _noiseless(alg):
    """The same client with zero noise: its message is the clipped statistic itself."""
    cal = dataclasses.replace(alg.client.cal, scale_V=0.0, scale_u=0.0,
                              **({"scale_g": 0.0} if hasattr(alg.client.cal, "scale_g") else {}))
    client = type(alg.client).__new__(type(alg.client))
    client.__dict__.update(alg.client.__dict__)
    client.cal = cal
    client.noise_V = SymmetricNoise(alg.features.D, 0.0)
    client.noise_u = VectorNoise(0.0)
    client.noise_g = VectorNoise(0.0)
    return client


def _upper(V):
    iu = np.triu_indices(V.shape[-1])
    return V[:, iu[0], iu[1]]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.floats(0.1, 5.0))
def test_ldp_ucb_clipped_statistics_have_bounded_sensitivity(seed, scale):
    """Any two users (data possibly far outside the bounds): ||v(x) - v(x')|| <= sqrt(2) C_B^2 <= 2 C_B^2
    and ||y x - y' x'|| <= 2 Y C_B, the sensitivities the noise is calibrated for."""
    rng = np.random.default_rng(seed)
    R, d, K = 64, 3, 2
    alg = _reset(LDPUCB(), R, d, K)
    client = _noiseless(alg)
    pub = alg.server.public_state()
    X = rng.standard_normal((R, K, d)) * scale
    y = rng.standard_normal(R) * 3 * scale
    m = client.randomize(0, pub, X, np.zeros(R, dtype=int), y, alg.streams.client)
    V, u = _upper(m["V"]), m["u"]
    dV = np.linalg.norm(V[:, None] - V[None], axis=-1)
    du = np.linalg.norm(u[:, None] - u[None], axis=-1)
    assert dV.max() <= math.sqrt(2) * (1 + 1e-12)
    assert du.max() <= 2 * alg.calibration.reward_bound * (1 + 1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_ldp_gloc_clipped_gradient_and_relabel_bounds(seed):
    """Logistic link: |z_t| <= 1 and the gradient norm <= g(1) = 0.731 = C (item 16)."""
    rng = np.random.default_rng(seed)
    R, d, K = 64, 2, 3
    alg = _reset(LDPGLOC(), R, d, K, link="logistic", reward_range=(0.0, 1.0))
    client = _noiseless(alg)
    X = rng.standard_normal((R, K, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=-1, keepdims=True))
    th = rng.standard_normal((R, d))
    th /= np.maximum(1.0, np.linalg.norm(th, axis=-1, keepdims=True))  # theta_hat in W
    pub = PublicState(dict(alg.server.public_state()), theta_hat=th)
    y = rng.integers(0, 2, R).astype(float)
    m = client.randomize(0, pub, X, np.zeros(R, dtype=int), y, alg.streams.client)
    x = X[:, 0]
    assert np.all(np.linalg.norm(m["g"], axis=1) <= 1 / (1 + math.exp(-1)) + 1e-12)
    z = np.einsum("rd,rd->r", x, th)
    np.testing.assert_allclose(m["u"], z[:, None] * x, atol=1e-14)
    assert np.all(np.abs(z) <= 1 + 1e-12)


@settings(max_examples=50, deadline=None)
@given(
    v=st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=6),
    bound=st.floats(1e-3, 10.0),
)
def test_clip_norm_properties(v, bound):
    x = np.array([v])
    c = clip_norm(x, bound)
    n = np.linalg.norm(x)
    assert np.linalg.norm(c) <= bound * (1 + 1e-12)
    if n <= bound:
        np.testing.assert_array_equal(c, x)
    else:  # direction kept
        np.testing.assert_allclose(c * n, x * bound, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(clip_norm(c, bound), c)


def test_clip_interval():
    y = np.array([-3.0, 0.2, 5.0])
    np.testing.assert_array_equal(clip_interval(y, -1.0, 1.0), [-1.0, 0.2, 1.0])


def test_vector_noise_fast_path_is_bit_identical_to_mechanism():
    a = VectorNoise(1.7).sample(np.random.default_rng(4), (5, 3))
    np.testing.assert_array_equal(a, sample_gaussian(np.random.default_rng(4), (5, 3), 1.7))
    b = VectorNoise(0.4, "laplace").sample(np.random.default_rng(4), (5, 3))
    np.testing.assert_array_equal(b, sample_laplace(np.random.default_rng(4), (5, 3), 0.4))


@pytest.mark.parametrize("preset", ["strict", "paper"])
def test_gloc_client_does_not_trust_the_broadcast_iterate(rng, preset):
    """A broadcast theta_hat far outside W cannot inflate what the user reports: |z| and the
    unclipped gradient stay within the bounds the accountant uses."""
    R, d, K = 200, 2, 3
    alg = _reset(LDPGLOC(preset=preset), R, d, K, link="identity")
    client = _noiseless(alg)
    X = _one_context_batch(R, d, K, rng)
    pub = PublicState(dict(alg.server.public_state()), theta_hat=rng.standard_normal((R, d)) * 100)
    m = client.randomize(0, pub, X, np.zeros(R, dtype=int), rng.uniform(-1, 1, R), alg.streams.client)
    x = X[:, 0]
    z = np.einsum("rd,rd->r", m["u"], x)  # ||x|| = 1
    assert np.all(np.abs(z) <= alg.calibration.z_bound + 1e-12)
    assert np.all(np.linalg.norm(m["g"], axis=1) <= alg.calibration.grad_bound + 1e-12)


def test_authors_code_gloc_needs_gradient_clipping():
    from privbandits.core.errors import ValidationError

    with pytest.raises(ValidationError, match="clip_grad"):
        _reset(LDPGLOC(preset="authors_code", clip_grad=False), 2)
