"""Han et al. (2021): presets, randomizers and estimators (spec han2021-ldp-glb.md, section 7, items
1-8).

Statistical thresholds: a sample mean of n i.i.d. draws with std s has standard error s / sqrt(n);
we accept |mean - target| < 5 se (false-alarm probability < 1e-6 per check).  The sample std of n
Gaussian draws has relative standard error 1 / sqrt(2 n).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privbandits.algorithms.ldp_glb.estimators import (
    OLSEstimator,
    SGDEstimator,
    glm_gradient,
    ols_statistics,
    solve_shifted,
    step_size,
)
from privbandits.algorithms.ldp_glb.presets import (
    default_s0,
    ols_calibration,
    ols_shift_constant,
    sgd_defaults,
    sigma_code,
    sigma_priv,
    sigma_strict,
)
from privbandits.algorithms.ldp_glb.randomizers import (
    ChunkedDraws,
    JointSGDRandomizer,
    OLSRandomizer,
    SGDRandomizer,
    clip_norm,
    l2_ball_from_draws,
    unit_vectors,
)
from privbandits.core.errors import ValidationError
from privbandits.core.links import IDENTITY, LOGISTIC

# spec 2.4 reference table: (eps, delta) -> (paper sigma_priv, strict sigma', code sigma)
REFERENCE = {
    (1.0, 0.01): (6.21502, 6.64618, 19.93854),
    (5.0, 0.01): (1.24300, 1.32924, 3.98771),
    (1.0, 0.1): (4.49509, 5.07454, 15.22363),
    (5.0, 0.1): (0.89902, 1.01491, 3.04473),
    (0.5, 0.01): (12.43005, 13.29236, 39.87707),
}


# ------------------------------------------------------------------------------------------------
# presets: reference numbers
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("level", sorted(REFERENCE))
def test_gaussian_multipliers_match_spec_table(level: tuple[float, float]) -> None:
    eps, delta = level
    paper, strict, code = REFERENCE[level]
    assert sigma_priv(eps, delta) == pytest.approx(paper, abs=1e-5)
    assert sigma_strict(eps, delta) == pytest.approx(strict, abs=1e-5)
    assert sigma_code(eps, delta) == pytest.approx(code, abs=1e-5)


@pytest.mark.parametrize("level", sorted(REFERENCE))
def test_ols_noise_scales_per_preset(level: tuple[float, float]) -> None:
    """Spec 2.4: s_W = s_u = 2 sigma' (strict); 2 sigma_priv and sigma_priv (paper); sigma_code
    (code).
    """
    eps, delta = level
    paper, strict, code = REFERENCE[level]
    s = ols_calibration("strict", eps, delta)
    assert (s.s_W, s.s_u) == pytest.approx((2 * strict, 2 * strict), abs=2e-5)
    p = ols_calibration("paper", eps, delta)
    assert (p.s_W, p.s_u) == pytest.approx((2 * paper, paper), abs=2e-5)
    c = ols_calibration("authors_code", eps, delta)
    assert (c.s_W, c.s_u) == pytest.approx((code, code), abs=2e-5)


def test_ols_noise_scales_with_bounds() -> None:
    """strict: s_W = 2 C_B^2 sigma', s_u = 2 c_r C_B sigma'; paper: 2 C_B sigma, C_B c_r sigma; code
    ignores them.
    """
    sp = sigma_strict(1.0, 0.01)
    s = ols_calibration("strict", 1.0, 0.01, context_bound=2.0, reward_bound=3.0)
    assert (s.s_W, s.s_u) == pytest.approx((2 * 4 * sp, 2 * 3 * 2 * sp))
    assert (s.sens_M, s.sens_u) == pytest.approx((math.sqrt(2) * 4, 12.0))
    p = ols_calibration("paper", 1.0, 0.01, context_bound=2.0, reward_bound=3.0)
    assert (p.s_W, p.s_u) == pytest.approx((2 * 2 * sigma_priv(1, 0.01), 6 * sigma_priv(1, 0.01)))
    c = ols_calibration("authors_code", 1.0, 0.01, context_bound=2.0, reward_bound=3.0)
    assert c.s_W == c.s_u == pytest.approx(sigma_code(1.0, 0.01))


def test_multi_param_per_arm_multiplier() -> None:
    """Spec 2.6: sigma'_arm = 4 sqrt(2 ln(5/delta))/eps = strict multiplier at (eps/2, delta/2)."""
    assert sigma_strict(0.5, 0.05) == pytest.approx(11.18860, abs=1e-5)
    assert sigma_strict(2.5, 0.05) == pytest.approx(2.23772, abs=1e-5)


