"""FKM one-point bandit gradient descent (Flaxman, Kalai & McMahan 2005): the one-point black box
Zheng et al. (2020) name for convex Lipschitz losses (Corollary 4, Table 1).

Round ``t``::

    u_t uniform on the sphere;  play x_t = y_t + rho u_t;  observe m_t (the loss at x_t, or its
    privatized value under LDP-OnePoint)
    g_t = (d / rho) m_t u_t;    y_{t+1} = Pi_{(1 - xi) X}(y_t - eta g_t),   xi = rho / r,  y_1 = 0

Defaults from the standard analysis with loss range ``B`` (``max |f|``), Lipschitz constant ``L``,
diameter ``D = 2R``: ``rho = min(r, sqrt(D d B / (3 L)) T^{-1/4})`` and
``eta = D rho / (d B sqrt(T))``: regret ``O(T^{3/4})``.  Under LDP-OnePoint ``B`` is the enlarged
range ``B_tilde`` of the privatized values (Theorem 3), which the wrapper passes in the problem
description.
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
from privbandits.algorithms.bco.steps import fkm_params, fkm_propose, fkm_update
from privbandits.algorithms.calibration import Calibration, Constants
from privbandits.algorithms.convex_kernel import ConvexCuratorKernel
from privbandits.algorithms.registry import register
from privbandits.core.errors import ValidationError
from privbandits.core.params import Int, Optional, Positive
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = ["FKM"]


@dataclass(frozen=True)
class FKMConstants(Constants):
    """FKM: horizon ``T``, perturbation radius ``rho``, shrink ``xi = rho / r``, step ``eta`` and
    the loss bound ``B``."""

    T: int
    rho: float
    xi: float
    eta: float
    loss_bound: float


@register
class FKM(Curator):
    """FKM (Flaxman, Kalai & McMahan 2005): one-point gradient descent with the sphere-sampling
    estimator ``(d / rho) f u``; the convex black box of Zheng et al. (2020), Corollary 4.

    Parameters
    ----------
    rho : float, optional
        Perturbation radius (default: module docstring).
    eta : float, optional
        Step size (default: module docstring).
    horizon : int, optional
        ``T`` of the defaults (default: the run's horizon).

    References
    ----------
    Flaxman, Kalai & McMahan (2005), "Online convex optimization in the bandit setting: gradient
    descent without a gradient", SODA.
    """

    name = "fkm"
    continuous_actions = True
    links = ("*",)
    paper = "Flaxman, Kalai & McMahan 2005"
    constraints: ClassVar = {
        "rho": Optional(Positive),
        "eta": Optional(Positive),
        "horizon": Optional(Int(2)),
    }
    test_params: ClassVar = ({}, {"rho": 0.3, "eta": 0.01})
    test_envs: ClassVar = ("convex",)

    def __init__(
        self, rho: float | None = None, eta: float | None = None, horizon: int | None = None
    ) -> None:
        pass

    def calibrate(self, spec: Any) -> Calibration:
        """Non-private; records the resolved ``rho``, ``xi`` and ``eta``."""
        cs = convex_spec(self.name, spec)
        T = self.horizon if self.horizon is not None else max(cs.horizon, 2)
        lo, hi = cs.loss_range
        B = max(abs(lo), abs(hi))
        L, D, d, r = cs.lipschitz, cs.domain.diameter, cs.d, cs.domain.inner_radius
        rho = (
            self.rho
            if self.rho is not None
            else min(r, math.sqrt(D * d * B / (3.0 * L)) * T**-0.25)
        )
        rho = min(rho, r)
        eta = self.eta if self.eta is not None else D * rho / (d * B * math.sqrt(T))
        return Calibration(NON_PRIVATE, constants=FKMConstants(T, rho, rho / r, eta, B))

    def reset(self, spec: Any, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        c = self.calibration.typed(FKMConstants)
        self.rho_v, self.xi_v, self.eta_v = float(c.rho), float(c.xi), float(c.eta)
        self.y = np.zeros((self.R, self.spec.d))
        self.u = np.zeros((self.R, self.spec.d))
        self._queried: np.ndarray | None = None
        #: The same round compiled, on the same arrays (:mod:`privbandits.algorithms.bco.steps`).
        self.compiled_kernel = ConvexCuratorKernel(
            fkm_propose,
            fkm_update,
            fkm_params(self.spec.d, self.rho_v, self.xi_v, self.eta_v, self.spec.domain),  # type: ignore[attr-defined]
            (self.y, self.u),
            1,
        )

    def select(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        """The round's query points; ``contexts`` (the users' loss parameters) are checked, not read
        (``None``: none given)."""
        if contexts is not None:
            check_loss_parameters(self.name, contexts, self.R, self.spec.param_dim)  # type: ignore[attr-defined]
        self.u[...] = directions(self.streams.policy, self.R, self.spec.d)
        self._queried = (self.y + self.rho_v * self.u)[:, None, :]
        return self._queried.copy()

    def update(
        self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        check_loss_parameters(self.name, contexts, self.R, self.spec.param_dim)  # type: ignore[attr-defined]
        pts = check_points(self.name, actions, self.R, 1, self.spec.domain)  # type: ignore[attr-defined]
        m = check_losses(self.name, rewards, self.R, 1)[:, 0]
        if self._queried is None or not np.array_equal(pts, self._queried):
            raise ValidationError(
                f"{self.name}: update must receive the losses at the points this run queried "
                "last (select)"
            )
        g = (self.spec.d / self.rho_v) * m[:, None] * self.u
        self.y[...] = self.spec.domain.project(self.y - self.eta_v * g, self.xi_v)  # type: ignore[attr-defined]

    def estimate(self) -> np.ndarray | None:
        return self.y.copy()
