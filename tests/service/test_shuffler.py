"""The shuffler service: complete batches only, uniform order, no metadata, sealed payloads, durability."""

from __future__ import annotations

import base64
import itertools
import json
import math
from collections import Counter
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient
from scipy import stats

from privbandits.core.errors import ValidationError
from privbandits.service.auth import TokenSet
from privbandits.service.shuffler.app import (
    ShufflerSettings,
    create_shuffler_app,
    protocol_batch_size,
    report_budget,
)
from privbandits.service.shuffler.permutation import seeded_permutation, system_permutation
from privbandits.service.shuffler.store import ShufflerStore, report_digest

nacl_public = pytest.importorskip("nacl.public")

CLIENT = "client-token-A-0000"
CLIENT_B = "client-token-B-0000"
ADMIN = "admin-token-0000000"
SHUFFLER = "shuffler-token-S"


class FakeServer:
    """Records every batch the shuffler forwards; bumps the model version per batch."""

    def __init__(self, batch_size: int | None = None) -> None:
        self.version = 0
        self.batch_size = batch_size
        self.bodies: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.key = nacl_public.PrivateKey.generate()
        self.fail = False
        self.refuse: int | None = None  # answer batches with this 4xx status
        self.answer: dict[str, Any] = {}  # extra fields of the batch answer
        self.extra: dict[str, Any] = {}  # extra fields of the model (report format, problem)
        app = FastAPI()

        @app.get("/v1/model")
        def model() -> dict[str, Any]:
            out: dict[str, Any] = {
                "model_version": self.version,
                "public_key": base64.b64encode(bytes(self.key.public_key)).decode(),
            }
            if self.batch_size is not None:
                out["batch_size"] = self.batch_size
            return {**out, **self.extra}

        @app.post("/v1/batches")
        async def batches(request: Request) -> Any:
            if self.fail:
                return JSONResponse({"detail": "down for maintenance"}, status_code=503)
            if self.refuse is not None:
                return JSONResponse(
                    {"error": {"status": self.refuse, "message": "refused"}},
                    status_code=self.refuse,
                )
            self.bodies.append(await request.body())
            self.headers.append(dict(request.headers))
            self.version += 1
            return {"accepted": True, **self.answer}

        self.app = app


def make(
    server: FakeServer,
    store: ShufflerStore,
    min_batch: int = 3,
    clients: tuple[str, ...] = (),
    **kw: Any,
) -> TestClient:
    settings = ShufflerSettings(
        server_url="http://server",
        shuffler_token=SHUFFLER,
        tokens=TokenSet.from_secrets(
            client=[CLIENT, CLIENT_B, *clients], shuffler=["a-shuffler-secret"], admin=[ADMIN]
        ),
        min_batch=min_batch,
        poll_seconds=0.05,
        **kw,
    )
    app = create_shuffler_app(settings, store, transport=httpx.ASGITransport(app=server.app))
    return TestClient(app)


def post(
    client: TestClient, i: int, version: int = 0, report: Any = None, token: str = CLIENT
) -> httpx.Response:
    body = {
        "model_version": version,
        "idempotency_key": f"key-{i}",
        "report": report or {"value": i},
    }
    return client.post("/v1/reports", json=body, headers={"Authorization": f"Bearer {token}"})


def drain(client: TestClient) -> None:
    """Run one forwarding step synchronously (the background loop also runs, this makes it prompt)."""
    client.portal.call(client.app.state.forwarder.step)  # type: ignore[union-attr]


# -- permutations -----------------------------------------------------------------------------
#: False-alarm rate of the chi-square tests that use the OS's generator (it cannot be seeded).
ALPHA = 1e-6


@pytest.mark.parametrize("source", ["seeded", "system"])
def test_permutation_uniform_chi_square(source: str) -> None:
    """All 4! orders equally likely: chi-square over 24 cells, threshold the 1-ALPHA quantile of chi2(23)."""
    n, draws = 4, 24_000
    draw = seeded_permutation(7) if source == "seeded" else system_permutation
    counts = Counter(tuple(draw(n)) for _ in range(draws))
    cells = list(itertools.permutations(range(n)))
    assert set(counts) <= set(cells)
    expected = draws / len(cells)
    chi2 = sum((counts.get(c, 0) - expected) ** 2 / expected for c in cells)
    assert chi2 < stats.chi2.ppf(1 - ALPHA, df=len(cells) - 1)


