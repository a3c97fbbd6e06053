"""Regression-error studies: a reproduction that is not a bandit run (``kind = "regression"``).

A preset with ``kind = "regression"`` describes blocks of private linear regression problems and the
estimators of :mod:`privbandits.experiments.regression_experiment` compared on each (held-out L1 and L2 error,
coverage and mean of the confidence widths, the accounted epsilon).  ``privbandits reproduce NAME``
expands it into work units -- one per (block cell, seed), each fitting every estimator on the same
data -- runs the ones the results database does not hold yet, stores each unit's rows as it finishes
(table ``row_units``, one transaction per unit, so a killed run resumes), then writes the figure
and ``report.md`` (:mod:`privbandits.experiments.regression_report`).  Schema::

    kind = "regression"
    name = "chen2025-regression"       # default: the file's stem
    description = "free text"
    replications = 3                   # seeds 0 .. R-1 of every cell
    n_test = 100000                    # held-out covariates per fit
    estimators = ["reweighted", "ssp-ridge"]   # default: every estimator of the experiment module

    [[blocks]]                         # one panel of the figure, one table section of the report
    name = "conditioning"
    x = "n"                            # the panel's x axis: n | d | epsilon | c | p0
    facet = "c"                        # optional: one line style per value
    n = [10000, 100000]                # lists; the block's cells are their cartesian product
    d = [4]
    epsilon = [1.0]
    c = [0.0, 3.0, 6.0]                # conditioning: coordinate scales exp(-c (i-1)/(d-1))
    # p0 = [0.1, 0.01]                 # the two-point instance of Proposition 3.1 (d = 1)
    # replications = 60                # this block's seeds (default: the study's)

    [[claims]]                         # an expectation, checked in every cell it applies to
    kind = "coverage"                  # or "monotone" (privbandits.experiments.regression_claims)
    items = ["reweighted"]
    percent = 95                       # monotone: param = "n", direction = "decreasing"
    where = { block = "coverage" }     # optional: only the cells with these values
    text = "..."

    [quick]                            # applied by --quick
    replications = 1
    n_test = 20000
    n_max = 20000                      # every cell's n capped at this (duplicate cells merged)

    [report]
    title = "..."
    source = "..."
    claims = "..."
    notes = "..."

Only ``x`` and ``facet`` may take several values in a block (a panel shows no more), so a sweep
over two other keys is written as two blocks.  The claims' keys are those of the ``claims`` table of
the experiment schema, with the kinds of :data:`privbandits.experiments.schema.REGRESSION_CLAIM_KEYS`;
the report states a verdict for every claim in every cell.  ``--replications`` (and ``[quick]
replications``) overrides ``replications`` of the study and of every block;
``--horizon``, ``--seed``, ``--preset`` and ``--engine`` do not apply to a regression study and are
ignored (``reproduce --all`` passes them to every preset).

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1 (the estimators; the paper has no
experiments, the study is the library's own).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import multiprocessing as mp
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from privbandits.core.errors import ConfigError
from privbandits.core.validation import check_in_range, check_int
from privbandits.experiments.claims import Claim
from privbandits.experiments.config import _NAME_RE, Overrides, ReportConfig, _Validator
from privbandits.experiments.schema import REGRESSION_CLAIM_KEYS
from privbandits.experiments.store import DEFAULT_DB, ResultsStore
from privbandits.experiments.units import canonical_json

__all__ = [
    "BLOCK_KEYS",
    "REGRESSION_QUICK_KEYS",
    "REGRESSION_TOP_KEYS",
    "RegressionBlock",
    "RegressionOutcome",
    "RegressionStudy",
    "RegressionUnit",
    "parse_regression_study",
    "run_regression_study",
]

REGRESSION_TOP_KEYS = (
    "kind",
    "name",
    "description",
    "replications",
    "n_test",
    "estimators",
    "blocks",
    "claims",
    "quick",
    "report",
)
#: Keys of a block that hold the problem parameters (lists of values).
CELL_KEYS = ("n", "d", "epsilon", "c", "p0")
BLOCK_KEYS = ("name", "x", "facet", "replications", *CELL_KEYS)
REGRESSION_QUICK_KEYS = ("replications", "n_test", "n_max")
REGRESSION_REPORT_KEYS = ("title", "source", "claims", "notes")
#: Version of the unit configuration hashed into every key (bump when its meaning changes).
STUDY_SCHEMA = 1


@dataclass(frozen=True)
class RegressionBlock:
    """One ``[[blocks]]`` entry: its cells (dicts with ``block n d epsilon c p0``), x axis and facet."""

    name: str
    x: str
    facet: str | None
    cells: tuple[dict[str, Any], ...]
    #: Seeds of every cell of the block (None: the study's ``replications``).
    replications: int | None = None


@dataclass(frozen=True)
class RegressionUnit:
    """One cell of a block and one seed: every estimator fitted on the same data."""

    experiment: str
    cell: dict[str, Any]
    seed: int
    n_test: int
    estimators: tuple[str, ...]

    def config(self) -> dict[str, Any]:
        return {
            "kind": "regression",
            "schema": STUDY_SCHEMA,
            "experiment": self.experiment,
            "cell": self.cell,
            "seed": self.seed,
            "n_test": self.n_test,
            "estimators": list(self.estimators),
        }

    def key(self) -> str:
        """sha256 of the canonical configuration: the unit's row key in the results store."""
        return hashlib.sha256(canonical_json(self.config()).encode()).hexdigest()

    def execute(self) -> tuple[list[dict[str, Any]], float]:
        """Fit every estimator; returns the rows and the wall time."""
        from privbandits.experiments.regression_experiment import seed_rows

        t0 = time.perf_counter()
        rows = list(seed_rows(self.cell, self.seed, self.n_test, self.estimators))
        return rows, time.perf_counter() - t0


