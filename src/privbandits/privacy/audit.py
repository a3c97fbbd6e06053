"""Empirical privacy auditing: high-confidence lower bounds on epsilon from distinguishing tests.

For a mechanism ``M`` and neighbouring inputs ``(D, D')``, ``(epsilon, delta)``-DP means that for
every set ``S`` of outputs ``P(M(D) in S) <= e^eps P(M(D') in S) + delta`` and the same with ``D``
and ``D'`` swapped.  A threshold test on a one-dimensional statistic ``T`` of the output turns this
into a bound on its error rates: with ``FPR = P_b(T in S)`` (the null ``b`` rejected) and
``FNR = 1 - P_a(T in S)``,

    epsilon >= ln((1 - delta - FNR) / FPR)                                   (1)

for both orders ``(a, b) = (D', D), (D, D')``, both sides ``S = {T > t}, {T <= t}``.  The auditor

1. draws ``N`` outputs of the mechanism under each of ``D`` and ``D'`` (batched, in chunks, from
   streams spawned from one seed) and reduces each to ``T`` (the projection on the difference
   direction, or the exact log-likelihood ratio where it is known);
2. on the first half of the draws (training) picks the test (threshold ``t``, side, order) that
   maximizes (1) with Clopper-Pearson upper bounds in place of the rates;
3. on the held-out half computes one-sided Clopper-Pearson upper bounds ``FPR_u`` and ``FNR_u``,
   each at level ``alpha / 2``, and reports ``eps_lb = max(0, ln((1 - delta - FNR_u) / FPR_u))``.

Only one test is evaluated on the held-out half, so with probability at least ``1 - alpha`` both
bounds hold and ``eps_lb`` is below the mechanism's true epsilon (at that delta): an audited lower
bound above the claimed epsilon is evidence, at confidence ``1 - alpha``, that the claim is false.
A lower bound at or below the claim is not a proof of privacy; it says the test found no violation.

References
----------
Jagielski, Ullman & Oprea (2020), "Auditing differentially private machine learning: how private
is private SGD?", NeurIPS (threshold tests with Clopper-Pearson bounds);
Ding, Wang, Wang, Zhang & Kifer (2018), "Detecting violations of differential privacy", CCS;
Kairouz, Oh & Viswanath (2015), "The composition theorem for differential privacy", ICML
(hypothesis-testing characterization of (epsilon, delta)-DP, eq. (1));
Clopper & Pearson (1934), Biometrika (exact binomial confidence intervals).
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from privbandits.core.errors import UnknownNameError, ValidationError
from privbandits.core.validation import (
    check_choice,
    check_finite_array,
    check_in_range,
    check_int,
    check_positive,
)
from privbandits.privacy import randomizers
from privbandits.privacy.accounting import PureDP
from privbandits.privacy.mechanisms import (
    GaussianMechanism,
    L2BallMechanism,
    LaplaceMechanism,
    SymmetricGaussianMechanism,
)
from privbandits.privacy.shuffle import (
    calibrated_params,
    laplace_randomizer,
    laplace_shuffle_params,
    shuffle_matrix_sum,
    shuffle_vector_sum,
    theory_params,
)
from privbandits.privacy.tree import TreeAggregator, max_nodes_per_leaf

__all__ = [
    "clopper_pearson",
    "epsilon_lower_bound",
    "ThresholdTest",
    "select_threshold_test",
    "evaluate_threshold_test",
    "AuditSpec",
    "AuditResult",
    "audit_spec",
    "audit",
    "AUDITABLE",
    "audit_mechanism",
    "run_all",
]

#: One-dimensional statistic sampler: ``sample(side, n, rng)`` draws ``n`` outputs of the mechanism
#: on ``D`` (side 0) or ``D'`` (side 1) and returns their statistics, shape ``(n,)``.
StatisticSampler = Callable[[int, int, np.random.Generator], np.ndarray]

_ORDERS = ("alt=D'", "alt=D")
#: Default number of outputs per neighbouring input drawn in one batch (bounds memory).
DEFAULT_CHUNK = 1 << 18
#: Largest number of candidate thresholds tried on the training half.
MAX_CANDIDATES = 2048


# ============================================================================================
# statistics: Clopper-Pearson bounds and the epsilon lower bound
# ============================================================================================
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
    k: int | np.ndarray, n: int | np.ndarray, confidence: float = 0.95, alternative: str = "two-sided"
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
    conf = check_in_range("confidence", confidence, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
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


# ============================================================================================
# threshold tests: selection on the training half, evaluation on the held-out half
# ============================================================================================
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
    t0: np.ndarray, t1: np.ndarray, delta: float = 0.0, alpha: float = 0.05, *,
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
    cands = _candidates(np.sort(np.concatenate([t0, t1])), check_int("max_candidates", max_candidates, 2))
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
    fp, n_null, fn, n_alt = (int(np.asarray(x).reshape(-1)[0]) for x in
                             _rates(t0, t1, np.array([test.threshold]))[(test.side, test.order)])
    _, fpr_u = clopper_pearson(fp, n_null, 1.0 - alpha / 2.0, "less")
    _, fnr_u = clopper_pearson(fn, n_alt, 1.0 - alpha / 2.0, "less")
    fpr, fnr = fp / n_null, fn / n_alt
    num = 1.0 - delta - fnr
    eps_hat = math.log(num / fpr) if (num > 0 and fpr > 0) else (math.inf if num > 0 else 0.0)
    return {"eps_lb": float(epsilon_lower_bound(fp, n_null, fn, n_alt, delta, alpha)), "eps_hat": eps_hat,
            "fpr": fpr, "fnr": fnr, "fpr_upper": float(fpr_u), "fnr_upper": float(fnr_u)}


# ============================================================================================
# audit specifications and results
# ============================================================================================
@dataclass(frozen=True)
class AuditSpec:
    """Everything needed to audit one mechanism at one parameter point.

    Attributes
    ----------
    name : str
        Registry name (with a ``[noise xf]`` suffix for an under-noised variant).
    claimed_epsilon, claimed_delta : float
        The guarantee the (calibrated) mechanism reports, computed by the accountant from its noise.
    sample : StatisticSampler
        ``sample(side, n, rng)``: ``n`` statistics of fresh outputs on ``D`` (side 0) or ``D'``
        (side 1), drawn from the library's own sampling code.
    neighbours : str
        The neighbouring pair ``(D, D')``.
    statistic : str
        The one-dimensional statistic ``T`` the test thresholds.
    n_samples : int
        Default number of outputs per neighbouring input (half train, half held out).
    notes : str
        Parameter point, calibration and caveats.
    noise_factor : float
        Noise scale relative to the calibrated one (1 = as calibrated).
    """

    name: str
    claimed_epsilon: float
    claimed_delta: float
    sample: StatisticSampler
    neighbours: str
    statistic: str
    n_samples: int
    notes: str = ""
    noise_factor: float = 1.0


@dataclass(frozen=True)
class AuditResult:
    """Outcome of one audit.

    Attributes
    ----------
    mechanism : str
        Audited mechanism (registry name, ``[noise xf]`` for an under-noised variant).
    claimed_epsilon, claimed_delta : float
        The claimed guarantee.
    audited_epsilon_lb : float
        Lower bound on the true epsilon (at ``claimed_delta``) holding with probability
        ``1 - alpha`` (95% by default).
    n_samples : int
        Outputs drawn per neighbouring input (half to choose the test, half to evaluate it).
    passed : bool
        ``audited_epsilon_lb <= claimed_epsilon``: no violation detected.
    notes : str
        Neighbouring pair, statistic, chosen test, error-rate bounds, parameter point.
    """

    mechanism: str
    claimed_epsilon: float
    claimed_delta: float
    audited_epsilon_lb: float
    n_samples: int
    passed: bool
    notes: str = ""

    def row(self) -> dict[str, Any]:
        """The result as a flat dict (one table row)."""
        return {"mechanism": self.mechanism, "claimed_epsilon": self.claimed_epsilon,
                "claimed_delta": self.claimed_delta, "audited_epsilon_lb": self.audited_epsilon_lb,
                "n_samples": self.n_samples, "passed": self.passed, "notes": self.notes}

    def __str__(self) -> str:
        verdict = "PASS" if self.passed else "VIOLATION"
        return (f"{self.mechanism}: claimed ({self.claimed_epsilon:.4g}, {self.claimed_delta:.3g}), "
                f"audited epsilon >= {self.audited_epsilon_lb:.4g} (N={self.n_samples}) -> {verdict}")


def _draw(spec: AuditSpec, side: int, n: int, rng: np.random.Generator, chunk: int) -> np.ndarray:
    out = []
    left = n
    while left > 0:
        m = min(chunk, left)
        t = np.asarray(spec.sample(side, m, rng), dtype=float).reshape(-1)
        if t.size != m:
            raise ValidationError(f"the sampler of {spec.name!r} returned {t.size} statistics, expected {m}")
        out.append(t)
        left -= m
    return check_finite_array("statistics", np.concatenate(out))


def audit_spec(
    spec: AuditSpec, *, n_samples: int | None = None, alpha: float = 0.05, seed: int = 0,
    chunk: int = DEFAULT_CHUNK, selection_alpha: float | None = None,
) -> AuditResult:
    """Run the audit described by ``spec`` (see the module docstring for the method).

    Parameters
    ----------
    spec : AuditSpec
    n_samples : int, optional
        Outputs per neighbouring input (default ``spec.n_samples``), at least 20.
    alpha : float
        1 - confidence of the lower bound (0.05 = 95%).
    seed : int
        Seed of the two sampling streams, one per input: ``SeedSequence(seed, spawn_key=(crc32(name),))``
        spawned twice (``name`` without the variant suffix).
    chunk : int
        Largest number of outputs drawn in one batch.
    selection_alpha : float, optional
        Clopper-Pearson level of the training objective that picks the test (default
        ``alpha / 100``).  A stricter penalty than the held-out one steers the choice away from far
        tails where the training estimate is inflated by chance (winner's curse) and the held-out
        estimate is noisy; it does not affect validity, which rests on the held-out half only.
    """
    N = check_int("n_samples", spec.n_samples if n_samples is None else n_samples, 20)
    a = check_in_range("alpha", alpha, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    seed = check_int("seed", seed, 0)
    chunk = check_int("chunk", chunk, 1)
    # streams keyed by (seed, base name): independent across mechanisms, common to a mechanism and its
    # under-noised variants
    key = zlib.crc32(spec.name.split("[")[0].encode())
    rng0, rng1 = (np.random.Generator(np.random.PCG64(s))
                  for s in np.random.SeedSequence(seed, spawn_key=(key,)).spawn(2))
    t0 = _draw(spec, 0, N, rng0, chunk)
    t1 = _draw(spec, 1, N, rng1, chunk)
    h = N // 2
    sel = a / 100.0 if selection_alpha is None else check_in_range(
        "selection_alpha", selection_alpha, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    test, _ = select_threshold_test(t0[:h], t1[:h], spec.claimed_delta, sel)
    ev = evaluate_threshold_test(test, t0[h:], t1[h:], spec.claimed_delta, a)
    lb = ev["eps_lb"]
    outcome = (f"test ({h} train / {N - h} held out per input): {test.describe()}, "
               f"FPR={ev['fpr']:.4g} (<= {ev['fpr_upper']:.4g}), FNR={ev['fnr']:.4g} "
               f"(<= {ev['fnr_upper']:.4g}), plug-in eps={ev['eps_hat']:.4g}, confidence {1 - a:g}")
    notes = _join(f"pair: {spec.neighbours}", f"statistic: {spec.statistic}", outcome, spec.notes)
    return AuditResult(mechanism=spec.name, claimed_epsilon=float(spec.claimed_epsilon),
                       claimed_delta=float(spec.claimed_delta), audited_epsilon_lb=lb, n_samples=N,
                       passed=bool(lb <= spec.claimed_epsilon), notes=notes)


def audit(
    mechanism_factory: Any,
    neighbours: tuple[Any, Any],
    *,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
    claimed_epsilon: float | None = None,
    claimed_delta: float | None = None,
    n_samples: int = 200_000,
    alpha: float = 0.05,
    seed: int = 0,
    name: str | None = None,
    chunk: int = DEFAULT_CHUNK,
) -> AuditResult:
    """Audit any mechanism on one neighbouring pair.

    Parameters
    ----------
    mechanism_factory : mechanism object or callable
        Either an object with ``sample(value, rng)`` that is batched over leading axes (the
        mechanisms of :mod:`privbandits.privacy.mechanisms`; its ``guarantee`` supplies the claim),
        or a callable ``release(values, rng)`` mapping a batch ``values`` of shape ``(n,) + shape``
        to ``n`` outputs (leading axis ``n``).
    neighbours : (D, D')
        The two neighbouring inputs (arrays of equal shape).
    statistic : callable, optional
        Maps a batch of outputs (leading axis ``n``) to ``n`` reals.  Default: the projection of the
        flattened output on the unit vector along ``D' - D`` (the likelihood-ratio direction of any
        additive mechanism with spherical or product noise).
    claimed_epsilon, claimed_delta : float, optional
        The claim to test; default ``mechanism_factory.guarantee`` (epsilon and delta).
    n_samples, alpha, seed, chunk
        As in :func:`audit_spec`.
    name : str, optional
        Name reported in the result.

    Returns
    -------
    AuditResult
    """
    if not (isinstance(neighbours, (tuple, list)) and len(neighbours) == 2):
        raise ValidationError(f"neighbours must be a pair (D, D'), got {type(neighbours).__name__}")
    x0 = check_finite_array("neighbours[0]", neighbours[0])
    x1 = check_finite_array("neighbours[1]", neighbours[1])
    if x0.shape != x1.shape:
        raise ValidationError(f"neighbours must have equal shapes, got {x0.shape} and {x1.shape}")
    if hasattr(mechanism_factory, "sample"):
        release = mechanism_factory.sample
    elif callable(mechanism_factory):
        release = mechanism_factory
    else:
        raise ValidationError("mechanism_factory must have a sample(value, rng) method or be callable, got "
                              f"{type(mechanism_factory).__name__}")
    if claimed_epsilon is None or claimed_delta is None:
        g = getattr(mechanism_factory, "guarantee", None)
        if g is None:
            raise ValidationError("give claimed_epsilon and claimed_delta, or a mechanism with a .guarantee")
        claimed_epsilon = g.epsilon if claimed_epsilon is None else claimed_epsilon
        claimed_delta = g.delta if claimed_delta is None else claimed_delta
    eps_c = check_in_range("claimed_epsilon", claimed_epsilon, 0.0, None, allow_inf=True)
    dlt_c = check_in_range("claimed_delta", claimed_delta, 0.0, 1.0, high_inclusive=False)
    user_statistic = statistic is not None
    if statistic is None:
        diff = (x1 - x0).reshape(-1)
        norm = float(np.linalg.norm(diff))
        if norm == 0.0:
            raise ValidationError("the neighbouring inputs are equal; give distinct D and D'")
        u = diff / norm

        def statistic(out: np.ndarray) -> np.ndarray:
            out = np.asarray(out, dtype=float)
            return out.reshape(out.shape[0], -1) @ u

    stat = statistic
    inputs = (x0, x1)

    def sample(side: int, n: int, rng: np.random.Generator) -> np.ndarray:
        batch = np.broadcast_to(inputs[side], (n,) + x0.shape).copy()
        return stat(release(batch, rng))

    label = name or str(getattr(mechanism_factory, "name", getattr(mechanism_factory, "__name__", "mechanism")))
    spec = AuditSpec(name=label, claimed_epsilon=eps_c, claimed_delta=dlt_c, sample=sample,
                     neighbours=f"D={_fmt(x0)}, D'={_fmt(x1)}",
                     statistic="user-supplied" if user_statistic else "projection on D' - D", n_samples=n_samples)
    return audit_spec(spec, alpha=alpha, seed=seed, chunk=chunk)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _fmt(x: np.ndarray) -> str:
    return np.array2string(np.asarray(x), precision=4, separator=", ", threshold=12)


# ============================================================================================
# the registry: every mechanism of the privacy layer at a stated parameter point
# ============================================================================================
def _factor(under_noised: float | None) -> float:
    """Noise factor of a variant: 1 (as calibrated) or the given positive multiplier."""
    return 1.0 if under_noised is None else check_positive("under_noised", under_noised)


def _variant(name: str, f: float) -> str:
    return name if f == 1.0 else f"{name}[noise x{f:g}]"


def _variant_note(f: float, what: str = "noise scale", extra: str = "") -> str:
    if f == 1.0:
        return ""
    more = f" ({extra})" if extra else ""
    return f"variant: {what} x{f:g} of the calibrated value{more}, claimed guarantee unchanged"


def _projection_sampler(mech: Any, pair: tuple[np.ndarray, np.ndarray]) -> StatisticSampler:
    """Statistic sampler of a mechanism object: outputs projected on the unit vector along ``D' - D``."""
    x0, x1 = (np.asarray(x, dtype=float) for x in pair)
    u = (x1 - x0).reshape(-1)
    u = u / np.linalg.norm(u)

    def sample(side: int, n: int, rng: np.random.Generator) -> np.ndarray:
        x = x1 if side else x0
        out = np.asarray(mech.sample(np.broadcast_to(x, (n,) + x.shape), rng), dtype=float)
        return out.reshape(n, -1) @ u

    return sample


def _mechanism_spec(name: str, nominal: Any, f: float, pair: tuple[np.ndarray, np.ndarray], pair_text: str,
                    n_samples: int, notes: str, noise_what: str = "noise scale", noise_extra: str = "",
                    ) -> AuditSpec:
    mech = nominal if f == 1.0 else nominal.under_noised(f)
    g = nominal.guarantee
    return AuditSpec(name=_variant(name, f), claimed_epsilon=float(g.epsilon), claimed_delta=float(g.delta),
                     sample=_projection_sampler(mech, pair), neighbours=pair_text,
                     statistic="projection of the output on the unit vector along D' - D (a monotone "
                               "function of the exact log-likelihood ratio)",
                     n_samples=n_samples, notes=_join(notes, _variant_note(f, noise_what, noise_extra)),
                     noise_factor=f)


def gaussian_classic(under_noised: float | None = None) -> AuditSpec:
    """Gaussian mechanism, classic calibration (Dwork & Roth Thm A.1), eps=0.9, delta=1e-5, d=3."""
    f = _factor(under_noised)
    m = GaussianMechanism(sensitivity=1.0, epsilon=0.9, delta=1e-5, calibration="classic")
    return _mechanism_spec("gaussian-classic", m, f, m.neighbouring_pair(3),
                           "x = 0 vs x' = Delta_2 e_1 in R^3 (distance = the L2 sensitivity 1)", 500_000,
                           f"requested (0.9, 1e-05) (inside Thm A.1's epsilon < 1), sigma={m.sigma:.6g}; the "
                           "claim is the exact (Balle & Wang) epsilon of that noise")


def gaussian_analytic(under_noised: float | None = None) -> AuditSpec:
    """Analytic Gaussian mechanism (Balle & Wang 2018), eps=1, delta=1e-5, d=3."""
    f = _factor(under_noised)
    m = GaussianMechanism(sensitivity=1.0, epsilon=1.0, delta=1e-5, calibration="analytic")
    return _mechanism_spec("gaussian-analytic", m, f, m.neighbouring_pair(3),
                           "x = 0 vs x' = Delta_2 e_1 in R^3 (distance = the L2 sensitivity 1)", 500_000,
                           f"sigma={m.sigma:.6g}")


def symmetric_gaussian(under_noised: float | None = None) -> AuditSpec:
    """Symmetric-matrix Gaussian mechanism for x x^T, ||x|| <= 1 (Han et al. 2021), eps=0.9, delta=1e-5, d=2."""
    f = _factor(under_noised)
    m = SymmetricGaussianMechanism.for_outer_product(1.0, 0.9, 1e-5, 2)
    return _mechanism_spec("symmetric-gaussian", m, f, m.neighbouring_pair(),
                           "M = 0 vs M' = Delta E_11 (2x2; upper-triangle distance = the sensitivity "
                           f"{m.sensitivity:g})", 500_000,
                           f"classic calibration at L2 sensitivity {m.sensitivity:g} (outer products of "
                           f"norm-1 vectors), sigma={m.sigma:.6g}")


def laplace(under_noised: float | None = None) -> AuditSpec:
    """Laplace mechanism on a reward in [-1, 1] (L1 sensitivity 2), eps=1."""
    f = _factor(under_noised)
    m = LaplaceMechanism.for_range(-1.0, 1.0, 1.0)
    return _mechanism_spec("laplace", m, f, (np.array(-1.0), np.array(1.0)),
                           "r = -1 vs r' = +1 (the two ends of the reward range)", 100_000,
                           f"scale={m.scale:.6g}")


def laplace_vector(under_noised: float | None = None) -> AuditSpec:
    """Vector Laplace mechanism in R^4 at L1 sensitivity 2, eps=1."""
    f = _factor(under_noised)
    m = LaplaceMechanism(sensitivity=2.0, epsilon=1.0)
    return _mechanism_spec("laplace-vector", m, f, m.neighbouring_pair(4),
                           "x = 0 vs x' = Delta_1 e_1 in R^4 (the whole L1 sensitivity on one coordinate)",
                           100_000, f"scale={m.scale:.6g} per coordinate")


def l2_ball(under_noised: float | None = None) -> AuditSpec:
    """l2-ball mechanism (Duchi et al. 2018; Han et al. 2021), eps=1, d=5, bound 1."""
    f = _factor(under_noised)
    m = L2BallMechanism(epsilon=1.0, d=5, bound=1.0)
    return _mechanism_spec("l2-ball", m, f, m.neighbouring_pair(),
                           "x = R e_1 vs x' = -R e_1 (opposite ends of the input ball, R = 1)", 100_000,
                           f"radius={m.radius:.6g}; the log-likelihood ratio is +-eps by the sign of z_1",
                           "noise scale", "the temperature 1/epsilon, as in L2BallMechanism: the sampler runs "
                           "at epsilon/factor")


@dataclass(frozen=True)
class _RandomizedResponse:
    """Binary randomized response as a mechanism object (audit adapter over the randomizer functions).

    ``noise_factor`` is read as the temperature ``1/epsilon``, as for :class:`L2BallMechanism` (whose
    hemisphere choice is randomized response): the sampler keeps the bit with probability
    ``e^{eps/f} / (1 + e^{eps/f})``.
    """

    epsilon: float
    noise_factor: float = 1.0

    @property
    def guarantee(self) -> Any:
        return PureDP(randomizers.randomized_response_epsilon(
            randomizers.randomized_response_keep_probability(self.epsilon)))

    def under_noised(self, factor: float) -> _RandomizedResponse:
        return _RandomizedResponse(self.epsilon, self.noise_factor * check_positive("factor", factor))

    def sample(self, value: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return randomizers.randomized_response(np.asarray(value, dtype=np.uint8), self.epsilon / self.noise_factor,
                                               rng)


def randomized_response(under_noised: float | None = None) -> AuditSpec:
    """Binary randomized response (Warner 1965), eps=1."""
    f = _factor(under_noised)
    m = _RandomizedResponse(1.0)
    return _mechanism_spec("randomized-response", m, f, (np.array(0.0), np.array(1.0)),
                           "bit 0 vs bit 1", 100_000,
                           "privbandits.privacy.randomizers.randomized_response, keep probability "
                           "e^eps / (1 + e^eps)",
                           "noise scale", "the temperature 1/epsilon: the bit is kept w.p. "
                           "e^(eps/f) / (1 + e^(eps/f))")


# --------------------------------------------------------------------------------------------
# shuffle protocols
# --------------------------------------------------------------------------------------------
def _cheu_spec(kind: str, f: float) -> AuditSpec:
    n, d, Delta, eps, delta, conversion = 4, 2, 1.0, 1.0, 1e-5, "cks"
    nominal = calibrated_params(n, d, Delta, delta=delta, epsilon=eps, kind=kind, conversion=conversion)
    theory = theory_params(n, d, eps, delta, Delta, kind=kind)
    b = max(1, round(nominal.b * f * f)) if f != 1.0 else nominal.b
    params = dataclasses.replace(nominal, b=b)
    g = nominal.guarantee()
    shape = (d,) if kind == "vector" else (d, d)
    extreme = np.zeros(shape)
    extreme[(0,) * len(shape)] = Delta  # Delta e_1 or Delta E_11

    def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
        client, shuffler = rng.spawn(2)
        data = np.zeros((m, n) + shape)
        data[:, 0] = extreme if side == 0 else -extreme
        run = shuffle_vector_sum if kind == "vector" else shuffle_matrix_sum
        est = run(data, params, client, shuffler, path="aggregate").estimate
        return est.reshape(m, -1)[:, 0]

    what = "v_1 = Delta e_1 vs v_1' = -Delta e_1" if kind == "vector" else "X_1 = Delta E_11 vs X_1' = -Delta E_11"
    return AuditSpec(
        name=_variant(f"cheu-{kind}-sum", f), claimed_epsilon=float(g.epsilon), claimed_delta=float(g.delta),
        sample=sample,
        neighbours=f"n={n} users, user 1 differs: {what} (Delta={Delta:g}); the others send 0 (their "
                   "randomized rounding is then deterministic: no noise to hide in)",
        statistic="analyzer output of coordinate (1) / entry (1,1): a sufficient statistic (the other "
                  "coordinates have the same law under both inputs)",
        n_samples=500_000,
        notes=_join(
            f"Cheu et al. (2022) {kind} summation, calibrated mode at (eps={eps:g}, delta={delta:g}) with the "
            f"{conversion.upper()} zCDP conversion, d={d}, g={nominal.g:g}, b={nominal.b}, p={nominal.p} "
            f"(binomial noise std {nominal.binomial_noise_std:.4g}); the claim is the library's Gaussian-"
            "approximation accounting of that noise.  Theory mode (eq. 122, Lemma T.1) would use "
            f"b={theory.b} (noise std {theory.binomial_noise_std:.4g}): even its half-noise variant is far "
            "inside epsilon=1 and could not be flagged, so the audit uses the calibrated mode; outputs drawn "
            "with the aggregate fast path (exact in distribution)",
            _variant_note(f, "binomial noise std", f"b={b}")),
        noise_factor=f)


def cheu_vector_sum(under_noised: float | None = None) -> AuditSpec:
    """Shuffle vector summation of Cheu et al. (2022), calibrated (CKS), n=4, d=2, eps=1, delta=1e-5."""
    return _cheu_spec("vector", _factor(under_noised))


def cheu_matrix_sum(under_noised: float | None = None) -> AuditSpec:
    """Shuffle symmetric-matrix summation of Cheu et al. (2022), calibrated (CKS), n=4, d=2, eps=1, delta=1e-5."""
    return _cheu_spec("matrix", _factor(under_noised))


def laplace_shuffle(under_noised: float | None = None) -> AuditSpec:
    """Single-message Laplace shuffle protocol (Hanna et al. 2022, Alg. 3), amplified, n=200, eps=1, delta=1e-3."""
    f = _factor(under_noised)
    n, eps, delta = 200, 1.0, 1e-3
    nominal = laplace_shuffle_params(eps, delta, n, -1.0, 1.0, bound="numerical")
    closed = laplace_shuffle_params(eps, delta, n, -1.0, 1.0, bound="closed")
    params = nominal if f == 1.0 else dataclasses.replace(nominal, scale=nominal.scale * f)
    g = nominal.guarantee()
    lo, hi, b = params.r_lo, params.r_hi, params.scale
    e_loc = (hi - lo) / b

    slots = np.zeros((1, n), dtype=np.int64)  # one action: every client of the batch reports

    def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
        rewards = np.full((m, n), lo)
        if side == 0:
            rewards[:, 0] = hi
        y = np.asarray(laplace_randomizer(rewards, np.broadcast_to(slots, (m, n)), params, rng)["reward_hat"])
        # exact LLR of the shuffled multiset {y_j}: log mean_j exp(l(y_j)) with
        # l(y) = log Lap(y; hi, b) / Lap(y; lo, b) = clip((2y - lo - hi) / b, -eps_l, eps_l); a symmetric
        # function of the reports, so the shuffler's uniform permutation does not change its law
        ell = np.clip((2.0 * y - lo - hi) / b, -e_loc, e_loc)
        return np.log(np.exp(ell).sum(axis=1))

    return AuditSpec(
        name=_variant("laplace-shuffle", f), claimed_epsilon=float(g.epsilon), claimed_delta=float(g.delta),
        sample=sample,
        neighbours=f"n={n} clients, one action; client 1 has reward +1 vs -1, every other client -1 "
                   "(the others are clones of the second input: the worst case for amplification)",
        statistic="exact log-likelihood ratio of the shuffled multiset of reports, "
                  "log sum_j Lap(y_j; +1, b) / Lap(y_j; -1, b) (up to a constant)",
        n_samples=30_000,
        notes=_join(
            "Hanna et al. (2022) Alg. 3: reports drawn by the clients' laplace_randomizer (the statistic is "
            f"symmetric, so the shuffler's permutation is immaterial), eps0={nominal.eps0:.4g} from the "
            f"numerical amplification bound (FMT21 Thm 3.2), scale={nominal.scale:.6g}.  The closed-form "
            f"bound (Thm 3.1) is looser (here it allows only eps0={closed.eps0:.4g}); where it amplifies, even "
            "its half-noise variant stays inside its claim (docs/privacy-audit.md)",
            _variant_note(f, "Laplace scale", f"local epsilon {nominal.eps0 / f:.4g}")),
        noise_factor=f)


# --------------------------------------------------------------------------------------------
# continual release
# --------------------------------------------------------------------------------------------
def _tree_spec(kind: str, f: float) -> AuditSpec:
    T, d, B, eps, delta, conversion = 4, 2, 1.0, 1.0, 1e-5, "cks"
    nominal = TreeAggregator.calibrated(T, d, leaf_bound=B, rng=np.random.default_rng(0), delta=delta,
                                        epsilon=eps, kind=kind, conversion=conversion)
    g = nominal.guarantee(delta, method=conversion)
    sigma = nominal.sigma * f
    shape = (d,) if kind == "vector" else (d, d)
    leaf = np.zeros(shape)
    leaf[(0,) * len(shape)] = B
    powers = {1 << k for k in range(max_nodes_per_leaf(T))}  # nodes holding leaf 1 complete at t = 2^k

    def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
        tree = TreeAggregator(T, d, sigma=sigma, leaf_bound=B, rng=rng, replications=m, kind=kind)
        stat = np.zeros(m)
        zero = np.zeros((m,) + shape)
        for t in range(1, T + 1):
            tree.add(np.broadcast_to(leaf if side == 0 else -leaf, (m,) + shape) if t == 1 else zero)
            if t in powers:  # node [1, 2^k] = prefix(2^k) - prefix(0)
                stat += tree.prefix_sum().reshape(m, -1)[:, 0]
        return stat

    what = "B e_1 vs -B e_1" if kind == "vector" else "B E_11 vs -B E_11"
    return AuditSpec(
        name=_variant(f"tree-{kind}", f), claimed_epsilon=float(g.epsilon), claimed_delta=float(g.delta),
        sample=sample,
        neighbours=f"stream of T={T} leaves, leaf 1 changed: {what} (B={B:g}, distance = the sensitivity "
                   f"{nominal.sensitivity:g}); the other leaves are 0",
        statistic=f"sum over the {len(powers)} released nodes containing leaf 1 of entry (1) / (1,1), read off "
                  "the prefix sums (node [1, 2^k] = prefix(2^k)): the exact log-likelihood-ratio direction",
        n_samples=500_000,
        notes=_join(
            f"binary-tree {kind} prefix sums, calibrated to (eps={eps:g}, delta={delta:g}) via zCDP with the "
            f"{conversion.upper()} conversion, sigma={nominal.sigma:.6g}",
            _variant_note(f, "node noise std")),
        noise_factor=f)


def tree_vector(under_noised: float | None = None) -> AuditSpec:
    """Binary-tree Gaussian prefix sums of vectors (Chan et al. 2011), T=4, d=2, eps=1, delta=1e-5 (CKS)."""
    return _tree_spec("vector", _factor(under_noised))


def tree_matrix(under_noised: float | None = None) -> AuditSpec:
    """Binary-tree Gaussian prefix sums of symmetric matrices, T=4, d=2, eps=1, delta=1e-5 (CKS)."""
    return _tree_spec("matrix", _factor(under_noised))


#: Every auditable mechanism: name -> ``factory(under_noised=None) -> AuditSpec``.
AUDITABLE: dict[str, Callable[..., AuditSpec]] = {
    "gaussian-classic": gaussian_classic,
    "gaussian-analytic": gaussian_analytic,
    "symmetric-gaussian": symmetric_gaussian,
    "laplace": laplace,
    "laplace-vector": laplace_vector,
    "l2-ball": l2_ball,
    "randomized-response": randomized_response,
    "cheu-vector-sum": cheu_vector_sum,
    "cheu-matrix-sum": cheu_matrix_sum,
    "laplace-shuffle": laplace_shuffle,
    "tree-vector": tree_vector,
    "tree-matrix": tree_matrix,
}


def audit_mechanism(
    name: str, under_noised: float | None = None, n_samples: int | None = None, seed: int = 0, *,
    alpha: float = 0.05,
) -> AuditResult:
    """Audit a registered mechanism (``privbandits audit NAME``).

    Parameters
    ----------
    name : str
        Key of :data:`AUDITABLE`.
    under_noised : float, optional
        Audit the variant with this multiple of the calibrated noise scale (0.5 = half the noise)
        against the unchanged claim.
    n_samples : int, optional
        Outputs per neighbouring input (default: the mechanism's own, chosen so that the calibrated
        mechanism passes and the half-noise variant is flagged).
    seed : int
        Seed of the sampling streams.
    alpha : float
        1 - confidence.
    """
    if name not in AUDITABLE:
        raise UnknownNameError(f"unknown mechanism {name!r}; auditable: {', '.join(AUDITABLE)}")
    return audit_spec(AUDITABLE[name](under_noised), n_samples=n_samples, alpha=alpha, seed=seed)


def run_all(
    under_noised: float | None = None, n_samples: int | None = None, seed: int = 0, *, alpha: float = 0.05,
    names: Sequence[str] | None = None,
) -> list[AuditResult]:
    """Audit every registered mechanism (or ``names``), in registry order (``privbandits audit --all``)."""
    return [audit_mechanism(nm, under_noised, n_samples, seed, alpha=alpha) for nm in (names or list(AUDITABLE))]
