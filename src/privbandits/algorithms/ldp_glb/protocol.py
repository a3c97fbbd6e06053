"""Helpers shared by the clients and servers of Algorithms 1 and 2 (Han et al. 2021).

* :func:`check_message`: what a server accepts (a :class:`PrivatizedMessage` of the expected
  randomizer with exactly the expected payload keys, nothing else);
* :class:`TieBreaker`: uniform random tie-breaking among maximizers (spec 8.26), with the
  uniform keys pre-drawn in chunks from the policy stream.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from privbandits.algorithms.ldp_glb.randomizers import ChunkedDraws
from privbandits.core.errors import TrustBoundaryError
from privbandits.core.messages import PrivatizedMessage

__all__ = ["check_message", "TieBreaker"]


def check_message(message: object, mechanism: str, keys: tuple[str, ...]) -> Mapping[str, np.ndarray]:
    """Return the payload of ``message`` after checking it is a privatized output of ``mechanism``.

    Raises
    ------
    TrustBoundaryError
        If ``message`` is not a :class:`PrivatizedMessage` (e.g. a raw context, reward or arm
        index), was produced by another randomizer, or carries other payload keys.
    """
    if not isinstance(message, PrivatizedMessage):
        raise TrustBoundaryError(
            f"the server only accepts PrivatizedMessage objects, got {type(message).__name__}; "
            "raw contexts, rewards and arm indices never reach the server in the local model"
        )
    if message.mechanism != mechanism:
        raise TrustBoundaryError(f"expected a message of randomizer {mechanism!r}, got {message.mechanism!r}")
    if tuple(message.payload) != keys and set(message.payload) != set(keys):
        raise TrustBoundaryError(f"payload keys must be {keys}, got {tuple(message.payload)}")
    return message.payload


class TieBreaker:
    """Row-wise argmax with ties broken uniformly at random (pre-drawn uniform keys)."""

    def __init__(self) -> None:
        # keys in (0, 1]: a tied entry always beats the zeroed non-tied ones
        self._keys = ChunkedDraws(lambda rng, prefix: (1.0 - rng.random(prefix),), 1)

    def argmax(self, scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``(R, K)`` scores -> ``(R,)`` arms; among exact maximizers the one with the largest key."""
        (keys,) = self._keys.take(rng, scores.shape)
        tied = scores >= scores.max(axis=1, keepdims=True)
        return np.argmax(tied * keys, axis=1)
