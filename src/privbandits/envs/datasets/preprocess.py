"""Turning raw features into bounded bandit contexts: projection and a recorded norm policy.

Pipeline of :class:`~privbandits.envs.datasets.bandit.SupervisedEnv`: standardize (mean 0, unit
variance per feature) -> :func:`project` to ``d`` dimensions (PCA or a Gaussian random
projection) -> optionally append a constant intercept coordinate -> :func:`bound_norms` so
every context satisfies ``||x|| <= context_bound`` (the bound privacy calibrations rely on).
Both steps return what they did, for the environment's ``describe()``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_choice, check_in_range, check_int, check_positive

__all__ = ["NORM_POLICIES", "PROJECTIONS", "bound_norms", "project"]

#: Dimension reductions: none, principal components, Gaussian random projection.
PROJECTIONS = ("none", "pca", "random")
#: Norm policies: scale every row by the largest norm, or scale by a norm quantile and clip the rest.
NORM_POLICIES = ("max", "clip")


def project(
    Z: np.ndarray, d: int | None, method: str, seed: int = 0
) -> tuple[np.ndarray, dict[str, Any]]:
    """Reduce centred features ``Z`` (n, p) to ``d`` columns.

    Parameters
    ----------
    Z : ndarray of shape (n, p)
        Standardized features.
    d : int or None
        Target dimension (None: keep ``p``; then ``method`` must be ``"none"``).
    method : {"none", "pca", "random"}
        ``pca``: scores on the top ``d`` principal components (``d <= min(n, p)``);
        ``random``: ``Z G / sqrt(d)`` with ``G`` i.i.d. N(0, 1), ``(p, d)``, drawn from
        ``default_rng(seed)`` (the same for every replication and run; norms are preserved in
        expectation).
    seed : int
        Seed of the random projection.

    Returns
    -------
    ndarray of shape (n, d), dict
        The projected features and a record (method, d, explained variance for PCA, seed).
    """
    check_choice("projection", method, PROJECTIONS)
    n, p = Z.shape
    if method == "none":
        if d is not None and d != p:
            raise ValidationError(
                f'd {d} differs from the data\'s {p} features; set projection = "pca" or '
                f'"random" to reduce them, or omit d'
            )
        return Z.copy(), {"projection": "none", "d_projected": p}
    if d is None:
        raise ValidationError(f"d is required with projection={method!r} (the target dimension)")
    if method == "pca":
        d = check_int("d", d, 1, min(n, p))
        _, s, Vt = np.linalg.svd(Z - Z.mean(axis=0), full_matrices=False)
        var = s**2
        ratio = float(var[:d].sum() / var.sum()) if var.sum() > 0 else 1.0
        return Z @ Vt[:d].T, {"projection": "pca", "d_projected": d, "explained_variance": ratio}
    d = check_int("d", d, 1)
    G = np.random.default_rng(check_int("projection_seed", seed, 0)).standard_normal((p, d))
    return Z @ G / np.sqrt(d), {"projection": "random", "d_projected": d, "projection_seed": seed}


def _row_norms(Z: np.ndarray) -> np.ndarray:
    """Euclidean row norms without underflow or overflow (rows scaled by their largest entry first)."""
    m = np.abs(Z).max(axis=1)
    safe = np.where(m > 0, m, 1.0)
    return m * np.linalg.norm(Z / safe[:, None], axis=1)


def bound_norms(
    Z: np.ndarray,
    policy: str,
    bound: float = 1.0,
    quantile: float = 0.95,
    *,
    out: np.ndarray | None = None,
    chunk_rows: int = 1 << 16,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Scale contexts so every row has ``||x||_2 <= bound``.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
    policy : {"max", "clip"}
        ``max``: divide every row by ``max_i ||z_i|| / bound`` (geometry kept, nothing clipped);
        ``clip``: divide by the ``quantile`` of the row norms over ``bound``, then project the
        rows still outside the ball onto its sphere (their count is recorded).
    bound : float
        The radius ``C_B``.
    quantile : float in (0, 1]
        Norm quantile of the ``clip`` policy.
    out : ndarray of shape (n, d), optional
        Where the bounded contexts are written (may be ``Z`` itself, e.g. a memory-mapped
        array); default a new array.
    chunk_rows : int
        Rows processed at a time: besides ``out``, the memory used is a few chunks and one
        norm per row (every operation is row-wise, so the result does not depend on it).

    Returns
    -------
    ndarray of shape (n, d), dict
        Bounded contexts and a record (policy, scale, number of clipped rows).
    """
    check_choice("norm", policy, NORM_POLICIES)
    bound = check_positive("context_bound", bound)
    n = Z.shape[0]
    chunks = [slice(i, min(i + chunk_rows, n)) for i in range(0, n, chunk_rows)]
    # work on Z / max|z_ij| (entries in [-1, 1]): subnormal or huge inputs neither underflow nor
    # overflow in the norms, and ``bound / ref`` cannot overflow
    m = max(float(np.abs(Z[c]).max()) for c in chunks) if Z.size else 0.0

    def scaled(c: slice) -> np.ndarray:
        return Z[c] / m if m > 0 else np.asarray(Z[c], dtype=float)

    norms = np.concatenate([_row_norms(scaled(c)) for c in chunks]) if chunks else np.empty(0)
    if policy == "max":
        ref = float(norms.max())
    else:
        q = check_in_range("clip_quantile", quantile, 0.0, 1.0, low_inclusive=False)
        ref = float(np.quantile(norms, q))
    if ref <= 0:
        raise ValidationError(
            f"every context is zero after preprocessing (the {policy} norm is {ref * m}); "
            f"the features carry no information"
        )
    with np.errstate(over="ignore"):
        scale = (
            bound / ref
        ) / m  # the common factor of the unclipped rows (inf for a subnormal ref)
    clipped = norms > ref  # the clipped rows (compared before rounding)
    n_clipped = int(clipped.sum()) if policy == "clip" else 0
    if out is None:
        out = np.empty(Z.shape)
    for c in chunks:
        Zs = scaled(c)
        with np.errstate(over="ignore"):
            o = (
                Zs / ref
            ) * bound  # overflows only in rows far beyond the quantile (projected below)
        over = clipped[c].copy()
        # those rows, and rows a rounding error outside the ball: projected onto the sphere
        # (z / ||z|| is a unit vector, computed without overflow whatever the scale)
        inside = ~over
        over[inside] = _row_norms(o[inside]) > bound
        o[over] = (Zs[over] / norms[c][over][:, None]) * bound
        out[c] = o
    record: dict[str, Any] = {"norm": policy, "norm_scale": scale, "n_clipped_rows": n_clipped}
    if policy == "clip":
        record["clip_quantile"] = quantile
    return out, record
