"""Privacy of the binomial-noise summation of Cheu et al. (2022), computed from the binomial pmf.

One call of the shuffle summation releases, per label ``k = 1..L``, the count
``Y_k = sum_u x_hat_(u,k) + Bin(N, p)`` with ``N = n b`` (independent across labels), where
``x_hat_(u,k)`` is user ``u``'s randomized rounding of ``u_(u,k) = w_(u,k) g / Delta``.  This module
bounds ``delta(epsilon)`` of one call for a change of one user's input without the Gaussian
approximation of the binomial:

1. The other users' counts are independent of the changed user and have the same law in both
   worlds: adding them is post-processing, so they are dropped.
2. The changed user's count is a mixture over its rounding; by the joint convexity of the
   hockey-stick divergence (under any coupling of the two roundings) ``delta(epsilon)`` is at most
   the maximum over the integer shift vectors ``s = x_hat - x_hat'`` the coupled roundings can
   produce of ``H_s = sum_y (P_s(y) - e^eps P_0(y))_+``, ``P_s`` the law of ``Bin(N, p)^L`` shifted
   by ``s``.  Couple each coordinate's roundings through one uniform ``U_k``:
   ``x_hat_k = floor(u_k + U_k)``, ``x_hat'_k = floor(u'_k + U_k)`` (the right marginals); then
   ``|s_k| <= ceil(|u_k - u'_k|)``, so ``(|s_k| - 1)_+ < |u_k - u'_k|``.  With
   ``||u - u'||_2 <= g Delta_2 / Delta`` (``Delta_2`` the l2 replacement sensitivity of the summed
   coordinates) every shift of the coupling lies in
   ``F = {s in Z^L : sum_k (|s_k| - 1)_+^2 <= (g Delta_2 / Delta)^2, |s_k| <= ceil(2 g)}``.
3. For a central box ``C = C_1 x ... x C_L`` (each ``C_k`` a window of ``+-z`` binomial standard
   deviations around ``N p``) and any ``alpha > 1``, the pointwise inequality
   ``(x - a)_+ <= c_alpha a^(1 - alpha) x^alpha`` with ``c_alpha = (alpha - 1)^(alpha - 1) / alpha^alpha``
   gives ``H_s <= P_s(C^c) + c_alpha e^((1 - alpha) eps) prod_k A_alpha(s_k)`` with
   ``A_alpha(s) = sum_(y in C_k) P_s(y)^alpha P_0(y)^(1 - alpha)`` (exact finite sums of the pmf).
   The product is maximised over ``F`` exactly by dynamic programming over the coordinates
   (separable objective, integer quadratic budget); the tail ``P_s(C^c)`` is at most ``L``
   times its largest one-coordinate value (computed exactly from the binomial cdf).  Minimising over a grid of ``alpha`` (around the
   Gaussian-optimal order) gives the bound.

This is an upper bound on the true ``delta(epsilon)`` of the call (not an approximation); it
differs from the exact value through the relaxation ``F`` of the reachable shifts, the
RDP-type conversion of step 3 and the tail.  :func:`shift_delta` evaluates ``H_s`` exactly for a
given shift vector (a lower bound on the true ``delta(epsilon)`` whenever ``s`` is reachable).

References
----------
Cheu, Joseph, Mao & Peng (2022); Sarmasarkar (2026), Appendix T; Canonne, Kamath & Steinke (2020)
(the conversion constant ``c_alpha``); Agarwal, Suresh, Yu, Kumar & McMahan (2018) (the binomial
mechanism).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import fft as sp_fft
from scipy import stats

from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_delta, check_int, check_positive

__all__ = [
    "ALPHA_FACTORS",
    "Z_WINDOW",
    "binomial_sum_delta",
    "binomial_sum_epsilon",
    "shift_budget",
    "shift_delta",
]

#: Orders ``alpha - 1`` relative to the Gaussian-optimal one over which the bound is minimised
#: (any grid gives a valid bound; this one brackets the optimum).
ALPHA_FACTORS: np.ndarray = np.geomspace(0.25, 4.0, 13)
#: Half-width of the central window, in binomial standard deviations (the tail it leaves is
#: computed exactly and added to delta).
Z_WINDOW: float = 12.0


def shift_budget(g: float, Delta: float, sensitivity: float) -> tuple[int, int]:
    """``(budget, s_max)``: ``sum_k (|s_k| - 1)_+^2 <= budget`` and ``|s_k| <= s_max`` on the coupled shifts.

    ``budget = floor((g Delta_2 / Delta)^2)``; ``s_max = min(floor(g Delta_2 / Delta) + 1, ceil(2 g))``.
    """
    r = (
        check_positive("g", g)
        * check_positive("sensitivity", sensitivity)
        / check_positive("Delta", Delta)
    )
    return math.floor(r * r * (1.0 + 1e-12)), min(
        math.floor(r * (1.0 + 1e-12)) + 1, math.ceil(2.0 * g)
    )


def _alphas(N: int, p: float, budget: int, delta: float) -> np.ndarray:
    """Orders around the Gaussian optimum ``1 + sqrt(log(1/delta) / rho)``, ``rho = (r + 1)^2 / (2 N p (1-p))``,
    plus a fixed grid ``1 + [0.01, 100]`` (the window of large orders is narrow, so for very small
    ``rho`` the optimum is out of reach and a moderate order gives the bound)."""
    rho = (math.sqrt(budget) + 1.0) ** 2 / (2.0 * N * p * (1.0 - p))
    centred = 1.0 + np.maximum(math.sqrt(math.log(1.0 / delta) / rho) * ALPHA_FACTORS, 1e-3)
    return np.concatenate([centred, 1.0 + np.geomspace(1e-2, 100.0, 12)])


def _window(N: int, p: float, z: float) -> np.ndarray:
    sd = math.sqrt(N * p * (1.0 - p))
    lo = max(0, math.floor(N * p - z * sd))
    hi = min(N, math.ceil(N * p + z * sd))
    return np.arange(lo, hi + 1)


#: Above this many products (shifts x window) a cross-correlation runs blockwise by FFT
#: (:func:`_correlate_blocks`); below it, as one exact matrix product.
FFT_MIN_WORK: int = 20_000_000
#: Constant of the absolute error bound of one FFT cross-correlation of non-negative vectors
#: ``a, b`` (length ``n``): ``FFT_ERROR_C u (log2 n + 1) ||a||_1 ||b||_1``, ``u = 2^-53``.  The
#: forward and inverse transforms each have a normwise relative error of at most ``~7 u log2 n``
#: (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., Thm. 24.2) and every
#: spectrum entry is at most ``||a||_1`` (``||b||_1``); 64 covers the three transforms and the
#: product with a margin of two.
FFT_ERROR_C: float = 64.0
#: A block's FFT entry is used only where that error bound is at most this fraction of it; the
#: other shifts of the block are summed directly (exactly as the matrix-product path).
FFT_MAX_REL_ERROR: float = 1e-8


def _correlate_blocks(ta: np.ndarray, tb: np.ndarray, n_shift: int, sd: float) -> np.ndarray:
    """``log sum_j exp(ta[j + k] + tb[j])`` for ``k = 0..n_shift-1``, an upper bound within ``1e-8`` relative.

    ``tb`` (length ``m``) is cut into blocks of about ``sd / 4`` (where ``ta`` is nearly linear);
    within a block both sides are tilted by ``ta``'s slope ``lam`` (``ta[i] - lam i`` and ``tb[j] +
    lam j``; their sum at shift ``k`` is the untilted one minus ``lam k``), which leaves a small
    dynamic range, so the FFT cross-correlation of the exponentials is accurate; its rigorous
    absolute error bound (:data:`FFT_ERROR_C`) is added to every entry, so each block's sum, and
    the log-sum over blocks, is an upper bound on the exact sum (never optimistic).  Entries whose
    bound exceeds :data:`FFT_MAX_REL_ERROR` of their value are summed directly instead.
    """
    m = tb.size
    block = int(min(65536, max(256, 2 ** round(math.log2(max(sd, 1.0) / 4.0)))))
    k = np.arange(n_shift)
    out = np.full(n_shift, -np.inf)
    u = 2.0**-53
    for j0 in range(0, m, block):
        j1 = min(m, j0 + block)
        a_seg = ta[j0 : j1 + n_shift - 1]
        b_seg = tb[j0:j1]
        fin = np.flatnonzero(np.isfinite(a_seg))
        if fin.size == 0:
            continue
        lam = (a_seg[fin[-1]] - a_seg[fin[0]]) / (fin[-1] - fin[0]) if fin.size > 1 else 0.0
        a_t = a_seg - lam * np.arange(a_seg.size)
        b_t = b_seg + lam * np.arange(b_seg.size)
        ma, mb = float(np.max(a_t)), float(np.max(b_t))
        A = np.exp(a_t - ma)
        B = np.exp(b_t - mb)
        n_fft = sp_fft.next_fast_len(A.size, real=True)
        corr = sp_fft.irfft(sp_fft.rfft(A, n_fft) * np.conj(sp_fft.rfft(B, n_fft)), n_fft)[:n_shift]
        err = FFT_ERROR_C * u * (math.log2(n_fft) + 1.0) * float(np.sum(A)) * float(np.sum(B))
        corr = np.maximum(corr, 0.0) + err
        loose = np.flatnonzero(err > FFT_MAX_REL_ERROR * corr)
        if loose.size:  # the bound would be loose here: these shifts exactly, as a direct sum
            corr[loose] = sliding_window_view(A, B.size)[loose] @ B
        with np.errstate(divide="ignore"):
            log_c = np.log(corr) + ma + mb + lam * k
        out = np.logaddexp(out, log_c)
    return out


def _log_sums(N: int, p: float, s_max: int, alphas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log A_alpha(s)`` for ``s = -s_max..s_max`` (shape ``(len(alphas), 2 s_max + 1)``) and the tail per alpha.

    ``A_alpha(s) = sum_(y in C) q(y - s)^alpha q(y)^(1 - alpha)`` (``q`` the ``Bin(N, p)`` pmf), a
    cross-correlation over the window ``C`` (``+-z`` standard deviations, ``z = min(Z_WINDOW,
    sqrt(1300 / (alpha - 1)))`` so that the scaled central terms stay far above the float
    underflow), evaluated for all shifts at once: as one matrix product, or, for large windows
    (more than :data:`FFT_MIN_WORK` products), blockwise by FFT with its rounding error bounded
    and added (:func:`_correlate_blocks`).  A sum that still underflows is reported as ``+inf``
    (that order is then useless, never optimistic).
    """
    shifts = np.arange(-s_max, s_max + 1)
    out = np.empty((alphas.size, shifts.size))
    tails = np.empty(alphas.size)
    sd = math.sqrt(N * p * (1.0 - p))
    widest = _window(N, p, Z_WINDOW)
    w_lo = int(widest[0])
    # the pmf once over the widest window (every order's window lies inside it, same centre)
    log_q_all = stats.binom.logpmf(
        np.arange(w_lo - s_max, int(widest[-1]) + s_max + 1), N, p
    )  # -inf off the support
    for i, a in enumerate(alphas):
        y = _window(N, p, min(Z_WINDOW, math.sqrt(1300.0 / (a - 1.0))))
        lo, hi = int(y[0]), int(y[-1])
        log_q_ext = log_q_all[lo - w_lo : lo - w_lo + y.size + 2 * s_max]
        log_q = log_q_ext[s_max : s_max + y.size]
        ta = a * log_q_ext
        tb = (1.0 - a) * log_q
        if y.size * shifts.size > FFT_MIN_WORK:
            row = _correlate_blocks(ta, tb, shifts.size, sd)[::-1]
        else:
            ma, mb = float(np.max(ta)), float(np.max(tb))
            # corr[k] = sum_j a[j + k] b[j] (as np.correlate(a, b, "valid"), as a matrix product: faster)
            corr = sliding_window_view(np.exp(ta - ma), y.size) @ np.exp(tb - mb)
            with np.errstate(divide="ignore"):
                row = (np.log(corr) + ma + mb)[::-1]  # k = s_max - s  ->  index s + s_max
        out[i] = np.where(np.isfinite(row), row, np.inf)
        # P_s(C^c) = P(Bin < lo - s) + P(Bin > hi - s), largest over |s| <= s_max
        tails[i] = float(
            np.max(stats.binom.cdf(lo - shifts - 1, N, p) + stats.binom.sf(hi - shifts, N, p))
        )
    return out, tails


