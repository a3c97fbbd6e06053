"""The Han et al. (2021) reproduction presets and the demo: validation, spec values, end-to-end runs.

Spec ``han2021-ldp-glb.md`` sections 5.1-5.5 (sizes of Figure 5.1 and of the GLM experiments) and
3.6 (delta per experiment).  The end-to-end runs use each preset's ``--quick`` table with the
horizon cut to 1000 rounds (a few seconds each); the true ``--quick`` runs (T = 1e4) are ``slow``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from privbandits.algorithms import make
from privbandits.cli import app
from privbandits.core.rng import make_streams
from privbandits.experiments.config import Overrides
from privbandits.experiments.pipeline import run_pipeline
from privbandits.experiments.presets import available_presets, load_preset
from privbandits.experiments.units import build_env

LDP_LABELS = {
    "ldp-ols": "LDP-OLS",
    "ldp-sgd": "LDP-SGD",
    "ldp-ucb": "LDP-UCB",
    "ldp-gloc": "LDP-GLOC",
}

# name -> (env facts, algorithm registry names, delta of the (epsilon, delta) algorithms)
EXPECTED: dict[str, tuple[dict[str, Any], tuple[str, ...], float]] = {
    "han2021-fig5.1-single": (
        {"d": 2, "K": 10, "setting": "single", "contexts": "sphere", "link": "identity"},
        ("ldp-ols", "ldp-sgd", "ldp-ucb", "ldp-gloc"),
        0.01,
    ),
    "han2021-fig5.1-multi": (
        {
            "d": 2,
            "K": 3,
            "setting": "multi",
            "contexts": "sphere",
            "link": "identity",
            "noise_scale": 0.05,
        },
        ("ldp-ols", "ldp-sgd", "ldp-ucb", "ldp-gloc"),
        0.1,
    ),
    "han2021-glm": (
        {
            "d": 2,
            "K": 10,
            "setting": "single",
            "contexts": "sphere",
            "link": "logistic",
            "noise": "bernoulli",
        },
        ("ldp-sgd", "ldp-gloc"),
        0.01,
    ),
    "han2021-glm-poisson": (
        {
            "d": 2,
            "K": 10,
            "setting": "single",
            "contexts": "sphere",
            "link": "poisson",
            "noise": "poisson",
        },
        ("ldp-sgd", "ldp-gloc"),
        0.01,
    ),
}
PRESETS = sorted(EXPECTED)


def test_presets_are_listed() -> None:
    listed = available_presets()
    for name in PRESETS:
        assert name in listed and listed[name].startswith("Han et al. (2021)")
    out = CliRunner().invoke(app, ["reproduce", "--list"])
    assert out.exit_code == 0
    for name in PRESETS:
        assert name in out.stdout


@pytest.mark.parametrize("name", PRESETS)
def test_preset_matches_the_spec(name: str) -> None:
    env_facts, algorithms, delta = EXPECTED[name]
    cfg = load_preset(name)
    assert (cfg.horizon, cfg.replications, cfg.seeds) == (1_000_000, 10, (0,))
    for key, value in env_facts.items():
        assert cfg.env[key] == value, key
    # the strict series as the spec lists them; the presets with a paper-calibration twin of each and
    # the uniform learning reference list those after them
    main = cfg.algorithms[: len(algorithms)]
    assert tuple(e.name for e in main) == algorithms
    assert tuple(e.label for e in main) == tuple(LDP_LABELS[a] for a in algorithms)
    rest = cfg.algorithms[len(algorithms) :]
    extra = {e.label for e in rest}
    if rest:
        assert extra == {f"{LDP_LABELS[a]} (paper)" for a in algorithms} | {"uniform"}
        for e in rest:
            if e.name != "uniform":
                assert all(params["preset"] == "paper" for params, _ in e.variants)
    for entry in cfg.algorithms:
        if entry.name == "uniform":
            continue
        assert sorted(grid["epsilon"] for _, grid in entry.variants) == [1.0, 5.0]
        for params, _ in entry.variants:
            if entry.name != "ldp-sgd" or "delta" in params:  # LDP-SGD is pure epsilon-LDP
                assert params["delta"] == delta
    assert (cfg.plot.facet, cfg.plot.band) == ("epsilon", 0.5)
    rep = cfg.report
    assert cfg.claims and rep.claims.strip()
    labels = set(LDP_LABELS.values()) | extra
    assert all(set(c.items) | set(c.above) <= labels for c in cfg.claims)
    n_private = sum(e.name != "uniform" for e in cfg.algorithms)
    assert len(cfg.units()) == 2 * n_private + (len(cfg.algorithms) - n_private)
    quick = load_preset(name, Overrides(quick=True))
    assert (quick.horizon, quick.replications) == (10_000, 3)
    ckpts = quick.units()[0].checkpoint_rounds()
    assert (
        ckpts[-1] == 10_000 and len(ckpts) >= 50
    )  # enough points for a curve at the quick horizon


@pytest.mark.parametrize("name", PRESETS)
def test_every_variant_is_locally_private_at_its_epsilon(name: str) -> None:
    """Guarantees computed from the noise actually added stay within the requested (epsilon, delta)."""
    cfg = load_preset(name)
    env = build_env(cfg.env)
    spec = env.reset(2, make_streams(0), cfg.horizon)
    for unit in cfg.units():
        if unit.algorithm == "uniform":  # the learning check's non-private reference
            continue
        alg = make(unit.algorithm, **unit.params)
        alg.reset(spec, 2, make_streams(1))
        g = alg.guarantee
        assert g.model == "local" and g.is_private, unit.describe()
        assert g.epsilon <= unit.params["epsilon"] * (1 + 1e-9), (unit.describe(), g)
        assert g.delta <= unit.params.get("delta", 0.0) * (1 + 1e-9), (unit.describe(), g)


def _final_table(report: str) -> dict[str, tuple[float, float]]:
    """``{series name: (mean, std)}`` parsed from the report's final-regret table."""
    rows = {}
    for line in report.splitlines():
        m = re.match(
            r"\| ((?:LDP-[A-Z]+(?: \(paper\))? \(epsilon=\d\))|uniform) \|.*\| ([-\d.e+]+) ± ([-\d.e+]+) \| (\d+) \|",
            line,
        )
        if m:
            rows[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return rows


@pytest.mark.parametrize("name", PRESETS)
def test_quick_variant_runs_end_to_end(name: str, tmp_path: Path) -> None:
    """The quick table at T = 1000: units stored, PNG + PDF figures and the claims report written."""
    cfg = load_preset(name, Overrides(quick=True, horizon=1000))
    out = tmp_path / "out"
    outcome = run_pipeline(cfg, tmp_path / "r.db", out, workers=1, quiet=True)
    assert outcome.run.executed == len(cfg.units())
    assert [p.name for p in outcome.figures] == ["regret.png", "regret.pdf"]
    assert (out / "regret.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "regret.pdf").read_bytes()[:5] == b"%PDF-"
    text = (out / "report.md").read_text()
    assert text.startswith(f"# {cfg.report.title}")
    table = _final_table(text)
    assert set(table) == {
        e.label if e.name == "uniform" else f"{e.label} (epsilon={v})"
        for e in cfg.algorithms
        for v in (1, 5)
    }
    for series in outcome.series:
        assert series.n == 3 and series.checkpoints[-1] == 1000
        mean, std = table[series.name]
        assert math.isclose(mean, series.final_mean, rel_tol=1e-3, abs_tol=0.05)
        assert math.isclose(std, series.final_std, rel_tol=1e-2, abs_tol=0.05)
        # pseudo-regret of one round lies in [0, max gap]; the gap is at most 2 (linear, unit vectors),
        # 1 (Bernoulli means) or e - 1/e (Poisson means on the unit sphere)
        assert 0.0 < series.final_mean < 2.0 * 1000
    # every claim in each cell it applies to (fig. 5.1: LDP-SGD < LDP-OLS is claimed at epsilon = 1 only)
    expected = [
        {"epsilon": e} for c in cfg.claims for e in (1.0, 5.0) if c.where.get("epsilon", e) == e
    ]
    assert [c.cell for c in outcome.checks] == expected
    for cell in ("epsilon=1", "epsilon=5"):
        assert f"- **{cell}**: " in text
    for claim in cfg.claims:
        assert f"**Claim: {claim.describe()}**" in text


def test_demo_compares_ldp_algorithms_with_their_non_private_twins() -> None:
    cfg = load_preset("demo")
    names = {e.name for e in cfg.algorithms}
    twins = {
        "ldp-ols": "greedy-ols",
        "ldp-sgd": "greedy-sgd",
        "ldp-ucb": "linucb",
        "ldp-gloc": "gloc",
    }
    for private, twin in twins.items():
        assert private in names and twin in names
    assert "uniform" in names
    assert cfg.env["noise_scale"] > 0.1
    env = build_env(cfg.env)
    spec = env.reset(2, make_streams(0), cfg.horizon)
    for unit in cfg.units():
        if unit.algorithm == "uniform":  # the learning check's non-private reference
            continue
        alg = make(unit.algorithm, **unit.params)
        alg.reset(spec, 2, make_streams(1))
        assert alg.guarantee.is_private == (unit.algorithm in twins), unit.describe()
    # sized for about a minute on 2 cores: at most ~1e6 batched rounds in all (each ~0.1-0.3 ms)
    assert sum(u.horizon for u in cfg.units()) <= 1_000_000


@pytest.mark.slow
@pytest.mark.parametrize("name", PRESETS)
def test_quick_variant_via_cli(name: str, tmp_path: Path) -> None:
    """``privbandits reproduce NAME --quick`` (T = 1e4, 3 replications) writes figures and report."""
    out = tmp_path / "out"
    res = CliRunner().invoke(
        app,
        [
            "reproduce",
            name,
            "--quick",
            "--db",
            str(tmp_path / "r.db"),
            "--out",
            str(out),
            "--workers",
            "2",
            "-q",
        ],
        env={"COLUMNS": "400"},  # one line per claim (the console wraps at its width)
    )
    assert res.exit_code == 0, res.output
    assert (
        "(epsilon=1): " in res.stdout and "(epsilon=5): " in res.stdout
    )  # claims checked per epsilon
    assert all(
        line.startswith("claim ") for line in res.stdout.splitlines() if "(epsilon=5): " in line
    )
    for f in ("regret.png", "regret.pdf", "report.md"):
        assert (out / f).stat().st_size > 0
    assert "Horizon T = 10000, 3 replications" in (out / "report.md").read_text()
