"""Every per-round local-model algorithm at d = 2, K = 10 (issue 27, "Targets"): per unit and in one
fused group (the environment drawn once for the group).

For every registered algorithm of the local trust model that runs on the compiled per-round driver
(default parameters: epsilon = 1, delta = 0.01), on the single-parameter linear problem (contexts
on the unit sphere, Gaussian reward noise 0.1), R = 10, T = ``--horizon``:

* **per unit**: ``simulate(..., engine="compiled")`` alone (its own environment draw), CPU time,
  best of ``--repeats`` after a warm-up;
* **fused**: all of them advanced together over one environment draw
  (:func:`privbandits.engine.fused.simulate_fused`); each algorithm's ``wall_time`` is its own share
  of the loop plus an equal share of the environment's draws (the issue's "counting the
  environment once per fused group"); best of ``--repeats``.

Usage::

    python benchmarks/bench_local.py [--horizon 200000] [--replications 10] [--repeats 3]

Prints markdown; copy it into benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from typing import Any

import privbandits as pb
from privbandits.algorithms import available
from privbandits.core.rng import make_streams
from privbandits.engine.fused import fusable, simulate_fused


def _env() -> pb.SyntheticEnv:
    return pb.SyntheticEnv(d=2, K=10, noise_scale=0.1)


def local_algorithms() -> list[str]:
    """The registered local-model algorithms that run on the compiled per-round driver here."""
    out = []
    for name, cls in sorted(available().items()):
        if cls.trust_model != "local" or "single" not in cls.settings:
            continue
        env = _env()
        alg = pb.make(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                alg.reset(env.reset(2, make_streams(0), 100), 2, make_streams(0))
            except Exception:  # not defined on this problem (a link, a loss environment)
                continue
        if fusable(alg, env):
            out.append(name)
    return out


def _alone(name: str, T: int, R: int) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        res = pb.simulate(pb.make(name), _env(), T, replications=R, seed=0, engine="compiled")
        t1 = time.process_time()
    assert res.engine == "compiled"
    return T * R / (t1 - t0)


def _fused(names: list[str], T: int, R: int) -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return simulate_fused([pb.make(n) for n in names], _env, T, replications=R, seed=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon", type=int, default=200_000)
    ap.add_argument("--replications", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    T, R = args.horizon, args.replications
    names = local_algorithms()
    for n in names:  # warm-up: compile
        _alone(n, 100, 2)
    _fused(names, 100, 2)
    load0 = os.getloadavg()[0]
    alone = {n: max(_alone(n, T, R) for _ in range(args.repeats)) for n in names}
    fused: dict[str, float] = {}
    for _ in range(args.repeats):
        for res in _fused(names, T, R):
            fused[res.algorithm] = max(fused.get(res.algorithm, 0.0), T * R / res.wall_time)
    print(
        f"d = 2, K = 10, R = {R}, T = {T:,}; {len(names)} algorithms fused in one group; "
        f"load average {load0:.2f} -> {os.getloadavg()[0]:.2f}\n"
    )
    print("| algorithm | per unit rr/s | fused rr/s (environment once per group) | >= 3e6 fused |")
    print("|---|---|---|---|")
    for n in names:
        ok = "yes" if fused[n] >= 3e6 else "no"
        print(f"| {n} | {alone[n]:.3g} | {fused[n]:.3g} | {ok} |")


if __name__ == "__main__":
    main()
