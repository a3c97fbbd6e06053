"""Calibration of Han, Liang, Wang & Zhang (2021): presets, noise scales and accounting.

Han et al. (2021): OLS noise of Prop. 3.1 (three calibrations, correction Han21-4), shift
constant ``c_tilde`` section 3.2, SGD settings section 3.3, multi-parameter budget section 2.6,
parameter provenance table section 3.6, discrepancies section 8 (items 4, 5, 18-20, 25).

=============  ===============================================================================
preset         meaning
=============  ===============================================================================
strict         (default) the smallest noise that provably meets the requested level, for the
               message as actually composed (tight; see below); SGD radius ``R = 2 c_r C_B``;
               theory shift ``c_tilde``.
paper          the formulas as printed: ``W ~ N(0, 4 C_B^2 sigma^2)``,
               ``xi ~ N(0, C_B^2 c_r^2 sigma^2)`` with ``sigma = 2 sqrt(2 ln(1.25/delta))/eps``
               (under-calibrated, Han et al. 2021, Prop. 3.1, correction Han21-4); Algorithm 2 at ``(eps/2, delta/2)`` per arm.
authors_code   the public reference code: OLS std ``6 sqrt(2 ln(2.5/delta))/eps`` for both parts
               (full eps per arm in the multi setting), no shift in single-parameter LDP-OLS,
               SGD with ``R = 1``, random unit initialization, ridge 0.05 for GLM links and the
               multi setting, OLS warm-up and a joint ``dK``-dimensional l2-ball update in the
               multi setting (with the code's radius ``r_{eps,d}``).
=============  ===============================================================================

Tight accounting (every preset; ``strict`` calibrates to it)
------------------------------------------------------------
* **One OLS message is one Gaussian mechanism.**  ``(x x^T + W, r x + xi)`` adds independent
  Gaussian noise of stds ``s_W`` (upper triangle of ``W``, diagonal included) and ``s_u`` (``xi``)
  to the vector ``f(x, r) = (ut(x x^T), r x)``.  Dividing each part by its std gives the Gaussian
  mechanism with unit noise and l2 sensitivity
  ``mu = sup sqrt(a ||ut(D)||^2 + b ||r x - r' x'||^2)``
  (``D = x x^T - x' x'^T``, ``a = 1/s_W^2``, ``b = 1/s_u^2``), accounted exactly with the analytic
  Gaussian (Balle & Wang 2018).  With ``alpha = C_B^4 / s_W^2``, ``beta = c_r^2 C_B^2 / s_u^2`` and
  ``q = |x^T x'| / C_B^2``: ``||ut(D)||^2 <= ||D||_F^2 <= C_B^4 (2 - 2 q^2)`` and
  ``||r x - r' x'||^2 <= c_r^2 C_B^2 (2 + 2 q)`` (both attained, the first by a suitable
  orientation of the pair), so ``mu^2 = max_q 2 alpha (1 - q^2) + 2 beta (1 + q)``:
  ``2 alpha + 2 beta + beta^2 / (2 alpha)`` if ``beta <= 2 alpha``, else ``4 beta``
  (:func:`ols_sensitivity`).  ``strict`` calibrates one common multiplier to this sensitivity
  with the analytic Gaussian.  The classic construction (two parts at (eps/2, delta/2),
  classic multiplier, sensitivity bound ``2 C_B^2``) adds 3.3 times that noise at (1, 0.01):
  its noise is exactly 0.19-DP (0.365 by the two-part basic composition).
* **Algorithm 2's K slots are one mechanism.**  Two users choosing arms ``i != j`` differ in two
  slots, each between a real input and the synthetic ``(0, 0)``: squared sensitivity at most
  ``2 (alpha + beta)``, which never exceeds the one-slot value above (``q = 0``).  So the K-slot
  message has the sensitivity of a single message: every slot is calibrated at the full
  ``(eps, delta)``, not ``(eps/2, delta/2)`` (Props 4.1-4.2 compose the two slots).  The same holds
  for the l2-ball: the density of ``Psi_{eps,R}(g)`` relative to ``Psi(0)`` lies in
  ``[1 - tanh(eps/2), 1 + tanh(eps/2)]``, so two slots (real vs synthetic in each) change the
  output density by at most ``(1 + tanh(eps/2)) / (1 - tanh(eps/2)) = e^eps``: per-arm slots at
  level ``eps`` give an ``eps``-LDP message (the paper's ``Psi_{eps/2}`` slots are ``eps/2``-LDP).
* Each user takes part in one round, whose phase (warm-up or main) is public: the run's guarantee
  is the worst phase.  There is no composition across rounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from privbandits.algorithms.calibration import PRESETS, Constants
from privbandits.core.errors import ValidationError
from privbandits.core.validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
)
from privbandits.privacy.calibration import (
    certify,
    gaussian_epsilon,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
)
from privbandits.privacy.ranges import Z_TAIL, OutputRange

__all__ = [
    "GAUSSIAN_CALIBRATIONS",
    "PRESETS",
    "OLSConstants",
    "OLSNoise",
    "SGDConstants",
    "default_s0",
    "ols_epsilon",
    "ols_noise",
    "ols_sensitivity",
    "ols_shift_constant",
    "ols_shift_defaults",
    "sgd_defaults",
    "sigma_code",
    "sigma_priv",
    "sigma_strict",
]

#: Gaussian calibrations of LDP-OLS (and of LDP-SGD's OLS warm-up): ``analytic`` = the message as
#: one Gaussian mechanism at the requested level (tight, default of ``strict``); ``classic`` = the
#: classic formulas (two parts at (eps/2, delta/2) with the classic multiplier).
GAUSSIAN_CALIBRATIONS: tuple[str, ...] = ("analytic", "classic")

#: ``mu * sigma`` of one OLS message with ``s_W = 2 C_B^2 sigma`` and ``s_u = 2 c_r C_B sigma``:
#: ``alpha = beta = 1/(4 sigma^2)`` gives ``mu^2 = 4.5 / (4 sigma^2)``.
_STRICT_RATIO = math.sqrt(4.5) / 2.0


def sigma_priv(epsilon: float, delta: float) -> float:
    """The paper's multiplier ``sigma_{eps,delta} = 2 sqrt(2 ln(1.25/delta)) / eps`` (section 3.1).

    Reference: 6.21502 at (1, 0.01), 1.24300 at (5, 0.01) (Han et al. 2021, Prop. 3.1, correction Han21-4).
    """
    return 2.0 * gaussian_sigma_classic(epsilon, delta, 1.0)


def sigma_strict(epsilon: float, delta: float) -> float:
    """The classic per-unit multiplier ``sigma' = 2 sqrt(2 ln(2.5/delta)) / eps`` (Han et al. 2021, Prop. 3.1, correction Han21-4).

    The classic Gaussian multiplier of each part at ``(eps/2, delta/2)``; 6.64618 at (1, 0.01).
    """
    return gaussian_sigma_classic(check_epsilon(epsilon) / 2.0, check_delta(delta) / 2.0, 1.0)


def sigma_code(epsilon: float, delta: float) -> float:
    """The authors' code std ``6 sqrt(2 ln(2.5/delta)) / eps`` (Han et al. 2021, Prop. 3.1, correction Han21-4; 19.93854 at (1, 0.01))."""
    return 3.0 * sigma_strict(epsilon, delta)


