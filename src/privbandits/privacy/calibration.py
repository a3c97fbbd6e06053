"""Noise calibration and inverse accounting of the Gaussian, Laplace and l2-ball mechanisms.

Pure functions: the noise scale a mechanism needs for a requested ``(epsilon, delta)`` at a given
sensitivity (calibration), and the ``epsilon`` the noise actually added supports (inverse
accounting, used by every algorithm's ``calibrate`` to report the guarantee of the noise it adds).
The samplers are in :mod:`privbandits.privacy.samplers`, the mechanism objects in
:mod:`privbandits.privacy.mechanisms`.

References
----------
Dwork & Roth (2014), Thm A.1 (classic Gaussian) and Def. 3.3 / Thm 3.6 (Laplace);
Balle & Wang (2018), "Improving the Gaussian Mechanism for Differential Privacy", Thm 8 (analytic
Gaussian); Duchi, Jordan & Wainwright (2018), l2-ball mechanism, as given in Han et al. (2021),
Lemma 2.2, with corrections Han21-1 and Han21-2 (documentation).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from scipy import optimize, special

from privbandits.core.errors import PrivacyError, ValidationError
from privbandits.core.validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_int,
    check_nonnegative,
    check_positive,
)

__all__ = [
    "CALIBRATIONS",
    "Bracket",
    "calibrate_noise",
    "certify",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_sigma",
    "gaussian_sigma_analytic",
    "gaussian_sigma_classic",
    "l2_ball_epsilon",
    "l2_ball_radius",
    "l2_ball_side_probability",
    "laplace_epsilon",
    "laplace_scale",
]

#: Gaussian calibrations understood by :func:`gaussian_sigma` and the Gaussian mechanism objects.
CALIBRATIONS: tuple[str, ...] = ("classic", "analytic")


def _check_dim(d: object, name: str = "d") -> int:
    return check_int(name, d, 1)


def _gamma_ratio(d: int) -> float:
    """``Gamma((d+1)/2) / Gamma(d/2)`` via lgamma (finite for d in the millions)."""
    return math.exp(math.lgamma((d + 1) / 2.0) - math.lgamma(d / 2.0))


# --------------------------------------------------------------------------------------------
# the one calibration search
# --------------------------------------------------------------------------------------------
#: Relative step of :func:`certify`: a root found to floating-point tolerance is moved by this
#: factor at a time until the guarantee holds.
NUDGE: float = 1e-12
_MAX_STEPS = 100_000


@dataclass(frozen=True)
class Bracket:
    """Where :func:`calibrate_noise` looks for the root, and how it widens the interval.

    Attributes
    ----------
    lo, hi : float
        Ends of the interval in the search variable.
    factor : float
        While ``hi`` is on the wrong side of the root it is multiplied by ``factor`` (> 1);
        1 = never widened by a factor.
    step : float
        While an end is on the wrong side of the root it is moved outward by ``step`` (both
        ends; for a log-scale search variable); 0 = never widened by a step.
    """

    lo: float
    hi: float
    factor: float = 1.0
    step: float = 0.0


def certify(
    loss: Callable[[float], float],
    target: float,
    x: float,
    *,
    decreasing: bool,
    rel: float = NUDGE,
    growth: float = 1.0,
    additive: bool = False,
    limit: float | None = None,
) -> float:
    """Move ``x`` away from the root until ``loss(x) <= target`` holds (never optimistic).

    A root search ends within a floating-point tolerance of the exact root, possibly on its
    wrong side.  This is the one place that steps it back: up (a noise scale, when ``loss``
    decreases in ``x``) or down (a local level or a zCDP budget, when ``loss`` increases).

    Parameters
    ----------
    loss : callable
        The privacy loss (an epsilon or a delta) as a function of the parameter; monotone.
    target : float
        The requested loss.
    x : float
        The starting point (a root or a closed-form value).
    decreasing : bool
        Whether ``loss`` decreases in ``x`` (then ``x`` moves up), else it moves down.
    rel : float
        First step, relative to ``x``.
    growth : float
        Factor applied to the step after each move (1 = constant step).
    additive : bool
        Steps of ``rel * x_start`` (growing by ``growth``) instead of multiplying ``x`` by
        ``1 +- rel``.
    limit : float, optional
        A value known to meet the target: the walk stops there and returns it.
    """
    sign = 1.0 if decreasing else -1.0
    s = rel * x if additive else rel
    for _ in range(_MAX_STEPS):
        if limit is not None and (x >= limit if decreasing else x <= limit):
            return limit
        if not loss(x) > target:
            return x
        x = x + sign * s if additive else x * (1.0 + sign * s)
        s *= growth
    raise PrivacyError(f"no parameter meets the target {target!r} near {x!r}")


def calibrate_noise(
    loss: Callable[[float], float],
    target: float,
    bracket: Bracket,
    *,
    decreasing: bool = True,
    param: Callable[[float], float] | None = None,
    xtol: float = 1e-300,
    rtol: float = 4.0 * 2.220446049250313e-16,
    rel: float = NUDGE,
    growth: float = 1.0,
    additive: bool = False,
    limit: float | None = None,
) -> float:
    """The parameter at which a monotone privacy loss just meets ``target``.

    The one calibration search of the library: the smallest noise scale whose epsilon (or
    delta) is at most the target when ``loss`` decreases in the parameter, the largest local
    level or zCDP budget whose loss is at most the target when it increases.  The bracket is
    widened until it holds the root, the root is found by Brent's method (``scipy.optimize.
    brentq``), stepped to the safe side by :func:`certify`, and the guarantee is checked once
    more before the value is returned.

    Parameters
    ----------
    loss : callable
        ``loss(parameter)``: the privacy loss, monotone in the parameter.
    target : float
        The requested loss.
    bracket : Bracket
        Starting interval in the search variable, and how to widen it.
    decreasing : bool
        Whether ``loss`` decreases in the parameter.
    param : callable, optional
        The parameter as a function of the search variable (e.g. ``math.exp`` to search a noise
        scale on a log scale); identity by default.
    xtol, rtol : float
        Tolerances of Brent's method.
    rel, growth, additive, limit
        The safe-side step (:func:`certify`).

    Returns
    -------
    float
        The parameter, with ``loss(parameter) <= target`` checked.

    Raises
    ------
    PrivacyError
        When no bracket holds the root or the final check fails.
    """
    to_param = param if param is not None else (lambda u: u)

    def gap(u: float) -> float:
        return loss(to_param(u)) - target

    lo, hi = bracket.lo, bracket.hi
    # the side of the root each end must reach: decreasing loss -> gap(lo) >= 0 >= gap(hi)
    for _ in range(_MAX_STEPS):
        g_hi = gap(hi)
        if not (g_hi > 0 if decreasing else g_hi <= 0):
            break
        if bracket.factor == 1.0 and bracket.step == 0.0:
            raise PrivacyError(f"the bracket [{lo!r}, {hi!r}] does not hold the root")
        hi = hi * bracket.factor if bracket.factor != 1.0 else hi + bracket.step
    else:
        raise PrivacyError("no bracket holds the root")
    if bracket.step != 0.0:
        for _ in range(_MAX_STEPS):
            g_lo = gap(lo)
            if not (g_lo < 0 if decreasing else g_lo > 0):
                break
            lo -= bracket.step
        else:
            raise PrivacyError("no bracket holds the root")
    root = to_param(optimize.brentq(gap, lo, hi, xtol=xtol, rtol=rtol))
    x = certify(
        loss,
        target,
        root,
        decreasing=decreasing,
        rel=rel,
        growth=growth,
        additive=additive,
        limit=limit,
    )
    if loss(x) > target:
        raise PrivacyError(f"the calibrated parameter {x!r} does not meet the target {target!r}")
    return x


# --------------------------------------------------------------------------------------------
# calibration
# --------------------------------------------------------------------------------------------
def gaussian_sigma_classic(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Classic Gaussian calibration ``sigma = Delta_2 sqrt(2 ln(1.25/delta)) / epsilon``.

    Proven (Dwork & Roth 2014, Thm A.1) only for ``epsilon < 1``; for larger epsilon use
    :func:`gaussian_sigma_analytic` or read the guarantee from :func:`gaussian_delta`.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    s = check_nonnegative("sensitivity", sensitivity)
    return s * math.sqrt(2.0 * math.log(1.25 / dlt)) / eps


def gaussian_delta(epsilon: float, sigma: float, sensitivity: float = 1.0) -> float:
    """Exact delta of the Gaussian mechanism at ``epsilon`` (Balle & Wang 2018, Thm 8).

    ``delta = Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta)``.
    """
    eps = check_nonnegative("epsilon", epsilon)
    sig = check_positive("sigma", sigma)
    s = check_nonnegative("sensitivity", sensitivity)
    if s == 0.0:
        return 0.0
    a = s / (2.0 * sig)
    b = eps * sig / s
    # e^eps * Phi(-a - b) in log space: since a + b >= sqrt(2 eps) and Phi(-x) <= e^{-x^2/2}/2,
    # the exponent is below -ln 2 for every eps, so this never overflows
    second = math.exp(eps + special.log_ndtr(-a - b))
    return max(0.0, float(special.ndtr(a - b) - second))


def gaussian_sigma_analytic(
    epsilon: float, delta: float, sensitivity: float = 1.0, *, rtol: float = 1e-12
) -> float:
    """Smallest sigma whose Gaussian mechanism is exactly ``(epsilon, delta)``-DP (Balle & Wang 2018).

    Valid for every epsilon > 0 (no ``epsilon < 1`` restriction); found by bracketing root search
    on :func:`gaussian_delta`, which is decreasing in sigma.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    s = check_nonnegative("sensitivity", sensitivity)
    if s == 0.0:
        return 0.0

    sig = calibrate_noise(
        lambda sigma: gaussian_delta(eps, sigma, 1.0),
        dlt,
        Bracket(-10.0, 10.0, step=10.0),
        param=math.exp,
        xtol=1e-14,
        rtol=rtol,
    )
    return s * sig


