"""Shared parameter handling of the registered Han et al. (2021) algorithms (LDP-OLS, LDP-SGD)."""

from __future__ import annotations

import dataclasses
from typing import Any

from privbandits.algorithms.base import LocalAlgorithm
from privbandits.algorithms.ldp_glb.multi import check_warmup_order
from privbandits.algorithms.ldp_glb.presets import CALIBRATIONS, PRESETS, default_s0
from privbandits.core.errors import ValidationError
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_in_range,
    check_int,
    check_nonnegative,
    check_positive,
)
from privbandits.privacy.accounting import ApproxDP, PureDP, to_guarantee
from privbandits.privacy.guarantee import PrivacyGuarantee

__all__ = ["HanAlgorithm"]

#: Problem assumed by :attr:`HanAlgorithm.guarantee` before :meth:`reset` (C_B = c_r = 1).
NOMINAL_SPEC = EnvSpec(d=2, K=2, setting="single")


class HanAlgorithm(LocalAlgorithm):
    """Validation of the parameters LDP-OLS and LDP-SGD share, preset bookkeeping and reporting.

    Subclasses implement :meth:`_accounting` (the guarantee for a given problem) and build
    ``client`` / ``server`` in :meth:`reset`.
    """

    settings = ("single", "multi")
    paper = "Han et al. 2021"

    def _check_common(
        self,
        epsilon: float,
        delta: float,
        preset: str,
        calibration: str,
        alpha: float,
        shift_scale: float | None,
        s0: int | None,
        h: float | None,
        warmup_order: str,
        warmup_full_budget: bool,
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.preset = check_choice("preset", preset, PRESETS)
        self.calibration = check_choice("calibration", calibration, CALIBRATIONS)
        if self.preset != "strict" and self.calibration != "classic":
            raise ValidationError(
                f"calibration={calibration!r} is only defined for preset='strict' "
                f"(got preset={preset!r}); use calibration='classic'"
            )
        self.alpha = check_in_range(
            "alpha", alpha, 0.0, 1.0, low_inclusive=False, high_inclusive=False
        )
        self.shift_scale = (
            None if shift_scale is None else check_nonnegative("shift_scale", shift_scale)
        )
        self.s0 = None if s0 is None else check_int("s0", s0, 1)
        self.h = None if h is None else check_positive("h", h)
        self.warmup_order = check_warmup_order(warmup_order)
        if not isinstance(warmup_full_budget, bool):
            raise ValidationError(
                f"warmup_full_budget must be True or False, got {warmup_full_budget!r}"
            )
        self.warmup_full_budget = warmup_full_budget

    def _resolve_s0(self, spec: EnvSpec) -> int:
        return self.s0 if self.s0 is not None else default_s0(spec.horizon, spec.K)

    def _arm_level(self) -> tuple[float, float]:
        """Per-arm randomizer level of Algorithm 2: ``(eps/2, delta/2)``."""
        return self.epsilon / 2.0, self.delta / 2.0

    def _accounting(self, spec: EnvSpec) -> tuple[PureDP | ApproxDP, str]:
        raise NotImplementedError

    def guarantee_for(self, spec: EnvSpec) -> PrivacyGuarantee:
        """The local-DP guarantee (per user) of this configuration on problem ``spec``."""
        g, notes = self._accounting(spec)
        return to_guarantee(g, "local", "user", f"preset={self.preset}; {notes}")

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """Guarantee computed from the noise actually added (nominal C_B = c_r = 1 before reset)."""
        spec = getattr(self, "spec", None)
        if spec is None:
            g = self.guarantee_for(NOMINAL_SPEC)
            nominal = "nominal single-parameter problem with C_B = c_r = 1 (before reset)"
            return dataclasses.replace(g, notes=f"{g.notes}; {nominal}")
        return self.guarantee_for(spec)

    def resolved_params(self) -> dict[str, Any]:
        """Hyper-parameters after resolving the preset on the current problem (after reset)."""
        return dict(getattr(self, "_resolved", {}))
