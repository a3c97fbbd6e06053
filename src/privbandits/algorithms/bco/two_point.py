"""Two-point bandit gradient descent (Agarwal, Dekel & Xiao 2010): Algorithm 4 of Zheng et al. 2020.

Round ``t`` (Zheng, Cai, Huang, Li & Wang 2020, appendix C, as reconstructed from the main text
and the cited source)::

    u_t uniform on the sphere;  play x_{t,1} = x_t + rho u_t,  x_{t,2} = x_t - rho u_t
    receive D_t  (non-private: f_t(x_{t,1}) - f_t(x_{t,2}))
    g_t = (d / (2 rho)) D_t u_t;     x_{t+1} = Pi_{(1 - xi) X}(x_t - eta_t g_t),   xi = rho / r

``(1 - xi) X + rho B subset X``, so both query points are feasible.  Schedules: convex,
``eta = 1/sqrt(T)`` (paper) or the scale-aware ``eta = D / (d sqrt(G^2 + sigma^2) sqrt(T))``
(``sigma`` the std of a privatizing noise vector, 0 here); strongly convex, ``eta_t = 1/(mu t)``
(Theorem 6).  ``rho = ln(T) / T`` (Algorithm 2, line 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.algorithms.bco.problem import (
    check_loss_parameters,
    check_losses,
    check_points,
    convex_spec,
    directions,
)
from privbandits.algorithms.bco.steps import two_point_params, two_point_propose, two_point_update
from privbandits.algorithms.calibration import Calibration, Constants
from privbandits.algorithms.convex_kernel import ConvexCuratorKernel
from privbandits.algorithms.registry import register
from privbandits.core.convex import ConvexSpec, Domain
from privbandits.core.errors import ValidationError
from privbandits.core.params import Choice, Int, Optional, Positive
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = [
    "TwoPointBCO",
    "TwoPointConstants",
    "TwoPointState",
    "algorithm_schedule",
    "two_point_schedule",
]

#: Step-size schedules of Algorithm 4.
SCHEDULES: tuple[str, ...] = ("convex", "strongly_convex")


@dataclass(frozen=True)
class TwoPointConstants(Constants):
    """Algorithm 4 (Zheng et al. 2020): horizon ``T``, perturbation radius ``rho``, shrink
    ``xi = rho / r``, the schedule, the step rule and its multiplier, the std ``sigma`` of a
    privatizing noise vector (0 when non-private), and either the strongly convex modulus ``mu``
    (``eta`` None) or the constant step ``eta`` (``mu`` None)."""

    T: int
    rho: float
    xi: float
    schedule: str
    step: str
    eta_scale: float
    sigma: float
    mu: float | None
    eta: float | None


def two_point_schedule(
    name: str,
    spec: ConvexSpec,
    *,
    schedule: str,
    step: str,
    rho: float | None,
    sc_modulus: float | None,
    eta_scale: float,
    horizon: int | None,
    sigma: float,
) -> TwoPointConstants:
    """Resolved constants of Algorithm 4: ``rho``, ``xi``, and ``eta`` (convex) or ``mu`` (strongly
    convex) for a noise-vector std ``sigma`` (0 when non-private)."""
    T = horizon if horizon is not None else max(spec.horizon, 2)
    r = spec.domain.inner_radius
    rho_v = rho if rho is not None else math.log(T) / T
    if not 0.0 < rho_v < r:
        raise ValidationError(
            f"{name}: rho={rho_v:g} must lie in (0, r) with r={r:g} the inner radius of the domain "
            "(both query points must stay feasible)"
        )
    mu: float | None = None
    eta: float | None = None
    if schedule == "strongly_convex":
        mu = sc_modulus if sc_modulus is not None else spec.sc_modulus
        if mu <= 0.0:
            raise ValidationError(
                f"{name}: schedule='strongly_convex' needs sc_modulus > 0 (the problem declares "
                f"mu={spec.sc_modulus:g}); pass sc_modulus or use schedule='convex'"
            )
    elif step == "paper":
        eta = eta_scale / math.sqrt(T)
    else:
        G, D, d = spec.lipschitz, spec.domain.diameter, spec.d
        eta = eta_scale * D / (d * math.sqrt(G * G + sigma * sigma) * math.sqrt(T))
    return TwoPointConstants(T, rho_v, rho_v / r, schedule, step, eta_scale, sigma, mu, eta)


def algorithm_schedule(alg: Any, spec: ConvexSpec, sigma: float) -> TwoPointConstants:
    """:func:`two_point_schedule` at noise ``sigma`` for the parameters of a two-point algorithm
    ``alg`` (its ``schedule``, ``step``, ``rho``, ``sc_modulus``, ``eta_scale``, ``horizon``)."""
    keys = ("schedule", "step", "rho", "sc_modulus", "eta_scale", "horizon")
    return two_point_schedule(alg.name, spec, sigma=sigma, **{k: getattr(alg, k) for k in keys})


class TwoPointState:
    """The iterate of Algorithm 4 for ``R`` replications (server side of LDP-TwoPoint).

    ``x`` and ``u`` are updated in place: the compiled round (:mod:`privbandits.algorithms.bco.steps`)
    works on the same arrays.
    """

    def __init__(
        self, domain: Domain, R: int, consts: TwoPointConstants, rng: np.random.Generator
    ) -> None:
        self.domain, self.R, self.rng = domain, R, rng
        self.d = domain.d
        self.rho, self.xi = float(consts.rho), float(consts.xi)
        self.eta, self.mu, self.eta_scale = consts.eta, consts.mu, float(consts.eta_scale)
        self.x = np.zeros((R, self.d))
        self.u = np.zeros((R, self.d))
        self.drawn = False

    def query(self) -> np.ndarray:
        """Draw ``u_t`` (once per round) and return ``(x_t + rho u_t, x_t - rho u_t)``, ``(R, 2, d)``."""
        if not self.drawn:
            self.u[...] = directions(self.rng, self.R, self.d)
            self.drawn = True
        return np.stack([self.x + self.rho * self.u, self.x - self.rho * self.u], axis=1)

    def step(self, t: int, D: np.ndarray, u: np.ndarray | None = None) -> None:
        """Gradient step with the (possibly privatized) differences ``D`` (R,) of round ``t`` (0-based),
        along the round's direction (``u``: the direction of points queried earlier)."""
        if u is None:
            if not self.drawn:
                raise ValidationError(
                    "two-point BCO: a difference arrived before the round's points were queried"
                )
            u = self.u
        eta = self.eta if self.mu is None else self.eta_scale / (self.mu * (t + 1))
        assert eta is not None  # a constant step or the strongly convex schedule
        g = (self.d / (2.0 * self.rho)) * np.asarray(D, dtype=float)[:, None] * u
        self.x[...] = self.domain.project(self.x - eta * g, self.xi)
        self.drawn = False


