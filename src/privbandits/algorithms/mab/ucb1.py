"""UCB for sub-Gaussian rewards: the stochastic-MAB black box of the one-point reduction.

Zheng, Cai, Huang, Li & Wang (2020), appendix B.1, instantiate their Algorithm 1 with a stochastic
multi-armed bandit algorithm; this is UCB1 (Auer, Cesa-Bianchi & Fischer 2002) in its sub-Gaussian
form (Lattimore & Szepesvari 2020, Algorithm 3 with ``delta_t = 1/t^2``): play every arm once, then

    a_t = argmax_i  mu_hat_i + s sqrt(2 ln(1/delta_t) / n_i) = mu_hat_i + s sqrt(4 ln t / n_i),

with ``s`` the sub-Gaussian scale of the feedback.  Fed the privatized values of the reduction,
``s = sqrt(s_0^2 + sigma^2)`` (the reduction passes it as the problem's noise scale) and the
expected regret is ``O(sum_i s^2 ln T / Delta_i)``.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import CuratorKernel, argmax_ties
from privbandits.algorithms.mab.calibration import SubGaussianConstants
from privbandits.algorithms.mab.private import ArmCurator
from privbandits.algorithms.mab.scales import reward_scale
from privbandits.algorithms.registry import register
from privbandits.core.params import Optional, Positive
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = ["UCB1"]


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Unplayed arms first (ties at random), then the largest upper confidence bound."""
    s = params[0]
    n, S, scores = state
    log_t = math.log(t + 1.0)
    for k in range(n.shape[1]):
        if n[r, k] == 0.0:
            scores[r, k] = np.inf
        else:
            scores[r, k] = S[r, k] / n[r, k] + s * math.sqrt(4.0 * log_t / n[r, k])
    return argmax_ties(scores[r], rng)


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    n, S, scores = state
    n[r, a] += 1.0
    S[r, a] += y


@register
class UCB1(ArmCurator):
    """UCB1 for sub-Gaussian rewards (Auer et al. 2002; the MAB black box of Zheng et al. 2020,
    appendix B.1).

    Parameters
    ----------
    scale : float, optional
        Sub-Gaussian scale ``s`` of the rewards (default: the problem's declared noise scale, at
        most half the reward range; see :func:`~privbandits.algorithms.mab.scales.reward_scale`).

    References
    ----------
    Auer, Cesa-Bianchi & Fischer (2002), "Finite-time analysis of the multiarmed bandit problem",
    Machine Learning 47.  Lattimore & Szepesvari (2020), "Bandit Algorithms", Algorithm 3.
    """

    name = "ucb1"
    links = ("*",)
    paper = "Auer et al. 2002"
    constraints: ClassVar = {"scale": Optional(Positive)}
    test_params: ClassVar = ({}, {"scale": 0.3})
    test_envs: ClassVar = ("finite",)

    def __init__(self, scale: float | None = None) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Non-private; records the resolved sub-Gaussian scale."""
        s = self.scale if self.scale is not None else reward_scale(spec)
        return Calibration(NON_PRIVATE, constants=SubGaussianConstants(s))

    def build_kernel(self) -> CuratorKernel:
        R, K = self.R, self.spec.K
        state = (np.zeros((R, K)), np.zeros((R, K)), np.zeros((R, K)))
        return CuratorKernel(
            _select,
            _update,
            (float(self.calibration.typed(SubGaussianConstants).scale),),
            state,
            allocates=False,
        )
