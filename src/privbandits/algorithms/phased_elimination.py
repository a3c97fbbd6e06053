"""Batched phased elimination with G-optimal designs on a fixed finite action set.

Two non-private algorithms share one engine:

* ``"pe-batched"`` -- :class:`PhasedEliminationDP` with ``model = "none"``: the common skeleton of
  Hanna et al. (2022), spec section 4.0 ("NP-batched", the limit of Algorithms 1-3 as
  epsilon -> infinity).  Batches grow like ``q^i`` with ``q = (2T)^{1/ln T}``; each batch plays a
  G-optimal core set, estimates theta from that batch only, and eliminates actions more than
  ``2 gamma_i`` below the empirical best; after ``L = max(1, floor(ln T) - 1)`` batches it commits.
  The private models (central / local / shuffle, Algorithms 1-3) plug in through two strategies
  that see only the batch's public quantities (:class:`BatchPlan`): a :class:`SumCollector`
  (step 7: the released per-action sums ``r_hat_ia``) and a :class:`WidthFunction` (step 9:
  ``gamma_i``, spec section 4.6).
* ``"phased-elimination"`` -- :class:`PhasedElimination`: Lattimore & Szepesvari (2020),
  Chapter 22, Algorithm 12 (phases ``l = 1, 2, ...`` with accuracy ``eps_l = 2^{-l}``).

Both run as :class:`~privbandits.algorithms.base.Curator` on a fixed action set (contexts
``(R, K, d)`` identical every round, e.g. :class:`~privbandits.envs.FiniteActionEnv`).  The
schedule of a batch (which actions, how often) is public; the pulls are played in a uniformly
random order drawn from the policy stream (sequential sampling without replacement from the
remaining counts, so a batch truncated by the horizon plays a uniformly random prefix).  The
per-action reward sums of the running batch are accumulated; estimation and elimination happen at
the batch end.  Replications have their own action sets, so their batches end at different rounds:
the per-round work is vectorized over R, the (rare) batch ends loop over the replications that
finished.

Aggregate fast path.  The batch logic lives in :class:`HannaElimination` / :class:`LSElimination`
(no role, public quantities only) with a per-batch interface usable without the round loop::

    plan = core.plan_batch()                 # counts n_ia (R', K) of the next batch
    r_hat = <exact draw of the released sums given plan.counts>
    core.finish_batch(plan, r_hat)           # estimate, width, elimination, commit

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), "Differentially Private Stochastic Linear Bandits:
(Almost) for Free", Algorithms 1-3 and the spec ``hanna2022-dp-linear-bandits.md`` sections 3-4.
Lattimore & Szepesvari (2020), *Bandit Algorithms*, Chapter 22, Algorithm 12 (phased elimination
with G-optimal exploration) and Theorem 22.1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
from scipy import linalg

from privbandits.algorithms.base import Curator
from privbandits.algorithms.design import design_g, g_optimal_design
from privbandits.algorithms.registry import register
from privbandits.core.errors import ValidationError
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import (
    check_choice,
    check_finite_array,
    check_in_range,
    check_int,
    check_positive,
)
from privbandits.privacy.guarantee import NON_PRIVATE, PrivacyGuarantee

__all__ = [
    "CORE_SETS",
    "PRESETS",
    "WIDTH_MODES",
    "BatchPlan",
    "EliminationCore",
    "HannaElimination",
    "LSElimination",
    "NonPrivateWidth",
    "PhasedElimination",
    "PhasedEliminationDP",
    "RawSums",
    "SumCollector",
    "WidthFunction",
    "batch_growth",
    "confidence_log",
    "n_batches",
]

#: Core-set constructions (spec sections 3.4 and 4.5).
CORE_SETS: tuple[str, ...] = ("greedy", "nocore-fw", "nocore-uniform")
#: Confidence-width modes (spec section 4.6).
WIDTH_MODES: tuple[str, ...] = ("paper", "rigorous")
#: Calibration presets (spec section 2.6); for model "none" only the width mode differs.
PRESETS: dict[str, dict[str, str]] = {"strict": {"width_mode": "rigorous"}, "paper": {"width_mode": "paper"}}


# ------------------------------------------------------------------------------------------------
# schedule constants (spec section 3.1)
# ------------------------------------------------------------------------------------------------
def batch_growth(T: int) -> float:
    """``q = (2T)^{1/ln T} = exp(1 + ln 2 / ln T)``; ``q = e^2`` at ``T = 1`` (spec sections 3.1, 3.8)."""
    T = check_int("T", T, 1)
    if T == 1:
        return math.exp(2.0)
    return math.exp(1.0 + math.log(2.0) / math.log(T))


def n_batches(T: int) -> int:
    """``L = max(1, floor(ln T) - 1)`` exploration batches (spec section 3.1, [CHOICE])."""
    T = check_int("T", T, 1)
    return max(1, math.floor(math.log(T)) - 1)


def confidence_log(n_active: np.ndarray, T: int, L: int, fail_prob: float | None = None) -> np.ndarray:
    """``ell_i = ln(4 |A_i| T^2)``, or ``ln(4 |A_i| L / fail_prob)`` when ``fail_prob`` is given.

    (Spec sections 4.1 and 4.7: the union bound over ``|A_i|`` actions, two tails each, two error
    sources, and ``L`` batches.)
    """
    n_active = np.asarray(n_active, dtype=float)
    if fail_prob is None:
        return np.log(4.0 * n_active * float(T) ** 2)
    return np.log(4.0 * n_active * L / fail_prob)


# ------------------------------------------------------------------------------------------------
# public batch description and the two pluggable strategies
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BatchPlan:
    """Public quantities of one batch for a subset of replications (``n`` rows).

    Everything here is a deterministic function of earlier *released* outputs and reward-free
    randomness, so strategies that only read a plan respect the privacy accounting.

    Attributes
    ----------
    rows : ndarray of int, shape (n,)
        Replication indices.
    index : ndarray of int, shape (n,)
        Batch (phase) number ``i`` (1-based).
    counts : ndarray of int, shape (n, K)
        Pulls ``n_ia`` per action (0 outside the core set ``C_i``).
    active : ndarray of bool, shape (n, K)
        The surviving set ``A_i``.
    pi : ndarray of shape (n, K)
        Design weights ``pi_i`` (0 outside ``C_i``).
    g : ndarray of shape (n,)
        Achieved ``g_i = max_{a in A_i} ||a||^2_{V(pi_i)^{-1}}``.
    m : ndarray of int, shape (n,)
        Dimension of ``span(A_i)``.
    scale : ndarray of shape (n,)
        Target batch size: ``q^i`` (Hanna et al.) or ``n_l = 2 sigma^2 ln(.) / eps_l^2``
        (Lattimore & Szepesvari), so that ``counts >= pi * scale``.
    """

    rows: np.ndarray
    index: np.ndarray
    counts: np.ndarray
    active: np.ndarray
    pi: np.ndarray
    g: np.ndarray
    m: np.ndarray
    scale: np.ndarray

    @property
    def n_total(self) -> np.ndarray:
        """Batch length ``n_i = sum_a n_ia`` (n,)."""
        return self.counts.sum(axis=1)

    @property
    def core_size(self) -> np.ndarray:
        """``|C_i|`` (n,)."""
        return np.count_nonzero(self.counts, axis=1)

    @property
    def n_active(self) -> np.ndarray:
        """``|A_i|`` (n,)."""
        return np.count_nonzero(self.active, axis=1)

    @property
    def n_min(self) -> np.ndarray:
        """``min_{a in C_i} n_ia`` (n,)."""
        c = np.where(self.counts > 0, self.counts, np.iinfo(np.int64).max)
        return c.min(axis=1)

    def __len__(self) -> int:
        return int(self.rows.size)


class SumCollector(Protocol):
    """Step 7 of the skeleton: how the per-action reward sums of a batch are released.

    A central-model collector clips rewards in :meth:`prepare` and adds ``Lap(Delta/eps)`` to each
    core action's sum in :meth:`collect` (Algorithm 1); its :attr:`guarantee` comes from the
    accountant.  Local / shuffle models privatize on the user side and release the sums of the
    users' reports instead.
    """

    def prepare(self, rewards: np.ndarray) -> np.ndarray:
        """Transform each raw reward (R',) before it enters a sum (e.g. clip to ``[r_lo, r_hi]``)."""
        ...

    def collect(self, plan: BatchPlan, sums: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Released sums ``r_hat`` (n, K) from the batch's prepared sums (n, K) (0 off ``C_i``)."""
        ...

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """Privacy guarantee of the released sums, from the noise actually added."""
        ...


class WidthFunction(Protocol):
    """Step 9 of the skeleton: the confidence width ``gamma_i`` from the batch's public quantities."""

    def __call__(self, plan: BatchPlan, spec: EnvSpec, L: int) -> np.ndarray:
        """``gamma_i`` for every row of ``plan`` (n,)."""
        ...


class RawSums:
    """Non-private collector (model "none"): the released sums are the raw sums."""

    def prepare(self, rewards: np.ndarray) -> np.ndarray:
        return rewards

    def collect(self, plan: BatchPlan, sums: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.where(plan.counts > 0, sums, 0.0)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return NON_PRIVATE


@dataclass(frozen=True)
class NonPrivateWidth:
    """Width of NP-batched (spec section 4.6, row "none").

    ``paper``: ``sigma sqrt(4 d ell_i / q^i)`` (``d`` the ambient dimension, as in the paper);
    ``rigorous``: ``sigma sqrt(2 G_i ell_i)`` with ``G_i = g_i / q^i`` (sub-Gaussian tail of
    ``<a, theta_hat - theta*>``, variance proxy ``||a||^2_{V_i^{-1}} <= G_i``).
    ``sigma`` is the sub-Gaussian parameter of the reward noise (1 in the paper's Assumption 1).
    """

    width_mode: str = "rigorous"
    sigma: float = 1.0
    fail_prob: float | None = None

    def __call__(self, plan: BatchPlan, spec: EnvSpec, L: int) -> np.ndarray:
        ell = confidence_log(plan.n_active, spec.horizon, L, self.fail_prob)
        if self.width_mode == "paper":
            return self.sigma * np.sqrt(4.0 * spec.d * ell / plan.scale)
        G = plan.g / plan.scale
        return self.sigma * np.sqrt(2.0 * G * ell)


# ------------------------------------------------------------------------------------------------
# role-free elimination engines
# ------------------------------------------------------------------------------------------------
class EliminationCore:
    """State of batched elimination on fixed action sets, for R replications.

    Subclasses define how a batch is sized (:meth:`_allocate`), the elimination threshold
    (:meth:`_threshold`) and when to commit (:meth:`_commit_after`).

    Attributes
    ----------
    A : ndarray (R, K, d)
        The action sets.
    active : ndarray of bool (R, K)
        Surviving actions ``A_i`` of the batch being planned / played.
    committed : ndarray of int (R,)
        Action played for the rest of the run, -1 while exploring.
    batch : ndarray of int (R,)
        Number of completed batches.
    t_done : ndarray of int (R,)
        Rounds consumed by completed batches.
    theta : ndarray (R, d)
        Latest estimate (in ``span(A_i)``; zeros before the first batch ends).
    batch_log : list of dict
        One record per completed batch and replication (spec section 8 "metadata to log").
    """

    def __init__(self, A: np.ndarray, spec: EnvSpec, factor: float = 2.0, core_set: str = "greedy") -> None:
        A = check_finite_array("actions", A, ndim=3)
        self.A = A
        self.spec = spec
        self.factor = factor
        self.core_set = core_set
        R, K, d = A.shape
        self.R, self.K, self.d = R, K, d
        self.active = np.ones((R, K), dtype=bool)
        self.committed = np.full(R, -1, dtype=np.int64)
        self.batch = np.zeros(R, dtype=np.int64)
        self.t_done = np.zeros(R, dtype=np.int64)
        self.theta = np.zeros((R, d))
        self.batch_log: list[dict[str, Any]] = []
        # plan of the running batch, per replication
        self._counts = np.zeros((R, K), dtype=np.int64)
        self._pi = np.zeros((R, K))
        self._g = np.zeros(R)
        self._m = np.zeros(R, dtype=np.int64)
        self._scale = np.ones(R)
        self._basis = np.zeros((R, d, d))

    # -- hooks ------------------------------------------------------------------------------------
    def _allocate(self, r: int, i: int, pi: np.ndarray, g: float, n_active: int) -> tuple[np.ndarray, float]:
        """Counts (K,) of batch ``i`` for replication ``r`` and the target size ``scale``."""
        raise NotImplementedError

    def _threshold(self, plan: BatchPlan) -> np.ndarray:
        """Elimination slack (n,): an action survives if within it of the empirical best."""
        raise NotImplementedError

    def _commit_after(self, i: int) -> bool:
        """Whether to commit after completing batch ``i``."""
        return False

    # -- planning ---------------------------------------------------------------------------------
    def exploring(self) -> np.ndarray:
        """Replications still in an exploration batch (R,) bool."""
        return self.committed < 0

    def _design(self, X: np.ndarray) -> tuple[np.ndarray, float, int, np.ndarray]:
        """Design (pi over the rows of X, g, m, basis) per the ``core_set`` option."""
        if self.core_set == "greedy":
            des = g_optimal_design(X, factor=self.factor, init="greedy", prune=True)
        else:
            des = g_optimal_design(X, factor=self.factor, init="uniform", prune=False)
            if self.core_set == "nocore-uniform" and des.m > 0:
                pi = np.full(X.shape[0], 1.0 / X.shape[0])
                g = float(design_g(X @ des.basis, pi).max())
                return pi, g, des.m, des.basis
        return des.pi, des.g, des.m, des.basis

    def plan_batch(self, rows: np.ndarray | None = None) -> BatchPlan:
        """Plan the next batch of ``rows`` (default: every exploring replication).

        Rows whose surviving actions span ``{0}`` (``m = 0``, all rewards equal) commit instead
        of planning (spec section 3.3, 4.); the returned plan covers the others.
        """
        rows = np.flatnonzero(self.exploring()) if rows is None else np.asarray(rows, dtype=np.int64)
        planned: list[int] = []
        for r in rows:
            if self.committed[r] >= 0:
                continue
            idx = np.flatnonzero(self.active[r])
            pi_sub, g, m, U = self._design(self.A[r, idx])
            if m == 0:
                self.committed[r] = idx[0]
                continue
            i = int(self.batch[r]) + 1
            pi = np.zeros(self.K)
            pi[idx] = pi_sub
            counts, scale = self._allocate(int(r), i, pi, g, idx.size)
            self._counts[r] = counts
            self._pi[r] = pi
            self._g[r] = g
            self._m[r] = m
            self._scale[r] = scale
            self._basis[r] = 0.0
            self._basis[r, :, :m] = U
            planned.append(int(r))
        return self.view(np.array(planned, dtype=np.int64))

    def view(self, rows: np.ndarray) -> BatchPlan:
        """The :class:`BatchPlan` of the running batch of ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        return BatchPlan(
            rows=rows,
            index=self.batch[rows] + 1,
            counts=self._counts[rows].copy(),
            active=self.active[rows].copy(),
            pi=self._pi[rows].copy(),
            g=self._g[rows].copy(),
            m=self._m[rows].copy(),
            scale=self._scale[rows].copy(),
        )

    # -- batch end --------------------------------------------------------------------------------
    def finish_batch(self, plan: BatchPlan, r_hat: np.ndarray, gamma: np.ndarray | None = None) -> np.ndarray:
        """Estimate from the released sums, eliminate, and commit where due (spec steps 8-12).

        Parameters
        ----------
        plan : BatchPlan
            The plan of the batch that just ended (from :meth:`plan_batch` or :meth:`view`).
        r_hat : ndarray of shape (n, K)
            Released per-action sums (0 outside the core set).
        gamma : ndarray of shape (n,), optional
            Elimination slack override; default :meth:`_threshold`.

        Returns
        -------
        ndarray of shape (n,)
            The slack used.
        """
        r_hat = np.asarray(r_hat, dtype=float)
        if r_hat.shape != plan.counts.shape:
            raise ValidationError(f"r_hat must have shape {plan.counts.shape}, got {r_hat.shape}")
        slack = self._threshold(plan) if gamma is None else np.asarray(gamma, dtype=float)
        for k, r in enumerate(plan.rows):
            m = int(plan.m[k])
            U = self._basis[r, :, :m]
            Y = self.A[r] @ U  # (K, m) coordinates in span(A_i)
            n_ia = plan.counts[k].astype(float)
            core = n_ia > 0
            Yc = Y[core]
            V = (Yc * n_ia[core, None]).T @ Yc
            b = r_hat[k, core] @ Yc
            try:
                theta_sub = linalg.cho_solve(linalg.cho_factor(V, lower=True, check_finite=False), b)
            except np.linalg.LinAlgError:
                theta_sub = np.linalg.lstsq(V, b, rcond=None)[0]
            self.theta[r] = U @ theta_sub
            pred = np.where(plan.active[k], Y @ theta_sub, -np.inf)
            best = pred.max()
            survive = plan.active[k] & (pred >= best - 2.0 * slack[k])
            self.active[r] = survive
            i = int(plan.index[k])
            self.batch[r] = i
            self.t_done[r] += int(plan.counts[k].sum())
            self.batch_log.append(
                {"replication": int(r), "i": i, "n_active": int(plan.active[k].sum()), "m": m,
                 "core_size": int(core.sum()), "n": int(n_ia.sum()), "g": float(plan.g[k]),
                 "gamma": float(slack[k]), "survivors": int(survive.sum())}
            )
            if survive.sum() == 1 or self._commit_after(i):
                # argmax over A_{i+1} (= argmax over A_i); np.argmax breaks ties to the smallest index
                self.committed[r] = int(np.argmax(np.where(survive, pred, -np.inf)))
        return slack


class HannaElimination(EliminationCore):
    """Batch schedule of Hanna et al. (2022) (spec section 4.0): ``n_ia = ceil(pi_i(a) q^i)``.

    Commits after ``L`` batches to the empirical best of ``A_{L+1}``.
    """

    def __init__(
        self,
        A: np.ndarray,
        spec: EnvSpec,
        width: WidthFunction,
        factor: float = 2.0,
        core_set: str = "greedy",
    ) -> None:
        super().__init__(A, spec, factor, core_set)
        self.q = batch_growth(spec.horizon)
        self.L = n_batches(spec.horizon)
        self.width = width

    def _allocate(self, r: int, i: int, pi: np.ndarray, g: float, n_active: int) -> tuple[np.ndarray, float]:
        qi = self.q**i
        return np.ceil(pi * qi).astype(np.int64), qi

    def _threshold(self, plan: BatchPlan) -> np.ndarray:
        return self.width(plan, self.spec, self.L)

    def _commit_after(self, i: int) -> bool:
        return i >= self.L


class LSElimination(EliminationCore):
    """Phases of Lattimore & Szepesvari (2020), Algorithm 12.

    Phase ``l``: ``eps_l = 2^{-l}``; ``T_l(a) = ceil(2 g_l sigma^2 pi_l(a) / eps_l^2 ln(K l (l+1) / delta))``
    where ``g_l`` is the achieved ``max_a ||a||^2_{V(pi_l)^{-1}}`` (``allocation="achieved-g"``;
    equal to ``d`` for the exact G-optimal design the book uses, and it keeps the book's guarantee
    ``||a||^2_{V_l^{-1}} <= eps_l^2 / (2 sigma^2 ln(.))`` for our ``g_l <= 2d`` designs) or the
    book's ``d`` (``allocation="book"``).  Survivors: ``max_b <theta_hat, b - a> <= 2 eps_l``.
    """

    def __init__(
        self,
        A: np.ndarray,
        spec: EnvSpec,
        delta: float,
        sigma: float = 1.0,
        allocation: str = "achieved-g",
        factor: float = 2.0,
        core_set: str = "greedy",
    ) -> None:
        super().__init__(A, spec, factor, core_set)
        self.delta = delta
        self.sigma = sigma
        self.allocation = allocation

    def _allocate(self, r: int, i: int, pi: np.ndarray, g: float, n_active: int) -> tuple[np.ndarray, float]:
        eps = 2.0 ** (-i)
        dim = g if self.allocation == "achieved-g" else float(self.spec.d)
        scale = 2.0 * dim * self.sigma**2 / eps**2 * math.log(self.K * i * (i + 1) / self.delta)
        return np.ceil(pi * scale).astype(np.int64), scale

    def _threshold(self, plan: BatchPlan) -> np.ndarray:
        return 2.0 ** (-plan.index.astype(float))


# ------------------------------------------------------------------------------------------------
# the Curator drivers
# ------------------------------------------------------------------------------------------------
class _BatchedCurator(Curator):
    """Round-by-round driver of an :class:`EliminationCore` (trusted curator)."""

    settings: ClassVar[tuple[str, ...]] = ("single",)
    links: ClassVar[tuple[str, ...]] = ("identity",)

    core: EliminationCore | None

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        if not spec.fixed_actions:
            raise ValidationError(
                f"algorithm {self.name!r} needs a fixed finite action set (spec.fixed_actions=True, "
                "e.g. FiniteActionEnv); got an environment with per-round contexts"
            )
        self.collector = self.make_collector()
        self.core = None
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
        raise NotImplementedError

    @property
    def guarantee(self) -> PrivacyGuarantee:
        collector = getattr(self, "collector", None)
        return NON_PRIVATE if collector is None else collector.guarantee

    # -- round loop -------------------------------------------------------------------------------
    def _start(self, contexts: np.ndarray) -> None:
        X = check_finite_array("contexts", contexts, ndim=3)
        if X.shape != (self.R, self.spec.K, self.spec.d):
            raise ValidationError(
                f"contexts must have shape ({self.R}, {self.spec.K}, {self.spec.d}), got {X.shape}"
            )
        self._A_ref = contexts
        self.core = self.make_core(np.array(X, copy=True))
        self._begin(self.core.plan_batch())

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

    def _check_fixed(self, contexts: np.ndarray) -> None:
        if contexts is not self._A_ref and not np.array_equal(contexts, self.core.A):  # type: ignore[union-attr]
            raise ValidationError(f"algorithm {self.name!r} needs the same action set every round")

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        if self.core is None:
            self._start(contexts)
        else:
            self._check_fixed(contexts)
        core = self.core
        assert core is not None
        # next pull of each batch: uniform over the remaining multiset (random order of the schedule)
        cum = np.cumsum(self._remaining, axis=1)
        u = self.streams.policy.random(self.R) * cum[:, -1]
        self._slot = np.argmax(cum > u[:, None], axis=1)
        nxt = self._slots[np.arange(self.R), self._slot]
        return np.where(core.committed >= 0, core.committed, nxt)

    def update(self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        core = self.core
        assert core is not None
        rows = np.flatnonzero(core.committed < 0)
        if rows.size == 0:
            return
        a = actions[rows]
        slot = self._slot[rows]
        if np.any(self._slots[rows, slot] != a) or np.any(self._remaining[rows, slot] <= 0):
            raise ValidationError("an exploring replication played an action outside its batch schedule")
        self._remaining[rows, slot] -= 1
        self._left[rows] -= 1
        self._sums[rows, a] += self.collector.prepare(np.asarray(rewards, dtype=float)[rows])
        ended = rows[self._left[rows] == 0]
        if ended.size:
            plan = core.view(ended)
            r_hat = self.collector.collect(plan, self._sums[ended], self.streams.server)
            core.finish_batch(plan, r_hat)
            self._begin(core.plan_batch(ended))

    def estimate(self) -> np.ndarray:
        if self.core is None:
            return np.zeros((self.R, self.spec.d))
        return self.core.theta

    @property
    def batch_log(self) -> list[dict[str, Any]]:
        """Per-batch metadata records (see :attr:`EliminationCore.batch_log`)."""
        return [] if self.core is None else self.core.batch_log


@register
class PhasedEliminationDP(_BatchedCurator):
    """The spec's section 4.0 skeleton of Hanna et al. (2022); ``model = "none"`` here (NP-batched).

    Per batch ``i = 1..L``: working subspace of ``A_i``; G-optimal design (Algorithm D) with core
    set ``C_i``; ``n_ia = ceil(pi_i(a) q^i)`` pulls in random order; released sums ``r_hat_ia``
    (step 7, :meth:`make_collector`); ``theta_hat_i = V_i^{-1} sum r_hat_ia a`` from this batch only;
    width ``gamma_i`` (step 9, :meth:`make_width`); keep ``a`` with
    ``<a, theta_hat_i> >= max_{b in A_i} <b, theta_hat_i> - 2 gamma_i``; commit to the empirical
    best after ``L`` batches or when one action survives.  A batch cut by the horizon plays a
    random-order prefix of its schedule.

    Parameters
    ----------
    preset : {"strict", "paper"}
        ``strict`` -> ``width_mode="rigorous"``; ``paper`` -> ``width_mode="paper"`` (spec 2.6).
    width_mode : {"paper", "rigorous"}, optional
        Overrides the preset's width mode (spec section 4.6).
    core_set : {"greedy", "nocore-fw", "nocore-uniform"}
        Core-set construction (spec sections 3.4, 4.5).
    design_factor : float
        Design target ``g <= factor * m`` (spec: 2).
    sigma : float
        Sub-Gaussian parameter of the reward noise in the widths (1 under Assumption 1).
    fail_prob : float, optional
        Use ``ell_i = ln(4 |A_i| L / fail_prob)`` instead of ``ln(4 |A_i| T^2)``.

    Extending to the private models: subclass, set ``name``/``trust_model``/``model``, and override
    :meth:`make_collector` (step 7) and :meth:`make_width` (step 9); both strategies receive only
    the :class:`BatchPlan`.

    References
    ----------
    Hanna et al. (2022), Algorithms 1-3 (common skeleton); spec sections 3-4.
    """

    name = "pe-batched"
    paper = "Hanna et al. 2022 (NP-batched)"
    model: ClassVar[str] = "none"

    def __init__(
        self,
        preset: str = "strict",
        width_mode: str | None = None,
        core_set: str = "greedy",
        design_factor: float = 2.0,
        sigma: float = 1.0,
        fail_prob: float | None = None,
    ) -> None:
        super().__init__(preset=preset, width_mode=width_mode, core_set=core_set,
                         design_factor=design_factor, sigma=sigma, fail_prob=fail_prob)
        self.preset = check_choice("preset", preset, tuple(PRESETS))
        self.width_mode = check_choice(
            "width_mode", PRESETS[self.preset]["width_mode"] if width_mode is None else width_mode, WIDTH_MODES
        )
        self.core_set = check_choice("core_set", core_set, CORE_SETS)
        self.design_factor = check_in_range("design_factor", design_factor, 1.0, None)
        self.sigma = check_positive("sigma", sigma)
        self.fail_prob = None if fail_prob is None else check_in_range(
            "fail_prob", fail_prob, 0.0, 1.0, low_inclusive=False, high_inclusive=False
        )

    def make_width(self) -> WidthFunction:
        """Step-9 strategy; the non-private width of spec section 4.6."""
        return NonPrivateWidth(self.width_mode, self.sigma, self.fail_prob)

    def make_core(self, A: np.ndarray) -> HannaElimination:
        return HannaElimination(A, self.spec, self.make_width(), self.design_factor, self.core_set)


@register
class PhasedElimination(_BatchedCurator):
    """Phased elimination with G-optimal exploration (Lattimore & Szepesvari 2020, Algorithm 12).

    Phase ``l = 1, 2, ...`` until the horizon: ``eps_l = 2^{-l}``; design ``pi_l`` on ``A_l``
    (support ``<= d (d+1) / 2``); play each ``a`` exactly ``T_l(a)`` times (see
    :class:`LSElimination`); least squares on the phase's data; keep ``a`` with
    ``max_{b in A_l} <theta_hat_l, b - a> <= 2 eps_l``.  Once a single action survives it is played
    until the horizon (every later phase would schedule only it).

    Parameters
    ----------
    delta : float, optional
        Failure probability; default ``1/T`` (Theorem 22.1).
    sigma : float
        Sub-Gaussian parameter of the noise (1 in the book).
    allocation : {"achieved-g", "book"}
        ``achieved-g`` uses the design's achieved ``g_l`` in place of ``d`` in ``T_l(a)`` (keeps
        the book's confidence guarantee with an approximate design); ``book`` uses ``d``.
    design_factor : float
        Design target ``g <= factor * m``.

    References
    ----------
    Lattimore & Szepesvari (2020), *Bandit Algorithms*, Chapter 22, Algorithm 12, Theorem 22.1.
    """

    name = "phased-elimination"
    paper = "Lattimore & Szepesvari 2020 (Alg. 12)"

    def __init__(
        self,
        delta: float | None = None,
        sigma: float = 1.0,
        allocation: str = "achieved-g",
        design_factor: float = 2.0,
    ) -> None:
        super().__init__(delta=delta, sigma=sigma, allocation=allocation, design_factor=design_factor)
        self.delta = None if delta is None else check_in_range(
            "delta", delta, 0.0, 1.0, low_inclusive=False, high_inclusive=False
        )
        self.sigma = check_positive("sigma", sigma)
        self.allocation = check_choice("allocation", allocation, ("achieved-g", "book"))
        self.design_factor = check_in_range("design_factor", design_factor, 1.0, None)

    def make_core(self, A: np.ndarray) -> LSElimination:
        delta = 1.0 / self.spec.horizon if self.delta is None else self.delta
        if delta >= 1.0:
            delta = 0.5  # T = 1: any confidence level; nothing is ever estimated
        return LSElimination(A, self.spec, delta, self.sigma, self.allocation, self.design_factor)
