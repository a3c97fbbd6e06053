"""``privbandits datasets list`` / ``describe`` and the supervised env kind in TOML configurations."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.core.errors import ConfigError
from privbandits.experiments.config import load_config

pytest.importorskip("sklearn")
runner = CliRunner(env={"COLUMNS": "200"})


def test_datasets_list_shows_every_registered_data_set() -> None:
    result = runner.invoke(app, ["datasets", "list"])
    assert result.exit_code == 0, result.output
    for name in ("digits", "wine", "breast_cancer", "iris", "covtype", "file"):
        assert f"│ {name} " in result.output
    assert "network" in result.output and "CC BY 4.0" in result.output


def test_datasets_describe_prints_the_summary() -> None:
    result = runner.invoke(app, ["datasets", "describe", "iris"])
    assert result.exit_code == 0, result.output
    for row in (
        "│ n  ",
        "150",
        "│ K  ",
        "class_counts",
        "50, 50, 50",
        "best_arm_reward",
        "0.3333",
        "linear_policy_reward",
        "licence",
    ):
        assert row in result.output


def test_datasets_describe_a_file_with_dropped_rows(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("a,b,y\n1,2,u\n,3,v\n4,5,v\n6,1,u\n")
    result = runner.invoke(
        app, ["datasets", "describe", "file", "--path", str(p), "--label", "y", "--na", "drop"]
    )
    assert result.exit_code == 0, result.output
    assert "n_dropped" in result.output and "│ 1 " in result.output.split("n_dropped", 1)[1][:40]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["datasets", "show"], "datasets action must be 'list' or 'describe', got 'show'"),
        (["datasets", "describe"], "datasets describe needs a NAME"),
        (["datasets", "list", "wine"], "datasets list takes no NAME"),
        (["datasets", "describe", "wne"], "did you mean 'wine'"),
        (["datasets", "describe", "wine", "--path", "x.csv"], "unexpected keyword argument 'path'"),
        (
            ["datasets", "describe", "file", "--path", "/nonexistent/x.csv", "--label", "y"],
            "does not exist",
        ),
    ],
)
def test_datasets_errors_are_one_line_with_exit_code_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split()) and "Traceback" not in result.output


def _config(tmp_path: Path, env: str) -> Path:
    p = tmp_path / "exp.toml"
    p.write_text(
        f'name = "t"\nhorizon = 50\nreplications = 2\n[env]\nkind = "supervised"\n{env}\n'
        '[[algorithms]]\nname = "ldp-sgd"\nparams = { epsilon = 1.0 }\n'
    )
    return p


def test_supervised_env_kind_in_a_config(tmp_path: Path) -> None:
    cfg = load_config(
        _config(tmp_path, 'dataset = "wine"\nd = 3\nnorm = "clip"\norder = "permuted"')
    )
    assert cfg.env == {
        "kind": "supervised",
        "dataset": "wine",
        "d": 3,
        "norm": "clip",
        "order": "permuted",
    }


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ('dataset = "wne"', "did you mean 'wine'"),
        ('dataset = "wine"\nd = 20', "env.d = 20: d must be an integer in [1, 13]"),
        ('dataset = "wine"\nencoding = "both"', "env.encoding"),
        ('dataset = "wine"\nbogus = 1', "unknown key 'bogus' in [env] (kind = \"supervised\")"),
        ('path = "/nonexistent/d.csv"\nlabel = "y"', "does not exist"),
        (
            'dataset = "wine"\nreward_matrix = [[1, 0], [0, 1]]',
            "reward_matrix must have shape (3, 3)",
        ),
    ],
)
def test_supervised_env_config_errors(tmp_path: Path, env: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_config(tmp_path, env))
    assert message in str(info.value)
