"""The round loop: runs all R replications at once and enforces the trust boundary.

:func:`simulate` is the single place where an algorithm meets an environment.  The driver it
picks depends on the algorithm's role class (DESIGN section 2):

* :class:`~privbandits.algorithms.base.Curator` (non-private, central, joint): ``select`` then
  ``update`` with raw data, as a trusted curator would.
* :class:`~privbandits.algorithms.base.LocalAlgorithm`: the server publishes a
  :class:`PublicState`; the client chooses and randomizes on the user side; the server receives
  only the :class:`PrivatizedMessage` (checked at run time).
* :class:`~privbandits.algorithms.base.ShuffleAlgorithm`: as local, but messages are held until
  the batch closes, permuted uniformly by the shuffler (its own seed stream), and delivered as a
  :class:`ShuffledBatch`.

Cumulative pseudo-regret, realized reward and parameter-estimation error are recorded at
checkpoints.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.algorithms.base import (
    Algorithm,
    BatchedAlgorithm,
    Curator,
    LocalAlgorithm,
    ShuffleAlgorithm,
)
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState, shuffle_messages
from privbandits.core.rng import make_streams
from privbandits.core.validation import check_int
from privbandits.envs.base import Environment
from privbandits.privacy.guarantee import PrivacyGuarantee

__all__ = ["SimulationResult", "simulate", "make_checkpoints"]

ProgressFn = Callable[[int], None]


def make_checkpoints(
    horizon: int, log_points: int = 50, every: int | None = None, points: Sequence[int] | None = None
) -> np.ndarray:
    """Rounds (1-based counts ``t``) after which cumulative quantities are recorded.

    Parameters
    ----------
    horizon : int
        Number of rounds T; always included.
    log_points : int
        Number of log-spaced points between 1 and T (0 for none).
    every : int, optional
        Also record every ``every`` rounds.
    points : sequence of int, optional
        Explicit extra points (each in [1, T]).
    """
    T = check_int("horizon", horizon, 1)
    pts = [np.array([T])]
    if log_points:
        check_int("log_points", log_points, 0)
        pts.append(np.unique(np.round(np.logspace(0, np.log10(T), log_points)).astype(int)))
    if every:
        check_int("every", every, 1)
        pts.append(np.arange(every, T + 1, every))
    if points is not None:
        p = np.asarray(points, dtype=int)
        if p.size and (p.min() < 1 or p.max() > T):
            raise ValidationError(f"checkpoints must lie in [1, {T}], got range [{p.min()}, {p.max()}]")
        pts.append(p)
    return np.unique(np.concatenate(pts))


@dataclass
class SimulationResult:
    """Outcome of one :func:`simulate` call (all arrays have the replication axis first).

    Attributes
    ----------
    checkpoints : ndarray of shape (n,)
        Round counts t at which the cumulative quantities were recorded.
    regret : ndarray of shape (R, n)
        Cumulative pseudo-regret ``sum_{s<=t} max_a mu_s(a) - mu_s(a_s)``.
    reward : ndarray of shape (R, n)
        Cumulative realized reward.
    estimation_error : ndarray of shape (R, n) or None
        ``||theta_hat_t - theta*||_2`` (Frobenius over arms in the multi setting), when the
        algorithm exposes an estimate.
    guarantee : PrivacyGuarantee
        The algorithm's privacy guarantee, from its accountant.
    """

    algorithm: str
    params: dict[str, Any]
    trust_model: str
    preset: str
    guarantee: PrivacyGuarantee
    env: dict[str, Any]
    seed: int
    horizon: int
    replications: int
    checkpoints: np.ndarray
    regret: np.ndarray
    reward: np.ndarray
    estimation_error: np.ndarray | None
    wall_time: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def final_regret(self) -> np.ndarray:
        """Cumulative regret at the horizon, one value per replication."""
        return self.regret[:, -1]

    def summary(self) -> dict[str, float]:
        """Mean and standard deviation of the final regret across replications."""
        fr = self.final_regret
        return {
            "mean": float(fr.mean()),
            "std": float(fr.std(ddof=1)) if fr.size > 1 else 0.0,
            "min": float(fr.min()),
            "max": float(fr.max()),
        }


class _Recorder:
    """Accumulates per-round quantities and snapshots them at checkpoints."""

    def __init__(self, alg: Algorithm, env: Environment, checkpoints: np.ndarray) -> None:
        self.alg, self.env = alg, env
        self.ckpt = checkpoints
        self.next_idx = 0
        self.next_t = int(checkpoints[0])
        R, n = env.R, len(checkpoints)
        self.cum_regret = np.zeros(R)
        self.cum_reward = np.zeros(R)
        self.regret = np.empty((R, n))
        self.reward = np.empty((R, n))
        self.err: np.ndarray | None = np.full((R, n), np.nan)
        self.has_estimate = True

    def record(self, t: int, regret: np.ndarray, rewards: np.ndarray) -> None:
        self.cum_regret += regret
        self.cum_reward += rewards
        if t + 1 == self.next_t:
            self.snapshot()

    def snapshot(self) -> None:
        i = self.next_idx
        self.regret[:, i] = self.cum_regret
        self.reward[:, i] = self.cum_reward
        if self.has_estimate:
            est = self.alg.estimate()
            if est is None:
                self.has_estimate = False
                self.err = None
            else:
                diff = np.asarray(est, float) - self.env.theta_star
                self.err[:, i] = np.sqrt((diff.reshape(diff.shape[0], -1) ** 2).sum(axis=1))  # type: ignore[index]
        self.next_idx += 1
        self.next_t = int(self.ckpt[self.next_idx]) if self.next_idx < len(self.ckpt) else -1


def _drive_curator(alg: Curator, env: Environment, T: int, rec: _Recorder, tick: ProgressFn) -> None:
    for t in range(T):
        X = env.next_round()
        a = alg.select(t, X)
        r, reg = env.step(a)
        alg.update(t, X, a, r)
        rec.record(t, reg, r)
        tick(t)


def _check_message(msg: object) -> PrivatizedMessage:
    if not isinstance(msg, PrivatizedMessage):
        raise TrustBoundaryError(
            f"a local randomizer returned {type(msg).__name__}; only PrivatizedMessage may reach the server"
        )
    return msg


def _check_public(state: object) -> PublicState:
    if not isinstance(state, PublicState):
        raise TrustBoundaryError(f"the server broadcast {type(state).__name__}; users may only receive PublicState")
    return state


def _drive_local(alg: LocalAlgorithm, env: Environment, T: int, rec: _Recorder, tick: ProgressFn) -> None:
    client, server = alg.client, alg.server
    rng_client, rng_policy = alg.streams.client, alg.streams.policy
    for t in range(T):
        X = env.next_round()
        public = _check_public(server.public_state())
        a = client.choose(t, public, X, rng_policy)
        r, reg = env.step(a)
        msg = _check_message(client.randomize(t, public, X, a, r, rng_client))
        server.receive(t, msg)
        rec.record(t, reg, r)
        tick(t)


def _drive_shuffle(alg: ShuffleAlgorithm, env: Environment, T: int, rec: _Recorder, tick: ProgressFn) -> None:
    client, server = alg.client, alg.server
    rng_client, rng_policy, rng_shuffle = alg.streams.client, alg.streams.policy, alg.streams.shuffler
    pending: list[PrivatizedMessage] = []
    public = _check_public(server.public_state())
    for t in range(T):
        X = env.next_round()
        a = client.choose(t, public, X, rng_policy)
        r, reg = env.step(a)
        pending.append(_check_message(client.randomize(t, public, X, a, r, rng_client)))
        if alg.batch_ends(t) or t == T - 1:
            server.receive_batch(t, shuffle_messages(pending, rng_shuffle))
            pending = []
            public = _check_public(server.public_state())
        rec.record(t, reg, r)
        tick(t)


def _supports_aggregate(alg: Algorithm, env: Environment) -> bool:
    """Whether :func:`_drive_aggregate` can run ``alg`` on ``env`` exactly."""
    return (isinstance(alg, BatchedAlgorithm) and bool(getattr(alg, "aggregate_exact", True))
            and bool(getattr(env, "fixed_actions", False)) and callable(getattr(env, "reward_sums", None)))


def _prefix_counts(rng: np.random.Generator, colors: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Pulls of each color among consecutive segments of a uniformly random order.

    ``colors`` (J,) counts of a multiset in uniformly random order; ``cuts`` increasing prefix
    lengths (the last one <= colors.sum()).  Row ``s`` of the result counts each color among
    positions ``(cuts[s-1], cuts[s]]``: sequential multivariate hypergeometric draws from the
    remaining counts, which is the exact joint law of nested prefixes.
    """
    left = colors.astype(np.int64).copy()
    out = np.zeros((cuts.size, colors.size), dtype=np.int64)
    prev = 0
    for s, c in enumerate(cuts):
        k = int(c) - prev
        if k == int(left.sum()):
            seg = left.copy()
        elif k > 0:
            seg = rng.multivariate_hypergeometric(left, k, method="marginals")
        else:
            seg = np.zeros_like(left)
        out[s] = seg
        left -= seg
        prev = int(c)
    return out