def test_chi_square_detects_a_biased_shuffle() -> None:
    """The same statistic rejects a classic biased shuffle (swap with any index), so the test has power."""
    rng = np.random.default_rng(3)
    n, draws = 4, 24_000

    def naive(k: int) -> list[int]:
        p = list(range(k))
        for i in range(k):
            j = int(rng.integers(k))
            p[i], p[j] = p[j], p[i]
        return p

    counts = Counter(tuple(naive(n)) for _ in range(draws))
    expected = draws / 24
    chi2 = sum(
        (counts.get(c, 0) - expected) ** 2 / expected for c in itertools.permutations(range(n))
    )
    assert chi2 > stats.chi2.ppf(1 - ALPHA, df=23)


def test_cut_orders_reports_by_the_permutation() -> None:
    store = ShufflerStore(":memory:", permutation=lambda n: list(reversed(range(n))))
    for i in range(5):
        assert store.add(report_digest(CLIENT, str(i)), 0, {"v": i}) == "queued"
    batch = store.cut(0, 5)
    assert batch is not None
    assert [r["v"] for r in batch.payload()["reports"]] == [4, 3, 2, 1, 0]
    assert store.pending() == 0 and store.cut(0, 1) is None


def test_cut_position_of_first_arrival_is_uniform() -> None:
    """Through the store with the default (cryptographic) order: the first-arrived report's position
    in a batch of 5 is uniform (chi-square, 4 df, threshold the 1-ALPHA quantile)."""
    store = ShufflerStore(":memory:")
    n, batches = 5, 2_000
    pos = Counter()
    for b in range(batches):
        for i in range(n):
            store.add(f"{b}-{i}", b, {"v": i})
        batch = store.cut(b, n)
        assert batch is not None
        pos[[r["v"] for r in batch.payload()["reports"]].index(0)] += 1
    e = batches / n
    assert sum((pos[k] - e) ** 2 / e for k in range(n)) < stats.chi2.ppf(1 - ALPHA, df=n - 1)


def test_bad_permutation_is_refused() -> None:
    store = ShufflerStore(":memory:", permutation=lambda n: [0] * n)
    for i in range(3):
        store.add(str(i), 0, {"v": i})
    with pytest.raises(ValidationError, match="permutation"):
        store.cut(0, 3)
    assert store.pending() == 3  # nothing lost


# -- batching -----------------------------------------------------------------------------------
def test_nothing_forwarded_below_min_batch() -> None:
    server, store = FakeServer(), ShufflerStore(":memory:", permutation=seeded_permutation(1))
    with make(server, store, min_batch=5) as client:
        for i in range(4):
            assert post(client, i).status_code == 202
        drain(client)
        assert server.bodies == [] and store.pending() == 4
        assert post(client, 4).status_code == 202
        drain(client)
    assert len(server.bodies) == 1
    assert len(json.loads(server.bodies[0])["reports"]) == 5


def test_protocol_batch_size_is_exact_and_complete() -> None:
    """With a protocol batch of n=4 and min_batch=3: forwarded only at 4, and a 5th report of the
    same version is refused (the batch is complete), never carried into a later batch."""
    server, store = FakeServer(batch_size=4), ShufflerStore(":memory:")
    with make(server, store, min_batch=3) as client:
        for i in range(3):
            assert post(client, i).status_code == 202
        drain(client)
        assert server.bodies == []
        server.fail = True  # the batch is cut but the server does not take it yet
        assert post(client, 3).status_code == 202
        with pytest.raises(httpx.HTTPStatusError, match="503"):
            drain(client)
        late = post(client, 99)
        assert late.status_code == 409 and "complete" in late.json()["error"]["message"]
        server.fail = False
        drain(client)
        assert len(server.bodies) == 1 and len(json.loads(server.bodies[0])["reports"]) == 4
        stale = post(client, 5, version=0)
        assert stale.status_code == 409 and "stale" in stale.json()["error"]["message"]
        assert post(client, 5, version=1).status_code == 202


