"""Shared parameters of the registered Han et al. (2021) algorithms (LDP-OLS, LDP-SGD)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.base import LocalAlgorithm
from privbandits.algorithms.kernel import LocalKernel, MessageLayout
from privbandits.algorithms.ldp_glb.calibration import (
    GAUSSIAN_CALIBRATIONS,
    PRESETS,
    default_s0,
    ols_shift_constant,
    ols_shift_defaults,
)
from privbandits.algorithms.ldp_glb.policy import WARMUP_ORDERS, choose_multi, choose_single
from privbandits.core.errors import ValidationError
from privbandits.core.params import (
    Bool,
    Choice,
    Delta,
    Epsilon,
    Int,
    NonNegative,
    Optional,
    Positive,
    Real,
)
from privbandits.core.spec import EnvSpec

__all__ = ["HanAlgorithm", "Shift", "Warmup"]


@dataclass(frozen=True)
class Warmup:
    """Algorithm 2's schedule: ``s0`` pulls per arm, ``n_warmup = K s0`` rounds, their order and
    the elimination threshold ``h`` (``s0 = n_warmup = 0`` in the single-parameter setting)."""

    s0: int
    n_warmup: int
    warmup_order: str | None = None
    h: float | None = None


@dataclass(frozen=True)
class Shift:
    """``shift(t) = c_shift sqrt(t + shift_offset)`` with ``c_shift = shift_scale c_tilde``
    (Han et al. 2021, eq. 3.3-3.4)."""

    c_tilde: float
    shift_scale: float
    c_shift: float
    shift_offset: float


class HanAlgorithm(LocalAlgorithm):
    """Parameters LDP-OLS and LDP-SGD share: level, preset, Gaussian calibration, the OLS shift and
    Algorithm 2's warm-up and elimination.  Subclasses implement ``calibrate`` and
    ``build_kernel``."""

    settings = ("single", "multi")
    paper = "Han et al. 2021"
    constraints: ClassVar = {
        "epsilon": Epsilon,
        "delta": Delta,
        "preset": Choice(*PRESETS),
        "gaussian_calibration": Optional(Choice(*GAUSSIAN_CALIBRATIONS)),
        "alpha": Real(0.0, 1.0, low_open=True, high_open=True),
        "shift_scale": Optional(NonNegative),
        "s0": Optional(Int(1)),
        "h": Optional(Positive),
        "warmup_order": Choice(*WARMUP_ORDERS),
        "warmup_full_budget": Bool(),
    }

    epsilon: float
    delta: float
    gaussian_calibration: str | None
    alpha: float
    shift_scale: float | None
    s0: int | None
    h: float | None
    warmup_order: str
    warmup_full_budget: bool

    def _check_gaussian_calibration(self) -> None:
        if self.preset != "strict" and self.gaussian_calibration == "analytic":
            raise ValidationError(
                "gaussian_calibration='analytic' is only defined for preset='strict' "
                f"(got preset={self.preset!r}, "
                "whose constants are literal formulas); leave it None or use 'classic'"
            )

    def _gaussian(self) -> str:
        """The Gaussian calibration in force: the given one, else ``analytic`` under ``strict`` and
        ``classic`` (the literal formulas) under ``paper`` / ``authors_code``."""
        if self.gaussian_calibration is not None:
            return self.gaussian_calibration
        return "analytic" if self.preset == "strict" else "classic"

    def _warmup(self, spec: EnvSpec) -> Warmup:
        """Algorithm 2's schedule on ``spec`` (``s0 = 0`` in the single-parameter setting)."""
        if spec.setting != "multi":
            return Warmup(0, 0)
        s0 = self.s0 if self.s0 is not None else default_s0(spec.horizon, spec.K)
        return Warmup(s0, spec.K * s0, self.warmup_order, self.h)

    def _kernel_head(self, n_warmup: int, s0: int) -> dict[str, Any]:
        """The leading kernel parameters of both families (:class:`.kernels.OLSParams`,
        :class:`.kernels.SGDParams`): the problem, Algorithm 2's schedule (``n_warmup``, ``s0`` of
        the calibration; warm-up order, elimination threshold ``h``) and the data bounds."""
        spec = self.spec
        return {
            "K": spec.K,
            "d": spec.d,
            "n_warmup": int(n_warmup),
            "s0": max(1, int(s0)),
            "blocks": self.warmup_order == "blocks",
            "h": math.inf if self.h is None else float(self.h),
            "link": spec.link.code,
            "C_B": float(spec.context_bound),
            "r_lo": float(spec.reward_range[0]),
            "r_hi": float(spec.reward_range[1]),
        }

    def _kernel(
        self,
        steps: Mapping[str, tuple[Any, ...]],
        params: tuple[Any, ...],
        theta: np.ndarray,
        server: tuple[np.ndarray, ...],
        layout: MessageLayout,
        device: dict[str, Any],
    ) -> LocalKernel:
        """The compiled kernel of both families: the greedy choice of Algorithm 1 (single
        setting) or 2 (multi setting, the frozen warm-up estimates ``theta_warm`` beside
        ``theta`` in the public state), the family's ``steps`` of the setting
        (:data:`.kernels.OLS_STEPS`, :data:`.kernels.SGD_STEPS`) and the device's declarations
        ``device`` (public space, noise, sensitivity)."""
        multi = self.spec.setting == "multi"
        encode, randomize, update = steps[self.spec.setting]
        public = (theta, np.zeros(theta.shape)) if multi else (theta,)
        return LocalKernel(
            choose_multi if multi else choose_single,
            randomize,
            update,
            params,
            public,
            server,
            ("theta", "theta_warm")[: len(public)],
            layout,
            estimate=(lambda: theta) if multi else (lambda: theta[:, 0]),
            encode=encode,
            allocates=False,
            **device,
        )

    def _shift(self, spec: EnvSpec, sigma_unit: float) -> Shift:
        """``shift(t) = c_shift sqrt(t + offset)``, ``c_shift = shift_scale * c_tilde`` (3.2)."""
        dflt = ols_shift_defaults(self.preset, spec.setting)
        scale = dflt["shift_scale"] if self.shift_scale is None else self.shift_scale
        K = spec.K if dflt["shift_K"] else 1
        c_tilde = ols_shift_constant(sigma_unit, spec.d, spec.horizon, self.alpha, K)
        return Shift(c_tilde, scale, scale * c_tilde, dflt["shift_offset"])
