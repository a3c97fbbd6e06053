"""``privbandits backup``: an online backup of a server's database (registered by
:mod:`privbandits.service.cli`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["backup_command"]


def backup_command(
    out: Annotated[Path, typer.Argument(help="Backup file to write (never overwritten).")],
    db: Annotated[
        str,
        typer.Option(
            "--db", help="The served database: a SQLite path or sqlite:///path, or postgresql://..."
        ),
    ],
) -> None:
    """Back up a server's database while it serves: the SQLite online backup API, or pg_dump
    (custom format) for PostgreSQL (see the deployment guide for restoring)."""
    from privbandits.service.storage.backup import backup

    typer.echo(backup(db, out), err=True)
