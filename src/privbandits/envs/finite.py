"""Fixed finite action sets: the non-contextual stochastic linear bandit (Hanna et al. 2022)."""

from __future__ import annotations

from typing import Any

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.links import Link
from privbandits.core.validation import check_choice, check_finite_array, check_positive
from privbandits.envs.base import Environment
from privbandits.envs.contexts import unit_sphere
from privbandits.envs.synthetic import draw_theta

__all__ = ["FiniteActionEnv"]

_CHUNK_ROUNDS = 4096


class FiniteActionEnv(Environment):
    """The same action set ``A`` (K vectors in R^d) every round; mean reward ``mu(a @ theta*)``.

    Parameters
    ----------
    d, K : int
        Dimension and number of actions.
    actions : {"circle", "sphere", "ball"} or array of shape (K, d)
        ``circle`` (d = 2 only): K angles uniform on [0, 2 pi) (Hanna et al. 2022, section 6);
        ``sphere``/``ball``: K i.i.d. uniform vectors; drawn per replication from the instance
        stream.  An array is used in every replication.
    theta : {"sphere", "ball"} or array of shape (d,)
        True parameter.
    link, noise, noise_scale, context_bound, reward_range :
        As for :class:`~privbandits.envs.synthetic.SyntheticEnv`.
    """

    fixed_actions = True

    def __init__(
        self,
        d: int,
        K: int,
        actions: Any = "sphere",
        theta: Any = "sphere",
        theta_norm: float = 1.0,
        link: str | Link = "identity",
        noise: str = "gaussian",
        noise_scale: float = 0.1,
        context_bound: float = 1.0,
        reward_range: tuple[float, float] | None = None,
    ) -> None:
        super().__init__(d, K, link, noise, noise_scale, context_bound, reward_range)
        if isinstance(actions, str):
            check_choice("actions", actions, ("circle", "sphere", "ball"))
            if actions == "circle" and d != 2:
                raise ValidationError(f"actions='circle' needs d=2, got d={d}")
        else:
            arr = check_finite_array("actions", actions, ndim=2)
            if arr.shape != (K, d):
                raise ValidationError(f"actions must have shape ({K}, {d}), got {arr.shape}")
            if np.linalg.norm(arr, axis=1).max() > context_bound * (1 + 1e-9):
                raise ValidationError(f"actions must have l2 norm <= context_bound={context_bound}")
        self.actions = actions
        self.theta = theta
        self.theta_norm = check_positive("theta_norm", theta_norm)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.update(
            actions=self.actions if isinstance(self.actions, str) else np.asarray(self.actions).tolist(),
            theta=self.theta if isinstance(self.theta, str) else np.asarray(self.theta).tolist(),
            theta_norm=self.theta_norm,
        )
        return out

    @property
    def theta_star(self) -> np.ndarray:
        return self._theta

    @property
    def action_set(self) -> np.ndarray:
        """The fixed actions, ``(R, K, d)`` (read-only)."""
        return self._A

    @property
    def fixed_means(self) -> np.ndarray:
        """Mean reward of every action, ``(R, K)``."""
        return self._means

    def _reset(self) -> None:
        rng = self.streams.instance
        R, K, d = self.R, self.K, self.d
        if isinstance(self.actions, str):
            if self.actions == "circle":
                ang = rng.uniform(0.0, 2 * np.pi, size=(R, K))
                A = np.stack([np.cos(ang), np.sin(ang)], axis=-1)
            else:
                A = unit_sphere(rng, (R, K), d)
                if self.actions == "ball":
                    A = A * rng.random((R, K, 1)) ** (1.0 / d)
            A = self.context_bound * A
        else:
            A = np.broadcast_to(np.asarray(self.actions, float), (R, K, d)).copy()
        self._theta = draw_theta(rng, (R,), d, self.theta, self.theta_norm)
        A.setflags(write=False)
        self._A = A
        self._means = self.link.mu(np.einsum("rkd,rd->rk", A, self._theta))
        self.noise.check_means(self._means)
        self._means.setflags(write=False)
        self._best_fixed = self._means.max(axis=1)
        self._pos = self._len = 0

    def _next_round(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if self._pos >= self._len:
            self._V = self.noise.draw_variates(self.streams.rewards, (_CHUNK_ROUNDS, self.R))
            self._pos, self._len = 0, _CHUNK_ROUNDS
        i = self._pos
        self._pos += 1
        return self._A, self._means, self._V[i], self._best_fixed