def test_protocol_batch_below_min_batch_is_blocked() -> None:
    server, store = FakeServer(batch_size=2), ShufflerStore(":memory:")
    with make(server, store, min_batch=3) as client:
        for i in range(2):
            post(client, i)
        drain(client)
        status = client.get("/v1/status", headers={"Authorization": f"Bearer {ADMIN}"}).json()
    assert server.bodies == [] and "fewer than min_batch=3" in status["blocked"]


def test_protocol_batch_size_from_public_schedule() -> None:
    assert protocol_batch_size({"model_version": 1, "public": {"counts": [[2, 0, 3]]}}) == 5
    assert protocol_batch_size({"model_version": 1, "batch_size": 7}) == 7
    assert protocol_batch_size({"model_version": 1, "public": {"theta": [0.0]}}) is None


def test_forwarded_body_has_no_metadata() -> None:
    server, store = FakeServer(), ShufflerStore(":memory:")
    with make(server, store, min_batch=3) as client:
        for i in range(3):
            post(client, i, report={"action": i, "reward_hat": 0.5 * i})
        drain(client)
    body = json.loads(server.bodies[0])
    assert set(body) == {"batch_id", "model_version", "reports"}
    assert sorted(body["reports"], key=lambda r: r["action"]) == [
        {"action": i, "reward_hat": 0.5 * i} for i in range(3)
    ]
    text = server.bodies[0].decode()
    for leak in (CLIENT, "key-0", "key-1", "key-2", "testclient", "idempotency"):
        assert leak not in text
    assert server.headers[0]["authorization"] == f"Bearer {SHUFFLER}"
    assert not {"x-forwarded-for", "forwarded", "x-real-ip"} & set(server.headers[0])


def test_sealed_payload_unreadable_to_shuffler(tmp_path) -> None:
    """Sealed reports are stored and forwarded as the client's ciphertext: the plaintext appears
    nowhere in the shuffler's database, a key other than the server's cannot open them, the
    server's key opens exactly what the clients sealed."""
    server = FakeServer()
    store = ShufflerStore(tmp_path / "shuffler.db")
    secret = [f"SECRET-PAYLOAD-{i}" for i in range(3)]
    with make(server, store, min_batch=3) as client:
        pk = nacl_public.PublicKey(
            base64.b64decode(
                client.get("/v1/model", headers={"Authorization": f"Bearer {CLIENT}"}).json()[
                    "public_key"
                ]
            )
        )
        for i, s in enumerate(secret):
            box = nacl_public.SealedBox(pk).encrypt(json.dumps({"tag": s}).encode())
            assert (
                post(client, i, report={"sealed": base64.b64encode(box).decode()}).status_code
                == 202
            )
        raw_db = b"".join(p.read_bytes() for p in tmp_path.iterdir())
        assert not any(s.encode() in raw_db for s in secret)
        drain(client)
    reports = json.loads(server.bodies[0])["reports"]
    assert all(set(r) == {"sealed"} for r in reports)
    other = nacl_public.SealedBox(nacl_public.PrivateKey.generate())
    with pytest.raises(Exception, match="[Dd]ecrypt"):
        other.decrypt(base64.b64decode(reports[0]["sealed"]))
    opened = {
        json.loads(nacl_public.SealedBox(server.key).decrypt(base64.b64decode(r["sealed"])))["tag"]
        for r in reports
    }
    assert opened == set(secret)


# -- idempotency, durability, bad input ------------------------------------------------------------
def test_retry_is_queued_once() -> None:
    server, store = FakeServer(), ShufflerStore(":memory:")
    with make(server, store, min_batch=10) as client:
        first, again = post(client, 1), post(client, 1)
        assert first.json()["duplicate"] is False and again.json()["duplicate"] is True
        assert store.pending() == 1 and store.counters()["reports_received"] == 1


