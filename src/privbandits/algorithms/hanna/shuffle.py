"""Algorithm 3 of Hanna et al. (2022): batched elimination in the shuffle model ((eps, delta)-DP).

Roles of batch ``i`` (spec section 4.3):

* **server** (:class:`ShuffleAnalyzer`, untrusted): holds ``A_i``, computes the public schedule
  ``C_i, pi_i, n_ia, n_i``; receives only a :class:`ShuffledBatch` of ``(action, report)`` pairs of a
  *complete* batch (no client ids), sums the reports per action, estimates with the shuffle width
  (``s_i = Delta / eps0^(i)``) and eliminates over ``A_i``;
* **shuffler** (:class:`HannaShuffler`, trusted): builds the canonical list of the batch's action
  slots, assigns them to the batch's fresh clients by a uniform permutation (its own stream,
  :func:`~privbandits.privacy.shuffle.assign_actions`), collects their reports, re-associates each
  with its action and forwards the ``n_i`` pairs in a fresh random order
  (:func:`~privbandits.privacy.shuffle.forward_reports`) once all ``n_i`` reports are in;
* **client j** (:class:`ShuffleClient`): plays the action it was sent together with ``n_i``,
  computes ``eps0^(i) = E0(eps, delta, n_i)`` itself from public quantities (spec section 3.9;
  the literal inverse under ``shuffle_bound="paper"``) and sends ``clip(r) + Lap(Delta / eps0^(i))``
  to the shuffler.

Batches have different lengths in different replications, while the simulation loop advances all
replications in lockstep and delivers the clients' messages to ``alg.server`` at the rounds where
:meth:`HannaShuffle.batch_ends` says so (``_drive_shuffle``).  The object the loop delivers to is
therefore the trusted shuffler: it buffers each replication's reports until that replication's batch
is complete and only then forwards it to the analyzer (the loop's permutation of each delivery is an
extra, harmless shuffle).  The analyzer never sees a partial batch, a client id or a raw reward.

Privacy: with E0 each batch is ``(f_{n_i,delta}(eps_l), delta)``-DP by amplification (FMT21 Thm
3.1, validity condition enforced by the accountant) or ``eps_l``-DP from the reports alone, where
``eps_l = (r_hi - r_lo) / s_i`` is the LDP level of the noise actually added; batches hold disjoint
users, so the run is their parallel composition (spec Appendix C).  This relies on the
footnote-2 assumption: the server does not learn which client played which action.

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithm 3, eq. (10), Theorem 3, Remark 7, Appendix C;
Feldman, McMillan & Talwar (2021), Thm 3.1; spec sections 2.4, 3.9, 4.3.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.base import Client, Server, ShuffleAlgorithm
from privbandits.algorithms.hanna.aggregate import AggregateLaplaceSums
from privbandits.algorithms.hanna.local import _common_checks
from privbandits.algorithms.hanna.presets import Switches, resolve_switches
from privbandits.algorithms.hanna.server import EliminationServer, EngineAccess, check_reports
from privbandits.algorithms.hanna.widths import LocalWidth
from privbandits.algorithms.phased_elimination import BatchPlan, HannaElimination
from privbandits.algorithms.registry import register
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState, ShuffledBatch
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_choice, check_delta, check_epsilon
from privbandits.privacy.accounting import PureDP, compose_parallel, to_guarantee
from privbandits.privacy.amplification import BOUNDS, amplified_guarantee
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.mechanisms import sample_laplace
from privbandits.privacy.shuffle import (
    LAPLACE_MECHANISM,
    LaplaceShuffleParams,
    assign_actions,
    forward_reports,
    laplace_shuffle_params,
    per_action_sums,
)

__all__ = ["HannaShuffle", "HannaShuffler", "ShuffleAccountant", "ShuffleAnalyzer", "ShuffleCalibration",
           "ShuffleClient"]


class ShuffleCalibration:
    """Public per-batch calibration: ``n_i -> LaplaceShuffleParams`` (``eps0^(i)``, scale), cached.

    Parameters
    ----------
    epsilon, delta : float
        Central target of every batch.
    r_lo, r_hi : float
        Reward range.
    switches : Switches
        ``paper_sensitivity`` and ``shuffle_bound`` are used.
    bound : {"closed", "numerical"}
        Amplification bound of E0 and of the accountant.
    """

    def __init__(self, epsilon: float, delta: float, r_lo: float, r_hi: float, switches: Switches,
                 bound: str = "closed") -> None:
        self.epsilon, self.delta = epsilon, delta
        self.r_lo, self.r_hi = r_lo, r_hi
        self.switches = switches
        self.bound = bound
        self._params = functools.lru_cache(maxsize=None)(self._compute)

    def _compute(self, n: int) -> LaplaceShuffleParams:
        with warnings.catch_warnings():  # the preset already warned once
            warnings.simplefilter("ignore", UserWarning)
            return laplace_shuffle_params(self.epsilon, self.delta, n, self.r_lo, self.r_hi,
                                          shuffle_bound=self.switches.shuffle_bound, bound=self.bound,
                                          paper_sensitivity=self.switches.paper_sensitivity)

    def params(self, n: int) -> LaplaceShuffleParams:
        """Parameters of a batch of ``n`` users (``eps0^(i)`` depends only on the public ``n_i``)."""
        return self._params(int(n))

    def scales(self, n: np.ndarray) -> np.ndarray:
        """Laplace scale ``s_i`` for each batch size in ``n``."""
        return np.array([self.params(int(k)).scale for k in np.ravel(n)], dtype=float).reshape(np.shape(n))

    def scale_for(self, plan: BatchPlan) -> np.ndarray:
        return self.scales(plan.n_total)


class ShuffleAccountant:
    """Parallel composition over the forwarded batches (disjoint users, spec section 2.4).

    A batch of ``n`` users with reports of LDP level ``eps_l = (r_hi - r_lo) / s`` (the scale
    actually used) is ``amplified_guarantee(eps_l, n, delta)``: amplified when FMT21's closed form
    is valid and helps, ``eps_l``-DP otherwise.
    """

    def __init__(self, calibration: ShuffleCalibration) -> None:
        self.calibration = calibration
        self.batches: dict[int, int] = {}  # n_i -> number of forwarded batches of that size

    def record(self, n: np.ndarray | int) -> None:
        for k in np.ravel(n):
            self.batches[int(k)] = self.batches.get(int(k), 0) + 1

    def record_plan(self, plan: BatchPlan) -> None:
        self.record(plan.n_total)

    def batch_guarantee(self, n: int) -> Any:
        p = self.calibration.params(n)
        return amplified_guarantee(p.local_epsilon(), p.n, p.delta, p.bound)

    def guarantee(self, notes: str) -> PrivacyGuarantee:
        gs = [self.batch_guarantee(n) for n in sorted(self.batches)]
        g = compose_parallel(gs) if gs else PureDP(0.0)
        if self.batches:
            eps0 = [self.calibration.params(n).eps0 for n in self.batches]
            eps_l = [self.calibration.params(n).local_epsilon() for n in self.batches]
            how = (f"parallel composition over {sum(self.batches.values())} forwarded batch(es) of "
                   f"{min(self.batches)}..{max(self.batches)} users; eps0^(i) in [{min(eps0):.6g}, {max(eps0):.6g}], "
                   f"per-report LDP level up to {max(eps_l):.6g}; amplification by shuffling "
                   f"({self.calibration.bound} bound, FMT21) where valid; assumes the server does not see "
                   "which client played which action (footnote 2)")
        else:
            how = "no batch was forwarded to the server"
        return to_guarantee(g, "shuffle", "user", f"{notes}; {how}")


class ShuffleClient(Client):
    """Client of Algorithm 3: plays the action the shuffler assigned, reports ``clip(r) + Lap(s_i)``.

    Parameters
    ----------
    calibration : ShuffleCalibration
        Gives ``eps0^(i)`` from the public ``(eps, delta, n_i)``.
    shuffler : HannaShuffler
        The trusted shuffler (secure channel): action assignment and the public catalogue.
    """

    def __init__(self, calibration: ShuffleCalibration, shuffler: HannaShuffler) -> None:
        self.calibration = calibration
        self.shuffler = shuffler
        self._n = np.zeros(0, dtype=np.int64)

    def choose(self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if not self.shuffler.ready:
            self.shuffler.publish_action_set(contexts)
        actions, self._n = self.shuffler.assign()
        return actions

    def randomize(self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray,
                  rewards: np.ndarray, rng: np.random.Generator) -> PrivatizedMessage:
        report = self._n > 0
        scale = np.ones(self._n.shape)
        if report.any():
            scale[report] = self.calibration.scales(self._n[report])
        lo, hi = self.calibration.r_lo, self.calibration.r_hi
        noise = sample_laplace(rng, np.shape(rewards), 1.0) * scale
        value = np.where(report, np.clip(rewards, lo, hi) + noise, 0.0)
        return PrivatizedMessage(payload={"action": np.where(report, actions, -1).astype(np.int64),
                                          "reward_hat": value}, mechanism=LAPLACE_MECHANISM)


class ShuffleAnalyzer(EliminationServer):
    """Server of Algorithm 3: per-action sums of a complete shuffled batch, then steps 8-11."""

    def __init__(self, R: int, d: int, make_core: Any, accountant: ShuffleAccountant) -> None:
        super().__init__(R, d, make_core)
        self.accountant = accountant
        self.received: list[tuple[str, tuple[str, ...], int]] = []  # (type, payload keys, users) per batch

    def receive_batch(self, t: int, batch: ShuffledBatch) -> None:
        """``r_hat_ia`` = sum of the reports paired with ``a``; each row must be a complete batch."""
        check_reports(batch, ShuffledBatch, LAPLACE_MECHANISM)
        if self.core is None:
            raise ValidationError("a batch arrived before the action catalogue was posted")
        self.received.append((type(batch).__name__, tuple(batch.payload), int(batch.n_users)))
        sums, cnt = per_action_sums(batch, self.core.K)
        rows = np.flatnonzero(cnt.sum(axis=1) > 0)
        plan = self.core.view(rows)
        if not (self.core.exploring()[rows].all() and np.array_equal(cnt[rows], plan.counts)):
            raise TrustBoundaryError("the server only accepts complete batches: the per-action report counts "
                                     "must equal the public schedule n_ia")
        self.accountant.record(plan.n_total)
        self._complete(rows, sums[rows])


class HannaShuffler(Server):
    """The trusted shuffler of Algorithm 3 (spec section 4.3); the simulation loop delivers to it.

    Parameters
    ----------
    analyzer : ShuffleAnalyzer
        The untrusted server behind the shuffler.
    rng : Generator
        The shuffler's own stream.
    """

    def __init__(self, analyzer: ShuffleAnalyzer, rng: np.random.Generator) -> None:
        self.analyzer = analyzer
        self.rng = rng
        R = analyzer.R
        self._batch = np.zeros(R, dtype=np.int64)   # batch index whose slots were drawn
        self._slots = np.full((R, 1), -1, dtype=np.int64)  # action of each client slot (-1 = padding)
        self._pos = np.zeros(R, dtype=np.int64)
        self._n = np.zeros(R, dtype=np.int64)
        self._buf_a: list[list[np.ndarray]] = [[] for _ in range(R)]
        self._buf_y: list[list[np.ndarray]] = [[] for _ in range(R)]
        self._buffered = np.zeros(R, dtype=np.int64)

    # -- public side ------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.analyzer.ready

    def publish_action_set(self, A: np.ndarray) -> None:
        self.analyzer.publish_action_set(A)

    def public_state(self) -> PublicState:
        return self.analyzer.public_state()

    def estimate(self) -> np.ndarray | None:
        return self.analyzer.estimate()

    # -- step 1: assignment of action slots to clients -------------------------------------------
    def assign(self) -> tuple[np.ndarray, np.ndarray]:
        """Actions (R,) for this round's clients and their batch sizes ``n_i`` (0 = commit phase)."""
        pub = self.analyzer.public_state()
        committed, batch, counts = pub["committed"], pub["batch"], pub["counts"]
        exploring = committed < 0
        new = np.flatnonzero(exploring & (batch != self._batch))
        if new.size:
            slots = assign_actions(counts[new], self.rng)  # uniform permutation per replication
            if slots.shape[1] > self._slots.shape[1]:
                self._slots = np.pad(self._slots, ((0, 0), (0, slots.shape[1] - self._slots.shape[1])),
                                     constant_values=-1)
            self._slots[new] = -1
            self._slots[new, : slots.shape[1]] = slots
            self._n[new] = counts[new].sum(axis=1)
            self._pos[new] = 0
            self._batch[new] = batch[new]
            for r in new:
                self._buf_a[r], self._buf_y[r] = [], []
            self._buffered[new] = 0
        rows = np.flatnonzero(exploring)
        if np.any(self._pos[rows] >= self._n[rows]):
            raise ValidationError("the shuffler has no slot left in the running batch (its reports were not "
                                  "delivered)")
        actions = committed.copy()
        n_out = np.zeros(committed.size, dtype=np.int64)
        actions[rows] = self._slots[rows, self._pos[rows]]
        n_out[rows] = self._n[rows]
        self._pos[rows] += 1
        return actions, n_out

    def batch_ends(self) -> bool:
        """True when some replication's batch got its last client this round."""
        exploring = self.analyzer.public_state()["committed"] < 0
        return bool(np.any(exploring & (self._n > 0) & (self._pos == self._n) & (self._buffered < self._n)))

    # -- step 2: collect, re-associate, forward complete batches ----------------------------------
    def receive_batch(self, t: int, batch: ShuffledBatch) -> None:
        """Buffer the delivered reports; forward each replication's batch once all ``n_i`` are in."""
        action, value = check_reports(batch, ShuffledBatch, LAPLACE_MECHANISM)
        R = self.analyzer.R
        for r in range(R):
            keep = action[r] >= 0
            if keep.any():
                self._buf_a[r].append(action[r, keep])
                self._buf_y[r].append(value[r, keep])
                self._buffered[r] += int(keep.sum())
        full = np.flatnonzero((self._n > 0) & (self._buffered == self._n))
        if not full.size:
            return
        N = int(self._n[full].max())
        slots = np.full((R, N), -1, dtype=np.int64)
        reports = np.zeros((R, N))
        for r in full:
            n = int(self._n[r])
            slots[r, :n] = np.concatenate(self._buf_a[r])
            reports[r, :n] = np.concatenate(self._buf_y[r])
            self._buf_a[r], self._buf_y[r] = [], []
            self._buffered[r] = 0
            self._n[r] = 0
        message = PrivatizedMessage(payload={"reward_hat": reports}, mechanism=LAPLACE_MECHANISM)
        self.analyzer.receive_batch(t, forward_reports(slots, message, self.rng))