def _drive_aggregate(alg: Algorithm, env: Environment, T: int, rec: _Recorder, tick: ProgressFn) -> None:
    """Exact aggregate path of a :class:`~privbandits.algorithms.base.BatchedAlgorithm`.

    Replications are independent, so they advance one batch per iteration of the outer loop
    (about ``ln T`` iterations), each at its own round.  For a batch with public counts
    ``n_ia`` starting after ``t0`` rounds: the pulls among the rounds up to each checkpoint inside
    the batch are nested prefixes of a uniformly random order (sequential multivariate
    hypergeometric draws from the order stream); the rewards of each segment are exact sums
    (``env.reward_sums``, clipped as the collector clips); a completed batch's release is
    ``collector.collect`` on the per-action sums (noise stream); a batch cut by the horizon
    releases nothing.  The commit phase adds the committed action's gap per round.  Cumulative
    regret, reward and estimation error at every checkpoint therefore have exactly the law of the
    per-round path's (DESIGN section 3); only the consumption of the random streams differs.
    """
    streams = alg.streams
    order_role, noise_role = getattr(alg, "aggregate_streams", ("policy", "server"))
    rng_order, rng_noise, rng_reward = getattr(streams, order_role), getattr(streams, noise_role), streams.rewards
    A = env.next_round()  # round 1's contexts: the fixed action sets, as the per-round path sees them
    core = alg.make_core(np.array(A, dtype=float, copy=True))  # type: ignore[attr-defined]
    alg.core = core  # type: ignore[attr-defined]
    collector = alg.collector  # type: ignore[attr-defined]
    clip = getattr(collector, "clip", None)
    means = np.asarray(env.fixed_means, dtype=float)  # type: ignore[attr-defined]
    gaps = means.max(axis=1, keepdims=True) - means
    theta_star = np.asarray(env.theta_star, dtype=float)
    R = means.shape[0]
    ckpt = rec.ckpt.astype(np.int64)
    t = np.zeros(R, dtype=np.int64)
    cum_reg = np.zeros(R)
    cum_rew = np.zeros(R)
    err = rec.err if rec.err is not None else np.full(rec.regret.shape, np.nan)

    def error(r: int) -> float:
        return float(np.linalg.norm(np.asarray(core.theta[r], float) - theta_star[r]))

    plan = core.plan_batch()
    while len(plan):
        rows = np.asarray(plan.rows, dtype=np.int64)
        counts = np.asarray(plan.counts, dtype=np.int64)
        n_total = counts.sum(axis=1)
        played = np.minimum(n_total, T - t[rows])
        J = int(np.count_nonzero(counts, axis=1).max())
        seg_row, seg_k, seg_act, seg_cnt, seg_ck = [], [], [], [], []
        for k, r in enumerate(rows):
            idx = np.flatnonzero(counts[k])
            lo = np.searchsorted(ckpt, t[r], side="right")
            hi = np.searchsorted(ckpt, t[r] + played[k], side="right")
            cuts = list(ckpt[lo:hi] - t[r])
            marks = list(range(lo, hi))
            if not cuts or cuts[-1] != played[k]:
                cuts.append(int(played[k]))
                marks.append(-1)
            segs = _prefix_counts(rng_order, counts[k, idx], np.asarray(cuts, dtype=np.int64))
            act = np.zeros(J, dtype=np.int64)
            act[: idx.size] = idx
            for s in range(len(cuts)):
                cnt = np.zeros(J, dtype=np.int64)
                cnt[: idx.size] = segs[s]
                seg_row.append(r)
                seg_k.append(k)
                seg_act.append(act)
                seg_cnt.append(cnt)
                seg_ck.append(marks[s])
        srow = np.asarray(seg_row, dtype=np.int64)
        sact = np.asarray(seg_act, dtype=np.int64)
        scnt = np.asarray(seg_cnt, dtype=np.int64)
        ssum = env.reward_sums(scnt, rng_reward, clip=clip, rows=srow, actions=sact)  # type: ignore[attr-defined]
        sreg = (scnt * gaps[srow[:, None], sact]).sum(axis=1)
        srew = ssum.sum(axis=1)
        complete = played == n_total
        batch_sums = np.zeros(counts.shape)
        end_marks: list[tuple[int, int]] = []
        for s in range(srow.size):
            r, k, j = int(srow[s]), int(seg_k[s]), int(seg_ck[s])
            cum_reg[r] += sreg[s]
            cum_rew[r] += srew[s]
            if complete[k]:
                np.add.at(batch_sums[k], sact[s], ssum[s])
            if j >= 0:
                rec.regret[r, j] = cum_reg[r]
                rec.reward[r, j] = cum_rew[r]
                if complete[k] and ckpt[j] == t[r] + n_total[k]:
                    end_marks.append((r, j))  # the batch's last round: estimate after the release
                else:
                    err[r, j] = error(r)
        t[rows] += played
        done = rows[complete]
        if done.size:
            sub = core.view(done)
            r_hat = collector.collect(sub, batch_sums[complete], rng_noise)
            core.finish_batch(sub, r_hat)
        for r, j in end_marks:
            err[r, j] = error(r)
        nxt = done[(t[done] < T) & (np.asarray(core.committed)[done] < 0)]
        if not nxt.size:
            break
        plan = core.plan_batch(nxt)

    # commit phase: the committed action until T (rows cut by the horizon have t = T)
    committed = np.asarray(core.committed)
    for r in np.flatnonzero((committed >= 0) & (t < T)):
        a = int(committed[r])
        lo = np.searchsorted(ckpt, t[r], side="right")
        cuts = ckpt[lo:]
        lengths = np.diff(np.concatenate([[t[r]], cuts]))
        sums = env.reward_sums(lengths[:, None], rng_reward, clip=None,  # type: ignore[attr-defined]
                               rows=np.full(cuts.size, r), actions=np.full((cuts.size, 1), a))[:, 0]
        rec.regret[r, lo:] = cum_reg[r] + (cuts - t[r]) * gaps[r, a]
        rec.reward[r, lo:] = cum_rew[r] + np.cumsum(sums)
        err[r, lo:] = error(r)
        t[r] = T
    if rec.err is not None:
        rec.err[:] = err
    rec.next_idx = len(ckpt)
    tick(T - 1)


