"""Throughput of LDP-OnePoint on arms (Zheng et al. 2020, Algorithm 1): the compiled round, the
message-level driver and a plain per-round Python loop (issue 27, item 3).

For LDP-OnePoint around several black boxes (default parameters: epsilon = 1, delta = 0.01,
Gaussian), on ``MultiArmedEnv`` (K arms, Gaussian rewards of std 0.1), R = 10, it measures
replication-rounds per CPU-second (rr/s):

* **compiled**: ``engine="compiled"`` (``ProposalKernel``: the black box's compiled steps, the
  device's clip and noise, one loop), after a warm-up, best of ``--repeat`` runs;
* **reference**: ``engine="reference"`` (public state and messages checked every round);
* **naive** (base ucb1 only): a plain per-replication, per-round numpy loop of LDP-OnePoint over
  UCB1 with the library's constants (:func:`naive_ucb1`), in the same process, and the ratio.

Usage::

    python benchmarks/bench_onepoint.py [--K 10] [--R 10] [--T 500000] [--repeat 3]

Prints markdown; copy it into benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings
from typing import Any

import numpy as np

import privbandits as pb
from privbandits.core.rng import make_streams

BASES = ("ucb1", "exp3", "tsallis-inf", "successive-elimination")


def naive_ucb1(alg: Any, means: np.ndarray, T: int, seed: int) -> float:
    """One replication of LDP-OnePoint over UCB1 (``alg`` reset) as a plain per-round loop:
    returns the final pseudo-regret."""
    rng = np.random.default_rng(seed)
    c = alg.calibration.constants
    s = float(alg.black_box.calibration.constants.scale)
    K = means.shape[0]
    n, S = np.zeros(K), np.zeros(K)
    regret = 0.0
    for t in range(T):
        with np.errstate(divide="ignore", invalid="ignore"):
            scores = np.where(n > 0, S / n + s * np.sqrt(4 * math.log(t + 1) / n), np.inf)
        a = int(np.argmax(scores))
        y = means[a] + 0.1 * rng.standard_normal()
        regret += means.max() - means[a]
        m = min(max(y, c.clip_lo), c.clip_hi) + c.noise_scale * rng.standard_normal()
        n[a] += 1
        S[a] += m
    return regret


def _rate(base: str, engine: str, K: int, T: int, R: int) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg = pb.make("ldp-onepoint", base=base)
        t0 = time.process_time()
        res = pb.simulate(alg, pb.MultiArmedEnv(K=K), T, replications=R, seed=0, engine=engine)
        t1 = time.process_time()
    assert res.engine == engine
    return T * R / (t1 - t0), float(res.regret[:, -1].mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--K", type=int, default=10)
    ap.add_argument("--R", type=int, default=10)
    ap.add_argument("--T", type=int, default=500_000)
    ap.add_argument("--reference-T", type=int, default=5_000)
    ap.add_argument("--naive-T", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(
        f"load average {os.getloadavg()[0]:.2f}; K = {args.K}, R = {args.R}, T = {args.T:,} "
        f"(compiled), {args.reference_T:,} (reference), {args.naive_T:,} x 3 replications "
        "(naive); CPU time\n"
    )
    print(
        "| base | compiled rr/s | reference rr/s | naive rr/s | compiled / naive | compiled / reference |"
    )
    print("|---|---|---|---|---|---|")
    for base in BASES:
        _rate(base, "compiled", args.K, 100, 2)  # warm-up: compile
        comp = max(_rate(base, "compiled", args.K, args.T, args.R)[0] for _ in range(args.repeat))
        ref = _rate(base, "reference", args.K, args.reference_T, args.R)[0]
        nv = math.nan
        if base == "ucb1":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                alg = pb.make("ldp-onepoint", base=base)
                env = pb.MultiArmedEnv(K=args.K)
                alg.reset(env.reset(1, make_streams(0), args.naive_T), 1, make_streams(0))
            means = np.linspace(0.0, 0.5, args.K)
            t0 = time.process_time()
            for seed in range(3):
                naive_ucb1(alg, means, args.naive_T, seed)
            nv = 3 * args.naive_T / (time.process_time() - t0)
        print(
            f"| {base} | {comp:.3g} | {ref:.3g} | {nv:.3g} | {comp / nv:.0f}x | {comp / ref:.0f}x |",
            flush=True,
        )


if __name__ == "__main__":
    main()
