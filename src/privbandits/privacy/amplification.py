"""Privacy amplification by shuffling (Feldman, McMillan & Talwar 2021, "Hiding Among the Clones").

Shuffling the reports of ``n`` users, each produced by an ``eps0``-DP local randomizer (chosen
adaptively, possibly different per position), gives an ``(eps, delta)``-DP output.  Two bounds:

* ``"closed"``: FMT21 Theorem 3.1 (eq. (10) of Hanna et al. 2022; correction Hanna22-14),
  ``f_{n,delta}(eps0) = ln(1 + (e^eps0 - 1)/(e^eps0 + 1) (8 sqrt(e^eps0 ln(4/delta)) / sqrt(n)
  + 8 e^eps0 / n))``, valid only when ``eps0 <= ln(n / (16 ln(2/delta)))``;
* ``"numerical"``: FMT21's tighter numerical procedure (Theorem 3.2 and Appendix E): the
  hockey-stick divergence of the dominating pair ``P, Q`` (a binomial mixture, below), valid for
  every ``eps0`` and ``n``, evaluated exactly and vectorized over the number of clones.

The numerical bound.  Let ``C ~ Bin(n - 1, e^{-eps0})`` (the other users that are "clones" of the
differing user), ``A ~ Bin(C, 1/2)``, ``alpha = e^eps0 / (e^eps0 + 1)``.  Given ``C = c``,
``P_c = alpha Bin(c, 1/2) + (1 - alpha) (Bin(c, 1/2) + 1)`` and ``Q_c`` with ``alpha`` and
``1 - alpha`` swapped.  Then ``delta(eps) = sum_c P(C = c) D_{e^eps}(P_c || Q_c)`` (``P_c`` and ``Q_c``
are mirror images, so the divergence is symmetric).  The likelihood ratio ``P_c(k)/Q_c(k)`` is
decreasing in ``k``, so the divergence is ``P_c(S) - e^eps Q_c(S)`` with ``S = {k <= beta (c+1)}``
and ``beta = r / (1 + r)``, ``r = (alpha - e^eps (1 - alpha)) / (e^eps alpha - (1 - alpha))``.
Values of ``c`` outside the central ``1 - 2 tau`` quantile range of ``C`` are not evaluated; their
mass is added to delta in full (each divergence is at most 1), so the result is an upper bound.

References
----------
Feldman, McMillan & Talwar (2021), FOCS, arXiv:2012.12803, Thm 3.1, Thm 3.2, Appendix E; the
authors' reference code github.com/apple/ml-shuffling-amplification (README: n = 1e5, eps0 = 4,
delta = 1e-6 gives a numerical eps in [0.16754, 0.17279]).
Hanna, Girgis, Fragouli & Diggavi (2022), eq. (10) and correction Hanna22-14 (validity condition, Algorithm E0)
in the documentation.
"""

from __future__ import annotations

import math

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_choice, check_delta, check_epsilon, check_int
from privbandits.privacy.accounting import ApproxDP, PureDP
from privbandits.privacy.calibration import Bracket, calibrate_noise

__all__ = [
    "BOUNDS",
    "amplified_epsilon",
    "amplified_guarantee",
    "closed_form_epsilon",
    "closed_form_inverse",
    "closed_form_valid",
    "local_epsilon_for_target",
    "max_local_epsilon",
    "numerical_delta",
    "numerical_epsilon",
]

#: Amplification bounds understood by :func:`amplified_epsilon` and :func:`local_epsilon_for_target`.
BOUNDS: tuple[str, ...] = ("closed", "numerical")


def _check_eps0(eps0: float) -> float:
    return check_epsilon(eps0, "eps0")


