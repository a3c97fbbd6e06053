"""Calibration of LDP-OnePoint: noise of one scalar, its guarantee, and the retuned problem.

Zheng, Cai, Huang, Li & Wang (2020), Algorithm 1 and Theorems 2-3.

* **Noise.**  One user's message is its loss (here the reward, ``f = -r``, which has the same
  sensitivity) clipped into ``[lo, hi]`` plus noise.  ``paper``: ``|f| <= B`` and
  ``sigma = 2 B sqrt(2 ln(1.25/delta)) / epsilon`` (Algorithm 1, line 1; Laplace variant
  ``b = 2B / epsilon``).  ``strict``: the exact sensitivity ``Delta = hi - lo`` of the clipped
  value and the analytic Gaussian mechanism (Balle & Wang 2018), so the accounted epsilon is the
  request (Laplace: ``b = Delta / epsilon``).  Either way the guarantee is accounted from the
  noise actually added, at sensitivity ``Delta``.
* **Retuning (Theorem 3).**  The wrapped algorithm runs on the virtual losses
  ``f_t + Z_t``: same regret, larger range.  It is reset with a problem description whose reward
  range is ``[lo - w, hi + w]`` (``w`` bounds every ``|Z_t|`` with probability ``1 - 1/T``:
  ``sigma sqrt(2 ln(2 T^2))`` for Gaussian noise, ``b ln(T^2)`` for Laplace) and whose noise scale
  is ``sqrt(s_0^2 + Var Z)`` (``s_0`` the raw rewards' sub-Gaussian scale), so every
  range-dependent constant of the black box (learning rates, confidence radii) uses ``B_tilde``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

from privbandits.algorithms.calibration import Constants
from privbandits.algorithms.ldp_zheng.calibration import (
    gaussian_message_guarantee,
    laplace_message_guarantee,
    tight_sigma,
)
from privbandits.algorithms.mab.scales import reward_scale
from privbandits.core.convex import ConvexSpec
from privbandits.core.errors import ValidationError
from privbandits.core.links import IDENTITY
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.ranges import Z_TAIL, OutputRange

__all__ = [
    "OnePointCalibration",
    "OnePointConstants",
    "calibrate_onepoint",
    "inflated_spec",
    "noise_bound",
]

_SQRT2 = math.sqrt(2.0)


@dataclass(frozen=True)
class OnePointCalibration:
    """Resolved privatizer of LDP-OnePoint on one problem.

    Attributes
    ----------
    lo, hi : float
        Clipping range of the user's value.
    sensitivity : float
        ``hi - lo``.
    scale : float
        Noise std (Gaussian) or Laplace scale ``b``.
    std : float
        Standard deviation of the noise (``sqrt(2) b`` for Laplace).
    guarantee : PrivacyGuarantee
        Accounted per-user guarantee of the noise added.
    """

    lo: float
    hi: float
    sensitivity: float
    scale: float
    std: float
    mechanism: str
    guarantee: PrivacyGuarantee


@dataclass(frozen=True)
class OnePointConstants(Constants):
    """The resolved calibration of LDP-OnePoint (Zheng et al. 2020, Algorithm 1, Theorem 3).

    Attributes
    ----------
    clip_lo, clip_hi : float
        Clipping range ``[lo, hi]`` of the user's value.
    sensitivity : float
        ``hi - lo``.
    noise_scale, noise_std : float
        Gaussian std ``sigma`` or Laplace scale ``b``, and the noise's standard deviation.
    mechanism : {"gaussian", "laplace"}
    T : int
        Horizon of the range enlargement.
    base : str
        The black box ``A``.
    noise_bound : float
        ``w`` bounding every ``|Z_t|`` with probability ``1 - 1/T`` (:func:`noise_bound`).
    base_reward_range : tuple of float
        The range the black box is tuned for (``[lo - w, hi + w]``, or ``[lo, hi]``).
    base_noise_scale : float
        The noise scale the black box is tuned for.
    clip : bool
        User-side clipping (not stored: a parameter).
    """

    clip_lo: float
    clip_hi: float
    sensitivity: float
    noise_scale: float
    noise_std: float
    mechanism: str
    T: int
    base: str
    noise_bound: float
    base_reward_range: tuple[float, float]
    base_noise_scale: float
    clip: bool = True

    hidden: ClassVar[tuple[str, ...]] = ("clip",)

    def output_ranges(
        self, context_bound: float, reward_range: tuple[float, float]
    ) -> dict[str, OutputRange]:
        """Gaussian noise on a clipped value: ``|m| <= max(|lo|, |hi|) + z sigma`` (``z`` =
        :data:`~privbandits.privacy.ranges.Z_TAIL` stds).  Laplace noise or ``clip=False``: not
        declared."""
        if self.mechanism != "gaussian" or not self.clip:
            return {}
        B = max(abs(self.clip_lo), abs(self.clip_hi))
        return {"value": OutputRange("abs", B + Z_TAIL * self.noise_std)}


def calibrate_onepoint(
    epsilon: float,
    delta: float,
    lo: float,
    hi: float,
    *,
    mechanism: str = "gaussian",
    preset: str = "strict",
    clip: bool = True,
    rounds: int = 1,
) -> OnePointCalibration:
    """Noise of the one-point randomizer for values clipped into ``[lo, hi]`` (module docstring);
    each of the ``rounds`` users sends one value (the guarantee's ledger).

    Raises
    ------
    ValidationError
        When the range is not finite (an unbounded loss cannot be privatized by Algorithm 1).
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or not lo < hi:
        raise ValidationError(
            f"LDP-OnePoint needs bounded losses: the reward/loss range must be a finite "
            f"interval [lo, hi] with lo < hi, got [{lo}, {hi}]; declare reward_range "
            "(or loss_bound) for unbounded rewards"
        )
    sens = hi - lo
    B = max(abs(lo), abs(hi))
    note = f"LDP-OnePoint (Zheng et al. 2020, Alg. 1), preset={preset}, values clipped to [{lo:g}, {hi:g}]"
    if not clip:
        note += "; clip=False: conditional on the values lying in the range"
    if mechanism == "laplace":
        b = (2.0 * B if preset == "paper" else sens) / epsilon
        g = laplace_message_guarantee(
            (("value", sens, b),), note + "; Laplace variant", rounds=rounds
        )
        return OnePointCalibration(lo, hi, sens, b, _SQRT2 * b, mechanism, g)
    if preset == "paper":
        sigma = 2.0 * B * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    else:
        sigma = tight_sigma(epsilon, delta, sens)
    g = gaussian_message_guarantee(
        (("value", sens, sigma),),
        delta,
        note,
        rounds=rounds,
        calibration="classic" if preset == "paper" else "analytic",
    )
    return OnePointCalibration(lo, hi, sens, sigma, sigma, mechanism, g)


def noise_bound(cal: OnePointCalibration, T: int) -> float:
    """``w`` with ``P(max_{t <= T} |Z_t| > w) <= 1/T``: ``sigma sqrt(2 ln(2 T^2))`` (Gaussian),
    ``b ln(T^2)`` (Laplace); Zheng et al. (2020), proof of Theorem 3 with ``alpha' = 1/T``."""
    T = max(int(T), 2)
    if cal.mechanism == "laplace":
        return cal.scale * 2.0 * math.log(T)
    return cal.scale * math.sqrt(2.0 * math.log(2.0 * T * T))


def inflated_spec(spec: EnvSpec, cal: OnePointCalibration, T: int, inflate: bool = True) -> EnvSpec:
    """The problem the wrapped algorithm is reset with: ``K`` arms as one-hot features (or, for
    bandit convex optimization, the same :class:`ConvexSpec`), the range enlarged by
    :func:`noise_bound` and the noise scale ``sqrt(s_0^2 + Var Z)`` (``inflate=False``: the raw
    range and scale, i.e. a black box tuned as if there were no noise)."""
    lo, hi = cal.lo, cal.hi
    s0 = reward_scale(spec) if not isinstance(spec, ConvexSpec) else float(spec.noise_scale)
    if inflate:
        w = noise_bound(cal, T)
        lo, hi = lo - w, hi + w
        s0 = math.sqrt(s0 * s0 + cal.std * cal.std)
    if isinstance(spec, ConvexSpec):  # bandit convex optimization: the loss range grows
        return dataclasses.replace(
            spec,
            loss_range=(lo, hi),
            reward_range=(-hi, -lo),
            reward_bound=max(abs(lo), abs(hi)),
            noise_scale=s0,
        )
    return EnvSpec(
        d=spec.K,
        K=spec.K,
        setting="single",
        horizon=spec.horizon,
        link=IDENTITY,
        context_bound=1.0,
        reward_bound=max(abs(lo), abs(hi)),
        reward_range=(lo, hi),
        theta_bound=spec.theta_bound,
        noise_scale=s0,
        fixed_actions=True,
    )