@dataclass(frozen=True)
class RegressionStudy:
    """A validated regression study (see the module docstring)."""

    name: str
    description: str
    replications: int
    n_test: int
    estimators: tuple[str, ...]
    blocks: tuple[RegressionBlock, ...]
    report: ReportConfig = field(default_factory=ReportConfig)
    source: str = "<config>"
    quick: bool = False
    #: The expectations checked in the report (kinds of ``REGRESSION_CLAIM_KEYS``).
    claims: tuple[Claim, ...] = ()

    def seeds(self, block: RegressionBlock) -> int:
        """The number of seeds of every cell of ``block``."""
        return block.replications or self.replications

    def units(self) -> list[RegressionUnit]:
        """Every (cell, seed), blocks in order."""
        return [
            RegressionUnit(self.name, cell, seed, self.n_test, self.estimators)
            for block in self.blocks
            for cell in block.cells
            for seed in range(self.seeds(block))
        ]

    @property
    def n_cells(self) -> int:
        return sum(len(b.cells) for b in self.blocks)

    @property
    def seeds_text(self) -> str:
        """``"x 10 seeds"``, or with blocks of their own: ``"x 10 seeds (60 in block coverage)"``."""
        own = [f"{b.replications} in block {b.name}" for b in self.blocks if b.replications]
        return f"x {self.replications} seeds" + (f" ({', '.join(own)})" if own else "")

    @property
    def size(self) -> str:
        """Short description of the problem sizes (for the gallery)."""
        ns = [c["n"] for b in self.blocks for c in b.cells]
        return f"n {min(ns):.0e} .. {max(ns):.0e}" if min(ns) != max(ns) else f"n = {ns[0]:.0e}"


@dataclass
class RegressionOutcome:
    """What :func:`run_regression_study` produced."""

    config: RegressionStudy
    rows: list[dict[str, Any]]
    figures: list[Path]
    report: Path | None
    executed: int
    skipped: int
    wall_time: float  # fitting time of every unit, as stored (also of units reused from the store)
    summary: list[str]  # the report's key findings, one line each


