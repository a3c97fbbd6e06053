"""Compiled per-round steps: the one implementation of each algorithm's math (the documentation's Concepts: engines).

An algorithm with a compiled kernel writes its per-round steps once, as numba functions over
per-replication state arrays, and hands them to the engine in a :class:`CuratorKernel` (trusted
curator: non-private, central, joint DP) or a :class:`LocalKernel` (local DP: client steps and
server step separated).  Two drivers call the *same* functions:

* the reference driver (:mod:`privbandits.engine.reference`) advances one round at a time through
  the role objects, building :class:`~privbandits.core.messages.PublicState` and
  :class:`~privbandits.core.messages.PrivatizedMessage` and checking the trust boundary;
* the compiled driver (:mod:`privbandits.engine.compiled`) runs the same steps in one compiled loop
  over rounds and replications.

The loops around the steps are generated once per algorithm (:mod:`privbandits.algorithms._shared.loops`).
Both consume every random stream in the same order (round-major, replication-minor, one stream per
role), so the same seed gives the same trajectory under both.

Step signatures (``r`` replication index, ``t`` 0-based round, ``X`` the round's contexts of
replication ``r``: ``(K, d)`` single-parameter or ``(d,)`` multi-parameter):

=====================  ==========================================================================
curator ``select``     ``(params, state, r, t, X, rng_policy) -> int``
curator ``update``     ``(params, state, r, t, X, a, y, rng_server) -> None`` (mutates ``state``)
local ``choose``       ``(params, public, r, t, X, rng_policy) -> int`` (user side)
local ``randomize``    ``(params, public, r, t, X, a, y, rng_client, out) -> None``: writes the
                       message (1-D float array of ``message.size``) into ``out`` (user side)
local ``update``       ``(params, public, server, r, t, msg) -> None`` (server side; sees the
                       message only)
local ``encode``       ``(params, public, r, t, X, a, y, out) -> None`` (optional, user side): the
                       message before noise, after every clip the device applies; ``randomize``
                       is ``encode`` followed by the noise of :attr:`LocalKernel.noise`
=====================  ==========================================================================

``params`` is a tuple of numbers (the resolved calibration), ``state``, ``public`` and ``server``
are tuples of arrays with the replication axis first, mutated in place only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numba as nb
import numpy as np

from privbandits.algorithms.roles import Client, Server
from privbandits.core.errors import TrustBoundaryError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.public_space import PublicSpace, dims_of
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_int
from privbandits.privacy.device import DeviceNoise, DeviceSensitivity
from privbandits.privacy.inputs import check_device_inputs

__all__ = [
    "ESTIMATE_BOUND",
    "CuratorKernel",
    "DeviceNoiseFn",
    "KernelClient",
    "KernelServer",
    "LocalKernel",
    "MessageLayout",
    "ProposalKernel",
    "argmax_ties",
    "mirrored_scale",
    "pinned",
    "tally_max",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def pinned(fn: _F) -> _F:
    """``fn`` compiled and cached with numba's runtime pinned on (``_nrt=True``): a rarely taken
    branch of an allocation-free step (:attr:`LocalKernel.allocates`) that needs numpy's
    allocating routines.  numba keeps a flag set on the function, so it compiles with the runtime
    even when the borrowed loop calls it; it frees what it allocates and must return no array."""
    return nb.njit(cache=True, _nrt=True)(fn)  # type: ignore[call-overload,no-any-return]


#: Largest norm of an estimate a compiled local server publishes and its devices accept: a bound
#: far above any estimate an honest run reaches, which keeps every product a device forms with it
#: (``x^T theta`` for ``||x|| <= C_B``) finite.  Servers project onto it (post-processing).
ESTIMATE_BOUND = 1e100

#: ``noise(t, actions, encoded) -> DeviceNoise``: the noise a kernel's ``randomize`` adds to its
#: ``encode`` for the users of round ``t`` with arms ``actions`` (R,); ``encoded`` (R, m) is the
#: encoded message when the caller knows the users' rewards (a randomizer whose variance depends
#: on the message, such as the l2-ball, needs it), else None.
DeviceNoiseFn = Callable[[int, np.ndarray, np.ndarray | None], DeviceNoise]


def mirrored_scale(n: int, unit: float, norm: str) -> np.ndarray:
    """Whitening scale of a symmetric ``n x n`` message field (row-major, ``n * n`` entries) whose
    noise is drawn on and above the diagonal and mirrored below it.

    The accountant measures such a field on its upper triangle (diagonal included), where the
    noise is independent with scale ``unit``.  The flattened message repeats every off-diagonal
    entry, so each of the two copies gets the scale ``2^(1/p) unit`` (``sqrt(2) unit`` for the l2
    norm, ``2 unit`` for l1, ``unit`` for linf): the whitened distance of two symmetric encodings
    then equals the accountant's, and :func:`~privbandits.privacy.device.whitened_distance` needs
    no knowledge of the symmetry.  The per-coordinate *variance* of the noise stays ``unit^2``
    (Gaussian) on every entry.
    """
    factor = {"l2": np.sqrt(2.0), "l1": 2.0, "linf": 1.0}[norm]
    out = np.full((n, n), unit * factor)
    np.fill_diagonal(out, unit)
    return out.reshape(-1)


@dataclass(frozen=True)
class MessageLayout:
    """Named fields of a flat message vector: ``fields = ((name, shape), ...)`` in order.

    The compiled driver passes messages as flat float vectors; the reference driver views them as
    a :class:`~privbandits.core.messages.PrivatizedMessage` with these named fields.
    """

    mechanism: str
    fields: tuple[tuple[str, tuple[int, ...]], ...]

    @property
    def size(self) -> int:
        """Length of the flat message vector."""
        return int(sum(int(np.prod(s, dtype=np.int64)) for _, s in self.fields))

    def split(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """Views ``(R,) + shape`` of each field of flat messages ``(R, size)``."""
        out, pos = {}, 0
        for name, shape in self.fields:
            n = int(np.prod(shape, dtype=np.int64))
            out[name] = flat[:, pos : pos + n].reshape((flat.shape[0],) + tuple(shape))
            pos += n
        return out

    def join(self, payload: Any) -> np.ndarray:
        """Flat messages ``(R, size)`` from a payload mapping (inverse of :meth:`split`)."""
        parts = [
            np.asarray(payload[name], dtype=float).reshape(np.shape(payload[name])[0], -1)
            for name, _ in self.fields
        ]
        return np.ascontiguousarray(np.concatenate(parts, axis=1))


class _ChunkLoop:
    """The compiled driver's chunk loop of a kernel (:mod:`privbandits.algorithms._shared.loops`)."""

    allocates: bool

    @property
    def loops(self) -> Any:  # pragma: no cover - every kernel class defines it
        """The round loops around the steps."""
        raise NotImplementedError

    @property
    def chunk_loop(self) -> Any:
        """``loops.run_borrowed`` (no reference counting) when the steps allocate no arrays
        (``allocates = False``), else ``loops.run``."""
        loops = self.loops
        return loops.run if self.allocates else loops.run_borrowed


