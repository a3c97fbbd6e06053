"""Statistics of the empirical privacy audit: Clopper-Pearson bounds, epsilon lower bounds, threshold tests.

For neighbouring inputs ``(D, D')`` of an ``(epsilon, delta)``-DP mechanism and any set ``S`` of
outputs, ``P(M(D) in S) <= e^eps P(M(D') in S) + delta`` (both orders).  A threshold test on a
one-dimensional statistic ``T`` with ``FPR = P_b(T in S)`` (the null ``b`` rejected) and
``FNR = 1 - P_a(T in S)`` therefore gives

    epsilon >= ln((1 - delta - FNR) / FPR)                                   (1)

This module turns error counts into high-confidence lower bounds on epsilon (one-sided
Clopper-Pearson bounds on both rates) and selects / evaluates threshold tests on draws of ``T``
(the driver, :mod:`privbandits.privacy.audit.driver`, splits the draws into a training half that
picks the test and a held-out half that evaluates it).

References
----------
Kairouz, Oh & Viswanath (2015), "The composition theorem for differential privacy", ICML, Thm 2.1
(hypothesis-testing characterization, eq. (1));
Jagielski, Ullman & Oprea (2020), "Auditing differentially private machine learning: how private
is private SGD?", NeurIPS, Algorithm 2;
Clopper & Pearson (1934), Biometrika 26(4) (exact binomial confidence intervals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_choice, check_finite_array, check_in_range, check_int

__all__ = [
    "MAX_CANDIDATES",
    "ThresholdTest",
    "clopper_pearson",
    "epsilon_lower_bound",
    "evaluate_threshold_test",
    "select_threshold_test",
]

_ORDERS = ("alt=D'", "alt=D")
#: Largest number of candidate thresholds tried on the training half.
MAX_CANDIDATES = 2048


def _check_counts(k: Any, n: Any) -> tuple[np.ndarray, np.ndarray]:
    k_arr = check_finite_array("k", k)
    n_arr = check_finite_array("n", n)
    k_arr, n_arr = np.broadcast_arrays(k_arr, n_arr)
    if np.any(n_arr < 1) or np.any(n_arr != np.floor(n_arr)):
        raise ValidationError(f"n must hold positive integers (number of trials), got {n!r}")
    if np.any(k_arr < 0) or np.any(k_arr > n_arr) or np.any(k_arr != np.floor(k_arr)):
        raise ValidationError(f"k must hold integers in [0, n] (number of successes), got {k!r}")
    return k_arr, n_arr


def clopper_pearson(
    k: int | np.ndarray,
    n: int | np.ndarray,
    confidence: float = 0.95,
    alternative: str = "two-sided",
) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Exact (Clopper-Pearson) confidence bounds on a binomial proportion, vectorized.

    Parameters
    ----------
    k : int or ndarray
        Number of successes, integers in ``[0, n]``.
    n : int or ndarray
        Number of trials, positive integers (broadcast against ``k``).
    confidence : float
        Confidence level in (0, 1).
    alternative : {"two-sided", "less", "greater"}
        ``"two-sided"``: the interval with ``(1 - confidence) / 2`` in each tail (as
        ``scipy.stats.binomtest(k, n).proportion_ci(confidence, method="exact")``);
        ``"less"``: one-sided upper bound ``(0, hi)``; ``"greater"``: one-sided lower bound ``(lo, 1)``.

    Returns
    -------
    (lo, hi) : floats or ndarrays
        ``lo = Beta.ppf(a, k, n - k + 1)`` (0 when ``k = 0``) and ``hi = Beta.ppf(1 - a, k + 1,
        n - k)`` (1 when ``k = n``), with ``a`` the tail level.

    References
    ----------
    Clopper & Pearson (1934), "The use of confidence or fiducial limits illustrated in the case of
    the binomial", Biometrika 26(4).
    """
    conf = check_in_range(
        "confidence", confidence, 0.0, 1.0, low_inclusive=False, high_inclusive=False
    )
    alternative = check_choice("alternative", alternative, ("two-sided", "less", "greater"))
    scalar = np.ndim(k) == 0 and np.ndim(n) == 0
    kk, nn = _check_counts(k, n)
    a = (1.0 - conf) / 2.0 if alternative == "two-sided" else 1.0 - conf
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(kk > 0, stats.beta.ppf(a, np.maximum(kk, 1), nn - kk + 1), 0.0)
        hi = np.where(kk < nn, stats.beta.ppf(1.0 - a, kk + 1, np.maximum(nn - kk, 1)), 1.0)
    if alternative == "less":
        lo = np.zeros_like(hi)
    elif alternative == "greater":
        hi = np.ones_like(lo)
    if scalar:
        return float(lo), float(hi)
    return lo, hi


