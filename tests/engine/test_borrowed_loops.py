"""The compiled driver's loop without numba's runtime (``run_borrowed``, kernels declaring
``allocates = False``; :mod:`privbandits.algorithms._shared.loops`).

* Every declaration holds: in a fresh process with an empty compiled-code cache, where nothing
  was compiled with the runtime before, each declaring kernel's borrowed loop is compiled first,
  so every step and helper it calls is typed without the runtime and any allocation among them
  fails to compile.
* Both loops give the same trajectory (reference counting never changes a value).
* The per-round local algorithms of Han et al. (2021) Fig. 5.1 run borrowed in both settings
  (the performance they were measured with, ``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import privbandits as pb
from privbandits.algorithms import registry
from privbandits.core.rng import make_streams
from privbandits.engine.compiled import compiled_kernel
from privbandits.testing.cases import env_kinds, make_env

#: Runs in the fresh process: every registered test case whose kernel declares ``allocates =
#: False`` is run on the compiled driver (its borrowed loop compiled first); prints the cases run.
_CHECK = r"""
import json, sys, warnings
warnings.filterwarnings("ignore")
import privbandits as pb
from privbandits.algorithms import registry
from privbandits.engine.compiled import compiled_kernel
from privbandits.engine.convex import convex_kernel
from privbandits.engine.batches import supports_batches
from privbandits.testing.cases import env_kinds, make_env
from privbandits.core.rng import make_streams
done, failed = [], []
cases = [(name, i, params, kind) for name, cls in sorted(registry.available().items())
         for i, params in enumerate(cls.test_params) for kind in env_kinds(cls)]
cases.append(("ldp-onepoint", "fkm", {"base": "fkm"}, "convex"))
for name, i, params, kind in cases:
    cls = registry.get(name)
    alg = pb.make(name, **params)
    env = make_env(cls, kind)
    alg.reset(env.reset(2, make_streams(0), 20), 2, make_streams(0))
    k = compiled_kernel(alg) or convex_kernel(alg)
    if k is None or k.allocates or supports_batches(alg):
        continue
    case = f"{name}[{i}]/{kind}"
    try:
        pb.simulate(pb.make(name, **params), make_env(cls, kind), 20, replications=2,
                    seed=0, engine="compiled")
        done.append(case)
    except Exception as e:
        failed.append(f"{case}: {type(e).__name__}: {str(e)[:300]}")
print(json.dumps({"done": done, "failed": failed}))
"""


@pytest.mark.slow  # ~75 s: compiles every declaring kernel from an empty cache
def test_every_allocation_free_declaration_compiles_without_the_runtime(tmp_path: Path) -> None:
    path = os.pathsep.join([str(Path(pb.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])
    env = {
        **os.environ,
        "PRIVBANDITS_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONWARNINGS": "ignore",
        "PYTHONPATH": path,
    }
    out = subprocess.run(
        [sys.executable, "-c", _CHECK], env=env, capture_output=True, text=True, timeout=1500
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["failed"] == []
    # the declarations this test covers, at least the Fig. 5.1 algorithms in both settings
    fig51 = ("ldp-ols[0]/single", "ldp-ols[0]/multi", "ldp-sgd[0]/single", "ldp-ucb[0]/single")
    bco = ("fkm[0]/convex", "two-point-bco[0]/convex", "ldp-twopoint[1]/convex")
    for case in (*fig51, *bco, "ldp-onepoint[fkm]/convex", "ldp-onepoint[0]/finite"):
        assert case in report["done"]
    assert len(report["done"]) >= 40


@pytest.mark.parametrize("name", ["ldp-ols", "ldp-sgd", "ldp-ucb", "ldp-gloc"])
@pytest.mark.parametrize("setting", ["single", "multi"])
def test_fig51_algorithms_run_borrowed(name: str, setting: str) -> None:
    alg = pb.make(name, epsilon=1.0)
    env = pb.SyntheticEnv(d=2, K=3, setting=setting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg.reset(env.reset(2, make_streams(0), 50), 2, make_streams(0))
    k = compiled_kernel(alg)
    assert k is not None and k.allocates is False
    assert k.chunk_loop is k.loops.run_borrowed


@pytest.mark.parametrize(
    ("name", "params", "setting"),
    [
        ("ldp-ols", {"epsilon": 1.0}, "multi"),
        ("ldp-ucb", {"epsilon": 2.0, "mechanism": "laplace"}, "single"),
        ("jdp-linucb", {}, "single"),
    ],
)
def test_both_loops_give_the_same_trajectory(name: str, params: dict, setting: str) -> None:
    """The same seed through ``run`` and through ``run_borrowed``: identical regret curves."""
    cls = registry.get(name)
    params = params or dict(cls.test_params[0])
    curves = []
    for allocates in (True, False):
        alg = pb.make(name, **params)
        env = pb.SyntheticEnv(d=3, K=4, setting=setting, noise_scale=0.1)
        original = alg.build_kernel

        def build(original=original, allocates=allocates):  # type: ignore[no-untyped-def]
            k = original()
            k.allocates = allocates
            return k

        alg.build_kernel = build  # type: ignore[method-assign]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = pb.simulate(alg, env, 400, replications=3, seed=5, engine="compiled")
        k = compiled_kernel(alg)
        assert k is not None and k.allocates is allocates
        curves.append(np.asarray(res.regret))
    assert np.array_equal(curves[0], curves[1])


def test_make_env_kinds_cover_the_declared_settings() -> None:
    """The fresh-process check runs every environment kind a class declares."""
    cls = registry.get("ldp-ols")
    assert set(env_kinds(cls)) >= {"single", "multi"}
    assert make_env(cls, "multi").setting == "multi"
