"""Bandit algorithms, one module per family; importing this package fills the registry."""

from privbandits.algorithms import gloc, greedy, hanna, ldp_glb, ldp_zheng, linucb, uniform  # noqa: F401  (registration side effects)
from privbandits.algorithms import glm_ucb, phased_elimination  # noqa: F401  (registration side effects)
from privbandits.algorithms.base import (
    Algorithm,
    Client,
    Curator,
    LocalAlgorithm,
    Server,
    ShuffleAlgorithm,
)
from privbandits.algorithms.registry import available, get, make, register

__all__ = [
    "Algorithm",
    "Client",
    "Curator",
    "LocalAlgorithm",
    "Server",
    "ShuffleAlgorithm",
    "available",
    "get",
    "make",
    "register",
]
