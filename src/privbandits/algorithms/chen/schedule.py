"""The doubling epoch schedule of Chen et al. (2025), Algorithm 3."""

from __future__ import annotations

import numpy as np

__all__ = ["epoch_ends"]


def epoch_ends(T: int, first: int) -> np.ndarray:
    """``T_1 < T_2 < ... < T_J = T`` with ``T_j = min(T, T_1 2^{j-1})`` (0-based round ``t`` belongs to
    epoch ``j`` when ``T_{j-1} <= t < T_j``, ``T_0 = 0``)."""
    ends = [min(T, first)]
    while ends[-1] < T:
        ends.append(min(T, 2 * ends[-1]))
    return np.array(ends, dtype=np.int64)
