"""The one round protocol of the local and shuffle models (the documentation's Concepts: trust models).

Every place a round runs -- the reference driver, the aggregate driver, the deployment service's
model, the device SDK and the auditor -- goes through these functions, so a check added here holds
everywhere:

1. ``start(alg, X)``: before the first user, a batched elimination algorithm installs its engine
   on the public action catalogue;
2. ``broadcast(alg, t)``: the server's public state (a :class:`PublicState`, checked), as the user
   of round ``t`` receives it (through the shuffler's ``assign`` in the shuffle model);
3. ``device_choose`` / ``device_randomize``: on the device, the public state is validated against
   the space the algorithm declares (the server is untrusted), the user's own inputs against the
   problem (shapes, indices, finiteness, norm bound: the memory-safe boundary of the compiled
   steps), then the client chooses and randomizes; the output is checked (arms in range, a
   :class:`PrivatizedMessage` and nothing else);
4. ``deliver(alg, t, msg)`` (local) or ``collect`` then ``close_batch`` (shuffle): the message
   crosses to the server, or to the shuffler, which releases a uniformly permuted batch; while a
   multi-round protocol wants another round the batch's users answer again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from privbandits.algorithms.base import (
    Algorithm,
    BatchedAlgorithm,
    Client,
    LocalAlgorithm,
    ShuffleAlgorithm,
)
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState, ShuffledBatch
from privbandits.core.public_space import dims_of
from privbandits.core.spec import EnvSpec
from privbandits.privacy.inputs import check_device_inputs

__all__ = [
    "broadcast",
    "check_message",
    "check_public",
    "close_batch",
    "deliver",
    "deliver_batch",
    "device_choose",
    "device_public",
    "device_randomize",
    "local_round",
    "start",
]


def check_message(msg: object) -> PrivatizedMessage:
    """Only a :class:`PrivatizedMessage` may leave a device."""
    if not isinstance(msg, PrivatizedMessage):
        raise TrustBoundaryError(
            f"a local randomizer returned {type(msg).__name__}; only PrivatizedMessage may reach the server"
        )
    return msg


def check_public(state: object) -> PublicState:
    """Only a :class:`PublicState` may reach a device."""
    if not isinstance(state, PublicState):
        raise TrustBoundaryError(
            f"the server broadcast {type(state).__name__}; users may only receive PublicState"
        )
    return state


def start(alg: Algorithm, X: np.ndarray) -> Any:
    """Before the first user: a batched elimination algorithm installs its engine on the public
    action catalogue (round 1's contexts) and it is returned (None for other algorithms)."""
    if isinstance(alg, BatchedAlgorithm):
        return alg.start_batches(X)
    return None


def broadcast(alg: LocalAlgorithm, t: int, public: PublicState | None = None) -> PublicState:
    """What the user of round ``t`` receives: the server's public state (or ``public``, the state
    of the open shuffle batch), through the shuffler's ``assign`` in the shuffle model."""
    state = check_public(alg.server.public_state() if public is None else public)
    if isinstance(alg, ShuffleAlgorithm):
        state = check_public(alg.shuffler.assign(t, state))
    return state


def device_public(client: Client, spec: EnvSpec, public: object, R: int) -> PublicState:
    """The public state as the device accepts it: checked against the client's declared space."""
    state = check_public(public)
    space = client.public_space()
    return state if space is None else space.validate(state, dims_of(spec, R))


def device_choose(
    client: Client,
    spec: EnvSpec,
    t: int,
    public: object,
    contexts: object,
    rng: np.random.Generator,
) -> np.ndarray:
    """Arms ``(R,)`` chosen on the device from a validated public state and the user's own contexts."""
    X, _, _ = check_device_inputs(spec, contexts, bound=False)
    state = device_public(client, spec, public, X.shape[0])
    a = np.asarray(client.choose(t, state, X, rng))
    if (
        a.shape != (X.shape[0],)
        or a.dtype.kind not in "iu"
        or (a.size and (a.min() < 0 or a.max() >= spec.K))
    ):
        raise ValidationError(
            f"{type(client).__name__}.choose returned {a!r}; expected {X.shape[0]} arm "
            f"indices in [0, {spec.K - 1}]"
        )
    return a.astype(np.int64, copy=False)


def device_randomize(
    client: Client,
    spec: EnvSpec,
    t: int,
    public: object,
    contexts: object,
    actions: object,
    rewards: object,
    rng: np.random.Generator,
) -> PrivatizedMessage:
    """The user's privatized message, from validated inputs and a validated public state."""
    X, a, y = check_device_inputs(spec, contexts, actions, rewards)
    assert a is not None and y is not None  # both were given
    state = device_public(client, spec, public, X.shape[0])
    return check_message(client.randomize(t, state, X, a, y, rng))


def deliver(alg: LocalAlgorithm, t: int, msg: object) -> None:
    """Local model: the message crosses to the server."""
    alg.server.receive(t, check_message(msg))


def deliver_batch(alg: ShuffleAlgorithm, t: int, batch: object) -> None:
    """Shuffle model: a batch the shuffler released crosses to the analyzer (a deployment's
    shuffler is another process; the simulation's goes through :func:`close_batch`)."""
    if not isinstance(batch, ShuffledBatch):
        raise TrustBoundaryError(
            f"the analyzer received {type(batch).__name__}; only a ShuffledBatch may reach it"
        )
    alg.server.receive_batch(t, batch)


def close_batch(alg: ShuffleAlgorithm, t: int, rng_client: np.random.Generator) -> None:
    """Shuffle model: the shuffler releases the open batch; while a multi-round protocol wants
    another round, the batch's users answer the new public state through the shuffler again."""
    alg.server.receive_batch(t, alg.shuffler.release(t))
    while alg.server.wants_round():
        for msg in alg.client.respond(t, check_public(alg.server.public_state()), rng_client):
            alg.shuffler.collect(t, check_message(msg))
        alg.server.receive_batch(t, alg.shuffler.release(t))


def local_round(
    alg: LocalAlgorithm,
    t: int,
    public: PublicState,
    X: np.ndarray,
    step: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One round for the users of round ``t`` on their devices: choose, observe, randomize, send.

    ``step(actions) -> (rewards, regret)`` is the world's answer (the environment in a simulation).
    The message goes to the server (local model) or to the shuffler (shuffle model).  Returns
    ``(actions, rewards, regret)``.
    """
    streams = alg.streams
    a = device_choose(alg.client, alg.spec, t, public, X, streams.policy)
    r, reg = step(a)
    msg = device_randomize(alg.client, alg.spec, t, public, X, a, r, streams.client)
    if isinstance(alg, ShuffleAlgorithm):
        alg.shuffler.collect(t, msg)
    else:
        deliver(alg, t, msg)
    return a, r, reg
