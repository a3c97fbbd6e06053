"""The dashboard page: served by the app, and checked in a real headless browser (Chromium)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from privbandits.service.config import parse_service_config
from privbandits.service.device.simulate import simulate_clients
from privbandits.service.server.app import create_app
from privbandits.service.server.dashboard import page_html
from privbandits.service.server.store import open_store
from tests.service.conftest import (
    ADMIN,
    CLIENT,
    CLIENT2,
    InThreadServer,
    make_client,
    service_raw,
    tokens,
)

CHROMIUM = os.environ.get("PRIVBANDITS_CHROMIUM", "/usr/bin/chromium")
#: The documentation's screenshot, rewritten when PRIVBANDITS_DOCS_SCREENSHOT=1 (else a temporary file).
DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "dashboard.png"


def test_page_is_self_contained() -> None:
    html = page_html(500)
    assert "setTimeout(poll, POLL_MS)" in html and "var POLL_MS = 500;" in html
    for remote in ("http://", "https://", "//cdn", "<link", "src="):
        assert remote not in html  # nothing is fetched from another host
    with pytest.raises(ValueError, match="poll_ms"):
        page_html(10)


def test_app_serves_the_dashboard() -> None:
    with make_client(service_raw()) as tc:
        res = tc.get("/")
        status = tc.get("/v1/status")
    assert res.status_code == 200 and res.headers["content-type"].startswith("text/html")
    assert "v1/status" in res.text and "Reports received" in res.text
    for tile in ("refusals", "latency", "db", "batches", "budget"):
        assert f'id="{tile}"' in res.text
    assert status.status_code == 401  # the page holds no data; its data needs an operator token


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[str]:
    raw = service_raw(
        "ldp-ols",
        horizon=5000,
        seed=2,
        env={"kind": "synthetic", "d": 3, "K": 5, "noise_scale": 0.3},
        simulation=True,
    )
    app = create_app(parse_service_config(raw), open_store(str(tmp_path / "dash.db")), tokens())
    served = InThreadServer(app)
    yield served.url
    served.stop()


def _text(page: Any, sel: str) -> str:
    return str(page.inner_text(sel)).strip()


@pytest.mark.skipif(
    (not Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is None)
    and os.environ.get("PRIVBANDITS_REQUIRE_CHROMIUM") != "1",
    reason=f"no Chromium at {CHROMIUM} (Debian package 'chromium'; .ci/run installs it)",
)
def test_dashboard_in_headless_chromium(live_server: str, tmp_path: Path) -> None:
    """With an operator token the page shows the server's counts and tiles, and its chart, drawn
    from the database's history, grows while simulated users report and is whole after a reload."""
    shot = (
        DOCS_SCREENSHOT
        if os.environ.get("PRIVBANDITS_DOCS_SCREENSHOT") == "1"
        else tmp_path / "dashboard.png"
    )
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra")
    url = live_server
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-dev-shm-usage",
                "--disable-gpu",
                "--disable-background-networking",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 640})
            page.goto(url + "/")  # no token: the page asks for one and shows nothing
            page.wait_for_selector("#login:not([hidden])", timeout=15_000)
            assert _text(page, "#reports") == "–"
            page.goto(url + "/#token=" + ADMIN)
            page.wait_for_function(
                "document.getElementById('version').textContent === '0'", timeout=15_000
            )
            assert "#token" not in page.url  # the token leaves the address bar
            assert _text(page, "#db") == "ok"
            assert _text(page, "#reports") == "0"
            assert "ε = 1" in _text(page, "#guarantee") and "local" in _text(page, "#guarantee-sub")
            assert "ldp-ols" in _text(page, "#algorithm")
            points = []
            for wave in (1, 2):  # two waves of simulated users; the page polls every second
                summary = simulate_clients(url, [CLIENT, CLIENT2], 150, seed=0, workers=2)
                assert not summary.errors, summary.errors
                page.wait_for_function(
                    f"document.getElementById('reports').textContent === '{150 * wave}'",
                    timeout=15_000,
                )
                page.wait_for_function(
                    "Number(document.getElementById('chart').getAttribute('data-points') "
                    f"|| 0) > {points[-1] if points else 0}",
                    timeout=15_000,
                )
                points.append(int(page.get_attribute("#chart", "data-points") or 0))
            assert points[1] > points[0] >= 1  # the chart grew with the traffic
            status = httpx.get(url + "/v1/status", headers={"Authorization": f"Bearer {ADMIN}"})
            status = status.json()
            assert _text(page, "#version") == f"{status['model_version']:,}"
            assert _text(page, "#sim-users") == f"{status['simulated_rewards']['count']:,}"
            assert "/" in _text(page, "#latency") and "/" in _text(page, "#budget")
            n_points = int(page.get_attribute("#chart", "data-points") or 0)
            line = page.get_attribute("#line", "points")
            assert line is not None and len(line.split()) == n_points >= points[1]
            page.reload()  # the history comes from the database: many points at once
            page.wait_for_function(
                "Number(document.getElementById('chart').getAttribute('data-points') || 0) > 10",
                timeout=15_000,
            )
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot))
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
