"""LDP-SGD: Algorithms 1 and 2 of Han et al. (2021) with the private SGD pair (eq. 3.5-3.6)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.audit import AuditCase, ClientPathCase, diagonal_point, public_state
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import ESTIMATE_BOUND, LocalKernel, MessageLayout
from privbandits.algorithms.ldp_glb.algorithm import HanAlgorithm
from privbandits.algorithms.ldp_glb.calibration import (
    SGDConstants,
    ols_epsilon,
    ols_noise,
    ols_sensitivity,
    sgd_defaults,
)
from privbandits.algorithms.ldp_glb.device import estimates_space, sgd_message_noise
from privbandits.algorithms.ldp_glb.estimators import STEP_SCHEDULES, solver_scratch
from privbandits.algorithms.ldp_glb.kernels import SGD_STEPS, SGDParams
from privbandits.algorithms.registry import register
from privbandits.core.params import Choice, NonNegative, Optional, Positive
from privbandits.core.spec import EnvSpec
from privbandits.privacy.accounting import ApproxDP, PureDP, to_guarantee
from privbandits.privacy.calibration import l2_ball_radius
from privbandits.privacy.device import DeviceSensitivity
from privbandits.privacy.ledger import Composed, Event, Gaussian, PureLocal

__all__ = ["INITS", "JOINT_RADII", "LDPSGD", "SGD_WARMUPS", "SYNTHETIC_UPDATES"]

INITS: tuple[str, ...] = ("zero", "random_unit")
SGD_WARMUPS: tuple[str, ...] = ("sgd", "ols")
SYNTHETIC_UPDATES: tuple[str, ...] = ("per_arm", "joint")
JOINT_RADII: tuple[str, ...] = ("dK", "d")

#: Names of the messages: per-arm l2-ball, joint dK l2-ball, and with the OLS warm-up.
SGD_MECHANISM = "han2021-l2-ball"
JOINT_MECHANISM = "han2021-l2-ball-joint"

#: The hyper-parameters whose preset default a given value replaces (:meth:`LDPSGD.settings_for`).
_TUNABLE = (
    "grad_bound",
    "eta0",
    "t0",
    "step_schedule",
    "init",
    "ridge",
    "sgd_warmup",
    "synthetic_update",
    "joint_radius",
)


def random_unit(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform draws on the unit sphere, ``shape = lead + (d,)`` (the code's initialization)."""
    g = rng.standard_normal(shape)
    n = np.sqrt(np.einsum("...d,...d->...", g, g))
    return g / np.where(n == 0.0, 1.0, n)[..., None]


