"""The HTTP API of a served model (FastAPI): ``create_app(config, store, tokens)``.

==========================  ==========  ============================================================
endpoint                    token       what it does
==========================  ==========  ============================================================
``GET /v1/model``           client      public state, version, algorithm, calibration, guarantee,
                                        report format and output range, sealing ``public_key``
``POST /v1/reports``        client      one privatized report bound to ``model_version``
                                        (curators: the raw reward of a ticket)
``POST /v1/actions``        client      curators only: raw contexts in, the chosen action out
``POST /v1/batches``        shuffler    shuffle model: one shuffled batch of (optionally sealed)
                                        reports
``GET /v1/health``          none        200 if the database accepts a write, 503 if not (no details)
``GET /v1/status``          operator    reports received, model version, guarantee, refusals by
                                        kind, latency percentiles, database health, shuffled
                                        batches, budget spent and remaining (JSON)
``GET /v1/history``         operator    the reports received by model update, from the database
                                        (the dashboard's chart; survives a reload)
``POST /v1/simulation/      client      rewards of *simulated* users, for the dashboard only;
rewards``                               enabled only with ``[service] simulation = true``
``GET /metrics``            operator    Prometheus text format
``GET /``                   none        the dashboard page (static; it asks for an operator token
                                        and polls ``GET /v1/status`` with it)
``GET /v1/admin/export``    admin       configuration, every stored event and model update
``POST /v1/admin/reset``    admin       delete everything and start afresh (``{"confirm": true}``)
``POST /v1/admin/tokens/    admin       read the tokens file again (rotation; also on ``SIGHUP``)
reload``
==========================  ==========  ============================================================

An ``admin`` token may also act as a ``client`` or an ``operator``.  Requests without a valid
token (and the public ``GET /v1/health`` and ``GET /``) are rate limited per client IP address
(``[service] anonymous_rate`` and ``anonymous_burst``): 429 with ``Retry-After``.

Errors are JSON ``{"error": {"status", "field", "message"}}``; ``field`` names the offending
request field or header.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from privbandits.core.errors import ConfigError
from privbandits.service.auth import RateLimiter, TokenSet, reload_on_sighup
from privbandits.service.codec import FieldError, reject_unknown
from privbandits.service.config import ServiceConfig
from privbandits.service.http import read_json, service_app
from privbandits.service.server.dashboard import dashboard_router
from privbandits.service.server.service import Refusal, Service
from privbandits.service.server.store import Store

__all__ = ["create_app"]

log = logging.getLogger("privbandits.server")

#: Latencies kept for the percentiles of ``GET /v1/status`` (the most recent requests).
LATENCY_WINDOW = 4096


def _error_response(exc: Refusal) -> JSONResponse:
    headers = {}
    if exc.retry_after is not None:
        headers["Retry-After"] = str(max(1, int(exc.retry_after + 0.999)))
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


class _Metrics:
    def __init__(self, service: Service) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "privbandits_requests",
            "HTTP requests by endpoint and status",
            ["endpoint", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "privbandits_request_seconds",
            "Request latency by endpoint",
            ["endpoint"],
            registry=r,
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0),
        )
        self.refusals = Counter(
            "privbandits_refusals",
            "Refused requests (4xx) by kind (the field or header at fault)",
            ["kind"],
            registry=r,
        )
        self.recent: collections.deque[float] = collections.deque(maxlen=LATENCY_WINDOW)
        self.refused: collections.Counter[str] = collections.Counter()
        Gauge("privbandits_model_version", "Model version", registry=r).set_function(
            lambda: service.model.version
        )
        Gauge(
            "privbandits_reports_received", "Users counted by the model", registry=r
        ).set_function(lambda: service.model.rounds)
        Gauge("privbandits_events", "Accepted requests stored", registry=r).set_function(
            lambda: service.seq
        )
        Gauge(
            "privbandits_guarantee_epsilon", "Accounted epsilon per user", registry=r
        ).set_function(lambda: float(service.model.guarantee.epsilon))


class _Observe:
    """ASGI middleware: request counts and latencies by route and status (Prometheus)."""

    def __init__(self, app: Any, metrics: _Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = [500]

        async def send_status(message: Any) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            endpoint = getattr(scope.get("route"), "path", "other")
            elapsed = time.perf_counter() - start
            self.metrics.requests.labels(endpoint, str(status[0])).inc()
            self.metrics.latency.labels(endpoint).observe(elapsed)
            if endpoint in ("/v1/reports", "/v1/batches", "/v1/actions"):
                self.metrics.recent.append(elapsed)


def _refusal_kind(exc: Refusal) -> str:
    """The kind a refusal is counted under: the status class and the field at fault."""
    field = (exc.field or "request").split(".")[0].split("[")[0]
    kinds = {401: "auth", 403: "auth", 413: "size", 415: "content_type", 429: "rate_or_budget"}
    return kinds.get(exc.status, field if len(field) <= 40 else "field")


def _percentiles(values: Any) -> dict[str, float | None]:
    xs = sorted(values)
    if not xs:
        return {"p50": None, "p95": None, "p99": None, "n": 0}
    pick = lambda q: round(1000 * xs[min(len(xs) - 1, int(q * len(xs)))], 3)
    return {"p50": pick(0.5), "p95": pick(0.95), "p99": pick(0.99), "n": len(xs)}


async def _json_body(request: Request, limit: int) -> dict[str, Any]:
    """The request's JSON object, read strictly (:func:`privbandits.service.http.read_json`)."""
    try:
        body = await read_json(request, limit)
    except FieldError as exc:
        raise Refusal(exc.status, str(exc), exc.field) from None
    version = body.get("model_version")
    if isinstance(version, int) and not isinstance(version, bool) and version < 0:
        raise Refusal(
            422,
            f"model_version: must be a non-negative integer (a version of the model), got {version}",
            "model_version",
        )
    return body


