"""ECOLog (Faury, Abeille, Jun & Calauzenes 2022): efficient and optimal logistic bandit, compiled.

ECOLog ("Efficient COnfidence sets for LOGistic bandits") keeps one online estimate ``theta_t``
updated by a single regularised step per round,

.. math::

    \\theta_{t+1} = \\operatorname*{argmin}_{\\lVert\\theta\\rVert \\le S}
    \\ell_{t+1}(\\theta) + \\tfrac12 \\lVert \\theta - \\theta_t \\rVert^2_{\\tilde V_t},
    \\qquad \\tilde V_{t+1} = \\tilde V_t + \\dot\\mu(x_t^\\top \\theta_{t+1})\\, x_t x_t^\\top,
    \\quad \\tilde V_0 = \\lambda I,

with the logistic loss ``l(theta) = -y log mu(x^T theta) - (1 - y) log(1 - mu(x^T theta))``, and plays
the optimistic arm ``argmax_x mu(x^T theta_t) + rho_t ||x||_{V~_t^{-1}}``.  The radius is the
data-dependent one of the authors' public code (the no-warm-up variant, which the baselines of
Sarmasarkar (2026) reuse): a second step ``theta_bar`` on the label-averaged loss (gradient
``(2 mu(x^T theta) - 1) x``) measures the discrepancy

.. math::

    L_t = \\sum_{s \\le t} 2 (1 + S) \\big(\\ell_s(\\bar\\theta_{s+1}) - \\ell_s(\\theta_{s+1})\\big)
    - \\tfrac12 \\lVert \\theta_{s+1} - \\bar\\theta_{s+1} \\rVert_{\\tilde V_s},

    \\gamma_t = \\tfrac{\\sqrt\\lambda}{2} + \\tfrac{2}{\\sqrt\\lambda}
    \\ln\\!\\Big(\\tfrac{2}{\\delta}\\sqrt{1 + \\tfrac{t}{4\\lambda}}\\Big), \\qquad
    \\rho_t^2 = 2 \\lambda S^2 + (1 + S)^2 \\gamma_t + L_t .

Each regularised step is solved as the public code solves it: ``n_t`` steps of projected gradient
descent with step ``0.75 / (1/4 + 1/(1 + S/2))`` and ``n_t = floor((4/3) ceil((9/4 + S/8)
ln(S t)))`` (precision ``1/t``).  The public code takes the steps in the whitened coordinates
``z = V~^{1/2} theta``; here they are taken in ``theta`` (``theta <- theta - eta (theta - theta_t +
g V~^{-1} x)`` followed by the projection onto ``{||theta|| <= S}`` in the ``V~`` norm), the same
iterates mapped back, without matrix square roots.  The code also checks that
``mu'(x^T theta_bar) / mu'(x^T theta) <= 2`` (its data-dependent condition) and stops the run when it
fails; here the count of such rounds is kept (:attr:`ECOLog.condition_failures`) and the run goes on.

References
----------
Faury, Abeille, Jun & Calauzenes (2022), "Jointly Efficient and Optimal Algorithms for Logistic
Bandits", AISTATS: ECOLog (the online Newton-like update and its confidence set).  The constants
(``lambda = 10``, the step size and iteration count, the radius above) are those of the authors'
public code, as reused in the GLBandit_Limited_Adaptivity baselines of Sawarni et al. (2024).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms._shared.linalg import (
    add_outer,
    dot,
    feature_single,
    mahalanobis_ball_projection_row,
    mat_vec,
    sherman_morrison_row,
    ucb_argmax_single,
)
from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import Calibration, Constants
from privbandits.algorithms.kernel import CuratorKernel
from privbandits.algorithms.registry import register
from privbandits.core.errors import NotResetError
from privbandits.core.links import LINK_LOGISTIC, link_dmu, link_mu
from privbandits.core.params import Delta, Optional, Positive
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = ["ECOLog", "ECOLogConstants", "ecolog_gamma", "ecolog_iterations", "ecolog_step"]


@nb.njit(cache=True)
def ecolog_gamma(lam: float, t: float, delta: float) -> float:  # pragma: no cover - compiled
    """``gamma_t = sqrt(lam)/2 + (2/sqrt(lam)) ln((2/delta) sqrt(1 + t/(4 lam)))``."""
    return math.sqrt(lam) / 2.0 + 2.0 * math.log(
        2.0 * math.sqrt(1.0 + t / (4.0 * lam)) / delta
    ) / math.sqrt(lam)


@nb.njit(cache=True)
def ecolog_iterations(S: float, t: float) -> int:  # pragma: no cover - compiled
    """Projected-gradient steps per update at precision ``1/t``:
    ``floor((4/3) ceil((9/4 + S/8) ln(S t)))`` (at least one)."""
    n = int((1.0 / 0.75) * math.ceil((9.0 / 4.0 + S / 8.0) * math.log(S * t)))
    return max(n, 1)


@nb.njit(cache=True)
def ecolog_step(S: float) -> float:  # pragma: no cover - compiled
    """The projected-gradient step size ``0.75 / (1/4 + 1/(1 + S/2))``."""
    return 0.75 / (0.25 + 1.0 / (1.0 + S / 2.0))


@nb.njit(cache=True)
def _solve(V, V_inv, x, y, theta_t, S, n_iter, eta, bar, w, out, Vx, L, c, tmp):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``argmin_{||theta|| <= S} l(theta) + ||theta - theta_t||^2_V / 2`` by ``n_iter`` projected
    gradient steps from ``theta_t``; ``bar``: the label-averaged loss (gradient ``(2 mu - 1) x``)."""
    D = x.shape[0]
    mat_vec(V_inv, x, Vx)
    for i in range(D):
        out[i] = theta_t[i]
    for _ in range(n_iter):
        p = link_mu(LINK_LOGISTIC, dot(out, x))
        g = 2.0 * p - 1.0 if bar else p - y
        for i in range(D):
            w[i] = out[i] - eta * (out[i] - theta_t[i] + g * Vx[i])
        mahalanobis_ball_projection_row(V, w, S, out, L, c, tmp)


