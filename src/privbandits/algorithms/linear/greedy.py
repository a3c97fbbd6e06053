"""Non-private twins of LDP-OLS and LDP-SGD: greedy OLS and greedy online SGD (compiled).

The same estimator steps as the private servers (:mod:`privbandits.algorithms.ldp_glb.estimators`)
and the same arm choice as the private clients (:mod:`privbandits.algorithms.ldp_glb.policy`),
fed raw statistics: ``(x x^T, r x)`` with a constant ridge shift for OLS, the raw GLM gradient
``(mu(x^T theta) - r) x`` for SGD.  In the multi-parameter setting they follow Algorithm 2's
schedule (public warm-up of ``s0`` pulls per arm, optional elimination (4.1) on the frozen warm-up
estimates, then greedy) but, having nothing to hide, update only the pulled arm.

References
----------
Han, Liang, Wang, Zhang (2021), "Generalized Linear Bandits with Local Differential Privacy",
NeurIPS, Algorithms 1-2 without privatization; greedy OLS as in Bastani, Bayati & Khosravi (2021).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numba as nb
import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import Calibration, Constants
from privbandits.algorithms.kernel import CuratorKernel
from privbandits.algorithms.ldp_glb.calibration import default_s0
from privbandits.algorithms.ldp_glb.estimators import (
    STEP_SCHEDULES,
    glm_gradient,
    ols_accumulate,
    ols_solve,
    sgd_step,
    solver_scratch,
    step_size,
)
from privbandits.algorithms.ldp_glb.policy import WARMUP_ORDERS, choose_multi, choose_single
from privbandits.algorithms.ldp_glb.sgd import INITS, random_unit
from privbandits.algorithms.registry import register
from privbandits.core.params import Choice, Int, NonNegative, Optional, Positive
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = ["GreedyOLS", "GreedyParams", "GreedySGD"]


class GreedyParams(NamedTuple):
    """Resolved constants of a greedy twin's kernel."""

    K: int
    n_warmup: int  # K s0 (0 in the single-parameter setting)
    s0: int
    blocks: bool
    h: float  # elimination threshold (inf = none)
    link: int
    lam: float  # OLS ridge shift
    eta0: float
    t0: float
    inv_sqrt: bool
    ridge: float
    rho: float  # projection radius (inf = none)


@nb.njit(cache=True, inline="always")
def _freeze_after_warmup(p, theta, theta_warm, r, t):  # type: ignore[no-untyped-def]  # pragma: no cover
    if t + 1 == p.n_warmup:
        for k in range(theta.shape[1]):
            for i in range(theta.shape[2]):
                theta_warm[r, k, i] = theta[r, k, i]


# -- greedy OLS: state (theta, theta_warm, S_M, S_u, A, stat) -----------------------------------
@nb.njit(cache=True, inline="always")
def _ols_step(p, state, r, t, x, k, y):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """OLS_UPDATE with the raw statistics ``(x x^T, y x)`` (written into the flat scratch
    ``stat[r]`` in the message layout) and the constant shift ``lam``."""
    theta, theta_warm, S_M, S_u, A, stat = state
    d = x.shape[0]
    for i in range(d):
        stat[r, d * d + i] = y * x[i]
        for j in range(d):
            stat[r, i * d + j] = x[i] * x[j]
    ols_accumulate(S_M, S_u, r, k, stat[r], 0, d * d)
    ols_solve(S_M, S_u, theta, A, r, k, p.lam)
    _freeze_after_warmup(p, theta, theta_warm, r, t)


