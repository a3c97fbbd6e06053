"""LDP-OLS: Algorithms 1 and 2 of Han et al. (2021) with the private OLS pair (eq. 3.3-3.4)."""

from __future__ import annotations

from privbandits.algorithms.ldp_glb.accountant import (
    ols_message_guarantee,
    phases_guarantee,
    two_slot_guarantee,
)
from privbandits.algorithms.ldp_glb.algorithm import HanAlgorithm
from privbandits.algorithms.ldp_glb.multi import Alg2Client, OLSMultiServer
from privbandits.algorithms.ldp_glb.presets import (
    OLSCalibration,
    ols_calibration,
    ols_shift_constant,
    ols_shift_defaults,
)
from privbandits.algorithms.ldp_glb.randomizers import OLSRandomizer
from privbandits.algorithms.ldp_glb.single import Alg1Client, OLSServer
from privbandits.algorithms.registry import register
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.accounting import ApproxDP, PureDP

__all__ = ["LDPOLS"]


@register
class LDPOLS(HanAlgorithm):
    """LDP-OLS (Han et al. 2021): greedy choice on private OLS estimates.

    Single-parameter setting: Algorithm 1.  The user sends ``(x x^T + W, r x + xi)`` for the
    pulled arm's feature, each part the ``(eps/2, delta/2)`` Gaussian mechanism; the server solves
    ``(S_M + c_tilde sqrt(t) I) theta = S_u`` (eq. 3.3-3.4).  Multi-parameter setting:
    Algorithm 2 with per-arm OLS at ``(eps/2, delta/2)``: round-robin warm-up, optional
    elimination (4.1), and a real message for the pulled arm plus synthetic ``psi(0, 0)``
    messages for all others every main-phase round.

    Parameters
    ----------
    epsilon : float
        Per-user privacy level (> 0).
    delta : float
        Per-user delta in (0, 1).
    preset : {"strict", "paper", "authors_code"}
        Noise calibration and defaults (spec 2.4, 3.6): ``strict`` (provably private),
        ``paper`` (the printed formulas; under-calibrated), ``authors_code``.
    calibration : {"classic", "analytic"}
        Gaussian calibration of the ``strict`` preset (spec 2.3; classic is proven only for
        per-part epsilon < 1, analytic = Balle & Wang 2018).
    alpha : float
        Failure probability in ``c_tilde`` (default 0.1, as the code).
    shift_scale : float, optional
        Multiplier on ``c_tilde`` (spec 3.2); None = preset value (1; 0 for single-parameter
        ``authors_code``, which used no shift).
    s0 : int, optional
        Warm-up pulls per arm (multi); None = ``max(1, min(3000, T // 10) // K)``.
    h : float, optional
        Elimination threshold of eq. (4.1) on the mu-scale (multi); None = no elimination.
    warmup_order : {"round_robin", "blocks"}
        Warm-up schedule (multi; spec 8.9).
    warmup_full_budget : bool
        Multi: calibrate warm-up messages at ``(eps, delta)`` (valid: one slot is released)
        instead of the per-arm level.

    References
    ----------
    Han, Liang, Wang, Zhang (2021), "Generalized Linear Bandits with Local Differential
    Privacy", NeurIPS, Algorithms 1-2, eq. (3.3)-(3.4), Props 3.1 and 4.1, Theorems 3.1 and 4.1.
    """

    name = "ldp-ols"
    links = ("identity",)

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 0.01,
        preset: str = "strict",
        calibration: str = "classic",
        alpha: float = 0.1,
        shift_scale: float | None = None,
        s0: int | None = None,
        h: float | None = None,
        warmup_order: str = "round_robin",
        warmup_full_budget: bool = False,
    ) -> None:
        super().__init__(
            epsilon=epsilon,
            delta=delta,
            preset=preset,
            calibration=calibration,
            alpha=alpha,
            shift_scale=shift_scale,
            s0=s0,
            h=h,
            warmup_order=warmup_order,
            warmup_full_budget=warmup_full_budget,
        )
        self._check_common(
            epsilon,
            delta,
            preset,
            calibration,
            alpha,
            shift_scale,
            s0,
            h,
            warmup_order,
            warmup_full_budget,
        )

    # -- calibration -------------------------------------------------------------------------
    def _calibrations(self, spec: EnvSpec) -> tuple[OLSCalibration, OLSCalibration]:
        """(main / single randomizer, warm-up randomizer) calibrations for ``spec``."""
        C_B, c_r = spec.context_bound, spec.reward_bound
        if spec.setting == "single":
            cal = ols_calibration(self.preset, self.epsilon, self.delta, C_B, c_r, self.calibration)
            return cal, cal
        # multi: per-arm (eps/2, delta/2); the authors' code used the full level per arm (spec 8.5)
        level = (self.epsilon, self.delta) if self.preset == "authors_code" else self._arm_level()
        arm = ols_calibration(self.preset, *level, C_B, c_r, self.calibration)
        if self.warmup_full_budget:
            warm = ols_calibration(
                self.preset, self.epsilon, self.delta, C_B, c_r, self.calibration
            )
        else:
            warm = arm
        return arm, warm

    def shift_constant(self, spec: EnvSpec) -> tuple[float, float]:
        """``(shift_scale * c_tilde, offset)``; the shift is ``c * sqrt(t + offset)`` (spec 3.2)."""
        arm, _ = self._calibrations(spec)
        dflt = ols_shift_defaults(self.preset, spec.setting)
        scale = dflt["shift_scale"] if self.shift_scale is None else self.shift_scale
        K = spec.K if dflt["shift_K"] else 1
        c_tilde = ols_shift_constant(arm.sigma_unit, spec.d, spec.horizon, self.alpha, K)
        return scale * c_tilde, dflt["shift_offset"]

    def _accounting(self, spec: EnvSpec) -> tuple[PureDP | ApproxDP, str]:
        main, warm = self._calibrations(spec)
        caveat = ""
        if self.calibration == "classic" and main.epsilon / 2.0 >= 1.0:
            caveat = (
                "; classic calibration used at per-part epsilon >= 1 (exact accounting reported)"
            )
        if spec.setting == "single":
            g = ols_message_guarantee(main, self.delta)
            return g, (
                f"Algorithm 1 + OLS: W (s={main.s_W:.6g}, sens={main.sens_M:.6g}) and xi "
                f"(s={main.s_u:.6g}, sens={main.sens_u:.6g}) at delta/2 each, exact Gaussian "
                f"epsilon, basic composition{caveat}"
            )
        g_main = two_slot_guarantee(ols_message_guarantee(main, self.delta / 2.0))
        g_warm = ols_message_guarantee(warm, self.delta)
        return phases_guarantee(g_warm, g_main), (
            f"Algorithm 2 + OLS: per-arm W (s={main.s_W:.6g}) and xi (s={main.s_u:.6g}); "
            "main phase = two slots x two parts at delta/4 each, warm-up = one slot "
            f"(s_W={warm.s_W:.6g}) at delta/2 per "
            f"part; max over phases{caveat}"
        )

    # -- lifecycle ---------------------------------------------------------------------------
    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        main, warm = self._calibrations(spec)
        c_shift, offset = self.shift_constant(spec)
        rng_range = spec.reward_range
        self._resolved = {
            "s_W": main.s_W,
            "s_u": main.s_u,
            "sigma_unit": main.sigma_unit,
            "c_shift": c_shift,
            "shift_offset": offset,
        }
        if spec.setting == "single":
            self.client = Alg1Client(OLSRandomizer(main, spec.context_bound, rng_range))
            self.server = OLSServer(self.R, spec.d, c_shift, offset)
            return
        s0 = self._resolve_s0(spec)
        self._resolved.update(s0=s0, warm_s_W=warm.s_W, warm_s_u=warm.s_u)
        warm_rand = OLSRandomizer(warm, spec.context_bound, rng_range)
        main_rand = OLSRandomizer(main, spec.context_bound, rng_range)
        self.client = Alg2Client(
            spec.K, s0, self.warmup_order, self.h, spec.link, warm_rand, main_rand
        )
        self.server = OLSMultiServer(self.R, spec.K, spec.d, s0, self.warmup_order, c_shift, offset)
