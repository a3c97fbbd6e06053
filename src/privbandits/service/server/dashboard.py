"""The dashboard of a running server: ``GET /``, one self-contained HTML page.

The page (inline CSS, JavaScript and SVG: nothing is loaded from another host) carries no data
itself: it asks for an **operator token** (kept in the browser's ``sessionStorage``; it may also be
given in the address's fragment, ``/#token=...``, which the browser never sends to the server),
loads the history of the reports received from the database (``GET /v1/history``, so the chart
is whole right after a reload) and polls ``GET /v1/status`` with the token.  Its tiles: reports
received, model version, accounted guarantee, refusals by kind, latency percentiles, database
health, shuffled batches received, budget spent and remaining, quarantined reports and the mean
of simulated rewards (simulations only: the server never sees a real user's reward).  The
shuffler's queue is on the shuffler's own ``GET /v1/status`` and ``GET /metrics``.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from privbandits.core.validation import check_int

__all__ = ["dashboard_router", "page_html"]


def page_html(poll_ms: int = 1000) -> str:
    """The dashboard page, polling ``v1/status`` every ``poll_ms`` milliseconds (100 .. 60000)."""
    poll_ms = check_int("poll_ms", poll_ms, 100, 60_000)
    text = (
        resources.files("privbandits.service.server")
        .joinpath("dashboard_page.html")
        .read_text(encoding="utf-8")
    )
    return text.replace("__POLL_MS__", str(poll_ms))


def dashboard_router(
    poll_ms: int = 1000,
    before: Callable[[Request], None] | None = None,
    on_refusal: Callable[[Any], Response] | None = None,
) -> APIRouter:
    """The route ``GET /`` serving :func:`page_html` (mounted by the app factory).

    ``before(request)`` runs first (the app's rate limit of requests without a token); an exception
    it raises is answered by ``on_refusal(exc)``."""
    html = page_html(poll_ms)
    router = APIRouter()

    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
    def dashboard(request: Request) -> Response:
        if before is not None:
            try:
                before(request)
            except Exception as exc:
                if on_refusal is None:
                    raise
                return on_refusal(exc)
        return HTMLResponse(
            html,
            headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
        )

    return router
