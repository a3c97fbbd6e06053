"""Reports/s and latency of a served model at 1, 8 and 32 clients: SQLite with one process and
PostgreSQL with two worker processes (issue 22, "Scale out").

For each back end one ``privbandits serve --init`` is started on a new database (SQLite in WAL mode
with ``synchronous=NORMAL``; PostgreSQL: a throwaway server on a loopback port, started as the
service tests do, and ``--workers 2``), valid privatized reports are precomputed with the
algorithm's device code, and the project's asynchronous load clients
(:mod:`service_load`: ``httpx.AsyncClient``, one connection and one token per client, a fresh
idempotency key per report) post them at each concurrency in turn.  Printed per row: accepted
reports/s over the timed phase, p50 / p99 latency of ``POST /v1/reports`` as the clients see it,
server-counted reports (must equal the accepted ones), and the 1-minute load average before and
after the row (the machine is shared: the figures are only as good as the load beside them).

Bounded: ``--reports`` per row (default 1500) and ``--max-seconds`` per row.  Not run in CI.

Usage::

    python benchmarks/service_scaleout.py [--reports 1500] [--max-seconds 60] [--backends sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

import service_load  # noqa: E402

CLIENTS = (1, 8, 32)


def _rows(
    url: str, secrets: list[str], bodies: list[dict[str, Any]], reports: int, max_s: float
) -> list[dict[str, Any]]:
    out = []
    used = 0
    asyncio.run(service_load._blast(url, secrets, bodies[:200], 8, max_s))  # warm-up
    used = 200
    for c in CLIENTS:
        before_counted = service_load.counted(url)
        load0 = os.getloadavg()[0]
        lat, ok, errors, wall = asyncio.run(
            service_load._blast(url, secrets, bodies[used : used + reports], c, max_s)
        )
        used += reports
        ms = np.asarray(lat) * 1e3
        out.append(
            {
                "clients": c,
                "accepted": ok,
                "errors": len(errors),
                "first_error": errors[0] if errors else None,
                "reports_per_s": ok / wall,
                "p50_ms": float(np.percentile(ms, 50)) if ms.size else float("nan"),
                "p99_ms": float(np.percentile(ms, 99)) if ms.size else float("nan"),
                "counted": service_load.counted(url) - before_counted,
                "load": (load0, os.getloadavg()[0]),
            }
        )
    return out


def sweep(backend: str, reports: int, max_s: float, algorithm: str) -> list[dict[str, Any]]:
    """The three rows of one back end."""
    pg = None
    with tempfile.TemporaryDirectory(prefix="pb-scale-") as tmp:
        db, workers = None, 1
        if backend == "postgresql":
            from tests.service.pg import PostgresServer

            pg = PostgresServer(service_load._free_port())
            pg.start()
            db, workers = pg.create_database("bench"), 2
        total = 200 + reports * len(CLIENTS)
        proc, url, secrets = service_load._start_server(
            Path(tmp), algorithm, max(CLIENTS), "NORMAL", 10 * total, db=db, workers=workers
        )
        try:
            bodies = service_load._reports(url, secrets[0], total, seed=1)
            rows = _rows(url, secrets, bodies, reports, max_s)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if pg is not None:
                pg.stop()
    for r in rows:
        r["backend"] = f"{backend} ({workers} worker{'s' if workers > 1 else ''})"
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reports", type=int, default=1500)
    ap.add_argument("--max-seconds", type=float, default=60.0)
    ap.add_argument("--algorithm", default="ldp-ols")
    ap.add_argument("--backends", default="sqlite,postgresql")
    a = ap.parse_args()
    print(
        f"{'back end':<26}{'clients':>8}{'reports/s':>11}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'counted':>9}{'errors':>8}  load avg (1 min) before/after"
    )
    for backend in a.backends.split(","):
        t0 = time.monotonic()
        for r in sweep(backend, a.reports, a.max_seconds, a.algorithm):
            print(
                f"{r['backend']:<26}{r['clients']:>8}{r['reports_per_s']:>11.0f}{r['p50_ms']:>9.1f}"
                f"{r['p99_ms']:>9.1f}{r['counted']:>9}{r['errors']:>8}  "
                f"{r['load'][0]:.1f} / {r['load'][1]:.1f}"
                + (f"  first error: {r['first_error']}" if r["first_error"] else ""),
                flush=True,
            )
        print(f"  ({backend}: {time.monotonic() - t0:.0f} s including start-up)", flush=True)


if __name__ == "__main__":
    main()