def test_acknowledged_reports_survive_a_restart(tmp_path) -> None:
    """Reports acknowledged before a crash are pending after it; a cut batch that the server never
    acknowledged is forwarded again with the same batch_id."""
    path = tmp_path / "q.db"
    store = ShufflerStore(path)
    for i in range(4):
        store.add(str(i), 0, {"v": i})
    cut = store.cut(0, 3)
    assert cut is not None
    del store  # no close: as after kill -9 (every acknowledged add was committed)
    server, again = FakeServer(), ShufflerStore(path)
    assert again.pending() == 1 and [b.batch_id for b in again.outbox()] == [cut.batch_id]
    assert again.add("0", 0, {"v": 0}) == "duplicate"
    with make(server, again, min_batch=3) as client:
        drain(client)
    assert [json.loads(b)["batch_id"] for b in server.bodies] == [cut.batch_id]
    assert again.outbox() == [] and again.counters()["reports_forwarded"] == 3


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"model_version": -1, "idempotency_key": "k", "report": {"v": 1}}, 422, "model_version"),
        ({"model_version": 0, "idempotency_key": "", "report": {"v": 1}}, 422, "idempotency_key"),
        ({"model_version": 0, "idempotency_key": "k", "report": []}, 422, "report"),
        (
            {"model_version": 0, "idempotency_key": "k", "report": {"sealed": "!!"}},
            422,
            "report.sealed",
        ),
        (
            {"model_version": 0, "idempotency_key": "k", "report": {"v": 1}, "user": "u7"},
            422,
            "unknown field",
        ),
        ({"model_version": 0, "idempotency_key": "k", "report": {"v": math.inf}}, 422, "report"),
    ],
)
def test_bad_reports_are_refused_with_the_field(
    body: dict[str, Any], status: int, field: str
) -> None:
    server, store = FakeServer(), ShufflerStore(":memory:")
    with make(server, store) as client:
        text = json.dumps(body)  # allows Infinity, as a careless client would send
        res = client.post(
            "/v1/reports",
            content=text,
            headers={"Authorization": f"Bearer {CLIENT}", "Content-Type": "application/json"},
        )
        assert res.status_code == status and field in res.json()["error"]["message"]
        assert (
            res.json()["error"]["field"].startswith(field.split(" ")[0].split(".")[0])
            or field == "unknown field"
        )
        assert store.pending() == 0


def test_tokens_malformed_json_and_size_limit() -> None:
    server, store = FakeServer(), ShufflerStore(":memory:")
    with make(server, store) as client:
        assert client.post("/v1/reports", json={}).status_code == 401
        assert post(client, 1, token="nope").status_code == 401
        assert post(client, 1, token="a-shuffler-secret").status_code == 403
        res = client.post(
            "/v1/reports",
            content=b"{not json",
            headers={"Authorization": f"Bearer {CLIENT}", "Content-Type": "application/json"},
        )
        assert res.status_code == 400 and "malformed JSON" in res.json()["error"]["message"]
        big = post(client, 2, report={"sealed": base64.b64encode(b"x" * 100_000).decode()})
        assert big.status_code == 413
        assert store.pending() == 0
        assert post(client, 3).status_code == 202  # still serving


def test_report_budget_per_device() -> None:
    """One report per device by default (the accounted epsilon is the device's budget); the count is
    per token and a refused report changes nothing."""
    server, store = FakeServer(), ShufflerStore(":memory:")
    server.app.routes[:] = [r for r in server.app.routes if getattr(r, "path", "") != "/v1/model"]

    @server.app.get("/v1/model")
    def model() -> dict[str, Any]:
        return {"model_version": server.version, "guarantee": {"epsilon": 0.5}}

    with make(server, store, min_batch=10) as client:
        assert post(client, 1).status_code == 202
        again = post(client, 1)  # a retry is not a new report
        assert again.status_code == 202 and again.json()["duplicate"] is True
        refused = post(client, 2)
        assert (
            refused.status_code == 429
            and "budget of device 'client-0' exhausted" in refused.json()["error"]["message"]
        )
        assert store.pending() == 1
    assert report_budget({"guarantee": {"epsilon": 0.5}}, None) == 1
    assert report_budget({"guarantee": {"epsilon": 0.5}}, 1.6) == 3
    assert report_budget({"guarantee": {"epsilon": "inf"}}, 1.0) is None
    assert report_budget({}, 1.0) is None


