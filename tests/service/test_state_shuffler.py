"""The shuffler's queue cannot silently reset either: ``serve-shuffler`` refuses a missing, empty
or other deployment's database unless ``--init``; a queue database deleted or replaced under a
running shuffler stops it acknowledging (503 naming why), never a 500 or a report queued into a
file nobody reads again."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.service.shuffler.cli import refuse_when_lost
from privbandits.service.shuffler.store import QueueLost, ShufflerStore
from tests.service.conftest import tokens_toml

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "serve-shuffle.toml"


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: None)  # start-up checks only
    tok = tmp_path / "tokens.toml"
    tok.write_text(tokens_toml())
    return {"tok": tok, "state": tmp_path / "state", "dir": tmp_path}


def _serve(f: dict[str, Path], db: Path, *extra: str) -> Any:
    args = ["serve-shuffler", str(CONFIG), "--server", "http://127.0.0.1:1"]
    args += ["--tokens", str(f["tok"]), "--db", str(db), "--state-dir", str(f["state"]), *extra]
    return CliRunner().invoke(app, args)


def _msg(res: Any) -> str:
    return " ".join(res.output.split())


def test_serve_shuffler_needs_init_once(files: dict[str, Path]) -> None:
    db = files["dir"] / "queue.db"
    res = _serve(files, db)
    assert res.exit_code == 2 and "does not exist or is empty" in _msg(res) and not db.exists()
    res = _serve(files, db, "--init")
    assert res.exit_code == 0 and "new deployment" in res.output, res.output
    assert (files["state"] / "shuffler.deployment-id").exists()
    assert _serve(files, db).exit_code == 0
    res = _serve(files, db, "--init")
    assert res.exit_code == 2 and "already holds deployment" in _msg(res)
    typo = files["dir"] / "queeu.db"
    res = _serve(files, typo)
    assert res.exit_code == 2 and "records deployment" in _msg(res) and not typo.exists()
    other = files["dir"] / "other.db"
    import sqlite3

    with sqlite3.connect(db) as src, sqlite3.connect(other) as dst:
        src.backup(dst)
    with sqlite3.connect(other) as conn:
        conn.execute("UPDATE meta SET value = 'someone-else' WHERE key = 'deployment_id'")
    res = _serve(files, other)
    assert res.exit_code == 2 and "another deployment's database" in _msg(res)


def _app(store: ShufflerStore) -> TestClient:
    web = FastAPI()

    @web.post("/add")
    def add(body: dict[str, Any]) -> dict[str, str]:
        return {"outcome": store.add(body["digest"], 0, {"x": 1})}

    return TestClient(refuse_when_lost(web))


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_lost_queue_database_stops_acknowledging(tmp_path: Path, how: str) -> None:
    path = tmp_path / "queue.db"
    store = ShufflerStore(path)
    store.set_deployment_id("dep-1")
    store.expected_deployment = "dep-1"
    tc = _app(store)
    assert tc.post("/add", json={"digest": "a"}).json() == {"outcome": "queued"}
    if how == "deleted":
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
    else:
        shutil.copy(path, tmp_path / "copy.db")
        os.replace(tmp_path / "copy.db", path)
    r = tc.post("/add", json={"digest": "b"})
    assert r.status_code == 503 and f"was {how}" in r.json()["error"]["message"], r.text
    with pytest.raises(QueueLost):
        store.add("c", 0, {"x": 1})
    store.close()