@nb.njit(cache=True, inline="always")
def _log_loss(z: float, y: float) -> float:  # pragma: no cover - compiled
    """``-y log mu(z) - (1 - y) log(1 - mu(z))`` for the logistic link, computed stably."""
    # log mu(z) = -log(1 + e^{-z}); log(1 - mu(z)) = -log(1 + e^{z})
    lp = -(max(-z, 0.0) + math.log1p(math.exp(-abs(z))))
    lq = -(max(z, 0.0) + math.log1p(math.exp(-abs(z))))
    return -y * lp - (1.0 - y) * lq


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``argmax_x mu(x^T theta_t) + rho_t ||x||_{V~_t^{-1}}`` with the radius of the code's bonus."""
    lam, delta, S = params[0], params[1], params[2]
    V_inv, theta, cum_loss, ctr = state[1], state[2], state[3], state[4]
    gamma = ecolog_gamma(lam, ctr[r], delta)
    rho2 = 2.0 * lam * S * S + (1.0 + S) ** 2 * gamma + cum_loss[r]
    return ucb_argmax_single(
        X, theta[r], V_inv[r], math.sqrt(max(rho2, 0.0)), LINK_LOGISTIC, False, rng
    )


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """One ECOLog update: the regularised step for ``theta`` and ``theta_bar``, the loss
    discrepancy, then ``V~ += mu'(x^T theta) x x^T`` (Sherman-Morrison for its inverse)."""
    S = params[2]
    V, V_inv, theta, cum_loss, ctr, failures, x, theta_bar, w, prev, Vx, L, c, tmp = state
    xr = x[r]
    feature_single(X, a, xr)
    ctr[r] += 1.0
    n_iter = ecolog_iterations(S, ctr[r])
    eta = ecolog_step(S)
    for i in range(xr.shape[0]):
        prev[r, i] = theta[r, i]
    _solve(
        V[r],
        V_inv[r],
        xr,
        y,
        prev[r],
        S,
        n_iter,
        eta,
        False,
        w[r],
        theta[r],
        Vx[r],
        L[r],
        c[r],
        tmp[r],
    )
    _solve(
        V[r],
        V_inv[r],
        xr,
        y,
        theta[r],
        S,
        n_iter,
        eta,
        True,
        w[r],
        theta_bar[r],
        Vx[r],
        L[r],
        c[r],
        tmp[r],
    )
    # ||theta - theta_bar||_{V~} with the matrix before this round's update
    for i in range(xr.shape[0]):
        w[r, i] = theta[r, i] - theta_bar[r, i]
    mat_vec(V[r], w[r], Vx[r])
    disc = math.sqrt(max(dot(w[r], Vx[r]), 0.0))
    z = dot(theta[r], xr)
    z_bar = dot(theta_bar[r], xr)
    s = link_dmu(LINK_LOGISTIC, z)
    if link_dmu(LINK_LOGISTIC, z_bar) > 2.0 * s:
        failures[r] += 1.0
    add_outer(V[r], xr, s)
    root = math.sqrt(s)
    for i in range(xr.shape[0]):
        w[r, i] = root * xr[i]
    sherman_morrison_row(V_inv[r], w[r], Vx[r])
    y01 = min(max(y, 0.0), 1.0)
    cum_loss[r] += 2.0 * (1.0 + S) * (_log_loss(z_bar, y01) - _log_loss(z, y01)) - 0.5 * disc


