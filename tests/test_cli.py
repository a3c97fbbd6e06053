"""The ``privbandits`` command line, driven in-process with typer's CliRunner."""

from __future__ import annotations

import csv
import sqlite3
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.experiments.presets import load_preset

runner = CliRunner(env={"COLUMNS": "200"})  # wide enough that rich never folds a cell

SMALL = """
name = "small"
horizon = 200
replications = 2
seeds = [0, 1]
checkpoints = 8

[env]
kind = "synthetic"
d = 3
K = 4

[[algorithms]]
name = "linucb"
label = "LinUCB"

[[algorithms]]
name = "uniform"
"""


def _rows(db: Path) -> int:
    conn = sqlite3.connect(db)
    n = conn.execute("SELECT COUNT(*) FROM units").fetchone()[0]
    conn.close()
    return int(n)


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path


def _ok(args: list[str]):
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_list_shows_algorithms_and_presets() -> None:
    out = _ok(["list"]).stdout
    for word in ("linucb", "uniform", "Abbasi-Yadkori", "trust model", "demo"):
        assert word in out


def test_demo_tiny(tmp_path: Path) -> None:
    db, out = tmp_path / "res" / "results.db", tmp_path / "out"
    result = _ok(
        [
            "demo",
            "--horizon",
            "150",
            "--replications",
            "2",
            "--workers",
            "1",
            "--db",
            str(db),
            "--out",
            str(out),
        ]
    )
    assert "Final cumulative regret at T = 150" in result.stdout
    assert (
        "linucb" in result.stdout and "uniform" in result.stdout and "non-private" in result.stdout
    )
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("figure: "))
    png = Path(line.removeprefix("figure: "))
    assert png == out / "regret.png" and png.read_bytes()[:4] == b"\x89PNG"
    n_units = len(load_preset("demo").units())  # every algorithm x seed of the demo preset
    assert n_units >= 4 and _rows(db) == n_units
    assert "work units" in result.stderr  # status and progress go to stderr
    quiet = _ok(
        [
            "demo",
            "--horizon",
            "150",
            "--replications",
            "2",
            "--workers",
            "1",
            "--db",
            str(db),
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert "work units" not in quiet.stderr and _rows(db) == n_units  # nothing rerun


def test_run_writes_figures_and_report_and_resumes(cfg: Path, tmp_path: Path) -> None:
    db, out = tmp_path / "r.db", tmp_path / "out"
    first = _ok(["run", str(cfg), "--db", str(db), "--out", str(out), "--workers", "1"])
    assert "4 work units: 0 already stored, 4 to run" in first.stderr
    for name in ("regret.png", "regret.pdf", "report.md"):
        assert (out / name).stat().st_size > 0
    second = _ok(["run", str(cfg), "--db", str(db), "--out", str(out), "--workers", "1"])
    assert "4 work units: 4 already stored, 0 to run" in second.stderr
    _ok(
        [
            "run",
            str(cfg),
            "--db",
            str(db),
            "--out",
            str(out),
            "--workers",
            "1",
            "--seed",
            "5",
            "-T",
            "100",
            "-q",
        ]
    )
    assert _rows(db) == 6  # the override made two new units (seed 5, T = 100)


def test_sweep_grid_from_command_line(cfg: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    _ok(["sweep", str(cfg), "--grid", "alpha=0.5,1", "--db", str(db), "--workers", "1", "-q"])
    conn = sqlite3.connect(db)
    grids = sorted(g for (g,) in conn.execute("SELECT grid FROM units WHERE algorithm = 'linucb'"))
    conn.close()
    assert grids == ['{"alpha":0.5}', '{"alpha":0.5}', '{"alpha":1}', '{"alpha":1}']
    assert _rows(db) == 6  # uniform does not take alpha: 2 units
    # each run writes its own report: the sweep's never replaces the plain run's, nor another sweep's
    _ok(["run", str(cfg), "--db", str(db), "--workers", "1", "-q"])
    _ok(["sweep", str(cfg), "--grid", "alpha=2", "--db", str(db), "--workers", "1", "-q"])
    base = db.parent / "small"
    reports = {p.relative_to(base).as_posix(): p.read_text() for p in base.rglob("report.md")}
    assert set(reports) == {"report.md", "alpha=0.5,1/report.md", "alpha=2/report.md"}
    assert (
        "alpha=0.5" in reports["alpha=0.5,1/report.md"]
        and "alpha=0.5" not in reports["alpha=2/report.md"]
    )


def test_export_and_plot_from_database(cfg: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    _ok(["run", str(cfg), "--db", str(db), "--workers", "1", "-q"])
    res = _ok(["export", "--db", str(db), "--format", "csv", "--out", str(tmp_path / "x.csv")])
    assert "wrote" in res.stdout
    with (tmp_path / "x.csv").open() as fh:
        header = next(csv.reader(fh))
    assert header[:4] == ["experiment", "key", "algorithm", "label"]
    assert header[-6:] == ["seed", "replication", "t", "regret", "reward", "estimation_error"]
    _ok(["export", "--db", str(db), "--format", "parquet", "--out", str(tmp_path / "x.parquet")])
    run_png = db.parent / "small" / "regret.png"
    before = run_png.read_bytes()
    res = _ok(["plot", "--db", str(db), "--experiment", "small", "--loglog", "--band", "1"])
    assert run_png.read_bytes() == before  # plot never overwrites the run's figure
    stem = db.parent / "small" / "plot-T200-logx-logy"
    assert stem.with_suffix(".png").exists() and stem.with_suffix(".pdf").exists()
    assert "figure:" in res.stdout


BAD = {
    "typo": ("horizn = 10\n", "unknown key 'horizn' in the top level (did you mean 'horizon'?)"),
    "epsilon0": ("[grid]\nepsilon = [0]\n", "grid.epsilon[0] = 0: epsilon must lie in (0, inf)"),
    "delta15": ("", "algorithms[0].params.delta = 1.5: delta must lie in (0, 1)"),
    "unknown": ("", "algorithms[1].name = \"unifrm\": unknown algorithm (did you mean 'uniform'?)"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_config_errors_exit_2_before_any_work(case: str, tmp_path: Path) -> None:
    extra, needle = BAD[case]
    text = SMALL
    if case == "delta15":
        text = text.replace('label = "LinUCB"', 'label = "LinUCB"\nparams = { delta = 1.5 }')
    if case == "unknown":
        text = text.replace('name = "uniform"', 'name = "unifrm"')
    if case == "typo":
        text = extra + text
    elif extra:
        text = text.replace("[env]", extra + "[env]")
    path = tmp_path / "bad.toml"
    path.write_text(text)
    db = tmp_path / "r.db"
    result = runner.invoke(app, ["run", str(path), "--db", str(db)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: bad.toml: ") and needle in lines[0], (
        lines
    )
    assert "Traceback" not in result.output
    assert not db.exists()  # failed before any work started


def test_other_errors_exit_2(tmp_path: Path) -> None:
    for args, needle in (
        (["run", str(tmp_path / "missing.toml")], "does not exist"),
        (["plot", "--db", str(tmp_path / "none.db")], "no results database"),
        (["export", "--db", str(tmp_path / "none.db")], "no results database"),
        (["reproduce", "dem"], "unknown preset 'dem' (did you mean 'demo'?)"),
        (["reproduce"], "give a shipped experiment NAME"),
        (["sweep", str(tmp_path / "x.toml"), "--grid", "epsilon"], "expected KEY=V1,V2"),
        (
            ["reproduce", "demo", "-T", "-5"],
            "command line: --horizon -5: horizon must be an integer",
        ),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr.startswith("error: ") and needle in result.stderr, result.stderr


def test_reproduce_list_and_quick(tmp_path: Path) -> None:
    assert "demo" in _ok(["reproduce", "--list"]).stdout
    out = tmp_path / "out"
    res = _ok(
        [
            "reproduce",
            "demo",
            "--quick",
            "--horizon",
            "100",
            "--replications",
            "2",
            "--seed",
            "3",
            "--workers",
            "1",
            "--db",
            str(tmp_path / "r.db"),
            "--out",
            str(out),
            "-q",
        ]
    )
    # two runs per series: a Student test on them has no power, so no verdict either way
    assert "claim linucb < uniform (all runs): too few runs" in res.stdout
    report = (out / "report.md").read_text()
    assert "**Claim: linucb < uniform**" in report and "- **all runs**: too few runs" in report
    assert report.count("**Quick run: T = 100, 2 runs per series**") == 1
    res = _ok(
        [
            "reproduce",
            "demo",
            "--horizon",
            "100",
            "--replications",
            "5",
            "--seed",
            "3",
            "--workers",
            "1",
            "--db",
            str(tmp_path / "r.db"),
            "--out",
            str(tmp_path / "o5"),
            "-q",
        ]
    )
    assert "claim linucb < uniform (all runs): agree" in res.stdout
    assert (out / "regret.pdf").exists()


def test_audit_not_available(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "privbandits.auditing", None)
    result = runner.invoke(app, ["audit", "--all"])
    assert result.exit_code == 2
    assert "privacy auditing is not available" in result.stderr and "Traceback" not in result.output


@dataclass
class _Audit:
    mechanism: str
    claimed_epsilon: float
    audited_epsilon_lb: float
    passed: bool


def test_audit_uses_the_audit_module(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def audit_mechanism(
        name: str, under_noised: float | None = None, n_samples: int | None = None, seed: int = 0
    ) -> _Audit:
        calls.append((name, under_noised, n_samples, seed))
        f = 1.0 if under_noised is None else under_noised
        return _Audit(name, 1.0, 0.8 / f, 0.8 / f <= 1.0)

    mod = types.ModuleType("privbandits.auditing")
    mod.AUDITABLE = {"gaussian": "Gaussian mechanism", "laplace": "Laplace mechanism"}  # type: ignore[attr-defined]
    mod.audit_mechanism = audit_mechanism  # type: ignore[attr-defined]
    mod.run_all = lambda: [audit_mechanism("gaussian"), _Audit("laplace", 2.0, 1.9, True)]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "privbandits.auditing", mod)
    assert "Laplace mechanism" in _ok(["audit", "--list"]).stdout
    one = _ok(["audit", "gaussian", "--samples", "1000", "--seed", "3"]).stdout
    assert "audited_epsilon_lb" in one and "0.8" in one and calls[-1] == ("gaussian", None, 1000, 3)
    both = _ok(["audit", "--all"]).stdout
    assert "laplace" in both and "1.9" in both
    violation = runner.invoke(app, ["audit", "gaussian", "--under-noised", "0.5"])
    assert (
        violation.exit_code == 1 and "1.6" in violation.stdout and "violation" in violation.stderr
    )
    bad = runner.invoke(app, ["audit", "gausian"])
    assert bad.exit_code == 2 and "did you mean 'gaussian'" in bad.stderr
    bad = runner.invoke(app, ["audit", "gaussian", "--alpha", "0.1"])
    assert bad.exit_code == 2 and "does not take --alpha" in bad.stderr


def test_audit_real_module_lists_mechanisms() -> None:
    pytest.importorskip("privbandits.auditing")
    from privbandits.auditing import AUDITABLE

    out = _ok(["audit", "--list"]).stdout
    assert all(name in out for name in AUDITABLE)


def test_version() -> None:
    from privbandits import __version__

    assert __version__ in _ok(["--version"]).stdout


def test_explain_prints_the_calibration_and_accounted_guarantee() -> None:
    res = _ok(["explain", "ldp-ols", "-p", "epsilon=1", "-p", "delta=0.01", "--d", "10"])
    assert "accounted guarantee: (1, delta=0.01)-DP [local, per user]" in res.stdout
    assert "s_W" in res.stdout and "trust assumption: no trusted party" in res.stdout
    shuffle = _ok(["explain", "hanna-shuffle", "-p", "epsilon=1", "--d", "2", "-T", "20000"]).stdout
    assert "assumes a trusted shuffler" in shuffle and "-LDP without the shuffler" in shuffle
    bad = runner.invoke(app, ["explain", "ldp-ols", "-p", "epsilon=-1"])
    assert bad.exit_code == 2 and "epsilon" in bad.stderr


def test_audit_accepts_an_algorithm_name(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    calls: list[str] = []
    mod = types.SimpleNamespace(
        AUDITABLE={"client:ldp-sgd": "client path"},
        audit_mechanism=lambda name: calls.append(name) or {name: "ok"},
        run_all=lambda: {},
    )
    monkeypatch.setitem(sys.modules, "privbandits.auditing", mod)
    _ok(["audit", "ldp-sgd"])
    assert calls == ["client:ldp-sgd"]


def test_library_warnings_print_as_one_clean_line() -> None:
    res = runner.invoke(
        app, ["explain", "ldp-ols", "-p", "epsilon=1", "-p", "delta=0.01", "-p", "preset=paper"]
    )
    assert res.exit_code == 0
    warned = [ln for ln in res.stderr.splitlines() if ln.startswith("warning: ")]
    assert warned and "accounted guarantee" in warned[0]
    assert "UserWarning" not in res.stderr and ".py:" not in res.stderr


NO_LEARNING = """
name = "nolearn"
horizon = 300
replications = 3
seeds = [0, 1]
checkpoints = 6

[env]
kind = "synthetic"
d = 3
K = 4

[[algorithms]]
name = "linucb"

[[algorithms]]
name = "ldp-ols"
params = { epsilon = 0.05 }

[[algorithms]]
name = "uniform"
"""


def test_run_console_flags_series_with_no_learning(tmp_path: Path) -> None:
    """The run's console output says which series never beat uniform play (the report's
    learning check), and only those: LinUCB learns at T = 300, LDP-OLS at epsilon = 0.05 does not."""
    path = tmp_path / "nolearn.toml"
    path.write_text(NO_LEARNING)
    args = ["run", str(path), "-w", "1", "--db", str(tmp_path / "r.db"), "--out", str(tmp_path)]
    lines = _ok(args).stdout.splitlines()
    flagged = [ln for ln in lines if "no learning detected" in ln]
    assert flagged and all("uniform's" in ln for ln in flagged), lines
    assert any(ln.startswith("ldp-ols") for ln in flagged)
    assert not any(ln.startswith("linucb") for ln in flagged)


def test_run_console_names_who_reported_each_reference_number(tmp_path: Path) -> None:
    """A reference number is printed with its kind (here a prototype's), never called "paper"."""
    path = tmp_path / "ref.toml"
    path.write_text(
        SMALL
        + """
[[paper_numbers]]
kind = "prototype"
algorithm = "linucb"
metric = "final_regret"
value = 2.0
horizon = 200
source = "an independent prototype"
"""
    )
    args = ["run", str(path), "-w", "1", "--db", str(tmp_path / "r.db"), "--out", str(tmp_path)]
    out = _ok(args).stdout
    line = next(ln for ln in out.splitlines() if "an independent prototype" in ln)
    assert line.startswith("prototype (") and "ours / prototype = " in line
    assert "paper" not in line
