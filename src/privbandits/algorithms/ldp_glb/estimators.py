"""Server-side estimators phi of Han et al. (2021): private OLS (eq. 3.3-3.4) and SGD (eq. 3.5-3.6).

Compiled, one replication ``r`` and one estimator ``k`` at a time (``k = 0`` in the
single-parameter setting, the arm in the multi-parameter setting), on state arrays
``S_M (R, K_est, d, d)``, ``S_u (R, K_est, d)``, ``theta (R, K_est, d)`` and the scratch
``A (R, d, d + 2)`` (:func:`solver_scratch`).
The same functions run the server of LDP-OLS / LDP-SGD (fed privatized messages) and the
non-private twins of :mod:`privbandits.algorithms.linear.greedy` (fed raw statistics).

References
----------
Han, Liang, Wang, Zhang (2021), "Generalized Linear Bandits with Local Differential Privacy",
NeurIPS, section 3.1 (eq. 3.3-3.4, OLS) and section 3.2 (eq. 3.5-3.6, SGD).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from privbandits.core.links import link_mu

__all__ = [
    "STEP_SCHEDULES",
    "glm_gradient",
    "ols_accumulate",
    "ols_solve",
    "sgd_step",
    "solver_scratch",
    "step_size",
]

#: ``eta0 m / (n + t0)`` ("inv_t") or ``eta0 m / sqrt(n + t0)`` ("inv_sqrt_t").
STEP_SCHEDULES: tuple[str, ...] = ("inv_t", "inv_sqrt_t")


def solver_scratch(R: int, d: int) -> np.ndarray:
    """The solver's scratch ``A (R, d, d + 2)``: the augmented system ``[S_M + shift I | S_u]``
    and, for the rare singular system, the column permutation (:func:`ols_solve`)."""
    return np.zeros((R, d, d + 2))


@nb.njit(cache=True, inline="always")
def ols_accumulate(S_M, S_u, r, k, msg, m0, u0):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Line 1 of OLS_UPDATE (Han et al. 2021, eq. 3.3-3.4): ``S_M += M``, ``S_u += u`` for estimator ``(r, k)``.

    ``M`` (row-major ``d x d``) and ``u`` are read from the flat vector ``msg`` at offsets ``m0``
    and ``u0`` (a message, or the twin's noiseless statistics).
    """
    d = S_u.shape[2]
    for i in range(d):
        S_u[r, k, i] += msg[u0 + i]
        for j in range(d):
            S_M[r, k, i, j] += msg[m0 + i * d + j]


@nb.njit(cache=True, inline="always")
def _augment(S_M, S_u, A, r, k, shift, d):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """The augmented system ``A[r] = [S_M[r, k] + shift I | S_u[r, k]]``."""
    for i in range(d):
        for j in range(d):
            A[r, i, j] = S_M[r, k, i, j]
        A[r, i, i] += shift
        A[r, i, d] = S_u[r, k, i]