def ols_sensitivity(
    s_W: float, s_u: float, context_bound: float = 1.0, reward_bound: float = 1.0
) -> float:
    """l2 sensitivity of one OLS message in units of the noise (module docstring).

    ``mu`` such that ``(x x^T + W, r x + xi)`` is the Gaussian mechanism with unit noise and
    sensitivity ``mu``; it also bounds the K-slot message of Algorithm 2 (two slots that differ
    from the synthetic input give at most ``sqrt(2 (alpha + beta)) <= mu``).

    Parameters
    ----------
    s_W, s_u : float
        Stds of the entries of ``W`` (upper triangle) and of ``xi``.
    context_bound, reward_bound : float
        ``C_B`` and ``c_r``.
    """
    C_B, c_r = (
        check_positive("context_bound", context_bound),
        check_positive("reward_bound", reward_bound),
    )
    alpha = C_B**4 / check_positive("s_W", s_W) ** 2
    beta = (c_r * C_B) ** 2 / check_positive("s_u", s_u) ** 2
    if beta >= 2.0 * alpha:
        return math.sqrt(4.0 * beta)
    return math.sqrt(2.0 * alpha + 2.0 * beta + beta * beta / (2.0 * alpha))


def ols_epsilon(
    s_W: float, s_u: float, delta: float, context_bound: float = 1.0, reward_bound: float = 1.0
) -> float:
    """Exact epsilon at ``delta`` of one OLS message (or one K-slot message of Algorithm 2)."""
    return gaussian_epsilon(1.0, delta, ols_sensitivity(s_W, s_u, context_bound, reward_bound))


