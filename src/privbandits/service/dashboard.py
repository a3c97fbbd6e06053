"""The dashboard of a running server: ``GET /`` and the reward telemetry of simulated traffic.

``GET /`` is one self-contained HTML page (inline CSS, JavaScript and SVG; nothing is loaded from
another host) that polls ``GET /v1/status`` (reports received, model version, accounted guarantee)
and ``GET /v1/simulation/rewards`` and redraws its cards and reward chart.  A token can be given in
the page's fragment (``/#token=...``); the fragment never leaves the browser and the page sends it
as a bearer token with each poll.

The reward chart is for *simulated* traffic only: the server never sees a user's reward (it
receives privatized reports), but a load simulator knows the rewards of the users it simulates and
may post them to ``POST /v1/simulation/rewards`` so that an operator sees the policy improve.  A
real deployment has no such source and the chart stays empty.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable
from importlib import resources
from typing import Any

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field

from privbandits.core.validation import check_int

__all__ = ["RewardTelemetry", "dashboard_router", "page_html"]

#: Largest number of rewards accepted in one telemetry post.
MAX_REWARDS_PER_POST = 10_000


def page_html(poll_ms: int = 1000) -> str:
    """The dashboard page, polling every ``poll_ms`` milliseconds."""
    poll_ms = check_int("poll_ms", poll_ms, 100, 60_000)
    text = resources.files("privbandits.service").joinpath("dashboard_page.html").read_text(encoding="utf-8")
    return text.replace("__POLL_MS__", str(poll_ms))


class RewardTelemetry:
    """Running windows of simulated users' rewards: the mean of each ``window`` consecutive rewards.

    Parameters
    ----------
    window : int
        Users per chart point.
    max_points : int
        Points kept (the oldest are dropped).
    """

    def __init__(self, window: int = 50, max_points: int = 500) -> None:
        self.window = check_int("window", window, 1)
        self.max_points = check_int("max_points", max_points, 2)
        self._points: deque[tuple[int, float]] = deque(maxlen=self.max_points)
        self._open_sum = 0.0
        self._open_n = 0
        self.users = 0
        self._lock = threading.Lock()

    def add(self, rewards: list[float]) -> None:
        """Record rewards of simulated users, in the order they were served."""
        for i, r in enumerate(rewards):
            if not math.isfinite(r):
                raise ValueError(f"rewards[{i}] must be finite, got {r!r}")
        with self._lock:
            for r in rewards:
                self._open_sum += float(r)
                self._open_n += 1
                self.users += 1
                if self._open_n == self.window:
                    self._points.append((self._open_n, self._open_sum / self._open_n))
                    self._open_sum, self._open_n = 0.0, 0

    def snapshot(self) -> dict[str, Any]:
        """``{"users", "window", "points": [{"n", "mean"}, ...]}`` (closed windows only)."""
        with self._lock:
            return {"users": self.users, "window": self.window,
                    "points": [{"n": n, "mean": m} for n, m in self._points]}


class RewardPost(BaseModel):
    """Body of ``POST /v1/simulation/rewards``."""

    rewards: list[float] = Field(max_length=MAX_REWARDS_PER_POST)


def _allow() -> None:
    return None


def dashboard_router(telemetry: RewardTelemetry | None = None, poll_ms: int = 1000,
                     read_access: Callable[..., Any] = _allow,
                     write_access: Callable[..., Any] = _allow) -> APIRouter:
    """Routes ``GET /``, ``GET /v1/simulation/rewards`` and ``POST /v1/simulation/rewards``.

    Parameters
    ----------
    telemetry : RewardTelemetry, optional
        Where simulated rewards are kept (a new one by default).
    poll_ms : int
        Refresh period of the page.
    read_access, write_access : callable
        FastAPI dependencies that refuse a request without the right token (reading the
        telemetry; posting to it).
    """
    tel = telemetry if telemetry is not None else RewardTelemetry()
    html = page_html(poll_ms)
    router = APIRouter()

    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
    def dashboard() -> HTMLResponse:
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    @router.get("/v1/simulation/rewards", dependencies=[Depends(read_access)])
    def simulation_rewards() -> dict[str, Any]:
        return tel.snapshot()

    @router.post("/v1/simulation/rewards", dependencies=[Depends(write_access)])
    def post_simulation_rewards(body: RewardPost) -> dict[str, Any]:
        try:
            tel.add(body.rewards)
        except ValueError as e:
            raise HTTPException(status_code=422, detail=str(e)) from None
        return {"users": tel.users}

    return router
