"""A junk-request corpus against the server and the shuffler: every case is a 4xx naming the
problem (never a 5xx), nothing is stored, and a valid request still passes afterwards.

Each case is ``(id, build, status, field)``: ``build(good)`` turns a valid request of the target
(headers, JSON body) into the junk one (headers, body bytes, method, path); ``status`` is the
expected code (an int, or a tuple of the acceptable ones); ``field`` is the expected prefix of the
error's ``field`` (or None: not checked).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from privbandits.service import sealing
from privbandits.service.auth import TokenSet
from privbandits.service.config import parse_service_config
from privbandits.service.device.client import DeviceClient
from privbandits.service.reports import ReportFormat
from privbandits.service.server.app import create_app
from privbandits.service.server.store import open_store
from privbandits.service.shuffler.app import (
    MAX_REPORT_BYTES,
    ShufflerSettings,
    create_shuffler_app,
)
from privbandits.service.shuffler.store import ShufflerStore
from tests.service.conftest import ADMIN, CLIENT, CLIENT2, SHUFFLER, auth, service_raw, tokens

#: A request: (method, path, headers, body bytes).
Req = tuple[str, str, dict[str, str], bytes]


def _dump(body: Any) -> bytes:
    return json.dumps(body).encode()


def _with(**fields: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def f(good: dict[str, Any]) -> dict[str, Any]:
        return {**good, **fields}

    return f


def _report(**fields: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def f(good: dict[str, Any]) -> dict[str, Any]:
        return {**good, "report": {**good["report"], **fields}}

    return f


def _drop(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda good: {k: v for k, v in good.items() if k != name}


def body_case(
    mutate: Callable[[dict[str, Any]], Any], headers: dict[str, str] | None = None
) -> Callable[[Req], Req]:
    """A case that changes the JSON body (and optionally headers)."""

    def build(req: Req) -> Req:
        method, path, h, body = req
        return method, path, {**h, **(headers or {})}, _dump(mutate(json.loads(body)))

    return build


def raw_case(
    make: Callable[[bytes], bytes], headers: dict[str, Any] | None = None
) -> Callable[[Req], Req]:
    """A case that sends other bytes (``make(good_bytes)``) and/or other headers (None: removed)."""

    def build(req: Req) -> Req:
        method, path, h, body = req
        h = dict(h)
        for k, v in (headers or {}).items():
            if v is None:
                h.pop(k, None)
            else:
                h[k] = v
        return method, path, h, make(body)

    return build


def route_case(method: str, path: str | None = None) -> Callable[[Req], Req]:
    def build(req: Req) -> Req:
        return method, path or req[1], req[2], req[3]

    return build


SAME = lambda b: b
DEEP = 20_000  # 40 KB: under both size limits, far over the depth limit
J = "application/json"

CASES: list[tuple[str, Callable[[Req], Req], int | tuple[int, ...], str | None]] = [
    # -- content type (415) ------------------------------------------------------------------
    ("no content type", raw_case(SAME, {"Content-Type": None}), 415, "Content-Type"),
    ("text/plain", raw_case(SAME, {"Content-Type": "text/plain"}), 415, "Content-Type"),
    ("form", raw_case(SAME, {"Content-Type": "application/x-www-form-urlencoded"}), 415, None),
    ("multipart", raw_case(SAME, {"Content-Type": "multipart/form-data; boundary=x"}), 415, None),
    ("text/json", raw_case(SAME, {"Content-Type": "text/json"}), 415, "Content-Type"),
    ("application/jsonx", raw_case(SAME, {"Content-Type": "application/jsonx"}), 415, None),
    ("json-seq", raw_case(SAME, {"Content-Type": "application/json-seq"}), 415, None),
    ("empty content type", raw_case(SAME, {"Content-Type": ""}), 415, "Content-Type"),
    ("charset utf-16", raw_case(SAME, {"Content-Type": J + "; charset=utf-16"}), 415, None),
    ("charset latin-1", raw_case(SAME, {"Content-Type": J + "; charset=ISO-8859-1"}), 415, None),
    ("charset junk", raw_case(SAME, {"Content-Type": J + "; charset=\x7f"}), 415, None),
    # -- encoding (400) ----------------------------------------------------------------------
    (
        "UTF-16 body with BOM",
        raw_case(lambda b: b.decode().encode("utf-16")),
        400,
        "body",
    ),
    ("UTF-16-LE body", raw_case(lambda b: b.decode().encode("utf-16-le")), 400, "body"),
    ("UTF-32 body", raw_case(lambda b: b.decode().encode("utf-32")), 400, "body"),
    ("UTF-8 BOM", raw_case(lambda b: b"\xef\xbb\xbf" + b), 400, "body"),
    ("invalid byte 0xff", raw_case(lambda b: b[:-1] + b' , "x": "\xff"}'), 400, "body"),
    ("latin-1 e acute", raw_case(lambda b: b[:-1] + b', "x": "caf\xe9"}'), 400, "body"),
    ("overlong slash", raw_case(lambda b: b[:-1] + b', "x": "\xc0\xaf"}'), 400, "body"),
    ("encoded surrogate", raw_case(lambda b: b[:-1] + b', "x": "\xed\xa0\x80"}'), 400, "body"),
    ("truncated UTF-8", raw_case(lambda b: b[:-1] + b', "x": "\xe2\x82"}'), 400, "body"),
    # -- size (413) --------------------------------------------------------------------------
    ("too large", raw_case(lambda b: b[:-1] + b', "pad": "' + b"x" * (2 << 20) + b'"}'), 413, None),
    ("huge whitespace", raw_case(lambda b: b + b" " * (2 << 20)), 413, "body"),
    # -- nesting (400) -----------------------------------------------------------------------
    ("deep arrays", raw_case(lambda b: b"[" * DEEP + b"]" * DEEP), 400, "body"),
    ("deep objects", raw_case(lambda b: b'{"a":' * 5000 + b"1" + b"}" * 5000), 400, "body"),
    ("deep unclosed", raw_case(lambda b: b"[" * DEEP), 400, "body"),
    ("deep in report", body_case(_report(z=json.loads("[" * 200 + "]" * 200))), 400, "body"),
    ("deep in unknown field", body_case(_with(x=json.loads("[" * 100 + "]" * 100))), 400, "body"),
    ("deep in key name", raw_case(lambda b: b'{"' + b"[" * DEEP + b'": 1}'), 422, None),
    # -- syntax (400) ------------------------------------------------------------------------
    ("empty body", raw_case(lambda b: b""), 400, "body"),
    ("whitespace body", raw_case(lambda b: b"  \n\t "), 400, "body"),
    ("truncated", raw_case(lambda b: b[: len(b) // 2]), 400, "body"),
    ("trailing garbage", raw_case(lambda b: b + b" }"), 400, "body"),
    ("two objects", raw_case(lambda b: b + b), 400, "body"),
    ("single quotes", raw_case(lambda b: b.replace(b'"', b"'")), 400, "body"),
    ("trailing comma", raw_case(lambda b: b[:-1] + b",}"), 400, "body"),
    ("comment", raw_case(lambda b: b"/* hi */" + b), 400, "body"),
    ("unquoted key", raw_case(lambda b: b"{model_version: 0}"), 400, "body"),
    ("raw control char", raw_case(lambda b: b[:-1] + b', "x": "a\x01b"}'), 400, "body"),
    ("bad escape", raw_case(lambda b: b[:-1] + b', "x": "\\q"}'), 400, "body"),
    ("truncated escape", raw_case(lambda b: b[:-1] + b', "x": "\\u12"}'), 400, "body"),
    ("NUL byte", raw_case(lambda b: b + b"\x00"), 400, "body"),
    ("4301-digit integer", raw_case(lambda b: b[:-1] + b', "x": ' + b"9" * 4301 + b"}"), 400, None),
    ("duplicate key", raw_case(lambda b: b[:-1] + b', "model_version": 0}'), 400, "model_version"),
    # -- not an object (422) -----------------------------------------------------------------
    ("array body", raw_case(lambda b: b"[" + b + b"]"), 422, "body"),
    ("string body", raw_case(lambda b: b'"report"'), 422, "body"),
    ("number body", raw_case(lambda b: b"0"), 422, "body"),
    ("null body", raw_case(lambda b: b"null"), 422, "body"),
    ("true body", raw_case(lambda b: b"true"), 422, "body"),
    ("NaN body", raw_case(lambda b: b"NaN"), 422, "body"),
    # -- lone surrogates (422 naming where) --------------------------------------------------
    ("surrogate key", body_case(_with(**{"\ud800": 1})), 422, "\\ud800"),
    ("surrogate key in report", body_case(_report(**{"\udfff": [1]})), 422, "report.\\udfff"),
    ("surrogate value in report", body_case(_report(x="a\ud800")), 422, "report.x"),
    ("surrogate in unknown field", body_case(_with(note="\udc00\ud800")), 422, "note"),
    ("surrogate in list", body_case(_with(extra=["ok", "\ud834"])), 422, "extra[1]"),
    (
        "surrogate idempotency key",
        body_case(_with(idempotency_key="k\ud800"), {"Idempotency-Key": ""}),
        422,
        "idempotency_key",
    ),
    ("NUL in a value", body_case(_report(x="a\x00b")), 422, "report.x"),
    ("NUL in a key", body_case(_with(**{"k\x00": 1})), 422, "k"),
    (
        "NUL in the idempotency key",
        body_case(_with(idempotency_key="k\x00"), {"Idempotency-Key": ""}),
        422,
        "idempotency_key",
    ),
    # -- fields (422 / 409) ------------------------------------------------------------------
    ("unknown field", body_case(_with(extra=1)), 422, "extra"),
    ("unknown field epsilon", body_case(_with(epsilon=100.0)), 422, "epsilon"),
    ("unknown field contexts", body_case(_with(contexts=[[0.0]])), 422, "contexts"),
    ("negative version", body_case(_with(model_version=-1)), 422, "model_version"),
    ("very negative version", body_case(_with(model_version=-(10**9))), 422, "model_version"),
    ("future version", body_case(_with(model_version=1000)), 409, "model_version"),
    ("huge version", body_case(_with(model_version=2**70)), 409, "model_version"),
    ("string version", body_case(_with(model_version="0")), 422, "model_version"),
    ("float version", body_case(_with(model_version=0.5)), 422, "model_version"),
    ("bool version", body_case(_with(model_version=True)), 422, "model_version"),
    ("null version", body_case(_with(model_version=None)), 422, "model_version"),
    (
        "infinite version",
        raw_case(lambda b: b'{"model_version": Infinity, "report": {}}'),
        422,
        None,
    ),
    ("missing version", body_case(_drop("model_version")), 422, "model_version"),
    ("missing report", body_case(_drop("report")), 422, "report"),
    ("null report", body_case(_with(report=None)), 422, "report"),
    ("list report", body_case(_with(report=[1, 2])), 422, "report"),
    ("string report", body_case(_with(report="z")), 422, "report"),
    ("empty report", body_case(_with(report={})), 422, "report"),
    ("unknown report field", body_case(_report(x=[1.0])), 422, "report.x"),
    ("long idempotency key", raw_case(SAME, {"Idempotency-Key": "k" * 201}), 422, None),
    ("empty idempotency key", raw_case(SAME, {"Idempotency-Key": ""}), 422, None),
    # -- authentication (401 / 403) ----------------------------------------------------------
    ("no token", raw_case(SAME, {"Authorization": None}), 401, "Authorization"),
    ("empty bearer", raw_case(SAME, {"Authorization": "Bearer "}), 401, "Authorization"),
    ("basic auth", raw_case(SAME, {"Authorization": "Basic YTpi"}), 401, "Authorization"),
    ("unknown token", raw_case(SAME, {"Authorization": "Bearer nope-nope-nope"}), 401, None),
    (
        "latin-1 token",
        raw_case(SAME, {"Authorization": "Bearer caf\xe9".encode("latin-1")}),
        401,
        None,
    ),
    ("shuffler token", raw_case(SAME, {"Authorization": f"Bearer {SHUFFLER}"}), 403, None),
    # -- routes (404 / 405) ------------------------------------------------------------------
    ("GET reports", route_case("GET"), 405, None),
    ("PUT reports", route_case("PUT"), 405, None),
    ("DELETE reports", route_case("DELETE"), 405, None),
    ("unknown path", route_case("POST", "/v1/reportz"), 404, None),
    ("NUL in path", route_case("POST", "/v1/reports%00"), 404, None),
]


# -- targets -----------------------------------------------------------------------------------
def _server(db: str = ":memory:") -> tuple[TestClient, Req, Callable[[], int]]:
    app = create_app(
        parse_service_config(service_raw("ldp-sgd", horizon=50)), open_store(db), tokens()
    )
    tc = TestClient(app)
    dev = DeviceClient(
        "http://testserver",
        CLIENT,
        http=tc,
        rng_policy=np.random.default_rng(1),
        rng_client=np.random.default_rng(2),
    )
    model = dev.fetch_model()
    X = np.random.default_rng(0).normal(size=(4, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    body = dev.privatize(X, dev.choose(X, model), 0.5, model)
    headers = {**auth(CLIENT), "Content-Type": J, "Idempotency-Key": "good"}
    return tc, ("POST", "/v1/reports", headers, _dump(body)), lambda: app.state.service.seq


def _shuffler() -> tuple[TestClient, Req, Callable[[], int]]:
    raw = service_raw(
        "hanna-shuffle",
        horizon=300,
        seed=4,
        env={"kind": "finite", "d": 2, "K": 3, "noise_scale": 0.3},
        min_batch=2,
    )
    server = create_app(parse_service_config(raw), open_store(":memory:"), tokens())
    store = ShufflerStore(":memory:")
    settings = ShufflerSettings(
        "http://server",
        SHUFFLER,
        TokenSet.from_secrets(client=[CLIENT, CLIENT2], admin=[ADMIN], shuffler=[SHUFFLER]),
        min_batch=2,
        device_epsilon=1e9,
        poll_seconds=0.05,
    )
    app = create_shuffler_app(settings, store, transport=httpx.ASGITransport(app=server))
    tc = TestClient(app)
    model = server.state.service.model_view()
    fmt = ReportFormat.from_description(model["report"], model["problem"]["K"])
    assert fmt is not None
    sealed = sealing.seal({"pad": 1}, model["public_key"], fmt.sealed_size())
    body = {"model_version": 0, "report": sealed}
    headers = {**auth(CLIENT), "Content-Type": J, "Idempotency-Key": "good"}
    return tc, ("POST", "/v1/reports", headers, _dump(body)), store.pending


@pytest.fixture(scope="module", params=["server", "server-postgresql", "shuffler"])
def target(request: Any) -> Iterator[tuple[TestClient, Req, Callable[[], int]]]:
    if request.param == "server-postgresql":
        pg = request.getfixturevalue("postgres_module")
        tc, good, stored = _server(str(pg.create_database("junk")))
    else:
        tc, good, stored = _server() if request.param == "server" else _shuffler()
    with tc:
        yield tc, good, stored
        # after the whole corpus: nothing was stored, and a valid request still passes
        assert stored() == 0
        method, path, headers, body = good
        res = tc.request(method, path, headers=headers, content=body)
        assert res.status_code in (200, 202), res.text
        assert stored() == 1


def test_corpus_size() -> None:
    assert len(CASES) >= 60
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_junk_is_a_4xx_naming_the_problem(target: Any, case: Any) -> None:
    tc, good, stored = target
    name, build, status, field = case
    method, path, headers, body = good
    headers = {**headers, "Idempotency-Key": f"junk-{CASES.index(case)}"}
    method, path, headers, body = build((method, path, headers, body))
    res = tc.request(method, path, headers=headers, content=body)
    want = status if isinstance(status, tuple) else (status,)
    assert res.status_code in want, (name, res.status_code, res.text[:300])
    assert 400 <= res.status_code < 500
    if field is not None:
        err = res.json()["error"]
        assert str(err["field"]).startswith(field), (name, err)
        assert err["message"], name
    assert stored() == 0


# -- streaming: a huge chunked body is cut at the limit, never read to its end ------------------
async def _call(app: Any, chunks: Iterator[bytes], headers: list[tuple[bytes, bytes]]) -> int:
    status = [0]
    done = False

    async def receive() -> dict[str, Any]:
        nonlocal done
        if done:
            await asyncio.sleep(3600)  # a client that keeps the connection open
        try:
            return {"type": "http.request", "body": next(chunks), "more_body": True}
        except StopIteration:
            done = True
            return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status[0] = message["status"]

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/reports",
        "raw_path": b"/v1/reports",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 80),
    }
    await asyncio.wait_for(app(scope, receive, send), 10)
    return status[0]


@pytest.mark.parametrize("which", ["server", "shuffler"])
def test_a_chunked_200_mb_body_is_cut_at_the_limit(which: str) -> None:
    tc, _, stored = _server() if which == "server" else _shuffler()
    limit = (1 << 20) if which == "server" else MAX_REPORT_BYTES
    chunk = b"[" + b" " * (64 * 1024 - 1)
    pulled = [0]

    def body() -> Iterator[bytes]:
        for _ in range(200 * 16):  # 200 MB in 64 KB chunks, no Content-Length (chunked)
            pulled[0] += len(chunk)
            yield chunk

    headers = [
        (b"authorization", f"Bearer {CLIENT}".encode()),
        (b"content-type", b"application/json"),
        (b"idempotency-key", b"big"),
        (b"transfer-encoding", b"chunked"),
    ]
    assert asyncio.run(_call(tc.app, body(), headers)) == 413
    assert pulled[0] <= limit + len(chunk)  # read up to the limit, then refused
    assert stored() == 0
