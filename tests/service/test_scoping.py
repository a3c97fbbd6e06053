"""Strict requests and per-token state on the server (SQLite and PostgreSQL).

* A field the service would not read, anywhere in a request (top level, inside a report, beside a
  sealed box), is refused with 422 naming it: a report body with ``"epsilon": 100`` or raw
  ``"contexts"`` is not silently accepted.
* Every per-device structure is scoped by the token: two tokens that collide on every other field
  (the same idempotency key and body, the same budget, the same rate, the same curator key) keep
  separate state.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.service.conftest import ADMIN, CLIENT, CLIENT2, SHUFFLER, auth, make_client, service_raw
from tests.service.test_bad_input import _valid

H = {"Content-Type": "application/json"}


def _req(tc: Any, path: str, body: Any, secret: str, key: str | None = None) -> Any:
    headers = {**auth(secret), **({"Idempotency-Key": key} if key else {})}
    return tc.post(path, json=body, headers=headers)


def _refused(resp: Any, field: str) -> None:
    assert resp.status_code == 422, resp.text
    err = resp.json()["error"]
    assert err["field"] == field and "unknown field" in err["message"], err


def test_unknown_fields_are_refused_on_every_local_endpoint(db_url: str) -> None:
    with make_client(service_raw("ldp-sgd", horizon=50, simulation=True), db_url) as tc:
        good = _valid(tc)
        for i, (body, field) in enumerate(
            [
                ({**good, "epsilon": 100}, "epsilon"),
                ({**good, "contexts": [[0.1, 0.2, 0.3]] * 4}, "contexts"),
                ({**good, "reward": 0.5}, "reward"),
                ({**good, "report": {**good["report"], "epsilon": 100}}, "report.epsilon"),
                ({**good, "report": {**good["report"], "contexts": [0.0]}}, "report.contexts"),
            ]
        ):
            _refused(_req(tc, "/v1/reports", body, CLIENT, f"u{i}"), field)
        _refused(
            _req(tc, "/v1/simulation/rewards", {"rewards": [0.5], "user": "u7"}, CLIENT), "user"
        )
        _refused(_req(tc, "/v1/admin/reset", {"confirm": True, "force": True}, ADMIN), "force")
        status = tc.get("/v1/status", headers=auth(ADMIN)).json()
        assert status["reports_received"] == 0 and status["simulated_rewards"]["count"] == 0
        assert _req(tc, "/v1/reports", good, CLIENT, "ok").status_code == 200


def test_unknown_fields_are_refused_on_the_curator_endpoints(db_url: str) -> None:
    with make_client(service_raw("linucb", horizon=10), db_url) as tc:
        X = [[0.5, 0.0, 0.0]] * 4
        _refused(_req(tc, "/v1/actions", {"contexts": X, "reward": 1.0}, CLIENT, "s0"), "reward")
        ok = _req(tc, "/v1/actions", {"contexts": X}, CLIENT, "s1").json()
        body = {"model_version": 0, "ticket": ok["ticket"], "reward": 1.0}
        _refused(_req(tc, "/v1/reports", {**body, "contexts": X}, CLIENT, "r0"), "contexts")
        _refused(_req(tc, "/v1/reports", {**body, "epsilon": 100}, CLIENT, "r1"), "epsilon")
        assert _req(tc, "/v1/reports", body, CLIENT, "r2").status_code == 200


def test_unknown_fields_are_refused_on_the_batch_endpoint(db_url: str) -> None:
    raw = service_raw(
        "hanna-shuffle",
        horizon=6000,
        seed=2,
        params={"epsilon": 1.0, "delta": 1e-4},
        env={
            "kind": "finite",
            "d": 2,
            "K": 10,
            "actions": "circle",
            "theta": "sphere",
            "noise": "rademacher",
        },
        max_staleness=0,
    )
    with make_client(raw, db_url) as tc:
        model = tc.get("/v1/model", headers=auth(SHUFFLER)).json()
        counts = np.asarray(model["public"]["counts"]["data"]).reshape(-1)
        reports = [{"action": a, "reward_hat": 0.1} for a, c in enumerate(counts) for _ in range(c)]
        body = {"batch_id": "b0", "model_version": 0, "reports": reports}
        for extra, field in (
            ({"n_users": 4}, "n_users"),
            ({"idempotency_key": "k"}, "idempotency_key"),
        ):
            _refused(_req(tc, "/v1/batches", {**body, **extra}, SHUFFLER), field)
        # inside a batch an unknown field is the report's own fault: that report is quarantined
        poisoned = [{**reports[0], "contexts": [1.0, 0.0]}, *reports[1:]]
        ans = _req(tc, "/v1/batches", {**body, "reports": poisoned}, SHUFFLER).json()
        assert ans["quarantined"] == 1
        q = tc.get("/v1/admin/export", headers=auth(ADMIN)).json()["quarantine"]
        assert [x["field"] for x in q] == ["reports[0].contexts"] and "unknown field" in q[0][
            "message"
        ]


# -- two tokens that collide on every other field -------------------------------------------------
def test_the_same_idempotency_key_from_two_tokens_stores_two_reports(db_url: str) -> None:
    """Each token gets its own answer for the same key and body; neither replaces the other."""
    with make_client(service_raw("ldp-sgd", horizon=50), db_url) as tc:
        body = _valid(tc)
        a = _req(tc, "/v1/reports", body, CLIENT, "same-key")
        b = _req(tc, "/v1/reports", body, CLIENT2, "same-key")
        assert a.status_code == b.status_code == 200
        assert a.headers["Idempotency-Replayed"] == b.headers["Idempotency-Replayed"] == "false"
        assert a.json()["seq"] == 1 and b.json()["seq"] == 2 and b.json()["model_version"] == 2
        again = _req(
            tc, "/v1/reports", body, CLIENT2, "same-key"
        )  # each token's retry gets its own answer
        assert again.json() == b.json() and again.headers["Idempotency-Replayed"] == "true"
        assert _req(tc, "/v1/reports", body, CLIENT, "same-key").json() == a.json()
        events = tc.get("/v1/admin/export", headers=auth(ADMIN)).json()["events"]
        assert [(e["token"], e["idempotency_key"]) for e in events] == [
            ("client-0", "same-key"),
            ("client-1", "same-key"),
        ]
        assert tc.get("/v1/status", headers=auth(ADMIN)).json()["reports_received"] == 2


def test_report_budgets_are_per_token(db_url: str) -> None:
    raw = service_raw("ldp-sgd", horizon=50)
    raw["service"].pop("device_epsilon")  # one report per device
    with make_client(raw, db_url) as tc:
        body = _valid(tc)
        assert _req(tc, "/v1/reports", body, CLIENT, "k1").status_code == 200
        assert _req(tc, "/v1/reports", body, CLIENT, "k2").status_code == 429
        assert (
            _req(tc, "/v1/reports", body, CLIENT2, "k2").status_code == 200
        )  # same key and body, own budget
        assert _req(tc, "/v1/reports", body, CLIENT2, "k3").status_code == 429
    with make_client(
        raw, db_url
    ) as tc:  # the spent budgets are rebuilt per token from the database
        assert _req(tc, "/v1/reports", body, CLIENT, "k4").status_code == 429
        assert _req(tc, "/v1/reports", body, CLIENT2, "k4").status_code == 429


def test_rate_limits_are_per_token() -> None:
    now = [0.0]
    with make_client(
        service_raw("ldp-sgd", horizon=50, rate=1.0, burst=1), clock=lambda: now[0]
    ) as tc:
        assert tc.get("/v1/model", headers=auth(CLIENT)).status_code == 200
        assert tc.get("/v1/model", headers=auth(CLIENT)).status_code == 429
        assert (
            tc.get("/v1/model", headers=auth(CLIENT2)).status_code == 200
        )  # same instant, other token
        assert tc.get("/v1/model", headers=auth(CLIENT2)).status_code == 429


def test_curator_tickets_belong_to_the_token_that_asked(db_url: str) -> None:
    """The same key from two tokens gives two tickets; a token cannot report for another's ticket."""
    with make_client(service_raw("linucb", horizon=10), db_url) as tc:
        X = {"contexts": [[0.5, 0.0, 0.0]] * 4}
        a = _req(tc, "/v1/actions", X, CLIENT, "same").json()
        b = _req(tc, "/v1/actions", X, CLIENT2, "same").json()
        assert a["ticket"] != b["ticket"] and a["seq"] == 1 and b["seq"] == 2
        steal = _req(
            tc,
            "/v1/reports",
            {"model_version": 0, "ticket": a["ticket"], "reward": 9.0},
            CLIENT2,
            "r",
        )
        assert steal.status_code == 409 and steal.json()["error"]["field"] == "ticket"
        assert tc.get("/v1/status", headers=auth(ADMIN)).json()["reports_received"] == 0
        own = _req(
            tc,
            "/v1/reports",
            {"model_version": 0, "ticket": a["ticket"], "reward": 1.0},
            CLIENT,
            "r",
        )
        assert own.status_code == 200  # the same key "r" as CLIENT2's refused request: no clash
    with make_client(
        service_raw("linucb", horizon=10), db_url
    ) as tc:  # ownership survives a restart
        steal = _req(
            tc,
            "/v1/reports",
            {"model_version": 0, "ticket": b["ticket"], "reward": 9.0},
            CLIENT,
            "r2",
        )
        assert steal.status_code == 409
        ok = _req(
            tc,
            "/v1/reports",
            {"model_version": 0, "ticket": b["ticket"], "reward": 1.0},
            CLIENT2,
            "r2",
        )
        assert ok.status_code == 200


@pytest.mark.parametrize("secret", [CLIENT, CLIENT2])
def test_tokens_do_not_see_each_others_replays(secret: str) -> None:
    """A retried key of one token is never answered with another token's stored answer."""
    with make_client(service_raw("ldp-sgd", horizon=50)) as tc:
        other = CLIENT2 if secret == CLIENT else CLIENT
        first = _req(tc, "/v1/reports", _valid(tc, other), other, "k").json()
        mine = _req(tc, "/v1/reports", _valid(tc, secret), secret, "k")
        assert (
            mine.headers["Idempotency-Replayed"] == "false" and mine.json()["seq"] != first["seq"]
        )
