"""Durable storage of a served model: every accepted request and every model update.

Two tables, written together in **one transaction** per accepted request:

* ``events (seq, kind, token, idem_key, body, body_hash, response, created)``: the validated
  request (``kind`` = ``report``, ``batch``, ``select`` or ``raw``) in acceptance order, with the
  answer the client got (a retried request with the same idempotency key gets it again);
* ``models (version, seq, rounds, digest, created)``: each model update, with the sha256 of the
  complete server state after it (:meth:`privbandits.service.server.model.ServedModel.digest`);
* ``quarantine (seq, batch_id, idx, field, message, created)``: each report of a shuffled batch
  that did not open or parse (written with the batch's event; never applied to the model).

On restart the service replays ``events`` in ``seq`` order through a fresh server role and checks
that the digest of the rebuilt state equals the last stored one: the state is exactly the one it
had acknowledged.

Back ends: SQLite in WAL mode (the default; a file path or ``sqlite:///path``; committed
transactions survive a crash of the process, ``?synchronous=FULL`` also survives power loss) and
PostgreSQL (``postgresql://user@host:port/db``, psycopg 3).
"""

from __future__ import annotations

import json
import sqlite3
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from privbandits.core.errors import PrivbanditsError

__all__ = [
    "Event",
    "ModelRow",
    "PostgresStore",
    "Quarantined",
    "SQLiteStore",
    "Store",
    "StoreError",
    "open_store",
]


class StoreError(PrivbanditsError):
    """The database cannot be opened, belongs to another configuration or is inconsistent."""


@dataclass(frozen=True)
class Event:
    """One accepted request."""

    seq: int
    kind: str
    token: str
    idem_key: str
    body: dict[str, Any]
    body_hash: str
    response: dict[str, Any]


@dataclass(frozen=True)
class ModelRow:
    """One model update: its version, the event that made it, users counted and state digest."""

    version: int
    seq: int
    rounds: int
    digest: str


@dataclass(frozen=True)
class Quarantined:
    """One quarantined report: the event of its batch, the batch id, its index in the batch, the
    field that was wrong and why."""

    seq: int
    batch_id: str
    index: int
    field: str
    message: str


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS events (seq BIGINT PRIMARY KEY, kind TEXT NOT NULL, token TEXT NOT NULL, "
    "idem_key TEXT NOT NULL, body TEXT NOT NULL, body_hash TEXT NOT NULL, response TEXT NOT NULL, "
    "created DOUBLE PRECISION NOT NULL, UNIQUE (token, idem_key))",
    "CREATE TABLE IF NOT EXISTS models (version BIGINT PRIMARY KEY, seq BIGINT NOT NULL, rounds BIGINT NOT NULL, "
    "digest TEXT NOT NULL, created DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS quarantine (seq BIGINT NOT NULL, batch_id TEXT NOT NULL, idx INTEGER NOT NULL, "
    "field TEXT NOT NULL, message TEXT NOT NULL, created DOUBLE PRECISION NOT NULL, PRIMARY KEY (seq, idx))",
)


