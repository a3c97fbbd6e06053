"""Bad requests get a 4xx naming the problem, change nothing, and the server keeps serving."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from privbandits.service.device.client import DeviceClient
from tests.service.conftest import ADMIN, CLIENT, CLIENT2, SHUFFLER, auth, make_client, service_raw

D = 3


def _valid(tc: Any, secret: str = CLIENT) -> dict[str, Any]:
    dev = DeviceClient(
        "http://testserver",
        secret,
        http=tc,
        rng_policy=np.random.default_rng(1),
        rng_client=np.random.default_rng(2),
    )
    model = dev.fetch_model()
    X = np.random.default_rng(0).normal(size=(4, D))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    a = dev.choose(X, model)
    return dev.privatize(X, a, 0.5, model)


def _state(tc: Any) -> tuple[int, str]:
    exp = tc.get("/v1/admin/export", headers=auth(ADMIN)).json()
    return len(exp["events"]), exp["digest"]


@pytest.fixture
def sgd() -> Any:
    with make_client(service_raw("ldp-sgd", horizon=50)) as tc:
        yield tc


def _post(
    tc: Any,
    body: Any,
    key: str = "k1",
    secret: str | None = CLIENT,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    h = {"Idempotency-Key": key, "Content-Type": "application/json", **(headers or {})}
    if secret is not None:
        h.update(auth(secret))
    content = raw if raw is not None else json.dumps(body).encode()
    return tc.post("/v1/reports", content=content, headers=h)


def _bad_cases(good: dict[str, Any]) -> list[tuple[str, Any, int, str, str]]:
    """(case, body, status, field, message fragment)."""
    z = good["report"]["z"]
    norm = math.sqrt(sum(v * v for v in z))
    v = good["model_version"]
    return [
        (
            "wrong shape",
            {"model_version": v, "report": {"z": z[:2]}},
            422,
            "report.z",
            "shape [2], expected [3]",
        ),
        (
            "nested shape",
            {"model_version": v, "report": {"z": [z]}},
            422,
            "report.z",
            "expected [3]",
        ),
        (
            "strings",
            {"model_version": v, "report": {"z": ["a", "b", "c"]}},
            422,
            "report.z",
            "numbers",
        ),
        (
            "booleans",
            {"model_version": v, "report": {"z": [True, False, True]}},
            422,
            "report.z",
            "numbers",
        ),
        ("missing field", {"model_version": v, "report": {}}, 422, "report.z", "missing"),
        (
            "unknown field",
            {"model_version": v, "report": {"z": z, "x": [1.0]}},
            422,
            "report.x",
            "unknown field",
        ),
        ("raw context", {"model_version": v, "report": z}, 422, "report", "must be an object"),
        (
            "norm",
            {"model_version": v, "report": {"z": [c * 2 for c in z]}},
            422,
            "report.z",
            f"{2 * norm:.4g}",
        ),
        (
            "version type",
            {"model_version": "0", "report": {"z": z}},
            422,
            "model_version",
            "integer",
        ),
        (
            "future version",
            {"model_version": v + 5, "report": {"z": z}},
            409,
            "model_version",
            "newer",
        ),
    ]


def test_each_bad_report_is_refused_with_its_field_and_changes_nothing(sgd: Any) -> None:
    good = _valid(sgd)
    before = _state(sgd)
    for i, (case, body, status, field, fragment) in enumerate(_bad_cases(good)):
        resp = _post(sgd, body, key=f"bad-{i}")
        assert resp.status_code == status, (case, resp.text)
        err = resp.json()["error"]
        assert err["field"] == field, case
        assert fragment in err["message"], (case, err["message"])
    assert _state(sgd) == before
    ok = _post(sgd, good, key="good")
    assert ok.status_code == 200 and ok.json()["model_version"] == 1


def test_published_json_schema_describes_the_report(sgd: Any) -> None:
    schema = sgd.get("/v1/model", headers=auth(CLIENT)).json()["report"]["json_schema"]
    assert schema["required"] == ["z"] and schema["additionalProperties"] is False
    assert schema["properties"]["z"] == {
        "type": "array",
        "items": {"type": "number"},
        "minItems": D,
        "maxItems": D,
    }
    assert set(_valid(sgd)["report"]) == set(schema["properties"])


def test_nan_and_infinity_are_refused(sgd: Any) -> None:
    good = _valid(sgd)
    before = _state(sgd)
    for i, lit in enumerate(("NaN", "Infinity", "-Infinity")):
        raw = ('{"model_version": 0, "report": {"z": [' + lit + ", 0.0, 0.0]}}").encode()
        resp = _post(sgd, None, key=f"nf-{i}", raw=raw)
        assert resp.status_code == 422
        assert resp.json()["error"]["field"] == "report.z"
        assert "NaN or infinite" in resp.json()["error"]["message"]
    assert _state(sgd) == before
    assert _post(sgd, good, key="good").status_code == 200


def test_malformed_json_huge_bodies_and_non_objects(sgd: Any) -> None:
    before = _state(sgd)
    resp = _post(sgd, None, raw=b'{"model_version": 0, "report": {"z": [1,')
    assert resp.status_code == 400 and "malformed JSON" in resp.json()["error"]["message"]
    resp = _post(sgd, None, raw=b"[1, 2, 3]", key="k2")
    assert resp.status_code == 422 and resp.json()["error"]["field"] == "body"
    huge = b'{"model_version": 0, "pad": "' + b"x" * (2 << 20) + b'"}'
    resp = _post(sgd, None, raw=huge, key="k3")
    assert (
        resp.status_code == 413
        and "exceeds the limit of 1048576 bytes" in resp.json()["error"]["message"]
    )
    assert _state(sgd) == before
    assert _post(sgd, _valid(sgd), key="good").status_code == 200


def test_tokens_missing_wrong_and_wrong_role(sgd: Any) -> None:
    good = _valid(sgd)
    before = _state(sgd)
    resp = _post(sgd, good, secret=None)
    assert resp.status_code == 401 and "missing token" in resp.json()["error"]["message"]
    resp = _post(sgd, good, secret="not-a-token-at-all")
    assert resp.status_code == 401 and resp.json()["error"]["message"] == "unknown token"
    resp = _post(sgd, good, headers={"Authorization": "Basic abc"}, secret=None)
    assert resp.status_code == 401 and "Bearer" in resp.json()["error"]["message"]
    resp = _post(sgd, good, secret=SHUFFLER)
    assert resp.status_code == 403 and "needs 'client'" in resp.json()["error"]["message"]
    assert sgd.get("/v1/model").status_code == 401
    assert sgd.get("/v1/admin/export", headers=auth(CLIENT)).status_code == 403
    assert (
        sgd.post("/v1/admin/reset", json={"confirm": True}, headers=auth(CLIENT2)).status_code
        == 403
    )
    assert _state(sgd) == before
    assert _post(sgd, good, key="good").status_code == 200


def test_stale_versions_are_refused_beyond_max_staleness() -> None:
    with make_client(service_raw("ldp-sgd", horizon=50, max_staleness=2)) as tc:
        old = _valid(tc)
        for i in range(3):
            assert _post(tc, _valid(tc), key=f"r{i}").status_code == 200
        before = _state(tc)
        resp = _post(tc, old, key="old")
        assert resp.status_code == 409
        err = resp.json()["error"]
        assert (
            err["field"] == "model_version"
            and "stale" in err["message"]
            and "at most 2" in err["message"]
        )
        assert _state(tc) == before


def test_retried_report_is_counted_once_and_a_reused_key_is_refused(sgd: Any) -> None:
    good = _valid(sgd)
    first = _post(sgd, good, key="same")
    again = _post(sgd, good, key="same")
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert again.headers["Idempotency-Replayed"] == "true"
    assert sgd.get("/v1/status", headers=auth(ADMIN)).json()["reports_received"] == 1
    other = _valid(sgd)
    resp = _post(sgd, other, key="same")
    assert resp.status_code == 409 and resp.json()["error"]["field"] == "Idempotency-Key"
    assert sgd.get("/v1/status", headers=auth(ADMIN)).json()["reports_received"] == 1
    resp = tc_post_without_key(sgd, other)
    assert resp.status_code == 422 and resp.json()["error"]["field"] == "Idempotency-Key"


def tc_post_without_key(tc: Any, body: dict[str, Any]) -> Any:
    return tc.post("/v1/reports", json=body, headers=auth(CLIENT))


def test_out_of_range_gaussian_report_and_asymmetric_matrix_are_refused() -> None:
    with make_client(service_raw("ldp-ols", horizon=50)) as tc:
        good = _valid(tc)
        model = tc.get("/v1/model", headers=auth(CLIENT)).json()
        bound = model["report"]["output_range"]["M"]["bound"]
        M = np.array(good["report"]["M"])
        big = M.copy()
        big[0, 0] = 2 * bound
        resp = _post(tc, {**good, "report": {**good["report"], "M": big.tolist()}}, key="big")
        assert resp.status_code == 422 and resp.json()["error"]["field"] == "report.M"
        assert "outside the mechanism's output range" in resp.json()["error"]["message"]
        asym = M.copy()
        asym[0, 1] += 1.0
        resp = _post(tc, {**good, "report": {**good["report"], "M": asym.tolist()}}, key="asym")
        assert resp.status_code == 422 and "symmetric" in resp.json()["error"]["message"]
        assert tc.get("/v1/status", headers=auth(ADMIN)).json()["reports_received"] == 0
        assert _post(tc, good, key="good").status_code == 200


def test_device_budget_and_rate_limit_refuse_with_the_reason() -> None:
    raw = service_raw("ldp-sgd", horizon=50)
    raw["service"].pop("device_epsilon")
    with make_client(raw) as tc:
        assert _post(tc, _valid(tc), key="a").status_code == 200
        resp = _post(tc, _valid(tc), key="b")
        assert resp.status_code == 429
        msg = resp.json()["error"]["message"]
        assert "report budget of device 'client-0' exhausted" in msg and "allows 1 report" in msg
        assert _post(tc, _valid(tc, CLIENT2), key="c", secret=CLIENT2).status_code == 200
    now = [0.0]
    raw = service_raw("ldp-sgd", horizon=50, rate=2.0, burst=2)
    with make_client(raw, clock=lambda: now[0]) as tc:
        codes = [tc.get("/v1/model", headers=auth(CLIENT)).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        resp = tc.get("/v1/model", headers=auth(CLIENT))
        assert (
            "rate limit of token 'client-0' exceeded (2 requests/s, burst 2)"
            in resp.json()["error"]["message"]
        )
        assert int(resp.headers["Retry-After"]) >= 1
        now[0] += 1.0
        assert tc.get("/v1/model", headers=auth(CLIENT)).status_code == 200


def test_horizon_is_enforced() -> None:
    with make_client(service_raw("ldp-sgd", horizon=2)) as tc:
        assert _post(tc, _valid(tc), key="a").status_code == 200
        assert _post(tc, _valid(tc), key="b").status_code == 200
        resp = _post(tc, _valid(tc), key="c")
        assert (
            resp.status_code == 409
            and "horizon T=2 is exhausted" in resp.json()["error"]["message"]
        )


def test_curator_endpoints_refuse_in_the_local_model_and_vice_versa(sgd: Any) -> None:
    resp = sgd.post(
        "/v1/actions",
        json={"contexts": [[0.0] * D] * 4},
        headers={**auth(CLIENT), "Idempotency-Key": "x"},
    )
    assert (
        resp.status_code == 409 and "no raw context is accepted" in resp.json()["error"]["message"]
    )
    with make_client(service_raw("linucb", horizon=10)) as tc:
        h = {**auth(CLIENT), "Idempotency-Key": "s1"}
        bad = tc.post("/v1/actions", json={"contexts": [[2.0, 0.0, 0.0]] * 4}, headers=h)
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "contexts"
        resp = tc.post(
            "/v1/reports",
            json={"model_version": 0, "ticket": "nope", "reward": 1.0},
            headers={**auth(CLIENT), "Idempotency-Key": "r1"},
        )
        assert resp.status_code == 409 and resp.json()["error"]["field"] == "ticket"
        ok = tc.post("/v1/actions", json={"contexts": [[0.5, 0.0, 0.0]] * 4}, headers=h).json()
        raw = (
            '{"model_version": 0, "ticket": "' + ok["ticket"] + '", "reward": Infinity}'
        ).encode()
        resp = tc.post(
            "/v1/reports",
            content=raw,
            headers={**auth(CLIENT), "Idempotency-Key": "r2", "Content-Type": "application/json"},
        )
        assert resp.status_code == 422 and resp.json()["error"]["field"] == "reward"
        assert "finite" in resp.json()["error"]["message"]
        assert tc.get("/v1/status", headers=auth(ADMIN)).json()["reports_received"] == 0
