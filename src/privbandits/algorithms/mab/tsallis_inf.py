"""Tsallis-INF: the best-of-both-worlds MAB black box of the one-point reduction.

Zheng, Cai, Huang, Li & Wang (2020), appendix B.1, claim a private MAB algorithm that is nearly
optimal in stochastic and adversarial environments at once; Tsallis-INF (Zimmert & Seldin 2021,
Algorithm 1 with the 1/2-Tsallis entropy and importance-weighted loss estimates) has that
property.  Round ``t`` plays ``I_t ~ w_t`` with

    w_{t,i} = 4 (eta_t (L_hat_{t-1,i} - x_t))^{-2},   eta_t = 2 / sqrt(t),

``x_t < min_i L_hat_{t-1,i}`` the normalizer making ``w_t`` a distribution (Newton's method, as in
the paper's section 4), and ``L_hat_{t,i} += 1[I_t = i] l_t / w_{t,i}`` with losses normalized to
``l_t = (hi - r_t) / (hi - lo)``.  Adversarial regret ``<= 4 sqrt(K T) + 1`` for losses in [0, 1]
(Zimmert & Seldin 2021, Theorem 1); through the reduction the normalization uses the enlarged range
of the privatized values (``B_tilde``).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import CuratorKernel
from privbandits.algorithms.mab.calibration import TsallisConstants
from privbandits.algorithms.mab.sampling import sample_index
from privbandits.algorithms.mab.scales import reward_window
from privbandits.algorithms.registry import register
from privbandits.core.params import Positive
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = ["TsallisINF", "tsallis_weights"]


@nb.njit(cache=True)
def tsallis_weights(
    L: np.ndarray, eta: float, w: np.ndarray
) -> None:  # pragma: no cover - compiled
    """``w_i = 4 (eta (L_i - x))^{-2}`` with the normalizer ``x`` found by Newton's method.

    ``f(x) = sum_i w_i(x) - 1`` is increasing and convex on ``x < min L``; started at
    ``min L - 2/eta`` (where ``f >= 0``) Newton's iterates decrease monotonically to the root.
    """
    low = L[0]
    for k in range(1, L.shape[0]):
        low = min(low, L[k])
    x = low - 2.0 / eta
    for _ in range(100):
        total = 0.0
        slope = 0.0
        for k in range(L.shape[0]):
            wk = 4.0 / (eta * (L[k] - x)) ** 2
            w[k] = wk
            total += wk
            slope += eta * wk**1.5
        if abs(total - 1.0) < 1e-12:
            break
        x -= (total - 1.0) / slope
    total = 0.0
    for k in range(L.shape[0]):
        total += w[k]
    for k in range(L.shape[0]):
        w[k] /= total


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    eta = params[2] * 2.0 / math.sqrt(t + 1.0)
    L, w = state
    tsallis_weights(L[r], eta, w[r])
    return sample_index(w[r], rng)


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    hi, width = params[0], params[1]
    L, w = state
    loss = min(max((hi - y) / width, 0.0), 1.0)  # losses in [0, 1], as the bound assumes
    L[r, a] += loss / w[r, a]


@register
class TsallisINF(Curator):
    """Tsallis-INF (Zimmert & Seldin 2021, Algorithm 1, 1/2-Tsallis entropy, importance-weighted
    estimates); the best-of-both-worlds MAB black box for Zheng et al. (2020), appendix B.1.

    Parameters
    ----------
    eta_scale : float
        Multiplier on the learning rate ``eta_t = 2 / sqrt(t)`` (1 = the paper's).

    References
    ----------
    Zimmert & Seldin (2021), "Tsallis-INF: An Optimal Algorithm for Stochastic and Adversarial
    Bandits", JMLR 22.
    """

    name = "tsallis-inf"
    links = ("*",)
    paper = "Zimmert & Seldin 2021"
    constraints: ClassVar = {"eta_scale": Positive}
    test_params: ClassVar = ({}, {"eta_scale": 0.5})
    test_envs: ClassVar = ("finite",)

    def __init__(self, eta_scale: float = 1.0) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Non-private; records the loss normalization."""
        hi, width = reward_window(spec)
        return Calibration(NON_PRIVATE, constants=TsallisConstants(hi, width, self.eta_scale))

    def build_kernel(self) -> CuratorKernel:
        R, K = self.R, self.spec.K
        c = self.calibration.typed(TsallisConstants)
        state = (np.zeros((R, K)), np.full((R, K), 1.0 / K))
        params = (float(c.loss_offset), float(c.loss_range), float(self.eta_scale))
        return CuratorKernel(_select, _update, params, state, allocates=False)

    def probabilities(self) -> np.ndarray:
        """The arm distribution of the last round played, ``(R, K)``."""
        assert self.kernel is not None
        return self.kernel.state[1].copy()
