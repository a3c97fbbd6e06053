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

import numpy as np

from privbandits.algorithms.base import (
    Algorithm,
    BatchedAlgorithm,
    Curator,
    LocalAlgorithm,
    ShuffleAlgorithm,
)
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.engine.recorder import Progress, Recorder
from privbandits.envs.base import Environment

__all__ = ["drive_reference"]


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


def _start_batches(alg: Algorithm, X: np.ndarray) -> None:
    """Batched elimination on a fixed action set: install the engine on the public catalogue
    (round 1's contexts) before the first user arrives, as the aggregate driver does."""
    if isinstance(alg, BatchedAlgorithm):
        alg.start_batches(X)


def _drive_curator(alg: Curator, env: Environment, T: int, rec: Recorder, tick: Progress) -> None:
    for t in range(T):
        X = env.next_round()
        a = alg.select(t, X)
        r, reg = env.step(a)
        alg.update(t, X, a, r)
        rec.record(t, reg, r)
        tick(t + 1)


def _drive_local(alg: LocalAlgorithm, env: Environment, T: int, rec: Recorder, tick: Progress) -> None:
    client, server = alg.client, alg.server
    rng_client, rng_policy = alg.streams.client, alg.streams.policy
    for t in range(T):
        X = env.next_round()
        if t == 0:
            _start_batches(alg, X)
        public = _check_public(server.public_state())
        a = client.choose(t, public, X, rng_policy)
        r, reg = env.step(a)
        msg = _check_message(client.randomize(t, public, X, a, r, rng_client))
        server.receive(t, msg)
        rec.record(t, reg, r)
        tick(t + 1)


def _drive_shuffle(alg: ShuffleAlgorithm, env: Environment, T: int, rec: Recorder, tick: Progress) -> None:
    client, server, shuffler = alg.client, alg.server, alg.shuffler
    rng_client, rng_policy = alg.streams.client, alg.streams.policy
    for t in range(T):
        X = env.next_round()
        if t == 0:
            _start_batches(alg, X)
            public = _check_public(server.public_state())
        mine = _check_public(shuffler.assign(t, public))
        a = client.choose(t, mine, X, rng_policy)
        r, reg = env.step(a)
        shuffler.collect(t, _check_message(client.randomize(t, mine, X, a, r, rng_client)))
        if alg.batch_ends(t) or t == T - 1:
            server.receive_batch(t, shuffler.release(t))
            while server.wants_round():  # multi-round protocol over the same batch of users
                for msg in client.respond(t, _check_public(server.public_state()), rng_client):
                    shuffler.collect(t, _check_message(msg))
                server.receive_batch(t, shuffler.release(t))
            public = _check_public(server.public_state())
        rec.record(t, reg, r)
        tick(t + 1)


def drive_reference(alg: Algorithm, env: Environment, T: int, rec: Recorder, tick: Progress) -> None:
    """Run ``T`` rounds of ``alg`` on ``env`` through its roles, recording into ``rec``."""
    if isinstance(alg, ShuffleAlgorithm):
        _drive_shuffle(alg, env, T, rec, tick)
    elif isinstance(alg, LocalAlgorithm):
        _drive_local(alg, env, T, rec, tick)
    elif isinstance(alg, Curator):
        _drive_curator(alg, env, T, rec, tick)
    else:
        raise ValidationError(f"{type(alg).__name__} is not a Curator, LocalAlgorithm or ShuffleAlgorithm")
