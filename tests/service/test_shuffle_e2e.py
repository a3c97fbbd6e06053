"""A shuffle-DP algorithm end to end: devices -> shuffler -> server, over loopback HTTP."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from privbandits.service import sealing
from privbandits.service.auth import TokenSet
from privbandits.service.config import parse_service_config
from privbandits.service.device.simulate import simulate_shuffle_users
from privbandits.service.server.app import create_app
from privbandits.service.server.store import open_store
from privbandits.service.shuffler.app import ShufflerSettings, create_shuffler_app
from privbandits.service.shuffler.permutation import seeded_permutation
from privbandits.service.shuffler.store import ShufflerStore
from tests.service.conftest import (
    ADMIN,
    CLIENT,
    CLIENT2,
    SHUFFLER,
    InThreadServer,
    auth,
    service_raw,
    tokens,
)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The server of hanna-shuffle and a shuffler in front of it, both on 127.0.0.1."""
    raw = service_raw(
        "hanna-shuffle",
        horizon=300,
        seed=4,
        env={"kind": "finite", "d": 2, "K": 3, "noise_scale": 0.3},
        min_batch=2,
    )
    server = InThreadServer(
        create_app(parse_service_config(raw), open_store(str(tmp_path / "server.db")), tokens())
    )
    drawn: list[list[int]] = []
    seeded = seeded_permutation(123)

    def recording(n: int) -> list[int]:
        drawn.append(seeded(n))
        return drawn[-1]

    store = ShufflerStore(tmp_path / "shuffler.db", permutation=recording)
    settings = ShufflerSettings(
        server.url,
        SHUFFLER,
        TokenSet.from_secrets(client=[CLIENT, CLIENT2], admin=[ADMIN]),
        min_batch=2,
        device_epsilon=raw["service"]["device_epsilon"],
        poll_seconds=0.05,
    )
    shuffler = InThreadServer(create_shuffler_app(settings, store))
    yield {"server": server.url, "shuffler": shuffler.url, "drawn": drawn, "dir": tmp_path}
    shuffler.stop()
    server.stop()


