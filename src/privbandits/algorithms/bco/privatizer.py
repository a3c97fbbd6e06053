"""The user-side randomizer of LDP-TwoPoint (Zheng et al. 2020, Algorithm 2, line 6)."""

from __future__ import annotations

import numba as nb
import numpy as np

from privbandits.privacy.samplers import add_gaussian, clip_scalar, laplace_draw

__all__ = ["privatize_difference"]


@nb.njit(cache=True)
def privatize_difference(rng: np.random.Generator, values: np.ndarray, points: np.ndarray, bound: float,
                         clip: bool, scale: float, laplace: bool, noise: np.ndarray,
                         out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out[i] = clip(a_i, -bound, bound) + n_i^T (x_{i,1} - x_{i,2})`` with ``a_i = values[i, 0] -
    values[i, 1]`` and ``n_i ~ N(0, scale^2 I_d)`` (one normal per coordinate, user by user); with
    ``laplace`` the scalar ``Lap(scale)`` replaces the projected vector (pure epsilon-LDP variant).
    ``noise`` is a ``(d,)`` work array.
    """
    d = points.shape[2]
    for i in range(values.shape[0]):
        a = values[i, 0] - values[i, 1]
        if clip:
            a = clip_scalar(a, -bound, bound)
        if laplace:
            out[i] = a + laplace_draw(rng, scale)
            continue
        for j in range(d):
            noise[j] = 0.0
        add_gaussian(rng, scale, noise)
        s = 0.0
        for j in range(d):
            s += noise[j] * (points[i, 0, j] - points[i, 1, j])
        out[i] = a + s
