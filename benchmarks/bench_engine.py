"""Throughput of the simulation engine: replication-rounds per second.

For each algorithm the batched engine (all R replications advanced by one Python-level round) is
compared with a plain per-round Python loop of the same algorithm, run in the same process:

* ``engine R=1 loop``: the library's own code with R = 1, called once per replication;
* ``plain loop`` (LinUCB and uniform only): a hand-written textbook loop, one replication at a
  time, numpy on single vectors, no library code.

Usage::

    python benchmarks/bench_engine.py [--horizon 20000] [--replications 20] [--algorithms linucb,uniform]

Prints a markdown table; copy it into benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import privbandits as pb

DEFAULT_ALGOS = "uniform,linucb,greedy-ols,greedy-sgd,glm-ucb,gloc,ldp-ols,ldp-sgd,ldp-ucb,ldp-gloc"


def _env() -> pb.SyntheticEnv:
    return pb.SyntheticEnv(d=5, K=10, contexts="sphere", noise="gaussian", noise_scale=0.1)


def engine_rate(name: str, T: int, R: int) -> float:
    """Replication-rounds per second of the batched engine."""
    t0 = time.perf_counter()
    pb.simulate(pb.make(name), _env(), horizon=T, replications=R, seed=1, checkpoints=10)
    return T * R / (time.perf_counter() - t0)


def engine_r1_rate(name: str, T: int, R: int) -> float:
    """Replication-rounds per second when the engine runs one replication at a time."""
    t0 = time.perf_counter()
    for seed in range(R):
        pb.simulate(pb.make(name), _env(), horizon=T, replications=1, seed=seed, checkpoints=10)
    return T * R / (time.perf_counter() - t0)


def plain_linucb_rate(T: int, R: int, d: int = 5, K: int = 10, lam: float = 1.0, delta: float = 0.01) -> float:
    """A textbook per-round LinUCB loop, one replication at a time (no library code)."""
    t0 = time.perf_counter()
    for seed in range(R):
        rng = np.random.default_rng(seed)
        theta = rng.standard_normal(d)
        theta /= np.linalg.norm(theta)
        V = lam * np.eye(d)
        b = np.zeros(d)
        logdet = 0.0
        for _ in range(T):
            X = rng.standard_normal((K, d))
            X /= np.linalg.norm(X, axis=1, keepdims=True)
            Vinv = np.linalg.inv(V)
            th = Vinv @ b
            beta = 0.1 * np.sqrt(2 * np.log(1 / delta) + logdet) + np.sqrt(lam)
            width = np.sqrt(np.einsum("kd,de,ke->k", X, Vinv, X))
            a = int(np.argmax(X @ th + beta * width))
            x = X[a]
            r = x @ theta + 0.1 * rng.standard_normal()
            logdet += np.log1p(x @ Vinv @ x)
            V += np.outer(x, x)
            b += r * x
    return T * R / (time.perf_counter() - t0)


def plain_uniform_rate(T: int, R: int, d: int = 5, K: int = 10) -> float:
    """A textbook per-round uniform-random loop (contexts, reward, regret)."""
    t0 = time.perf_counter()
    for seed in range(R):
        rng = np.random.default_rng(seed)
        theta = rng.standard_normal(d)
        theta /= np.linalg.norm(theta)
        reg = 0.0
        for _ in range(T):
            X = rng.standard_normal((K, d))
            X /= np.linalg.norm(X, axis=1, keepdims=True)
            m = X @ theta
            a = int(rng.integers(K))
            _ = m[a] + 0.1 * rng.standard_normal()
            reg += m.max() - m[a]
    return T * R / (time.perf_counter() - t0)


PLAIN = {"linucb": plain_linucb_rate, "uniform": plain_uniform_rate}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon", type=int, default=20_000)
    ap.add_argument("--replications", type=int, default=20)
    ap.add_argument("--algorithms", default=DEFAULT_ALGOS)
    ap.add_argument("--loop-horizon", type=int, default=2_000, help="horizon of the (slow) per-replication loops")
    args = ap.parse_args()
    registered = pb.available()
    print(f"d=5, K=10, T={args.horizon}, R={args.replications} (loops: T={args.loop_horizon})\n")
    print("| algorithm | batched engine (rep-rounds/s) | engine R=1 loop | plain loop | speed-up vs engine R=1 | speed-up vs plain loop |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in args.algorithms.split(","):
        if name not in registered:
            continue
        fast = engine_rate(name, args.horizon, args.replications)
        slow = engine_r1_rate(name, args.loop_horizon, min(args.replications, 5))
        plain = PLAIN[name](args.loop_horizon, min(args.replications, 5)) if name in PLAIN else float("nan")
        plain_s = f"{plain:,.0f}" if np.isfinite(plain) else "n/a"
        ratio_p = f"{fast / plain:.1f}x" if np.isfinite(plain) else "n/a"
        print(f"| {name} | {fast:,.0f} | {slow:,.0f} | {plain_s} | {fast / slow:.1f}x | {ratio_p} |")


if __name__ == "__main__":
    main()
