"""Matrix primitives of re-weighted regression: PSD functions, the polar factor, ellipsoid projection.

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), "Near-optimal private learning in linear contextual bandits",
arXiv:2502.13115v1, Section 4 (the spectral iteration uses ``sym(A) = (A^T A)^{1/2}``, the right polar
factor, and projected gradient descent on ``{w : ||U w|| <= 1}``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = [
    "EllipsoidProjector",
    "clip_rows",
    "proj_ellipsoid",
    "psd_apply",
    "psd_project",
    "row_norms",
    "sym_polar",
]


def psd_apply(S: np.ndarray, f: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``Q diag(f(e)) Q^T`` for the eigen-decomposition ``(e, Q)`` of the symmetric part of ``S``."""
    S = 0.5 * (S + S.T)
    e, Q = np.linalg.eigh(S)
    out: np.ndarray = (Q * f(e)) @ Q.T
    return 0.5 * (out + out.T)


def psd_project(S: np.ndarray) -> np.ndarray:
    """Frobenius projection of a symmetric matrix onto the PSD cone (negative eigenvalues set to 0)."""
    return psd_apply(S, lambda e: np.maximum(e, 0.0))


def sym_polar(A: np.ndarray) -> np.ndarray:
    """The right polar factor ``(A^T A)^{1/2}``: the symmetric PSD ``S`` with ``||S v|| = ||A v||``.

    Chen et al. (2025), Section 4 (``sym`` of the spectral iteration).
    """
    return psd_apply(A.T @ A, lambda e: np.sqrt(np.maximum(e, 0.0)))


def row_norms(F: np.ndarray, U: np.ndarray | None = None) -> np.ndarray:
    """``||U f||`` for every row ``f`` of ``F`` (``||f||`` when ``U`` is None); ``U`` symmetric."""
    G = F if U is None else F @ U
    return np.sqrt(np.einsum("...i,...i->...", G, G))


def clip_rows(G: np.ndarray, bound: float | np.ndarray) -> np.ndarray:
    """Every row of ``G`` (the last axis) scaled into the l2 ball of radius ``bound`` (a copy).

    A row of norm at most ``bound`` is returned unchanged; a longer row is scaled to norm
    ``bound`` (to rounding) in its own direction.  ``bound`` may give one radius per row.  The norm
    is taken in units of the row's largest entry, so rows of tiny (subnormal) or huge entries are
    measured without underflow or overflow: the clip holds whatever the scale of the inputs.
    """
    G = np.asarray(G, dtype=float)
    b = np.asarray(bound, dtype=float)
    m = np.max(np.abs(G), axis=-1, initial=0.0)
    unit = G / np.where(m > 0.0, m, 1.0)[..., None]
    nrm = m * np.sqrt(np.einsum("...i,...i->...", unit, unit))
    c = np.divide(
        b, nrm, out=np.ones_like(nrm), where=nrm > b
    )  # only longer rows: c < 1, no overflow
    out: np.ndarray = G * c[..., None]
    return out


class EllipsoidProjector:
    """Euclidean projection onto ``{w : ||U w|| <= 1}`` for a fixed symmetric positive-definite ``U``.

    The eigen-decomposition of ``U`` is computed once; each projection solves the KKT condition
    ``w = (I + m U^2)^{-1} v`` for the multiplier ``m >= 0`` by bisection on
    ``g(m) = sum_i u_i^2 c_i^2 / (1 + m u_i^2)^2 = 1`` (``g`` is decreasing).
    """

    def __init__(self, U: np.ndarray) -> None:
        u, Q = np.linalg.eigh(0.5 * (U + U.T))
        self.u2 = u * u
        self.Q = Q

    def __call__(self, v: np.ndarray, *, halvings: int = 80) -> np.ndarray:
        c = self.Q.T @ v
        uc2 = self.u2 * c * c
        if float(np.sum(uc2)) <= 1.0:
            return v.copy()

        def g(m: float) -> float:
            return float(np.sum(uc2 / (1.0 + m * self.u2) ** 2))

        lo, hi = 0.0, 1.0
        while g(hi) > 1.0:
            lo, hi = hi, 2.0 * hi
        for _ in range(halvings):
            mid = 0.5 * (lo + hi)
            if g(mid) > 1.0:
                lo = mid
            else:
                hi = mid
        out: np.ndarray = self.Q @ (c / (1.0 + hi * self.u2))  # hi: the feasible side
        return out


def proj_ellipsoid(v: np.ndarray, U: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``v`` onto ``{w : ||U w|| <= 1}`` (``U`` symmetric positive definite)."""
    return EllipsoidProjector(U)(np.asarray(v, dtype=float))
