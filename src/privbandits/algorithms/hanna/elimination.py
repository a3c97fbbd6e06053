"""The role-free batched-elimination engine of Hanna et al. (2022) on fixed finite action sets.

Hanna et al. (2022), the common skeleton of Algorithms 1-3: batch
``i = 1..L`` plays a G-optimal design of the surviving set ``A_i`` with ``n_ia = ceil(pi_i(a) q^i)``
pulls per core action, estimates ``theta`` from that batch's released per-action sums only,
eliminates every action more than ``2 gamma_i`` below the empirical best and, after ``L`` batches
(or when one action survives), commits.

The engine holds no role and sees only public quantities: the action sets, the schedules it
plans (:class:`BatchPlan`) and the *released* sums handed to :meth:`EliminationCore.finish_batch`.
The trusted curator (:mod:`~privbandits.algorithms.hanna.curator`), the untrusted servers of the
local and shuffle models (:mod:`~privbandits.algorithms.hanna.server`) and the exact aggregate
driver (:mod:`privbandits.engine.aggregate`) all drive the same engine::

    plan = core.plan_batch()                 # public counts n_ia (R', K) of the next batch
    r_hat = <the released sums of the batch>
    core.finish_batch(plan, r_hat)           # estimate, width, elimination, commit

Replications have their own action sets, so their batches end at different rounds; the batch ends
loop over the replications that finished.

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), "Differentially Private Stochastic Linear Bandits:
(Almost) for Free", Algorithms 1-3, Lemma 2; corrections Hanna22-5 and Hanna22-6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from scipy import linalg

from privbandits.algorithms._shared.design import design_g, g_optimal_design
from privbandits.core.errors import ValidationError
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_finite_array, check_int

__all__ = [
    "CORE_SETS",
    "BatchPlan",
    "EliminationCore",
    "HannaElimination",
    "WidthFunction",
    "batch_growth",
    "batch_size_ranges",
    "confidence_log",
    "max_core_size",
    "max_pulls",
    "n_batches",
]

#: Core-set constructions (Hanna et al. 2022, Lemma 2, corrections Hanna22-10 and Hanna22-26).
CORE_SETS: tuple[str, ...] = ("greedy", "nocore-fw", "nocore-uniform")


# ------------------------------------------------------------------------------------------------
# schedule constants (Hanna et al. 2022, correction Hanna22-5)
# ------------------------------------------------------------------------------------------------
def batch_growth(T: int) -> float:
    """``q = (2T)^{1/ln T} = exp(1 + ln 2 / ln T)``; ``q = e^2`` at ``T = 1`` (Hanna et al. 2022, corrections Hanna22-5 and Hanna22-31)."""
    T = check_int("T", T, 1)
    if T == 1:
        return math.exp(2.0)
    return math.exp(1.0 + math.log(2.0) / math.log(T))


def n_batches(T: int) -> int:
    """``L = max(1, floor(ln T) - 1)`` exploration batches (Hanna et al. 2022, correction Hanna22-5)."""
    T = check_int("T", T, 1)
    return max(1, math.floor(math.log(T)) - 1)


def confidence_log(
    n_active: np.ndarray, T: int, L: int, fail_prob: float | None = None
) -> np.ndarray:
    """``ell_i = ln(4 |A_i| T^2)``, or ``ln(4 |A_i| L / fail_prob)`` when ``fail_prob`` is given.

    (Spec sections 4.1 and 4.7: the union bound over ``|A_i|`` actions, two tails each, two error
    sources, and ``L`` batches.)
    """
    n_active = np.asarray(n_active, dtype=float)
    if fail_prob is None:
        return np.log(4.0 * n_active * float(T) ** 2)
    return np.log(4.0 * n_active * L / fail_prob)


def max_core_size(K: int, d: int) -> int:
    """Largest possible core set ``|C_i| <= min(K, m (m + 1) / 2)`` with ``m <= d`` (Algorithm D's
    Caratheodory pruning, Lattimore & Szepesvari 2020, Theorem 21.1; Hanna et al. 2022, Lemma 2, correction Hanna22-10)."""
    return min(check_int("K", K, 1), check_int("d", d, 1) * (d + 1) // 2)


def batch_size_ranges(T: int, K: int, d: int) -> list[tuple[int, int]]:
    """Every batch size ``n_i`` a completed batch of :class:`HannaElimination` can have.

    ``n_i = sum_{a in C_i} ceil(pi_i(a) q^i)`` lies in ``[ceil(q^i), floor(q^i) + |C_i|]``
    (each ceil adds less than one; float slack of ``1e-9`` relative is allowed for), with
    ``|C_i| <= max_core_size(K, d)``.  Batch ``i`` is listed only if it can complete within the
    horizon after the smallest possible earlier batches, and its range is capped by the rounds
    left.  The batch sizes are public; the shuffle model calibrates its local budget over them.

    Returns
    -------
    list of (lo, hi)
        Inclusive size range of batch ``i = 1, 2, ...`` (at most ``L`` entries).
    """
    T = check_int("T", T, 1)
    q, L, C = batch_growth(T), n_batches(T), max_core_size(K, d)
    out: list[tuple[int, int]] = []
    before = 0  # fewest rounds the earlier batches can take
    for i in range(1, L + 1):
        qi = q**i
        lo = max(1, math.ceil(qi * (1.0 - 1e-9)))
        hi = min(math.floor(qi * (1.0 + 1e-9)) + C, T - before)
        if lo > hi:
            break
        out.append((lo, hi))
        before += lo
    return out


def max_pulls(spec: EnvSpec) -> int:
    """The most pulls of one batch of the elimination schedule on problem ``spec``.

    Batch ``i`` of :class:`HannaElimination` plans ``n_i = sum_a ceil(pi_i(a) q^i) <= floor(q^i) +
    |C_i|`` pulls (Hanna et al. 2022, Algorithms 1-3), largest at ``i = L``; a relative slack of
    ``1e-9`` covers float rounding.  The devices of the local and shuffle models accept no
    schedule entry above it.
    """
    q, L = batch_growth(spec.horizon), n_batches(spec.horizon)
    return math.floor(q**L * (1.0 + 1e-9)) + max_core_size(spec.K, spec.d)


# ------------------------------------------------------------------------------------------------
# public batch description and the width strategy
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


class WidthFunction(Protocol):
    """Step 9 of the skeleton: the confidence width ``gamma_i`` from the batch's public quantities."""

    def __call__(self, plan: BatchPlan, spec: EnvSpec, L: int) -> np.ndarray:
        """``gamma_i`` for every row of ``plan`` (n,)."""
        ...


