"""Sampling throughput of the privacy mechanisms (samples per second).

For each mechanism and d in {2, 10, 100}, one batched call ``mechanism.sample(values, rng)`` on a
batch of vectors (``(B, d)``; symmetric matrices ``(B, d, d)``) is timed, best of ``--repeats``.
A "sample" is one privatized vector (one matrix for the symmetric mechanism).  For the l2-ball
mechanism the batched sampler is also compared with a plain per-sample Python loop doing the same
exact, rejection-free sampling (Han et al. spec, appendix pseudocode), one vector at a time.

Usage::

    python benchmarks/bench_mechanisms.py [--batch 100000] [--loop 3000] [--repeats 3]

Prints a markdown table; the whole script runs in well under a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np

from privbandits.privacy.mechanisms import (
    GaussianMechanism,
    L2BallMechanism,
    LaplaceMechanism,
    SymmetricGaussianMechanism,
    l2_ball_radius,
)

DIMS = (2, 10, 100)
#: Cap on the floats a symmetric-matrix batch holds (B d^2), to keep memory and time bounded.
MATRIX_FLOATS = 4_000_000


def best_time(fn: Callable[[], object], repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def unit_vectors(rng: np.random.Generator, B: int, d: int, norm: float) -> np.ndarray:
    x = rng.standard_normal((B, d))
    return norm * x / np.linalg.norm(x, axis=1, keepdims=True)


def l2_ball_loop(X: np.ndarray, eps: float, R: float, rng: np.random.Generator) -> list[np.ndarray]:
    """Plain per-sample loop: the same exact hemisphere sampler, one vector at a time."""
    d = X.shape[1]
    r = l2_ball_radius(eps, d, R)
    q = 1.0 / (1.0 + math.exp(-eps))
    out = []
    for x in X:
        n = float(np.linalg.norm(x))
        if n > R:
            x, n = x * (R / n), R
        u = rng.standard_normal(d)
        u /= np.linalg.norm(u)
        if n > 0.0:
            v = x / n
            if rng.random() >= 0.5 + n / (2.0 * R):
                v = -v
            same_side = rng.random() < q
            if (float(u @ v) > 0.0) != same_side:
                u = -u
        out.append(r * u)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=100_000, help="vectors per batched call")
    ap.add_argument("--loop", type=int, default=3_000, help="vectors in the plain-loop comparison")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    t_start = time.perf_counter()

    rows: list[tuple[str, int, int, int, float, str]] = []
    for d in DIMS:
        X = unit_vectors(rng, args.batch, d, 0.8)
        # mechanisms are built (and calibrated) outside the timed calls
        gauss = GaussianMechanism(1.0, 1.0, 1e-5, "analytic")
        lap = LaplaceMechanism(2.0, 1.0)
        ball = L2BallMechanism(1.0, d, 1.0)
        sym = SymmetricGaussianMechanism.for_outer_product(1.0, 1.0, 1e-5, d)
        Bm = max(1, min(args.batch, MATRIX_FLOATS // (d * d)))
        M = np.broadcast_to(np.eye(d), (Bm, d, d))
        mechs: list[tuple[str, Callable[[], object], int, int]] = [
            ("gaussian (analytic)", lambda: gauss.sample(X, rng), args.batch, d),
            ("laplace", lambda: lap.sample(X, rng), args.batch, d),
            ("l2-ball", lambda: ball.sample(X, rng), args.batch, d + 2),
            ("symmetric gaussian (d x d)", lambda: sym.sample(M, rng), Bm, d * (d + 1) // 2),
        ]
        for name, fn, B, draws in mechs:
            rate = B / best_time(fn, args.repeats)
            note = ""
            if name == "l2-ball":
                Xl = X[: args.loop]
                loop_rate = len(Xl) / best_time(
                    lambda: l2_ball_loop(Xl, 1.0, 1.0, rng), args.repeats
                )
                note = f"{rate / loop_rate:,.0f}x the plain per-sample loop ({loop_rate:,.0f} samples/s)"
            rows.append((name, d, B, draws, rate, note))

    print("| mechanism | d | batch | random draws / sample | samples/s | note |")
    print("|---|---:|---:|---:|---:|---|")
    for name, d, B, draws, rate, note in rows:
        print(f"| {name} | {d} | {B:,} | {draws:,} | {rate:,.0f} | {note} |")
    print(f"\n_total wall time {time.perf_counter() - t_start:.1f} s, numpy {np.__version__}_")


if __name__ == "__main__":
    main()
