"""Compiled per-round steps of bandit-convex-optimization algorithms (continuous actions).

The counterpart of :mod:`privbandits.algorithms.kernel` for loss environments
(:class:`~privbandits.envs.convex.ConvexLossEnv`): an action is a set of ``k`` query points
``(k, d)``, and the user observes its own losses there.  The compiled driver
(:mod:`privbandits.engine.convex`) runs the steps in one compiled loop over rounds and
replications, evaluating the losses and the pseudo-regret with the environment's compiled loss
functions (:mod:`privbandits.envs.convex_losses`), and consumes every random stream in the
reference driver's order (round-major, replication-minor, one stream per role): the same seed gives
the same trajectory as the algorithm's numpy roles on the reference driver (tested).

Step signatures (``r`` replication index, ``t`` 0-based round):

=====================  ==========================================================================
curator ``propose``    ``(params, state, r, t, rng_policy, points) -> None``: writes the round's
                       ``k`` query points into ``points`` ``(k, d)``
curator ``update``     ``(params, state, r, t, points, losses, rng_server) -> None``: ``losses``
                       ``(k,)`` observed at ``points``
local ``publish``      ``(params, public, server, r, t, rng_policy) -> None`` (server side):
                       writes replication ``r``'s query points into ``public[0][r]`` ``(k, d)``
local ``randomize``    ``(params, public, r, t, losses, rng_client, out) -> None`` (user side):
                       the message of the user who observed ``losses`` ``(k,)`` at the public
                       points, written into ``out`` (``message.size``)
local ``update``       ``(params, public, server, r, t, msg) -> None`` (server side; sees the
                       message only)
=====================  ==========================================================================

The user's loss parameters never enter a step: the environment evaluates the losses on the
device's behalf.  ``params`` is a tuple of numbers (and work arrays), ``state``, ``public`` and
``server`` tuples of arrays with the replication axis first, mutated in place only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.algorithms.kernel import MessageLayout, _ChunkLoop

__all__ = ["ConvexCuratorKernel", "ConvexLocalKernel"]


@dataclass
class ConvexCuratorKernel(_ChunkLoop):
    """Compiled steps and state of a trusted-curator (non-private) bandit-convex-optimization
    algorithm querying ``k`` points per round (module docstring)."""

    propose: Any
    update: Any
    params: tuple[Any, ...]
    state: tuple[np.ndarray, ...]
    k: int
    estimate: Callable[[], np.ndarray | None] = field(default=lambda: None)
    #: Whether the steps allocate arrays (:attr:`~privbandits.algorithms.kernel.CuratorKernel.allocates`).
    allocates: bool = False

    @property
    def loops(self) -> Any:
        """The round loops around the steps
        (:func:`privbandits.algorithms._shared.loops.convex_curator_loops`)."""
        from privbandits.algorithms._shared.loops import convex_curator_loops

        return convex_curator_loops(self.propose, self.update)


@dataclass
class ConvexLocalKernel(_ChunkLoop):
    """Compiled server-side and user-side steps of a locally private bandit-convex-optimization
    algorithm (module docstring): ``public[0]`` holds the query points ``(R, k, d)`` the server
    broadcasts, ``server`` its own state, ``message`` the fields of the flat message."""

    publish: Any
    randomize: Any
    update: Any
    params: tuple[Any, ...]
    public: tuple[np.ndarray, ...]
    server: tuple[np.ndarray, ...]
    message: MessageLayout
    estimate: Callable[[], np.ndarray | None] = field(default=lambda: None)
    #: Whether the steps allocate arrays (:attr:`~privbandits.algorithms.kernel.LocalKernel.allocates`).
    allocates: bool = False

    @property
    def k(self) -> int:
        """Query points per round."""
        return int(self.public[0].shape[1])

    @property
    def loops(self) -> Any:
        """The round loops around the steps
        (:func:`privbandits.algorithms._shared.loops.convex_local_loops`)."""
        from privbandits.algorithms._shared.loops import convex_local_loops

        return convex_local_loops(self.publish, self.randomize, self.update)
