"""Untrusted-server side shared by Algorithms 2 and 3 of Hanna et al. (2022).

The server of the local and shuffle models holds the *public* elimination state (surviving set
``A_i``, design, schedule ``n_ia``, estimates): everything it computes is a function of the
public action catalogue and of privatized per-action sums.  It never receives a raw reward:
:meth:`EliminationServer.check_reports` accepts only :class:`PrivatizedMessage` /
:class:`ShuffledBatch` objects of the expected randomizer with exactly the keys
``("action", "reward_hat")`` (actions are public in this paper's model, spec section 2.1).

The action catalogue ``A`` is public too (a fixed, known set); the first user posts it to the
server's bulletin (:meth:`EliminationServer.publish_action_set`) before the first batch is planned,
because the simulation hands the action set to users only (as their contexts).

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithms 2-3; spec sections 2.1, 2.3-2.4, 4.2-4.3.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from privbandits.algorithms.base import Server
from privbandits.algorithms.phased_elimination import HannaElimination
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.messages import PublicState

__all__ = ["REPORT_KEYS", "EliminationServer", "EngineAccess", "check_reports"]

#: Payload keys of a report: the (public) action and the privatized reward.
REPORT_KEYS: tuple[str, ...] = ("action", "reward_hat")


def check_reports(obj: object, kind: type, mechanism: str) -> tuple[np.ndarray, np.ndarray]:
    """``(action, reward_hat)`` arrays of a message after checking what crosses the boundary.

    Raises
    ------
    TrustBoundaryError
        If ``obj`` is not a ``kind`` (:class:`PrivatizedMessage` in the local model,
        :class:`ShuffledBatch` in the shuffle model), comes from another randomizer, or carries
        other payload keys (e.g. a raw reward or a client id).
    """
    if not isinstance(obj, kind):
        raise TrustBoundaryError(f"the server only accepts {kind.__name__} objects, got {type(obj).__name__}; "
                                 "raw rewards never reach the server in the local and shuffle models")
    msg: Any = obj
    if msg.mechanism != mechanism:
        raise TrustBoundaryError(f"expected reports of randomizer {mechanism!r}, got {msg.mechanism!r}")
    if set(msg.payload) != set(REPORT_KEYS):
        raise TrustBoundaryError(f"report payload keys must be {REPORT_KEYS}, got {tuple(msg.payload)}")
    action = np.asarray(msg.payload["action"])
    value = np.asarray(msg.payload["reward_hat"], dtype=float)
    if action.shape != value.shape or not np.issubdtype(action.dtype, np.integer):
        raise TrustBoundaryError("reports must pair one integer action with one privatized value")
    return action.astype(np.int64), value


class EliminationServer(Server):
    """Server of Algorithms 2-3: plans public batches and estimates from privatized sums.

    Parameters
    ----------
    R, d : int
        Replications and dimension.
    make_core : callable
        ``A (R, K, d) -> HannaElimination`` with the model's width (the algorithm's factory).
    """

    def __init__(self, R: int, d: int, make_core: Callable[[np.ndarray], HannaElimination]) -> None:
        self.R, self.d = R, d
        self._make_core = make_core
        self.core: HannaElimination | None = None
        self._public: PublicState | None = None

    # -- public catalogue and schedule ----------------------------------------------------------
    def publish_action_set(self, A: np.ndarray) -> None:
        """Post the public action catalogue ``A`` (R, K, d); plans batch 1 the first time."""
        A = np.asarray(A, dtype=float)
        if self.core is not None:
            if A.shape != self.core.A.shape or not np.array_equal(A, self.core.A):
                raise ValidationError("the action set changed during the run; Hanna et al. need a fixed set")
            return
        self.core = self._make_core(np.array(A, copy=True))
        self._planned(self.core.plan_batch())
        self._public = None

    @property
    def ready(self) -> bool:
        return self.core is not None

    def _planned(self, plan: Any) -> None:
        """Hook: a new batch was planned for ``plan.rows``."""

    def _public_arrays(self) -> dict[str, np.ndarray]:
        core = self.core
        if core is None:
            return {"ready": np.zeros(self.R, dtype=bool)}
        exploring = core.exploring()
        counts = np.where(exploring[:, None], core.view(np.arange(self.R)).counts, 0)
        return {"ready": np.ones(self.R, dtype=bool), "batch": core.batch + 1, "counts": counts,
                "committed": core.committed.copy()}

    def public_state(self) -> PublicState:
        """The public schedule: ``counts`` (R, K) of the running batch, ``batch``, ``committed``."""
        if self._public is None:
            self._public = PublicState(self._public_arrays())
        return self._public

    # -- batch end ------------------------------------------------------------------------------
    def _complete(self, rows: np.ndarray, r_hat: np.ndarray) -> None:
        """Estimate and eliminate from the released sums of ``rows``; plan their next batch."""
        assert self.core is not None
        plan = self.core.view(rows)
        self.core.finish_batch(plan, r_hat)
        nxt = rows[self.core.committed[rows] < 0]
        if nxt.size:
            self._planned(self.core.plan_batch(nxt))
        self._public = None

    def estimate(self) -> np.ndarray:
        return np.zeros((self.R, self.d)) if self.core is None else self.core.theta

    @property
    def batch_log(self) -> list[dict[str, Any]]:
        return [] if self.core is None else self.core.batch_log


class EngineAccess:
    """``core`` and ``batch_log`` of an algorithm, read from the role object holding the engine.

    The untrusted server of Algorithm 2 and the analyzer of Algorithm 3 own the elimination engine
    (:class:`~privbandits.algorithms.phased_elimination.HannaElimination`); the exact aggregate
    driver installs a fresh one through the ``core`` setter (BatchedAlgorithm protocol).
    ``_engine_holder`` names that role attribute.
    """

    _engine_holder: str = "server"

    @property
    def core(self) -> HannaElimination | None:
        """The elimination engine of the current run (None before :meth:`reset`)."""
        holder = getattr(self, self._engine_holder, None)
        return None if holder is None else holder.core

    @core.setter
    def core(self, value: HannaElimination) -> None:
        holder = getattr(self, self._engine_holder)
        holder.core = value
        holder._public = None

    @property
    def batch_log(self) -> list[dict[str, Any]]:
        """Per-batch public record of the run (empty before :meth:`reset`)."""
        holder = getattr(self, self._engine_holder, None)
        return [] if holder is None else holder.batch_log
