"""Compiled round of ``chen-jdp`` and ``chen-elim`` (Chen et al. 2025, Algorithm 3 on Algorithm 2).

The same round as the numpy curator of :mod:`privbandits.algorithms.chen.jdp`, written as the
steps of a :class:`~privbandits.algorithms.kernel.CuratorKernel`:

* ``select``: Algorithm 4 on the billboard of released estimates
  (:func:`~privbandits.algorithms.chen.planning_kernel.plan_one`, the compiled planning step the
  numpy curator calls too; one ``policy`` uniform per user);
* ``update``: store the chosen feature (scaled into the unit ball, as the estimator's bound
  policy) and the reward clipped into ``[-1, 1]``; at the end of an epoch long enough to fit,
  ``JDP_L1_Regression`` (Algorithm 2) on the epoch's data: ``K`` spectral steps of Algorithm 1 on
  ``SymPriv`` releases of the batch averages (std ``sigma sqrt(2) ||U_k|| / N``), then ``M``
  projected gradient steps of Algorithm 7 on ``Priv`` releases of the batch gradients (std
  ``4 sigma / B``), the noise drawn from the ``server`` stream in the numpy estimator's order; the
  estimate ``(U w, U, c_b L_nu e_bar)`` is posted to the billboard.

``sigma = 0`` (``chen-elim``) draws nothing.  The epoch table (start, end, plan, ``lambda``, width
scale) is :func:`~privbandits.algorithms.chen.ldp_kernel.epoch_table` in the joint model; the
linear algebra runs through numba's LAPACK bindings (the numpy estimator through numpy's): the
two agree to rounding.

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Section 5 (Algorithms 3, 4),
Section 4 (Algorithms 1, 2) and Appendix C.4 (Algorithm 7).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from privbandits.algorithms.chen.ldp_kernel import (
    E_B,
    E_CREG,
    E_END,
    E_FIT,
    E_LAM,
    E_M,
    E_N,
    E_N1,
    E_SCALE,
    E_START,
    _clip_norm,
    _opnorm,
    _row_times,
    billboard_arrays,
    ellipsoid_point,
    epoch_table,
    kernel_params,
    latest_estimates,
    plan_select,
    spectral_step_nb,
)
from privbandits.algorithms.kernel import CuratorKernel, pinned
from privbandits.core.links import link_mu
from privbandits.privacy.samplers import CLIP_RTOL, add_gaussian, add_symmetric_gaussian
from privbandits.regression.reweighted import (
    GRADIENT_NORM,
    GRADIENT_SENSITIVITY,
    ReweightedRegression,
)

__all__ = ["build_jdp_kernel", "fit_jdp"]

SQRT2 = math.sqrt(2.0)


@nb.njit(cache=True)
def fit_jdp(
    Xb: np.ndarray,
    yb: np.ndarray,
    row: np.ndarray,
    Kn: int,
    sigma: float,
    eta: float,
    code: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Algorithm 2 on the epoch's features ``Xb (n, d)`` (in the unit ball) and rewards ``yb``
    (in ``[-1, 1]``) with the plan of the epoch table's ``row``: returns ``(U w, U)``."""
    d = Xb.shape[1]
    N, n1, M, B = int(row[E_N]), int(row[E_N1]), int(row[E_M]), int(row[E_B])
    lam, c_reg = row[E_LAM], row[E_CREG]
    U = np.eye(d)
    S = np.empty((d, d))
    V = np.empty(d)
    for k in range(Kn):  # Algorithm 1: one spectral step per batch
        S[:, :] = 0.0
        for i in range(k * N, (k + 1) * N):
            nrm = _row_times(Xb[i], U, V)
            inv = 1.0 / nrm if nrm > 0.0 else 0.0
            for a in range(d):
                va = V[a] * inv
                for c in range(d):
                    S[a, c] += va * V[c]
        S /= N
        S = 0.5 * (S + S.T)
        std = sigma * (SQRT2 * _opnorm(U) / N)
        if std > 0.0:
            add_symmetric_gaussian(rng, std, S)
        U = spectral_step_nb(U, S, lam)
    for i in range(d):
        for j in range(d):
            if not math.isfinite(U[i, j]):
                raise ValueError("the normalization matrix is not finite; increase c_lam")
    u, Q = np.linalg.eigh(0.5 * (U + U.T))
    u2 = u * u
    w = np.zeros(d)
    g = np.empty(d)
    gi = np.empty(d)
    for m in range(M):  # Algorithm 7: one projected step per batch
        g[:] = 0.0
        for i in range(n1 + m * B, n1 + (m + 1) * B):
            nrm = _row_times(Xb[i], U, V)
            z = 0.0
            for c in range(d):
                z += V[c] * w[c]
            inv = 1.0 / nrm if nrm > 0.0 else 0.0
            resid = link_mu(code, min(max(z, -1.0), 1.0)) - min(max(yb[i], -1.0), 1.0)
            for c in range(d):
                gi[c] = V[c] * (inv * resid)
            _clip_norm(gi, GRADIENT_NORM)
            g += gi
        g /= B
        std = sigma * (GRADIENT_SENSITIVITY / B)
        if std > 0.0:
            add_gaussian(rng, std, g)
        ellipsoid_point(w - eta * (g + c_reg * (U @ w)), u2, Q, w)
    return U @ w, U


