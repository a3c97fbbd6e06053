"""The tuning protocol: exploration constants are post-processing, tuning never sees evaluation seeds.

For every private algorithm with declared exploration constants, the accounted guarantee computed
by its accountant is the same at every point of its tuning grid (same epsilon, delta, model and
unit), on a problem of a shipped preset that runs it.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from privbandits.algorithms import available
from privbandits.core.errors import ValidationError
from privbandits.core.rng import make_streams
from privbandits.experiments.config import parse_config
from privbandits.experiments.tuning import (
    TUNED_SUFFIX,
    TUNING_GRIDS,
    TuningChoice,
    guarantee_across_grid,
    read_choice,
    tune,
    tuned_config,
    tuning_config,
    tuning_grid,
    write_choice,
)
from privbandits.experiments.units import build_env

_LINEAR = {"kind": "synthetic", "d": 2, "K": 10, "setting": "single", "contexts": "sphere"}
_LOGISTIC = {**_LINEAR, "link": "logistic", "noise": "bernoulli"}
_FINITE = {"kind": "finite", "d": 2, "K": 10, "actions": "circle", "theta": "sphere"}
_CHEN = {
    "kind": "synthetic",
    "d": 3,
    "K": 10,
    "setting": "single",
    "contexts": "gaussian_normalized",
}
#: Registry name -> (environment, fixed parameters): the problems of the presets that run it.
PROBLEMS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "ldp-ols": (_LINEAR, {"epsilon": 1.0, "delta": 0.01}),
    "ldp-sgd": (_LINEAR, {"epsilon": 1.0}),
    "greedy-sgd": (_LINEAR, {}),
    "ldp-ucb": (_LINEAR, {"epsilon": 1.0, "delta": 0.01}),
    "ldp-gloc": (_LOGISTIC, {"epsilon": 1.0, "delta": 0.01}),
    "hanna-central": (_FINITE, {"epsilon": 1.0}),
    "hanna-local": (_FINITE, {"epsilon": 1.0}),
    "hanna-shuffle": (_FINITE, {"epsilon": 1.0, "delta": 1e-6}),
    "pe-batched": (_FINITE, {}),
    "phased-elimination": (_FINITE, {}),
    "chen-ldp": (_CHEN, {"epsilon": 1.0}),
    "chen-jdp": (_CHEN, {"epsilon": 1.0}),
    "chen-elim": (_CHEN, {}),
    "squarecb": (_CHEN, {}),
    "squarecb-jdp": (_CHEN, {"epsilon": 1.0}),
    "squarecb-ldp": (_CHEN, {"epsilon": 1.0}),
    "jdp-linucb": (_LINEAR, {"epsilon": 1.0, "delta": 0.01}),
    "shuffle-linucb": (_LINEAR, {"epsilon": 1.0, "delta": 0.01}),
    "shuffle-linucb-vec": (_LINEAR, {"epsilon": 1.0, "delta": 0.01}),
    "linucb": (_LINEAR, {}),
    "gloc": (_LOGISTIC, {}),
    "glm-ucb": (_LOGISTIC, {}),
}
PRIVATE = sorted(
    n for n in TUNING_GRIDS if "epsilon" in inspect.signature(available()[n].__init__).parameters
)


def test_every_declared_algorithm_has_a_problem() -> None:
    assert set(PROBLEMS) == set(TUNING_GRIDS)


def test_every_declared_algorithm_is_registered_and_its_grid_names_parameters() -> None:
    for name, grid in TUNING_GRIDS.items():
        params = inspect.signature(available()[name].__init__).parameters
        for key, values in grid.items():
            assert key in params, (name, key)
            assert len(values) >= 2 and len(set(values)) == len(values)
            # privacy parameters are never tuning parameters
            assert key not in {
                "epsilon",
                "delta",
                "preset",
                "clip",
                "mechanism",
                "gaussian_calibration",
            }


@pytest.mark.parametrize("name", PRIVATE)
def test_guarantee_is_identical_across_the_tuning_grid(name: str) -> None:
    env_kw, params = PROBLEMS[name]
    env = build_env({**env_kw})
    spec = env.reset(1, make_streams(0), 2000)
    rows = guarantee_across_grid(name, params, spec)
    assert len(rows) >= 2
    first = rows[0][1]
    assert first.is_private
    for point, g in rows[1:]:
        assert (g.epsilon, g.delta, g.model, g.unit, g.local_epsilon) == (
            first.epsilon,
            first.delta,
            first.model,
            first.unit,
            first.local_epsilon,
        ), (name, point)


def test_the_check_catches_a_privacy_parameter_in_the_grid() -> None:
    """A grid over epsilon (a calibration parameter, not post-processing) changes the guarantee."""
    env_kw, params = PROBLEMS["hanna-central"]
    spec = build_env(env_kw).reset(1, make_streams(0), 2000)
    rows = guarantee_across_grid("hanna-central", params, spec, grid={"epsilon": (1.0, 2.0)})
    assert rows[0][1].epsilon != rows[1][1].epsilon


def test_a_class_attribute_declares_a_user_algorithm_grid() -> None:
    class Mine:
        name = "mine"
        tuning_params = {"scale": [0.1, 1.0]}

    assert tuning_grid(Mine) == {"scale": (0.1, 1.0)}


CONFIG = """
name = "tiny-tune"
horizon = 2000
replications = 2
seeds = [0, 1]

[env]
kind = "finite"
d = 2
K = 5
actions = "circle"
theta = "sphere"

[grid]
epsilon = [1.0, 5.0]

[[algorithms]]
name = "hanna-central"
label = "central"

[[algorithms]]
name = "phased-elimination"
label = "PE"
params = { sigma = 0.5 }