@nb.njit(cache=True)
def _ols_update_single(p, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    _ols_step(p, state, r, t, X[a], 0, y)


@nb.njit(cache=True)
def _ols_update_multi(p, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    _ols_step(p, state, r, t, X, a, y)


# -- greedy SGD: state (theta, theta_warm, counts, g) ---------------------------------------------
@nb.njit(cache=True, inline="always")
def _sgd_step(p, state, r, t, x, k, y):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """SGD_UPDATE with the raw gradient, step ``eta0 / (n_k + t0)`` (``n_k`` = updates of ``k``)."""
    theta, theta_warm, counts, g = state
    glm_gradient(p.link, x, y, theta, r, k, g[r])
    counts[r, k] += 1.0
    sgd_step(
        theta, r, k, g[r], 0, step_size(counts[r, k], p.eta0, p.t0, p.inv_sqrt, 1.0), p.ridge, p.rho
    )
    _freeze_after_warmup(p, theta, theta_warm, r, t)


@nb.njit(cache=True)
def _sgd_update_single(p, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    _sgd_step(p, state, r, t, X[a], 0, y)


@nb.njit(cache=True)
def _sgd_update_multi(p, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    _sgd_step(p, state, r, t, X, a, y)


class _Greedy(Curator):
    """Greedy choice with Algorithm 2's warm-up and elimination in the multi setting."""

    settings = ("single", "multi")
    paper = "Han et al. 2021 (non-private)"
    constraints: ClassVar = {
        "s0": Optional(Int(1)),
        "h": Optional(Positive),
        "warmup_order": Choice(*WARMUP_ORDERS),
    }

    #: The compiled updates: single-parameter setting, multi-parameter setting.
    updates: ClassVar[tuple[Any, Any]]

    s0: int | None
    h: float | None
    warmup_order: str

    def calibrate(self, spec: EnvSpec) -> Calibration:
        s0 = 0
        if spec.setting == "multi":
            s0 = self.s0 if self.s0 is not None else default_s0(spec.horizon, spec.K)
        return Calibration(NON_PRIVATE, constants=WarmupConstants(s0, spec.K * s0))

    def _params(
        self,
        lam: float = 1.0,
        eta0: float = 1.0,
        t0: float = 1.0,
        inv_sqrt: bool = False,
        ridge: float = 0.0,
        rho: float = math.inf,
    ) -> GreedyParams:
        spec, c = self.spec, self.calibration.typed(WarmupConstants)
        return GreedyParams(
            K=spec.K,
            n_warmup=int(c.n_warmup),
            s0=max(1, int(c.s0)),
            blocks=self.warmup_order == "blocks",
            h=math.inf if self.h is None else float(self.h),
            link=spec.link.code,
            lam=float(lam),
            eta0=float(eta0),
            t0=float(t0),
            inv_sqrt=bool(inv_sqrt),
            ridge=float(ridge),
            rho=float(rho),
        )

    def _theta(self, theta0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``theta (R, K_est, d)`` and ``theta_warm (R, K_est, d)``."""
        K_est = self.spec.K if self.spec.setting == "multi" else 1
        shape = (self.R, K_est, self.spec.d)
        theta = np.zeros(shape) if theta0 is None else theta0
        return theta, np.zeros(shape)

    def _initial_theta(self) -> np.ndarray | None:
        """The initial iterate ``(R, K_est, d)`` (None: zeros)."""
        return None

    def _statistics(self, R: int, K_est: int, d: int) -> tuple[np.ndarray, ...]:
        """The family's state after ``(theta, theta_warm)``."""
        raise NotImplementedError

    def _kernel_params(self) -> GreedyParams:
        raise NotImplementedError

    def build_kernel(self) -> CuratorKernel:
        """The greedy choice and the family's update on ``(theta, theta_warm, *statistics)``; the
        estimate is ``theta`` (multi) or its one row (single)."""
        theta, theta_warm = self._theta(self._initial_theta())
        state = (theta, theta_warm, *self._statistics(*theta.shape))
        params = self._kernel_params()
        if self.spec.setting == "multi":
            return CuratorKernel(
                choose_multi,
                self.updates[1],
                params,
                state,
                estimate=lambda: theta,
                allocates=False,
            )
        return CuratorKernel(
            choose_single,
            self.updates[0],
            params,
            state,
            estimate=lambda: theta[:, 0],
            allocates=False,
        )

    @property
    def theta_warm(self) -> np.ndarray:
        """The estimates frozen at the end of the warm-up (multi; zeros before)."""
        return self.kernel.state[1]  # type: ignore[union-attr]


@dataclass(frozen=True)
class WarmupConstants(Constants):
    """Warm-up pulls per arm ``s0`` and in total (Han et al. 2021, Algorithm 2; 0 in the
    single-parameter setting)."""

    s0: int
    n_warmup: int


@register
class GreedyOLS(_Greedy):
    """Greedy ridge regression: ``theta = (sum x x^T + lam I)^{-1} sum r x``, arm = argmax
    ``x^T theta``.

    Parameters
    ----------
    lam : float
        Constant ridge shift (> 0; the private twin uses ``c_tilde sqrt(t)``).
    s0 : int, optional
        Multi: warm-up pulls per arm (None = ``max(1, min(3000, T // 10) // K)``).
    h : float, optional
        Multi: elimination threshold of eq. (4.1) (None = off).
    warmup_order : {"round_robin", "blocks"}
    """

    name = "greedy-ols"
    links = ("identity",)
    updates = (_ols_update_single, _ols_update_multi)
    constraints: ClassVar = {"lam": Positive}
    test_params: ClassVar = ({}, {"lam": 0.5, "s0": 2, "h": 0.5, "warmup_order": "blocks"})

    lam: float

    def __init__(
        self,
        lam: float = 1.0,
        s0: int | None = None,
        h: float | None = None,
        warmup_order: str = "round_robin",
    ) -> None:
        pass

    def _statistics(self, R: int, K_est: int, d: int) -> tuple[np.ndarray, ...]:
        """The ridge sums per arm, the solver's scratch and the round's statistic."""
        return (
            np.zeros((R, K_est, d, d)),
            np.zeros((R, K_est, d)),
            solver_scratch(R, d),
            np.zeros((R, d * d + d)),
        )

    def _kernel_params(self) -> GreedyParams:
        return self._params(lam=self.lam)


@register
class GreedySGD(_Greedy):
    """Greedy online SGD on the GLM loss: ``theta <- theta - eta_n (mu(x^T theta) - r) x``.

    Parameters
    ----------
    eta0, t0 : float
        Step ``eta_n = eta0 / (n + t0)`` (or ``/ sqrt``), ``n`` = updates of the estimate
        (per arm in the multi setting).
    step_schedule : {"inv_t", "inv_sqrt_t"}
    init : {"zero", "random_unit"}
        Initial iterate.
    ridge : float
        Ridge ``lambda >= 0``.
    project_radius : float, optional
        Projection radius (None = off).
    s0, h, warmup_order
        Multi-parameter schedule (see :class:`GreedyOLS`).
    """

    name = "greedy-sgd"
    links = ("*",)
    updates = (_sgd_update_single, _sgd_update_multi)
    constraints: ClassVar = {
        "eta0": Positive,
        "t0": NonNegative,
        "step_schedule": Choice(*STEP_SCHEDULES),
        "init": Choice(*INITS),
        "ridge": NonNegative,
        "project_radius": Optional(Positive),
    }
    test_params: ClassVar = (
        {},
        {
            "init": "random_unit",
            "ridge": 0.1,
            "project_radius": 1.0,
            "step_schedule": "inv_sqrt_t",
            "s0": 2,
            "h": 0.5,
        },
    )

    eta0: float
    t0: float
    step_schedule: str
    init: str
    ridge: float
    project_radius: float | None

    def __init__(
        self,
        eta0: float = 5.0,
        t0: float = 1.0,
        step_schedule: str = "inv_t",
        init: str = "zero",
        ridge: float = 0.0,
        project_radius: float | None = None,
        s0: int | None = None,
        h: float | None = None,
        warmup_order: str = "round_robin",
    ) -> None:
        pass

    def _initial_theta(self) -> np.ndarray | None:
        if self.init != "random_unit":
            return None
        K_est = self.spec.K if self.spec.setting == "multi" else 1
        return random_unit(self.streams.server, (self.R, K_est, self.spec.d))

    def _statistics(self, R: int, K_est: int, d: int) -> tuple[np.ndarray, ...]:
        """The update counts per arm and the gradient scratch."""
        return (np.zeros((R, K_est)), np.zeros((R, d)))

    def _kernel_params(self) -> GreedyParams:
        return self._params(
            eta0=self.eta0,
            t0=self.t0,
            inv_sqrt=self.step_schedule == "inv_sqrt_t",
            ridge=self.ridge,
            rho=math.inf if self.project_radius is None else self.project_radius,
        )
