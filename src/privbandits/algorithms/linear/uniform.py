"""Uniform random arm selection: the linear-regret reference."""

from __future__ import annotations

from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.algorithms.kernel import CuratorKernel
from privbandits.algorithms.registry import register

__all__ = ["UniformRandom"]


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    K = params[0]
    return min(int(rng.random() * K), K - 1)


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    return None


@register
class UniformRandom(Curator):
    """Pull an arm uniformly at random every round (regret grows linearly in T)."""

    name = "uniform"
    settings = ("single", "multi")
    links = ("*",)
    paper = "reference"
    test_envs: ClassVar = ("synthetic", "finite")

    def __init__(self) -> None:
        pass

    def build_kernel(self) -> CuratorKernel:
        return CuratorKernel(_select, _update, (self.spec.K,), (np.zeros(1),), allocates=False)
