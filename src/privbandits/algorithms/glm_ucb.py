"""GLM-UCB (Filippi, Cappe, Garivier & Szepesvari 2010), batched over replications.

Algorithm 1 of the paper, for contexts ``(R, K, d)`` and any link in
{identity, logistic, probit, poisson}:

1. **Initial exploration.**  Rounds ``t = 1..n_init`` (default ``n_init = d``) play the arms
   round-robin (arm ``(t - 1) mod K``), which makes ``V`` invertible for contexts in general
   position (the paper plays ``d`` actions chosen to that end).
2. **Estimation.**  ``theta_hat_t`` solves the likelihood equation
   ``sum_{k<t} (r_k - mu(x_k' theta)) x_k = lam theta`` (:func:`~privbandits.algorithms.glm.fit_glm_mle`).
3. **Optimistic choice in the reward space.**
   ``a_t = argmax_a mu(x_a' theta_hat_t) + rho(t) ||x_a||_{V_t^{-1}}`` with
   ``V_t = lam I + sum_{k<t} x_k x_k^T`` and (Theorem 1)

   ``rho(t) = alpha * (2 k_mu kappa R_max / c_mu) * sqrt(2 d log(t) log(2 d T / delta))``,

   where ``k_mu = sup mu'`` (:meth:`Link.lipschitz`) and ``c_mu = inf mu'``
   (:meth:`Link.kappa`) over ``|z| <= C_B S`` (context bound times parameter bound),
   ``kappa = sqrt(3 + 2 log(1 + 2 C_B^2 / lambda_0))`` with ``lambda_0`` the smallest eigenvalue
   of ``V`` after the initial phase (per replication), and ``R_max`` the length of the reward range
   (rewards shifted to ``[0, R_max]`` as in the paper's Assumption).  ``alpha`` multiplies the
   theoretical radius (1 = theory; the paper's Section 4 argues the theoretical radius is far too
   conservative in practice).

Implementation choices (documented deviations):

* **Regularized MLE** (``lam > 0``, default 1): the common practical variant; ``lam I`` is added
  to ``V`` and to the likelihood, so the estimate always exists.  ``lam -> 0`` recovers the paper.
* **No projection step**: the paper projects ``theta_hat`` onto ``Theta`` (in the
  ``||g_t(.)||_{V^{-1}}`` geometry) only when it leaves ``Theta``; like the common practical
  implementations we use ``theta_tilde = theta_hat``.
* **Refit schedule**: the MLE is recomputed exactly (damped Newton to a Newton decrement
  ``<= tol``, warm-started) whenever the number of observations reaches ``refit_growth`` times the
  count at the previous fit (``refit_growth = 1`` refits every round, as in the paper); the
  geometric schedule keeps the amortized per-round cost independent of ``t``.  ``V`` and the
  bonus are updated every round.
* **Sufficient statistics**: identity link -> ridge from running ``(V, b)`` (exact, every round);
  fixed action sets (``spec.fixed_actions``) -> per-arm pull counts and reward sums (exact for any
  link, cost independent of ``t``); otherwise the history is kept (memory ``O(R t d)``).

References
----------
Filippi, Cappe, Garivier & Szepesvari (2010), "Parametric Bandits: The Generalized Linear Case",
NeurIPS, Algorithm 1 and Theorem 1.
"""

from __future__ import annotations

import math

import numpy as np

from privbandits.algorithms.base import Curator, argmax_random_ties
from privbandits.algorithms.glm import fit_glm_mle
from privbandits.algorithms.linalg import chosen, quad_form, sherman_morrison_update
from privbandits.algorithms.registry import register
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_in_range, check_int, check_nonnegative, check_positive

__all__ = ["GLMUCB", "filippi_kappa", "glm_ucb_radius"]


def filippi_kappa(lambda0: np.ndarray, context_bound: float) -> np.ndarray:
    """``kappa = sqrt(3 + 2 log(1 + 2 m^2 / lambda_0))`` of Filippi et al. (2010), Theorem 1."""
    lambda0 = np.asarray(lambda0, dtype=float)
    return np.sqrt(3.0 + 2.0 * np.log1p(2.0 * context_bound**2 / lambda0))


def glm_ucb_radius(
    t: int, d: int, T: int, delta: float, k_mu: float, c_mu: float, kappa: np.ndarray, r_max: float
) -> np.ndarray:
    """``rho(t) = (2 k_mu kappa R_max / c_mu) sqrt(2 d log(t) log(2 d T / delta))`` (Theorem 1)."""
    return (2.0 * k_mu * np.asarray(kappa) * r_max / c_mu) * math.sqrt(
        2.0 * d * math.log(max(t, 1)) * math.log(2.0 * d * T / delta)
    )


