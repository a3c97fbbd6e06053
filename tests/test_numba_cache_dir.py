"""Where compiled code is cached: a user's NUMBA_CACHE_DIR is respected, an inherited choice of the
package is recomputed in a child process (whose sampler switch may differ)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CODE = "import os, privbandits; print(os.environ['NUMBA_CACHE_DIR'])"


def _child(env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "-c", CODE], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_a_child_with_another_sampler_switch_gets_its_own_cache(tmp_path: Path) -> None:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NUMBA_CACHE_DIR", "PRIVBANDITS_NUMBA_CACHE_DIR")
    }
    base["PRIVBANDITS_CACHE_DIR"] = str(tmp_path)
    base.pop("PRIVBANDITS_SAMPLER", None)
    parent = _child(base)  # the default sampler's fingerprinted directory
    assert Path(parent).parent == tmp_path
    inherited = dict(base, NUMBA_CACHE_DIR=parent, PRIVBANDITS_NUMBA_CACHE_DIR=parent)
    assert _child(inherited) == parent  # same switch: the same directory
    switched = dict(inherited, PRIVBANDITS_SAMPLER="ziggurat")
    other = _child(switched)
    assert other != parent and Path(other).parent == tmp_path


def test_a_users_numba_cache_dir_is_respected(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PRIVBANDITS_NUMBA_CACHE_DIR"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    assert _child(env) == str(tmp_path / "mine")