@dataclass(frozen=True)
class OLSNoise:
    """Noise of the OLS randomizer ``psi^OLS`` (Han et al. 2021, eq. 3.3).

    Attributes
    ----------
    s_W, s_u : float
        Stds of every entry of the symmetric Gaussian matrix ``W`` (diagonal included) and of
        ``xi``.
    sigma_unit : float
        Per-unit-sensitivity multiplier entering the shift constant ``c_tilde`` (Han et al. 2021, eq. 3.3-3.4).
    rule : str
        How the stds were obtained (for the guarantee's notes).
    """

    s_W: float
    s_u: float
    sigma_unit: float
    rule: str


def _classic_part(epsilon: float, delta: float) -> float:
    """``max(classic, analytic)`` multiplier of one part at ``(eps/2, delta/2)``: the classic
    formula where it is provable, the analytic one where the classic formula falls short (large
    eps: Dwork & Roth's Thm A.1 holds only for eps < 1)."""
    return max(
        sigma_strict(epsilon, delta), gaussian_sigma_analytic(epsilon / 2.0, delta / 2.0, 1.0)
    )


def ols_noise(
    preset: str,
    gaussian_calibration: str,
    epsilon: float,
    delta: float,
    context_bound: float = 1.0,
    reward_bound: float = 1.0,
    per_arm_half: bool = False,
) -> OLSNoise:
    """Noise scales of one OLS slot for ``preset`` at the user's ``(epsilon, delta)`` (Han et al. 2021, Prop. 3.1, correction Han21-4).

    Parameters
    ----------
    preset : {"strict", "paper", "authors_code"}
    gaussian_calibration : {"analytic", "classic"}
        ``analytic`` (strict only): the smallest common multiplier ``sigma`` with
        ``s_W = 2 C_B^2 sigma``, ``s_u = 2 c_r C_B sigma`` such that the whole message (and the
        K-slot message of Algorithm 2) is exactly ``(epsilon, delta)``-DP.  ``classic``: the
        classic formulas (strict: ``sigma'`` of each part at ``(eps/2, delta/2)``, raised to the
        analytic multiplier where the classic one is not provable; paper / authors_code: literal
        constants).
    epsilon, delta : float
        The user's level.
    context_bound, reward_bound : float
        ``C_B`` and ``c_r``.
    per_arm_half : bool
        Algorithm 2 with the paper's per-arm level ``(eps/2, delta/2)`` (classic strict and
        paper; the authors' code used the full level per arm, correction Han21-5 in the documentation; analytic needs no split).
    """
    check_choice("preset", preset, PRESETS)
    check_choice("gaussian_calibration", gaussian_calibration, GAUSSIAN_CALIBRATIONS)
    eps, dlt = check_epsilon(epsilon), check_delta(delta)
    C_B, c_r = (
        check_positive("context_bound", context_bound),
        check_positive("reward_bound", reward_bound),
    )
    if preset != "strict" and gaussian_calibration != "classic":
        raise ValidationError(
            f"gaussian_calibration={gaussian_calibration!r} is only defined for preset='strict'; "
            f"preset={preset!r} uses the literal constants of the paper / the authors' code"
        )
    if preset == "strict" and gaussian_calibration == "analytic":
        sigma = certify(  # the closed form may be a rounding error short of the target
            lambda sg: ols_epsilon(2 * C_B**2 * sg, 2 * c_r * C_B * sg, dlt, C_B, c_r),
            eps,
            _STRICT_RATIO * gaussian_sigma_analytic(eps, dlt, 1.0),
            decreasing=True,
        )
        return OLSNoise(
            2.0 * C_B**2 * sigma,
            2.0 * c_r * C_B * sigma,
            sigma,
            "analytic Gaussian on the whole message at (eps, delta)",
        )
    if preset == "authors_code":
        s = sigma_code(eps, dlt)
        return OLSNoise(s, s, s, "authors' code 6 sqrt(2 ln(2.5/delta))/eps, full level per arm")
    level = (eps / 2.0, dlt / 2.0) if per_arm_half else (eps, dlt)
    where = "per arm (eps/2, delta/2)" if per_arm_half else "(eps, delta)"
    if preset == "paper":
        s = sigma_priv(*level)
        return OLSNoise(2.0 * C_B * s, C_B * c_r * s, s, f"paper formulas at {where}")
    s = _classic_part(*level)
    return OLSNoise(
        2.0 * C_B**2 * s,
        2.0 * c_r * C_B * s,
        s,
        f"classic sigma' (two parts at half the level) at {where}",
    )