def test_shuffle_dp_through_shuffler_and_server(
    stack: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[dict[str, Any]] = []  # what the devices sealed, in sending order
    real_seal = sealing.seal

    def capture(report: Any, public_key: str, size: int | None = None) -> dict[str, str]:
        sent.append(report)
        return real_seal(report, public_key, size)

    monkeypatch.setattr(sealing, "seal", capture)
    rounds = 40
    with httpx.Client(timeout=30) as http:
        key = http.get(stack["server"] + "/v1/model", headers=auth(CLIENT)).json()["public_key"]
        run = simulate_shuffle_users(
            stack["shuffler"], [CLIENT, CLIENT2], seed=4, rounds=rounds, http=http, server_key=key
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the last complete batch may still be on its way
            status = http.get(stack["shuffler"] + "/v1/status", headers=auth(ADMIN)).json()
            if status["outbox"] == 0 and status["reports_forwarded"] + sum(
                status["pending"].values()
            ) == len(sent):
                break
            time.sleep(0.05)
        export = http.get(stack["server"] + "/v1/admin/export", headers=auth(ADMIN)).json()
        server_status = http.get(stack["server"] + "/v1/status", headers=auth(ADMIN)).json()

    batches = [e["body"] for e in export["events"]]
    assert [e["kind"] for e in export["events"]] == ["batch"] * len(batches)
    assert len(batches) >= 2 and run.reported == len(sent)
    forwarded = [r for b in batches for r in b["reports"]]
    pending = sum(status["pending"].values())
    assert len(forwarded) == status["reports_forwarded"] == len(sent) - pending
    assert server_status["model_version"] == len(batches) == status["batches_forwarded"]
    assert server_status["reports_received"] == len(forwarded)
    # every batch is the next n_i reports the devices sent, in the shuffler's permuted order
    start = 0
    # per batch the shuffler draws the slot order (first assignment) and then the forwarding order
    for b, perm in zip(batches, stack["drawn"][1::2]):
        n = len(b["reports"])
        assert len(perm) == n >= 2
        arrived = sent[start : start + n]
        assert b["reports"] == [arrived[i] for i in perm]
        assert set(b) == {"batch_id", "model_version", "reports", "fill", "quarantined"}
        assert b["fill"] == b["quarantined"] == []
        start += n
    assert Counter(json.dumps(r, sort_keys=True) for r in forwarded) == Counter(
        json.dumps(r, sort_keys=True) for r in sent[: len(forwarded)]
    )
    # the shuffler only ever held ciphertexts
    raw_db = b"".join(p.read_bytes() for p in stack["dir"].glob("shuffler.db*"))
    assert b"reward_hat" not in raw_db
    assert not any(repr(r["reward_hat"]).encode() in raw_db for r in sent)


def test_device_refuses_a_key_other_than_the_servers(stack: dict[str, Any]) -> None:
    """A device that pinned the server's key does not seal to another key relayed by a shuffler."""
    from privbandits.core.errors import ValidationError
    from privbandits.service.device.shuffle import ShuffleDevice
    from privbandits.service.sealing import keygen

    with httpx.Client(timeout=30) as http:
        dev = ShuffleDevice(stack["shuffler"], CLIENT, http=http, server_key=keygen()[1])
        model = dev.fetch_model()
        with pytest.raises(ValidationError, match="public key other than the server's"):
            dev.sealing_key(model)
        key = http.get(stack["server"] + "/v1/model", headers=auth(CLIENT)).json()["public_key"]
        honest = ShuffleDevice(stack["shuffler"], CLIENT, http=http, server_key=key)
        assert honest.sealing_key(model) == key  # the honest shuffler relays the server's key


def test_a_poison_report_through_the_shuffler_does_not_stop_the_model(
    stack: dict[str, Any],
) -> None:
    """A malicious device seals garbage of exactly the padded size to the server's key: the shuffler
    cannot tell and forwards it; the server quarantines it, fills its slot, and the model advances."""
    import base64

    from nacl import public as nacl_public

    from privbandits.service.device.shuffle import ShuffleDevice
    from privbandits.service.reports import ReportFormat

    with httpx.Client(timeout=30) as http:
        model = http.get(stack["server"] + "/v1/model", headers=auth(CLIENT)).json()
        fmt = ReportFormat.from_description(model["report"], model["problem"]["K"])
        assert fmt is not None
        evil = ShuffleDevice(stack["shuffler"], CLIENT2, http=http)
        assigned = evil.assignment()
        box = nacl_public.SealedBox(nacl_public.PublicKey(base64.b64decode(model["public_key"])))
        garbage = {"sealed": base64.b64encode(box.encrypt(b"{" * fmt.sealed_size())).decode()}
        res = http.post(
            stack["shuffler"] + "/v1/reports",
            json={"model_version": assigned.version, "idempotency_key": "evil", "report": garbage},
            headers=auth(CLIENT2),
        )
        assert res.status_code == 202, (
            res.text
        )  # the envelope is right: the shuffler cannot see inside
        run = simulate_shuffle_users(
            stack["shuffler"],
            [CLIENT],
            seed=5,
            rounds=30,
            http=http,
            server_key=model["public_key"],
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            server_status = http.get(stack["server"] + "/v1/status", headers=auth(ADMIN)).json()
            shuffler_status = http.get(stack["shuffler"] + "/v1/status", headers=auth(ADMIN)).json()
            if server_status["model_version"] >= 2 and shuffler_status["server_quarantined"] == 1:
                break
            time.sleep(0.05)
    assert run.reported > 0
    assert server_status["quarantined"] == {"reports": 1, "by_field": {"sealed": 1}}
    assert (
        server_status["model_version"] >= 2
    )  # the poisoned batch was applied and the next ones too
    assert shuffler_status["server_quarantined"] == shuffler_status["server_filled"] == 1
    assert shuffler_status["dead_letters"] == [] and shuffler_status["reports_quarantined"] == 0
