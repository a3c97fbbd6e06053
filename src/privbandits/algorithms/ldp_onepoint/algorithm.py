"""LDP-OnePoint (Zheng, Cai, Huang, Li & Wang 2020, Algorithm 1): any non-private bandit algorithm
with one-point feedback, made locally private by privatizing each user's loss on the user side.

Round ``t`` (roles in :mod:`privbandits.algorithms.ldp_onepoint.roles`)::

    server -> user t : the arm x_t = A.propose()
    user t           : m_t = clip(f_t(x_t), lo, hi) + Z_t,   Z_t ~ N(0, sigma^2) or Lap(b)
    server           : A.update(m_t)

``A`` (``base``) is any registered non-private :class:`~privbandits.algorithms.base.Curator`, or an
instance of one (a user's own algorithm): it runs on the server, sees arms as the one-hot catalogue
``e_1..e_K`` and the privatized values as rewards (on a loss environment: it proposes a point and
receives the privatized loss, e.g. FKM), and is reset with the retuned problem
description of :func:`~privbandits.algorithms.ldp_onepoint.calibration.inflated_spec` (enlarged range
``B_tilde`` and noise scale, Theorem 3).  Rewards are privatized directly: the loss ``f = -r`` has
the same sensitivity and the wrapped algorithms maximize rewards.

Each user takes part in one round and sends one message, so the per-user guarantee is the
accountant's guarantee of one scalar Gaussian (Laplace) mechanism (Theorem 2), and by Theorem 1 it
is also the guarantee of the whole run in the streaming sense.  The wrapper's roles run on the reference
driver (the black box may be a numpy algorithm); the wrapped algorithm's own steps are compiled
when it has a kernel.  The whole round is compiled as well, for the compiled driver, around
FKM on a loss environment and around a black box with a compiled kernel on arms
(:mod:`privbandits.algorithms.ldp_onepoint.steps`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.audit import AuditCase, arm_pairs, k_armed_env, mechanism_cases
from privbandits.algorithms.base import Algorithm, Curator, LocalAlgorithm
from privbandits.algorithms.bco.fkm import FKM
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.convex_kernel import ConvexCuratorKernel, ConvexLocalKernel
from privbandits.algorithms.kernel import CuratorKernel, MessageLayout, ProposalKernel
from privbandits.algorithms.ldp_onepoint.calibration import (
    OnePointCalibration,
    OnePointConstants,
    calibrate_onepoint,
    inflated_spec,
    noise_bound,
)
from privbandits.algorithms.ldp_onepoint.roles import OnePointClient, OnePointServer
from privbandits.algorithms.ldp_onepoint.steps import (
    onepoint_fkm_publish,
    onepoint_fkm_randomize,
    onepoint_fkm_update,
    onepoint_value,
)
from privbandits.algorithms.registry import get, make, register
from privbandits.core.convex import ConvexSpec
from privbandits.core.errors import UnknownNameError, ValidationError
from privbandits.core.params import (
    Bool,
    Choice,
    Constraint,
    Delta,
    Epsilon,
    Int,
    Optional,
    Positive,
)
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec

__all__ = ["BlackBox", "LDPOnePoint", "ParamDict"]


class BlackBox(Constraint):
    """A non-private :class:`Curator` usable as the reduction's black box: a registry name or an
    instance."""

    def check(self, name: str, value: Any) -> Any:
        if isinstance(value, str):
            try:
                cls = get(value)
            except UnknownNameError as exc:
                raise ValidationError(f"{name}={value!r}: {exc.args[0]}") from None
        elif isinstance(value, Algorithm):
            cls = type(value)
        else:
            raise ValidationError(
                f"{name} must be a registered algorithm name or a Curator instance, got {value!r}"
            )
        label = cls.name or cls.__name__
        if not issubclass(cls, Curator) or cls.trust_model != "none":
            raise ValidationError(
                f"{name}={label!r} cannot be wrapped: the one-point reduction needs a non-private Curator "
                f"(select(t, contexts) -> arms, update(t, contexts, arms, rewards)); it is a "
                f"{cls.trust_model!r}-model {'Curator' if issubclass(cls, Curator) else 'role algorithm'}"
            )
        if "single" not in cls.settings:
            raise ValidationError(
                f"{name}={label!r} cannot be wrapped: it must support the 'single' setting "
                f"(one shared arm catalogue), it supports {cls.settings}"
            )
        if "*" not in cls.links and "identity" not in cls.links:
            raise ValidationError(
                f"{name}={label!r} cannot be wrapped: the privatized values are real-valued "
                f"rewards (identity link), it supports links {cls.links}"
            )
        return value

    def describe(self) -> str:
        return "a registered non-private Curator name or instance"


class ParamDict(Constraint):
    """``None`` or a mapping from parameter names (strings) to values."""

    def check(self, name: str, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise ValidationError(
                f"{name} must be a mapping of parameter names to values, got {value!r}"
            )
        return dict(value)

    def describe(self) -> str:
        return "None or a mapping of parameter names to values"


def _device(c: OnePointConstants) -> tuple[float, float, bool, float, bool]:
    """The device's parameters ``(lo, hi, clip, scale, laplace)`` (clipping on)."""
    lo, hi, scale = float(c.clip_lo), float(c.clip_hi), float(c.noise_scale)
    return lo, hi, True, scale, c.mechanism == "laplace"


