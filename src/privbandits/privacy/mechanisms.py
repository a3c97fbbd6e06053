"""Mechanism objects: a noise distribution that carries its own privacy statement.

Small frozen objects (:class:`GaussianMechanism`, :class:`SymmetricGaussianMechanism`,
:class:`LaplaceMechanism`, :class:`L2BallMechanism`), dp-accounting / OpenDP style: each carries
its privacy statement (``.guarantee``, a :mod:`privbandits.privacy.accounting` object computed from
the noise it adds), its noise scale, and a ``sample(value, rng)`` method batched over leading axes
whose noise is drawn by the compiled samplers of :mod:`privbandits.privacy.samplers` (the ones the
algorithm kernels call; :mod:`privbandits.privacy.noise` holds the numpy-facing wrappers).  Each
has an ``under_noised(factor)`` variant (``factor`` times the noise scale, claimed guarantee
unchanged): a deliberately broken mechanism the privacy audit must flag.

The calibration formulas are in :mod:`privbandits.privacy.calibration`, the sensitivities in
:mod:`privbandits.privacy.sensitivity` and the batched samplers in :mod:`privbandits.privacy.noise`
(import them from there).

References
----------
Dwork & Roth (2014), Thm A.1 (classic Gaussian) and Def. 3.3 / Thm 3.6 (Laplace);
Balle & Wang (2018), "Improving the Gaussian Mechanism ...", Thm 8 (analytic Gaussian);
Duchi, Jordan & Wainwright (2018), l2-ball mechanism, as given in Han et al. (2021), Lemma 2.2;
Han et al. 2021, Lemmas 2.1-2.2 and Prop. 3.1; Zheng et al. 2020, Gaussian and Laplace variants; Hanna
et al. 2022, eq. 12 and Lemma 4; with the corrections Han21-1 to Han21-5, Zheng20-17, Hanna22-1
and Hanna22-2 of the documentation.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Self

import numpy as np
from scipy import special

from privbandits.core.errors import DataBoundError, ValidationError
from privbandits.core.validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_finite_array,
    check_int,
    check_positive,
)
from privbandits.privacy.accounting import ApproxDP, PureDP, to_guarantee
from privbandits.privacy.calibration import (
    CALIBRATIONS,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_sigma,
    l2_ball_radius,
    l2_ball_side_probability,
    laplace_epsilon,
    laplace_scale,
)
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.noise import (
    l2_ball_mechanism,
    sample_gaussian,
    sample_laplace,
    sample_symmetric_gaussian,
)
from privbandits.privacy.sensitivity import (
    outer_product_sensitivity,
)

__all__ = [
    "GaussianMechanism",
    "L2BallMechanism",
    "LaplaceMechanism",
    "SymmetricGaussianMechanism",
]


def _check_dim(d: object, name: str = "d") -> int:
    return check_int(name, d, 1)


# --------------------------------------------------------------------------------------------
# mechanism objects
# --------------------------------------------------------------------------------------------
def _check_factor(noise_factor: float) -> float:
    return check_positive("noise_factor", noise_factor)


def _as_float_array(name: str, value: object) -> np.ndarray:
    return check_finite_array(name, value)


def _restore_scalar(value: Any, out: np.ndarray) -> np.ndarray | float:
    return float(out) if np.ndim(value) == 0 else out


def _under_noised_note(noise_factor: float) -> str:
    if noise_factor < 1.0:
        return (
            f"DELIBERATELY BROKEN (audit test): noise scale x{noise_factor:g} of the calibrated "
            "value, claimed guarantee unchanged"
        )
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
            verdict = (
                "still meets the requested epsilon"
                if eps <= self.epsilon
                else "EXCEEDS the requested epsilon; use calibration='analytic'"
            )
            return (
                f"classic Gaussian calibration used at epsilon={self.epsilon:g} >= 1, outside "
                "Dwork & Roth Thm A.1; the exact (Balle & Wang 2018) epsilon of this noise is "
                f"{eps:.6g}, which {verdict}"
            )
        return None

    @property
    def notes(self) -> str:
        return _join(
            f"Gaussian mechanism, {self.calibration} calibration, sigma={self.nominal_sigma:.6g} "
            f"at L2 sensitivity {self.sensitivity:g}",
            self.warning or "",
            _under_noised_note(self.noise_factor),
        )

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
    _vector: GaussianMechanism = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", _check_dim(self.d))
        # validates sensitivity, epsilon, delta, calibration and noise_factor
        object.__setattr__(
            self,
            "_vector",
            GaussianMechanism(
                self.sensitivity, self.epsilon, self.delta, self.calibration, self.noise_factor
            ),
        )
        for name in ("sensitivity", "epsilon", "delta", "noise_factor"):
            object.__setattr__(self, name, getattr(self._vector, name))

    @classmethod
    def for_outer_product(
        cls,
        bound: float,
        epsilon: float,
        delta: float,
        d: int,
        *,
        tight: bool = False,
        calibration: str = "classic",
    ) -> SymmetricGaussianMechanism:
        """Mechanism for ``x x^T`` with ``||x|| <= bound`` (see :func:`outer_product_sensitivity`)."""
        return cls(outer_product_sensitivity(bound, tight=tight), epsilon, delta, d, calibration)

    nominal_sigma = property(lambda self: self._vector.nominal_sigma, doc="Calibrated std.")
    sigma = property(lambda self: self._vector.sigma, doc="Std of every upper-triangle entry of W.")
    scale = property(lambda self: self._vector.sigma, doc="Alias of sigma.")
    noise_multiplier = property(
        lambda self: self._vector.noise_multiplier, doc="sigma / sensitivity."
    )
    guarantee = property(lambda self: self._vector.guarantee, doc="Claimed (epsilon, delta).")
    actual_guarantee = property(
        lambda self: self._vector.actual_guarantee,
        doc="(epsilon, delta) of the noise actually added.",
    )
    warning = property(lambda self: self._vector.warning, doc="Classic-at-epsilon>=1 caveat.")

    @property
    def name(self) -> str:
        return f"symmetric-gaussian[{self.calibration}]"

    @property
    def notes(self) -> str:
        return _join(
            f"symmetric {self.d}x{self.d} Gaussian mechanism (upper triangle, mirrored)",
            self._vector.notes,
        )

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
            raise ValidationError(
                "value must be symmetric: the mechanism releases the upper triangle and mirrors it"
            )
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
    reward in ``[r_lo, r_hi]``, Hanna et al. 2022, eq. 12, correction Hanna22-1 -- 2 for ``[-1, 1]``, not the paper's 1;
    the sensitivities of Zheng et al. 2020, correction Zheng20-17 via :func:`outer_product_l1_sensitivity`).

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
        return _join(
            f"Laplace mechanism, scale={self.nominal_scale:.6g} at L1 sensitivity {self.sensitivity:g}",
            _under_noised_note(self.noise_factor),
        )

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
        Policy for inputs with norm above ``bound``: clip to the bound (the default; the
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
        sampler uses (every density ratio is at most that; Han et al. 2021, Lemma 2.2, corrections Han21-1 and Han21-2); equal to
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
        return _join(
            f"l2-ball mechanism (Duchi et al. 2018), d={self.d}, bound={self.bound:g}, "
            f"radius={self.nominal_radius:.6g}, out-of-bound inputs: {self.out_of_bound}",
            _under_noised_note(self.noise_factor),
        )

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
                raise DataBoundError(
                    f"value has l2 norm up to {worst:.6g}, above bound={self.bound:g}; "
                    "rescale the data or use out_of_bound='clip'"
                )
        z, _ = l2_ball_mechanism(x, self.effective_epsilon, self.bound, rng)
        return z

    def under_noised(self, factor: float) -> L2BallMechanism:
        return dataclasses.replace(self, noise_factor=self.noise_factor * _check_factor(factor))

    def neighbouring_pair(self, dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Worst-case pair ``(bound e_1, -bound e_1)``."""
        x = np.zeros(self.d)
        x[0] = self.bound
        return x, -x
