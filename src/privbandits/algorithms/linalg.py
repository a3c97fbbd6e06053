"""Batched linear-algebra kernels shared by the algorithms (leading replication axis R)."""

from __future__ import annotations

import numpy as np

__all__ = ["sherman_morrison_update", "quad_form", "chosen", "batched_solve"]


def chosen(contexts: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Feature vectors of the chosen arms: ``(R, K, d), (R,) -> (R, d)``."""
    return contexts[np.arange(contexts.shape[0]), actions]


def quad_form(M: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``x^T M x`` for every arm: ``(R, d, d), (R, K, d) -> (R, K)``."""
    return np.einsum("rkd,rkd->rk", X @ M, X)  # much faster than a three-operand einsum


def sherman_morrison_update(V_inv: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Return ``(V + x x^T)^{-1}`` from ``V^{-1}`` (R, d, d) and ``x`` (R, d), plus ``x^T V^{-1} x``.

    Returns
    -------
    V_inv_new : ndarray (R, d, d)
    q : ndarray (R,)
        ``x^T V^{-1} x`` before the update (used for ``log det`` via the determinant lemma).
    """
    Vx = np.einsum("rde,re->rd", V_inv, x)
    q = np.einsum("rd,rd->r", x, Vx)
    V_inv_new = V_inv - np.einsum("rd,re->rde", Vx, Vx) / (1.0 + q)[:, None, None]
    return V_inv_new, q


def batched_solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``A x = b`` for each replication; falls back to least squares if ``A`` is singular."""
    try:
        return np.linalg.solve(A, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return np.stack([np.linalg.lstsq(a, v, rcond=None)[0] for a, v in zip(A, b)])


def solve_2x2(A: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """Closed-form batched solve of ``A x = b`` for ``2 x 2`` systems (Cramer's rule).

    About five times faster than a batched LAPACK call at this size, with the same accuracy on
    well-conditioned systems.  Returns None when some system is singular or ill-conditioned
    (``|det| <= 1e-12 * ||A||_F^2``), so the caller can fall back to a pivoted solver.
    """
    a, b_, c, e = A[..., 0, 0], A[..., 0, 1], A[..., 1, 0], A[..., 1, 1]
    det = a * e - b_ * c
    scale = a * a + b_ * b_ + c * c + e * e
    if not np.all(np.abs(det) > 1e-12 * scale):
        return None
    u0, u1 = b[..., 0], b[..., 1]
    out = np.empty(b.shape)
    out[..., 0] = (e * u0 - b_ * u1) / det
    out[..., 1] = (a * u1 - c * u0) / det
    return out


def spd_inverse(A: np.ndarray) -> np.ndarray | None:
    """Inverse of a batch of symmetric matrices, or None if any is not positive definite.

    ``2 x 2``: closed form with the exact PD test ``a > 0, det > 0`` (several times faster than
    Cholesky + LAPACK inverse at this size); otherwise a Cholesky test and ``numpy.linalg.inv``.
    """
    if A.shape[-1] == 2:
        a, b, e = A[..., 0, 0], A[..., 0, 1], A[..., 1, 1]
        det = a * e - b * b
        if not (np.all(a > 0.0) and np.all(det > 1e-300)):
            return None
        out = np.empty(A.shape)
        out[..., 0, 0] = e / det
        out[..., 1, 1] = a / det
        out[..., 0, 1] = out[..., 1, 0] = -b / det
        return out
    try:
        np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return None
    return np.linalg.inv(A)
