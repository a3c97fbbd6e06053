"""Tables of the command line stay readable in an 80-column terminal: names never wrap, long texts
wrap at words, secondary columns appear with --wide (or on a wide terminal)."""

from __future__ import annotations

from typer.testing import CliRunner

from privbandits.algorithms import available
from privbandits.cli import app
from privbandits.envs.datasets.catalog import list_rows

narrow = CliRunner(env={"COLUMNS": "80"})


def _lines(args: list[str], runner: CliRunner = narrow) -> list[str]:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_datasets_list_is_readable_at_80_columns() -> None:
    lines = _lines(["datasets", "list"])
    assert max(len(line) for line in lines) <= 80
    text = "\n".join(lines)
    for row in list_rows():
        assert f"│ {row[0]} " in text, row[0]  # every name whole, on one line
    assert "licence" not in lines[2]  # source and licence: --wide or datasets describe NAME
    assert "summary" in lines[2]


def test_datasets_list_wide_shows_source_and_licence() -> None:
    text = "\n".join(_lines(["datasets", "list", "--wide"], CliRunner(env={"COLUMNS": "200"})))
    assert "licence" in text and "CC BY 4.0" in text


def test_algorithm_list_is_readable_at_80_columns() -> None:
    lines = _lines(["list"])
    assert max(len(line) for line in lines) <= 80
    text = "\n".join(lines)
    for name in available():
        assert f"│ {name} " in text, name


def test_help_texts_show_no_restructuredtext_literals() -> None:
    for command in ("datasets", "plot", "run", "audit", "explain"):
        text = "\n".join(_lines([command, "--help"], CliRunner(env={"COLUMNS": "200"})))
        assert "``" not in text, command
    text = "\n".join(_lines(["datasets", "--help"], CliRunner(env={"COLUMNS": "200"})))
    assert "('describe' loads the data)" in text
