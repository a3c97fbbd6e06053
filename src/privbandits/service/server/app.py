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
``GET /v1/status``          none        reports received, model version, guarantee, simulated
                                        rewards (JSON)
``POST /v1/simulation/      client      rewards of *simulated* users, for the dashboard only
rewards``
``GET /metrics``            none        Prometheus text format
``GET /``                   none        the dashboard page (polls ``GET /v1/status``)
``GET /v1/admin/export``    admin       configuration, every stored event and model update
``POST /v1/admin/reset``    admin       delete everything and start afresh (``{"confirm": true}``)
==========================  ==========  ============================================================

Errors are JSON ``{"error": {"status", "field", "message"}}``; ``field`` names the offending
request field or header.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from privbandits.service.auth import TokenSet
from privbandits.service.codec import FieldError, reject_unknown
from privbandits.service.config import ServiceConfig
from privbandits.service.http import read_json
from privbandits.service.server.dashboard import dashboard_router
from privbandits.service.server.service import Refusal, Service
from privbandits.service.server.store import Store

__all__ = ["create_app"]


def _error(exc: Refusal) -> JSONResponse:
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
            self.metrics.requests.labels(endpoint, str(status[0])).inc()
            self.metrics.latency.labels(endpoint).observe(time.perf_counter() - start)


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
    """
    service = Service(config, store, tokens, clock=clock)
    metrics = _Metrics(service)
    app = FastAPI(title="privbandits", version="1", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = service
    app.state.metrics = metrics
    limit = config.max_body_bytes

    def auth(request: Request, *roles: str) -> Any:
        return service.authorize(request.headers.get("authorization"), roles)

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
        return JSONResponse(
            answer, headers={"Idempotency-Replayed": "true" if replayed else "false"}
        )

    @app.get("/v1/model")
    async def get_model(request: Request) -> Response:
        try:
            auth(request, "client", "shuffler")
        except Refusal as exc:
            return _error(exc)
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

    @app.get("/v1/health")
    async def get_health() -> Response:
        problem = await anyio.to_thread.run_sync(service.health, abandon_on_cancel=True)
        if problem is not None:
            return JSONResponse(
                {"status": "unavailable", "reason": problem},
                status_code=503,
                headers={"Retry-After": "1"},
            )
        return JSONResponse({"status": "ok"})

    @app.get("/v1/status")
    async def get_status() -> Response:
        return JSONResponse(service.status_view())

    @app.post("/v1/simulation/rewards")
    async def post_rewards(request: Request) -> Response:
        try:
            auth(request, "client")
            body = await _json_body(request, limit)
            _only(body, "rewards")
            n = service.add_simulated_rewards(body.get("rewards"))
        except Refusal as exc:
            return _error(exc)
        return JSONResponse({"accepted": n})

    @app.get("/metrics")
    async def get_metrics() -> Response:
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/admin/export")
    async def export(request: Request) -> Response:
        try:
            auth(request, "admin")
        except Refusal as exc:
            return _error(exc)
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
        dashboard_router()
    )  # GET /: the dashboard page (privbandits.service.server.dashboard)
    if extra_routes is not None:
        extra_routes(app, service)
    app.add_middleware(_Observe, metrics=metrics)
    return app
