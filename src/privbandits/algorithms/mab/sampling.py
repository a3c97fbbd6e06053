"""Compiled helpers shared by the randomized K-armed algorithms."""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["sample_index"]


@nb.njit(cache=True)
def sample_index(p: np.ndarray, rng: np.random.Generator) -> int:  # pragma: no cover - compiled
    """An index drawn from the (possibly unnormalized, non-negative) weights ``p`` by inversion of
    one uniform."""
    total = 0.0
    for k in range(p.shape[0]):
        total += p[k]
    u = rng.random() * total
    acc = 0.0
    for k in range(p.shape[0]):
        acc += p[k]
        if u < acc:
            return k
    for k in range(p.shape[0] - 1, -1, -1):  # rounding: the last arm of positive weight
        if p[k] > 0.0:
            return k
    return p.shape[0] - 1
