"""Two worker processes (``privbandits serve --workers 2``) on one PostgreSQL database keep the
exactly-once guarantees: concurrent requests with repeated idempotency keys are stored once, a
device's budget is enforced across workers, and the model is one sequence of events (a fresh
replay of the database reproduces every stored digest)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from privbandits.service.config import parse_service_config
from privbandits.service.device.client import DeviceClient
from privbandits.service.server.model import ServedModel
from privbandits.service.server.service import Service
from privbandits.service.server.store import open_store
from tests.service.conftest import (
    ADMIN,
    CLIENT,
    CLIENT2,
    SRC,
    auth,
    free_port,
    service_raw,
    tokens,
    tokens_toml,
    toml_text,
)

pytestmark = pytest.mark.slow

BUDGET = 12  # reports the first device may post


UNIT = Path(__file__).resolve().parents[2] / "deploy" / "privbandits.service"


def _unit_command(cfg: Path, tok: Path, db: str, state: Path, port: int) -> list[str]:
    """The ExecStart line of the documented systemd unit, its paths and URL substituted."""
    line = next(x for x in UNIT.read_text().splitlines() if x.startswith("ExecStart="))
    args = shlex.split(line.removeprefix("ExecStart="))
    assert Path(args[0]).name == "privbandits" and args[1] == "serve", args
    subst = {"--tokens": str(tok), "--db": db, "--state-dir": str(state), "--port": str(port)}
    out = [str(cfg)]
    it = iter(args[3:])
    for a in it:
        out += [a, subst.get(a, next(it))] if a.startswith("--") else [a]
    assert "--workers" in out and out[out.index("--workers") + 1] == "2", out
    return [sys.executable, "-m", "privbandits.cli", "serve", *out]


def _start(cfg: Path, tok: Path, db: str, state: Path, port: int) -> subprocess.Popen[bytes]:
    # the unit runs after a one-off --init (documented in the unit): here both at once
    cmd = [*_unit_command(cfg, tok, db, state, port), "--init"]
    proc = subprocess.Popen(
        cmd,
        env=dict(os.environ, PYTHONPATH=SRC),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300  # two workers calibrate and compile at once
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "exited")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise RuntimeError("server did not start")


def test_two_workers_on_postgres_exactly_once(postgres: Any, tmp_path: Path) -> None:
    raw = service_raw("ldp-sgd", horizon=400, max_staleness=10**6)
    eps = float(ServedModel(parse_service_config(raw)).guarantee.epsilon)
    raw["service"]["device_epsilon"] = eps * (BUDGET + 0.5)
    second = eps * 1000
    cfg = tmp_path / "svc.toml"
    cfg.write_text(toml_text(raw))
    tok = tmp_path / "tokens.toml"
    # the second device gets its own, larger budget
    tok.write_text(
        tokens_toml().replace(
            'name = "dev-1"\nrole = "client"\n',
            f'name = "dev-1"\nrole = "client"\ndevice_epsilon = {second}\n',
        )
    )
    db = postgres.create_database("scale")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = _start(cfg, tok, db, tmp_path / "state", port)
    try:
        dev = DeviceClient(
            url, CLIENT, rng_policy=np.random.default_rng(1), rng_client=np.random.default_rng(2)
        )
        model = dev.fetch_model()
        X = np.random.default_rng(0).normal(size=(4, 3))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        body = dev.privatize(X, dev.choose(X, model), 0.5, model)
        # 20 keys of device 0 (budget 12) and 15 of device 1, each sent 3 times, 8 senders
        jobs = [(CLIENT, f"a{i}") for i in range(20)] + [(CLIENT2, f"b{i}") for i in range(15)]
        jobs = jobs * 3
        np.random.default_rng(5).shuffle(jobs)
        answers: dict[tuple[str, str], list[tuple[int, Any]]] = {}
        lock = threading.Lock()

        def sender(part: list[tuple[str, str]]) -> None:
            with httpx.Client(timeout=30) as http:
                for secret, key in part:
                    r = http.post(
                        url + "/v1/reports",
                        json=body,
                        headers={**auth(secret), "Idempotency-Key": key},
                    )
                    got = r.json().get("seq") if r.status_code == 200 else None
                    with lock:
                        answers.setdefault((secret, key), []).append((r.status_code, got))

        threads = [threading.Thread(target=sender, args=(jobs[j::8],)) for j in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        with httpx.Client(timeout=30) as http:
            export = http.get(url + "/v1/admin/export", headers=auth(ADMIN)).json()
            # whichever worker answers, its view includes every worker's reports
            seen = [
                http.get(url + "/v1/status", headers=auth(ADMIN)).json()["reports_received"]
                for _ in range(6)
            ]
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert len(answers) == 35 and all(len(v) == 3 for v in answers.values())
    for (_secret, key), got in answers.items():
        codes = {c for c, _ in got}
        assert codes <= {200, 429}, (key, got)
        seqs = {s for c, s in got if c == 200}
        assert len(seqs) <= 1, (key, got)  # a repeated key is stored once, one answer
    events = export["events"]
    per_token = Counter(e["token"] for e in events)
    assert per_token == {"dev-0": BUDGET, "dev-1": 15}, per_token
    assert sorted(e["seq"] for e in events) == list(range(1, BUDGET + 16))
    assert len({(e["token"], e["idempotency_key"]) for e in events}) == len(events)
    accepted = {k for k, got in answers.items() if any(c == 200 for c, _ in got)}
    assert len(accepted) == BUDGET + 15
    assert seen == [BUDGET + 15] * 6, seen
    # one sequence of events: a fresh replay reproduces every stored model digest
    svc = Service(parse_service_config(raw), open_store(db), tokens())
    assert svc.model.rounds == BUDGET + 15 == svc.model.version
    svc.store.close()