#: Number of cost cells of the dynamic programme (costs are rounded down to a grid of this many cells).
DP_CELLS: int = 2000


def _max_product(log_a: np.ndarray, s_max: int, budget: int, L: int) -> np.ndarray:
    """An upper bound on ``max over s in F of sum_k log A(s_k)`` for every alpha (dynamic programming over the labels).

    Costs ``(|s| - 1)_+^2`` are rounded down to multiples ``h = max(1, budget // DP_CELLS)`` and the
    budget to ``floor(budget / h)`` cells: ``sum_k floor(c_k / h) <= floor(sum_k c_k / h)``, so
    the rounded problem contains every shift vector of ``F`` (exact when ``h = 1``).
    """
    shifts = np.arange(-s_max, s_max + 1)
    h = max(1, budget // DP_CELLS)
    cost = (np.maximum(np.abs(shifts) - 1, 0) ** 2) // h
    budget = budget // h
    out = np.empty(log_a.shape[0])
    for i in range(log_a.shape[0]):
        # best for each cost level c (0..budget) of one label; then max-plus over labels, with
        # f(b) = best total over costs <= b (nondecreasing in b)
        one = np.full(budget + 1, -np.inf)
        for s_idx in range(shifts.size):
            c = int(cost[s_idx])
            if c <= budget:
                one[c] = max(one[c], log_a[i, s_idx])
        levels = np.flatnonzero(
            one > -np.inf
        )  # +inf (an underflowed sum) propagates: that order is dropped
        f = np.zeros(budget + 1)
        for _ in range(L):
            new = np.full(budget + 1, -np.inf)
            for c in levels.tolist():
                np.maximum(new[c:], one[c] + f[: budget + 1 - c], out=new[c:])
            f = new
        out[i] = f[budget]
    return out


@functools.lru_cache(maxsize=256)
def _log_bound_terms(
    N: int, p: float, L: int, g: float, Delta: float, sensitivity: float, delta_hint: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    N = check_int("N", N, 1)
    L = check_int("L", L, 1)
    budget, s_max = shift_budget(g, Delta, sensitivity)
    alphas = _alphas(N, p, budget, delta_hint)
    log_a, tails = _log_sums(N, p, s_max, alphas)
    log_prod = _max_product(log_a, s_max, budget, L)
    log_c = (alphas - 1.0) * np.log(alphas - 1.0) - alphas * np.log(alphas)
    return log_prod + log_c, alphas, L * tails


def binomial_sum_delta(
    N: int, p: float, L: int, g: float, Delta: float, sensitivity: float, epsilon: float
) -> float:
    """Upper bound on ``delta(epsilon)`` of one summation call (module docstring).

    Parameters
    ----------
    N : int
        Binomial noise bits per label, summed over users (``n b``).
    p : float
        Bit probability.
    L : int
        Number of labels (summed coordinates).
    g, Delta, sensitivity : float
        Precision, input bound and l2 replacement sensitivity of the summed coordinates.
    epsilon : float
    """
    if not 0.0 < p < 1.0:
        raise ValidationError(f"p must lie in (0, 1), got {p!r}")
    eps = float(epsilon)
    if not (math.isfinite(eps) and eps >= 0.0):
        raise ValidationError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    log_terms, alphas, tails = _log_bound_terms(N, p, L, g, Delta, sensitivity, 1e-6)
    with np.errstate(over="ignore"):  # a useless order overflows to +inf, which the minimum ignores
        return float(min(1.0, np.min(tails + np.exp(log_terms + (1.0 - alphas) * eps))))


def binomial_sum_epsilon(
    N: int, p: float, L: int, g: float, Delta: float, sensitivity: float, delta: float
) -> float:
    """Smallest epsilon of the bound at ``delta`` (``inf`` if the tail alone exceeds ``delta``)."""
    if not 0.0 < p < 1.0:
        raise ValidationError(f"p must lie in (0, 1), got {p!r}")
    dlt = check_delta(delta)
    log_terms, alphas, tails = _log_bound_terms(N, p, L, g, Delta, sensitivity, dlt)
    ok = tails < dlt
    if not np.any(ok):
        return math.inf
    eps = (log_terms[ok] - np.log(dlt - tails[ok])) / (alphas[ok] - 1.0)
    return float(max(0.0, np.min(eps)))


def shift_delta(N: int, p: float, shifts: np.ndarray, epsilon: float) -> float:
    """Exact ``H_s = sum_y (P_s(y) - e^eps P_0(y))_+`` for a shift vector of at most 2 labels.

    ``P_s`` is the law of ``Bin(N, p)^L`` shifted by ``s``; the sum runs over the whole (finite)
    support.  A brute-force reference (``L <= 2``), e.g. for tests.
    """
    s = np.atleast_1d(np.asarray(shifts, dtype=np.int64))
    if s.ndim != 1 or not 1 <= s.size <= 2:
        raise ValidationError(f"shifts must hold 1 or 2 integers, got shape {s.shape}")
    lo, hi = int(min(0, s.min())), int(N + max(0, s.max()))
    y = np.arange(lo, hi + 1)
    log_p = [stats.binom.logpmf(y - sk, N, p) for sk in s]
    log_q = stats.binom.logpmf(y, N, p)
    if s.size == 1:
        return float(np.sum(np.maximum(np.exp(log_p[0]) - math.exp(epsilon) * np.exp(log_q), 0.0)))
    P = np.exp(log_p[0][:, None] + log_p[1][None, :])
    Q = np.exp(log_q[:, None] + log_q[None, :])
    return float(np.sum(np.maximum(P - math.exp(epsilon) * Q, 0.0)))
