"""Roles an algorithm is written as, one per trust model (DESIGN section 2).

=================  ===============================================================================
class              what the simulation loop does with it
=================  ===============================================================================
``Curator``        non-private, central and joint DP: a trusted party sees raw ``(x, a, r)``;
                   :meth:`Curator.select` and :meth:`Curator.update` run every round.
``LocalAlgorithm`` local DP: a :class:`Client` (on the user's device) chooses an arm from the
                   :class:`PublicState` and its own context, then randomizes its own data; the
                   :class:`Server` only receives :class:`PrivatizedMessage` objects.
``ShuffleAlgorithm`` shuffle DP: as local, but messages are collected over a batch, permuted
                   uniformly by the shuffler, and the server receives a :class:`ShuffledBatch`.
=================  ===============================================================================

All arrays carry the replication axis ``R`` first: one call advances all replications at once.
Contexts are ``(R, K, d)`` in the single-parameter setting (one feature vector per arm) and
``(R, d)`` in the multi-parameter setting (one shared context, one parameter per arm).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState, ShuffledBatch
from privbandits.core.rng import Streams
from privbandits.core.spec import SETTINGS, EnvSpec
from privbandits.core.validation import check_int
from privbandits.privacy.guarantee import NON_PRIVATE, PrivacyGuarantee

__all__ = [
    "EnvSpec",
    "Algorithm",
    "Curator",
    "Client",
    "Server",
    "LocalAlgorithm",
    "ShuffleAlgorithm",
    "BatchedAlgorithm",
    "argmax_random_ties",
    "SETTINGS",
]

def argmax_random_ties(scores: np.ndarray, rng: np.random.Generator, *, atol: float = 0.0) -> np.ndarray:
    """Row-wise argmax of ``scores`` (R, K) with ties (within ``atol``) broken uniformly at random.

    When no row has a tie (the common case with continuous contexts) this is one argmax and
    consumes no randomness; otherwise every row draws uniform keys over its tied arms.
    """
    tied = scores >= np.maximum.reduce(scores, axis=1, keepdims=True) - atol
    if np.count_nonzero(tied) == scores.shape[0]:
        return tied.argmax(axis=1)
    keys = rng.random(scores.shape) * tied
    return np.argmax(keys, axis=1)


class Algorithm(ABC):
    """Base class of every bandit algorithm.

    Subclasses are cheap to construct (they only store and validate hyper-parameters); all state
    is created in :meth:`reset`.  Class attributes describe the algorithm for the registry and the
    README table.
    """

    #: Registry name, e.g. ``"linucb"``.
    name: ClassVar[str] = ""
    #: One of :data:`privbandits.privacy.guarantee.TRUST_MODELS`.
    trust_model: ClassVar[str] = "none"
    #: Settings the algorithm supports.
    settings: ClassVar[tuple[str, ...]] = ("single",)
    #: Link names the algorithm supports (``("*",)`` = any).
    links: ClassVar[tuple[str, ...]] = ("identity",)
    #: Paper citation shown in tables, e.g. ``"Abbasi-Yadkori et al. 2011"``.
    paper: ClassVar[str] = ""

    #: Calibration preset of DESIGN section 2 ("strict", "paper", "authors_code"); algorithms
    #: without presets report "none".
    preset: str = "none"

    def __init__(self, **params: Any) -> None:
        self._params = dict(params)

    # -- description -------------------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        """Hyper-parameters as given to the constructor (JSON-serializable)."""
        return dict(self._params)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
        return f"{type(self).__name__}({args})"

    # -- lifecycle ---------------------------------------------------------------------------
    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        """Start a fresh run of ``replications`` independent copies on problem ``spec``."""
        if spec.setting not in self.settings:
            raise ValidationError(
                f"algorithm {self.name!r} supports settings {self.settings}, got setting={spec.setting!r}"
            )
        if "*" not in self.links and spec.link.name not in self.links:
            raise ValidationError(
                f"algorithm {self.name!r} supports links {self.links}, got link={spec.link.name!r}"
            )
        self.spec = spec
        self.R = check_int("replications", replications, 1)
        self.streams = streams

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """The privacy guarantee of the run, from the accountant (non-private by default)."""
        return NON_PRIVATE

    def estimate(self) -> np.ndarray | None:
        """Current parameter estimate: ``(R, d)`` (single) or ``(R, K, d)`` (multi), or None."""
        return None


class Curator(Algorithm):
    """A trusted party that sees raw data: non-private, central-DP and joint-DP algorithms."""

    @abstractmethod
    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        """Choose arms (R,) for round ``t`` (0-based) given contexts."""

    @abstractmethod
    def update(self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        """Incorporate the round's feedback."""


