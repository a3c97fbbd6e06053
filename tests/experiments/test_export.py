"""CSV / Parquet export in long format."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from privbandits.core.errors import PrivbanditsError, ValidationError
from privbandits.experiments.config import parse_config
from privbandits.experiments.export import export_results
from privbandits.experiments.runner import run_units
from privbandits.experiments.store import ResultsStore

from .conftest import SMALL

LEAD = [
    "experiment",
    "key",
    "algorithm",
    "label",
    "preset",
    "trust_model",
    "guarantee_epsilon",
    "guarantee_delta",
    "trust_assumption",
    "calibration",
]
TAIL = ["seed", "replication", "t", "regret", "reward", "estimation_error"]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    text = SMALL.replace('name = "linucb"\n', 'name = "linucb"\ngrid = { alpha = [0.5, 1.0] }\n')
    path = tmp_path_factory.mktemp("export") / "r.db"
    with ResultsStore(path) as store:
        run_units(parse_config(text).units(), store, workers=1, quiet=True)
    return path


def test_csv_columns_and_values(store_path: Path, tmp_path: Path) -> None:
    with ResultsStore(store_path, create=False) as store:
        path, n = export_results(store, tmp_path / "out.csv", "csv")
        results = store.load()
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    header = list(rows[0])
    assert header == LEAD + ["param_alpha"] + TAIL
    expected = sum(r.regret.size for r in results)  # R x n_checkpoints per unit
    assert n == len(rows) == expected
    # every stored number appears at its (key, replication, t)
    for r in results:
        mine = [row for row in rows if row["key"] == r.key]
        assert len(mine) == r.regret.size
        got = np.array([float(row["regret"]) for row in mine]).reshape(r.regret.shape)
        np.testing.assert_array_equal(got, r.regret)  # repr round trip of floats is exact
        ts = sorted({int(row["t"]) for row in mine})
        assert ts == [int(t) for t in r.checkpoints]
        assert {row["seed"] for row in mine} == {str(r.seed)}
        assert {row["param_alpha"] for row in mine} == {
            "" if "alpha" not in r.params else str(r.params["alpha"])
        }
        assert {row["guarantee_epsilon"] for row in mine} == {""}  # non-private: empty
        assert {json.loads(row["calibration"]) == r.resolved_params for row in mine} == {True}
    uniform = [row for row in rows if row["algorithm"] == "uniform"]
    assert uniform and all(
        row["estimation_error"] == "" for row in uniform
    )  # uniform has no estimate


def test_parquet_round_trip(store_path: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    with ResultsStore(store_path, create=False) as store:
        path, n = export_results(store, tmp_path / "out.parquet", "parquet", experiment="small")
    table = pq.read_table(path)
    assert table.num_rows == n and table.column_names == LEAD + ["param_alpha"] + TAIL


def test_parquet_without_pyarrow(
    store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with ResultsStore(store_path, create=False) as store:
        with pytest.raises(PrivbanditsError, match=r"pip install privbandits\[parquet\]"):
            export_results(store, tmp_path / "out.parquet", "parquet")


def test_export_errors(store_path: Path, tmp_path: Path) -> None:
    with ResultsStore(store_path, create=False) as store:
        with pytest.raises(ValidationError, match="format must be one of csv, parquet"):
            export_results(store, tmp_path / "x.json", "json")
        with pytest.raises(
            ValidationError, match="no results for experiment 'nope'.*experiments: small"
        ):
            export_results(store, tmp_path / "x.csv", "csv", experiment="nope")
