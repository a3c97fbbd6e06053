"""Throughput of the per-round algorithms on the compiled engine (issue 8, "Targets").

For every registered per-round algorithm with a compiled kernel (or those named by
``--algorithms``), on the synthetic single-parameter linear problem (contexts i.i.d. uniform on
the unit sphere, ``theta*`` on the unit sphere, Gaussian reward noise 0.1, default parameters:
epsilon = 1, delta = 0.01 for the private ones), it measures, in replication-rounds per second
(rr/s):

* **compiled**: ``privbandits.simulate(..., engine="compiled")`` after a warm-up run (so
  compilation is excluded), best of ``--repeat`` runs;
* **env floor**: the environment alone (a loop of ``env.next_chunk()`` over the same rounds);
  ``alg ns/rr`` is what the algorithm and driver add to it, ``1e9 (1/compiled - 1/floor)``;
* **naive**: the straightforward per-replication, per-round numpy loop of the same algorithm
  with the same constants (``benchmarks/naive.py``), in the same process, and the ratio;
* **reference**: ``engine="reference"`` (message level, trust boundary checked every round);
* a regret check: mean final regret of the compiled engine and of the naive loop at the naive
  loop's horizon (same algorithm, independent random streams: they agree in law only).

Then how the cost (ns per replication-round) grows with d in {2, 5, 10, 20}, K in {2, 10, 50},
R in {1, 10, 100}; the peak resident memory and throughput at T in {1e5, 1e6} (each in a fresh
subprocess: memory must not grow with T); and the cold start (a subprocess with a fresh, empty
``NUMBA_CACHE_DIR``: import, first ``simulate`` including compilation, second one) and the
warm-cache start (the same again with the now filled cache).

Targets (issue 8): >= 3e6 rr/s per core at d = 2, K = 10, R = 10; >= 3e5 at d = 10; >= 100x the
naive loop.  Everything runs on one core (the compiled loop is single-threaded); the machine's
load average is printed, since other jobs sharing the cores lower the wall-clock rates.

Usage::

    python benchmarks/bench_algorithms.py [--quick] [--algorithms linucb,ldp-sgd] [--repeat 3]
        [--skip scaling,memory,cold,reference,naive]

Prints markdown; copy it into benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba as nb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import naive

import privbandits as pb
from privbandits.algorithms._shared.loops import curator_loops, local_loops
from privbandits.algorithms.base import Algorithm
from privbandits.algorithms.kernel import CuratorKernel, LocalKernel
from privbandits.core.rng import make_streams
from privbandits.engine.compiled import compiled_kernel
from privbandits.envs.base import MAX_CHUNK_ROUNDS

#: Problems of the targets: (d, K, R) and the rr/s target.
TARGETS: tuple[tuple[int, int, int, float], ...] = ((2, 10, 10, 3e6), (10, 10, 10, 3e5))
SPEED_UP_TARGET = 100.0
#: Algorithms whose numpy roles serve the reference driver and which keep a compiled kernel for
#: the compiled driver only (``compiled_kernel``: the Chen et al. 2025 family).
COMPILED_ONLY = ("chen-elim", "chen-jdp", "chen-ldp", "squarecb", "squarecb-jdp", "squarecb-ldp")


@dataclass(frozen=True)
class Budget:
    """How long each measurement runs (seconds of wall time, aimed at) and the fixed horizons."""

    seconds: float
    naive_seconds: float
    reference_seconds: float
    check_T: int
    memory_T: tuple[int, ...]
    repeat: int


FULL = Budget(
    seconds=1.0,
    naive_seconds=2.0,
    reference_seconds=1.0,
    check_T=2000,
    memory_T=(100_000, 1_000_000),
    repeat=3,
)
QUICK = Budget(
    seconds=0.1,
    naive_seconds=0.3,
    reference_seconds=0.1,
    check_T=300,
    memory_T=(2_000, 20_000),
    repeat=1,
)


def _env(d: int, K: int) -> pb.SyntheticEnv:
    return pb.SyntheticEnv(
        d=d, K=K, contexts="sphere", noise="gaussian", noise_scale=naive.NOISE_SCALE
    )


def _make(name: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pb.make(name)


def _simulate(
    name: str, d: int, K: int, T: int, R: int, engine: str, seed: int = 1
) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds, result) of one simulate call."""
    alg, env = _make(name), _env(d, K)
    w0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pb.simulate(
            alg, env, horizon=T, replications=R, seed=seed, checkpoints=10, engine=engine
        )
    return time.perf_counter() - w0, time.process_time() - c0, res


