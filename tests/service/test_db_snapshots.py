"""Snapshots and schema migrations of the server's database.

* A start restores the newest snapshot and replays only the events after it; the state equals a
  full replay (digest, per-device counts) and keeps evolving identically (hidden state would show
  in the later digests); a corrupt snapshot falls back to the full replay.
* A database of the schema written before the migration table existed is upgraded in place (its
  requests kept, the same state); a database of a newer schema version is refused.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from privbandits.service.config import parse_service_config
from privbandits.service.server.service import Service
from privbandits.service.server.store import open_store
from privbandits.service.storage.migrations import LATEST, SchemaError, applied_versions
from tests.service.conftest import CLIENT, CLIENT2, auth, make_client, service_raw, tokens
from tests.service.test_bad_input import _valid


def _post(tc: Any, body: dict[str, Any], key: str, secret: str = CLIENT) -> None:
    r = tc.post("/v1/reports", json=body, headers={**auth(secret), "Idempotency-Key": key})
    assert r.status_code == 200, r.text


def _curator_round(tc: Any, key: str, secret: str) -> None:
    r = tc.post(
        "/v1/actions",
        json={"contexts": [[0.5, 0.1, 0.0], [0.0, 0.3, 0.2], [0.1, 0.1, 0.1], [0.2, 0.0, 0.4]]},
        headers={**auth(secret), "Idempotency-Key": "s" + key},
    )
    assert r.status_code == 200, r.text
    r = tc.post(
        "/v1/reports",
        json={
            "ticket": r.json()["ticket"],
            "reward": 0.25,
            "model_version": r.json()["model_version"],
        },
        headers={**auth(secret), "Idempotency-Key": "r" + key},
    )
    assert r.status_code == 200, r.text


def _fill(tc: Any, algorithm: str, start: int, n: int) -> None:
    body = _valid(tc) if algorithm.startswith("ldp") else None
    for i in range(start, start + n):
        secret = CLIENT if i % 3 else CLIENT2
        if body is None:
            _curator_round(tc, str(i), secret)
        else:
            _post(tc, body, f"k{i}", secret)


def _open(raw: dict[str, Any], db: Path) -> Service:
    return Service(parse_service_config(raw), open_store(db), tokens())


@pytest.mark.parametrize("algorithm", ["ldp-sgd", "linucb", "jdp-linucb"])
def test_restore_from_snapshot_plus_tail_equals_full_replay(tmp_path: Path, algorithm: str) -> None:
    raw = service_raw(algorithm, horizon=200)
    db = tmp_path / "svc.db"
    with make_client(raw, db) as tc:
        svc = tc.app.state.service
        svc.snapshot_every = 8
        _fill(tc, algorithm, 0, 13)
        assert svc.snapshot_seq > 0
        live_digest, live_counts = svc.model.digest(), dict(svc.per_token)
    restored = _open(raw, db)
    assert restored.restored_from_snapshot == restored.store.latest_snapshot().seq > 0
    assert restored.restored_events == restored.seq > restored.restored_from_snapshot  # a tail
    full_db = tmp_path / "full.db"
    with sqlite3.connect(db) as src, sqlite3.connect(full_db) as dst:
        src.backup(dst)
        dst.execute("DELETE FROM snapshots")
    full = _open(raw, full_db)
    assert full.restored_from_snapshot == 0
    assert restored.model.digest() == full.model.digest() == live_digest
    assert dict(restored.per_token) == dict(full.per_token) == live_counts
    restored.store.close()
    full.store.close()
    # both keep evolving identically: any state the snapshot missed would show here
    outs = []
    for path in (db, full_db):
        with make_client(raw, path) as tc:
            _fill(tc, algorithm, 100, 5)
            outs.append(tc.app.state.service.model.digest())
    assert outs[0] == outs[1]


def test_corrupt_snapshot_falls_back_to_full_replay(tmp_path: Path) -> None:
    raw = service_raw("ldp-sgd", horizon=100)
    db = tmp_path / "svc.db"
    with make_client(raw, db) as tc:
        _fill(tc, "ldp-sgd", 0, 6)
        assert tc.app.state.service.snapshot()
        digest = tc.app.state.service.model.digest()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE snapshots SET state = ?", (b"not a snapshot",))
    svc = _open(raw, db)
    assert svc.restored_from_snapshot == 0 and svc.snapshot_error is not None
    assert svc.model.digest() == digest and svc.restored_events == 6


# The schema the server wrote before versioned migrations (no schema_migrations, no snapshots).
_OLD_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE events (seq BIGINT PRIMARY KEY, kind TEXT NOT NULL, token TEXT NOT NULL, "
    "idem_key TEXT NOT NULL, body TEXT NOT NULL, body_hash TEXT NOT NULL, response TEXT NOT NULL, "
    "created DOUBLE PRECISION NOT NULL, UNIQUE (token, idem_key))",
    "CREATE TABLE models (version BIGINT PRIMARY KEY, seq BIGINT NOT NULL, rounds BIGINT NOT NULL, "
    "digest TEXT NOT NULL, created DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE quarantine (seq BIGINT NOT NULL, batch_id TEXT NOT NULL, idx INTEGER NOT NULL, "
    "field TEXT NOT NULL, message TEXT NOT NULL, created DOUBLE PRECISION NOT NULL, PRIMARY KEY (seq, idx))",
)


def test_upgrade_from_the_schema_before_migrations(tmp_path: Path) -> None:
    raw = service_raw("ldp-sgd", horizon=100)
    new = tmp_path / "new.db"
    with make_client(raw, new) as tc:
        _fill(tc, "ldp-sgd", 0, 5)
        digest = tc.app.state.service.model.digest()
    old = tmp_path / "old.db"
    with sqlite3.connect(old) as dst, sqlite3.connect(new) as src:
        for stmt in _OLD_SCHEMA:
            dst.execute(stmt)
        for table in ("events", "models", "quarantine"):
            rows = src.execute(f"SELECT * FROM {table}").fetchall()
            if rows:
                marks = ",".join("?" * len(rows[0]))
                dst.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        dst.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            src.execute(
                "SELECT key, value FROM meta WHERE key IN ('config', 'sealing_key')"
            ).fetchall(),
        )
    store = open_store(old)
    assert applied_versions(store) == []
    svc = Service(parse_service_config(raw), store, tokens())
    assert applied_versions(store) == list(range(1, LATEST + 1))
    assert svc.model.digest() == digest and svc.restored_events == 5
    assert svc.snapshot()  # the new table works
    store.close()
    with sqlite3.connect(old) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (99, 'from the future', 0)")
    with pytest.raises(SchemaError, match="schema version 99"):
        Service(parse_service_config(raw), open_store(old), tokens())


def test_snapshot_and_migrations_on_each_backend(db_url: str) -> None:
    raw = service_raw("ldp-sgd", horizon=100)
    with make_client(raw, db_url) as tc:
        _fill(tc, "ldp-sgd", 0, 4)
        assert tc.app.state.service.snapshot()
        _fill(tc, "ldp-sgd", 10, 2)
        digest = tc.app.state.service.model.digest()
    store = open_store(db_url)
    assert applied_versions(store) == list(range(1, LATEST + 1))
    svc = Service(parse_service_config(raw), store, tokens())
    assert svc.restored_from_snapshot == 4 and svc.restored_events == 6
    assert svc.model.digest() == digest
    store.close()


def test_a_snapshot_is_taken_on_shutdown(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from privbandits.service.server.app import create_app
    from privbandits.service.server.workers import SnapshotOnShutdown

    raw = service_raw("ldp-sgd", horizon=100)
    db = tmp_path / "svc.db"
    with make_client(raw, db) as tc:
        _fill(tc, "ldp-sgd", 0, 3)
    app = create_app(parse_service_config(raw), open_store(db), tokens())
    svc = app.state.service
    assert svc.store.latest_snapshot() is None
    with TestClient(SnapshotOnShutdown(app, svc)) as tc:  # lifespan: startup ... shutdown
        _fill(tc, "ldp-sgd", 10, 2)
    snap = svc.store.latest_snapshot()
    assert snap is not None and snap.seq == 5
