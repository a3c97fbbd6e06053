"""The database layer cannot freeze or break serving.

* A SQLite file held locked by another connection: ``/v1/status`` keeps answering at once,
  ``/v1/health`` answers 503 within its probe timeout, a report gets 503 with ``Retry-After``
  after the busy timeout (never a hang), and the same report succeeds once the lock is released.
* PostgreSQL: the server's backend connections terminated (``pg_terminate_backend``): the pool
  replaces them and reports succeed again, none lost or counted twice.
* Online backup while reports arrive (SQLite backup API; ``pg_dump``), restored: a consistent
  state that a restarted server accepts without ``--init``.
"""

from __future__ import annotations

import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from privbandits.service.config import parse_service_config
from privbandits.service.device.client import DeviceClient
from privbandits.service.server.app import create_app
from privbandits.service.server.service import Service
from privbandits.service.server.store import open_store
from privbandits.service.storage.backup import backup
from tests.service.conftest import (
    ADMIN,
    CLIENT,
    CLIENT2,
    InThreadServer,
    auth,
    make_client,
    service_raw,
    tokens,
)
from tests.service.test_bad_input import _valid


def _report(url: str) -> dict[str, Any]:
    dev = DeviceClient(
        url, CLIENT, rng_policy=np.random.default_rng(1), rng_client=np.random.default_rng(2)
    )
    model = dev.fetch_model()
    X = np.random.default_rng(0).normal(size=(4, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return dev.privatize(X, dev.choose(X, model), 0.5, model)


def _post(
    http: httpx.Client, url: str, body: dict[str, Any], key: str, secret: str = CLIENT
) -> Any:
    return http.post(
        url + "/v1/reports", json=body, headers={**auth(secret), "Idempotency-Key": key}
    )


def test_a_locked_sqlite_file_does_not_freeze_the_server(tmp_path: Path) -> None:
    db = tmp_path / "svc.db"
    raw = service_raw("ldp-sgd", horizon=100)
    app = create_app(
        parse_service_config(raw), open_store(f"sqlite:///{db}?busy_timeout=1"), tokens()
    )
    server = InThreadServer(app)
    try:
        body = _report(server.url)
        with httpx.Client(timeout=10) as http:
            assert _post(http, server.url, body, "before").status_code == 200
            locked, release = threading.Event(), threading.Event()

            def hold() -> None:  # another process's long write transaction
                conn = sqlite3.connect(db, isolation_level=None)
                conn.execute("BEGIN EXCLUSIVE")
                locked.set()
                release.wait(10)
                conn.execute("ROLLBACK")
                conn.close()

            holder = threading.Thread(target=hold)
            holder.start()
            assert locked.wait(5)
            t_hold = time.monotonic()
            results: dict[str, Any] = {}

            def report() -> None:
                t0 = time.monotonic()
                results["r"] = _post(http, server.url, body, "during")
                results["t"] = time.monotonic() - t0

            poster = threading.Thread(target=report)
            poster.start()
            time.sleep(0.1)  # the report now waits on the lock, in a worker thread
            t0 = time.monotonic()
            status = http.get(server.url + "/v1/status", headers=auth(ADMIN))
            t_status = time.monotonic() - t0
            t0 = time.monotonic()
            health = http.get(server.url + "/v1/health")
            t_health = time.monotonic() - t0
            poster.join(10)
            held = time.monotonic() - t_hold  # all of this while the lock is held (~3 s)
            release.set()
            holder.join(10)
            # bounded by the health probe's timeout (0.5 s) the status page includes, never by the lock
            assert status.status_code == 200 and t_status < 2.5, (status.text[:200], t_status)
            assert health.status_code == 503 and t_health < 2.5, (health.text, t_health)
            r = results["r"]
            assert r.status_code == 503 and r.headers["Retry-After"] == "1", r.text
            assert results["t"] < 3.0 and held < 6.0
            h = http.get(server.url + "/v1/health")
            assert h.status_code == 200, h.text
            r = _post(http, server.url, body, "during")  # the retry, lock released
            assert r.status_code == 200 and r.headers["Idempotency-Replayed"] == "false"
            assert (
                http.get(server.url + "/v1/status", headers=auth(ADMIN)).json()["reports_received"]
                == 2
            )
    finally:
        server.stop()


def test_terminated_postgres_connections_are_replaced(postgres: Any) -> None:
    import psycopg

    url = postgres.create_database("term")
    raw = service_raw("ldp-sgd", horizon=200)
    app = create_app(parse_service_config(raw), open_store(url), tokens())
    server = InThreadServer(app)
    try:
        body = _report(server.url)
        with httpx.Client(timeout=20) as http:
            for i in range(5):
                assert _post(http, server.url, body, f"a{i}").status_code == 200
            with psycopg.connect(postgres.url, autocommit=True) as admin:
                killed = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = 'term' AND pid <> pg_backend_pid()"
                ).fetchone()[0]
            assert killed >= 1
            codes = [_post(http, server.url, body, f"b{i}").status_code for i in range(5)]
            assert codes == [200] * 5, codes
            assert http.get(server.url + "/v1/health").status_code == 200
            export = http.get(server.url + "/v1/admin/export", headers=auth(ADMIN)).json()
            status = http.get(server.url + "/v1/status", headers=auth(ADMIN)).json()
        assert len(export["events"]) == 10 and status["reports_received"] == 10
    finally:
        server.stop()


def _restored(raw: dict[str, Any], url: str) -> Service:
    return Service(parse_service_config(raw), open_store(url), tokens())


def test_online_sqlite_backup_while_reports_arrive(tmp_path: Path) -> None:
    raw = service_raw("ldp-sgd", horizon=400)
    db = tmp_path / "svc.db"
    with make_client(raw, db) as tc:
        body = _valid(tc)
        for i in range(10):
            assert (
                tc.post(
                    "/v1/reports", json=body, headers={**auth(CLIENT), "Idempotency-Key": f"q{i}"}
                ).status_code
                == 200
            )
        quiet = tmp_path / "quiet.db"
        backup(str(db), quiet)  # nothing in flight: the same state
        digest, deployment = tc.app.state.service.model.digest(), tc.app.state.service.deployment_id
        stop = threading.Event()

        def load() -> None:
            i = 0
            while not stop.is_set():
                tc.post(
                    "/v1/reports", json=body, headers={**auth(CLIENT2), "Idempotency-Key": f"l{i}"}
                )
                i += 1

        writer = threading.Thread(target=load)
        writer.start()
        time.sleep(0.3)
        busy = tmp_path / "busy.db"
        backup(str(db), busy)  # while reports are being written
        stop.set()
        writer.join(10)
        total = tc.get("/v1/status", headers=auth(ADMIN)).json()["reports_received"]
    with pytest.raises(Exception, match="never overwrites"):
        backup(str(db), quiet)
    a = _restored(raw, str(quiet))
    assert a.model.digest() == digest and a.restored_events == 10
    assert a.deployment_id == deployment  # a restored server starts without --init
    b = _restored(raw, str(busy))  # consistent: the digest check of the replay passed
    assert 10 <= b.model.rounds <= total


def test_pg_dump_backup_and_restore(postgres: Any, tmp_path: Path) -> None:
    pg_restore = postgres.bin / "pg_restore" if postgres.bin else None
    if pg_restore is None or not pg_restore.exists():
        pytest.skip("pg_restore not installed")
    url = postgres.create_database("live")
    raw = service_raw("ldp-sgd", horizon=100)
    with make_client(raw, url) as tc:
        body = _valid(tc)
        for i in range(6):
            assert (
                tc.post(
                    "/v1/reports", json=body, headers={**auth(CLIENT), "Idempotency-Key": f"p{i}"}
                ).status_code
                == 200
            )
        dump = tmp_path / "live.dump"
        backup(url, dump)
        digest = tc.app.state.service.model.digest()
    target = postgres.create_database("restored")
    r = subprocess.run(
        [str(pg_restore), "--no-owner", "--dbname", target, str(dump)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    svc = _restored(raw, target)
    assert svc.model.digest() == digest and svc.restored_events == 6
    svc.store.close()


def test_backup_command(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from privbandits.cli import app

    db = tmp_path / "svc.db"
    with make_client(service_raw("ldp-sgd", horizon=50), db):
        pass
    res = CliRunner().invoke(app, ["backup", str(tmp_path / "b.db"), "--db", str(db)])
    assert res.exit_code == 0 and (tmp_path / "b.db").exists(), res.output
