"""The ziggurat samplers (``privbandits.privacy.ziggurat``) against numpy's, alone and end to end.

1. **Sampler alone**: nanoseconds per draw (CPU time, best of ``--repeats``) of
   * numpy's vectorized ``Generator.standard_normal(n)`` / ``standard_exponential(n)``,
   * numba's ``rng.standard_normal()`` / ``rng.standard_exponential()`` called in a compiled loop
     (the ziggurat numba ports from numpy, one call through the bit generator's function
     pointer per 64-bit word: what compiled kernels use today),
   * the inline-PCG64 ziggurat (``pcg64_standard_normal`` / ``pcg64_standard_exponential``:
     the same values, the PCG64 step in registers),
   * ``Lap(1)`` in a compiled loop: the inversion of ``samplers.laplace_draw`` (default) and
     the exponential ziggurat ``laplace_ziggurat`` (``PRIVBANDITS_SAMPLER=ziggurat``);
   and the raw 64-bit word (numpy ``random_raw``, the inline step).
2. **End to end**: replication-rounds per CPU-second of the compiled driver for the per-round
   local algorithms (single-parameter problem, contexts on the unit sphere, d, K, R, T as given)
   in two fresh processes, ``PRIVBANDITS_SAMPLER=numpy`` and ``=ziggurat``.

Usage::

    python benchmarks/bench_samplers.py [--horizon 50000] [--repeats 3] [--skip alone,e2e]

Prints markdown (with the load average beside every table); copy it into benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ALGS = [
    ("ldp-ols", {"epsilon": 1.0}),
    ("ldp-sgd", {"epsilon": 1.0}),
    ("ldp-ucb", {"epsilon": 1.0}),
    ("ldp-gloc", {"epsilon": 1.0}),
    ("ldp-ucb", {"epsilon": 1.0, "mechanism": "laplace"}),
    ("ldp-gloc", {"epsilon": 1.0, "mechanism": "laplace", "zeta": 0.05}),
]


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _best(fn: object, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, time.process_time() - t0)
    return best


def alone(n: int, repeats: int) -> None:
    import numba as nb
    import numpy as np

    from privbandits.privacy import ziggurat as zig
    from privbandits.privacy.samplers import laplace_draw

    @nb.njit
    def loop_normal(rng: np.random.Generator, out: np.ndarray) -> None:  # pragma: no cover
        for i in range(out.shape[0]):
            out[i] = rng.standard_normal()

    @nb.njit
    def loop_exp(rng: np.random.Generator, out: np.ndarray) -> None:  # pragma: no cover
        for i in range(out.shape[0]):
            out[i] = rng.standard_exponential()

    @nb.njit
    def loop_lap_inv(rng: np.random.Generator, out: np.ndarray) -> None:  # pragma: no cover
        for i in range(out.shape[0]):
            u = rng.random() - 0.5  # laplace_draw's inversion, whatever the switch
            out[i] = -np.log1p(-2.0 * u) if u >= 0.0 else np.log1p(2.0 * u)

    @nb.njit
    def loop_lap_zig(rng: np.random.Generator, out: np.ndarray) -> None:  # pragma: no cover
        for i in range(out.shape[0]):
            out[i] = zig.laplace_ziggurat(rng)

    @nb.njit
    def loop_lap_draw(rng: np.random.Generator, out: np.ndarray) -> None:  # pragma: no cover
        for i in range(out.shape[0]):
            out[i] = laplace_draw(rng, 1.0)

    rng = np.random.default_rng(0)
    out = np.empty(n)
    rows = [
        ("raw 64-bit word", "numpy `random_raw(n)`", lambda: rng.bit_generator.random_raw(n)),
        ("raw 64-bit word", "inline PCG64 step", lambda: zig.pcg64_raw(rng, n)),
        ("N(0, 1)", "numpy `standard_normal(n)`", lambda: rng.standard_normal(n)),
        ("N(0, 1)", "numba `rng.standard_normal()` loop", lambda: loop_normal(rng, out)),
        ("N(0, 1)", "inline-PCG64 ziggurat", lambda: zig.pcg64_standard_normal(rng, n)),
        ("Exp(1)", "numpy `standard_exponential(n)`", lambda: rng.standard_exponential(n)),
        ("Exp(1)", "numba `rng.standard_exponential()` loop", lambda: loop_exp(rng, out)),
        ("Exp(1)", "inline-PCG64 ziggurat", lambda: zig.pcg64_standard_exponential(rng, n)),
        (
            "Lap(1)",
            "numba loop, inversion (default `laplace_draw`)",
            lambda: loop_lap_inv(rng, out),
        ),
        ("Lap(1)", "numba loop, `laplace_ziggurat`", lambda: loop_lap_zig(rng, out)),
        (
            "Lap(1)",
            f"numba loop, `laplace_draw` (PRIVBANDITS_SAMPLER={zig.SAMPLER})",
            lambda: loop_lap_draw(rng, out),
        ),
    ]
    for _, _, fn in rows:
        fn()  # warm-up: compilation
    print(f"\n### Sampler alone: {n} draws per call, CPU ns per draw (load {_load()})\n")
    print("| law | sampler | ns per draw |")
    print("|---|---|---:|")
    for law, name, fn in rows:
        print(f"| {law} | {name} | {_best(fn, repeats) / n * 1e9:.2f} |")


def _e2e_child(d: int, K: int, T: int, R: int, repeats: int) -> None:
    import warnings

    import privbandits as pb

    out = {}
    for name, params in ALGS:

        def run(name: str = name, params: dict = params) -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pb.simulate(
                    pb.make(name, **params),
                    pb.SyntheticEnv(d=d, K=K, noise_scale=0.1),
                    T,
                    replications=R,
                    seed=0,
                    engine="compiled",
                )

        run()
        out[f"{name} {json.dumps(params)}"] = T * R / _best(run, repeats)
    print(json.dumps(out))


def e2e(d: int, K: int, T: int, R: int, repeats: int) -> None:
    rates = {}
    load0 = _load()
    for sampler in ("numpy", "ziggurat"):
        env = dict(os.environ, PRIVBANDITS_SAMPLER=sampler)
        cmd = [sys.executable, __file__, "--child", f"{d},{K},{T},{R},{repeats}"]
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        rates[sampler] = json.loads(res.stdout.strip().splitlines()[-1])
    print(
        f"\n### End to end: compiled driver, d = {d}, K = {K}, R = {R}, T = {T:g} "
        f"(load {load0} at the start, {_load()} at the end)\n"
    )
    print("| algorithm | parameters | numpy (rr per CPU-s) | ziggurat (rr per CPU-s) | ratio |")
    print("|---|---|---:|---:|---:|")
    for key, a in rates["numpy"].items():
        b = rates["ziggurat"][key]
        name, params = key.split(" ", 1)
        print(f"| {name} | `{params}` | {a:.3g} | {b:.3g} | {b / a:.2f}x |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=1 << 20)
    p.add_argument("--horizon", type=int, default=50_000)
    p.add_argument("--replications", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dims", default="2,10", help="comma-separated d values (K = 10)")
    p.add_argument("--skip", default="", help="comma-separated: alone,e2e")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        d, K, T, R, rep = (int(x) for x in args.child.split(","))
        _e2e_child(d, K, T, R, rep)
        return
    skip = set(filter(None, args.skip.split(",")))
    if "alone" not in skip:
        alone(args.draws, args.repeats)
    if "e2e" not in skip:
        for d in (int(x) for x in args.dims.split(",")):
            e2e(d, 10, args.horizon, args.replications, args.repeats)


if __name__ == "__main__":
    main()
