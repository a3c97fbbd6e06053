"""LDP-TwoPoint (Zheng, Cai, Huang, Li & Wang 2020, Algorithm 2): two-point bandit convex
optimization under local differential privacy, around Algorithm 4
(:mod:`privbandits.algorithms.bco.two_point`).

Round ``t``::

    server -> user t : x_{t,1} = x_t + rho u_t,  x_{t,2} = x_t - rho u_t           (public)
    user t           : g = ||x_{t,1} - x_{t,2}||  (= 2 rho from an honest server)
                       a = clip(f_t(x_{t,1}) - f_t(x_{t,2}), -G g, G g)
                       send m_t = a + n_t^T (x_{t,1} - x_{t,2}),  n_t ~ N(0, sigma^2 I_d)
    server           : Algorithm 4 step with D_t = m_t

Privacy (Theorem 5): ``a`` has sensitivity ``4 rho G`` and the added scalar ``2 rho n_t^T u_t`` is
``N(0, 4 rho^2 sigma^2)``, a Gaussian mechanism.  ``paper``: ``sigma = 2G sqrt(2 ln(1.25/delta)) /
epsilon`` (line 1); ``strict``: ``2 rho sigma`` is the analytic Gaussian std for sensitivity
``4 rho G`` (the accounted epsilon is the request).  Laplace variant: ``m_t = a + Lap(4 rho G /
epsilon)`` at the honest gap (a choice of this library: the paper only states that its results
extend to Laplace noise).  The guarantee is accounted from the noise actually added.

The query points come from an untrusted server (the documentation's Concepts: trust models,
threat model).  The paper clips ``a`` to ``+-2 rho G``, but the noise ``n_t^T (x_{t,1} - x_{t,2})``
has std ``sigma g``: a server sending close points would read a fixed-size difference through
little noise.  The device therefore clips relative to the gap it is sent (``G g``, which a
``G``-Lipschitz loss never exceeds) and scales the Laplace noise with the gap as well, so the
sensitivity in units of the noise, ``2 G / sigma``, is the accounted one for every pair of points
of the decision set; both coincide with the paper's at ``g = 2 rho``.  ``m_t`` is exactly the
two-point difference of the virtual loss ``f_t(x) + n_t^T x``, so the run is Algorithm 4 on those
losses, path by path (Theorem 6); the scale-aware step uses ``sqrt(G^2 + sigma^2)``.  The roles are
numpy code on the loss-environment driver; the compiled driver runs the same round as compiled
steps (:mod:`privbandits.algorithms.bco.steps`) on the server's arrays; the device's math is the
compiled privatizer in both.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.audit import AuditCase, convex_env, mechanism_cases, two_point_pairs
from privbandits.algorithms.base import Client, LocalAlgorithm, Server
from privbandits.algorithms.bco.privatizer import (
    add_difference_noise,
    encode_differences,
    query_gaps,
)
from privbandits.algorithms.bco.problem import (
    check_loss_parameters,
    check_losses,
    check_points,
    convex_spec,
    query_points_field,
)
from privbandits.algorithms.bco.steps import (
    ldp_two_point_publish,
    ldp_two_point_randomize,
    ldp_two_point_update,
    two_point_params,
)
from privbandits.algorithms.bco.two_point import (
    SCHEDULES,
    TwoPointConstants,
    TwoPointState,
    algorithm_schedule,
)
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.convex_kernel import ConvexLocalKernel
from privbandits.algorithms.kernel import MessageLayout
from privbandits.algorithms.ldp_zheng.calibration import (
    gaussian_message_guarantee,
    laplace_message_guarantee,
    tight_sigma,
)
from privbandits.algorithms.registry import register
from privbandits.core.convex import ConvexSpec
from privbandits.core.errors import DataBoundError, TrustBoundaryError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.params import Bool, Choice, Delta, Epsilon, Int, Optional, Positive
from privbandits.core.public_space import PublicSpace, dims_of
from privbandits.privacy.device import DeviceNoise, DeviceSensitivity
from privbandits.privacy.ranges import Z_TAIL, OutputRange

__all__ = ["LDPTwoPoint", "LDPTwoPointConstants", "TwoPointClient", "TwoPointServer"]


@dataclass(frozen=True)
class LDPTwoPointConstants(TwoPointConstants):
    """LDP-TwoPoint (Zheng et al. 2020, Algorithm 2): Algorithm 4's constants
    (:class:`~privbandits.algorithms.bco.two_point.TwoPointConstants`, ``sigma`` the std of each
    coordinate of the noise vector ``n_t``) and the randomizer's.

    Attributes
    ----------
    sensitivity : float
        ``4 rho G``: the difference's sensitivity at the honest gap ``2 rho``.
    difference_bound : float
        ``2 rho G``: the clip at the honest gap.
    noise_scale : float
        ``sigma`` (Gaussian) or the Laplace scale ``b`` at the honest gap.
    clip_per_gap, noise_per_gap : float
        ``G`` and the noise std (Laplace: scale) per unit of gap ``||x_1 - x_2||``.
    whitened_sensitivity : float
        The accounted sensitivity in units of the noise.
    mechanism : {"gaussian", "laplace"}
    clip : bool
        User-side clipping (not stored: a parameter).
    diameter : float
        Diameter of the decision set, the largest gap (not stored: the problem's).
    """

    sensitivity: float
    difference_bound: float
    noise_scale: float
    clip_per_gap: float
    noise_per_gap: float
    whitened_sensitivity: float
    mechanism: str
    clip: bool = True
    diameter: float = math.inf

    hidden: ClassVar[tuple[str, ...]] = ("clip", "diameter")

    def output_ranges(
        self, context_bound: float, reward_range: tuple[float, float]
    ) -> dict[str, OutputRange]:
        """Gaussian with clipping: ``|m| <= (G + z sigma) g`` at gap ``g`` (at most the decision
        set's diameter; ``z`` = :data:`~privbandits.privacy.ranges.Z_TAIL` stds).  Laplace noise
        or ``clip=False``: not declared."""
        if self.mechanism != "gaussian" or not self.clip or not math.isfinite(self.diameter):
            return {}
        bound = (self.clip_per_gap + Z_TAIL * self.noise_per_gap) * self.diameter
        return {"difference": OutputRange("abs", bound)}


class TwoPointClient(Client):
    """User side: play the two public points, privatize the own loss difference relative to the gap.

    The server that sends the query points is untrusted: the device accepts any two points of the
    decision set (:meth:`public_space`), clips its loss difference to ``G ||x_1 - x_2||`` and adds
    noise of std ``sigma ||x_1 - x_2||`` (:mod:`privbandits.algorithms.bco.privatizer`), so the
    whitened sensitivity is the accounted ``4 rho G / (2 rho sigma)`` at every gap.

    Parameters
    ----------
    spec : ConvexSpec
        The problem (decision set, dimension).
    clip_per_gap : float
        ``G``: the difference is clipped to ``+-G ||x_1 - x_2||``.
    clip : bool
        Clip (default) or reject differences beyond that bound (the guarantee is then conditional
        on ``G``-Lipschitz losses).
    scale_per_gap : float
        ``sigma`` (std of each coordinate of the Gaussian noise vector) or the Laplace scale per unit
        of gap.
    mechanism : {"gaussian", "laplace"}
    bound : float
        The accounted whitened sensitivity: the sensitivity of the calibration over the noise
        std (Gaussian) or scale (Laplace) at the honest gap ``2 rho``.
    """

    def __init__(
        self,
        spec: ConvexSpec,
        clip_per_gap: float,
        clip: bool,
        scale_per_gap: float,
        mechanism: str,
        bound: float,
    ) -> None:
        self.spec = spec
        self.clip_per_gap, self.clip, self.scale_per_gap = clip_per_gap, clip, scale_per_gap
        self.mechanism, self.bound = mechanism, bound
        self.d = spec.d
        self._space = PublicSpace((query_points_field(spec.domain, 2),))

    # -- the device's declarations ------------------------------------------------------------
    def public_space(self) -> PublicSpace:
        """Two query points per user, ``(R, 2, d)``, finite and inside the decision set."""
        return self._space

    def sensitivity(self) -> DeviceSensitivity:
        """``4 rho G / (2 rho sigma)`` in units of the noise (l1 in units of the Laplace scale)."""
        return DeviceSensitivity("l1" if self.mechanism == "laplace" else "l2", self.bound)

    def _points(self, public: PublicState, R: int) -> np.ndarray:
        """The query points of a validated public state (shape, finiteness, domain)."""
        return np.asarray(self._space.validate(public, dims_of(self.spec, R))["points"])

    def _gaps(self, points: np.ndarray) -> np.ndarray:
        gaps = np.empty(points.shape[0])
        query_gaps(points, gaps)
        return gaps

    def _users(self, contexts: object, R: int | None = None) -> int:
        """``R`` from the user's own loss parameters ``(R, d)`` (checked; they are not read)."""
        return int(check_loss_parameters("LDP-TwoPoint", contexts, R, self.spec.param_dim).shape[0])

    def _inputs(
        self, public: PublicState, contexts: object, actions: object, rewards: object
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Validated losses ``(R, 2)``, query points ``(R, 2, d)`` and gaps ``(R,)``.

        The message is computed from the public points (validated against the declared space);
        the points the user reports having played are checked for shape and finiteness only.
        """
        v = check_losses("LDP-TwoPoint", rewards, None, 2)
        R = v.shape[0]
        self._users(contexts, R)
        pts = self._points(public, R)
        if actions is not None:
            check_points("LDP-TwoPoint", actions, R, 2, self.spec.domain)
        return v, pts, self._gaps(pts)

    def _encode(self, v: np.ndarray, gaps: np.ndarray) -> np.ndarray:
        if not self.clip:
            a = np.abs(v[:, 0] - v[:, 1])
            over = a > self.clip_per_gap * gaps * (1 + 1e-9)
            if over.any():
                i = int(np.argmax(over))
                raise DataBoundError(
                    f"a loss difference {a[i]:g} exceeds G ||x_1 - x_2|| = {self.clip_per_gap * gaps[i]:g} and "
                    "clip=False: the losses are not G-Lipschitz as declared (turn clipping on)"
                )
        out = np.empty(v.shape[0])
        encode_differences(v, gaps, self.clip_per_gap, self.clip, out)
        return out

    def encode(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
    ) -> np.ndarray:
        """The clipped loss difference ``(R, 1)`` (before noise)."""
        v, _, gaps = self._inputs(public, contexts, actions, rewards)
        return self._encode(v, gaps)[:, None]

    def noise(
        self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray
    ) -> DeviceNoise:
        """Std ``sigma ||x_1 - x_2||`` (Gaussian) or scale ``s ||x_1 - x_2||`` (Laplace) per user."""
        R = self._users(contexts)
        if actions is not None:
            check_points("LDP-TwoPoint", actions, R, 2, self.spec.domain)
        scale = (self.scale_per_gap * self._gaps(self._points(public, R)))[:, None]
        return (
            DeviceNoise.laplace(scale)
            if self.mechanism == "laplace"
            else DeviceNoise.gaussian(scale)
        )

    # -- the round ----------------------------------------------------------------------------
    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        return np.array(self._points(public, self._users(contexts)), dtype=float)

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        v, pts, gaps = self._inputs(public, contexts, actions, rewards)
        out = self._encode(v, gaps)
        add_difference_noise(
            rng, pts, gaps, self.scale_per_gap, self.mechanism == "laplace", np.empty(self.d), out
        )
        return PrivatizedMessage({"difference": out}, f"ldp-twopoint/{self.mechanism}")


class TwoPointServer(Server):
    """Server side: Algorithm 4 on the privatized differences."""

    def __init__(self, state: TwoPointState, mechanism: str) -> None:
        self.state = state
        self.mechanism = f"ldp-twopoint/{mechanism}"

    def public_state(self) -> PublicState:
        return PublicState({"points": self.state.query()})

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        if not isinstance(message, PrivatizedMessage):
            raise TrustBoundaryError(
                f"the server only accepts PrivatizedMessage objects, got {type(message).__name__}"
            )
        if message.mechanism != self.mechanism or set(message.payload) != {"difference"}:
            raise TrustBoundaryError(
                f"expected a {self.mechanism!r} message with field 'difference', got "
                f"{message.mechanism!r} with {tuple(message.payload)}"
            )
        raw = np.asarray(message.payload["difference"])
        if raw.dtype.kind not in "fiu" or raw.shape != (self.state.R,):
            raise TrustBoundaryError(
                f"expected one real difference per replication, shape ({self.state.R},), got "
                f"dtype {raw.dtype} and shape {raw.shape}"
            )
        m = raw.astype(float)
        if not np.isfinite(m).all():
            raise TrustBoundaryError(
                "a privatized difference is NaN or infinite; the server refuses the message"
            )
        self.state.step(t, m)

    def estimate(self) -> np.ndarray | None:
        return self.state.x.copy()


@register
class LDPTwoPoint(LocalAlgorithm):
    """LDP-TwoPoint (Zheng et al. 2020, Algorithm 2 around Algorithm 4).

    Parameters
    ----------
    epsilon, delta : float
        Per-user privacy parameters (``delta`` unused by the Laplace variant).
    mechanism : {"gaussian", "laplace"}
    preset : {"strict", "paper"}
        Noise calibration (module docstring).
    schedule, step, rho, sc_modulus, eta_scale, horizon :
        As for :class:`~privbandits.algorithms.bco.two_point.TwoPointBCO` (the scale-aware step
        uses ``sqrt(G^2 + sigma^2)``).
    clip : bool
        User-side clipping of the difference to ``+-G ||x_1 - x_2||`` (``+-2 rho G`` at the honest
        gap); without it, a difference beyond that bound is rejected.

    References
    ----------
    Zheng, Cai, Huang, Li & Wang (2020), "Locally Differentially Private (Contextual) Bandits
    Learning", NeurIPS, Algorithm 2, Theorems 5-6.
    """

    name = "ldp-twopoint"
    continuous_actions = True
    links = ("*",)
    paper = "Zheng et al. 2020 (Alg. 2)"
    constraints: ClassVar = {
        "epsilon": Epsilon,
        "delta": Delta,
        "mechanism": Choice("gaussian", "laplace"),
        "preset": Choice("strict", "paper"),
        "schedule": Choice(*SCHEDULES),
        "step": Choice("scale_aware", "paper"),
        "rho": Optional(Positive),
        "sc_modulus": Optional(Positive),
        "eta_scale": Positive,
        "clip": Bool(),
        "horizon": Optional(Int(2)),
    }
    # clip=False is left out: the device then refuses users whose losses are not G-Lipschitz, which
    # the conformance suite's adversarial users are by design (its own tests cover it)
    test_params: ClassVar = (
        {},
        {"mechanism": "laplace", "schedule": "strongly_convex"},
        {"preset": "paper", "step": "paper"},
    )
    test_envs: ClassVar = ("convex",)

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The client path with the Gaussian and with the Laplace mechanism (pure epsilon-LDP)."""
        text = "LDP-TwoPoint client (Zheng et al. 2020, Alg. 2): clip(f(x_1) - f(x_2)) + n^T (x_1 - x_2)"
        laplace = "LDP-TwoPoint client with the Laplace mechanism (pure epsilon-LDP)"
        return mechanism_cases(cls, convex_env, two_point_pairs, text, laplace)

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 0.01,
        mechanism: str = "gaussian",
        preset: str = "strict",
        schedule: str = "convex",
        step: str = "scale_aware",
        rho: float | None = None,
        sc_modulus: float | None = None,
        eta_scale: float = 1.0,
        clip: bool = True,
        horizon: int | None = None,
    ) -> None:
        pass

    def calibrate(self, spec: Any) -> Calibration:
        """Noise of the message, its accounted guarantee, and Algorithm 4's constants."""
        cs = convex_spec(self.name, spec)
        eps, delta = self.epsilon, self.delta
        pre = algorithm_schedule(self, cs, 0.0)
        rho, G = float(pre.rho), cs.lipschitz
        sens = 4.0 * rho * G
        note = (
            f"LDP-TwoPoint (Zheng et al. 2020, Alg. 2), preset={self.preset}, difference clipped to "
            "+-G ||x_1 - x_2|| (+-2 rho G at the honest gap), noise proportional to the gap"
        )
        if not self.clip:
            note += "; clip=False: conditional on G-Lipschitz losses"
        if self.mechanism == "laplace":
            b = sens / eps
            scale, sigma = (
                b,
                math.sqrt(2.0) * b / (2.0 * rho),
            )  # sigma: std of the noise per unit of 2 rho
            per_gap, whitened = b / (2.0 * rho), sens / b
            guarantee = laplace_message_guarantee(
                (("two-point difference", sens, b),), note + "; Laplace variant", rounds=pre.T
            )
        else:
            if self.preset == "paper":
                sigma = 2.0 * G * math.sqrt(2.0 * math.log(1.25 / delta)) / eps
            else:
                sigma = tight_sigma(eps, delta, sens) / (2.0 * rho)
            scale = sigma
            per_gap, whitened = sigma, sens / (2.0 * rho * sigma)
            guarantee = gaussian_message_guarantee(
                (("two-point difference", sens, 2.0 * rho * sigma),),
                delta,
                note,
                rounds=pre.T,
                calibration="classic" if self.preset == "paper" else "analytic",
            )
        consts = algorithm_schedule(self, cs, sigma)
        constants = LDPTwoPointConstants(
            **{f.name: getattr(consts, f.name) for f in dataclasses.fields(consts)},
            sensitivity=sens,
            difference_bound=2.0 * rho * G,
            noise_scale=scale,
            clip_per_gap=G,
            noise_per_gap=per_gap,
            whitened_sensitivity=whitened,
            mechanism=self.mechanism,
            clip=self.clip,
            diameter=float(cs.domain.diameter),
        )
        return Calibration(
            guarantee, preset=self.preset, requested=(eps, delta), constants=constants
        )

    def reset(self, spec: Any, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        c = self.calibration.typed(LDPTwoPointConstants)
        state = TwoPointState(self.spec.domain, self.R, c, streams.policy)  # type: ignore[attr-defined]
        self.server = TwoPointServer(state, self.mechanism)
        self.client = TwoPointClient(
            convex_spec(self.name, spec),
            c.clip_per_gap,
            self.clip,
            c.noise_per_gap,
            self.mechanism,
            c.whitened_sensitivity,
        )
        self.compiled_kernel = None
        if self.clip:  # without the clip the device refuses a user, which the loop cannot report
            device = (c.clip_per_gap, True, c.noise_per_gap, self.mechanism == "laplace")
            self.compiled_kernel = ConvexLocalKernel(
                ldp_two_point_publish,
                ldp_two_point_randomize,
                ldp_two_point_update,
                (two_point_params(state.d, c, state.domain), *device, np.empty(state.d)),
                (np.zeros((self.R, 2, state.d)),),
                (state.x, state.u),
                MessageLayout(self.server.mechanism, (("difference", ()),)),
            )
