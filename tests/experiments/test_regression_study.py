"""Regression studies (``kind = "regression"``): validation, units, resume, report, gallery and CLI."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from privbandits.core.errors import ConfigError
from privbandits.experiments.config import Overrides
from privbandits.experiments.gallery import _entry, write_gallery
from privbandits.experiments.presets import available_presets, load_preset, load_reproduction
from privbandits.experiments.regression_experiment import seed_rows
from privbandits.experiments.regression_study import (
    RegressionStudy,
    parse_regression_study,
    run_regression_study,
)
from privbandits.experiments.store import ResultsStore


def _raw(**changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "kind": "regression",
        "name": "tiny",
        "replications": 2,
        "n_test": 2000,
        "estimators": ["reweighted", "ssp-ridge", "least-squares"],
        "blocks": [
            {
                "name": "cond",
                "x": "n",
                "facet": "c",
                "n": [1000, 2000],
                "d": [2],
                "epsilon": [1.0],
                "c": [0.0, 3.0],
            },
            {
                "name": "two-point",
                "x": "p0",
                "n": [2000],
                "d": [1],
                "epsilon": [1.0],
                "p0": [0.1, 0.01],
            },
        ],
        "quick": {"replications": 1, "n_test": 500, "n_max": 1500},
        "report": {"title": "Tiny study"},
    }
    raw.update(changes)
    return raw


def test_the_preset_is_a_listed_reproduction() -> None:
    assert "chen2025-regression" in available_presets()
    study = load_reproduction("chen2025-regression")
    assert isinstance(study, RegressionStudy)
    assert study.n_cells == 10 + 6 + 9 + 9 + 4 + 4 and study.replications == 10  # the README's grid
    quick = load_reproduction("chen2025-regression", Overrides(quick=True))
    assert isinstance(quick, RegressionStudy)
    assert max(c["n"] for b in quick.blocks for c in b.cells) == 20_000 and quick.replications == 1
    with pytest.raises(ConfigError, match="kind"):
        load_preset(
            "chen2025-regression"
        )  # the bandit loader names the kind and the command to use


def test_cells_are_the_product_of_the_block_lists_and_quick_caps_n() -> None:
    study = parse_regression_study(_raw())
    cond, two = study.blocks
    assert [(c["n"], c["c"]) for c in cond.cells] == [
        (1000, 0.0),
        (1000, 3.0),
        (2000, 0.0),
        (2000, 3.0),
    ]
    assert all(c["p0"] is None for c in cond.cells) and [c["p0"] for c in two.cells] == [0.1, 0.01]
    assert len(study.units()) == 6 * 2 and len({u.key() for u in study.units()}) == 12
    quick = parse_regression_study(_raw(), overrides=Overrides(quick=True))
    assert [c["n"] for c in quick.blocks[0].cells] == [1000, 1000, 1500, 1500]
    assert quick.n_test == 500 and quick.replications == 1
    assert parse_regression_study(_raw(), overrides=Overrides(replications=5)).replications == 5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"blocks": [{"name": "b", "n": [10], "d": [2], "epsilon": [1.0], "sigma": [1]}]},
            r"unknown key 'sigma' in blocks\[0\]",
        ),
        (
            {"blocks": [{"name": "b", "x": "q", "n": [10], "d": [2], "epsilon": [1.0]}]},
            r"blocks\[0\]\.x = \"q\"",
        ),
        (
            {"blocks": [{"name": "b", "n": [10, 20], "d": [2, 3], "epsilon": [1.0]}]},
            r"blocks\[0\]\.d .*split the block",
        ),
        (
            {"blocks": [{"name": "b", "n": [10], "d": [2], "epsilon": [1.0], "p0": [0.1]}]},
            r"blocks\[0\]\.d .*d must be",
        ),
        (
            {"blocks": [{"name": "b", "n": [10], "d": [2], "epsilon": [-1.0]}]},
            r"blocks\[0\]\.epsilon\[0\] = -1\.0",
        ),
        (
            {"blocks": [{"name": "b", "n": [0], "d": [2], "epsilon": [1.0]}]},
            r"blocks\[0\]\.n\[0\] = 0",
        ),
        ({"blocks": [{"name": "b", "d": [2], "epsilon": [1.0]}]}, r"blocks\[0\] needs 'n'"),
        ({"blocks": []}, "at least one"),
        ({"estimators": ["ssp-rige"]}, r"estimators\[0\] = \"ssp-rige\".*did you mean 'ssp-ridge'"),
        ({"n_tests": 10}, "n_tests"),
        ({"quick": {"n_max": 0}}, r"quick\.n_max = 0"),
    ],
)
def test_bad_input_names_the_field_and_value(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_regression_study(_raw(**change), source="t.toml")


def test_run_stores_each_unit_resumes_and_writes_the_report(tmp_path: Path) -> None:
    study = parse_regression_study(_raw(), overrides=Overrides(quick=True))
    db = tmp_path / "r.db"
    first = run_regression_study(
        study, db, tmp_path / "out", workers=1, quiet=True, formats=("png",), dpi=50
    )
    assert first.executed == len(study.units()) and first.skipped == 0
    again = run_regression_study(
        study, db, tmp_path / "out", workers=1, quiet=True, formats=("png",), dpi=50
    )
    assert again.executed == 0 and again.skipped == len(study.units())
    assert again.rows == first.rows
    unit = study.units()[0]
    direct = list(seed_rows(unit.cell, unit.seed, unit.n_test, unit.estimators))
    stored = [
        r
        for r in first.rows
        if r["block"] == unit.cell["block"]
        and r["n"] == unit.cell["n"]
        and r["c"] == unit.cell["c"]
        and r["seed"] == unit.seed
    ]
    assert [(r["estimator"], r["l1"], r["l2"]) for r in stored] == [
        (r["estimator"], r["l1"], r["l2"]) for r in direct
    ]
    with ResultsStore(db) as store:
        assert store.existing_row_keys(u.key() for u in study.units()) == {
            u.key() for u in study.units()
        }
    text = (tmp_path / "out" / "report.md").read_text()
    assert (
        text.startswith("# Tiny study")
        and "## Mean L1 error" in text
        and "| cond | 1000 | 2 | 1 | 0 |" in text
    )
    assert re.search(
        r"re-weighting has the lowest L1 error among the private estimators in \d+ of 6 cells", text
    )
    assert "0 above the requested epsilon" in text
    assert (tmp_path / "out" / "l1-error.png").stat().st_size > 10_000


def test_gallery_shows_a_regression_study_by_its_sizes(tmp_path: Path) -> None:
    study = parse_regression_study(_raw(), overrides=Overrides(quick=True))
    outcome = run_regression_study(
        study,
        tmp_path / "r.db",
        tmp_path / "g" / "tiny" / "x",
        workers=1,
        quiet=True,
        formats=("png",),
        dpi=50,
    )
    entry = _entry("tiny-x", outcome, tmp_path / "g")
    assert entry.size == "n 1e+03 .. 2e+03" and entry.figures == ("tiny/x/l1-error.png",)
    text = write_gallery([entry], tmp_path / "g", quick=True).read_text()
    assert (
        "| [tiny-x](tiny/x/report.md) | n 1e+03 .. 2e+03 | 1 | re-weighting has the lowest" in text
    )


@pytest.mark.slow
def test_cli_reproduces_the_regression_preset_quickly(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from privbandits.cli import app

    result = CliRunner().invoke(
        app,
        [
            "reproduce",
            "chen2025-regression",
            "--quick",
            "-w",
            "1",
            "--out",
            str(tmp_path / "out"),
            "--db",
            str(tmp_path / "r.db"),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "chen2025-regression: 34 cells x 1 seeds (34 units run, 0 stored)" in result.output
    assert (tmp_path / "out" / "report.md").exists()
