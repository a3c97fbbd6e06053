"""Shared helpers of the service tests: configurations, tokens, in-process apps and real servers."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi")

import uvicorn
from fastapi.testclient import TestClient

from privbandits.service.auth import TokenSet
from privbandits.service.config import ServiceConfig, parse_service_config
from privbandits.service.server.app import create_app
from privbandits.service.server.store import open_store

CLIENT = "client-secret-0000"
CLIENT2 = "client-secret-0001"
ADMIN = "admin-secret-00000"
SHUFFLER = "shuffler-secret-00"
SRC = str(Path(__file__).resolve().parents[2] / "src")


def auth(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def service_raw(
    algorithm: str = "ldp-ols",
    horizon: int = 400,
    seed: int = 3,
    params: dict[str, Any] | None = None,
    env: dict[str, Any] | None = None,
    **service: Any,
) -> dict[str, Any]:
    """A served configuration as a TOML mapping (small linear contextual problem)."""
    return {
        "name": "svc",
        "horizon": horizon,
        "seeds": [seed],
        "env": env or {"kind": "synthetic", "d": 3, "K": 4, "noise_scale": 0.3},
        "algorithms": [{"name": algorithm, "params": params or {}}],
        "service": {"device_epsilon": 1e9, "rate": 1e6, "burst": 10**6, **service},
    }


def toml_text(raw: dict[str, Any]) -> str:
    """``raw`` as TOML (flat enough for the configurations above)."""

    def val(v: Any) -> str:
        if isinstance(v, bool):
            return str(v).lower()
        if isinstance(v, str):
            return f'"{v}"'
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + " }"
        return repr(v)

    lines = [
        f"{k} = {val(v)}" for k, v in raw.items() if not isinstance(v, (dict, list)) or k == "seeds"
    ]
    for table in ("env", "service"):
        if table in raw:
            lines.append(f"[{table}]")
            lines += [f"{k} = {val(v)}" for k, v in raw[table].items()]
    for alg in raw["algorithms"]:
        lines.append("[[algorithms]]")
        lines += [f"{k} = {val(v)}" for k, v in alg.items()]
    return "\n".join(lines) + "\n"


def tokens() -> TokenSet:
    return TokenSet.from_secrets(client=[CLIENT, CLIENT2], admin=[ADMIN], shuffler=[SHUFFLER])


def tokens_toml() -> str:
    out = []
    for name, role, secret in (
        ("dev-0", "client", CLIENT),
        ("dev-1", "client", CLIENT2),
        ("ops", "admin", ADMIN),
        ("shuf", "shuffler", SHUFFLER),
    ):
        out.append(f'[[tokens]]\nname = "{name}"\nrole = "{role}"\ntoken = "{secret}"\n')
    return "\n".join(out)


def make_client(raw: dict[str, Any], db: str | Path = ":memory:", **kw: Any) -> TestClient:
    cfg: ServiceConfig = parse_service_config(raw)
    return TestClient(create_app(cfg, open_store(db), kw.pop("toks", None) or tokens(), **kw))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class InThreadServer:
    """An ASGI app served by uvicorn in a daemon thread on a free loopback port."""

    def __init__(self, app: Any) -> None:
        port = free_port()
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.server.started, "uvicorn did not start within 30 s"
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


class ServerProcess:
    """``privbandits serve`` in a subprocess on a loopback port."""

    def __init__(
        self,
        config: Path,
        tokens_file: Path,
        db: str,
        port: int | None = None,
        tls: tuple[Path, Path] | None = None,
        init: bool = True,
        state_dir: Path | None = None,
    ) -> None:
        self.config, self.tokens_file, self.db, self.tls = config, tokens_file, db, tls
        # the first start creates the deployment (--init), restarts reopen it
        self.init = init
        self.state_dir = state_dir or Path(tempfile.mkdtemp(prefix="pbtest-state-"))
        self.port = port or free_port()
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120.0) -> None:
        env = dict(os.environ, PYTHONPATH=SRC)
        cmd = [
            sys.executable,
            "-m",
            "privbandits.cli",
            "serve",
            str(self.config),
            "--tokens",
            str(self.tokens_file),
            "--db",
            self.db,
            "--port",
            str(self.port),
            "--host",
            "127.0.0.1",
            "--state-dir",
            str(self.state_dir),
        ]
        if self.init:
            cmd.append("--init")
        if self.tls is not None:
            cmd += ["--ssl-keyfile", str(self.tls[0]), "--ssl-certfile", str(self.tls[1])]
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"server exited with {self.proc.returncode}: {err}")
            try:
                ok = (
                    httpx.get(
                        self.url + "/v1/health",
                        timeout=1.0,
                        verify=ssl.create_default_context(cafile=str(self.tls[1]))
                        if self.tls
                        else True,
                    ).status_code
                    == 200
                )
                if ok:
                    self.init = False
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server did not start")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def server_files(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    tok = tmp_path / "tokens.toml"
    tok.write_text(tokens_toml())
    yield tmp_path, tok


def _start_postgres() -> Any:
    from tests.service.pg import PostgresServer

    pg = PostgresServer(free_port())
    try:
        pg.start()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        pg.stop()
        reason = f"no PostgreSQL server could be started: {exc}"
        if (
            os.environ.get("PRIVBANDITS_REQUIRE_POSTGRES") == "1"
        ):  # CI installs the server: a skip is a failure
            pytest.fail(reason)
        pytest.skip(reason)
    return pg


@pytest.fixture
def postgres() -> Iterator[Any]:
    """A throwaway PostgreSQL server (skipped where none can start, a failure in CI)."""
    pg = _start_postgres()
    yield pg
    pg.stop()


@pytest.fixture(scope="module")
def postgres_module() -> Iterator[Any]:
    """One throwaway PostgreSQL server for a whole test module (a new database per test)."""
    pg = _start_postgres()
    yield pg
    pg.stop()


_DB_COUNTER = iter(range(10**6))


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: Any, tmp_path: Path) -> str:
    """A fresh database of each back end: a SQLite file, or a new PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "service.db")
    pg = request.getfixturevalue("postgres_module")
    return str(pg.create_database(f"t{next(_DB_COUNTER)}"))
