"""The epochs of the Chen et al. (2025) curators: Algorithm 3's doubling schedule, and the
curator that stores each epoch's data and fits at the epoch's end (Algorithm 3; SquareCB's
FALCON-style epochs, Section 6.2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.core.errors import PrivacyError
from privbandits.privacy.guarantee import PrivacyGuarantee

__all__ = ["EpochCurator", "epoch_ends"]


def epoch_ends(T: int, first: int) -> np.ndarray:
    """``T_1 < T_2 < ... < T_J = T`` with ``T_j = min(T, T_1 2^{j-1})`` (0-based round ``t`` belongs to
    epoch ``j`` when ``T_{j-1} <= t < T_j``, ``T_0 = 0``)."""
    ends = [min(T, first)]
    while ends[-1] < T:
        ends.append(min(T, 2 * ends[-1]))
    return np.array(ends, dtype=np.int64)


class EpochCurator(Curator):
    """A curator that fits on each epoch's data only: it stores the chosen features and the rewards
    clipped into ``[-1, 1]`` of the epoch and, at the epoch's end, calls ``_end_epoch(n)`` on its
    ``n`` users (rows ``X[:, :n]``, ``y[:, :n]``)."""

    ends: np.ndarray
    X: np.ndarray
    y: np.ndarray
    epoch: int
    start: int

    def _start_epochs(self, ends: np.ndarray, d: int) -> None:
        """The schedule ``ends`` and the storage of its longest epoch, from the first round."""
        self.ends = ends
        self.X = np.zeros((self.R, int(np.max(np.diff(ends, prepend=0))), d))
        self.y = np.zeros(self.X.shape[:2])
        self.epoch, self.start = 0, 0

    def update(
        self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        i = t - self.start
        self.X[:, i] = contexts[np.arange(self.R), actions]
        self.y[:, i] = np.clip(rewards, -1.0, 1.0)
        if t + 1 == self.ends[self.epoch]:
            self._end_epoch(t + 1 - self.start)
            self.epoch += 1
            self.start = t + 1

    def _end_epoch(self, n: int) -> None:
        """Fit on the epoch's ``n`` users and release."""
        raise NotImplementedError

    def _check_release(self, guarantee: PrivacyGuarantee) -> None:
        """:class:`PrivacyError` when one release accounts to more than the run's claim."""
        claim: Any = self.calibration.guarantee
        if guarantee.is_private and guarantee.epsilon > claim.epsilon * (1 + 1e-9):
            raise PrivacyError(
                f"{self.name}: a release accounts to {guarantee}, above the claim {claim}"
            )
