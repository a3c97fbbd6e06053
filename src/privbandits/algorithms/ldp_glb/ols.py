"""LDP-OLS: Algorithms 1 and 2 of Han et al. (2021) with the private OLS pair (eq. 3.3-3.4)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.audit import AuditCase, ClientPathCase
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import ESTIMATE_BOUND, LocalKernel, MessageLayout
from privbandits.algorithms.ldp_glb.algorithm import HanAlgorithm
from privbandits.algorithms.ldp_glb.calibration import (
    OLSConstants,
    ols_epsilon,
    ols_noise,
    ols_sensitivity,
)
from privbandits.algorithms.ldp_glb.device import estimates_space, ols_message_noise
from privbandits.algorithms.ldp_glb.estimators import solver_scratch
from privbandits.algorithms.ldp_glb.kernels import OLS_STEPS, OLSParams
from privbandits.algorithms.registry import register
from privbandits.core.spec import EnvSpec
from privbandits.privacy.accounting import ApproxDP, to_guarantee
from privbandits.privacy.device import DeviceSensitivity
from privbandits.privacy.ledger import Composed, Event, Gaussian

__all__ = ["LDPOLS", "OLS_MECHANISM"]

#: Name of the OLS randomizer's messages.
OLS_MECHANISM = "han2021-ols-gaussian"


@register
class LDPOLS(HanAlgorithm):
    """LDP-OLS (Han et al. 2021): greedy choice on private OLS estimates.

    Single-parameter setting: Algorithm 1.  The user sends ``(x x^T + W, r x + xi)`` for the pulled
    arm's feature (``W`` symmetric Gaussian, ``xi`` Gaussian); the server solves
    ``(S_M + c_tilde sqrt(t) I) theta = S_u`` (eq. 3.3-3.4).  Multi-parameter setting: Algorithm 2
    with per-arm OLS: public round-robin warm-up, optional elimination (4.1), and a real message
    for the pulled arm plus synthetic ``psi(0, 0)`` messages for all others every main-phase round.

    Parameters
    ----------
    epsilon : float
        Per-user privacy level (> 0).
    delta : float
        Per-user delta in (0, 1).
    preset : {"strict", "paper", "authors_code"}
        Noise calibration and defaults (Han et al. 2021, Prop. 3.1, correction Han21-4; :mod:`.calibration`): ``strict``
        (provably private, tight), ``paper`` (the printed formulas; under-calibrated),
        ``authors_code`` (the public code's constants).
    gaussian_calibration : {"analytic", "classic"}, optional
        ``analytic`` (default of ``strict``): the whole message is one Gaussian mechanism,
        calibrated exactly at ``(epsilon, delta)`` (Balle & Wang 2018; in the multi setting the K
        slots too, so every slot gets the full level).  ``classic``: the classic formulas (two
        parts at ``(eps/2, delta/2)``, per arm ``(eps/4, delta/4)`` in the multi setting; the only
        choice under ``paper`` / ``authors_code``, their default).
    alpha : float
        Failure probability in ``c_tilde`` (default 0.1, as the code).
    shift_scale : float, optional
        Multiplier on ``c_tilde`` (Han et al. 2021, eq. 3.3-3.4); None = preset value (1; 0 for single-parameter
        ``authors_code``, which used no shift).
    s0 : int, optional
        Warm-up pulls per arm (multi); None = ``max(1, min(3000, T // 10) // K)``.
    h : float, optional
        Elimination threshold of eq. (4.1) on the mu-scale (multi); None = no elimination.
    warmup_order : {"round_robin", "blocks"}
        Warm-up schedule (multi; correction Han21-9 in the documentation).
    warmup_full_budget : bool
        Multi, classic calibration: calibrate warm-up messages at ``(eps, delta)`` (valid: one
        slot is released) instead of the per-arm level.  The analytic calibration already uses
        the full level everywhere.

    References
    ----------
    Han, Liang, Wang, Zhang (2021), "Generalized Linear Bandits with Local Differential
    Privacy", NeurIPS, Algorithms 1-2, eq. (3.3)-(3.4), Props 3.1 and 4.1, Theorems 3.1 and 4.1.
    """

    name = "ldp-ols"
    twin = "greedy-ols"
    links = ("identity",)
    test_params: ClassVar = (
        {},
        {"preset": "paper", "s0": 2},
        {"preset": "authors_code"},
        {
            "gaussian_calibration": "classic",
            "warmup_full_budget": True,
            "shift_scale": 0.5,
            "s0": 3,
        },
        {"s0": 2, "h": 0.5, "warmup_order": "blocks", "epsilon": 5.0},
    )

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The client path (Gaussian ``x x^T`` and ``x y``)."""
        text = "LDP-OLS client (Han et al. 2021, Alg. 1): Gaussian x x^T and x y"
        return (ClientPathCase(cls, n_pilot=10_000, description=text),)

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 0.01,
        preset: str = "strict",
        gaussian_calibration: str | None = None,
        alpha: float = 0.1,
        shift_scale: float | None = None,
        s0: int | None = None,
        h: float | None = None,
        warmup_order: str = "round_robin",
        warmup_full_budget: bool = False,
    ) -> None:
        self._check_gaussian_calibration()

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Noise of the main (or only) and warm-up slots, shift, schedule and the guarantee.

        The guarantee is the exact epsilon (at the requested delta) of the message as one Gaussian
        mechanism (:func:`~privbandits.algorithms.ldp_glb.calibration.ols_sensitivity`); in the
        multi setting the worst of the warm-up and main-phase messages.
        """
        C_B, c_r, multi = spec.context_bound, spec.reward_bound, spec.setting == "multi"
        gc = self._gaussian()
        main = ols_noise(self.preset, gc, self.epsilon, self.delta, C_B, c_r, per_arm_half=multi)
        warm = ols_noise(
            self.preset,
            gc,
            self.epsilon,
            self.delta,
            C_B,
            c_r,
            per_arm_half=multi and not self.warmup_full_budget,
        )
        mu = ols_sensitivity(main.s_W, main.s_u, C_B, c_r)
        mu_warm = ols_sensitivity(warm.s_W, warm.s_u, C_B, c_r) if multi else mu
        eps = ols_epsilon(main.s_W, main.s_u, self.delta, C_B, c_r)
        if multi:
            eps = max(eps, ols_epsilon(warm.s_W, warm.s_u, self.delta, C_B, c_r))
        shift, warmup = self._shift(spec, main.sigma_unit), self._warmup(spec)
        constants = OLSConstants(
            gc,
            main.s_W,
            main.s_u,
            main.sigma_unit,
            mu,
            shift.c_tilde,
            shift.shift_scale,
            shift.c_shift,
            shift.shift_offset,
            warmup.s0,
            warmup.n_warmup,
            multi,
            warmup.warmup_order,
            warmup.h,
            warm.s_W if multi else None,
            warm.s_u if multi else None,
            mu_warm if multi else None,
        )
        # the message as one Gaussian mechanism: unit noise, sensitivity mu in noise units
        message = Gaussian(1.0, mu, f"the OLS message (s_W={main.s_W:.6g}, s_u={main.s_u:.6g})", gc)
        if multi:
            warm_message = Gaussian(
                1.0, mu_warm, f"the warm-up slot (s_W={warm.s_W:.6g}, s_u={warm.s_u:.6g})", gc
            )
            ledger: Event = Composed(
                (warm_message, message),
                "disjoint",
                f"preset={self.preset}; Algorithm 2 + OLS ({main.rule}): each user is in one "
                "public phase, the K-slot message has the sensitivity of one slot",
            )
        else:
            ledger = Composed(
                (message,),
                "disjoint",
                f"preset={self.preset}; Algorithm 1 + OLS ({main.rule}): one message per user",
            )
        guarantee = to_guarantee(ApproxDP(eps, self.delta), "local", "user", ledger=ledger)
        return Calibration(
            guarantee, preset=self.preset, requested=(self.epsilon, self.delta), constants=constants
        )

    def build_kernel(self) -> LocalKernel:
        spec, R, c = self.spec, self.R, self.calibration.typed(OLSConstants)
        d, K, multi = spec.d, spec.K, spec.setting == "multi"
        K_est = K if multi else 1
        params = OLSParams(
            **self._kernel_head(c.n_warmup, c.s0),
            s_W=c.s_W,
            s_u=c.s_u,
            s_W_warm=c.warm[0],
            s_u_warm=c.warm[1],
            c_shift=c.c_shift,
            offset=c.shift_offset,
            bound=ESTIMATE_BOUND,
        )
        # the device's contract (:mod:`.device`): the message is one Gaussian mechanism whose
        # accounted l2 sensitivity in noise units is mu (the worse phase in the multi setting)
        device: dict[str, Any] = {
            "public_space": estimates_space(multi, ESTIMATE_BOUND),
            "noise": ols_message_noise(
                d,
                K,
                multi,
                params.n_warmup,
                (params.s_W, params.s_u),
                (params.s_W_warm, params.s_u_warm),
            ),
            "sensitivity": DeviceSensitivity("l2", max(c.sensitivity, c.sensitivity_warm or 0.0)),
        }
        theta = np.zeros((R, K_est, d))
        server = (np.zeros((R, K_est, d, d)), np.zeros((R, K_est, d)), solver_scratch(R, d))
        arms = (K,) if multi else ()  # one (M, u) slot per arm in the multi setting
        layout = MessageLayout(OLS_MECHANISM, (("M", (*arms, d, d)), ("u", (*arms, d))))
        return self._kernel(OLS_STEPS, params, theta, server, layout, device)
