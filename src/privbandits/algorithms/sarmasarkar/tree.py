"""Compiled binary-tree (continual release) mechanism for symmetric matrices, one replication at a time.

The per-round form of :class:`privbandits.privacy.tree.TreeAggregator` used inside the JDP-GLM
kernel: the same node structure and the same noise law ``(Z' + Z'^T)/2`` (``Z'`` i.i.d.
``N(0, sigma^2)``; diagonal std ``sigma``, off-diagonal std ``sigma/sqrt(2)``), drawn by the
compiled sampler :func:`~privbandits.privacy.samplers.add_symmetric_gaussian` in the same order,
so one replication reproduces ``TreeAggregator`` draw for draw (tested).

References
----------
Sarmasarkar (2026), section 6 and Appendix J.3; Chan, Shi & Song (2011); Dwork, Naor, Pitassi &
Rothblum (2010); Shariff & Sheffet (2018), section 4.2.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from privbandits.privacy.samplers import add_symmetric_gaussian

__all__ = ["tree_insert", "tree_prefix"]

_INV_SQRT2 = 1.0 / math.sqrt(2.0)


@nb.njit(cache=True)
def tree_insert(
    alpha: np.ndarray,
    noisy: np.ndarray,
    t: int,
    leaf: np.ndarray,
    sigma: float,
    rng: np.random.Generator,
    W: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Insert leaf ``t`` (1-based) and release the node it completes.

    With ``i`` the lowest set bit of ``t``: ``alpha_i = leaf + sum_{j < i} alpha_j``, lower levels
    cleared, ``noisy_i = alpha_i + Z`` with fresh symmetric noise.  ``alpha``, ``noisy``:
    ``(m, d, d)``; ``W`` is ``(d, d)`` scratch.
    """
    i = 0
    while not (t >> i) & 1:
        i += 1
    d = leaf.shape[0]
    for a in range(d):
        for b in range(d):
            s = leaf[a, b]
            for j in range(i):
                s += alpha[j, a, b]
            alpha[i, a, b] = s
            W[a, b] = 0.0
    for j in range(i):
        alpha[j] = 0.0
        noisy[j] = 0.0
    if sigma > 0.0:
        add_symmetric_gaussian(rng, sigma, W)
    for a in range(d):
        for b in range(d):
            z = W[a, b] if a == b else W[a, b] * _INV_SQRT2
            noisy[i, a, b] = alpha[i, a, b] + z


@nb.njit(cache=True)
def tree_prefix(noisy: np.ndarray, t: int, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out = prefix(t)``: the sum of the noisy nodes at the set bits of ``t`` (0 before any leaf)."""
    out[:, :] = 0.0
    for j in range(noisy.shape[0]):
        if (t >> j) & 1:
            out += noisy[j]
