"""The checked claims of a regression study: each kind agrees and disagrees on synthetic rows, the
tests use the stated variance, the preset's claims validate through the schema, and the report
states verdicts and the fitting time."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from privbandits.core.errors import ConfigError
from privbandits.experiments.claims import Claim
from privbandits.experiments.config import Overrides
from privbandits.experiments.presets import load_reproduction
from privbandits.experiments.regression_claims import (
    coverage_seeds_needed,
    coverage_verdict,
    evaluate_regression_claims,
)
from privbandits.experiments.regression_report import write_regression_report
from privbandits.experiments.regression_study import RegressionStudy, parse_regression_study
from privbandits.experiments.schema import REGRESSION_CLAIM_KEYS


def _row(block: str, seed: int, estimator: str = "reweighted", **values: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "block": block,
        "n": 1000,
        "d": 2,
        "epsilon": 1.0,
        "c": 0.0,
        "p0": None,
        "estimator": estimator,
        "seed": seed,
        "l1": 0.1,
        "l2": 0.01,
        "coverage": 1.0,
        "all_covered": True,
        "mean_width": 1.0,
        "epsilon_accounted": 1.0,
    }
    return {**base, **values}


# -- coverage --------------------------------------------------------------------------------
def test_coverage_needs_59_fits_at_95_percent() -> None:
    assert coverage_seeds_needed(95.0, 0.05) == 59
    assert 0.95**59 <= 0.05 < 0.95**58


@pytest.mark.parametrize(
    ("covered", "fits", "verdict"),
    [
        (60, 60, "agree"),  # P(Bin(60, .95) = 60) = 0.046
        (58, 60, "inconclusive"),
        (50, 60, "disagree"),  # P(Bin(60, .95) <= 50) = 0.0005
        (3, 3, "too few runs"),  # three lucky fits confirm nothing
        (0, 3, "disagree"),  # ... but three failures refute
    ],
)
def test_coverage_verdict_is_the_exact_binomial_test(covered: int, fits: int, verdict: str) -> None:
    got, detail = coverage_verdict(covered, fits, 95.0, 0.05)
    assert got == verdict, detail
    p_above = stats.binom.sf(covered - 1, fits, 0.95)
    assert f"P(>= {covered}) = {p_above:.3g}" in detail


def test_coverage_claim_per_cell_agrees_and_disagrees() -> None:
    """60 fits covered everywhere agree; a cell where a fifth of the fits missed one point disagrees
    although 99.99 % of its held-out points were covered: the unit of the test is the fit."""
    rows = [_row("good", s) for s in range(60)]
    rows += [
        _row("bad", s, coverage=0.9999 if s % 5 == 0 else 1.0, all_covered=s % 5 != 0)
        for s in range(60)
    ]
    claim = Claim(kind="coverage", items=("reweighted",), percent=95.0)
    checks = evaluate_regression_claims([claim], rows)
    assert [(c.cell["block"], c.verdict) for c in checks] == [
        ("good", "agree"),
        ("bad", "disagree"),
    ]
    # a pooled per-point binomial (points x seeds independent) would call "bad" a success
    pooled = np.mean([r["coverage"] for r in rows if r["block"] == "bad"])
    assert pooled > 0.95


def test_coverage_where_restricts_the_cells_and_absent_blocks_are_incomplete() -> None:
    rows = [_row("good", s) for s in range(60)] + [_row("other", s) for s in range(3)]
    only = Claim(kind="coverage", items=("reweighted",), percent=95.0, where={"block": "good"})
    assert [c.cell["block"] for c in evaluate_regression_claims([only], rows)] == ["good"]
    none = Claim(kind="coverage", items=("reweighted",), percent=95.0, where={"block": "x"})
    assert [c.verdict for c in evaluate_regression_claims([none], rows)] == ["incomplete"]


# -- monotone --------------------------------------------------------------------------------
def _trend(param: str, values: list[float], means: list[float], sd: float, seeds: int = 10):
    rng = np.random.default_rng(0)
    rows = []
    for v, m in zip(values, means):
        for s in range(seeds):
            rows.append(_row("b", s, **{param: v, "l1": m + sd * rng.normal()}))
    return rows


@pytest.mark.parametrize("param", ["n", "c"])
def test_monotone_agrees_on_a_fall_and_disagrees_on_a_rise(param: str) -> None:
    values = [1000.0, 10000.0, 100000.0] if param == "n" else [0.0, 3.0, 6.0]
    falls = Claim(kind="monotone", items=("reweighted",), param=param, direction="decreasing")
    down = evaluate_regression_claims([falls], _trend(param, values, [0.3, 0.2, 0.1], 0.01))
    assert [c.verdict for c in down] == ["agree"]
    up = evaluate_regression_claims([falls], _trend(param, values, [0.1, 0.2, 0.3], 0.01))
    assert [c.verdict for c in up] == ["disagree"]
    flat = evaluate_regression_claims([falls], _trend(param, values, [0.2, 0.2, 0.2], 0.01))
    assert [c.verdict for c in flat] == ["inconclusive"]
    rises = Claim(kind="monotone", items=("reweighted",), param=param, direction="increasing")
    assert [
        c.verdict
        for c in evaluate_regression_claims([rises], _trend(param, values, [0.1, 0.2, 0.3], 0.01))
    ] == ["agree"]
    few = evaluate_regression_claims([falls], _trend(param, values, [0.3, 0.2, 0.1], 0.01, 3))
    assert [c.verdict for c in few] == ["too few runs"]


def test_monotone_pairs_seeds_only_where_the_data_stream_is_shared() -> None:
    """c, p0, epsilon: paired t over seeds (df = S - 1); n, d: Welch's test (Welch-Satterthwaite df)."""
    falls_c = Claim(kind="monotone", items=("reweighted",), param="c", direction="decreasing")
    rows = _trend("c", [0.0, 3.0], [0.3, 0.2], 0.01)
    (chk,) = evaluate_regression_claims([falls_c], rows)
    (comp,) = chk.comparisons
    assert comp.paired and comp.df == 9
    lo = np.array([r["l1"] for r in rows if r["c"] == 0.0])
    hi = np.array([r["l1"] for r in rows if r["c"] == 3.0])
    d = lo - hi
    assert comp.t == pytest.approx(d.mean() / (d.std(ddof=1) / math.sqrt(10)))
    falls_n = Claim(kind="monotone", items=("reweighted",), param="n", direction="decreasing")
    rows = _trend("n", [1000.0, 2000.0], [0.3, 0.2], 0.01)
    (comp,) = evaluate_regression_claims([falls_n], rows)[0].comparisons
    lo = np.array([r["l1"] for r in rows if r["n"] == 1000.0])
    hi = np.array([r["l1"] for r in rows if r["n"] == 2000.0])
    welch = stats.ttest_ind(lo, hi, equal_var=False)
    assert not comp.paired and comp.t == pytest.approx(welch.statistic)
    assert comp.df == pytest.approx(welch.df)
    assert "df = " in str(comp)


