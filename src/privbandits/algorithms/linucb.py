"""LinUCB / OFUL (Abbasi-Yadkori, Pal & Szepesvari 2011), batched over replications."""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.base import Curator, argmax_random_ties
from privbandits.algorithms.linalg import chosen, quad_form, sherman_morrison_update
from privbandits.algorithms.registry import register
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_in_range, check_nonnegative, check_positive

__all__ = ["LinUCB", "oful_radius"]


def oful_radius(logdet_ratio: np.ndarray, sigma: float, lam: float, S: float, delta: float) -> np.ndarray:
    """OFUL confidence radius (Abbasi-Yadkori et al. 2011, Theorem 2).

    ``sqrt(beta_t) = sigma * sqrt(2 log(1/delta) + log(det V_t / det(lam I))) + sqrt(lam) * S``.
    """
    return sigma * np.sqrt(2.0 * np.log(1.0 / delta) + logdet_ratio) + np.sqrt(lam) * S


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

    def __init__(self, lam: float = 1.0, delta: float = 0.01, alpha: float = 1.0, sigma: float | None = None) -> None:
        super().__init__(lam=lam, delta=delta, alpha=alpha, sigma=sigma)
        self.lam = check_positive("lam", lam)
        self.delta = check_in_range("delta", delta, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
        self.alpha = check_nonnegative("alpha", alpha)
        self.sigma = None if sigma is None else check_nonnegative("sigma", sigma)

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        d, R = spec.d, self.R
        self.V_inv = np.broadcast_to(np.eye(d) / self.lam, (R, d, d)).copy()
        self.b = np.zeros((R, d))
        self.theta = np.zeros((R, d))
        self.logdet_ratio = np.zeros(R)
        self._sigma = spec.noise_scale if self.sigma is None else self.sigma

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        beta = oful_radius(self.logdet_ratio, self._sigma, self.lam, self.spec.theta_bound, self.delta)
        width = np.sqrt(np.maximum(quad_form(self.V_inv, contexts), 0.0))
        scores = np.einsum("rkd,rd->rk", contexts, self.theta) + self.alpha * beta[:, None] * width
        return argmax_random_ties(scores, self.streams.policy)

    def update(self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        x = chosen(contexts, actions)
        self.V_inv, q = sherman_morrison_update(self.V_inv, x)
        self.logdet_ratio += np.log1p(q)
        self.b += rewards[:, None] * x
        self.theta = np.einsum("rde,re->rd", self.V_inv, self.b)

    def estimate(self) -> np.ndarray:
        return self.theta
