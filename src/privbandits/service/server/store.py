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
PostgreSQL (``postgresql://user@host:port/db``, psycopg 3 through a connection pool that replaces
a broken connection and retries a statement that failed on one).

The database is bound to its deployment (:mod:`privbandits.service.storage.deployment`): every
write transaction checks that the database still holds the deployment id the process started with,
and :meth:`Store.verify` also checks (SQLite) that the file was not deleted or replaced; a failed
check raises :class:`StoreLost` and the server stops acknowledging.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from privbandits.core.errors import PrivbanditsError
from privbandits.service.storage.deployment import file_identity
from privbandits.service.storage.migrations import migrate

__all__ = [
    "Event",
    "ModelRow",
    "PostgresStore",
    "Quarantined",
    "SQLiteStore",
    "Snapshot",
    "Store",
    "StoreError",
    "StoreLost",
    "open_store",
]


class StoreError(PrivbanditsError):
    """The database cannot be opened, belongs to another configuration or is inconsistent."""


class StoreLost(StoreError):
    """The database of the running deployment is gone: deleted, replaced or another deployment's."""


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


@dataclass(frozen=True)
class Snapshot:
    """A stored snapshot of the model state after event ``seq``
    (:mod:`privbandits.service.storage.snapshots`)."""

    seq: int
    version: int
    digest: str
    state: bytes


#: PostgreSQL advisory lock key of the deployment's writer (one writer at a time across workers).
WRITER_LOCK = 0x70726976

#: The columns of an :class:`Event` (a ``WHERE`` clause follows).
_SELECT_EVENTS = "SELECT seq, kind, token, idem_key, body, body_hash, response FROM events "


def _event(row: tuple[Any, ...]) -> Event:
    """The :class:`Event` of a row of :data:`_SELECT_EVENTS`."""
    seq, kind, token, key, body, bh, resp = row
    return Event(int(seq), kind, token, key, json.loads(body), bh, json.loads(resp))


def _model_row(row: tuple[Any, ...]) -> ModelRow:
    """The :class:`ModelRow` of a row ``(version, seq, rounds, digest)`` of ``models``."""
    version, seq, rounds, digest = row
    return ModelRow(int(version), int(seq), int(rounds), str(digest))


