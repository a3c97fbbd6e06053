"""GLM-UCB (Filippi, Cappe, Garivier & Szepesvari 2010), compiled per-round steps.

Algorithm 1 of the paper, for contexts ``(R, K, d)`` and any link in
{identity, logistic, probit, poisson}:

1. **Initial exploration.**  Rounds ``t = 1..n_init`` (default ``n_init = d``) play the arms
   round-robin (arm ``(t - 1) mod K``), which makes ``V`` invertible for contexts in general
   position (the paper plays ``d`` actions chosen to that end).
2. **Estimation.**  ``theta_hat_t`` solves the likelihood equation
   ``sum_{k<t} (r_k - mu(x_k' theta)) x_k = lam theta`` (:func:`~privbandits.algorithms._shared.glm.newton_mle_row`).
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
  link, cost independent of ``t``); otherwise the history is kept (memory ``O(R T d)``, allocated
  at reset).

References
----------
Filippi, Cappe, Garivier & Szepesvari (2010), "Parametric Bandits: The Generalized Linear Case",
NeurIPS, Algorithm 1 and Theorem 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms._shared.glm import newton_mle_row
from privbandits.algorithms._shared.linalg import (
    add_outer,
    feature_single,
    mat_vec,
    sherman_morrison_row,
    ucb_argmax_single,
)
from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import Calibration, Constants
from privbandits.algorithms.kernel import CuratorKernel, pinned
from privbandits.algorithms.registry import register
from privbandits.algorithms.sarmasarkar import authors_code
from privbandits.algorithms.sarmasarkar.authors_code import AuthorsCodeRun
from privbandits.core.errors import NotResetError
from privbandits.core.params import Choice, Int, NonNegative, Optional, Positive, Real
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = ["GLMUCB", "GLMUCBConstants", "filippi_kappa", "glm_ucb_radius"]

#: How the MLE is computed (see the module docstring).
MODES: dict[str, int] = {"ridge": 0, "arms": 1, "history": 2}


@nb.njit(cache=True)
def filippi_kappa(lambda0: float, context_bound: float) -> float:  # pragma: no cover - compiled
    """``kappa = sqrt(3 + 2 log(1 + 2 m^2 / lambda_0))`` of Filippi et al. (2010), Theorem 1."""
    return math.sqrt(3.0 + 2.0 * math.log1p(2.0 * context_bound**2 / lambda0))


@nb.njit(cache=True)
def glm_ucb_radius(
    t: float, d: int, T: int, delta: float, k_mu: float, c_mu: float, kappa: float, r_max: float
) -> float:  # pragma: no cover - compiled
    """``rho(t) = (2 k_mu kappa R_max / c_mu) sqrt(2 d log(t) log(2 d T / delta))`` (Theorem 1)."""
    return (2.0 * k_mu * kappa * r_max / c_mu) * math.sqrt(
        2.0 * d * math.log(max(t, 1.0)) * math.log(2.0 * d * T / delta)
    )


@pinned
def _initial_kappa(V: np.ndarray, context_bound: float) -> float:  # pragma: no cover - compiled
    """``kappa`` from ``lambda_0``, the smallest eigenvalue of ``V`` (LAPACK allocates: pinned to
    numba's runtime, so that the allocation-free steps calling it compile without it)."""
    return filippi_kappa(np.linalg.eigvalsh(V)[0], context_bound)


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Round-robin for ``t < n_init``, then ``argmax_a mu(x_a' theta_hat) + rho(t) ||x_a||_{V^{-1}}``."""
    K, d, T, lam, delta, alpha, n_init, k_mu, c_mu, r_max, link_code = params[:11]
    V_inv, theta, kappa = state[1], state[2], state[3]
    if t < n_init:
        return t % K
    radius = alpha * glm_ucb_radius(t + 1.0, d, T, delta, k_mu, c_mu, kappa[r], r_max)
    return ucb_argmax_single(X, theta[r], V_inv[r], radius, link_code, False, rng)


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Update ``V``, record the observation, refit the MLE when due (Alg. 1 line 2)."""
    K, d, T, lam, delta, alpha, n_init, k_mu, c_mu, r_max, link_code = params[:11]
    mode, refit_growth, n_iter, tol, C_B = params[11:]
    (
        V,
        V_inv,
        theta,
        kappa,
        n_fit,
        n_unconverged,
        b,
        arms,
        cnt,
        ssum,
        ybar,
        Xh,
        yh,
        ones,
        xs,
        grad,
        H,
        L,
        p,
        new,
    ) = state
    x = xs[r]
    feature_single(X, a, x)
    sherman_morrison_row(V_inv[r], x, p[r])
    add_outer(V[r], x, 1.0)
    n_obs = t + 1
    if mode == 0:
        for i in range(d):
            b[r, i] += y * x[i]
    elif mode == 1:
        if n_obs == 1:
            for k in range(K):
                for i in range(d):
                    arms[r, k, i] = X[k, i]
        cnt[r, a] += 1.0
        ssum[r, a] += y
    else:
        for i in range(d):
            Xh[r, n_obs - 1, i] = x[i]
        yh[r, n_obs - 1] = y
    if n_obs == n_init:
        # end of the initial phase: lambda_0 = smallest eigenvalue of V (Theorem 1)
        kappa[r] = _initial_kappa(V[r], C_B)
    due = mode == 0 or n_fit[r] == 0 or n_obs >= math.ceil(refit_growth * n_fit[r])
    if n_obs < n_init or not due:
        return
    n_fit[r] = n_obs
    if mode == 0:
        mat_vec(V_inv[r], b[r], theta[r])
        return
    if mode == 1:  # per-arm means of a fixed action set, weighted by the pulls
        for k in range(K):
            ybar[r, k] = ssum[r, k] / max(cnt[r, k], 1.0)
        Xs, ys, ws, n = arms[r], ybar[r], cnt[r], K
    else:  # the history of the observations
        Xs, ys, ws, n = Xh[r], yh[r], ones, n_obs
    ok, _, _ = newton_mle_row(
        Xs, ys, ws, n, link_code, lam, theta[r], n_iter, tol, grad[r], H[r], L[r], p[r], new[r]
    )
    if not ok:
        n_unconverged[r] += 1


@dataclass(frozen=True)
class GLMUCBConstants(Constants):
    """GLM-UCB (Filippi et al. 2010, Theorem 1): the link's ``k_mu = sup mu'`` and
    ``c_mu = inf mu'`` over ``|z| <= C_B S``, the reward range length ``R_max`` (``r_max``), the
    initial-exploration length, how the MLE is computed (``mode``) and the horizon ``T``."""

    k_mu: float
    c_mu: float
    r_max: float
    n_init: int
    mode: str
    T: int


@register
class GLMUCB(AuthorsCodeRun, Curator):
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
    preset : {"strict", "paper", "authors_code"}
        ``strict`` and ``paper`` (no constants printed): Algorithm 1 as above; ``authors_code``:
        GLM-UCB as the public code of Sarmasarkar (2026) runs it (lambda = d, the MLE refit every
        round from a standard normal start, the code's radius;
        :class:`~privbandits.algorithms.sarmasarkar.authors_code.AuthorsGLMUCB`).

    References
    ----------
    Filippi et al. (2010), NeurIPS, Algorithm 1 (GLM-UCB) and Theorem 1.
    """

    name = "glm-ucb"
    settings = ("single",)
    links = ("identity", "logistic", "probit", "poisson")
    paper = "Filippi et al. 2010"
    constraints: ClassVar = {
        "lam": Positive,
        "delta": Real(0.0, 1.0, low_open=True, high_open=True),
        "alpha": NonNegative,
        "n_init": Optional(Int(0)),
        "r_max": Optional(Positive),
        "refit_growth": Real(1.0, None),
        "n_iter": Int(1),
        "tol": Positive,
        "preset": Choice("strict", "paper", "authors_code"),
    }
    test_params: ClassVar = (
        {},
        {"alpha": 0.1, "n_init": 0, "refit_growth": 1.0, "r_max": 2.0, "n_iter": 5},
        {"preset": "authors_code", "delta": 0.02},
    )
    test_envs: ClassVar = ("synthetic", "finite")

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
        preset: str = "strict",
    ) -> None:
        pass

    def _calibrate(self, spec: EnvSpec) -> Calibration:
        """Resolve the radius constants and the estimation path on ``spec`` (non-private)."""
        bound = spec.context_bound * spec.theta_bound
        lo, hi = spec.reward_range
        mode = (
            "ridge"
            if spec.link.name == "identity"
            else ("arms" if spec.fixed_actions else "history")
        )
        return Calibration(
            NON_PRIVATE,
            constants=GLMUCBConstants(
                k_mu=spec.link.lipschitz(bound),
                c_mu=spec.link.kappa(bound),
                r_max=float(hi - lo) if self.r_max is None else self.r_max,
                n_init=spec.d if self.n_init is None else self.n_init,
                mode=mode,
                T=spec.horizon,
            ),
        )

    _authors_run = authors_code.glm_ucb_runner

    def _build_kernel(self) -> CuratorKernel:
        c, spec, R = self.calibration.typed(GLMUCBConstants), self.spec, self.R
        d, K = spec.d, spec.K
        mode = MODES[c.mode]
        Th = spec.horizon if mode == 2 else 1  # the history (history mode only)
        kappa0 = filippi_kappa(self.lam, spec.context_bound)
        theta = np.zeros((R, d))
        state = (
            np.broadcast_to(np.eye(d) * self.lam, (R, d, d)).copy(),  # V
            np.broadcast_to(np.eye(d) / self.lam, (R, d, d)).copy(),  # V^{-1}
            theta,
            np.full(R, kappa0),
            np.zeros(R, dtype=np.int64),
            np.zeros(R, dtype=np.int64),
            np.zeros((R, d)),  # b = sum y x (ridge mode)
            np.zeros((R, K, d)),
            np.zeros((R, K)),
            np.zeros((R, K)),
            np.zeros((R, K)),  # arms mode
            np.zeros((R, Th, d)),
            np.zeros((R, Th)),
            np.ones(Th),  # history mode
            np.zeros((R, d)),
            np.zeros((R, d)),
            np.zeros((R, d, d)),
            np.zeros((R, d, d)),
            np.zeros((R, d)),
            np.zeros((R, d)),  # scratch
        )
        params = (
            K,
            d,
            int(c.T),
            self.lam,
            self.delta,
            self.alpha,
            int(c.n_init),
            float(c.k_mu),
            float(c.c_mu),
            float(c.r_max),
            spec.link.code,
            mode,
            self.refit_growth,
            self.n_iter,
            self.tol,
            spec.context_bound,
        )
        return CuratorKernel(
            _select, _update, params, state, estimate=lambda: theta, allocates=False
        )

    def radius(self, t: int) -> np.ndarray:
        """``alpha * rho(t)`` per replication (R,), ``t`` the 1-based round."""
        c, kappa = self.calibration.typed(GLMUCBConstants), self._state()[3]
        return np.array(
            [
                self.alpha
                * glm_ucb_radius(
                    float(t),
                    self.spec.d,
                    int(c.T),
                    self.delta,
                    float(c.k_mu),
                    float(c.c_mu),
                    float(k),
                    float(c.r_max),
                )
                for k in kappa
            ]
        )

    @property
    def kappa(self) -> np.ndarray:
        """Filippi et al.'s ``kappa`` per replication (from ``lambda_0`` after the initial phase)."""
        return self._state()[3].copy()

    @property
    def n_unconverged(self) -> int:
        """Number of refits (over all replications) whose Newton iteration did not reach ``tol``."""
        return int(self._state()[5].sum())

    def _state(self) -> tuple[np.ndarray, ...]:
        if not isinstance(self.kernel, CuratorKernel):
            raise NotResetError(f"{self.name}: call reset(...) or simulate(...) first")
        return self.kernel.state
