"""Regression baselines: non-private least squares, SSP ridge and clipped DP gradient descent.

The comparisons of Chen, Li, Rakhlin & Simchi-Levi (2025), Section 3.1 (Proposition 3.1): L2
regression oracles whose error depends on ``lambda_min`` of the covariance.  All three are linear
(identity link, squared loss) and take covariates in the unit ball, responses in ``[-1, 1]``.

* :class:`LeastSquares`: ridge least squares ``(X^T X + rho I)^{-1} X^T y`` with the
  self-normalized width ``beta ||phi||_{H^{-1}}`` of Abbasi-Yadkori, Pal & Szepesvari (2011), Thm 2
  (noise ``y - f*`` in an interval of length 2, hence 1-sub-Gaussian; ``||theta*|| <= 1``).
* :class:`SSPRidge`: sufficient statistics perturbation.  The upper triangle of ``X^T X`` and
  ``X^T y`` are released as one vector by one Gaussian mechanism.  Replacing a sample moves it by at
  most ``sqrt(||x x^T - x' x'^T||_F^2 + ||x y - x' y'||^2)``; with ``a = ||x||^2, b = ||x'||^2 <= 1``
  and ``t = |<x, x'>|`` this is at most ``a^2 + b^2 - 2 t^2 + a + b + 2 t <= 4.5`` (maximum at
  ``t = 1/2``), so the sensitivity is ``3 / sqrt(2)`` (the released upper triangle reaches 2.085).  The noisy
  Gram matrix is shifted by ``rho = 2 e + rho_0`` where ``e = s sqrt(2 d ln(6d/delta_f))`` bounds the
  operator norm of the symmetric noise (matrix Gaussian series, Tropp 2012, Thm 4.1.1, variance
  ``s^2 d``), so the shifted matrix dominates ``X^T X + (e + rho_0) I`` with probability
  ``1 - delta_f/3``; the width adds the noise terms as in Shariff & Sheffet (2018), Prop. 4.
* :class:`DPGradientDescent`: full-batch projected gradient descent on the mean squared loss,
  per-sample gradients clipped to norm ``clip``, Gaussian noise of replace-one sensitivity
  ``2 clip / n`` per step, steps composed by zCDP (Bun & Steinke 2016).  No finite-sample width
  is known for it; it reports the trivial width 2.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privbandits.core.validation import (
    check_choice,
    check_in_range,
    check_int,
    check_positive,
)
from privbandits.privacy.accounting import zcdp_for_approx_dp
from privbandits.privacy.guarantee import NON_PRIVATE
from privbandits.regression.base import GaussianOracle, PrivateOracle, as_generator
from privbandits.regression.data import BOUND_POLICIES, prepare
from privbandits.regression.estimate import RegressionEstimate
from privbandits.regression.links import link_constants
from privbandits.regression.matrices import psd_apply, row_norms
from privbandits.regression.releases import Ledger, Release, privatize_vector

__all__ = ["SSP_SENSITIVITY", "DPGradientDescent", "LeastSquares", "SSPRidge", "ssp_statistic"]

#: Replace-one L2 sensitivity of ``(upper(X^T X), X^T y)`` for ``||x|| <= 1``, ``|y| <= 1``.
SSP_SENSITIVITY = 3.0 / math.sqrt(2.0)
_IDENTITY = link_constants("identity")


def ssp_statistic(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The released vector ``(upper triangle of X^T X incl. diagonal, X^T y)``."""
    d = X.shape[1]
    iu = np.triu_indices(d)
    return np.concatenate([(X.T @ X)[iu], X.T @ y])


