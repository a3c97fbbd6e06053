"""A single-parameter logistic bandit whose contexts are rows of a real data set.

Every round draws one row (a household, a customer) per replication; each arm's context is a
feature vector of that row (one alternative, one price) and the mean reward is
``sigma(x_{t,a}^T theta*)`` with ``theta*`` a logistic fit on the data (the population model of
Han et al. 2021, Appendix F).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Protocol

import numpy as np
from scipy import special

from privbandits.core.validation import check_choice
from privbandits.envs.base import Environment

__all__ = ["ORDERS", "DataGLMEnv", "EnvDataset"]

#: How rows are drawn: i.i.d. from the empirical distribution, or sequentially through a random
#: permutation of the rows (a fresh one after each pass), per replication.
ORDERS: tuple[str, ...] = ("iid", "permutation")


class DataGLMEnv(Environment):
    """Base class: rows of a data set as contexts, a fitted logistic model as the truth.

    Subclasses set ``n_rows`` and ``theta`` before calling this constructor and implement
    :meth:`features`.

    Parameters
    ----------
    d, K : int
        Feature dimension and number of arms.
    context_bound : float
        Largest context norm over all rows and arms (exact: contexts are the data's own).
    feedback : {"bernoulli", "expected"}
        ``bernoulli``: rewards ``r ~ Bernoulli(sigma(x^T theta*))``; ``expected``: the probability
        itself is fed back (no reward noise).
    order : {"iid", "permutation"}
        Row sampling (see :data:`ORDERS`).
    """

    n_rows: int
    theta: np.ndarray

    def __init__(
        self, d: int, K: int, context_bound: float, feedback: str = "bernoulli", order: str = "iid"
    ) -> None:
        self.feedback = check_choice("feedback", feedback, ("bernoulli", "expected"))
        self.order = check_choice("order", order, ORDERS)
        noise = "bernoulli" if feedback == "bernoulli" else "none"
        super().__init__(d, K, "logistic", noise, 0.0, context_bound, (0.0, 1.0))

    theta_bound = property(lambda self: float(np.linalg.norm(self.theta)))  # type: ignore[assignment]

    @abstractmethod
    def features(self, rows: np.ndarray) -> np.ndarray:
        """Contexts of all arms for the given row indices: shape ``rows.shape + (K, d)``."""

    def mean_rewards(self, rows: np.ndarray) -> np.ndarray:
        """``sigma(x^T theta*)`` of every arm for the given rows: shape ``rows.shape + (K,)``."""
        return np.asarray(special.expit(self.features(rows) @ self.theta))

    def policy_values(self, block: int = 4096) -> dict[str, float]:
        """Mean reward over the data's rows of the best fixed arm, the best policy (the best arm of
        every row, the comparator of regret) and the uniformly random policy."""
        arm_sum = np.zeros(self.K)
        best_sum = 0.0
        for i in range(0, self.n_rows, block):
            m = self.mean_rewards(np.arange(i, min(i + block, self.n_rows)))
            arm_sum += m.sum(axis=0)
            best_sum += float(m.max(axis=1).sum())
        arm = arm_sum / self.n_rows
        return {
            "best_fixed_arm": int(np.argmax(arm)),
            "best_fixed_arm_reward": round(float(arm.max()), 6),
            "best_policy_reward": round(best_sum / self.n_rows, 6),
            "uniform_reward": round(float(arm.mean()), 6),
        }

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.update(
            n_rows=self.n_rows,
            feedback=self.feedback,
            order=self.order,
            theta_norm=round(self.theta_bound, 6),
        )
        return out

    @property
    def theta_star(self) -> np.ndarray:
        return np.broadcast_to(self.theta, (self.R, self.d))

    def _reset(self) -> None:
        if self.order == "permutation":
            rng = self.streams.contexts
            self._perm = np.stack([rng.permutation(self.n_rows) for _ in range(self.R)], axis=1)
            self._next = 0

    def _rows(self, B: int) -> np.ndarray:
        rng = self.streams.contexts
        if self.order == "iid":
            return rng.integers(0, self.n_rows, (B, self.R))
        parts = []
        left = B
        while left > 0:
            if self._next == self.n_rows:
                self._perm = np.stack([rng.permutation(self.n_rows) for _ in range(self.R)], axis=1)
                self._next = 0
            take = min(left, self.n_rows - self._next)
            parts.append(self._perm[self._next : self._next + take])
            self._next += take
            left -= take
        return np.concatenate(parts, axis=0)

    def _draw_chunk(self, B: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        rows = self._rows(B)
        X = self.features(rows)
        means = np.asarray(special.expit(X @ self.theta))
        V = self.noise.draw_variates(self.streams.rewards, (B, self.R))
        return X, means, V, means.max(axis=-1)


class PolicyValued(Protocol):
    """A data-backed environment that knows its size and its fixed policies' values."""

    n_rows: int
    d: int
    K: int

    def policy_values(self) -> dict[str, float]: ...

    def describe(self) -> dict[str, Any]: ...


class EnvDataset:
    """A data-backed environment seen as a registered data set (``privbandits datasets describe``):
    its ``describe()`` is the environment's plus the fixed policies' values (:meth:`DataGLMEnv.policy_values`)."""

    def __init__(self, env: PolicyValued) -> None:
        self.env = env

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.env.n_rows, "d": self.env.d, "K": self.env.K}
        out.update(self.env.policy_values())
        out.update(
            {
                k: v
                for k, v in self.env.describe().items()
                if k not in ("env", "d", "K", "link", "setting", "noise_scale")
            }
        )
        return out