# ------------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------------
def _cell_value(key: str, item: Any) -> Any:
    """One value of the cell key ``key``, checked (``c`` and ``p0`` as floats)."""
    if key in ("n", "d"):
        return check_int(key, item, 1)
    if key == "epsilon":
        return check_in_range("epsilon", item, 0.0, None, low_inclusive=False, allow_inf=True)
    if key == "c":
        return float(check_in_range("c", item, 0.0, None))
    return float(check_in_range("p0", item, 0.0, 1.0, low_inclusive=False, high_inclusive=False))


def _numbers(v: _Validator, path: str, value: Any, key: str) -> list[Any]:
    return v.distinct(path, value, functools.partial(_cell_value, key))


def _block(
    v: _Validator, j: int, entry: dict[str, Any], n_max: int | None, seeds_overridden: bool
) -> RegressionBlock:
    where = f"blocks[{j}]"
    v.keys(entry, BLOCK_KEYS, where)
    name = v.string(f"{where}.name", entry.get("name", ""), _NAME_RE)
    reps = entry.get("replications")
    if reps is not None:
        reps = v.check(f"{where}.replications", reps, lambda: check_int("replications", reps, 1))
    if seeds_overridden:
        reps = None
    for key in ("n", "d", "epsilon"):
        if key not in entry:
            raise ConfigError(f"{v.source}: {where} needs '{key}' (a list of values)")
    values = {
        key: _numbers(v, f"{where}.{key}", entry[key], key) for key in CELL_KEYS if key in entry
    }
    values.setdefault("c", [0.0])
    if "p0" in values and values["d"] != [1]:
        raise v.fail(
            f"{where}.d",
            entry["d"],
            "the two-point instance (p0) is one-dimensional: d must be [1]",
        )
    x = entry.get("x", "n")
    v.member(
        f"{where}.x", x, x, values, "must be one of the block's keys", f": {', '.join(values)}"
    )
    facet = entry.get("facet")
    if facet is not None and (facet not in values or facet == x):
        raise v.fail(
            f"{where}.facet",
            facet,
            f"must be one of the block's keys other than x: "
            f"{', '.join(k for k in values if k != x)}",
        )
    for key, vals in values.items():
        if len(vals) > 1 and key not in (x, facet):
            raise v.fail(
                f"{where}.{key}",
                entry[key],
                f"only x ({x}) and facet ({facet or 'none'}) may take several "
                "values in a block (a panel shows no more): split the block",
            )
    if n_max is not None:
        values["n"] = sorted({min(n, n_max) for n in values["n"]})
    keys = list(values)
    cells = tuple(
        {"block": name, **dict(zip(keys, combo))} for combo in itertools.product(*values.values())
    )
    for cell in cells:
        cell.setdefault("p0", None)
    return RegressionBlock(name=name, x=x, facet=facet, cells=cells, replications=reps)


