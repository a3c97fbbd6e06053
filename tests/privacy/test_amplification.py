"""Amplification by shuffling: published values, an independent brute-force check, inverses, validity."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privbandits.core.errors import ValidationError
from privbandits.privacy.accounting import ApproxDP, PureDP
from privbandits.privacy.amplification import (
    amplified_epsilon,
    amplified_guarantee,
    closed_form_epsilon,
    closed_form_inverse,
    closed_form_valid,
    local_epsilon_for_target,
    max_local_epsilon,
    numerical_delta,
    numerical_epsilon,
)

DELTA = 1e-6


# --------------------------------------------------------------------------------------------
# published values
# --------------------------------------------------------------------------------------------
# Hanna et al. (2022) spec §3.9, Algorithm E0 reference table (delta = 1e-6)
E0_TABLE = [
    (100, 0.1, 0.1),
    (100, 1.0, 1.0),
    (300, 0.1, 0.1090),
    (300, 1.0, 1.0),
    (1000, 0.1, 0.1926),
    (1000, 1.0, 1.4604),
    (10_000, 0.1, 0.5281),
    (10_000, 1.0, 3.5037),
    (100_000, 0.1, 1.2743),
    (100_000, 1.0, 5.7008),
    (1_000_000, 0.1, 2.6985),
    (1_000_000, 1.0, 7.9915),
]


@pytest.mark.parametrize("n, eps, eps0", E0_TABLE)
def test_local_epsilon_matches_spec_table(n, eps, eps0):
    assert local_epsilon_for_target(eps, DELTA, n) == pytest.approx(eps0, abs=5e-5)


def test_closed_form_spec_values():
    assert 16 * math.log(2 / DELTA) == pytest.approx(232.139, abs=1e-3)
    assert closed_form_epsilon(1.0, 100, DELTA) == pytest.approx(1.2462, abs=1e-4)
    assert max_local_epsilon(1000, DELTA) == pytest.approx(1.4604, abs=1e-4)
    assert closed_form_epsilon(1.4604, 1000, DELTA) == pytest.approx(0.8317, abs=1e-4)
    assert closed_form_epsilon(50.0, 4, DELTA) == pytest.approx(50.69, abs=1e-2)
    assert closed_form_epsilon(50.0, 10**7, DELTA) == pytest.approx(35.96, abs=1e-2)


@pytest.mark.parametrize(
    "eps, n, literal",
    [
        (1.0, 100, 0.761),
        (0.1, 100, 0.064),
        (1.0, 300, 1.157),
        (1.0, 1000, 1.764),
        (10.0, 10**6, 21.66),
        (100.0, 4, 99.3),
        (100.0, 100, 102.5),
        (100.0, 10**6, 111.7),
    ],
)
def test_literal_paper_inverse_spec_values(eps, n, literal):
    got = closed_form_inverse(eps, DELTA, n)
    assert got == pytest.approx(literal, abs=0.5 * 10 ** -(len(str(literal).split(".")[1])))
    assert closed_form_epsilon(got, n, DELTA) <= eps


def test_authors_reference_example():
    """apple/ml-shuffling-amplification README: n = 1e5, eps0 = 4, delta = 1e-6 gives a numerical
    eps between 0.16754 (lower bound) and 0.17279 (upper bound, 10 bisection steps), and a closed
    form of 0.53780 from their code's variant, which is looser than Thm 3.1 as printed."""
    eps = numerical_epsilon(4.0, 100_000, DELTA)
    assert 0.1675385583317841 <= eps <= 0.172790550755978
    assert eps == pytest.approx(0.16977, abs=5e-5)  # our exact value, pinned to 4 digits
    closed = closed_form_epsilon(4.0, 100_000, DELTA)
    assert eps < closed < 0.5378040242374512
    assert closed == pytest.approx(0.53463, abs=5e-5)


# --------------------------------------------------------------------------------------------
# the numerical bound against an independent brute-force evaluation
# --------------------------------------------------------------------------------------------
def brute_force_delta(eps0: float, n: int, eps: float) -> float:
    """sum_c P(C = c) sum_k max(0, P_c(k) - e^eps Q_c(k)) with explicit pmfs (no cutoff algebra)."""
    a = math.exp(eps0) / (1 + math.exp(eps0))
    total = 0.0
    for c in range(n):
        w = stats.binom.pmf(c, n - 1, math.exp(-eps0))
        if w < 1e-30:
            continue
        b = np.append(stats.binom.pmf(np.arange(c + 1), c, 0.5), 0.0)  # support 0..c+1
        b_shift = np.concatenate([[0.0], b[:-1]])  # Bin(c, 1/2) + 1
        P = a * b + (1 - a) * b_shift
        Q = a * b_shift + (1 - a) * b
        total += w * max(
            np.maximum(P - math.exp(eps) * Q, 0).sum(), np.maximum(Q - math.exp(eps) * P, 0).sum()
        )
    return total