def test_analytic_calibration_is_smaller_and_strict_only() -> None:
    assert sigma_strict(1.0, 0.01, "analytic") < sigma_strict(1.0, 0.01, "classic")
    with pytest.raises(ValidationError, match="calibration"):
        ols_calibration("paper", 1.0, 0.01, calibration="analytic")


def test_shift_constant_reference_values() -> None:
    """Spec 7.7: c_tilde(eps=1, delta=0.01, d=2, T=1e6, alpha=0.1) = 488.244 (97.649 at eps=5)."""
    assert ols_shift_constant(sigma_priv(1, 0.01), 2, 10**6, 0.1) == pytest.approx(
        488.244, abs=1e-3
    )
    assert ols_shift_constant(sigma_priv(5, 0.01), 2, 10**6, 0.1) == pytest.approx(97.649, abs=1e-3)
    # multi-parameter (Thm 4.1): ln(2 T K / alpha)
    k3 = ols_shift_constant(1.0, 2, 10**6, 0.1, K=3)
    assert k3 == pytest.approx(2 * (4 * math.sqrt(2) + 2 * math.log(2 * 3e6 / 0.1)))


def test_sgd_defaults_per_preset() -> None:
    s = sgd_defaults("strict", "single", "identity", 1.0, 1.0)
    assert (s["grad_bound"], s["eta0"], s["t0"], s["init"], s["ridge"]) == (
        2.0,
        5.0,
        1.0,
        "zero",
        0.0,
    )
    assert sgd_defaults("paper", "multi", "identity", 1.0, 1.0) == sgd_defaults(
        "strict", "multi", "identity", 1, 1
    )
    c = sgd_defaults("authors_code", "single", "logistic", 1.0, 1.0)
    assert (c["grad_bound"], c["init"], c["ridge"]) == (1.0, "random_unit", 0.05)
    assert sgd_defaults("authors_code", "single", "identity", 1.0, 1.0)["ridge"] == 0.0
    m = sgd_defaults("authors_code", "multi", "identity", 1.0, 1.0)
    assert (m["sgd_warmup"], m["synthetic_update"], m["joint_radius"], m["ridge"]) == (
        "ols",
        "joint",
        "d",
        0.05,
    )


def test_default_warmup_length() -> None:
    assert default_s0(10**6, 3) == 1000
    assert default_s0(2000, 3) == 66
    assert default_s0(5, 3) == 1


# ------------------------------------------------------------------------------------------------
# OLS randomizer
# ------------------------------------------------------------------------------------------------
def _ols(eps: float = 1.0, delta: float = 0.01) -> OLSRandomizer:
    return OLSRandomizer(ols_calibration("strict", eps, delta), 1.0, (-1.0, 1.0))


def test_ols_noise_symmetric_with_calibrated_std(rng: np.random.Generator) -> None:
    """Spec 7.7: W exactly symmetric; entry stds within 2% of s_W (n = 1e5; rel. se 0.22%); xi std =
    s_u.
    """
    ran = _ols()
    n, d = 100_000, 3
    x = np.zeros((n, d))
    msg = ran.privatize(x, np.zeros(n), None, rng)
    W, xi = msg["M"], msg["u"]
    assert np.array_equal(W, np.swapaxes(W, -1, -2))
    assert W[:, 0, 0].std() == pytest.approx(ran.s_W, rel=0.02)
    assert W[:, 0, 2].std() == pytest.approx(ran.s_W, rel=0.02)
    assert xi[:, 1].std() == pytest.approx(ran.s_u, rel=0.02)


def test_ols_message_unbiased(rng: np.random.Generator) -> None:
    """E[M] = x x^T, E[u] = r x; 5-se tolerance with se = s / sqrt(n)."""
    ran = _ols(eps=5.0)
    n = 200_000
    x = np.tile([0.6, -0.8], (n, 1))
    r = np.full(n, 0.7)
    msg = ran.privatize(x, r, None, rng)
    se_W, se_u = ran.s_W / math.sqrt(n), ran.s_u / math.sqrt(n)
    assert np.all(np.abs(msg["M"].mean(0) - np.outer(x[0], x[0])) < 5 * se_W)
    assert np.all(np.abs(msg["u"].mean(0) - 0.7 * x[0]) < 5 * se_u)


