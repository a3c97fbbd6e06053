"""Context samplers: batched draws of feature vectors.

Every sampler returns an array of shape ``size + (d,)`` with l2 norms at most ``bound``
(Gaussian draws are clipped to the bound; :func:`sample_contexts` reports how many were).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from privbandits.core.validation import check_choice

__all__ = ["CONTEXT_DISTRIBUTIONS", "sample_contexts", "unit_sphere"]

CONTEXT_DISTRIBUTIONS: tuple[str, ...] = ("sphere", "ball", "gaussian", "gaussian_normalized")


@nb.njit(cache=True)
def _sphere_rows(
    rng: np.random.Generator, n: int, D: int, d: int, scale: float
) -> np.ndarray:  # pragma: no cover
    """``n`` normalized standard Gaussian vectors in R^D (drawn in C order, exactly as
    ``rng.standard_normal((n, D))``), keeping the first ``d`` coordinates times ``scale``."""
    out = np.empty((n, d))
    g = np.empty(D)
    for i in range(n):
        s = 0.0
        for j in range(D):
            v = rng.standard_normal()
            g[j] = v
            s += v * v
        c = scale / math.sqrt(s) if s > 0.0 else 0.0
        for j in range(d):
            out[i, j] = g[j] * c
    return out


def unit_sphere(
    rng: np.random.Generator,
    size: tuple[int, ...],
    d: int,
    *,
    scale: float = 1.0,
    keep: int | None = None,
) -> np.ndarray:
    """Uniform draws on the sphere of radius ``scale`` in R^d (normalized standard Gaussians).

    ``keep`` < d returns only the first ``keep`` coordinates (the projection used for the ball).
    Consumes the stream exactly as ``rng.standard_normal(size + (d,))`` does, so chunked draws
    are independent of the chunk length.
    """
    n = int(np.prod(size, dtype=np.int64))
    k = d if keep is None else keep
    return _sphere_rows(rng, n, d, k, float(scale)).reshape(tuple(size) + (k,))


def sample_contexts(
    rng: np.random.Generator,
    size: tuple[int, ...],
    d: int,
    distribution: str = "sphere",
    bound: float = 1.0,
    cov_sqrt: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """Draw contexts.

    Parameters
    ----------
    rng : Generator
        The contexts stream.
    size : tuple of int
        Leading shape, e.g. ``(B, R, K)``.
    d : int
        Dimension.
    distribution : {"sphere", "ball", "gaussian", "gaussian_normalized"}
        ``sphere``: uniform on the sphere of radius ``bound``.  ``ball``: uniform in the ball of
        radius ``bound``.  ``gaussian``: ``N(0, bound^2 Sigma / d)`` (``Sigma = I`` unless
        ``cov_sqrt`` is given), clipped to norm ``bound``.  ``gaussian_normalized``: a Gaussian
        draw rescaled to norm exactly ``bound``.
    bound : float
        Context norm bound ``C_B``.
    cov_sqrt : ndarray of shape (d, d), optional
        A square root of the covariance ``Sigma`` for the Gaussian families.

    Returns
    -------
    contexts : ndarray
        Shape ``size + (d,)``.
    n_clipped : int
        Number of vectors clipped to the bound (Gaussian only; the clipping is the recorded
        policy of the documentation's Concepts: norm bounds and clipping).
    """
    check_choice("context distribution", distribution, CONTEXT_DISTRIBUTIONS)
    if distribution == "sphere":
        return unit_sphere(rng, size, d, scale=bound), 0
    if distribution == "ball":
        # the first d coordinates of a uniform point on S^{d+1} are uniform in the d-ball
        # (one draw per vector keeps the stream chunk-independent)
        return unit_sphere(rng, size, d + 2, scale=bound, keep=d), 0
    g = rng.standard_normal(size + (d,))
    if cov_sqrt is not None:
        g = g @ np.asarray(cov_sqrt, dtype=float).T
    if distribution == "gaussian_normalized":
        n = np.linalg.norm(g, axis=-1, keepdims=True)
        n[n == 0.0] = 1.0
        return bound * g / n, 0
    x = g * (bound / np.sqrt(d))
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    over = n > bound
    n_clipped = int(over.sum())
    if n_clipped:
        x = np.where(over, x * (bound / np.maximum(n, 1e-300)), x)
    return x, n_clipped
