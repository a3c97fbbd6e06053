"""The roles a local or shuffle algorithm is written as: the user's device (:class:`Client`), the
untrusted :class:`Server` and the :class:`Shuffler` (the documentation's Concepts: trust models).

:mod:`privbandits.algorithms.base` re-exports them beside the algorithm classes; the roles built
from a compiled kernel (:class:`~privbandits.algorithms.kernel.KernelClient`,
:class:`~privbandits.algorithms.kernel.KernelServer`) live in :mod:`privbandits.algorithms.kernel`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from privbandits.core.errors import TrustBoundaryError
from privbandits.core.messages import (
    PrivatizedMessage,
    PublicState,
    ShuffledBatch,
    check_real_arrays,
    shuffle_messages,
)
from privbandits.core.public_space import PublicSpace, dims_of
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_int
from privbandits.privacy.device import DeviceNoise, DeviceSensitivity

__all__ = ["BatchClient", "Client", "Server", "Shuffler"]


class Client(ABC):
    """User-side code of a local or shuffle algorithm (runs on the device; R users at once).

    A client sees only the public state and its own context and reward.  The server that sends the
    public state is untrusted (the documentation's Concepts: trust models, threat model), so a
    client of the library also declares:

    * :meth:`public_space`: every public state it accepts (the round protocol,
      :mod:`privbandits.engine.protocol`, validates what the device reads against it);
    * :meth:`encode`: its pre-noise message, clipped so that its own guarantee holds for every
      public state in that space;
    * :meth:`noise` and :meth:`sensitivity`: the noise :meth:`randomize` adds to the encoded
      message and the accounted bound on the whitened distance of two neighbouring users'
      encoded messages (:mod:`privbandits.privacy.device`).

    The conformance checks (:mod:`privbandits.testing`) check the three against each other and
    against :meth:`randomize` on adversarial public states.
    """

    #: The problem the client was built for (set by the algorithm's reset).
    spec: EnvSpec

    def public_space(self) -> PublicSpace | None:
        """Every public state this device accepts (None: undeclared, only the types are checked)."""
        return None

    def checked_public(self, public: object, R: int) -> PublicState:
        """``public`` validated against :meth:`public_space` for ``R`` users (free when it is the
        :class:`~privbandits.core.public_space.CheckedPublicState` the round protocol validated for the
        same space and dimensions); raises :class:`~privbandits.core.public_space.PublicStateError`."""
        space = self.public_space()
        if space is None:
            if not isinstance(public, PublicState):
                raise TrustBoundaryError(
                    f"a client only receives PublicState, got {type(public).__name__}"
                )
            return public
        return space.validate(public, dims_of(self.spec, R))

    def encode(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
    ) -> np.ndarray:
        """The message before noise ``(R, m)``, fields flattened in the order of the payload,
        after every clip the device applies."""
        raise NotImplementedError(f"{type(self).__name__} does not expose its pre-noise message")

    def noise(
        self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray
    ) -> DeviceNoise:
        """The noise :meth:`randomize` adds to :meth:`encode`, per user and coordinate.

        A client whose noise variance depends on the message may take ``rewards=`` as well (the
        conformance checks pass them when the signature has them).
        """
        raise NotImplementedError(f"{type(self).__name__} does not declare its noise")

    def sensitivity(self) -> DeviceSensitivity:
        """The accounted bound on the whitened distance of two neighbouring users' encodings."""
        raise NotImplementedError(f"{type(self).__name__} does not declare its sensitivity")

    @abstractmethod
    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Choose arms (R,) from the public state and the user's own contexts."""

    @abstractmethod
    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        """Privatize the user's data with the local randomizer; the result is all that is sent."""

    def respond(
        self, t: int, public: PublicState, rng: np.random.Generator
    ) -> list[PrivatizedMessage]:
        """Multi-round shuffle protocols: the users of the batch just released answer ``public``.

        Called by the driver while :meth:`Server.wants_round` is true; the users' own data stay on
        their devices (the client), one :class:`PrivatizedMessage` per user is returned.
        """
        raise NotImplementedError(f"{type(self).__name__} takes part in no multi-round protocol")


class BatchClient(Client):
    """A shuffle client whose users of one batch can be served together (the compiled shuffle path).

    Within a batch the public state does not change, so the choices and the local randomizers of
    the users of rounds ``t .. t + n - 1`` can be computed at once.  Both methods must consume their
    streams exactly as ``n`` calls of :meth:`Client.choose` / :meth:`Client.randomize` would, so the
    batch path (:mod:`privbandits.engine.batches`) gives the reference driver's trajectory.
    """

    @abstractmethod
    def choose_batch(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Arms ``(n, R)`` of the users of rounds ``t .. t + n - 1`` (``contexts`` ``(n, R, K, d)``)."""

    @abstractmethod
    def randomize_batch(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> list[PrivatizedMessage]:
        """One privatized message per user of rounds ``t .. t + n - 1``, in round order."""


class Server(ABC):
    """Server-side code of a local or shuffle algorithm: sees privatized messages only."""

    @abstractmethod
    def public_state(self) -> PublicState:
        """The state broadcast to the next user(s)."""

    def receive(self, t: int, message: PrivatizedMessage) -> None:  # local model
        """Incorporate one round's privatized messages (local model)."""
        raise NotImplementedError

    def receive_batch(self, t: int, batch: ShuffledBatch) -> None:  # shuffle model
        """Incorporate a shuffled batch (shuffle model)."""
        raise NotImplementedError

    def wants_round(self) -> bool:
        """Shuffle model, multi-round protocols: True when the users of the batch just released must
        answer the current public state once more (:meth:`Client.respond`); default False."""
        return False

    def estimate(self) -> np.ndarray | None:
        """Current parameter estimate or None."""
        return None


class Shuffler:
    """The shuffler of the shuffle model: assign, collect, release (the documentation's Concepts: trust models).

    It sits between clients and the server.  ``assign`` may hand each user of a batch its part
    of a public schedule (default: the server's public state unchanged); ``collect`` accepts only
    :class:`PrivatizedMessage` objects; ``release`` forwards the batch to the server as a
    :class:`ShuffledBatch`, uniformly permuted per replication with the shuffler's own stream and
    stripped of anything that links a message to its sender.

    Parameters
    ----------
    rng : Generator
        The shuffler's stream.
    min_batch : int
        Smallest batch the shuffler releases (smaller batches raise).
    """

    def __init__(self, rng: np.random.Generator, min_batch: int = 1) -> None:
        self.rng = rng
        self.min_batch = check_int("min_batch", min_batch, 1)
        self._pending: list[PrivatizedMessage] = []

    def assign(self, t: int, public: PublicState) -> PublicState:
        """What the user of round ``t`` receives (default: the broadcast public state)."""
        return public

    def collect(self, t: int, message: object) -> None:
        """Hold one round's messages until the batch closes."""
        if not isinstance(message, PrivatizedMessage):
            raise TrustBoundaryError(
                f"the shuffler only accepts PrivatizedMessage objects, got {type(message).__name__}"
            )
        check_real_arrays(message.payload, "message")
        if (
            self._pending
        ):  # one batch, one layout: every message has the first one's fields and shapes
            first = self._pending[0]

            def layout(
                m: PrivatizedMessage, k: str
            ) -> tuple[int, ...]:  # "_multi": any message count
                shape = np.shape(m.payload[k])
                return shape[:1] + shape[2:] if k.endswith("_multi") else shape

            if (
                first.mechanism != message.mechanism
                or set(first.payload) != set(message.payload)
                or any(layout(first, k) != layout(message, k) for k in first.payload)
            ):
                raise TrustBoundaryError(
                    "a message of another randomizer or layout than its batch's: "
                    f"{message.mechanism!r} {sorted(message.payload)}"
                )
        self._pending.append(message)

    @property
    def pending(self) -> int:
        """Number of rounds collected in the open batch."""
        return len(self._pending)

    def release(self, t: int) -> ShuffledBatch:
        """The open batch, uniformly permuted per replication; empties the buffer."""
        if len(self._pending) < self.min_batch:
            raise TrustBoundaryError(
                f"the shuffler holds {len(self._pending)} messages, fewer than min_batch={self.min_batch}"
            )
        batch = shuffle_messages(self._pending, self.rng)
        self._pending = []
        return batch
