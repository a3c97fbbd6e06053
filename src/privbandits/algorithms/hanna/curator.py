"""The trusted-curator driver of batched elimination (Hanna et al. 2022, Algorithm 1 and NP-batched).

:class:`BatchedCurator` runs an elimination engine
(:class:`~privbandits.algorithms.hanna.elimination.EliminationCore`) round by round on a fixed
action set: the schedule of a batch (which actions, how often) is public; its pulls are played in
a uniformly random order drawn from the policy stream (sequential draws without replacement from
the remaining counts, so a batch cut by the horizon plays a uniformly random prefix, Hanna et al. 2022, correction Hanna22-30); the per-action reward sums of the running batch are accumulated and, when the batch ends,
released by a :class:`SumCollector` (step 7: raw sums for NP-batched, ``Lap(Delta / eps)`` per
core action for Algorithm 1) and handed to the engine (steps 8-12).

The same algorithms run on the exact aggregate driver (:mod:`privbandits.engine.aggregate`), which
draws each batch's sums in distribution and calls the same collector and engine
(:class:`~privbandits.algorithms.base.BatchedAlgorithm`).

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithm 1 and the common skeleton; Hanna et al. 2022, correction Hanna22-30,
3.8 and 4.0.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.algorithms.hanna.elimination import BatchPlan, EliminationCore
from privbandits.core.errors import ValidationError
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_finite_array

__all__ = ["BatchedCurator", "RawSums", "SumCollector", "require_fixed_actions"]


def require_fixed_actions(name: str, spec: EnvSpec) -> None:
    """Raise unless the problem has one fixed finite action set (Hanna et al. 2022, section 2: no contexts)."""
    if not spec.fixed_actions:
        raise ValidationError(
            f"algorithm {name!r} needs one fixed finite action set (no per-round contexts): in an experiment "
            'file set kind = "finite" under [env] (Python: privbandits.FiniteActionEnv); got an environment '
            "with per-round contexts"
        )


class SumCollector(Protocol):
    """Step 7 of the skeleton: how the per-action reward sums of a completed batch are released."""

    @property
    def clip(self) -> tuple[float, float] | None:
        """The clipping ``(r_lo, r_hi)`` applied to each reward before it enters a sum (None = none)."""
        ...

    def collect(self, plan: BatchPlan, sums: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Released sums ``r_hat`` (n, K) from the batch's (clipped) sums (n, K) (0 off ``C_i``)."""
        ...


