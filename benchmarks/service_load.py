"""Load test of a served model: sustained reports/s and latency on 127.0.0.1 (issue 14, "Load").

Starts ``privbandits serve`` (uvicorn, one process) on a loopback port with a SQLite database,
pre-computes valid privatized reports with the algorithm's own device code (the randomizer's
output for random users; only the report path is timed, not the devices' work), then ``--clients``
concurrent asynchronous clients (``httpx.AsyncClient``, one connection each, each with its own
client token) post ``--reports`` reports in all, each with a fresh idempotency key, and waits for
every answer.  Bounded: at most ``--reports`` requests and ``--max-seconds`` seconds.

It prints the sustained rate (accepted reports / wall time of the timed phase), the p50 / p95 /
p99 / max latency of ``POST /v1/reports`` as seen by the clients, the CPU time the server process
and the load clients spent per report (the figures other jobs on a shared machine disturb least),
and checks that the server counted exactly the accepted reports.

Every accepted report is committed to SQLite before its answer (one transaction per report, the
service's rule "acknowledged = durable"); ``--synchronous`` picks the SQLite ``synchronous`` pragma
in WAL mode: ``NORMAL`` (default: a committed report survives a crash or ``kill -9`` of the
server; a power loss may drop the last commits) or ``FULL`` (fsync per commit: survives power
loss too).

The configuration disables what would refuse a load test by design: per-token rate limits and
report budgets are set high, and ``max_staleness`` covers the run (reports are computed from
model version 0).

``--generator wrk`` drives the same server with ``wrk`` (Debian package ``wrk``: an event-driven
HTTP load generator written in C, one thread) instead of the Python clients: the precomputed
report bodies and the client tokens go into a Lua script that gives every request a fresh
idempotency key and counts the answers that are not 200.  On a 2-core machine the Python clients
cost more CPU per report than the server and so cap the rate they can measure; wrk's cost per
request is small, so the figure it reports is the server's.  The run lasts ``--max-seconds``
(``--reports`` only sizes the pool of distinct bodies).

Usage::

    python benchmarks/service_load.py [--clients 32] [--reports 5000] [--algorithm ldp-ols]
        [--synchronous NORMAL|FULL] [--max-seconds 120] [--generator httpx|wrk] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import numpy as np

SRC = Path(__file__).resolve().parents[1] / "src"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _config(algorithm: str, horizon: int) -> str:
    return f"""name = "load"
horizon = {horizon}
seeds = [0]

[env]
kind = "synthetic"
d = 5
K = 10
noise_scale = 0.3

[[algorithms]]
name = "{algorithm}"

[service]
max_staleness = {horizon}
rate = 1000000.0
burst = 1000000
device_epsilon = 1000000000.0
"""


#: The operator token of the load runs (reads GET /v1/status).
ADMIN = f"load-admin-{uuid.uuid4().hex}"


def _tokens(n: int) -> tuple[str, list[str]]:
    secrets = [f"load-client-{i:06d}-{uuid.uuid4().hex}" for i in range(n)]
    text = "\n".join(
        f'[[tokens]]\nname = "dev-{i}"\nrole = "client"\ntoken = "{s}"\n'
        for i, s in enumerate(secrets)
    )
    text += f'\n[[tokens]]\nname = "ops"\nrole = "admin"\ntoken = "{ADMIN}"\n'
    return text, secrets


def counted(url: str) -> int:
    """Reports the server counted (``GET /v1/status`` with the operator token)."""
    res = httpx.get(url + "/v1/status", timeout=10, headers={"Authorization": f"Bearer {ADMIN}"})
    return int(res.json()["reports_received"])


def _reports(url: str, token: str, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` distinct valid report bodies from the algorithm's device code (model version 0)."""
    sys.path.insert(0, str(SRC))
    from privbandits.service.device.client import DeviceClient

    rng = np.random.default_rng(seed)
    with httpx.Client(timeout=30) as http:
        dev = DeviceClient(url, token, http=http, rng_policy=rng, rng_client=rng)
        model = dev.fetch_model()
        K, d = model.info["problem"]["K"], model.info["problem"]["d"]
        out = []
        for _ in range(n):
            X = rng.normal(size=(K, d))
            X /= np.linalg.norm(X, axis=1, keepdims=True)
            a = dev.choose(X, model)
            out.append(dev.privatize(X, a, float(rng.uniform(-1, 1)), model))
        return out


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux ``/proc``), NaN elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_server(
    workdir: Path,
    algorithm: str,
    n_tokens: int,
    synchronous: str,
    horizon: int,
    db: str | None = None,
    workers: int = 1,
) -> tuple[subprocess.Popen[bytes], str, list[str]]:
    """``privbandits serve --init`` on a new database (SQLite in ``workdir`` unless ``db``)."""
    (workdir / "load.toml").write_text(_config(algorithm, horizon))
    text, secrets = _tokens(n_tokens)
    (workdir / "tokens.toml").write_text(text)
    port = _free_port()
    if db is None:
        db = f"sqlite:///{workdir / 'load.db'}?synchronous={synchronous}"
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "privbandits.cli",
            "serve",
            str(workdir / "load.toml"),
            "--tokens",
            str(workdir / "tokens.toml"),
            "--db",
            db,
            "--port",
            str(port),
            "--init",
            "--state-dir",
            str(workdir / "state"),
            "--workers",
            str(workers),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}"
            )
        try:
            if httpx.get(url + "/v1/health", timeout=1).status_code == 200:
                return proc, url, secrets
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start within 600 s")


