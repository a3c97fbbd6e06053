"""Re-weighted regression (Chen et al. 2025, Algorithms 2, 7, 8): spec section 9, items 1, 12-18."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.core.errors import DataBoundError, PrivacyError, ValidationError
from privbandits.regression import ReweightedRegression
from privbandits.regression.links import link_constants
from privbandits.regression.matrices import proj_ellipsoid
from privbandits.regression.normalization import learn_normalization, population_sigma
from privbandits.regression.releases import Ledger, Release, noise_multiplier
from privbandits.regression.reweighted import (
    GRADIENT_SENSITIVITY,
    gradient_release,
    reweighted_gd,
    reweighted_gradient,
)

from .helpers import covariates, rademacher, random_spd, unit


def _data(
    n: int, d: int, c: float, seed: int, link: str = "identity"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    theta = unit(d, rng)
    X = covariates(n, d, c, rng)
    f = link_constants(link).nu(X @ theta)
    return X, rademacher(f, rng), theta


# ---------------------------------------------------------------------------------------------
# calibration and accounting
# ---------------------------------------------------------------------------------------------
def test_classic_sigma_is_the_paper_formula() -> None:
    """Item 1."""
    assert noise_multiplier(0.5, 1e-5, "classic") == pytest.approx(
        math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-14
    )
    with pytest.raises(ValidationError, match="epsilon must lie in \\(0, 1\\)"):
        noise_multiplier(1.0, 1e-5, "classic")
    assert noise_multiplier(math.inf, 1e-5) == 0.0


@pytest.mark.parametrize("epsilon, mode", [(0.5, "jdp"), (2.0, "jdp"), (1.0, "ldp")])
def test_guarantee_is_the_exact_epsilon_of_the_noise_added(epsilon: float, mode: str) -> None:
    """The reported epsilon is recomputed from each release's (sensitivity, std) and agrees with the
    independent privacy-loss distribution of dp-accounting for that Gaussian."""
    from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

    X, y, _ = _data(5000, 3, 2.0, 0)
    est = ReweightedRegression(epsilon, 1e-6, mode=mode)
    e = est.fit(X, y, 1)
    assert e.guarantee.model == ("central" if mode == "jdp" else "local")
    assert e.guarantee.epsilon == pytest.approx(
        epsilon, rel=1e-6
    ) and e.guarantee.epsilon <= epsilon * (1 + 1e-9)
    assert e.guarantee.delta == 1e-6
    for r in e.ledger.releases:
        pl = GaussianPrivacyLoss(r.std, sensitivity=r.sensitivity)
        assert pl.get_delta_for_epsilon(e.guarantee.epsilon) <= 1e-6 * (1 + 1e-6)
        assert r.per_user == (mode == "ldp")


def test_classic_calibration_is_conservative() -> None:
    X, y, _ = _data(3000, 3, 0.0, 1)
    g = ReweightedRegression(0.5, 1e-5, calibration="classic").fit(X, y, 0).guarantee
    assert (
        g.epsilon < 0.5
    )  # the classic sigma over-noises; the accountant reports the exact epsilon


def test_ledger_every_sample_feeds_at_most_one_release() -> None:
    """Item 13."""
    X, y, _ = _data(10_007, 4, 1.0, 2)
    est = ReweightedRegression(1.0)
    e = est.fit(X, y, 0)
    p = est.plan(10_007)
    used = e.ledger.usage >= 0
    assert used.sum() == est.K * p.N + p.M * p.B
    assert len(e.ledger.releases) == est.K + p.M
    for i, r in enumerate(e.ledger.releases):
        assert np.all(e.ledger.usage[r.indices] == i)
    ledger = Ledger(4)
    ledger.record(Release("a", np.array([0, 1]), 1.0, 1.0))
    with pytest.raises(PrivacyError):
        ledger.record(Release("b", np.array([1, 2]), 1.0, 1.0))


def test_noiseless_twin_and_noise_wiring() -> None:
    """Item 14: epsilon = inf runs the same code without noise (rng-independent, non-private); a tiny
    epsilon makes the estimate noise-dominated."""
    X, y, theta = _data(20_000, 3, 1.0, 3)
    a = ReweightedRegression(math.inf).fit(X, y, 0)
    b = ReweightedRegression(math.inf).fit(X, y, 99)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert not a.guarantee.is_private
    c = ReweightedRegression(1e-4).fit(X, y, 0)
    d = ReweightedRegression(1e-4).fit(X, y, 1)
    # theta stays in the unit ball (projection), so noise shows as seed-to-seed spread of order 1
    assert np.linalg.norm(c.theta - d.theta) > 5 * np.linalg.norm(a.theta - theta)


# ---------------------------------------------------------------------------------------------
# the gradient bound that removes clipping, and sensitivities
# ---------------------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 6),
    st.sampled_from(["identity", "logistic", "probit"]),
)
def test_per_sample_gradient_norm_at_most_two(seed: int, d: int, link: str) -> None:
    """||g_i|| = |nu(<U phi, w>) - y| <= 2 for every w in W_U, every phi in the ball, every |y| <= 1."""
    rng = np.random.default_rng(seed)
    U = random_spd(d, rng, 1e4)
    w = proj_ellipsoid(10 * rng.normal(size=d), U)
    Phi = covariates(50, d, 3.0, rng) * rng.uniform(0, 1, size=(50, 1))
    y = rng.choice([-1.0, 1.0], size=50) * rng.uniform(0.5, 1, size=50)
    g = reweighted_gradient(U, w, Phi, y, link_constants(link))
    assert np.linalg.norm(g, axis=1).max() <= 2.0 + 1e-12


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 5), st.integers(1, 6))
def test_batch_gradient_sensitivity(seed: int, d: int, B: int) -> None:
    """Item 12: ||g(D) - g(D')|| <= 4/B at the same w_m, including extreme responses y = +-1."""
    rng = np.random.default_rng(seed)
    U = random_spd(d, rng, 1e3)
    w = proj_ellipsoid(10 * rng.normal(size=d), U)
    link = link_constants("identity")
    Phi, y = covariates(B, d, 1.0, rng), rng.choice([-1.0, 1.0], size=B)
    Phi2, y2 = Phi.copy(), y.copy()
    Phi2[-1], y2[-1] = unit(d, rng), -y[-1]
    diff = reweighted_gradient(U, w, Phi, y, link).mean(0) - reweighted_gradient(
        U, w, Phi2, y2, link
    ).mean(0)
    assert np.linalg.norm(diff) <= GRADIENT_SENSITIVITY / B + 1e-12


def test_gradient_release_noise_distribution(rng: np.random.Generator) -> None:
    """Released batch gradient = mean gradient + N(0, (4 sigma / B)^2 I): over 20000 releases the mean error
    is within 5 SE and the variance within 5% (relative SE sqrt(2/R) = 1%)."""
    U, d, B, R = random_spd(3, rng, 10.0), 3, 6, 20_000
    w = proj_ellipsoid(rng.normal(size=d), U)
    Phi, y = covariates(B, d, 1.0, rng), rng.choice([-1.0, 1.0], size=B)
    link = link_constants("identity")
    sigma = noise_multiplier(1.0, 1e-5)
    g, sens, std = gradient_release(
        U, w, np.broadcast_to(Phi, (R, B, d)), np.broadcast_to(y, (R, B)), link, sigma, rng
    )
    assert sens == 4.0 / B and std == pytest.approx(sigma * 4.0 / B)
    Z = g - reweighted_gradient(U, w, Phi, y, link).mean(0)
    assert np.all(np.abs(Z.mean(0)) <= 5 * std / math.sqrt(R))
    np.testing.assert_allclose(Z.var(0), std**2, rtol=0.05)


def test_projected_gd_converges_to_the_weighted_minimizer(rng: np.random.Generator) -> None:
    """Without noise and with U normalized for the data (Eq. 2), Algorithm 7 on one repeated batch is a
    contraction with factor 1 - 1/(4 kappa) to the minimizer of the empirical L_U."""
    d, lam = 3, 0.05
    Phi, y = covariates(4000, d, 2.0, rng), rng.choice([-1.0, 1.0], size=4000)
    U = learn_normalization([Phi] * 8, lam, 0.0, rng).U
    link = link_constants("identity")
    w, its = reweighted_gd(U, lam, [(Phi, y)] * 200, link, 0.0, rng)
    assert np.linalg.norm(its[-1] - its[-2]) <= 1e-10
    # KKT of min L_U over W_U at an interior point: the full gradient vanishes
    if np.linalg.norm(U @ w) < 1 - 1e-6:
        g = reweighted_gradient(U, w, Phi, y, link).mean(0) + link.L_nu * lam * U @ w
        assert np.linalg.norm(g) <= 1e-8


# ---------------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("link", ["identity", "logistic"])
def test_confidence_widths_cover_across_seeds(link: str) -> None:
    """Item 16: with c_b = 1 and failure_prob = 0.05 the widths cover f* at all held-out points in at least
    95% of 50 seeds; and Lemma 4.1 / Eq. (2) hold for the fitted U."""
    d, n = 3, 10_000
    ok = 0
    for seed in range(50):
        X, y, theta = _data(n, d, 3.0, seed, link)
        est = ReweightedRegression(0.9, link=link)
        e = est.fit(X, y, seed)
        Xt = covariates(2000, d, 3.0, np.random.default_rng(10_000 + seed))
        f = est.link.nu(Xt @ theta)
        ok += int(np.all(np.abs(e.predict(Xt) - f) <= e.width(Xt) + 1e-12))
        assert np.mean(np.linalg.norm(Xt @ e.width_matrix, axis=1)) <= 2 * d  # E||U phi|| <= 2d
    assert ok >= 48


def test_l1_error_decreases_with_n() -> None:
    """Item 17 (shortened): the L1 error averaged over 5 seeds falls from n = 2e4 to 2e5 with a log-log
    slope in [-0.75, -0.35] (n^{-1/2} up to the drift of lambda)."""
    d = 4
    errs = []
    for n in (20_000, 200_000):
        e = []
        for seed in range(5):
            X, y, theta = _data(n, d, 0.0, seed)
            est = ReweightedRegression(0.9).fit(X, y, seed)
            Xt = covariates(20_000, d, 0.0, np.random.default_rng(seed + 77))
            e.append(np.mean(np.abs(Xt @ (est.theta - theta))))
        errs.append(np.mean(e))
    slope = math.log(errs[1] / errs[0]) / math.log(10.0)
    assert -0.75 <= slope <= -0.35


def test_l1_error_insensitive_to_conditioning() -> None:
    """Item 18: scaling one coordinate of phi by 1e-1 .. 1e-3 changes the L1 error by at most 1.5x
    (d = 4, n = 2e5, epsilon = 0.5; 5 seeds per scale)."""
    d, n = 4, 200_000
    errs = []
    for scale in (1.0, 1e-1, 1e-2, 1e-3):
        e = []
        for seed in range(5):
            rng = np.random.default_rng(seed)
            theta = unit(d, rng)
            X = covariates(n, d, 0.0, rng)
            X[:, -1] *= scale
            y = rademacher(X @ theta, rng)
            est = ReweightedRegression(0.5).fit(X, y, seed)
            Xt = covariates(20_000, d, 0.0, np.random.default_rng(seed + 5))
            Xt[:, -1] *= scale
            e.append(np.mean(np.abs(Xt @ (est.theta - theta))))
        errs.append(np.mean(e))
    assert max(errs) <= 1.5 * min(errs)


def test_ldp_estimate_normalizes_and_covers() -> None:
    """Algorithm 8: Eq. (2) holds for the LDP U (c_lam = 2) and the widths cover at n = 2e5."""
    d, n = 3, 200_000
    X, y, theta = _data(n, d, 2.0, 5)
    est = ReweightedRegression(1.0, mode="ldp")
    e = est.fit(X, y, 5)
    Xt = covariates(20_000, d, 2.0, np.random.default_rng(6))
    ev = np.linalg.eigvalsh(population_sigma(e.width_matrix, Xt, e.resolved["lam"]))
    assert 0.5 <= ev[0] and ev[-1] <= 2.0
    assert np.all(np.abs(e.predict(Xt) - Xt @ theta) <= e.width(Xt))


def test_e_bar_scaling() -> None:
    """Spec section 7, items 1-2: JDP e_bar ~ n^{-1/2} at large n; LDP e_bar ~ 1/epsilon at fixed n."""
    jdp = ReweightedRegression(0.5)
    r = jdp.e_bar(4 * 10**7, 4) / jdp.e_bar(10**7, 4)
    assert 0.45 <= r <= 0.6
    ldp1, ldp2 = ReweightedRegression(0.5, mode="ldp"), ReweightedRegression(0.25, mode="ldp")
    assert 1.7 <= ldp2.e_bar(10**8, 4) / ldp1.e_bar(10**8, 4) <= 2.05


# ---------------------------------------------------------------------------------------------
# input validation
# ---------------------------------------------------------------------------------------------
def test_bad_parameters_name_the_parameter() -> None:
    with pytest.raises(ValidationError, match="epsilon"):
        ReweightedRegression(-1.0)
    with pytest.raises(ValidationError, match="mode"):
        ReweightedRegression(1.0, mode="shuffle")
    with pytest.raises(ValidationError, match="link must map"):
        ReweightedRegression(1.0, link="poisson")
    with pytest.raises(ValidationError, match="c_b"):
        ReweightedRegression(1.0, c_b=0.0)
    with pytest.raises(ValidationError, match="K must be"):
        ReweightedRegression(1.0, K=0)


def test_bound_policy() -> None:
    X, y, _ = _data(3000, 3, 0.0, 0)
    X[0] *= 7.0
    y[1] = 3.0
    e = ReweightedRegression(1.0).fit(X, y, 0)
    assert e.n_clipped == 2
    with pytest.raises(DataBoundError, match="norm above 1"):
        ReweightedRegression(1.0, on_bound="reject").fit(X, y, 0)
    with pytest.raises(ValidationError, match="rows"):
        ReweightedRegression(1.0).fit(X, y[:-1], 0)
    X[2, 0] = np.nan
    with pytest.raises(ValidationError, match="NaN"):
        ReweightedRegression(1.0).fit(X, y, 0)


def test_tiny_sample_gives_the_trivial_estimate() -> None:
    X, y, _ = _data(12, 3, 0.0, 0)
    e = ReweightedRegression(1.0, K=8).fit(X, y, 0)
    assert e.resolved["trivial"] and np.all(e.width(X) == 2.0)
