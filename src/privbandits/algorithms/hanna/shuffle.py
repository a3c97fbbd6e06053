"""Algorithm 3 of Hanna et al. (2022): batched elimination in the shuffle model ((eps, delta)-DP).

Roles of batch ``i`` (Hanna et al. 2022, Algorithm 3; the documentation's Concepts: trust models):

* **server** (:class:`ShuffleAnalyzer`, untrusted): holds ``A_i``, computes the public schedule
  ``C_i, pi_i, n_ia, n_i``; receives only a :class:`ShuffledBatch` of ``(action, report)`` pairs
  of *complete* batches (no client ids), sums the reports per action, estimates with the shuffle
  width (``s_i = Delta / eps0^(i)``) and eliminates over ``A_i``;
* **shuffler** (:class:`HannaShuffler`, trusted, the :class:`~privbandits.algorithms.base.Shuffler`
  role): ``assign`` builds the canonical list of the batch's action slots from the server's public
  schedule and hands them to the batch's fresh users by a uniform permutation (its own stream,
  :func:`~privbandits.privacy.laplace_shuffle.assign_actions`), each user receiving only its
  action and ``n_i``; ``collect`` holds each report beside the slot it answers; ``release``
  forwards every batch whose ``n_i`` reports are in as uniformly permuted ``(action, report)``
  pairs (:func:`~privbandits.privacy.laplace_shuffle.forward_reports`);
* **client j** (:class:`ShuffleClient`): plays the action it was assigned, computes
  ``eps0^(i)`` from the public ``(eps, delta, n_i)`` (Hanna et al. 2022, eq. 10, correction Hanna22-14,
  :class:`~privbandits.algorithms.hanna.budget.ShuffleBudget`) and sends only
  ``clip(r) + Lap(Delta / eps0^(i))``, drawn by the audited sampler
  :func:`~privbandits.privacy.samplers.laplace_randomize`.

Batches have different lengths in different replications; the shuffler releases each
replication's batch when its last report is in (:meth:`HannaShuffle.batch_ends`) and holds the
others.  A batch cut by the horizon is never released.  The server never sees a partial batch, a
client id or a raw reward, and no role calls another outside the driver's checked channel.

Privacy: see :mod:`~privbandits.algorithms.hanna.budget` (parallel composition over every batch
size the run can produce; default ``delta = 1/T^2``).  This relies on the footnote-2 assumption:
the server does not learn which client played which action.

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithm 3, eq. (10), Theorem 3, Remark 7, Appendix C;
Feldman, McMillan & Talwar (2021), Thm 3.1; corrections Hanna22-14 and Hanna22-28.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from privbandits.algorithms.audit import AuditCase, fixed_action_case, shuffle_local_claim
from privbandits.algorithms.base import Client, ShuffleAlgorithm, Shuffler
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.hanna.aggregate import AggregateLaplaceSums
from privbandits.algorithms.hanna.budget import ShuffleBudget, default_delta
from privbandits.algorithms.hanna.calibration import ShuffleConstants
from privbandits.algorithms.hanna.curator import require_fixed_actions
from privbandits.algorithms.hanna.elimination import (
    HannaElimination,
    batch_growth,
    batch_size_ranges,
    max_pulls,
    n_batches,
)
from privbandits.algorithms.hanna.local import laplace_reports
from privbandits.algorithms.hanna.presets import (
    ELIMINATION_CONSTRAINTS,
    SWITCH_CONSTRAINTS,
    resolve_switches,
)
from privbandits.algorithms.hanna.server import EliminationServer, ServerHeldEngine, check_reports
from privbandits.algorithms.registry import register
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.messages import (
    PrivatizedMessage,
    PublicState,
    ShuffledBatch,
    check_real_arrays,
)
from privbandits.core.params import Choice, Delta, Epsilon, Optional
from privbandits.core.public_space import PublicField, PublicSpace, PublicStateError, dims_of
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.accounting import ApproxDP, to_guarantee
from privbandits.privacy.amplification import BOUNDS
from privbandits.privacy.device import DeviceNoise, DeviceSensitivity
from privbandits.privacy.inputs import check_device_inputs
from privbandits.privacy.laplace_shuffle import (
    LAPLACE_MECHANISM,
    assign_actions,
    forward_reports,
    per_action_sums,
)
from privbandits.privacy.ledger import Accounted, Amplified, Event, Laplace, SelfComposed

__all__ = ["HannaShuffle", "HannaShuffler", "ShuffleAnalyzer", "ShuffleClient"]


class ShuffleClient(Client):
    """Client of Algorithm 3: plays the assigned action, reports ``clip(r) + Lap(s_i)``.

    The server is untrusted and the shuffler is trusted only to permute: what the device reads
    (its action slot and the batch size ``n_i``) is checked against :meth:`public_space` (an arm
    index; ``n_i`` between 0, the commit phase, and the largest batch the schedule can plan), and
    the device never adds less noise than the accountant composed: ``s(n_i)`` when ``n_i`` is one
    of the calibrated batch sizes, else the largest calibrated scale (a batch of another size -- one
    cut by the horizon -- is never released by an honest shuffler, and if it were, its reports
    would still be at the most private calibrated level).  So two neighbouring users' reports
    differ by at most ``max_n (r_hi - r_lo) / s(n)`` Laplace units over the calibrated sizes
    (:meth:`sensitivity`), whatever the server and the shuffler's assignment say.

    Parameters
    ----------
    budget : ShuffleBudget
        Public calibration: ``eps0^(i)`` and the scale from the public ``n_i``.
    spec : EnvSpec
        The public problem description (context bound of the input checks, arms).
    """

    def __init__(self, budget: ShuffleBudget, spec: EnvSpec) -> None:
        self.budget = budget
        self.spec = spec
        self._space = PublicSpace(
            (
                PublicField("action", ("R",), "i", low=0, high=spec.K - 1),
                PublicField("n", ("R",), "i", low=0, high=max_pulls(spec)),
            )
        )
        self._sizes = np.asarray(budget.sizes, dtype=np.int64)
        self._scale_sizes = budget.scales(self._sizes)
        #: the scale of a report whose ``n_i`` is not a calibrated size (None: no batch can complete)
        self._s_max = float(self._scale_sizes.max()) if self._sizes.size else None

    def public_space(self) -> PublicSpace:
        """The shuffler's assignment: ``action`` (an arm) and ``n`` (0 in the commit phase, else the
        batch size, at most :func:`~privbandits.algorithms.hanna.elimination.max_pulls`)."""
        return self._space

    def scales(self, n: np.ndarray) -> np.ndarray:
        """The Laplace scale of a user told batch size ``n`` (0: the user sends no report).

        ``s(n) = Delta / eps0(n)`` for a calibrated size, the largest calibrated scale for any
        other ``n > 0`` (never less noise than the accountant composed), 0 when ``n = 0`` or
        when no batch can complete within the horizon (nothing is ever released: the user
        sends 0).
        """
        n = np.asarray(n, dtype=np.int64)
        out = np.zeros(n.shape)
        known = np.isin(n, self._sizes)
        out[known] = self._scale_sizes[np.searchsorted(self._sizes, n[known])]
        if self._s_max is not None:
            out[~known & (n > 0)] = self._s_max
        return out

    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """The action the shuffler assigned to this user (its slot, or the committed action)."""
        X, _, _ = check_device_inputs(self.spec, contexts, bound=False)
        return np.array(self.checked_public(public, X.shape[0])["action"], dtype=np.int64)

    def encode(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
    ) -> np.ndarray:
        """``(R, 1)``: ``clip(r, r_lo, r_hi)`` of each user of a batch (``n_i > 0``), 0 in the commit phase."""
        X, a, y = check_device_inputs(self.spec, contexts, actions, rewards)
        assert y is not None
        report = self.scales(self.checked_public(public, X.shape[0])["n"]) > 0
        b = self.budget
        return np.where(report, np.clip(y, b.r_lo, b.r_hi), 0.0)[:, None]

    def noise(
        self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray
    ) -> DeviceNoise:
        """``Lap(s)`` of :meth:`scales` for each user of a batch, none in the commit phase."""
        X, _, _ = check_device_inputs(self.spec, contexts, actions, bound=False)
        return DeviceNoise.laplace(
            self.scales(self.checked_public(public, X.shape[0])["n"])[:, None]
        )

    def sensitivity(self) -> DeviceSensitivity:
        """``max_n (r_hi - r_lo) / s(n)`` over the calibrated batch sizes: the largest LDP level of a
        report (the accountant's ``local_epsilon``)."""
        b = self.budget
        worst = float(np.max((b.r_hi - b.r_lo) / self._scale_sizes)) if self._sizes.size else 0.0
        return DeviceSensitivity("l1", worst)

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        """:meth:`encode` plus ``Lap(s)`` (:meth:`scales`) for users of a batch (``n_i > 0``); 0 in
        the commit phase, where nothing is forwarded.  Draw order: one uniform per reporting user."""
        value = self.encode(t, public, contexts, actions, rewards)[:, 0]
        scale = self.scales(self.checked_public(public, value.shape[0])["n"])
        laplace_reports(rng, value, scale > 0, self.budget.r_lo, self.budget.r_hi, scale)
        return PrivatizedMessage(payload={"reward_hat": value}, mechanism=LAPLACE_MECHANISM)


class HannaShuffler(Shuffler):
    """The trusted shuffler of Algorithm 3 (Hanna et al. 2022) in the Shuffler role.

    Parameters
    ----------
    rng : Generator
        The shuffler's own stream (slot permutations and forwarding order).
    R : int
        Replications.
    budget : ShuffleBudget
        The public calibration: batches whose size it does not account are never released.
    spec : EnvSpec, optional
        The public problem: the shuffler then checks the server's schedule before it draws slots
        (``batch`` in ``1..L+1``, ``committed`` -1 or an arm, ``counts`` per arm and per batch at
        most :func:`~privbandits.algorithms.hanna.elimination.max_pulls`), so a dishonest server
        can neither hand users an arm outside the catalogue nor make the shuffler allocate an
        unbounded batch.
    """

    def __init__(
        self, rng: np.random.Generator, R: int, budget: ShuffleBudget, spec: EnvSpec | None = None
    ) -> None:
        super().__init__(rng)
        self.R = R
        self.budget = budget
        self._spec = spec
        self._space: PublicSpace | None = None
        if spec is not None:
            pulls = max_pulls(spec)
            self._pulls = pulls
            self._space = PublicSpace(
                (
                    PublicField("batch", ("R",), "i", low=1, high=n_batches(spec.horizon) + 1),
                    PublicField("counts", ("R", "K"), "i", low=0, high=pulls),
                    PublicField("committed", ("R",), "i", low=-1, high=spec.K - 1),
                )
            )
        self._batch = np.zeros(R, dtype=np.int64)  # index of the batch whose slots were drawn
        self._slots = np.full((R, 1), -1, dtype=np.int64)  # action of each slot (-1 = padding)
        self._reports = np.zeros((R, 1))  # the report answering each slot
        self._n = np.zeros(R, dtype=np.int64)  # size of the open batch (0 = none)
        self._pos = np.zeros(R, dtype=np.int64)  # slots handed out
        self._got = np.zeros(R, dtype=np.int64)  # reports collected
        self._served = np.zeros(R, dtype=bool)  # replications whose user of this round got a slot

    def assign(self, t: int, public: PublicState) -> PublicState:
        """The user of round ``t`` gets its action slot and ``n_i`` (``n = 0``: commit phase)."""
        if self._space is not None and self._spec is not None:
            public = self._space.validate(public, dims_of(self._spec, self.R))
            total = public["counts"].sum(axis=1)
            if np.any(total > self._pulls):
                raise PublicStateError(
                    f"the server's schedule plans a batch of {int(total.max())} pulls, more than "
                    f"the {self._pulls} any batch of the schedule can have; the shuffler refuses it"
                )
        committed = np.asarray(public["committed"], dtype=np.int64)
        batch = np.asarray(public["batch"], dtype=np.int64)
        exploring = committed < 0
        new = np.flatnonzero(exploring & (batch != self._batch))
        if new.size:
            if np.any(self._n[new] > 0):
                raise TrustBoundaryError(
                    "a new batch was scheduled before the shuffler released the previous one"
                )
            counts = np.asarray(public["counts"], dtype=np.int64)[new]
            slots = assign_actions(counts, self.rng)  # uniform permutation per replication
            width = max(slots.shape[1], self._slots.shape[1])
            if width > self._slots.shape[1]:
                pad = width - self._slots.shape[1]
                self._slots = np.pad(self._slots, ((0, 0), (0, pad)), constant_values=-1)
                self._reports = np.pad(self._reports, ((0, 0), (0, pad)))
            self._slots[new] = -1
            self._slots[new, : slots.shape[1]] = slots
            self._reports[new] = 0.0
            self._n[new] = counts.sum(axis=1)
            self._pos[new] = 0
            self._got[new] = 0
            self._batch[new] = batch[new]
        rows = np.flatnonzero(exploring)
        if np.any(self._pos[rows] >= self._n[rows]):
            raise TrustBoundaryError(
                "the shuffler has no slot left in the running batch (it was not released)"
            )
        action = committed.copy()
        n_out = np.zeros(self.R, dtype=np.int64)
        action[rows] = self._slots[rows, self._pos[rows]]
        n_out[rows] = self._n[rows]
        self._pos[rows] += 1
        self._served = exploring
        return PublicState({"action": action, "n": n_out})

    def collect(self, t: int, message: object) -> None:
        """Hold each served user's report beside the slot it answers."""
        if not isinstance(message, PrivatizedMessage):
            raise TrustBoundaryError(
                f"the shuffler only accepts PrivatizedMessage objects, got {type(message).__name__}"
            )
        if message.mechanism != LAPLACE_MECHANISM or set(message.payload) != {"reward_hat"}:
            raise TrustBoundaryError(
                f"expected {LAPLACE_MECHANISM!r} reports with the single key 'reward_hat', "
                f"got {message.mechanism!r} with keys {tuple(message.payload)}"
            )
        check_real_arrays(message.payload, "message")
        value = np.asarray(message["reward_hat"], dtype=float)
        if value.shape != (self.R,):
            raise TrustBoundaryError(
                f"expected one report per replication ({self.R}), got shape {value.shape}"
            )
        rows = np.flatnonzero(self._served)
        self._reports[rows, self._pos[rows] - 1] = value[rows]
        self._got[rows] += 1
        self._served = np.zeros(self.R, dtype=bool)

    @property
    def pending(self) -> int:
        """Reports held (of batches not yet released)."""
        return int(np.where(self._n > 0, self._got, 0).sum())

    def complete(self) -> np.ndarray:
        """Replications whose open batch has all its ``n_i`` reports (R,) bool."""
        return (self._n > 0) & (self._got == self._n)

    def release(self, t: int) -> ShuffledBatch:
        """Forward the complete batches as uniformly permuted ``(action, report)`` pairs.

        Rows of replications whose batch is still open are padding (``action = -1``); their
        reports stay with the shuffler.
        """
        full = self.complete()
        self.budget.check_released(self._n[full])
        slots = np.where(full[:, None], self._slots, -1)
        reports = PrivatizedMessage(
            payload={"reward_hat": np.where(full[:, None], self._reports, 0.0)},
            mechanism=LAPLACE_MECHANISM,
        )
        self._n[full] = 0
        return forward_reports(slots, reports, self.rng)


class ShuffleAnalyzer(EliminationServer):
    """Server of Algorithm 3: per-action sums of complete shuffled batches, then steps 8-11."""

    def __init__(self, R: int, d: int) -> None:
        super().__init__(R, d)
        self.received: list[
            tuple[str, tuple[str, ...], np.ndarray]
        ] = []  # (type, keys, batch sizes)

    def receive_batch(self, t: int, batch: ShuffledBatch) -> None:
        """``r_hat_ia`` = sum of the reports paired with ``a``; each row must be a complete batch."""
        check_reports(batch, ShuffledBatch, LAPLACE_MECHANISM)
        if self.core is None:
            raise ValidationError("a batch arrived before the action catalogue was installed")
        sums, cnt = per_action_sums(batch, self.core.K)
        rows = np.flatnonzero(cnt.sum(axis=1) > 0)
        if not rows.size:
            return
        plan = self.core.view(rows)
        if not (self.core.exploring()[rows].all() and np.array_equal(cnt[rows], plan.counts)):
            raise TrustBoundaryError(
                "the server only accepts complete batches: the per-action report counts "
                "must equal the public schedule n_ia"
            )
        self.received.append((type(batch).__name__, tuple(batch.payload), plan.n_total))
        self._complete(rows, sums[rows])


@register
class HannaShuffle(ServerHeldEngine, ShuffleAlgorithm):
    """Algorithm 3 of Hanna et al. (2022): shuffle model, ``(eps, delta)``-DP per batch by amplification.

    Parameters
    ----------
    epsilon : float
        Central target of every batch; default 1.
    delta : float, optional
        Central delta; default ``1/T^2`` (:func:`~privbandits.algorithms.hanna.budget.default_delta`:
        ``delta << 1/n_i`` for every batch; Hanna et al. 2022, section 6's ``1/T`` is too weak for batches of
        ``~0.3 T`` users).
    preset : {"strict", "paper"}
        Calibration preset (presets on the Hanna et al. 2022 documentation page).
    paper_sensitivity : bool, optional
        Override: Laplace scale ``1 / eps0^(i)``.
    width_mode : {"paper", "rigorous"}, optional
        Override of the preset's width mode.
    shuffle_bound : {"fmt-valid", "paper"}, optional
        Override: Algorithm E0 (validity cap and fallback) or the literal inverse of eq. (10).
    bound : {"closed", "numerical"}
        Amplification bound of E0 and the accountant (FMT21 Thm 3.1 or 3.2).
    design_factor, sigma, fail_prob :
        As for :class:`~privbandits.algorithms.hanna.central.HannaCentral`.

    References
    ----------
    Hanna et al. (2022), Algorithm 3, Theorem 3; correction Hanna22-14, width modes in the documentation.
    """

    name = "hanna-shuffle"
    twin = "pe-batched"
    trust_model = "shuffle"
    paper = "Hanna et al. 2022 (Alg. 3)"
    settings: ClassVar[tuple[str, ...]] = ("single",)
    links: ClassVar[tuple[str, ...]] = ("identity",)
    constraints: ClassVar = {
        "epsilon": Epsilon,
        "delta": Optional(Delta),
        **{k: v for k, v in ELIMINATION_CONSTRAINTS.items() if k != "core_set"},
        **SWITCH_CONSTRAINTS,
        "bound": Choice(*BOUNDS),
    }
    test_params: ClassVar = (
        {"epsilon": 1.0},
        {"epsilon": 0.5, "delta": 1e-6, "width_mode": "paper"},
    )
    test_envs: ClassVar[tuple[str, ...]] = ("finite",)

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The client path at the local level ``eps0`` of one report (before amplification)."""
        text = "Hanna et al. (2022) Alg. 3 client: clip(r) + Laplace at the local level eps0"
        return (fixed_action_case(cls, text, claim=shuffle_local_claim),)

    #: Streams of the aggregate path: the shuffler's permutation orders a batch; users add the noise.
    aggregate_streams: ClassVar[tuple[str, str]] = ("shuffler", "client")

    server: ShuffleAnalyzer
    shuffler: HannaShuffler
    collector: AggregateLaplaceSums

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float | None = None,
        preset: str = "strict",
        paper_sensitivity: bool | None = None,
        width_mode: str | None = None,
        shuffle_bound: str | None = None,
        bound: str = "closed",
        design_factor: float = 2.0,
        sigma: float = 1.0,
        fail_prob: float | None = None,
    ) -> None:
        pass

    def budget_for(self, spec: EnvSpec) -> ShuffleBudget:
        """The public per-batch calibration on problem ``spec`` (every reachable batch size)."""
        sw = resolve_switches(
            self.preset, self.paper_sensitivity, self.width_mode, self.shuffle_bound
        )
        lo, hi = spec.reward_range
        delta = default_delta(spec.horizon) if self.delta is None else self.delta
        ranges = tuple(batch_size_ranges(spec.horizon, spec.K, spec.d))
        return ShuffleBudget(self.epsilon, delta, float(lo), float(hi), sw, self.bound, ranges)

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Local budgets ``eps0^(i)`` for every reachable batch size and the accounted guarantee."""
        b = self.budget_for(spec)
        sw = b.switches
        rule = "1/T^2 (default)" if self.delta is None else "given"
        # per batch i: the parameters at its smallest and largest possible size
        ends = [(b.params(lo), b.params(hi)) for lo, hi in b.ranges]
        eps0 = tuple((lo.eps0, hi.eps0) for lo, hi in ends)
        constants = ShuffleConstants(
            sw.preset,
            sw.paper_sensitivity,
            sw.width_mode,
            sw.shuffle_bound,
            self.bound,
            b.delta,
            rule,
            sw.sensitivity(b.r_lo, b.r_hi),
            tuple((int(lo), int(hi)) for lo, hi in b.ranges),
            eps0,
            tuple((lo.scale, hi.scale) for lo, hi in ends),
            b.n_max,
            b.delta * b.n_max,
            batch_growth(spec.horizon),
            n_batches(spec.horizon),
        )
        head = (
            f"{sw.describe()}; Hanna et al. (2022) Alg. 3; delta={b.delta:.3g} ({rule}; "
            f"delta * n_max = {b.delta * b.n_max:.3g}, delta << 1/n_i is advised); assumes the "
            "server does not see which client played which action (footnote 2)"
        )
        ledger: Event
        if ends:
            # the worst calibrated batch size: each user is in one batch (parallel composition)
            worst = max(b.sizes, key=lambda n: b.batch_guarantee(n).epsilon)
            p, g = b.params(worst), b.batch_guarantee(worst)
            report = Laplace(p.scale, b.r_hi - b.r_lo, "each user's clipped reward")
            batch: Event = (
                Amplified(report, p.n, self.bound, g.epsilon, g.delta)
                if isinstance(g, ApproxDP)
                else report  # amplification does not help: the reports' own LDP level
            )
            ledger = SelfComposed(
                batch,
                len(b.sizes),
                "disjoint",
                what=f"{head}: the worst of {len(b.sizes)} calibrated batch sizes "
                f"({b.ranges[0][0]}..{b.n_max} users in {len(b.ranges)} batch(es))",
            )
        else:
            ledger = Accounted(
                "no batch can complete within the horizon: nothing is released", 0.0, how=head
            )
        local = max((e for pair in eps0 for e in pair), default=None)
        return Calibration(
            to_guarantee(b.accounted(), "shuffle", "user", local_epsilon=local, ledger=ledger),
            preset=self.preset,
            requested=(self.epsilon, b.delta),
            constants=constants,
        )

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        require_fixed_actions(self.name, spec)
        super().reset(spec, replications, streams)
        self.budget = self.budget_for(spec)
        self.server = ShuffleAnalyzer(self.R, spec.d)
        self.client = ShuffleClient(self.budget, spec)
        self.shuffler = HannaShuffler(streams.shuffler, self.R, self.budget, spec)
        self.collector = AggregateLaplaceSums(
            self.budget.scale_for, (self.budget.r_lo, self.budget.r_hi)
        )

    def batch_ends(self, t: int) -> bool:
        """True when some replication's batch has all its reports (the shuffler releases it)."""
        return bool(self.shuffler.complete().any())

    # -- BatchedAlgorithm -------------------------------------------------------------------------
    def make_core(self, A: np.ndarray) -> HannaElimination:
        """The elimination engine with the shuffle width (``s_i`` from the public ``n_i``)."""
        width_mode = self.calibration.typed(ShuffleConstants).width_mode
        return self.local_core(A, self.budget.scale_for, width_mode)
