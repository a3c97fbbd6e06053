"""Experiments over several horizons (``horizons = [...]``): separate runs per T, the horizon as the
parameter ``T`` of every series, and the slope of the final regret against T as a claim."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privbandits.core.errors import ConfigError
from privbandits.experiments.claims import Claim, evaluate_claims, param_slopes
from privbandits.experiments.config import Overrides, parse_config
from privbandits.experiments.pipeline import run_pipeline
from privbandits.experiments.presets import load_preset, preset_text
from privbandits.experiments.runner import run_units
from privbandits.experiments.store import ResultsStore
from privbandits.experiments.summary import Series, build_series
from privbandits.privacy.guarantee import NON_PRIVATE

RAW: dict[str, Any] = {
    "name": "hz",
    "horizons": [40, 80],
    "replications": 2,
    "checkpoints": 4,
    "env": {"d": 2, "K": 3},
    "algorithms": [{"name": "linucb", "grid": {"lam": [1.0, 2.0]}}, {"name": "uniform"}],
    "quick": {"horizons": [20], "replications": 1},
}


def _raw(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(RAW)
    raw.update(changes)
    return raw


# ------------------------------------------------------------------------------------------
# work units
# ------------------------------------------------------------------------------------------
def test_one_set_of_units_per_horizon() -> None:
    cfg = parse_config(RAW)
    units = cfg.units()
    per_horizon = 3  # linucb at two lam values, uniform
    assert len(units) == 2 * per_horizon
    assert [u.horizon for u in units] == [40] * per_horizon + [80] * per_horizon
    assert all(u.grid["T"] == u.horizon for u in units)
    assert len({u.key() for u in units}) == len(units)
    assert cfg.horizon == 80 and cfg.horizons == (40, 80) and not cfg.reduced
    assert cfg.horizon_text() == "T in {40, 80} (separate runs)"


def test_horizon_option_runs_one_horizon_of_the_list_with_the_same_units() -> None:
    """``--horizon`` replaces the list by one horizon; its units are those of that horizon in the
    full list (a reduced run reuses them and the reverse)."""
    full = parse_config(RAW).units()
    one = parse_config(RAW, overrides=Overrides(horizon=40))
    assert one.horizons == (40,) and one.reduced and one.run_tag == "T=40"
    assert [u.key() for u in one.units()] == [u.key() for u in full if u.horizon == 40]


def test_quick_horizons_and_quick_horizon() -> None:
    quick = parse_config(RAW, overrides=Overrides(quick=True))
    assert quick.horizons == (20,) and quick.replications == 1 and quick.reduced
    assert "T in {40, 80}" in quick.horizon_text(declared=True)
    # a [quick] horizon replaces the list by one plain horizon
    single = parse_config(
        _raw(quick={"horizon": 20}), overrides=Overrides(quick=True), source="t.toml"
    )
    assert single.horizons == () and single.horizon == 20
    assert all("T" not in u.grid for u in single.units())


def test_a_file_with_one_horizon_is_unchanged() -> None:
    raw = _raw(horizon=40)
    del raw["horizons"], raw["quick"]
    cfg = parse_config(raw)
    assert cfg.horizons == () and cfg.horizon_text() == "T = 40"
    assert all("T" not in u.grid and u.horizon == 40 for u in cfg.units())


@pytest.mark.parametrize(
    ("changes", "named", "reason"),
    [
        ({"horizon": 40}, "horizons", "either horizon or horizons"),
        ({"horizons": []}, "horizons", "non-empty list"),
        ({"horizons": 40}, "horizons", "non-empty list"),
        ({"horizons": [40, 0]}, "horizons[1]", "integer in [1, inf]"),
        ({"horizons": [40, 40]}, "horizons", "duplicate"),
        ({"quick": {"horizons": [0]}}, "horizons[0]", "integer in [1, inf]"),
        ({"grid": {"T": [1.0]}}, "grid.T", "horizon of an experiment with horizons"),
    ],
)
def test_validation_errors_name_the_key(changes: dict[str, Any], named: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(_raw(**changes), source="t.toml")
    msg = str(info.value)
    assert msg.startswith(f"t.toml: {named} = ") or msg.startswith(f"t.toml [quick]: {named} = ")
    assert reason in msg


def test_missing_horizon_names_both_keys() -> None:
    raw = _raw()
    del raw["horizons"]
    with pytest.raises(ConfigError, match="'horizon'.*'horizons'"):
        parse_config(raw, source="t.toml")


# ------------------------------------------------------------------------------------------
# runs, resume and the summary's T dimension
# ------------------------------------------------------------------------------------------
def test_units_of_every_horizon_run_resume_and_form_series_by_t(tmp_path: Path) -> None:
    cfg = parse_config(RAW)
    db = tmp_path / "r.db"
    with ResultsStore(db) as store:  # one horizon first (--horizon 40) ...
        first = run_units(
            parse_config(RAW, overrides=Overrides(horizon=40)).units(),
            store,
            workers=1,
            quiet=True,
        )
    assert (first.skipped, first.executed) == (0, 3)
    with ResultsStore(db) as store:  # ... then the list resumes: only T = 80 is run
        both = run_units(cfg.units(), store, workers=1, quiet=True)
    assert (both.skipped, both.executed) == (3, 3)
    assert all(r.horizon == r.grid["T"] for r in both.results)
    with ResultsStore(db) as store:
        again = run_units(cfg.units(), store, workers=1, quiet=True)
    assert (again.skipped, again.executed) == (6, 0)

    series = build_series(both.results)
    assert len(series) == 6
    uniform = sorted((s for s in series if s.label == "uniform"), key=lambda s: s.value("T"))
    assert [s.value("T") for s in uniform] == [40, 80]
    assert [s.horizon for s in uniform] == [40, 80]
    assert [int(s.checkpoints[-1]) for s in uniform] == [40, 80]  # each its own run to its T
    assert uniform[0].name == "uniform (T=40)"


def test_pipeline_draws_final_regret_against_t_and_checks_claims_per_horizon(
    tmp_path: Path,
) -> None:
    raw = _raw(
        replications=5,  # the slope claim needs MIN_RUNS runs for a verdict
        figures=[{"kind": "final_vs_param", "name": "vs-T", "x": "T", "logx": True, "logy": True}],
        claims=[
            {"kind": "tiers", "items": ["linucb"], "above": ["uniform"]},
            {
                "kind": "slope",
                "items": ["uniform"],
                "param": "T",
                "exponent": 1.0,
                "tolerance": 0.5,
            },
        ],
    )
    cfg = parse_config(raw)
    out = run_pipeline(cfg, tmp_path / "r.db", tmp_path / "out", quiet=True, workers=1)
    assert [p.name for p in out.figures] == ["vs-T.png", "vs-T.pdf"]
    tiers = [c for c in out.checks if c.claim.kind == "tiers"]
    assert sorted((c.cell["T"], c.cell["lam"]) for c in tiers) == [
        (40, 1.0),
        (40, 2.0),
        (80, 1.0),
        (80, 2.0),
    ]
    (slope,) = [c for c in out.checks if c.claim.kind == "slope"]
    assert slope.cell == {} and "against T = 40, 80" in slope.detail
    text = (tmp_path / "out" / "report.md").read_text()
    assert "Horizon T in {40, 80} (separate runs)" in text


# ------------------------------------------------------------------------------------------
# the slope of the final regret against T
# ------------------------------------------------------------------------------------------
HORIZONS = (1_000, 3_000, 10_000, 30_000)
RUNS = 6
#: Log-normal noise of each final regret.  The per-run slope over these four horizons then has
#: sd SIGMA / sqrt(Sxx) ~ 0.02 (Sxx ~ 6.6, the spread of log T) and the 95 % interval of the mean
#: of 6 runs a half-width ~ 2.57 * 0.02 / sqrt(6) ~ 0.02: an exponent 0.15 away from the claim's
#: bound is ~7 half-widths away, so the verdicts below do not depend on the seed.
SIGMA = 0.05


def _series_over_t(
    exponent: float, seeds: tuple[int, ...] = (0,), runs: int = RUNS
) -> list[Series]:
    """Series at each horizon whose final regret is ``T ** exponent`` (times log-normal noise)
    while the regret within each run is linear in t (slope 1 over the checkpoints)."""
    rng = np.random.default_rng(7)
    out = []
    for horizon in HORIZONS:
        ck = np.linspace(horizon / 10, horizon, 8)
        final = horizon**exponent * np.exp(SIGMA * rng.standard_normal(runs))
        out.append(
            Series(
                label="alg",
                algorithm="alg",
                grid={"epsilon": 1.0, "T": horizon},
                params={"epsilon": 1.0},
                horizon=horizon,
                trust_model="shuffle",
                preset="strict",
                guarantee=NON_PRIVATE,
                seeds=seeds,
                checkpoints=ck,
                regret=final[:, None] * (ck / horizon)[None, :],
                wall_time=0.0,
            )
        )
    return out


def _slope_claim(**kw: Any) -> Claim:
    return Claim(
        kind="slope",
        items=("alg",),
        param="T",
        exponent=0.5,
        tolerance=0.15,
        direction="at_most",
        **kw,
    )


def test_slope_against_t_agrees_with_a_sqrt_t_regret() -> None:
    series = _series_over_t(0.5)
    (res,) = evaluate_claims([_slope_claim()], series)
    assert res.verdict == "agree", res.detail
    assert res.cell == {"epsilon": 1.0}  # T is the fitted parameter, not a cell
    assert "alg (epsilon=1): slope of final regret against T = 1000, 3000, 10000, 30000" in (
        res.detail
    )
    slopes = param_slopes(series, "T")
    assert slopes.shape == (RUNS,)
    assert abs(slopes.mean() - 0.5) < 0.05


def test_slope_against_t_disagrees_with_a_linear_regret() -> None:
    """A regret linear in T must fail the "at most about 1/2" claim."""
    (res,) = evaluate_claims([_slope_claim()], _series_over_t(1.0))
    assert res.verdict == "disagree", res.detail


def test_slope_against_t_is_fitted_on_final_regrets_not_on_the_curve_within_a_run() -> None:
    """The curves within each run grow linearly (slope 1): the within-run claim disagrees, the claim
    against T (final regrets ~ sqrt(T)) agrees."""
    series = _series_over_t(0.5)
    within = Claim(kind="slope", items=("alg",), exponent=0.5, tolerance=0.15, direction="at_most")
    results = evaluate_claims([within], series)
    assert len(results) == len(HORIZONS)  # one cell per horizon
    assert all(r.verdict == "disagree" for r in results)


def test_slope_against_t_needs_the_same_runs_at_every_horizon() -> None:
    series = _series_over_t(0.5)
    series[-1] = _series_over_t(0.5, seeds=(1,))[-1]
    (res,) = evaluate_claims([_slope_claim()], series)
    assert res.verdict == "incomplete" and "different seeds" in res.detail
    (few,) = evaluate_claims([_slope_claim()], _series_over_t(0.5, runs=3))
    assert few.verdict == "too few runs"


def test_slope_against_t_validates_in_a_file() -> None:
    raw = _raw(
        claims=[
            {
                "kind": "slope",
                "items": ["uniform"],
                "param": "T",
                "exponent": 0.5,
                "tolerance": 0.1,
                "direction": "at_most",
            }
        ]
    )
    (claim,) = parse_config(raw).claims
    assert claim.param == "T"
    assert "final regret against T at most 0.6" in claim.describe()


def test_the_horizons_preset_runs_separate_horizons() -> None:
    """The preset's file declares the four horizons; its quick run (validated here: the full one
    calibrates ShuffleGLM at T = 3e5, minutes) runs two, each its own units."""
    raw = tomllib.loads(preset_text("sarmasarkar2026-alg1-horizons"))
    assert raw["horizons"] == [10_000, 30_000, 100_000, 300_000] and "horizon" not in raw
    quick = load_preset("sarmasarkar2026-alg1-horizons", overrides=Overrides(quick=True))
    assert quick.horizons == (1_000, 3_000) and quick.replications == 2
    assert quick.declared_horizons == (10_000, 30_000, 100_000, 300_000)
    assert {u.horizon for u in quick.units()} == set(quick.horizons)
    assert any(c.kind == "slope" and c.param == "T" for c in quick.claims)
    assert quick.figures[0].x == "T"


def test_tuning_runs_at_one_horizon() -> None:
    """Tuning an experiment with several horizons tunes at one: the largest, or the given one."""
    from privbandits.experiments.tuning import tuning_config

    cfg, _ = tuning_config(parse_config(RAW), seeds=[5])
    assert cfg.horizons == () and cfg.horizon == 80
    cfg, _ = tuning_config(parse_config(RAW), seeds=[5], horizon=40)
    assert cfg.horizons == () and {u.horizon for u in cfg.units()} == {40}
