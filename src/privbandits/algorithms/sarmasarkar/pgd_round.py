"""One ``P_GD`` round of ShuffleGLM's users on the aggregate path, in one compiled loop.

Sarmasarkar (2026), Algorithm 7, lines 6-8, as the users of a batch run it: each user ``i``
forms ``clip_L((mu(<x_i, theta_s>) - r_i) x_i + (lambda_max / n) theta_s)`` (projection onto the
``l2`` ball of radius ``L``), encodes it as :func:`privbandits.privacy.cheu.encode_vectors` does
(bias ``L``, into ``[0, 2L]``) and rounds ``w g / L`` (clipped into ``[0, 2g]``) with the compiled
randomized rounding of Algorithm 4 (:func:`privbandits.privacy.samplers.randomized_rounding`).
:func:`pgd_rounded_sums` returns the rounded coordinates summed over the users, drawing the
roundings in the order of :func:`privbandits.privacy.cheu.aggregate_release` (replication, user,
label), so that :func:`privbandits.privacy.cheu.release_from_rounded` completes the same release
from the same stream.  It fuses the numpy passes of the gradient, the encoding and the rounding
(the message path keeps them separate; a test compares the two).

References
----------
Sarmasarkar (2026), arXiv 2602.00417, Appendix T, Algorithms 4 and 7; Cheu, Joseph, Mao & Peng (2022).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from privbandits.core.links import link_mu
from privbandits.privacy.samplers import randomized_rounding

__all__ = ["pgd_rounded_sums"]


@nb.njit(cache=True)
def pgd_rounded_sums(
    X: np.ndarray,
    y: np.ndarray,
    theta: np.ndarray,
    code: int,
    ridge: float,
    Delta: float,
    g: float,
    rng: np.random.Generator,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Sum over users of the rounded, encoded, clipped ``P_GD`` gradients.

    Parameters
    ----------
    X : ndarray of shape (R, n, d)
        The batch's played arms.
    y : ndarray of shape (R, n)
        Their clipped rewards.
    theta : ndarray of shape (R, d)
        The published iterate ``theta_s``.
    code : int
        :attr:`privbandits.core.links.Link.code` of the link.
    ridge : float
        ``lambda_max / n``.
    Delta, g : float
        The round's clip ``L`` and precision (``SumParams.Delta``, ``SumParams.g``).
    rng : Generator
        Client noise stream.
    out : ndarray of int64, shape (R, d)
        The sums over users of the rounded coordinates.
    """
    R, n, d = X.shape
    v = np.empty(d)
    for r in range(R):
        for j in range(d):
            out[r, j] = 0
        for i in range(n):
            z = 0.0
            for j in range(d):
                z += X[r, i, j] * theta[r, j]
            resid = link_mu(code, z) - y[r, i]
            sq = 0.0
            for j in range(d):
                v[j] = resid * X[r, i, j] + ridge * theta[r, j]
                sq += v[j] * v[j]
            norm = math.sqrt(sq)
            scale = Delta / norm if norm > Delta else 1.0
            for j in range(d):
                w = min(max(v[j] * scale + Delta, 0.0), 2.0 * Delta)
                out[r, j] += randomized_rounding(rng, min(max(w * (g / Delta), 0.0), 2.0 * g))
