"""Throughput of the shuffle summation protocol and the binary-tree mechanism, for d in {2, 10, 100}.

* Shuffle protocol (Cheu et al. 2022 as in Sarmasarkar 2026, Appendix T), calibrated mode at
  (epsilon, delta) = (1, 1e-5) with n users per call and R replications: **users/s** (user
  contributions processed per second, summed over replications) for the message-level reference
  path (client randomizers -> shuffler -> analyzer, count encoding) and the aggregate fast path
  (exact in distribution).  Vector summation (``d`` labels) and rank-one matrix summation
  (``d (d + 1) / 2`` labels).
* Tree (continual release, Chan, Shi & Song 2011): **updates/s** of ``add`` + ``prefix_sum``,
  counted per replication, for vectors and symmetric matrices.

Usage::

    python benchmarks/bench_shuffle_tree.py [--users 1000] [--replications 4] [--horizon 1024]

Runs in well under 60 s on 2 cores and prints a markdown table.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from privbandits.privacy.cheu import (
    aggregate_sum,
    analyze,
    calibrated_params,
    encode_rank_one,
    encode_vectors,
    randomize_users,
    shuffle,
)
from privbandits.privacy.tree import TreeAggregator

DIMS = (2, 10, 100)


def _timed(fn: Callable[[], object], budget: float) -> float:
    """Seconds per call of ``fn`` (repeated until ``budget`` seconds have passed, at least once),
    after one untimed warm-up call (compilation of the compiled samplers)."""
    fn()
    calls, t0 = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= budget:
            return elapsed / calls


def shuffle_rates(kind: str, d: int, n: int, R: int, budget: float) -> tuple[float, float, int]:
    """users/s of the message path and of the fast path; also the number of noise bits b."""
    rng = np.random.default_rng(d)
    client, shuffler = np.random.default_rng(1), np.random.default_rng(2)
    x = rng.standard_normal((R, n, d))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    if kind == "vector":
        p = calibrated_params(n, d, 1.0, delta=1e-5, epsilon=1.0)
        w, _ = encode_vectors(x, 1.0)
    else:
        p = calibrated_params(n, d, 1.0, delta=1e-5, epsilon=1.0, kind="matrix", psd_inputs=True)
        w, _ = encode_rank_one(x, 1.0, 1.0)
    t_msg = _timed(lambda: analyze(shuffle(randomize_users(w, p, client), shuffler), p), budget)
    t_fast = _timed(lambda: aggregate_sum(w, p, client), budget)
    return n * R / t_msg, n * R / t_fast, p.b


def tree_rate(kind: str, d: int, T: int, R: int, budget: float) -> float:
    """updates/s (add + prefix_sum, per replication)."""
    rng = np.random.default_rng(0)
    shape = (R, d) if kind == "vector" else (R, d, d)
    leaf = rng.standard_normal(shape)
    if kind == "matrix":
        leaf = leaf + np.swapaxes(leaf, -1, -2)
    leaf /= np.linalg.norm(leaf.reshape(R, -1), axis=1).reshape((R,) + (1,) * (len(shape) - 1))

    def run() -> None:
        tree = TreeAggregator.calibrated(
            T, d, leaf_bound=1.0, rng=rng, delta=1e-5, epsilon=1.0, replications=R, kind=kind
        )
        for _ in range(T):
            tree.add(leaf)
            tree.prefix_sum()

    return T * R / _timed(run, budget)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=1000, help="users per protocol call")
    ap.add_argument("--replications", type=int, default=4)
    ap.add_argument("--horizon", type=int, default=1024, help="tree horizon T")
    ap.add_argument("--budget", type=float, default=0.5, help="seconds per measurement")
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(
        f"shuffle summation, calibrated (eps, delta) = (1, 1e-5), n = {args.users}, R = {args.replications}\n"
    )
    print("| protocol | d | labels | b | message path (users/s) | fast path (users/s) | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for kind in ("vector", "matrix"):
        for d in DIMS:
            labels = d if kind == "vector" else d * (d + 1) // 2
            msg, fast, b = shuffle_rates(kind, d, args.users, args.replications, args.budget)
            print(
                f"| {kind} | {d} | {labels} | {b} | {msg:,.0f} | {fast:,.0f} | {fast / msg:.1f}x |"
            )
    print(f"\nbinary tree, T = {args.horizon}, R = {args.replications} (add + prefix_sum)\n")
    print("| leaves | d | updates/s |")
    print("|---|---|---|")
    for kind in ("vector", "matrix"):
        for d in DIMS:
            T = args.horizon if not (kind == "matrix" and d == 100) else max(args.horizon // 8, 1)
            print(
                f"| {kind} | {d} | {tree_rate(kind, d, T, args.replications, args.budget):,.0f} |"
            )
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