@dataclass
class CuratorKernel(_ChunkLoop):
    """Compiled steps and state of a trusted-curator algorithm (see module docstring)."""

    select: Any
    update: Any
    params: tuple[Any, ...]
    state: tuple[np.ndarray, ...]
    estimate: Callable[[], np.ndarray | None] = field(default=lambda: None)
    #: Whether the steps allocate arrays (False: the compiled driver runs them without numba's
    #: runtime, :attr:`chunk_loop`; allocating branches pinned to it, returning no array, are
    #: allowed: :mod:`privbandits.algorithms._shared.loops`).
    allocates: bool = True

    @property
    def loops(self) -> Any:
        """The round loops around the steps (:func:`privbandits.algorithms._shared.loops.curator_loops`)."""
        from privbandits.algorithms._shared.loops import curator_loops

        return curator_loops(self.select, self.update)


@dataclass
class LocalKernel(_ChunkLoop):
    """Compiled user-side and server-side steps of a local-DP algorithm.

    ``public`` holds what the server broadcasts (named by ``public_names``), ``server`` the
    server's own state; ``message`` names the fields of the flat message vector.
    """

    choose: Any
    randomize: Any
    update: Any
    params: tuple[Any, ...]
    public: tuple[np.ndarray, ...]
    server: tuple[np.ndarray, ...]
    public_names: tuple[str, ...]
    message: MessageLayout
    estimate: Callable[[], np.ndarray | None] = field(default=lambda: None)
    #: Every public state the user-side steps accept (validated before they run).
    public_space: PublicSpace | None = None
    #: The compiled pre-noise step (module docstring; None: the device does not expose it).
    encode: Any = None
    #: The noise ``randomize`` adds to ``encode`` (:data:`DeviceNoiseFn`), from the calibration.
    noise: DeviceNoiseFn | None = None
    #: The accounted bound on the whitened distance of two neighbouring users' encodings.
    sensitivity: DeviceSensitivity | None = None
    #: Whether the steps allocate arrays (False: the compiled driver runs them without numba's
    #: runtime, :attr:`chunk_loop`; allocating branches pinned to it, returning no array, are
    #: allowed: :mod:`privbandits.algorithms._shared.loops`).
    allocates: bool = True

    @property
    def loops(self) -> Any:
        """The round loops around the steps (:func:`privbandits.algorithms._shared.loops.local_loops`)."""
        from privbandits.algorithms._shared.loops import local_loops

        return local_loops(self.choose, self.randomize, self.update, self.encode)


