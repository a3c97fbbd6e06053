"""Online backup of a server's database (``privbandits backup``), taken while it serves.

* SQLite: the SQLite online backup API (:meth:`sqlite3.Connection.backup`) copies a consistent
  snapshot of the database (the committed transactions at one point, WAL included) page by page
  while the server keeps writing; the copy is a complete database file.
* PostgreSQL: ``pg_dump --format=custom`` (one consistent snapshot of a running database);
  restore with ``pg_restore --dbname URL --no-owner FILE`` into an empty database.

A backup holds the deployment id: a server restored from it starts without ``--init`` with the
same state directory (and any state the backup lacks, i.e. reports acknowledged after it was
taken, is lost: back up as often as that loss is acceptable).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

from privbandits.core.errors import PrivbanditsError
from privbandits.service.storage.deployment import sqlite_path

__all__ = ["BackupError", "backup"]


class BackupError(PrivbanditsError):
    """The backup could not be taken."""


def backup(url: str, out: str | Path) -> str:
    """Copy the database at ``url`` to ``out`` while it may be in use; returns what was done."""
    out = Path(out)
    if out.exists():
        raise BackupError(f"{out} exists: a backup never overwrites a file")
    text = str(url)
    if text.startswith(("postgresql://", "postgres://")):
        import glob

        found = [shutil.which("pg_dump")] + sorted(
            glob.glob("/usr/lib/postgresql/*/bin/pg_dump"), reverse=True
        )
        pg_dump = next((p for p in found if p), None)
        if pg_dump is None:
            raise BackupError("pg_dump not found: install the PostgreSQL client tools")
        r = subprocess.run(
            [pg_dump, "--format=custom", "--no-owner", "--file", str(out), text],
            capture_output=True,
            text=True,
            check=False,
        )
        if r.returncode != 0:
            out.unlink(missing_ok=True)
            raise BackupError(f"pg_dump failed: {r.stderr.strip()[-500:]}")
        return f"pg_dump of {text.split('@')[-1]} written to {out}"
    path = sqlite_path(text)
    if path is None or not Path(path).exists():
        raise BackupError(f"no SQLite database file at {text!r}")
    if not Path(path).is_file():
        raise BackupError(f"no SQLite database file at {text!r}")
    src = sqlite3.connect(path, timeout=30.0)
    try:
        dst = sqlite3.connect(str(out))
        try:
            src.backup(dst, pages=1024)
        finally:
            dst.close()
    finally:
        src.close()
    return f"online backup of {path} written to {out}"