def test_settings_validation() -> None:
    with pytest.raises(ValidationError, match="min_batch"):
        ShufflerSettings("http://s", "t", TokenSet.from_secrets(client=["c"]), min_batch=1)
    with pytest.raises(ValidationError, match="tokens"):
        ShufflerSettings("http://s", "t", TokenSet([]))
    with pytest.raises(ValidationError, match="device_epsilon"):
        ShufflerSettings("http://s", "t", TokenSet.from_secrets(client=["c"]), device_epsilon=-1.0)


# -- action slots of a batched-elimination schedule ------------------------------------------------
class ScheduleServer(FakeServer):
    """A fake server publishing a Hanna et al. (2022) Algorithm 3 schedule ``counts`` (R = 1)."""

    def __init__(self, counts: list[int], committed: int = -1) -> None:
        super().__init__()
        self.counts, self.committed = counts, committed
        route = next(r for r in self.app.routes if getattr(r, "path", "") == "/v1/model")
        self.app.routes.remove(route)

        @self.app.get("/v1/model")
        def model() -> dict[str, Any]:
            enc = lambda v, shape: {"dtype": "int64", "shape": shape, "data": v}
            return {
                "model_version": self.version,
                "public": {
                    "counts": enc([self.counts], [1, len(self.counts)]),
                    "committed": enc([self.committed], [1]),
                    "batch": enc([self.version + 1], [1]),
                },
            }


def test_assignment_hands_out_the_schedule_once() -> None:
    server, store = ScheduleServer([2, 0, 3]), ShufflerStore(":memory:")
    auth = {"Authorization": f"Bearer {CLIENT}"}
    devices = [f"device-token-{i:04d}" for i in range(6)]
    with make(server, store, min_batch=2, clients=tuple(devices)) as client:
        got = [
            client.get("/v1/assignment", headers={"Authorization": f"Bearer {t}"}).json()
            for t in devices[:5]
        ]
        again = client.get("/v1/assignment", headers={"Authorization": f"Bearer {devices[0]}"})
        assert again.json() == got[0]  # a token asking again keeps its slot
        assert client.get("/v1/assignment", headers=auth).status_code == 409
        assert client.get("/v1/assignment").status_code == 401
    assert Counter(g["public"]["action"]["data"][0] for g in got) == {0: 2, 2: 3}
    assert all(g["public"]["n"]["data"] == [5] and g["model_version"] == 0 for g in got)


def test_assignment_order_is_uniform() -> None:
    """Slots of counts [1, 2]: the position of action 0 among the 3 slots is uniform (chi-square)."""
    store = ShufflerStore(":memory:")
    pos = Counter()
    versions = 1_500
    for v in range(versions):
        order = [store.assign_slot(v, [1, 2]) for _ in range(3)]
        assert store.assign_slot(v, [1, 2]) is None
        pos[[a for a, _ in order].index(0)] += 1
    e = versions / 3
    assert sum((pos[k] - e) ** 2 / e for k in range(3)) < stats.chi2.ppf(1 - ALPHA, df=2)


def test_schedule_batch_is_forwarded_at_n_i_and_commit_phase_refuses_reports() -> None:
    server, store = ScheduleServer([1, 2]), ShufflerStore(":memory:")
    with make(server, store, min_batch=2) as client:
        for i in range(2):
            assert post(client, i, report={"action": i, "reward_hat": 0.0}).status_code == 202
        drain(client)
        assert server.bodies == []
        server.committed = (
            1  # this batch's estimates commit the schedule (published with version 1)
        )
        assert post(client, 2, report={"action": 1, "reward_hat": 0.0}).status_code == 202
        drain(client)
        assert len(server.bodies) == 1
        res = post(client, 3, version=1)
        assert res.status_code == 409 and "no open batch" in res.json()["error"]["message"]
        a = client.get("/v1/assignment", headers={"Authorization": f"Bearer {CLIENT}"}).json()
        assert a["public"]["action"]["data"] == [1] and a["public"]["n"]["data"] == [0]


# -- one bad report cannot stop the shuffler ----------------------------------------------------
#: The format a hanna-shuffle server publishes (``GET /v1/model``'s ``report``) and its problem.
FORMAT = {
    "report": {
        "mechanism": "laplace",
        "fields": {
            "action": {"shape": [], "dtype": "int64"},
            "reward_hat": {"shape": [], "dtype": "float64"},
        },
    },
    "problem": {"K": 3},
}


