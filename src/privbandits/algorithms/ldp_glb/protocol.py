"""Helpers shared by the clients and servers of Algorithms 1 and 2 (Han et al. 2021).

* :func:`check_message`: what a server accepts (a :class:`PrivatizedMessage` of the expected
  randomizer with exactly the expected payload keys, nothing else);
* :class:`TieBreaker`: uniform random tie-breaking among maximizers (spec 8.26).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from privbandits.core.errors import TrustBoundaryError
from privbandits.core.messages import PrivatizedMessage

__all__ = ["TieBreaker", "check_message"]


def check_message(
    message: object, mechanism: str, keys: tuple[str, ...]
) -> Mapping[str, np.ndarray]:
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
        raise TrustBoundaryError(
            f"expected a message of randomizer {mechanism!r}, got {message.mechanism!r}"
        )
    if tuple(message.payload) != keys and set(message.payload) != set(keys):
        raise TrustBoundaryError(f"payload keys must be {keys}, got {tuple(message.payload)}")
    return message.payload


class TieBreaker:
    """Row-wise argmax with ties broken uniformly at random (spec 8.26).

    With continuous contexts exact ties only occur in degenerate rounds (e.g. ``theta = 0`` at the
    start), so the common case costs one tie count; uniform keys are drawn from ``rng`` only in
    rounds that have a tie (deterministic given the seed).
    """

    def argmax(self, scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``(R, K)`` scores -> ``(R,)`` arms; a uniformly random maximizer in every row."""
        tied = scores >= np.maximum.reduce(scores, axis=1, keepdims=True)
        if np.count_nonzero(tied) == scores.shape[0]:
            return tied.argmax(axis=1)
        keys = 1.0 - rng.random(scores.shape)  # in (0, 1]: a tied entry beats the zeroed others
        return (tied * keys).argmax(axis=1)