def test_ols_clips_contexts_and_rewards(rng: np.random.Generator) -> None:
    """Same noise stream: the payload minus the noise is the clipped statistic (spec 1.5)."""
    ran = _ols()
    x = np.array([[3.0, 4.0]])  # norm 5 -> clipped to unit norm
    r = np.array([7.0])  # clipped to 1
    a = ran.privatize_reference(x, r, None, np.random.default_rng(5))
    b = ran.privatize_reference(np.zeros((1, 2)), np.zeros(1), None, np.random.default_rng(5))
    xc = np.array([0.6, 0.8])
    assert np.allclose(a["M"] - b["M"], np.outer(xc, xc))
    assert np.allclose(a["u"] - b["u"], xc)
    assert ran.n_clipped == 1


def test_ols_fast_path_matches_reference(rng: np.random.Generator) -> None:
    """DESIGN 3: the chunked hot path and the message-level twin have the same law (KS, alpha =
    1e-3).
    """
    ran = _ols()
    x = np.array([[0.6, 0.8]] * 4000)
    r = np.full(4000, 0.5)
    fast = np.stack([ran.privatize(x[:1], r[:1], None, rng)["M"][0] for _ in range(4000)])
    ref = ran.privatize_reference(x, r, None, np.random.default_rng(11))["M"]
    for i, j in [(0, 0), (0, 1), (1, 1)]:
        assert stats.ks_2samp(fast[:, i, j], ref[:, i, j]).pvalue > 1e-3


# ------------------------------------------------------------------------------------------------
# l2-ball mechanism (SGD randomizer)
# ------------------------------------------------------------------------------------------------
def test_sgd_radius_reference_values() -> None:
    """Spec 2.5 examples: R = 2, d = 2: 6.79826 at eps = 1, 12.82709 at the per-arm eps/2 = 0.5."""
    assert SGDRandomizer(1.0, 2.0, IDENTITY, 1.0, (-1, 1)).radius(2) == pytest.approx(
        6.79826, abs=1e-5
    )
    assert SGDRandomizer(0.5, 2.0, IDENTITY, 1.0, (-1, 1)).radius(2) == pytest.approx(
        12.82709, abs=1e-5
    )
    assert SGDRandomizer(1.0, 1.0, IDENTITY, 1.0, (-1, 1)).radius(1) == pytest.approx(
        2.163953, abs=1e-6
    )


def _l2(g: np.ndarray, eps: float, R: float, rng: np.random.Generator) -> np.ndarray:
    lead, d = g.shape[:-1], g.shape[-1]
    r = SGDRandomizer(eps, R, IDENTITY, 1.0, (-1, 1)).radius(d)
    return l2_ball_from_draws(g, unit_vectors(rng, lead, d), rng.random(lead), eps, R, r)


@pytest.mark.parametrize("d", [1, 2, 5, 20])
def test_l2_ball_unbiased(d: int, rng: np.random.Generator) -> None:
    """Spec 7.3: ||x|| = 0.6 R, 2e5 draws, mean within 5 se per coordinate, se = r / sqrt(d n)."""
    n, R, eps = 200_000, 2.0, 1.0
    u = unit_vectors(rng, (), d)
    g = np.broadcast_to(0.6 * R * u, (n, d))
    z = _l2(g, eps, R, rng)
    r = SGDRandomizer(eps, R, IDENTITY, 1.0, (-1, 1)).radius(d)
    se = r / math.sqrt(d * n)
    assert np.all(np.abs(z.mean(0) - 0.6 * R * u) < 5 * se)


@pytest.mark.parametrize("norm_frac, target", [(1.0, 0.731059), (0.5, 0.615529), (0.0, 0.5)])
def test_l2_ball_side_probability(
    norm_frac: float, target: float, rng: np.random.Generator
) -> None:
    """Spec 7.4: P(Z^T x > 0) = [1 + (1/2 + ||x||/(2R))(e^eps - 1)]/(1 + e^eps); binomial 5-se
    bound.
    """
    n, d, R = 200_000, 3, 1.0
    v = np.array([1.0, 0.0, 0.0])
    g = np.broadcast_to(norm_frac * R * v, (n, d))
    z = _l2(g, 1.0, R, rng)
    p_hat = float((z @ v > 0).mean())
    assert abs(p_hat - target) < 5 * math.sqrt(target * (1 - target) / n)


def test_l2_ball_output_norm_and_clipping(rng: np.random.Generator) -> None:
    """Spec 7.2 and 7.6: ||Z|| = r exactly (incl. x = 0, ||x|| = R); x and x R/||x|| give identical
    outputs.
    """
    R, d = 2.0, 4
    ran = SGDRandomizer(1.0, R, IDENTITY, 1.0, (-1, 1))
    g = np.stack([np.zeros(d), R * unit_vectors(rng, (), d), 7.0 * unit_vectors(rng, (), d)])
    out = _l2(g, 1.0, R, np.random.default_rng(3))
    assert np.allclose(np.linalg.norm(out, axis=-1), ran.radius(d), rtol=1e-9)
    big = 5.0 * R * unit_vectors(rng, (50,), d)
    clipped = big * (R / np.linalg.norm(big, axis=-1, keepdims=True))
    assert np.array_equal(
        _l2(big, 1.0, R, np.random.default_rng(9)), _l2(clipped, 1.0, R, np.random.default_rng(9))
    )


