"""Phased elimination with G-optimal exploration (Lattimore & Szepesvari 2020, Algorithm 12).

``"phased-elimination"`` -- :class:`PhasedElimination`: phases ``l = 1, 2, ...`` with accuracy
``eps_l = 2^{-l}``; each phase plays a G-optimal design of the surviving actions, estimates theta
by least squares on the phase's data only and keeps the actions within ``2 eps_l`` of the
empirical best.  It is the non-private baseline "[24, Ch. 22]" of Hanna et al. (2022), Figures 2
and 3(a), and shares their elimination engine
(:class:`~privbandits.algorithms.hanna.elimination.EliminationCore`) and trusted-curator driver
(:class:`~privbandits.algorithms.hanna.curator.BatchedCurator`): the schedule of a phase is
public, its pulls are played in a uniformly random order, and the exact aggregate driver runs it
too.

References
----------
Lattimore & Szepesvari (2020), *Bandit Algorithms*, Chapter 22, Algorithm 12 and Theorem 22.1;
Hanna, Girgis, Fragouli & Diggavi (2022), Figures 2-3 (the non-private reference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from privbandits.algorithms.calibration import Calibration, Constants
from privbandits.algorithms.hanna.curator import BatchedCurator
from privbandits.algorithms.hanna.elimination import BatchPlan, EliminationCore
from privbandits.algorithms.registry import register
from privbandits.core.params import Choice, Delta, Optional, Positive, Real
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = ["ALLOCATIONS", "LSElimination", "PhasedElimination"]

#: Phase-length rules of :class:`LSElimination`.
ALLOCATIONS: tuple[str, ...] = ("achieved-g", "book")


class LSElimination(EliminationCore):
    """Phases of Lattimore & Szepesvari (2020), Algorithm 12.

    Phase ``l``: ``eps_l = 2^{-l}``; ``T_l(a) = ceil(2 g_l sigma^2 pi_l(a) / eps_l^2 ln(K l (l+1) / delta))``
    where ``g_l`` is the achieved ``max_a ||a||^2_{V(pi_l)^{-1}}`` (``allocation="achieved-g"``;
    equal to ``d`` for the exact G-optimal design the book uses, and it keeps the book's guarantee
    ``||a||^2_{V_l^{-1}} <= eps_l^2 / (2 sigma^2 ln(.))`` for our ``g_l <= 2d`` designs) or the
    book's ``d`` (``allocation="book"``).  Survivors: ``max_b <theta_hat, b - a> <= 2 eps_l``.
    """

    def __init__(
        self,
        A: np.ndarray,
        spec: EnvSpec,
        delta: float,
        sigma: float = 1.0,
        allocation: str = "achieved-g",
        factor: float = 2.0,
        core_set: str = "greedy",
    ) -> None:
        super().__init__(A, spec, factor, core_set)
        self.delta = delta
        self.sigma = sigma
        self.allocation = allocation

    def _allocate(
        self, r: int, i: int, pi: np.ndarray, g: float, n_active: int
    ) -> tuple[np.ndarray, float]:
        eps = 2.0 ** (-i)
        dim = g if self.allocation == "achieved-g" else float(self.spec.d)
        scale = 2.0 * dim * self.sigma**2 / eps**2 * math.log(self.K * i * (i + 1) / self.delta)
        return np.ceil(pi * scale).astype(np.int64), scale

    def _threshold(self, plan: BatchPlan) -> np.ndarray:
        return 2.0 ** (-plan.index.astype(float))


@dataclass(frozen=True)
class PhasedEliminationConstants(Constants):
    """Phased elimination: failure probability ``delta``, how it was set, the design allocation."""

    delta: float
    delta_rule: str
    allocation: str


@register
class PhasedElimination(BatchedCurator):
    """Phased elimination with G-optimal exploration (Lattimore & Szepesvari 2020, Algorithm 12).

    Phase ``l = 1, 2, ...`` until the horizon: ``eps_l = 2^{-l}``; design ``pi_l`` on ``A_l``
    (support ``<= d (d+1) / 2``); play each ``a`` exactly ``T_l(a)`` times (see
    :class:`LSElimination`); least squares on the phase's data; keep ``a`` with
    ``max_{b in A_l} <theta_hat_l, b - a> <= 2 eps_l``.  Once a single action survives it is played
    until the horizon (every later phase would schedule only it).

    Parameters
    ----------
    delta : float, optional
        Failure probability; default ``1/T`` (Theorem 22.1; ``1/2`` at ``T = 1``).
    sigma : float
        Sub-Gaussian parameter of the noise (1 in the book).
    allocation : {"achieved-g", "book"}
        ``achieved-g`` uses the design's achieved ``g_l`` in place of ``d`` in ``T_l(a)`` (keeps
        the book's confidence guarantee with an approximate design); ``book`` uses ``d``.
    design_factor : float
        Design target ``g <= factor * m``.

    References
    ----------
    Lattimore & Szepesvari (2020), *Bandit Algorithms*, Chapter 22, Algorithm 12, Theorem 22.1.
    """

    name = "phased-elimination"
    paper = "Lattimore & Szepesvari 2020 (Alg. 12)"
    constraints: ClassVar = {
        "delta": Optional(Delta),
        "sigma": Positive,
        "allocation": Choice(*ALLOCATIONS),
        "design_factor": Real(1.0, None),
    }
    test_params: ClassVar = ({}, {"delta": 0.05, "sigma": 0.5, "allocation": "book"})
    test_envs: ClassVar[tuple[str, ...]] = ("finite",)

    def __init__(
        self,
        delta: float | None = None,
        sigma: float = 1.0,
        allocation: str = "achieved-g",
        design_factor: float = 2.0,
    ) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Non-private; resolves the failure probability ``delta`` (default ``1/T``)."""
        delta = (
            self.delta
            if self.delta is not None
            else (1.0 / spec.horizon if spec.horizon > 1 else 0.5)
        )
        rule = "given" if self.delta is not None else "1/T"
        return Calibration(
            NON_PRIVATE, constants=PhasedEliminationConstants(delta, rule, self.allocation)
        )

    def make_core(self, A: np.ndarray) -> LSElimination:
        return LSElimination(
            A,
            self.spec,
            float(self.calibration.typed(PhasedEliminationConstants).delta),
            self.sigma,
            self.allocation,
            self.design_factor,
        )