@dataclass
class ProposalKernel(_ChunkLoop):
    """A local algorithm whose server proposes each user's arm with a non-private curator's
    compiled steps (``base``, reading the public arm ``catalogue`` ``(R, K, K)``) and feeds it the
    user's privatized reward only: LDP-OnePoint (Zheng et al. 2020, Algorithm 1).  ``device``
    ``(params, y, rng_client, msg)`` writes the message of a user with reward ``y`` into ``msg``
    (``message.size``); the curator's update receives ``msg[0]``.  For the compiled driver only
    (the reference driver runs the algorithm's roles)."""

    base: CuratorKernel
    device: Any
    params: tuple[Any, ...]
    catalogue: np.ndarray
    message: MessageLayout
    estimate: Callable[[], np.ndarray | None] = field(default=lambda: None)
    #: Whether the steps allocate arrays (:attr:`LocalKernel.allocates`).
    allocates: bool = True

    @property
    def loops(self) -> Any:
        """The chunk loops (:func:`privbandits.algorithms._shared.loops.proposal_loops`)."""
        from privbandits.algorithms._shared.loops import proposal_loops

        return proposal_loops(self.base.select, self.base.update, self.device)


@nb.njit(cache=True, inline="always")
def tally_max(s, k, best, n, arg):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """One step of a running argmax that counts exact ties: the score ``s`` of index ``k`` against
    the maximum ``best`` so far, attained ``n`` times (``n = 0``: nothing seen yet), first at
    ``arg``; returns the updated ``(best, n, arg)`` (:func:`argmax_ties` and the compiled
    choices that recompute their scores instead of storing them)."""
    if n == 0 or s > best:
        return s, 1, k
    if s == best:
        return best, n + 1, arg
    return best, n, arg


@nb.njit(cache=True)
def argmax_ties(scores: np.ndarray, rng: np.random.Generator) -> int:  # pragma: no cover - compiled
    """Argmax of ``scores`` (1-D) with exact ties broken uniformly at random.

    Consumes one uniform draw only when the maximum is attained more than once.
    """
    best, n, arg = scores[0], 1, 0
    for k in range(1, scores.shape[0]):
        best, n, arg = tally_max(scores[k], k, best, n, arg)
    if n == 1:
        return arg
    pick = int(rng.random() * n)
    for k in range(scores.shape[0]):
        if scores[k] == best:
            if pick == 0:
                return k
            pick -= 1
    return arg


