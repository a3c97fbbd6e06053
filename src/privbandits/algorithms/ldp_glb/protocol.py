"""What the servers of Algorithms 1 and 2 (Han et al. 2021) accept.

:func:`check_message`: a :class:`PrivatizedMessage` of the expected randomizer with exactly the
expected payload keys, nothing else.  (Uniform tie-breaking among maximizers, spec 8.26, is
:func:`privbandits.algorithms.base.argmax_random_ties`.)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from privbandits.core.errors import TrustBoundaryError
from privbandits.core.messages import PrivatizedMessage

__all__ = ["check_message"]


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

