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

The loops around the steps are generated once per algorithm (:mod:`privbandits.algorithms.loops`).
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
from typing import Any

import numba as nb
import numpy as np

from privbandits.core.public_space import PublicSpace
from privbandits.privacy.device import DeviceNoise, DeviceSensitivity

__all__ = [
    "ESTIMATE_BOUND",
    "CuratorKernel",
    "DeviceNoiseFn",
    "LocalKernel",
    "MessageLayout",
    "argmax_ties",
    "mirrored_scale",
]

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


@dataclass
class CuratorKernel:
    """Compiled steps and state of a trusted-curator algorithm (see module docstring)."""

    select: Any
    update: Any
    params: tuple[Any, ...]
    state: tuple[np.ndarray, ...]
    estimate: Callable[[], np.ndarray | None] = field(default=lambda: None)

    @property
    def loops(self) -> Any:
        """The round loops around the steps (:func:`privbandits.algorithms.loops.curator_loops`)."""
        from privbandits.algorithms.loops import curator_loops

        return curator_loops(self.select, self.update)


@dataclass
class LocalKernel:
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

    @property
    def loops(self) -> Any:
        """The round loops around the steps (:func:`privbandits.algorithms.loops.local_loops`)."""
        from privbandits.algorithms.loops import local_loops

        return local_loops(self.choose, self.randomize, self.update, self.encode)


@nb.njit(cache=True)
def argmax_ties(scores: np.ndarray, rng: np.random.Generator) -> int:  # pragma: no cover - compiled
    """Argmax of ``scores`` (1-D) with exact ties broken uniformly at random.

    Consumes one uniform draw only when the maximum is attained more than once.
    """
    best = scores[0]
    n = 1
    arg = 0
    for k in range(1, scores.shape[0]):
        s = scores[k]
        if s > best:
            best, n, arg = s, 1, k
        elif s == best:
            n += 1
    if n == 1:
        return arg
    pick = int(rng.random() * n)
    for k in range(scores.shape[0]):
        if scores[k] == best:
            if pick == 0:
                return k
            pick -= 1
    return arg