def _claims(
    v: _Validator,
    raw: Mapping[str, Any],
    estimators: Sequence[str],
    blocks: Sequence[RegressionBlock],
) -> tuple[Claim, ...]:
    """The ``[[claims]]`` of a regression study, each key checked by its declaration in the
    experiment schema's ``claims`` table."""
    out = []
    for i, entry in enumerate(v.entries(dict(raw), "claims")):
        where = f"claims[{i}]"
        kind = v.claim_kind(entry, where, REGRESSION_CLAIM_KEYS, "regression ")
        items = entry.get("items")
        if (
            not isinstance(items, list)
            or not items
            or not all(isinstance(e, str) for e in items)
            or (kind == "monotone" and len(items) != 1)
        ):
            need = "exactly one estimator" if kind == "monotone" else "at least one estimator"
            raise v.fail(f"{where}.items", items, f"must be a list of {need}")
        for j, e in enumerate(items):
            v.member(
                f"{where}.items[{j}]",
                e,
                e,
                estimators,
                "not an estimator of the study",
                f": {', '.join(estimators)}",
            )
        extra: dict[str, Any] = {}
        if kind == "coverage":
            pct = v.needed("claims", "percent", entry, where, kind)
            if pct >= 100:
                raise v.fail(f"{where}.percent", pct, "must lie in (0, 100)")
            extra["percent"] = float(pct)
        else:
            param = v.needed("claims", "param", entry, where, kind)
            v.member(
                f"{where}.param",
                param,
                param,
                CELL_KEYS,
                "must be a cell key",
                f": {', '.join(CELL_KEYS)}",
            )
            direction = v.value("claims", "direction", entry, f"{where}.direction") or "decreasing"
            if direction not in ("decreasing", "increasing"):
                raise v.fail(
                    f"{where}.direction", direction, 'must be "decreasing" or "increasing"'
                )
            extra.update(param=param, direction=direction)
        cond = v.where(f"{where}.where", entry.get("where", {}))
        allowed = ("block", *CELL_KEYS)
        for k, val in cond.items():
            v.member(
                f"{where}.where.{k}", val, k, allowed, "not a cell key", f": {', '.join(allowed)}"
            )
        names = {b.name for b in blocks}
        if "block" in cond:
            v.member(
                f"{where}.where.block",
                cond["block"],
                cond["block"],
                names,
                "no such block",
                f": {', '.join(sorted(names))}",
            )
        out.append(
            Claim(
                kind=kind,
                items=tuple(items),
                where=cond,
                text=v.value("claims", "text", entry, f"{where}.text"),
                **extra,
            )
        )
    return tuple(out)


def parse_regression_study(
    raw: Mapping[str, Any],
    source: str = "<config>",
    default_name: str = "study",
    overrides: Overrides | None = None,
) -> RegressionStudy:
    """Validate a regression study given as parsed TOML (see the module docstring).

    Raises
    ------
    ConfigError
        Naming the key path, the value and the allowed range.
    """
    from privbandits.experiments.regression_experiment import ESTIMATORS

    v = _Validator(source)
    raw = dict(raw)
    v.keys(raw, REGRESSION_TOP_KEYS, 'the top level (kind = "regression")')
    quick = v.keys(raw.get("quick", {}), REGRESSION_QUICK_KEYS, "[quick]")
    n_max = None
    seeds_overridden = False
    if overrides is not None and overrides.quick:
        raw.update({k: val for k, val in quick.items() if k != "n_max"})
        n_max = quick.get("n_max")
        seeds_overridden = "replications" in quick
    if overrides is not None and overrides.replications is not None:
        raw["replications"] = overrides.replications
        seeds_overridden = True
    name = v.string("name", raw.get("name", default_name), _NAME_RE)
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise v.fail("description", description, "must be a string")
    reps = raw.get("replications", 3)
    replications = v.check("replications", reps, lambda: check_int("replications", reps, 1))
    nt = raw.get("n_test", 100_000)
    n_test = v.check("n_test", nt, lambda: check_int("n_test", nt, 1))
    for key in ("replications", "n_test", "n_max"):
        if key in quick:
            val = quick[key]
            v.check(f"quick.{key}", val, functools.partial(check_int, key, val, 1))
    if n_max is not None:
        n_max = int(n_max)
    est = raw.get("estimators", list(ESTIMATORS))
    if not isinstance(est, list) or not est:
        raise v.fail(
            "estimators", est, f"must be a non-empty list of estimators: {', '.join(ESTIMATORS)}"
        )
    for j, e in enumerate(est):
        v.member(
            f"estimators[{j}]",
            e,
            e,
            ESTIMATORS,
            "unknown estimator",
            f"; available: {', '.join(ESTIMATORS)}",
        )
    entries = v.entries(raw, "blocks")
    if not entries:
        raise ConfigError(f"{source}: a regression study needs at least one [[blocks]] entry")
    blocks = tuple(_block(v, j, entry, n_max, seeds_overridden) for j, entry in enumerate(entries))
    names = [b.name for b in blocks]
    if len(set(names)) != len(names):
        raise v.fail("blocks.name", names, "block names must be unique")
    rep = v.keys(raw.get("report", {}), REGRESSION_REPORT_KEYS, "[report]")
    for key in REGRESSION_REPORT_KEYS:
        if not isinstance(rep.get(key, ""), str):
            raise v.fail(f"report.{key}", rep[key], "must be a string")
    return RegressionStudy(
        name=name,
        description=description,
        replications=replications,
        n_test=n_test,
        estimators=tuple(est),
        blocks=blocks,
        source=source,
        report=ReportConfig(
            title=rep.get("title", ""),
            source=rep.get("source", ""),
            claims=rep.get("claims", ""),
            notes=rep.get("notes", ""),
        ),
        quick=bool(overrides is not None and overrides.quick),
        claims=_claims(v, raw, tuple(est), blocks),
    )


