"""Local and central randomizers, batched over leading axes.

Every function samples with an explicit :class:`numpy.random.Generator` and validates its privacy
parameters.  Calibration (noise scale from epsilon, delta, sensitivity) is separate from sampling
so that algorithms can report the scale they actually used to the accountant.

References
----------
Dwork & Roth (2014), Thm A.1 (classic Gaussian) and Def. 3.3 (Laplace);
Balle & Wang (2018), "Improving the Gaussian Mechanism ...", Thm 8 (analytic Gaussian);
Duchi, Jordan & Wainwright (2018), l2-ball mechanism, as given in Han et al. (2021), Lemma 2.2.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from privbandits.core.validation import (
    check_delta,
    check_epsilon,
    check_nonnegative,
    check_positive,
)

__all__ = [
    "gaussian_sigma_classic",
    "gaussian_sigma_analytic",
    "gaussian_sigma",
    "gaussian_delta",
    "laplace_scale",
    "gaussian_epsilon",
    "laplace_epsilon",
    "l2_ball_epsilon",
    "sample_gaussian",
    "sample_symmetric_gaussian",
    "sample_laplace",
    "l2_ball_radius",
    "l2_ball_mechanism",
]


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
    # e^eps * Phi(-a - b) computed in log space to avoid overflow for large eps
    second = math.exp(eps + special.log_ndtr(-a - b)) if eps < 700 else 0.0
    return max(0.0, float(special.ndtr(a - b) - second))


def gaussian_sigma_analytic(epsilon: float, delta: float, sensitivity: float = 1.0, *, rtol: float = 1e-12) -> float:
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


def gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0, calibration: str = "classic") -> float:
    """Gaussian noise std for ``calibration`` in {"classic", "analytic"}."""
    if calibration == "classic":
        return gaussian_sigma_classic(epsilon, delta, sensitivity)
    if calibration == "analytic":
        return gaussian_sigma_analytic(epsilon, delta, sensitivity)
    from privbandits.core.errors import ValidationError

    raise ValidationError(f"calibration must be 'classic' or 'analytic', got {calibration!r}")


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
    eps = optimize.brentq(lambda e: gaussian_delta(e, sig, s) - dlt, 0.0, hi, xtol=1e-14, rtol=1e-13)
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
    B = check_positive("bound", bound)
    ratio = math.exp(math.lgamma((d + 1) / 2.0) - math.lgamma(d / 2.0))
    t = B * math.sqrt(math.pi) * ratio / r
    if t >= 1.0:
        from privbandits.core.errors import ValidationError

        raise ValidationError(f"radius={r:g} is below the minimum {B * math.sqrt(math.pi) * ratio:g} "
                              f"of an unbiased l2-ball mechanism in d={d}")
    return 2.0 * math.atanh(t)


# --------------------------------------------------------------------------------------------
# sampling
# --------------------------------------------------------------------------------------------
def sample_gaussian(rng: np.random.Generator, shape: tuple[int, ...], sigma: float) -> np.ndarray:
    """i.i.d. ``N(0, sigma^2)`` noise of the given shape."""
    return check_nonnegative("sigma", sigma) * rng.standard_normal(shape)


def sample_symmetric_gaussian(rng: np.random.Generator, lead: tuple[int, ...], d: int, sigma: float) -> np.ndarray:
    """Symmetric ``d x d`` Gaussian matrices: i.i.d. ``N(0, sigma^2)`` on and above the diagonal, mirrored.

    Returns an array of shape ``lead + (d, d)``.  Only ``d (d + 1) / 2`` draws are made per
    matrix (the upper triangle, diagonal included).
    """
    sig = check_nonnegative("sigma", sigma)
    iu = np.triu_indices(d)
    z = rng.standard_normal(lead + (iu[0].size,)) * sig
    W = np.zeros(lead + (d, d))
    W[..., iu[0], iu[1]] = z
    W[..., iu[1], iu[0]] = z
    return W


def sample_laplace(rng: np.random.Generator, shape: tuple[int, ...], scale: float) -> np.ndarray:
    """i.i.d. ``Lap(scale)`` noise of the given shape."""
    return rng.laplace(0.0, check_nonnegative("scale", scale), size=shape)


def l2_ball_radius(epsilon: float, d: int, bound: float = 1.0) -> float:
    """Output radius of the l2-ball mechanism (Han et al. 2021, section 2.5; Duchi et al. 2018).

    ``r = bound * (e^eps + 1)/(e^eps - 1) * sqrt(pi) * Gamma((d+1)/2) / Gamma(d/2)``, with the
    Gamma ratio from ``lgamma`` (stable for d in the thousands) and ``(e^eps+1)/(e^eps-1) =
    1/tanh(eps/2)``.  This is the unique radius making the mechanism unbiased.
    """
    eps = check_epsilon(epsilon)
    if not isinstance(d, (int, np.integer)) or d < 1:
        from privbandits.core.errors import ValidationError

        raise ValidationError(f"d must be an integer >= 1, got {d!r}")
    R = check_positive("bound", bound)
    ratio = math.exp(math.lgamma((d + 1) / 2.0) - math.lgamma(d / 2.0))
    return R * math.sqrt(math.pi) * ratio / math.tanh(eps / 2.0)


def l2_ball_mechanism(
    x: np.ndarray, epsilon: float, bound: float, rng: np.random.Generator
) -> tuple[np.ndarray, int]:
    """epsilon-LDP unbiased randomizer for vectors in the l2 ball (Han et al. 2021, Lemma 2.2).

    Parameters
    ----------
    x : ndarray of shape (..., d)
        Inputs; vectors with norm above ``bound`` are clipped to it (the count is returned).
    epsilon : float
        Privacy level (pure epsilon-LDP).
    bound : float
        Input norm bound ``R``.
    rng : Generator
        Client noise stream.

    Returns
    -------
    z : ndarray of shape (..., d)
        Outputs, each of norm exactly ``l2_ball_radius(epsilon, d, bound)``, with ``E[z] = x``.
    n_clipped : int
        How many inputs were clipped.

    Notes
    -----
    Exact sampling without rejection: with ``n = ||x||``, draw ``b ~ Bernoulli(1/2 + n/(2R))``,
    ``v = (2b - 1) x / n``, ``side ~ Bernoulli(e^eps / (1 + e^eps))``; draw ``U`` uniform on the
    sphere and reflect it through the origin if it lies on the wrong side of ``v``.  For
    ``x = 0`` the output is uniform on the sphere.
    """
    eps = check_epsilon(epsilon)
    R = check_positive("bound", bound)
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    lead = x.shape[:-1]
    r = l2_ball_radius(eps, d, R)
    n = np.linalg.norm(x, axis=-1)
    over = n > R
    n_clipped = int(over.sum())
    if n_clipped:
        x = np.where(over[..., None], x * (R / np.where(over, n, 1.0))[..., None], x)
        n = np.minimum(n, R)
    zero = n < 1e-300
    safe_n = np.where(zero, 1.0, n)
    u_b = rng.random(lead)
    u_side = rng.random(lead)
    g = rng.standard_normal(lead + (d,))
    gn = np.linalg.norm(g, axis=-1, keepdims=True)
    U = g / np.where(gn == 0.0, 1.0, gn)
    b = u_b < 0.5 + n / (2.0 * R)
    v = np.where(b, 1.0, -1.0)[..., None] * x / safe_n[..., None]
    same_side = u_side < special.expit(eps)  # e^eps / (1 + e^eps)
    on_v_side = np.einsum("...d,...d->...", U, v) > 0.0
    flip = (on_v_side != same_side) & ~zero
    U = np.where(flip[..., None], -U, U)
    return r * U, n_clipped
