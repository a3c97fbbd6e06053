"""Algorithm 4 of Chen et al. (2025), ``Confidence_based_Planning``: eliminate, then span.

For a context with feature rows ``F_x`` (one per action) and the released estimates of the
previous epochs, an action survives if, for every estimate, its upper confidence bound reaches
the best lower confidence bound (Eq. 8, reconstructed: the text says the procedure "uses
optimistic estimation (UCB)"); the epoch's policy plays uniformly over a C-approximate barycentric
spanner of the survivors.  With valid confidence widths an optimal action is never eliminated, and
``S`` is never empty (each test keeps the action with the best lower bound; an estimate whose test
would empty ``S`` is skipped, see :func:`surviving`).

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Section 5, Algorithm 4 and Eq. (8).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from privbandits.algorithms.chen.spanner import barycentric_spanner
from privbandits.regression.links import LinkConstants

__all__ = ["Board", "choose_planned", "planning_support", "surviving"]


@dataclass(frozen=True)
class Board:
    """One released estimate as the policy reads it: ``f_hat = clip(nu(<phi, theta>))`` with width
    ``min(2, scale ||U phi||)``."""

    theta: np.ndarray
    U: np.ndarray
    scale: float
    link: LinkConstants

    def bounds(self, F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f = np.clip(self.link.nu(F @ self.theta), -1.0, 1.0)
        V = F @ self.U
        b = np.minimum(2.0, self.scale * np.sqrt(np.einsum("ij,ij->i", V, V)))
        return f, b


def surviving(F: np.ndarray, boards: Sequence[Board]) -> np.ndarray:
    """Boolean mask of the actions that survive every estimate's test ``UCB_a >= max_a' LCB_a'``.

    Each test alone keeps the action with the best lower bound, but two estimates' tests can
    exclude each other's survivors when a width fails to cover (a private estimate's failure
    event, or ``c_b < 1``).  An estimate whose test would leave no action at this context is then
    skipped (in release order; our choice, the paper does not cover it): the support is never empty.
    """
    keep = np.ones(F.shape[0], dtype=bool)
    for board in boards:
        f, b = board.bounds(F)
        new = keep & (f + b >= np.max(f - b))
        if new.any():
            keep = new
    return keep


def planning_support(F: np.ndarray, boards: Sequence[Board], C: float = 2.0) -> np.ndarray:
    """The support of the epoch's policy at this context: a C-spanner of the surviving actions."""
    S = np.flatnonzero(surviving(F, boards))
    return S[barycentric_spanner(F[S], C)]


def choose_planned(contexts: np.ndarray, theta: np.ndarray, U: np.ndarray, scale: np.ndarray, n_boards: np.ndarray,
                   link: LinkConstants, C: float, rng: np.random.Generator) -> np.ndarray:
    """One round of Algorithm 4 in every replication (compiled,
    :func:`privbandits.algorithms.chen.planning_kernel.select_planned`): each replication's action
    uniform over the C-spanner of its survivors, from the packed released estimates
    ``theta (R, J, d)``, ``U (R, J, d, d)``, ``scale (R, J)``, ``n_boards (R,)``."""
    from privbandits.algorithms.chen.planning_kernel import SPANNER_TOL, select_planned

    out = np.empty(contexts.shape[0], dtype=np.int64)
    select_planned(np.ascontiguousarray(contexts, dtype=float), theta, U, scale, n_boards, link.link.code, float(C),
                   SPANNER_TOL, rng, out)
    return out