def _floor(d: int, K: int, T: int, R: int, seed: int = 1) -> tuple[float, float]:
    """(wall, CPU) seconds of the environment alone: the chunks the compiled driver consumes."""
    env = _env(d, K)
    env.reset(R, make_streams(seed), T)
    w0, c0 = time.perf_counter(), time.process_time()
    n = 0
    while n < T:
        ch = env.next_chunk()
        n += ch.B
    return time.perf_counter() - w0, time.process_time() - c0


def _horizon(rate: float, seconds: float, R: int, lo: int = 200) -> int:
    """Rounds that take about ``seconds`` at ``rate`` rr/s with ``R`` replications."""
    return int(max(lo, min(5_000_000, rate * seconds / R)))


def _best_rate(
    run: Callable[[int], tuple[float, float]], T: int, R: int, repeat: int
) -> tuple[float, float]:
    """(rr/s by wall clock, rr per CPU-second), each the best of ``repeat`` runs of ``run(T)``
    (which returns its wall and CPU seconds)."""
    times = [run(T) for _ in range(repeat)]
    return T * R / min(w for w, _ in times), T * R / max(min(c for _, c in times), 1e-12)


@dataclass
class Rates:
    """Throughput of the compiled engine and of the environment alone (rr/s; ``_cpu``: rr per
    CPU-second, the per-core rate that other jobs on the machine affect least)."""

    compiled: float
    compiled_cpu: float
    floor: float
    floor_cpu: float
    T: int


_RATES: dict[tuple[str, int, int, int, Budget], Rates] = {}


def compiled_rates(name: str, d: int, K: int, R: int, b: Budget) -> Rates:
    """Compiled engine and environment floor on the same rounds, after a warm-up run (measured
    once per problem and reused by the sections)."""
    key = (name, d, K, R, b)
    if key not in _RATES:
        _RATES[key] = _compiled_rates(name, d, K, R, b)
    return _RATES[key]


def _compiled_rates(name: str, d: int, K: int, R: int, b: Budget) -> Rates:
    _simulate(name, d, K, 200, R, "compiled")  # warm-up: compiles (or loads) the kernels
    w, _, _ = _simulate(name, d, K, 2000, R, "compiled")
    T = _horizon(2000 * R / w, b.seconds, R)
    comp = _best_rate(lambda T: _simulate(name, d, K, T, R, "compiled")[:2], T, R, b.repeat)
    floor = _best_rate(lambda T: _floor(d, K, T, R), T, R, b.repeat)
    return Rates(*comp, *floor, T)


def reference_rate(name: str, d: int, K: int, R: int, b: Budget) -> tuple[float, float]:
    """(rr/s, rr per CPU-second) of the reference engine."""
    _simulate(name, d, K, 50, R, "reference")
    w, _, _ = _simulate(name, d, K, 200, R, "reference")
    T = _horizon(200 * R / w, b.reference_seconds, R, lo=50)
    return _best_rate(lambda T: _simulate(name, d, K, T, R, "reference")[:2], T, R, b.repeat)


def naive_rate(name: str, d: int, K: int, b: Budget) -> tuple[float, float, np.ndarray]:
    """(rr/s, rr per CPU-second, final regrets at ``check_T``) of the naive loop: ``repeat`` runs
    of ``R_naive`` replications (chosen to take about ``naive_seconds``), best of each."""
    consts = naive.library_constants(name, d, K, b.check_T)
    _, sec, _ = naive.run_naive(name, d, K, b.check_T, 1, consts=consts)
    R = max(2, int(b.naive_seconds / max(sec, 1e-6)))
    walls, cpus, regs = [], [], []
    for i in range(b.repeat):
        reg, w, c = naive.run_naive(name, d, K, b.check_T, R, seed=100 + i, consts=consts)
        walls.append(w)
        cpus.append(c)
        regs.append(reg)
    rr = b.check_T * R
    return rr / min(walls), rr / min(cpus), np.concatenate(regs)


