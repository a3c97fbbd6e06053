"""The shuffler service of the shuffle model: collect reports, forward complete shuffled batches.

It sits between the clients and the server (``privbandits serve-shuffler``):

* ``POST /v1/reports`` (client token) accepts one report bound to a model version, with an
  idempotency key.  The report is normally *sealed* to the server's public key by the client
  (``{"sealed": base64}``, a libsodium sealed box), so the shuffler cannot read it; it stores the
  report durably (:class:`~privbandits.service.shuffler.store.ShufflerStore`) and only then
  acknowledges.  A retry with the same key is acknowledged again and queued once.
* A forwarder cuts a batch only when it is *complete*: exactly the size the algorithm's shuffle
  protocol requires for the current model version (the ``n_i`` users of a batch in Hanna et al.
  2022, Algorithm 3), and never fewer than ``min_batch`` reports.  The batch goes to the server's
  ``POST /v1/batches`` (shuffler token) as ``{"batch_id", "model_version", "reports"}`` in a
  uniformly random order: no token, idempotency key, address, timestamp or arrival order.
* ``GET /v1/model`` relays the server's public model to clients (so they need no route to the
  server); ``GET /v1/status`` and ``GET /metrics`` report queue sizes and totals (no report).
* **One bad report cannot stop it.**  Before a report is queued the shuffler checks what it can
  see: the request's fields, and the report against the format the server publishes (a plain
  report field by field; a sealed one, which it cannot open, by its envelope: base64 of exactly
  the size of a padded report).  A report that fails is quarantined (counted, listed on
  ``GET /v1/status`` without its sender) and answered 422.  The server applies a batch report by
  report and quarantines what does not open there; a batch it refuses is retried at most
  ``max_attempts`` times, then kept in the dead letters (``POST /v1/admin/requeue`` puts it back).

The shuffler is the trusted party of the shuffle model only for *unlinking* reports from their
senders; with sealed reports it learns nothing of their content.

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithm 3 (batches of ``n_i`` users, complete batches
only); Bittau et al. (2017), Prochlo (encode-shuffle-analyze).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Annotated, Any

import httpx
from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from privbandits.core.errors import ConfigError, ValidationError
from privbandits.core.validation import check_int
from privbandits.service.auth import (
    AuthError,
    RateLimiter,
    Token,
    TokenSet,
    authenticate,
    reload_on_sighup,
)
from privbandits.service.auth import report_budget as budget_for
from privbandits.service.codec import FieldError, canonical, reject_unknown
from privbandits.service.http import read_json, service_app
from privbandits.service.reports import ReportFormat, schedule_of
from privbandits.service.sealing import SealingError, check_envelope
from privbandits.service.shuffler.store import CutBatch, ShufflerStore, report_digest

__all__ = [
    "Forwarder",
    "ShufflerSettings",
    "create_shuffler_app",
    "protocol_batch_size",
    "report_budget",
]

log = logging.getLogger("privbandits.shuffler")

#: Largest accepted request body of ``POST /v1/reports`` (bytes).
MAX_REPORT_BYTES = 64 * 1024
#: Longest accepted idempotency key.
MAX_KEY_CHARS = 200


def public_schedule(model: dict[str, Any]) -> tuple[list[int], int] | None:
    """``(counts, committed)`` of a batched-elimination schedule in the public state of the model
    the server publishes (:func:`privbandits.service.reports.schedule_of`), else ``None``."""
    public = model.get("public") or {}
    return schedule_of(public) if isinstance(public, dict) else None


def protocol_batch_size(model: dict[str, Any]) -> int | None:
    """The batch size the algorithm's shuffle protocol requires for the model's current version.

    Read from the public model the server publishes: its ``batch_size`` if present, else the size
    ``n_i = sum_a n_ia`` of the running batch's public schedule (Hanna et al. 2022, Algorithm 3;
    ``0``: no batch is open, e.g. after the commit).  ``None`` when the protocol fixes no size
    (any batch of at least ``min_batch`` reports).
    """
    if model.get("batch_size") is not None:
        return max(int(model["batch_size"]), 0)
    schedule = public_schedule(model)
    if schedule is None:
        return None
    counts, committed = schedule
    return 0 if committed >= 0 else sum(counts)


@dataclass
class ShufflerSettings:
    """Configuration of a shuffler service.

    Parameters
    ----------
    server_url : str
        Base URL of the server (``http://127.0.0.1:8000``).
    shuffler_token : str
        The token the server accepts on ``POST /v1/batches``.
    tokens : TokenSet
        The tokens accepted from clients (role ``client`` or ``admin``; the same tokens file
        format as the server's).
    min_batch : int
        Smallest batch ever forwarded (>= 2).
    device_epsilon : float, optional
        Privacy budget of a device (client token) without its own ``device_epsilon`` in the
        tokens file; ``None``: the accounted per-report epsilon, i.e. one report per device (the
        server's rule for single reports, which in the shuffle model only the shuffler can apply).
    poll_seconds : float
        How often the forwarder looks for a complete batch when no report arrives.
    max_attempts : int
        Refusals of one batch by the server before it is moved to the dead letters (a server
        that cannot be reached is retried without limit: the batch is not at fault).
    lease_seconds : float
        How long an action slot handed out by ``GET /v1/assignment`` stays reserved for its
        device; unused past that it is reclaimed and handed to another device.
    stall_seconds : float
        A batch that gets no new report for this long while it is incomplete is *stalled*: an
        alert line is logged and ``GET /v1/status`` shows it.
    clock : callable
        Wall-clock time in seconds (leases are stored, so they outlive a restart).
    rate, burst : float or None, int
        Token bucket per client token (requests per second, burst): 429 beyond it (a token's
        own ``rate`` and ``burst`` in the tokens file take precedence; ``None``: no limit but
        those; ``serve-shuffler`` passes the configuration's ``[service] rate`` and ``burst``).
    anonymous_rate, anonymous_burst : float, int
        Token bucket per client IP address for requests without a valid token.
    """

    server_url: str
    shuffler_token: str
    tokens: TokenSet
    min_batch: int = 2
    device_epsilon: float | None = None
    poll_seconds: float = 1.0
    max_attempts: int = 5
    lease_seconds: float = 60.0
    stall_seconds: float = 300.0
    clock: Callable[[], float] = time.time
    rate: float | None = None
    burst: int = 100
    anonymous_rate: float = 5.0
    anonymous_burst: int = 50

    def __post_init__(self) -> None:
        for name in ("lease_seconds", "stall_seconds"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.01 <= v <= 86_400:
                raise ValidationError(
                    f"{name} must be a number of seconds in [0.01, 86400], got {v!r}"
                )
        self.min_batch = check_int("min_batch", self.min_batch, 2)
        self.max_attempts = check_int("max_attempts", self.max_attempts, 1, 1000)
        if not len(self.tokens):
            raise ValidationError("tokens must hold at least one client token, got none")
        if not self.shuffler_token:
            raise ValidationError("shuffler_token must be a non-empty string")
        if self.device_epsilon is not None and not (
            math.isfinite(self.device_epsilon) and self.device_epsilon > 0
        ):
            raise ValidationError(
                f"device_epsilon must be a finite number > 0, got {self.device_epsilon!r}"
            )
        if not (0.01 <= float(self.poll_seconds) <= 60):
            raise ValidationError(f"poll_seconds must be in [0.01, 60], got {self.poll_seconds!r}")
        self.server_url = self.server_url.rstrip("/")


class Forwarder:
    """Cuts complete batches from the store and forwards them to the server.

    Parameters
    ----------
    store : ShufflerStore
        The durable queue.
    settings : ShufflerSettings
        Server URL, token and minimum batch size.
    client : httpx.AsyncClient
        HTTP client used to reach the server.
    """

    def __init__(
        self, store: ShufflerStore, settings: ShufflerSettings, client: httpx.AsyncClient
    ) -> None:
        self.store = store
        self.settings = settings
        self.client = client
        self.model: dict[str, Any] | None = None
        self.blocked: str | None = None  # why no batch can be forwarded (a configuration problem)
        self.last_error: str | None = None
        self.stalled: dict[str, Any] | None = None  # the incomplete batch that gets no report
        self._progress: tuple[int, int, float] | None = None  # (version, pending, since)
        self._lock = asyncio.Lock()

    @property
    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.settings.shuffler_token}"}

    async def refresh_model(self) -> dict[str, Any]:
        """Fetch the server's public model (``GET /v1/model``)."""
        res = await self.client.get(f"{self.settings.server_url}/v1/model", headers=self._auth)
        res.raise_for_status()
        self.model = res.json()
        return self.model

    def batch_size(self, model: dict[str, Any], pending: int) -> int | None:
        """Size of the next batch to cut for ``model`` with ``pending`` reports, or ``None``."""
        need = protocol_batch_size(model)
        m = self.settings.min_batch
        if need == 0:  # no batch open (the schedule committed): nothing to forward
            self.blocked = None
            return None
        if need is not None and need < m:
            self.blocked = (
                f"the protocol's batch of model version {model.get('model_version')} has {need} users, "
                f"fewer than min_batch={m}: nothing is forwarded"
            )
            return None
        self.blocked = None
        if need is None:
            return pending if pending >= m else None
        return need if pending >= need else None

    async def _send(self, batch: CutBatch) -> bool:
        """Post one batch; True once the server acknowledged it.

        A refusal (4xx other than 408 and 429) counts against the batch: after ``max_attempts``
        of them it goes to the dead letters and the batches behind it move on.  An unreachable or
        failing server (transport errors, 5xx, 408, 429) is retried later without limit.  The
        server answers how many of the batch's reports it quarantined (counts only: which ones
        would tell the shuffler whose report failed).
        """
        res = await self.client.post(
            f"{self.settings.server_url}/v1/batches",
            content=batch.body,
            headers={**self._auth, "Content-Type": "application/json"},
        )
        if res.status_code >= 400:  # a repeated batch_id is answered 200 (the server's idempotency)
            # the status code only: the server's message may quote what it found inside an opened
            # (sealed) report, which the shuffler must never see, keep or show
            reason = f"server refused batch {batch.batch_id}: HTTP {res.status_code}"
            if res.status_code >= 500 or res.status_code in (408, 429):
                raise httpx.HTTPStatusError(reason, request=res.request, response=res)
            if await asyncio.to_thread(
                self.store.failed, batch, reason, self.settings.max_attempts
            ):
                log.error(
                    "batch %s moved to the dead letters after %d refusals: %s",
                    batch.batch_id,
                    self.settings.max_attempts,
                    reason,
                )
            self.last_error = reason
            return False
        try:
            answer = res.json()
        except ValueError:
            answer = {}
        answer = answer if isinstance(answer, dict) else {}
        q, f = answer.get("quarantined", 0), answer.get("filled", 0)
        self.store.forwarded(batch, q if isinstance(q, int) else 0, f if isinstance(f, int) else 0)
        return True

    async def step(self) -> int:
        """Forward the outbox, then cut and forward complete batches; returns batches forwarded."""
        async with self._lock:
            sent = 0
            for batch in self.store.outbox():
                sent += await self._send(batch)
            model = (
                self.model if self.model is not None and not sent else await self.refresh_model()
            )
            while True:
                version = int(model["model_version"])
                size = self.batch_size(model, self.store.pending(version))
                if size is None:
                    return sent
                cut = self.store.cut(version, size, close=protocol_batch_size(model) is not None)
                if cut is None:
                    return sent
                ok = await self._send(cut)
                sent += ok
                model = await self.refresh_model()
                if not ok:
                    return sent

    def check_stall(self) -> dict[str, Any] | None:
        """Whether the open batch is *stalled*: incomplete and without a new report for
        ``stall_seconds``.  Logs one alert line when a batch becomes stalled; returns (and keeps
        in :attr:`stalled`) what the status shows, else None."""
        model = self.model
        need = protocol_batch_size(model) if model is not None else None
        if model is None or not need:
            self._progress, self.stalled = None, None
            return None
        version = int(model["model_version"])
        pending = self.store.pending(version)
        now = self.settings.clock()
        if self._progress is None or self._progress[:2] != (version, pending):
            self._progress, self.stalled = (version, pending, now), None
            return None
        since = self._progress[2]
        if pending >= need or now - since < self.settings.stall_seconds:
            return self.stalled
        if self.stalled is None:
            slots = self.store.slot_state(version, now)
            self.stalled = {
                "model_version": version,
                "reports": pending,
                "batch_size": need,
                "seconds_without_report": round(now - since, 1),
                "slots": slots,
            }
            log.warning(
                "ALERT batch stalled: model version %d has %d of %d reports and no new report "
                "for %.0f s (action slots: %d free, %d leased, %d used)",
                version,
                pending,
                need,
                now - since,
                slots["free"],
                slots["leased"],
                slots["used"],
            )
        else:
            self.stalled["seconds_without_report"] = round(now - since, 1)
        return self.stalled

    async def run(self, wake: asyncio.Event) -> None:
        """Forward until cancelled: on every new report (``wake``) and every ``poll_seconds``."""
        while True:
            try:
                await self.step()
                self.last_error = None
                await asyncio.to_thread(self.check_stall)
            except (httpx.HTTPError, ValueError, KeyError) as e:
                why = _describe(e)
                if why != self.last_error:  # log each new failure once, not every poll
                    log.warning("forwarding failed (will retry): %s", why)
                self.last_error = why
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(wake.wait(), self.settings.poll_seconds)
            wake.clear()


def _describe(exc: Exception) -> str:
    """A forwarding failure for the status page and the log: its kind and HTTP status, never a
    text the server sent back (which could quote the content of an opened report)."""
    if isinstance(exc, httpx.HTTPStatusError):
        return f"the server answered HTTP {exc.response.status_code} ({exc.request.url.path})"
    if isinstance(exc, httpx.HTTPError):
        return f"the server is unreachable: {type(exc).__name__}"
    return f"unexpected answer from the server ({type(exc).__name__})"


class Refused(HTTPException):
    """A refused request: answered ``{"error": {"status", "field", "message"}}`` like the server's."""

    def __init__(
        self, status: int, message: str, field: str | None = None, retry_after: float | None = None
    ) -> None:
        headers = (
            None if retry_after is None else {"Retry-After": str(max(1, int(retry_after + 0.999)))}
        )
        super().__init__(status, message, headers=headers)
        self.field = field


async def _read(request: Request, limit: int) -> dict[str, Any]:
    """The request's JSON object, read strictly (:func:`privbandits.service.http.read_json`)."""
    try:
        return await read_json(request, limit)
    except FieldError as exc:
        raise Refused(exc.status, str(exc), exc.field) from None


def _check_report(body: Any, header_key: str | None = None) -> tuple[int, str, Any]:
    """``(model_version, idempotency_key, report)`` of a report request, or a 422 naming the field
    (the report's content is checked against the model's format by :func:`check_report_format`)."""
    if not isinstance(body, dict):
        raise Refused(422, "the request body must be a JSON object", "body")
    try:
        reject_unknown(body, ("model_version", "idempotency_key", "report"))
    except FieldError as exc:
        raise Refused(422, f"{exc}: a shuffled report carries nothing else", exc.field) from None
    version = body.get("model_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise Refused(
            422, f"model_version must be a non-negative integer, got {version!r}", "model_version"
        )
    key = header_key if header_key is not None else body.get("idempotency_key")
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_CHARS:
        raise Refused(
            422,
            f"idempotency_key (or the Idempotency-Key header) must be a string of 1..{MAX_KEY_CHARS} "
            f"characters, got {str(key)[:40]!r}",
            "idempotency_key",
        )
    report = body.get("report")
    if not isinstance(report, dict) or not report:
        raise Refused(
            422,
            'report must be a JSON object: the privatized payload or {"sealed": base64}',
            "report",
        )
    return version, key, report


def report_format(model: dict[str, Any]) -> ReportFormat | None:
    """The report format the server publishes in its model (None if it publishes none)."""
    return ReportFormat.from_description(model.get("report"), (model.get("problem") or {}).get("K"))


def check_report_format(report: dict[str, Any], fmt: ReportFormat | None) -> None:
    """What the shuffler can check of a report: a sealed one's envelope (base64, exactly the size of
    a padded report of the format: it cannot open it), a plain one's fields against the format.

    Raises
    ------
    FieldError
        Naming the field (``report.sealed``, ``report.<field>``) and what is wrong.
    """
    if "sealed" in report:
        reject_unknown(report, ("sealed",), "report.")
        try:
            check_envelope(report["sealed"], None if fmt is None else fmt.sealed_size())
        except SealingError as exc:
            raise FieldError("report.sealed", str(exc).removeprefix("sealed: ")) from None
    elif fmt is not None:
        fmt.parse(report, "report")


def limit_anonymous(request: Request) -> None:
    """Count a request without a valid token against its client address (429 when spent)."""
    settings: ShufflerSettings = request.app.state.settings
    limiter: RateLimiter = request.app.state.limiter
    host = request.client.host if request.client is not None else "unknown"
    wait = limiter.allow(f"ip:{host}", settings.anonymous_rate, settings.anonymous_burst)
    if wait > 0:
        raise Refused(
            429,
            f"too many requests without a valid token from {host}; retry in {wait:.3f} s",
            "Authorization",
            retry_after=wait,
        )


def _token(request: Request, authorization: str | None, roles: tuple[str, ...]) -> Token:
    settings: ShufflerSettings = request.app.state.settings
    try:
        tok = authenticate(settings.tokens, authorization, roles)
    except AuthError as exc:
        if exc.status == 401:
            limit_anonymous(request)
        raise Refused(exc.status, exc.message, "Authorization") from None
    limiter: RateLimiter = request.app.state.limiter
    rate, burst = tok.rate or settings.rate, tok.burst or settings.burst
    if rate is None:
        return tok
    wait = limiter.allow(f"token:{tok.name}", rate, burst)
    if wait > 0:
        raise Refused(
            429,
            f"rate limit of token {tok.name!r} exceeded ({rate:g} requests/s, burst {burst}); "
            f"retry in {wait:.3f} s",
            "Authorization",
            retry_after=wait,
        )
    return tok


def client_token(request: Request, authorization: str | None = Header(default=None)) -> Token:
    """The client (or admin) token of a request, from the app's :class:`ShufflerSettings`
    (rate limited per token; requests without a valid token per client address)."""
    return _token(request, authorization, ("client",))


def admin_token(request: Request, authorization: str | None = Header(default=None)) -> Token:
    """The admin token of a request."""
    return _token(request, authorization, ("admin",))


def operator_token(request: Request, authorization: str | None = Header(default=None)) -> Token:
    """The operator (or admin) token of a request: status and metrics."""
    return _token(request, authorization, ("operator",))


#: A route parameter: the request's checked client token.
ClientToken = Annotated[Token, Depends(client_token)]
#: A route parameter: the request's checked admin token.
AdminToken = Annotated[Token, Depends(admin_token)]
#: A route parameter: the request's checked operator token.
OperatorToken = Annotated[Token, Depends(operator_token)]


def report_budget(model: dict[str, Any], device_epsilon: float | None) -> int | None:
    """Reports a device may post in total under the model's accounted per-report epsilon
    (:func:`privbandits.service.auth.report_budget`, the server's rule)."""
    return budget_for((model.get("guarantee") or {}).get("epsilon"), device_epsilon)


def _int_array(value: int) -> dict[str, Any]:
    """A one-replication int64 array in the service's JSON array encoding."""
    return {"dtype": "int64", "shape": [1], "data": [int(value)]}


def create_shuffler_app(
    settings: ShufflerSettings,
    store: ShufflerStore,
    transport: httpx.AsyncBaseTransport | None = None,
) -> FastAPI:
    """The shuffler's FastAPI application.

    Parameters
    ----------
    settings : ShufflerSettings
        Server URL, tokens and minimum batch size.
    store : ShufflerStore
        The durable queue (its permutation orders every forwarded batch).
    transport : httpx transport, optional
        For tests: how the forwarder reaches the server (default: the network).
    """
    wake = asyncio.Event()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with httpx.AsyncClient(transport=transport, timeout=30.0) as client:
            fwd = Forwarder(store, settings, client)
            app.state.forwarder = fwd
            task = asyncio.create_task(fwd.run(wake))
            try:
                with reload_on_sighup(settings.tokens, "shuffler"):
                    yield
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    app = service_app("privbandits shuffler", lifespan)
    app.state.settings = settings
    app.state.limiter = RateLimiter(time.monotonic)

    @app.exception_handler(HTTPException)
    async def refused(request: Request, exc: HTTPException) -> JSONResponse:
        field = exc.field if isinstance(exc, Refused) else None
        return JSONResponse(
            {"error": {"status": exc.status_code, "field": field, "message": str(exc.detail)}},
            status_code=exc.status_code,
            headers=exc.headers,
        )

    async def current_model(app: FastAPI, at_least: int = -1) -> dict[str, Any]:
        fwd: Forwarder = app.state.forwarder
        model = fwd.model
        if model is None or int(model["model_version"]) < at_least:
            try:
                model = await fwd.refresh_model()
            except httpx.HTTPError as e:
                raise Refused(503, f"the server is unreachable from the shuffler: {e}") from None
        return model

    @app.get("/v1/model")
    async def get_model(request: Request, _: ClientToken) -> dict[str, Any]:
        return await current_model(request.app)

    @app.get("/v1/assignment")
    async def get_assignment(request: Request, token: ClientToken) -> dict[str, Any]:
        """What this user receives from the shuffler (the Shuffler role's ``assign``).

        With a batched-elimination schedule (Hanna et al. 2022, Algorithm 3): the next slot of the
        batch's uniformly permuted action slots, ``{"action": [a], "n": [n_i]}`` (``n = 0`` and the
        committed action after the commit); otherwise the server's public state unchanged.

        The slot is leased to the token for ``lease_seconds``: asked again before its report, the
        same token gets the same slot (a retried request or a lost answer takes no second slot);
        a slot left unused is reclaimed when its lease expires.
        """
        model = await current_model(request.app)
        version = int(model["model_version"])
        schedule = public_schedule(model)
        if schedule is None:
            return {"model_version": version, "public": model.get("public") or {}}
        counts, committed = schedule
        if committed >= 0:
            action, n = committed, 0
        else:
            slot = await asyncio.to_thread(
                store.assign_slot,
                version,
                counts,
                token.name,
                settings.lease_seconds,
                settings.clock(),
            )
            if slot is None:
                raise Refused(
                    409,
                    f"every action slot of the batch of model version {version} is assigned; "
                    "retry when the batch has been forwarded or a lease has expired",
                )
            action, n = slot
        return {
            "model_version": version,
            "public": {"action": _int_array(action), "n": _int_array(n)},
        }

    @app.post("/v1/reports", status_code=202)
    async def post_report(request: Request, token: ClientToken) -> JSONResponse:
        body = await _read(request, MAX_REPORT_BYTES)
        version, key, report = _check_report(body, request.headers.get("idempotency-key"))
        model = await current_model(request.app, at_least=version)
        try:
            check_report_format(report, report_format(model))
        except (
            FieldError
        ) as exc:  # never queued: counted and kept (without its sender) for the operator
            await asyncio.to_thread(
                store.quarantine,
                version,
                exc.field,
                exc.message,
                len(canonical(body, allow_nan=True)),
            )
            raise Refused(
                exc.status, f"{exc}; the report was quarantined, not forwarded", exc.field
            ) from None
        current = int(model["model_version"])
        if version != current:
            raise Refused(
                409,
                f"{'future' if version > current else 'stale'} model_version {version}: the "
                f"current model version is {current}; fetch GET /v1/model and randomize again",
                "model_version",
            )
        fwd: Forwarder = request.app.state.forwarder
        if protocol_batch_size(model) == 0:
            raise Refused(
                409,
                f"model version {current} has no open batch (the schedule has committed "
                "to an action): there is nothing to report",
                "model_version",
            )
        digest = report_digest(token.name, key)
        budget = report_budget(model, token.device_epsilon or settings.device_epsilon)
        try:
            outcome = await asyncio.to_thread(
                store.add, digest, version, report, protocol_batch_size(model), token.name, budget
            )
        except ValueError as e:
            raise Refused(422, f"report is not valid JSON data: {e}", "report") from None
        if outcome == "full":
            raise Refused(
                409,
                f"the batch of model version {version} is complete; "
                "fetch GET /v1/model for the next one",
                "model_version",
            )
        if outcome == "budget":
            g = model.get("guarantee", {})
            raise Refused(
                429,
                f"report budget of device {token.name!r} exhausted: each report spends the accounted "
                f"epsilon={g.get('epsilon')} and the device's budget allows {budget} report(s)",
                "Authorization",
            )
        if outcome == "queued":
            wake.set()
        return JSONResponse(
            {
                "accepted": True,
                "duplicate": outcome == "duplicate",
                "forwarding": fwd.blocked is None,
            },
            status_code=202,
        )

    @app.get("/v1/health")
    async def health(request: Request) -> dict[str, str]:
        """Public liveness (no details)."""
        limit_anonymous(request)
        return {"status": "ok"}

    @app.post("/v1/admin/tokens/reload")
    async def reload_tokens(_: AdminToken) -> dict[str, Any]:
        """Read the tokens file again (rotation; also on ``SIGHUP``)."""
        try:
            n = settings.tokens.reload()
        except ConfigError as exc:
            raise Refused(422, f"tokens not reloaded, the old ones stay: {exc}", "tokens") from None
        return {"reloaded": True, "tokens": n}

    @app.get("/v1/status")
    async def status(request: Request, _: OperatorToken) -> dict[str, Any]:
        fwd: Forwarder = request.app.state.forwarder
        model = fwd.model or {}
        return {
            "role": "shuffler",
            "server_url": settings.server_url,
            "min_batch": settings.min_batch,
            "model_version": model.get("model_version"),
            "protocol_batch_size": protocol_batch_size(model) if model else None,
            "pending": store.pending_versions(),
            "outbox": len(store.outbox()),
            **store.counters(),
            "blocked": fwd.blocked,
            "stalled": fwd.stalled,
            "last_error": fwd.last_error,
            "quarantined": store.quarantined(),
            "dead_letters": store.dead_letters(),
        }

    @app.post("/v1/admin/requeue")
    async def requeue(request: Request, _: AdminToken) -> dict[str, Any]:
        """Put a dead-lettered batch back in the outbox: ``{"batch_id": ...}``."""
        body = await _read(request, MAX_REPORT_BYTES)
        try:
            reject_unknown(body, ("batch_id",))
        except FieldError as exc:
            raise Refused(422, str(exc), exc.field) from None
        bid = body.get("batch_id")
        if not isinstance(bid, str) or not await asyncio.to_thread(store.requeue, bid):
            raise Refused(404, f"no dead-lettered batch {str(bid)[:40]!r}", "batch_id")
        wake.set()
        return {"requeued": bid}

    @app.get("/metrics", response_class=PlainTextResponse)
    async def metrics(request: Request, _: OperatorToken) -> str:
        c = store.counters()
        lines = []
        for name, help_ in (
            ("reports_received", "Reports acknowledged (retries not counted)."),
            ("reports_forwarded", "Reports forwarded to the server in shuffled batches."),
            ("batches_forwarded", "Shuffled batches the server acknowledged."),
            ("reports_quarantined", "Reports that failed the shuffler's checks (never queued)."),
            ("server_quarantined", "Forwarded reports the server quarantined."),
            ("batches_dead", "Batches moved to the dead letters after repeated refusals."),
        ):
            lines += [
                f"# HELP privbandits_shuffler_{name}_total {help_}",
                f"# TYPE privbandits_shuffler_{name}_total counter",
                f"privbandits_shuffler_{name}_total {c[name]}",
            ]
        lines += [
            "# HELP privbandits_shuffler_pending_reports Reports waiting for a complete batch.",
            "# TYPE privbandits_shuffler_pending_reports gauge",
            f"privbandits_shuffler_pending_reports {store.pending()}",
        ]
        fwd: Forwarder = request.app.state.forwarder
        lines += [
            "# HELP privbandits_shuffler_batch_stalled 1 while the open batch is stalled.",
            "# TYPE privbandits_shuffler_batch_stalled gauge",
            f"privbandits_shuffler_batch_stalled {int(fwd.stalled is not None)}",
        ]
        version = (fwd.model or {}).get("model_version")
        if isinstance(version, int):
            slots = await asyncio.to_thread(store.slot_state, version, settings.clock())
            lines += [
                "# HELP privbandits_shuffler_action_slots Action slots of the open batch by state.",
                "# TYPE privbandits_shuffler_action_slots gauge",
                *(
                    f'privbandits_shuffler_action_slots{{state="{k}"}} {v}'
                    for k, v in slots.items()
                    if k != "total"
                ),
            ]
        return "\n".join(lines) + "\n"

    return app