@register
class HannaShuffle(EngineAccess, ShuffleAlgorithm):
    """Algorithm 3 of Hanna et al. (2022): shuffle model, ``(eps, delta)``-DP per batch by amplification.

    Parameters
    ----------
    epsilon : float
        Central target of every batch.
    delta : float, optional
        Central delta; default ``1/T`` (spec section 6.3 [CHOICE]; see its caution).
    preset : {"strict", "paper"}
        Calibration preset (spec section 2.6).
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
    Hanna et al. (2022), Algorithm 3, Theorem 3; spec sections 3.9, 4.3, 4.6.
    """

    _engine_holder = "analyzer"  # the untrusted analyzer owns the elimination engine

    name = "hanna-shuffle"
    trust_model = "shuffle"
    paper = "Hanna et al. 2022 (Alg. 3)"
    settings: ClassVar[tuple[str, ...]] = ("single",)
    links: ClassVar[tuple[str, ...]] = ("identity",)
    #: Streams of the aggregate path: the shuffler's permutation orders a batch; users add the noise.
    aggregate_streams: ClassVar[tuple[str, str]] = ("shuffler", "client")

    def __init__(
        self,
        epsilon: float,
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
        super().__init__(epsilon=epsilon, delta=delta, preset=preset, paper_sensitivity=paper_sensitivity,
                         width_mode=width_mode, shuffle_bound=shuffle_bound, bound=bound,
                         design_factor=design_factor, sigma=sigma, fail_prob=fail_prob)
        self.epsilon = check_epsilon(epsilon)
        self.delta = None if delta is None else check_delta(delta)
        self.switches: Switches = resolve_switches(preset, paper_sensitivity, width_mode, shuffle_bound)
        self.preset = self.switches.preset
        self.bound = check_choice("bound", bound, BOUNDS)
        _common_checks(self, design_factor, sigma, fail_prob)

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        if not spec.fixed_actions:
            raise ValidationError(f"algorithm {self.name!r} needs a fixed finite action set (spec.fixed_actions=True, "
                                  "e.g. FiniteActionEnv); got an environment with per-round contexts")
        lo, hi = spec.reward_range
        delta = self.delta if self.delta is not None else (1.0 / spec.horizon if spec.horizon > 1 else 0.5)
        self.resolved_delta = delta
        self.calibration = ShuffleCalibration(self.epsilon, delta, lo, hi, self.switches, self.bound)
        self.accountant = ShuffleAccountant(self.calibration)
        self.analyzer = ShuffleAnalyzer(self.R, spec.d, self.make_core, self.accountant)
        self.server = HannaShuffler(self.analyzer, streams.shuffler)
        self.client = ShuffleClient(self.calibration, self.server)
        self.collector = AggregateLaplaceSums(self.calibration.scale_for, (lo, hi), lambda: self.guarantee,
                                              on_release=self.accountant.record_plan)

    def make_core(self, A: np.ndarray) -> HannaElimination:
        """The elimination engine with the shuffle width (``s_i`` from the public ``n_i``)."""
        width = LocalWidth(self.calibration.scale_for, self.switches.width_mode, self.sigma, self.fail_prob)
        return HannaElimination(A, self.spec, width, self.design_factor, "greedy")

    def batch_ends(self, t: int) -> bool:
        return self.server.batch_ends()

    def resolved_params(self) -> dict[str, Any]:
        return {**self.switches.as_dict(), "delta": getattr(self, "resolved_delta", self.delta),
                "bound": self.bound}

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """Parallel composition of the forwarded batches' accounted guarantees (see the module docs)."""
        notes = self.switches.describe()
        acc = getattr(self, "accountant", None)
        if acc is None:
            return to_guarantee(PureDP(0.0), "shuffle", "user", f"{notes}; before a run: nothing released")
        return acc.guarantee(notes)