def _fkm_kernel(
    base: Curator, c: OnePointConstants, mechanism: str, R: int
) -> ConvexLocalKernel | None:
    """The compiled round of LDP-OnePoint around FKM (one-point bandit convex optimization,
    Corollary 4): FKM's compiled steps on the black box's own arrays, the device's clip and noise
    (:mod:`privbandits.algorithms.ldp_onepoint.steps`); None for any other black box (a subclass
    of FKM included: it may change the round)."""
    inner = getattr(base, "compiled_kernel", None)
    if not (type(base) is FKM and isinstance(inner, ConvexCuratorKernel)):
        return None
    return ConvexLocalKernel(
        onepoint_fkm_publish,
        onepoint_fkm_randomize,
        onepoint_fkm_update,
        (inner.params, *_device(c)),
        (np.zeros((R, 1, base.y.shape[1])),),
        inner.state,
        MessageLayout(mechanism, (("value", ()),)),
    )


def _proposal_kernel(
    base: Curator, c: OnePointConstants, server: OnePointServer
) -> ProposalKernel | None:
    """The compiled round of LDP-OnePoint around a black box with a compiled kernel (on arms): its
    steps on its own state, proposing from the public one-hot catalogue, updated with the device's
    privatized reward (:func:`~privbandits.algorithms.ldp_onepoint.steps.onepoint_value`); None
    when the black box has no compiled kernel."""
    inner = getattr(base, "kernel", None)
    if inner is None:  # a kernel kept for the compiled driver only (numpy roles otherwise)
        inner = getattr(base, "compiled_kernel", None)
    if not isinstance(inner, CuratorKernel):
        return None
    return ProposalKernel(
        inner,
        onepoint_value,
        _device(c),
        np.ascontiguousarray(server.catalogue),
        MessageLayout(server.mechanism, (("value", ()),)),
        allocates=inner.allocates,
    )


