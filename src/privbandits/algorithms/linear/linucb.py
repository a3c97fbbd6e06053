"""LinUCB / OFUL (Abbasi-Yadkori, Pal & Szepesvari 2011), compiled per-round steps."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms._shared.linalg import sherman_morrison_row
from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import Calibration, Constants
from privbandits.algorithms.kernel import CuratorKernel, argmax_ties
from privbandits.algorithms.registry import register
from privbandits.core.params import Delta, NonNegative, Optional, Positive
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = ["LinUCB", "oful_radius"]


def oful_radius(
    logdet_ratio: np.ndarray, sigma: float, lam: float, S: float, delta: float
) -> np.ndarray:
    """OFUL confidence radius (Abbasi-Yadkori et al. 2011, Theorem 2).

    ``sqrt(beta_t) = sigma * sqrt(2 log(1/delta) + log(det V_t / det(lam I))) + sqrt(lam) * S``.
    """
    return sigma * np.sqrt(2.0 * np.log(1.0 / delta) + logdet_ratio) + np.sqrt(lam) * S


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    lam, delta, alpha, sigma, S = params
    V_inv, b, theta, logdet, scores, _ = state
    beta = sigma * math.sqrt(2.0 * math.log(1.0 / delta) + logdet[r]) + math.sqrt(lam) * S
    K, d = X.shape
    for k in range(K):
        mean = 0.0
        quad = 0.0
        for i in range(d):
            mean += X[k, i] * theta[r, i]
            vi = 0.0
            for j in range(d):
                vi += V_inv[r, i, j] * X[k, j]
            quad += X[k, i] * vi
        scores[r, k] = mean + alpha * beta * math.sqrt(max(quad, 0.0))
    return argmax_ties(scores[r], rng)


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    V_inv, b, theta, logdet, scores, Vx = state
    x = X[a]
    d = x.shape[0]
    q = sherman_morrison_row(V_inv[r], x, Vx[r])
    logdet[r] += math.log1p(q)
    for i in range(d):
        b[r, i] += y * x[i]
    for i in range(d):
        s = 0.0
        for j in range(d):
            s += V_inv[r, i, j] * b[r, j]
        theta[r, i] = s


@dataclass(frozen=True)
class LinUCBConstants(Constants):
    """LinUCB: the reward noise scale ``sigma`` and the parameter bound ``S``."""

    sigma: float
    S: float


@register
class LinUCB(Curator):
    """OFUL: optimism with the self-normalized confidence ellipsoid.

    At round t choose ``argmax_a x_a^T theta_hat + alpha * sqrt(beta_t) * ||x_a||_{V^{-1}}`` with
    ``V = lam I + sum x x^T`` and ``theta_hat = V^{-1} sum r x``.

    Parameters
    ----------
    lam : float
        Ridge parameter lambda > 0.
    delta : float
        Confidence level of the ellipsoid, in (0, 1).
    alpha : float
        Multiplier on the radius (1 = theory; smaller values are a common practical tuning).
    sigma : float, optional
        Sub-Gaussian noise parameter; defaults to the environment's announced ``noise_scale``.

    References
    ----------
    Abbasi-Yadkori, Pal, Szepesvari (2011), "Improved Algorithms for Linear Stochastic Bandits",
    NeurIPS, Algorithm 1 (OFUL) and Theorem 2.
    """

    name = "linucb"
    settings = ("single",)
    links = ("identity",)
    paper = "Abbasi-Yadkori et al. 2011"
    constraints: ClassVar = {
        "lam": Positive,
        "delta": Delta,
        "alpha": NonNegative,
        "sigma": Optional(NonNegative),
    }
    test_params: ClassVar = ({}, {"alpha": 0.5, "sigma": 0.2})

    def __init__(
        self, lam: float = 1.0, delta: float = 0.01, alpha: float = 1.0, sigma: float | None = None
    ) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        sigma = spec.noise_scale if self.sigma is None else self.sigma
        return Calibration(NON_PRIVATE, constants=LinUCBConstants(sigma, spec.theta_bound))

    def build_kernel(self) -> CuratorKernel:
        d, R, c = self.spec.d, self.R, self.calibration.typed(LinUCBConstants)
        V_inv = np.broadcast_to(np.eye(d) / self.lam, (R, d, d)).copy()
        theta = np.zeros((R, d))
        K = self.spec.K
        # the last entry: the Sherman-Morrison scratch V^{-1} x per replication (the steps allocate nothing)
        state = (V_inv, np.zeros((R, d)), theta, np.zeros(R), np.zeros((R, K)), np.zeros((R, d)))
        params = (self.lam, self.delta, self.alpha, float(c.sigma), float(c.S))
        return CuratorKernel(
            _select, _update, params, state, estimate=lambda: theta, allocates=False
        )
