"""Batched noise for numpy code, drawn through the compiled samplers.

Thin numpy-facing wrappers over :mod:`privbandits.privacy.samplers` (the one sampler per noise
type that the algorithm kernels and the audit use): each allocates the output, hands a flat or
row-major view to the compiled sampler, and returns it.  Draw order is that of the sampler on the
C-order flattening of the output (row by row for matrices and for the l2-ball).

References
----------
Dwork & Roth (2014), section 3; Han et al. (2021), Lemma 2.2 (l2-ball) and section 3.1
(symmetric-matrix Gaussian); Duchi, Jordan & Wainwright (2018).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.validation import (
    check_epsilon,
    check_finite_array,
    check_int,
    check_nonnegative,
    check_positive,
)
from privbandits.privacy import samplers
from privbandits.privacy.calibration import l2_ball_radius

__all__ = [
    "l2_ball_mechanism",
    "sample_gaussian",
    "sample_laplace",
    "sample_symmetric_gaussian",
    "sample_symmetric_laplace",
]


def _shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(check_int("shape", n, 0) for n in shape)


def _draws(
    add: Callable[[np.random.Generator, float, np.ndarray], None],
    rng: np.random.Generator,
    shape: tuple[int, ...],
    scale: float,
) -> np.ndarray:
    """An array of ``shape`` filled in C order by the compiled sampler ``add`` (noise added to zeros)."""
    shape = _shape(tuple(shape))
    z = np.zeros(int(np.prod(shape, dtype=np.int64)))
    add(rng, scale, z)
    return z.reshape(shape)


def _symmetric_draws(
    add_rows: Callable[[np.random.Generator, float, np.ndarray], None],
    rng: np.random.Generator,
    lead: tuple[int, ...],
    d: int,
    scale: float,
) -> np.ndarray:
    """Symmetric ``d x d`` noise matrices of shape ``lead + (d, d)``, one ``add_rows`` row per matrix."""
    d = check_int("d", d, 1)
    lead = _shape(tuple(lead))
    W = np.zeros((int(np.prod(lead, dtype=np.int64)), d, d))
    add_rows(rng, scale, W)
    return W.reshape(lead + (d, d))


def sample_gaussian(rng: np.random.Generator, shape: tuple[int, ...], sigma: float) -> np.ndarray:
    """i.i.d. ``N(0, sigma^2)`` noise of the given shape
    (:func:`~privbandits.privacy.samplers.add_gaussian`)."""
    return _draws(samplers.add_gaussian, rng, shape, check_nonnegative("sigma", sigma))


def sample_symmetric_gaussian(
    rng: np.random.Generator, lead: tuple[int, ...], d: int, sigma: float
) -> np.ndarray:
    """Symmetric ``d x d`` Gaussian matrices: i.i.d. ``N(0, sigma^2)`` on and above the diagonal,
    mirrored.

    Returns an array of shape ``lead + (d, d)``; one
    :func:`~privbandits.privacy.samplers.add_symmetric_gaussian` per matrix (``d (d + 1) / 2``
    draws, row by row on and above the diagonal), matrices in C order of ``lead``.
    """
    sig = check_nonnegative("sigma", sigma)
    return _symmetric_draws(samplers.add_symmetric_gaussian_rows, rng, lead, d, sig)


def sample_symmetric_laplace(
    rng: np.random.Generator, lead: tuple[int, ...], d: int, scale: float
) -> np.ndarray:
    """Symmetric ``d x d`` Laplace matrices: i.i.d. ``Lap(scale)`` on and above the diagonal,
    mirrored (:func:`~privbandits.privacy.samplers.add_symmetric_laplace`, one matrix after the
    other); shape ``lead + (d, d)``."""
    b = check_nonnegative("scale", scale)
    return _symmetric_draws(samplers.add_symmetric_laplace_rows, rng, lead, d, b)


def sample_laplace(rng: np.random.Generator, shape: tuple[int, ...], scale: float) -> np.ndarray:
    """i.i.d. ``Lap(scale)`` noise of the given shape
    (:func:`~privbandits.privacy.samplers.add_laplace`)."""
    return _draws(samplers.add_laplace, rng, shape, check_nonnegative("scale", scale))


def l2_ball_mechanism(
    x: np.ndarray, epsilon: float, bound: float, rng: np.random.Generator
) -> tuple[np.ndarray, int]:
    """epsilon-LDP unbiased randomizer for vectors in the l2 ball (Han et al. 2021, Lemma 2.2).

    Parameters
    ----------
    x : ndarray of shape (..., d)
        Inputs; vectors with norm above ``bound`` are clipped to it (the count is returned).
    epsilon : float
        Privacy level (pure epsilon-LDP).
    bound : float
        Input norm bound ``R``.
    rng : Generator
        Client noise stream.

    Returns
    -------
    z : ndarray of shape (..., d)
        Outputs, each of norm exactly ``l2_ball_radius(epsilon, d, bound)``, with ``E[z] = x``.
    n_clipped : int
        How many inputs were clipped.

    Notes
    -----
    Row by row :func:`~privbandits.privacy.samplers.l2_ball` (``d`` standard normals, then one
    uniform per input): ``U`` uniform on the sphere, reflected through the origin unless it lies on
    the side of ``x`` chosen with probability ``1/2 + (min(||x||, R) / (2R)) tanh(eps/2)``; for
    ``x = 0`` the output is uniform on the sphere.
    """
    eps = check_epsilon(epsilon)
    R = check_positive("bound", bound)
    x = check_finite_array("x", x)
    if x.ndim == 0:
        raise ValidationError("x must have a trailing feature axis of size d >= 1, got a scalar")
    d = x.shape[-1]
    G = np.ascontiguousarray(x.reshape(-1, d), dtype=float)
    sq = np.einsum("nd,nd->n", G, G)
    n_clipped = int(np.count_nonzero(sq > R * R * (1.0 + samplers.CLIP_RTOL)))
    out = np.empty_like(G)
    samplers.l2_ball_rows(rng, G, eps, R, l2_ball_radius(eps, d, R), out)
    return out.reshape(x.shape), n_clipped
