"""The public-state check of the Chen et al. (2025) local devices (``chen-ldp``, ``squarecb-ldp``).

Every entry point of a device (``choose``, ``encode``, ``noise``, ``randomize``) validates the
public state it is handed against the space it declares, also when the round protocol has just
done so: a device called directly must not trust its caller.  Within a round the same state
arrives several times; :class:`PublicCheck` remembers the last state it accepted and answers a
state with exactly the same fields, dtypes, shapes and values without validating it again
(validation is a pure function of those), so the guarantee costs one validation per state.

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Sections 5 and 6.2 (the local-model
algorithms whose devices use it).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from privbandits.core.messages import PublicState
from privbandits.core.public_space import PublicSpace, PublicStateError, dims_of
from privbandits.core.spec import EnvSpec

__all__ = ["PublicCheck"]


class PublicCheck:
    """``space.validate`` on problem ``spec``, remembering the last accepted state.

    Parameters
    ----------
    space : PublicSpace
        The states the device accepts.
    spec : EnvSpec
        The problem (shape symbols ``K``, ``d``, ``D``).
    """

    def __init__(self, space: PublicSpace, spec: EnvSpec) -> None:
        self.space, self.spec = space, spec
        self._last: PublicState | None = None
        self._last_R = -1

    def __call__(self, public: object, R: int) -> PublicState:
        """``public`` as a validated :class:`PublicState` for ``R`` users, or :class:`PublicStateError`."""
        last = self._last
        if last is not None and R == self._last_R and _same(public, last):
            return last
        state = self.space.validate(public, dims_of(self.spec, R))
        self._last, self._last_R = state, R
        return state


def _same(public: object, accepted: PublicState) -> bool:
    """Whether ``public`` holds exactly the arrays of ``accepted`` (fields, dtypes, shapes, values)."""
    if not isinstance(public, Mapping) or set(public) != set(accepted):
        return False
    for key, ref in accepted.items():
        try:
            arr = np.asarray(public[key])
        except (TypeError, ValueError, PublicStateError):
            return False
        if arr.dtype != ref.dtype or arr.shape != ref.shape or not np.array_equal(arr, ref):
            return False
    return True
