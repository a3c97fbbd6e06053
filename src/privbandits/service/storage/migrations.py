"""Versioned schema migrations of the server's database (a small migration table, no framework).

``schema_migrations (version, name, applied)`` records every migration applied.  A database written
before the table existed holds the version-1 tables already: migration 1 creates them only if
missing (``CREATE TABLE IF NOT EXISTS``), so applying it to such a database records it and changes
nothing.  Each migration runs in one transaction together with its row (PostgreSQL and SQLite both
have transactional DDL), under the deployment's migration lock on PostgreSQL, so two workers that
start together apply it once.  A database that records a version this code does not know was
written by a newer version and is refused.
"""

from __future__ import annotations

import time
from typing import Any

from privbandits.core.errors import PrivbanditsError

__all__ = ["LATEST", "MIGRATIONS", "SchemaError", "applied_versions", "migrate"]


class SchemaError(PrivbanditsError):
    """The database was written by a newer version (a schema version this code does not know)."""


#: ``(version, name, statements)``; ``{blob}`` is the driver's binary column type.
MIGRATIONS: list[tuple[int, str, tuple[str, ...]]] = [
    (
        1,
        "meta, events, models and quarantine tables",
        (
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS events (seq BIGINT PRIMARY KEY, kind TEXT NOT NULL, "
            "token TEXT NOT NULL, idem_key TEXT NOT NULL, body TEXT NOT NULL, "
            "body_hash TEXT NOT NULL, response TEXT NOT NULL, created DOUBLE PRECISION NOT NULL, "
            "UNIQUE (token, idem_key))",
            "CREATE TABLE IF NOT EXISTS models (version BIGINT PRIMARY KEY, seq BIGINT NOT NULL, "
            "rounds BIGINT NOT NULL, digest TEXT NOT NULL, created DOUBLE PRECISION NOT NULL)",
            "CREATE TABLE IF NOT EXISTS quarantine (seq BIGINT NOT NULL, batch_id TEXT NOT NULL, "
            "idx INTEGER NOT NULL, field TEXT NOT NULL, message TEXT NOT NULL, "
            "created DOUBLE PRECISION NOT NULL, PRIMARY KEY (seq, idx))",
        ),
    ),
    (
        2,
        "model snapshots",
        (
            "CREATE TABLE IF NOT EXISTS snapshots (seq BIGINT PRIMARY KEY, version BIGINT NOT NULL, "
            "digest TEXT NOT NULL, state {blob} NOT NULL, created DOUBLE PRECISION NOT NULL)",
        ),
    ),
]

#: The schema version this code writes.
LATEST = MIGRATIONS[-1][0]

_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
    "name TEXT NOT NULL, applied DOUBLE PRECISION NOT NULL)"
)


def applied_versions(store: Any) -> list[int]:
    """The migrations recorded in ``store`` (creates the migration table if missing)."""
    store._execute(_TABLE)
    return sorted(int(v) for (v,) in store._execute("SELECT version FROM schema_migrations"))


def migrate(store: Any) -> list[int]:
    """Apply every migration ``store`` lacks, in order; returns the versions applied now.

    Raises
    ------
    SchemaError
        If the database records a schema version newer than this code's.
    """
    done = applied_versions(store)
    if done and max(done) > LATEST:
        raise SchemaError(
            f"the database {store.url.split('@')[-1]} has schema version {max(done)}, newer than "
            f"this version of privbandits understands ({LATEST}): upgrade privbandits"
        )
    now = []
    for version, name, statements in MIGRATIONS:
        if version in done:
            continue
        stmts: list[tuple[str, tuple[Any, ...]]] = [
            (s.format(blob=store.blob), ()) for s in statements
        ]
        stmts.append(
            (
                store._q(
                    "INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, ?) "
                    "ON CONFLICT (version) DO NOTHING"
                ),
                (version, name, time.time()),
            )
        )
        store._transaction(stmts, lock=True)
        now.append(version)
    return now
