"""Runner: resume after SIGKILL / SIGINT with no partial or duplicate rows, determinism, Dask."""

from __future__ import annotations

import io
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from privbandits.core.errors import PrivbanditsError, ValidationError
from privbandits.experiments.config import parse_config
from privbandits.experiments.runner import run_units
from privbandits.experiments.store import ResultsStore

from .conftest import SMALL, ExplorePrivate

# 8 seeds x 2 algorithms = 16 units; a LinUCB unit takes ~0.2 s, so the run lasts seconds and a
# kill within milliseconds of the second stored row always lands midway (asserted below).
# long enough per unit (reference engine, 1e4 rounds) that the interrupt always lands mid-run,
# even on a loaded machine where polling for stored rows is slow
KILL_CONFIG = """
name = "killme"
horizon = 10000
replications = 2
seeds = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23]
checkpoints = 5
engine = "reference"

[env]
d = 3
K = 4

[[algorithms]]
name = "linucb"

[[algorithms]]
name = "uniform"
"""


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(db, timeout=30)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM units").fetchone()[0])
    except sqlite3.OperationalError:  # table not created yet
        return 0
    finally:
        conn.close()


def _snapshot(db: Path) -> dict[str, tuple[str, bytes]]:
    conn = sqlite3.connect(db, timeout=30)
    rows = conn.execute("SELECT key, created_at, regret FROM units").fetchall()
    conn.close()
    return {k: (c, r) for k, c, r in rows}


def _regret_bytes(db: Path, key: str) -> bytes:
    with ResultsStore(db, create=False) as store:
        (r,) = store.load(keys=[key])
    return r.regret.tobytes()


