"""Throughput of the bandit-convex-optimization algorithms: compiled round, message-level driver and
a plain per-round Python loop (issue 27, item 3).

For fkm, two-point-bco, ldp-twopoint and ldp-onepoint (base fkm), default parameters (epsilon = 1,
delta = 0.01 for the private ones), on ``ConvexLossEnv`` (quadratic loss on the unit ball unless
``--loss`` / ``--domain`` say otherwise), it measures replication-rounds per CPU-second (rr/s):

* **compiled**: ``privbandits.simulate(..., engine="compiled")`` after a warm-up run (compilation
  excluded), best of ``--repeat`` runs, environment included;
* **reference**: ``engine="reference"`` (the message-level driver: public state validated, the
  device's checks and the server's message checks every round);
* **naive**: a plain per-replication, per-round numpy loop of the same algorithm with the library's
  constants (:func:`naive_loop`), in the same process, and the ratio compiled / naive;
* the mean final regret of the compiled run and of the naive loop (independent streams: they agree
  in law only).

Usage::

    python benchmarks/bench_convex.py [--d 2,10] [--R 10] [--T 200000] [--repeat 3]

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
from privbandits.algorithms.bco.ldp_two_point import LDPTwoPointConstants
from privbandits.algorithms.bco.two_point import TwoPointConstants
from privbandits.core.rng import make_streams

ALGORITHMS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("fkm", {}),
    ("two-point-bco", {}),
    ("ldp-twopoint", {}),
    ("ldp-onepoint", {"base": "fkm"}),
)


def _cpu() -> float:
    return time.process_time()


def _sphere(rng: np.random.Generator, d: int) -> np.ndarray:
    z = rng.standard_normal(d)
    return z / np.linalg.norm(z)


def _project(x: np.ndarray, s: float) -> np.ndarray:
    n = np.linalg.norm(x)
    return x if n <= s else x * (s / n)


def naive_loop(name: str, alg: Any, T: int, d: int, seed: int) -> float:
    """One replication of ``alg`` (already reset) as a plain per-round numpy loop on the quadratic
    loss ``||x - a_t||^2 / 4`` on the unit ball (``a_t = a + xi_t``: ``a`` of norm 0.5 r, ``xi_t``
    uniform in the ball of radius 0.3); returns the final pseudo-regret."""
    rng = np.random.default_rng(seed)
    a = 0.5 * _sphere(rng, d) * rng.random() ** (1 / d)
    c = alg.calibration.constants
    two = name in ("two-point-bco", "ldp-twopoint")
    if two:
        rho, xi = c.rho, c.xi
    elif name == "fkm":
        rho, xi, eta = c.rho, c.xi, c.eta
    else:  # ldp-onepoint: the black box's own constants
        base = alg.black_box.calibration.constants
        rho, xi, eta = base.rho, base.xi, base.eta
    x = np.zeros(d)
    regret = 0.0
    for t in range(T):
        at = a + 0.3 * _sphere(rng, d) * rng.random() ** (1 / d)
        u = _sphere(rng, d)
        if two:
            p1, p2 = x + rho * u, x - rho * u
            f1, f2 = np.sum((p1 - at) ** 2) / 4, np.sum((p2 - at) ** 2) / 4
            regret += (np.sum((p1 - a) ** 2) + np.sum((p2 - a) ** 2)) / 8
            D = f1 - f2
            if name == "ldp-twopoint":
                assert isinstance(c, LDPTwoPointConstants)
                gap = np.linalg.norm(p1 - p2)
                bound = c.clip_per_gap * gap
                D = min(max(D, -bound), bound) + (c.noise_per_gap * rng.standard_normal(d)) @ (
                    p1 - p2
                )
            assert isinstance(c, TwoPointConstants)
            step = c.eta if c.mu is None else c.eta_scale / (c.mu * (t + 1))
            x = _project(x - step * (d / (2 * rho)) * D * u, 1 - xi)
        else:
            p = x + rho * u
            m = np.sum((p - at) ** 2) / 4
            regret += np.sum((p - a) ** 2) / 4
            if name == "ldp-onepoint":
                m = min(max(m, c.clip_lo), c.clip_hi) + c.noise_scale * rng.standard_normal()
            x = _project(x - eta * (d / rho) * m * u, 1 - xi)
    return regret


def _simulate(
    name: str, params: dict[str, Any], env_kw: dict[str, Any], engine: str, T: int, R: int
) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg = pb.make(name, **params)
        env = pb.ConvexLossEnv(**env_kw)
        t0 = _cpu()
        res = pb.simulate(alg, env, T, replications=R, seed=0, engine=engine, checkpoints=[T])
        t1 = _cpu()
    assert res.engine == engine
    return T * R / (t1 - t0), float(res.regret[:, -1].mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", default="2,10")
    ap.add_argument("--R", type=int, default=10)
    ap.add_argument("--T", type=int, default=200_000)
    ap.add_argument("--loss", default="quadratic")
    ap.add_argument("--domain", default="ball")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--naive-T", type=int, default=20_000)
    ap.add_argument("--reference-T", type=int, default=5_000)
    args = ap.parse_args()
    print(
        f"load average {os.getloadavg()[0]:.2f}; R = {args.R}, T = {args.T:,} (compiled), "
        f"{args.reference_T:,} (reference), {args.naive_T:,} x 1 replication (naive); "
        f"loss {args.loss} on the {args.domain}; CPU time\n"
    )
    print(
        "| algorithm | d | compiled rr/s | reference rr/s | naive rr/s | compiled / naive | "
        "compiled / reference | regret compiled (T_naive) | regret naive |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for d in (int(v) for v in args.d.split(",")):
        env_kw = {"d": d, "loss": args.loss, "domain": args.domain}
        for name, params in ALGORITHMS:
            _simulate(name, params, env_kw, "compiled", 100, 2)  # warm-up: compile
            comp = max(
                _simulate(name, params, env_kw, "compiled", args.T, args.R)[0]
                for _ in range(args.repeat)
            )
            ref = _simulate(name, params, env_kw, "reference", args.reference_T, args.R)[0]
            _, reg_c = _simulate(name, params, env_kw, "compiled", args.naive_T, args.R)
            naive_reg = math.nan
            nv = math.nan
            if args.loss == "quadratic" and args.domain == "ball":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    alg = pb.make(name, **params)
                    env = pb.ConvexLossEnv(**env_kw)
                    alg.reset(env.reset(1, make_streams(0), args.naive_T), 1, make_streams(0))
                t0 = _cpu()
                regs = [naive_loop(name, alg, args.naive_T, d, s) for s in range(3)]
                nv = 3 * args.naive_T / (_cpu() - t0)
                naive_reg = float(np.mean(regs))
            print(
                f"| {name} | {d} | {comp:.3g} | {ref:.3g} | {nv:.3g} | {comp / nv:.0f}x | "
                f"{comp / ref:.0f}x | {reg_c:.4g} | {naive_reg:.4g} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