# ------------------------------------------------------------------------------------------
# running
# ------------------------------------------------------------------------------------------
def _execute(unit: RegressionUnit) -> tuple[list[dict[str, Any]], float]:
    return unit.execute()


def run_regression_study(
    study: RegressionStudy,
    db: str | Path = DEFAULT_DB,
    out: str | Path | None = None,
    *,
    workers: int | None = None,
    quiet: bool = False,
    console: Console | None = None,
    formats: Sequence[str] = ("png", "pdf"),
    dpi: int = 150,
) -> RegressionOutcome:
    """Run the units of ``study`` not yet stored in ``db``, then write the figure and ``report.md`` to ``out``.

    Parameters
    ----------
    study : RegressionStudy
    db : path
        Results database (units are stored as they finish; a rerun executes only the missing ones).
    out : path, optional
        Output directory (default ``<db dir>/<study name>``).
    workers : int, optional
        Local worker processes (default ``min(2, CPUs)``); 1 runs in this process.
    quiet : bool
        No messages.
    console : rich.console.Console, optional
    formats : sequence of str
        Figure formats.
    dpi : int
        PNG resolution.
    """
    from privbandits.experiments.regression_report import write_regression_report
    from privbandits.experiments.runner import default_workers

    console = console or Console(stderr=True)
    units = list({u.key(): u for u in study.units()}.values())
    start = time.perf_counter()
    with ResultsStore(db) as store:
        stored = store.existing_row_keys(u.key() for u in units)
        missing = [u for u in units if u.key() not in stored]
        n_workers = default_workers() if workers is None else check_int("workers", workers, 1)
        if not quiet:
            console.print(
                f"{len(units)} regression units ({study.n_cells} cells {study.seeds_text}): "
                f"{len(stored)} already stored, {len(missing)} to run; results -> {store.path}"
            )
        if n_workers == 1 or len(missing) <= 1:
            for unit in missing:
                rows, wall = unit.execute()
                store.put_rows(unit.key(), study.name, unit.config(), rows, wall)
        else:
            with ProcessPoolExecutor(
                max_workers=min(n_workers, len(missing)), mp_context=mp.get_context("spawn")
            ) as ex:
                futures = {ex.submit(_execute, u): u for u in missing}
                for fut in as_completed(futures):
                    unit = futures[fut]
                    rows, wall = fut.result()
                    store.put_rows(unit.key(), study.name, unit.config(), rows, wall)
        loaded = store.load_rows([u.key() for u in units])
    rows = [r for unit_rows, _ in loaded for r in unit_rows]
    wall_time = sum(w for _, w in loaded)
    out_dir = Path(out) if out is not None else Path(db).parent / study.name
    figures, report, summary = write_regression_report(
        study,
        rows,
        out_dir,
        formats=formats,
        dpi=dpi,
        elapsed=time.perf_counter() - start,
        fit_time=wall_time,
        reused=len(stored),
    )
    return RegressionOutcome(
        config=study,
        rows=rows,
        figures=figures,
        report=report,
        executed=len(missing),
        skipped=len(stored),
        wall_time=wall_time,
        summary=summary,
    )
