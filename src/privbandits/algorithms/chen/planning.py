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

from privbandits.algorithms.chen.planning_kernel import SPANNER_TOL, select_planned
from privbandits.algorithms.chen.spanner import barycentric_spanner
from privbandits.regression.links import LinkConstants

__all__ = ["Billboard", "Board", "choose_planned", "planning_support", "surviving"]


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


def choose_planned(
    contexts: np.ndarray,
    theta: np.ndarray,
    U: np.ndarray,
    scale: np.ndarray,
    n_boards: np.ndarray,
    link: LinkConstants,
    C: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """One round of Algorithm 4 in every replication (compiled,
    :func:`privbandits.algorithms.chen.planning_kernel.select_planned`): each replication's action
    uniform over the C-spanner of its survivors, from the packed released estimates
    ``theta (R, J, d)``, ``U (R, J, d, d)``, ``scale (R, J)``, ``n_boards (R,)``."""
    out = np.empty(contexts.shape[0], dtype=np.int64)
    select_planned(
        np.ascontiguousarray(contexts, dtype=float),
        np.ascontiguousarray(theta, dtype=float),
        np.ascontiguousarray(U, dtype=float),
        np.ascontiguousarray(scale, dtype=float),
        np.ascontiguousarray(n_boards, dtype=np.int64),
        link.link.code,
        float(C),
        SPANNER_TOL,
        rng,
        out,
    )
    return out


class Billboard:
    """The estimates Algorithm 3 has released, per replication, packed for the compiled planning step:
    ``theta (R, J, d)``, ``U (R, J, d, d)``, ``scale (R, J)`` and the number posted, ``count (R,)``.

    The curator (joint model) and the untrusted server (local model) post to one; in the local model
    its arrays are the public state the users choose from (:meth:`public`).
    """

    def __init__(self, R: int, J: int, d: int) -> None:
        self.theta = np.zeros((R, J, d))
        self.U = np.zeros((R, J, d, d))
        self.scale = np.zeros((R, J))
        self.count = np.zeros(R, dtype=np.int64)

    def post(self, r: int, theta: np.ndarray, U: np.ndarray, scale: float) -> None:
        """Release one estimate ``f_hat = nu(<phi, theta>)`` with widths ``scale ||U phi||`` in replication ``r``."""
        j = self.count[r]
        self.theta[r, j], self.U[r, j], self.scale[r, j] = theta, U, scale
        self.count[r] += 1

    def boards(self, r: int, link: LinkConstants) -> list[Board]:
        """Replication ``r``'s released estimates as :class:`Board` objects (the numpy form)."""
        return [
            Board(self.theta[r, j], self.U[r, j], float(self.scale[r, j]), link)
            for j in range(int(self.count[r]))
        ]

    def latest(self) -> np.ndarray:
        """The last released ``theta`` of every replication (zero before the first), ``(R, d)``."""
        R, _, d = self.theta.shape
        out = np.zeros((R, d))
        posted = self.count > 0
        out[posted] = self.theta[np.flatnonzero(posted), self.count[posted] - 1]
        return out

    def public(self) -> dict[str, np.ndarray]:
        """The arrays as the public state publishes them (``n_boards``, ``board_theta``, ``board_U``, ``board_scale``)."""
        return {
            "n_boards": self.count,
            "board_theta": self.theta,
            "board_U": self.U,
            "board_scale": self.scale,
        }

    def choose(
        self, contexts: np.ndarray, link: LinkConstants, C: float, rng: np.random.Generator
    ) -> np.ndarray:
        """One round of Algorithm 4 on these estimates (:func:`choose_planned`)."""
        return choose_planned(contexts, self.theta, self.U, self.scale, self.count, link, C, rng)