@pytest.mark.parametrize("eps0, n", [(0.5, 60), (2.0, 300), (4.0, 1000)])
def test_numerical_delta_matches_brute_force(eps0, n):
    for eps in [0.0, 0.05, 0.2, 0.6 * eps0]:
        assert numerical_delta(eps0, n, eps) == pytest.approx(
            brute_force_delta(eps0, n, eps), rel=1e-9, abs=1e-14
        )


def test_numerical_epsilon_is_tight_by_brute_force():
    eps0, n = 3.0, 2000
    eps = numerical_epsilon(eps0, n, 1e-5)
    assert brute_force_delta(eps0, n, eps) <= 1e-5
    assert brute_force_delta(eps0, n, eps * (1 - 1e-4)) > 1e-5


# --------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(st.floats(0.05, 6.0), st.integers(300, 10**6), st.floats(1e-10, 1e-3))
def test_numerical_is_tighter_than_closed_and_never_above_eps0(eps0, n, delta):
    num = amplified_epsilon(eps0, n, delta, "numerical")
    closed = amplified_epsilon(eps0, n, delta, "closed")
    assert num <= closed * (1 + 1e-8) <= eps0 * (1 + 1e-8)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.05, 5.0), st.integers(1000, 2 * 10**5))
def test_amplified_epsilon_is_monotone(eps0, n):
    for bound in ("closed", "numerical"):
        e = amplified_epsilon(eps0, n, DELTA, bound)
        assert amplified_epsilon(eps0 * 1.1, n, DELTA, bound) >= e * (1 - 1e-8)
        assert amplified_epsilon(eps0, 2 * n, DELTA, bound) <= e * (1 + 1e-8)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.01, 5.0), st.floats(1e-10, 1e-2), st.integers(1, 10**7))
def test_closed_inverse_round_trips_within_the_validity_cap(eps, delta, n):
    e0 = local_epsilon_for_target(eps, delta, n)
    e_max = max_local_epsilon(n, delta)
    assert e0 >= eps
    assert e0 <= max(eps, e_max)  # never beyond Thm 3.1's validity
    assert amplified_epsilon(e0, n, delta) <= eps * (1 + 1e-12)
    if eps < e0 < e_max:  # interior root: f(eps0) = eps, so eps0 is the largest
        assert closed_form_epsilon(e0, n, delta) == pytest.approx(eps, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.05, 3.0), st.floats(1e-9, 1e-3), st.integers(2, 10**6))
def test_numerical_inverse_is_certified_and_maximal(eps, delta, n):
    e0 = local_epsilon_for_target(eps, delta, n, "numerical")
    assert e0 >= eps
    assert numerical_delta(e0, n, eps) <= delta
    if e0 > eps:
        assert numerical_delta(e0 * (1 + 1e-6), n, eps) > delta
    # the tighter numerical bound allows at least the local epsilon that Algorithm E0 allows
    assert e0 >= local_epsilon_for_target(eps, delta, n, "closed") * (1 - 1e-9)


# --------------------------------------------------------------------------------------------
# validity condition
# --------------------------------------------------------------------------------------------
def test_validity_condition_enforced():
    assert max_local_epsilon(232, DELTA) < 0 < max_local_epsilon(233, DELTA)
    assert not closed_form_valid(0.01, 232, DELTA)
    # n = 300: e_max = 0.256; f(1) < 1 would be claimed by the literal formula but is not certified
    assert closed_form_valid(0.25, 300, DELTA) and not closed_form_valid(0.26, 300, DELTA)
    assert amplified_epsilon(1.0, 300, DELTA) == 1.0
    assert amplified_guarantee(1.0, 300, DELTA) == PureDP(1.0)
    g = amplified_guarantee(0.2, 300, DELTA)
    assert isinstance(g, ApproxDP) and g.delta == DELTA and g.epsilon < 0.2
    # literal inverse overclaims where E0 falls back (spec §3.9): n = 300, eps = 1
    assert closed_form_inverse(1.0, DELTA, 300) > 1.0 == local_epsilon_for_target(1.0, DELTA, 300)
    # the authors' code's stricter ln(4/delta) test is available and smaller
    assert max_local_epsilon(1000, DELTA, strict=True) < max_local_epsilon(1000, DELTA)
    assert local_epsilon_for_target(1.0, DELTA, 1000, strict=True) == pytest.approx(
        max_local_epsilon(1000, DELTA, strict=True)
    )


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: amplified_epsilon(0.0, 100, DELTA), "eps0"),
        (lambda: amplified_epsilon(1.0, 0, DELTA), "n"),
        (lambda: amplified_epsilon(1.0, 10.5, DELTA), "n"),
        (lambda: amplified_epsilon(1.0, 100, 0.0), "delta"),
        (lambda: amplified_epsilon(1.0, 100, DELTA, "tight"), "bound"),
        (lambda: local_epsilon_for_target(-1.0, DELTA, 100), "epsilon"),
        (lambda: local_epsilon_for_target(1.0, 1.5, 100), "delta"),
        (lambda: numerical_delta(1.0, 100, -0.5), "epsilon"),
    ],
)
def test_invalid_inputs_raise(call, name):
    with pytest.raises(ValidationError, match=name):
        call()