def _mean_se(x: np.ndarray) -> str:
    se = x.std(ddof=1) / np.sqrt(x.size) if x.size > 1 else 0.0
    return f"{x.mean():.3g} ± {se:.2g}"


def _fmt(x: float) -> str:
    return f"{x:.3g}" if np.isfinite(x) else "n/a"


# -- which algorithms --------------------------------------------------------------------------


def kernel_algorithms(names: list[str] | None) -> tuple[list[str], dict[str, str]]:
    """Registered algorithms that run on the compiled engine on the benchmark problem, and why the
    others are left out."""
    out, skipped = [], {}
    for name in names or list(pb.available()):
        cls = pb.available()[name]
        if cls.build_kernel is Algorithm.build_kernel and name not in COMPILED_ONLY:
            skipped[name] = "no compiled kernel (batched elimination: benchmarks/bench_hanna.py)"
            continue
        try:
            alg = _make(name)
            env = _env(2, 10)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pb.simulate(alg, env, horizon=20, replications=2, seed=0, engine="compiled")
            if not isinstance(compiled_kernel(alg), (CuratorKernel, LocalKernel)):
                raise TypeError("no compiled kernel")
        except Exception as exc:  # reported in the output, not hidden
            skipped[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:140]}"
            continue
        out.append(name)
    return out, skipped


# -- sections ----------------------------------------------------------------------------------


def section_targets(algs: list[str], b: Budget, skip: set[str]) -> None:
    """The issue-8 targets: compiled throughput, env floor, naive loop and ratio, reference."""
    for d, K, R, target in TARGETS:
        print(
            f"\n### d = {d}, K = {K}, R = {R} (target >= {target:.0e} rr/s per core; "
            f"naive loop at T = {b.check_T})\n"
        )
        print(
            "| algorithm | compiled (rr/s, wall) | compiled (rr per CPU-s) | target met | "
            "env floor (rr per CPU-s) | alg + driver (ns/rr) | naive loop (rr per CPU-s) | "
            "speed-up (CPU / wall) | >= 100x | reference (rr per CPU-s) | "
            "regret at T: compiled / naive |"
        )
        print("|---|---:|---:|---|---:|---:|---:|---:|---|---:|---|")
        for name in algs:
            r = compiled_rates(name, d, K, R, b)
            extra = 1e9 * (1.0 / r.compiled_cpu - 1.0 / r.floor_cpu)
            has_naive = "naive" not in skip and name in naive.NAIVE
            nv, nv_cpu, nreg = naive_rate(name, d, K, b) if has_naive else (np.nan, np.nan, None)
            ref = reference_rate(name, d, K, R, b)[1] if "reference" not in skip else np.nan
            ratio, ratio_w = r.compiled_cpu / nv_cpu, r.compiled / nv
            ok = "yes" if r.compiled_cpu >= target else "**no**"
            if has_naive:
                _, _, res = _simulate(name, d, K, b.check_T, 20, "compiled", seed=7)
                check = f"{_mean_se(res.final_regret)} / {_mean_se(nreg)}"  # type: ignore[arg-type]
                speed = f"{ratio:.3g}x / {ratio_w:.3g}x"
                ok100 = "yes" if ratio >= SPEED_UP_TARGET else "**no**"
            else:
                check, speed, ok100 = "n/a", "n/a", "n/a"
            print(
                f"| {name} | {_fmt(r.compiled)} | {_fmt(r.compiled_cpu)} | {ok} | "
                f"{_fmt(r.floor_cpu)} | {extra:.0f} | {_fmt(nv_cpu)} | {speed} | {ok100} | "
                f"{_fmt(ref)} | {check} |",
                flush=True,
            )


# -- profile: where the time goes ----------------------------------------------------------------


@nb.njit
def _noop_select(params, state, r, t, X, rng):
    return 0


@nb.njit
def _noop_curator_update(params, state, r, t, X, a, y, rng):
    return None


@nb.njit
def _noop_choose(params, public, r, t, X, rng):
    return 0