class Store(ABC):
    """A database of one served model (see the module docstring)."""

    #: Parameter placeholder of the driver.
    ph = "?"
    url: str
    #: Binary column type of the driver.
    blob = "BLOB"
    #: The deployment id the process started with (checked by every write; None: not bound).
    expected_deployment: str | None = None

    # -- driver hooks -------------------------------------------------------------------------
    @abstractmethod
    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement in its own transaction and return its rows."""

    @abstractmethod
    def _transaction(
        self, statements: list[tuple[str, tuple[Any, ...]]], lock: bool = False
    ) -> None:
        """Run ``statements`` in one transaction (all or nothing); ``lock``: under the
        deployment's writer lock (PostgreSQL; a SQLite write transaction holds it anyway)."""

    @abstractmethod
    def _has_table(self, name: str) -> bool:
        """Whether the table ``name`` exists (without creating anything)."""

    def _first(self, sql: str, args: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        """The first row of a query, if it returns any."""
        rows = self._execute(sql, args)
        return rows[0] if rows else None

    @abstractmethod
    def writer(self) -> AbstractContextManager[Store]:
        """A write session: a store whose reads and writes run in **one** transaction that holds
        the deployment's writer lock, committed when the block exits normally (rolled back on an
        exception).  Several processes serving one database serialize their writes through it."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection."""

    @abstractmethod
    def probe_write(self, timeout: float = 1.0) -> None:
        """Raise if a write transaction cannot start within ``timeout`` seconds (health check)."""

    def _check_stored_deployment(self, query: Callable[[str], list[Any]]) -> None:
        """In a write transaction of a bound process: :meth:`_check_deployment` on the id the
        database holds, read with ``query`` (the transaction's own connection)."""
        if self.expected_deployment is not None:
            rows = query("SELECT value FROM meta WHERE key = 'deployment_id'")
            self._check_deployment(rows[0][0] if rows else None)

    def _check_deployment(self, value: str | None) -> None:
        if self.expected_deployment is not None and value != self.expected_deployment:
            raise StoreLost(
                f"the database {self.url.split('@')[-1]} now holds "
                + (f"deployment {value}" if value else "no deployment")
                + f", not deployment {self.expected_deployment} this process started with: it was "
                "replaced or emptied; not acknowledging anything until an operator restarts the "
                "service on the right database"
            )

    def verify(self) -> None:
        """Raise :class:`StoreLost` if the database is no longer the deployment's (see the module
        docstring); the default checks the stored deployment id."""
        if self.expected_deployment is None:
            return
        self._check_deployment(self.deployment_id())

    def _q(self, sql: str) -> str:
        return sql.replace("?", self.ph)

    # -- API ----------------------------------------------------------------------------------
    def init(self, config: dict[str, Any]) -> None:
        """Create or migrate the tables (:mod:`privbandits.service.storage.migrations`); refuse a
        database that holds another configuration's model."""
        migrate(self)
        text = json.dumps(config, sort_keys=True)
        self.put_meta("config", text)
        rows = self._execute(self._q("SELECT value FROM meta WHERE key = ?"), ("config",))
        if rows[0][0] != text:
            raise StoreError(
                f"the database {self.url} holds the model of another configuration "
                f"({rows[0][0][:200]}); use a new database or reset it (POST /v1/admin/reset)"
            )

    def put_meta(self, key: str, value: str) -> str:
        """Store ``value`` under ``key`` unless a value is there already; returns the stored one."""
        self._transaction(
            [
                (
                    self._q(
                        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING"
                    ),
                    (key, value),
                )
            ]
        )
        rows = self._execute(self._q("SELECT value FROM meta WHERE key = ?"), (key,))
        return str(rows[0][0])

    def deployment_id(self) -> str | None:
        """The deployment id the database holds (None: none, or no tables yet; creates nothing)."""
        if not self._has_table("meta"):
            return None
        rows = self._execute(self._q("SELECT value FROM meta WHERE key = ?"), ("deployment_id",))
        return str(rows[0][0]) if rows and rows[0][0] else None

    def set_deployment_id(self, value: str) -> None:
        """Record ``value`` as the database's deployment id (creates or migrates the tables)."""
        migrate(self)
        if self.put_meta("deployment_id", value) != value:
            raise StoreError(f"the database {self.url.split('@')[-1]} holds another deployment")

    def has_data(self) -> bool:
        """Whether any request is stored."""
        return self._has_table("events") and bool(self._execute("SELECT 1 FROM events LIMIT 1"))

    # -- snapshots ------------------------------------------------------------------------------
    def save_snapshot(self, snap: Snapshot, keep: int = 2) -> None:
        """Store ``snap`` (once per ``seq``) and drop all but the ``keep`` newest snapshots."""
        self._transaction(
            [
                (
                    self._q(
                        "INSERT INTO snapshots (seq, version, digest, state, created) "
                        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (seq) DO NOTHING"
                    ),
                    (snap.seq, snap.version, snap.digest, snap.state, time.time()),
                ),
                (
                    self._q(
                        "DELETE FROM snapshots WHERE seq NOT IN "
                        "(SELECT seq FROM snapshots ORDER BY seq DESC LIMIT ?)"
                    ),
                    (keep,),
                ),
            ]
        )

    def latest_snapshot(self) -> Snapshot | None:
        """The newest snapshot, if any."""
        row = self._first(
            "SELECT seq, version, digest, state FROM snapshots ORDER BY seq DESC LIMIT 1"
        )
        if row is None:
            return None
        seq, version, digest, state = row
        return Snapshot(int(seq), int(version), str(digest), bytes(state))

    def events(self, after: int = 0) -> Iterator[Event]:
        """Every stored event with ``seq > after`` in acceptance order."""
        rows = self._execute(self._q(_SELECT_EVENTS + "WHERE seq > ? ORDER BY seq"), (after,))
        for row in rows:
            yield _event(row)

    def find(self, token: str, idem_key: str) -> Event | None:
        """The event ``token`` sent with ``idem_key``, if any."""
        row = self._first(
            self._q(_SELECT_EVENTS + "WHERE token = ? AND idem_key = ?"), (token, idem_key)
        )
        return None if row is None else _event(row)

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
        row = self._first(
            "SELECT version, seq, rounds, digest FROM models ORDER BY version DESC LIMIT 1"
        )
        return None if row is None else _model_row(row)

    def models(self) -> list[ModelRow]:
        """Every model update in version order."""
        rows = self._execute("SELECT version, seq, rounds, digest FROM models ORDER BY version")
        return [_model_row(row) for row in rows]

    def quarantined(self) -> list[Quarantined]:
        """Every quarantined report in acceptance order."""
        rows = self._execute(
            "SELECT seq, batch_id, idx, field, message FROM quarantine ORDER BY seq, idx"
        )
        return [Quarantined(int(s), str(b), int(i), str(f), str(m)) for s, b, i, f, m in rows]

    def wipe(self) -> None:
        """Delete every event, model update and quarantined report (the configuration stays)."""
        self._transaction(
            [
                ("DELETE FROM events", ()),
                ("DELETE FROM models", ()),
                ("DELETE FROM quarantine", ()),
                ("DELETE FROM snapshots", ()),
            ]
        )


class _Session(Store):
    """The statements of one write session (:meth:`Store.writer`), run on its open transaction."""

    def __init__(self, parent: Store, run: Any) -> None:
        self.url, self.ph, self.blob = parent.url, parent.ph, parent.blob
        self.expected_deployment = parent.expected_deployment
        self._run = run

    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._run(sql, args)
        return rows

    def _transaction(
        self, statements: list[tuple[str, tuple[Any, ...]]], lock: bool = False
    ) -> None:
        self._check_stored_deployment(lambda sql: self._run(sql, ()))
        for sql, args in statements:
            self._run(sql, args)

    def _has_table(self, name: str) -> bool:  # pragma: no cover - not used in a session
        return True

    def writer(self) -> AbstractContextManager[Store]:  # pragma: no cover - no nesting
        raise StoreError("write sessions do not nest")

    def probe_write(self, timeout: float = 1.0) -> None:  # pragma: no cover
        return None

    def close(self) -> None:  # pragma: no cover
        return None


class SQLiteStore(Store):
    """SQLite in WAL mode (stdlib :mod:`sqlite3`).

    ``busy_timeout`` bounds how long a write waits for a lock another connection holds (then the
    request is refused with 503 and a ``Retry-After``, never left hanging).
    """

    ph = "?"

    def __init__(self, path: str, synchronous: str = "NORMAL", busy_timeout: float = 5.0) -> None:
        self.url = f"sqlite:///{path}"
        self.path = path
        self.busy_timeout = float(busy_timeout)
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise StoreError(f"synchronous must be NORMAL, FULL or EXTRA, got {synchronous!r}")
        try:
            if path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=self.busy_timeout
            )
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {path!r}: {exc}") from None
        self._ident = self._stat() if path != ":memory:" else None
        self._lock = threading.RLock()

    def _stat(self) -> tuple[int, int] | None:
        return file_identity(self.path)

    def verify(self) -> None:
        if self._ident is not None and self.expected_deployment is not None:
            now = self._stat()
            if now is None:
                raise StoreLost(
                    f"the database file {self.path!r} was deleted under the running server; not "
                    "acknowledging anything (restore it from a backup and restart; a restart "
                    "without it is refused)"
                )
            if now != self._ident:
                raise StoreLost(
                    f"the database file {self.path!r} was replaced under the running server "
                    "(another file now has its name); not acknowledging anything until an "
                    "operator restarts the service"
                )
        super().verify()

    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self.conn.execute(sql, args).fetchall()

    def _has_table(self, name: str) -> bool:
        return bool(
            self._execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        )

    @contextmanager
    def writer(self) -> Iterator[Store]:
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield _Session(self, lambda sql, args: self.conn.execute(sql, args).fetchall())
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def _transaction(
        self, statements: list[tuple[str, tuple[Any, ...]]], lock: bool = False
    ) -> None:
        with self._lock:
            cur = self.conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                self._check_stored_deployment(lambda sql: cur.execute(sql).fetchall())
                for sql, args in statements:
                    cur.execute(sql, args)
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def probe_write(self, timeout: float = 1.0) -> None:
        if self.path == ":memory:":
            return
        self.verify()
        path = os.path.abspath(self.path)
        path = "/" + path.lstrip("/")  # '//x' is a URI authority
        conn = sqlite3.connect(
            f"file:{quote(path)}?mode=rw", uri=True, isolation_level=None, timeout=timeout
        )
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        finally:
            conn.close()

    def close(self) -> None:
        self.conn.close()


