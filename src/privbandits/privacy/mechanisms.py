"""Local and central randomizers, batched over leading axes.

Two layers:

* pure functions for calibration (noise scale from epsilon, delta, sensitivity), inverse accounting
  (epsilon of the noise actually added) and batched sampling with an explicit
  :class:`numpy.random.Generator`;
* small frozen mechanism objects (:class:`GaussianMechanism`, :class:`SymmetricGaussianMechanism`,
  :class:`LaplaceMechanism`, :class:`L2BallMechanism`) that carry their own privacy statement
  (``.guarantee``, a :mod:`privbandits.privacy.accounting` object computed from the noise they add),
  their noise scale, and a ``sample(value, rng)`` method, dp-accounting / OpenDP style.  Each has an
  ``under_noised(factor)`` variant (``factor`` times the noise scale, claimed guarantee unchanged):
  a deliberately broken mechanism the privacy audit must flag.

References
----------
Dwork & Roth (2014), Thm A.1 (classic Gaussian) and Def. 3.3 / Thm 3.6 (Laplace);
Balle & Wang (2018), "Improving the Gaussian Mechanism ...", Thm 8 (analytic Gaussian);
Duchi, Jordan & Wainwright (2018), l2-ball mechanism, as given in Han et al. (2021), Lemma 2.2;
Han et al. (2021) spec §2.3-2.5, Zheng et al. (2020) spec §3.2-3.3, Hanna et al. (2022) spec §2.5,
§3.10.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Self

import numpy as np
from scipy import optimize, special

from privbandits.core.errors import DataBoundError, ValidationError
from privbandits.core.validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_finite_array,
    check_int,
    check_nonnegative,
    check_positive,
)
from privbandits.privacy.accounting import ApproxDP, PureDP, to_guarantee
from privbandits.privacy.guarantee import PrivacyGuarantee

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
    "l2_ball_side_probability",
    "outer_product_sensitivity",
    "outer_product_l1_sensitivity",
    "laplace_sum_deviation",
    "CALIBRATIONS",
    "GaussianMechanism",
    "SymmetricGaussianMechanism",
    "LaplaceMechanism",
    "L2BallMechanism",
]

#: Gaussian calibrations understood by :func:`gaussian_sigma` and :class:`GaussianMechanism`.
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
    d = _check_dim(d)
    B = check_positive("bound", bound)
    ratio = _gamma_ratio(d)
    t = B * math.sqrt(math.pi) * ratio / r
    if t >= 1.0:
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
    d = _check_dim(d)
    n_upper, gather = _symmetric_gather(d)
    z = rng.standard_normal(lead + (n_upper,)) * sig
    return z[..., gather].reshape(lead + (d, d))


@functools.lru_cache(maxsize=64)
def _symmetric_gather(d: int) -> tuple[int, np.ndarray]:
    """For a d x d symmetric matrix: number of upper-triangle entries and, for each of the d*d
    positions (row-major), the index of its upper-triangle entry (a pure memo of triu_indices)."""
    iu = np.triu_indices(d)
    idx = np.empty((d, d), dtype=np.intp)
    idx[iu] = np.arange(iu[0].size)
    idx[iu[1], iu[0]] = np.arange(iu[0].size)
    idx.setflags(write=False)
    return iu[0].size, idx.ravel()


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
    d = _check_dim(d)
    R = check_positive("bound", bound)
    return R * math.sqrt(math.pi) * _gamma_ratio(d) / math.tanh(eps / 2.0)


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
    x = check_finite_array("x", x)
    if x.ndim == 0:
        raise ValidationError("x must have a trailing feature axis of size d >= 1, got a scalar")
    d = x.shape[-1]
    lead = x.shape[:-1]
    r = l2_ball_radius(eps, d, R)
    n = np.sqrt(np.einsum("...d,...d->...", x, x))
    over = n > R
    n_clipped = int(over.sum())
    if n_clipped:
        x = np.where(over[..., None], x * (R / np.where(over, n, 1.0))[..., None], x)
        n = np.minimum(n, R)
    zero = n < 1e-300
    u_b = rng.random(lead)
    u_side = rng.random(lead)
    g = rng.standard_normal(lead + (d,))
    gn = np.sqrt(np.einsum("...d,...d->...", g, g))
    # b = 1 keeps X~ = x, b = 0 flips it: v = (2b - 1) x / n.  U = g / ||g|| lies on v's side iff
    # (2b - 1) g^T x > 0, so v itself is never formed.
    b = u_b < 0.5 + n / (2.0 * R)
    on_v_side = (np.einsum("...d,...d->...", g, x) > 0.0) == b
    same_side = u_side < special.expit(eps)  # e^eps / (1 + e^eps)
    flip = (on_v_side != same_side) & ~zero
    scale = np.where(flip, -r, r) / np.where(gn == 0.0, 1.0, gn)
    return g * scale[..., None], n_clipped


def l2_ball_side_probability(norm: float, epsilon: float, bound: float = 1.0) -> float:
    """``P(Z^T x > 0)`` for the l2-ball mechanism at an input of norm ``norm`` (Han et al. spec §2.5).

    ``[1 + (1/2 + n/(2R)) (e^eps - 1)] / (1 + e^eps)``; 0.731059 at ``n = R, eps = 1`` and 1/2 at
    ``n = 0``.  Inputs above the bound are clipped first, so ``n`` is capped at ``R``.
    """
    eps = check_epsilon(epsilon)
    R = check_positive("bound", bound)
    n = min(check_nonnegative("norm", norm), R)
    p = 0.5 + n / (2.0 * R)
    q = special.expit(eps)
    return float(p * q + (1.0 - p) * (1.0 - q))


# --------------------------------------------------------------------------------------------
# sensitivities the specs derive
# --------------------------------------------------------------------------------------------
def outer_product_sensitivity(bound: float = 1.0, *, tight: bool = False) -> float:
    """L2 sensitivity of the upper triangle (diagonal included) of ``x x^T`` for ``||x|| <= bound``.

    ``||x x^T - x' x'^T||_F^2 = ||x||^4 + ||x'||^4 - 2 (x^T x')^2 <= 2 bound^4``, so the tight value
    is ``sqrt(2) bound^2`` (orthogonal x, x' of norm ``bound``; the upper-triangle vector has the
    same maximum).  The default is the looser ``2 bound^2`` that the papers use (Han et al. 2021,
    Prop 3.1 / spec §2.4 "strict"; Zheng et al. 2020, ``||v(x) - v(x')|| <= 2``).
    """
    B = check_positive("bound", bound)
    return (math.sqrt(2.0) if tight else 2.0) * B * B


def outer_product_l1_sensitivity(d: int, bound: float = 1.0) -> float:
    """L1 sensitivity of the upper triangle of ``x x^T`` for ``||x||_2 <= bound`` (Zheng spec §3.3).

    ``sum_{i<=j} |x_i x_j| <= (||x||_1^2 + ||x||_2^2) / 2 <= (d + 1) bound^2 / 2``, hence
    ``Delta_1 = (d + 1) bound^2``.
    """
    d = _check_dim(d)
    B = check_positive("bound", bound)
    return (d + 1) * B * B


def laplace_sum_deviation(scale: float, sum_sq: float, max_abs: float, ell: float) -> float:
    """Threshold ``t`` with ``P(sum_j l_j z_j >= t) <= e^{-ell}`` for i.i.d. ``z_j ~ Lap(scale)``.

    Corrected Lemma 4 of Hanna et al. (2022) (spec §3.10): with ``S = sum_j l_j^2`` and
    ``c = max_j |l_j|``, ``t = scale (sqrt(8 S ell) + sqrt(2) c ell)``.  (The paper's own lemma
    uses a too-small Laplace MGF constant and is numerically violated.)

    Parameters
    ----------
    scale : float
        Laplace scale ``s`` (std ``sqrt(2) s``).
    sum_sq : float
        ``S = sum_j l_j^2`` >= 0.
    max_abs : float
        ``c = max_j |l_j|`` >= 0 (``c^2 <= S``).
    ell : float
        Log of the inverse failure probability, > 0.
    """
    s = check_nonnegative("scale", scale)
    S = check_nonnegative("sum_sq", sum_sq)
    c = check_nonnegative("max_abs", max_abs)
    L = check_positive("ell", ell)
    if c * c > S * (1.0 + 1e-12):
        raise ValidationError(f"max_abs^2 = {c * c:g} cannot exceed sum_sq = {S:g}")
    return s * (math.sqrt(8.0 * S * L) + math.sqrt(2.0) * c * L)


# --------------------------------------------------------------------------------------------
# mechanism objects
# --------------------------------------------------------------------------------------------
def _check_factor(noise_factor: float) -> float:
    return check_positive("noise_factor", noise_factor)


def _as_float_array(name: str, value: object) -> np.ndarray:
    return check_finite_array(name, value)


def _restore_scalar(value: object, out: np.ndarray) -> np.ndarray | float:
    return float(out) if np.ndim(value) == 0 else out


def _under_noised_note(noise_factor: float) -> str:
    if noise_factor < 1.0:
        return (f"DELIBERATELY BROKEN (audit test): noise scale x{noise_factor:g} of the calibrated "
                "value, claimed guarantee unchanged")
    if noise_factor > 1.0:
        return f"over-noised: noise scale x{noise_factor:g} of the calibrated value"
    return ""


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


class _AdditiveNoise:
    """Shared behaviour of the additive mechanisms ``value + noise`` (Gaussian, Laplace).

    Subclasses are frozen dataclasses with ``sensitivity``, ``noise_factor``, ``guarantee``,
    ``notes`` and a ``noise(rng, shape)`` sampler.
    """

    sensitivity: float
    noise_factor: float

    def privacy_guarantee(self, model: str = "local", unit: str = "user") -> PrivacyGuarantee:
        """The claimed :attr:`guarantee` as a :class:`PrivacyGuarantee` in ``model``."""
        return to_guarantee(self.guarantee, model, unit, self.notes)  # type: ignore[attr-defined]

    def sample(self, value: np.ndarray | float, rng: np.random.Generator) -> np.ndarray | float:
        """Release ``value + noise`` entrywise; any shape (leading axes are batch axes)."""
        v = _as_float_array("value", value)
        return _restore_scalar(value, v + self.noise(rng, v.shape))  # type: ignore[attr-defined]

    def under_noised(self, factor: float) -> Self:
        """Copy with ``factor`` times the noise scale and the same claimed guarantee (for audits)."""
        return dataclasses.replace(self, noise_factor=self.noise_factor * _check_factor(factor))  # type: ignore[type-var]

    def neighbouring_pair(self, dim: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Worst-case neighbouring values ``(0, Delta e_1)`` in ``R^dim``."""
        x = np.zeros(_check_dim(dim, "dim"))
        y = x.copy()
        y[0] = self.sensitivity
        return x, y


@dataclass(frozen=True)
class GaussianMechanism(_AdditiveNoise):
    """Gaussian mechanism ``f(x) + N(0, sigma^2 I)`` at L2 sensitivity ``Delta_2``.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity ``Delta_2 > 0`` of the released function.
    epsilon, delta : float
        Requested ``(epsilon, delta)``; epsilon > 0, delta in (0, 1).
    calibration : {"classic", "analytic"}
        ``"classic"``: ``sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon`` (Dwork & Roth 2014,
        Thm A.1; Han et al. 2021, Lemma 2.1; Zheng et al. 2020, §3.2), proven only for
        epsilon < 1; ``"analytic"``: the smallest sigma that is exactly ``(epsilon, delta)``-DP
        (Balle & Wang 2018, Thm 8), valid for every epsilon.
    noise_factor : float
        Multiplies the calibrated sigma (1 = calibrated).  Values below 1 give the deliberately
        broken variant of :meth:`under_noised`; the claimed :attr:`guarantee` does not change.

    Attributes
    ----------
    sigma : float
        Std of the noise actually added (``noise_factor`` times :attr:`nominal_sigma`).
    noise_multiplier : float
        ``sigma / sensitivity``.
    guarantee : ApproxDP
        The claimed statement: the exact epsilon (Balle & Wang 2018) of the calibrated noise at
        ``delta`` (at most the requested epsilon whenever the calibration is valid; above it when
        the classic formula fails, e.g. ``epsilon = 6, delta = 0.1``).
    actual_guarantee : ApproxDP
        The statement the noise actually added supports (differs only for ``noise_factor != 1``).
    warning : str or None
        Set when the classic calibration is used at epsilon >= 1.
    notes : str
        Calibration, caveats, broken-variant marker; copied into reported guarantees.

    Examples
    --------
    >>> import numpy as np
    >>> m = GaussianMechanism(sensitivity=1.0, epsilon=0.5, delta=1e-5)
    >>> z = m.sample(np.zeros((4, 3)), np.random.default_rng(0))  # batched over leading axes
    >>> z.shape
    (4, 3)
    """

    sensitivity: float
    epsilon: float
    delta: float
    calibration: str = "classic"
    noise_factor: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        check_choice("calibration", self.calibration, CALIBRATIONS)
        object.__setattr__(self, "noise_factor", _check_factor(self.noise_factor))

    # -- calibration ---------------------------------------------------------------------------
    @cached_property
    def nominal_sigma(self) -> float:
        """Calibrated std (before ``noise_factor``)."""
        return gaussian_sigma(self.epsilon, self.delta, self.sensitivity, self.calibration)

    @property
    def sigma(self) -> float:
        """Std of the noise actually added."""
        return self.noise_factor * self.nominal_sigma

    @property
    def scale(self) -> float:
        """Alias of :attr:`sigma` (the noise scale)."""
        return self.sigma

    @property
    def noise_multiplier(self) -> float:
        """``sigma / sensitivity`` (dp-accounting's noise multiplier)."""
        return self.sigma / self.sensitivity

    @property
    def name(self) -> str:
        return f"gaussian[{self.calibration}]"

    # -- privacy statements ----------------------------------------------------------------------
    def _epsilon_of(self, sigma: float) -> float:
        eps = gaussian_epsilon(sigma, self.delta, self.sensitivity)
        if gaussian_delta(self.epsilon, sigma, self.sensitivity) <= self.delta:
            eps = min(eps, self.epsilon)  # the requested statement holds exactly
        return eps

    @cached_property
    def guarantee(self) -> ApproxDP:
        """Claimed ``(epsilon, delta)``: computed from the calibrated noise (see class docs)."""
        return ApproxDP(self._epsilon_of(self.nominal_sigma), self.delta)

    @cached_property
    def actual_guarantee(self) -> ApproxDP:
        """``(epsilon, delta)`` of the noise actually added."""
        return ApproxDP(self._epsilon_of(self.sigma), self.delta)

    @property
    def warning(self) -> str | None:
        if self.calibration == "classic" and self.epsilon >= 1.0:
            eps = self.guarantee.epsilon
            verdict = ("still meets the requested epsilon" if eps <= self.epsilon else
                       "EXCEEDS the requested epsilon; use calibration='analytic'")
            return (f"classic Gaussian calibration used at epsilon={self.epsilon:g} >= 1, outside "
                    "Dwork & Roth Thm A.1; the exact (Balle & Wang 2018) epsilon of this noise is "
                    f"{eps:.6g}, which {verdict}")
        return None

    @property
    def notes(self) -> str:
        return _join(f"Gaussian mechanism, {self.calibration} calibration, sigma={self.nominal_sigma:.6g} "
                     f"at L2 sensitivity {self.sensitivity:g}",
                     self.warning or "", _under_noised_note(self.noise_factor))

    # -- sampling --------------------------------------------------------------------------------
    def noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """i.i.d. ``N(0, sigma^2)`` noise of ``shape``."""
        return sample_gaussian(rng, tuple(shape), self.sigma)


@dataclass(frozen=True)
class SymmetricGaussianMechanism:
    """Symmetric-matrix Gaussian mechanism ``M + W`` (Han et al. 2021, §3.1 / Prop 3.1).

    ``W`` has i.i.d. ``N(0, sigma^2)`` entries on and above the diagonal, mirrored below, so the
    release is the Gaussian mechanism applied to the ``d (d + 1) / 2`` upper-triangle entries of
    ``M``; ``sensitivity`` is the L2 (Frobenius) sensitivity of that upper triangle, e.g.
    :func:`outer_product_sensitivity` for ``M = x x^T`` (``2 bound^2``, or ``sqrt(2) bound^2``
    tight).  Parameters and attributes as :class:`GaussianMechanism`, plus the matrix size ``d``.
    """

    sensitivity: float
    epsilon: float
    delta: float
    d: int
    calibration: str = "classic"
    noise_factor: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", _check_dim(self.d))
        # validates sensitivity, epsilon, delta, calibration and noise_factor
        object.__setattr__(self, "_vector", GaussianMechanism(
            self.sensitivity, self.epsilon, self.delta, self.calibration, self.noise_factor))
        for name in ("sensitivity", "epsilon", "delta", "noise_factor"):
            object.__setattr__(self, name, getattr(self._vector, name))

    @classmethod
    def for_outer_product(cls, bound: float, epsilon: float, delta: float, d: int, *,
                          tight: bool = False, calibration: str = "classic") -> SymmetricGaussianMechanism:
        """Mechanism for ``x x^T`` with ``||x|| <= bound`` (see :func:`outer_product_sensitivity`)."""
        return cls(outer_product_sensitivity(bound, tight=tight), epsilon, delta, d, calibration)

    nominal_sigma = property(lambda self: self._vector.nominal_sigma, doc="Calibrated std.")
    sigma = property(lambda self: self._vector.sigma, doc="Std of every upper-triangle entry of W.")
    scale = property(lambda self: self._vector.sigma, doc="Alias of sigma.")
    noise_multiplier = property(lambda self: self._vector.noise_multiplier, doc="sigma / sensitivity.")
    guarantee = property(lambda self: self._vector.guarantee, doc="Claimed (epsilon, delta).")
    actual_guarantee = property(lambda self: self._vector.actual_guarantee,
                                doc="(epsilon, delta) of the noise actually added.")
    warning = property(lambda self: self._vector.warning, doc="Classic-at-epsilon>=1 caveat.")

    @property
    def name(self) -> str:
        return f"symmetric-gaussian[{self.calibration}]"

    @property
    def notes(self) -> str:
        return _join(f"symmetric {self.d}x{self.d} Gaussian mechanism (upper triangle, mirrored)",
                     self._vector.notes)

    def privacy_guarantee(self, model: str = "local", unit: str = "user") -> PrivacyGuarantee:
        return to_guarantee(self.guarantee, model, unit, self.notes)

    def noise(self, rng: np.random.Generator, lead: tuple[int, ...] = ()) -> np.ndarray:
        """Symmetric noise matrices of shape ``lead + (d, d)``."""
        return sample_symmetric_gaussian(rng, tuple(lead), self.d, self.sigma)

    def sample(self, value: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Release ``M + W`` for symmetric ``M`` of shape ``(..., d, d)``."""
        M = _as_float_array("value", value)
        if M.ndim < 2 or M.shape[-2:] != (self.d, self.d):
            raise ValidationError(f"value must have shape (..., {self.d}, {self.d}), got {M.shape}")
        if not np.allclose(M, np.swapaxes(M, -1, -2), rtol=1e-12, atol=1e-12):
            raise ValidationError("value must be symmetric: the mechanism releases the upper triangle "
                                  "and mirrors it")
        return M + self.noise(rng, M.shape[:-2])

    def under_noised(self, factor: float) -> SymmetricGaussianMechanism:
        return dataclasses.replace(self, noise_factor=self.noise_factor * _check_factor(factor))

    def neighbouring_pair(self, dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Worst-case pair ``(0, Delta E_11)``: upper-triangle distance equal to the sensitivity."""
        x = np.zeros((self.d, self.d))
        y = x.copy()
        y[0, 0] = self.sensitivity
        return x, y


@dataclass(frozen=True)
class LaplaceMechanism(_AdditiveNoise):
    """Laplace mechanism ``f(x) + Lap(b)^p`` with ``b = Delta_1 / epsilon`` (pure epsilon-DP).

    Scalar or vector values; ``sensitivity`` is the L1 sensitivity (e.g. ``r_hi - r_lo`` for a
    reward in ``[r_lo, r_hi]``, Hanna et al. spec §2.5 -- 2 for ``[-1, 1]``, not the paper's 1;
    the sensitivities of Zheng et al. spec §3.3 via :func:`outer_product_l1_sensitivity`).

    Parameters
    ----------
    sensitivity : float
        L1 sensitivity ``Delta_1 > 0``.
    epsilon : float
        Requested epsilon > 0.
    noise_factor : float
        Multiplies the calibrated scale (1 = calibrated; < 1 is the broken audit variant).

    Attributes
    ----------
    scale : float
        Laplace scale ``b`` of the noise actually added (std ``sqrt(2) b``).
    noise_multiplier : float
        ``scale / sensitivity``.
    guarantee : PureDP
        ``Delta_1 / b`` of the calibrated scale (Dwork & Roth 2014, Thm 3.6).
    """

    sensitivity: float
    epsilon: float
    noise_factor: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "noise_factor", _check_factor(self.noise_factor))

    @classmethod
    def for_range(cls, lower: float, upper: float, epsilon: float) -> LaplaceMechanism:
        """Mechanism for a scalar clipped to ``[lower, upper]``: ``Delta_1 = upper - lower``."""
        lo = float(check_finite_array("lower", lower))
        hi = float(check_finite_array("upper", upper))
        if not hi > lo:
            raise ValidationError(f"upper must exceed lower, got [{lo:g}, {hi:g}]")
        return cls(hi - lo, epsilon)

    @property
    def nominal_scale(self) -> float:
        return laplace_scale(self.epsilon, self.sensitivity)

    @property
    def scale(self) -> float:
        return self.noise_factor * self.nominal_scale

    @property
    def std(self) -> float:
        return math.sqrt(2.0) * self.scale

    @property
    def noise_multiplier(self) -> float:
        return self.scale / self.sensitivity

    @property
    def name(self) -> str:
        return "laplace"

    @property
    def guarantee(self) -> PureDP:
        return PureDP(laplace_epsilon(self.nominal_scale, self.sensitivity))

    @property
    def actual_guarantee(self) -> PureDP:
        return PureDP(laplace_epsilon(self.scale, self.sensitivity))

    @property
    def notes(self) -> str:
        return _join(f"Laplace mechanism, scale={self.nominal_scale:.6g} at L1 sensitivity {self.sensitivity:g}",
                     _under_noised_note(self.noise_factor))

    def noise(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """i.i.d. ``Lap(b)`` noise of ``shape``."""
        return sample_laplace(rng, tuple(shape), self.scale)


@dataclass(frozen=True)
class L2BallMechanism:
    """The l2-ball mechanism of Duchi, Jordan & Wainwright (2018) (Han et al. 2021, Lemma 2.2).

    Pure epsilon-LDP and unbiased for inputs with ``||x|| <= bound``; every output has norm
    exactly :attr:`radius` ``= bound coth(eps/2) sqrt(pi) Gamma((d+1)/2) / Gamma(d/2)``.  Sampling is
    exact and rejection-free (:func:`l2_ball_mechanism`).

    Parameters
    ----------
    epsilon : float
        Requested epsilon > 0.
    d : int
        Dimension >= 1.
    bound : float
        Input norm bound ``R`` > 0.
    noise_factor : float
        The l2-ball's noise scale is read as the privacy temperature ``1/epsilon`` (the analogue of
        a Laplace scale ``b / Delta_1``): with ``noise_factor = f`` the sampler runs at
        ``epsilon / f`` (radius ``r_{eps/f, d}``, still unbiased) while the claimed guarantee stays
        ``epsilon``; ``f = 0.5`` doubles the actual privacy loss.
    out_of_bound : {"clip", "raise"}
        Policy for inputs with norm above ``bound``: clip to the bound (the spec's default; the
        count is available from :func:`l2_ball_mechanism`) or raise :class:`DataBoundError`.

    Attributes
    ----------
    radius : float
        Output norm of the sampler.
    scale : float
        ``noise_factor / epsilon``.
    noise_multiplier : float
        ``coth(eps_eff / 2)``: the radius relative to its epsilon -> infinity limit.
    guarantee : PureDP
        ``ln(q / (1 - q))`` for the same-hemisphere probability ``q = e^eps / (1 + e^eps)`` the
        sampler uses (every density ratio is at most that; Han et al. spec §2.5); equal to
        ``l2_ball_epsilon(radius, d, bound)`` up to rounding.
    """

    epsilon: float
    d: int
    bound: float = 1.0
    noise_factor: float = 1.0
    out_of_bound: str = "clip"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "d", _check_dim(self.d))
        object.__setattr__(self, "bound", check_positive("bound", self.bound))
        object.__setattr__(self, "noise_factor", _check_factor(self.noise_factor))
        check_choice("out_of_bound", self.out_of_bound, ("clip", "raise"))

    @property
    def effective_epsilon(self) -> float:
        """epsilon the sampler actually runs at (``epsilon / noise_factor``)."""
        return self.epsilon / self.noise_factor

    @cached_property
    def nominal_radius(self) -> float:
        return l2_ball_radius(self.epsilon, self.d, self.bound)

    @cached_property
    def radius(self) -> float:
        return l2_ball_radius(self.effective_epsilon, self.d, self.bound)

    @property
    def scale(self) -> float:
        return self.noise_factor / self.epsilon

    @property
    def noise_multiplier(self) -> float:
        return 1.0 / math.tanh(self.effective_epsilon / 2.0)

    @property
    def name(self) -> str:
        return "l2-ball"

    @staticmethod
    def _side_epsilon(eps: float) -> float:
        # The output density ratio of any two inputs is at most q / (1 - q), with q the
        # same-hemisphere probability the sampler uses (the radius only sets unbiasedness).
        # Computed from the float q actually used: 1 - q is exact (Sterbenz), so this is accurate
        # even where l2_ball_epsilon(radius) is ill-conditioned (coth(eps/2) -> 1, eps >~ 15).
        q = float(special.expit(eps))
        return math.log(q) - math.log1p(-q)

    @cached_property
    def guarantee(self) -> PureDP:
        """Claimed pure epsilon: ``ln(q / (1 - q))`` of the calibrated hemisphere probability."""
        return PureDP(self._side_epsilon(self.epsilon))

    @cached_property
    def actual_guarantee(self) -> PureDP:
        return PureDP(self._side_epsilon(self.effective_epsilon))

    @property
    def notes(self) -> str:
        return _join(f"l2-ball mechanism (Duchi et al. 2018), d={self.d}, bound={self.bound:g}, "
                     f"radius={self.nominal_radius:.6g}, out-of-bound inputs: {self.out_of_bound}",
                     _under_noised_note(self.noise_factor))

    def privacy_guarantee(self, model: str = "local", unit: str = "user") -> PrivacyGuarantee:
        return to_guarantee(self.guarantee, model, unit, self.notes)

    def side_probability(self, norm: float) -> float:
        """``P(Z^T x > 0)`` at an input of norm ``norm`` (:func:`l2_ball_side_probability`)."""
        return l2_ball_side_probability(norm, self.effective_epsilon, self.bound)

    def sample(self, value: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Privatize vectors ``value`` of shape ``(..., d)``; outputs have norm :attr:`radius`."""
        x = _as_float_array("value", value)
        if x.ndim == 0 or x.shape[-1] != self.d:
            raise ValidationError(f"value must have shape (..., {self.d}), got {x.shape}")
        if self.out_of_bound == "raise":
            worst = float(np.max(np.linalg.norm(x, axis=-1))) if x.size else 0.0
            if worst > self.bound * (1.0 + 1e-12):
                raise DataBoundError(f"value has l2 norm up to {worst:.6g}, above bound={self.bound:g}; "
                                     "rescale the data or use out_of_bound='clip'")
        z, _ = l2_ball_mechanism(x, self.effective_epsilon, self.bound, rng)
        return z

    def under_noised(self, factor: float) -> L2BallMechanism:
        return dataclasses.replace(self, noise_factor=self.noise_factor * _check_factor(factor))

    def neighbouring_pair(self, dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Worst-case pair ``(bound e_1, -bound e_1)``."""
        x = np.zeros(self.d)
        x[0] = self.bound
        return x, -x
