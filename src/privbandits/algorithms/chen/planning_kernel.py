"""Algorithm 4 of Chen et al. (2025) for every replication of a round, in one compiled loop.

The same computation as :func:`privbandits.algorithms.chen.planning.planning_support` followed by
the uniform draw over the support (the reference numpy form, kept for reading and for the tests
that compare the two): for each replication, the actions that survive every released estimate's
test ``UCB_a >= max_a' LCB_a'`` (Eq. 8), a ``C``-approximate barycentric spanner of the survivors
(Awerbuch & Kleinberg 2004, as :func:`privbandits.algorithms.chen.spanner.barycentric_spanner`),
and one ``policy`` uniform per replication, drawn in replication order as the numpy form draws it.

The released estimates are packed per replication: ``theta (R, J, d)``, ``U (R, J, d, d)``,
``scale (R, J)`` and the number released so far ``n_boards (R,)``.

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Section 5, Algorithm 4 and Eq. (8);
Awerbuch & Kleinberg (2004), Proposition 2.4.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from privbandits.core.links import link_mu

__all__ = ["SPANNER_TOL", "select_planned", "spanner_indices"]

#: Relative singular-value tolerance of the spanner's numerical rank (as ``barycentric_spanner``).
SPANNER_TOL = 1e-9


@nb.njit(cache=True)
def spanner_indices(
    F: np.ndarray, C: float, tol: float, out: np.ndarray
) -> int:  # pragma: no cover - compiled
    """Sorted distinct indices of a ``C``-approximate barycentric spanner of the rows of ``F`` into
    ``out``; returns their number (one index, 0, when ``F = 0``)."""
    m = F.shape[0]
    _, s, vt = np.linalg.svd(F, full_matrices=False)
    if s.size == 0 or s[0] <= 0.0:
        out[0] = 0
        return 1
    r = 0
    for v in s:
        if v > tol * s[0]:
            r += 1
    G = F @ np.ascontiguousarray(vt[:r].T)  # coordinates in span(F): m x r
    X = np.eye(r)
    idx = np.zeros(r, dtype=np.int64)
    for i in range(r):  # phase 1: det(X with column i := g) = det(X) (X^{-1} g)_i
        row = np.linalg.inv(X)[i].copy()
        best, j = -1.0, 0
        for k in range(m):
            v = abs(np.dot(G[k], row))
            if v > best:
                best, j = v, k
        X[:, i] = G[j]
        idx[i] = j
    GT = np.ascontiguousarray(G.T)
    for _ in range(
        int(100 * r * math.log(r + 1)) + 100
    ):  # phase 2: swap while a coefficient exceeds C
        coef = np.linalg.solve(X, GT)  # r x m
        flat = np.argmax(np.abs(coef))
        ii, jj = flat // m, flat % m
        if abs(coef[ii, jj]) <= C:
            break
        X[:, ii] = G[jj]
        idx[ii] = jj
    idx.sort()
    n = 0
    for k in range(r):
        if n == 0 or idx[k] != out[n - 1]:
            out[n] = idx[k]
            n += 1
    return n


@nb.njit(cache=True)
def select_planned(
    contexts: np.ndarray,
    theta: np.ndarray,
    U: np.ndarray,
    scale: np.ndarray,
    n_boards: np.ndarray,
    code: int,
    C: float,
    tol: float,
    rng: np.random.Generator,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """One round of Algorithm 4 in every replication: ``out[r]`` uniform over the ``C``-spanner of
    the actions of ``contexts[r]`` (K, d) that survive the ``n_boards[r]`` released estimates."""
    R, K, d = contexts.shape
    f = np.empty(K)
    b = np.empty(K)
    keep = np.empty(K, dtype=np.bool_)
    buf = np.empty(K, dtype=np.int64)
    for r in range(R):
        F = contexts[r]
        keep[:] = True
        for j in range(
            n_boards[r]
        ):  # an estimate that would leave no action is skipped (as surviving)
            lcb = -np.inf
            for a in range(K):
                z = 0.0
                for i in range(d):
                    z += F[a, i] * theta[r, j, i]
                f[a] = min(1.0, max(-1.0, link_mu(code, z)))
                sq = 0.0
                for c in range(d):
                    v = 0.0
                    for i in range(d):
                        v += F[a, i] * U[r, j, i, c]
                    sq += v * v
                b[a] = min(2.0, scale[r, j] * math.sqrt(sq))
                lcb = max(lcb, f[a] - b[a])
            left = 0
            for a in range(K):
                if keep[a] and f[a] + b[a] >= lcb:
                    left += 1
            if left > 0:
                for a in range(K):
                    if f[a] + b[a] < lcb:
                        keep[a] = False
        S = np.flatnonzero(keep)
        n = spanner_indices(np.ascontiguousarray(F[S]), C, tol, buf)
        k = min(int(rng.random() * n), n - 1)
        out[r] = S[buf[k]]
