"""SQLite results store (the documentation's Concepts: the results store and resuming): one row per finished work unit, one transaction each.

The primary key of a row is :meth:`WorkUnit.key` (sha256 of the unit's canonical configuration),
so a unit is either completely stored (metadata and every array, written in one transaction) or
absent: an interrupted run leaves no partial rows, and ``INSERT OR IGNORE`` makes a second write
of the same unit a no-op.  The database runs in WAL mode so readers (``plot``, ``export``) never
block the single writer.
"""

from __future__ import annotations

import io
import json
import math
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from privbandits.core.errors import ResultsStoreError
from privbandits.experiments.units import SCHEMA_VERSION, WorkUnit, canonical_json
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.simulate import SimulationResult

__all__ = ["DEFAULT_DB", "ResultsStore", "StoredResult"]

#: Default database path, relative to the working directory.
DEFAULT_DB = Path("privbandits-results") / "results.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS units (
    key              TEXT PRIMARY KEY,
    experiment       TEXT NOT NULL,
    label            TEXT NOT NULL,
    algorithm        TEXT NOT NULL,
    params           TEXT NOT NULL,
    grid             TEXT NOT NULL,
    env              TEXT NOT NULL,
    env_description  TEXT NOT NULL,
    seed             INTEGER NOT NULL,
    horizon          INTEGER NOT NULL,
    replications     INTEGER NOT NULL,
    preset           TEXT NOT NULL,
    trust_model      TEXT NOT NULL,
    guarantee_model  TEXT NOT NULL,
    epsilon          REAL,
    delta            REAL NOT NULL,
    guarantee_unit   TEXT NOT NULL,
    guarantee_notes  TEXT NOT NULL,
    rho              REAL,
    checkpoints      BLOB NOT NULL,
    regret           BLOB NOT NULL,
    reward           BLOB NOT NULL,
    estimation_error BLOB,
    wall_time        REAL NOT NULL,
    extra            TEXT NOT NULL,
    config           TEXT NOT NULL,
    schema_version   INTEGER NOT NULL,
    library_version  TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    resolved_params  TEXT NOT NULL DEFAULT '{}',
    engine           TEXT NOT NULL DEFAULT 'reference',
    approximate      INTEGER NOT NULL DEFAULT 0,
    local_epsilon    REAL
);
CREATE INDEX IF NOT EXISTS units_experiment ON units (experiment);
CREATE TABLE IF NOT EXISTS row_units (
    key              TEXT PRIMARY KEY,
    experiment       TEXT NOT NULL,
    config           TEXT NOT NULL,
    rows             TEXT NOT NULL,
    wall_time        REAL NOT NULL,
    library_version  TEXT NOT NULL,
    created_at       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS row_units_experiment ON row_units (experiment);
"""

_COLUMNS = (
    "key",
    "experiment",
    "label",
    "algorithm",
    "params",
    "grid",
    "env",
    "env_description",
    "seed",
    "horizon",
    "replications",
    "preset",
    "trust_model",
    "guarantee_model",
    "epsilon",
    "delta",
    "guarantee_unit",
    "guarantee_notes",
    "rho",
    "checkpoints",
    "regret",
    "reward",
    "estimation_error",
    "wall_time",
    "extra",
    "config",
    "schema_version",
    "library_version",
    "created_at",
    "resolved_params",
    "engine",
    "approximate",
    "local_epsilon",
)
#: Columns added after the first release, with their SQL definitions (added to older databases).
_ADDED_COLUMNS = {
    "resolved_params": "TEXT NOT NULL DEFAULT '{}'",
    "engine": "TEXT NOT NULL DEFAULT 'reference'",
    "approximate": "INTEGER NOT NULL DEFAULT 0",
    "local_epsilon": "REAL",
}


@dataclass
class StoredResult(SimulationResult):
    """A :class:`SimulationResult` read back from the store, with the unit's identity."""

    key: str = ""
    experiment: str = ""
    label: str = ""
    grid: dict[str, Any] = field(default_factory=dict)
    unit_env: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""


def _npy(arr: np.ndarray | None) -> bytes | None:
    if arr is None:
        return None
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def _unnpy(blob: bytes | None) -> np.ndarray | None:
    if blob is None:
        return None
    return np.load(io.BytesIO(blob), allow_pickle=False)


def _unnpy_required(blob: bytes) -> np.ndarray:
    arr = _unnpy(blob)
    if arr is None:
        raise ValueError("a required array column is empty")
    return arr


def _json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=_json_default)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


