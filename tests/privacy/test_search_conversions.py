"""The calibration searches that run on ``privacy.calibration.calibrate_noise``: each result is
compared with the hand-written search it replaces (re-implemented here as the reference), and
must be identical or provably at least as private, and meet its target.

* the Laplace scale of Hanna et al.'s shuffle batches (``laplace_scale_for``): the reference
  steps ``sens / eps0`` up by one float until ``sens / scale <= eps0``; the new scale is never
  below it (it is ``>= sens / eps0`` and meets the target, and every float between the two fails);
* the binomial bit count of the calibrated Cheu et al. summation (``_raise_b_to_target``): the
  reference bisects to within 0.5 % of the smallest ``b``; the new ``b`` is never below its result;
* the per-round level of Algorithm 7 in theory mode (``pgd_theory_rounds``): the reference bisects
  200 times for the largest ``eps_it`` whose advanced composition is at most ``epsilon``; the new
  ``eps_it`` is never above it (smaller ``eps_it``: more noise bits per round).
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.algorithms.sarmasarkar.shuffle_plan import pgd_theory_rounds
from privbandits.privacy import cheu
from privbandits.privacy.cheu import SumParams, calibrated_params
from privbandits.privacy.laplace_shuffle import laplace_scale_for


# --------------------------------------------------------------------------------------------
# the replaced searches (references)
# --------------------------------------------------------------------------------------------
def _laplace_reference(eps0: float, sens: float) -> float:
    scale = sens / eps0
    while sens / scale > eps0:
        scale = math.nextafter(scale, math.inf)
    return scale


def _cheu_reference(params: SumParams, epsilon: float) -> int:
    def eps_at(b: int) -> float:
        return dataclasses.replace(params, b=b).binomial_epsilon()

    lo = params.b
    hi = max(lo + 1, math.ceil(lo * (eps_at(lo) / epsilon) ** 2 * 1.02))
    while eps_at(hi) > epsilon:
        lo, hi = hi, 2 * hi
    while hi - lo > max(1, lo // 200):
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if eps_at(mid) > epsilon else (lo, mid)
    return hi


def _pgd_reference(n: int, d: int, epsilon: float, delta: float, max_iters: int) -> float:
    T_it = int(
        min(max(1, math.floor(epsilon**2 * n * n / (d * math.log(n * d / delta) ** 3))), max_iters)
    )
    delta_it = delta / (T_it + 1)
    eps_it = epsilon / (2.0 * math.sqrt(2.0 * T_it * math.log(1.0 / delta)))

    def composed(e: float) -> float:
        return math.sqrt(2.0 * T_it * math.log(1.0 / delta_it)) * e + T_it * e * math.expm1(e)

    if composed(eps_it) > epsilon:
        lo, hi = 0.0, eps_it
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if composed(mid) <= epsilon else (lo, mid)
        eps_it = lo
    return eps_it


# --------------------------------------------------------------------------------------------
# Laplace scale
# --------------------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(
    eps0=st.floats(1e-4, 50.0, allow_nan=False, allow_infinity=False),
    sens=st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False),
)
def test_laplace_scale_is_never_below_the_float_step_search(eps0: float, sens: float) -> None:
    ref = _laplace_reference(eps0, sens)
    new = laplace_scale_for(eps0, sens)
    assert sens / new <= eps0
    assert new >= ref
    assert new <= ref * (1.0 + 1e-10)
    if sens / (sens / eps0) <= eps0:  # the reference took no step: identical
        assert new == ref


def test_laplace_scale_searches_where_the_division_rounds_down() -> None:
    """Cases where ``sens / (sens / eps0) > eps0``: the search runs and meets the target."""
    hits = 0
    for i in range(1, 4000):
        eps0, sens = 0.001 * i + 0.0003, 1.0 + 0.37 * (i % 7)
        if sens / (sens / eps0) > eps0:
            hits += 1
            new = laplace_scale_for(eps0, sens)
            assert sens / new <= eps0 and new >= _laplace_reference(eps0, sens)
    assert hits > 10  # the branch is exercised


# --------------------------------------------------------------------------------------------
# Cheu et al. bit count
# --------------------------------------------------------------------------------------------
#: Calibrated calls whose Gaussian-matched ``b`` falls short of the epsilon target (small ``g``).
RAISED = [
    (4, 2, "matrix", 1.0, 1e-5),
    (8, 3, "vector", 2.0, 1e-6),
    (3, 2, "vector", 4.0, 1e-3),
]


@pytest.mark.parametrize("n,d,kind,eps,delta", RAISED)
def test_cheu_bits_are_never_below_the_bisection(
    n: int, d: int, kind: str, eps: float, delta: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[SumParams, float]] = []
    orig = cheu._raise_b_to_target

    def spy(params: SumParams, epsilon: float) -> SumParams:
        seen.append((params, epsilon))
        return orig(params, epsilon)

    monkeypatch.setattr(cheu, "_raise_b_to_target", spy)
    p = calibrated_params(n, d, 1.0, delta=delta, epsilon=eps, kind=kind, psd_inputs=True)
    assert seen, "the Gaussian match meets the target here: the case does not test the search"
    start, target = seen[0]
    ref = _cheu_reference(start, target)
    assert p.b >= ref  # at least as private as the bisection's result
    assert p.binomial_epsilon() <= eps
    # and no more than the 0.5 % headroom above the smallest b meeting the target
    b_min = p.b
    while b_min > start.b and dataclasses.replace(p, b=b_min - 1).binomial_epsilon() <= eps:
        b_min -= 1
    assert p.b == b_min - 1 + max(1, (b_min - 1) // 200)


# --------------------------------------------------------------------------------------------
# Algorithm 7, theory mode
# --------------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(50, 10**6),
    d=st.integers(1, 20),
    eps=st.floats(0.05, 15.0),
    delta=st.floats(1e-8, 0.3),
    max_iters=st.integers(1, 5000),
)
def test_pgd_level_is_never_above_the_bisection(
    n: int, d: int, eps: float, delta: float, max_iters: int
) -> None:
    T_it, e_it, delta_it, _ = pgd_theory_rounds(n, d, eps, delta, max_iters)
    ref = _pgd_reference(n, d, eps, delta, max_iters)
    composed = math.sqrt(2.0 * T_it * math.log(1.0 / delta_it)) * e_it + T_it * e_it * math.expm1(
        e_it
    )
    assert composed <= eps
    assert e_it <= ref
    assert e_it >= ref * (1.0 - 1e-9)


def test_pgd_level_search_is_exercised() -> None:
    """The composition of Algorithm 7's printed level exceeds epsilon here: the search runs."""
    n, d, eps, delta, cap = 2000, 2, 4.0, 0.1, 100
    T_it = min(max(1, math.floor(eps**2 * n * n / (d * math.log(n * d / delta) ** 3))), cap)
    printed = eps / (2.0 * math.sqrt(2.0 * T_it * math.log(1.0 / delta)))
    _, e_it, _, _ = pgd_theory_rounds(n, d, eps, delta, cap)
    assert e_it < printed
    assert e_it == pytest.approx(_pgd_reference(n, d, eps, delta, cap), rel=1e-12)