def _only(body: dict[str, Any], *allowed: str) -> None:
    """422 naming the first field of ``body`` outside ``allowed``."""
    try:
        reject_unknown(body, allowed)
    except FieldError as exc:
        raise Refusal(exc.status, str(exc), exc.field) from None


def create_app(
    config: ServiceConfig,
    store: Store,
    tokens: TokenSet,
    *,
    clock: Any = time.monotonic,
    extra_routes: Callable[[FastAPI, Service], None] | None = None,
    shuffler_transport: Any = None,
) -> FastAPI:
    """The FastAPI application serving ``config``'s algorithm from ``store`` (see the module docstring).

    Parameters
    ----------
    config : ServiceConfig
        Algorithm, problem and service limits.
    store : Store
        The database (its stored requests are replayed on creation).
    tokens : TokenSet
        The accepted tokens.
    clock : callable
        Monotonic clock of the rate limiter.
    extra_routes : callable, optional
        Called with ``(app, service)`` to add routes (e.g. a dashboard page).
    shuffler_transport : httpx transport, optional
        For tests: how ``GET /v1/status`` reaches the shuffler (``[service] shuffler_url``).
    """
    service = Service(config, store, tokens, clock=clock)
    metrics = _Metrics(service)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with reload_on_sighup(tokens, "server"):
            yield

    app = service_app("privbandits", lifespan, version="1")
    app.state.service = service
    app.state.metrics = metrics
    limit = config.max_body_bytes
    anonymous = RateLimiter(clock)
    batches = {"received": 0, "reports": 0}  # shuffled batches applied since start

    def limit_anonymous(request: Request) -> None:
        """Count a request without a valid token against its client address (429 when spent)."""
        host = request.client.host if request.client is not None else "unknown"
        wait = anonymous.allow(f"ip:{host}", config.anonymous_rate, config.anonymous_burst)
        if wait > 0:
            raise Refusal(
                429,
                f"too many requests without a valid token from {host} "
                f"({config.anonymous_rate:g} requests/s, burst {config.anonymous_burst}); "
                f"retry in {wait:.3f} s",
                "Authorization",
                retry_after=wait,
            )

    def auth(request: Request, *roles: str) -> Any:
        try:
            return service.authorize(request.headers.get("authorization"), roles)
        except Refusal as exc:
            if exc.status == 401:
                limit_anonymous(request)
            raise

    def _error(exc: Refusal) -> JSONResponse:
        kind = _refusal_kind(exc)
        metrics.refusals.labels(kind).inc()
        metrics.refused[kind] += 1
        return _error_response(exc)

    def refused(check: Callable[..., object], *args: Any) -> Response | None:
        """None if ``check(*args)`` passes (``auth``, ``limit_anonymous``), else the refusal's answer."""
        try:
            check(*args)
        except Refusal as exc:
            return _error(exc)
        return None

    async def submit(
        request: Request, kind: str, role: str, key_field: str = "idempotency_key"
    ) -> Response:
        try:
            tok = auth(request, role)
            body = await _json_body(request, limit)
            key = service.idempotency_key(request.headers.get("idempotency-key"), body, key_field)
            if key_field == "idempotency_key":
                body.pop("idempotency_key", None)
            # off the event loop: a database write that waits on a lock never blocks other requests
            answer, replayed = await anyio.to_thread.run_sync(service.submit, kind, tok, key, body)
        except Refusal as exc:
            return _error(exc)
        if kind == "batch" and not replayed:
            batches["received"] += 1
            batches["reports"] += int(answer.get("applied", 0))
        return JSONResponse(
            answer, headers={"Idempotency-Replayed": "true" if replayed else "false"}
        )

    @app.get("/v1/model")
    async def get_model(request: Request) -> Response:
        if (no := refused(auth, request, "client", "shuffler")) is not None:
            return no
        return JSONResponse(await anyio.to_thread.run_sync(service.model_view))

    @app.post("/v1/reports")
    async def post_report(request: Request) -> Response:
        return await submit(request, "report", "client")

    @app.post("/v1/actions")
    async def post_action(request: Request) -> Response:
        return await submit(request, "select", "client")

    @app.post("/v1/batches")
    async def post_batch(request: Request) -> Response:
        return await submit(request, "batch", "shuffler", key_field="batch_id")

    async def db_problem() -> str | None:
        health = getattr(service, "health", None)
        if health is None:
            return None
        problem: str | None = await anyio.to_thread.run_sync(health, abandon_on_cancel=True)
        return problem

    @app.get("/v1/health")
    async def get_health(request: Request) -> Response:
        if (no := refused(limit_anonymous, request)) is not None:
            return no
        if await db_problem() is not None:  # the reason is on GET /v1/status (operator)
            return JSONResponse(
                {"status": "unavailable"}, status_code=503, headers={"Retry-After": "1"}
            )
        return JSONResponse({"status": "ok"})

    @app.get("/v1/status")
    async def get_status(request: Request) -> Response:
        if (no := refused(auth, request, "operator")) is not None:
            return no
        view = await anyio.to_thread.run_sync(service.status_view)
        problem = await db_problem()
        view["database_health"] = {"ok": problem is None, "problem": problem}
        view["refused"] = {**view.get("refused", {}), **dict(metrics.refused)}
        view["latency_ms"] = _percentiles(metrics.recent)
        view["budget"] = budget_view()
        view["simulation"] = config.simulation
        view["batches"] = dict(batches)
        if config.shuffler_url is not None:
            view["shuffler"] = await shuffler_view(request.headers.get("authorization"))
        view["tokens"] = {"reloaded": tokens.reloads, "loaded_at": tokens.loaded_at}
        return JSONResponse(view)

    async def shuffler_view(authorization: str | None) -> dict[str, Any]:
        """The shuffler's queue, read from its ``GET /v1/status`` with the operator's own token."""
        import httpx

        keep = (
            "model_version",
            "protocol_batch_size",
            "pending",
            "outbox",
            "batches_forwarded",
            "reports_forwarded",
            "reports_received",
            "stalled",
            "blocked",
            "last_error",
        )
        try:
            async with httpx.AsyncClient(transport=shuffler_transport, timeout=2.0) as http:
                res = await http.get(
                    f"{config.shuffler_url}/v1/status",
                    headers={"Authorization": authorization or ""},
                )
            if res.status_code != 200:
                return {"reachable": False, "problem": f"HTTP {res.status_code}"}
            data = res.json()
        except (httpx.HTTPError, ValueError) as exc:
            return {"reachable": False, "problem": type(exc).__name__}
        return {"reachable": True, **{k: data.get(k) for k in keep}}

    def budget_view() -> dict[str, Any]:
        """Accepted reports per device against each device's report budget (spent, remaining)."""
        with service.lock:
            spent = dict(service.per_token)
        clients = [t for t in tokens.by_hash.values() if t.role in ("client", "admin")]
        rows: list[dict[str, Any]] = []
        left: list[int | None] = []
        for t in sorted(clients, key=lambda t: t.name):
            cap = service.report_budget(t)
            n = int(spent.get(t.name, 0))
            left.append(None if cap is None else max(cap - n, 0))
            rows.append({"device": t.name, "spent": n, "remaining": left[-1]})
        return {
            "devices": len(rows),
            "spent": sum(spent.get(t.name, 0) for t in clients),
            "remaining": None if any(c is None for c in left) else sum(c or 0 for c in left),
            "by_device": rows[:50],
        }

    @app.get("/v1/history")
    async def get_history(request: Request) -> Response:
        if (no := refused(auth, request, "operator")) is not None:
            return no

        def rows() -> list[list[int]]:
            points = [[r.seq, r.rounds, r.version] for r in store.models()]
            step = max(1, len(points) // 500)  # at most ~500 points
            out = points[::step]
            if points and out[-1] != points[-1]:
                out.append(points[-1])
            return out

        return JSONResponse({"points": await anyio.to_thread.run_sync(rows)})

    @app.post("/v1/simulation/rewards")
    async def post_rewards(request: Request) -> Response:
        try:
            auth(request, "client")
            if not config.simulation:
                raise Refusal(
                    404,
                    "simulated rewards are disabled: this deployment is not a simulation "
                    "(set [service] simulation = true in a simulated deployment)",
                    "simulation",
                )
            body = await _json_body(request, limit)
            _only(body, "rewards")
            n = service.add_simulated_rewards(body.get("rewards"))
        except Refusal as exc:
            return _error(exc)
        return JSONResponse({"accepted": n})

    @app.get("/metrics")
    async def get_metrics(request: Request) -> Response:
        if (no := refused(auth, request, "operator")) is not None:
            return no
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.post("/v1/admin/tokens/reload")
    async def reload_tokens(request: Request) -> Response:
        try:
            auth(request, "admin")
            try:
                n = tokens.reload()
            except ConfigError as exc:
                raise Refusal(
                    422, f"tokens not reloaded, the old ones stay: {exc}", "tokens"
                ) from None
        except Refusal as exc:
            return _error(exc)
        return JSONResponse({"reloaded": True, "tokens": n})

    @app.get("/v1/admin/export")
    async def export(request: Request) -> Response:
        if (no := refused(auth, request, "admin")) is not None:
            return no
        return JSONResponse(service.export())

    @app.post("/v1/admin/reset")
    async def reset(request: Request) -> Response:
        try:
            auth(request, "admin")
            body = await _json_body(request, limit)
            _only(body, "confirm")
            if body.get("confirm") is not True:
                raise Refusal(
                    422, 'confirm: send {"confirm": true} to delete every stored report', "confirm"
                )
            service.reset()
        except Refusal as exc:
            return _error(exc)
        return JSONResponse({"reset": True, "model_version": service.model.version})

    app.include_router(
        dashboard_router(before=limit_anonymous, on_refusal=_error)
    )  # GET /: the dashboard page (privbandits.service.server.dashboard)
    if extra_routes is not None:
        extra_routes(app, service)
    app.add_middleware(_Observe, metrics=metrics)
    return app
