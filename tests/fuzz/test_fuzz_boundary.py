"""Fuzz of the memory-safe boundary (issue 21, item 4): every entry point, malformed inputs, in subprocesses.

Every registered algorithm is reset on a small problem and each of its entry points -- the
curator's ``select`` / ``update``, the client's ``choose`` / ``randomize`` / ``choose_batch`` /
``randomize_batch`` / ``respond``, the round protocol's ``device_choose`` / ``device_randomize``,
the server's ``receive`` / ``receive_batch`` and the shuffler's ``collect`` -- is fed wrong shapes,
dtypes, arm indices, round numbers, non-finite and huge values, and malformed public states and
messages (:mod:`tests.fuzz.worker`).  Each must answer with a
:class:`~privbandits.core.errors.PrivbanditsError` or a correct result: never a crash, never another
exception type, never an output holding values that were not passed in.

The cases run in worker processes (a batch of algorithms per process, two processes at a time), so
that a segmentation fault fails the algorithm's test with the case it died on; the worker is then
restarted past that case.  The default run sweeps every mutation of every argument once plus a few
hypothesis examples; ``-m slow`` adds a larger hypothesis search.  Run with ``NUMBA_BOUNDSCHECK=1``
(``.ci/run`` does) an out-of-bounds read in compiled code raises instead of reading memory, so it
fails here too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from privbandits.algorithms import available

ROOT = Path(__file__).resolve().parents[2]
ALGORITHMS = sorted(available())
#: Worker processes run at a time.
PARALLEL = 2
#: Hypothesis examples per entry point beyond the sweep (default run, slow run).
EXAMPLES, EXAMPLES_SLOW = 3, 60
#: Seconds a worker may stay on one case (compiling included) before the case counts as a hang.
CASE_TIMEOUT = 900

#: Cases known to fail today, ``{"algorithm entry(argument=mutation": "the error"}``
#: (``known_failures.json``, written from a run's report by ``python -m tests.fuzz.test_fuzz_boundary
#: REPORT``): each is reported as an expected failure with its error; any other failing case fails.
#: Remove an entry when its algorithm is fixed (a known case that passes is reported too).
KNOWN_FILE = Path(__file__).with_name("known_failures.json")
KNOWN: dict[str, str] = json.loads(KNOWN_FILE.read_text()) if KNOWN_FILE.exists() else {}


def _key(case: str) -> str:
    """``"algorithm entry(argument=mutation"`` of a case's text."""
    return case.split(", pos=")[0]


def _run_group(
    names: list[str], tmp: Path, examples: int, *extra: str
) -> dict[str, list[dict[str, Any]]]:
    """Run ``names`` through the worker, restarting it past each crash; records by algorithm."""
    out, progress, skip = tmp / "results.jsonl", tmp / "progress.json", tmp / "skip.txt"
    out.write_text("")
    skip.write_text("")
    crashes: list[dict[str, Any]] = []
    for _attempt in range(200):
        cmd = [
            sys.executable,
            "-m",
            "tests.fuzz.worker",
            "--out",
            str(out),
            "--progress",
            str(progress),
            "--examples",
            str(examples),
            "--skip",
            str(skip),
            *extra,
            *names,
        ]
        code, tail = _watch(cmd, progress, tmp / "stderr.txt")
        if code == 0:
            break
        last = (
            json.loads(progress.read_text()) if progress.exists() and progress.read_text() else None
        )
        if last is None:
            raise AssertionError(
                f"the fuzz worker failed before its first case (exit {code}):\n{tail}"
            )
        how = (
            f"the process died with signal {signal.Signals(-code).name}"
            if code is not None and code < 0
            else f"the process exited with status {code}"
            if code is not None
            else "hang"
        )
        crashes.append(
            {
                "type": "failure",
                "alg": last["alg"],
                "entry": last["entry"],
                "case": last["case"],
                "error": f"{how}: {tail.strip().splitlines()[-1] if tail.strip() else ''}",
            }
        )
        done = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        lines = [f"{r['alg']}::{r['entry']}" for r in done if r["type"] == "done"]
        lines += [c["case"] for c in crashes]
        if last["entry"] == "reset":
            lines += [f"{last['alg']}::{e}" for e in _entries()]
        skip.write_text("\n".join(lines) + "\n")
    else:
        raise AssertionError("the fuzz worker kept crashing")
    records: dict[str, list[dict[str, Any]]] = defaultdict(list)
    seen: set[str] = set()
    for line in out.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            if r["type"] == "failure" and r["case"] in seen:  # an entry re-run after a restart
                continue
            seen.add(r["case"] if r["type"] == "failure" else "")
            records[r["alg"]].append(r)
    for c in crashes:
        records[c["alg"]].append(c)
    return records


