"""Shared compiled pieces of the private K-armed bandits: reward normalization, the first-index
argmax, and the Laplace binary-tree counter of DP-UCB.

* Every private K-armed algorithm clips a reward into the declared range ``[lo, hi]`` and maps it
  to ``[0, 1]`` before it enters any statistic, so one reward moves a sum by at most 1 (the
  sensitivity every calibration uses).
* Ties of an index or an elimination test go to the lowest arm index, deterministically.
* The tree counter is the node structure of :class:`privbandits.privacy.tree.TreeAggregator` for a
  scalar stream (the leaf ``s`` completes the node at level ``lsb(s)``; the prefix sum at ``s`` is
  the sum of the ``popcount(s)`` noisy nodes of its binary decomposition,
  :func:`privbandits.privacy.tree.node_decomposition`), with pure-DP node noise ``Lap(b)`` drawn by
  the audited sampler :func:`~privbandits.privacy.samplers.laplace_draw` (Mishra & Thakurta 2015,
  section 2.1; Chan, Shi & Song 2011).  A leaf enters at most ``h = bit_length(T)`` completed
  nodes (:func:`privbandits.privacy.tree.max_nodes_per_leaf`), so node noise ``Lap(h / eps_0)``
  makes the whole released stream ``eps_0``-DP for leaves in ``[0, 1]`` (basic composition over
  the ``h`` nodes, sensitivity 1 each).

References
----------
Mishra & Thakurta (2015), "(Nearly) Optimal Differentially Private Stochastic Multi-Arm Bandits",
UAI, section 2.1 and Algorithm 1.  Chan, Shi & Song (2011), "Private and continual release of
statistics", ACM TISSEC.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.privacy.samplers import clip_scalar, laplace_draw

__all__ = ["ArmCurator", "argmax_first", "laplace_tree_insert", "tree_prefix_sum", "unit_reward"]


class ArmCurator(Curator):
    """A K-armed curator whose compiled state starts with the pulls of every arm."""

    def counts(self) -> np.ndarray:
        """Pulls of every arm so far, ``(R, K)``."""
        assert self.kernel is not None
        return self.kernel.state[0].copy()


@nb.njit(cache=True)
def unit_reward(y: float, lo: float, hi: float) -> float:  # pragma: no cover - compiled
    """``(clip(y, lo, hi) - lo) / (hi - lo)``: the reward in ``[0, 1]`` (sensitivity 1 per reward)."""
    return (clip_scalar(y, lo, hi) - lo) / (hi - lo)


@nb.njit(cache=True)
def argmax_first(scores: np.ndarray, mask: np.ndarray) -> int:  # pragma: no cover - compiled
    """Index of the largest ``scores[k]`` among ``mask[k] > 0``, lowest index on ties (-1 if none)."""
    best, arg = -np.inf, -1
    for k in range(scores.shape[0]):
        if mask[k] > 0.0 and (arg < 0 or scores[k] > best):
            best, arg = scores[k], k
    return arg


@nb.njit(cache=True)
def laplace_tree_insert(
    alpha: np.ndarray,
    noisy: np.ndarray,
    s: int,
    leaf: float,
    scale: float,
    rng: np.random.Generator,
) -> None:  # pragma: no cover - compiled
    """Insert leaf ``s`` (1-based) of a scalar stream and release the node it completes.

    With ``i`` the lowest set bit of ``s``: ``alpha_i = leaf + sum_{j < i} alpha_j`` (exact partial
    sum of the dyadic interval ending at ``s``), the lower levels are cleared, and
    ``noisy_i = alpha_i + Lap(scale)`` with one fresh draw (the insert of
    :class:`~privbandits.privacy.tree.TreeAggregator` with Laplace node noise).  ``alpha``,
    ``noisy``: ``(h,)`` with ``h >= bit_length(s)``.
    """
    i = 0
    while not (s >> i) & 1:
        i += 1
    total = leaf
    for j in range(i):
        total += alpha[j]
        alpha[j] = 0.0
        noisy[j] = 0.0
    alpha[i] = total
    noisy[i] = total + (laplace_draw(rng, scale) if scale > 0.0 else 0.0)


@nb.njit(cache=True)
def tree_prefix_sum(noisy: np.ndarray, s: int) -> float:  # pragma: no cover - compiled
    """Private prefix sum of the first ``s`` leaves: the noisy nodes at the set bits of ``s``."""
    out = 0.0
    for j in range(noisy.shape[0]):
        if (s >> j) & 1:
            out += noisy[j]
    return out
