"""Typed objects that cross a trust boundary (the documentation's Concepts: trust models).

In the local and shuffle models the server may only ever receive :class:`PrivatizedMessage` or
:class:`ShuffledBatch` objects; in every model, users only ever receive :class:`PublicState`.  The
simulation loop checks these types at each crossing, so an algorithm that tried to hand raw
``(x, a, r)`` to its server fails loudly instead of silently leaking.

All arrays carry the replication axis ``R`` first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

import numpy as np

from privbandits.core.errors import TrustBoundaryError

__all__ = [
    "PrivatizedMessage",
    "PublicState",
    "ShuffledBatch",
    "check_origin",
    "check_payload",
    "check_real_arrays",
    "shuffle_messages",
]


def _frozen(arrays: Mapping[str, np.ndarray], *, copy: bool = True) -> Mapping[str, np.ndarray]:
    """Read-only mapping of read-only arrays (copies unless ``copy=False``, then read-only views)."""
    out = {}
    for k, v in arrays.items():
        a = np.array(v, copy=True) if copy else np.asarray(v).view()
        a.setflags(write=False)
        out[k] = a
    return MappingProxyType(out)


class _ArrayBag(Mapping[str, np.ndarray]):
    """Read-only mapping name -> array (copied on construction)."""

    __slots__ = ("_data",)

    def __init__(self, arrays: Mapping[str, np.ndarray] | None = None, **kw: np.ndarray) -> None:
        merged = dict(arrays or {})
        merged.update(kw)
        self._data = _frozen(merged)

    def __getitem__(self, key: str) -> np.ndarray:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}: {v.shape}" for k, v in self._data.items())
        return f"{type(self).__name__}({shapes})"


class PublicState(_ArrayBag):
    """What the server broadcasts to users: public, already differentially private, free to read."""


@dataclass(frozen=True)
class PrivatizedMessage:
    """Output of a local randomizer: the only thing a user sends in the local / shuffle models.

    Parameters
    ----------
    payload : mapping of str to ndarray
        Arrays with leading axis ``R`` (one user per replication).  In multi-message protocols the
        second axis enumerates the user's messages.
    mechanism : str
        Name of the local randomizer that produced the payload (recorded for auditing).
    """

    payload: Mapping[str, np.ndarray]
    mechanism: str

    def __post_init__(self) -> None:
        if not self.mechanism:
            raise TrustBoundaryError(
                "a PrivatizedMessage must name the randomizer that produced it"
            )
        # randomizer outputs are fresh arrays: read-only views suffice (no copy on the hot path)
        object.__setattr__(self, "payload", _frozen(self.payload, copy=False))

    def __getitem__(self, key: str) -> np.ndarray:
        return self.payload[key]


def check_real_arrays(
    arrays: Mapping[str, object], where: str, *, integer: bool = False, R: int | None = None
) -> None:
    """Every array of ``arrays`` holds finite real numbers (integers with ``integer``), with ``R``
    rows when given: what a shuffler or an analyzer checks before its own code reads a message.

    Raises
    ------
    ValidationError
        Naming the field: a string, boolean, complex or object array, a NaN or infinite value, or
        the wrong number of rows.
    """
    from privbandits.core.errors import ValidationError

    kinds = "iu" if integer else "fiu"
    for key, value in arrays.items():
        arr = np.asarray(value)
        if arr.dtype.kind not in kinds:
            what = "integers" if integer else "real numbers"
            raise ValidationError(f"{where} field {key!r} must hold {what}, got dtype {arr.dtype}")
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise ValidationError(f"{where} field {key!r} holds NaN or infinite values")
        if R is not None and (arr.ndim == 0 or arr.shape[0] != R):
            raise ValidationError(
                f"{where} field {key!r} has shape {arr.shape}; expected {R} rows (one per "
                "replication)"
            )


def check_payload(
    message: object, mechanism: str, fields: Mapping[str, tuple[int, ...]], R: int
) -> dict[str, np.ndarray]:
    """A server's check of one round's messages before its own code reads them.

    A server runs code the library wrote, but its inputs arrive from devices it does not control:
    the message must be a :class:`PrivatizedMessage` of ``mechanism`` with exactly the keys of
    ``fields``, each ``(R,) + shape`` of finite real numbers.  Returns the payload as contiguous
    float64 arrays.

    Raises
    ------
    TrustBoundaryError
        Not a privatized message, another randomizer, or missing / unknown keys.
    ValidationError
        A field of the wrong shape or dtype, or with non-finite values.
    """
    from privbandits.core.errors import ValidationError

    if not isinstance(message, PrivatizedMessage) or message.mechanism != mechanism:
        got = (
            message.mechanism if isinstance(message, PrivatizedMessage) else type(message).__name__
        )
        raise TrustBoundaryError(
            f"the server only accepts {mechanism!r} PrivatizedMessage objects, got {got!r}"
        )
    if set(message.payload) != set(fields):
        raise TrustBoundaryError(
            f"payload keys must be {sorted(fields)}, got {sorted(message.payload)}"
        )
    out = {}
    for key, shape in fields.items():
        arr = np.asarray(message.payload[key])
        want = (R, *shape)
        if arr.shape != want:
            raise ValidationError(f"message field {key!r} has shape {arr.shape}, expected {want}")
        if arr.dtype.kind not in "fiu":
            raise ValidationError(
                f"message field {key!r} must hold real numbers, got dtype {arr.dtype}"
            )
        arr = np.ascontiguousarray(arr, dtype=np.float64)
        if not np.isfinite(arr).all():
            raise ValidationError(f"message field {key!r} holds NaN or infinite values")
        out[key] = arr
    return out


_M = TypeVar("_M", "PrivatizedMessage", "ShuffledBatch")


def check_origin(obj: object, cls: type[_M], mechanism: str, who: str) -> _M:
    """``obj`` if it is a ``cls`` (a :class:`PrivatizedMessage` or :class:`ShuffledBatch`) that
    ``mechanism`` produced; otherwise :class:`~privbandits.core.errors.TrustBoundaryError`
    naming ``who`` (e.g. ``"the shuffler"``)."""
    if not isinstance(obj, cls):
        raise TrustBoundaryError(f"{who} only accepts a {cls.__name__}, got {type(obj).__name__}")
    if obj.mechanism != mechanism:
        raise TrustBoundaryError(
            f"the {cls.__name__} comes from {obj.mechanism!r}, expected {mechanism!r}"
        )
    return obj


@dataclass(frozen=True)
class ShuffledBatch:
    """A batch of messages after a uniform random permutation per replication.

    ``payload[k]`` has shape ``(R, n, ...)``: the ``n`` messages of the batch in shuffled order;
    nothing links position ``j`` to the user who sent it.  ``round`` numbers the releases of a
    multi-round protocol over the same users (0: the users' first report, see
    :meth:`privbandits.algorithms.base.Server.wants_round`).
    """

    payload: Mapping[str, np.ndarray]
    mechanism: str
    n_users: int = field(default=0)
    round: int = field(default=0)

    def __getitem__(self, key: str) -> np.ndarray:
        return self.payload[key]


def shuffle_messages(
    messages: Sequence[PrivatizedMessage], rng: np.random.Generator
) -> ShuffledBatch:
    """Uniformly permute a batch of users' messages, independently in each replication.

    Each message's payload arrays have shape ``(R, ...)`` (single message per user) or
    ``(R, m, ...)`` when the key ends in ``"_multi"`` (``m`` messages per user).  Messages are
    concatenated along a new message axis and that axis is permuted by an independent uniform
    permutation per replication (argsort of i.i.d. uniform keys).

    Raises
    ------
    TrustBoundaryError
        If any element is not a :class:`PrivatizedMessage` or the batch mixes randomizers.
    """
    if not messages:
        raise TrustBoundaryError("cannot shuffle an empty batch")
    for m in messages:
        if not isinstance(m, PrivatizedMessage):
            raise TrustBoundaryError(
                f"the shuffler only accepts PrivatizedMessage, got {type(m).__name__}"
            )
    mech = messages[0].mechanism
    if any(m.mechanism != mech for m in messages):
        raise TrustBoundaryError("a shuffled batch must come from a single randomizer")
    stacked: dict[str, np.ndarray] = {}
    for key in messages[0].payload:
        if key.endswith("_multi"):
            stacked[key] = np.concatenate([m.payload[key] for m in messages], axis=1)
        else:
            stacked[key] = np.stack([m.payload[key] for m in messages], axis=1)
    lengths = {arr.shape[:2] for arr in stacked.values()}
    if len(lengths) != 1:
        raise TrustBoundaryError(
            f"every payload key of a shuffled batch must have the same message count; got (R, n) shapes {sorted(lengths)}"
        )
    R, n = lengths.pop()
    perm = np.argsort(rng.random((R, n)), axis=1)
    out = {}
    for key, arr in stacked.items():
        idx = perm.reshape(perm.shape + (1,) * (arr.ndim - 2))
        out[key] = np.take_along_axis(arr, idx, axis=1)
    return ShuffledBatch(payload=_frozen(out), mechanism=mech, n_users=len(messages))
