"""Throughput of ShuffleGLM (Sarmasarkar 2026, Algorithm 1): batch path vs the per-round reference driver.

The problem of the ``sarmasarkar2026-alg1`` preset with d = 5 (K = 20 fresh arms per round in the
unit ball, probit link, ``theta*`` on the sphere of radius 2), practical constants, epsilon = 4,
delta = 1e-4, the exact aggregate path for the ``P_GD`` rounds, R = 5.  It prints, in
replication-rounds per second (rr/s), ``engine="reference"`` (one Python step per round,
message level) and ``engine="compiled"`` (the batch path, :mod:`privbandits.engine.batches`:
the users of a batch choose and randomize in compiled blocks; same trajectory for the same seed)
after a warm-up run that fills the compiled-code cache, and checks that the two drivers give the
same final regret at the reference horizon.

Usage::

    python benchmarks/bench_shuffle_glm.py [--ref-horizon 5000] [--horizons 20000,100000,300000] [--gamma 0.3]

Prints markdown; copy it into benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

import privbandits as pb
from privbandits.algorithms.sarmasarkar.shuffle_glm import ShuffleGLM

R = 5


def run(T: int, engine: str, gamma: float | None, seed: int = 0) -> tuple[float, np.ndarray]:
    """Wall time and final regrets of one run."""
    env = pb.SyntheticEnv(d=5, K=20, link="probit", theta_norm=2.0, contexts="ball")
    alg = ShuffleGLM(epsilon=4.0, delta=1e-4, path="aggregate", gamma=gamma)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        res = pb.simulate(
            alg, env, horizon=T, replications=R, seed=seed, checkpoints=20, engine=engine
        )
    assert res.engine == engine
    return time.perf_counter() - start, res.final_regret


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref-horizon", type=int, default=5000)
    ap.add_argument("--horizons", default="20000,100000,300000")
    ap.add_argument("--gamma", type=float, default=0.3)
    args = ap.parse_args()
    run(500, "compiled", args.gamma)  # warm-up: compilation excluded
    t_ref, reg_ref = run(args.ref_horizon, "reference", args.gamma)
    t_fast, reg_fast = run(args.ref_horizon, "compiled", args.gamma)
    same = bool(np.allclose(reg_ref, reg_fast, rtol=0, atol=1e-9))
    print(f"load average {os.getloadavg()[0]:.2f}; d = 5, K = 20, R = {R}, gamma = {args.gamma}\n")
    print("| driver | T | wall (s) | rr/s | ratio to reference |")
    print("|---|---|---|---|---|")
    ref_rate = args.ref_horizon * R / t_ref
    print(f"| reference | {args.ref_horizon} | {t_ref:.2f} | {ref_rate:.3g} | 1x |")
    print(
        f"| batch path | {args.ref_horizon} | {t_fast:.2f} | {args.ref_horizon * R / t_fast:.3g} | "
        f"{t_ref / t_fast:.1f}x |"
    )
    for T in (int(v) for v in args.horizons.split(",") if v):
        wall, _ = run(T, "compiled", args.gamma)
        print(
            f"| batch path | {T} | {wall:.2f} | {T * R / wall:.3g} | {T * R / wall / ref_rate:.1f}x |"
        )
    print(f"\nsame final regret as the reference at T = {args.ref_horizon}: {same}")


if __name__ == "__main__":
    main()
