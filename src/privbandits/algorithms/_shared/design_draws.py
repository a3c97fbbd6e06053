"""Compiled draws from the uniform-start G-optimal design, many action sets at once.

:func:`design_draws` runs, for each of ``N`` action sets, the Frank-Wolfe design of
:func:`privbandits.algorithms._shared.design.g_optimal_design` with ``init="uniform"`` and ``prune=False``
(working subspace from the SVD with the same rank tolerance, uniform start, Fedorov-Wynn steps
with the exact line search, stop at ``g <= factor m``) and then draws one action from it by
inverse CDF with a given uniform, as a client of Sarmasarkar (2026), Algorithm 1, line 14, does.
It is the compiled twin of that numpy path (the same steps, one compiled loop over the sets); a
property test compares the two designs.  ``V(pi)^{-1}`` enters through a Cholesky factor by
forward substitution instead of the explicit inverse of the factor, so the weights agree with the
numpy path to rounding.

References
----------
Lattimore & Szepesvari (2020), *Bandit Algorithms*, Chapter 21 (Frank-Wolfe for G-optimal design);
Todd (2016), *Minimum-Volume Ellipsoids*, Chapter 3 (Fedorov-Wynn step); Sarmasarkar (2026),
Algorithm 1.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from privbandits.algorithms._shared.design import RANK_TOL, fedorov_wynn_step
from privbandits.algorithms._shared.linalg import cholesky_lower

__all__ = ["design_draws", "uniform_start_design"]

#: The numpy path's Frank-Wolfe step, compiled (the same arithmetic).
_fedorov_wynn_step = nb.njit(cache=True, inline="always")(fedorov_wynn_step)


@nb.njit(cache=True)
def _leverages(Y: np.ndarray, pi: np.ndarray, g: np.ndarray) -> None:  # pragma: no cover - compiled
    """``g[a] = y_a^T V(pi)^{-1} y_a`` (``inf`` everywhere when ``V(pi)`` is not positive definite)."""
    n, m = Y.shape
    V = np.zeros((m, m))
    for a in range(n):
        if pi[a] > 0.0:
            for i in range(m):
                for j in range(i + 1):
                    V[i, j] += pi[a] * Y[a, i] * Y[a, j]
    L = np.zeros((m, m))
    if not cholesky_lower(V, L):  # fails as LAPACK does on a non-positive pivot
        g[:] = np.inf
        return
    z = np.empty(m)
    for a in range(n):
        tot = 0.0
        for i in range(m):
            s = Y[a, i]
            for k in range(i):
                s -= L[i, k] * z[k]
            z[i] = s / L[i, i]
            tot += z[i] * z[i]
        g[a] = tot


@nb.njit(cache=True)
def uniform_start_design(
    X: np.ndarray, factor: float, max_iter: int
) -> tuple[np.ndarray, bool]:  # pragma: no cover
    """Design weights ``pi`` (normalized) on the rows of ``X`` (n, d) and whether ``g <= factor m``.

    The steps of :func:`privbandits.algorithms._shared.design.g_optimal_design` with ``init="uniform"``,
    ``prune=False``: ``m = rank(X)`` (singular values above ``1e-9 max(1, sigma_max)``), the
    coordinates ``Y = X U``, ``pi`` uniform, then Frank-Wolfe steps toward the row with the largest
    ``G = y^T V(pi)^{-1} y`` with ``nu = (G/m - 1)/(G - 1)`` until ``G <= factor m`` (or ``max_iter``).
    """
    n, d = X.shape
    pi = np.zeros(n)
    _, s, Vt = np.linalg.svd(np.ascontiguousarray(X), full_matrices=False)
    smax = s[0] if s.size > 0 else 0.0
    m = 0
    for v in s:
        if v > RANK_TOL * max(1.0, smax):
            m += 1
    if m == 0:  # every action is the zero vector
        pi[0] = 1.0
        return pi, True
    Y = np.ascontiguousarray(X @ np.ascontiguousarray(Vt[:m].T))
    pi[:] = 1.0 / n
    target = factor * m + 1e-12
    g = np.empty(n)
    _leverages(Y, pi, g)
    k = 0
    while True:
        j = int(np.argmax(g))
        G = g[j]
        if G <= target or k >= max_iter:
            break
        _fedorov_wynn_step(pi, j, G, m)
        k += 1
        _leverages(Y, pi, g)
    converged = g.max() <= target
    for a in range(n):
        if not pi[a] > 0.0:
            pi[a] = 0.0
    return pi / pi.sum(), converged


@nb.njit(cache=True)
def design_draws(
    Z: np.ndarray, alive: np.ndarray, u: np.ndarray, factor: float, max_iter: int, out: np.ndarray
) -> int:  # pragma: no cover - compiled
    """For each set ``i``: the design on the rows ``Z[i, alive[i]]``, then the index (into the
    ``K`` rows) of the row whose cumulative weight first exceeds ``u[i] * sum(pi)``.

    Parameters
    ----------
    Z : ndarray of shape (N, K, d)
        The (scaled) arms of every set.
    alive : ndarray of bool, shape (N, K)
        The rows the design runs on (at least one per set).
    u : ndarray of shape (N,)
        One uniform in ``[0, 1)`` per set.
    factor, max_iter :
        As in :func:`uniform_start_design`.
    out : ndarray of int64, shape (N,)
        The drawn rows.

    Returns
    -------
    int
        Number of sets whose design missed ``g <= factor m`` within ``max_iter`` steps.
    """
    N, K, d = Z.shape
    missed = 0
    idx = np.empty(K, dtype=np.int64)
    for i in range(N):
        n = 0
        for a in range(K):
            if alive[i, a]:
                idx[n] = a
                n += 1
        Xs = np.empty((n, d))
        for a in range(n):
            Xs[a] = Z[i, idx[a]]
        pi, ok = uniform_start_design(Xs, factor, max_iter)
        if not ok:
            missed += 1
        total = pi.sum()
        x = u[i] * total
        c = 0.0
        j = 0
        for a in range(n):  # searchsorted(cumsum(pi), x, side="right")
            c += pi[a]
            if c <= x:
                j = a + 1
            else:
                break
        out[i] = idx[min(j, n - 1)]
    return missed
