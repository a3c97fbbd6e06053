"""kill -9 the server during a load and restart it: nothing acknowledged is lost, nothing counted twice."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from privbandits.service.config import parse_service_config
from privbandits.service.device.client import DeviceClient
from privbandits.service.server.model import ServedModel
from tests.service.conftest import (
    ADMIN,
    CLIENT,
    CLIENT2,
    ServerProcess,
    auth,
    service_raw,
    toml_text,
)
from tests.service.pg import PostgresServer

N_REPORTS = 160
SENDERS = 4


def _reports(url: str, n: int) -> list[dict[str, Any]]:
    """``n`` genuine privatized reports, all bound to model version 0 (valid under max_staleness)."""
    dev = DeviceClient(
        url, CLIENT, rng_policy=np.random.default_rng(7), rng_client=np.random.default_rng(8)
    )
    model = dev.fetch_model()
    rng = np.random.default_rng(9)
    out = []
    for _ in range(n):
        X = rng.normal(size=(4, 3))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        a = dev.choose(X, model)
        out.append(dev.privatize(X, a, float(rng.uniform(-1, 1)), model))
    return out


def _send_all(
    url: str, bodies: list[dict[str, Any]], acked: dict[str, dict[str, Any]], stop: threading.Event
) -> None:
    """Senders post their share of the reports, retrying each with its own key until answered."""

    def sender(j: int) -> None:
        with httpx.Client(timeout=5.0) as http:
            for i in range(j, len(bodies), SENDERS):
                key = f"report-{i}"
                secret = CLIENT if i % 2 == 0 else CLIENT2
                while not stop.is_set():
                    try:
                        r = http.post(
                            url + "/v1/reports",
                            json=bodies[i],
                            headers={**auth(secret), "Idempotency-Key": key},
                        )
                    except httpx.TransportError:
                        time.sleep(0.05)
                        continue
                    assert r.status_code == 200, r.text
                    acked[key] = r.json()
                    break

    threads = [threading.Thread(target=sender, args=(j,)) for j in range(SENDERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)


def _kill_restart_run(tmp_path: Path, db: str, fresh_db: str) -> None:
    raw = service_raw("ldp-sgd", horizon=N_REPORTS, seed=4, max_staleness=10**6)
    cfg_path = tmp_path / "svc.toml"
    cfg_path.write_text(toml_text(raw))
    tok_path = tmp_path / "tokens.toml"
    from tests.service.conftest import tokens_toml

    tok_path.write_text(tokens_toml())
    server = ServerProcess(cfg_path, tok_path, db)
    server.start()
    try:
        bodies = _reports(server.url, N_REPORTS)
        acked: dict[str, dict[str, Any]] = {}
        stop = threading.Event()
        load = threading.Thread(target=_send_all, args=(server.url, bodies, acked, stop))
        load.start()
        deadline = time.monotonic() + 120
        while len(acked) < N_REPORTS // 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        server.kill9()
        acked_before = dict(acked)
        assert 0 < len(acked_before) < N_REPORTS
        server.start()
        status = httpx.get(server.url + "/v1/status", headers=auth(ADMIN)).json()
        assert status["restored_events"] >= len(acked_before)
        load.join(timeout=300)
        stop.set()
        assert len(acked) == N_REPORTS
        export = httpx.get(server.url + "/v1/admin/export", headers=auth(ADMIN), timeout=30).json()
        final = httpx.get(server.url + "/v1/status", headers=auth(ADMIN)).json()
    finally:
        server.stop()
    keys = [e["idempotency_key"] for e in export["events"]]
    assert len(keys) == len(set(keys)) == N_REPORTS  # none counted twice
    assert set(acked_before) <= set(keys)  # every acknowledged report is stored
    for e in export["events"]:  # ... with the answer its sender got
        assert acked[e["idempotency_key"]] == e["response"]
    assert final["reports_received"] == N_REPORTS == final["model_version"]
    # an uninterrupted run on the same reports in the same order ends in the same state: in process ...
    model = ServedModel(parse_service_config(raw))
    for e in export["events"]:
        model.apply_report(model.parse_report(e["body"]["report"]))
    assert model.digest() == export["digest"] == export["models"][-1]["digest"]
    # ... and as a second server, never killed, on a fresh database of the same kind
    fresh = ServerProcess(cfg_path, tok_path, fresh_db)
    fresh.start()
    try:
        with httpx.Client(timeout=10.0) as http:
            for e in export["events"]:
                r = http.post(
                    fresh.url + "/v1/reports",
                    json=e["body"],
                    headers={**auth(CLIENT), "Idempotency-Key": e["idempotency_key"]},
                )
                assert r.status_code == 200, r.text
            again = http.get(fresh.url + "/v1/admin/export", headers=auth(ADMIN), timeout=30).json()
    finally:
        fresh.stop()
    assert again["digest"] == export["digest"]
    assert [m["digest"] for m in again["models"]] == [m["digest"] for m in export["models"]]


def test_kill9_sqlite(tmp_path: Path) -> None:
    _kill_restart_run(tmp_path, str(tmp_path / "svc.db"), str(tmp_path / "fresh.db"))


@pytest.mark.slow
def test_kill9_postgresql(tmp_path: Path, postgres: PostgresServer) -> None:
    _kill_restart_run(tmp_path, postgres.url, postgres.create_database("fresh"))
