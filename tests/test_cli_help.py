"""Every command's help reads cleanly: flags without a value placeholder, no Markdown or
reStructuredText backticks, repeatable options named by what they take."""

from __future__ import annotations

from pathlib import Path

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


def test_datasets_describe_names_its_own_options_and_explains_fields(tmp_path: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "200", "PRIVBANDITS_DATA_CACHE": str(tmp_path / "c")})
    na = tmp_path / "na.csv"
    na.write_text("f1,f2,seg\n1,,a\n2,3,b\n3,1,a\n")
    out = runner.invoke(app, ["datasets", "describe", "file", "--path", str(na), "--label", "seg"])
    assert out.exit_code == 2 and "pass --na drop" in out.output and 'na = "drop"' not in out.output
    semi = tmp_path / "semi.csv"
    semi.write_text("f1;f2;seg\n1;2;a\n2;3;b\n")
    args = ["datasets", "describe", "file", "--path", str(semi), "--label", "seg"]
    out = runner.invoke(app, [*args, "--delimiter", ","])
    assert out.exit_code == 2 and "set --delimiter ';'" in out.output
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    assert "class_balance" in out.output and "smallest class count / largest" in out.output
