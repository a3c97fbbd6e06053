"""The reference driver: one round at a time through the role objects (the documentation's Concepts: trust models).

* :class:`~privbandits.algorithms.base.Curator`: ``select`` then ``update`` with raw data.
* :class:`~privbandits.algorithms.base.LocalAlgorithm`: the server publishes a
  :class:`PublicState`; the client chooses and randomizes on the user side; the server receives
  only the :class:`PrivatizedMessage` (checked every round).
* :class:`~privbandits.algorithms.base.ShuffleAlgorithm`: as local, but the shuffler role
  assigns, collects and, when the batch closes, releases a uniformly permuted
  :class:`ShuffledBatch` to the server; while the server wants another round of a multi-round
  protocol (``Server.wants_round``), the batch's users answer the public state
  (``Client.respond``) through the shuffler again.
"""

from __future__ import annotations

from privbandits.algorithms.base import Algorithm, Curator, LocalAlgorithm, ShuffleAlgorithm
from privbandits.core.errors import ValidationError
from privbandits.engine import protocol
from privbandits.engine.recorder import Progress, Recorder
from privbandits.envs.base import Environment

__all__ = ["drive_reference"]


def _drive_curator(alg: Curator, env: Environment, T: int, rec: Recorder, tick: Progress) -> None:
    for t in range(T):
        X = env.next_round()
        a = alg.select(t, X)
        r, reg = env.step(a)
        alg.update(t, X, a, r)
        rec.record(t, reg, r)
        tick(t + 1)


def _drive_local(
    alg: LocalAlgorithm, env: Environment, T: int, rec: Recorder, tick: Progress
) -> None:
    for t in range(T):
        X = env.next_round()
        if t == 0:
            protocol.start(alg, X)
        _, r, reg = protocol.local_round(alg, t, protocol.broadcast(alg, t), X, env.step)
        rec.record(t, reg, r)
        tick(t + 1)


def _drive_shuffle(
    alg: ShuffleAlgorithm, env: Environment, T: int, rec: Recorder, tick: Progress
) -> None:
    public = None
    for t in range(T):
        X = env.next_round()
        if t == 0:
            protocol.start(alg, X)
            public = protocol.check_public(alg.server.public_state())
        _, r, reg = protocol.local_round(alg, t, protocol.broadcast(alg, t, public), X, env.step)
        if alg.batch_ends(t) or t == T - 1:
            protocol.close_batch(alg, t, alg.streams.client)
            public = protocol.check_public(alg.server.public_state())
        rec.record(t, reg, r)
        tick(t + 1)


def drive_reference(
    alg: Algorithm, env: Environment, T: int, rec: Recorder, tick: Progress
) -> None:
    """Run ``T`` rounds of ``alg`` on ``env`` through its roles, recording into ``rec``."""
    if isinstance(alg, ShuffleAlgorithm):
        _drive_shuffle(alg, env, T, rec, tick)
    elif isinstance(alg, LocalAlgorithm):
        _drive_local(alg, env, T, rec, tick)
    elif isinstance(alg, Curator):
        _drive_curator(alg, env, T, rec, tick)
    else:
        raise ValidationError(
            f"{type(alg).__name__} is not a Curator, LocalAlgorithm or ShuffleAlgorithm"
        )
