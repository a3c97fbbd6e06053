"""Fuzz worker: malformed inputs at every client, server, shuffler, curator and device entry point.

Run as ``python -m tests.fuzz.worker --out results.jsonl --progress progress.txt ALGORITHM ...``
from the repository root.  For each algorithm it resets a fresh copy on a small problem
(:mod:`tests.conformance.cases`), plays one honest round to get valid inputs, then feeds each
entry point malformed arguments: every mutation of :data:`MUTATIONS` once (the sweep) and
``--examples`` further cases drawn by hypothesis (random positions, values, second mutations).
Each case runs on a deep copy of the algorithm, so cases do not leak state into each other.

The outcome a case must have (:func:`judge`):

* ``error``: a :class:`~privbandits.core.errors.PrivbanditsError` (ValidationError, DataBoundError,
  TrustBoundaryError, PublicStateError);
* ``same``: an error as above, or exactly the output of the same call with the canonical arrays
  (contiguous float64 / int64 with the same values): an output that differs holds values that
  were never passed in;
* ``valid``: an error as above, or a well-formed output (arms in ``[0, K)``, a message with the
  honest fields and shapes and finite values).

Any other exception (IndexError, TypeError, a numba error, ...) fails the case; a crash kills the
process, and the parent (:mod:`tests.fuzz.test_fuzz_boundary`) reads the case it died on from the
progress file, written before each case.  Lines of JSON are appended to ``--out``: one per failing
argument and mutation (``{"type": "failure", "alg", "entry", "case", "error"}``) and one per
finished entry point (``{"type": "done", "alg", "entry", "cases"}``).
"""

from __future__ import annotations

import argparse
import copy
import copyreg
import json
import os
import re
import signal
import sys
import traceback
import types
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Users per call (replications) and the horizon of the small problem.
R = 2
HORIZON = 200
#: Round of the fuzzed calls (after one honest round at t = 0).
T = 1


# PublicState and PrivatizedMessage hold read-only mapping proxies: deep copies copy their contents
copyreg.pickle(types.MappingProxyType, lambda m: (types.MappingProxyType, (dict(m),)))


class Mismatch(Exception):
    """A case whose outcome breaks its expectation."""


@dataclass
class World:
    """An algorithm reset on a small problem, after one honest round, with that round's inputs."""

    name: str
    alg: Any
    kind: str  # "curator", "local" or "shuffle"
    convex: bool
    X: np.ndarray
    a: np.ndarray
    r: np.ndarray
    public: Any = None
    msg: Any = None
    batch: Any = None
    #: Entry point -> (algorithm state, round, honest argument) where its honest call belongs: the
    #: shuffler's last collect of a batch, the analyzer's receive_batch, a multi-round respond.
    snapshots: dict[str, tuple[Any, int, Any]] = field(default_factory=dict)

    @property
    def spec(self) -> Any:
        return self.alg.spec


# -- building the worlds ---------------------------------------------------------------------------
def build(name: str) -> World:
    """``name`` reset on its first conformance case (R users), after one honest round."""
    from privbandits.algorithms import available
    from privbandits.algorithms.base import Curator, ShuffleAlgorithm
    from privbandits.core.rng import make_streams
    from privbandits.engine import protocol
    from tests.conformance.cases import Case, env_kinds

    cls = available()[name]
    case = Case(cls, dict(cls.test_params[0]), env_kinds(cls)[0], 0)
    env = case.make_env()
    streams = make_streams(0)
    spec = env.reset(R, streams, HORIZON)
    alg = case.make()
    alg.reset(spec, R, streams)
    convex = case.env == "convex"
    X = env.next_round()
    protocol.start(alg, X)
    if isinstance(alg, Curator):
        a = alg.select(0, X)
        r, _ = env.step(a)
        alg.update(0, X, a, r)
        return World(name, alg, "curator", convex, X, np.asarray(a), np.asarray(r))
    shuffle = isinstance(alg, ShuffleAlgorithm)
    fresh = copy.deepcopy(alg) if shuffle else None
    public = protocol.broadcast(
        alg, 0, protocol.check_public(alg.server.public_state()) if shuffle else None
    )
    public = protocol.device_public(alg.client, spec, public, R)
    a = np.asarray(alg.client.choose(0, public, X, streams.policy))
    r, _ = env.step(a)
    msg = alg.client.randomize(0, public, X, a, r, streams.client)
    w = World(
        name, alg, "shuffle" if shuffle else "local", convex, X, a, np.asarray(r), public, msg
    )
    if not shuffle:
        protocol.deliver(alg, 0, msg)
        w.public = protocol.device_public(alg.client, spec, alg.server.public_state(), R)
        return w
    # the shuffle model: the first batch played honestly, as the reference driver does, keeping the
    # state before its last collect, before the analyzer's receive_batch and before a respond round
    alg = fresh
    batch_public = protocol.check_public(alg.server.public_state())
    for t in range(HORIZON):
        Xt = env.next_round()
        mine = protocol.broadcast(alg, t, batch_public)
        at = protocol.device_choose(alg.client, spec, t, mine, Xt, streams.policy)
        rt, _ = env.step(at)
        m = protocol.device_randomize(alg.client, spec, t, mine, Xt, at, rt, streams.client)
        before = copy.deepcopy(alg)
        alg.shuffler.collect(t, m)
        if not alg.batch_ends(t):
            continue
        w.snapshots["collect"] = (before, t, m)
        batch = alg.shuffler.release(t)
        w.snapshots["receive_batch"] = (copy.deepcopy(alg), t, batch)
        w.batch = batch
        alg.server.receive_batch(t, batch)
        if alg.server.wants_round():
            w.snapshots["respond"] = (
                copy.deepcopy(alg),
                t,
                protocol.check_public(alg.server.public_state()),
            )
        break
    return w