class Client(ABC):
    """User-side code of a local or shuffle algorithm (runs on the device; R users at once).

    A client sees only the public state and its own context and reward.
    """

    @abstractmethod
    def choose(self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
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

    def estimate(self) -> np.ndarray | None:
        """Current parameter estimate or None."""
        return None


class LocalAlgorithm(Algorithm):
    """An algorithm in the local trust model: a :class:`Client` plus a :class:`Server`.

    Subclasses build ``self.client`` and ``self.server`` in :meth:`reset`.
    """

    trust_model: ClassVar[str] = "local"
    client: Client
    server: Server

    def estimate(self) -> np.ndarray | None:
        return self.server.estimate()


class ShuffleAlgorithm(LocalAlgorithm):
    """An algorithm in the shuffle model: users' messages reach the server only via the shuffler."""

    trust_model: ClassVar[str] = "shuffle"

    @abstractmethod
    def batch_ends(self, t: int) -> bool:
        """True when round ``t`` (0-based) closes a batch, so the shuffler releases it."""


@runtime_checkable
class BatchedAlgorithm(Protocol):
    """Batched exploration on a fixed action set whose releases can be simulated in aggregate.

    The exact aggregate driver of :func:`privbandits.simulate.simulate` (``fast=True``) runs such
    an algorithm batch by batch instead of round by round (DESIGN section 3): within a batch each
    scheduled action is pulled a public number of times in a uniformly random order, so the
    per-action reward sums, the released (noisy) sums and the regret at any round are drawn from
    their exact distributions.  The per-round / per-user path (``fast=False``) stays the
    reference.  Members (after :meth:`Algorithm.reset`):

    ``make_core(A)``
        A fresh role-free elimination engine on the action sets ``A`` (R, K, d) with
        ``plan_batch(rows)`` -> plan (``rows``, ``counts`` (n, K), ``n_total``),
        ``view(rows)``, ``finish_batch(plan, r_hat)``, ``committed`` (R,), ``theta`` (R, d),
        ``exploring()`` (e.g. :class:`~privbandits.algorithms.phased_elimination.HannaElimination`).
    ``core``
        The engine of the current run; the driver installs the one it creates here, so
        ``estimate()`` and batch logs read it.
    ``collector``
        The release of a completed batch: ``collect(plan, sums, rng)`` maps the per-action sums
        of the (clipped) rewards to what the algorithm releases, *exactly in distribution* as the
        per-user path would (e.g. plus one ``Lap`` draw per action in the central model, plus
        the sum of the users' local noise in the local model); its optional attribute ``clip``
        (``(lo, hi)`` or None) is the clipping its ``prepare`` applies to each reward, and
        ``prepare`` must be the identity or that clipping.

    Optional class attributes: ``aggregate_streams = (order, noise)`` names the
    :class:`~privbandits.core.rng.Streams` roles of the within-batch order and of the release
    noise (default ``("policy", "server")``); ``aggregate_exact = False`` opts out.
    """

    core: Any
    collector: Any

    def make_core(self, A: np.ndarray) -> Any:
        """A fresh elimination engine on the action sets ``A`` (R, K, d)."""
        ...

