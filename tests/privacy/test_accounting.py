"""Accounting: guarantee objects, composition, zCDP conversions, budget splits, reporting."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.core.errors import PrivacyError, ValidationError
from privbandits.privacy.accounting import (
    ZCDP,
    ApproxDP,
    PureDP,
    compose_advanced,
    compose_basic,
    compose_parallel,
    compose_zcdp,
    gaussian_zcdp,
    pure_to_zcdp,
    sigma_for_zcdp,
    split_budget,
    to_guarantee,
    zcdp_for_approx_dp,
    zcdp_to_approx_dp,
)
from privbandits.privacy.calibration import gaussian_epsilon, gaussian_sigma, gaussian_sigma_classic
from privbandits.privacy.guarantee import PrivacyGuarantee

eps_st = st.floats(1e-3, 20.0, allow_nan=False)
delta_st = st.floats(1e-12, 0.5, allow_nan=False)
rho_st = st.floats(1e-6, 50.0, allow_nan=False)


# --------------------------------------------------------------------------------------------
# guarantee objects
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: PureDP(-0.1), "epsilon"),
        (lambda: PureDP(float("nan")), "epsilon"),
        (lambda: PureDP(math.inf), "epsilon"),
        (lambda: ApproxDP(1.0, 1.0), "delta"),
        (lambda: ApproxDP(1.0, -1e-9), "delta"),
        (lambda: ApproxDP(-1.0, 0.1), "epsilon"),
        (lambda: ZCDP(-1.0), "rho"),
        (lambda: ZCDP(math.inf), "rho"),
        (lambda: PureDP("1"), "epsilon"),
    ],
)
def test_invalid_guarantees_raise_naming_the_parameter(make, name):
    with pytest.raises(ValidationError, match=name):
        make()


def test_guarantees_are_frozen_and_pure_reads_as_delta_zero():
    g = PureDP(1.0)
    assert g.delta == 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.epsilon = 2.0  # type: ignore[misc]
    assert ApproxDP(1.0, 0.0).delta == 0.0  # delta = 0 is a valid approximate statement


# --------------------------------------------------------------------------------------------
# basic / parallel / advanced composition
# --------------------------------------------------------------------------------------------
def test_compose_basic_sums_and_keeps_pure():
    assert compose_basic([PureDP(0.5), PureDP(0.25)]) == PureDP(0.75)
    g = compose_basic([PureDP(0.5), ApproxDP(0.25, 1e-6), ApproxDP(1.0, 2e-6)])
    assert isinstance(g, ApproxDP)
    assert g.epsilon == pytest.approx(1.75) and g.delta == pytest.approx(3e-6)
    assert compose_basic([]) == PureDP(0.0)


def test_compose_basic_rejects_delta_overflow_and_zcdp():
    with pytest.raises(PrivacyError, match="delta"):
        compose_basic([ApproxDP(1.0, 0.6), ApproxDP(1.0, 0.5)])
    with pytest.raises(ValidationError, match="compose_zcdp"):
        compose_basic([PureDP(1.0), ZCDP(0.1)])  # type: ignore[list-item]


guar_st = st.one_of(
    st.builds(PureDP, st.floats(0.0, 5.0)),
    st.builds(ApproxDP, st.floats(0.0, 5.0), st.floats(0.0, 0.1)),
)


@given(guar_st, guar_st, guar_st)
def test_compose_basic_is_associative_and_commutative(a, b, c):
    left = compose_basic([compose_basic([a, b]), c])
    right = compose_basic([a, compose_basic([b, c])])
    flat = compose_basic([c, a, b])
    for g in (left, right):
        assert g.epsilon == pytest.approx(flat.epsilon, rel=1e-12, abs=1e-15)
        assert g.delta == pytest.approx(flat.delta, rel=1e-12, abs=1e-18)
        assert type(g) is type(flat)


def test_compose_parallel_takes_the_max():
    assert compose_parallel([PureDP(0.5), PureDP(2.0)]) == PureDP(2.0)
    assert compose_parallel([PureDP(0.5), ApproxDP(0.3, 1e-6)]) == ApproxDP(0.5, 1e-6)


def test_compose_advanced_matches_dwork_roth_theorem_3_20():
    # eps' = sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1), computed by hand:
    # sqrt(200 ln 1e5) * 0.1 = 4.7985258, 100 * 0.1 * (e^0.1 - 1) = 1.0517092
    g = compose_advanced(ApproxDP(0.1, 1e-7), k=100, delta_prime=1e-5)
    expected = math.sqrt(200.0 * math.log(1e5)) * 0.1 + 10.0 * (math.exp(0.1) - 1.0)
    assert g.epsilon == pytest.approx(expected, rel=1e-14)
    assert g.epsilon == pytest.approx(5.850235, abs=1e-6)
    assert g.delta == pytest.approx(100 * 1e-7 + 1e-5)


def test_compose_advanced_falls_back_to_basic_when_that_dominates():
    g = compose_advanced(PureDP(1.0), k=2, delta_prime=1e-5)  # DRV gives 10.2 > 2
    assert g == ApproxDP(2.0, 0.0)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.01, 2.0), st.integers(1, 200), st.floats(1e-9, 1e-2), st.floats(0.0, 1e-6))
def test_compose_advanced_is_never_below_the_optimal_composition(eps, k, dprime, delta):
    """Kairouz-Oh-Viswanath optimal composition (dp-accounting) is a lower envelope."""
    from dp_accounting.pld.accountant import advanced_composition
    from dp_accounting.pld.common import DifferentialPrivacyParameters

    g = compose_advanced(ApproxDP(eps, delta), k, dprime)
    assert g.epsilon <= k * eps * (1 + 1e-12)
    # a hair of extra delta absorbs dp-accounting's float rounding of 1 - (1 - delta)^k: 1 - delta is
    # stored with an absolute error up to 1.1e-16, which the k-th power multiplies by k (e.g. eps=1,
    # k=33, delta=1e-13 needs ~3.7e-15)
    opt = advanced_composition(
        DifferentialPrivacyParameters(eps, delta), k, g.delta * (1 + 1e-9) + k * 1e-15
    )
    assert opt is not None and opt <= g.epsilon * (1 + 1e-9) + 1e-12


def test_compose_advanced_validates():
    with pytest.raises(ValidationError, match="k"):
        compose_advanced(PureDP(0.1), 0, 1e-5)
    with pytest.raises(ValidationError, match="delta_prime"):
        compose_advanced(PureDP(0.1), 10, 0.0)


# --------------------------------------------------------------------------------------------
# zCDP
# --------------------------------------------------------------------------------------------
def test_zcdp_of_mechanisms():
    assert gaussian_zcdp(2.0, 1.0) == ZCDP(0.125)  # 1 / (2 * 4)
    assert pure_to_zcdp(0.5) == ZCDP(0.125)
    assert compose_zcdp([ZCDP(0.1), ZCDP(0.2), ZCDP(0.3)]).rho == pytest.approx(0.6)
    with pytest.raises(ValidationError, match="pure_to_zcdp"):
        compose_zcdp([ZCDP(0.1), PureDP(1.0)])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="sigma"):
        gaussian_zcdp(0.0, 1.0)


@given(rho_st, st.floats(0.01, 100.0))
def test_sigma_for_zcdp_round_trips(rho, sens):
    assert gaussian_zcdp(sigma_for_zcdp(rho, sens), sens).rho == pytest.approx(rho, rel=1e-12)


def test_bun_steinke_conversion_formula():
    # rho + 2 sqrt(rho ln(1/delta)) = 0.5 + 2 sqrt(0.5 ln 1e6) = 0.5 + 5.2565...
    assert zcdp_to_approx_dp(0.5, 1e-6, "bs") == pytest.approx(
        0.5 + 2 * math.sqrt(0.5 * math.log(1e6))
    )
    assert zcdp_to_approx_dp(0.0, 1e-6, "bs") == 0.0


@pytest.mark.parametrize(
    "rho, delta", [(1e-3, 1e-5), (0.1, 1e-5), (1.0, 1e-6), (5.0, 1e-9), (0.01, 1e-3)]
)
def test_cks_conversion_matches_dp_accounting(rho, delta):
    """dp-accounting's RDP conversion (CKS Prop 12) on a dense grid of orders is an upper envelope.

    Our value is the infimum over continuous alpha, so it is <= the grid minimum and close to it.
    """
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    orders = 1.0 + np.logspace(-4, 5, 40001)
    ref, _ = compute_epsilon(orders, orders * rho, delta)
    ours = zcdp_to_approx_dp(rho, delta, "cks")
    assert ours <= ref + 1e-12
    assert ours == pytest.approx(ref, rel=1e-6)


@settings(max_examples=60, deadline=None)
@given(rho_st, delta_st)
def test_cks_is_tighter_than_bs_and_monotone(rho, delta):
    cks = zcdp_to_approx_dp(rho, delta, "cks")
    assert 0.0 <= cks <= zcdp_to_approx_dp(rho, delta, "bs") + 1e-12
    assert zcdp_to_approx_dp(rho * 1.1, delta) >= cks - 1e-12
    assert zcdp_to_approx_dp(rho, delta * 0.5) >= cks - 1e-12


@settings(max_examples=40, deadline=None)
@given(st.floats(0.05, 20.0), st.floats(1e-10, 1e-2))
def test_exact_gaussian_epsilon_is_below_the_zcdp_conversion(sigma, delta):
    """The Balle-Wang epsilon is optimal for the Gaussian, so no conversion can beat it."""
    rho = gaussian_zcdp(sigma, 1.0).rho
    assert gaussian_epsilon(sigma, delta, 1.0) <= zcdp_to_approx_dp(rho, delta, "cks") + 1e-9


def test_cks_total_variation_regime_gives_zero():
    # delta >= sqrt(1 - e^{-rho}) means (0, delta)-DP
    assert zcdp_to_approx_dp(1e-4, 0.1, "cks") == 0.0


@settings(max_examples=50, deadline=None)
@given(eps_st, delta_st, st.sampled_from(["cks", "bs"]))
def test_zcdp_for_approx_dp_is_the_largest_rho(eps, delta, method):
    rho = zcdp_for_approx_dp(eps, delta, method).rho
    assert zcdp_to_approx_dp(rho, delta, method) <= eps  # never optimistic
    assert zcdp_to_approx_dp(rho * (1 + 1e-7), delta, method) > eps * (1 - 1e-12)  # and maximal


def test_zcdp_for_approx_dp_bs_closed_form_and_cks_gain():
    L = math.log(1e6)
    assert zcdp_for_approx_dp(1.0, 1e-6, "bs").rho == pytest.approx(
        (math.sqrt(L + 1) - math.sqrt(L)) ** 2
    )
    assert zcdp_for_approx_dp(1.0, 1e-6, "cks").rho > zcdp_for_approx_dp(1.0, 1e-6, "bs").rho


def test_conversion_validates():
    with pytest.raises(ValidationError, match="method"):
        zcdp_to_approx_dp(0.1, 1e-6, "rdp")
    with pytest.raises(ValidationError, match="delta"):
        zcdp_to_approx_dp(0.1, 0.0)
    with pytest.raises(ValidationError, match="rho"):
        zcdp_to_approx_dp(-0.1, 1e-6)
    with pytest.raises(ValidationError, match="epsilon"):
        zcdp_for_approx_dp(0.0, 1e-6)


# --------------------------------------------------------------------------------------------
# budget splits
# --------------------------------------------------------------------------------------------
def test_split_budget_han_ols_and_multi_arm():
    pair = split_budget(1.0, 0.01, 2)
    assert pair == [ApproxDP(0.5, 0.005)] * 2
    # Han spec §2.4 "strict" multiplier sigma' = sigma_classic(eps/2, delta/2) = 6.646178 at (1, 0.01)
    assert gaussian_sigma_classic(pair[0].epsilon, pair[0].delta) == pytest.approx(
        6.646178, abs=1e-6
    )
    # §2.6 multi-parameter: each part at (eps/4, delta/4); 11.18860 for (1, 0.1), 2.23772 for (5, 0.1)
    for eps, ref in [(1.0, 11.18860), (5.0, 2.23772)]:
        part = split_budget(eps, 0.1, 4)[0]
        assert gaussian_sigma_classic(part.epsilon, part.delta) == pytest.approx(ref, abs=1e-5)


def test_split_budget_weighted_zheng_alg5_and_alg3():
    # Zheng spec §7 item 2: Alg. 5 sigma(1, 0.1) = 6 sqrt(2 ln 25) = 15.223635 from the
    # (eps/3, delta/2) part with sensitivity 2; Alg. 3 = 6 sqrt(2 ln 37.5) = 16.154026 from thirds.
    parts = split_budget(1.0, 0.1, [1, 2], delta_weights=[1, 1])
    assert parts[0].epsilon == pytest.approx(1 / 3) and parts[1].epsilon == pytest.approx(2 / 3)
    assert parts[0].delta == pytest.approx(0.05) and parts[1].delta == pytest.approx(0.05)
    assert gaussian_sigma(parts[0].epsilon, parts[0].delta, 2.0) == pytest.approx(
        15.223635, abs=1e-6
    )
    third = split_budget(1.0, 0.1, 3)[0]
    assert gaussian_sigma(third.epsilon, third.delta, 2.0) == pytest.approx(16.154026, abs=1e-6)


@given(
    st.floats(1e-3, 50.0),
    st.floats(0.0, 0.5),
    st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=12),
)
def test_split_budget_composes_back_to_at_most_the_total(eps, delta, weights):
    parts = split_budget(eps, delta, weights)
    total = compose_basic(parts)
    assert total.epsilon <= eps and total.delta <= delta
    assert total.epsilon == pytest.approx(eps, rel=1e-12)
    assert total.delta == pytest.approx(delta, rel=1e-12, abs=1e-300)
    ratios = [p.epsilon / eps for p in parts]
    assert ratios == pytest.approx(list(np.asarray(weights) / np.sum(weights)), rel=1e-9)


@pytest.mark.parametrize("parts", [0, -1, [], [1.0, -1.0], [1.0, float("nan")], "ab", [[1.0]]])
def test_split_budget_rejects_bad_parts(parts):
    with pytest.raises(ValidationError, match="parts"):
        split_budget(1.0, 0.1, parts)


def test_split_budget_rejects_bad_budget_and_mismatched_delta_weights():
    with pytest.raises(ValidationError, match="epsilon"):
        split_budget(0.0, 0.1, 2)
    with pytest.raises(ValidationError, match="delta"):
        split_budget(1.0, 1.0, 2)
    with pytest.raises(ValidationError, match="delta_weights"):
        split_budget(1.0, 0.1, 2, delta_weights=[1, 2, 3])


# --------------------------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------------------------
def test_to_guarantee_converts_every_object():
    g = to_guarantee(PureDP(1.0), "local", notes="l2-ball")
    assert g == PrivacyGuarantee("local", 1.0, 0.0, "user", "l2-ball")
    g = to_guarantee(ApproxDP(1.0, 1e-6), "central", unit="round")
    assert (g.model, g.epsilon, g.delta, g.unit) == ("central", 1.0, 1e-6, "round")
    z = to_guarantee(ZCDP(0.1), "central", delta=1e-6, notes="tree")
    assert z.rho == 0.1 and z.delta == 1e-6
    assert z.epsilon == pytest.approx(zcdp_to_approx_dp(0.1, 1e-6, "cks"))
    assert "zCDP" in z.notes and z.notes.startswith("tree")
    zb = to_guarantee(ZCDP(0.1), "central", delta=1e-6, method="bs")
    assert zb.epsilon > z.epsilon


def test_to_guarantee_validates():
    with pytest.raises(ValidationError, match="delta"):
        to_guarantee(ZCDP(0.1), "central")
    with pytest.raises(ValidationError, match="delta"):
        to_guarantee(PureDP(1.0), "local", delta=1e-6)
    with pytest.raises(ValidationError, match="model"):
        to_guarantee(PureDP(1.0), "federated")
    with pytest.raises(ValidationError, match="PureDP or ApproxDP"):
        to_guarantee((1.0, 1e-6), "local")  # type: ignore[arg-type]
