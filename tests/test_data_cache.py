"""A data file is parsed once, in the parent process: later loads (validation, every algorithm
variant, worker processes) open the cached arrays memory-mapped; a changed file is parsed again."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privbandits.envs.datasets import SupervisedEnv, filecache, supervised
from privbandits.envs.datasets.bandit import _contexts
from privbandits.experiments.units import build_env


@pytest.fixture
def parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A private cache directory and the list of files parsed in this process."""
    monkeypatch.setenv("PRIVBANDITS_DATA_CACHE", str(tmp_path / "cache"))
    calls: list[str] = []
    real = supervised._parse_to

    def counting(directory: Path, path: str, **options: Any) -> dict[str, Any]:
        calls.append(path)
        return real(directory, path, **options)

    monkeypatch.setattr(supervised, "_parse_to", counting)
    return calls


def _csv(path: Path, n: int = 60, shift: float = 0.0) -> Path:
    rows = ["f1,f2,f3,segment"] + [
        f"{(i * 7) % 11 + shift},{(i * 3) % 5 * 0.5},{i % 4 - 1.5},{'abc'[i % 3]}" for i in range(n)
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_a_file_is_parsed_once_and_reopened_memory_mapped(
    tmp_path: Path, parses: list[str]
) -> None:
    p = str(_csv(tmp_path / "d.csv"))
    first = supervised.load_file(p, "segment")
    again = supervised.load_file(p, "segment")
    envs = [build_env({"kind": "supervised", "path": p, "label": "segment"}) for _ in range(3)]
    assert parses == [p]  # one parse for two loads and three environments
    assert isinstance(again.X, np.memmap) and isinstance(envs[0].contexts, np.memmap)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(first.X, again.X)
    entries = sorted(e.name.split("-")[0] for e in (tmp_path / "cache").iterdir())
    assert entries == ["contexts", "table"]
    # other parse options are another entry
    supervised.load_file(p, "segment", features=["f1", "f2"])
    assert parses == [p, p]
    # the cached arrays are those of a parse kept in memory
    uncached = supervised.load_file(p, "segment", cache=False)
    np.testing.assert_array_equal(uncached.X, first.X)
    np.testing.assert_array_equal(uncached.y, first.y)
    prep = {
        "d": None,
        "projection": "none",
        "projection_seed": 0,
        "intercept": True,
        "norm": "max",
        "clip_quantile": 0.95,
        "context_bound": 1.0,
    }
    C, _, _ = _contexts(uncached, prep, None)
    np.testing.assert_array_equal(C, envs[2].contexts)


def test_a_changed_file_is_parsed_again(tmp_path: Path, parses: list[str]) -> None:
    path = _csv(tmp_path / "d.csv")
    before = supervised.load_file(str(path), "segment").X[:, 0].copy()
    st = path.stat()
    _csv(path, shift=100.0)  # new contents (and size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    after = supervised.load_file(str(path), "segment").X[:, 0]
    assert len(parses) == 2
    np.testing.assert_array_equal(after, before + 100.0)
    # touching alone (same contents, new modification time) also invalidates the entry
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2 * 10**9))
    supervised.load_file(str(path), "segment")
    assert len(parses) == 3


def test_fast_and_exact_readers_agree(tmp_path: Path) -> None:
    """The chunked pandas reader gives bit-identical floats and the same classes as the exact
    reader (values near the limits of float parsing, numeric labels sorted numerically)."""
    pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    vals = rng.standard_normal((300, 3)) * 10.0 ** rng.integers(-300, 140, (300, 3))
    labels = rng.choice(["10", "9", "2.5"], 300)
    text = "a,b,c,y\n" + "".join(
        f"{float(v[0])!r},{v[1]:.17g}, {v[2]:.6e} ,{lab}\n" for v, lab in zip(vals, labels)
    )
    path = tmp_path / "v.csv"
    path.write_text(text)
    meta = supervised._fast_parse(tmp_path, path, "y", None, None, None)
    assert meta is not None  # the clean file took the fast route
    exact = supervised.load_file(str(path), "y", cache=False)
    assert meta["class_names"] == list(exact.class_names) == ["2.5", "9", "10"]
    np.testing.assert_array_equal(np.load(tmp_path / "X.npy"), exact.X)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), exact.y)


def test_workers_open_the_cache_not_the_file(tmp_path: Path, parses: list[str]) -> None:
    """The run parses the file in the parent (while the configuration is validated); then the
    file's contents are replaced by garbage of the same size and modification time: two worker
    processes still run every unit, so they read the cached arrays, not the file."""
    from privbandits.experiments.config import parse_config
    from privbandits.experiments.runner import run_experiment
    from privbandits.experiments.store import ResultsStore

    path = _csv(tmp_path / "d.csv")
    cfg = parse_config(
        f"""
horizon = 40
replications = 2
seeds = [0, 1]
engine = "reference"
[env]
kind = "supervised"
path = "{path}"
label = "segment"
[[algorithms]]
name = "uniform"
""",
        source="t.toml",
    )
    assert parses == [str(path)]
    st = path.stat()
    path.write_bytes(b"x" * st.st_size)  # a reparse would fail: no header, no numbers
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with ResultsStore(tmp_path / "r.db") as store:
        report = run_experiment(cfg, store, workers=2, quiet=True)
    assert report.executed == 2 and len(report.results) == 2
    assert parses == [str(path)]
    with pytest.raises(Exception, match="d.csv"):  # the file itself is unreadable now
        supervised.load_file(str(path), "segment", cache=False)


def test_the_loader_reports_its_steps(tmp_path: Path, parses: list[str]) -> None:
    path = str(_csv(tmp_path / "d.csv"))
    seen: list[str] = []
    with filecache.loading_status(seen.append):
        SupervisedEnv(path=path, label="segment")
    assert any(s.startswith("parsing d.csv") for s in seen)
    assert any(s.startswith("preprocessing d.csv") for s in seen)
