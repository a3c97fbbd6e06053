"""The ``privbandits`` command-line tool (typer + rich), one module per command group.

Every :class:`~privbandits.core.errors.PrivbanditsError` is reported as one red line
``error: ...`` with exit code 2 (never a traceback); Ctrl-C exits with code 130 after the finished
work units have been stored, and rerunning the same command resumes.  A command group registers its
commands with one line below (``register_commands(app, guard)``).
"""

from __future__ import annotations

from typing import Annotated

import typer

from privbandits.cli import audit, catalogue, experiments, results, tune
from privbandits.cli._common import _guard, _out
from privbandits.service.cli import register_commands as register_service_commands

__all__ = ["app", "main"]

app = typer.Typer(
    name="privbandits",
    help="Differentially private contextual bandits: run, sweep, reproduce, plot, export, audit.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

experiments.register_commands(app, _guard)  # demo, run, sweep, reproduce
results.register_commands(app, _guard)  # plot, export
catalogue.register_commands(app, _guard)  # list, datasets, explain
audit.register_commands(app, _guard)  # audit
register_service_commands(app, _guard)  # serve (privbandits.service)
tune.register_commands(app, _guard)  # tune


def _version(value: bool) -> None:
    if value:
        from privbandits import __version__

        _out().print(f"privbandits {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Differentially private contextual bandits: run, sweep, reproduce, plot, export, audit."""


def main() -> None:
    """Console-script entry point ``privbandits``."""
    app()
