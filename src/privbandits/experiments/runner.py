"""The sweep runner: expand, skip what is stored, execute the rest, store each unit as it finishes.

Execution backends (the documentation's Concepts: running at scale):

* ``workers = 1``: units run one after another in this process;
* ``workers >= 2``: a :class:`~concurrent.futures.ProcessPoolExecutor` (spawned processes, which
  ignore SIGINT so that Ctrl-C is handled once, by the parent);
* ``scheduler = "tcp://host:8786"`` or a ``distributed.Client``: a Dask distributed cluster
  (optional ``cluster`` extra, imported lazily).

Whatever the backend, only this (parent) process writes to the results store, one transaction per
finished unit, so killing a run at any moment leaves complete rows only, and rerunning the same
configuration executes just the missing units (resume).

Fused runs (local backends; on by default, the groups split over the workers by estimated cost:
measured end to end they save CPU and wall time): the missing units that share an environment, a seed, a
horizon, replications and checkpoints (every algorithm and epsilon of a figure) are executed
together, the environment drawn once for all of them
(:func:`~privbandits.experiments.units.execute_group`); each unit's result is bit-identical to its
own run and is stored in its own transaction.  ``fuse=False`` (or the environment variable
``PRIVBANDITS_FUSE=0``) turns them off.
"""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.connection as mp_connection
import os
import queue as queue_mod
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from privbandits.core.errors import PrivbanditsError, ValidationError
from privbandits.core.validation import check_int
from privbandits.envs.datasets.filecache import loading_status
from privbandits.experiments.config import ExperimentConfig
from privbandits.experiments.store import ResultsStore, StoredResult
from privbandits.experiments.units import (
    WorkUnit,
    execute_group,
    execute_unit,
    fused_groups,
    prepare_data,
)
from privbandits.simulate import SimulationResult

__all__ = ["RunReport", "default_workers", "run_experiment", "run_units"]

OnDone = Callable[[int, SimulationResult], None]


def default_workers() -> int:
    """``min(2, number of CPUs)``."""
    return max(1, min(2, os.cpu_count() or 1))


@dataclass
class RunReport:
    """What a run did: every unit of the configuration, how many were skipped or executed."""

    units: list[WorkUnit]
    skipped: int
    executed: int
    wall_time: float
    results: list[StoredResult] = field(default_factory=list)