@nb.njit(cache=True)
def update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Store the round's data; at the end of an epoch fit Algorithm 2 and post the estimate."""
    code, sigma, Kn, eta, table = params[0], params[2], params[3], params[4], params[5]
    Xb, yb, epoch, n_boards, b_theta, b_U, b_scale, rounds = state
    e = epoch[r]
    row = table[e]
    i = t - int(row[E_START])
    phi = X[a]
    d = phi.shape[0]
    sq = 0.0
    for c in range(d):
        sq += phi[c] * phi[c]
    nrm = math.sqrt(sq)
    over = nrm > 1.0 + CLIP_RTOL
    for c in range(d):
        Xb[r, i, c] = phi[c] / nrm if over else phi[c]
    yb[r, i] = min(max(y, -1.0), 1.0)
    rounds[r] += 1
    if t + 1 != int(row[E_END]):
        return
    if row[E_FIT] != 0.0:
        _post(
            Xb[r, : i + 1],
            yb[r, : i + 1],
            row,
            Kn,
            sigma,
            eta,
            code,
            rng,
            r,
            n_boards,
            b_theta,
            b_U,
            b_scale,
        )
    epoch[r] = e + 1


@pinned
def _post(Xb, yb, row, Kn, sigma, eta, code, rng, r, n_boards, b_theta, b_U, b_scale):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Fit Algorithm 2 on the epoch's data and post the estimate on replication ``r``'s billboard.
    Pinned to numba's runtime (the fit allocates) and returns nothing, so that the per-round
    step compiles without it (:attr:`~privbandits.algorithms.kernel.CuratorKernel.allocates`)."""
    theta, U = fit_jdp(Xb, yb, row, Kn, sigma, eta, code, rng)
    j = n_boards[r]
    b_theta[r, j] = theta
    b_U[r, j] = U
    b_scale[r, j] = row[E_SCALE]
    n_boards[r] += 1


def build_jdp_kernel(
    reg: ReweightedRegression,
    ends: np.ndarray,
    min_fit: int,
    d: int,
    R: int,
    spanner_C: float,
    n_actions: int,
) -> CuratorKernel:
    """A fresh :class:`~privbandits.algorithms.kernel.CuratorKernel` of ``chen-jdp`` / ``chen-elim``
    for ``R`` replications (state: the epoch's features and rewards, the epoch, the billboard,
    rounds seen; ``n_actions``: the number of actions, the size of the planning step's scratch)."""
    table = epoch_table(reg, ends, min_fit, d)
    nmax = int(np.max(np.diff(ends, prepend=0)))
    state = (
        np.zeros((R, nmax, d)),
        np.zeros((R, nmax)),
        np.zeros(R, dtype=np.int64),
        *billboard_arrays(R, len(ends), d),
        np.zeros(R, dtype=np.int64),
    )
    return CuratorKernel(
        plan_select,
        update,
        kernel_params(reg, table, spanner_C, n_actions, d, R),
        state,
        estimate=lambda: latest_estimates(state[3], state[4]),
        allocates=False,
    )
