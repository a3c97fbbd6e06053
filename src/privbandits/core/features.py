"""Feature maps shared by environments and algorithms."""

from __future__ import annotations

import numpy as np

__all__ = ["block_features"]


def block_features(X: np.ndarray, K: int) -> np.ndarray:
    """``(..., d)`` shared contexts -> ``(..., K, K d)`` block one-hot features ``e_a kron X``.

    The multi-parameter problem (one ``theta*_a`` per arm) becomes a single-parameter one in
    dimension ``K d`` with parameter ``vec(theta*_1, ..., theta*_K)`` (Zheng et al. 2020, section
    4 of the project's Han et al. spec).
    """
    lead, d = X.shape[:-1], X.shape[-1]
    out = np.zeros(lead + (K, K, d))
    idx = np.arange(K)
    out[..., idx, idx, :] = X[..., None, :]
    return out.reshape(lead + (K, K * d))