[[algorithms]]
name = "uniform"

[[claims]]
kind = "order"
items = ["central", "uniform"]
"""


def test_tuning_runs_on_seeds_disjoint_from_the_evaluation_seeds(tmp_path: Path) -> None:
    cfg = parse_config(CONFIG)
    tcfg, cands = tuning_config(cfg)
    assert not set(tcfg.seeds) & set(cfg.seeds)
    # every declared constant is tuned, also where the configuration fixes it (PE's sigma):
    # the configuration's own series stays as it is
    assert list(cands) == ["central", "PE"] and len(cands["central"]) == 3
    assert {u.seed for u in tcfg.units()} == set(tcfg.seeds)
    with pytest.raises(ValidationError, match="evaluation seeds"):
        tuning_config(cfg, seeds=[1, 7])
    choice = tune(cfg, tmp_path / "r.db", workers=1)
    assert set(choice.chosen) == {"central", "PE"}
    assert choice.chosen["central"] in [p for _, p in cands["central"]]
    best = min(choice.scores["central"], key=lambda r: r[1])[0]
    assert choice.chosen["central"] == best
    back = read_choice(write_choice(choice, tmp_path / "tuned.toml"))
    assert back == choice
    tuned = tuned_config(cfg, back)
    assert tuned.labels == (
        "central",
        "central" + TUNED_SUFFIX,
        "PE",
        "PE (tuned)",
        "uniform",
    )
    assert [c.items for c in tuned.claims] == [
        ("central", "uniform"),
        ("central (tuned)", "uniform"),
    ]
    # a choice made on evaluation seeds is refused
    bad = TuningChoice(cfg.name, (0,), 2000, 2, back.chosen, back.scores)
    with pytest.raises(ValidationError, match="evaluation seeds"):
        tuned_config(cfg, bad)


def test_tune_command_stores_the_choice_and_evaluates_side_by_side(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from privbandits.cli import app

    cfg_file = tmp_path / "tiny.toml"
    cfg_file.write_text(CONFIG)
    res = CliRunner().invoke(
        app,
        [
            "tune",
            str(cfg_file),
            "--db",
            str(tmp_path / "r.db"),
            "-q",
            "-w",
            "1",
            "--evaluate",
            str(tmp_path / "out"),
        ],
    )
    assert res.exit_code == 0, res.output
    choice = read_choice(tmp_path / "tiny-tune.tuned.toml")
    assert choice.seeds == (10_001,) and set(choice.chosen) == {"central", "PE"}
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| central (tuned) (epsilon=1) |" in report and "| central (epsilon=1) |" in report
    # the report says where the tuned constants come from
    assert "tuning seeds [10001] (never the evaluation seeds)" in report
    assert "central: sigma = " in report
    # the claims' verdicts as published and tuned, side by side
    assert "Summary: as published: claims: " in report and "; tuned: claims: " in report


def test_gallery_shows_as_published_and_tuned_verdicts(tmp_path: Path) -> None:
    from privbandits.experiments.claims import Claim
    from privbandits.experiments.gallery import GalleryEntry, _is_tuned, write_gallery

    assert _is_tuned(Claim("order", ("a" + TUNED_SUFFIX, "uniform")))
    assert not _is_tuned(Claim("order", ("a", "uniform")))
    entry = GalleryEntry(
        name="x-y",
        title="X",
        directory="x/y",
        figures=(),
        verdicts={"agree": 1},
        verdict="claims: 1 agree",
        ratios={},
        horizon=100,
        runs=10,
        wall_time=1.0,
        no_learning=("a (epsilon=1)",),
        tuned_verdict="claims: 1 disagree",
    )
    text = write_gallery([entry], tmp_path).read_text()
    assert "as published: claims: 1 agree; tuned: claims: 1 disagree" in text
    assert "no learning detected: 1 series" in text


def test_a_claim_naming_an_algorithm_ignores_its_tuned_twin() -> None:
    """An entry labelled by its registry name ("chen-jdp") and its tuned twin ("chen-jdp (tuned)"):
    the as-published claim compares the as-published series only (it used to pick up both, so a
    ``within`` claim found no single series and a ``monotone`` one mixed the two)."""
    import numpy as np

    from privbandits.experiments.claims import Claim, evaluate_claims
    from privbandits.experiments.summary import Series
    from privbandits.privacy.guarantee import NON_PRIVATE

    ckpt = np.array([10.0, 100.0])

    def series(label: str, eps: float, final: float) -> Series:
        rng = np.random.default_rng(int(final))
        regret = np.column_stack([np.ones(10), final + rng.standard_normal(10)])
        return Series(
            label=label,
            algorithm="chen-jdp",
            grid={"epsilon": eps},
            params={"epsilon": eps},
            horizon=100,
            trust_model="joint",
            preset="-",
            guarantee=NON_PRIVATE,
            seeds=(0,),
            checkpoints=ckpt,
            regret=regret,
            wall_time=0.0,
        )

    runs = [
        series("chen-jdp", 0.3, 100.0),
        series("chen-jdp", 1.0, 50.0),
        series("chen-jdp" + TUNED_SUFFIX, 0.3, 10.0),
        series("chen-jdp" + TUNED_SUFFIX, 1.0, 400.0),
    ]
    (mono,) = evaluate_claims([Claim("monotone", ("chen-jdp",), param="epsilon")], runs)
    assert mono.verdict == "agree", mono.lines()
    (tuned,) = evaluate_claims(
        [Claim("monotone", ("chen-jdp" + TUNED_SUFFIX,), param="epsilon")], runs
    )
    assert tuned.verdict == "disagree", tuned.lines()