# --------------------------------------------------------------------------------------------
# closed form (FMT21 Thm 3.1)
# --------------------------------------------------------------------------------------------
def closed_form_epsilon(eps0: float, n: int, delta: float) -> float:
    """The raw closed form ``f_{n,delta}(eps0)`` of FMT21 Thm 3.1 (no validity check).

    Only a privacy statement when :func:`closed_form_valid` holds; see :func:`amplified_epsilon`.
    Uses ``expm1``/``log1p``; for large ``eps0`` it grows like ``eps0 + ln(8/n)``.
    """
    e0 = _check_eps0(eps0)
    n = check_int("n", n, 1)
    dlt = check_delta(delta)
    if e0 > 700.0:  # e^eps0 overflows; the asymptote is exact to double precision there
        return e0 + math.log(
            8.0 / n + 8.0 * math.sqrt(math.log(4.0 / dlt) / n) * math.exp(-e0 / 2.0)
        )
    ratio = math.tanh(e0 / 2.0)  # (e^eps0 - 1) / (e^eps0 + 1)
    term = 8.0 * math.sqrt(math.exp(e0) * math.log(4.0 / dlt) / n) + 8.0 * math.exp(e0) / n
    return math.log1p(ratio * term)


def max_local_epsilon(n: int, delta: float, *, strict: bool = False) -> float:
    """Validity cap of FMT21 Thm 3.1: ``ln(n / (16 ln(2/delta)))``.

    With ``strict=True`` the slightly smaller ``ln(n / (16 ln(4/delta)))`` that the authors'
    reference code tests (always safe).  A value <= 0 means no ``eps0 > 0`` is covered
    (``n <= 16 ln(2/delta)``, e.g. n <= 232 at delta = 1e-6).
    """
    n = check_int("n", n, 1)
    dlt = check_delta(delta)
    return math.log(n / (16.0 * math.log((4.0 if strict else 2.0) / dlt)))


def closed_form_valid(eps0: float, n: int, delta: float, *, strict: bool = False) -> bool:
    """Whether Thm 3.1 covers ``eps0`` at ``(n, delta)``: ``eps0 <= max_local_epsilon(n, delta)``."""
    return _check_eps0(eps0) <= max_local_epsilon(n, delta, strict=strict)