@register
class TwoPointBCO(Curator):
    """Two-point bandit gradient descent (Agarwal, Dekel & Xiao 2010; Algorithm 4 of Zheng et al.
    2020), the non-private black box of LDP-TwoPoint.

    Parameters
    ----------
    schedule : {"convex", "strongly_convex"}
        Step schedule: constant ``eta`` or ``eta_t = 1 / (mu t)``.
    step : {"scale_aware", "paper"}
        Convex step: ``D / (d G sqrt(T))`` or the paper's ``1 / sqrt(T)``.
    rho : float, optional
        Perturbation radius (default ``ln(T) / T``).
    sc_modulus : float, optional
        ``mu`` of the strongly convex schedule (default: the problem's declared modulus).
    eta_scale : float
        Multiplier on the step.
    horizon : int, optional
        ``T`` of the constants (default: the run's horizon).

    References
    ----------
    Agarwal, Dekel & Xiao (2010), "Optimal Algorithms for Online Convex Optimization with Multi-Point
    Bandit Feedback", COLT.  Zheng, Cai, Huang, Li & Wang (2020), NeurIPS, Algorithm 4.
    """

    name = "two-point-bco"
    continuous_actions = True
    links = ("*",)
    paper = "Agarwal, Dekel & Xiao 2010 (Zheng et al. 2020, Alg. 4)"
    constraints: ClassVar = {
        "schedule": Choice(*SCHEDULES),
        "step": Choice("scale_aware", "paper"),
        "rho": Optional(Positive),
        "sc_modulus": Optional(Positive),
        "eta_scale": Positive,
        "horizon": Optional(Int(2)),
    }
    test_params: ClassVar = ({}, {"schedule": "strongly_convex"}, {"step": "paper", "rho": 0.05})
    test_envs: ClassVar = ("convex",)

    def __init__(
        self,
        schedule: str = "convex",
        step: str = "scale_aware",
        rho: float | None = None,
        sc_modulus: float | None = None,
        eta_scale: float = 1.0,
        horizon: int | None = None,
    ) -> None:
        pass

    def calibrate(self, spec: Any) -> Calibration:
        """Non-private; records the resolved ``rho``, ``xi`` and step."""
        cs = convex_spec(self.name, spec)
        return Calibration(
            NON_PRIVATE,
            constants=algorithm_schedule(self, cs, 0.0),
        )

    def reset(self, spec: Any, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        self.state = TwoPointState(
            self.spec.domain,
            self.R,
            self.calibration.typed(TwoPointConstants),
            streams.policy,
        )
        self._queried: np.ndarray | None = None
        self._u: np.ndarray | None = None
        #: The same round compiled, on the same arrays (:mod:`privbandits.algorithms.bco.steps`).
        self.compiled_kernel = ConvexCuratorKernel(
            two_point_propose,
            two_point_update,
            two_point_params(
                self.spec.d, self.calibration.typed(TwoPointConstants), self.spec.domain
            ),  # type: ignore[attr-defined]
            (self.state.x, self.state.u),
            2,
        )

    def select(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        """The round's query points; ``contexts`` (the users' loss parameters) are checked, not read
        (``None``: none given)."""
        if contexts is not None:
            check_loss_parameters(self.name, contexts, self.R, self.spec.param_dim)  # type: ignore[attr-defined]
        pts = self.state.query()
        self._queried, self._u = pts, self.state.u.copy()
        return pts.copy()

    def update(
        self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        """Algorithm 4's step with the losses observed at ``actions``, which must be the points this
        run queried last (their direction is the step's)."""
        check_loss_parameters(self.name, contexts, self.R, self.spec.param_dim)  # type: ignore[attr-defined]
        pts = check_points(self.name, actions, self.R, 2, self.spec.domain)  # type: ignore[attr-defined]
        losses = check_losses(self.name, rewards, self.R, 2)
        if self._queried is None or not np.array_equal(pts, self._queried):
            raise ValidationError(
                f"{self.name}: update must receive the losses at the points this run queried "
                "last (select)"
            )
        self.state.step(t, losses[:, 0] - losses[:, 1], self._u)

    def estimate(self) -> np.ndarray | None:
        return self.state.x.copy()