def ols_shift_constant(sigma_unit: float, d: int, horizon: int, alpha: float, K: int = 1) -> float:
    """``c_tilde = 2 sigma (4 sqrt(d) + 2 ln(2 T K / alpha))`` (Thm 3.1 with K = 1; Thm 4.1).

    Reference: 488.244 for the paper's sigma at (1, 0.01), d = 2, T = 1e6, alpha = 0.1.
    """
    s = check_positive("sigma_unit", sigma_unit)
    d, T, K = check_int("d", d, 1), check_int("horizon", horizon, 1), check_int("K", K, 1)
    return (
        2.0
        * s
        * (4.0 * math.sqrt(d) + 2.0 * math.log(2.0 * T * K / check_positive("alpha", alpha)))
    )


def ols_shift_defaults(preset: str, setting: str) -> dict[str, Any]:
    """Shift of LDP-OLS: ``shift(t) = shift_scale * c_tilde * sqrt(t + shift_offset)``.

    ``shift_K`` says whether ``ln(2 T K / alpha)`` (Thm 4.1) or ``ln(2 T / alpha)`` (the authors'
    multi-parameter code) enters ``c_tilde``.  Spec 3.2, 3.6 and 8.19.
    """
    check_choice("preset", preset, PRESETS)
    if preset == "authors_code":
        if setting == "single":
            return {"shift_scale": 0.0, "shift_offset": 0.0, "shift_K": False}
        return {"shift_scale": 1.0, "shift_offset": 1.0, "shift_K": False}
    return {"shift_scale": 1.0, "shift_offset": 0.0, "shift_K": setting == "multi"}


def sgd_defaults(
    preset: str, setting: str, link: str, context_bound: float, reward_bound: float
) -> dict[str, Any]:
    """Hyper-parameters of LDP-SGD implied by ``preset`` (Han et al. 2021, eq. 3.5-3.6; corrections Han21-18, Han21-20, Han21-25).

    Returns ``grad_bound`` (the paper's R), ``eta0``, ``t0``, ``step_schedule``, ``init``,
    ``ridge``, ``sgd_warmup``, ``synthetic_update``, ``joint_radius`` and ``half_arm_level``
    (Algorithm 2's per-arm ``Psi_{eps/2}`` of the paper; ``strict`` runs the slots at ``eps``,
    which is exactly ``eps``-LDP, module docstring).
    """
    check_choice("preset", preset, PRESETS)
    if preset == "authors_code":
        glm = link != "identity"
        return {
            "grad_bound": 1.0,
            "eta0": 5.0,
            "t0": 1.0,
            "step_schedule": "inv_t",
            "init": "random_unit",
            "ridge": 0.05 if (glm or setting == "multi") else 0.0,
            "sgd_warmup": "ols" if setting == "multi" else "sgd",
            "synthetic_update": "joint" if setting == "multi" else "per_arm",
            "joint_radius": "d",
            "half_arm_level": True,
        }
    return {
        "grad_bound": 2.0 * reward_bound * context_bound,
        "eta0": 5.0,
        "t0": 1.0,
        "step_schedule": "inv_t",
        "init": "zero",
        "ridge": 0.0,
        "sgd_warmup": "sgd",
        "synthetic_update": "per_arm",
        "joint_radius": "dK",
        "half_arm_level": preset == "paper",
    }