def _sealed(server: FakeServer, plaintext: bytes) -> dict[str, str]:
    box = nacl_public.SealedBox(server.key.public_key).encrypt(plaintext)
    return {"sealed": base64.b64encode(box).decode()}


def test_reports_failing_the_format_are_quarantined_not_queued() -> None:
    """Plain reports are checked field by field, sealed ones by their envelope (exactly the padded
    size); each bad one is answered 422 naming the field, counted and listed without its sender."""
    from privbandits.service.reports import ReportFormat
    from privbandits.service.sealing import seal

    server, store = FakeServer(), ShufflerStore(":memory:")
    server.extra = FORMAT
    fmt = ReportFormat.from_description(FORMAT["report"], 3)
    assert fmt is not None
    size = fmt.sealed_size()
    pk = base64.b64encode(bytes(server.key.public_key)).decode()
    bad = [
        ({"action": 1, "reward_hat": 0.5, "epsilon": 100}, "report.epsilon"),
        ({"action": 3, "reward_hat": 0.5}, "report.action"),
        ({"action": 1}, "report.reward_hat"),
        ({"action": 1, "reward_hat": 0.5, "contexts": [[1.0, 0.0]]}, "report.contexts"),
        (
            seal({"action": 1, "reward_hat": 0.5}, pk),
            "report.sealed",
        ),  # not padded: a size that leaks
        (_sealed(server, b"x" * (size + 1)), "report.sealed"),
        ({"sealed": "AAAA"}, "report.sealed"),
        (
            {"sealed": seal({"action": 1, "reward_hat": 0.5}, pk, size)["sealed"], "user": "u7"},
            "report.user",
        ),
    ]
    with make(server, store, min_batch=10) as client:
        for i, (report, field) in enumerate(bad):
            res = post(client, i, report=report)
            assert res.status_code == 422 and res.json()["error"]["field"] == field, (
                field,
                res.text,
            )
            assert "quarantined" in res.json()["error"]["message"]
        assert store.pending() == 0
        good = [
            seal({"action": 1, "reward_hat": -0.123456789}, pk, size),
            {"action": 2, "reward_hat": 1.5},
        ]
        assert [post(client, 100 + i, report=r).status_code for i, r in enumerate(good)] == [
            202,
            202,
        ]
        status = client.get("/v1/status", headers={"Authorization": f"Bearer {ADMIN}"}).json()
    assert status["reports_quarantined"] == len(bad) and store.pending() == 2
    assert [q["field"] for q in status["quarantined"]] == [f for _, f in reversed(bad)]
    assert CLIENT not in json.dumps(status) and "key-0" not in json.dumps(status)
    # every padded sealed report has one size, whatever its values
    sizes = {
        len(base64.b64decode(seal({"action": a, "reward_hat": v}, pk, size)["sealed"]))
        for a, v in ((0, 0.0), (2, -1.2345678901234567e-300), (1, 1e300))
    }
    assert sizes == {48 + size}


def test_refused_batches_go_to_the_dead_letters_and_do_not_block() -> None:
    """A batch the server refuses (4xx) is retried max_attempts times, then dead-lettered; the next
    batch is forwarded; an operator can requeue it."""
    server, store = FakeServer(), ShufflerStore(":memory:")
    with make(server, store, min_batch=2, max_attempts=3) as client:
        server.refuse = 422
        for i in range(2):
            post(client, i)
        for _ in range(3):
            drain(client)
        status = client.get("/v1/status", headers={"Authorization": f"Bearer {ADMIN}"}).json()
        assert status["outbox"] == 0 and status["batches_dead"] == 1
        dead = status["dead_letters"]
        assert len(dead) == 1 and dead[0]["attempts"] == 3 and "422" in dead[0]["reason"]
        server.refuse = None
        for i in range(2, 4):
            post(client, i)
        drain(client)
        assert len(server.bodies) == 1  # the next batch went through
        assert (
            client.post(
                "/v1/admin/requeue",
                json={"batch_id": dead[0]["batch_id"]},
                headers={"Authorization": f"Bearer {CLIENT}"},
            ).status_code
            == 403
        )
        res = client.post(
            "/v1/admin/requeue",
            json={"batch_id": dead[0]["batch_id"], "x": 1},
            headers={"Authorization": f"Bearer {ADMIN}"},
        )
        assert res.status_code == 422 and res.json()["error"]["field"] == "x"
        res = client.post(
            "/v1/admin/requeue",
            json={"batch_id": dead[0]["batch_id"]},
            headers={"Authorization": f"Bearer {ADMIN}"},
        )
        assert res.status_code == 200
        drain(client)
        assert len(server.bodies) == 2 and store.dead_letters() == []
        assert json.loads(server.bodies[1])["batch_id"] == dead[0]["batch_id"]