@nb.njit
def _noop_randomize(params, public, r, t, X, a, y, rng, out):
    return None


@nb.njit
def _noop_server_update(params, public, server, r, t, msg):
    return None


def profile(name: str, d: int, K: int, R: int, repeat: int, seed: int = 3) -> dict[str, float]:
    """ns per replication-round of each compiled step, on one pre-drawn chunk of the length the
    compiled driver uses (no environment).

    The algorithm first runs the chunk once (a realistic state), then the compiled driver loop is
    timed (CPU time, best of ``max(repeat, 5)``) with no-op steps (driver: the loop and the
    regret bookkeeping), with the choice only, with choice + randomizer (local) and with every
    step; the differences are the steps' costs.
    No-op updates leave the state as it is, so the choice is timed on the warmed-up state.
    """
    alg, env = _make(name), _env(d, K)
    streams = make_streams(seed)
    spec = env.reset(R, streams, 10 * MAX_CHUNK_ROUNDS)
    B = env.chunk_rounds()  # the chunk length the compiled driver sees
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg.reset(spec, R, streams)
    k = compiled_kernel(alg)
    ch = env.next_chunk()
    X, means, rewards, best = (
        np.ascontiguousarray(a, dtype=float)
        for a in (ch.X[:B], ch.means[:B], ch.rewards[:B], ch.best[:B])
    )
    cr, cw = np.zeros(R), np.zeros(R)
    if isinstance(k, LocalKernel):
        msg = np.zeros(k.message.size)

        def run(steps: tuple[Any, ...]) -> None:
            local_loops(*steps).run(
                k.params,
                k.public,
                k.server,
                X,
                means,
                rewards,
                best,
                0,
                B,
                B,
                streams.policy,
                streams.client,
                msg,
                cr,
                cw,
            )

        variants = {
            "driver": (_noop_choose, _noop_randomize, _noop_server_update),
            "choose": (k.choose, _noop_randomize, _noop_server_update),
            "randomize": (k.choose, k.randomize, _noop_server_update),
            "update": (k.choose, k.randomize, k.update),
        }
    else:

        def run(steps: tuple[Any, ...]) -> None:
            curator_loops(*steps).run(
                k.params,
                k.state,
                X,
                means,
                rewards,
                best,
                0,
                B,
                B,
                streams.policy,
                streams.server,
                cr,
                cw,
            )

        variants = {
            "driver": (_noop_select, _noop_curator_update),
            "choose": (k.select, _noop_curator_update),
            "update": (k.select, k.update),
        }
    run(variants["update"])  # warm the state (and compile the full loop)
    cum, out, prev = {}, {}, 0.0
    for key, steps in variants.items():
        run(steps)  # compile
        best_s = min(_timed(run, steps) for _ in range(max(repeat, 5)))
        cum[key] = 1e9 * best_s / (B * R)
        out[key] = cum[key] - prev
        prev = cum[key]
    out["kernel"] = prev
    return out


def _timed(fn: Callable[..., None], *args: Any) -> float:
    """CPU seconds of ``fn(*args)``."""
    t0 = time.process_time()
    fn(*args)
    return time.process_time() - t0


