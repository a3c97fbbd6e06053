"""What a bandit-convex-optimization algorithm reads from the problem, and its random directions."""

from __future__ import annotations

import numpy as np

from privbandits.core.convex import ConvexSpec
from privbandits.core.errors import ValidationError
from privbandits.core.spec import EnvSpec
from privbandits.envs.contexts import unit_sphere

__all__ = ["convex_spec", "directions"]


def convex_spec(name: str, spec: EnvSpec) -> ConvexSpec:
    """``spec`` as a :class:`ConvexSpec`, or a clear error naming the algorithm."""
    if not isinstance(spec, ConvexSpec):
        raise ValidationError(f"{name} is a bandit-convex-optimization algorithm (continuous actions): it runs on a "
                              f"loss environment (ConvexLossEnv, config kind 'convex'), got a {type(spec).__name__} "
                              "problem")
    return spec


def directions(rng: np.random.Generator, R: int, d: int) -> np.ndarray:
    """``u_t``: one uniform unit vector per replication, ``(R, d)`` (``z / ||z||``, ``z ~ N(0, I)``)."""
    return unit_sphere(rng, (R,), d)