class RawSums:
    """Non-private collector (NP-batched, Lattimore & Szepesvari): the released sums are the sums."""

    clip: tuple[float, float] | None = None

    def collect(self, plan: BatchPlan, sums: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.where(plan.counts > 0, sums, 0.0)


class BatchedCurator(Curator):
    """Round-by-round trusted-curator driver of an elimination engine on a fixed action set.

    Subclasses implement :meth:`make_core` (the engine with its width / schedule) and
    :meth:`make_collector` (step 7); both read ``self.calibration``.  Implements the
    :class:`~privbandits.algorithms.base.BatchedAlgorithm` protocol.
    """

    settings: ClassVar[tuple[str, ...]] = ("single",)
    links: ClassVar[tuple[str, ...]] = ("identity",)
    test_envs: ClassVar[tuple[str, ...]] = ("finite",)

    collector: SumCollector

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        require_fixed_actions(self.name, spec)
        super().reset(spec, replications, streams)
        self.collector = self.make_collector()
        self._core: EliminationCore | None = None
        self._A_ref: np.ndarray | None = None
        # schedule of the running batch, compressed to its core set: slot j of row r is action
        # _slots[r, j] with _remaining[r, j] pulls left (padding slots have 0 pulls)
        self._slots = np.zeros((self.R, 1), dtype=np.int64)
        self._remaining = np.zeros((self.R, 1), dtype=np.int64)
        self._left = np.zeros(self.R, dtype=np.int64)
        self._slot = np.zeros(self.R, dtype=np.int64)
        self._sums = np.zeros((self.R, spec.K))

    # -- hooks ------------------------------------------------------------------------------------
    def make_collector(self) -> SumCollector:
        """Step-7 strategy; the non-private default releases the raw sums."""
        return RawSums()

    def make_core(self, A: np.ndarray) -> EliminationCore:
        """A fresh engine on the action sets ``A`` (R, K, d)."""
        raise NotImplementedError

    # -- BatchedAlgorithm -------------------------------------------------------------------------
    @property
    def core(self) -> EliminationCore | None:
        """The elimination engine of the current run (None before the first round)."""
        return self.__dict__.get("_core")

    def start_batches(self, A: np.ndarray) -> EliminationCore:
        """Create the engine on the public action sets ``A`` (R, K, d) and plan batch 1."""
        X = check_finite_array("contexts", A, ndim=3)
        if X.shape != (self.R, self.spec.K, self.spec.d):
            raise ValidationError(
                f"contexts must have shape ({self.R}, {self.spec.K}, {self.spec.d}), got {X.shape}"
            )
        self._A_ref = A
        core = self._core = self.make_core(np.array(X, dtype=float, copy=True))
        self._begin(core.plan_batch())
        return core

    def _begin(self, plan: BatchPlan) -> None:
        if len(plan) == 0:
            return
        C = int(plan.core_size.max())
        if C > self._slots.shape[1]:
            pad = C - self._slots.shape[1]
            self._slots = np.pad(self._slots, ((0, 0), (0, pad)))
            self._remaining = np.pad(self._remaining, ((0, 0), (0, pad)))
        # core actions first (stable order), padding slots get 0 pulls
        order = np.argsort(plan.counts == 0, axis=1, kind="stable")[:, : self._slots.shape[1]]
        self._slots[plan.rows] = order
        self._remaining[plan.rows] = np.take_along_axis(plan.counts, order, axis=1)
        self._left[plan.rows] = plan.n_total
        self._sums[plan.rows] = 0.0

    # -- round loop -------------------------------------------------------------------------------
    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        core = self._core
        if core is None:
            core = self.start_batches(contexts)
        elif contexts is not self._A_ref and not np.array_equal(contexts, core.A):
            raise ValidationError(f"algorithm {self.name!r} needs the same action set every round")
        # next pull of each batch: uniform over the remaining multiset (random order of the schedule)
        cum = np.cumsum(self._remaining, axis=1)
        u = self.streams.policy.random(self.R) * cum[:, -1]
        self._slot = np.argmax(cum > u[:, None], axis=1)
        nxt = self._slots[np.arange(self.R), self._slot]
        return np.where(core.committed >= 0, core.committed, nxt)

    def update(
        self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        core = self._core
        if core is None:
            raise ValidationError(f"algorithm {self.name!r}: update before select")
        rows = np.flatnonzero(core.committed < 0)
        if rows.size == 0:
            return
        a = np.asarray(actions)[rows]
        slot = self._slot[rows]
        if np.any(self._slots[rows, slot] != a) or np.any(self._remaining[rows, slot] <= 0):
            raise ValidationError(
                "an exploring replication played an action outside its batch schedule"
            )
        self._remaining[rows, slot] -= 1
        self._left[rows] -= 1
        y = np.asarray(rewards, dtype=float)[rows]
        clip = self.collector.clip
        self._sums[rows, a] += y if clip is None else np.clip(y, clip[0], clip[1])
        ended = rows[self._left[rows] == 0]
        if ended.size:
            plan = core.view(ended)
            r_hat = self.collector.collect(plan, self._sums[ended], self.streams.server)
            core.finish_batch(plan, r_hat)
            self._begin(core.plan_batch(ended))

    def estimate(self) -> np.ndarray:
        core = self.__dict__.get("_core")
        return np.zeros((self.R, self.spec.d)) if core is None else core.theta

    @property
    def batch_log(self) -> list[dict[str, Any]]:
        """Per-batch metadata records (see :attr:`EliminationCore.batch_log`)."""
        core = self.__dict__.get("_core")
        return [] if core is None else core.batch_log