class KernelClient(Client):
    """The user side of a :class:`~privbandits.algorithms.kernel.LocalKernel` (reference driver).

    Every entry validates before any compiled step runs: the round index, the user's own inputs
    (:func:`~privbandits.privacy.inputs.check_device_inputs`: shapes against the problem, arms in
    ``[0, K)``, one reward per user, finite values, contexts within the declared bound) and the
    public state against the space the kernel declares (a dishonest server can neither drive a
    step out of bounds nor past the device's clips).  With a kernel that declares its ``encode``
    step, ``noise`` and ``sensitivity``, the client implements the device contract of
    :class:`Client`.
    """

    def __init__(self, kernel: LocalKernel, spec: EnvSpec) -> None:
        # only the user-side pieces: the server's own state is not reachable from the client
        loops = kernel.loops
        self._choose_all, self._randomize_all = loops.choose_all, loops.randomize_all
        self._encode_all = getattr(loops, "encode_all", None) if kernel.encode is not None else None
        self._params = kernel.params
        self._public_names = kernel.public_names
        self._message = kernel.message
        self._space = kernel.public_space
        self._noise = kernel.noise
        self._sensitivity = kernel.sensitivity
        self.spec = spec

    def public_space(self) -> PublicSpace | None:
        return self._space

    def _public(self, public: PublicState, R: int) -> tuple[np.ndarray, ...]:
        """The public arrays the compiled steps read: validated against the declared space (shape,
        dtype, range), so a dishonest server cannot drive a step out of bounds."""
        if self._space is not None:
            public = self._space.validate(public, dims_of(self.spec, R))
        return tuple(np.array(public[name]) for name in self._public_names)

    def _inputs(
        self,
        t: int,
        contexts: object,
        actions: object = None,
        rewards: object = None,
        *,
        bound: bool = True,
    ) -> tuple[int, np.ndarray, Any, Any]:
        t = check_int("t (the round index)", t, 0)
        X, a, y = check_device_inputs(self.spec, contexts, actions, rewards, bound=bound)
        return t, X, a, y

    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        t, X, _, _ = self._inputs(t, contexts, bound=False)
        out = np.empty(X.shape[0], dtype=np.int64)
        self._choose_all(self._params, self._public(public, X.shape[0]), t, X, rng, out)
        return out

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        t, X, a, y = self._inputs(t, contexts, actions, rewards)
        out = np.empty((X.shape[0], self._message.size))
        self._randomize_all(self._params, self._public(public, X.shape[0]), t, X, a, y, rng, out)
        return PrivatizedMessage(self._message.split(out), self._message.mechanism)

    def encode(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
    ) -> np.ndarray:
        """The message before noise ``(R, m)`` (flattened in payload order), after every clip."""
        if self._encode_all is None:
            return super().encode(t, public, contexts, actions, rewards)
        t, X, a, y = self._inputs(t, contexts, actions, rewards)
        out = np.empty((X.shape[0], self._message.size))
        self._encode_all(self._params, self._public(public, X.shape[0]), t, X, a, y, out)
        return out

    def noise(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray | None = None,
    ) -> DeviceNoise:
        """The noise :meth:`randomize` adds to :meth:`encode` for these users.

        ``rewards`` (optional) gives the exact variance of a randomizer whose variance depends on
        the message (the l2-ball mechanism: ``radius^2 / dim - encode^2`` per coordinate); without
        them such a kernel declares the variance's upper bound ``radius^2 / dim``.  The scale, the
        unit of the whitened distance, never depends on them.
        """
        if self._noise is None:
            return super().noise(t, public, contexts, actions)
        t, X, a, _ = self._inputs(t, contexts, actions, bound=False)
        assert a is not None
        encoded = None if rewards is None else self.encode(t, public, X, a, rewards)
        if encoded is None:
            self._public(public, X.shape[0])  # the same state encode would accept
        return self._noise(t, a, encoded)

    def sensitivity(self) -> DeviceSensitivity:
        if self._sensitivity is None:
            return super().sensitivity()
        return self._sensitivity


class KernelServer(Server):
    """The server side of a :class:`~privbandits.algorithms.kernel.LocalKernel` (reference driver).

    A message reaches the compiled update only with the kernel's mechanism, its exact fields, one
    row per replication, the declared shape of every field and finite values: a malformed message
    is refused whole (:class:`~privbandits.core.errors.TrustBoundaryError`), never read past.
    """

    def __init__(self, kernel: LocalKernel) -> None:
        self.k = kernel

    def public_state(self) -> PublicState:
        return PublicState(dict(zip(self.k.public_names, self.k.public)))

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        if not isinstance(message, PrivatizedMessage):
            raise TrustBoundaryError(
                f"the server only accepts PrivatizedMessage objects, got {type(message).__name__}; "
                "raw contexts, rewards and arm indices never reach the server in the local model"
            )
        if message.mechanism != self.k.message.mechanism:
            raise TrustBoundaryError(
                f"expected a message of randomizer {self.k.message.mechanism!r}, got {message.mechanism!r}"
            )
        names = tuple(n for n, _ in self.k.message.fields)
        if set(message.payload) != set(names):
            raise TrustBoundaryError(f"payload keys must be {names}, got {tuple(message.payload)}")
        R = self.k.public[0].shape[0] if self.k.public else None
        for name, shape in self.k.message.fields:
            arr = np.asarray(message.payload[name])
            want = (R, *shape) if R is not None else (arr.shape[0] if arr.ndim else -1, *shape)
            if arr.shape != want or arr.dtype.kind not in "fiu" or not np.all(np.isfinite(arr)):
                raise TrustBoundaryError(
                    f"message field {name!r} must be {want} finite real numbers (one row per replication), "
                    f"got shape {arr.shape} of dtype {arr.dtype}"
                )
        flat = self.k.message.join(message.payload)
        self.k.loops.update_all(self.k.params, self.k.public, self.k.server, t, flat)

    def estimate(self) -> np.ndarray | None:
        return self.k.estimate()
