"""LDP-SGD: Algorithms 1 and 2 of Han et al. (2021) with the private SGD pair (eq. 3.5-3.6)."""

from __future__ import annotations

from typing import Any

import numpy as np

from privbandits.algorithms.ldp_glb.accountant import (
    l2_ball_guarantee,
    ols_message_guarantee,
    phases_guarantee,
    two_slot_guarantee,
)
from privbandits.algorithms.ldp_glb.algorithm import HanAlgorithm
from privbandits.algorithms.ldp_glb.estimators import STEP_SCHEDULES
from privbandits.algorithms.ldp_glb.multi import Alg2Client, SGDMultiServer
from privbandits.algorithms.ldp_glb.presets import (
    ols_calibration,
    ols_shift_constant,
    ols_shift_defaults,
    sgd_defaults,
)
from privbandits.algorithms.ldp_glb.randomizers import (
    JointSGDRandomizer,
    OLSRandomizer,
    SGDRandomizer,
    unit_vectors,
)
from privbandits.algorithms.ldp_glb.single import Alg1Client, SGDServer
from privbandits.algorithms.registry import register
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_choice, check_nonnegative, check_positive
from privbandits.privacy.accounting import ApproxDP, PureDP

__all__ = ["INITS", "JOINT_RADII", "LDPSGD", "SGD_WARMUPS", "SYNTHETIC_UPDATES"]

INITS: tuple[str, ...] = ("zero", "random_unit")
SGD_WARMUPS: tuple[str, ...] = ("sgd", "ols")
SYNTHETIC_UPDATES: tuple[str, ...] = ("per_arm", "joint")
JOINT_RADII: tuple[str, ...] = ("dK", "d")


