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
    python benchmarks/bench_shuffle_glm.py --calibration 10000,100000,300000

``--calibration`` times the strict calibration alone (the rigorous Renyi accounting of every
summation call, :mod:`privbandits.privacy.binomial_accounting`) at epsilon = 4, delta = 1e-5,
logistic, S = 1, once with the blockwise-FFT Renyi sums and once with every sum as one direct
matrix product, each in a fresh cache, and prints the accounted epsilon of both.

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


def calibration_time(T: int, direct: bool) -> tuple[float, float]:
    """CPU seconds and accounted epsilon of one strict calibration (fresh caches)."""
    from privbandits.algorithms.sarmasarkar import binomial_composition
    from privbandits.privacy import binomial_accounting as ba

    binomial_composition._terms.cache_clear()
    saved = ba.FFT_MIN_WORK
    ba.FFT_MIN_WORK = 10**18 if direct else saved
    env = pb.SyntheticEnv(d=5, K=20, link="logistic", theta_norm=1.0, contexts="ball")
    alg = ShuffleGLM(epsilon=4.0, delta=1e-5, path="aggregate", gamma=0.3)
    try:
        start = time.process_time()
        cal = alg.calibrate(env.spec(T))
        return time.process_time() - start, cal.guarantee.epsilon
    finally:
        ba.FFT_MIN_WORK = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref-horizon", type=int, default=5000)
    ap.add_argument("--horizons", default="20000,100000,300000")
    ap.add_argument("--gamma", type=float, default=0.3)
    ap.add_argument("--calibration", default="", help="time the strict calibration at these T")
    args = ap.parse_args()
    if args.calibration:
        print(f"load average {os.getloadavg()[0]:.2f}\n")
        print("| T | blockwise FFT: CPU s | epsilon | direct sums: CPU s | epsilon | speed-up |")
        print("|---|---|---|---|---|---|")
        for T in (int(v) for v in args.calibration.split(",") if v):
            t_fft, e_fft = calibration_time(T, direct=False)
            t_dir, e_dir = calibration_time(T, direct=True)
            print(
                f"| {T} | {t_fft:.1f} | {e_fft:.6f} | {t_dir:.1f} | {e_dir:.6f} | {t_dir / t_fft:.1f}x |"
            )
        return
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