def _watch(cmd: list[str], progress: Path, err: Path) -> tuple[int | None, str]:
    """Run a worker; kill it when its progress file stays on one case for :data:`CASE_TIMEOUT`
    seconds.  Returns (exit status or None for a hang, the end of its stderr)."""
    with err.open("w") as fh:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=fh, text=True)
        last, since = None, time.monotonic()
        while proc.poll() is None:
            time.sleep(0.5)
            now = progress.read_text() if progress.exists() else None
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since > CASE_TIMEOUT:
                proc.kill()
                proc.wait()
                return None, f"no answer within {CASE_TIMEOUT} s"
    return proc.returncode, err.read_text()[-2000:]


def _entries() -> tuple[str, ...]:
    from tests.fuzz.worker import ENTRIES

    return ENTRIES


def _run_all(tmp: Path, examples: int) -> dict[str, list[dict[str, Any]]]:
    groups = [ALGORITHMS[i::PARALLEL] for i in range(PARALLEL)]
    with ThreadPoolExecutor(PARALLEL) as pool:
        futures = []
        for i, names in enumerate(groups):
            d = tmp / f"group{i}"
            d.mkdir()
            futures.append(pool.submit(_run_group, names, d, examples))
        merged: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for f in futures:
            for alg, recs in f.result().items():
                merged[alg].extend(recs)
    return merged


@pytest.fixture(scope="module")
def fuzz_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    results = _run_all(tmp_path_factory.mktemp("fuzz"), EXAMPLES)
    report = os.environ.get("PRIVBANDITS_FUZZ_REPORT")
    if report:  # every record of the run, for known_failures.json or a CI artifact
        Path(report).write_text(json.dumps(results, indent=1))
    return results


def _judge(name: str, records: list[dict[str, Any]]) -> None:
    done = {r["entry"]: r["cases"] for r in records if r["type"] == "done"}
    fails = [r for r in records if r["type"] == "failure"]
    assert done or fails, f"{name}: the worker ran no case"
    new = [r for r in fails if _key(r["case"]) not in KNOWN]
    if new:
        lines = [f"  {r['case']}: {r['error']}" for r in new]
        raise AssertionError(
            f"{name}: {len(new)} malformed inputs were not refused with a clear error "
            f"({sum(done.values())} cases run):\n" + "\n".join(lines)
        )
    if fails:
        pytest.xfail(
            f"{name}: {len(fails)} known failures: "
            + "; ".join(f"{r['case']}: {r['error'][:120]}" for r in fails)
        )


@pytest.mark.parametrize("name", ALGORITHMS)
def test_entry_points_refuse_malformed_inputs(
    name: str, fuzz_results: dict[str, list[dict[str, Any]]]
) -> None:
    _judge(name, fuzz_results.get(name, []))


@pytest.mark.slow
def test_entry_points_refuse_malformed_inputs_long_search(tmp_path: Path) -> None:
    results = _run_all(tmp_path, EXAMPLES_SLOW)
    errors = []
    for name in ALGORITHMS:
        try:
            _judge(name, results.get(name, []))
        except AssertionError as exc:
            errors.append(str(exc))
        except pytest.xfail.Exception:
            pass
    assert not errors, "\n".join(errors)


def test_a_crash_fails_its_algorithm_with_the_case_and_the_rest_still_runs(tmp_path: Path) -> None:
    """A worker killed by SIGSEGV mid-case: the case it died on is reported, the worker is restarted
    past it, and the other cases and entry points still run."""
    crash = "uniform select(contexts=nan, pos=0)"
    records = _run_group(["uniform"], tmp_path, 0, "--crash-at", crash)["uniform"]
    dead = [r for r in records if r["type"] == "failure" and "SIGSEGV" in r["error"]]
    assert [r["case"] for r in dead] == [crash]
    done = {r["entry"]: r["cases"] for r in records if r["type"] == "done"}
    assert set(done) == {"select", "update"} and done["select"] > 10
    with pytest.raises(AssertionError, match="select.contexts=nan"):
        _judge("uniform", records)


def _environmental(error: str) -> bool:
    """A failure of the machine, not of the case: a hang, or numba's on-disk cache changed under it
    by another process (never recorded as known)."""
    return error.startswith("hang") or ("No such file or directory" in error and "numba-" in error)


def _write_known(report: Path) -> None:
    """``known_failures.json`` from a run's report (``PRIVBANDITS_FUZZ_REPORT``)."""
    results = json.loads(report.read_text())
    known = {
        _key(r["case"]): r["error"]
        for recs in results.values()
        for r in recs
        if r["type"] == "failure" and not _environmental(r["error"])
    }
    KNOWN_FILE.write_text(json.dumps(dict(sorted(known.items())), indent=1) + "\n")
    print(f"{len(known)} known failing cases -> {KNOWN_FILE}")


if __name__ == "__main__":
    _write_known(Path(sys.argv[1]))
