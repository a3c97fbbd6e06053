"""Uniform random arm selection: the linear-regret reference."""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.algorithms.registry import register

__all__ = ["UniformRandom"]


@register
class UniformRandom(Curator):
    """Pull an arm uniformly at random every round (regret grows linearly in T)."""

    name = "uniform"
    settings = ("single", "multi")
    links = ("*",)
    paper = "reference"

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        return self.streams.policy.integers(0, self.spec.K, size=self.R)

    def update(self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        return None
