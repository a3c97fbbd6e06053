"""The deployment's state cannot silently reset.

* ``privbandits serve`` refuses a missing (mistyped), empty or other deployment's database unless
  ``--init`` starts a new deployment; ``--init`` refuses a database that already holds one.
* A database deleted, replaced or emptied under a running server: it stops acknowledging (503
  naming why) instead of counting reports into a file nobody will read again, ``/v1/health`` turns
  503, and a restart without ``--init`` is refused.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.service.device.client import DeviceClient
from tests.service.conftest import (
    ADMIN,
    CLIENT,
    ServerProcess,
    auth,
    make_client,
    service_raw,
    tokens_toml,
    toml_text,
)
from tests.service.test_bad_input import _valid


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: None)  # start-up checks only
    cfg = tmp_path / "svc.toml"
    cfg.write_text(toml_text(service_raw("ldp-sgd", horizon=50)))
    tok = tmp_path / "tokens.toml"
    tok.write_text(tokens_toml())
    return {"cfg": cfg, "tok": tok, "state": tmp_path / "state", "dir": tmp_path}


def _serve(f: dict[str, Path], db: str | Path, *extra: str, state: Path | None = None) -> Any:
    args = ["serve", str(f["cfg"]), "--tokens", str(f["tok"]), "--db", str(db)]
    args += ["--state-dir", str(state or f["state"]), *extra]
    return CliRunner().invoke(app, args)


def _msg(res: Any) -> str:
    return " ".join(res.output.split())


def test_mistyped_db_path_is_refused_and_not_created(files: dict[str, Path]) -> None:
    db = files["dir"] / "service.db"
    assert _serve(files, db, "--init").exit_code == 0
    typo = files["dir"] / "servcie.db"
    res = _serve(files, typo)
    assert res.exit_code == 2 and "does not exist or is empty" in _msg(res), res.output
    assert "records deployment" in _msg(res)
    assert not typo.exists()
    assert _serve(files, db).exit_code == 0  # the right path starts


def test_init_once_then_restart_without_it(files: dict[str, Path]) -> None:
    db = files["dir"] / "service.db"
    res = _serve(files, db)
    assert res.exit_code == 2 and "--init" in _msg(res)
    res = _serve(files, db, "--init")
    assert res.exit_code == 0 and "new deployment" in res.output, res.output
    recorded = (files["state"] / "server.deployment-id").read_text().strip()
    with sqlite3.connect(db) as conn:
        (stored,) = conn.execute("SELECT value FROM meta WHERE key = 'deployment_id'").fetchone()
    assert recorded == stored
    assert _serve(files, db).exit_code == 0
    res = _serve(files, db, "--init")  # a unit that always passes --init cannot reset it
    assert res.exit_code == 2 and "already holds deployment" in _msg(res)


def test_another_deployments_database_or_state_is_refused(files: dict[str, Path]) -> None:
    a, b = files["dir"] / "a.db", files["dir"] / "b.db"
    sa, sb = files["dir"] / "sa", files["dir"] / "sb"
    assert _serve(files, a, "--init", state=sa).exit_code == 0
    assert _serve(files, b, "--init", state=sb).exit_code == 0
    res = _serve(files, b, state=sa)
    assert res.exit_code == 2 and "another deployment's database" in _msg(res)
    res = _serve(files, a, state=files["dir"] / "empty-state")
    assert res.exit_code == 2 and "records no deployment" in _msg(res)
    # an empty database file (e.g. truncated) is a new database
    empty = files["dir"] / "empty.db"
    empty.write_bytes(b"")
    res = _serve(files, empty, state=sa)
    assert res.exit_code == 2 and "does not exist or is empty" in _msg(res)


def test_database_of_an_older_version_is_adopted_by_init(files: dict[str, Path]) -> None:
    db = files["dir"] / "old.db"
    with make_client(service_raw("ldp-sgd", horizon=50), db) as tc:
        assert (
            tc.post(
                "/v1/reports", json=_valid(tc), headers={**auth(CLIENT), "Idempotency-Key": "k"}
            ).status_code
            == 200
        )
    with sqlite3.connect(db) as conn:  # as written before deployment ids existed
        conn.execute("DELETE FROM meta WHERE key = 'deployment_id'")
    res = _serve(files, db)
    assert res.exit_code == 2 and "older version" in _msg(res)
    res = _serve(files, db, "--init")
    assert res.exit_code == 0 and "restored 1 stored request" in _msg(res), res.output


def _post(tc: Any, body: dict[str, Any], key: str) -> Any:
    return tc.post("/v1/reports", json=body, headers={**auth(CLIENT), "Idempotency-Key": key})


def test_replaced_or_emptied_database_stops_acknowledging(tmp_path: Path) -> None:
    db = tmp_path / "svc.db"
    with make_client(service_raw("ldp-sgd", horizon=50), db) as tc:
        body = _valid(tc)
        assert _post(tc, body, "a").status_code == 200
        copy = tmp_path / "copy.db"
        shutil.copy(db, copy)
        os.replace(copy, db)  # same name, another inode
        r = _post(tc, body, "b")
        assert r.status_code == 503 and "was replaced" in r.json()["error"]["message"], r.text
        assert tc.get("/v1/health").status_code == 503
        assert _post(tc, body, "c").status_code == 503  # latched until a restart
        assert tc.get("/v1/status", headers=auth(ADMIN)).json()["reports_received"] == 1
    db2 = tmp_path / "svc2.db"
    with make_client(service_raw("ldp-sgd", horizon=50), db2) as tc:
        body = _valid(tc)
        assert tc.get("/v1/health").json() == {"status": "ok"}
        with sqlite3.connect(db2) as conn:  # another deployment's id written into the file
            conn.execute("UPDATE meta SET value = 'other' WHERE key = 'deployment_id'")
        r = _post(tc, body, "a")
        assert r.status_code == 503 and "deployment other" in r.json()["error"]["message"]


def test_deleted_database_stops_acknowledging_in_process(tmp_path: Path) -> None:
    db = tmp_path / "svc.db"
    with make_client(service_raw("ldp-sgd", horizon=50), db) as tc:
        body = _valid(tc)
        assert _post(tc, body, "a").status_code == 200
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
        r = _post(tc, body, "b")
        assert r.status_code == 503 and "was deleted" in r.json()["error"]["message"], r.text
        assert tc.get("/v1/health").status_code == 503
        assert tc.get("/v1/status", headers=auth(ADMIN)).json()["reports_received"] == 1


@pytest.mark.slow
def test_deleting_the_database_under_a_running_server(tmp_path: Path) -> None:
    cfg = tmp_path / "svc.toml"
    cfg.write_text(toml_text(service_raw("ldp-sgd", horizon=400)))
    tok = tmp_path / "tokens.toml"
    tok.write_text(tokens_toml())
    db = tmp_path / "svc.db"
    server = ServerProcess(cfg, tok, str(db))
    server.start()
    try:
        dev = DeviceClient(
            server.url,
            CLIENT,
            rng_policy=np.random.default_rng(1),
            rng_client=np.random.default_rng(2),
        )
        model = dev.fetch_model()
        X = np.random.default_rng(0).normal(size=(4, 3))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        body = dev.privatize(X, dev.choose(X, model), 0.5, model)
        with httpx.Client(timeout=10) as http:
            for i in range(5):
                assert _post_http(http, server.url, body, f"k{i}").status_code == 200
            for suffix in ("", "-wal", "-shm"):
                Path(str(db) + suffix).unlink(missing_ok=True)
            t0 = time.monotonic()
            r = _post_http(http, server.url, body, "after")
            assert time.monotonic() - t0 < 5
            assert r.status_code == 503, r.text
            assert "was deleted" in r.json()["error"]["message"]
            assert http.get(server.url + "/v1/health").status_code == 503
            assert _post_http(http, server.url, body, "k0").status_code == 503  # even a replay
            status = http.get(server.url + "/v1/status", headers=auth(ADMIN)).json()
            assert status["reports_received"] == 5 and "deleted" in status["database_lost"]
    finally:
        server.stop()
    with pytest.raises(RuntimeError, match="does not exist or is empty"):
        server.start(timeout=60)  # no --init: refused, nothing created
    assert not db.exists()


def _post_http(http: httpx.Client, url: str, body: dict[str, Any], key: str) -> Any:
    return http.post(
        url + "/v1/reports", json=body, headers={**auth(CLIENT), "Idempotency-Key": key}
    )


def test_the_accounted_guarantee_is_part_of_the_durable_state(tmp_path: Path) -> None:
    from privbandits.service.config import parse_service_config
    from privbandits.service.server.service import Service
    from privbandits.service.server.store import StoreError, open_store
    from tests.service.conftest import tokens

    raw = service_raw("ldp-sgd", horizon=50)
    db = tmp_path / "svc.db"
    with make_client(raw, db) as tc:
        assert _post(tc, _valid(tc), "a").status_code == 200
    with sqlite3.connect(db) as conn:
        (stored,) = conn.execute("SELECT value FROM meta WHERE key = 'guarantee'").fetchone()
        assert '"epsilon"' in stored
        # as if another version computed a different epsilon for the same configuration
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'guarantee'",
            (stored.replace('"epsilon": ', '"epsilon": 2e-9 + '),),
        )
    with pytest.raises(StoreError, match="accounted guarantee"):
        Service(parse_service_config(raw), open_store(db), tokens())
