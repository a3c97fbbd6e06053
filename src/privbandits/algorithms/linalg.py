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