def epsilon_lower_bound(
    fp: int | np.ndarray,
    n_null: int | np.ndarray,
    fn: int | np.ndarray,
    n_alt: int | np.ndarray,
    delta: float = 0.0,
    alpha: float = 0.05,
) -> np.ndarray | float:
    """High-confidence lower bound on epsilon from one test's error counts (eq. (1) of the module).

    ``FPR_u`` and ``FNR_u`` are one-sided Clopper-Pearson upper bounds at level ``alpha / 2`` each
    (union bound), so with probability at least ``1 - alpha``

    ``epsilon >= eps_lb = max(0, ln((1 - delta - FNR_u) / FPR_u))``.

    Parameters
    ----------
    fp : int or ndarray
        False positives: null (``b``) draws that fell in the rejection set.
    n_null : int or ndarray
        Number of null draws.
    fn : int or ndarray
        False negatives: alternative (``a``) draws outside the rejection set.
    n_alt : int or ndarray
        Number of alternative draws.
    delta : float
        delta of the claimed guarantee, in [0, 1).
    alpha : float
        1 - confidence, in (0, 1).

    Returns
    -------
    float or ndarray (0 where the test gives no evidence).

    References
    ----------
    Kairouz, Oh & Viswanath (2015), Thm 2.1; Jagielski, Ullman & Oprea (2020), Algorithm 2.
    """
    dlt = check_in_range("delta", delta, 0.0, 1.0, high_inclusive=False)
    a = check_in_range("alpha", alpha, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    scalar = all(np.ndim(x) == 0 for x in (fp, n_null, fn, n_alt))
    _, fpr_u = clopper_pearson(fp, n_null, 1.0 - a / 2.0, "less")
    _, fnr_u = clopper_pearson(fn, n_alt, 1.0 - a / 2.0, "less")
    num = 1.0 - dlt - np.asarray(fnr_u)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.where(num > 0.0, np.log(np.where(num > 0.0, num, 1.0)) - np.log(fpr_u), 0.0)
    eps = np.maximum(eps, 0.0)
    return float(eps) if scalar else eps


@dataclass(frozen=True)
class ThresholdTest:
    """A distinguishing test ``T in S`` with ``S = {T > threshold}`` (upper) or ``{T <= threshold}``.

    ``order = "alt=D'"`` reads ``S`` as evidence for ``D'`` (null ``D``), ``"alt=D"`` the reverse.
    """

    threshold: float
    side: str
    order: str

    def describe(self) -> str:
        """Human-readable form, e.g. ``reject D when T > 1.5``."""
        null = "D" if self.order == _ORDERS[0] else "D'"
        op = ">" if self.side == "upper" else "<="
        return f"reject {null} when T {op} {self.threshold:.6g}"


def _rates(t0: np.ndarray, t1: np.ndarray, thresholds: np.ndarray) -> dict[tuple[str, str], tuple]:
    """Error counts of every (side, order) test at each threshold; ``t0``, ``t1`` sorted."""
    n0, n1 = t0.size, t1.size
    up0 = n0 - np.searchsorted(t0, thresholds, side="right")  # #(T0 > t)
    up1 = n1 - np.searchsorted(t1, thresholds, side="right")
    lo0, lo1 = n0 - up0, n1 - up1
    # (side, order) -> (fp, n_null, fn, n_alt); null b is rejected on S, alt a should land in S
    return {
        ("upper", _ORDERS[0]): (up0, n0, n1 - up1, n1),
        ("upper", _ORDERS[1]): (up1, n1, n0 - up0, n0),
        ("lower", _ORDERS[0]): (lo0, n0, n1 - lo1, n1),
        ("lower", _ORDERS[1]): (lo1, n1, n0 - lo0, n0),
    }


def _candidates(pooled_sorted: np.ndarray, max_candidates: int) -> np.ndarray:
    """Candidate thresholds: every distinct value, or ranks dense in both tails and the bulk."""
    uniq = np.unique(pooled_sorted)
    if uniq.size <= max_candidates:
        return uniq
    m = pooled_sorted.size
    k = max_candidates // 4
    tail = np.unique(np.geomspace(1, m / 2, k).astype(np.int64))
    bulk = np.linspace(0, m - 1, max_candidates - 2 * tail.size).astype(np.int64)
    ranks = np.unique(np.concatenate([tail - 1, m - 1 - tail, bulk]))
    return np.unique(pooled_sorted[np.clip(ranks, 0, m - 1)])


def select_threshold_test(
    t0: np.ndarray,
    t1: np.ndarray,
    delta: float = 0.0,
    alpha: float = 0.05,
    *,
    max_candidates: int = MAX_CANDIDATES,
) -> tuple[ThresholdTest, float]:
    """Pick the test maximizing the Clopper-Pearson-penalized bound (1) on training draws.

    Parameters
    ----------
    t0, t1 : ndarray of shape (m0,), (m1,)
        Training statistics under ``D`` and ``D'``.
    delta, alpha : float
        As in :func:`epsilon_lower_bound` (the same penalty is used, so tests far in a tail are
        chosen only when the held-out half has enough draws to certify them).
    max_candidates : int
        Number of thresholds tried (all distinct values when there are fewer).

    Returns
    -------
    (test, training_bound)
    """
    t0 = np.sort(check_finite_array("t0", t0, ndim=1))
    t1 = np.sort(check_finite_array("t1", t1, ndim=1))
    if t0.size == 0 or t1.size == 0:
        raise ValidationError("need at least one training draw under each neighbouring input")
    cands = _candidates(
        np.sort(np.concatenate([t0, t1])), check_int("max_candidates", max_candidates, 2)
    )
    best: tuple[float, ThresholdTest] | None = None
    for (side, order), (fp, n_null, fn, n_alt) in _rates(t0, t1, cands).items():
        eps = np.asarray(epsilon_lower_bound(fp, n_null, fn, n_alt, delta, alpha))
        i = int(np.argmax(eps))
        if best is None or eps[i] > best[0]:
            best = (float(eps[i]), ThresholdTest(float(cands[i]), side, order))
    assert best is not None
    return best[1], best[0]


def evaluate_threshold_test(
    test: ThresholdTest, t0: np.ndarray, t1: np.ndarray, delta: float = 0.0, alpha: float = 0.05
) -> dict[str, float]:
    """Held-out evaluation of one test: rates, their Clopper-Pearson upper bounds and ``eps_lb``.

    Returns
    -------
    dict with ``eps_lb``, ``eps_hat`` (plug-in value of (1)), ``fpr``, ``fnr``, ``fpr_upper``,
    ``fnr_upper`` (one-sided, level ``alpha / 2`` each).
    """
    t0 = np.sort(check_finite_array("t0", t0, ndim=1))
    t1 = np.sort(check_finite_array("t1", t1, ndim=1))
    fp, n_null, fn, n_alt = (
        int(np.asarray(x).reshape(-1)[0])
        for x in _rates(t0, t1, np.array([test.threshold]))[(test.side, test.order)]
    )
    _, fpr_u = clopper_pearson(fp, n_null, 1.0 - alpha / 2.0, "less")
    _, fnr_u = clopper_pearson(fn, n_alt, 1.0 - alpha / 2.0, "less")
    fpr, fnr = fp / n_null, fn / n_alt
    num = 1.0 - delta - fnr
    eps_hat = math.log(num / fpr) if (num > 0 and fpr > 0) else (math.inf if num > 0 else 0.0)
    return {
        "eps_lb": float(epsilon_lower_bound(fp, n_null, fn, n_alt, delta, alpha)),
        "eps_hat": eps_hat,
        "fpr": fpr,
        "fnr": fnr,
        "fpr_upper": float(fpr_u),
        "fnr_upper": float(fnr_u),
    }