def closed_form_inverse(epsilon: float, delta: float, n: int) -> float:
    """Literal inverse ``f^{-1}_{n,delta}(epsilon)``: no validity cap, no fallback.

    This is what Hanna et al. (2022), Algorithm 3 step 8 prints (``shuffle_bound="paper"``).  It
    can be *smaller* than ``epsilon`` (wasteful, small n) and can exceed the validity cap, where it
    certifies nothing (Hanna et al. 2022, eq. 10, correction Hanna22-14): use :func:`local_epsilon_for_target` for a certified value.  The
    root is bracketed by doubling (``f`` grows like ``eps0 + ln(8/n)``), never a fixed interval.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    n = check_int("n", n, 1)
    hi = max(1.0, eps + math.log(max(n, 8) / 8.0))
    root = calibrate_noise(
        lambda x: closed_form_epsilon(x, n, dlt),
        eps,
        Bracket(1e-300, hi, factor=2.0),
        decreasing=False,
        xtol=1e-300,
        rtol=1e-14,
        rel=1e-13,
    )
    return float(root)


# --------------------------------------------------------------------------------------------
# numerical bound (FMT21 Thm 3.2, Appendix E)
# --------------------------------------------------------------------------------------------
def _divergence_given_c(c: np.ndarray, eps: float, eps0: float) -> np.ndarray:
    """``D_{e^eps}(P_c || Q_c)`` for an array of clone counts ``c`` (exact, vectorized)."""
    from scipy import stats  # lazy: scipy.stats costs ~1 s of import time

    alpha = 1.0 / (1.0 + math.exp(-eps0))  # e^eps0 / (1 + e^eps0)
    ee = math.exp(eps)
    num = alpha - ee * (1.0 - alpha)
    if num <= 0.0:  # eps >= eps0: the ratio never exceeds e^eps
        return np.zeros(c.shape)
    r = num / (ee * alpha - (1.0 - alpha))
    m = np.floor(r / (1.0 + r) * (c + 1.0))  # S = {k <= m}
    B_m = stats.binom.cdf(m, c, 0.5)
    B_m1 = np.maximum(B_m - stats.binom.pmf(m, c, 0.5), 0.0)  # P(K <= m - 1)
    p_S = alpha * B_m + (1.0 - alpha) * B_m1
    q_S = (1.0 - alpha) * B_m + alpha * B_m1
    return np.maximum(p_S - ee * q_S, 0.0)


def numerical_delta(eps0: float, n: int, epsilon: float, *, tail: float = 1e-16) -> float:
    """Upper bound on the delta at ``epsilon`` of ``n`` shuffled ``eps0``-DP reports (FMT21 Thm 3.2).

    Parameters
    ----------
    eps0 : float
        Local epsilon of each report.
    n : int
        Number of shuffled reports.
    epsilon : float
        Central epsilon >= 0 at which delta is evaluated.
    tail : float
        Mass of each tail of ``C ~ Bin(n - 1, e^{-eps0})`` left unevaluated; it is added to the
        result in full, so the value stays an upper bound.
    """
    from scipy import stats  # lazy: scipy.stats costs ~1 s of import time

    e0 = _check_eps0(eps0)
    n = check_int("n", n, 1)
    eps = float(epsilon)
    if not eps >= 0.0:
        raise ValidationError(f"epsilon must be >= 0, got {epsilon!r}")
    if eps >= e0:
        return 0.0
    p = math.exp(-e0)
    N = n - 1
    if N == 0:
        c = np.zeros(1)
        w = np.ones(1)
        rest = 0.0
    else:
        lo = int(stats.binom.ppf(tail, N, p))
        hi = int(stats.binom.isf(tail, N, p))
        lo, hi = max(lo - 1, 0), min(hi + 1, N)
        c = np.arange(lo, hi + 1, dtype=float)
        w = stats.binom.pmf(c, N, p)
        rest = float(stats.binom.cdf(lo - 1, N, p) + stats.binom.sf(hi, N, p))
    return float(min(1.0, np.dot(w, _divergence_given_c(c, eps, e0)) + rest))


def numerical_epsilon(eps0: float, n: int, delta: float, *, rtol: float = 1e-9) -> float:
    """Smallest epsilon with :func:`numerical_delta` ``<= delta`` (Brent's method, rounded up).

    Always ``<= eps0`` (at ``eps = eps0`` the divergence is 0).
    """
    e0 = _check_eps0(eps0)
    n = check_int("n", n, 1)
    dlt = check_delta(delta)
    if numerical_delta(e0, n, 0.0) <= dlt:
        return 0.0
    hi = e0
    if closed_form_valid(e0, n, dlt):  # cheap upper bracket, verified before use
        cf = closed_form_epsilon(e0, n, dlt)
        if cf < hi and numerical_delta(e0, n, cf) <= dlt:
            hi = cf
    # delta(eps) is continuous and decreasing: Brent's method, then round up until certified
    eps = calibrate_noise(
        lambda e: numerical_delta(e0, n, e),
        dlt,
        Bracket(0.0, hi),
        xtol=1e-300,
        rtol=rtol,
        rel=rtol,
        growth=2.0,
        additive=True,
        limit=hi,
    )
    return min(eps, hi)


# --------------------------------------------------------------------------------------------
# the two directions the algorithms use
# --------------------------------------------------------------------------------------------
def amplified_epsilon(
    eps0: float, n: int, delta: float, bound: str = "closed", *, strict: bool = False
) -> float:
    """Central epsilon (at ``delta``) of ``n`` shuffled ``eps0``-DP reports.

    Parameters
    ----------
    eps0 : float
        Local epsilon of each report.
    n : int
        Number of users shuffled together.
    delta : float
        Central delta in (0, 1).
    bound : {"closed", "numerical"}
        FMT21 Thm 3.1 (with its validity condition enforced) or the numerical Thm 3.2 bound.
    strict : bool
        Use the authors' code's stricter validity test (``ln(4/delta)``) for the closed form.

    Returns
    -------
    float
        ``min(f_{n,delta}(eps0), eps0)`` when the closed form is valid, ``eps0`` when it is not
        (no amplification is claimed: the reports alone are ``(eps0, 0)``-DP); the numerical
        bound is valid everywhere and never exceeds ``eps0``.
    """
    e0 = _check_eps0(eps0)
    n = check_int("n", n, 1)
    dlt = check_delta(delta)
    bound = check_choice("bound", bound, BOUNDS)
    if bound == "numerical":
        return numerical_epsilon(e0, n, dlt)
    if not closed_form_valid(e0, n, dlt, strict=strict):
        return e0
    return min(closed_form_epsilon(e0, n, dlt), e0)


def amplified_guarantee(
    eps0: float, n: int, delta: float, bound: str = "closed", *, strict: bool = False
) -> PureDP | ApproxDP:
    """The central statement for ``n`` shuffled ``eps0``-DP reports.

    ``ApproxDP(amplified_epsilon, delta)`` when shuffling helps, otherwise ``PureDP(eps0)`` (the
    reports themselves, no delta spent).
    """
    e0 = _check_eps0(eps0)
    eps = amplified_epsilon(e0, n, delta, bound, strict=strict)
    return ApproxDP(eps, delta) if eps < e0 else PureDP(e0)


def local_epsilon_for_target(
    epsilon: float, delta: float, n: int, bound: str = "closed", *, strict: bool = False
) -> float:
    """Largest local ``eps0`` whose shuffled batch of ``n`` users is ``(epsilon, delta)``-DP.

    ``bound="closed"`` is Algorithm E0 (Hanna et al. 2022, eq. 10, correction Hanna22-14):

    1. if ``n <= 16 ln(2/delta)``, return ``epsilon`` (no amplification);
    2. ``e_max = ln(n / (16 ln(2/delta)))``; if ``e_max <= epsilon`` return ``epsilon``;
    3. if ``f(e_max) <= epsilon`` return ``e_max`` (capped at the validity limit);
    4. otherwise the root of ``f(x) = epsilon`` in ``[0, e_max]``, and at least ``epsilon``.

    ``bound="numerical"``: the largest ``eps0 >= epsilon`` with
    ``numerical_delta(eps0, n, epsilon) <= delta`` (no validity cap is needed: FMT21 Thm 3.2 holds
    for every ``eps0``), bracketed by doubling, found by Brent's method and rounded down.

    The fallback ``eps0 = epsilon`` is always valid: each user's report is then ``epsilon``-LDP and
    each user is in one batch, so the batch is ``(epsilon, 0)``-DP without any amplification.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    n = check_int("n", n, 1)
    bound = check_choice("bound", bound, BOUNDS)
    if bound == "numerical":
        loss = lambda e0: numerical_delta(e0, n, eps)
        lo = eps  # the last level known to meet the target (the bracket slides up to it)
        while loss(2.0 * lo) <= dlt:
            lo *= 2.0
        e0 = calibrate_noise(
            loss,
            dlt,
            Bracket(lo, 2.0 * lo),
            decreasing=False,
            xtol=1e-300,
            rtol=1e-10,
            rel=1e-10,
            growth=2.0,
            additive=True,
            limit=lo,
        )
        return max(e0, lo)
    e_max = max_local_epsilon(n, dlt, strict=strict)
    if e_max <= eps:  # includes n <= 16 ln(2/delta), where e_max <= 0
        return eps
    if closed_form_epsilon(e_max, n, dlt) <= eps:
        return e_max
    root = calibrate_noise(
        lambda x: closed_form_epsilon(x, n, dlt),
        eps,
        Bracket(1e-300, e_max),
        decreasing=False,
        xtol=1e-300,
        rtol=1e-14,
        rel=1e-13,
    )
    return max(float(root), eps)