def test_l2_ball_at_zero_is_rotation_invariant(rng: np.random.Generator) -> None:
    """Spec 7.5: Psi(0) has mean ~ 0 (5 se, se = r / sqrt(d n)) and P(Z^T v > 0) ~ 1/2 for any v."""
    n, d = 100_000, 3
    z = _l2(np.zeros((n, d)), 1.0, 1.0, rng)
    r = float(np.linalg.norm(z[0]))
    assert np.all(np.abs(z.mean(0)) < 5 * r / math.sqrt(d * n))
    for v in (np.array([1.0, 0, 0]), unit_vectors(rng, (), d)):
        assert abs(float((z @ v > 0).mean()) - 0.5) < 5 * 0.5 / math.sqrt(n)


@pytest.mark.parametrize("d", [2, 5])
def test_l2_ball_fast_path_matches_reference(d: int, rng: np.random.Generator) -> None:
    """DESIGN 3: the single-Bernoulli fast path vs mechanisms.l2_ball_mechanism (KS on Z^T g / r,
    alpha = 1e-3).
    """
    ran = SGDRandomizer(1.0, 2.0, IDENTITY, 1.0, (-1, 1))
    n = 20_000
    x = np.broadcast_to(unit_vectors(rng, (), d), (n, d))
    r = np.full(n, -0.4)
    theta = np.zeros((n, d))
    fast = np.stack([ran.privatize(x[:1], r[:1], theta[:1], rng)["z"][0] for _ in range(n)])
    ref = ran.privatize_reference(x, r, theta, np.random.default_rng(17))["z"]
    g = ran.gradient(x[:1], r[:1], theta[:1])[0]
    u = g / np.linalg.norm(g)
    assert stats.ks_2samp(fast @ u, ref @ u).pvalue > 1e-3
    assert stats.ks_2samp(fast[:, -1], ref[:, -1]).pvalue > 1e-3


def test_sgd_randomizer_unbiased_for_clipped_gradient(rng: np.random.Generator) -> None:
    """E[Z] = clip_R((mu(x^T theta) - r) x) for a logistic link (eq. 3.5); 5-se bound per
    coordinate.
    """
    n, R = 200_000, 1.0
    ran = SGDRandomizer(2.0, R, LOGISTIC, 1.0, (0.0, 1.0))
    x = np.broadcast_to([0.6, 0.8], (n, 2))
    theta = np.broadcast_to([1.0, 0.5], (n, 2))
    r = np.zeros(n)
    z = ran.privatize(x, r, theta, rng)["z"]
    g = (1.0 / (1.0 + math.exp(-(0.6 + 0.4)))) * np.array([0.6, 0.8])
    assert np.all(np.abs(z.mean(0) - g) < 5 * ran.radius(2) / math.sqrt(2 * n))


def test_joint_randomizer_radius_and_shrink(rng: np.random.Generator) -> None:
    """Spec 2.6: joint dK mechanism unbiased with r_{eps,dK}; the code's r_{eps,d} shrinks the mean
    by 0.533.
    """
    n, K, d, R = 100_000, 3, 2, 1.0
    x = np.zeros((n, K, d))
    x[:, 1] = [0.6, 0.8]
    r = np.zeros((n, K))
    r[:, 1] = 0.5
    theta = np.zeros((n, K, d))
    target = np.zeros((K, d))
    target[1] = -0.5 * np.array([0.6, 0.8])
    unbiased = JointSGDRandomizer(1.0, R, IDENTITY, 1.0, (-1, 1), "dK")
    z = unbiased.privatize(x, r, theta, rng)["z"]
    assert np.allclose(np.linalg.norm(z.reshape(n, -1), axis=-1), unbiased.radius(K * d))
    se = unbiased.radius(K * d) / math.sqrt(K * d * n)
    assert np.all(np.abs(z.mean(0) - target) < 5 * se)
    code = JointSGDRandomizer(1.0, R, IDENTITY, 1.0, (-1, 1), "d")
    assert code.shrink(d, K) == pytest.approx(0.5333, abs=1e-4)
    zc = code.privatize(x, r, theta, rng)["z"]
    assert np.all(np.abs(zc.mean(0) - 0.5333 * target) < 5 * 0.5333 * se)