def _unpack(v: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    iu = np.triu_indices(d)
    G = np.zeros((d, d))
    G[iu] = v[: iu[0].size]
    G = G + G.T - np.diag(np.diag(G))
    return G, v[iu[0].size :]


def _ridge_estimate(
    G: np.ndarray, b: np.ndarray, n: int, rho: float, rho_eff: float, extra: float, failure: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """Ridge solution of ``(G + rho I) theta = b`` and its width ``beta ||phi||_{H^{-1}}``.

    ``rho_eff`` is the ridge the self-normalized bound may use (``H >= X^T X + rho_eff I``), ``extra``
    the noise terms ``||xi|| + e + rho`` divided by ``sqrt(rho_eff)`` are added to ``beta``.
    """
    d = G.shape[0]
    H = psd_apply(
        G + rho * np.eye(d), lambda e: np.maximum(e, rho_eff)
    )  # post-processing: H >= rho_eff I
    theta = np.linalg.solve(H, b)
    beta = math.sqrt(2.0 * math.log(1.0 / failure) + d * math.log(1.0 + n / (d * rho_eff))) + extra
    return theta, psd_apply(H, lambda e: 1.0 / np.sqrt(e)), beta


class LeastSquares:
    """Non-private ridge least squares with self-normalized confidence widths.

    Parameters
    ----------
    ridge : float
        ``rho > 0``.
    failure_prob : float
        Failure probability of the widths (valid simultaneously for all covariates).
    on_bound : {"clip", "reject"}
    """

    def __init__(
        self, ridge: float = 1.0, *, failure_prob: float = 0.05, on_bound: str = "clip"
    ) -> None:
        self.ridge = check_positive("ridge", ridge)
        self.failure_prob = check_in_range(
            "failure_prob", failure_prob, 0.0, 1.0, low_inclusive=False, high_inclusive=False
        )
        self.on_bound = check_choice("on_bound", on_bound, BOUND_POLICIES)

    def fit(
        self, X: object, y: object, rng: np.random.Generator | int | None = None
    ) -> RegressionEstimate:
        """Fit; ``rng`` is unused (accepted for a common interface)."""
        data = prepare(X, y, self.on_bound)
        n, d = data.X.shape
        G, b = data.X.T @ data.X, data.X.T @ data.y
        theta, W, beta = _ridge_estimate(
            G, b, n, self.ridge, self.ridge, math.sqrt(self.ridge), self.failure_prob
        )
        return RegressionEstimate(
            theta,
            _IDENTITY,
            W,
            beta,
            NON_PRIVATE,
            None,
            {"ridge": self.ridge, "beta": beta},
            data.n_clipped_x + data.n_clipped_y,
        )


class SSPRidge(GaussianOracle):
    """Sufficient-statistics-perturbation ridge regression (central DP), see the module docstring.

    Parameters
    ----------
    epsilon, delta : float
        Privacy level (``epsilon = inf``: non-private, identical to :class:`LeastSquares`).
    ridge : float
        ``rho_0``, the ridge on top of the noise shift.
    failure_prob : float
        Failure probability of the widths.
    calibration : {"analytic", "classic"}
    on_bound : {"clip", "reject"}
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        ridge: float = 1.0,
        failure_prob: float = 0.05,
        calibration: str = "analytic",
        on_bound: str = "clip",
    ) -> None:
        super().__init__(epsilon, delta, calibration, on_bound)
        self.ridge = check_positive("ridge", ridge)
        self.failure_prob = check_in_range(
            "failure_prob", failure_prob, 0.0, 1.0, low_inclusive=False, high_inclusive=False
        )

    @property
    def std(self) -> float:
        """Standard deviation of the noise on every released coordinate."""
        return self.sigma * SSP_SENSITIVITY

    def shift(self, d: int) -> tuple[float, float]:
        """``(e, rho)``: the noise operator-norm bound and the ridge ``rho = 2 e + rho_0``."""
        s = self.std
        e = s * math.sqrt(2.0 * d * math.log(6.0 * d / self.failure_prob))
        return e, 2.0 * e + self.ridge

    def fit(
        self, X: object, y: object, rng: np.random.Generator | int | None = None
    ) -> RegressionEstimate:
        data = prepare(X, y, self.on_bound)
        n, d = data.X.shape
        ledger = Ledger(n)
        v = privatize_vector(ssp_statistic(data.X, data.y), self.std, as_generator(rng))
        ledger.record(Release("sufficient statistics", np.arange(n), SSP_SENSITIVITY, self.std))
        G, b = _unpack(v, d)
        e, rho = self.shift(d)
        f3 = self.failure_prob / 3.0
        xi = self.std * (math.sqrt(d) + math.sqrt(2.0 * math.log(1.0 / f3)))
        rho_eff = e + self.ridge
        theta, W, beta = _ridge_estimate(
            G, b, n, rho, rho_eff, (xi + e + rho) / math.sqrt(rho_eff), f3
        )
        g = (
            NON_PRIVATE
            if self.sigma == 0.0
            else ledger.guarantee(self.delta, "central", "SSP ridge")
        )
        resolved: dict[str, Any] = {
            "sigma": self.sigma,
            "std": self.std,
            "e": e,
            "rho": rho,
            "beta": beta,
        }
        return RegressionEstimate(
            theta, _IDENTITY, W, beta, g, ledger, resolved, data.n_clipped_x + data.n_clipped_y
        )


class DPGradientDescent(PrivateOracle):
    """Full-batch projected gradient descent with per-sample clipping and Gaussian noise (central DP).

    Parameters
    ----------
    epsilon, delta : float
        Privacy level of the whole run (``epsilon = inf``: noiseless GD with clipping).
    steps : int
        Gradient steps ``T`` (each a Gaussian release on all samples, composed by zCDP).
    clip : float
        Per-sample gradient norm bound (2 never binds for ``||x|| <= 1``, ``|y| <= 1``, ``||theta|| <= 1``).
    eta : float
        Step size (the mean loss ``(1/2)(<x, theta> - y)^2`` is 1-smooth).
    on_bound : {"clip", "reject"}
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        steps: int = 100,
        clip: float = 2.0,
        eta: float = 1.0,
        on_bound: str = "clip",
    ) -> None:
        super().__init__(epsilon, delta, on_bound)
        self.steps = check_int("steps", steps, 1)
        self.clip = check_positive("clip", clip)
        self.eta = check_in_range("eta", eta, 0.0, 1.0, low_inclusive=False)

    def step_std(self, n: int) -> float:
        """Noise std per step: ``sensitivity / sqrt(2 rho / T)`` for the zCDP ``rho`` of the request."""
        if math.isinf(self.epsilon):
            return 0.0
        rho = zcdp_for_approx_dp(self.epsilon, self.delta).rho
        return (2.0 * self.clip / n) / math.sqrt(2.0 * rho / self.steps)

    def fit(
        self, X: object, y: object, rng: np.random.Generator | int | None = None
    ) -> RegressionEstimate:
        data = prepare(X, y, self.on_bound)
        gen = as_generator(rng)
        n, d = data.X.shape
        ledger = Ledger(n)
        s = self.step_std(n)
        theta = np.zeros(d)
        idx = np.arange(n)
        for t in range(self.steps):
            g = data.X * (data.X @ theta - data.y)[:, None]
            nrm = row_norms(g)
            g *= np.minimum(1.0, self.clip / np.maximum(nrm, 1e-300))[:, None]
            gt = privatize_vector(g.mean(axis=0), s, gen)
            ledger.record(
                Release(f"gradient step {t}", idx, 2.0 * self.clip / n, s), exclusive=False
            )
            theta = theta - self.eta * gt
            nt = float(np.linalg.norm(theta))
            if nt > 1.0:
                theta /= nt
        g_ = (
            NON_PRIVATE
            if s == 0.0
            else ledger.shared_guarantee(self.delta, "central", "clipped DP-GD")
        )
        return RegressionEstimate(
            theta,
            _IDENTITY,
            None,
            math.inf,
            g_,
            ledger,
            {"step_std": s, "steps": self.steps, "clip": self.clip, "eta": self.eta},
            data.n_clipped_x + data.n_clipped_y,
        )