def test_an_unreachable_server_is_retried_without_dead_lettering() -> None:
    server, store = FakeServer(), ShufflerStore(":memory:")
    with make(server, store, min_batch=2, max_attempts=1) as client:
        server.fail = True  # 503: the server is down, the batch is not at fault
        for i in range(2):
            post(client, i)
        for _ in range(3):
            with pytest.raises(httpx.HTTPStatusError):
                drain(client)
        assert len(store.outbox()) == 1 and store.dead_letters() == []
        server.fail = False
        drain(client)
        assert len(server.bodies) == 1


def test_the_servers_quarantine_counts_reach_the_shuffler_status() -> None:
    server, store = FakeServer(), ShufflerStore(":memory:")
    server.answer = {"applied": 2, "quarantined": 1, "filled": 1}
    with make(server, store, min_batch=3) as client:
        for i in range(3):
            post(client, i)
        drain(client)
        status = client.get("/v1/status", headers={"Authorization": f"Bearer {ADMIN}"}).json()
    assert status["server_quarantined"] == 1 and status["server_filled"] == 1


# -- state scoped by token: two tokens that collide on every other field -------------------------
def test_the_same_idempotency_key_from_two_tokens_is_two_reports() -> None:
    server, store = FakeServer(), ShufflerStore(":memory:")
    with make(server, store, min_batch=10) as client:
        a = post(client, 1, report={"value": 1}, token=CLIENT)
        b = post(
            client, 1, report={"value": 1}, token=CLIENT_B
        )  # same key, same body, other device
        assert a.status_code == b.status_code == 202
        assert a.json()["duplicate"] is False and b.json()["duplicate"] is False
        assert store.pending() == 2
        assert post(client, 1, report={"value": 1}, token=CLIENT_B).json()["duplicate"] is True
        assert store.pending() == 2


def test_report_budgets_are_per_token() -> None:
    server, store = FakeServer(), ShufflerStore(":memory:")
    server.extra = {"guarantee": {"epsilon": 0.5}}
    with make(server, store, min_batch=10) as client:
        assert post(client, 1, token=CLIENT).status_code == 202
        assert post(client, 2, token=CLIENT).status_code == 429  # CLIENT's one report is spent
        assert (
            post(client, 2, token=CLIENT_B).status_code == 202
        )  # same key and body: CLIENT_B's own budget
        assert post(client, 3, token=CLIENT_B).status_code == 429
        assert store.pending() == 2


def test_assignments_are_distinct_slots_across_tokens() -> None:
    """Two tokens asking at once get two different slots of the schedule (never one slot twice)."""
    server, store = FakeServer(), ShufflerStore(":memory:")
    server.extra = {
        "public": {
            "counts": {"dtype": "int64", "shape": [1, 3], "data": [[1, 1, 0]]},
            "committed": {"dtype": "int64", "shape": [1], "data": [-1]},
        }
    }
    with make(server, store, min_batch=2) as client:
        got = sorted(
            int(
                client.get("/v1/assignment", headers={"Authorization": f"Bearer {t}"}).json()[
                    "public"
                ]["action"]["data"][0]
            )
            for t in (CLIENT, CLIENT_B)
        )
        assert got == [0, 1]
        assert (
            client.get("/v1/assignment", headers={"Authorization": f"Bearer {ADMIN}"}).status_code
            == 409
        )