@dataclass(frozen=True)
class ECOLogConstants(Constants):
    """ECOLog: dimension ``d``, ``lambda``, the parameter bound ``S`` and the confidence ``delta``."""

    d: int
    lam: float
    S: float
    delta: float


@register
class ECOLog(Curator):
    """ECOLog (Faury et al. 2022), the no-warm-up variant of the authors' public code: a
    non-private logistic bandit with one regularised online step per round.

    Parameters
    ----------
    lam : float
        Regularisation ``lambda > 0`` of ``V~_0 = lambda I`` (the public code's 10).
    delta : float
        Confidence level of the radius, in (0, 1).
    S : float, optional
        Bound on ``||theta*||``: the radius of the constraint set and of the step's diameter
        (default: the environment's ``theta_bound``).

    References
    ----------
    Faury, Abeille, Jun & Calauzenes (2022), AISTATS, ECOLog; constants of the authors' public code.
    """

    name = "ecolog"
    settings = ("single",)
    links = ("logistic",)
    paper = "Faury et al. 2022"
    constraints: ClassVar = {"lam": Positive, "delta": Delta, "S": Optional(Positive)}
    test_params: ClassVar = ({}, {"lam": 2.0, "delta": 0.1, "S": 1.5})

    def __init__(self, lam: float = 10.0, delta: float = 0.05, S: float | None = None) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Resolve ``S`` on ``spec`` (non-private)."""
        S = spec.theta_bound if self.S is None else self.S
        return Calibration(NON_PRIVATE, constants=ECOLogConstants(spec.d, self.lam, S, self.delta))

    def build_kernel(self) -> CuratorKernel:
        c, R = self.calibration.typed(ECOLogConstants), self.R
        d = int(c.d)
        eye = np.eye(d)
        V = np.broadcast_to(eye * c.lam, (R, d, d)).copy()
        V_inv = np.broadcast_to(eye / c.lam, (R, d, d)).copy()
        theta = np.zeros((R, d))
        state = (
            V,
            V_inv,
            theta,
            np.zeros(R),  # cumulative loss discrepancy L_t
            np.ones(R),  # the code's counter (1 before the first update)
            np.zeros(R),  # rounds whose data-dependent condition failed
            np.zeros((R, d)),  # x_t
            np.zeros((R, d)),  # theta_bar
            np.zeros((R, d)),  # scratch
            np.zeros((R, d)),  # theta_t before the step
            np.zeros((R, d)),
            np.zeros((R, d, d)),
            np.zeros((R, d)),
            np.zeros((R, d)),
        )
        params = (float(c.lam), float(c.delta), float(c.S))
        return CuratorKernel(
            _select, _update, params, state, estimate=lambda: theta, allocates=False
        )

    @property
    def condition_failures(self) -> np.ndarray:
        """Per replication, the rounds where ``mu'(x^T theta_bar) > 2 mu'(x^T theta)`` (the public
        code stops there; this run continues)."""
        return self._state()[5].copy()

    @property
    def radius(self) -> np.ndarray:
        """The current radius ``rho_t`` per replication."""
        c = self.calibration.typed(ECOLogConstants)
        st = self._state()
        gamma = np.array([ecolog_gamma(c.lam, float(t), c.delta) for t in st[4]])
        return np.sqrt(np.maximum(2 * c.lam * c.S**2 + (1 + c.S) ** 2 * gamma + st[3], 0.0))

    def _state(self) -> tuple[np.ndarray, ...]:
        if not isinstance(self.kernel, CuratorKernel):
            raise NotResetError(f"{self.name}: call reset(...) or simulate(...) first")
        return self.kernel.state
