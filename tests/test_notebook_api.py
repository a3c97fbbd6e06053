"""The notebook-grade Python API: progress bars, DataFrames, HTML display, summaries with the guarantee."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

import privbandits as pb
from privbandits.core.errors import ValidationError


@pytest.fixture(scope="module")
def result() -> pb.SimulationResult:
    return pb.simulate(
        pb.make("ldp-sgd", epsilon=2.0),
        pb.SyntheticEnv(d=2, K=3),
        horizon=300,
        replications=3,
        seed=1,
        checkpoints=5,
    )


def test_progress_true_shows_a_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.StringIO()
    import rich.progress

    real = rich.progress.Progress

    def recording(*cols: object, **kw: object) -> rich.progress.Progress:
        kw["console"] = Console(file=buf, force_terminal=True, width=100)
        return real(*cols, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(rich.progress, "Progress", recording)
    pb.simulate(pb.make("linucb"), pb.SyntheticEnv(d=2, K=3), horizon=400, progress=True)
    out = buf.getvalue()
    assert "linucb (rounds)" in out and "400/400" in out


def test_a_callable_progress_still_works_and_junk_is_refused() -> None:
    seen: list[int] = []
    pb.simulate(pb.make("linucb"), pb.SyntheticEnv(d=2, K=3), horizon=400, progress=seen.append)
    assert seen and seen[-1] == 400 and seen == sorted(seen)
    with pytest.raises(ValidationError, match="progress must be True"):
        pb.simulate(pb.make("linucb"), pb.SyntheticEnv(d=2, K=3), horizon=10, progress=3)  # type: ignore[arg-type]


def test_summary_carries_the_accounted_guarantee(result: pb.SimulationResult) -> None:
    s = result.summary()
    assert s["mean"] == pytest.approx(result.final_regret.mean())
    assert s["epsilon"] == result.guarantee.epsilon and s["delta"] == result.guarantee.delta
    assert s["trust_model"] == "local" and s["guarantee"] == str(result.guarantee)


def test_to_frame_has_one_row_per_replication_and_checkpoint(result: pb.SimulationResult) -> None:
    frame = result.to_frame()
    R, n = result.regret.shape
    assert len(frame) == R * n
    assert np.array_equal(frame["regret"].to_numpy(), result.regret.reshape(-1))
    last = frame[frame["t"] == result.horizon].sort_values("replication")
    assert np.array_equal(last["regret"].to_numpy(), result.final_regret)
    assert set(frame["epsilon"]) == {result.guarantee.epsilon} and set(frame["algorithm"]) == {
        "ldp-sgd"
    }
    assert any(c.startswith("param.") for c in frame.columns)


def test_repr_html_names_the_algorithm_guarantee_and_regret(result: pb.SimulationResult) -> None:
    page = result._repr_html_()
    assert page.startswith("<table>") and "ldp-sgd" in page and "final regret" in page
    assert str(result.guarantee).split("[")[0].strip().replace("<", "&lt;") in page


def test_every_environment_class_is_exported_at_top_level() -> None:
    import privbandits.envs as envs
    import privbandits.envs.datasets as datasets

    for mod in (envs, datasets):
        for name in mod.__all__:
            if name.endswith("Env") and name != "Environment":
                assert getattr(pb, name) is getattr(mod, name), name