@nb.njit(cache=True, inline="always")
def ols_solve(S_M, S_u, theta, A, r, k, shift):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Lines 2-3 of OLS_UPDATE: ``theta[r, k] = (S_M[r, k] + shift I)^{-1} S_u[r, k]`` (eq. 3.4).

    Gaussian elimination with partial pivoting on the augmented scratch ``A[r] = [S_M + shift I |
    S_u]`` (the noisy ``S_M`` need not be positive definite); an exactly singular system (e.g.
    ``shift = 0`` before enough data) gets the basic solution of complete pivoting (free
    coordinates 0).
    """
    d = theta.shape[2]
    _augment(S_M, S_u, A, r, k, shift, d)
    for c in range(d):
        p, big = c, abs(A[r, c, c])
        for i in range(c + 1, d):
            if abs(A[r, i, c]) > big:
                p, big = i, abs(A[r, i, c])
        if big == 0.0:
            _basic_solution(S_M, S_u, theta, A, r, k, shift)
            return
        if p != c:
            for j in range(c, d + 1):
                A[r, c, j], A[r, p, j] = A[r, p, j], A[r, c, j]
        for i in range(c + 1, d):
            f = A[r, i, c] / A[r, c, c]
            for j in range(c + 1, d + 1):
                A[r, i, j] -= f * A[r, c, j]
    for i in range(d - 1, -1, -1):
        s = A[r, i, d]
        for j in range(i + 1, d):
            s -= A[r, i, j] * theta[r, k, j]
        theta[r, k, i] = s / A[r, i, i]


@nb.njit(cache=True, inline="always")
def _basic_solution(S_M, S_u, theta, A, r, k, shift):  # type: ignore[no-untyped-def]  # pragma: no cover
    """An exactly singular ``(S_M + shift I) theta = S_u`` (rare: e.g. ``shift = 0`` for an arm
    without data): Gaussian elimination with complete pivoting; the coordinates without a pivot
    are set to 0 (``theta = 0`` when the matrix is 0).

    No allocation: the column permutation is kept (as exact small floats) in the scratch's
    column ``d + 1`` and the solution overwrites the right-hand side, column ``d``."""
    d = theta.shape[2]
    _augment(S_M, S_u, A, r, k, shift, d)
    for i in range(d):
        A[r, i, d + 1] = i
    rank = d
    for c in range(d):
        p, q, big = c, c, 0.0
        for i in range(c, d):
            for j in range(c, d):
                if abs(A[r, i, j]) > big:
                    p, q, big = i, j, abs(A[r, i, j])
        if big == 0.0:
            rank = c
            break
        for j in range(d + 1):
            A[r, c, j], A[r, p, j] = A[r, p, j], A[r, c, j]
        for i in range(d):
            A[r, i, c], A[r, i, q] = A[r, i, q], A[r, i, c]
        A[r, c, d + 1], A[r, q, d + 1] = A[r, q, d + 1], A[r, c, d + 1]
        for i in range(c + 1, d):
            f = A[r, i, c] / A[r, c, c]
            for j in range(c, d + 1):
                A[r, i, j] -= f * A[r, c, j]
    for i in range(rank - 1, -1, -1):
        s = A[r, i, d]
        for j in range(i + 1, rank):
            s -= A[r, i, j] * A[r, j, d]
        A[r, i, d] = s / A[r, i, i]
    for i in range(rank, d):
        A[r, i, d] = 0.0
    for i in range(d):
        theta[r, k, int(A[r, i, d + 1])] = A[r, i, d]


@nb.njit(cache=True, inline="always")
def step_size(n, eta0, t0, inv_sqrt, m):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """SGD step ``eta0 m / (n + t0)`` or, with ``inv_sqrt``, ``eta0 m / sqrt(n + t0)``.

    ``n`` counts the estimator's updates including the current one (Han et al. 2021, eq. 3.5-3.6 and Algorithm 2: the authors'
    code uses ``5 / (t + 1)`` single-parameter and ``5 K / (t + 1)`` after the multi warm-up).
    """
    if inv_sqrt:
        return eta0 * m / math.sqrt(n + t0)
    return eta0 * m / (n + t0)


@nb.njit(cache=True, inline="always")
def sgd_step(theta, r, k, Z, z0, eta, ridge, rho):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """SGD_UPDATE (Han et al. 2021, eq. 3.5-3.6 lines 5-7): ``theta <- theta - eta Z`` (eq. 3.6), then the optional
    ridge ``theta <- theta - eta lambda theta`` and projection onto ``||theta|| <= rho``
    (``rho = inf``: off).

    ``Z`` is read from the flat vector ``Z`` at offset ``z0`` (a message slot, or the twin's raw
    gradient at ``z0 = 0``)."""
    d = theta.shape[2]
    shrink = 1.0 - eta * ridge
    s = 0.0
    for i in range(d):
        v = (theta[r, k, i] - eta * Z[z0 + i]) * shrink
        theta[r, k, i] = v
        s += v * v
    if s > rho * rho:
        c = rho / math.sqrt(s)
        for i in range(d):
            theta[r, k, i] *= c


@nb.njit(cache=True, inline="always")
def glm_gradient(link, x, y, theta, r, k, g):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``g = (mu(x^T theta[r, k]) - y) x``: the stochastic gradient of the GLM negative
    log-likelihood (eq. 3.5; ``link`` is :attr:`privbandits.core.links.Link.code`)."""
    d = x.shape[0]
    z = 0.0
    for i in range(d):
        z += x[i] * theta[r, k, i]
    c = link_mu(link, z) - y
    for i in range(d):
        g[i] = c * x[i]
