"""Calibration presets of Han, Liang, Wang & Zhang (2021): ``strict``, ``paper``, ``authors_code``.

Spec ``han2021-ldp-glb.md``: OLS noise section 2.4 (three calibrations, reference numbers), shift
constant ``c_tilde`` section 3.2, SGD settings section 3.3, multi-parameter budget section 2.6,
parameter provenance table section 3.6, discrepancies section 8 (items 4, 5, 18-20, 25).

=============  ===============================================================================
preset         meaning
=============  ===============================================================================
strict         (default) provably (eps, delta)-LDP: each OLS part is the (eps/2, delta/2)
               Gaussian mechanism at the sensitivities ``2 C_B^2`` (conservative) and
               ``2 c_r C_B``; SGD radius ``R = 2 c_r C_B``; theory shift ``c_tilde``.
paper          the formulas as printed: ``W ~ N(0, 4 C_B^2 sigma^2)``,
               ``xi ~ N(0, C_B^2 c_r^2 sigma^2)`` with ``sigma = 2 sqrt(2 ln(1.25/delta))/eps``
               (under-calibrated, spec 2.4).
authors_code   the public reference code: OLS std ``6 sqrt(2 ln(2.5/delta))/eps`` for both parts
               (full eps per arm in the multi setting), no shift in single-parameter LDP-OLS,
               SGD with ``R = 1``, random unit initialization, ridge 0.05 for GLM links and the
               multi setting, OLS warm-up and a joint ``dK``-dimensional l2-ball update in the
               multi setting (with the code's radius ``r_{eps,d}``).
=============  ===============================================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from privbandits.core.errors import ValidationError
from privbandits.core.validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
)
from privbandits.privacy.mechanisms import gaussian_sigma, gaussian_sigma_classic

__all__ = [
    "CALIBRATIONS",
    "PRESETS",
    "OLSCalibration",
    "default_s0",
    "ols_calibration",
    "ols_shift_constant",
    "ols_shift_defaults",
    "sgd_defaults",
    "sigma_code",
    "sigma_priv",
    "sigma_strict",
]

PRESETS: tuple[str, ...] = ("strict", "paper", "authors_code")
CALIBRATIONS: tuple[str, ...] = ("classic", "analytic")


def sigma_priv(epsilon: float, delta: float) -> float:
    """The paper's multiplier ``sigma_{eps,delta} = 2 sqrt(2 ln(1.25/delta)) / eps`` (section 3.1).

    Reference: 6.21502 at (1, 0.01), 1.24300 at (5, 0.01) (spec 2.4 table).
    """
    return 2.0 * gaussian_sigma_classic(epsilon, delta, 1.0)


def sigma_strict(epsilon: float, delta: float, calibration: str = "classic") -> float:
    """Per-unit-sensitivity std of the (eps/2, delta/2) Gaussian mechanism (spec 2.4, "strict").

    ``classic``: ``sigma' = sqrt(2 ln(1.25/(delta/2))) / (eps/2) = 2 sqrt(2 ln(2.5/delta)) / eps``
    (6.64618 at (1, 0.01)); ``analytic``: Balle & Wang (2018) at (eps/2, delta/2).
    """
    check_choice("calibration", calibration, CALIBRATIONS)
    return gaussian_sigma(check_epsilon(epsilon) / 2.0, check_delta(delta) / 2.0, 1.0, calibration)


def sigma_code(epsilon: float, delta: float) -> float:
    """The authors' code std ``6 sqrt(2 ln(2.5/delta)) / eps`` (spec 2.4; 19.93854 at (1, 0.01))."""
    return 3.0 * gaussian_sigma_classic(check_epsilon(epsilon) / 2.0, check_delta(delta) / 2.0, 1.0)


@dataclass(frozen=True)
class OLSCalibration:
    """Noise of the OLS randomizer ``psi^OLS`` of one preset (Han et al. 2021, eq. 3.3).

    Attributes
    ----------
    preset : str
        Preset name.
    epsilon, delta : float
        Level the randomizer is calibrated for (the per-arm level ``(eps/2, delta/2)`` in the
        multi-parameter setting, except under ``authors_code``).
    s_W : float
        Std of every entry of the symmetric Gaussian matrix ``W`` (diagonal included).
    s_u : float
        Std of every entry of ``xi``.
    sigma_unit : float
        Per-unit-sensitivity multiplier entering the shift constant ``c_tilde`` (spec 3.2).
    sens_M : float
        Tight l2 sensitivity of the upper triangle of ``x x^T``: ``sqrt(2) C_B^2`` (spec 2.4).
    sens_u : float
        l2 sensitivity of ``r x``: ``2 c_r C_B``.
    calibration : str
        "classic" or "analytic" (only ``strict`` uses the analytic option).
    """

    preset: str
    epsilon: float
    delta: float
    s_W: float
    s_u: float
    sigma_unit: float
    sens_M: float
    sens_u: float
    calibration: str = "classic"