# ------------------------------------------------------------------------------------------------
# chunked draws
# ------------------------------------------------------------------------------------------------
def test_chunked_draws_reproducible_and_switch_streams() -> None:
    cd = ChunkedDraws(lambda rng, p: (rng.random(p),), 1)
    a = [cd.take(np.random.default_rng(1), (3,))[0] for _ in range(1)]
    g1, g2 = np.random.default_rng(1), np.random.default_rng(1)
    s1 = [cd.take(g1, (3,))[0].copy() for _ in range(5)]
    cd2 = ChunkedDraws(lambda rng, p: (rng.random(p),), 1)
    s2 = [cd2.take(g2, (3,))[0].copy() for _ in range(5)]
    assert all(np.array_equal(u, v) for u, v in zip(s1, s2))
    assert not np.array_equal(s1[0], s1[1])
    assert np.array_equal(a[0], s1[0])  # a fresh generator restarts the buffer


# ------------------------------------------------------------------------------------------------
# estimators (hypothesis property tests for the math)
# ------------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(d=st.integers(1, 5), seed=st.integers(0, 2**31 - 1), shift=st.floats(0.01, 50.0))
def test_solve_shifted_matches_linalg(d: int, seed: int, shift: float) -> None:
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((4, d, d))
    S = B @ np.swapaxes(B, -1, -2)
    y = rng.standard_normal((4, d))
    want = np.linalg.solve(S + shift * np.eye(d), y[..., None])[..., 0]
    assert np.allclose(solve_shifted(S, y, shift), want, rtol=1e-8, atol=1e-10)


def test_solve_shifted_singular_falls_back_to_lstsq() -> None:
    S = np.zeros((2, 2, 2))
    y = np.ones((2, 2))
    assert np.allclose(solve_shifted(S, y, 0.0), 0.0)
    S3 = np.zeros((1, 3, 3))
    S3[0, 0, 0] = 2.0
    assert np.allclose(solve_shifted(S3, np.ones((1, 3)), 0.0), [[0.5, 0.0, 0.0]])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), bound=st.floats(0.1, 10.0))
def test_clip_norm_properties(seed: int, bound: float) -> None:
    x = np.random.default_rng(seed).standard_normal((6, 3)) * 5
    y, k = clip_norm(x, bound)
    n = np.linalg.norm(y, axis=-1)
    assert np.all(n <= bound * (1 + 1e-12))
    assert k == int((np.linalg.norm(x, axis=-1) > bound).sum())
    assert np.allclose(y / n[:, None], x / np.linalg.norm(x, axis=-1, keepdims=True))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), eps=st.floats(0.05, 20.0), d=st.integers(1, 8))
def test_l2_ball_norm_property(seed: int, eps: float, d: int) -> None:
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((5, d)) * rng.random((5, 1)) * 3
    z = _l2(g, eps, 1.5, rng)
    r = SGDRandomizer(eps, 1.5, IDENTITY, 1.0, (-1, 1)).radius(d)
    assert np.allclose(np.linalg.norm(z, axis=-1), r, rtol=1e-9)


def test_ols_estimator_and_sgd_estimator_updates() -> None:
    est = OLSEstimator((2,), 2)
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    M, u = ols_statistics(x, np.array([2.0, -1.0]))
    est.add(M, u)
    assert np.allclose(est.solve(1.0), [[1.0, 0.0], [0.0, -0.5]])
    sgd = SGDEstimator(np.ones((2, 2)), ridge=0.5, project_radius=1.0)
    sgd.step(np.zeros((2, 2)), 0.4)
    assert np.allclose(
        sgd.theta, 1.0 / math.sqrt(2)
    )  # (1 - 0.4 * 0.5) (1, 1) = (0.8, 0.8), projected to norm 1
    sgd2 = SGDEstimator(np.ones((2, 2)), ridge=0.5)
    sgd2.step(np.ones((2, 2)), 0.4)
    assert np.allclose(sgd2.theta, 0.8 * 0.6)  # theta - eta Z = 0.6, then (1 - eta lambda) = 0.8
    assert np.allclose(
        glm_gradient(x, np.array([1.0, 1.0]), np.array([[2.0, 0.0], [0.0, 0.0]]), IDENTITY),
        [[1.0, 0.0], [0.0, -1.0]],
    )
    assert step_size(4.0, 5.0, 1.0, "inv_t") == pytest.approx(1.0)
    assert step_size(np.array([3.0]), 2.0, 1.0, "inv_sqrt_t", m=3)[0] == pytest.approx(3.0)
