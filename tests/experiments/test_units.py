"""Work-unit identity: the key covers every field of the unit, and resume finds every stored unit."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.experiments.config import parse_config
from privbandits.experiments.runner import run_units
from privbandits.experiments.store import ResultsStore
from privbandits.experiments.units import SCHEMA_VERSION, WorkUnit, canonical_json

from .conftest import SMALL

BASE = WorkUnit(
    experiment="e",
    label="LinUCB",
    algorithm="linucb",
    params={"lam": 1.0},
    env={"kind": "synthetic", "d": 3, "K": 4},
    seed=0,
    horizon=300,
    replications=3,
    checkpoints={"log": 10},
    grid={},
    engine="auto",
)

#: A different value for every field of a unit (the test fails if a field is added without one).
CHANGES = {
    "experiment": "f",
    "label": "LinUCB-2",
    "algorithm": "uniform",
    "params": {"lam": 2.0},
    "env": {"kind": "synthetic", "d": 3, "K": 5},
    "seed": 1,
    "horizon": 100,
    "replications": 4,
    "checkpoints": {"log": 11},
    "grid": {"lam": 1.0},
    "engine": "reference",
    "imports": ("json",),
}


def test_every_field_has_a_change() -> None:
    assert set(CHANGES) == {f.name for f in dataclasses.fields(WorkUnit)}


@settings(max_examples=60, deadline=None)
@given(st.sets(st.sampled_from(sorted(CHANGES)), min_size=1))
def test_key_changes_with_every_field(fields: set[str]) -> None:
    """Changing any non-empty set of fields changes the key (a rerun never reuses another unit's rows)."""
    changed = dataclasses.replace(BASE, **{f: CHANGES[f] for f in fields})
    assert changed.key() != BASE.key()


def test_key_is_stable_and_order_free() -> None:
    same = dataclasses.replace(BASE, params={"lam": 1.0}, env={"K": 4, "d": 3, "kind": "synthetic"})
    assert same.key() == BASE.key()


def test_resume_beyond_the_lookup_chunk(tmp_path: Path) -> None:
    """A finished run of more units than one key-lookup chunk re-executes nothing."""
    cfg = parse_config(
        SMALL.replace("horizon = 300", "horizon = 3").replace(
            "seeds = [0, 1]", f"seeds = {list(range(260))}"
        )
    )
    units = [u for u in cfg.units()]
    assert len(units) == 520
    with ResultsStore(tmp_path / "r.db") as store:
        first = run_units(units, store, workers=1, quiet=True)
        again = run_units(units, store, workers=1, quiet=True)
    assert first.executed == 520 and again.executed == 0 and again.skipped == 520


def test_key_of_a_fixed_unit_is_pinned() -> None:
    """Stored results are found by this digest: a change of SCHEMA_VERSION or of the canonical form
    orphans every existing database, so it must be deliberate (update the literal with the bump)."""
    assert SCHEMA_VERSION == 2 and BASE.config()["schema"] == SCHEMA_VERSION
    assert BASE.key() == "68fda71f460de15569eee92ffd4bafd5d25c0120b8e11024a997ee61629a1c71"


def test_canonical_json_spells_non_finite_floats_at_every_depth() -> None:
    obj = {"a": math.nan, "b": [math.inf, {"c": -math.inf}], 1: 2.0, "t": (1, 0.5)}
    assert canonical_json(obj) == '{"1":2.0,"a":"nan","b":["inf",{"c":"-inf"}],"t":[1,0.5]}'


def test_work_unit_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        BASE.horizon = 100  # type: ignore[misc]


def test_default_checkpoints_are_fifty_log_spaced_points() -> None:
    default = dataclasses.replace(BASE, checkpoints={}).checkpoint_rounds()
    assert default == dataclasses.replace(BASE, checkpoints={"log": 50}).checkpoint_rounds()
    assert default != dataclasses.replace(BASE, checkpoints={"log": 49}).checkpoint_rounds()
    assert default != dataclasses.replace(BASE, checkpoints={"log": 51}).checkpoint_rounds()
