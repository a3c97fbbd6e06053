"""The deployment's commands on the ``privbandits`` command line (registered by :mod:`privbandits.cli`).

``serve`` (:mod:`.server.cli`), ``serve-shuffler`` (:mod:`.shuffler.cli`), ``make-tokens``
(:mod:`.tools_cli`), ``simulate-clients`` (:mod:`.device.cli`) and ``backup``
(:mod:`.storage.cli`); each process's command lives with
its process and none imports another's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from privbandits.service.device.cli import simulate_clients_command
from privbandits.service.server.cli import serve
from privbandits.service.shuffler.cli import serve_shuffler
from privbandits.service.storage.cli import backup_command
from privbandits.service.tools_cli import make_tokens

__all__ = ["register_commands"]


def register_commands(app: typer.Typer, guard: Callable[[Any], Any]) -> None:
    """Add the deployment commands to the ``privbandits`` command line."""
    app.command("serve")(guard(serve))
    app.command("serve-shuffler")(guard(serve_shuffler))
    app.command("make-tokens")(guard(make_tokens))
    app.command("simulate-clients")(guard(simulate_clients_command))
    app.command("backup")(guard(backup_command))
