"""C-approximate barycentric spanners (Awerbuch & Kleinberg 2004), for the exploration of
Chen et al. (2025), Algorithm 4.

A set ``Lambda`` of rows of ``F`` is a C-approximate barycentric spanner if every row of ``F`` is a
combination of the rows in ``Lambda`` with coefficients in ``[-C, C]``.  The construction is
linear-invariant (the spanner of ``F W^T`` for invertible ``W`` is the spanner of ``F``), so one
spanner serves every later normalization matrix ``U``.

References
----------
Awerbuch & Kleinberg (2004), "Adaptive routing with end-to-end feedback", STOC, Proposition 2.4;
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Section 5 (Algorithm 4).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["barycentric_spanner"]


def barycentric_spanner(F: np.ndarray, C: float = 2.0, tol: float = 1e-9) -> np.ndarray:
    """Indices of a ``C``-approximate barycentric spanner of the rows of ``F`` (m, d), ``C > 1``.

    Works in coordinates of an orthonormal basis of ``span(F)`` (numerical rank ``r``, tolerance
    ``tol * sigma_max``): the standard basis when ``r = d``, the leading right singular vectors
    otherwise; returns ``r`` distinct indices (one index when ``F = 0``).
    """
    _, s, vt = np.linalg.svd(F, full_matrices=False)
    if s.size == 0 or s[0] <= 0.0:
        return np.array([0], dtype=np.int64)
    r = int(np.sum(s > tol * s[0]))
    # coordinates in span(F): m x r; when span(F) = R^d the standard basis is an orthonormal basis
    G = F if r == F.shape[1] else F @ vt[:r].T
    X = np.eye(r)
    idx = np.zeros(r, dtype=np.int64)
    for i in range(r):  # phase 1: det(X with column i := g) = det(X) (X^{-1} g)_i
        vals = np.abs(G @ np.linalg.inv(X)[i])
        j = int(np.argmax(vals))
        X[:, i] = G[j]
        idx[i] = j
    for _ in range(
        int(100 * r * math.log(r + 1)) + 100
    ):  # phase 2: swap while a coefficient exceeds C
        coef = np.linalg.solve(X, G.T)  # r x m
        ii, jj = np.unravel_index(int(np.argmax(np.abs(coef))), coef.shape)
        if abs(coef[ii, jj]) <= C:
            break
        X[:, ii] = G[jj]
        idx[ii] = jj
    return np.unique(idx)
