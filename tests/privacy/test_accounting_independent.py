"""Accounting bounds against independent computations at awkward parameters.

Every bound of ``privbandits.privacy`` is compared here with a computation that does not call the
function under test (the shifts of the binomial summation of Cheu et al. have their own file,
``test_binomial_independent.py``): an exhaustive enumeration of what the mechanism can do (the
tree nodes one leaf changes, the bits one user sends), dp-accounting's privacy-loss distributions for the Gaussian and Laplace mechanisms, a
direct summation of the dominating pair of shuffling amplification, the exact composition of
randomized response, and Monte Carlo estimates with tolerances derived from the sample size.
Parameters are chosen where an off-by-one or a rounding slip changes the result: non-integer
noise scales, horizons next to powers of two, ``n = 1`` and ``n = 2``, epsilons and noise
parameters that are not round numbers.

References
----------
Dwork, Naor, Pitassi & Rothblum (2010) (tree aggregation); Balle & Wang (2018), Thm 8 (Gaussian);
Feldman, McMillan & Talwar (2021), Thm 3.1 and 3.2 (amplification by shuffling);
Kairouz, Oh & Viswanath (2015), Thm 3.3 (optimal composition); Canonne, Kamath & Steinke (2020),
Prop 12 (zCDP conversion); Duchi, Jordan & Wainwright (2018) (l2-ball mechanism).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from privbandits.privacy import amplification as amp
from privbandits.privacy import calibration as cal
from privbandits.privacy.accounting import (
    ApproxDP,
    PureDP,
    compose_advanced,
    gaussian_zcdp,
    zcdp_for_approx_dp,
    zcdp_to_approx_dp,
)
from privbandits.privacy.cheu import SumParams
from privbandits.privacy.laplace_shuffle import laplace_shuffle_params
from privbandits.privacy.randomizers import binomial_bit_counts
from privbandits.privacy.sensitivity import (
    laplace_sum_deviation,
    outer_product_l1_sensitivity,
    outer_product_sensitivity,
)
from privbandits.privacy.tree import (
    TreeAggregator,
    max_nodes_per_leaf,
    nodes_containing,
    tree_levels,
)


# ------------------------------------------------------------------------------------------------
# binomial summation (Cheu et al. 2022): the message size against the randomizer
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("g", [4.3, 4.472135955, 5.0, 6.75])
def test_bits_per_label_is_the_largest_count_the_randomizer_sends(g: float) -> None:
    """``ceil(2 g) + b`` bits per label: the count of ones the randomizer sends at the largest input.

    At ``w = 2 Delta`` (a coordinate at its bound plus the bias) the rounding is ``floor(2 g) +
    Bernoulli(frac(2 g))``; with ``b = 0`` the largest count over many draws is the rounding's
    maximum, which must equal the count the message size allows.
    """
    Delta = 0.8
    counts = binomial_bit_counts(
        np.full(4000, 2.0 * Delta), g, 0, 0.25, Delta, np.random.default_rng(3)
    )
    params = SumParams(
        kind="vector",
        n=5,
        d=2,
        n_labels=2,
        d_formula=2,
        Delta=Delta,
        g=g,
        b=7,
        p=0.25,
        epsilon=1.0,
        delta=1e-5,
        mode="calibrated",
        sensitivity=2 * Delta,
    )
    assert params.bits_per_label - params.b == int(counts.max())
    assert params.messages_per_user == 2 * (int(counts.max()) + 7)


# ------------------------------------------------------------------------------------------------
# tree aggregation: nodes one leaf changes, counted on the released stream
# ------------------------------------------------------------------------------------------------
def _released_nodes_changed(T: int, s: int) -> int:
    """Run two trees with the same noise, leaves differing at round ``s`` only; count the node
    releases that differ (every :meth:`TreeAggregator.add` releases one node)."""
    trees = [
        TreeAggregator(T, 1, sigma=1.0, leaf_bound=1.0, rng=np.random.default_rng(0))
        for _ in range(2)
    ]
    changed = 0
    for t in range(1, T + 1):
        outs = []
        for k, tree in enumerate(trees):
            tree.add(np.array([[1.0 if (t == s and k == 1) else 0.0]]))
            i = (t & -t).bit_length() - 1
            outs.append(tree._noisy[i].copy())
        changed += int(not np.array_equal(outs[0], outs[1]))
    return changed


@pytest.mark.parametrize("T", [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33])
def test_nodes_per_leaf_equal_the_releases_one_leaf_changes(T: int) -> None:
    """Horizons at, below and above powers of two: the count the accountant composes over.

    ``max_nodes_per_leaf(T)`` is the largest number of released nodes one leaf changes (found by
    running the tree); ``tree_levels(T)`` (the calibration count) is at least that, and equal
    at powers of two; ``nodes_containing`` (the leaf's root path within ``T``) holds every changed
    release (the tree releases one node per round, so some nodes of the path are never released)
    and is exact for the first leaf, the worst one.
    """
    per_leaf = [_released_nodes_changed(T, s) for s in range(1, T + 1)]
    assert max(per_leaf) == max_nodes_per_leaf(T)
    assert tree_levels(T) >= max(per_leaf)
    assert tree_levels(T) == math.ceil(math.log2(T)) + 1  # the documented calibration count
    if T & (T - 1) == 0:
        assert tree_levels(T) == max(per_leaf)
    paths = [len(nodes_containing(s, T)) for s in range(1, T + 1)]
    assert all(c <= p for c, p in zip(per_leaf, paths)) and paths[0] == per_leaf[0] == max(per_leaf)


@pytest.mark.parametrize("T", [6, 9, 16])
def test_tree_zcdp_covers_the_exact_privacy_loss_of_the_released_stream(T: int) -> None:
    """The tree's zCDP is the Gaussian loss of the worst leaf: nodes changed times ``Delta^2/(2 sigma^2)``."""
    sigma, bound = 1.7, 0.6
    tree = TreeAggregator(T, 3, sigma=sigma, leaf_bound=bound, rng=np.random.default_rng(1))
    worst = max(_released_nodes_changed(T, s) for s in range(1, T + 1))
    exact_rho = worst * (2 * bound) ** 2 / (2 * sigma**2)  # two leaves of norm B differ by 2 B
    assert tree.zcdp().rho == pytest.approx(exact_rho, rel=1e-12)


# ------------------------------------------------------------------------------------------------
# Gaussian and Laplace mechanisms against dp-accounting's privacy-loss distributions
# ------------------------------------------------------------------------------------------------
def _gauss_pld(sigma: float, sens: float):  # type: ignore[no-untyped-def]
    from dp_accounting.pld import privacy_loss_distribution as pld

    return pld.from_gaussian_mechanism(sigma, sensitivity=sens, value_discretization_interval=1e-4)


@pytest.mark.parametrize(
    ("sigma", "sens", "eps"),
    [(1.37, 0.83, 0.41), (3.3, 2.0, 1.9), (0.61, 1.0, 1.6), (7.9, 1.1, 0.07)],
)
def test_gaussian_delta_and_epsilon_match_dp_accounting(
    sigma: float, sens: float, eps: float
) -> None:
    theirs = _gauss_pld(sigma, sens).get_delta_for_epsilon(eps)
    ours = cal.gaussian_delta(eps, sigma, sens)
    # dp-accounting's pessimistic discretization may only overestimate
    assert ours <= theirs * (1 + 1e-9) and ours == pytest.approx(theirs, rel=2e-3, abs=1e-12)
    dlt = max(ours, 1e-9)
    eps_theirs = _gauss_pld(sigma, sens).get_epsilon_for_delta(dlt)
    assert cal.gaussian_epsilon(sigma, dlt, sens) == pytest.approx(eps_theirs, abs=2e-4)


@pytest.mark.parametrize(
    ("eps", "dlt", "sens"), [(0.37, 1e-5, 1.3), (2.9, 3.3e-7, 0.4), (5.3, 0.013, 2.0)]
)
def test_analytic_sigma_is_the_smallest_meeting_the_target_per_dp_accounting(
    eps: float, dlt: float, sens: float
) -> None:
    sig = cal.gaussian_sigma_analytic(eps, dlt, sens)
    assert _gauss_pld(sig, sens).get_delta_for_epsilon(eps) == pytest.approx(dlt, rel=3e-3)
    assert _gauss_pld(sig * 0.98, sens).get_delta_for_epsilon(eps) > dlt


@pytest.mark.parametrize(("eps", "dlt"), [(0.93, 1e-6), (0.31, 0.007), (0.5, 2.5e-9)])
def test_classic_sigma_meets_the_target_per_dp_accounting(eps: float, dlt: float) -> None:
    sig = cal.gaussian_sigma_classic(eps, dlt, 1.7)
    assert _gauss_pld(sig, 1.7).get_delta_for_epsilon(eps) <= dlt
    assert sig == pytest.approx(1.7 * math.sqrt(2 * math.log(1.25 / dlt)) / eps, rel=1e-12)


@pytest.mark.parametrize(("scale", "sens"), [(0.73, 1.9), (2.5, 0.3), (1.0, 1.0)])
def test_laplace_epsilon_matches_dp_accounting(scale: float, sens: float) -> None:
    """``Lap(b)`` at L1 sensitivity ``Delta`` is exactly ``Delta/b``-DP: zero delta there, positive below."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    eps = cal.laplace_epsilon(scale, sens)
    p = pld.from_laplace_mechanism(scale, sensitivity=sens, value_discretization_interval=1e-5)
    assert p.get_delta_for_epsilon(eps * (1 + 1e-4)) <= 1e-12
    assert p.get_delta_for_epsilon(eps * 0.97) > 1e-5
    assert cal.laplace_scale(eps, sens) == pytest.approx(scale, rel=1e-12)


def test_gaussian_privacy_loss_by_monte_carlo() -> None:
    """``delta(eps) = E_P[(1 - e^(eps - L))_+]`` over the privacy loss ``L`` of ``N(Delta, s^2)`` vs ``N(0, s^2)``.

    Estimated from 400 000 draws; tolerance five standard errors of the estimate.
    """
    sigma, sens, eps = 1.31, 0.9, 0.55
    rng = np.random.default_rng(7)
    x = rng.normal(sens, sigma, 400_000)
    loss = (sens * x - sens * sens / 2) / sigma**2
    terms = np.maximum(1.0 - np.exp(eps - loss), 0.0)
    est, se = terms.mean(), terms.std(ddof=1) / math.sqrt(terms.size)
    assert abs(cal.gaussian_delta(eps, sigma, sens) - est) <= 5 * se


# ------------------------------------------------------------------------------------------------
# zCDP and composition
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("rho", "dlt"), [(0.0137, 1e-5), (0.42, 3e-7), (2.9, 0.011), (1e-5, 1e-3)])
def test_zcdp_conversions_cover_the_gaussian_and_match_a_grid_search(
    rho: float, dlt: float
) -> None:
    """Both conversions are valid for the Gaussian mechanism with this rho (its exact epsilon, from
    dp-accounting, is no larger) and CKS equals a plain grid search of its formula over alpha."""
    sigma = 1.0 / math.sqrt(2 * rho)  # sensitivity 1
    exact = _gauss_pld(sigma, 1.0).get_epsilon_for_delta(dlt)
    cks = zcdp_to_approx_dp(rho, dlt, "cks")
    bs = zcdp_to_approx_dp(rho, dlt, "bs")
    assert exact <= cks + 1e-4 and cks <= bs + 1e-12
    alpha = 1.0 + np.geomspace(1e-6, 1e6, 400_001)
    grid = alpha * rho + np.log1p(-1 / alpha) - (math.log(dlt) + np.log(alpha)) / (alpha - 1)
    assert cks == pytest.approx(max(0.0, float(grid.min())), abs=1e-6)
    assert bs == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / dlt)), rel=1e-12)
    assert gaussian_zcdp(sigma * 1.3, 0.77).rho == pytest.approx(
        0.77**2 / (2 * (sigma * 1.3) ** 2), rel=1e-12
    )


@pytest.mark.parametrize(
    ("eps", "dlt", "method"), [(0.73, 1e-6, "cks"), (3.1, 2e-4, "bs"), (0.05, 0.01, "cks")]
)
def test_zcdp_for_approx_dp_is_the_largest_rho_meeting_the_target(
    eps: float, dlt: float, method: str
) -> None:
    rho = zcdp_for_approx_dp(eps, dlt, method).rho
    assert zcdp_to_approx_dp(rho, dlt, method) <= eps
    assert zcdp_to_approx_dp(rho * 1.001, dlt, method) > eps


def _optimal_composition_delta(eps0: float, k: int, eps: float) -> float:
    """Exact delta(eps) of ``k`` compositions of eps0-randomized response (Kairouz et al. 2015, Thm 3.3)."""
    i = np.arange(k + 1)
    loss = (k - 2 * i) * eps0
    logp = stats.binom.logpmf(i, k, 1 / (1 + math.exp(eps0)))
    logq = stats.binom.logpmf(i, k, math.exp(eps0) / (1 + math.exp(eps0)))
    keep = loss > eps
    return float(np.sum(np.exp(logp[keep]) - np.exp(eps + logq[keep])))


@pytest.mark.parametrize(
    ("eps0", "k", "dp"), [(0.13, 37, 1e-5), (0.021, 500, 3e-6), (0.7, 2, 1e-3), (0.4, 1, 1e-2)]
)
def test_advanced_composition_covers_the_optimal_composition(
    eps0: float, k: int, dp: float
) -> None:
    """Randomized response attains the worst case of k-fold composition of eps0-DP: its exact
    delta at the advanced-composition epsilon must be at most delta'."""
    g = compose_advanced(PureDP(eps0), k, dp)
    assert _optimal_composition_delta(eps0, k, g.epsilon) <= g.delta + 1e-15
    naive = math.sqrt(2 * k * math.log(1 / dp)) * eps0 + k * eps0 * (math.exp(eps0) - 1)
    assert g.epsilon == pytest.approx(min(naive, k * eps0), rel=1e-12)
    g2 = compose_advanced(ApproxDP(eps0, 1e-7), k, dp)
    assert g2.delta == pytest.approx(k * 1e-7 + (dp if naive < k * eps0 else 0.0), rel=1e-12)


# ------------------------------------------------------------------------------------------------
# amplification by shuffling (FMT21)
# ------------------------------------------------------------------------------------------------
def _fmt_delta_brute(eps0: float, n: int, eps: float) -> float:
    """FMT21 Thm 3.2 by direct summation over every clone count ``c`` and every count ``k``.

    ``C ~ Bin(n - 1, e^-eps0)``; given ``c``, ``P_c = a Bin(c, 1/2) + (1 - a)(Bin(c, 1/2) + 1)`` and
    ``Q_c`` with ``a`` and ``1 - a`` swapped, ``a = e^eps0 / (e^eps0 + 1)``; ``delta = sum_c P(C = c)
    sum_k (P_c(k) - e^eps Q_c(k))_+``.
    """
    a = math.exp(eps0) / (math.exp(eps0) + 1)
    total = 0.0
    for c in range(n):
        wc = stats.binom.pmf(c, n - 1, math.exp(-eps0))
        if wc < 1e-18:
            continue
        k = np.arange(c + 2)
        b0 = stats.binom.pmf(k, c, 0.5)
        b1 = stats.binom.pmf(k - 1, c, 0.5)
        P = a * b0 + (1 - a) * b1
        Q = (1 - a) * b0 + a * b1
        total += wc * float(np.maximum(P - math.exp(eps) * Q, 0.0).sum())
    return total


def _shuffled_rr_delta(eps0: float, n: int, eps: float) -> float:
    """Exact delta(eps) of ``n`` shuffled binary randomized responses, the differing user's bit
    0 vs 1 and the others' bits 0: a lower bound for every eps0-LDP shuffle bound."""
    q = 1 / (1 + math.exp(eps0))  # P(report 1 | bit 0)
    k = np.arange(n + 1)
    rest = stats.binom.pmf(k, n - 1, q)
    rest_m1 = stats.binom.pmf(k - 1, n - 1, q)
    P = (1 - q) * rest_m1 + q * rest  # differing bit 1: reports 1 w.p. 1 - q
    Q = q * rest_m1 + (1 - q) * rest
    return float(np.maximum(P - math.exp(eps) * Q, 0.0).sum())


@pytest.mark.parametrize(
    ("eps0", "n", "eps"),
    [(2.37, 1, 0.9), (1.1, 2, 0.3), (3.3, 57, 1.13), (0.77, 1000, 0.071), (4.9, 333, 0.6)],
)
def test_numerical_amplification_matches_direct_summation(eps0: float, n: int, eps: float) -> None:
    theirs = _fmt_delta_brute(eps0, n, eps)
    assert amp.numerical_delta(eps0, n, eps) == pytest.approx(theirs, rel=1e-9, abs=1e-15)
    assert amp.numerical_delta(eps0, n, eps) >= _shuffled_rr_delta(eps0, n, eps) - 1e-15


@pytest.mark.parametrize(
    ("eps0", "n", "dlt"), [(0.93, 2500, 1e-6), (2.2, 40_000, 3e-8), (0.41, 801, 1e-5)]
)
def test_closed_form_amplification_is_valid_by_direct_summation(
    eps0: float, n: int, dlt: float
) -> None:
    """Where Thm 3.1 is declared valid, its epsilon has delta at most the target under Thm 3.2."""
    assert amp.closed_form_valid(eps0, n, dlt)
    eps = amp.amplified_epsilon(eps0, n, dlt, "closed")
    assert eps < eps0 and _fmt_delta_brute(eps0, n, eps) <= dlt
    e = math.exp(eps0)
    literal = math.log(
        1 + (e - 1) / (e + 1) * (8 * math.sqrt(e * math.log(4 / dlt)) / math.sqrt(n) + 8 * e / n)
    )
    assert eps == pytest.approx(literal, rel=1e-12)
    assert amp.max_local_epsilon(n, dlt) == pytest.approx(
        math.log(n / (16 * math.log(2 / dlt))), rel=1e-12
    )


@pytest.mark.parametrize(("eps", "dlt", "n"), [(0.37, 1e-6, 5000), (1.3, 2e-5, 777)])
def test_numerical_amplification_inverse_by_direct_summation(
    eps: float, dlt: float, n: int
) -> None:
    e0 = amp.local_epsilon_for_target(eps, dlt, n, "numerical")
    assert e0 > eps
    assert _fmt_delta_brute(e0, n, eps) <= dlt * (1 + 1e-9)
    assert _fmt_delta_brute(e0 * 1.01, n, eps) > dlt
    eps_back = amp.numerical_epsilon(e0, n, dlt)
    assert _fmt_delta_brute(e0, n, eps_back) <= dlt * (1 + 1e-9) and eps_back <= eps * (1 + 1e-6)


def test_laplace_shuffle_batch_guarantee_by_direct_summation() -> None:
    """One batch of the Laplace shuffle protocol at an awkward reward range: each report is
    ``(r_hi - r_lo)/scale``-LDP, and the batch's central guarantee holds under Thm 3.2."""
    prm = laplace_shuffle_params(0.83, 1e-6, 4321, r_lo=-0.3, r_hi=1.45, bound="numerical")
    eps_l = 1.75 / prm.scale
    assert eps_l <= prm.eps0 and prm.local_epsilon() == pytest.approx(eps_l, rel=1e-15)
    g = prm.guarantee()
    assert g.epsilon <= 0.83 * (1 + 1e-6)
    assert _fmt_delta_brute(eps_l, 4321, g.epsilon) <= g.delta * (1 + 1e-9)


# ------------------------------------------------------------------------------------------------
# l2-ball mechanism and sensitivities
# ------------------------------------------------------------------------------------------------
def _mean_abs_coordinate(d: int) -> float:
    """``E|u_1|`` for ``u`` uniform on the unit sphere of R^d, by quadrature of its marginal density."""
    if d == 1:
        return 1.0
    f = lambda t: (1 - t * t) ** ((d - 3) / 2)
    num = integrate.quad(lambda t: t * f(t), 0, 1)[0]
    den = integrate.quad(f, 0, 1)[0]
    return num / den


@pytest.mark.parametrize(
    ("eps", "d", "bound"), [(0.37, 1, 1.0), (1.9, 2, 0.6), (0.8, 7, 2.3), (4.1, 3, 1.0)]
)
def test_l2_ball_radius_makes_the_mechanism_unbiased(eps: float, d: int, bound: float) -> None:
    """At an input of norm ``bound`` the output's mean along it is ``r E|u_1| (2q - 1)`` with
    ``q = e^eps / (1 + e^eps)``; unbiasedness fixes ``r``.  Checked for the inverse too."""
    r = cal.l2_ball_radius(eps, d, bound)
    q = math.exp(eps) / (1 + math.exp(eps))
    assert r * _mean_abs_coordinate(d) * (2 * q - 1) == pytest.approx(bound, rel=1e-7)
    assert cal.l2_ball_epsilon(r, d, bound) == pytest.approx(eps, rel=1e-9)
    n = 0.37 * bound
    assert cal.l2_ball_side_probability(n, eps, bound) == pytest.approx(
        (0.5 + n / (2 * bound)) * q + (0.5 - n / (2 * bound)) * (1 - q), rel=1e-12
    )


def test_outer_product_sensitivities_by_search() -> None:
    """The largest change of the upper triangle of ``x x^T`` over the ball, found by random search
    and local refinement, stays below the l2 (tight and loose) and l1 bounds and reaches the tight l2 one."""
    rng = np.random.default_rng(11)
    B = 1.3
    for d in (1, 2, 3, 5):
        iu = np.triu_indices(d)
        best2 = best1 = 0.0
        for _ in range(3000):
            x, y = rng.normal(size=(2, d))
            x *= B / np.linalg.norm(x) * rng.uniform(0.9, 1.0) ** (1 / d)
            y *= B / np.linalg.norm(y)
            diff = (np.outer(x, x) - np.outer(y, y))[iu]
            best2 = max(best2, float(np.linalg.norm(diff)))
            best1 = max(best1, float(np.abs(diff).sum()))
        assert best2 <= outer_product_sensitivity(B, tight=True) * (1 + 1e-12)
        assert best2 <= outer_product_sensitivity(B) and best1 <= outer_product_l1_sensitivity(d, B)
        if d >= 2:  # orthogonal vectors of norm B attain sqrt(2) B^2
            e = np.eye(d) * B
            att = float(np.linalg.norm((np.outer(e[0], e[0]) - np.outer(e[1], e[1]))[iu]))
            assert att == pytest.approx(outer_product_sensitivity(B, tight=True), rel=1e-12)
    assert outer_product_sensitivity(B) == pytest.approx(2 * B * B)
    # l1: x with equal entries of one sign against the same with alternating signs
    d = 4
    x = np.full(d, B / math.sqrt(d))
    y = x * np.array([1, -1, 1, -1])
    iu = np.triu_indices(d)
    l1 = float(np.abs((np.outer(x, x) - np.outer(y, y))[iu]).sum())
    assert l1 <= outer_product_l1_sensitivity(d, B) and l1 > 0.39 * outer_product_l1_sensitivity(
        d, B
    )


@pytest.mark.parametrize(
    ("ell", "weights"), [(3.1, [1.0] * 40), (2.3, [0.3, 1.7, 0.9, 2.2, 0.05]), (4.6, [1.0])]
)
def test_laplace_sum_deviation_tail_by_monte_carlo(ell: float, weights: list[float]) -> None:
    """``P(sum_j l_j z_j >= t) <= e^-ell`` for Laplace ``z_j``, estimated from 200 000 draws; the
    estimate may exceed ``e^-ell`` by at most five binomial standard errors."""
    s = 0.7
    lw = np.array(weights)
    t = laplace_sum_deviation(s, float(np.sum(lw**2)), float(np.max(np.abs(lw))), ell)
    rng = np.random.default_rng(5)
    sums = rng.laplace(0.0, s, size=(200_000, lw.size)) @ lw
    frac = float(np.mean(sums >= t))
    target = math.exp(-ell)
    assert frac <= target + 5 * math.sqrt(target * (1 - target) / sums.size)
    assert t == pytest.approx(
        s * (math.sqrt(8 * np.sum(lw**2) * ell) + math.sqrt(2) * lw.max() * ell), rel=1e-12
    )


def test_gaussian_special_functions_agree_with_scipy_directly() -> None:
    """``gaussian_delta`` against the Balle-Wang expression written with ``norm.cdf`` (no log space)."""
    for eps, sigma, sens in [(0.3, 2.1, 1.3), (1.7, 0.9, 0.4), (0.0, 1.1, 1.0)]:
        a, b = sens / (2 * sigma), eps * sigma / sens
        direct = stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b)
        assert cal.gaussian_delta(eps, sigma, sens) == pytest.approx(direct, rel=1e-10, abs=1e-300)
    assert special.ndtr(0.0) == 0.5
