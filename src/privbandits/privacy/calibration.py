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

from scipy import optimize, special

from privbandits.core.errors import ValidationError
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

    def f(log_sig: float) -> float:
        return gaussian_delta(eps, math.exp(log_sig), 1.0) - dlt

    lo, hi = -10.0, 10.0
    while f(lo) < 0:
        lo -= 10.0
    while f(hi) > 0:
        hi += 10.0
    root = optimize.brentq(f, lo, hi, xtol=1e-14, rtol=rtol)
    sig = math.exp(root)
    # brentq's tolerance may land a hair below the exact root; step up until delta holds
    while gaussian_delta(eps, sig, 1.0) > dlt:
        sig *= 1.0 + 1e-12
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
    hi = 1.0
    while gaussian_delta(hi, sig, s) > dlt:
        hi *= 2.0
    eps = optimize.brentq(
        lambda e: gaussian_delta(e, sig, s) - dlt, 0.0, hi, xtol=1e-14, rtol=1e-13
    )
    while gaussian_delta(eps, sig, s) > dlt:  # round up so the statement is never optimistic
        eps *= 1.0 + 1e-12
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
