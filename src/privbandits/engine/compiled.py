"""The compiled driver: one compiled loop over rounds and replications (the documentation's Concepts: engines).

It calls the *same* compiled steps as the reference driver (:mod:`privbandits.algorithms.kernel`),
through the loops of :mod:`privbandits.algorithms._shared.loops`, on environment chunks (:meth:`Environment.next_chunk`),
and stops the loop at every checkpoint to record regret and estimation error, so memory does not
grow with the horizon.  Random streams are consumed in the reference driver's order (round-major,
replication-minor, one stream per role): the same seed gives the same trajectory.

In the local model the users' own data of a chunk is checked before the loop (finite, contexts
within the declared bound), as the reference driver's client does every round.
"""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.base import Algorithm
from privbandits.algorithms.kernel import CuratorKernel, LocalKernel, ProposalKernel
from privbandits.core.errors import ValidationError
from privbandits.engine.batches import drive_batches, supports_batches
from privbandits.engine.recorder import Progress, Recorder
from privbandits.envs.base import Chunk, Environment
from privbandits.privacy.inputs import check_client_inputs

__all__ = [
    "ChunkRunner",
    "chunk_arrays",
    "compiled_kernel",
    "drive_compiled",
    "supports_compiled",
]


def compiled_kernel(alg: Algorithm) -> CuratorKernel | LocalKernel | ProposalKernel | None:
    """The compiled steps the compiled driver runs: the algorithm's kernel (shared with its roles),
    else a kernel it keeps for the compiled driver only (``compiled_kernel``: numpy roles for the
    reference driver, the same round compiled, tested equal), else None."""
    k = getattr(alg, "kernel", None)
    if k is None:
        k = getattr(alg, "compiled_kernel", None)
    return k if isinstance(k, (CuratorKernel, LocalKernel, ProposalKernel)) else None


def supports_compiled(alg: Algorithm) -> bool:
    """Whether ``alg`` (after reset) has a compiled kernel the compiled driver can run (a compiled
    round on a loss environment included: :mod:`privbandits.engine.convex`), or is a shuffle
    algorithm whose client serves a batch's users together (:mod:`privbandits.engine.batches`)."""
    from privbandits.engine.convex import convex_kernel

    return (
        compiled_kernel(alg) is not None or convex_kernel(alg) is not None or supports_batches(alg)
    )


def drive_compiled(alg: Algorithm, env: Environment, T: int, rec: Recorder, tick: Progress) -> None:
    """Run ``T`` rounds of ``alg`` (which has a kernel) on ``env`` in compiled loops (a shuffle
    algorithm with a batch client: :func:`privbandits.engine.batches.drive_batches`)."""
    if supports_batches(alg):
        drive_batches(alg, env, T, rec, tick)
        return
    from privbandits.engine.convex import drive_convex_compiled, is_convex_env

    if is_convex_env(env):
        drive_convex_compiled(alg, env, T, rec, tick)
        return
    run = ChunkRunner(alg)
    t = 0
    while t < T:
        ch = env.next_chunk()
        B = min(ch.B, T - t)
        arrays = chunk_arrays(ch)
        if run.local:
            check_client_inputs(arrays[0][:B], arrays[2][:B], run.bound)
        run(arrays, B, t, rec)
        env.t = t + B
        t += B
        tick(t)


def chunk_arrays(ch: Chunk) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The contexts, means, rewards and best means of a chunk as contiguous float arrays."""
    return (
        np.ascontiguousarray(ch.X, dtype=float),
        np.ascontiguousarray(ch.means, dtype=float),
        np.ascontiguousarray(ch.rewards, dtype=float),
        np.ascontiguousarray(ch.best, dtype=float),
    )


class ChunkRunner:
    """Advances one algorithm's compiled kernel over the rounds of environment chunks, stopping at
    every checkpoint of its recorder (the loop body of :func:`drive_compiled`, shared with the
    fused driver :mod:`privbandits.engine.fused`).

    The users' own data of a chunk must be checked by the caller first (``local``: the
    :func:`~privbandits.privacy.inputs.check_client_inputs` of the device, with bound ``bound``).
    """

    def __init__(self, alg: Algorithm) -> None:
        k = compiled_kernel(alg)
        if k is None:
            raise ValidationError(
                f"algorithm {alg.name!r} has no compiled kernel; use engine='reference'"
            )
        self.k = k
        self.streams = alg.streams  # type: ignore[attr-defined]
        self.local = isinstance(k, (LocalKernel, ProposalKernel))
        self.msg = None if isinstance(k, CuratorKernel) else np.empty(k.message.size)
        self.bound = float(alg.spec.context_bound)  # type: ignore[attr-defined]
        self.loop = k.chunk_loop

    def __call__(
        self,
        arrays: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        B: int,
        t: int,
        rec: Recorder,
    ) -> None:
        """Rounds ``t .. t + B - 1`` (the first ``B`` rounds of the chunk ``arrays``)."""
        X, means, rewards, best = arrays
        k, streams, run = self.k, self.streams, self.loop
        start = 0
        while start < B:
            nxt = rec.next_t
            stop = B if nxt < 0 else min(B, nxt - t)
            rounds = (X, means, rewards, best, start, stop, t, streams.policy)
            totals = (rec.cum_regret, rec.cum_reward)
            if isinstance(k, LocalKernel):
                run(k.params, k.public, k.server, *rounds, streams.client, self.msg, *totals)
            elif isinstance(k, ProposalKernel):
                base = (k.params, k.base.params, k.base.state, k.catalogue)
                run(*base, *rounds, streams.client, streams.server, self.msg, *totals)
            else:
                run(k.params, k.state, *rounds, streams.server, *totals)
            if t + stop == rec.next_t:
                rec.snapshot()
            start = stop
