"""EXP3 on losses: the adversarial-MAB black box of the one-point reduction.

Zheng, Cai, Huang, Li & Wang (2020), appendix B.1, instantiate their Algorithm 1 for adversarial
multi-armed bandits.  EXP3 (Auer, Cesa-Bianchi, Freund & Schapire 2002; loss form of Lattimore &
Szepesvari 2020, Algorithm 9) keeps importance-weighted cumulative loss estimates ``L_hat`` and plays

    p_{t,i} proportional to exp(-eta L_hat_{t-1,i}),   L_hat_{t,i} += 1[I_t = i] l_t / p_{t,i},

with losses ``l_t = hi - r_t`` (``[0, hi - lo]`` for rewards in the declared range) and
``eta = sqrt(2 ln K / (T K)) / (hi - lo)``: expected regret ``<= (hi - lo) sqrt(2 T K ln K)``.
Through the reduction the range is the enlarged one of the privatized values (``B_tilde``), which
retunes ``eta`` (Zheng et al. 2020, Theorem 3).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import CuratorKernel
from privbandits.algorithms.mab.calibration import Exp3Constants
from privbandits.algorithms.mab.sampling import sample_index
from privbandits.algorithms.mab.scales import reward_window
from privbandits.algorithms.registry import register
from privbandits.core.params import Int, Optional, Positive
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = ["EXP3"]


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Exponential weights on the loss estimates (shifted by their minimum for stability)."""
    eta = params[0]
    L, p = state
    low = L[r, 0]
    for k in range(1, L.shape[1]):
        low = min(low, L[r, k])
    total = 0.0
    for k in range(L.shape[1]):
        p[r, k] = math.exp(-eta * (L[r, k] - low))
        total += p[r, k]
    for k in range(L.shape[1]):
        p[r, k] /= total
    return sample_index(p[r], rng)


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    hi = params[1]
    L, p = state
    L[r, a] += (hi - y) / p[r, a]


@register
class EXP3(Curator):
    """EXP3 (Auer et al. 2002) on losses ``hi - r``; the adversarial-MAB black box of Zheng et al.
    (2020), appendix B.1.

    Parameters
    ----------
    eta : float, optional
        Learning rate (default ``sqrt(2 ln K / (T K)) / (hi - lo)``).
    horizon : int, optional
        ``T`` in the default learning rate (default: the run's horizon).

    References
    ----------
    Auer, Cesa-Bianchi, Freund & Schapire (2002), "The nonstochastic multiarmed bandit problem",
    SIAM J. Computing 32.  Lattimore & Szepesvari (2020), "Bandit Algorithms", Theorem 11.1.
    """

    name = "exp3"
    links = ("*",)
    paper = "Auer et al. 2002"
    constraints: ClassVar = {"eta": Optional(Positive), "horizon": Optional(Int(1))}
    test_params: ClassVar = ({}, {"eta": 0.5})
    test_envs: ClassVar = ("finite",)

    def __init__(self, eta: float | None = None, horizon: int | None = None) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Non-private; records the resolved learning rate and loss offset."""
        hi, width = reward_window(spec)
        T = self.horizon if self.horizon is not None else spec.horizon
        K = spec.K
        eta = self.eta if self.eta is not None else math.sqrt(2.0 * math.log(K) / (T * K)) / width
        return Calibration(NON_PRIVATE, constants=Exp3Constants(eta, hi, width, T))

    def build_kernel(self) -> CuratorKernel:
        R, K = self.R, self.spec.K
        c = self.calibration.typed(Exp3Constants)
        state = (np.zeros((R, K)), np.full((R, K), 1.0 / K))
        return CuratorKernel(
            _select, _update, (float(c.eta), float(c.loss_offset)), state, allocates=False
        )

    def probabilities(self) -> np.ndarray:
        """The arm distribution of the last round played, ``(R, K)``."""
        assert self.kernel is not None
        return self.kernel.state[1].copy()