def _start(cfg: Path, db: Path) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "privbandits.cli",
        "run",
        str(cfg),
        "--db",
        str(db),
        "--workers",
        "2",
        "--quiet",
    ]
    # Ctrl-C's default action in the child even when this test runs with SIGINT ignored (as a
    # background job of a non-interactive shell does): Python installs its KeyboardInterrupt
    # handler only when SIGINT is not ignored at start-up, and an ignored disposition is inherited
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for_rows(proc: subprocess.Popen[bytes], db: Path, n: int, timeout: float = 300.0) -> None:
    # generous: the workers may first compile the algorithms on a cold cache of a loaded machine
    deadline = time.monotonic() + timeout
    while _count(db) < n:
        if proc.poll() is not None:
            raise AssertionError(f"run ended before {n} rows: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            raise AssertionError("no rows appeared in time")
        time.sleep(0.02)


def _group_ends(pgid: int, timeout: float) -> bool:
    """Wait until no process of the run's session is left (workers, resource tracker)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if not _alive_in_group(pgid):
            return True
        time.sleep(0.1)
    return False


def _alive_in_group(pgid: int) -> bool:
    """True while a non-zombie process of group ``pgid`` exists (zombies of init may linger)."""
    if not Path("/proc").is_dir():  # no procfs: trust killpg alone
        return True
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the run's own session: its workers, nothing else
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def _check_complete_rows(db: Path) -> list:
    """No duplicate keys, a healthy file, and every stored row complete (all arrays, right shapes)."""
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    dup = conn.execute("SELECT key FROM units GROUP BY key HAVING COUNT(*) > 1").fetchall()
    conn.close()
    assert dup == []
    with ResultsStore(db, create=False) as store:
        results = store.load()
    for r in results:
        n = len(r.checkpoints)
        assert r.regret.shape == r.reward.shape == (2, n) and np.isfinite(r.regret).all()
    return results


def _check_complete(db: Path, cfg) -> None:
    results = _check_complete_rows(db)
    assert sorted(r.key for r in results) == sorted(u.key() for u in cfg.units())


def _interrupt(cfg_path: Path, db: Path, sig: int, min_rows: int) -> int:
    """Start ``privbandits run`` (2 workers), send ``sig`` to its parent process once ``min_rows``
    rows are stored, and return the row count the interrupted run left behind."""
    proc = _start(cfg_path, db)
    try:
        _wait_for_rows(proc, db, min_rows)
        os.kill(proc.pid, sig)  # the parent only, as a user or the OOM killer would
        rc = proc.wait(timeout=30)
        left = _count(db)
        # the workers end with their parent (no orphans left behind, even after SIGKILL) ...
        assert _group_ends(proc.pid, timeout=20), "worker processes outlived the killed run"
        # ... and never wrote anything: the parent is the only writer
        assert _count(db) == left
        err = proc.stderr.read().decode()  # type: ignore[union-attr]
        if sig == signal.SIGINT:
            assert rc == 130 and "interrupted" in err and "Traceback" not in err, (rc, err)
        else:
            assert rc == -signal.SIGKILL
    finally:
        _kill_group(proc)
    return left


def test_killed_run_resumes_without_partial_or_duplicate_rows(tmp_path: Path) -> None:
    cfg_path = tmp_path / "kill.toml"
    cfg_path.write_text(KILL_CONFIG)
    cfg = parse_config(KILL_CONFIG)
    total = len(cfg.units())
    db = tmp_path / "r.db"

    # Ctrl-C midway: exit code 130, finished units stored
    after_int = _interrupt(cfg_path, db, signal.SIGINT, 2)
    assert 2 <= after_int < total, (after_int, total)
    before = _snapshot(db)
    # the rerun is killed with SIGKILL midway: it resumed (skipped the stored units) and left only
    # complete rows; the rows of the first run are untouched
    after_kill = _interrupt(cfg_path, db, signal.SIGKILL, after_int + 2)
    assert after_int + 2 <= after_kill < total, (after_int, after_kill, total)
    snap = _snapshot(db)
    assert all(snap[k] == v for k, v in before.items())
    _check_complete_rows(db)

    # the third run completes exactly the missing units
    with ResultsStore(db) as store:
        report = run_units(cfg.units(), store, workers=1, quiet=True)
    assert (report.skipped, report.executed) == (after_kill, total - after_kill)
    _check_complete(db, cfg)
    after = _snapshot(db)
    assert all(after[k] == v for k, v in snap.items())  # finished rows untouched by the reruns

    with ResultsStore(db) as store:  # a fourth run has nothing to do
        again = run_units(cfg.units(), store, workers=1, quiet=True)
    assert (again.skipped, again.executed) == (total, 0)

    # units computed by worker processes of the interrupted runs are bit-identical to a fresh
    # in-process run (same seed -> same numbers, whatever the process)
    with ResultsStore(tmp_path / "fresh.db") as store:
        fresh = {
            r.key: r.regret.tobytes()
            for r in run_units(cfg.units(), store, workers=1, quiet=True).results
        }
    assert sorted(fresh) == sorted(after)
    for key, regret in fresh.items():
        assert _regret_bytes(db, key) == regret


def test_same_seed_bit_identical_across_runs(tmp_path: Path) -> None:
    units = parse_config(SMALL).units()
    arrays = []
    for name, workers in (("a", 1), ("b", 1)):  # (worker processes: see the kill test)
        with ResultsStore(tmp_path / f"{name}.db") as store:
            arrays.append(
                {
                    r.key: (
                        r.regret.tobytes(),
                        r.reward.tobytes(),
                        None if r.estimation_error is None else r.estimation_error.tobytes(),
                    )
                    for r in run_units(units, store, workers=workers, quiet=True).results
                }
            )
    assert arrays[0] == arrays[1]
    # and the comparison can fail: different seeds give different numbers
    by_label_seed = {(u.label, u.seed): arrays[0][u.key()][0] for u in units}
    assert by_label_seed[("LinUCB", 0)] != by_label_seed[("LinUCB", 1)]


class _FailsLate(ExplorePrivate):
    name = "test-fails-late"

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        if t == 50 and self.streams.seed == 1:
            raise ValidationError("numerical breakdown at t=50")
        return super().select(t, contexts)


def test_failed_unit_names_itself_and_keeps_finished_units(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from privbandits.algorithms import registry

    monkeypatch.setitem(registry._REGISTRY, _FailsLate.name, _FailsLate)
    cfg = parse_config(
        SMALL.replace('name = "uniform"', f'name = "{_FailsLate.name}"\nlabel = "late"')
    )
    with ResultsStore(tmp_path / "r.db") as store:
        with pytest.raises(
            PrivbanditsError, match=r"work unit late seed=1 \(test-fails-late\) failed: numerical"
        ):
            run_units(cfg.units(), store, workers=1, quiet=True)
        assert store.count() == 3  # LinUCB x 2 seeds and late seed 0 were stored before the failure


def test_progress_messages(tmp_path: Path) -> None:
    units = parse_config(SMALL).units()
    buf = io.StringIO()
    with ResultsStore(tmp_path / "r.db") as store:
        run_units(units[:1], store, workers=1, console=Console(file=buf, width=100))
        run_units(units, store, workers=1, console=Console(file=buf, width=100))
    text = buf.getvalue()
    assert "1 work units: 0 already stored, 1 to run" in text
    assert "4 work units: 1 already stored, 3 to run" in text
    assert "units" in text and "rounds" in text


@pytest.mark.cluster
def test_dask_local_cluster(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    units = parse_config(SMALL).units()
    with ResultsStore(tmp_path / "ref.db") as store:
        ref = {
            r.key: r.regret.tobytes()
            for r in run_units(units, store, workers=1, quiet=True).results
        }
    with (
        distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            dashboard_address=None,
            protocol="tcp",
            host="127.0.0.1",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        with ResultsStore(tmp_path / "dask.db") as store:
            first = run_units(units[:2], store, scheduler=client, quiet=True)  # a Client object
            second = run_units(
                units, store, scheduler=cluster.scheduler_address, quiet=True
            )  # an address
    assert (first.executed, second.skipped, second.executed) == (2, 2, 2)
    assert {r.key: r.regret.tobytes() for r in second.results} == ref


def test_dask_missing_gives_install_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    units = parse_config(SMALL).units()
    with ResultsStore(tmp_path / "r.db") as store:
        with pytest.raises(PrivbanditsError, match=r"pip install privbandits\[cluster\]"):
            run_units(units, store, scheduler="tcp://127.0.0.1:1", quiet=True)