class Store(ABC):
    """A database of one served model (see the module docstring)."""

    #: Parameter placeholder of the driver.
    ph = "?"
    url: str

    # -- driver hooks -------------------------------------------------------------------------
    @abstractmethod
    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement in its own transaction and return its rows."""

    @abstractmethod
    def _transaction(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Run ``statements`` in one transaction (all or nothing)."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection."""

    def _q(self, sql: str) -> str:
        return sql.replace("?", self.ph)

    # -- API ----------------------------------------------------------------------------------
    def init(self, config: dict[str, Any]) -> None:
        """Create the tables; refuse a database that holds another configuration's model."""
        for stmt in _SCHEMA:
            self._execute(stmt)
        text = json.dumps(config, sort_keys=True)
        rows = self._execute(self._q("SELECT value FROM meta WHERE key = ?"), ("config",))
        if not rows:
            self._transaction(
                [(self._q("INSERT INTO meta (key, value) VALUES (?, ?)"), ("config", text))]
            )
        elif rows[0][0] != text:
            raise StoreError(
                f"the database {self.url} holds the model of another configuration "
                f"({rows[0][0][:200]}); use a new database or reset it (POST /v1/admin/reset)"
            )

    def events(self) -> Iterator[Event]:
        """Every stored event in acceptance order."""
        rows = self._execute(
            "SELECT seq, kind, token, idem_key, body, body_hash, response FROM events ORDER BY seq"
        )
        for seq, kind, token, key, body, bh, resp in rows:
            yield Event(int(seq), kind, token, key, json.loads(body), bh, json.loads(resp))

    def find(self, token: str, idem_key: str) -> Event | None:
        """The event ``token`` sent with ``idem_key``, if any."""
        rows = self._execute(
            self._q(
                "SELECT seq, kind, token, idem_key, body, body_hash, response FROM events "
                "WHERE token = ? AND idem_key = ?"
            ),
            (token, idem_key),
        )
        if not rows:
            return None
        seq, kind, tok, key, body, bh, resp = rows[0]
        return Event(int(seq), kind, tok, key, json.loads(body), bh, json.loads(resp))

    def append(
        self, event: Event, model: ModelRow | None, quarantined: list[Quarantined] | None = None
    ) -> None:
        """Store ``event``, (if the model changed) ``model`` and the reports of the event quarantined
        in one transaction."""
        now = time.time()
        stmts: list[tuple[str, tuple[Any, ...]]] = [
            (
                self._q(
                    "INSERT INTO events (seq, kind, token, idem_key, body, body_hash, response, created) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                ),
                (
                    event.seq,
                    event.kind,
                    event.token,
                    event.idem_key,
                    json.dumps(event.body, separators=(",", ":")),
                    event.body_hash,
                    json.dumps(event.response, separators=(",", ":")),
                    now,
                ),
            )
        ]
        if model is not None:
            stmts.append(
                (
                    self._q(
                        "INSERT INTO models (version, seq, rounds, digest, created) VALUES (?, ?, ?, ?, ?)"
                    ),
                    (model.version, model.seq, model.rounds, model.digest, now),
                )
            )
        for q in quarantined or []:
            stmts.append(
                (
                    self._q(
                        "INSERT INTO quarantine (seq, batch_id, idx, field, message, created) "
                        "VALUES (?, ?, ?, ?, ?, ?)"
                    ),
                    (q.seq, q.batch_id, q.index, q.field, q.message, now),
                )
            )
        self._transaction(stmts)

    def latest_model(self) -> ModelRow | None:
        """The last model update, if any."""
        rows = self._execute(
            "SELECT version, seq, rounds, digest FROM models ORDER BY version DESC LIMIT 1"
        )
        if not rows:
            return None
        version, seq, rounds, digest = rows[0]
        return ModelRow(int(version), int(seq), int(rounds), str(digest))

    def models(self) -> list[ModelRow]:
        """Every model update in version order."""
        rows = self._execute("SELECT version, seq, rounds, digest FROM models ORDER BY version")
        return [ModelRow(int(v), int(s), int(r), d) for v, s, r, d in rows]

    def quarantined(self) -> list[Quarantined]:
        """Every quarantined report in acceptance order."""
        rows = self._execute(
            "SELECT seq, batch_id, idx, field, message FROM quarantine ORDER BY seq, idx"
        )
        return [Quarantined(int(s), str(b), int(i), str(f), str(m)) for s, b, i, f, m in rows]

    def wipe(self) -> None:
        """Delete every event, model update and quarantined report (the configuration stays)."""
        self._transaction(
            [("DELETE FROM events", ()), ("DELETE FROM models", ()), ("DELETE FROM quarantine", ())]
        )


class SQLiteStore(Store):
    """SQLite in WAL mode (stdlib :mod:`sqlite3`)."""

    ph = "?"

    def __init__(self, path: str, synchronous: str = "NORMAL") -> None:
        self.url = f"sqlite:///{path}"
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise StoreError(f"synchronous must be NORMAL, FULL or EXTRA, got {synchronous!r}")
        try:
            if path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=30.0
            )
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {path!r}: {exc}") from None

    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, args).fetchall()

    def _transaction(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            for sql, args in statements:
                cur.execute(sql, args)
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


class PostgresStore(Store):
    """PostgreSQL through psycopg 3."""

    ph = "%s"

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            import psycopg
        except ImportError:  # pragma: no cover - depends on the install
            raise StoreError(
                "PostgreSQL needs psycopg 3: pip install 'privbandits[serve]'"
            ) from None
        try:
            self.conn = psycopg.connect(url, autocommit=True)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {url!r}: {exc}") from None

    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        cur = self.conn.execute(sql, args)
        return cur.fetchall() if cur.description is not None else []

    def _transaction(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        with self.conn.transaction():
            for sql, args in statements:
                self.conn.execute(sql, args)

    def close(self) -> None:
        self.conn.close()


def open_store(url: str | Path) -> Store:
    """Open the database at ``url``: a path or ``sqlite:///path[?synchronous=FULL]`` (SQLite), or
    ``postgresql://...`` / ``postgres://...`` (PostgreSQL)."""
    text = str(url)
    if text.startswith(("postgresql://", "postgres://")):
        return PostgresStore(text)
    if text.startswith("sqlite://"):
        parts = urlsplit(text)
        path = (
            parts.path[1:]
            if parts.path.startswith("/") and text.startswith("sqlite:///")
            else parts.path
        )
        if text.startswith("sqlite:////"):
            path = parts.path
        sync = parse_qs(parts.query).get("synchronous", ["NORMAL"])[0]
        return SQLiteStore(path or ":memory:", sync)
    if "://" in text:
        raise StoreError(
            f"unsupported database URL {text!r}: use a file path, sqlite:///path or postgresql://..."
        )
    return SQLiteStore(text)