def gaussian_sigma(
    epsilon: float, delta: float, sensitivity: float = 1.0, calibration: str = "classic"
) -> float:
    """Gaussian noise std for ``calibration`` in {"classic", "analytic"}."""
    check_choice("calibration", calibration, CALIBRATIONS)
    if calibration == "classic":
        return gaussian_sigma_classic(epsilon, delta, sensitivity)
    return gaussian_sigma_analytic(epsilon, delta, sensitivity)


def laplace_scale(epsilon: float, sensitivity: float = 1.0) -> float:
    """Laplace scale ``b = Delta_1 / epsilon`` for pure epsilon-DP (Dwork & Roth 2014, Thm 3.6)."""
    return check_nonnegative("sensitivity", sensitivity) / check_epsilon(epsilon)


# --------------------------------------------------------------------------------------------
# accounting of noise actually added (inverse calibration)
# --------------------------------------------------------------------------------------------
def gaussian_epsilon(sigma: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest epsilon for which ``N(0, sigma^2)`` noise at ``sensitivity`` is ``(epsilon, delta)``-DP.

    Exact (Balle & Wang 2018, Thm 8): the root in epsilon of :func:`gaussian_delta` = delta.
    Returns 0 when even epsilon = 0 meets delta, ``inf`` when ``sigma = 0``.
    """
    dlt = check_delta(delta)
    s = check_nonnegative("sensitivity", sensitivity)
    sig = check_nonnegative("sigma", sigma)
    if s == 0.0:
        return 0.0
    if sig == 0.0:
        return math.inf
    if gaussian_delta(0.0, sig, s) <= dlt:
        return 0.0
    eps = calibrate_noise(
        lambda e: gaussian_delta(e, sig, s),
        dlt,
        Bracket(0.0, 1.0, factor=2.0),
        xtol=1e-14,
        rtol=1e-13,
    )
    return float(eps)


def laplace_epsilon(scale: float, sensitivity: float = 1.0) -> float:
    """epsilon of ``Lap(scale)`` noise at L1 ``sensitivity``: ``Delta_1 / scale``."""
    s = check_nonnegative("sensitivity", sensitivity)
    b = check_nonnegative("scale", scale)
    if s == 0.0:
        return 0.0
    return math.inf if b == 0.0 else s / b


def l2_ball_epsilon(radius: float, d: int, bound: float = 1.0) -> float:
    """epsilon of the l2-ball mechanism with output ``radius`` (inverse of :func:`l2_ball_radius`).

    ``tanh(eps / 2) = bound sqrt(pi) Gamma((d+1)/2) / (Gamma(d/2) radius)``; a radius too small
    for any finite epsilon cannot be unbiased and raises.
    """
    r = check_positive("radius", radius)
    d = _check_dim(d)
    B = check_positive("bound", bound)
    ratio = _gamma_ratio(d)
    t = B * math.sqrt(math.pi) * ratio / r
    if t >= 1.0:
        raise ValidationError(
            f"radius={r:g} is below the minimum {B * math.sqrt(math.pi) * ratio:g} "
            f"of an unbiased l2-ball mechanism in d={d}"
        )
    return 2.0 * math.atanh(t)


# --------------------------------------------------------------------------------------------
# the l2-ball mechanism's radius and hemisphere probability
# --------------------------------------------------------------------------------------------
def l2_ball_radius(epsilon: float, d: int, bound: float = 1.0) -> float:
    """Output radius of the l2-ball mechanism (Han et al. 2021, section 2.5; Duchi et al. 2018).

    ``r = bound * (e^eps + 1)/(e^eps - 1) * sqrt(pi) * Gamma((d+1)/2) / Gamma(d/2)``, with the
    Gamma ratio from ``lgamma`` (stable for d in the thousands) and ``(e^eps+1)/(e^eps-1) =
    1/tanh(eps/2)``.  This is the unique radius making the mechanism unbiased.
    """
    eps = check_epsilon(epsilon)
    d = _check_dim(d)
    R = check_positive("bound", bound)
    return R * math.sqrt(math.pi) * _gamma_ratio(d) / math.tanh(eps / 2.0)


def l2_ball_side_probability(norm: float, epsilon: float, bound: float = 1.0) -> float:
    """``P(Z^T x > 0)`` for the l2-ball mechanism at an input of norm ``norm`` (Han et al. 2021, Lemma 2.2, corrections Han21-1 and Han21-2).

    ``[1 + (1/2 + n/(2R)) (e^eps - 1)] / (1 + e^eps)``; 0.731059 at ``n = R, eps = 1`` and 1/2 at
    ``n = 0``.  Inputs above the bound are clipped first, so ``n`` is capped at ``R``.
    """
    eps = check_epsilon(epsilon)
    R = check_positive("bound", bound)
    n = min(check_nonnegative("norm", norm), R)
    p = 0.5 + n / (2.0 * R)
    q = special.expit(eps)
    return float(p * q + (1.0 - p) * (1.0 - q))
