"""Privacy of the Cheu et al. binomial summation computed from the binomial pmf (issue 10, defect 2)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privbandits.core.errors import ValidationError
from privbandits.privacy import binomial_accounting as ba
from privbandits.privacy.cheu import calibrated_params


def _pld(N: int, p: float, s: int):  # type: ignore[no-untyped-def]
    from dp_accounting.pld import privacy_loss_distribution as pld

    y = np.arange(min(0, s), N + max(0, s) + 1)
    shifted = {
        int(k): float(v) for k, v in zip(y, stats.binom.logpmf(y - s, N, p)) if np.isfinite(v)
    }
    base = {int(k): float(v) for k, v in zip(y, stats.binom.logpmf(y, N, p)) if np.isfinite(v)}
    # one direction only (symmetric=True): dp-accounting's delta(eps) of (lower, upper) is
    # sup_E upper(E) - e^eps lower(E)
    return pld.from_two_probability_mass_functions(
        base, shifted, symmetric=True, value_discretization_interval=1e-4
    )


@pytest.mark.parametrize(
    ("N", "s", "eps"), [(300, 3, 0.5), (300, -7, 1.0), (1000, 12, 0.3), (50, 4, 2.0)]
)
def test_exact_shift_delta_matches_dp_accounting(N: int, s: int, eps: float) -> None:
    """One label: the brute-force hockey-stick sum equals dp-accounting's PLD of the same pair."""
    ours = ba.shift_delta(N, 0.25, np.array([s]), eps)
    theirs = _pld(N, 0.25, s).get_delta_for_epsilon(eps)
    # dp-accounting's pessimistic discretization (interval 1e-4) may only overestimate
    assert ours > 0 and theirs == pytest.approx(ours, rel=2e-3) and theirs >= ours * (1 - 1e-9)


def test_two_label_shift_delta_matches_composed_pld() -> None:
    """Two labels: the 2-D brute force equals the composition of the two one-label PLDs."""
    N, eps = 200, 0.8
    ours = ba.shift_delta(N, 0.25, np.array([5, -3]), eps)
    theirs = _pld(N, 0.25, 5).compose(_pld(N, 0.25, -3)).get_delta_for_epsilon(eps)
    assert theirs == pytest.approx(ours, rel=2e-3)


def _reachable_shifts(g: float, Delta: float, sens: float) -> list[tuple[int, int]]:
    budget, s_max = ba.shift_budget(g, Delta, sens)
    r = range(-s_max, s_max + 1)
    return [
        (a, b) for a in r for b in r if max(abs(a) - 1, 0) ** 2 + max(abs(b) - 1, 0) ** 2 <= budget
    ]


def _worst_exact_delta(N: int, p: float, shifts: list[tuple[int, int]], eps: float) -> float:
    s_max = max(max(abs(a), abs(b)) for a, b in shifts)
    y = np.arange(-s_max, N + s_max + 1)
    q = np.exp(stats.binom.logpmf(y, N, p))
    Q = np.outer(q, q) * math.exp(eps)
    cols = {s: np.exp(stats.binom.logpmf(y - s, N, p)) for s in range(-s_max, s_max + 1)}
    return max(float(np.maximum(np.outer(cols[a], cols[b]) - Q, 0.0).sum()) for a, b in shifts)


def test_bound_dominates_the_exact_worst_case_and_is_within_25_percent_in_epsilon() -> None:
    """Brute force at small n b: every shift vector of the relaxed set of two labels (g = 4, vector sum).

    The bound must be at least the exact worst-case delta(eps) over the relaxed shift set at every
    eps (validity), and its epsilon at delta = 1e-3 within 25 % of the exact worst-case epsilon
    (found by bisection on the brute force): measured 6.82 vs 5.86.
    """
    N, p, g, Delta, sens = 200, 0.25, 4.0, 1.0, 2.0
    F = _reachable_shifts(g, Delta, sens)
    assert len(F) == 257
    for eps in (0.5, 1.5, 3.0):
        assert ba.binomial_sum_delta(N, p, 2, g, Delta, sens, eps) >= _worst_exact_delta(
            N, p, F, eps
        )
    bound = ba.binomial_sum_epsilon(N, p, 2, g, Delta, sens, 1e-3)
    assert (
        _worst_exact_delta(N, p, F, bound) <= 1e-3
    )  # the bound's epsilon is really (eps, 1e-3)-DP
    lo, hi = 0.0, bound
    for _ in range(20):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _worst_exact_delta(N, p, F, mid) > 1e-3 else (lo, mid)
    assert hi <= bound <= 1.25 * hi, (bound, hi)


