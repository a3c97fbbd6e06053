"""Fused runs: several algorithms advanced together over one draw of the environment.

The environment of a seed is the same for every algorithm (common random numbers: its instance,
contexts and reward variates come from the seed's ``instance``, ``contexts`` and ``rewards``
streams only), so the work units of a figure that share an environment, a seed, a horizon, a
number of replications and checkpoints draw the *same* chunks.  :func:`simulate_fused` draws each
chunk once and advances every algorithm's compiled kernel over it in turn
(:class:`~privbandits.engine.compiled.ChunkRunner`), each algorithm with its own random streams
(``policy``, ``client``, ``server`` of a fresh :func:`~privbandits.core.rng.make_streams` of the
seed, as :func:`~privbandits.simulate.simulate` gives it) and its own recorder.  Every result is
bit-identical to the algorithm's own :func:`~privbandits.simulate.simulate` run; only the
environment's cost is paid once.

Algorithms that do not run on the compiled per-round driver (the reference driver, the aggregate
path, shuffle batches, loss environments) are run on their own by :func:`~privbandits.simulate.simulate`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privbandits.algorithms.base import Algorithm
from privbandits.core.rng import make_streams
from privbandits.core.validation import check_int
from privbandits.engine.batches import supports_batches
from privbandits.engine.compiled import ChunkRunner, chunk_arrays, compiled_kernel
from privbandits.engine.convex import is_convex_env
from privbandits.engine.recorder import Recorder
from privbandits.envs.base import Environment
from privbandits.privacy.inputs import check_client_inputs

__all__ = ["fusable", "simulate_fused"]

#: ``progress(i, rounds_done)`` for algorithm ``i`` of a fused run.
FusedProgress = Callable[[int, int], None]


def fusable(alg: Algorithm, env: Environment, engine: str = "auto") -> bool:
    """Whether ``alg`` (after reset on ``env``) runs on the compiled per-round driver under
    ``engine``, the only driver a fused run shares the environment's chunks with."""
    from privbandits.simulate import _pick_engine

    if engine not in ("auto", "compiled"):
        return False
    try:
        chosen = _pick_engine(engine, alg, env)
    except Exception:  # the algorithm's own run reports it
        return False
    return (
        chosen == "compiled"
        and compiled_kernel(alg) is not None
        and not supports_batches(alg)
        and not is_convex_env(env)
    )


def simulate_fused(
    algorithms: Sequence[Algorithm],
    make_env: Callable[[], Environment],
    horizon: int,
    replications: int = 1,
    seed: int = 0,
    checkpoints: Sequence[int] | np.ndarray | int | None = None,
    engines: Sequence[str] | None = None,
    progress: FusedProgress | None = None,
) -> list[Any]:
    """Run every algorithm of ``algorithms`` on the environment ``make_env()`` with one seed, the
    environment drawn once for all that run on the compiled driver.

    Parameters
    ----------
    algorithms : sequence of Algorithm
        Freshly constructed algorithms (each is reset here with its own streams of ``seed``).
    make_env : callable
        Builds the environment (called once for the fused run and once per algorithm that runs
        on its own).
    horizon, replications, seed, checkpoints
        As for :func:`~privbandits.simulate.simulate` (shared by all).
    engines : sequence of str, optional
        The ``engine`` of each algorithm (default "auto"); only "auto" and "compiled" fuse.
    progress : callable, optional
        ``progress(i, rounds_done)``.

    Returns
    -------
    list of SimulationResult
        In the order of ``algorithms``, each bit-identical to ``simulate(alg, make_env(), ...)``
        (``wall_time``: the algorithm's own share of the loop plus an equal share of the
        environment's draws).
    """
    from privbandits.simulate import make_checkpoints, run_result, simulate

    T = check_int("horizon", horizon, 1)
    R = check_int("replications", replications, 1)
    engines = list(engines) if engines is not None else ["auto"] * len(algorithms)
    if isinstance(checkpoints, (int, np.integer)):
        ckpt = make_checkpoints(T, log_points=int(checkpoints))
    elif checkpoints is None:
        ckpt = make_checkpoints(T)
    else:
        ckpt = make_checkpoints(
            T, log_points=0, points=[int(c) for c in np.asarray(checkpoints).ravel()]
        )
    env = make_env()
    spec = env.reset(R, make_streams(seed), T)
    fused: list[int] = []
    for i, (alg, engine) in enumerate(zip(algorithms, engines)):
        alg.reset(spec, R, make_streams(seed))
        if fusable(alg, env, engine):
            fused.append(i)
    results: list[Any] = [None] * len(algorithms)
    for i, (alg, engine) in enumerate(zip(algorithms, engines)):
        if i not in fused:
            results[i] = simulate(
                alg,
                make_env(),
                horizon=T,
                replications=R,
                seed=seed,
                checkpoints=ckpt,
                engine=engine,
                progress=None if progress is None else (lambda t, i=i: progress(i, t)),  # type: ignore[misc]
            )
    if not fused:
        return results
    runners = [ChunkRunner(algorithms[i]) for i in fused]
    recs = [Recorder(algorithms[i].estimate, env.theta_star, R, ckpt) for i in fused]
    own = [0.0] * len(fused)
    env_time = 0.0
    stride = max(1, T // 200)
    last = 0
    t = 0
    while t < T:
        t0 = time.perf_counter()
        ch = env.next_chunk()
        B = min(ch.B, T - t)
        arrays = chunk_arrays(ch)
        checked: set[float] = set()
        for run in runners:  # the users' own data, checked once per declared bound
            if run.local and run.bound not in checked:
                check_client_inputs(arrays[0][:B], arrays[2][:B], run.bound)
                checked.add(run.bound)
        env_time += time.perf_counter() - t0
        for j, (run, rec) in enumerate(zip(runners, recs)):
            t1 = time.perf_counter()
            run(arrays, B, t, rec)
            own[j] += time.perf_counter() - t1
        env.t = t + B
        t += B
        if progress is not None and (t - last >= stride or t == T):
            last = t
            for i in fused:
                progress(i, t)
    for j, i in enumerate(fused):
        results[i] = run_result(
            algorithms[i],
            env,
            recs[j],
            seed,
            T,
            R,
            ckpt,
            own[j] + env_time / len(fused),
            "compiled",
        )
    return results
