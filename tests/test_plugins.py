"""Algorithms from the user's own modules in every process: entry points, --import, import = [...]."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import privbandits as pb
from privbandits.core.errors import ConfigError, UnknownNameError, ValidationError
from privbandits.experiments.config import Overrides, parse_config

PLUGIN = '''
import numpy as np
from privbandits.algorithms.base import Curator
from privbandits.algorithms.registry import register


class EpsGreedy{suffix}(Curator):
    """Epsilon-greedy on per-arm mean rewards (a user's own algorithm)."""

    name = "eps-greedy{suffix_lower}"

    def __init__(self, explore: float = 0.1) -> None:
        pass

    def reset(self, spec, replications, streams):
        super().reset(spec, replications, streams)
        self.sums = np.zeros((replications, spec.K))
        self.counts = np.zeros((replications, spec.K))

    def select(self, t, contexts):
        R, K = self.sums.shape
        rng = self.streams.policy
        means = np.where(self.counts > 0, self.sums / np.maximum(self.counts, 1), np.inf)
        greedy = means.argmax(axis=1)
        explore = rng.random(R) < self.explore
        return np.where(explore, rng.integers(0, K, size=R), greedy)

    def update(self, t, contexts, actions, rewards):
        rows = np.arange(self.sums.shape[0])
        self.sums[rows, actions] += rewards
        self.counts[rows, actions] += 1
'''

CONFIG = """
name = "own"
horizon = 200
replications = 2
seeds = [0, 1]
{imports}
[env]
d = 2
K = 3
[[algorithms]]
name = "{name}"
"""


def _write_module(root: Path, package: str, suffix: str, *, register_decorator: bool) -> None:
    pkg = root / package
    pkg.mkdir(parents=True)
    code = PLUGIN.format(suffix=suffix, suffix_lower=suffix.lower())
    if register_decorator:
        code = code.replace("class EpsGreedy", "@register\nclass EpsGreedy")
    (pkg / "__init__.py").write_text(code, encoding="utf-8")


def _run_cli(args: list[str], cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "COLUMNS": "250",
        "PYTHONPATH": os.pathsep.join([str(pythonpath), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "privbandits.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _stored(db: Path) -> int:
    with sqlite3.connect(db) as con:
        return int(con.execute("select count(*) from units").fetchone()[0])


def test_an_installed_entry_point_registers_an_algorithm_in_two_workers(tmp_path: Path) -> None:
    """A package outside the repository declares an entry point; `privbandits run -w 2` runs it."""
    site = tmp_path / "site"
    _write_module(site, "mybandits", "EP", register_decorator=False)
    dist = site / "mybandits-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: mybandits\nVersion: 0.1\n", encoding="utf-8"
    )
    (dist / "entry_points.txt").write_text(
        "[privbandits.algorithms]\neps-greedyep = mybandits:EpsGreedyEP\n", encoding="utf-8"
    )
    cfg = tmp_path / "own.toml"
    cfg.write_text(CONFIG.format(imports="", name="eps-greedyep"), encoding="utf-8")
    db = tmp_path / "r.db"
    proc = _run_cli(
        ["run", str(cfg), "--db", str(db), "-w", "2", "-q", "--out", str(tmp_path / "out")],
        tmp_path,
        site,
    )
    assert proc.returncode == 0, proc.stderr
    assert _stored(db) == 2  # one unit per seed, each run by a worker process


@pytest.mark.parametrize("how", ["option", "toml"])
def test_import_option_and_toml_key_reach_the_workers(tmp_path: Path, how: str) -> None:
    mods = tmp_path / "mods"
    _write_module(mods, "ownalgs", "Imp", register_decorator=True)
    cfg = tmp_path / "own.toml"
    imports = 'import = ["ownalgs"]' if how == "toml" else ""
    cfg.write_text(CONFIG.format(imports=imports, name="eps-greedyimp"), encoding="utf-8")
    db = tmp_path / "r.db"
    extra = ["--import", "ownalgs"] if how == "option" else []
    proc = _run_cli(
        ["run", str(cfg), "--db", str(db), "-w", "2", "-q", "--out", str(tmp_path / "out"), *extra],
        tmp_path,
        mods,
    )
    assert proc.returncode == 0, proc.stderr
    assert _stored(db) == 2


def test_a_missing_module_is_a_clear_error() -> None:
    text = CONFIG.format(imports='import = ["no_such_module_xyz"]', name="linucb")
    with pytest.raises(ConfigError, match="cannot import module 'no_such_module_xyz'"):
        parse_config(text)
    with pytest.raises(ConfigError, match="must be a list of module names"):
        parse_config(CONFIG.format(imports='import = "x"', name="linucb"))
    with pytest.raises(ValidationError, match="cannot import module"):
        parse_config(
            CONFIG.format(imports="", name="linucb"), overrides=Overrides(imports=["no_such_mod_q"])
        )


def test_imports_join_the_unit_key_only_when_used() -> None:
    plain = parse_config(CONFIG.format(imports="", name="linucb"))
    assert "imports" not in plain.units()[0].config()  # earlier results keep their keys
    with_mod = parse_config(CONFIG.format(imports='import = ["json"]', name="linucb"))
    assert (
        with_mod.units()[0].imports == ("json",)
        and with_mod.units()[0].key() != plain.units()[0].key()
    )


def test_make_ignores_case_and_suggests() -> None:
    assert pb.make("LDP-SGD").name == "ldp-sgd"
    with pytest.raises(UnknownNameError, match="did you mean 'ldp-sgd'"):
        pb.make("LDP-SDG")


def test_cli_import_option_on_explain_and_list(tmp_path: Path) -> None:
    mods = tmp_path / "mods"
    _write_module(mods, "ownalgs2", "Cli", register_decorator=True)
    proc = _run_cli(["list", "--import", "ownalgs2"], tmp_path, mods)
    assert proc.returncode == 0 and "eps-greedycli" in proc.stdout, proc.stderr
    proc = _run_cli(["explain", "eps-greedycli", "--import", "ownalgs2"], tmp_path, mods)
    assert proc.returncode == 0, proc.stderr
    assert "eps-greedycli" in proc.stdout