@register
class GLMUCB(Curator):
    """GLM-UCB: optimism in the reward space with the MLE of a generalized linear model.

    Parameters
    ----------
    lam : float
        Ridge parameter ``lambda > 0`` of the likelihood and of ``V``.
    delta : float
        Confidence level in (0, 1).
    alpha : float
        Multiplier on ``rho(t)`` (1 = Theorem 1).
    n_init : int, optional
        Rounds of round-robin initial exploration (default ``d``).
    r_max : float, optional
        Reward range length ``R_max``; default ``r_hi - r_lo`` of the environment's reward range.
    refit_growth : float
        Refit the MLE when the number of observations reaches ``refit_growth`` times the number
        at the last fit (``>= 1``; 1 = every round).
    n_iter : int
        Maximal Newton steps per refit.
    tol : float
        Newton-decrement tolerance of a refit.

    References
    ----------
    Filippi et al. (2010), NeurIPS, Algorithm 1 (GLM-UCB) and Theorem 1.
    """

    name = "glm-ucb"
    settings = ("single",)
    links = ("identity", "logistic", "probit", "poisson")
    paper = "Filippi et al. 2010"

    def __init__(
        self,
        lam: float = 1.0,
        delta: float = 0.01,
        alpha: float = 1.0,
        n_init: int | None = None,
        r_max: float | None = None,
        refit_growth: float = 1.1,
        n_iter: int = 50,
        tol: float = 1e-10,
    ) -> None:
        super().__init__(lam=lam, delta=delta, alpha=alpha, n_init=n_init, r_max=r_max,
                         refit_growth=refit_growth, n_iter=n_iter, tol=tol)
        self.lam = check_positive("lam", lam)
        self.delta = check_in_range("delta", delta, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
        self.alpha = check_nonnegative("alpha", alpha)
        self.n_init = None if n_init is None else check_int("n_init", n_init, 0)
        self.r_max = None if r_max is None else check_positive("r_max", r_max)
        self.refit_growth = check_in_range("refit_growth", refit_growth, 1.0, None)
        self.n_iter = check_int("n_iter", n_iter, 1)
        self.tol = check_positive("tol", tol)

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        R, d, K = self.R, spec.d, spec.K
        self.link = spec.link
        bound = spec.context_bound * spec.theta_bound
        self.k_mu = self.link.lipschitz(bound)
        self.c_mu = self.link.kappa(bound)
        lo, hi = spec.reward_range
        self._r_max = float(hi - lo) if self.r_max is None else self.r_max
        self._n_init = d if self.n_init is None else self.n_init
        self.V = np.broadcast_to(np.eye(d) * self.lam, (R, d, d)).copy()
        self.V_inv = np.broadcast_to(np.eye(d) / self.lam, (R, d, d)).copy()
        self.theta = np.zeros((R, d))
        self.kappa = filippi_kappa(np.full(R, self.lam), spec.context_bound)
        self.n_obs = 0
        self._n_fit = 0
        self.n_unconverged = 0
        self._mode = "ridge" if self.link.name == "identity" else ("arms" if spec.fixed_actions else "history")
        self._b = np.zeros((R, d))
        self._arms: np.ndarray | None = None
        self._cnt = np.zeros((R, K))
        self._sum = np.zeros((R, K))
        self._Xh = np.zeros((R, 0, d))
        self._yh = np.zeros((R, 0))

    # -- selection ---------------------------------------------------------------------------
    def radius(self, t: int) -> np.ndarray:
        """``alpha * rho(t)`` per replication (R,), ``t`` the 1-based round."""
        return self.alpha * glm_ucb_radius(t, self.spec.d, self.spec.horizon, self.delta,
                                           self.k_mu, self.c_mu, self.kappa, self._r_max)

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        if t < self._n_init:
            return np.full(self.R, t % self.spec.K, dtype=np.int64)
        mean = self.link.mu(np.einsum("rkd,rd->rk", contexts, self.theta))
        width = np.sqrt(np.maximum(quad_form(self.V_inv, contexts), 0.0))
        scores = mean + self.radius(t + 1)[:, None] * width
        return argmax_random_ties(scores, self.streams.policy)

    # -- update ------------------------------------------------------------------------------
    def update(self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        x = chosen(contexts, actions)
        r = np.asarray(rewards, dtype=float)
        self.V_inv, _ = sherman_morrison_update(self.V_inv, x)
        self.V += np.einsum("rd,re->rde", x, x)
        self.n_obs += 1
        self._record(contexts, actions, x, r)
        if self.n_obs == self._n_init:
            # end of the initial phase: lambda_0 = smallest eigenvalue of V (Theorem 1)
            self.kappa = filippi_kappa(np.linalg.eigvalsh(self.V)[:, 0], self.spec.context_bound)
        if self.n_obs >= self._n_init and (self._mode == "ridge" or self._due()):
            self._refit()

    def _record(self, contexts: np.ndarray, actions: np.ndarray, x: np.ndarray, r: np.ndarray) -> None:
        if self._mode == "ridge":
            self._b += r[:, None] * x
        elif self._mode == "arms":
            if self._arms is None:
                self._arms = np.array(contexts, dtype=float, copy=True)
            rows = np.arange(self.R)
            self._cnt[rows, actions] += 1.0
            self._sum[rows, actions] += r
        else:
            n = self.n_obs - 1
            if n >= self._Xh.shape[1]:
                cap = max(64, 2 * self._Xh.shape[1])
                Xh = np.zeros((self.R, cap, self.spec.d))
                yh = np.zeros((self.R, cap))
                Xh[:, :n], yh[:, :n] = self._Xh[:, :n], self._yh[:, :n]
                self._Xh, self._yh = Xh, yh
            self._Xh[:, n] = x
            self._yh[:, n] = r

    def _due(self) -> bool:
        return self._n_fit == 0 or self.n_obs >= math.ceil(self.refit_growth * self._n_fit)

    def _refit(self) -> None:
        self._n_fit = self.n_obs
        if self._mode == "ridge":
            self.theta = np.einsum("rde,re->rd", self.V_inv, self._b)
            return
        if self._mode == "arms":
            assert self._arms is not None
            ybar = self._sum / np.maximum(self._cnt, 1.0)
            fit = fit_glm_mle(self._arms, ybar, self.link, self.lam, theta0=self.theta, weights=self._cnt,
                              n_iter=self.n_iter, tol=self.tol)
        else:
            n = self.n_obs
            fit = fit_glm_mle(self._Xh[:, :n], self._yh[:, :n], self.link, self.lam, theta0=self.theta,
                              n_iter=self.n_iter, tol=self.tol)
        self.n_unconverged += int(np.count_nonzero(~fit.converged))
        self.theta = fit.theta

    def estimate(self) -> np.ndarray:
        return self.theta
