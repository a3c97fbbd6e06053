"""The bounded load benchmark (benchmarks/service_load.py) in a small configuration."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "service_load.py"


@pytest.mark.slow
def test_small_load_run_counts_every_report_once() -> None:
    """8 concurrent clients, 400 reports on a real uvicorn server with SQLite: every report is
    accepted and counted exactly once, and the figures are finite."""
    spec = importlib.util.spec_from_file_location("service_load", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    r = bench.run(
        clients=8,
        reports=400,
        algorithm="ldp-ols",
        synchronous="NORMAL",
        max_seconds=120,
        warmup=50,
    )
    assert r["errors"] == 0, r["first_error"]
    assert r["accepted"] == 400
    assert r["server_counted"] == r["expected_count"] == 450
    assert r["reports_per_s"] > 0 and math.isfinite(r["p99_ms"]) and r["p50_ms"] <= r["p99_ms"]
    assert r["server_cpu_ms_per_report"] > 0