def test_monotone_checks_each_group_of_the_other_keys() -> None:
    rows = _trend("n", [1000.0, 2000.0], [0.3, 0.2], 0.01)
    rows += [{**r, "epsilon": 0.1, "l1": 1.0 - r["l1"]} for r in rows]  # rises at epsilon 0.1
    claim = Claim(kind="monotone", items=("reweighted",), param="n", direction="decreasing")
    got = {c.cell["epsilon"]: c.verdict for c in evaluate_regression_claims([claim], rows)}
    assert got == {1.0: "agree", 0.1: "disagree"}


# -- validation through the schema, the preset, the report --------------------------------------
def _study(**claims: Any) -> dict[str, Any]:
    return {
        "kind": "regression",
        "name": "tiny",
        "replications": 2,
        "n_test": 500,
        "estimators": ["reweighted", "least-squares"],
        "blocks": [
            {"name": "cond", "x": "n", "n": [1000, 2000], "d": [2], "epsilon": [1.0]},
            {"name": "cov", "n": [1000], "d": [2], "epsilon": [1.0], "replications": 3},
        ],
        "claims": [claims],
    }


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        ({"kind": "order", "items": ["reweighted"]}, r"claims\[0\]\.kind = \"order\""),
        ({"kind": "coverage", "items": ["reweighted"]}, r"claims\[0\]\.percent is required"),
        (
            {"kind": "coverage", "items": ["reweighted"], "percent": -5},
            r"claims\[0\]\.percent = -5",
        ),
        (
            {"kind": "coverage", "items": ["reweighted"], "percent": 100},
            r"claims\[0\]\.percent = 100",
        ),
        (
            {"kind": "coverage", "items": ["reweighed"], "percent": 95},
            r"claims\[0\]\.items\[0\] = \"reweighed\".*did you mean 'reweighted'",
        ),
        (
            {"kind": "coverage", "items": ["reweighted"], "percent": 95, "param": "n"},
            r"unknown key 'param' in claims\[0\]",
        ),
        ({"kind": "monotone", "items": ["reweighted"]}, r"claims\[0\]\.param is required"),
        (
            {"kind": "monotone", "items": ["reweighted"], "param": "sigma"},
            r"claims\[0\]\.param = \"sigma\"",
        ),
        (
            {"kind": "monotone", "items": ["reweighted"], "param": "n", "direction": "near"},
            r"claims\[0\]\.direction = \"near\"",
        ),
        (
            {"kind": "monotone", "items": ["reweighted", "least-squares"], "param": "n"},
            r"claims\[0\]\.items .*exactly one",
        ),
        (
            {"kind": "monotone", "items": ["reweighted"], "param": "n", "where": {"block": "x"}},
            r"claims\[0\]\.where\.block = \"x\"",
        ),
        (
            {"kind": "monotone", "items": ["reweighted"], "param": "n", "text": 3},
            r"claims\[0\]\.text = 3",
        ),
    ],
)
def test_bad_claims_name_the_key_and_value(claim: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_regression_study(_study(**claim), source="t.toml")


def test_block_replications_and_their_override() -> None:
    raw = _study(kind="coverage", items=["reweighted"], percent=95)
    study = parse_regression_study(raw)
    assert [study.seeds(b) for b in study.blocks] == [2, 3] and len(study.units()) == 2 * 2 + 3
    with pytest.raises(ConfigError, match=r"blocks\[1\]\.replications = 0"):
        parse_regression_study(
            {**raw, "blocks": [raw["blocks"][0], {**raw["blocks"][1], "replications": 0}]}
        )
    forced = parse_regression_study(raw, overrides=Overrides(replications=1))
    assert len(forced.units()) == 3  # -R applies to every block


def test_the_preset_declares_checked_claims() -> None:
    study = load_reproduction("chen2025-regression")
    assert isinstance(study, RegressionStudy)
    assert {c.kind for c in study.claims} == set(REGRESSION_CLAIM_KEYS)
    cov = next(b for b in study.blocks if b.name == "coverage")
    assert study.seeds(cov) >= coverage_seeds_needed(95.0)  # the coverage block can reach a verdict
    assert study.replications >= 5  # so can the monotone claims


def test_report_states_verdicts_and_the_fitting_time(tmp_path: Path) -> None:
    study = parse_regression_study(
        _study(kind="monotone", items=["reweighted"], param="n", text="falls with n")
    )
    rows = _trend("n", [1000.0, 2000.0], [0.3, 0.2], 0.01, 5)
    rows = [{**r, "block": "cond", "n": int(r["n"])} for r in rows]
    _, path, summary = write_regression_report(
        study, rows, tmp_path, formats=("png",), dpi=30, elapsed=0.4, fit_time=1234.0, reused=10
    )
    text = path.read_text()
    assert "**Claim: the L1 error of reweighted falls as n grows** — falls with n" in text
    assert "- **block=cond, d=2, epsilon=1, c=0**: agree" in text and "Welch t = " in text
    assert "fitting time 1,234 s summed over the units" in text
    assert "every unit's rows reused from the results store" in text and ", 0 s." not in text
    assert summary[-1] == "claims: 1 agree"