def ols_calibration(
    preset: str,
    epsilon: float,
    delta: float,
    context_bound: float = 1.0,
    reward_bound: float = 1.0,
    calibration: str = "classic",
) -> OLSCalibration:
    """Noise scales of the OLS randomizer for ``preset`` at ``(epsilon, delta)`` (spec 2.4 table).

    Parameters
    ----------
    preset : {"strict", "paper", "authors_code"}
    epsilon, delta : float
        Level of this randomizer (total of its two parts).
    context_bound : float
        ``C_B``.
    reward_bound : float
        ``c_r``.
    calibration : {"classic", "analytic"}
        Gaussian calibration of the ``strict`` preset (spec 2.3); the other presets are literal
        constants and accept only "classic".

    Returns
    -------
    OLSCalibration
    """
    check_choice("preset", preset, PRESETS)
    check_choice("calibration", calibration, CALIBRATIONS)
    eps, dlt = check_epsilon(epsilon), check_delta(delta)
    C_B = check_positive("context_bound", context_bound)
    c_r = check_positive("reward_bound", reward_bound)
    if preset != "strict" and calibration != "classic":
        raise ValidationError(
            f"calibration={calibration!r} is only defined for preset='strict'; preset={preset!r} "
            "uses the literal constants of the paper / the authors' code "
            "(use calibration='classic')"
        )
    sens_M, sens_u = math.sqrt(2.0) * C_B**2, 2.0 * c_r * C_B
    if preset == "strict":
        s = sigma_strict(eps, dlt, calibration)
        return OLSCalibration(
            preset, eps, dlt, 2.0 * C_B**2 * s, 2.0 * c_r * C_B * s, s, sens_M, sens_u, calibration
        )
    if preset == "paper":
        s = sigma_priv(eps, dlt)
        return OLSCalibration(preset, eps, dlt, 2.0 * C_B * s, C_B * c_r * s, s, sens_M, sens_u)
    s = sigma_code(eps, dlt)
    return OLSCalibration(preset, eps, dlt, s, s, s, sens_M, sens_u)


def ols_shift_constant(sigma_unit: float, d: int, horizon: int, alpha: float, K: int = 1) -> float:
    """``c_tilde = 2 sigma (4 sqrt(d) + 2 ln(2 T K / alpha))`` (Thm 3.1 with K = 1; Thm 4.1).

    Reference: 488.244 for the paper's sigma at (1, 0.01), d = 2, T = 1e6, alpha = 0.1 (spec 7.7).
    """
    s = check_positive("sigma_unit", sigma_unit)
    d = check_int("d", d, 1)
    T = check_int("horizon", horizon, 1)
    a = check_positive("alpha", alpha)
    K = check_int("K", K, 1)
    return 2.0 * s * (4.0 * math.sqrt(d) + 2.0 * math.log(2.0 * T * K / a))


def ols_shift_defaults(preset: str, setting: str) -> dict[str, Any]:
    """Shift settings of LDP-OLS: ``shift(t) = shift_scale * c_tilde * sqrt(t + shift_offset)``.

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
    """Hyper-parameters of LDP-SGD implied by ``preset`` (spec 3.3, 3.5, 3.6, 8.18, 8.20, 8.25).

    Returns a dict with ``grad_bound`` (the spec's R), ``eta0``, ``t0``, ``step_schedule``,
    ``init``, ``ridge``, ``sgd_warmup``, ``synthetic_update`` and ``joint_radius``.
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
    }


def default_s0(horizon: int, K: int, total_cap: int = 3000) -> int:
    """Default warm-up pulls per arm ``max(1, floor(min(3000, floor(T/10)) / K))`` (spec 3.5)."""
    T = check_int("horizon", horizon, 1)
    K = check_int("K", K, 1)
    W = min(total_cap, T // 10)
    return max(1, W // K)
