"""Uniform permutations for the shuffler service.

The shuffler forwards each batch in an order drawn uniformly from all ``n!`` orders, so that the
position of a report in a forwarded batch says nothing about when (or from whom) it arrived.  In a
deployment the draw uses the operating system's cryptographic generator
(:class:`secrets.SystemRandom`, Fisher-Yates); tests inject a seeded generator to get reproducible
batches.

References
----------
Bittau et al. (2017), "Prochlo: strong privacy for analytics in the crowd" (the shuffler's role);
Feldman, McMillan & Talwar (2021) (amplification by shuffling assumes a uniform permutation).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import numpy as np

from privbandits.core.validation import check_int

__all__ = ["Permutation", "seeded_permutation", "system_permutation"]

#: A source of permutations: ``n -> perm`` with ``perm`` a list holding each of ``0 .. n-1`` once.
Permutation = Callable[[int], list[int]]


def system_permutation(n: int) -> list[int]:
    """A uniformly random permutation of ``range(n)`` from the OS's cryptographic generator.

    Parameters
    ----------
    n : int
        Batch size (``n >= 0``).

    Returns
    -------
    list of int
        ``perm`` with ``perm[i]`` the index of the report forwarded at position ``i``.
    """
    perm = list(range(check_int("n", n, 0)))
    secrets.SystemRandom().shuffle(perm)
    return perm


def seeded_permutation(seed: int) -> Permutation:
    """A reproducible permutation source for tests: a ``numpy`` generator seeded with ``seed``.

    Not for deployments: anyone who knows the seed can undo the shuffle.
    """
    rng = np.random.default_rng(seed)

    def draw(n: int) -> list[int]:
        return [int(i) for i in rng.permutation(check_int("n", n, 0))]

    return draw
