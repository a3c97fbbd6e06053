"""Durable queue of the shuffler service: pending reports and cut batches in SQLite.

A report is acknowledged to its client only after the transaction that stores it has committed,
so a crash of the shuffler loses nothing it acknowledged.  A batch is *cut* in one transaction:
``size`` pending reports of one model version are taken, put in a uniformly random order and
written as the exact request body to forward (the outbox), and removed from the pending table.
The body holds the reports and nothing else: no token, idempotency key, address, timestamp or
arrival order.  Once the server has acknowledged a batch its body is dropped; after a crash the
outbox is forwarded again with the same ``batch_id``, which the server uses to ignore a repeat.

Idempotency: the store keeps a one-way digest of ``(client token, idempotency key)`` of every
report it ever acknowledged (and nothing linking it to the report), so a retried report is
acknowledged again but queued once.

Bad reports and batches: a report that fails the shuffler's checks is never queued; the
``quarantine`` table keeps its model version, the field that was wrong, the reason and its size
(nothing about its sender).  A batch the server refuses is retried at most ``max_attempts``
times (:meth:`ShufflerStore.failed`), then moved to ``dead_letters`` with the last refusal,
where it waits for an operator (:meth:`ShufflerStore.requeue`): it never blocks the batches
behind it.

Durability: the database runs in WAL mode with ``synchronous=FULL`` by default (every commit is
fsynced: an acknowledged report survives a crash of the process *and* of the machine);
``synchronous="NORMAL"`` keeps it across a crash or ``kill -9`` of the process but a power loss
may drop the last commits.
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privbandits.core.errors import PrivbanditsError, ValidationError
from privbandits.core.validation import check_choice, check_int
from privbandits.service.shuffler.permutation import Permutation, system_permutation
from privbandits.service.storage.deployment import file_identity

__all__ = ["CutBatch", "QueueLost", "ShufflerStore", "report_digest"]


class QueueLost(PrivbanditsError):
    """The shuffler's database was deleted, replaced or emptied under the running shuffler."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS seen (digest TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending (id INTEGER PRIMARY KEY, model_version INTEGER NOT NULL, report TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS pending_version ON pending (model_version, id);
CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY, batch_id TEXT UNIQUE NOT NULL,
                                   model_version INTEGER NOT NULL, size INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS slots (model_version INTEGER NOT NULL, pos INTEGER NOT NULL, action INTEGER NOT NULL,
                                  handed INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (model_version, pos));