@register
class LDPOnePoint(LocalAlgorithm):
    """LDP-OnePoint (Zheng et al. 2020, Algorithm 1): a non-private one-point bandit algorithm made
    ``(epsilon, delta)``-LDP (Gaussian) or ``epsilon``-LDP (Laplace).

    Parameters
    ----------
    base : str or Curator
        The black box ``A``: a registered non-private algorithm name (``"ucb1"``, ``"exp3"``,
        ``"tsallis-inf"``, ``"successive-elimination"``, ...) or an instance of a non-private
        :class:`Curator` (a user's own algorithm).
    base_params : mapping, optional
        Constructor arguments of ``base`` when it is a name.
    epsilon, delta : float
        Per-user privacy parameters (``delta`` unused by the Laplace variant).
    mechanism : {"gaussian", "laplace"}
        Gaussian noise (the paper) or Laplace noise (pure epsilon-LDP; Zheng et al. 2020, section
        3: "all results extend to epsilon-LDP using Laplacian noise").
    preset : {"strict", "paper"}
        ``strict``: exact sensitivity ``hi - lo`` and the analytic Gaussian; ``paper``: ``|f| <= B``
        and ``sigma = 2B sqrt(2 ln(1.25/delta)) / epsilon`` (Algorithm 1, line 1).
    loss_bound : float, optional
        ``B``: values are clipped into ``[-B, B]`` (default: the problem's declared reward range).
    clip : bool
        User-side clipping of the value before the noise (without it the guarantee is conditional
        and out-of-range values raise).
    range_inflation : {"auto", "none"}
        ``auto``: reset the black box with the enlarged range ``B_tilde`` and noise scale of the
        privatized values (Theorem 3); ``none``: with the raw ones (the mis-tuned ablation).
    horizon : int, optional
        ``T`` of the range enlargement (default: the run's horizon).

    References
    ----------
    Zheng, Cai, Huang, Li & Wang (2020), "Locally Differentially Private (Contextual) Bandits
    Learning", NeurIPS, Algorithm 1, Theorems 1-3 and Corollary 4.  Balle & Wang (2018), "Improving
    the Gaussian Mechanism for Differential Privacy", ICML (the strict calibration).
    """

    name = "ldp-onepoint"
    settings = ("single",)
    links = ("*",)
    paper = "Zheng et al. 2020 (Alg. 1)"
    constraints: ClassVar = {
        "base": BlackBox(),
        "base_params": ParamDict(),
        "epsilon": Epsilon,
        "delta": Delta,
        "mechanism": Choice("gaussian", "laplace"),
        "preset": Choice("strict", "paper"),
        "loss_bound": Optional(Positive),
        "clip": Bool(),
        "range_inflation": Choice("auto", "none"),
        "horizon": Optional(Int(2)),
    }
    test_params: ClassVar = (
        {},
        {"base": "exp3", "mechanism": "laplace"},
        {"base": "tsallis-inf", "preset": "paper", "epsilon": 2.0},
        {
            "base": "successive-elimination",
            "base_params": {"alpha": 0.2},
            "loss_bound": 2.0,
            "range_inflation": "none",
        },
    )
    test_envs: ClassVar = ("finite",)

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The client path with the Gaussian and with the Laplace mechanism (pure epsilon-LDP)."""
        return mechanism_cases(
            cls,
            k_armed_env,
            arm_pairs(3),
            "LDP-OnePoint client (Zheng et al. 2020, Alg. 1): clip(r) + Gaussian",
            "LDP-OnePoint client with the Laplace mechanism (Zheng et al. 2020, pure epsilon-LDP)",
        )

    def __init__(
        self,
        base: str | Curator = "ucb1",
        base_params: Mapping[str, Any] | None = None,
        epsilon: float = 1.0,
        delta: float = 0.01,
        mechanism: str = "gaussian",
        preset: str = "strict",
        loss_bound: float | None = None,
        clip: bool = True,
        range_inflation: str = "auto",
        horizon: int | None = None,
    ) -> None:
        if base_params and not isinstance(base, str):
            raise ValidationError(
                "base_params is only used when base is a registered name; configure the "
                "instance passed as base directly"
            )
        if isinstance(base, str):  # validates base_params now (the constructor is cheap)
            self._new_base()

    def plays_continuous_actions(self) -> bool:
        """Whether the wrapped curator proposes query points (one-point bandit convex optimization)."""
        base = self.base
        if isinstance(base, str):
            from privbandits.algorithms.registry import get

            return bool(get(base).continuous_actions)
        return base.plays_continuous_actions()

    def _new_base(self) -> Curator:
        if isinstance(self.base, str):
            try:
                alg = make(self.base, **(self.base_params or {}))
            except ValidationError as exc:
                raise ValidationError(f"base_params for base={self.base!r}: {exc}") from None
        else:
            alg = self.base
        assert isinstance(alg, Curator)
        return alg

    # -- calibration -------------------------------------------------------------------------
    def _privatizer(self, spec: EnvSpec, rounds: int = 1) -> OnePointCalibration:
        if self.loss_bound is not None:
            lo, hi = -self.loss_bound, self.loss_bound
        elif isinstance(
            spec, ConvexSpec
        ):  # one-point bandit convex optimization: privatize the loss
            lo, hi = (float(v) for v in spec.loss_range)
        else:
            lo, hi = (float(v) for v in spec.reward_range)
        return calibrate_onepoint(
            self.epsilon,
            self.delta,
            lo,
            hi,
            mechanism=self.mechanism,
            preset=self.preset,
            clip=self.clip,
            rounds=rounds,
        )

    def _horizon(self, spec: EnvSpec) -> int:
        return self.horizon if self.horizon is not None else max(spec.horizon, 2)

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """The privatizer's noise and accounted guarantee, and the black box's retuned problem."""
        T = self._horizon(spec)
        cal = self._privatizer(spec, T)
        inner = inflated_spec(spec, cal, T, self.range_inflation == "auto")
        base = (
            self.base
            if isinstance(self.base, str)
            else (self.base.name or type(self.base).__name__)
        )
        lo, hi = inner.reward_range
        constants = OnePointConstants(
            clip_lo=cal.lo,
            clip_hi=cal.hi,
            sensitivity=cal.sensitivity,
            noise_scale=cal.scale,
            noise_std=cal.std,
            mechanism=cal.mechanism,
            T=T,
            base=base,
            noise_bound=noise_bound(cal, T),
            base_reward_range=(lo, hi),
            base_noise_scale=inner.noise_scale,
            clip=self.clip,
        )
        return Calibration(
            cal.guarantee,
            preset=self.preset,
            requested=(self.epsilon, self.delta),
            constants=constants,
        )

    def base_spec(self, spec: EnvSpec) -> EnvSpec:
        """The problem description the black box is reset with on problem ``spec``."""
        return inflated_spec(
            spec, self._privatizer(spec), self._horizon(spec), self.range_inflation == "auto"
        )

    # -- roles ---------------------------------------------------------------------------------
    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        c = self.calibration.typed(OnePointConstants)
        base = self._new_base()
        base.reset(self.base_spec(spec), self.R, streams)
        points = spec.d if isinstance(spec, ConvexSpec) else None
        params = (spec.param_dim or spec.d) if isinstance(spec, ConvexSpec) else 1
        self.server = OnePointServer(base, spec.K, self.R, self.mechanism, points, params)
        self.client = OnePointClient(
            spec,
            c.clip_lo,
            c.clip_hi,
            self.clip,
            c.noise_scale,
            self.mechanism,
            c.sensitivity,
        )
        self.compiled_kernel: ConvexLocalKernel | ProposalKernel | None = None
        if self.clip:  # without the clip the device refuses a user, which a loop cannot report
            if points is not None:
                self.compiled_kernel = _fkm_kernel(base, c, self.server.mechanism, self.R)
            else:
                self.compiled_kernel = _proposal_kernel(base, c, self.server)

    @property
    def black_box(self) -> Curator:
        """The wrapped algorithm of the current run (server side)."""
        return self.server.base  # type: ignore[attr-defined, no-any-return]
