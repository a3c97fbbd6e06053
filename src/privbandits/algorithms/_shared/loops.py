"""The round loops around an algorithm's compiled steps, generated once per algorithm and cached.

Both drivers call an algorithm's steps (:mod:`privbandits.algorithms.kernel`) through loops: one
round over all replications (the reference driver's client / server / curator calls) and many
rounds over all replications (the compiled driver).  The loops are written once, as the
templates below.  numba cannot cache a compiled function that receives other compiled functions
as arguments, so for every algorithm the templates are instantiated as a small module that
imports its steps by name, written to the compiled-code cache (:mod:`privbandits._cache`) and
imported: the loops are then compiled once per installation and loaded from disk afterwards.
Steps that cannot be imported by name (defined in ``__main__`` or inside a function) get the same
loops compiled in memory, without disk caching.

The compiled driver's chunk loop is instantiated twice (:data:`RUNS`): ``run``, with numba's
runtime, and ``run_borrowed``, without it (``_nrt=False``; numba compiles the steps a loop calls
with the loop's flags).  Without the runtime nothing counts references to the arrays the loop
and its steps read, write and slice: every array is borrowed from the caller for the duration of
the call, and no atomic increment / decrement is paid per array per step call (at d = 2, 40 % of
a per-round local algorithm's time went to them).  A kernel whose steps allocate no arrays
declares ``allocates = False`` and runs on ``run_borrowed``.  A rarely taken branch that needs
numpy's allocating routines (an eigendecomposition at the end of a batch) goes into a function
pinned to the runtime (:func:`~privbandits.algorithms.kernel.pinned`, ``_nrt=True``: numba keeps
a flag set on the function) that returns no array: it frees what it allocates itself, and the
borrowed arrays it receives carry no reference count to change.  Allocating steps fail to compile
in the borrowed loop when they are compiled for it (numba's typing rejects ``np.empty`` and the
like without the runtime); a step compiled earlier in the process with the runtime is reused as
it is, so the declarations are checked in a fresh process by the test suite.  Reference counting
never changes a value: both loops give the same trajectory.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import tempfile
from types import ModuleType, SimpleNamespace
from typing import Any

import numba as nb

from privbandits._cache import cache_dir

__all__ = [
    "convex_curator_loops",
    "convex_local_loops",
    "curator_loops",
    "local_loops",
    "proposal_loops",
]

#: The chunk loop's two instantiations: ``(name, compiled with the numba runtime)``.
RUNS = (("run", True), ("run_borrowed", False))

#: Curator: ``select_all`` / ``update_all`` advance one round of every replication (reference
#: driver); ``run`` advances rounds ``start .. stop - 1`` of a chunk (compiled driver).
CURATOR_TEMPLATE = """
@nb.njit(cache=CACHE)
def select_all(params, state, t, X, rng, out):
    for r in range(out.shape[0]):
        out[r] = select(params, state, r, t, X[r], rng)


@nb.njit(cache=CACHE)
def update_all(params, state, t, X, a, y, rng):
    for r in range(a.shape[0]):
        update(params, state, r, t, X[r], a[r], y[r], rng)

"""

#: The curator's chunk loop, instantiated twice (:data:`RUNS`).
CURATOR_RUN = """
@nb.njit(cache=CACHE, _nrt=NRT)
def NAME(params, state, X, means, rewards, best, start, stop, t0, rng_policy, rng_server,
        cum_regret, cum_reward):
    R = best.shape[1]
    for i in range(start, stop):
        t = t0 + i
        for r in range(R):
            a = select(params, state, r, t, X[i, r], rng_policy)
            y = rewards[i, r, a]
            cum_regret[r] += best[i, r] - means[i, r, a]
            cum_reward[r] += y
            update(params, state, r, t, X[i, r], a, y, rng_server)
"""

#: Local model: the user side (``choose_all``, ``randomize_all``) and the server side
#: (``update_all``) of one round; ``run``: the user chooses from the public state, randomizes its
#: own data into ``msg``, and the server updates from ``msg`` only.
LOCAL_TEMPLATE = """
@nb.njit(cache=CACHE)
def choose_all(params, public, t, X, rng, out):
    for r in range(out.shape[0]):
        out[r] = choose(params, public, r, t, X[r], rng)


@nb.njit(cache=CACHE)
def randomize_all(params, public, t, X, a, y, rng, out):
    for r in range(a.shape[0]):
        randomize(params, public, r, t, X[r], a[r], y[r], rng, out[r])