def entries(w: World) -> dict[str, tuple[str, ...]]:
    """The entry points of ``w``'s algorithm and the arguments fuzzed at each."""
    from privbandits.algorithms.base import BatchClient, Client

    if w.kind == "curator":
        return {"select": ("t", "contexts"), "update": ("contexts", "actions", "rewards")}
    out: dict[str, tuple[str, ...]] = {
        "choose": ("t", "public", "contexts"),
        "randomize": ("t", "public", "contexts", "actions", "rewards"),
    }
    if not w.convex:
        out["device_choose"] = ("t", "public", "contexts")
        out["device_randomize"] = ("t", "public", "contexts", "actions", "rewards")
    client = w.alg.client
    if isinstance(client, BatchClient):
        out["choose_batch"] = ("public", "contexts")
        out["randomize_batch"] = ("public", "contexts", "actions", "rewards")
    if type(client).respond is not Client.respond:
        out["respond"] = ("t", "public")
    if (
        w.kind == "local" and not w.convex and _sdk() is not None
    ):  # the SDK serves arm-index problems
        out["sdk_choose"] = ("t", "public", "contexts")
        out["sdk_privatize"] = ("t", "public", "contexts", "actions", "rewards")
    if w.kind == "local":
        out["receive"] = ("message",)
    else:
        out["receive_batch"] = ("batch",)
        out["collect"] = ("message",)
    return out


def _sdk() -> Any:
    """The device SDK's module (None when it cannot be imported)."""
    for name in ("privbandits.service.device.client", "privbandits.client"):
        try:
            return __import__(name, fromlist=["DeviceClient"])
        except ImportError:
            continue
    return None


# -- mutations -------------------------------------------------------------------------------------
def _at(a: np.ndarray, pos: int, value: float) -> np.ndarray:
    b = np.array(a, dtype=float)
    if b.size:
        b.reshape(-1)[pos % b.size] = value
    return b


