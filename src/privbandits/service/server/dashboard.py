"""The dashboard of a running server: ``GET /``, one self-contained HTML page.

The page (inline CSS, JavaScript and SVG: nothing is loaded from another host) polls
``GET /v1/status`` and shows the reports received, the model version, the accounted guarantee
and a live chart of the mean reward of *simulated* traffic: each point is the mean of the rewards
simulated users posted (``POST /v1/simulation/rewards``) since the previous poll.  The server never
sees a real user's reward (it receives privatized reports), so for real traffic the chart stays
empty.
"""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

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


def dashboard_router(poll_ms: int = 1000) -> APIRouter:
    """The route ``GET /`` serving :func:`page_html` (mounted by the app factory)."""
    html = page_html(poll_ms)
    router = APIRouter()

    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
    def dashboard() -> HTMLResponse:
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    return router
