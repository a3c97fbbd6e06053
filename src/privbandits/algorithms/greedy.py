"""Non-private twins of LDP-OLS and LDP-SGD: greedy OLS and greedy online SGD.

The same estimators as the private algorithms (:mod:`privbandits.algorithms.ldp_glb.estimators`)
fed raw statistics: ``(x x^T, r x)`` with a constant ridge shift for OLS, the raw GLM gradient
``(mu(x^T theta) - r) x`` for SGD.  In the multi-parameter setting they follow Algorithm 2's
schedule (round-robin warm-up, optional elimination (4.1) on the frozen warm-up estimates, then
greedy) but, having nothing to hide, update only the pulled arm.

References
----------
Han, Liang, Wang, Zhang (2021), "Generalized Linear Bandits with Local Differential Privacy",
NeurIPS, Algorithms 1-2 without privatization; greedy OLS as in Bastani, Bayati & Khosravi (2021).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.algorithms.ldp_glb.estimators import (
    STEP_SCHEDULES,
    OLSEstimator,
    SGDEstimator,
    glm_gradient,
    ols_statistics,
    step_size,
    vecdot,
)
from privbandits.algorithms.ldp_glb.multi import check_warmup_order, eliminate, warmup_arm
from privbandits.algorithms.ldp_glb.presets import default_s0
from privbandits.algorithms.ldp_glb.protocol import TieBreaker
from privbandits.algorithms.ldp_glb.randomizers import unit_vectors
from privbandits.algorithms.registry import register
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_choice, check_int, check_nonnegative, check_positive

__all__ = ["GreedyOLS", "GreedySGD"]


class _Greedy(Curator):
    """Greedy choice with Algorithm 2's warm-up and elimination in the multi setting."""

    settings = ("single", "multi")
    paper = "Han et al. 2021 (non-private)"

    def _check_schedule(self, s0: int | None, h: float | None, warmup_order: str) -> None:
        self.s0 = None if s0 is None else check_int("s0", s0, 1)
        self.h = None if h is None else check_positive("h", h)
        self.warmup_order = check_warmup_order(warmup_order)

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        self.multi = spec.setting == "multi"
        self._s0 = (
            (self.s0 if self.s0 is not None else default_s0(spec.horizon, spec.K))
            if self.multi
            else 0
        )
        self.n_warmup = spec.K * self._s0
        self._rows = np.arange(self.R)
        self._ties = TieBreaker()
        lead = (self.R, spec.K) if self.multi else (self.R,)
        self.theta_warm = np.zeros(lead + (spec.d,))
        self._build(lead, spec, streams)

    def _build(self, lead: tuple[int, ...], spec: EnvSpec, streams: Streams) -> None:
        raise NotImplementedError

    @property
    def theta(self) -> np.ndarray:
        raise NotImplementedError

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        """Greedy arm (single), or warm-up arm / eliminated greedy arm (multi)."""
        if not self.multi:
            return self._ties.argmax(
                np.matmul(contexts, self.theta[:, :, None])[:, :, 0], self.streams.policy
            )
        if t < self.n_warmup:
            return np.full(self.R, warmup_arm(t, self.spec.K, self._s0, self.warmup_order))
        scores = vecdot(contexts[:, None, :], self.theta)
        if self.h is not None:
            scores = np.where(
                eliminate(contexts, self.theta_warm, self.spec.link, self.h), scores, -np.inf
            )
        return self._ties.argmax(scores, self.streams.policy)

    def _pulled(self, contexts: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, Any]:
        """Feature of the pulled arm (R, d) and the estimator index of its slot (None = single)."""
        if self.multi:
            return contexts, (self._rows, actions)
        return contexts[self._rows, actions], None

    def _after_update(self, t: int) -> None:
        if self.multi and t + 1 == self.n_warmup:
            self.theta_warm = np.array(self.theta, copy=True)

    def estimate(self) -> np.ndarray:
        return self.theta


@register
class GreedyOLS(_Greedy):
    """Greedy ridge regression: ``theta = (sum x x^T + lam I)^{-1} sum r x``, arm = argmax ``x^T
    theta``.

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

    def __init__(
        self,
        lam: float = 1.0,
        s0: int | None = None,
        h: float | None = None,
        warmup_order: str = "round_robin",
    ) -> None:
        super().__init__(lam=lam, s0=s0, h=h, warmup_order=warmup_order)
        self.lam = check_positive("lam", lam)
        self._check_schedule(s0, h, warmup_order)

    def _build(self, lead: tuple[int, ...], spec: EnvSpec, streams: Streams) -> None:
        self.est = OLSEstimator(lead, spec.d)

    @property
    def theta(self) -> np.ndarray:
        return self.est.theta

    def update(
        self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        """Add the raw ``(x x^T, r x)`` (eq. 3.3 without noise) and re-solve (eq. 3.4)."""
        x, index = self._pulled(contexts, actions)
        M, u = ols_statistics(x, rewards)
        self.est.add(M, u, index)
        self.est.solve(self.lam)
        self._after_update(t)


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
        super().__init__(
            eta0=eta0,
            t0=t0,
            step_schedule=step_schedule,
            init=init,
            ridge=ridge,
            project_radius=project_radius,
            s0=s0,
            h=h,
            warmup_order=warmup_order,
        )
        self.eta0 = check_positive("eta0", eta0)
        self.t0 = check_nonnegative("t0", t0)
        self.step_schedule = check_choice("step_schedule", step_schedule, STEP_SCHEDULES)
        self.init = check_choice("init", init, ("zero", "random_unit"))
        self.ridge = check_nonnegative("ridge", ridge)
        self.project_radius = (
            None if project_radius is None else check_positive("project_radius", project_radius)
        )
        self._check_schedule(s0, h, warmup_order)

    def _build(self, lead: tuple[int, ...], spec: EnvSpec, streams: Streams) -> None:
        if self.init == "random_unit":
            theta0 = unit_vectors(streams.server, lead, spec.d)
        else:
            theta0 = np.zeros(lead + (spec.d,))
        self.est = SGDEstimator(theta0, self.ridge, self.project_radius)
        self.counts = np.zeros(lead)

    @property
    def theta(self) -> np.ndarray:
        return self.est.theta

    def update(
        self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        """One SGD step on the pulled arm's raw gradient (eq. 3.5-3.6 without privatization)."""
        x, index = self._pulled(contexts, actions)
        theta = self.theta if index is None else self.theta[index]
        g = glm_gradient(x, rewards, theta, self.spec.link)
        if index is None:
            self.counts += 1
            n: Any = self.counts[0]
        else:
            self.counts[index] += 1
            n = self.counts[index]
        self.est.step(g, step_size(n, self.eta0, self.t0, self.step_schedule), index)
        self._after_update(t)
