"""Batched environments (synthetic, fixed action sets, context sequences)."""

from privbandits.envs.armed import MultiArmedEnv
from privbandits.envs.base import Environment
from privbandits.envs.convex import ConvexLossEnv
from privbandits.envs.finite import FiniteActionEnv
from privbandits.envs.movielens import MovieLensEnv
from privbandits.envs.sequence import ContextSequenceEnv
from privbandits.envs.synthetic import SyntheticEnv

__all__ = [
    "ContextSequenceEnv",
    "ConvexLossEnv",
    "Environment",
    "FiniteActionEnv",
    "MovieLensEnv",
    "MultiArmedEnv",
    "SyntheticEnv",
]