# ------------------------------------------------------------------------------------------------
# the role-free engine
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
        One record per completed batch and replication (stored with the result).
    """

    def __init__(
        self, A: np.ndarray, spec: EnvSpec, factor: float = 2.0, core_set: str = "greedy"
    ) -> None:
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
    def _allocate(
        self, r: int, i: int, pi: np.ndarray, g: float, n_active: int
    ) -> tuple[np.ndarray, float]:
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

    def running(self) -> BatchPlan:
        """The plans of the batches being played (every exploring replication)."""
        return self.view(np.flatnonzero(self.exploring()))

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
        of planning (Hanna et al. 2022, correction Hanna22-11); the returned plan covers the others.
        """
        rows = (
            np.flatnonzero(self.exploring()) if rows is None else np.asarray(rows, dtype=np.int64)
        )
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
    def finish_batch(
        self, plan: BatchPlan, r_hat: np.ndarray, gamma: np.ndarray | None = None
    ) -> np.ndarray:
        """Estimate from the released sums, eliminate, and commit where due (steps 8-12 of the skeleton).

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
                theta_sub = linalg.cho_solve(
                    linalg.cho_factor(V, lower=True, check_finite=False), b
                )
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
                {
                    "replication": int(r),
                    "i": i,
                    "n_active": int(plan.active[k].sum()),
                    "m": m,
                    "core_size": int(core.sum()),
                    "n": int(n_ia.sum()),
                    "g": float(plan.g[k]),
                    "gamma": float(slack[k]),
                    "survivors": int(survive.sum()),
                }
            )
            if survive.sum() == 1 or self._commit_after(i):
                # argmax over A_{i+1} (= argmax over A_i); np.argmax breaks ties to the smallest index
                self.committed[r] = int(np.argmax(np.where(survive, pred, -np.inf)))
        return slack


class HannaElimination(EliminationCore):
    """Batch schedule of the common skeleton of Algorithms 1-3 of Hanna et al. (2022): ``n_ia = ceil(pi_i(a) q^i)``.

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

    def _allocate(
        self, r: int, i: int, pi: np.ndarray, g: float, n_active: int
    ) -> tuple[np.ndarray, float]:
        qi = self.q**i
        return np.ceil(pi * qi).astype(np.int64), qi

    def _threshold(self, plan: BatchPlan) -> np.ndarray:
        return self.width(plan, self.spec, self.L)

    def _commit_after(self, i: int) -> bool:
        return i >= self.L