def simulate(
    algorithm: Algorithm,
    env: Environment,
    horizon: int,
    replications: int = 1,
    seed: int = 0,
    checkpoints: Sequence[int] | np.ndarray | int | None = None,
    progress: ProgressFn | None = None,
    fast: bool = True,
) -> SimulationResult:
    """Run ``algorithm`` on ``env`` for ``horizon`` rounds in ``replications`` parallel copies.

    Parameters
    ----------
    algorithm : Algorithm
        A freshly constructed or reused algorithm (it is reset here).
    env : Environment
        The environment (reset here; the same seed gives the same instance, contexts and
        rewards for every algorithm).
    horizon : int
        Number of rounds T.
    replications : int
        Number of independent replications R, advanced together.
    seed : int
        Root seed (DESIGN section 4).
    checkpoints : int, sequence of int or None
        An int ``n`` asks for ``n`` log-spaced checkpoints; a sequence gives them explicitly
        (1-based round counts); None means 50 log-spaced points plus the horizon.
    progress : callable, optional
        Called with the number of rounds completed, about 200 times per run.
    fast : bool
        Use the exact aggregate driver when the algorithm is a
        :class:`~privbandits.algorithms.base.BatchedAlgorithm` on a fixed action set whose
        environment can draw reward sums (same law at every checkpoint, far fewer Python-level
        steps); ``False`` always runs the reference per-round / per-user message path.

    Returns
    -------
    SimulationResult
    """
    T = check_int("horizon", horizon, 1)
    R = check_int("replications", replications, 1)
    if not isinstance(fast, (bool, np.bool_)):
        raise ValidationError(f"fast must be True or False, got {fast!r}")
    if checkpoints is None:
        ckpt = make_checkpoints(T)
    elif isinstance(checkpoints, (int, np.integer)):
        ckpt = make_checkpoints(T, log_points=int(checkpoints))
    else:
        ckpt = make_checkpoints(T, log_points=0, points=checkpoints)
    streams = make_streams(seed)
    spec = env.reset(R, streams, T)
    algorithm.reset(spec, R, streams)
    rec = _Recorder(algorithm, env, ckpt)

    stride = max(1, T // 200)
    if progress is None:
        def tick(t: int) -> None:
            return None
    else:
        def tick(t: int) -> None:
            if (t + 1) % stride == 0 or t + 1 == T:
                progress(t + 1)

    start = time.perf_counter()
    if fast and _supports_aggregate(algorithm, env):
        _drive_aggregate(algorithm, env, T, rec, tick)
    elif isinstance(algorithm, ShuffleAlgorithm):
        _drive_shuffle(algorithm, env, T, rec, tick)
    elif isinstance(algorithm, LocalAlgorithm):
        _drive_local(algorithm, env, T, rec, tick)
    elif isinstance(algorithm, Curator):
        _drive_curator(algorithm, env, T, rec, tick)
    else:
        raise ValidationError(f"{type(algorithm).__name__} is not a Curator, LocalAlgorithm or ShuffleAlgorithm")
    wall = time.perf_counter() - start
    return SimulationResult(
        algorithm=algorithm.name,
        params=algorithm.get_params(),
        trust_model=algorithm.trust_model,
        preset=algorithm.preset,
        guarantee=algorithm.guarantee,
        env=env.describe(),
        seed=seed,
        horizon=T,
        replications=R,
        checkpoints=ckpt,
        regret=rec.regret,
        reward=rec.reward,
        estimation_error=rec.err,
        wall_time=wall,
        extra={"contexts_clipped": env.n_clipped},
    )
