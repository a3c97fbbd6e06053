"""Cumulative regret, reward and estimation error at checkpoints (shared by every driver)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["Progress", "Recorder"]

Progress = Callable[[int], None]


class Recorder:
    """Accumulates per-round quantities and snapshots them at checkpoints.

    ``cum_regret`` and ``cum_reward`` (R,) are updated in place, by :meth:`record` (reference
    driver) or directly by a compiled loop; :meth:`snapshot` stores them, and the algorithm's
    estimation error, at the next checkpoint.
    """

    def __init__(
        self,
        estimate: Callable[[], np.ndarray | None],
        theta_star: np.ndarray,
        R: int,
        checkpoints: np.ndarray,
    ) -> None:
        self.estimate = estimate
        self.theta_star = theta_star
        self.ckpt = checkpoints
        self.next_idx = 0
        self.next_t = int(checkpoints[0])
        n = len(checkpoints)
        self.cum_regret = np.zeros(R)
        self.cum_reward = np.zeros(R)
        self.regret = np.empty((R, n))
        self.reward = np.empty((R, n))
        self.err: np.ndarray | None = np.full((R, n), np.nan)
        self.has_estimate = True

    def record(self, t: int, regret: np.ndarray, rewards: np.ndarray) -> None:
        """Add round ``t``'s (0-based) regret and rewards; snapshot if it is a checkpoint."""
        self.cum_regret += regret
        self.cum_reward += rewards
        if t + 1 == self.next_t:
            self.snapshot()

    def snapshot(self) -> None:
        """Store the cumulative quantities at the next checkpoint."""
        i = self.next_idx
        self.regret[:, i] = self.cum_regret
        self.reward[:, i] = self.cum_reward
        if self.has_estimate:
            est = self.estimate()
            if est is None:
                self.has_estimate = False
                self.err = None
            else:
                diff = np.asarray(est, float) - self.theta_star
                self.err[:, i] = np.sqrt((diff.reshape(diff.shape[0], -1) ** 2).sum(axis=1))  # type: ignore[index]
        self.next_idx += 1
        self.next_t = int(self.ckpt[self.next_idx]) if self.next_idx < len(self.ckpt) else -1
