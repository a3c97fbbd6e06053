"""Shuffle-private LinUCB (Chowdhury & Zhou 2022): the batched framework with a shuffled Gaussian randomizer."""

from privbandits.algorithms.chowdhury.shuffle_linucb import ShuffleLinUCB

__all__ = ["ShuffleLinUCB"]