def section_profile(algs: list[str], b: Budget) -> None:
    """Where the time goes (CPU time): environment, driver loop and each compiled step."""
    for d, K, R, target in TARGETS:
        print(
            f"\n### Where the time goes, d = {d}, K = {K}, R = {R} (ns of CPU time per "
            f"replication-round; target {1e9 / target:.0f} ns)\n"
        )
        print(
            "| algorithm | compiled total | env floor | driver loop | choose / select | randomize "
            "| update | rest (chunk copies, input checks, checkpoints) |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name in algs:
            p = profile(name, d, K, R, b.repeat)
            r = compiled_rates(name, d, K, R, b)
            total, floor = 1e9 / r.compiled_cpu, 1e9 / r.floor_cpu
            rnd = f"{p['randomize']:.0f}" if "randomize" in p else "-"
            print(
                f"| {name} | {total:.0f} | {floor:.0f} | {p['driver']:.0f} | {p['choose']:.0f} | "
                f"{rnd} | {p['update']:.0f} | {total - floor - p['kernel']:.0f} |",
                flush=True,
            )


def _ns(name: str, d: int, K: int, R: int, b: Budget) -> tuple[float, float]:
    """CPU ns per replication-round of the compiled engine and of the environment alone."""
    r = compiled_rates(name, d, K, R, b)
    return 1e9 / r.compiled_cpu, 1e9 / r.floor_cpu


def section_scaling(
    algs: list[str],
    b: Budget,
    ds: tuple[int, ...] = (2, 5, 10, 20),
    Ks: tuple[int, ...] = (2, 10, 50),
    Rs: tuple[int, ...] = (1, 10, 100),
) -> None:
    """CPU ns per replication-round against d, K and R (the others fixed)."""
    grids = (
        ("d", ds, lambda v: (v, 10, 10)),
        ("K", Ks, lambda v: (2, v, 10)),
        ("R", Rs, lambda v: (2, 10, v)),
    )
    for label, values, point in grids:
        fixed = {"d": "K = 10, R = 10", "K": "d = 2, R = 10", "R": "d = 2, K = 10"}[label]
        print(
            f"\n### CPU ns per replication-round against {label} ({fixed}; env floor in the "
            "last row)\n"
        )
        print("| algorithm | " + " | ".join(f"{label} = {v}" for v in values) + " |")
        print("|---|" + "---:|" * len(values))
        floors = {}
        for name in algs:
            cells = []
            for v in values:
                ns, fl = _ns(name, *point(v), b)
                floors[v] = min(floors.get(v, np.inf), fl)
                cells.append(f"{ns:.0f}")
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
        print("| env floor | " + " | ".join(f"{floors[v]:.0f}" for v in values) + " |")


def _status_kib(field: str) -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return float(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak_rss() -> float:
    """Reset the peak resident set size (Linux ``clear_refs``) and return the current RSS (MiB);
    without ``/proc`` the process's lifetime peak is the only measure."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return (_status_kib("VmRSS") or 0.0) / 1024
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _peak_rss() -> float:
    """Peak resident set size (MiB) since :func:`_reset_peak_rss`."""
    hwm = _status_kib("VmHWM")
    return (
        hwm / 1024 if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    )


def _child(mode: str, name: str, T: int) -> None:
    """Subprocess body (``mode`` "memory" or "cold"): prints one JSON line."""
    if mode == "memory":
        _simulate(name, 2, 10, 1000, 10, "compiled")
        rss0 = _reset_peak_rss()
        w, _, _ = _simulate(name, 2, 10, T, 10, "compiled")
        print(json.dumps({"rss_before": rss0, "rss_peak": _peak_rss(), "rate": T * 10 / w}))
    else:  # cold start
        t0 = time.perf_counter()
        w1, _, _ = _simulate(name, 2, 10, T, 10, "compiled")
        w2, _, _ = _simulate(name, 2, 10, T, 10, "compiled")
        print(json.dumps({"first": w1, "second": w2, "total": time.perf_counter() - t0}))


def _run_child(mode: str, name: str, T: int, env: dict[str, str] | None = None) -> dict[str, float]:
    code = (
        f"import sys, time; t0 = time.perf_counter(); sys.argv = ['x']; "
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); "
        "import bench_algorithms as b; "
        f"t1 = time.perf_counter(); b._child({mode!r}, {name!r}, {T}); "
        f"print(t1 - t0)"
    )
    t0 = time.perf_counter()
    child_env = dict(os.environ)
    if env is not None:  # a cold start: no inherited numba cache directory
        child_env.pop("NUMBA_CACHE_DIR", None)
        child_env.update(env)
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=child_env, check=False
    )
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"child {mode} {name} failed:\n{p.stderr[-2000:]}")
    lines = p.stdout.strip().splitlines()
    out = json.loads(lines[-2])
    out["import"] = float(lines[-1])
    out["process"] = wall
    return out


def section_memory(algs: list[str], b: Budget) -> None:
    """Throughput and peak resident memory at each T of ``memory_T`` (fresh process each)."""
    Ts = b.memory_T
    print(
        "\n### Memory and throughput against T (d = 2, K = 10, R = 10; each run in a fresh "
        "process; peak RSS of the run, above the RSS after a warm-up run)\n"
    )
    print(
        "| algorithm | RSS after warm-up (MiB) | "
        + " | ".join(f"T = {T:.0e}: rr/s | peak RSS growth (MiB)" for T in Ts)
        + " |"
    )
    print("|---|---:|" + "---:|---:|" * len(Ts))
    for name in algs:
        cells, base = [], []
        for T in Ts:
            o = _run_child("memory", name, T)
            cells.append(f"{o['rate']:.3g} | {o['rss_peak'] - o['rss_before']:.1f}")
            base.append(o["rss_before"])
        print(f"| {name} | {min(base):.0f} | " + " | ".join(cells) + " |", flush=True)


def section_cold(algs: list[str]) -> None:
    print(
        "\n### Cold start (empty compiled-code cache) and warm-cache start, d = 2, K = 10, R = 10, "
        "T = 1000\n"
    )
    print(
        "| algorithm | import (s) | first simulate, cold cache (s) | second simulate (s) "
        "| compile ≈ first - second (s) "
        "| process total, cold (s) | first simulate, warm cache (s) | process total, warm (s) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in algs:
        with tempfile.TemporaryDirectory(prefix="pbcache-") as cache:
            env = {"PRIVBANDITS_CACHE_DIR": cache}  # the default cache location, empty
            cold = _run_child("cold", name, 1000, env)
            warm = _run_child("cold", name, 1000, env)
        print(
            f"| {name} | {cold['import']:.2f} | {cold['first']:.2f} | {cold['second']:.3f} "
            f"| {cold['first'] - cold['second']:.2f} | {cold['process']:.2f} | {warm['first']:.2f} "
            f"| {warm['process']:.2f} |",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small horizons, one repeat (smoke run)")
    ap.add_argument(
        "--algorithms",
        default=None,
        help="comma-separated registry names (default: all with a kernel)",
    )
    ap.add_argument(
        "--repeat", type=int, default=None, help="repeats per measurement (best is kept)"
    )
    ap.add_argument(
        "--skip",
        default="",
        help="comma-separated: targets,profile,scaling,memory,cold,reference,naive",
    )
    for axis, default in (("d", "2,5,10,20"), ("K", "2,10,50"), ("R", "1,10,100")):
        ap.add_argument(
            f"--scaling-{axis}", default=default, help=f"comma-separated {axis} values (scaling)"
        )
    ap.add_argument(
        "--memory-T",
        default=None,
        help="comma-separated horizons of the memory section (default: 1e5,1e6; --quick: 2e3,2e4)",
    )
    args = ap.parse_args()
    b = QUICK if args.quick else FULL
    if args.repeat is not None:
        b = Budget(**{**b.__dict__, "repeat": args.repeat})
    if args.memory_T is not None:
        Ts = tuple(int(float(v)) for v in args.memory_T.split(","))
        b = Budget(**{**b.__dict__, "memory_T": Ts})
    skip = set(filter(None, args.skip.split(",")))
    t_start = time.perf_counter()
    algs, skipped = kernel_algorithms(args.algorithms.split(",") if args.algorithms else None)
    print(
        f"python {sys.version.split()[0]}, numpy {np.__version__}, numba "
        f"{__import__('numba').__version__}, {os.cpu_count()} cores; load average at start "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(f"algorithms on the compiled engine: {', '.join(algs)}")
    for name, why in skipped.items():
        print(f"- not benchmarked: {name} ({why})")
    if "targets" not in skip:
        section_targets(algs, b, skip)
    if "profile" not in skip:
        section_profile(algs, b)
    if "scaling" not in skip:
        grid = {a: tuple(int(v) for v in getattr(args, f"scaling_{a}").split(",")) for a in "dKR"}
        section_scaling(algs, b, grid["d"], grid["K"], grid["R"])
    if "memory" not in skip:
        section_memory(algs, b)
    if "cold" not in skip:
        section_cold(algs)
    print(
        f"\n_load average at end {', '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"total {time.perf_counter() - t_start:.0f} s_"
    )


if __name__ == "__main__":
    main()