class PostgresStore(Store):
    """PostgreSQL through psycopg 3 and a :mod:`psycopg_pool` connection pool.

    A statement that fails because its connection broke (server restart, terminated backend,
    network) is retried on a fresh connection up to ``retries`` times; a transaction is all or
    nothing, and a retried one that had in fact committed is caught by the unique idempotency key.
    """

    ph = "%s"
    blob = "BYTEA"

    def __init__(
        self, url: str, pool_size: int = 4, retries: int = 3, timeout: float = 5.0
    ) -> None:
        self.url = url
        self.retries, self.timeout = retries, timeout
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:  # pragma: no cover - depends on the install
            raise StoreError(
                "PostgreSQL needs psycopg 3 and psycopg-pool: pip install 'privbandits[serve]'"
            ) from None
        self._errors = (psycopg.OperationalError, psycopg.InterfaceError)
        try:
            psycopg.connect(url, connect_timeout=int(max(1, timeout))).close()
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {url!r}: {exc}") from None
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "connect_timeout": int(max(1, timeout))},
            check=ConnectionPool.check_connection,
            timeout=timeout,
            open=True,
            name="privbandits",
        )

    def _retrying(self, work: Any) -> Any:
        from psycopg_pool import PoolTimeout

        for attempt in range(self.retries + 1):
            try:
                with self.pool.connection() as conn:
                    return work(conn)
            except (*self._errors, PoolTimeout) as exc:
                if attempt == self.retries:
                    raise StoreError(
                        f"PostgreSQL unavailable after {attempt + 1} attempt(s): {exc}"
                    ) from None
                time.sleep(min(0.05 * 2**attempt, 1.0))
        raise AssertionError("unreachable")  # pragma: no cover

    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        def work(conn: Any) -> list[tuple[Any, ...]]:
            cur = conn.execute(sql, args)
            return cur.fetchall() if cur.description is not None else []

        out: list[tuple[Any, ...]] = self._retrying(work)
        return out

    def _has_table(self, name: str) -> bool:
        rows = self._execute("SELECT to_regclass(%s) IS NOT NULL", (name,))
        return bool(rows[0][0])

    @contextmanager
    def writer(self) -> Iterator[Store]:
        conn = None
        for attempt in range(self.retries + 1):  # a broken pooled connection is replaced
            conn = self.pool.getconn()
            try:
                conn.execute("BEGIN")
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
                break
            except self._errors as exc:
                self.pool.putconn(conn)
                conn = None
                if attempt == self.retries:
                    raise StoreError(
                        f"PostgreSQL unavailable after {attempt + 1} attempt(s): {exc}"
                    ) from None
                time.sleep(min(0.05 * 2**attempt, 1.0))
        assert conn is not None
        try:

            def run(sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
                cur = conn.execute(sql, args)
                return cur.fetchall() if cur.description is not None else []

            try:
                yield _Session(self, run)
            except BaseException:
                try:
                    conn.execute("ROLLBACK")
                except Exception:  # a broken connection: the pool discards it
                    pass
                raise
            conn.execute("COMMIT")
        finally:
            self.pool.putconn(conn)

    def _transaction(
        self, statements: list[tuple[str, tuple[Any, ...]]], lock: bool = False
    ) -> None:
        def work(conn: Any) -> None:
            with conn.transaction():
                if lock:
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
                self._check_stored_deployment(lambda sql: conn.execute(sql).fetchall())
                for sql, args in statements:
                    conn.execute(sql, args)

        self._retrying(work)

    def probe_write(self, timeout: float = 1.0) -> None:
        def work(conn: Any) -> None:
            with conn.transaction():
                conn.execute(f"SET LOCAL statement_timeout = {int(timeout * 1000)}")
                conn.execute("UPDATE meta SET value = value WHERE key = 'deployment_id'")

        self._retrying(work)
        self.verify()

    def close(self) -> None:
        self.pool.close()


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
        query = parse_qs(parts.query)
        sync = query.get("synchronous", ["NORMAL"])[0]
        busy = query.get("busy_timeout", ["5"])[0]
        try:
            busy_s = float(busy)
        except ValueError:
            raise StoreError(f"busy_timeout must be a number of seconds, got {busy!r}") from None
        return SQLiteStore(path or ":memory:", sync, busy_s)
    if "://" in text:
        raise StoreError(
            f"unsupported database URL {text!r}: use a file path, sqlite:///path or postgresql://..."
        )
    return SQLiteStore(text)
