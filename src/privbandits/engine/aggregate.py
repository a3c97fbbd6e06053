"""The exact aggregate driver of batched elimination algorithms on fixed action sets.

See :class:`~privbandits.algorithms.base.BatchedAlgorithm`.  Used by ``engine="aggregate"`` (and
by ``engine="auto"`` when the algorithm and environment support it).
"""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.base import Algorithm, BatchedAlgorithm
from privbandits.engine import protocol
from privbandits.engine.recorder import Progress, Recorder
from privbandits.envs.base import Environment

__all__ = ["drive_aggregate", "supports_aggregate"]


def supports_aggregate(alg: Algorithm, env: Environment) -> bool:
    """Whether :func:`_drive_aggregate` can run ``alg`` on ``env`` exactly."""
    return (
        isinstance(alg, BatchedAlgorithm)
        and bool(getattr(alg, "aggregate_exact", True))
        and bool(getattr(env, "fixed_actions", False))
        and callable(getattr(env, "reward_sums", None))
    )


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


def drive_aggregate(
    alg: Algorithm, env: Environment, T: int, rec: Recorder, tick: Progress
) -> None:
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
    per-round path's (the documentation's Concepts: engines); only the consumption of the random streams differs.
    """
    streams = alg.streams
    order_role, noise_role = getattr(alg, "aggregate_streams", ("policy", "server"))
    rng_order, rng_noise, rng_reward = (
        getattr(streams, order_role),
        getattr(streams, noise_role),
        streams.rewards,
    )
    assert isinstance(alg, BatchedAlgorithm)
    A = (
        env.next_round()
    )  # round 1's contexts: the fixed action sets, as the per-round path sees them
    core = protocol.start(alg, np.array(A, dtype=float, copy=True))
    collector = alg.collector
    clip = getattr(collector, "clip", None)
    means = np.asarray(env.fixed_means, dtype=np.float64)  # type: ignore[attr-defined]
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

    plan = core.running()
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
        tail = ckpt[lo:]
        lengths = np.diff(np.concatenate([[t[r]], tail]))
        sums = env.reward_sums(
            lengths[:, None],
            rng_reward,
            clip=None,  # type: ignore[attr-defined]
            rows=np.full(tail.size, r),
            actions=np.full((tail.size, 1), a),
        )[:, 0]
        rec.regret[r, lo:] = cum_reg[r] + (tail - t[r]) * gaps[r, a]
        rec.reward[r, lo:] = cum_rew[r] + np.cumsum(sums)
        err[r, lo:] = error(int(r))
        t[r] = T
    if rec.err is not None:
        rec.err[:] = err
    rec.next_idx = len(ckpt)
    tick(T)
