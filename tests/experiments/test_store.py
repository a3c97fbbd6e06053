"""SQLite results store: round trip, insert-if-absent, WAL, errors."""

from __future__ import annotations

import math
import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from privbandits.core.errors import ResultsStoreError
from privbandits.experiments.config import parse_config
from privbandits.experiments.store import ResultsStore
from privbandits.experiments.units import execute_unit

from .conftest import SMALL


@pytest.fixture
def units():
    return parse_config(SMALL).units()


def test_round_trip_is_exact(tmp_path: Path, units) -> None:
    unit = units[0]
    result = execute_unit(unit)
    with ResultsStore(tmp_path / "r.db") as store:
        assert store.put(unit, result) is True
        assert store.put(unit, result) is False  # insert only if absent
        assert store.count() == 1 and store.count("small") == 1 and store.count("other") == 0
        (back,) = store.load(keys=[unit.key()])
    for name in ("checkpoints", "regret", "reward", "estimation_error"):
        a, b = getattr(result, name), getattr(back, name)
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()  # bit-identical
    assert back.key == unit.key() and back.label == "LinUCB" and back.experiment == "small"
    assert back.params == unit.params and back.grid == {} and back.unit_env == unit.env
    assert (back.seed, back.horizon, back.replications) == (
        unit.seed,
        unit.horizon,
        unit.replications,
    )
    assert back.guarantee == result.guarantee and math.isinf(back.guarantee.epsilon)
    assert back.wall_time == result.wall_time and back.env == result.env
    assert back.summary() == result.summary()


def test_private_guarantee_round_trip(tmp_path: Path, fake_private: str) -> None:
    cfg = parse_config(
        SMALL.replace(
            'name = "uniform"',
            f'name = "{fake_private}"\nparams = {{ epsilon = 0.5, delta = 1e-6 }}',
        )
    )
    unit = cfg.units()[-1]
    result = execute_unit(unit)
    with ResultsStore(tmp_path / "r.db") as store:
        store.put(unit, result)
        (back,) = store.load(experiment="small")
    assert (
        back.guarantee.epsilon == 0.5
        and back.guarantee.delta == 1e-6
        and back.guarantee.model == "central"
    )
    assert back.trust_model == "central"


def test_wal_mode_and_schema(tmp_path: Path, units) -> None:
    with ResultsStore(tmp_path / "r.db") as store:
        store.put(units[0], execute_unit(units[0]))
    conn = sqlite3.connect(tmp_path / "r.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cols = {r[1] for r in conn.execute("PRAGMA table_info(units)")}
    assert {
        "key",
        "experiment",
        "algorithm",
        "label",
        "params",
        "seed",
        "preset",
        "epsilon",
        "delta",
        "guarantee_model",
        "guarantee_notes",
        "wall_time",
        "created_at",
        "regret",
    } <= cols
    pk = [r[1] for r in conn.execute("PRAGMA table_info(units)") if r[5]]
    assert pk == ["key"]
    conn.close()


def test_existing_keys_and_experiments(tmp_path: Path, units) -> None:
    with ResultsStore(tmp_path / "r.db") as store:
        for u in units[:2]:
            store.put(u, execute_unit(u))
        keys = [u.key() for u in units]
        assert store.existing_keys(keys) == set(keys[:2])
        assert [e[:2] for e in store.experiments()] == [("small", 2)]


def test_shape_mismatch_is_rejected_and_not_written(tmp_path: Path, units) -> None:
    unit = units[0]
    result = execute_unit(unit)
    bad = replace(result, regret=result.regret[:, :-1])
    with ResultsStore(tmp_path / "r.db") as store:
        with pytest.raises(ResultsStoreError, match="regret of unit"):
            store.put(unit, bad)
        assert store.count() == 0


def test_missing_database_for_readers(tmp_path: Path) -> None:
    with pytest.raises(ResultsStoreError, match="no results database"):
        ResultsStore(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()


def test_unknown_key_and_corrupt_file(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "r.db") as store:
        with pytest.raises(ResultsStoreError, match="is not in"):
            store.load(keys=["0" * 64])
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ResultsStoreError, match="cannot open results database"):
        ResultsStore(junk)


def test_arrays_are_not_pickled(tmp_path: Path, units) -> None:
    unit = units[0]
    with ResultsStore(tmp_path / "r.db") as store:
        store.put(unit, execute_unit(unit))
    blob = sqlite3.connect(tmp_path / "r.db").execute("SELECT regret FROM units").fetchone()[0]
    assert blob[:6] == b"\x93NUMPY"  # npy format, loaded with allow_pickle=False
    assert np.load(__import__("io").BytesIO(blob), allow_pickle=False).shape == (
        3,
        len(unit.checkpoint_rounds()),
    )


@pytest.mark.parametrize("approximate, local_epsilon", [(True, 2.5), (False, None)])
def test_shuffle_guarantee_fields_round_trip(
    tmp_path: Path, units, approximate: bool, local_epsilon: float | None
) -> None:
    """An approximate guarantee stays marked ``~`` and the local level of shuffled reports survives."""
    from privbandits.privacy.guarantee import PrivacyGuarantee

    unit = units[0]
    g = PrivacyGuarantee(
        model="shuffle",
        epsilon=1.0,
        delta=1e-5,
        approximate=approximate,
        local_epsilon=local_epsilon,
    )
    result = replace(execute_unit(unit), guarantee=g)
    with ResultsStore(tmp_path / "r.db") as store:
        store.put(unit, result)
        (back,) = store.load(keys=[unit.key()])
    assert back.guarantee == g
    assert back.guarantee.short().startswith("~") is approximate
