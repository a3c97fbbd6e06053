"""Snapshots of a served model's state, so a restart costs O(snapshot + tail), not O(events).

A snapshot holds exactly what :meth:`privbandits.service.server.model.ServedModel.digest` hashes
for a compiled role: the counters (version, rounds), the open curator tickets, every state array of
the kernel (``public`` and ``server`` of a local kernel, ``state`` of a curator kernel) and the bit
generator states of the server's random streams, plus the service's per-device report counts.
Restoring writes them into a freshly built model **in place** (the compiled steps keep their
references to those arrays), then the events after the snapshot are replayed and the digest is
checked against the stored model row as before.

Roles without a compiled kernel (numpy server roles, shuffle analyzers) keep state the digest does
not cover: no snapshot is taken for them (:func:`capture` returns None) and a start replays every
event, as before.

The format is a ``numpy.savez`` archive (no pickle: a snapshot cannot run code when loaded), with a
JSON header under the key ``header``.
"""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np

from privbandits.algorithms.kernel import CuratorKernel, LocalKernel

__all__ = ["SnapshotError", "capture", "kernel_state_arrays", "restore"]


class SnapshotError(Exception):
    """The snapshot does not fit the model it is restored into."""


def _arrays(obj: Any) -> list[np.ndarray]:
    """The arrays of a (nested) tuple of state arrays, in order (as the model's digest reads them)."""
    if isinstance(obj, np.ndarray):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [a for x in obj for a in _arrays(x)]
    return []


def kernel_state_arrays(model: Any) -> list[np.ndarray] | None:
    """The state arrays of ``model``'s compiled kernel (a ServedModel's), in the order its digest
    and its snapshots read them; None for a role without a compiled kernel."""
    kernel = getattr(model.alg, "kernel", None)
    if isinstance(kernel, LocalKernel):
        return _arrays(kernel.public) + _arrays(kernel.server)
    if isinstance(kernel, CuratorKernel):
        return _arrays(kernel.state)
    return None


def capture(model: Any, extra: dict[str, Any]) -> bytes | None:
    """The state of ``model`` (a ServedModel) and the JSON-able ``extra`` as bytes, or None when
    the role has no compiled kernel (see the module docstring)."""
    arrays = kernel_state_arrays(model)
    if arrays is None:
        return None
    streams = model.alg.streams
    header = {
        "format": 1,
        "version": model.version,
        "rounds": model.rounds,
        "digest": model.digest(),
        "streams": {
            role: getattr(streams, role).bit_generator.state
            for role in ("server", "policy", "shuffler")
        },
        "tickets": {
            k: [int(t), np.asarray(X).tolist(), int(a), str(owner)]
            for k, (t, X, a, owner) in model.tickets.items()
        },
        "extra": extra,
        "n_arrays": len(arrays),
    }
    buf = io.BytesIO()
    named: dict[str, Any] = {f"a{i}": np.ascontiguousarray(a) for i, a in enumerate(arrays)}
    named["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(buf, **named)
    return buf.getvalue()


def restore(model: Any, blob: bytes) -> dict[str, Any]:
    """Write the snapshot ``blob`` into a freshly built ``model``; returns its ``extra``.

    Raises
    ------
    SnapshotError
        If the arrays do not match the model's in number, dtype or shape, or the restored state's
        digest differs from the one recorded when the snapshot was taken.
    """
    arrays = kernel_state_arrays(model)
    if arrays is None:
        raise SnapshotError(f"{model.alg.name} has no compiled state to restore a snapshot into")
    with np.load(io.BytesIO(bytes(blob)), allow_pickle=False) as data:
        header = json.loads(bytes(data["header"]).decode())
        if header.get("format") != 1 or header.get("n_arrays") != len(arrays):
            raise SnapshotError("the snapshot holds another number of state arrays than the model")
        for i, target in enumerate(arrays):
            src = data[f"a{i}"]
            if src.dtype != target.dtype or src.shape != target.shape:
                raise SnapshotError(
                    f"state array {i}: snapshot {src.dtype}{src.shape}, model "
                    f"{target.dtype}{target.shape}"
                )
            target[...] = src
    streams = model.alg.streams
    for role, state in header["streams"].items():
        getattr(streams, role).bit_generator.state = state
    model.version, model.rounds = int(header["version"]), int(header["rounds"])
    model.tickets = {
        k: (int(t), np.asarray(X, dtype=float), int(a), str(owner))
        for k, (t, X, a, owner) in header["tickets"].items()
    }
    if model.digest() != header["digest"]:
        raise SnapshotError(
            "the restored state's digest differs from the one recorded in the snapshot"
        )
    extra: dict[str, Any] = header["extra"]
    return extra
