"""Shuffle liveness: ``GET /v1/assignment`` leases an action slot per token (same token, same
slot until used), a lease left unused expires and its slot is reclaimed so the batch completes,
leases survive a restart of the shuffler, and a stalled batch raises an alert."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from privbandits.service.auth import TokenSet
from privbandits.service.config import parse_service_config
from privbandits.service.device.shuffle import ShuffleDevice
from privbandits.service.server.app import create_app
from privbandits.service.server.store import open_store
from privbandits.service.shuffler.app import ShufflerSettings, create_shuffler_app
from privbandits.service.shuffler.store import ShufflerStore
from tests.service.conftest import CLIENT, SHUFFLER, auth, service_raw

LOST = "lost-device-token-0"
WORKER = "worker-device-token"
OTHER = "other-device-token0"
OPERATOR = "operator-token-0000"
LEASE = 30.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class LateTransport(httpx.AsyncBaseTransport):
    """An ASGI transport to an app created later (the server reads the shuffler's status)."""

    app: Any = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await httpx.ASGITransport(app=self.app).handle_async_request(request)


def _server(to_shuffler: LateTransport | None = None) -> Any:
    raw = service_raw(
        "hanna-shuffle",
        horizon=300,
        seed=4,
        env={"kind": "finite", "d": 2, "K": 3, "noise_scale": 0.3},
        min_batch=2,
        shuffler_url="http://shuffler",
    )
    toks = TokenSet.from_secrets(client=[CLIENT], shuffler=[SHUFFLER], operator=[OPERATOR])
    return create_app(
        parse_service_config(raw), open_store(":memory:"), toks, shuffler_transport=to_shuffler
    )


def _shuffler(server: Any, store: ShufflerStore, clock: Clock, **kw: Any) -> TestClient:
    settings = ShufflerSettings(
        "http://server",
        SHUFFLER,
        TokenSet.from_secrets(client=[LOST, WORKER, OTHER], operator=[OPERATOR]),
        min_batch=2,
        device_epsilon=1e9,
        poll_seconds=0.05,
        lease_seconds=LEASE,
        clock=clock,
        **kw,
    )
    return TestClient(
        create_shuffler_app(settings, store, transport=httpx.ASGITransport(app=server))
    )


def _assign(tc: TestClient, token: str) -> httpx.Response:
    return tc.get("/v1/assignment", headers=auth(token))


def _slot(res: httpx.Response) -> tuple[int, int]:
    assert res.status_code == 200, res.text
    pub = res.json()["public"]
    return int(pub["action"]["data"][0]), int(pub["n"]["data"][0])


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[dict[str, Any]]:
    clock, late = Clock(), LateTransport()
    server = _server(late)
    store = ShufflerStore(tmp_path / "shuffler.db")
    with _shuffler(server, store, clock, stall_seconds=5.0) as tc:
        late.app = tc.app
        yield {"server": server, "store": store, "tc": tc, "clock": clock, "dir": tmp_path}


def test_three_requests_with_one_token_get_one_slot(stack: dict[str, Any]) -> None:
    tc, store = stack["tc"], stack["store"]
    first = _slot(_assign(tc, LOST))
    assert [_slot(_assign(tc, LOST)) for _ in range(2)] == [first, first]
    state = store.slot_state(0, stack["clock"]())
    assert state["leased"] == 1 and state["free"] == state["total"] - 1 == first[1] - 1


def _device(tc: TestClient, token: str, seed: int) -> ShuffleDevice:
    return ShuffleDevice(
        "http://testserver",
        token,
        http=tc,
        rng_policy=np.random.default_rng(seed),
        rng_client=np.random.default_rng(seed + 1),
        backoff=0.01,
    )


def _report(dev: ShuffleDevice, i: int) -> dict[str, Any]:
    model = dev.fetch_model()
    assigned = dev.assignment(wait=0)
    X = np.random.default_rng(i).normal(size=(3, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return dev.report_sealed(X, 0.5, model, assigned, key=f"r-{i}")


def _wait(pred: Any, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_an_unused_lease_expires_and_the_batch_still_completes(
    stack: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    tc, store, clock, server = stack["tc"], stack["store"], stack["clock"], stack["server"]
    _, n = _slot(_assign(tc, LOST))  # a device whose answer was lost: it never reports
    dev = _device(tc, WORKER, 7)
    for i in range(n - 1):  # every other slot is used
        assert _report(dev, i)["accepted"]
    assert store.pending(0) == n - 1
    full = _assign(tc, WORKER)
    assert full.status_code == 409  # the lost device's slot is still leased
    with caplog.at_level(logging.WARNING, logger="privbandits.shuffler"):
        clock.now += 6.0  # past stall_seconds, within the lease
        assert _wait(
            lambda: tc.get("/v1/status", headers=auth(OPERATOR)).json()["stalled"] is not None
        )
    stalled = tc.get("/v1/status", headers=auth(OPERATOR)).json()["stalled"]
    assert stalled["reports"] == n - 1 and stalled["batch_size"] == n
    assert stalled["slots"]["leased"] == 1 and stalled["slots"]["used"] == n - 1
    assert any("ALERT batch stalled" in r.getMessage() for r in caplog.records)
    text = tc.get("/metrics", headers=auth(OPERATOR)).text
    assert "privbandits_shuffler_batch_stalled 1" in text
    assert 'privbandits_shuffler_action_slots{state="leased"} 1' in text
    with TestClient(server) as server_tc:  # the server's status (and dashboard) shows it too
        seen = server_tc.get("/v1/status", headers=auth(OPERATOR)).json()["shuffler"]
    assert seen["reachable"] and seen["stalled"]["reports"] == n - 1
    assert server.state.service.model.version == 0
    clock.now += LEASE  # the lease expires: its slot goes to the next device
    assert _report(dev, n)["accepted"]
    assert _wait(lambda: server.state.service.model.version == 1)
    assert server.state.service.model.rounds == n
    assert _wait(lambda: tc.get("/v1/status", headers=auth(OPERATOR)).json()["stalled"] is None)


def test_leases_survive_a_restart_of_the_shuffler(tmp_path: Path) -> None:
    clock, server = Clock(), _server()
    path = tmp_path / "shuffler.db"
    store = ShufflerStore(path)
    with _shuffler(server, store, clock) as tc:
        lost = _slot(_assign(tc, LOST))
        dev = _device(tc, WORKER, 3)
        assert _report(dev, 0)["accepted"]
        before = store.slot_state(0, clock())
    store.close()  # the shuffler stops (its state is on disk)
    store = ShufflerStore(path)
    with _shuffler(server, store, clock) as tc:
        assert store.slot_state(0, clock()) == before
        assert _slot(_assign(tc, LOST)) == lost  # the same lease after the restart
        other = _slot(_assign(tc, OTHER))
        state = store.slot_state(0, clock())
        assert state["leased"] == 2 and state["used"] == 1
        assert state["free"] == state["total"] - 3 and other[1] == lost[1]
        clock.now += LEASE + 1  # both leases expire; the used slot stays used
        assert store.slot_state(0, clock())["expired"] == 2
        _assign(tc, OTHER)  # reclaims the expired slots, then leases one again
        state = store.slot_state(0, clock())
        assert state == {
            "total": state["total"],
            "free": state["total"] - 2,
            "leased": 1,
            "used": 1,
            "expired": 0,
        }
    store.close()
