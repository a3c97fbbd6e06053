"""Bandit algorithms, one module per family; importing this package fills the registry."""

from privbandits.algorithms import (  # noqa: F401  (registration side effects)  # noqa: F401  (registration side effects)
    bco,
    chen,
    chowdhury,
    ecolog,
    glm_ucb,
    gloc,
    greedy,
    hanna,
    ldp_glb,
    ldp_onepoint,
    ldp_zheng,
    linucb,
    mab,
    phased_elimination,
    rs_glinucb,
    sarmasarkar,
    shariff,
    uniform,
)
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
