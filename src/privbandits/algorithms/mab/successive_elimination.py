"""Successive elimination: the best-arm-identification black box of the one-point reduction.

Zheng, Cai, Huang, Li & Wang (2020), appendix B, also cover best-arm identification (BAI).
Successive elimination (Even-Dar, Mannor & Mansour 2006, Algorithm 3, in its sub-Gaussian form)
samples the surviving arms in turn; after each full cycle, with ``n`` samples per surviving arm and
radius ``c_n = s sqrt(2 ln(4 K n^2 / alpha) / n)``, it eliminates every arm ``i`` with

    max_j mu_hat_j - mu_hat_i > 2 c_n.

With probability ``>= 1 - alpha`` the best arm is never eliminated (union bound over arms and
cycles, ``sum_n 1/n^2 < 2``), and when one arm remains it is the best; the bandit then plays it.
Through the reduction ``s = sqrt(s_0^2 + sigma^2)`` is the privatized values' scale.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import CuratorKernel
from privbandits.algorithms.mab.calibration import EliminationConstants
from privbandits.algorithms.mab.scales import reward_scale
from privbandits.algorithms.registry import register
from privbandits.core.params import Optional, Positive, Real
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = ["SuccessiveElimination", "elimination_radius"]


@nb.njit(cache=True)
def elimination_radius(
    s: float, K: int, n: float, alpha: float
) -> float:  # pragma: no cover - compiled
    """``c_n = s sqrt(2 ln(4 K n^2 / alpha) / n)``."""
    return s * math.sqrt(2.0 * math.log(4.0 * K * n * n / alpha) / n)


@nb.njit(cache=True)
def round_robin_arm(
    n: np.ndarray, active: np.ndarray, r: int
) -> int:  # pragma: no cover - compiled
    """The surviving arm (``active[r, k] > 0``) with the fewest samples ``n[r, k]``, lowest index
    first: a round-robin cycle over the survivors (successive elimination and DP-SE)."""
    best, arg = np.inf, 0
    for k in range(n.shape[1]):
        if active[r, k] > 0.0 and n[r, k] < best:
            best, arg = n[r, k], k
    return arg


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """The surviving arm with the fewest samples (lowest index first): a round-robin cycle."""
    n, S, active = state
    return round_robin_arm(n, active, r)


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    s, alpha = params
    n, S, active = state
    K = n.shape[1]
    n[r, a] += 1.0
    S[r, a] += y
    lo_n, hi_n, top, alive = np.inf, -np.inf, -np.inf, 0
    for k in range(K):
        if active[r, k] > 0.0:
            alive += 1
            lo_n = min(lo_n, n[r, k])
            hi_n = max(hi_n, n[r, k])
            top = max(top, S[r, k] / n[r, k]) if n[r, k] > 0 else top
    if alive <= 1 or lo_n != hi_n:  # one arm left, or the cycle is not complete
        return
    c = elimination_radius(s, K, lo_n, alpha)
    for k in range(K):
        if active[r, k] > 0.0 and top - S[r, k] / n[r, k] > 2.0 * c:
            active[r, k] = 0.0


@register
class SuccessiveElimination(Curator):
    """Successive elimination (Even-Dar et al. 2006) for best-arm identification and regret; the
    BAI black box for Zheng et al. (2020), appendix B.

    Parameters
    ----------
    alpha : float
        Failure probability of the identification, in (0, 1).
    scale : float, optional
        Sub-Gaussian scale ``s`` (default: the problem's declared noise scale, at most half the
        reward range).

    References
    ----------
    Even-Dar, Mannor & Mansour (2006), "Action Elimination and Stopping Conditions for the
    Multi-Armed Bandit and Reinforcement Learning Problems", JMLR 7, Algorithm 3.
    """

    name = "successive-elimination"
    links = ("*",)
    paper = "Even-Dar et al. 2006"
    constraints: ClassVar = {
        "alpha": Real(0.0, 1.0, low_open=True, high_open=True),
        "scale": Optional(Positive),
    }
    test_params: ClassVar = ({}, {"alpha": 0.5, "scale": 0.05})
    test_envs: ClassVar = ("finite",)

    def __init__(self, alpha: float = 0.05, scale: float | None = None) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Non-private; records the resolved sub-Gaussian scale."""
        s = self.scale if self.scale is not None else reward_scale(spec)
        return Calibration(NON_PRIVATE, constants=EliminationConstants(s, self.alpha))

    def build_kernel(self) -> CuratorKernel:
        R, K = self.R, self.spec.K
        state = (np.zeros((R, K)), np.zeros((R, K)), np.ones((R, K)))
        return CuratorKernel(
            _select,
            _update,
            (float(self.calibration.typed(EliminationConstants).scale), self.alpha),
            state,
            allocates=False,
        )

    def surviving(self) -> np.ndarray:
        """Which arms are still in the race, ``(R, K)`` boolean."""
        assert self.kernel is not None
        return self.kernel.state[2] > 0.0

    def recommendation(self) -> np.ndarray:
        """The identified arm per replication: the surviving arm of largest empirical mean, ``(R,)``."""
        assert self.kernel is not None
        n, S, active = self.kernel.state
        means = np.where((active > 0.0) & (n > 0), S / np.maximum(n, 1.0), -np.inf)
        return means.argmax(axis=1)

    def done(self) -> np.ndarray:
        """Whether a single arm survives, ``(R,)``."""
        return self.surviving().sum(axis=1) == 1
