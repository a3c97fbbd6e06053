"""The compiled driver: one compiled loop over rounds and replications (the documentation's Concepts: engines).

It calls the *same* compiled steps as the reference driver (:mod:`privbandits.algorithms.kernel`),
through the loops of :mod:`privbandits.algorithms.loops`, on environment chunks (:meth:`Environment.next_chunk`),
and stops the loop at every checkpoint to record regret and estimation error, so memory does not
grow with the horizon.  Random streams are consumed in the reference driver's order (round-major,
replication-minor, one stream per role): the same seed gives the same trajectory.

In the local model the users' own data of a chunk is checked before the loop (finite, contexts
within the declared bound), as the reference driver's client does every round.
"""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.base import Algorithm
from privbandits.algorithms.kernel import CuratorKernel, LocalKernel
from privbandits.core.errors import ValidationError
from privbandits.engine.batches import drive_batches, supports_batches
from privbandits.engine.recorder import Progress, Recorder
from privbandits.envs.base import Environment
from privbandits.privacy.inputs import check_client_inputs

__all__ = ["drive_compiled", "supports_compiled"]


def supports_compiled(alg: Algorithm) -> bool:
    """Whether ``alg`` (after reset) has a compiled kernel the compiled driver can run, or is a
    shuffle algorithm whose client serves a batch's users together (:mod:`privbandits.engine.batches`)."""
    k = getattr(alg, "kernel", None)
    return isinstance(k, (CuratorKernel, LocalKernel)) or supports_batches(alg)


def drive_compiled(alg: Algorithm, env: Environment, T: int, rec: Recorder, tick: Progress) -> None:
    """Run ``T`` rounds of ``alg`` (which has a kernel) on ``env`` in compiled loops (a shuffle
    algorithm with a batch client: :func:`privbandits.engine.batches.drive_batches`)."""
    if supports_batches(alg):
        drive_batches(alg, env, T, rec, tick)
        return
    k = getattr(alg, "kernel", None)
    if not isinstance(k, (CuratorKernel, LocalKernel)):
        raise ValidationError(
            f"algorithm {alg.name!r} has no compiled kernel; use engine='reference'"
        )
    streams = alg.streams  # type: ignore[attr-defined]
    local = isinstance(k, LocalKernel)
    msg = np.empty(k.message.size) if isinstance(k, LocalKernel) else None
    bound = alg.spec.context_bound  # type: ignore[attr-defined]
    run = k.loops.run
    t = 0
    while t < T:
        ch = env.next_chunk()
        B = min(ch.B, T - t)
        X = np.ascontiguousarray(ch.X, dtype=float)
        means = np.ascontiguousarray(ch.means, dtype=float)
        rewards = np.ascontiguousarray(ch.rewards, dtype=float)
        best = np.ascontiguousarray(ch.best, dtype=float)
        if local:
            check_client_inputs(X[:B], rewards[:B], bound)
        start = 0
        while start < B:
            nxt = rec.next_t
            stop = B if nxt < 0 else min(B, nxt - t)
            if isinstance(k, LocalKernel):
                run(
                    k.params,
                    k.public,
                    k.server,
                    X,
                    means,
                    rewards,
                    best,
                    start,
                    stop,
                    t,
                    streams.policy,
                    streams.client,
                    msg,
                    rec.cum_regret,
                    rec.cum_reward,
                )
            else:
                run(
                    k.params,
                    k.state,
                    X,
                    means,
                    rewards,
                    best,
                    start,
                    stop,
                    t,
                    streams.policy,
                    streams.server,
                    rec.cum_regret,
                    rec.cum_reward,
                )
            if t + stop == rec.next_t:
                rec.snapshot()
            start = stop
        env.t = t + B
        t += B
        tick(t)