async def _blast(
    url: str, secrets: list[str], bodies: list[dict[str, Any]], clients: int, max_seconds: float
) -> tuple[list[float], int, list[str], float]:
    """Post every body; ``(latencies of accepted reports, accepted, errors, wall seconds)``."""
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for b in bodies:
        queue.put_nowait(b)
    lat: list[float] = []
    errors: list[str] = []
    stop = time.perf_counter() + max_seconds

    async def client(i: int) -> None:
        headers = {"Authorization": f"Bearer {secrets[i]}", "Content-Type": "application/json"}
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as http:
            while time.perf_counter() < stop:
                try:
                    body = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                data = json.dumps(body).encode()
                t0 = time.perf_counter()
                res = await http.post(
                    "/v1/reports",
                    content=data,
                    headers={**headers, "Idempotency-Key": uuid.uuid4().hex},
                )
                dt = time.perf_counter() - t0
                if res.status_code == 200:
                    lat.append(dt)
                else:
                    errors.append(f"{res.status_code}: {res.text[:200]}")

    t0 = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    return lat, len(lat), errors, time.perf_counter() - t0


_WRK_SCRIPT = """
local bodies = {%(bodies)s}
local tokens = {%(tokens)s}
n, errors, first = 0, 0, ""  -- globals: done() reads them with thread:get
function request()
  n = n + 1
  local headers = {["Content-Type"] = "application/json",
                   ["Authorization"] = "Bearer " .. tokens[(n %% #tokens) + 1],
                   ["Idempotency-Key"] = string.format("%(run)s-%%d", n)}
  return wrk.format("POST", "/v1/reports", headers, bodies[(n %% #bodies) + 1])
end
function response(status, headers, body)
  if status ~= 200 then
    errors = errors + 1
    if first == "" then first = status .. ": " .. string.sub(body, 1, 200) end
  end
end
local threads = {}
function setup(thread) table.insert(threads, thread) end
function done(summary, latency, requests)
  local e, f = 0, ""
  for _, t in ipairs(threads) do e = e + t:get("errors"); if f == "" then f = t:get("first") end end
  io.write(string.format("RESULT %%d %%d %%d %%.3f %%.3f %%.3f %%.3f\\n", summary.requests, e,
           summary.duration, latency:percentile(50), latency:percentile(95), latency:percentile(99),
           latency.max))
  io.write("FIRST " .. f .. "\\n")
end
"""


def _lua_string(text: str) -> str:
    return "[==[" + text + "]==]"


