"""The README's Deploy walkthrough, command for command: 1000 device tokens, a served model, 1000
simulated clients; and the shuffle model with a shuffler in front (five batches, 342 reports)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import SRC, ServerProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _cli(*args: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run(
        [sys.executable, "-m", "privbandits.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _operator(tokens: Path) -> str:
    """The operator token of a tokens file written by ``make-tokens``."""
    import tomllib

    entries = tomllib.loads(tokens.read_text())["tokens"]
    return str(next(e["token"] for e in entries if e["role"] == "operator"))


def _status(url: str, tokens: Path) -> dict:
    headers = {"Authorization": f"Bearer {_operator(tokens)}"}
    return httpx.get(url + "/v1/status", timeout=10, headers=headers).json()


def test_ldp_walkthrough_with_1000_clients(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.toml"
    made = _cli("make-tokens", str(tokens), "--clients", "1000")
    assert made.returncode == 0, made.stderr
    server = ServerProcess(
        ROOT / "examples" / "serve-ldp.toml", tokens, str(tmp_path / "deploy-ldp.db")
    )
    server.start()
    try:
        run = _cli("simulate-clients", server.url, "--tokens", str(tokens), "--n", "1000")
        assert run.returncode == 0, run.stderr
        status = _status(server.url, tokens)
        page = httpx.get(server.url + "/", timeout=10)
    finally:
        server.stop()
    assert status["reports_received"] == 1000 == status["model_version"]
    assert status["simulated_rewards"]["count"] == 1000
    assert page.status_code == 200 and "Reports received" in page.text


def test_shuffle_walkthrough_forwards_five_batches(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.toml"
    assert _cli("make-tokens", str(tokens), "--clients", "1000").returncode == 0
    config = ROOT / "examples" / "serve-shuffle.toml"
    server = ServerProcess(config, tokens, str(tmp_path / "deploy-shuffle.db"))
    server.start()
    port = free_port()
    shuffler_url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=SRC)
    shuffler = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "privbandits.cli",
            "serve-shuffler",
            str(config),
            "--server",
            server.url,
            "--tokens",
            str(tokens),
            "--port",
            str(port),
            "--db",
            str(tmp_path / "deploy-shuffler.db"),
            "--init",
            "--state-dir",
            str(tmp_path / "shuffler-state"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        run = _cli(
            "simulate-clients",
            server.url,
            "--shuffler",
            shuffler_url,
            "--tokens",
            str(tokens),
            "--n",
            "1000",
        )
        assert run.returncode == 0, run.stderr
        deadline = time.monotonic() + 60
        while _status(server.url, tokens)["reports_received"] < 342 and time.monotonic() < deadline:
            time.sleep(0.2)  # the shuffler forwards complete batches asynchronously
        server_status = _status(server.url, tokens)
        shuffler_status = _status(shuffler_url, tokens)
    finally:
        shuffler.terminate()
        shuffler.wait(timeout=30)
        server.stop()
    assert server_status["reports_received"] == 342
    # the sixth batch (index 5, 660 users) waits at the shuffler with the other 658 reports
    assert shuffler_status["pending"] == {"5": 1000 - 342}
