"""Hanna et al. (2022) algorithms: exact aggregate fast path vs per-round path, and the design's cost.

Two measurements:

1. **Throughput** (replication-rounds per second) of ``simulate(..., engine="aggregate")`` (the
   exact aggregate driver: one Python-level step per batch) and ``engine="reference"`` (the
   per-round / per-user message path) for NP-batched and Algorithms 1-3 on the paper's instance
   (K = 10, d = 2, actions and theta* on the unit circle, Rademacher rewards), and their ratio.
   The per-round path is timed at a smaller horizon (its cost is linear in T, so the last column
   divides the fast path's rate at the paper's T = 1e6 by the per-round rate measured there); the
   fast path's cost grows only with the number of batches (~ln T) and checkpoints.
2. **G-optimal design** (Frank-Wolfe with greedy initialisation and core set, spec Algorithm D):
   wall time per design on K = 1000 actions uniform on the sphere, d in {2, 5, 10, 20}, with the
   core-set size, iterations and achieved ``g / d``.

Usage::

    python benchmarks/bench_hanna.py [--slow-horizon 20000] [--replications 20] [--repeats 5]

Prints markdown tables.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import privbandits as pb
from privbandits.algorithms._shared.design import g_optimal_design

ALGOS: list[tuple[str, dict]] = [
    ("pe-batched", {}),
    ("hanna-central", {"epsilon": 1.0}),
    ("hanna-local", {"epsilon": 1.0}),
    ("hanna-shuffle", {"epsilon": 1.0, "delta": 1e-6}),
]


def _env(K: int = 10) -> pb.FiniteActionEnv:
    return pb.FiniteActionEnv(d=2, K=K, actions="circle", noise="rademacher")


def rate(name: str, kw: dict, T: int, R: int, fast: bool, K: int = 10) -> tuple[float, float]:
    """(replication-rounds per second, wall time) of one simulate call (``fast``: the aggregate
    engine, else the reference engine)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg = pb.make(name, **kw)
    t0 = time.perf_counter()
    engine = "aggregate" if fast else "reference"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pb.simulate(alg, _env(K), horizon=T, replications=R, seed=1, checkpoints=50, engine=engine)
    wall = time.perf_counter() - t0
    return T * R / wall, wall


def design_times(K: int, dims: list[int], repeats: int) -> list[tuple[int, float, int, int, float]]:
    """(d, seconds per design, |C|, FW iterations, g/d) for K sphere points (median over repeats)."""
    out = []
    for d in dims:
        times, sizes, iters, ratios = [], [], [], []
        for rep in range(repeats):
            rng = np.random.default_rng(100 * d + rep)
            X = rng.standard_normal((K, d))
            X /= np.linalg.norm(X, axis=1, keepdims=True)
            t0 = time.perf_counter()
            des = g_optimal_design(X)
            times.append(time.perf_counter() - t0)
            sizes.append(des.support.size)
            iters.append(des.n_iter)
            ratios.append(des.g / d)
        out.append((d, float(np.median(times)), max(sizes), max(iters), max(ratios)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--slow-horizon", type=int, default=20_000, help="horizon of the per-round runs"
    )
    ap.add_argument(
        "--fast-horizon", type=int, default=10**6, help="horizon of the extra fast-path runs"
    )
    ap.add_argument("--replications", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5, help="designs per dimension")
    args = ap.parse_args()
    Ts, Tf, R = args.slow_horizon, args.fast_horizon, args.replications

    print(f"## Throughput, K = 10, d = 2, R = {R} (replication-rounds / s)\n")
    print(
        f"| algorithm | per-round path, T={Ts} | fast path, T={Ts} | ratio | fast path, T={Tf} (wall s) "
        f"| ratio at T={Tf} |"
    )
    print("|---|---|---|---|---|---|")
    for name, kw in ALGOS:
        slow, _ = rate(name, kw, Ts, R, fast=False)
        fast, _ = rate(name, kw, Ts, R, fast=True)
        big, wall = rate(name, kw, Tf, R, fast=True)
        # the per-round path's cost is linear in T, so its rate at T = Tf is the rate measured at Ts
        print(
            f"| {name} | {slow:.3g} | {fast:.3g} | {fast / slow:.3g}x | {big:.3g} ({wall:.2f}) | {big / slow:.3g}x |"
        )

    print("\n## Figure 3(b) scale: K = 1000, d = 2, T = 1e7, central (paper preset), R = 10\n")
    print("| variant | wall time (s) | replication-rounds / s |")
    print("|---|---|---|")
    for label, kw in (("core set", {}), ("no core set (nocore-fw)", {"core_set": False})):
        r, wall = rate(
            "hanna-central", {"epsilon": 0.01, "preset": "paper", **kw}, 10**7, 10, True, K=1000
        )
        print(f"| {label} | {wall:.2f} | {r:.3g} |")

    print(
        f"\n## G-optimal design (Algorithm D), K = 1000 points on the sphere, median of {args.repeats}\n"
    )
    print("| d | time per design (ms) | max core-set size | max FW iterations | max g / d |")
    print("|---|---|---|---|---|")
    for d, sec, size, it, ratio in design_times(1000, [2, 5, 10, 20], args.repeats):
        print(f"| {d} | {1e3 * sec:.2f} | {size} | {it} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