class ResultsStore:
    """The results database.

    Parameters
    ----------
    path : str or Path
        SQLite file (parent directories are created unless ``create=False``).
    create : bool
        When False, a missing database raises :class:`ResultsStoreError` instead of being created
        (used by read-only commands such as ``plot`` and ``export``).

    Examples
    --------
    >>> with ResultsStore("privbandits-results/results.db") as store:   # doctest: +SKIP
    ...     store.put(unit, result)
    ...     rows = store.load(experiment="demo")
    """

    def __init__(self, path: str | Path = DEFAULT_DB, *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise ResultsStoreError(
                f"no results database at {str(self.path)!r}; run an experiment first "
                "(privbandits run CONFIG.toml) or pass --db"
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
            have = {row[1] for row in self._conn.execute("PRAGMA table_info(units)")}
            for col, decl in _ADDED_COLUMNS.items():
                if col not in have:
                    self._conn.execute(f"ALTER TABLE units ADD COLUMN {col} {decl}")
        except (sqlite3.Error, OSError) as exc:
            raise ResultsStoreError(
                f"cannot open results database {str(self.path)!r}: {exc}"
            ) from None

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------------
    def put(self, unit: WorkUnit, result: SimulationResult) -> bool:
        """Store a finished unit in one transaction; returns False if it was already stored."""
        from privbandits import __version__

        g = result.guarantee
        row = {
            "key": unit.key(),
            "experiment": unit.experiment,
            "label": unit.label,
            "algorithm": unit.algorithm,
            "params": canonical_json(unit.params),
            "grid": canonical_json(unit.grid),
            "env": canonical_json(unit.env),
            "env_description": _json(result.env),
            "seed": unit.seed,
            "horizon": unit.horizon,
            "replications": unit.replications,
            "preset": str(result.preset),
            "trust_model": result.trust_model,
            "guarantee_model": g.model,
            "epsilon": None if math.isinf(g.epsilon) else float(g.epsilon),
            "delta": float(g.delta),
            "guarantee_unit": g.unit,
            "guarantee_notes": g.notes,
            "rho": g.rho,
            "checkpoints": _npy(np.asarray(result.checkpoints)),
            "regret": _npy(result.regret),
            "reward": _npy(result.reward),
            "estimation_error": _npy(result.estimation_error),
            "wall_time": float(result.wall_time),
            "extra": _json(result.extra),
            "config": canonical_json(unit.config()),
            "schema_version": SCHEMA_VERSION,
            "library_version": __version__,
            "created_at": datetime.now(UTC).isoformat(),
            "resolved_params": _json(result.resolved_params),
            "engine": result.engine,
            "approximate": int(g.approximate),
            "local_epsilon": g.local_epsilon,
        }
        _check_shapes(unit, result)
        sql = f"INSERT OR IGNORE INTO units ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
        try:
            with self._transaction():
                cur = self._conn.execute(sql, [row[c] for c in _COLUMNS])
        except sqlite3.Error as exc:
            raise ResultsStoreError(f"cannot write to {str(self.path)!r}: {exc}") from None
        return cur.rowcount == 1

    def put_rows(
        self,
        key: str,
        experiment: str,
        config: dict[str, Any],
        rows: Sequence[dict[str, Any]],
        wall_time: float,
    ) -> bool:
        """Store the table rows of one finished non-bandit unit (e.g. one cell and seed of a regression
        study) in one transaction; returns False if ``key`` was already stored."""
        from privbandits import __version__

        try:
            with self._transaction():
                cur = self._conn.execute(
                    "INSERT OR IGNORE INTO row_units (key, experiment, config, rows, wall_time, library_version, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        experiment,
                        _json(config),
                        _json(list(rows)),
                        float(wall_time),
                        __version__,
                        datetime.now(UTC).isoformat(timespec="seconds"),
                    ),
                )
        except sqlite3.Error as exc:
            raise ResultsStoreError(
                f"cannot write rows {key[:12]} to {str(self.path)!r}: {exc}"
            ) from None
        return cur.rowcount == 1

    def existing_row_keys(self, keys: Iterable[str]) -> set[str]:
        """The subset of ``keys`` stored by :meth:`put_rows`."""
        return {
            r[0]
            for r in self._query_in("SELECT key FROM row_units WHERE key IN ({marks})", list(keys))
        }

    def load_rows(self, keys: Sequence[str]) -> list[tuple[list[dict[str, Any]], float]]:
        """``(rows, wall_time)`` of the stored units ``keys``, in that order (missing keys skipped)."""
        by = {
            key: (json.loads(rows), float(wall))
            for key, rows, wall in self._query_in(
                "SELECT key, rows, wall_time FROM row_units WHERE key IN ({marks})", list(keys)
            )
        }
        return [by[k] for k in keys if k in by]

    def _transaction(self) -> Any:
        conn = self._conn

        class _Tx:
            def __enter__(self) -> None:
                conn.execute("BEGIN IMMEDIATE")

            def __exit__(self, exc_type: Any, *rest: Any) -> None:
                conn.execute("ROLLBACK" if exc_type else "COMMIT")

        return _Tx()

    # -- reading -----------------------------------------------------------------------------
    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise ResultsStoreError(f"cannot read {str(self.path)!r}: {exc}") from None

    def _query_in(self, sql: str, wanted: list[str]) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` whose ``IN ({marks})`` list is ``wanted``, queried in chunks of 500 keys
        (SQLite's default limit on host parameters is 999)."""
        out: list[tuple[Any, ...]] = []
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            out += self._query(sql.format(marks=", ".join("?" * len(chunk))), chunk)
        return out

    def existing_keys(self, keys: Iterable[str]) -> set[str]:
        """The subset of ``keys`` already stored."""
        return {
            r[0] for r in self._query_in("SELECT key FROM units WHERE key IN ({marks})", list(keys))
        }

    def count(self, experiment: str | None = None) -> int:
        """Number of stored units (of one experiment)."""
        if experiment is None:
            return int(self._query("SELECT COUNT(*) FROM units")[0][0])
        return int(
            self._query("SELECT COUNT(*) FROM units WHERE experiment = ?", (experiment,))[0][0]
        )

    def experiments(self) -> list[tuple[str, int, str]]:
        """``(experiment, number of units, last created_at)``, most recent first."""
        rows = self._query(
            "SELECT experiment, COUNT(*), MAX(created_at) FROM units GROUP BY experiment "
            "ORDER BY MAX(created_at) DESC"
        )
        return [(r[0], int(r[1]), r[2]) for r in rows]

    def iter_results(
        self, experiment: str | None = None, keys: Sequence[str] | None = None
    ) -> Iterator[StoredResult]:
        """Stored results one at a time (by experiment, by keys in the given order, or all)."""
        cols = ", ".join(_COLUMNS)
        if keys is not None:
            for key in keys:
                rows = self._query(f"SELECT {cols} FROM units WHERE key = ?", (key,))
                if not rows:
                    raise ResultsStoreError(f"unit {key[:12]} is not in {str(self.path)!r}")
                yield _row_to_result(rows[0])
            return
        if experiment is None:
            rows = self._query(f"SELECT {cols} FROM units ORDER BY experiment, created_at, key")
        else:
            rows = self._query(
                f"SELECT {cols} FROM units WHERE experiment = ? ORDER BY created_at, key",
                (experiment,),
            )
        for row in rows:
            yield _row_to_result(row)

    def load(
        self, experiment: str | None = None, keys: Sequence[str] | None = None
    ) -> list[StoredResult]:
        """All stored results of ``experiment`` (or of ``keys``, in that order)."""
        return list(self.iter_results(experiment, keys))


def _check_shapes(unit: WorkUnit, result: SimulationResult) -> None:
    n = len(result.checkpoints)
    for name in ("regret", "reward", "estimation_error"):
        arr = getattr(result, name)
        if arr is not None and arr.shape != (unit.replications, n):
            raise ResultsStoreError(
                f"{name} of unit {unit.describe()} has shape {arr.shape}, "
                f"expected ({unit.replications}, {n})"
            )


def _row_to_result(row: tuple[Any, ...]) -> StoredResult:
    r = dict(zip(_COLUMNS, row))
    eps = math.inf if r["epsilon"] is None else r["epsilon"]
    guarantee = PrivacyGuarantee(
        model=r["guarantee_model"],
        epsilon=eps,
        delta=r["delta"],
        unit=r["guarantee_unit"],
        notes=r["guarantee_notes"],
        rho=r["rho"],
        approximate=bool(r["approximate"]),
        local_epsilon=r["local_epsilon"],
    )
    try:
        return StoredResult(
            algorithm=r["algorithm"],
            params=json.loads(r["params"]),
            trust_model=r["trust_model"],
            preset=r["preset"],
            guarantee=guarantee,
            env=json.loads(r["env_description"]),
            seed=r["seed"],
            horizon=r["horizon"],
            replications=r["replications"],
            checkpoints=_unnpy_required(r["checkpoints"]),
            regret=_unnpy_required(r["regret"]),
            reward=_unnpy_required(r["reward"]),
            estimation_error=_unnpy(r["estimation_error"]),
            wall_time=r["wall_time"],
            extra=json.loads(r["extra"]),
            key=r["key"],
            experiment=r["experiment"],
            label=r["label"],
            grid=json.loads(r["grid"]),
            unit_env=json.loads(r["env"]),
            created_at=r["created_at"],
            resolved_params=json.loads(r["resolved_params"]),
            engine=r["engine"],
        )
    except (ValueError, OSError) as exc:
        raise ResultsStoreError(f"unit {r['key'][:12]} is corrupt: {exc}") from None
