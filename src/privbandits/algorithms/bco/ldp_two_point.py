"""LDP-TwoPoint (Zheng, Cai, Huang, Li & Wang 2020, Algorithm 2): two-point bandit convex
optimization under local differential privacy, around Algorithm 4
(:mod:`privbandits.algorithms.bco.two_point`).

Round ``t``::

    server -> user t : x_{t,1} = x_t + rho u_t,  x_{t,2} = x_t - rho u_t           (public)
    user t           : a = clip(f_t(x_{t,1}) - f_t(x_{t,2}), -2 rho G, 2 rho G)
                       send m_t = a + n_t^T (x_{t,1} - x_{t,2}),  n_t ~ N(0, sigma^2 I_d)
    server           : Algorithm 4 step with D_t = m_t

Privacy (Theorem 5): ``a`` has sensitivity ``4 rho G`` and the added scalar ``2 rho n_t^T u_t`` is
``N(0, 4 rho^2 sigma^2)``, a Gaussian mechanism.  ``paper``: ``sigma = 2G sqrt(2 ln(1.25/delta)) /
epsilon`` (line 1); ``strict``: ``2 rho sigma`` is the analytic Gaussian std for sensitivity
``4 rho G`` (the accounted epsilon is the request).  Laplace variant: ``m_t = a + Lap(4 rho G /
epsilon)`` (a choice of this library: the paper only states that its results extend to Laplace noise).  The guarantee is accounted from the noise actually added.  ``m_t`` is
exactly the two-point difference of the virtual loss ``f_t(x) + n_t^T x``, so the run is Algorithm
4 on those losses, path by path (Theorem 6); the scale-aware step uses ``sqrt(G^2 + sigma^2)``.
The roles are numpy code on the loss-environment driver; the noise comes from the compiled
samplers.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.base import Client, LocalAlgorithm, Server
from privbandits.algorithms.bco.privatizer import privatize_difference
from privbandits.algorithms.bco.problem import convex_spec
from privbandits.algorithms.bco.two_point import SCHEDULES, TwoPointState, two_point_schedule
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.ldp_zheng.calibration import (
    gaussian_message_guarantee,
    laplace_message_guarantee,
    tight_sigma,
)
from privbandits.algorithms.registry import register
from privbandits.core.errors import DataBoundError, TrustBoundaryError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.params import Bool, Choice, Delta, Epsilon, Int, Optional, Positive

__all__ = ["LDPTwoPoint", "TwoPointClient", "TwoPointServer"]


class TwoPointClient(Client):
    """User side: play the two public points, privatize the own loss difference."""

    def __init__(self, bound: float, clip: bool, scale: float, mechanism: str, d: int) -> None:
        self.bound, self.clip, self.scale, self.mechanism, self.d = bound, clip, scale, mechanism, d

    def choose(self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.array(public["points"], dtype=float)

    def randomize(self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray,
                  rewards: np.ndarray, rng: np.random.Generator) -> PrivatizedMessage:
        v = np.ascontiguousarray(rewards, dtype=float)
        pts = np.ascontiguousarray(actions, dtype=float)
        if v.ndim != 2 or v.shape[1] != 2 or not np.isfinite(v).all():
            raise DataBoundError(f"LDP-TwoPoint: a user's losses at the two points must be finite, shape (R, 2); "
                                 f"got shape {v.shape}")
        if not self.clip:
            a = np.abs(v[:, 0] - v[:, 1])
            if a.size and a.max() > self.bound * (1 + 1e-9):
                raise DataBoundError(f"a loss difference {a.max():g} exceeds 2 rho G = {self.bound:g} and clip=False: "
                                     "the losses are not G-Lipschitz as declared (turn clipping on)")
        out = np.empty(v.shape[0])
        privatize_difference(rng, v, pts, self.bound, self.clip, self.scale, self.mechanism == "laplace",
                             np.empty(self.d), out)
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
            raise TrustBoundaryError(f"the server only accepts PrivatizedMessage objects, got {type(message).__name__}")
        if message.mechanism != self.mechanism or set(message.payload) != {"difference"}:
            raise TrustBoundaryError(f"expected a {self.mechanism!r} message with field 'difference', got "
                                     f"{message.mechanism!r} with {tuple(message.payload)}")
        m = np.asarray(message.payload["difference"], dtype=float)
        if m.shape != (self.state.R,):
            raise TrustBoundaryError(f"expected one difference per replication, got shape {m.shape}")
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
        User-side clipping of the difference to ``[-2 rho G, 2 rho G]``.

    References
    ----------
    Zheng, Cai, Huang, Li & Wang (2020), "Locally Differentially Private (Contextual) Bandits
    Learning", NeurIPS, Algorithm 2, Theorems 5-6.
    """

    name = "ldp-twopoint"
    links = ("*",)
    paper = "Zheng et al. 2020 (Alg. 2)"
    constraints: ClassVar = {
        "epsilon": Epsilon, "delta": Delta, "mechanism": Choice("gaussian", "laplace"),
        "preset": Choice("strict", "paper"), "schedule": Choice(*SCHEDULES), "step": Choice("scale_aware", "paper"),
        "rho": Optional(Positive), "sc_modulus": Optional(Positive), "eta_scale": Positive, "clip": Bool(),
        "horizon": Optional(Int(2)),
    }
    test_params: ClassVar = ({}, {"mechanism": "laplace", "schedule": "strongly_convex"},
                             {"preset": "paper", "step": "paper", "clip": False})
    test_envs: ClassVar = ("convex",)

    def __init__(self, epsilon: float = 1.0, delta: float = 0.01, mechanism: str = "gaussian",
                 preset: str = "strict", schedule: str = "convex", step: str = "scale_aware",
                 rho: float | None = None, sc_modulus: float | None = None, eta_scale: float = 1.0,
                 clip: bool = True, horizon: int | None = None) -> None:
        pass

    def calibrate(self, spec: Any) -> Calibration:
        """Noise of the message, its accounted guarantee, and Algorithm 4's constants."""
        cs = convex_spec(self.name, spec)
        eps, delta = self.epsilon, self.delta
        pre = two_point_schedule(self.name, cs, schedule=self.schedule, step=self.step, rho=self.rho,
                                 sc_modulus=self.sc_modulus, eta_scale=self.eta_scale, horizon=self.horizon,
                                 sigma=0.0)
        rho, G = float(pre["rho"]), cs.lipschitz
        sens = 4.0 * rho * G
        note = f"LDP-TwoPoint (Zheng et al. 2020, Alg. 2), preset={self.preset}, difference clipped to +-2 rho G"
        if not self.clip:
            note += "; clip=False: conditional on G-Lipschitz losses"
        if self.mechanism == "laplace":
            b = sens / eps
            scale, sigma = b, math.sqrt(2.0) * b / (2.0 * rho)  # sigma: std of the noise per unit of 2 rho
            guarantee = laplace_message_guarantee((("two-point difference", sens, b),), note + "; Laplace variant")
        else:
            if self.preset == "paper":
                sigma = 2.0 * G * math.sqrt(2.0 * math.log(1.25 / delta)) / eps
            else:
                sigma = tight_sigma(eps, delta, sens) / (2.0 * rho)
            scale = sigma
            guarantee = gaussian_message_guarantee((("two-point difference", sens, 2.0 * rho * sigma),), delta, note)
        consts = two_point_schedule(self.name, cs, schedule=self.schedule, step=self.step, rho=self.rho,
                                    sc_modulus=self.sc_modulus, eta_scale=self.eta_scale, horizon=self.horizon,
                                    sigma=sigma)
        resolved = {**consts, "sensitivity": sens, "difference_bound": 2.0 * rho * G, "noise_scale": scale,
                    "mechanism": self.mechanism}
        return Calibration(guarantee, resolved, self.preset, (eps, delta))

    def reset(self, spec: Any, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        res = self.calibration.resolved
        state = TwoPointState(self.spec.domain, self.R, res, streams.policy)  # type: ignore[attr-defined]
        self.server = TwoPointServer(state, self.mechanism)
        self.client = TwoPointClient(float(res["difference_bound"]), self.clip, float(res["noise_scale"]),
                                     self.mechanism, self.spec.d)
