"""The batch path of shuffle algorithms whose client serves a batch's users together.

Shuffle algorithms whose server acts only on batch releases (a :class:`BatchClient`, e.g.
ShuffleGLM of Sarmasarkar 2026, Algorithm 1) publish one policy per batch, so the users of a
batch can choose and randomize in blocks of rounds (:meth:`BatchClient.choose_batch`,
:meth:`BatchClient.randomize_batch`) instead of one Python step per round.  The roles and the
trust boundary are those of the reference driver: the users' messages go one per user through
the shuffler, which releases the batch to the server; multi-round protocols
(``Server.wants_round`` / ``Client.respond``) run as in the reference driver.  Each stream is
consumed in the reference driver's order (round-major, replication-minor), so the same seed gives
the same trajectory (to rounding; tested against the reference driver).
"""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.base import Algorithm, BatchClient, ShuffleAlgorithm
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.engine import protocol
from privbandits.engine.recorder import Progress, Recorder
from privbandits.envs.base import Chunk, Environment

__all__ = ["BLOCK_ROUNDS", "drive_batches", "supports_batches"]

#: Largest block of rounds handled at once (bounds the memory of the block's contexts).
BLOCK_ROUNDS = 4096


def supports_batches(alg: Algorithm) -> bool:
    """Whether ``alg`` (after reset) is a shuffle algorithm whose client serves a batch's users together."""
    return isinstance(alg, ShuffleAlgorithm) and isinstance(
        getattr(alg, "client", None), BatchClient
    )


class _Rounds:
    """The environment's rounds in order, served in blocks that never cross a chunk."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.chunk: Chunk | None = None
        self.pos = 0

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Contexts, means, rewards and best means of the next ``<= n`` rounds."""
        if self.chunk is None or self.pos >= self.chunk.B:
            self.chunk, self.pos = self.env.next_chunk(), 0
        ch, i = self.chunk, self.pos
        j = min(ch.B, i + n)
        self.pos = j
        return ch.X[i:j], ch.means[i:j], ch.rewards[i:j], ch.best[i:j]


def _batch_end(alg: ShuffleAlgorithm, t: int, T: int) -> int:
    """Last round (0-based) of the batch that contains round ``t``."""
    s = t
    while s < T - 1 and not alg.batch_ends(s):
        s += 1
    return s


def drive_batches(alg: Algorithm, env: Environment, T: int, rec: Recorder, tick: Progress) -> None:
    """Run ``T`` rounds of ``alg`` (a shuffle algorithm with a :class:`BatchClient`) on ``env``."""
    if not isinstance(alg, ShuffleAlgorithm) or not isinstance(alg.client, BatchClient):
        raise ValidationError(f"algorithm {alg.name!r} has no batch client; use engine='reference'")
    client, server, shuffler = alg.client, alg.server, alg.shuffler
    rng_client, rng_policy = alg.streams.client, alg.streams.policy
    rounds = _Rounds(env)
    public = protocol.check_public(server.public_state())
    t = 0
    while t < T:
        end = _batch_end(alg, t, T)
        while t <= end:
            X, means, rewards, best = rounds.take(min(BLOCK_ROUNDS, end + 1 - t))
            n, a_R = X.shape[0], X.shape[1]
            mine = protocol.device_public(client, alg.spec, protocol.broadcast(alg, t, public), a_R)
            a = client.choose_batch(t, mine, X, rng_policy)
            rows, reps = np.arange(n)[:, None], np.arange(a.shape[1])[None, :]
            r = rewards[rows, reps, a]
            reg = best - means[rows, reps, a]
            msgs = client.randomize_batch(t, mine, X, a, r, rng_client)
            if len(msgs) != n:
                raise TrustBoundaryError(
                    f"the batch client returned {len(msgs)} messages for {n} users"
                )
            for i, msg in enumerate(msgs):
                shuffler.collect(t + i, protocol.check_message(msg))
            for i in range(n):
                if (
                    t + i == end
                ):  # the batch closes: the server updates before the round is recorded
                    protocol.close_batch(alg, end, rng_client)
                    public = protocol.check_public(server.public_state())
                rec.record(t + i, reg[i], r[i])
                tick(t + i + 1)
            t += n
    env.t = T