@register
class LDPSGD(HanAlgorithm):
    """LDP-SGD (Han et al. 2021): greedy choice on a privately updated online-SGD iterate.

    Single-parameter setting: Algorithm 1.  The user computes the GLM gradient
    ``g = (mu(x^T theta) - r) x`` at the public ``theta`` for the pulled arm's feature and sends the
    l2-ball output ``Psi_{eps,R}(g)`` (clipped to norm ``R``; output norm ``r_{eps,d}``, mean
    ``g``); the server steps ``theta <- theta - eta_t Z`` (eq. 3.5-3.6).  Multi-parameter setting:
    Algorithm 2 with per-arm l2-ball slots: warm-up, optional elimination (4.1), and K messages per
    main-phase round (synthetic ``Psi(0)`` for the unpulled arms).  Pure epsilon-LDP (except with
    the OLS warm-up option).

    Parameters
    ----------
    epsilon : float
        Per-user privacy level.
    delta : float
        Used only by the OLS warm-up option (``sgd_warmup="ols"``).
    preset : {"strict", "paper", "authors_code"}
        Defaults of the parameters below (defaults on the Han et al. 2021 documentation page).  ``strict`` runs Algorithm 2's slots at
        ``epsilon`` (the K-slot message is then exactly epsilon-LDP, see :mod:`.calibration`),
        ``paper`` at ``epsilon/2`` as printed (Prop. 4.2); they coincide in Algorithm 1.
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
        Project the iterate onto ``||theta|| <= rho``.  None = the known parameter bound
        ``theta_bound`` (``||theta*|| <= 1`` in the paper's model) under ``strict``, off under
        ``paper`` / ``authors_code`` as printed.  Without it the iterate diverges when the l2-ball
        radius is large (small epsilon, large d): the projection is post-processing, so it costs
        no privacy.
    s0, h, warmup_order, warmup_full_budget
        Algorithm 2 warm-up and elimination (see
        :class:`~privbandits.algorithms.ldp_glb.ols.LDPOLS`; ``warmup_full_budget`` runs the
        warm-up slot at ``epsilon`` under ``paper``).
    sgd_warmup : {"sgd", "ols"}, optional
        Multi: warm-up estimator (None = "sgd"; "ols" under authors_code, correction Han21-25 in the documentation).
    synthetic_update : {"per_arm", "joint"}, optional
        Multi: K per-arm l2-ball slots (paper) or one joint ``Psi_{eps}`` in dimension ``dK``
        (authors' code, Han et al. 2021, Props. 4.1-4.2, correction Han21-5).
    joint_radius : {"dK", "d"}, optional
        Radius of the joint mechanism: unbiased ``r_{eps,dK}`` or the code's ``r_{eps,d}``
        (post-processing: same privacy, mean shrunk).
    gaussian_calibration, alpha, shift_scale
        OLS warm-up calibration (see :class:`~privbandits.algorithms.ldp_glb.ols.LDPOLS`).

    References
    ----------
    Han, Liang, Wang, Zhang (2021), Algorithms 1-2, eq. (3.5)-(3.6), Lemma 2.2, Props 3.2 and
    4.2, Theorems 3.1 and 4.1.
    """

    name = "ldp-sgd"
    twin = "greedy-sgd"
    links = ("*",)
    constraints: ClassVar = {
        "grad_bound": Optional(Positive),
        "eta0": Optional(Positive),
        "t0": Optional(NonNegative),
        "step_schedule": Optional(Choice(*STEP_SCHEDULES)),
        "init": Optional(Choice(*INITS)),
        "ridge": Optional(NonNegative),
        "project_radius": Optional(Positive),
        "sgd_warmup": Optional(Choice(*SGD_WARMUPS)),
        "synthetic_update": Optional(Choice(*SYNTHETIC_UPDATES)),
        "joint_radius": Optional(Choice(*JOINT_RADII)),
    }
    test_params: ClassVar = (
        {},
        {"preset": "paper", "s0": 2},
        {"preset": "authors_code", "s0": 2},
        {
            "init": "random_unit",
            "ridge": 0.1,
            "project_radius": 1.0,
            "step_schedule": "inv_sqrt_t",
            "s0": 3,
            "h": 0.5,
            "warmup_order": "blocks",
            "synthetic_update": "joint",
        },
        {
            "sgd_warmup": "ols",
            "synthetic_update": "joint",
            "joint_radius": "d",
            "s0": 2,
            "epsilon": 5.0,
        },
    )

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The client path, at the iterate where two users' gradients are farthest apart."""
        text = "LDP-SGD client (Han et al. 2021, Alg. 2): gradient through the l2-ball mechanism"
        public = public_state(theta=diagonal_point)
        return (
            ClientPathCase(cls, n_samples=300_000, n_pilot=10_000, public=public, description=text),
        )

    grad_bound: float | None
    eta0: float | None
    t0: float | None
    step_schedule: str | None
    init: str | None
    ridge: float | None
    project_radius: float | None
    sgd_warmup: str | None
    synthetic_update: str | None
    joint_radius: str | None

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
        gaussian_calibration: str | None = None,
        alpha: float = 0.1,
        shift_scale: float | None = None,
    ) -> None:
        self._check_gaussian_calibration()

    def settings_for(self, spec: EnvSpec) -> dict[str, Any]:
        """Hyper-parameters on problem ``spec``: given values, else the preset's (defaults on the Han et al. 2021 documentation page)."""
        out = sgd_defaults(
            self.preset, spec.setting, spec.link.name, spec.context_bound, spec.reward_bound
        )
        for key in _TUNABLE:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.project_radius is not None:
            out["project_radius"] = self.project_radius
        else:  # strict: project onto the known parameter ball ||theta*|| <= S (free: post-processing)
            out["project_radius"] = spec.theta_bound if self.preset == "strict" else None
        return out

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Levels and radii of the l2-ball slots, step schedule, warm-up and the guarantee.

        The l2-ball sampler run at level ``e`` is exactly ``e``-LDP (its output density ratio is
        at most ``(1 + tanh(e/2)) / (1 - tanh(e/2)) = e^e``; the radius only scales the output);
        the K-slot message of Algorithm 2 is ``e``-LDP as well (:mod:`.calibration`); the OLS
        warm-up is accounted as one Gaussian mechanism.  The run's guarantee is the worst phase.
        """
        cfg = self.settings_for(spec)
        d, K, R_g, eps = spec.d, spec.K, float(cfg["grad_bound"]), self.epsilon
        warmup = self._warmup(spec)
        common: dict[str, Any] = {key: cfg[key] for key in (*_TUNABLE, "project_radius")}
        common.update(s0=warmup.s0, n_warmup=warmup.n_warmup)
        if spec.setting == "single":
            radius = l2_ball_radius(eps, d, R_g)
            ledger: Event = Composed(
                (
                    PureLocal(
                        "l2-ball (Duchi et al. 2018) on the clipped gradient",
                        eps,
                        {"radius": radius, "d": d, "R": R_g},
                    ),
                ),
                "disjoint",
                f"preset={self.preset}; Algorithm 1 + SGD: l2-ball at epsilon={eps:g} (radius "
                f"{radius:.6g} in d={d}, R={R_g:g}), exact; one message per user",
            )
            return Calibration(
                to_guarantee(PureDP(eps), "local", "user", ledger=ledger),
                preset=self.preset,
                requested=(eps, self.delta),
                constants=SGDConstants(**common, epsilon_slot=eps, radius=radius),
            )
        half = bool(cfg["half_arm_level"])
        eps_slot = eps / 2.0 if half else eps
        if cfg["synthetic_update"] == "joint":
            eps_main = eps
            r_joint = l2_ball_radius(eps, d * K if cfg["joint_radius"] == "dK" else d, R_g)
            main = f"one joint l2-ball at epsilon={eps:g} in dK={d * K} (radius {r_joint:.6g})"
        else:
            eps_main, r_joint = eps_slot, 0.0
            main = (
                f"K per-arm l2-ball slots at epsilon={eps_slot:g} (two slots differ at most: "
                "exactly that level)"
            )
        radius = l2_ball_radius(eps_slot, d, R_g)
        multi: dict[str, Any] = {
            "multi": True,
            "warmup_order": warmup.warmup_order,
            "h": warmup.h,
            "epsilon_slot": eps_slot,
            "radius": radius,
            "radius_joint": r_joint,
        }
        if cfg["sgd_warmup"] == "ols":
            gc = self._gaussian()
            full = self.warmup_full_budget or self.preset == "authors_code"
            warm = ols_noise(
                self.preset,
                gc,
                eps,
                self.delta,
                spec.context_bound,
                spec.reward_bound,
                per_arm_half=not full,
            )
            eps_warm = ols_epsilon(
                warm.s_W, warm.s_u, self.delta, spec.context_bound, spec.reward_bound
            )
            shift = self._shift(spec, warm.sigma_unit)
            multi.update(
                gaussian_calibration=gc,
                s_W_warm=warm.s_W,
                s_u_warm=warm.s_u,
                c_shift_warm=shift.c_shift,
                shift_offset_warm=shift.shift_offset,
            )
            g: PureDP | ApproxDP = ApproxDP(max(eps_main, eps_warm), self.delta)
            mu = ols_sensitivity(warm.s_W, warm.s_u, spec.context_bound, spec.reward_bound)
            warm_event: Event = Gaussian(
                1.0,
                mu,
                f"the OLS warm-up message ({warm.rule}; one Gaussian mechanism, epsilon "
                f"{eps_warm:.6g})",
                gc,
            )
        else:
            eps_warm = eps if (self.warmup_full_budget or not half) else eps / 2.0
            r_warm = l2_ball_radius(eps_warm, d, R_g)
            multi.update(epsilon_warm=eps_warm, radius_warm=r_warm)
            g = PureDP(max(eps_main, eps_warm))
            warm_event = PureLocal(
                f"l2-ball warm-up slot at epsilon={eps_warm:g}", eps_warm, {"radius": r_warm}
            )
        main_event = PureLocal(main, eps_main, {"radius": r_joint or radius, "d": d, "K": K})
        ledger = Composed(
            (warm_event, main_event),
            "disjoint",
            f"preset={self.preset}; Algorithm 2 + SGD: each user is in one public phase "
            "(warm-up or main), the guarantee is the worst phase's",
        )
        return Calibration(
            to_guarantee(g, "local", "user", ledger=ledger),
            preset=self.preset,
            requested=(eps, self.delta),
            constants=SGDConstants(**common, **multi),
        )

    def build_kernel(self) -> LocalKernel:
        spec, R, c = self.spec, self.R, self.calibration.typed(SGDConstants)
        d, K, multi = spec.d, spec.K, spec.setting == "multi"
        K_est = (
            K if multi else 1
        )  # estimators; also the user's scratch holds d K_est floats (joint update)
        ols_warm = c.ols_warmup
        rho = c.project_radius
        # E[Psi(G)] = (radius_joint / unbiased radius in dimension dK) G: the code's radius
        # r_{eps,d} shrinks the mean (post-processing)
        mean_joint = 1.0
        if c.joint:
            mean_joint = float(c.radius_joint or 0.0) / l2_ball_radius(
                self.epsilon, d * K, c.grad_bound
            )
        params = SGDParams(
            **self._kernel_head(c.n_warmup, c.s0),
            R=float(c.grad_bound),
            epsilon=float(c.epsilon_slot),
            radius=float(c.radius),
            epsilon_warm=float(c.epsilon_slot if c.epsilon_warm is None else c.epsilon_warm),
            radius_warm=float(c.radius if c.radius_warm is None else c.radius_warm),
            joint=c.joint,
            epsilon_joint=float(self.epsilon),
            radius_joint=float(c.radius_joint or 0.0),
            mean_joint=mean_joint,
            ols_warmup=ols_warm,
            s_W_warm=float(1.0 if c.s_W_warm is None else c.s_W_warm),
            s_u_warm=float(1.0 if c.s_u_warm is None else c.s_u_warm),
            c_shift_warm=float(c.c_shift_warm or 0.0),
            offset_warm=float(c.shift_offset_warm or 0.0),
            eta0=float(c.eta0),
            t0=float(c.t0),
            inv_sqrt=c.step_schedule == "inv_sqrt_t",
            ridge=float(c.ridge),
            rho=ESTIMATE_BOUND if rho is None else min(float(rho), ESTIMATE_BOUND),
            rho_ols=ESTIMATE_BOUND,
            work=np.zeros(d * K_est),
        )
        if c.init == "random_unit":
            theta = random_unit(self.streams.server, (R, K_est, d))
        else:
            theta = np.zeros((R, K_est, d))
        # the device's contract (:mod:`.device`): the estimates the server can publish (the
        # projection ball, holding the initial iterate; the OLS warm-up's solutions are not
        # projected), the l2-ball's noise and its sensitivity in units of the clipping norm
        ball = (
            ESTIMATE_BOUND
            if (rho is None or ols_warm)
            else max(float(rho), 1.0 if c.init == "random_unit" else 0.0)
        )
        bound, ols_pair = 2.0, None
        if ols_warm:
            ols_pair = (params.s_W_warm, params.s_u_warm)
            bound = ols_sensitivity(*ols_pair, spec.context_bound, spec.reward_bound)
        device: dict[str, Any] = {
            "public_space": estimates_space(multi, ball),
            "noise": sgd_message_noise(
                d,
                K,
                multi,
                params.n_warmup,
                grad_bound=params.R,
                unit=2.0 / bound,
                radius=params.radius,
                radius_warm=params.radius_warm,
                joint=params.joint,
                radius_joint=params.radius_joint,
                mean_joint=mean_joint,
                ols_warm=ols_pair,
            ),
            "sensitivity": DeviceSensitivity("l2", float(bound)),
        }
        if not multi:
            layout = MessageLayout(SGD_MECHANISM, (("z", (d,)),))
            return self._kernel(SGD_STEPS, params, theta, (), layout, device)
        n = (R, K, d) if ols_warm else (0, 0, 0)  # the OLS arrays only with the OLS warm-up
        server = (np.zeros((R, K)), np.zeros(n + n[-1:]), np.zeros(n), solver_scratch(n[0], d))
        fields: tuple[tuple[str, tuple[int, ...]], ...] = (("z", (K, d)),)
        mechanism = JOINT_MECHANISM if params.joint else SGD_MECHANISM
        if ols_warm:
            fields = (("M", (K, d, d)), ("u", (K, d)), *fields)
            mechanism = "han2021-ols-warmup+" + mechanism.removeprefix("han2021-")
        return self._kernel(
            SGD_STEPS, params, theta, server, MessageLayout(mechanism, fields), device
        )