# ------------------------------------------------------------------------------------------
# progress display
# ------------------------------------------------------------------------------------------
class _Progress:
    """Two rich bars (units, rounds); a no-op when quiet."""

    def __init__(self, units: Sequence[WorkUnit], quiet: bool, console: Console | None) -> None:
        self.horizons = [u.horizon for u in units]
        self.done_rounds = [0] * len(units)
        self.bar: Progress | None = None
        if quiet or not units:
            return
        self.bar = Progress(
            TextColumn("{task.description:>7}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.t_units = self.bar.add_task("units", total=len(units))
        self.t_rounds = self.bar.add_task("rounds", total=sum(self.horizons))

    def __enter__(self) -> _Progress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def rounds(self, i: int, done: int) -> None:
        delta = max(0, min(done, self.horizons[i]) - self.done_rounds[i])
        self.done_rounds[i] += delta
        if self.bar is not None and delta:
            self.bar.advance(self.t_rounds, delta)

    def unit_done(self, i: int) -> None:
        self.rounds(i, self.horizons[i])
        if self.bar is not None:
            self.bar.advance(self.t_units, 1)


# ------------------------------------------------------------------------------------------
# backends
# ------------------------------------------------------------------------------------------
def _run_serial(
    units: Sequence[WorkUnit], groups: list[list[int]], on_done: OnDone, progress: _Progress
) -> None:
    for group in groups:
        members = [units[i] for i in group]
        results = _execute_group(members, lambda j, t, group=group: progress.rounds(group[j], t))  # type: ignore[misc]
        _deliver(group, members, results, on_done)


GroupResult = list["SimulationResult | PrivbanditsError"]


def _execute_group(units: Sequence[WorkUnit], report: Callable[[int, int], None]) -> GroupResult:
    """The results of a fused group, or, if one of its units fails, every unit run on its own (so
    the others are still stored and the failure names its own unit): a result or the error of
    each unit, in order."""
    try:
        return list(execute_group(units, report))
    except PrivbanditsError as exc:
        if len(units) == 1:
            return [exc]
    out: GroupResult = []
    for j, unit in enumerate(units):
        try:
            out.append(execute_unit(unit, lambda t, j=j: report(j, t)))  # type: ignore[misc]
        except PrivbanditsError as exc:
            out.append(exc)
    return out


def _deliver(
    group: Sequence[int], units: Sequence[WorkUnit], results: GroupResult, on_done: OnDone
) -> None:
    """Store every finished unit of a group, then raise the first failure (named by its unit)."""
    failed: tuple[WorkUnit, PrivbanditsError] | None = None
    for i, unit, result in zip(group, units, results):
        if isinstance(result, PrivbanditsError):
            failed = failed or (unit, result)
        else:
            on_done(i, result)
    if failed is not None:
        unit, exc = failed

        def fail() -> SimulationResult:
            raise exc

        _guarded(unit, fail)


def _guarded_group(units: Sequence[WorkUnit], fn: Callable[[], GroupResult]) -> GroupResult:
    """``fn()`` for a fused group run in a worker (the death of the worker names every unit of
    the group)."""
    try:
        return fn()
    except BrokenProcessPool:
        names = ", ".join(f"{u.describe()} ({u.algorithm})" for u in units)
        raise PrivbanditsError(
            f"a worker process died while running the work units {names}, for example out of "
            "memory; finished units are stored, rerun to resume (try fewer --workers or "
            "PRIVBANDITS_FUSE=0)"
        ) from None


def _guarded(unit: WorkUnit, fn: Callable[[], SimulationResult]) -> SimulationResult:
    """Call ``fn`` and name the unit in any library error (or in the death of its worker)."""
    try:
        return fn()
    except PrivbanditsError as exc:
        msg = f"work unit {unit.describe()} ({unit.algorithm}) failed: {exc}"
        try:
            named = type(exc)(msg)
        except TypeError:  # a subclass with a different constructor
            named = PrivbanditsError(msg)
        raise named from None
    except BrokenProcessPool:
        raise PrivbanditsError(
            f"a worker process died while running work unit {unit.describe()} "
            f"({unit.algorithm}), for example out of memory; finished units are stored, "
            "rerun to resume (try fewer --workers)"
        ) from None


_WORKER_QUEUE: Any = None  # set in each worker process by _init_worker (never in the parent)


def _init_worker(progress_queue: Any) -> None:
    """Worker set-up: ignore Ctrl-C, keep the progress queue, and die with the parent."""
    global _WORKER_QUEUE
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C once
    _WORKER_QUEUE = progress_queue
    parent = mp.parent_process()
    if parent is not None:  # a SIGKILLed parent must not leave idle workers behind forever
        threading.Thread(target=_exit_with_parent, args=(parent.sentinel,), daemon=True).start()


def _exit_with_parent(sentinel: int) -> None:
    mp_connection.wait([sentinel])  # ready when the parent process has ended, however it ended
    os._exit(1)


def _worker_execute(indices: list[int], units: list[WorkUnit]) -> GroupResult:
    q = _WORKER_QUEUE

    def report(j: int, t: int) -> None:
        if q is not None:
            q.put_nowait((indices[j], t))

    return _execute_group(units, report)


def _terminate_pool(ex: ProcessPoolExecutor) -> None:
    """Stop worker processes now (used on interrupt or failure; nothing they hold is stored)."""
    procs = list(getattr(ex, "_processes", {}).values())  # private, stable since Python 3.2
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)
    ex.shutdown(wait=True, cancel_futures=True)


def _run_pool(
    units: Sequence[WorkUnit],
    groups: list[list[int]],
    workers: int,
    on_done: OnDone,
    progress: _Progress,
) -> None:
    ctx = mp.get_context("spawn")
    progress_queue = ctx.Queue()
    ex = ProcessPoolExecutor(
        max_workers=min(workers, len(groups)),
        mp_context=ctx,
        initializer=_init_worker,
        initargs=(progress_queue,),
    )
    clean = False
    try:
        futures: dict[Future[GroupResult], int] = {
            ex.submit(_worker_execute, g, [units[i] for i in g]): k for k, g in enumerate(groups)
        }
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            _drain(progress_queue, progress)
            for fut in sorted(done, key=futures.__getitem__):
                group = groups[futures[fut]]
                members = [units[i] for i in group]
                results = _guarded_group(members, fut.result)
                _deliver(group, members, results, on_done)
        clean = True
    finally:
        if clean:
            ex.shutdown(wait=True)
        else:
            _terminate_pool(ex)
        progress_queue.close()
        progress_queue.join_thread()


def _drain(progress_queue: Any, progress: _Progress) -> None:
    while True:
        try:
            i, t = progress_queue.get_nowait()
        except queue_mod.Empty:
            return
        progress.rounds(i, t)


def _dask_client(scheduler: Any) -> tuple[Any, bool]:
    try:
        import distributed
    except ImportError:
        raise PrivbanditsError(
            "running on a Dask cluster needs the cluster extra: pip install privbandits[cluster]"
        ) from None
    if isinstance(scheduler, distributed.Client):
        return scheduler, False
    if not isinstance(scheduler, str) or not scheduler:
        raise ValidationError(
            f"scheduler must be an address like 'tcp://host:8786' or a distributed.Client, "
            f"got {scheduler!r}"
        )
    try:
        return distributed.Client(scheduler, timeout="20s"), True
    except (OSError, TimeoutError) as exc:
        raise PrivbanditsError(
            f"cannot connect to the Dask scheduler at {scheduler!r}: {exc}"
        ) from None


def _run_dask(
    units: Sequence[WorkUnit], scheduler: Any, on_done: OnDone, progress: _Progress
) -> None:
    client, owned = _dask_client(scheduler)
    import distributed

    futures: list[Any] = []
    try:
        futures = [
            client.submit(execute_unit, u, pure=False, key=f"privbandits-{u.key()[:20]}-{i}")
            for i, u in enumerate(units)
        ]
        index = {f.key: i for i, f in enumerate(futures)}
        for fut in distributed.as_completed(futures):
            i = index[fut.key]
            on_done(i, _guarded(units[i], fut.result))
    finally:
        unfinished = [f for f in futures if not f.done()]
        if unfinished:
            client.cancel(unfinished)
        if owned:
            client.close()


# ------------------------------------------------------------------------------------------
# entry points
# ------------------------------------------------------------------------------------------
def run_units(
    units: Sequence[WorkUnit],
    store: ResultsStore,
    *,
    workers: int | None = None,
    scheduler: Any = None,
    quiet: bool = False,
    console: Console | None = None,
    fuse: bool | None = None,
) -> RunReport:
    """Execute the units not yet in ``store`` and store each one as soon as it finishes.

    Parameters
    ----------
    units : sequence of WorkUnit
        The work to do (duplicates by key are run once).
    store : ResultsStore
        Where finished units are written (by this process only).
    workers : int, optional
        Local worker processes; default :func:`default_workers`.  1 runs in this process.
    scheduler : str or distributed.Client, optional
        Run on a Dask cluster instead of local processes.
    quiet : bool
        No progress bar and no messages.
    console : rich.console.Console, optional
        Where the progress bar and messages go.
    fuse : bool, optional
        Advance the units that share an environment, seed, horizon, replications and checkpoints
        together over one environment draw (local backends; results bit-identical, each unit
        stored on its own).  Default: on, unless the environment variable ``PRIVBANDITS_FUSE``
        is ``0``.

    Returns
    -------
    RunReport
        With ``results`` read back from the store, in the order of ``units``.

    Notes
    -----
    Worker processes are *spawned*: a script that calls this with ``workers >= 2`` needs the usual
    ``if __name__ == "__main__":`` guard.
    """
    start = time.perf_counter()
    n_workers = default_workers() if workers is None else check_int("workers", workers, 1)
    unique = list({u.key(): u for u in units}.values())
    stored = store.existing_keys(u.key() for u in unique)
    missing = [u for u in unique if u.key() not in stored]
    console = console or Console(stderr=True)
    if not quiet:
        where = (
            f"Dask scheduler {scheduler}"
            if isinstance(scheduler, str)
            else (
                "a Dask cluster"
                if scheduler is not None
                else f"{min(n_workers, max(1, len(missing)))} worker(s)"
            )
        )
        console.print(
            f"{len(unique)} work units: {len(stored)} already stored, {len(missing)} to run on {where}; "
            f"results -> {store.path}"
        )

    if missing and quiet:
        prepare_data(missing)
    elif missing:  # parse data files here, once, before workers open the cached arrays
        with console.status("preparing data files") as spinner, loading_status(spinner.update):
            prepare_data(missing)

    with _Progress(missing, quiet, console) as progress:

        def on_done(i: int, result: SimulationResult) -> None:
            store.put(missing[i], result)
            progress.unit_done(i)

        if not missing:
            pass
        elif scheduler is not None:
            _run_dask(missing, scheduler, on_done, progress)
        else:
            if fuse is None:
                fuse = os.environ.get("PRIVBANDITS_FUSE", "1").strip().lower() not in (
                    "0",
                    "false",
                    "no",
                )
            serial = n_workers == 1 or len(missing) == 1
            groups = (
                fused_groups(missing, 1 if serial else n_workers)
                if fuse
                else [[i] for i in range(len(missing))]
            )
            if serial or len(groups) == 1:
                _run_serial(missing, groups, on_done, progress)
            else:
                _run_pool(missing, groups, n_workers, on_done, progress)

    results = store.load(keys=[u.key() for u in units])
    return RunReport(
        units=list(units),
        skipped=len(stored),
        executed=len(missing),
        wall_time=time.perf_counter() - start,
        results=results,
    )


def run_experiment(config: ExperimentConfig, store: ResultsStore, **kwargs: Any) -> RunReport:
    """Expand ``config`` into work units and :func:`run_units` them (same keyword arguments)."""
    return run_units(config.units(), store, **kwargs)
