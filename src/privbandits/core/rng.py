"""Seed streams (the documentation's Concepts: randomness and reproducibility).

A run's seed is expanded with :class:`numpy.random.SeedSequence` into independent generator
streams, one per role, so that

* the environment (instance parameters, contexts, reward noise) depends on the seed only: every
  algorithm run with the same seed sees the same contexts and rewards (common random numbers);
* privacy noise of clients, the shuffler's permutations, the server's and the policy's randomness
  never share a stream with the environment or with each other;
* rerunning with the same seed is bit-identical.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privbandits.core.validation import check_int

__all__ = ["ROLES", "Streams", "make_streams"]

#: Fixed order of the spawned children; append only (changing it changes every result).
ROLES: tuple[str, ...] = (
    "instance",
    "contexts",
    "rewards",
    "client",
    "shuffler",
    "server",
    "policy",
)


@dataclass(frozen=True)
class Streams:
    """Independent :class:`numpy.random.Generator` streams for one run.

    Attributes
    ----------
    instance : Generator
        Draws the problem instance (theta*, fixed action sets).
    contexts : Generator
        Draws per-round contexts.
    rewards : Generator
        Draws reward noise (consumed independently of the chosen action).
    client : Generator
        User-side privacy noise (local randomizers).
    shuffler : Generator
        The shuffler's permutations.
    server : Generator
        Server- or curator-side privacy noise.
    policy : Generator
        Randomness of the policy itself (tie breaking, random orders).
    """

    instance: np.random.Generator
    contexts: np.random.Generator
    rewards: np.random.Generator
    client: np.random.Generator
    shuffler: np.random.Generator
    server: np.random.Generator
    policy: np.random.Generator
    seed: int = 0


def make_streams(seed: int) -> Streams:
    """Spawn the role streams of :data:`ROLES` from ``SeedSequence(seed)``."""
    seed = check_int("seed", seed, 0)
    children = np.random.SeedSequence(seed).spawn(len(ROLES))
    gens = {role: np.random.Generator(np.random.PCG64(ss)) for role, ss in zip(ROLES, children)}
    return Streams(seed=seed, **gens)