def _noncontig(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim == 0:
        return a
    twice = np.repeat(a, 2, axis=a.ndim - 1)
    return twice[..., ::2]


#: Shape mutations of an array (always a wrong shape, except where the first axis is free).
SHAPE: dict[str, Callable[[np.ndarray, int], Any]] = {
    "extend_last": lambda a, p: np.concatenate([a, a[..., :1]], axis=-1) if a.ndim else a[None],
    "shrink_last": lambda a, p: a[..., :-1] if a.ndim else a[None],
    "empty_last": lambda a, p: a[..., :0] if a.ndim else a[None][:0],
    "add_axis": lambda a, p: a[..., None],
    "drop_axis": lambda a, p: a[..., 0] if a.ndim else a[None],
    "scalar": lambda a, p: np.asarray(a).reshape(-1)[0] if a.size else np.float64(0.5),
    "grow_first": lambda a, p: np.concatenate([a, a[:1]], axis=0) if a.ndim else a[None],
    "shrink_first": lambda a, p: a[1:] if a.ndim else a[None],
    "empty_first": lambda a, p: a[:0] if a.ndim else a[None][:0],
    "swap_axes": lambda a, p: (
        np.swapaxes(a, 0, -1) if a.ndim >= 2 and a.shape[0] != a.shape[-1] else a[None]
    ),
}
#: dtype / layout mutations: those with the same values compare with the canonical call.
DTYPE: dict[str, tuple[Callable[[np.ndarray, int], Any], str]] = {
    "object": (lambda a, p: np.asarray(a).astype(object), "same"),
    "str": (lambda a, p: np.asarray(a).astype(str), "error"),
    "bool": (lambda a, p: np.asarray(a).astype(bool), "error"),
    "complex": (lambda a, p: np.asarray(a).astype(complex), "error"),
    "float32": (lambda a, p: np.asarray(a).astype(np.float32), "same"),
    "list": (lambda a, p: np.asarray(a).tolist(), "same"),
    "noncontig": (lambda a, p: _noncontig(a), "same"),
}
#: Value mutations of a float array.
VALUE: dict[str, tuple[float, str]] = {
    "nan": (np.nan, "error"),
    "inf": (np.inf, "error"),
    "-inf": (-np.inf, "error"),
    "huge": (1e300, "valid"),
    "-huge": (-1e300, "valid"),
    "big": (1e6, "valid"),
    "subnormal": (5e-320, "valid"),
}
#: Index mutations of an arm-index array.
INDEX: dict[str, tuple[Callable[[np.ndarray, int, int], Any], str]] = {
    "arm_K": (lambda a, p, K: _set(a, p, K), "error"),
    "arm_-1": (lambda a, p, K: _set(a, p, -1), "error"),
    "arm_2^40": (lambda a, p, K: _set(a, p, 2**40), "error"),
    "arm_int64_min": (lambda a, p, K: _set(a, p, np.iinfo(np.int64).min), "error"),
    "arm_float_exact": (lambda a, p, K: np.asarray(a, dtype=float), "same"),
    "arm_float_half": (lambda a, p, K: np.asarray(a, dtype=float) + 0.5, "error"),
    "arm_nan": (lambda a, p, K: _at(a, p, np.nan), "error"),
    "arm_uint64": (lambda a, p, K: np.asarray(a).astype(np.uint64), "same"),
    "arm_int32": (lambda a, p, K: np.asarray(a).astype(np.int32), "same"),
    "arm_uint64_huge": (
        lambda a, p, K: _set(np.asarray(a).astype(np.uint64), p, 2**64 - 1),
        "error",
    ),
}
#: Round numbers a (possibly dishonest) server can send with its model version.
TIMES: dict[str, tuple[Any, str]] = {
    "t_-1": (-1, "valid"),
    "t_horizon": (HORIZON, "valid"),
    "t_1e9": (10**9, "valid"),
    "t_int64_max": (np.iinfo(np.int64).max, "valid"),
    "t_np_int": (np.int64(T), "same"),
}


def _set(a: np.ndarray, pos: int, value: int) -> np.ndarray:
    b = np.array(a, dtype=np.uint64 if value > np.iinfo(np.int64).max else np.asarray(a).dtype)
    if b.size:
        b.reshape(-1)[pos % b.size] = value
    return b


def array_mutations(kind: str) -> list[str]:
    """Mutation names of an argument: ``contexts``, ``rewards``, ``actions`` (arm indices) or
    ``points`` (continuous actions)."""
    names = list(SHAPE) + list(DTYPE) + list(VALUE)
    if kind == "actions":
        names = list(SHAPE) + [n for n in DTYPE if n not in ("float32",)] + list(INDEX)
    return names


def mutate_array(a: np.ndarray, name: str, pos: int, K: int) -> tuple[Any, str]:
    """``a`` mutated by ``name`` and the default expectation."""
    if name in SHAPE:
        out = SHAPE[name](np.asarray(a), pos)
        return out, "same" if np.shape(out) == np.shape(a) else "error"
    if name in DTYPE:
        fn, expect = DTYPE[name]
        return fn(np.asarray(a), pos), expect
    if name in VALUE:
        value, expect = VALUE[name]
        return _at(np.asarray(a), pos, value), expect
    fn3, expect = INDEX[name]
    return fn3(np.asarray(a), pos, K), expect


PUBLIC_EXTRA = (
    "drop_field",
    "extra_field",
    "not_mapping",
    "none",
    "plain_dict",
    "draw",
    "draw_extreme",
    "int_-1",
    "int_huge",
)


def public_mutations(w: World) -> list[str]:
    names = [f"field:{m}" for m in list(SHAPE) + list(DTYPE) + list(VALUE)]
    return names + list(PUBLIC_EXTRA)


def mutate_public(
    w: World, client: Any, name: str, pos: int, R_users: int, base: Any = None
) -> tuple[Any, str]:
    """A malformed public state; the expectation comes from the declared space when there is one."""
    from privbandits.core.errors import PrivbanditsError
    from privbandits.core.messages import PublicState
    from privbandits.core.public_space import dims_of

    base = w.public if base is None else base
    honest = dict(base)
    keys = sorted(honest)
    space = client.public_space() if hasattr(client, "public_space") else None
    dims = dims_of(w.spec, R_users)
    rng = np.random.default_rng(pos)
    expect = "error"
    if name == "drop_field":
        if not keys:
            return PublicState(honest), "same"
        honest.pop(keys[pos % len(keys)])
    elif name == "extra_field":
        honest["evil"] = np.ones(3)
    elif name == "not_mapping":
        return [np.asarray(v) for v in honest.values()], "error"
    elif name == "none":
        return None, "error"
    elif name == "plain_dict":
        return dict(base), "same"
    elif name in ("draw", "draw_extreme"):
        if space is None:
            return PublicState(honest), "same"
        return space.draw(dims, rng, extreme=name == "draw_extreme"), "valid"
    elif name in ("int_-1", "int_huge"):
        ints = [k for k in keys if np.asarray(honest[k]).dtype.kind in "iu"]
        if not ints:
            return PublicState(honest), "same"
        k = ints[pos % len(ints)]
        honest[k] = _set(np.asarray(honest[k]), pos, -1 if name == "int_-1" else 10**9)
        expect = "valid"
    else:
        m = name.split(":", 1)[1]
        if not keys:
            return PublicState(honest), "same"
        k = keys[pos % len(keys)]
        arr = np.asarray(honest[k])
        if m in VALUE and arr.dtype.kind not in "f":
            arr = arr.astype(float)
        honest[k], expect = mutate_array(arr, m, pos, w.spec.K)
    try:
        state = PublicState(honest)
    except Exception:  # a value PublicState cannot hold (str arrays are fine; ragged lists are not)
        state = honest  # type: ignore[assignment]
    if space is not None and expect != "same":
        try:
            space.validate(state, dims)
            expect = "valid"
        except PrivbanditsError:
            expect = "error"
    elif expect == "error" and name.split(":")[-1] in ("grow_first", "shrink_first", "empty_first"):
        expect = "valid"  # without a declared space the first axis may not be per user
    return state, expect


MESSAGE_EXTRA = ("not_message", "mechanism", "drop_key", "extra_key", "none")


def message_mutations() -> list[str]:
    return [f"field:{m}" for m in list(SHAPE) + list(DTYPE) + list(VALUE)] + list(MESSAGE_EXTRA)


def mutate_message(msg: Any, name: str, pos: int, K: int) -> tuple[Any, str]:
    from privbandits.core.messages import PrivatizedMessage

    payload = {k: np.asarray(v) for k, v in msg.payload.items()}
    keys = sorted(payload)
    if name == "not_message":
        return payload, "error"
    if name == "none":
        return None, "error"
    if name == "mechanism":
        return PrivatizedMessage(payload, msg.mechanism + "-evil"), "error"
    if name == "drop_key":
        payload.pop(keys[pos % len(keys)])
        return PrivatizedMessage(payload, msg.mechanism), "error"
    if name == "extra_key":
        payload["evil"] = np.ones(R)
        return PrivatizedMessage(payload, msg.mechanism), "error"
    m = name.split(":", 1)[1]
    k = keys[pos % len(keys)]
    arr = payload[k]
    if m in VALUE and arr.dtype.kind not in "f":
        arr = arr.astype(float)
    payload[k], expect = mutate_array(arr, m, pos, K)
    if expect == "same":
        expect = "valid"  # a server's state is not compared; no crash and no foreign exception
    if m in ("huge", "-huge", "big") and np.asarray(msg.payload[k]).dtype.kind in "iub":
        expect = "valid"
    try:
        return PrivatizedMessage(payload, msg.mechanism), expect
    except Exception:
        return payload, "error"


BATCH_EXTRA = (
    "not_batch",
    "mechanism",
    "drop_key",
    "extra_key",
    "n_users_-1",
    "n_users_huge",
    "round_7",
)


def batch_mutations() -> list[str]:
    return [f"field:{m}" for m in list(SHAPE) + list(DTYPE) + list(VALUE)] + list(BATCH_EXTRA)


def mutate_batch(batch: Any, name: str, pos: int, K: int) -> tuple[Any, str]:
    import dataclasses

    payload = {k: np.asarray(v) for k, v in batch.payload.items()}
    keys = sorted(payload)
    if name == "not_batch":
        return payload, "error"
    if name == "mechanism":
        return dataclasses.replace(batch, mechanism=batch.mechanism + "-evil"), "error"
    if name == "drop_key":
        payload.pop(keys[pos % len(keys)])
        return dataclasses.replace(batch, payload=payload), "error"
    if name == "extra_key":
        payload["evil"] = np.ones((R, 2))
        return dataclasses.replace(batch, payload=payload), "error"
    if name == "n_users_-1":
        return dataclasses.replace(batch, n_users=-1), "valid"
    if name == "n_users_huge":
        return dataclasses.replace(batch, n_users=10**9), "valid"
    if name == "round_7":
        return dataclasses.replace(batch, round=7), "valid"
    m = name.split(":", 1)[1]
    k = keys[pos % len(keys)]
    arr = payload[k]
    if m in VALUE and arr.dtype.kind not in "f":
        arr = arr.astype(float)
    payload[k], expect = mutate_array(arr, m, pos, K)
    if expect == "same" or m in ("huge", "-huge", "big"):
        expect = "valid"
    return dataclasses.replace(batch, payload=payload), expect


# -- running one case ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    alg: str
    entry: str
    arg: str
    mutation: str
    pos: int = 0

    def text(self) -> str:
        return f"{self.alg} {self.entry}({self.arg}={self.mutation}, pos={self.pos})"


def _call(w: World, entry: str, args: dict[str, Any]) -> Any:
    """Call ``entry`` on a deep copy of ``w``'s algorithm (in the state the entry belongs to) with
    ``args`` (t, public, contexts, actions, rewards, message, batch); fresh generators of one seed,
    so twin calls draw the same numbers."""
    from privbandits.engine import protocol

    snap = w.snapshots.get(entry)
    alg = copy.deepcopy(w.alg if snap is None else snap[0])
    rng = np.random.default_rng(7)
    t = args.get("t", T)
    if entry == "select":
        return alg.select(t, args["contexts"])
    if entry == "update":
        alg.update(t, args["contexts"], args["actions"], args["rewards"])
        return alg.select(t + 1, w.X)  # the state after the update still works
    c = alg.client
    if entry == "choose":
        return c.choose(t, args["public"], args["contexts"], rng)
    if entry == "randomize":
        return c.randomize(
            t, args["public"], args["contexts"], args["actions"], args["rewards"], rng
        )
    if entry == "device_choose":
        return protocol.device_choose(c, alg.spec, t, args["public"], args["contexts"], rng)
    if entry == "device_randomize":
        return protocol.device_randomize(
            c, alg.spec, t, args["public"], args["contexts"], args["actions"], args["rewards"], rng
        )
    if entry == "choose_batch":
        return c.choose_batch(t, args["public"], args["contexts"], rng)
    if entry == "randomize_batch":
        return c.randomize_batch(
            t, args["public"], args["contexts"], args["actions"], args["rewards"], rng
        )
    if entry == "respond":
        return c.respond(t, args["public"], rng)
    if entry in ("sdk_choose", "sdk_privatize"):
        sdk = _sdk()
        dev = sdk.DeviceClient(
            "http://device.invalid",
            "token",
            algorithm=alg,
            http=object(),
            rng_policy=np.random.default_rng(7),
            rng_client=np.random.default_rng(7),
        )
        model = sdk.ModelSnapshot(t, args["public"], {"guarantee": {"text": str(alg.guarantee)}})
        if entry == "sdk_choose":
            return dev.choose(args["contexts"], model)
        return dev.privatize(args["contexts"], args["actions"], args["rewards"], model)
    if entry == "receive":
        alg.server.receive(t, args["message"])
        return protocol.check_public(alg.server.public_state())
    if entry == "receive_batch":
        alg.server.receive_batch(t, args["batch"])
        return protocol.check_public(alg.server.public_state())
    if entry == "collect":  # the batch's last message
        alg.shuffler.collect(t, args["message"])
        protocol.close_batch(alg, t, rng)
        return protocol.check_public(alg.server.public_state())
    raise ValueError(entry)


def honest_args(w: World, entry: str) -> dict[str, Any]:
    """The valid arguments of ``entry``."""
    if entry in ("choose_batch", "randomize_batch"):
        return {
            "public": w.public,
            "contexts": np.stack([w.X, w.X]),
            "actions": np.stack([w.a, w.a]),
            "rewards": np.stack([w.r, w.r]),
        }
    if entry in w.snapshots:
        _, t, arg = w.snapshots[entry]
        key = {"collect": "message", "receive_batch": "batch", "respond": "public"}[entry]
        return {"t": t, key: arg}
    if entry == "respond":
        return {"t": T, "public": w.public}
    if entry in ("sdk_choose", "sdk_privatize"):  # one user: no replication axis
        return {
            "t": T,
            "public": _first_user(w.public),
            "contexts": w.X[0],
            "actions": w.a[0],
            "rewards": w.r[0],
        }
    return {
        "t": T,
        "public": w.public,
        "contexts": w.X,
        "actions": w.a,
        "rewards": w.r,
        "message": w.msg,
        "batch": w.batch,
    }


def _first_user(public: Any) -> Any:
    """The public state a single device receives: the first row of every per-user field."""
    from privbandits.core.messages import PublicState

    return PublicState(
        {k: (v[:1] if np.ndim(v) and np.shape(v)[0] == R else v) for k, v in public.items()}
    )


def make_case(w: World, case: Case) -> tuple[dict[str, Any], str]:
    """The arguments of ``case`` and its expectation."""
    args = honest_args(w, case.entry)
    K = w.spec.K
    if case.arg == "t":
        args["t"], expect = TIMES[case.mutation]
        return args, expect
    if case.arg == "public":
        if case.entry.startswith("sdk_") or case.entry == "respond":
            users = 1 if case.entry.startswith("sdk_") else R
            args["public"], expect = mutate_public(
                w, w.alg.client, case.mutation, case.pos, users, args["public"]
            )
            return args, expect
        users = (
            np.asarray(args["contexts"]).shape[-3 if w.spec.setting == "single" else -2]
            if "contexts" in args and not w.convex
            else R
        )
        args["public"], expect = mutate_public(w, w.alg.client, case.mutation, case.pos, users)
        return args, expect
    if case.arg == "message":
        args["message"], expect = mutate_message(args["message"], case.mutation, case.pos, K)
        return args, expect
    if case.arg == "batch":
        args["batch"], expect = mutate_batch(args["batch"], case.mutation, case.pos, K)
        return args, expect
    kind = "actions" if case.arg == "actions" and not w.convex else case.arg
    value, expect = mutate_array(np.asarray(args[case.arg]), case.mutation, case.pos, K)
    args[case.arg] = value
    batched = case.entry in ("choose_batch", "randomize_batch")
    if (
        kind == "contexts"
        and case.mutation in ("grow_first", "shrink_first", "empty_first")
        and (
            (not batched and case.entry in ("choose", "device_choose"))
            or case.entry == "choose_batch"
        )
    ):
        expect = "valid"  # another number of users (or of a batch's rounds) is a valid call on the device
    return args, expect


def canonical(args: dict[str, Any], case: Case, w: World) -> dict[str, Any]:
    """The arguments of a ``same`` case as contiguous float64 / int64 arrays (same values)."""
    from privbandits.core.messages import PublicState

    out = dict(args)
    if case.arg == "t":
        out["t"] = int(args["t"])
    elif case.arg == "public":
        out["public"] = (
            honest_args(w, case.entry)["public"]
            if args["public"] is None
            else PublicState({k: np.array(v) for k, v in dict(args["public"]).items()})
        )
    elif case.arg in ("contexts", "rewards") or (case.arg == "actions" and w.convex):
        out[case.arg] = np.array(
            np.asarray(args[case.arg], dtype=float)
        )  # a C-contiguous copy, same shape
    elif case.arg == "actions":
        out["actions"] = np.array(np.asarray(args["actions"], dtype=float).astype(np.int64))
    return out


def check_output(w: World, case: Case, args: dict[str, Any], out: Any) -> None:
    """A well-formed output of ``case.entry`` (raises :class:`Mismatch`)."""
    from privbandits.core.messages import PrivatizedMessage, PublicState

    K = w.spec.K
    e = case.entry
    if e == "sdk_choose":
        if not isinstance(out, int) or not 0 <= out < K:
            raise Mismatch(f"returned {out!r}; expected an arm index in [0, {K})")
        return
    if e == "sdk_privatize":
        report = out.get("report") if isinstance(out, dict) else None
        if not isinstance(report, dict) or set(report) != set(w.msg.payload):
            raise Mismatch(
                f"returned {_short(out)}; expected a report with fields {sorted(w.msg.payload)}"
            )
        for k, v in report.items():
            v = np.asarray(v)
            h = np.asarray(w.msg.payload[k])
            if v.shape != h.shape[1:] or (v.size and not np.isfinite(v.astype(float)).all()):
                raise Mismatch(
                    f"report field {k!r} has shape {v.shape} (honest {h.shape[1:]}) or non-finite values"
                )
        return
    if e in ("choose", "device_choose", "select", "update", "choose_batch"):
        a = np.asarray(out)
        if w.convex:
            if (
                a.dtype.kind != "f"
                or a.shape[1:] != np.asarray(w.a).shape[1:]
                or not np.isfinite(a).all()
            ):
                raise Mismatch(
                    f"query points {a.dtype} {a.shape} (honest {np.asarray(w.a).shape}) or non-finite"
                )
            return
        X = np.asarray(args.get("contexts", w.X)) if e != "update" else w.X
        n_users = (
            w.alg.R
            if e in ("select", "update")
            else (X.shape[:2] if e == "choose_batch" else (X.shape[0],))
        )
        want = (n_users,) if isinstance(n_users, int) else tuple(n_users)
        if (
            a.shape != want
            or a.dtype.kind not in "iu"
            or (a.size and (a.min() < 0 or a.max() >= K))
        ):
            raise Mismatch(
                f"returned arms {a!r} (dtype {a.dtype}, shape {a.shape}); expected {want} in [0, {K})"
            )
        return
    if e in ("randomize", "device_randomize"):
        _check_message(w, out)
        return
    if e in ("randomize_batch", "respond"):
        if not isinstance(out, list) or not all(isinstance(m, PrivatizedMessage) for m in out):
            raise Mismatch(f"returned {type(out).__name__}, not a list of PrivatizedMessage")
        for m in out:
            for k, v in m.payload.items():
                if (
                    np.asarray(v).dtype.kind not in "iufb"
                    or not np.isfinite(np.asarray(v, dtype=float)).all()
                ):
                    raise Mismatch(f"message field {k!r} holds non-finite or non-numeric values")
        return
    if e in ("receive", "receive_batch", "collect"):
        if not isinstance(out, PublicState):
            raise Mismatch(f"public state after the update is {type(out).__name__}")
        return


def _check_message(w: World, out: Any) -> None:
    from privbandits.core.messages import PrivatizedMessage

    if not isinstance(out, PrivatizedMessage):
        raise Mismatch(f"returned {type(out).__name__}, not a PrivatizedMessage")
    honest = w.msg.payload
    if set(out.payload) != set(honest) or out.mechanism != w.msg.mechanism:
        raise Mismatch(
            f"message fields {sorted(out.payload)} / {out.mechanism!r}, honest {sorted(honest)} / "
            f"{w.msg.mechanism!r}"
        )
    for k, v in out.payload.items():
        v = np.asarray(v)
        h = np.asarray(honest[k])
        if v.shape[1:] != h.shape[1:] or v.dtype.kind != h.dtype.kind:
            raise Mismatch(
                f"message field {k!r} is {v.dtype} {v.shape}, honest {h.dtype} {h.shape}"
            )
        if v.dtype.kind == "f" and not np.isfinite(v).all():
            raise Mismatch(f"message field {k!r} holds NaN or infinite values")


def _same(x: Any, y: Any) -> bool:
    from privbandits.core.messages import PrivatizedMessage

    if isinstance(x, PrivatizedMessage) and isinstance(y, PrivatizedMessage):
        return (
            x.mechanism == y.mechanism
            and set(x.payload) == set(y.payload)
            and all(_same(x.payload[k], y.payload[k]) for k in x.payload)
        )
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    if isinstance(x, Mapping) and isinstance(y, Mapping):
        return set(x) == set(y) and all(_same(x[k], y[k]) for k in x)
    a, b = np.asarray(x), np.asarray(y)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def run_case(w: World, case: Case) -> None:
    """Run one case on a copy of ``w`` (raises :class:`Mismatch` with the reason)."""
    from privbandits.core.errors import PrivbanditsError

    args, expect = make_case(w, case)
    try:
        out = _call(w, case.entry, args)
    except PrivbanditsError:
        return
    except Exception as exc:  # IndexError, TypeError, numba errors, ...: not a clear error
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        raise Mismatch(
            f"{type(exc).__name__}: {str(exc)[:300]} (at {tb.filename}:{tb.lineno})"
        ) from None
    if expect == "error":
        raise Mismatch(f"accepted (expected a PrivbanditsError); returned {_short(out)}")
    check_output(w, case, args, out)
    if expect == "same":
        try:
            ref = _call(w, case.entry, canonical(args, case, w))
        except PrivbanditsError as exc:
            raise Mismatch(
                f"accepted, but the canonical call raises {type(exc).__name__}: {exc}"
            ) from None
        if not _same(out, ref):
            raise Mismatch(
                f"output {_short(out)} differs from the canonical call's {_short(ref)}: values "
                "that were not passed in"
            )


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) < 200 else text[:200] + "..."


