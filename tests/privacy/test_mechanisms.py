"""Mechanisms: calibration against independent references, sampler statistics, validation.

Statistical thresholds: with n i.i.d. draws, a sample mean has standard error se = sd / sqrt(n)
and a sample variance s^2 has se = sqrt((mu_4 - sigma^4) / n) (mu_4 = 3 sigma^4 for a Gaussian,
24 b^4 for Laplace(b), whose variance is 2 b^2).  Every check is |estimate - target| < 5 se (a
false alarm probability below 1e-6 per check for a fixed seed); seeds are fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.core.errors import DataBoundError, ValidationError
from privbandits.privacy.accounting import ApproxDP, PureDP
from privbandits.privacy.calibration import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_sigma,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    l2_ball_epsilon,
    l2_ball_radius,
    l2_ball_side_probability,
    laplace_epsilon,
    laplace_scale,
)
from privbandits.privacy.mechanisms import (
    GaussianMechanism,
    L2BallMechanism,
    LaplaceMechanism,
    SymmetricGaussianMechanism,
)
from privbandits.privacy.noise import l2_ball_mechanism, sample_symmetric_gaussian
from privbandits.privacy.sensitivity import (
    laplace_sum_deviation,
    outer_product_l1_sensitivity,
    outer_product_sensitivity,
)

N = 200_000


def within(est: float, target: float, se: float, k: float = 5.0) -> bool:
    return abs(est - target) < k * se


# --------------------------------------------------------------------------------------------
# calibration: published reference numbers
# --------------------------------------------------------------------------------------------
# Han et al. spec §2.4 table (C_B = c_r = 1): paper sigma_priv = 2 sqrt(2 ln(1.25/delta))/eps,
# strict sigma' = classic sigma at (eps/2, delta/2), authors' code sigma = 3 sigma'.
HAN_TABLE = [
    ((1.0, 0.01), 6.21502, 6.64618, 19.93854),
    ((5.0, 0.01), 1.24300, 1.32924, 3.98771),
    ((1.0, 0.1), 4.49509, 5.07454, 15.22363),
    ((5.0, 0.1), 0.89902, 1.01491, 3.04473),
    ((0.5, 0.01), 12.43005, 13.29236, 39.87707),
]


@pytest.mark.parametrize("params, paper, strict, code", HAN_TABLE)
def test_han_ols_multipliers(params, paper, strict, code):
    eps, delta = params
    assert gaussian_sigma_classic(eps, delta, 2.0) == pytest.approx(paper, abs=1e-5)
    s = gaussian_sigma_classic(eps / 2, delta / 2)
    assert s == pytest.approx(strict, abs=1e-5)
    assert 3 * s == pytest.approx(code, abs=1e-5)


def test_han_strict_ols_noise_stds_through_the_mechanism_objects():
    # s_W = 2 C_B^2 sigma' and s_u = 2 c_r C_B sigma' = 13.292 at (eps, delta) = (1, 0.01)
    W = SymmetricGaussianMechanism.for_outer_product(1.0, 0.5, 0.005, d=3)
    u = GaussianMechanism(sensitivity=2.0, epsilon=0.5, delta=0.005)
    assert W.sigma == pytest.approx(13.29236, abs=1e-5)
    assert u.sigma == pytest.approx(13.29236, abs=1e-5)
    # the tight Frobenius sensitivity sqrt(2) C_B^2 would need only sqrt(2) sigma' = 9.399
    assert SymmetricGaussianMechanism.for_outer_product(
        1.0, 0.5, 0.005, 3, tight=True
    ).sigma == pytest.approx(9.399, abs=1e-3)


def test_zheng_reference_sigmas():
    # Zheng spec §7 items 1-2: gaussian_sigma with sensitivity 2
    assert gaussian_sigma(1.0, 0.1, 2.0) == pytest.approx(4.495089, abs=1e-6)
    assert gaussian_sigma(1.0, 1e-5, 2.0) == pytest.approx(9.689611, abs=1e-6)
    assert 6 * math.sqrt(2 * math.log(12.5)) == pytest.approx(13.485268, abs=1e-6)


def test_outer_product_sensitivities_are_attained():
    rng = np.random.default_rng(3)
    # tight L2 bound sqrt(2) B^2 is attained by orthogonal x, x' of norm B and never exceeded
    iu = np.triu_indices(4)
    x, y = np.array([2.0, 0, 0, 0]), np.array([0, 2.0, 0, 0])
    diff = (np.outer(x, x) - np.outer(y, y))[iu]
    assert np.linalg.norm(diff) == pytest.approx(outer_product_sensitivity(2.0, tight=True))
    X = rng.normal(size=(5000, 2, 4))
    X *= (2.0 * rng.random((5000, 2, 1)) ** 0.25) / np.linalg.norm(X, axis=-1, keepdims=True)
    D = np.einsum("ni,nj->nij", X[:, 0], X[:, 0]) - np.einsum("ni,nj->nij", X[:, 1], X[:, 1])
    assert (
        np.linalg.norm(D[:, iu[0], iu[1]], axis=-1).max()
        <= outer_product_sensitivity(2.0, tight=True) + 1e-12
    )
    assert outer_product_sensitivity(2.0) == 8.0
    # L1 (Zheng spec §3.3): sum_{i<=j} |x_i x_j| <= (d + 1)/2 for unit x, Delta_1 = d + 1
    U = X[:, 0] / np.linalg.norm(X[:, 0], axis=-1, keepdims=True)
    l1 = np.abs(np.einsum("ni,nj->nij", U, U)[:, iu[0], iu[1]]).sum(-1)
    assert 2 * l1.max() <= outer_product_l1_sensitivity(4) + 1e-12
    ones = np.full(4, 0.5)  # ||x||_1^2 = d: the bound is attained
    assert 2 * np.abs(np.outer(ones, ones)[iu]).sum() == pytest.approx(
        outer_product_l1_sensitivity(4)
    )


# l2-ball radii, Han spec §2.5 (R = 1), 5 significant digits
RADII = {
    0.5: [4.0830, 6.4135, 8.1660, 10.888, 15.783, 22.601, 51.045, 161.78],
    1.0: [2.1640, 3.3991, 4.3279, 5.7705, 8.3650, 11.978, 27.053, 85.743],
    2.0: [1.3130, 2.0625, 2.6261, 3.5014, 5.0757, 7.2682, 16.415, 52.027],
    5.0: [1.0136, 1.5921, 2.0271, 2.7028, 3.9181, 5.6105, 12.671, 40.161],
}
DIMS = [1, 2, 3, 5, 10, 20, 100, 1000]


@pytest.mark.parametrize("eps", sorted(RADII))
def test_l2_ball_radius_table(eps):
    for d, ref in zip(DIMS, RADII[eps]):
        assert l2_ball_radius(eps, d, 1.0) == pytest.approx(ref, rel=1e-4)


def test_l2_ball_radius_exact_values_and_scaling():
    assert l2_ball_radius(1.0, 1) == pytest.approx(2.163953, abs=1e-6)  # (e+1)/(e-1)
    assert l2_ball_radius(1.0, 2) == pytest.approx(3.399130, abs=1e-6)  # (e+1)/(e-1) pi/2
    assert l2_ball_radius(1.0, 2, 2.0) == pytest.approx(6.79826, abs=1e-5)
    assert l2_ball_radius(0.5, 2, 2.0) == pytest.approx(12.82709, abs=1e-5)
    r = l2_ball_radius(1.0, 10_000)
    assert math.isfinite(r) and r == pytest.approx(
        2.163953 * math.sqrt(math.pi * 10_000 / 2), rel=1e-4
    )
    assert l2_ball_radius(1.3, 7, 3.5) == pytest.approx(
        3.5 * l2_ball_radius(1.3, 7, 1.0), rel=1e-14
    )


def test_l2_ball_side_probability_closed_form():
    assert l2_ball_side_probability(1.0, 1.0, 1.0) == pytest.approx(0.731059, abs=1e-6)
    assert l2_ball_side_probability(0.5, 1.0, 1.0) == pytest.approx(0.615529, abs=1e-6)
    assert l2_ball_side_probability(0.0, 1.0, 1.0) == 0.5


# --------------------------------------------------------------------------------------------
# calibration: independent libraries
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sigma, sens", [(0.5, 1.0), (2.0, 1.0), (3.0, 2.0), (10.0, 1.0)])
def test_gaussian_delta_matches_dp_accounting(sigma, sens):
    from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

    pl = GaussianPrivacyLoss(sigma, sensitivity=sens)
    for eps in [0.0, 0.1, 0.5, 1.0, 3.0, 8.0]:
        assert gaussian_delta(eps, sigma, sens) == pytest.approx(
            pl.get_delta_for_epsilon(eps), rel=1e-9, abs=1e-15
        )


@pytest.mark.parametrize(
    "eps, delta", [(0.5, 1e-5), (1.0, 1e-6), (5.0, 0.1), (10.0, 1e-10), (0.05, 0.01)]
)
def test_analytic_sigma_matches_dp_accounting(eps, delta):
    from dp_accounting.pld.common import DifferentialPrivacyParameters
    from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

    ref = GaussianPrivacyLoss.from_privacy_guarantee(
        DifferentialPrivacyParameters(eps, delta), sensitivity=2.0
    )
    sig = gaussian_sigma_analytic(eps, delta, 2.0)
    assert sig == pytest.approx(ref.standard_deviation, rel=1e-6)
    assert gaussian_delta(eps, sig, 2.0) <= delta  # never optimistic


def test_gaussian_epsilon_matches_prv_accountant():
    """k-fold composition of N(0, s^2) is one Gaussian with s / sqrt(k); PRV gives an interval."""
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

    prv = PoissonSubsampledGaussianMechanism(noise_multiplier=1.0, sampling_probability=1.0)
    acc = PRVAccountant(prvs=prv, max_self_compositions=10, eps_error=1e-3, delta_error=1e-10)
    lo, est, hi = acc.compute_epsilon(delta=1e-5, num_self_compositions=10)
    ours = gaussian_epsilon(1.0 / math.sqrt(10), 1e-5)
    assert lo <= ours <= hi
    assert ours == pytest.approx(est, abs=1e-3)


# --------------------------------------------------------------------------------------------
# calibration: properties
# --------------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.floats(0.01, 20.0), st.floats(1e-10, 0.3), st.sampled_from(["classic", "analytic"]))
def test_sigma_is_decreasing_in_epsilon_and_delta(eps, delta, cal):
    s = gaussian_sigma(eps, delta, 1.0, cal)
    assert gaussian_sigma(eps * 1.05, delta, 1.0, cal) < s
    assert gaussian_sigma(eps, delta * 1.5, 1.0, cal) < s
    assert gaussian_sigma(eps, delta, 3.0, cal) == pytest.approx(3 * s, rel=1e-10)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.01, 30.0), st.floats(1e-10, 0.3))
def test_analytic_calibration_round_trips_and_beats_classic_below_one(eps, delta):
    sig = gaussian_sigma_analytic(eps, delta)
    assert gaussian_epsilon(sig, delta) == pytest.approx(eps, rel=1e-8)
    if eps < 1:
        # classic is valid (hence at least as noisy as the exact minimum) for eps < 1
        assert gaussian_sigma_classic(eps, delta) >= sig
        assert gaussian_epsilon(gaussian_sigma_classic(eps, delta), delta) <= eps


@given(st.floats(0.01, 12.0), st.integers(1, 5000), st.floats(0.01, 100.0))
def test_l2_ball_epsilon_inverts_radius(eps, d, bound):
    # (the inverse is ill-conditioned for large eps, where coth(eps/2) = 1 + 2 e^{-eps} + ...)
    assert l2_ball_epsilon(l2_ball_radius(eps, d, bound), d, bound) == pytest.approx(eps, rel=1e-9)
    assert L2BallMechanism(eps, d, bound).guarantee.epsilon == pytest.approx(eps, rel=1e-9)


@given(st.floats(0.01, 30.0), st.floats(0.01, 100.0))
def test_laplace_epsilon_inverts_scale(eps, sens):
    assert laplace_epsilon(laplace_scale(eps, sens), sens) == pytest.approx(eps, rel=1e-12)


# --------------------------------------------------------------------------------------------
# mechanism objects: statements, broken variants
# --------------------------------------------------------------------------------------------
def test_gaussian_guarantee_is_computed_from_the_noise():
    m = GaussianMechanism(1.0, 0.5, 1e-5)
    # classic is conservative below 1: the exact epsilon of its noise is below the request
    assert m.guarantee.epsilon < 0.5 and m.guarantee.delta == 1e-5
    assert m.guarantee.epsilon == pytest.approx(gaussian_epsilon(m.sigma, 1e-5))
    assert m.warning is None
    a = GaussianMechanism(1.0, 6.0, 0.1, "analytic")
    assert a.guarantee == ApproxDP(6.0, 0.1) and a.warning is None


def test_classic_at_large_epsilon_warns_and_reports_the_true_epsilon():
    ok = GaussianMechanism(1.0, 5.0, 0.01)
    assert "outside" in ok.warning and "still meets" in ok.warning
    assert ok.guarantee.epsilon <= 5.0
    bad = GaussianMechanism(
        1.0, 6.0, 0.1
    )  # Zheng spec §3.2: classic fails near eps ~ 5.75, delta 0.1
    assert bad.guarantee.epsilon == pytest.approx(6.1817, abs=1e-4)
    assert "EXCEEDS" in bad.warning and "EXCEEDS" in bad.notes
    assert "EXCEEDS" in bad.privacy_guarantee("local").notes


@pytest.mark.parametrize(
    "mech",
    [
        GaussianMechanism(1.0, 1.0, 1e-5, "analytic"),
        SymmetricGaussianMechanism(2.0, 1.0, 1e-5, d=3),
        LaplaceMechanism(2.0, 1.0),
        L2BallMechanism(1.0, d=3, bound=2.0),
    ],
)
def test_under_noised_keeps_the_claim_but_not_the_truth(mech):
    broken = mech.under_noised(0.5)
    assert broken.guarantee == mech.guarantee
    assert broken.actual_guarantee.epsilon > 1.5 * mech.guarantee.epsilon
    assert mech.actual_guarantee == mech.guarantee
    assert broken.scale == pytest.approx(0.5 * mech.scale)
    assert "BROKEN" in broken.notes and "BROKEN" not in mech.notes
    assert broken.privacy_guarantee().epsilon == mech.privacy_guarantee().epsilon
    x, y = mech.neighbouring_pair(3)
    assert x.shape == y.shape and not np.array_equal(x, y)


def test_mechanism_statement_types_and_noise_multipliers():
    assert isinstance(LaplaceMechanism(2.0, 0.5).guarantee, PureDP)
    assert (
        LaplaceMechanism(2.0, 0.5).scale == 4.0
        and LaplaceMechanism(2.0, 0.5).noise_multiplier == 2.0
    )
    assert LaplaceMechanism.for_range(-1.0, 1.0, 1.0).sensitivity == 2.0  # Hanna spec §2.5
    g = GaussianMechanism(2.0, 1.0, 1e-5)
    assert g.noise_multiplier == pytest.approx(g.sigma / 2.0)
    b = L2BallMechanism(1.0, d=2, bound=2.0)
    assert isinstance(b.guarantee, PureDP) and b.guarantee.epsilon == pytest.approx(1.0, rel=1e-12)
    assert b.noise_multiplier == pytest.approx(1 / math.tanh(0.5))
    assert b.under_noised(0.5).radius == pytest.approx(l2_ball_radius(2.0, 2, 2.0))


# --------------------------------------------------------------------------------------------
# samplers: statistics
# --------------------------------------------------------------------------------------------
def test_gaussian_sampler_is_unbiased_with_the_stated_variance():
    m = GaussianMechanism(2.0, 0.8, 1e-5, "analytic")
    rng = np.random.default_rng(11)
    value = np.array([1.5, -2.0, 0.0])
    z = m.sample(np.broadcast_to(value, (N, 3)), rng)
    s = m.sigma
    assert z.shape == (N, 3)
    for j in range(3):
        assert within(z[:, j].mean(), value[j], s / math.sqrt(N))
        assert within(z[:, j].var(ddof=1), s**2, s**2 * math.sqrt(2 / N))
    batched = m.sample(np.zeros((4, 5, 3)), rng)  # leading axes are batch axes
    assert batched.shape == (4, 5, 3)
    assert isinstance(m.sample(0.5, rng), float)


def test_symmetric_noise_is_exactly_symmetric_with_stated_entry_variance():
    m = SymmetricGaussianMechanism(1.0, 0.5, 1e-5, d=4, calibration="analytic")
    rng = np.random.default_rng(12)
    M = np.diag([1.0, 2.0, 3.0, 4.0]) + 0.5
    Z = m.sample(np.broadcast_to(M, (N // 4, 4, 4)), rng)
    assert np.array_equal(Z, np.swapaxes(Z, -1, -2))
    W = Z - M
    n = W.shape[0]
    s = m.sigma
    for i, j in [(0, 0), (3, 3), (0, 1), (1, 3)]:  # diagonal and off-diagonal entries
        assert within(W[:, i, j].mean(), 0.0, s / math.sqrt(n))
        assert within(W[:, i, j].var(ddof=1), s**2, s**2 * math.sqrt(2 / n))
    # entries on and above the diagonal are independent: correlation ~ N(0, 1/n)
    for (a, b), (c, e) in [((0, 1), (0, 2)), ((0, 0), (0, 1)), ((1, 1), (2, 2))]:
        r = np.corrcoef(W[:, a, b], W[:, c, e])[0, 1]
        assert abs(r) < 5 / math.sqrt(n)
    assert sample_symmetric_gaussian(rng, (2, 3), 5, 1.0).shape == (2, 3, 5, 5)


def test_laplace_sampler_is_unbiased_with_the_stated_variance():
    m = LaplaceMechanism(2.0, 0.5)  # b = 4, variance 2 b^2 = 32
    rng = np.random.default_rng(13)
    z = m.sample(np.full(N, 0.25), rng)
    b = m.scale
    assert within(z.mean(), 0.25, math.sqrt(2) * b / math.sqrt(N))
    assert within(z.var(ddof=1), 2 * b**2, b**2 * math.sqrt(20 / N))  # mu_4 - sigma^4 = 20 b^4
    assert m.std == pytest.approx(math.sqrt(2) * 4)
    assert isinstance(m.sample(1.0, rng), float)


@pytest.mark.parametrize("d", [1, 2, 5, 20])
def test_l2_ball_is_unbiased(d):
    """Han spec §7.3: ||x|| = 0.6 R, 2e5 draws, mean within 5 standard errors per coordinate."""
    rng = np.random.default_rng(100 + d)
    R, eps = 2.0, 1.0
    x = rng.normal(size=d)
    x *= 0.6 * R / np.linalg.norm(x)
    z = L2BallMechanism(eps, d, R).sample(np.broadcast_to(x, (N, d)), rng)
    se = z.std(axis=0, ddof=1) / math.sqrt(N)
    assert np.all(np.abs(z.mean(axis=0) - x) < 5 * se)


@pytest.mark.parametrize("scale", [0.0, 0.3, 1.0, 3.0])
def test_l2_ball_output_norm_is_exactly_the_radius(scale):
    rng = np.random.default_rng(21)
    m = L2BallMechanism(0.7, d=6, bound=1.5)
    X = rng.normal(size=(1000, 6))
    X *= scale * 1.5 / np.linalg.norm(X, axis=-1, keepdims=True)  # 0, inside, at and above R
    Z = m.sample(X, rng)
    np.testing.assert_allclose(np.linalg.norm(Z, axis=-1), m.radius, rtol=1e-9)


@pytest.mark.parametrize("norm, target", [(1.0, 0.731059), (0.5, 0.615529), (0.0, 0.5)])
def test_l2_ball_side_probability_empirical(norm, target):
    rng = np.random.default_rng(31)
    x = np.array([0.6, -0.8, 0.0]) * norm
    z, _ = l2_ball_mechanism(np.broadcast_to(x, (N, 3)), 1.0, 1.0, rng)
    v = x if norm > 0 else np.array([0.0, 0.0, 1.0])  # any fixed direction for x = 0
    p = float(np.mean(z @ v > 0))
    assert within(p, target, math.sqrt(target * (1 - target) / N))


def test_l2_ball_zero_input_is_rotation_invariant():
    rng = np.random.default_rng(32)
    z = L2BallMechanism(2.0, 4, 1.0).sample(np.zeros((N, 4)), rng)
    r = l2_ball_radius(2.0, 4)
    assert np.all(np.abs(z.mean(axis=0)) < 5 * (r / 2) / math.sqrt(N))  # Var(z_i) = r^2 / d
    for v in (np.eye(4)[1], np.ones(4) / 2):
        assert within(float(np.mean(z @ v > 0)), 0.5, 0.5 / math.sqrt(N))


def test_l2_ball_clipping_is_the_projection_and_counted():
    x = np.array([3.0, 4.0])  # norm 5 > R = 2
    z1, n1 = l2_ball_mechanism(x[None], 1.0, 2.0, np.random.default_rng(5))
    z2, n2 = l2_ball_mechanism((x * 2 / 5)[None], 1.0, 2.0, np.random.default_rng(5))
    assert np.array_equal(z1, z2) and (n1, n2) == (1, 0)
    with pytest.raises(DataBoundError, match="bound"):
        L2BallMechanism(1.0, 2, 2.0, out_of_bound="raise").sample(x, np.random.default_rng(5))


def test_l2_ball_under_noised_has_the_larger_side_probability():
    rng = np.random.default_rng(41)
    broken = L2BallMechanism(1.0, 3, 1.0).under_noised(0.5)
    x = np.array([1.0, 0.0, 0.0])
    p = float(np.mean(broken.sample(np.broadcast_to(x, (N, 3)), rng)[:, 0] > 0))
    target = l2_ball_side_probability(1.0, 2.0)  # runs at 2 eps
    assert target == broken.side_probability(1.0)
    assert within(p, target, math.sqrt(target * (1 - target) / N))


def test_laplace_sum_deviation_bound_holds():
    # exact single-Laplace tail at the threshold: 0.5 exp(-t/s); spec §3.10 quotes 7.6e-7 at ell=5
    t = laplace_sum_deviation(1.0, 1.0, 1.0, 5.0)
    assert 0.5 * math.exp(-t) == pytest.approx(7.6e-7, rel=0.02)
    # Monte Carlo for a weighted sum of 50 Laplace(2) draws, ell = 3
    rng = np.random.default_rng(51)
    ell_coef = rng.uniform(-1, 1, size=50)
    x = rng.laplace(0.0, 2.0, size=(N, 50)) @ ell_coef
    thr = laplace_sum_deviation(2.0, float(ell_coef @ ell_coef), float(np.abs(ell_coef).max()), 3.0)
    assert np.mean(x >= thr) < math.exp(-3.0)
    with pytest.raises(ValidationError, match="sum_sq"):
        laplace_sum_deviation(1.0, 1.0, 2.0, 1.0)


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: GaussianMechanism(1.0, 0.0, 1e-5), "epsilon"),
        (lambda: GaussianMechanism(1.0, float("nan"), 1e-5), "epsilon"),
        (lambda: GaussianMechanism(1.0, math.inf, 1e-5), "epsilon"),
        (lambda: GaussianMechanism(1.0, 1.0, 0.0), "delta"),
        (lambda: GaussianMechanism(1.0, 1.0, 1.0), "delta"),
        (lambda: GaussianMechanism(0.0, 1.0, 1e-5), "sensitivity"),
        (lambda: GaussianMechanism(-1.0, 1.0, 1e-5), "sensitivity"),
        (lambda: GaussianMechanism(1.0, 1.0, 1e-5, "optimal"), "calibration"),
        (lambda: GaussianMechanism(1.0, 1.0, 1e-5, noise_factor=0.0), "noise_factor"),
        (lambda: SymmetricGaussianMechanism(1.0, 1.0, 1e-5, d=0), "d"),
        (lambda: SymmetricGaussianMechanism(1.0, 1.0, 1e-5, d=2.5), "d"),
        (lambda: LaplaceMechanism(1.0, -1.0), "epsilon"),
        (lambda: LaplaceMechanism(float("inf"), 1.0), "sensitivity"),
        (lambda: LaplaceMechanism.for_range(1.0, 1.0, 1.0), "upper"),
        (lambda: L2BallMechanism(1.0, d=0), "d"),
        (lambda: L2BallMechanism(1.0, d=2, bound=0.0), "bound"),
        (lambda: L2BallMechanism(1.0, d=2, out_of_bound="ignore"), "out_of_bound"),
        (lambda: l2_ball_radius(1.0, 0), "d"),
        (lambda: l2_ball_epsilon(1.0, 2, 1.0), "radius"),  # below the minimum unbiased radius
        (lambda: gaussian_sigma(1.0, 1e-5, 1.0, "foo"), "calibration"),
        (lambda: gaussian_epsilon(1.0, 2.0), "delta"),
    ],
)
def test_invalid_parameters_raise_clear_errors(make, name):
    with pytest.raises(ValidationError, match=name):
        make()


def test_invalid_values_and_shapes_raise_clear_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(ValidationError, match="NaN"):
        GaussianMechanism(1.0, 1.0, 1e-5).sample(np.array([1.0, np.nan]), rng)
    with pytest.raises(ValidationError, match=r"\(\.\.\., 3, 3\)"):
        SymmetricGaussianMechanism(1.0, 1.0, 1e-5, d=3).sample(np.eye(2), rng)
    with pytest.raises(ValidationError, match="symmetric"):
        SymmetricGaussianMechanism(1.0, 1.0, 1e-5, d=2).sample(
            np.array([[0.0, 1.0], [0.0, 0.0]]), rng
        )
    with pytest.raises(ValidationError, match=r"\(\.\.\., 3\)"):
        L2BallMechanism(1.0, d=3).sample(np.zeros((5, 2)), rng)
    with pytest.raises(ValidationError, match="finite|NaN"):
        l2_ball_mechanism(np.array([np.inf, 0.0]), 1.0, 1.0, rng)
    with pytest.raises(ValidationError, match="scalar"):
        l2_ball_mechanism(1.0, 1.0, 1.0, rng)