@register
class LDPSGD(HanAlgorithm):
    """LDP-SGD (Han et al. 2021): greedy choice on a privately updated online-SGD iterate.

    Single-parameter setting: Algorithm 1.  The user computes the GLM gradient
    ``g = (mu(x^T theta) - r) x`` at the public ``theta`` for the pulled arm's feature, clips it to
    norm ``R`` and sends the l2-ball output ``Psi_{eps,R}(g)`` (norm ``r_{eps,d}``, mean ``g``); the
    server steps ``theta <- theta - eta_t Z`` (eq. 3.5-3.6).  Multi-parameter setting:
    Algorithm 2 with per-arm ``Psi_{eps/2,R}``: warm-up, optional elimination (4.1), and K
    messages per main-phase round (synthetic ``Psi(0)`` for the unpulled arms).

    Parameters
    ----------
    epsilon : float
        Per-user privacy level (pure epsilon-LDP).
    delta : float
        Used only by the OLS warm-up option (``sgd_warmup="ols"``).
    preset : {"strict", "paper", "authors_code"}
        Defaults of the parameters below (spec 3.6); ``strict`` and ``paper`` coincide for SGD.
    grad_bound : float, optional
        ``R``, the gradient clipping norm; None = ``2 c_r C_B`` (``1`` under authors_code).
    eta0, t0 : float, optional
        Step ``eta_t = eta0 / (t + t0)`` (None = 5 and 1, the authors' code).
    step_schedule : {"inv_t", "inv_sqrt_t"}, optional
        ``eta0 / (t + t0)`` or ``eta0 / sqrt(t + t0)`` (None = "inv_t").
    init : {"zero", "random_unit"}, optional
        ``theta_0`` (None = 0; the code: a random unit vector).
    ridge : float, optional
        Ridge ``lambda`` in the update (None = 0; 0.05 for GLM links / multi under authors_code).
    project_radius : float, optional
        Project the iterate onto ``||theta|| <= rho`` (None = off).
    s0, h, warmup_order, warmup_full_budget
        Algorithm 2 warm-up and elimination (see
        :class:`~privbandits.algorithms.ldp_glb.ols.LDPOLS`).
    sgd_warmup : {"sgd", "ols"}, optional
        Multi: warm-up estimator (None = "sgd"; "ols" under authors_code, spec 8.25).
    synthetic_update : {"per_arm", "joint"}, optional
        Multi: K per-arm ``Psi_{eps/2}`` (paper) or one joint ``Psi_{eps}`` in dimension ``dK``
        (authors' code, spec 2.6).
    joint_radius : {"dK", "d"}, optional
        Radius of the joint mechanism: unbiased ``r_{eps,dK}`` or the code's ``r_{eps,d}``.
    calibration, alpha, shift_scale
        OLS warm-up calibration (see :class:`~privbandits.algorithms.ldp_glb.ols.LDPOLS`).

    References
    ----------
    Han, Liang, Wang, Zhang (2021), Algorithms 1-2, eq. (3.5)-(3.6), Lemma 2.2, Props 3.2 and
    4.2, Theorems 3.1 and 4.1.
    """

    name = "ldp-sgd"
    links = ("*",)

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 0.01,
        preset: str = "strict",
        grad_bound: float | None = None,
        eta0: float | None = None,
        t0: float | None = None,
        step_schedule: str | None = None,
        init: str | None = None,
        ridge: float | None = None,
        project_radius: float | None = None,
        s0: int | None = None,
        h: float | None = None,
        warmup_order: str = "round_robin",
        warmup_full_budget: bool = False,
        sgd_warmup: str | None = None,
        synthetic_update: str | None = None,
        joint_radius: str | None = None,
        calibration: str = "classic",
        alpha: float = 0.1,
        shift_scale: float | None = None,
    ) -> None:
        super().__init__(
            epsilon=epsilon,
            delta=delta,
            preset=preset,
            grad_bound=grad_bound,
            eta0=eta0,
            t0=t0,
            step_schedule=step_schedule,
            init=init,
            ridge=ridge,
            project_radius=project_radius,
            s0=s0,
            h=h,
            warmup_order=warmup_order,
            warmup_full_budget=warmup_full_budget,
            sgd_warmup=sgd_warmup,
            synthetic_update=synthetic_update,
            joint_radius=joint_radius,
            calibration=calibration,
            alpha=alpha,
            shift_scale=shift_scale,
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
        self._given: dict[str, Any] = {
            "grad_bound": None if grad_bound is None else check_positive("grad_bound", grad_bound),
            "eta0": None if eta0 is None else check_positive("eta0", eta0),
            "t0": None if t0 is None else check_nonnegative("t0", t0),
            "step_schedule": None
            if step_schedule is None
            else check_choice("step_schedule", step_schedule, STEP_SCHEDULES),
            "init": None if init is None else check_choice("init", init, INITS),
            "ridge": None if ridge is None else check_nonnegative("ridge", ridge),
            "sgd_warmup": None
            if sgd_warmup is None
            else check_choice("sgd_warmup", sgd_warmup, SGD_WARMUPS),
            "synthetic_update": None
            if synthetic_update is None
            else check_choice("synthetic_update", synthetic_update, SYNTHETIC_UPDATES),
            "joint_radius": None
            if joint_radius is None
            else check_choice("joint_radius", joint_radius, JOINT_RADII),
        }
        self.project_radius = (
            None if project_radius is None else check_positive("project_radius", project_radius)
        )

    # -- resolution of the preset -----------------------------------------------------------
    def settings_for(self, spec: EnvSpec) -> dict[str, Any]:
        """Hyper-parameters on problem ``spec``: given values, else the preset's (spec 3.6)."""
        out = sgd_defaults(
            self.preset, spec.setting, spec.link.name, spec.context_bound, spec.reward_bound
        )
        out.update({k: v for k, v in self._given.items() if v is not None})
        return out

    def _randomizers(self, spec: EnvSpec, cfg: dict[str, Any]) -> tuple[Any, Any]:
        """(main or single randomizer, warm-up randomizer)."""
        C_B, rr, R = spec.context_bound, spec.reward_range, cfg["grad_bound"]
        if spec.setting == "single":
            r = SGDRandomizer(self.epsilon, R, spec.link, C_B, rr)
            return r, r
        eps_arm = self.epsilon / 2.0
        if cfg["synthetic_update"] == "joint":
            main: Any = JointSGDRandomizer(self.epsilon, R, spec.link, C_B, rr, cfg["joint_radius"])
        else:
            main = SGDRandomizer(eps_arm, R, spec.link, C_B, rr)
        if cfg["sgd_warmup"] == "ols":
            warm: Any = OLSRandomizer(self._warm_ols_calibration(spec), C_B, rr)
        else:
            warm = SGDRandomizer(
                self.epsilon if self.warmup_full_budget else eps_arm, R, spec.link, C_B, rr
            )
        return main, warm

    def _warm_ols_calibration(self, spec: EnvSpec) -> Any:
        full = self.warmup_full_budget or self.preset == "authors_code"
        level = (self.epsilon, self.delta) if full else self._arm_level()
        return ols_calibration(
            self.preset, *level, spec.context_bound, spec.reward_bound, self.calibration
        )

    def _accounting(self, spec: EnvSpec) -> tuple[PureDP | ApproxDP, str]:
        cfg = self.settings_for(spec)
        main, warm = self._randomizers(spec, cfg)
        d, R = spec.d, cfg["grad_bound"]
        if spec.setting == "single":
            r = main.radius(d)
            notes = f"Algorithm 1 + SGD: l2-ball radius {r:.6g} in d={d}, R={R:g}"
            return l2_ball_guarantee(r, d, R, main.epsilon), notes
        if cfg["synthetic_update"] == "joint":
            r = main.radius(d * spec.K)
            g_main = l2_ball_guarantee(r, d * spec.K, R, main.epsilon)
            how = (
                f"joint l2-ball radius {r:.6g} in dK={d * spec.K}, R={R:g} (output scaled by "
                f"{main.shrink(d, spec.K):.6g}, post-processing)"
            )
        else:
            r = main.radius(d)
            g_main = two_slot_guarantee(l2_ball_guarantee(r, d, R, main.epsilon))
            how = (
                f"two slots of the per-arm l2-ball (radius {r:.6g}, d={d}, R={R:g}), "
                "basic composition"
            )
        if isinstance(warm, OLSRandomizer):
            g_warm: PureDP | ApproxDP = ols_message_guarantee(warm.calibration, self.delta)
            wh = f"OLS warm-up (s_W={warm.calibration.s_W:.6g}) at delta/2 per part"
        else:
            g_warm = l2_ball_guarantee(warm.radius(d), d, R, warm.epsilon)
            wh = f"one-slot warm-up radius {warm.radius(d):.6g}"
        notes = f"Algorithm 2 + SGD: main = {how}; {wh}; max over phases"
        return phases_guarantee(g_warm, g_main), notes

    # -- lifecycle ---------------------------------------------------------------------------
    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        cfg = self.settings_for(spec)
        main, warm = self._randomizers(spec, cfg)
        lead = (self.R,) if spec.setting == "single" else (self.R, spec.K)
        if cfg["init"] == "random_unit":
            theta0 = unit_vectors(streams.server, lead, spec.d)
        else:
            theta0 = np.zeros(lead + (spec.d,))
        step = (cfg["eta0"], cfg["t0"], cfg["step_schedule"], cfg["ridge"], self.project_radius)
        self._resolved = dict(cfg)
        if spec.setting == "single":
            self.client = Alg1Client(main)
            self.server = SGDServer(theta0, *step)
            return
        s0 = self._resolve_s0(spec)
        warm_ols = None
        if cfg["sgd_warmup"] == "ols":
            dflt = ols_shift_defaults(self.preset, "multi")
            scale = dflt["shift_scale"] if self.shift_scale is None else self.shift_scale
            K = spec.K if dflt["shift_K"] else 1
            c_tilde = ols_shift_constant(
                warm.calibration.sigma_unit, spec.d, spec.horizon, self.alpha, K
            )
            warm_ols = (scale * c_tilde, dflt["shift_offset"])
        self._resolved.update(s0=s0, warm_ols_shift=warm_ols)
        self.client = Alg2Client(spec.K, s0, self.warmup_order, self.h, spec.link, warm, main)
        self.server = SGDMultiServer(
            self.R,
            spec.K,
            spec.d,
            s0,
            self.warmup_order,
            theta0,
            *step,
            mechanism=main.mechanism,
            warm_ols=warm_ols,
        )
