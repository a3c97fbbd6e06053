"""Shuffle-private LinUCB (Chowdhury & Zhou 2022): the batched framework with its two protocols,
a shuffled Gaussian randomizer (amplification) and the vector summation of Cheu et al. (2022)."""

from privbandits.algorithms.chowdhury.shuffle_linucb import ShuffleLinUCB
from privbandits.algorithms.chowdhury.shuffle_vec import ShuffleLinUCBVec

__all__ = ["ShuffleLinUCB", "ShuffleLinUCBVec"]