@settings(max_examples=25, deadline=None)
@given(
    N=st.integers(50, 5000),
    L=st.integers(1, 4),
    g=st.sampled_from([4.0, 6.0, 10.0]),
    eps=st.floats(0.1, 4.0),
)
def test_bound_is_monotone_in_epsilon_noise_and_labels(
    N: int, L: int, g: float, eps: float
) -> None:
    d1 = ba.binomial_sum_delta(N, 0.25, L, g, 1.0, 2.0, eps)
    assert 0.0 <= d1 <= 1.0
    assert (
        ba.binomial_sum_delta(N, 0.25, L, g, 1.0, 2.0, eps + 0.5) <= d1 + 1e-15
    )  # more epsilon, less delta
    # more noise bits (the order grid moves with N, so up to a small slack)
    assert ba.binomial_sum_delta(4 * N, 0.25, L, g, 1.0, 2.0, eps) <= 1.02 * d1 + 1e-12
    assert (
        ba.binomial_sum_delta(N, 0.25, L + 1, g, 1.0, 2.0, eps) >= d1 - 1e-15
    )  # more labels to shift


def test_bound_is_near_the_gaussian_mechanism_for_many_noise_bits() -> None:
    """n = 1000, d = 5, matrix (spec S-6): the binomial is nearly Gaussian; the bound sits between
    the exact Gaussian mechanism's epsilon for the shift norm (0.224) and 1.35 times its value with
    the rounding slack of all 15 labels (0.237; the bound is 0.302, the price of its Renyi-type
    conversion)."""
    p = calibrated_params(1000, 5, 1.0, delta=0.005, epsilon=0.5, kind="matrix", psd_inputs=True)
    assert p.b == 1893  # the Gaussian match already meets the target: b unchanged
    eps = p.binomial_epsilon()
    sd = math.sqrt(p.n * p.b * p.p * (1 - p.p))  # in counts

    def gauss_eps(shift: float) -> float:
        m = shift / sd
        lo, hi = 0.0, 10.0
        for _ in range(60):
            e = 0.5 * (lo + hi)
            dl = stats.norm.cdf(-e / m + m / 2) - math.exp(e) * stats.norm.cdf(-e / m - m / 2)
            lo, hi = (e, hi) if dl > 0.005 else (lo, e)
        return hi

    r = p.g * p.sensitivity / p.Delta
    assert gauss_eps(r) < eps < 1.35 * gauss_eps(r + math.sqrt(15))
    assert eps <= 0.5  # below the target (the Bun-Steinke conversion was loose)


def test_calibrated_guarantee_is_computed_from_the_binomial_and_meets_the_target() -> None:
    """Small g (n = 4): the Gaussian match falls short on the binomial, so b is raised until it meets eps."""
    p = calibrated_params(4, 2, 1.0, delta=1e-5, epsilon=1.0, conversion="cks")
    g = p.guarantee()
    assert not g.approximate and "binomial pmf" in g.notes and not str(g).startswith("~")
    assert 0.99 <= g.epsilon <= 1.0
    assert p.b > 1397  # raised above the Gaussian match (b = 1397)
    assert (
        calibrated_params(4, 2, 1.0, delta=1e-5, epsilon=1.0, conversion="cks") == p
    )  # deterministic
    below = dataclasses.replace(p, b=int(p.b * 0.99))
    assert below.binomial_epsilon() > 1.0  # b is (within 1 %) the smallest meeting the target


def test_invalid_inputs_name_the_parameter() -> None:
    with pytest.raises(ValidationError, match="p must"):
        ba.binomial_sum_delta(100, 1.5, 1, 4.0, 1.0, 2.0, 1.0)
    with pytest.raises(ValidationError, match="epsilon"):
        ba.binomial_sum_delta(100, 0.25, 1, 4.0, 1.0, 2.0, -1.0)
    with pytest.raises(ValidationError, match="delta"):
        ba.binomial_sum_epsilon(100, 0.25, 1, 4.0, 1.0, 2.0, 2.0)
    with pytest.raises(ValidationError, match="shifts"):
        ba.shift_delta(100, 0.25, np.array([1, 2, 3]), 1.0)
    with pytest.raises(ValidationError, match="g"):
        ba.shift_budget(-1.0, 1.0, 2.0)


@pytest.mark.parametrize(("N", "s_max"), [(58_658_472, 91), (1_150_000, 283)])
def test_blockwise_fft_sums_bound_the_direct_sums_within_1e_8(
    N: int, s_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The FFT path of the windowed Renyi sums (large windows) is an upper bound on the direct matrix
    product and within its stated 1e-8 relative accuracy, at every order and shift.  Without the
    added error bound the FFT entries fall below the direct sums (checked by hand)."""
    alphas = 1.0 + np.geomspace(2e-3, 200.0, 40)
    monkeypatch.setattr(ba, "FFT_MIN_WORK", 10**18)
    direct, tails_direct = ba._log_sums(N, 0.25, s_max, alphas)
    monkeypatch.setattr(ba, "FFT_MIN_WORK", 0)
    blocks, tails_blocks = ba._log_sums(N, 0.25, s_max, alphas)
    assert np.array_equal(tails_direct, tails_blocks)
    assert np.array_equal(np.isfinite(direct), np.isfinite(blocks))
    fin = np.isfinite(direct)
    # directly summed shifts may differ from the one-product sum by float rounding (~1e-13)
    assert np.all(blocks[fin] - direct[fin] >= -1e-11)
    assert np.all(blocks[fin] - direct[fin] <= 1.01e-8)
