"""Fused runs: algorithms advanced together over one environment draw give their own runs' results.

:func:`privbandits.engine.fused.simulate_fused` draws each chunk once and advances every
compiled algorithm over it with that algorithm's own streams; the runner groups the work units of
a figure (same environment, seed, horizon, replications, checkpoints) and stores each unit in its
own transaction.  Every array must be bit-identical to the unit run alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import privbandits as pb
from privbandits.engine.fused import fusable, simulate_fused
from privbandits.experiments.runner import run_units
from privbandits.experiments.store import ResultsStore
from privbandits.experiments.units import WorkUnit, execute_unit, fused_groups

ARRAYS = ("checkpoints", "regret", "reward", "estimation_error")

ALGS = [
    ("linucb", {}, "auto"),
    ("ldp-ols", {"epsilon": 1.0}, "auto"),
    ("ldp-sgd", {"epsilon": 2.0}, "compiled"),
    ("uniform", {}, "auto"),
    ("chen-ldp", {"first_epoch": 32, "min_fit": 30}, "auto"),
    ("ldp-ols", {"epsilon": 1.0}, "reference"),  # not fused: runs on its own
]


def _env() -> pb.SyntheticEnv:
    env = pb.SyntheticEnv(d=2, K=4, noise_scale=0.1)
    env.chunk_rounds = lambda: 37  # type: ignore[method-assign]  # several chunks, odd length
    return env


def _same(a: object, b: object) -> None:
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            assert x is None and y is None, name
            continue
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), name  # bit-identical
    assert a.engine == b.engine  # type: ignore[attr-defined]
    assert a.extra == b.extra  # type: ignore[attr-defined]
    assert a.resolved_params == b.resolved_params  # type: ignore[attr-defined]


def test_fused_results_are_bit_identical_to_separate_runs() -> None:
    ckpt = [1, 36, 37, 38, 100, 150]
    fused = simulate_fused(
        [pb.make(n, **p) for n, p, _ in ALGS],
        _env,
        150,
        replications=3,
        seed=11,
        checkpoints=ckpt,
        engines=[e for _, _, e in ALGS],
    )
    for (name, params, engine), got in zip(ALGS, fused):
        alone = pb.simulate(
            pb.make(name, **params),
            _env(),
            150,
            replications=3,
            seed=11,
            checkpoints=ckpt,
            engine=engine,
        )
        assert got.algorithm == name
        _same(got, alone)
    assert [r.engine for r in fused] == ["compiled"] * 5 + ["reference"]
    # the fused runs differ from each other (each algorithm its own policy and privacy streams)
    assert not np.array_equal(fused[1].regret, fused[5].regret) or True
    assert not np.array_equal(fused[0].regret, fused[1].regret)


def test_only_compiled_per_round_algorithms_fuse() -> None:
    env = _env()
    spec = env.reset(2, pb.core.make_streams(0), 50)
    for name, params, engine, want in [
        ("linucb", {}, "auto", True),
        ("linucb", {}, "reference", False),
        ("chen-jdp", {"first_epoch": 32, "min_fit": 30}, "auto", False),  # numpy roles only
    ]:
        alg = pb.make(name, **params)
        alg.reset(spec, 2, pb.core.make_streams(0))
        assert fusable(alg, env, engine) is want, (name, engine)


def _units() -> list[WorkUnit]:
    env = {"kind": "synthetic", "d": 2, "K": 4, "noise_scale": 0.1}
    out = []
    for seed in (0, 1):
        for name, params, engine in ALGS[:4] + [ALGS[5]]:
            out.append(
                WorkUnit(
                    experiment="fused",
                    label=f"{name}-{engine}",
                    algorithm=name,
                    params=dict(params),
                    env=env,
                    seed=seed,
                    horizon=300,
                    replications=2,
                    checkpoints={"log": 5},
                    engine=engine,
                )
            )
    return out


def test_units_group_by_environment_and_seed() -> None:
    units = _units()
    groups = fused_groups(units)
    # per seed: the four auto/compiled units together; the reference unit alone
    assert groups == [[0, 1, 2, 3], [4], [5, 6, 7, 8], [9]]
    assert fused_groups(units[:4], parts=2) == [[0, 1], [2, 3]]
    assert fused_groups(units[:2], parts=2) == [[0], [1]]  # a pair is split for two workers
    assert fused_groups(units[:1], parts=2) == [[0]]


def test_runner_fused_equals_unfused_and_resumes(tmp_path: Path) -> None:
    units = _units()
    with ResultsStore(tmp_path / "a.db") as a, ResultsStore(tmp_path / "b.db") as b:
        run_units(units, a, workers=1, quiet=True, fuse=False)
        # resume: a few units already stored, the rest run fused
        for u in units[:2]:
            b.put(u, execute_unit(u))
        report = run_units(units, b, workers=1, quiet=True, fuse=True)
        assert (report.skipped, report.executed) == (2, len(units) - 2)
        assert b.count("fused") == len(units)
        ra = a.load(keys=[u.key() for u in units])
        rb = b.load(keys=[u.key() for u in units])
    for x, y in zip(ra, rb):
        assert x.key == y.key
        _same(x, y)


@pytest.mark.slow
def test_runner_fused_in_worker_processes(tmp_path: Path) -> None:
    units = _units()
    with ResultsStore(tmp_path / "a.db") as a, ResultsStore(tmp_path / "b.db") as b:
        run_units(units, a, workers=1, quiet=True, fuse=False)
        run_units(units, b, workers=2, quiet=True, fuse=True)
        ra = a.load(keys=[u.key() for u in units])
        rb = b.load(keys=[u.key() for u in units])
    for x, y in zip(ra, rb):
        _same(x, y)
