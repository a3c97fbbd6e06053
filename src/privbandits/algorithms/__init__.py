"""Bandit algorithms by model family (linear/, glm/, mab/, bco/) beside the paper families; importing this package fills the registry.

The contract lives at this level (base, calibration, kernel, registry, roles); shared math in ``_shared``."""

from privbandits.algorithms import (  # noqa: F401  (registration side effects)
    bco,
    chen,
    chowdhury,
    glm,
    hanna,
    ldp_glb,
    ldp_onepoint,
    ldp_zheng,
    linear,
    mab,
    sarmasarkar,
    shariff,
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