@nb.njit(cache=CACHE)
def update_all(params, public, server, t, msg):
    for r in range(msg.shape[0]):
        update(params, public, server, r, t, msg[r])

"""

#: The local model's chunk loop, instantiated twice (:data:`RUNS`).
LOCAL_RUN = """
@nb.njit(cache=CACHE, _nrt=NRT)
def NAME(params, public, server, X, means, rewards, best, start, stop, t0, rng_policy, rng_client,
        msg, cum_regret, cum_reward):
    R = best.shape[1]
    for i in range(start, stop):
        t = t0 + i
        for r in range(R):
            a = choose(params, public, r, t, X[i, r], rng_policy)
            y = rewards[i, r, a]
            cum_regret[r] += best[i, r] - means[i, r, a]
            cum_reward[r] += y
            randomize(params, public, r, t, X[i, r], a, y, rng_client, msg)
            update(params, public, server, r, t, msg)
"""

#: Local model, optional: the user's message before noise (``encode_all``), for the device's
#: declared contract (:class:`privbandits.algorithms.kernel.KernelClient`).
ENCODE_TEMPLATE = """
@nb.njit(cache=CACHE)
def encode_all(params, public, t, X, a, y, out):
    for r in range(a.shape[0]):
        encode(params, public, r, t, X[r], a[r], y[r], out[r])
"""

#: A server that proposes each user's arm with a non-private curator's compiled steps
#: (``select``, ``update``: the black box of LDP-OnePoint, Zheng et al. 2020, Algorithm 1): the
#: user plays the proposal, its device randomizes the reward into ``msg`` (``device``), the
#: curator updates from ``msg[0]`` only; the curator sees the public arm catalogue ``catalogue[r]``.
PROPOSAL_RUN = """
@nb.njit(cache=CACHE, _nrt=NRT)
def NAME(params, bparams, bstate, catalogue, X, means, rewards, best, start, stop, t0, rng_policy,
        rng_client, rng_server, msg, cum_regret, cum_reward):
    R = best.shape[1]
    for i in range(start, stop):
        t = t0 + i
        for r in range(R):
            a = select(bparams, bstate, r, t, catalogue[r], rng_policy)
            y = rewards[i, r, a]
            cum_regret[r] += best[i, r] - means[i, r, a]
            cum_reward[r] += y
            device(params, y, rng_client, msg)
            update(bparams, bstate, r, t, catalogue[r], a, msg[0], rng_server)
"""

#: The losses of the user of replication ``r`` at its query points ``q`` ``(k, d)``, the round's
#: pseudo-regret and reward (the body shared by the two loss-environment loops below).
CONVEX_LOSSES = """\
            lsum = 0.0
            esum = 0.0
            for j in range(k):
                v = loss(kind, Rx, X[i, r], q[j])
                losses[j] = v
                lsum += v
                esum += expected(kind, Rx, center[r], pool[r], q[j])
            cum_regret[r] += esum / k - fstar[r]
            cum_reward[r] += -(lsum / k)
"""

#: Loss environments (continuous actions, :mod:`privbandits.algorithms.convex_kernel`): the curator
#: proposes ``k`` query points, the environment's compiled loss functions (``loss``, ``expected``:
#: :mod:`privbandits.envs.convex_losses`) give the user's losses there and the pseudo-regret
#: ``mean_i F(x_i) - F(x*)``; the recorded reward is minus the mean loss.
CONVEX_CURATOR_RUN = """
@nb.njit(cache=CACHE, _nrt=NRT)
def NAME(params, state, X, kind, Rx, center, pool, fstar, start, stop, t0, rng_policy, rng_server,
        points, losses, cum_regret, cum_reward):
    R = fstar.shape[0]
    k = losses.shape[0]
    for i in range(start, stop):
        t = t0 + i
        for r in range(R):
            propose(params, state, r, t, rng_policy, points)
            q = points
LOSSES            update(params, state, r, t, points, losses, rng_server)
"""

#: Loss environments, local model: the server publishes replication ``r``'s query points
#: (``public[0][r]``), the user observes its losses there and randomizes them into ``msg``, the
#: server updates from ``msg`` only.
CONVEX_LOCAL_RUN = """
@nb.njit(cache=CACHE, _nrt=NRT)
def NAME(params, public, server, X, kind, Rx, center, pool, fstar, start, stop, t0, rng_policy,
        rng_client, losses, msg, cum_regret, cum_reward):
    R = fstar.shape[0]
    k = losses.shape[0]
    points = public[0]
    for i in range(start, stop):
        t = t0 + i
        for r in range(R):
            publish(params, public, server, r, t, rng_policy)
            q = points[r]
