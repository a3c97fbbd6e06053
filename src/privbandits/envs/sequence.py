"""Contexts supplied by an iterator: adversarial, replayed or externally generated contexts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.links import Link
from privbandits.core.validation import check_finite_array, check_norm_bound
from privbandits.envs.synthetic import SingleThetaEnv

__all__ = ["ContextSequenceEnv"]


class ContextSequenceEnv(SingleThetaEnv):
    """Single-parameter environment whose per-round action sets come from an iterable.

    Parameters
    ----------
    d, K : int
        Dimension and arms per round.
    contexts : iterable or callable returning an iterable
        Yields one array per round, of shape ``(K, d)`` (same set in every replication) or
        ``(R, K, d)``.  A callable is called at every reset (so reruns replay the same
        sequence); a plain iterable can be consumed once.  Every vector must have norm at most
        ``context_bound`` (checked; violations raise :class:`DataBoundError`).
    theta : {"sphere", "ball"} or array of shape (d,)
        True parameter.
    link, noise, noise_scale, context_bound, reward_range :
        As for :class:`~privbandits.envs.synthetic.SyntheticEnv`.
    """

    def __init__(
        self,
        d: int,
        K: int,
        contexts: Iterable[Any] | Callable[[], Iterable[Any]],
        theta: Any = "sphere",
        theta_norm: float = 1.0,
        link: str | Link = "identity",
        noise: str = "gaussian",
        noise_scale: float = 0.1,
        context_bound: float = 1.0,
        reward_range: tuple[float, float] | None = None,
    ) -> None:
        super().__init__(d, K, link, noise, noise_scale, context_bound, reward_range)
        self._source = contexts
        self._set_theta(theta, theta_norm)

    def _reset(self) -> None:
        src = self._source() if callable(self._source) else self._source
        self._it: Iterator[Any] = iter(src)
        self._draw_theta(self.streams.instance)

    def chunk_rounds(self) -> int:
        return 256

    def _draw_chunk(self, B: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        X = np.empty((B, self.R, self.K, self.d))
        for i in range(B):
            try:
                raw = next(self._it)
            except StopIteration:
                raise ValidationError(
                    f"the context sequence ended after {self._drawn + i} rounds; "
                    f"it must supply at least horizon={self.horizon}"
                ) from None
            Xi = check_finite_array(f"contexts of round {self._drawn + i}", raw)
            if Xi.shape not in ((self.K, self.d), (self.R, self.K, self.d)):
                raise ValidationError(
                    f"contexts of round {self._drawn + i} must have shape ({self.K}, {self.d}) or "
                    f"({self.R}, {self.K}, {self.d}), got {Xi.shape}"
                )
            check_norm_bound(f"contexts of round {self._drawn + i}", Xi, self.context_bound)
            X[i] = Xi
        means = self.link.mu(np.einsum("brkd,rd->brk", X, self._theta))
        self.noise.check_means(means)
        return (
            X,
            means,
            self.noise.draw_variates(self.streams.rewards, (B, self.R)),
            means.max(axis=-1),
        )
