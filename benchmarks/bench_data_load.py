"""Loading a large data file: parse time, cache reuse and peak memory, and a short run on it.

A numeric classification CSV of about ``--mb`` megabytes (20 features, 4 classes, labels named
``c0``..``c3``) is generated in a temporary directory (deleted afterwards), then three steps run,
each in a fresh Python process so that its peak resident memory (``ru_maxrss``) is its own:

1. **cold load**: ``SupervisedEnv(path=..., label="segment")`` with an empty data cache: the file
   is parsed (chunked pandas reader), the arrays and the bounded contexts are written to the cache;
2. **warm load**: the same construction again: the cached arrays are opened memory-mapped;
3. **run, 2 workers**: ``privbandits run`` of a short experiment (2 seeds = 2 work units, one
   per worker) on the file with an empty data cache: the parent parses the file once (while the
   configuration is validated) and the two worker processes open the cached arrays.  Peak memory
   of the parent (``RUSAGE_SELF``) and of the largest worker (sampled every 0.1 s with psutil:
   resident, proportional (shared pages divided among the processes mapping them) and private
   memory; ``RUSAGE_CHILDREN`` would count the copy of the parent a fork makes before ``exec``).

The numeric data size is rows x features x 8 bytes (the float64 feature matrix).

Usage::

    python benchmarks/bench_data_load.py [--mb 200] [--horizon 2000]

Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FEATURES = 20
CLASSES = 4

_LOAD = """
import json, resource, sys, time
t0 = time.perf_counter()
from privbandits.envs.datasets import SupervisedEnv
t1 = time.perf_counter()
env = SupervisedEnv(path=sys.argv[1], label="segment")
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1,
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "n": env.data.n, "p": env.data.p}))
"""

_BASE = """
import json, resource
import pandas, privbandits.cli, privbandits.envs.datasets
print(json.dumps({"maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

_RUN = """
import json, resource, sys, threading, time
import psutil
from privbandits.cli import app
peak = {"rss": 0, "pss": 0, "uss": 0}
done = threading.Event()

def sample():  # the workers' memory, every 0.1 s (RUSAGE_CHILDREN would count the fork's copy)
    me = psutil.Process()
    while not done.is_set():
        for child in me.children(recursive=True):
            try:
                info = child.memory_full_info()
            except psutil.Error:
                continue
            for k in peak:
                peak[k] = max(peak[k], getattr(info, k))
        time.sleep(0.1)

threading.Thread(target=sample, daemon=True).start()
t0 = time.perf_counter()
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    done.set()
    print(json.dumps({"wall_s": time.perf_counter() - t0,
        "parent_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        **{f"worker_{k}_mb": v / 2**20 for k, v in peak.items()}}))
"""


def make_csv(path: Path, megabytes: float, seed: int = 0) -> int:
    """Write the CSV; returns its number of rows."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((FEATURES, CLASSES))
    rows, written, block = 0, 0, 50_000
    target = megabytes * 1e6
    with path.open("w", encoding="utf-8") as fh:
        fh.write(",".join([f"f{j}" for j in range(FEATURES)] + ["segment"]) + "\n")
        while written < target:
            X = rng.standard_normal((block, FEATURES)) * rng.uniform(0.5, 50.0, FEATURES)
            y = np.argmax(X / X.std(axis=0) @ W + rng.gumbel(size=(block, CLASSES)), axis=1)
            lines = [
                ",".join(f"{v:.9g}" for v in row) + f",c{c}\n" for row, c in zip(X.tolist(), y)
            ]
            text = "".join(lines)
            fh.write(text)
            written += len(text)
            rows += block
    return rows


def _child(code: str, args: list[str], env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"step failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=200.0, help="CSV size in MB (default 200)")
    ap.add_argument("--horizon", type=int, default=2000, help="rounds of the run (default 2000)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pb-bench-data-") as tmp:
        root = Path(tmp)
        csv = root / "big.csv"
        t0 = time.perf_counter()
        n = make_csv(csv, args.mb)
        gen = time.perf_counter() - t0
        size = csv.stat().st_size / 1e6
        numeric = n * FEATURES * 8 / 1e6
        env = dict(os.environ, PRIVBANDITS_DATA_CACHE=str(root / "cache1"))
        base = _child(_BASE, [], env)
        cold = _child(_LOAD, [str(csv)], env)
        warm = _child(_LOAD, [str(csv)], env)
        toml = root / "exp.toml"
        toml.write_text(
            f'name = "bench"\nhorizon = {args.horizon}\nreplications = 2\nseeds = [0, 1]\n'
            f'[env]\nkind = "supervised"\npath = "{csv}"\nlabel = "segment"\n'
            '[[algorithms]]\nname = "ldp-sgd"\nparams = { epsilon = 1.0 }\n'
        )
        env_run = dict(os.environ, PRIVBANDITS_DATA_CACHE=str(root / "cache2"))
        cmd = ["run", str(toml), "--workers", "2", "--quiet", "--db", str(root / "r.db")]
        cmd += ["--out", str(root / "out")]
        run = _child(_RUN, cmd, env_run)
        load = os.getloadavg()
    print(f"CSV: {size:.0f} MB, {n:,} rows x {FEATURES} features + label ({CLASSES} classes); ")
    print(f"numeric data (float64 features) {numeric:.0f} MB; generated in {gen:.0f} s\n")
    print(
        f"Peak RSS of a process that only imports privbandits and pandas: {base['maxrss_mb']:.0f} MB "
        "(included in every figure below).\n"
    )
    print("| step | wall time | peak RSS | peak / numeric size |")
    print("|---|---:|---:|---:|")
    for name, r in (("cold load (parse + cache)", cold), ("warm load (cache hit)", warm)):
        print(
            f"| {name} | {r['load_s']:.1f} s (+{r['import_s']:.1f} s import) | "
            f"{r['maxrss_mb']:.0f} MB | {r['maxrss_mb'] / numeric:.2f} |"
        )
    print(
        f"| `privbandits run` -w 2, T = {args.horizon}: parent | {run['wall_s']:.1f} s | "
        f"{run['parent_maxrss_mb']:.0f} MB | {run['parent_maxrss_mb'] / numeric:.2f} |"
    )
    print(
        f"| `privbandits run` -w 2: largest worker (sampled) | | {run['worker_rss_mb']:.0f} MB "
        f"(PSS {run['worker_pss_mb']:.0f} MB, private {run['worker_uss_mb']:.0f} MB) | "
        f"{run['worker_rss_mb'] / numeric:.2f} |"
    )
    print(f"\nload average at the end: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")


if __name__ == "__main__":
    main()
