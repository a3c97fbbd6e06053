"""Mutation testing of privbandits' critical modules with cosmic-ray.

Usage (from the repository root, in an environment with the ``dev`` extra installed)::

    python scripts/mutation.py                      # every module of MODULES, all its mutants
    python scripts/mutation.py privacy/samplers.py  # some modules (paths under src/privbandits)
    python scripts/mutation.py --sample 12          # a fixed sample of 12 mutants per module
    python scripts/mutation.py --list               # the modules and the tests each one runs

For each module the script copies the checkout (``git ls-files`` plus uncommitted changes) to a
scratch directory, so that the checkout itself is never modified, creates a cosmic-ray session
there, skips the operators listed in ``EXCLUDED_OPERATORS`` and the lines marked
``# pragma: no mutate``, runs every remaining mutant against the module's own tests
(``MODULES``, stopping at the first failure) and writes ``<module>.json`` (counts and the diff of
every surviving mutant) to ``--out`` (default ``docs/testing/mutation``).

Why cosmic-ray and not mutmut 3: mutmut 3 rewrites every function into a trampoline that
dispatches on an environment variable and does not mutate decorated functions, so the compiled
(``numba.njit``) samplers and kernels, which hold the privacy noise, would never be mutated.
cosmic-ray writes each mutant to the source file and runs an arbitrary test command, so compiled
code is mutated like any other.  Each mutant changes the package's source fingerprint and so
starts a fresh compiled-code cache (``privbandits._cache``): the mutant's kernels are recompiled
rather than read back stale from the cache, at the price of a few seconds per mutant.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PKG = "src/privbandits"

#: Module (relative to src/privbandits) -> the tests that exercise it.  Test selection per module
#: keeps a run tractable: a mutant is only tested against the tests that can observe it.
MODULES: dict[str, list[str]] = {
    # --- privacy noise: compiled samplers and their calibration ---
    "privacy/samplers.py": [
        "tests/privacy/test_samplers.py",
        "tests/privacy/test_randomizers.py",
        "tests/privacy/test_mechanisms.py",
    ],
    "privacy/noise.py": [
        "tests/privacy/test_samplers.py",
        "tests/privacy/test_mechanisms.py",
        "tests/privacy/test_randomizers.py",
    ],
    "privacy/calibration.py": [
        "tests/privacy/test_mechanisms.py",
        "tests/privacy/test_accounting.py",
    ],
    "privacy/sensitivity.py": [
        "tests/privacy/test_mechanisms.py",
        "tests/privacy/test_randomizers.py",
    ],
    "privacy/laplace_shuffle.py": [
        "tests/privacy/test_shuffle.py",
        "tests/privacy/test_audit.py",
        "tests/algorithms/test_hanna_calibration.py",
    ],
    "privacy/guarantee.py": ["tests/privacy/test_accounting.py", "tests/test_simulate.py"],
    "privacy/binomial_accounting.py": [
        "tests/privacy/test_binomial_accounting.py",
        "tests/privacy/test_binomial_independent.py",
    ],
    # --- algorithm-side client randomizers and calibration ---
    "algorithms/calibration.py": [
        "tests/algorithms/test_calibration.py",
        "tests/algorithms/test_ldp_glb_privacy.py",
        "tests/algorithms/test_hanna_calibration.py",
        "tests/algorithms/test_ldp_zheng_constants.py",
    ],
    "algorithms/ldp_glb/randomizers.py": [
        "tests/algorithms/test_ldp_glb_mechanisms.py",
        "tests/algorithms/test_ldp_glb_privacy.py",
    ],
    "algorithms/ldp_zheng/calibration.py": [
        "tests/algorithms/test_ldp_zheng_constants.py",
        "tests/algorithms/test_ldp_zheng_messages.py",
    ],
    "algorithms/hanna/budget.py": [
        "tests/algorithms/test_hanna_budget.py",
        "tests/algorithms/test_hanna_calibration.py",
    ],
    # --- simulation drivers ---
    "engine/recorder.py": ["tests/test_simulate.py", "tests/test_golden.py"],
    "engine/aggregate.py": ["tests/algorithms/test_hanna_fastpath.py", "tests/test_golden.py"],
    # --- experiment bookkeeping ---
    "experiments/units.py": [
        "tests/experiments/test_units.py",
        "tests/experiments/test_store.py",
        "tests/engine/test_fused.py",
        "tests/experiments/test_costs.py",  # fused_groups' split and schedule
    ],
    "experiments/store.py": ["tests/experiments/test_store.py", "tests/experiments/test_runner.py"],
    "experiments/costs.py": ["tests/experiments/test_costs.py", "tests/engine/test_fused.py"],
    # --- privatizers: the randomizers devices run ---
    "privacy/randomizers.py": [
        "tests/privacy/test_randomizers.py",
        "tests/privacy/test_shuffle.py",
        "tests/privacy/test_privatizer_bounds.py",
    ],
    "algorithms/bco/privatizer.py": [
        "tests/algorithms/test_bco_devices.py",
        "tests/privacy/test_privatizer_bounds.py",
    ],
    "algorithms/ldp_onepoint/privatizer.py": ["tests/algorithms/test_bco_devices.py"],
    # --- device paths: input checks, public-state spaces, declared noise, client randomize ---
    "privacy/inputs.py": ["tests/privacy/test_device_contract.py"],
    "core/public_space.py": ["tests/privacy/test_device_contract.py"],
    "privacy/device.py": ["tests/privacy/test_device_contract.py"],
    "algorithms/ldp_onepoint/roles.py": [
        "tests/algorithms/test_bco_devices.py",
        "tests/privacy/test_privatizer_bounds.py",
    ],
    # --- the service's store (per-token idempotency, events and model rows) ---
    "service/server/store.py": ["tests/service/test_store_rows.py"],
}

#: Operators not run.  cosmic-ray replaces every binary operator by each of ten others and every
#: comparison by each of seven others; most of those (``a + b`` -> ``a >> b`` on floats) only
#: raise a TypeError, which any test executing the line catches.  Kept: the one-step changes a
#: real slip produces (``+``<->``-``, ``*``<->``/``, ``**``->``*``, ``//``->``/``, ``<``<->``<=``,
#: ``>``<->``>=``, ``==``<->``!=``, ``is``<->``is not``, unary minus dropped or added, ``not``
#: added or dropped, ``and``<->``or``, constants +-1, True<->False, break<->continue, loops run
#: zero times, exceptions replaced).  Excluded as well: RemoveDecorator (dropping ``@njit`` runs
#: the same function uncompiled, an equivalent mutant by construction) and the Variable*
#: operators (random renamings).
KEPT_BINARY = {
    ("Add", "Sub"),
    ("Sub", "Add"),
    ("Mul", "Div"),
    ("Div", "Mul"),
    ("Pow", "Mul"),
    ("FloorDiv", "Div"),
    ("Mod", "FloorDiv"),
}
KEPT_COMPARISON = {
    ("Lt", "LtE"),
    ("LtE", "Lt"),
    ("Gt", "GtE"),
    ("GtE", "Gt"),
    ("Eq", "NotEq"),
    ("NotEq", "Eq"),
    ("Is", "IsNot"),
    ("IsNot", "Is"),
}
KEPT_UNARY = {("USub", "UAdd"), ("Delete", "USub"), ("Delete", "Not")}
EXCLUDED_OPERATORS = ("core/RemoveDecorator", "core/VariableInserter", "core/VariableReplacer")

#: Surviving mutants argued equivalent (docs/testing/mutation.md gives each argument): module ->
#: {(original line, mutated line)}, both stripped.  They are reported and left out of the score.
EQUIVALENT: dict[str, set[tuple[str, str]]] = {
    "privacy/samplers.py": {
        ("d = M.shape[0]", "d = M.shape[ -1]"),  # M is square
        ("d = M.shape[0]", "d = M.shape[ 1]"),
        ("for i in range(flat.shape[0]):", "for i in range(flat.shape[ -1]):"),  # flat is 1-d
        ("for i in range(y.shape[0]):", "for i in range(y.shape[ -1]):"),  # y is 1-d
        (
            "flat = v.reshape(-1)",
            "flat = v.reshape(- 2)",
        ),  # numpy and numba infer any negative size
        # s is a sum of d >= 1 squared standard normals: s > 0 almost surely
        (
            "c = radius / math.sqrt(s) if s > 0.0 else 0.0",
            "c = radius / math.sqrt(s) if s > -1.0 else 0.0",
        ),
        (
            "c = radius / math.sqrt(s) if s > 0.0 else 0.0",
            "c = radius / math.sqrt(s) if s >= 0.0 else 0.0",
        ),
    },
    "algorithms/ldp_glb/randomizers.py": {
        ('@nb.njit(cache=True, inline="always")', '@nb.njit(cache=False, inline="always")'),
        ("d = x.shape[0]", "d = x.shape[ -1]"),  # x is one-dimensional
        ("for i in range(x.shape[0]):", "for i in range(x.shape[ -1]):"),
    },
    "privacy/noise.py": {
        (
            "G = np.ascontiguousarray(x.reshape(-1, d), dtype=float)",
            "G = np.ascontiguousarray(x.reshape(- 2, d), dtype=float)",
        ),  # any negative size is inferred
    },
    "algorithms/hanna/budget.py": {
        # the size of a memo cache of a pure function changes nothing it returns
        ("@functools.lru_cache(maxsize=8192)", "@functools.lru_cache(maxsize= 8193)"),
        ("@functools.lru_cache(maxsize=8192)", "@functools.lru_cache(maxsize= 8191)"),
    },
    "privacy/device.py": {
        # the inner divisor only matters where s > 0; elsewhere the outer np.where discards it
        (
            "w = np.where(s > 0, diff / np.where(s > 0, s, 1.0), np.where(diff == 0, 0.0, np.inf))",
            "w = np.where(s > 0, diff / np.where(s >= 0, s, 1.0), np.where(diff == 0, 0.0, np.inf))",
        ),
        (
            "w = np.where(s > 0, diff / np.where(s > 0, s, 1.0), np.where(diff == 0, 0.0, np.inf))",
            "w = np.where(s > 0, diff / np.where(s > -1, s, 1.0), np.where(diff == 0, 0.0, np.inf))",
        ),
        (
            "w = np.where(s > 0, diff / np.where(s > 0, s, 1.0), np.where(diff == 0, 0.0, np.inf))",
            "w = np.where(s > 0, diff / np.where(s > 0, s, 2.0), np.where(diff == 0, 0.0, np.inf))",
        ),
        (
            "w = np.where(s > 0, diff / np.where(s > 0, s, 1.0), np.where(diff == 0, 0.0, np.inf))",
            "w = np.where(s > 0, diff / np.where(s > 0, s, 0.0), np.where(diff == 0, 0.0, np.inf))",
        ),
        (
            "w = w.reshape(w.shape[0], -1)",
            "w = w.reshape(w.shape[0], - 2)",
        ),  # any negative size is inferred
    },
    "algorithms/bco/privatizer.py": {
        # the compiled steps only type-check for one-dimensional gaps and out
        (
            "if values.shape[1] != 2 or gaps.shape[0] != values.shape[0] or out.shape[0] != values.shape[0]:",
            "if values.shape[1] != 2 or gaps.shape[ -1] != values.shape[0] or out.shape[0] != values.shape[0]:",
        ),
        ("for i in range(out.shape[0]):", "for i in range(out.shape[ -1]):"),
        (
            "if (points.shape[1] != 2 or points.shape[0] != out.shape[0] or gaps.shape[0] != out.shape[0]",
            "if (points.shape[1] != 2 or points.shape[0] != out.shape[0] or gaps.shape[0] != out.shape[ -1]",
        ),
    },
    "algorithms/ldp_onepoint/privatizer.py": {
        # the compiled steps only type-check for one-dimensional values and out
        ("if out.shape[0] != values.shape[0]:", "if out.shape[ -1] != values.shape[0]:"),
        ("if out.shape[0] != values.shape[0]:", "if out.shape[0] != values.shape[ -1]:"),
        ("for i in range(values.shape[0]):", "for i in range(values.shape[ -1]):"),
    },
    "privacy/inputs.py": {
        # _all_within is a fast path: False hands the inputs to the Python checks, which decide
        ("if sq > bound_sq:", "if sq >= bound_sq:"),
        ("if not np.isfinite(y[i]):", "if  np.isfinite(y[i]):"),
        (
            "if X.ndim >= 1 and _all_within(X.reshape(-1, X.shape[-1]), y, (context_bound * (1.0 + NORM_RTOL)) ** 2):",
            "if X.ndim >= 1 and _all_within(X.reshape(-1, X.shape[-1]), y, (context_bound * ( 0.0 + NORM_RTOL)) ** 2):",
        ),
        # np.ascontiguousarray returns at least one dimension: X.ndim >= 1 always holds
        (
            "if X.ndim >= 1 and _all_within(X.reshape(-1, X.shape[-1]), y, (context_bound * (1.0 + NORM_RTOL)) ** 2):",
            "if X.ndim >= 0 and _all_within(X.reshape(-1, X.shape[-1]), y, (context_bound * (1.0 + NORM_RTOL)) ** 2):",
        ),
        # no context entries: the compiled pass accepts them (after finite rewards) and returns first
        (
            "worst = float(sq.max()) if sq.size else 0.0",
            "worst = float(sq.max()) if sq.size else 1.0",
        ),
    },
    "service/server/store.py": {
        # the query has LIMIT 1: its only row is both the first and the last
        ("version, seq, rounds, digest = rows[0]", "version, seq, rounds, digest = rows[ -1]"),
        # (token, idem_key) is UNIQUE: find's query returns at most one row
        (
            "seq, kind, tok, key, body, bh, resp = rows[0]",
            "seq, kind, tok, key, body, bh, resp = rows[ -1]",
        ),
        # SELECT value FROM meta WHERE key = ?: key is the primary key, so one row of one column
        (
            'f"({rows[0][0][:200]}); use a new database or reset it (POST /v1/admin/reset)")',
            'f"({rows[ -1][0][:200]}); use a new database or reset it (POST /v1/admin/reset)")',
        ),
        (
            'f"({rows[0][0][:200]}); use a new database or reset it (POST /v1/admin/reset)")',
            'f"({rows[0][ -1][:200]}); use a new database or reset it (POST /v1/admin/reset)")',
        ),
        # how long SQLite waits for a lock another connection holds: no stored or returned value
        # depends on it (the service serializes its writes under one lock)
        (
            "self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)",
            "self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout= 31.0)",
        ),
        (
            "self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)",
            "self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout= 29.0)",
        ),
    },
    "privacy/binomial_accounting.py": {
        # the size of a memo cache of a pure function changes nothing it returns
        ("@functools.lru_cache(maxsize=256)", "@functools.lru_cache(maxsize= 257)"),
        ("@functools.lru_cache(maxsize=256)", "@functools.lru_cache(maxsize= 255)"),
        # only f[:budget + 1 - c] of the first f is read (later f's are budget + 1 long)
        ("f = np.zeros(budget + 1)", "f = np.zeros(budget + 2)"),
        # one more support point on either side, where both pmfs are 0
        (
            "lo, hi = int(min(0, s.min())), int(N + max(0, s.max()))",
            "lo, hi = int(min( -1, s.min())), int(N + max(0, s.max()))",
        ),
        ("y = np.arange(lo, hi + 1)", "y = np.arange(lo, hi + 2)"),
    },
    "experiments/units.py": {
        # _finite has already replaced every non-finite float by its repr
        (
            'return json.dumps(_finite(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)',
            'return json.dumps(_finite(obj), sort_keys=True, separators=(",", ":"), allow_nan=True)',
        ),
        # the environments convert reward_range to a tuple of floats themselves
        ('for key in ("reward_range",):', "for key in []:"),
        # a one-unit group takes the fused path instead of the shortcut: bit-identical by design
        # (tests/engine/test_fused.py checks fused == separate runs)
        ("if len(units) == 1:", "if len(units) == 0:"),
    },
}

#: Mutants on these decorator lines are not run: they change the arguments of ``numba.njit``
#: (``cache=True`` -> ``False``, ``inline="always"``), which decide whether compiled code is
#: stored on disk or inlined, never what it computes (equivalent by construction).
COMPILE_DECORATOR = "@nb.njit("

_PAIR = re.compile(r"core/Replace(Binary|Comparison|Unary)Operator_(\w+?)_(\w+)$")


def operator_kept(name: str) -> bool:
    """Whether the cosmic-ray operator ``name`` is run (see ``KEPT_*``, ``EXCLUDED_OPERATORS``)."""
    if name in EXCLUDED_OPERATORS:
        return False
    m = _PAIR.match(name)
    if m is None:
        return True
    kind, src, dst = m.groups()
    table = {"Binary": KEPT_BINARY, "Comparison": KEPT_COMPARISON, "Unary": KEPT_UNARY}[kind]
    return (src, dst) in table


def copy_checkout(dest: Path) -> None:
    """Copy the files of the checkout to ``dest``: tracked ones (with uncommitted edits) and new ones
    not yet added (``git ls-files --others --exclude-standard``: a module just moved is copied
    from where it now is)."""
    if dest.exists():
        shutil.rmtree(dest)
    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def write_config(work: Path, module: str, tests: list[str], timeout: float) -> Path:
    test_command = (
        f"{sys.executable} -m pytest -x -q -p no:cacheprovider -m 'not slow' {' '.join(tests)}"
    )
    cfg = work / "cosmic-ray.toml"
    cfg.write_text(
        "[cosmic-ray]\n"
        f'module-path = "{PKG}/{module}"\n'
        f"timeout = {timeout}\n"
        "excluded-modules = []\n"
        f'test-command = "{test_command}"\n'
        "[cosmic-ray.distributor]\n"
        'name = "local"\n'
    )
    return cfg


def select(db_path: Path, sample: int | None, work: Path) -> tuple[int, int]:
    """Mark filtered operators, compile-decorator lines (and, with ``sample``, all but a fixed
    sample) as skipped.

    The sample is deterministic: the kept mutants sorted by (line, column, operator, occurrence),
    taken at evenly spaced ranks.  Returns (kept, total).
    """
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    def on_compile_decorator(w: Any) -> bool:
        m = w.mutations[0]
        lines = (work / m.module_path).read_text().splitlines()
        return lines[m.start_pos[0] - 1].lstrip().startswith(COMPILE_DECORATOR)

    with use_db(str(db_path)) as db:
        items = list(db.work_items)
        kept = [
            w
            for w in items
            if all(operator_kept(m.operator_name) for m in w.mutations)
            and not on_compile_decorator(w)
        ]
        kept.sort(
            key=lambda w: (
                w.mutations[0].start_pos,
                w.mutations[0].operator_name,
                w.mutations[0].occurrence,
            )
        )
        chosen = kept
        if sample is not None and sample < len(kept):
            step = len(kept) / sample
            chosen = [kept[int(i * step)] for i in range(sample)]
        ids = {w.job_id for w in chosen}
        for w in items:
            if w.job_id not in ids:
                db.set_result(
                    w.job_id,
                    WorkResult(output="not selected", worker_outcome=WorkerOutcome.SKIPPED),
                )
    return len(chosen), len(items)


def is_equivalent(module: str, minus: str, plus: str) -> bool:
    """Whether a surviving mutant is listed in EQUIVALENT or is a uniform-comparison boundary.

    ``rng.random() < p`` -> ``rng.random() <= p`` changes the event by ``{U = p}``, of probability
    at most 2^-53 for a uniform double: equivalent in law wherever it occurs.
    """
    if (minus, plus) in EQUIVALENT.get(module, set()) or minus.startswith(COMPILE_DECORATOR):
        return True
    return minus != plus and plus == minus.replace("rng.random() < ", "rng.random() <= ")


def _changed_lines(diff: str) -> tuple[str, str]:
    minus = [
        ln[1:].strip()
        for ln in diff.splitlines()
        if ln.startswith("-") and not ln.startswith("---")
    ]
    plus = [
        ln[1:].strip()
        for ln in diff.splitlines()
        if ln.startswith("+") and not ln.startswith("+++")
    ]
    return " ".join(minus), " ".join(plus)


def summarise(db_path: Path, module: str, tests: list[str], seconds: float) -> dict:
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    out: dict = {
        "module": module,
        "tests": tests,
        "seconds": round(seconds),
        "killed": 0,
        "survived": 0,
        "equivalent": 0,
        "incompetent": 0,
        "timeout": 0,
        "no_test": 0,
        "survivors": [],
    }
    with use_db(str(db_path)) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            if result.worker_outcome == WorkerOutcome.NO_TEST:
                out["no_test"] += 1
            elif result.test_outcome == TestOutcome.KILLED and result.output == "timeout":
                out["timeout"] += 1  # the tests ran past the timeout (e.g. an endless loop)
            elif result.test_outcome == TestOutcome.KILLED:
                out["killed"] += 1
            elif result.worker_outcome != WorkerOutcome.NORMAL:
                out["incompetent"] += 1  # the mutation itself failed: not a test result
            else:
                m = item.mutations[0]
                equivalent = is_equivalent(module, *_changed_lines(result.diff or ""))
                out["equivalent" if equivalent else "survived"] += 1
                out["survivors"].append(
                    {
                        "line": m.start_pos[0],
                        "operator": m.operator_name,
                        "occurrence": m.occurrence,
                        "equivalent": equivalent,
                        "diff": result.diff,
                    }
                )
        out["pending"] = sum(1 for _ in db.pending_work_items)
    detected = out["killed"] + out["timeout"]
    total = detected + out["survived"]
    out["score"] = round(detected / total, 4) if total else None
    return out


def write_result(res: dict, module: str, sample: int | None, out_dir: Path) -> None:
    """Write ``res`` to ``out_dir/<module>[.sampleN].json``."""
    res["sample"] = sample
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = f".sample{sample}" if sample is not None else ""
    (out_dir / (module.replace("/", "__") + suffix + ".json")).write_text(
        json.dumps(res, indent=1) + "\n"
    )


def run_module(module: str, sample: int | None, out_dir: Path, scratch: Path) -> dict:
    tests = MODULES[module]
    work = scratch / module.replace("/", "__")
    copy_checkout(work)
    env = dict(
        os.environ,
        PYTHONPATH=str(work / "src"),
        MPLBACKEND="Agg",
        PRIVBANDITS_CACHE_DIR=str(work / ".mutation-cache"),
    )
    env.pop("NUMBA_CACHE_DIR", None)
    # baseline: the selected tests pass on the unmutated code; its time sets the timeout
    t0 = time.monotonic()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-x",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not slow",
            *tests,
        ],
        cwd=work,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    baseline = time.monotonic() - t0
    cfg = write_config(work, module, tests, timeout=round(3 * baseline + 60))
    db = work / "session.sqlite"
    subprocess.run(["cosmic-ray", "init", str(cfg), str(db)], cwd=work, env=env, check=True)
    subprocess.run(["cr-filter-pragma", str(db)], cwd=work, env=env, check=True)
    kept, total = select(db, sample, work)
    print(f"{module}: {kept} of {total} mutants selected, baseline {baseline:.0f} s", flush=True)
    t0 = time.monotonic()
    subprocess.run(["cosmic-ray", "exec", str(cfg), str(db)], cwd=work, env=env, check=True)
    res = summarise(db, module, tests, time.monotonic() - t0)
    res["selected"], res["generated"] = kept, total
    write_result(res, module, sample, out_dir)
    print(
        f"{module}: killed {res['killed']} timeout {res['timeout']} survived {res['survived']} "
        f"equivalent {res['equivalent']} incompetent {res['incompetent']} score {res['score']}",
        flush=True,
    )
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("modules", nargs="*", help="paths under src/privbandits (default: all)")
    p.add_argument(
        "--sample",
        type=int,
        default=None,
        help="run a fixed, evenly spaced sample of this many mutants per module",
    )
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "testing" / "mutation")
    p.add_argument("--scratch", type=Path, default=Path("/tmp") / "privbandits-mutation")
    p.add_argument("--list", action="store_true", help="print the modules and their tests")
    p.add_argument(
        "--report-only",
        action="store_true",
        help="rewrite the JSON of finished sessions in --scratch without running mutants",
    )
    p.add_argument(
        "--fail-under",
        type=float,
        default=None,
        help="exit 1 if a module's score is below this fraction",
    )
    a = p.parse_args(argv)
    if a.list:
        for m, t in MODULES.items():
            print(m, " ".join(t))
        return 0
    modules = a.modules or list(MODULES)
    unknown = [m for m in modules if m not in MODULES]
    if unknown:
        p.error(f"modules {unknown} are not configured; choose from {sorted(MODULES)}")
    failed = []
    for m in modules:
        if a.report_only:
            db = a.scratch / m.replace("/", "__") / "session.sqlite"
            if not db.exists():
                continue
            res = summarise(db, m, MODULES[m], 0.0)
            write_result(res, m, a.sample, a.out)
        else:
            res = run_module(m, a.sample, a.out, a.scratch)
        if a.fail_under is not None and res["score"] is not None and res["score"] < a.fail_under:
            failed.append(m)
        for s in res["survivors"]:
            if not s["equivalent"]:
                print(s["diff"])
    if failed:
        print(f"score below {a.fail_under}: {failed}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
