"""Fused runs against per-unit runs, and chen-ldp's compiled round against ldp-ols.

Three measurements (CPU time of this process, best of ``--repeats``; the machine is shared, so
the load average is printed beside every table):

1. **per-unit vs fused** (single-parameter problem, contexts on the unit sphere, d = 2, K = 10,
   R = 10 by default): every algorithm of a Han et al. (2021) Fig. 5.1 figure run alone
   (``simulate``, its own environment draw) and the same algorithms advanced together over one
   environment draw (:func:`privbandits.engine.fused.simulate_fused`); replication-rounds per
   CPU-second, the fused figure counting the environment once for the group.
2. **chen-ldp vs ldp-ols**: nanoseconds per replication-round of the compiled driver at the same
   d, K (target: chen-ldp within 3x of ldp-ols).
3. ``--preset NAME`` (optional, slow): the preset end to end through the runner with 2 workers,
   fused (groups balanced by estimated cost) and not (``fuse=False``), alternated
   ``--preset-rounds`` times: wall-clock seconds and the worker processes' CPU seconds
   (``--preset-horizon`` shortens the preset).

Usage::

    python benchmarks/bench_fused.py [--horizon 100000] [--replications 10] [--repeats 3]
        [--preset han2021-fig5.1-single]

Prints markdown; copy it into benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path

import privbandits as pb
from privbandits.engine.fused import simulate_fused

FIG51 = [
    ("ldp-ols", {"epsilon": 1.0}),
    ("ldp-sgd", {"epsilon": 1.0}),
    ("ldp-ucb", {"epsilon": 1.0}),
    ("ldp-gloc", {"epsilon": 1.0}),
    ("ldp-ols", {"epsilon": 5.0}),
    ("ldp-sgd", {"epsilon": 5.0}),
    ("ldp-ucb", {"epsilon": 5.0}),
    ("ldp-gloc", {"epsilon": 5.0}),
]


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _env(d: int, K: int) -> pb.SyntheticEnv:
    return pb.SyntheticEnv(d=d, K=K, noise_scale=0.1)


def _cpu(fn: object, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, time.process_time() - t0)
    return best


def per_unit_vs_fused(d: int, K: int, T: int, R: int, repeats: int) -> None:
    print(f"\n### per-unit vs fused: d = {d}, K = {K}, R = {R}, T = {T:g} (load {_load()})\n")
    print("| algorithm | epsilon | per-unit (rr per CPU-s) |")
    print("|---|---:|---:|")
    total_alone = 0.0
    for name, params in FIG51:

        def alone(name: str = name, params: dict = params) -> None:
            pb.simulate(pb.make(name, **params), _env(d, K), T, replications=R, seed=0)

        alone()  # warm-up: compilation
        sec = _cpu(alone, repeats)
        total_alone += sec
        print(f"| {name} | {params['epsilon']:g} | {T * R / sec:.3g} |")

    def fused() -> None:
        simulate_fused(
            [pb.make(n, **p) for n, p in FIG51], lambda: _env(d, K), T, replications=R, seed=0
        )

    fused()
    sec_f = _cpu(fused, repeats)
    n = len(FIG51)
    print(
        f"\nThe {n} units: per-unit {total_alone:.2f} CPU-s ({n * T * R / total_alone:.3g} rr per "
        f"CPU-s), **fused {sec_f:.2f} CPU-s ({n * T * R / sec_f:.3g} rr per CPU-s)**, "
        f"{total_alone / sec_f:.2f}x."
    )


def chen_vs_ols(T: int, R: int, repeats: int) -> None:
    print(f"\n### chen-ldp vs ldp-ols, compiled driver (R = {R}, T = {T:g}, load {_load()})\n")
    print("| d | K | ldp-ols (ns/rr) | chen-ldp (ns/rr) | ratio |")
    print("|---:|---:|---:|---:|---:|")
    for d, K in ((2, 10), (5, 10)):
        ns = {}
        for name in ("ldp-ols", "chen-ldp"):

            def run(name: str = name) -> None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    pb.simulate(
                        pb.make(name, epsilon=1.0),
                        _env(d, K),
                        T,
                        replications=R,
                        seed=0,
                        engine="compiled",
                    )

            run()
            ns[name] = _cpu(run, repeats) / (T * R) * 1e9
        ratio = ns["chen-ldp"] / ns["ldp-ols"]
        print(f"| {d} | {K} | {ns['ldp-ols']:.0f} | {ns['chen-ldp']:.0f} | {ratio:.1f}x |")


def preset(name: str, horizon: int | None, rounds: int, labels: str = "") -> None:
    """The preset end to end through the runner with 2 workers, fused (groups balanced by
    estimated cost) and per-unit, alternated ``rounds`` times; wall seconds and the CPU seconds
    of the worker processes (``labels``: comma-separated, only those algorithms' units)."""
    import dataclasses
    import resource

    from privbandits.experiments.overrides import Overrides
    from privbandits.experiments.presets import load_preset
    from privbandits.experiments.runner import run_experiment
    from privbandits.experiments.store import ResultsStore

    cfg = load_preset(name, Overrides(horizon=horizon) if horizon is not None else None)
    keep = [x.strip() for x in labels.split(",") if x.strip()]
    if keep:
        algorithms = tuple(a for a in cfg.algorithms if a.label in keep)
        cfg = dataclasses.replace(cfg, algorithms=algorithms, claims=())
    units = len(cfg.units())
    print(
        f"\n### `{name}` end to end{' (' + ', '.join(keep) + ')' if keep else ''}: {units} units, "
        f"2 workers, T = {cfg.horizon:g} (load {_load()} at the start)\n"
    )
    print("| run | fused | wall (s) | workers' CPU (s) | load at the end |")
    print("|---:|---|---:|---:|---|")
    for k in range(rounds):
        for fuse in (True, False) if k % 2 == 0 else (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                with ResultsStore(Path(tmp) / "r.db") as store:
                    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    t0 = time.perf_counter()
                    run_experiment(cfg, store, workers=2, quiet=True, fuse=fuse)
                    wall = time.perf_counter() - t0
                    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
            print(f"| {k + 1} | {fuse} | {wall:.1f} | {cpu:.1f} | {_load()} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--horizon", type=int, default=100_000)
    p.add_argument("--replications", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--chen-horizon", type=int, default=20_000)
    p.add_argument("--preset", default=None)
    p.add_argument("--preset-horizon", type=int, default=None, help="override the preset's T")
    p.add_argument("--preset-rounds", type=int, default=2, help="fused/per-unit alternations")
    p.add_argument("--preset-labels", default="", help="comma-separated labels: only these units")
    p.add_argument("--skip", default="", help="comma-separated: fused,chen")
    args = p.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    if "fused" not in skip:
        per_unit_vs_fused(2, 10, args.horizon, args.replications, args.repeats)
    if "chen" not in skip:
        chen_vs_ols(args.chen_horizon, args.replications, args.repeats)
    if args.preset:
        preset(args.preset, args.preset_horizon, args.preset_rounds, args.preset_labels)


if __name__ == "__main__":
    main()