CREATE TABLE IF NOT EXISTS leases (model_version INTEGER NOT NULL, pos INTEGER NOT NULL, holder TEXT NOT NULL,
                                   expires REAL NOT NULL, used INTEGER NOT NULL DEFAULT 0,
                                   PRIMARY KEY (model_version, pos)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS spent (device TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS quarantine (id INTEGER PRIMARY KEY, model_version INTEGER NOT NULL, field TEXT NOT NULL,
                                       reason TEXT NOT NULL, size INTEGER NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (batch_id TEXT PRIMARY KEY, n INTEGER NOT NULL, last_error TEXT NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dead_letters (batch_id TEXT PRIMARY KEY, model_version INTEGER NOT NULL,
                                         size INTEGER NOT NULL, body TEXT NOT NULL, reason TEXT NOT NULL,
                                         attempts INTEGER NOT NULL, created REAL NOT NULL) WITHOUT ROWID;
"""

_COUNTERS = (
    "reports_received",
    "batches_cut",
    "batches_forwarded",
    "reports_forwarded",
    "closed_below",
    "reports_quarantined",
    "batches_dead",
    "server_quarantined",
    "server_filled",
)


def report_digest(token: str, idempotency_key: str) -> str:
    """One-way digest of a report's sender token and idempotency key (the only trace kept)."""
    return hashlib.sha256(f"{len(token)}:{token}:{idempotency_key}".encode()).hexdigest()


def _holder(device: str) -> str:
    """The one-way name of a device in the slot leases."""
    return hashlib.sha256(f"lease:{device}".encode()).hexdigest()


@dataclass(frozen=True)
class CutBatch:
    """A batch written to the outbox: the body to ``POST /v1/batches`` and its bookkeeping."""

    seq: int
    batch_id: str
    model_version: int
    size: int
    body: str

    def payload(self) -> dict[str, Any]:
        """The request body as a JSON object."""
        out: dict[str, Any] = json.loads(self.body)
        return out


class ShufflerStore:
    """SQLite store of the shuffler (WAL mode; one writer, thread-safe).

    Parameters
    ----------
    path : str or Path
        Database file (created if missing); ``":memory:"`` for a throwaway store.
    synchronous : {"FULL", "NORMAL"}
        SQLite ``synchronous`` pragma (see the module docstring for what each guarantees).
    permutation : callable, optional
        ``n -> perm``, the order of a cut batch; default the OS's cryptographic generator.
    """

    def __init__(
        self, path: str | Path, synchronous: str = "FULL", permutation: Permutation | None = None
    ) -> None:
        sync = check_choice("synchronous", str(synchronous).upper(), ("FULL", "NORMAL"))
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={sync}")
        self._db.executescript(_SCHEMA)
        self._db.executemany(
            "INSERT OR IGNORE INTO counters VALUES (?, 0)", [(c,) for c in _COUNTERS]
        )
        self._permutation = permutation or system_permutation
        self.path = str(path)
        self._ident = self._stat() if self.path != ":memory:" else None
        #: The deployment id the process started with (checked by every write; None: not bound).
        self.expected_deployment: str | None = None

    # -- deployment -----------------------------------------------------------------------------
    def _stat(self) -> tuple[int, int] | None:
        return file_identity(self.path)

    def deployment_id(self) -> str | None:
        """The deployment id the database holds (None: none yet)."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'deployment_id'").fetchone()
        return str(row[0]) if row else None

    def set_deployment_id(self, value: str) -> None:
        """Record ``value`` as the database's deployment id (once)."""
        with self._lock:
            self._db.execute("INSERT INTO meta VALUES ('deployment_id', ?)", (value,))

    def has_data(self) -> bool:
        """Whether any report was ever acknowledged."""
        with self._lock:
            return self._db.execute("SELECT 1 FROM seen LIMIT 1").fetchone() is not None

    def _begin(self) -> None:
        """``BEGIN IMMEDIATE``, then (bound to a deployment) check that the file is still the one
        opened and holds the deployment id; raises :class:`QueueLost` otherwise (rolled back)."""
        self._db.execute("BEGIN IMMEDIATE")
        if self.expected_deployment is None:
            return
        why = None
        if self._ident is not None:
            now = self._stat()
            if now is None:
                why = "was deleted"
            elif now != self._ident:
                why = "was replaced (another file now has its name)"
        if why is None:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'deployment_id'").fetchone()
            if row is None or row[0] != self.expected_deployment:
                why = "holds another deployment or none"
        if why is not None:
            self._db.execute("ROLLBACK")
            raise QueueLost(
                f"the shuffler's database {self.path!r} {why} under the running shuffler; not "
                "acknowledging anything (restore it and restart; a restart without it is refused)"
            )

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()

    # -- intake -------------------------------------------------------------------------------
    def add(
        self,
        digest: str,
        model_version: int,
        report: Any,
        cap: int | None = None,
        device: str | None = None,
        budget: int | None = None,
    ) -> str:
        """Queue one report; returns ``"queued"``, ``"duplicate"``, ``"full"`` or ``"budget"``.

        ``"duplicate"``: ``digest`` was acknowledged before (nothing queued again).  ``"full"``:
        ``cap`` reports of ``model_version`` are already pending (the protocol's batch is
        complete, or a complete batch of that version was cut already).  ``"budget"``: the
        ``device`` already had ``budget`` reports accepted (its privacy budget is spent).  The
        store keeps per device only the number of its accepted reports, never which ones.
        Returns only after the transaction has committed, so the caller may then acknowledge.
        """
        version = check_int("model_version", model_version, 0)
        text = json.dumps(report, separators=(",", ":"), allow_nan=False)
        with self._lock:
            self._begin()
            try:
                if self._db.execute("SELECT 1 FROM seen WHERE digest = ?", (digest,)).fetchone():
                    self._db.execute("ROLLBACK")
                    return "duplicate"
                if cap is not None and (
                    version < self._counter("closed_below")
                    or self._db.execute(
                        "SELECT COUNT(*) FROM pending WHERE model_version = ?", (version,)
                    ).fetchone()[0]
                    >= cap
                ):
                    self._db.execute("ROLLBACK")
                    return "full"
                if device is not None and budget is not None:
                    row = self._db.execute(
                        "SELECT n FROM spent WHERE device = ?", (device,)
                    ).fetchone()
                    if row is not None and int(row[0]) >= budget:
                        self._db.execute("ROLLBACK")
                        return "budget"
                    self._db.execute(
                        "INSERT INTO spent VALUES (?, 1) ON CONFLICT (device) DO UPDATE SET n = n + 1",
                        (device,),
                    )
                self._db.execute("INSERT INTO seen VALUES (?)", (digest,))
                if device is not None:  # the device's action slot of this batch is used
                    self._db.execute(
                        "UPDATE leases SET used = 1 WHERE model_version = ? AND holder = ? AND used = 0",
                        (version, _holder(device)),
                    )
                self._db.execute(
                    "INSERT INTO pending (model_version, report) VALUES (?, ?)", (version, text)
                )
                self._bump("reports_received", 1)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return "queued"

    # -- batches ------------------------------------------------------------------------------
    def pending(self, model_version: int | None = None) -> int:
        """Reports waiting (of one model version, or all)."""
        with self._lock:
            if model_version is None:
                row = self._db.execute("SELECT COUNT(*) FROM pending").fetchone()
            else:
                row = self._db.execute(
                    "SELECT COUNT(*) FROM pending WHERE model_version = ?", (model_version,)
                ).fetchone()
        return int(row[0])

    def pending_versions(self) -> dict[int, int]:
        """``model_version -> number of pending reports``."""
        with self._lock:
            rows = self._db.execute(
                "SELECT model_version, COUNT(*) FROM pending GROUP BY model_version"
            ).fetchall()
        return {int(v): int(c) for v, c in rows}

    def cut(self, model_version: int, size: int, close: bool = False) -> CutBatch | None:
        """Move ``size`` pending reports of ``model_version`` to the outbox, uniformly permuted.

        Returns ``None`` (and changes nothing) while fewer than ``size`` are pending.  The
        reports taken are the oldest ones (so none waits forever); their forwarded order is
        ``permutation(size)``, independent of arrival.  ``close=True`` (a protocol-sized batch):
        reports of ``model_version`` and older are refused from then on (:meth:`add` with a cap).
        """
        size = check_int("size", size, 1)
        with self._lock:
            self._begin()
            try:
                rows = self._db.execute(
                    "SELECT id, report FROM pending WHERE model_version = ? ORDER BY id LIMIT ?",
                    (model_version, size),
                ).fetchall()
                if len(rows) < size:
                    self._db.execute("ROLLBACK")
                    return None
                perm = self._permutation(size)
                if sorted(perm) != list(range(size)):
                    raise ValidationError(
                        f"permutation must hold each of 0..{size - 1} once, got {perm!r}"
                    )
                batch_id = secrets.token_hex(16)
                reports = ",".join(rows[i][1] for i in perm)
                body = f'{{"batch_id":"{batch_id}","model_version":{int(model_version)},"reports":[{reports}]}}'
                cur = self._db.execute(
                    "INSERT INTO outbox (batch_id, model_version, size, body) VALUES (?, ?, ?, ?)",
                    (batch_id, model_version, size, body),
                )
                self._db.executemany("DELETE FROM pending WHERE id = ?", [(r[0],) for r in rows])
                self._bump("batches_cut", 1)
                if close:
                    self._db.execute(
                        "UPDATE counters SET value = MAX(value, ?) WHERE name = 'closed_below'",
                        (int(model_version) + 1,),
                    )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return CutBatch(int(cur.lastrowid or 0), batch_id, int(model_version), size, body)

    def outbox(self) -> list[CutBatch]:
        """Cut batches not yet acknowledged by the server, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, batch_id, model_version, size, body FROM outbox ORDER BY seq"
            ).fetchall()
        return [CutBatch(int(s), str(b), int(v), int(n), str(t)) for s, b, v, n, t in rows]

    def forwarded(self, batch: CutBatch, quarantined: int = 0, filled: int = 0) -> None:
        """The server acknowledged ``batch`` (``quarantined`` of its reports did not open or parse
        there, ``filled`` slots were answered by zero reports): drop its body from the outbox."""
        with self._lock:
            self._begin()
            cur = self._db.execute("DELETE FROM outbox WHERE batch_id = ?", (batch.batch_id,))
            self._db.execute("DELETE FROM attempts WHERE batch_id = ?", (batch.batch_id,))
            if cur.rowcount:
                self._bump("batches_forwarded", 1)
                self._bump("reports_forwarded", batch.size)
                self._bump("server_quarantined", max(0, int(quarantined)))
                self._bump("server_filled", max(0, int(filled)))
            self._db.execute("COMMIT")

    def failed(self, batch: CutBatch, reason: str, max_attempts: int) -> bool:
        """The server refused ``batch``: count the attempt; after ``max_attempts`` refusals move
        it to the dead letters (True).  Returns whether it was moved."""
        max_attempts = check_int("max_attempts", max_attempts, 1)
        with self._lock:
            self._begin()
            try:
                self._db.execute(
                    "INSERT INTO attempts VALUES (?, 1, ?) ON CONFLICT (batch_id) DO UPDATE "
                    "SET n = n + 1, last_error = excluded.last_error",
                    (batch.batch_id, reason[:2000]),
                )
                n = int(
                    self._db.execute(
                        "SELECT n FROM attempts WHERE batch_id = ?", (batch.batch_id,)
                    ).fetchone()[0]
                )
                dead = n >= max_attempts
                if dead:
                    cur = self._db.execute(
                        "DELETE FROM outbox WHERE batch_id = ?", (batch.batch_id,)
                    )
                    if cur.rowcount:
                        self._db.execute(
                            "INSERT OR REPLACE INTO dead_letters VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (
                                batch.batch_id,
                                batch.model_version,
                                batch.size,
                                batch.body,
                                reason[:2000],
                                n,
                                time.time(),
                            ),
                        )
                        self._bump("batches_dead", 1)
                    self._db.execute("DELETE FROM attempts WHERE batch_id = ?", (batch.batch_id,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return dead

    def dead_letters(self) -> list[dict[str, Any]]:
        """Batches given up on (without their bodies): ``batch_id``, ``model_version``, ``size``,
        ``reason``, ``attempts``, ``created``."""
        with self._lock:
            rows = self._db.execute(
                "SELECT batch_id, model_version, size, reason, attempts, created "
                "FROM dead_letters ORDER BY created"
            ).fetchall()
        return [
            {
                "batch_id": b,
                "model_version": int(v),
                "size": int(n),
                "reason": r,
                "attempts": int(a),
                "created": float(c),
            }
            for b, v, n, r, a, c in rows
        ]

    def requeue(self, batch_id: str) -> bool:
        """Put a dead letter back in the outbox (an operator fixed the cause); False if unknown."""
        with self._lock:
            self._begin()
            try:
                row = self._db.execute(
                    "SELECT batch_id, model_version, size, body FROM dead_letters "
                    "WHERE batch_id = ?",
                    (batch_id,),
                ).fetchone()
                if row is not None:
                    self._db.execute(
                        "INSERT INTO outbox (batch_id, model_version, size, body) VALUES (?, ?, ?, ?)",
                        row,
                    )
                    self._db.execute("DELETE FROM dead_letters WHERE batch_id = ?", (batch_id,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return row is not None

    # -- quarantine -------------------------------------------------------------------------------
    def quarantine(self, model_version: int, field: str, reason: str, size: int) -> None:
        """Record a report that failed the shuffler's checks (never queued): its model version,
        the field and the reason, and its size in bytes; nothing about its sender."""
        with self._lock:
            self._begin()
            self._db.execute(
                "INSERT INTO quarantine (model_version, field, reason, size, created) "
                "VALUES (?, ?, ?, ?, ?)",
                (int(model_version), field[:200], reason[:500], int(size), time.time()),
            )
            self._bump("reports_quarantined", 1)
            self._db.execute("COMMIT")

    def quarantined(self, limit: int = 20) -> list[dict[str, Any]]:
        """The last ``limit`` quarantined reports, newest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT model_version, field, reason, size, created FROM quarantine "
                "ORDER BY id DESC LIMIT ?",
                (int(limit),),
            ).fetchall()
        return [
            {"model_version": int(v), "field": f, "reason": r, "size": int(n), "created": float(c)}
            for v, f, r, n, c in rows
        ]

    # -- action slots (Hanna et al. 2022, Algorithm 3) -----------------------------------------------
    def assign_slot(
        self,
        model_version: int,
        counts: list[int],
        device: str | None = None,
        lease_seconds: float | None = None,
        now: float | None = None,
    ) -> tuple[int, int] | None:
        """Hand out an action slot of the batch of ``model_version``: ``(action, n_i)``.

        On the first call for a version the batch's slot list (action ``a`` repeated ``n_ia``
        times, ``counts[a] = n_ia``) is put in a uniformly random order and stored; each call
        hands the next slot, so the users of the batch receive a uniformly random assignment of
        the public schedule (Hanna et al. 2022, Algorithm 3, the shuffler's assignment).  ``None``
        when every slot of the batch is handed out.

        With a ``device`` the slot is *leased* to it for ``lease_seconds`` (from ``now``, a wall
        clock time): asked again before it reported, the device gets the same slot (and the lease
        is renewed); its accepted report (:meth:`add`) uses the slot; a lease that expires unused
        is reclaimed and handed to the next device, so a lost answer or a device that never
        reports does not hold the batch back.
        """
        version = check_int("model_version", model_version, 0)
        n = [check_int(f"counts[{a}]", c, 0) for a, c in enumerate(counts)]
        total = sum(n)
        t = time.time() if now is None else float(now)
        holder = None if device is None else _holder(device)
        with self._lock:
            self._begin()
            try:
                if not self._db.execute(
                    "SELECT 1 FROM slots WHERE model_version = ?", (version,)
                ).fetchone():
                    canonical = [a for a, c in enumerate(n) for _ in range(c)]
                    perm = self._permutation(total)
                    self._db.executemany(
                        "INSERT INTO slots (model_version, pos, action) VALUES (?, ?, ?)",
                        [(version, i, canonical[j]) for i, j in enumerate(perm)],
                    )
                    self._db.execute("DELETE FROM slots WHERE model_version < ?", (version,))
                    self._db.execute("DELETE FROM leases WHERE model_version < ?", (version,))
                self._reclaim(version, t)
                row = None
                if holder is not None:
                    row = self._db.execute(
                        "SELECT s.pos, s.action FROM leases l JOIN slots s ON "
                        "s.model_version = l.model_version AND s.pos = l.pos "
                        "WHERE l.model_version = ? AND l.holder = ? AND l.used = 0",
                        (version, holder),
                    ).fetchone()
                if row is None:
                    row = self._db.execute(
                        "SELECT pos, action FROM slots WHERE model_version = ? AND handed = 0 "
                        "ORDER BY pos LIMIT 1",
                        (version,),
                    ).fetchone()
                    if row is None:
                        self._db.execute("ROLLBACK")
                        return None
                    self._db.execute(
                        "UPDATE slots SET handed = 1 WHERE model_version = ? AND pos = ?",
                        (version, row[0]),
                    )
                if holder is not None:
                    expires = t + (math.inf if lease_seconds is None else float(lease_seconds))
                    self._db.execute(
                        "INSERT INTO leases (model_version, pos, holder, expires) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT (model_version, pos) DO UPDATE SET expires = excluded.expires",
                        (version, row[0], holder, min(expires, 1e300)),
                    )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return int(row[1]), total

    def _reclaim(self, version: int, now: float) -> None:
        """Free the slots of ``version`` whose lease expired unused (inside a transaction)."""
        self._db.execute(
            "UPDATE slots SET handed = 0 WHERE model_version = ? AND pos IN "
            "(SELECT pos FROM leases WHERE model_version = ? AND used = 0 AND expires < ?)",
            (version, version, now),
        )
        self._db.execute(
            "DELETE FROM leases WHERE model_version = ? AND used = 0 AND expires < ?",
            (version, now),
        )

    def slot_state(self, model_version: int, now: float | None = None) -> dict[str, int]:
        """Action slots of the batch of ``model_version``: ``total``, ``free``, ``leased``
        (handed, lease running), ``used`` (the device reported) and ``expired`` (leases past
        their time, reclaimed at the next assignment)."""
        t = time.time() if now is None else float(now)
        with self._lock:
            total, handed = self._db.execute(
                "SELECT COUNT(*), COALESCE(SUM(handed), 0) FROM slots WHERE model_version = ?",
                (model_version,),
            ).fetchone()
            used, expired = self._db.execute(
                "SELECT COALESCE(SUM(used), 0), COALESCE(SUM(used = 0 AND expires < ?), 0) "
                "FROM leases WHERE model_version = ?",
                (t, model_version),
            ).fetchone()
        total, handed, used, expired = int(total), int(handed), int(used), int(expired)
        return {
            "total": total,
            "free": total - handed,
            "leased": handed - used - expired,
            "used": used,
            "expired": expired,
        }

    # -- counters -----------------------------------------------------------------------------
    def _bump(self, name: str, by: int) -> None:
        self._db.execute("UPDATE counters SET value = value + ? WHERE name = ?", (by, name))

    def _counter(self, name: str) -> int:
        return int(
            self._db.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()[0]
        )

    def counters(self) -> dict[str, int]:
        """Totals since the store was created (reports received, batches cut/forwarded, ...)."""
        with self._lock:
            rows = self._db.execute("SELECT name, value FROM counters").fetchall()
        return {str(k): int(v) for k, v in rows}