LOSSES            randomize(params, public, r, t, losses, rng_client, msg)
            update(params, public, server, r, t, msg)
"""

_MEMO: dict[tuple[Any, ...], Any] = {}


def _import_name(fn: Any) -> tuple[str, str] | None:
    """``(module, name)`` under which the compiled function ``fn`` can be imported, or None."""
    py = getattr(fn, "py_func", None)
    if py is None:
        return None
    mod, name = py.__module__, py.__qualname__
    if mod == "__main__" or "." in name or "<" in name:
        return None
    try:
        return (mod, name) if getattr(importlib.import_module(mod), name, None) is fn else None
    except ImportError:
        return None


def _load_generated(source: str) -> ModuleType | None:
    """Write ``source`` as a module in the cache directory (once) and import it."""
    root = cache_dir()
    if root is None:
        return None
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    name = f"privbandits_loops_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    folder = root / "loops"
    path = folder / f"{name}.py"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(fd, "w") as fh:
                fh.write(source)
            os.replace(tmp, path)
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    except OSError:
        return None


def _build(template: str, steps: dict[str, Any]) -> Any:
    key = (template, tuple((k, id(v)) for k, v in steps.items()))
    if key in _MEMO:
        return _MEMO[key]
    names = {role: _import_name(fn) for role, fn in steps.items()}
    module: Any = None
    if all(names.values()):
        imports = {role: name for role, name in names.items() if name is not None}
        header = "import numba as nb\n" + "".join(
            f"from {mod} import {name} as {role}\n" for role, (mod, name) in imports.items()
        )
        module = _load_generated(header + template.replace("CACHE", "True"))
    if module is None:
        namespace: dict[str, Any] = {"nb": nb, **steps}
        exec(compile(template.replace("CACHE", "False"), "<privbandits loops>", "exec"), namespace)
        module = SimpleNamespace(**{k: v for k, v in namespace.items() if not k.startswith("__")})
    _MEMO[key] = module
    return module


def _with_runs(template: str, run: str) -> str:
    """``template`` and the chunk loop ``run`` twice: ``run`` (with the numba runtime) and
    ``run_borrowed`` (without it)."""
    return template + "".join(
        run.replace("NAME", name).replace("NRT", str(nrt)) for name, nrt in RUNS
    )


def curator_loops(select: Any, update: Any) -> Any:
    """``select_all``, ``update_all``, ``run`` and ``run_borrowed`` around a curator's compiled
    steps."""
    return _build(_with_runs(CURATOR_TEMPLATE, CURATOR_RUN), {"select": select, "update": update})


def local_loops(choose: Any, randomize: Any, update: Any, encode: Any = None) -> Any:
    """``choose_all``, ``randomize_all``, ``update_all``, ``run`` and ``run_borrowed`` around a
    local algorithm's compiled steps, and ``encode_all`` when it has an ``encode`` step."""
    steps = {"choose": choose, "randomize": randomize, "update": update}
    template = _with_runs(LOCAL_TEMPLATE, LOCAL_RUN)
    if encode is None:
        return _build(template, steps)
    return _build(template + ENCODE_TEMPLATE, {**steps, "encode": encode})


def _convex_steps() -> dict[str, Any]:
    from privbandits.envs.convex_losses import expected_at, loss_at

    return {"loss": loss_at, "expected": expected_at}


def convex_curator_loops(propose: Any, update: Any) -> Any:
    """``run`` and ``run_borrowed`` around a loss-environment curator's compiled steps."""
    steps = {"propose": propose, "update": update, **_convex_steps()}
    return _build(_with_runs("", CONVEX_CURATOR_RUN.replace("LOSSES", CONVEX_LOSSES)), steps)


def convex_local_loops(publish: Any, randomize: Any, update: Any) -> Any:
    """``run`` and ``run_borrowed`` around a loss-environment local algorithm's compiled steps."""
    steps = {"publish": publish, "randomize": randomize, "update": update, **_convex_steps()}
    return _build(_with_runs("", CONVEX_LOCAL_RUN.replace("LOSSES", CONVEX_LOSSES)), steps)


def proposal_loops(select: Any, update: Any, device: Any) -> Any:
    """``run`` and ``run_borrowed`` of a server proposing arms with a curator's compiled ``select``
    / ``update`` around a one-value device step ``device(params, y, rng, msg)``."""
    steps = {"select": select, "update": update, "device": device}
    return _build(_with_runs("", PROPOSAL_RUN), steps)
