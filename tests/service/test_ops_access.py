"""Operations: status, metrics, history and the dashboard's data behind an operator token (a public
health check without details), simulated rewards only in a simulation, token expiry and rotation
(admin call and SIGHUP), rate limits for requests without a token and on the shuffler, what the
status shows, and a shuffler that never repeats what the server found inside a sealed report."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from privbandits.core.errors import ConfigError
from privbandits.service.auth import load_tokens, parse_tokens
from privbandits.service.config import parse_service_config
from privbandits.service.device.client import DeviceClient
from privbandits.service.server.app import create_app
from privbandits.service.server.store import open_store
from privbandits.service.shuffler.store import ShufflerStore
from tests.service.conftest import (
    ADMIN,
    CLIENT,
    SHUFFLER,
    auth,
    make_client,
    service_raw,
)

OPERATOR = "operator-secret-000"
NEW_CLIENT = "client-secret-rotated"


def _tokens_text(*extra: tuple[str, str, str, str]) -> str:
    rows = [
        ("dev-0", "client", CLIENT, ""),
        ("ops", "admin", ADMIN, ""),
        ("watch", "operator", OPERATOR, ""),
        ("shuf", "shuffler", SHUFFLER, ""),
        *extra,
    ]
    return "\n".join(
        f'[[tokens]]\nname = "{n}"\nrole = "{r}"\ntoken = "{t}"\n{x}\n' for n, r, t, x in rows
    )


def _app(tmp_path: Path, text: str | None = None, **service: Any) -> Any:
    path = tmp_path / "tokens.toml"
    path.write_text(text or _tokens_text())
    raw = service_raw("ldp-sgd", horizon=50, **service)
    from fastapi.testclient import TestClient

    return TestClient(
        create_app(parse_service_config(raw), open_store(":memory:"), load_tokens(path))
    )


def _report(tc: Any, secret: str, key: str, send_as: str | None = None) -> httpx.Response:
    dev = DeviceClient(
        "http://testserver",
        secret,
        http=tc,
        rng_policy=np.random.default_rng(1),
        rng_client=np.random.default_rng(2),
    )
    model = dev.fetch_model()
    X = np.eye(4, 3) * 0.5
    body = dev.privatize(X, dev.choose(X, model), 0.5, model)
    h = {**auth(send_as or secret), "Idempotency-Key": key}
    return tc.post("/v1/reports", json=body, headers=h)  # type: ignore[no-any-return]


def test_views_need_an_operator_token_and_health_is_public(tmp_path: Path) -> None:
    with _app(tmp_path) as tc:
        for path in ("/v1/status", "/metrics", "/v1/history"):
            assert tc.get(path).status_code == 401, path
            assert tc.get(path, headers=auth(CLIENT)).status_code == 403, path
            assert tc.get(path, headers=auth(SHUFFLER)).status_code == 403, path
            assert tc.get(path, headers=auth(OPERATOR)).status_code == 200, path
            assert tc.get(path, headers=auth(ADMIN)).status_code == 200, path
        health = tc.get("/v1/health")
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        # an operator token reads, it does not act
        assert tc.get("/v1/model", headers=auth(OPERATOR)).status_code == 403
        assert tc.get("/v1/admin/export", headers=auth(OPERATOR)).status_code == 403
        assert _report(tc, CLIENT, "k", send_as=OPERATOR).status_code == 403
        assert "privbandits_requests" in tc.get("/metrics", headers=auth(OPERATOR)).text


def test_simulated_rewards_only_in_a_simulation() -> None:
    body = {"rewards": [99.0] * 100}
    with make_client(service_raw("ldp-sgd", horizon=30)) as tc:
        res = tc.post("/v1/simulation/rewards", json=body, headers=auth(CLIENT))
        assert res.status_code == 404 and "not a simulation" in res.json()["error"]["message"]
        status = tc.get("/v1/status", headers=auth(ADMIN)).json()
        assert status["simulated_rewards"]["count"] == 0 and status["simulation"] is False
    with make_client(service_raw("ldp-sgd", horizon=30, simulation=True)) as tc:
        res = tc.post("/v1/simulation/rewards", json=body, headers=auth(CLIENT))
        assert res.status_code == 200
        assert tc.get("/v1/status", headers=auth(ADMIN)).json()["simulated_rewards"]["count"] == 100
    with pytest.raises(ConfigError, match="simulation"):
        parse_service_config(service_raw("ldp-sgd", simulation="yes"))


def test_token_expiry(tmp_path: Path) -> None:
    text = _tokens_text(
        ("old", "client", "client-secret-expired", "expires = 2020-01-01T00:00:00Z"),
        ("later", "client", "client-secret-later00", 'expires = "2999-01-01T00:00:00+00:00"'),
    )
    with _app(tmp_path, text) as tc:
        res = tc.get("/v1/model", headers=auth("client-secret-expired"))
        assert res.status_code == 401 and "expired at 2020-01-01" in res.json()["error"]["message"]
        assert tc.get("/v1/model", headers=auth("client-secret-later00")).status_code == 200
    with pytest.raises(ConfigError, match="expires"):
        parse_tokens({"tokens": [{"role": "client", "token": "x" * 16, "expires": "next tuesday"}]})


def test_rotation_by_the_admin_call(tmp_path: Path) -> None:
    with _app(tmp_path) as tc:
        path = tmp_path / "tokens.toml"
        assert tc.get("/v1/model", headers=auth(NEW_CLIENT)).status_code == 401
        # rotate: the old device token goes, a new one comes
        path.write_text(
            _tokens_text(("dev-new", "client", NEW_CLIENT, "")).replace(
                CLIENT, "client-secret-9999"
            )
        )
        assert tc.post("/v1/admin/tokens/reload", headers=auth(CLIENT)).status_code == 403
        res = tc.post("/v1/admin/tokens/reload", headers=auth(ADMIN))
        assert res.status_code == 200 and res.json()["tokens"] == 5
        assert tc.get("/v1/model", headers=auth(NEW_CLIENT)).status_code == 200
        assert tc.get("/v1/model", headers=auth(CLIENT)).status_code == 401
        path.write_text("[[tokens]]\nrole = 'nobody'\n")  # a broken file changes nothing
        res = tc.post("/v1/admin/tokens/reload", headers=auth(ADMIN))
        assert res.status_code == 422 and "old ones stay" in res.json()["error"]["message"]
        assert tc.get("/v1/model", headers=auth(NEW_CLIENT)).status_code == 200


@pytest.mark.parametrize("which", ["server", "shuffler"])
def test_rotation_on_sighup(tmp_path: Path, which: str) -> None:
    """``SIGHUP`` makes the running app (its event loop in the main thread, as under uvicorn)
    read its tokens file again; the handler is removed when the app stops."""
    if not hasattr(signal, "SIGHUP"):
        pytest.skip("no SIGHUP on this platform")
    import asyncio

    path = tmp_path / "tokens.toml"
    path.write_text(_tokens_text())
    toks = load_tokens(path)
    if which == "server":
        raw = service_raw("ldp-sgd", horizon=50)
        app = create_app(parse_service_config(raw), open_store(":memory:"), toks)
    else:
        from privbandits.service.shuffler.app import ShufflerSettings, create_shuffler_app
        from tests.service.test_shuffler import FakeServer

        settings = ShufflerSettings("http://server", SHUFFLER, toks, poll_seconds=0.05)
        transport = httpx.ASGITransport(app=FakeServer().app)
        app = create_shuffler_app(settings, ShufflerStore(":memory:"), transport=transport)
    new_operator = "operator-secret-rotated"

    async def run() -> list[int]:
        codes = []
        async with app.router.lifespan_context(app):
            http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
            async with http:
                codes.append((await http.get("/v1/status", headers=auth(new_operator))).status_code)
                path.write_text(_tokens_text(("watch-2", "operator", new_operator, "")))
                os.kill(os.getpid(), signal.SIGHUP)
                for _ in range(100):
                    await asyncio.sleep(0.02)
                    if toks.reloads:
                        break
                codes.append((await http.get("/v1/status", headers=auth(new_operator))).status_code)
        return codes

    assert asyncio.run(run()) == [401, 200]
    assert toks.reloads == 1
    assert signal.getsignal(signal.SIGHUP) in (signal.SIG_DFL, None)  # the handler is gone


def test_requests_without_a_token_are_rate_limited_per_address(tmp_path: Path) -> None:
    now = [0.0]
    raw = service_raw("ldp-sgd", horizon=30, anonymous_rate=1.0, anonymous_burst=3)
    with make_client(raw, clock=lambda: now[0]) as tc:
        codes = [tc.get("/v1/model").status_code for _ in range(3)]
        res = tc.get("/v1/status", headers=auth("not-a-token-at-all"))
        assert codes == [401, 401, 401] and res.status_code == 429
        assert int(res.headers["Retry-After"]) >= 1
        assert tc.get("/v1/health").status_code == 429  # public endpoints count too
        assert tc.get("/v1/model", headers=auth(CLIENT)).status_code == 200  # tokens are not
        now[0] += 1.0
        assert tc.get("/v1/health").status_code == 200


def test_status_shows_refusals_latency_budget_database_and_history(tmp_path: Path) -> None:
    raw = service_raw("ldp-sgd", horizon=30)
    raw["service"]["device_epsilon"] = 3.0  # three reports per device at epsilon 1
    with make_client(raw, db=tmp_path / "s.db") as tc:
        for i in range(2):
            assert _report(tc, CLIENT, f"r{i}").status_code == 200
        tc.post(
            "/v1/reports", content=b"{}", headers={**auth(CLIENT), "Content-Type": "text/plain"}
        )
        tc.post(
            "/v1/reports",
            content=b"[" * 100,
            headers={**auth(CLIENT), "Content-Type": "application/json"},
        )
        tc.get("/v1/model", headers=auth("wrong-token-0000"))
        s = tc.get("/v1/status", headers=auth(ADMIN)).json()
        assert s["refused"]["content_type"] == 1 and s["refused"]["body"] == 1
        assert s["refused"]["auth"] == 1
        lat = s["latency_ms"]
        assert lat["n"] >= 2 and 0 < lat["p50"] <= lat["p95"] <= lat["p99"]
        assert s["database_health"] == {"ok": True, "problem": None}
        eps = s["guarantee"]["epsilon"]
        per_device = int(3.0 / eps * (1 + 1e-12))
        dev = next(d for d in s["budget"]["by_device"] if d["device"] == "client-0")
        assert dev == {"device": "client-0", "spent": 2, "remaining": per_device - 2}
        assert s["budget"]["spent"] == 2
        hist = tc.get("/v1/history", headers=auth(ADMIN)).json()["points"]
        assert [p[1] for p in hist] == [1, 2]  # reports received after each stored update
    # the history is read from the database: a restarted server shows it at once
    with make_client(raw, db=tmp_path / "s.db") as tc:
        assert len(tc.get("/v1/history", headers=auth(ADMIN)).json()["points"]) == 2


def _shuffler(**kw: Any) -> Any:
    from tests.service.test_shuffler import FakeServer, make

    server, store = FakeServer(batch_size=2), ShufflerStore(":memory:")
    return server, store, make(server, store, min_batch=2, **kw)


def test_shuffler_views_need_a_token_and_it_is_rate_limited() -> None:
    from tests.service.test_shuffler import ADMIN as S_ADMIN
    from tests.service.test_shuffler import CLIENT as S_CLIENT
    from tests.service.test_shuffler import post

    _, _, client = _shuffler(rate=2.0, burst=2, anonymous_rate=1.0, anonymous_burst=2)
    with client:
        for path in ("/v1/status", "/metrics"):
            assert client.get(path, headers=auth(S_CLIENT)).status_code == 403
            assert client.get(path, headers=auth(S_ADMIN)).status_code == 200
        assert client.get("/v1/health").json() == {"status": "ok"}  # 1 of the 2 anonymous
        assert client.get("/v1/status").status_code == 401  # 2 of 2
        res = client.get("/v1/status")
        assert res.status_code == 429 and int(res.headers["Retry-After"]) >= 1
        codes = [post(client, i).status_code for i in range(3)]  # rate 2/s, burst 2 per token
        assert codes[:2] == [202, 202] and codes[2] == 429


def test_shuffler_never_repeats_what_the_server_says_about_a_report(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The server's refusal can quote what it found inside an opened (sealed) report; the
    shuffler keeps only the status code (status page, dead letters, log)."""
    from tests.service.test_shuffler import ADMIN as S_ADMIN
    from tests.service.test_shuffler import drain, post

    secret = "reports[1].inside_the_sealed_report_x9"
    server, store, client = _shuffler(max_attempts=1)
    with caplog.at_level(logging.DEBUG, logger="privbandits"), client:
        app = server.app
        route = next(r for r in app.routes if getattr(r, "path", "") == "/v1/batches")
        app.routes.remove(route)

        @app.post("/v1/batches")
        async def refuse() -> Any:
            from fastapi.responses import JSONResponse

            return JSONResponse(
                {"error": {"status": 422, "field": secret, "message": f"{secret}: bad"}},
                status_code=422,
            )

        for i in range(2):
            assert post(client, i).status_code == 202
        drain(client)
        status = client.get("/v1/status", headers=auth(S_ADMIN)).text
    assert "HTTP 422" in status and store.dead_letters()
    assert secret not in status and "inside_the_sealed" not in status
    assert all(secret not in r.getMessage() for r in caplog.records)
