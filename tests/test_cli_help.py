"""Every command's help reads cleanly: flags without a value placeholder, no Markdown or
reStructuredText backticks, repeatable options named by what they take."""

from __future__ import annotations

import typer.main
from typer.testing import CliRunner

from privbandits.cli import app


def _commands() -> list[str]:
    group = typer.main.get_command(app)
    return sorted(group.commands)  # type: ignore[attr-defined]


def test_no_bool_placeholders_or_backticks_in_any_help() -> None:
    runner = CliRunner(env={"COLUMNS": "200"})
    commands = _commands()
    assert {"run", "sweep", "datasets", "make-tokens"} <= set(commands)
    for args in ([], *([c] for c in commands)):
        result = runner.invoke(app, [*args, "--help"])
        assert result.exit_code == 0, (args, result.output)
        text = result.output
        assert "<bool>" not in text, args
        assert "`" not in text, args
        assert "<list[" not in text, args
    text = runner.invoke(app, ["run", "--help"]).output
    assert "--import" in text and "MODULE" in text
    assert "--quiet" in text
