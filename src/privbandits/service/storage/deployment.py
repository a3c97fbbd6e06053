"""The deployment id: a database cannot be silently replaced, emptied or mistyped.

A deployment is created once, by ``privbandits serve --init`` (or ``serve-shuffler --init``): a
random id is written into the database (``meta`` table, key ``deployment_id``) **and** into the
state directory of the configuration (``<config stem>.state/<role>.deployment-id`` beside the
config, or ``--state-dir``).  Every later start compares the two and refuses to start when

* the database file does not exist (a mistyped ``--db`` path, a deleted file),
* the database holds no deployment (empty, or a new PostgreSQL database),
* the database holds another deployment than the state directory records,
* the state directory records no deployment while the database holds one (``--init`` adopts it).

Without this check a server started on a new or empty database would report "restored 0" and
every device's report budget would start again from zero: a budget that resets is a privacy
failure, not only data loss.  ``--init`` on a database that already holds a deployment is refused
too (a unit file that always passes ``--init`` must not reset a deployment whose database was lost).
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from privbandits.core.errors import PrivbanditsError

__all__ = [
    "DeploymentError",
    "check_database_file",
    "default_state_dir",
    "file_identity",
    "new_deployment_id",
    "resolve_deployment",
    "sqlite_path",
]


class DeploymentError(PrivbanditsError):
    """The database and the state directory do not describe one existing deployment."""


def default_state_dir(config: Path) -> Path:
    """``<config stem>.state`` beside the configuration file."""
    return config.with_name(config.stem + ".state")


def sqlite_path(url: str) -> str | None:
    """The file path of a SQLite database URL or path (None: PostgreSQL or in memory)."""
    text = str(url)
    if text.startswith(("postgresql://", "postgres://")):
        return None
    if text.startswith("sqlite://"):
        parts = urlsplit(text)
        path = parts.path
        if text.startswith("sqlite:///") and not text.startswith("sqlite:////"):
            path = path[1:]
        text = path
    if not text or text == ":memory:":
        return None
    return text


def _read_id(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    return text or None


def _write_id(path: Path, value: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(value + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def file_identity(path: str) -> tuple[int, int] | None:
    """``(device, inode)`` of the database file ``path`` (None: no such file), to notice a file
    deleted or replaced under a running process."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)


def new_deployment_id() -> str:
    """A fresh random deployment id (time-ordered prefix, 96 random bits)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(12)


def check_database_file(*, role: str, url: str, state_dir: Path, init: bool) -> None:
    """Refuse (unless ``init``) a SQLite database file that does not exist or is empty, before
    anything opens (and so creates) it.

    Raises
    ------
    DeploymentError
        With the path, the deployment the state directory records and what to do.
    """
    path = sqlite_path(url)
    if path is None or init:
        return
    p = Path(path)
    if p.exists() and p.stat().st_size > 0:
        return
    recorded = _read_id(state_dir / f"{role}.deployment-id")
    raise DeploymentError(
        f"the database file {path!r} does not exist or is empty"
        + (
            f", but {state_dir / (role + '.deployment-id')} records deployment {recorded}"
            if recorded
            else ""
        )
        + ": refusing to start on a new database (every device's report budget would start "
        "again from zero); check --db, restore the database from a backup, or start a new "
        "deployment with --init"
    )


def resolve_deployment(
    *,
    role: str,
    url: str,
    state_dir: Path,
    init: bool,
    read_db_id: Callable[[], str | None],
    write_db_id: Callable[[str], None],
    db_has_data: Callable[[], bool],
) -> tuple[str, str]:
    """Check (or with ``init`` create) the deployment of ``role``'s database; ``(id, note)``.

    Parameters
    ----------
    role : str
        ``server`` or ``shuffler`` (names the state file ``<role>.deployment-id``).
    url : str
        The database URL or path (for messages; a SQLite file must exist unless ``init``).
    state_dir : Path
        The configuration's state directory.
    init : bool
        ``--init``: create the deployment on a database that holds none.
    read_db_id, write_db_id, db_has_data : callable
        Read / store the database's deployment id; whether it holds stored requests.

    Raises
    ------
    DeploymentError
        With what differs and what to do; nothing is written then.
    """
    state_file = state_dir / f"{role}.deployment-id"
    shown = url.split("@")[-1]
    in_state = _read_id(state_file)
    in_db = read_db_id()
    if not init:
        if in_db is None:
            raise DeploymentError(
                f"the database {shown} holds no deployment"
                + (
                    " (it holds stored requests of an older version: --init adopts it)"
                    if db_has_data()
                    else ""
                )
                + (f"; {state_file} records deployment {in_state}" if in_state else "")
                + ": refusing to start (every device's report budget would start again from zero); "
                "check --db or start a new deployment with --init"
            )
        if in_state is None:
            raise DeploymentError(
                f"the state directory {state_dir} records no deployment but the database {shown} "
                f"holds deployment {in_db}: check --state-dir, or adopt the database with --init"
            )
        if in_state != in_db:
            raise DeploymentError(
                f"the database {shown} holds deployment {in_db} but {state_file} records "
                f"deployment {in_state}: this is another deployment's database (check --db and "
                "--state-dir); refusing to start"
            )
        return in_db, f"deployment {in_db}"
    # --init
    if in_db is not None:
        if in_state is None:
            _write_id(state_file, in_db)
            return in_db, f"deployment {in_db} (adopted into {state_dir})"
        raise DeploymentError(
            f"--init: the database {shown} already holds deployment {in_db}"
            + (
                f" (the one {state_file} records): start without --init"
                if in_state == in_db
                else f", but {state_file} records deployment {in_state}: check --db and --state-dir"
            )
        )
    new = new_deployment_id()
    note = f"new deployment {new}"
    if db_has_data():
        note = f"deployment {new} (adopted a database of an older version)"
    if in_state is not None:
        archived = state_file.with_name(f"{state_file.name}.replaced-{in_state}")
        os.replace(state_file, archived)
        note += f"; the previous deployment {in_state} was recorded in {archived}"
    write_db_id(new)
    _write_id(state_file, new)
    return new, note