def _run_wrk(
    url: str,
    secrets: list[str],
    bodies: list[dict[str, Any]],
    clients: int,
    seconds: float,
    workdir: Path,
) -> tuple[int, int, str | None, float, dict[str, float]]:
    """wrk for ``seconds``; ``(requests, errors, first error, wall seconds, latency ms percentiles)``."""
    script = workdir / "load.lua"
    script.write_text(
        _WRK_SCRIPT
        % {
            "run": uuid.uuid4().hex,
            "bodies": ", ".join(_lua_string(json.dumps(b)) for b in bodies),
            "tokens": ", ".join(_lua_string(t) for t in secrets),
        }
    )
    proc = subprocess.run(
        [
            "wrk",
            "-t1",
            f"-c{clients}",
            f"-d{max(1, int(seconds))}s",
            "--timeout",
            "10s",
            "-s",
            str(script),
            url,
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"wrk failed: {proc.stderr.strip() or proc.stdout.strip()}")
    out = proc.stdout
    m = re.search(r"RESULT (\d+) (\d+) (\d+) ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)", out)
    if m is None:
        raise RuntimeError(f"unexpected wrk output:\n{out}")
    first = out.split("FIRST ", 1)[1].strip() if "FIRST " in out else ""
    requests, errors, micros = int(m[1]), int(m[2]), int(m[3])
    lat = {k: float(v) / 1e3 for k, v in zip(("p50", "p95", "p99", "max"), m.groups()[3:])}
    return requests, errors, first or None, micros / 1e6, lat


def run_wrk(
    clients: int, reports: int, algorithm: str, synchronous: str, seconds: float
) -> dict[str, Any]:
    """One bounded load test driven by wrk (see the module docstring); returns the figures."""
    if shutil.which("wrk") is None:
        raise SystemExit("--generator wrk needs the wrk program (Debian: apt-get install wrk)")
    with tempfile.TemporaryDirectory(prefix="pb-load-") as tmp:
        horizon = 10**9
        proc, url, secrets = _start_server(Path(tmp), algorithm, clients, synchronous, horizon)
        try:
            bodies = _reports(url, secrets[0], reports, seed=1)
            _run_wrk(url, secrets, bodies, clients, 2, Path(tmp))  # warm-up: connections, caches
            before = counted(url)
            cpu0 = _cpu_seconds(proc.pid)
            requests, errors, first, wall, lat = _run_wrk(
                url, secrets, bodies, clients, seconds, Path(tmp)
            )
            server_cpu = _cpu_seconds(proc.pid) - cpu0
            n_counted = counted(url) - before
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    ok = requests - errors
    return {
        "algorithm": algorithm,
        "generator": "wrk",
        "clients": clients,
        "reports": requests,
        "accepted": ok,
        "errors": errors,
        "first_error": first,
        "seconds": wall,
        "reports_per_s": ok / wall,
        "p50_ms": lat["p50"],
        "p95_ms": lat["p95"],
        "p99_ms": lat["p99"],
        "max_ms": lat["max"],
        "server_cpu_ms_per_report": 1e3 * server_cpu / max(ok, 1),
        "client_cpu_ms_per_report": float("nan"),
        "server_counted": n_counted,
        "expected_count": ok,
        "synchronous": synchronous,
        "loadavg": os.getloadavg(),
    }


def run(
    clients: int,
    reports: int,
    algorithm: str,
    synchronous: str,
    max_seconds: float,
    warmup: int = 200,
) -> dict[str, Any]:
    """One bounded load test; returns the figures."""
    with tempfile.TemporaryDirectory(prefix="pb-load-") as tmp:
        proc, url, secrets = _start_server(
            Path(tmp), algorithm, clients, synchronous, 10 * (reports + warmup)
        )
        try:
            bodies = _reports(url, secrets[0], reports + warmup, seed=1)
            asyncio.run(
                _blast(url, secrets, bodies[:warmup], clients, max_seconds)
            )  # connections, caches
            cpu0, own0 = _cpu_seconds(proc.pid), time.process_time()
            lat, ok, errors, wall = asyncio.run(
                _blast(url, secrets, bodies[warmup:], clients, max_seconds)
            )
            server_cpu, client_cpu = _cpu_seconds(proc.pid) - cpu0, time.process_time() - own0
            n_counted = counted(url)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    ms = np.asarray(lat) * 1e3
    q = (lambda p: float(np.percentile(ms, p))) if ms.size else (lambda p: float("nan"))
    return {
        "algorithm": algorithm,
        "clients": clients,
        "reports": reports,
        "accepted": ok,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "seconds": wall,
        "reports_per_s": ok / wall,
        "p50_ms": q(50),
        "p95_ms": q(95),
        "p99_ms": q(99),
        "max_ms": float(ms.max()) if ms.size else float("nan"),
        "server_cpu_ms_per_report": 1e3 * server_cpu / max(ok, 1),
        "client_cpu_ms_per_report": 1e3 * client_cpu / max(ok, 1),
        "server_counted": n_counted,
        "expected_count": ok + warmup,
        "synchronous": synchronous,
        "loadavg": os.getloadavg(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--reports", type=int, default=5000)
    ap.add_argument("--algorithm", default="ldp-ols")
    ap.add_argument("--synchronous", choices=("NORMAL", "FULL"), default="NORMAL")
    ap.add_argument("--max-seconds", type=float, default=120.0)
    ap.add_argument(
        "--generator",
        choices=("httpx", "wrk"),
        default="httpx",
        help="load clients: Python async httpx (default) or the wrk program",
    )
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args()
    if a.generator == "wrk":
        r = run_wrk(a.clients, a.reports, a.algorithm, a.synchronous, a.max_seconds)
    else:
        r = run(a.clients, a.reports, a.algorithm, a.synchronous, a.max_seconds)
    if a.json:
        print(json.dumps(r))
        return
    print(
        f"{r['algorithm']}, {a.generator} load, SQLite WAL synchronous={r['synchronous']}, {r['clients']} concurrent clients, "
        f"{r['accepted']}/{r['reports']} reports accepted in {r['seconds']:.2f} s ({r['errors']} errors)"
    )
    print(
        f"sustained: {r['reports_per_s']:.0f} reports/s; latency p50 {r['p50_ms']:.1f} ms, "
        f"p95 {r['p95_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms, max {r['max_ms']:.1f} ms"
    )
    print(
        f"server CPU per report {r['server_cpu_ms_per_report']:.2f} ms "
        f"(= {1e3 / r['server_cpu_ms_per_report']:.0f} reports per server CPU-second); "
        f"the load clients' CPU per report {r['client_cpu_ms_per_report']:.2f} ms"
    )
    print(
        f"server counted {r['server_counted']} (expected {r['expected_count']}); "
        f"load average {', '.join(f'{x:.2f}' for x in r['loadavg'])}"
    )


if __name__ == "__main__":
    main()