# -- the sweep and the hypothesis search ---------------------------------------------------------
def arg_mutations(w: World, entry: str, arg: str) -> list[str]:
    if arg == "t":
        return list(TIMES)
    if arg == "public":
        return public_mutations(w)
    if arg == "message":
        return message_mutations()
    if arg == "batch":
        return batch_mutations()
    return array_mutations("points" if arg == "actions" and w.convex else arg)


def sweep(w: World, entry: str) -> Iterator[Case]:
    for arg in entries(w)[entry]:
        for m in arg_mutations(w, entry, arg):
            yield Case(w.name, entry, arg, m, 0)


def fuzz_entry(
    w: World,
    entry: str,
    examples: int,
    progress: Callable[[Case], None],
    report: Callable[[Case, str], None],
    skip: set[str],
) -> int:
    """Sweep then ``examples`` hypothesis cases at ``entry``; failures go to ``report`` (the first
    of each argument and mutation); returns the number of cases run."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    seen: set[tuple[str, str]] = set()
    count = 0

    def one(case: Case) -> None:
        nonlocal count
        if case.text() in skip:
            return
        count += 1
        progress(case)
        if CRASH_AT and CRASH_AT in case.text():  # the harness's own test: a crash mid-case
            os.kill(os.getpid(), signal.SIGSEGV)
        try:
            run_case(w, case)
        except Mismatch as exc:
            if (case.arg, case.mutation) not in seen:
                seen.add((case.arg, case.mutation))
                report(case, " ".join(_ANSI.sub("", str(exc)).split())[:400])

    honest = Case(w.name, entry, "-", "honest", 0)
    progress(honest)
    try:  # the honest call must succeed, or every refusal below proves nothing
        check_output(w, honest, honest_args(w, entry), _call(w, entry, honest_args(w, entry)))
    except Exception as exc:
        report(
            honest,
            f"the honest call fails ({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); "
            "the fuzz of this entry point would prove nothing",
        )
        return 1
    for case in sweep(w, entry):
        one(case)
    if examples <= 0:
        return count
    pairs = [(c.arg, c.mutation) for c in sweep(w, entry)]

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.sampled_from(pairs), st.integers(1, 2**31 - 1))
    def search(pair: tuple[str, str], pos: int) -> None:
        one(Case(w.name, entry, pair[0], pair[1], pos))

    search()
    return count


#: Terminal colour codes in numba's messages.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: ``--crash-at``: the case (substring of its text) at which the worker kills itself with SIGSEGV.
CRASH_AT = ""
ENTRIES = (
    "select",
    "update",
    "choose",
    "randomize",
    "device_choose",
    "device_randomize",
    "choose_batch",
    "randomize_batch",
    "respond",
    "sdk_choose",
    "sdk_privatize",
    "receive",
    "receive_batch",
    "collect",
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("algorithms", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--progress", required=True)
    ap.add_argument("--examples", type=int, default=0)
    ap.add_argument(
        "--skip",
        default="",
        help="file of ALGORITHM::ENTRY done and case texts to skip, one a line",
    )
    ap.add_argument(
        "--entries", default="", help="comma-separated entry points to fuzz (default: all)"
    )
    ap.add_argument(
        "--crash-at", default="", help="kill the worker (SIGSEGV) at this case (tests the harness)"
    )
    ns = ap.parse_args(argv)
    global CRASH_AT
    CRASH_AT = ns.crash_at
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    skip: set[str] = set()
    if ns.skip:
        with open(ns.skip) as fh:
            skip = {line.rstrip("\n") for line in fh if line.strip()}

    def write(record: dict[str, Any]) -> None:
        with open(ns.out, "a") as fh:
            fh.write(json.dumps(record) + "\n")

    def progress_text(alg: str, entry: str, text: str) -> None:
        with open(ns.progress, "w") as fh:
            fh.write(json.dumps({"alg": alg, "entry": entry, "case": text}))

    def progress(case: Case) -> None:
        progress_text(case.alg, case.entry, case.text())

    def report(case: Case, error: str) -> None:
        write(
            {
                "type": "failure",
                "alg": case.alg,
                "entry": case.entry,
                "case": case.text(),
                "error": error,
            }
        )

    for name in ns.algorithms:
        if all(f"{name}::{e}" in skip for e in ENTRIES):
            continue
        progress_text(name, "reset", f"{name} reset")
        try:
            w = build(name)
        except Exception as exc:
            write(
                {
                    "type": "failure",
                    "alg": name,
                    "entry": "reset",
                    "case": f"{name} reset",
                    "error": f"{type(exc).__name__}: {exc}",
                }
            )
            write({"type": "done", "alg": name, "entry": "reset", "cases": 1})
            continue
        only = set(filter(None, ns.entries.split(",")))
        for entry in entries(w):
            if f"{name}::{entry}" in skip or (only and entry not in only):
                continue
            n = fuzz_entry(w, entry, ns.examples, progress, report, skip)
            write({"type": "done", "alg": name, "entry": entry, "cases": n})
    return 0


if __name__ == "__main__":
    sys.exit(main())
