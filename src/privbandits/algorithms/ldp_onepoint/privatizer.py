"""The user-side randomizer of LDP-OnePoint: one scalar, clipped, plus Gaussian or Laplace noise.

Zheng, Cai, Huang, Li & Wang (2020), Algorithm 1, lines 4-7: user ``t`` evaluates its own loss at
the server's query point, clips it into the declared range and sends ``m_t = v + Z_t`` with
``Z_t ~ N(0, sigma^2)`` (or ``Lap(b)`` for the pure variant).  The noise comes from the compiled
samplers of :mod:`privbandits.privacy.samplers` (the code the audit checks).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from privbandits.privacy.samplers import add_gaussian, add_laplace, clip_scalar

__all__ = ["privatize_values"]


@nb.njit(cache=True)
def privatize_values(rng: np.random.Generator, values: np.ndarray, lo: float, hi: float, clip: bool,
                     scale: float, laplace: bool, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out[i] = clip(values[i], lo, hi) + Z_i`` for a vector of users, in place.

    ``Z_i ~ N(0, scale^2)`` (``laplace=False``) or ``Lap(scale)``; without ``clip`` the values are
    sent as they are (the guarantee is then conditional on their lying in ``[lo, hi]``).  Draw
    order: one variate per user, in index order (so a batch consumes the generator exactly as the
    users one at a time).
    """
    for i in range(values.shape[0]):
        out[i] = clip_scalar(values[i], lo, hi) if clip else values[i]
    if laplace:
        add_laplace(rng, scale, out)
    else:
        add_gaussian(rng, scale, out)