def default_s0(horizon: int, K: int, total_cap: int = 3000) -> int:
    """Default warm-up pulls per arm ``max(1, floor(min(3000, floor(T/10)) / K))`` (Han et al. 2021, Algorithm 2)."""
    T, K = check_int("horizon", horizon, 1), check_int("K", K, 1)
    return max(1, min(total_cap, T // 10) // K)


@dataclass(frozen=True)
class OLSConstants(Constants):
    """The resolved calibration of LDP-OLS (Han et al. 2021, Algorithms 1-2 with eq. 3.3).

    Attributes
    ----------
    gaussian_calibration : {"analytic", "classic"}
    s_W, s_u : float
        Stds of the entries of ``W`` and of ``xi`` (main phase, or the only one).
    sigma_unit : float
        The multiplier entering ``c_tilde``.
    sensitivity : float
        l2 sensitivity of one message in noise units (:func:`ols_sensitivity`).
    c_tilde, shift_scale, c_shift, shift_offset : float
        ``shift(t) = c_shift sqrt(t + shift_offset)``, ``c_shift = shift_scale c_tilde``.
    s0, n_warmup : int
        Warm-up pulls per arm and in total (0 in the single-parameter setting).
    multi : bool
        Algorithm 2 (multi-parameter setting): the fields below are set.
    warmup_order : str or None
    h : float or None
        Algorithm 2's ``h``.
    s_W_warm, s_u_warm, sensitivity_warm : float or None
        The warm-up slot's stds and sensitivity.
    """

    gaussian_calibration: str
    s_W: float
    s_u: float
    sigma_unit: float
    sensitivity: float
    c_tilde: float
    shift_scale: float
    c_shift: float
    shift_offset: float
    s0: int
    n_warmup: int
    multi: bool = False
    warmup_order: str | None = None
    h: float | None = None
    s_W_warm: float | None = None
    s_u_warm: float | None = None
    sensitivity_warm: float | None = None

    hidden: ClassVar[tuple[str, ...]] = ("multi",)
    _MULTI: ClassVar[tuple[str, ...]] = (
        "warmup_order",
        "h",
        "s_W_warm",
        "s_u_warm",
        "sensitivity_warm",
    )

    def as_dict(self) -> dict[str, Any]:
        out = super().as_dict()
        if not self.multi:
            for key in self._MULTI:
                out.pop(key)
        return out

    @property
    def warm(self) -> tuple[float, float]:
        """``(s_W, s_u)`` of the warm-up slot (the main phase's in the single setting)."""
        if self.s_W_warm is None or self.s_u_warm is None:
            return self.s_W, self.s_u
        return self.s_W_warm, self.s_u_warm

    def output_ranges(
        self, context_bound: float, reward_range: tuple[float, float]
    ) -> dict[str, OutputRange]:
        """``M = x x^T + W`` is symmetric with ``|M_ij| <= C_B^2 + z s_W`` and
        ``|u_i| <= c_r C_B + z s_u`` (``z`` = :data:`~privbandits.privacy.ranges.Z_TAIL` stds)."""
        return ols_output_ranges(
            max(self.s_W, self.warm[0]), max(self.s_u, self.warm[1]), context_bound, reward_range
        )


def ols_output_ranges(
    s_W: float, s_u: float, context_bound: float, reward_range: tuple[float, float]
) -> dict[str, OutputRange]:
    """Output set of the OLS randomizer ``psi^OLS`` (Han et al. 2021, eq. 3.3) at stds ``s_W, s_u``:
    entries within ``Z_TAIL`` standard deviations of the largest clipped input."""
    C_B = float(context_bound)
    c_r = max(abs(float(reward_range[0])), abs(float(reward_range[1])))
    return {
        "M": OutputRange("abs", C_B * C_B + Z_TAIL * s_W, symmetric=True),
        "u": OutputRange("abs", c_r * C_B + Z_TAIL * s_u),
    }


@dataclass(frozen=True)
class SGDConstants(Constants):
    """The resolved calibration of LDP-SGD (Han et al. 2021, Algorithms 1-2 with eq. 3.5-3.6).

    Attributes
    ----------
    grad_bound : float
        ``R``, the gradient clipping norm.
    eta0, t0 : float
        Step ``eta_t = eta0 / (t + t0)`` (or ``/ sqrt(t + t0)`` under ``step_schedule``).
    step_schedule, init : str
        ``inv_t`` / ``inv_sqrt_t``; ``zero`` / ``random_unit`` initial iterate.
    ridge : float
        Ridge ``lambda`` in the update.
    sgd_warmup, synthetic_update, joint_radius : str
        Algorithm 2's warm-up estimator, per-arm or joint l2-ball slots, the joint radius rule.
    project_radius : float or None
        Radius ``rho`` of the projection of the iterate (None: not projected).
    s0, n_warmup : int
        Warm-up pulls per arm and in total (0 in the single-parameter setting).
    epsilon_slot, radius : float
        Level and radius ``r_{eps,d}`` of each l2-ball slot (the only one in Algorithm 1).
    multi : bool
        Algorithm 2 (multi-parameter setting): the fields below are set.
    warmup_order : str or None
    h : float or None
        Algorithm 2's warm-up order and elimination threshold.
    radius_joint : float or None
        Radius of the joint ``dK``-dimensional l2-ball (0: per-arm slots).
    epsilon_warm, radius_warm : float or None
        The l2-ball warm-up slot's level and radius (SGD warm-up).
    gaussian_calibration : str or None
    s_W_warm, s_u_warm, c_shift_warm, shift_offset_warm : float or None
        The OLS warm-up's calibration, stds and shift (OLS warm-up).
    """

    grad_bound: float
    eta0: float
    t0: float
    step_schedule: str
    init: str
    ridge: float
    sgd_warmup: str
    synthetic_update: str
    joint_radius: str
    project_radius: float | None
    s0: int
    n_warmup: int
    epsilon_slot: float
    radius: float
    multi: bool = False
    warmup_order: str | None = None
    h: float | None = None
    radius_joint: float | None = None
    epsilon_warm: float | None = None
    radius_warm: float | None = None
    gaussian_calibration: str | None = None
    s_W_warm: float | None = None
    s_u_warm: float | None = None
    c_shift_warm: float | None = None
    shift_offset_warm: float | None = None

    hidden: ClassVar[tuple[str, ...]] = ("multi",)
    _MULTI: ClassVar[tuple[str, ...]] = ("warmup_order", "h", "radius_joint")
    _SGD_WARM: ClassVar[tuple[str, ...]] = ("epsilon_warm", "radius_warm")
    _OLS_WARM: ClassVar[tuple[str, ...]] = (
        "gaussian_calibration",
        "s_W_warm",
        "s_u_warm",
        "c_shift_warm",
        "shift_offset_warm",
    )

    @property
    def ols_warmup(self) -> bool:
        """Whether Algorithm 2's warm-up sends OLS messages (the fields ``*_warm`` of the OLS)."""
        return self.multi and self.s_W_warm is not None

    @property
    def joint(self) -> bool:
        """Whether Algorithm 2's main phase sends one joint ``dK``-dimensional l2-ball output."""
        return self.multi and self.synthetic_update == "joint"

    def as_dict(self) -> dict[str, Any]:
        out = super().as_dict()
        drop: tuple[str, ...] = ()
        if not self.multi:
            drop = self._MULTI + self._SGD_WARM + self._OLS_WARM
        elif self.ols_warmup:
            drop = self._SGD_WARM
        else:
            drop = self._OLS_WARM
        for key in drop:
            out.pop(key)
        return out

    def output_ranges(
        self, context_bound: float, reward_range: tuple[float, float]
    ) -> dict[str, OutputRange]:
        """Every l2-ball report has norm equal to its radius (at most the largest radius of the
        run); with the OLS warm-up, its message's entries are bounded as LDP-OLS's
        (:func:`ols_output_ranges`)."""
        radii = [self.radius, self.radius_warm or 0.0, self.radius_joint or 0.0]
        out = {"z": OutputRange("l2", max(radii))}
        if self.s_W_warm is not None and self.s_u_warm is not None:
            out.update(ols_output_ranges(self.s_W_warm, self.s_u_warm, context_bound, reward_range))
        return out
