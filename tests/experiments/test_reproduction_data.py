"""Reproductions as data: claims with verdicts, paper numbers with ratios, tables, final-vs-param figures.

The series here are built by hand with known final regrets, so every verdict and ratio is known.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from privbandits.core.errors import ConfigError, ValidationError
from privbandits.experiments.claims import Claim, compare, evaluate_claims, verdict_line
from privbandits.experiments.config import parse_config
from privbandits.experiments.paper_numbers import (
    PaperNumber,
    PaperTable,
    match_numbers,
    render_table,
)
from privbandits.experiments.plots import plot_final_vs_param
from privbandits.experiments.report import render_report
from privbandits.experiments.summary import Series
from privbandits.privacy.guarantee import NON_PRIVATE

N = 40  # replications per series


def _series(
    label: str,
    mean: float,
    eps: float | None = None,
    sd: float = 1.0,
    seed: int = 0,
    shared: np.ndarray | None = None,
) -> Series:
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(N) if shared is None else shared
    final = mean + sd * (noise - noise.mean()) / noise.std(ddof=1)  # exact sample mean and sd
    regret = np.stack([final / 2, final], axis=1)
    grid = {} if eps is None else {"epsilon": eps}
    return Series(
        label=label,
        algorithm=label.lower(),
        grid=grid,
        params=dict(grid),
        horizon=100,
        trust_model="local",
        preset="strict",
        guarantee=NON_PRIVATE,
        seeds=(0,),
        checkpoints=np.array([50, 100]),
        regret=regret,
        wall_time=0.0,
    )


@pytest.fixture()
def series() -> list[Series]:
    common = np.random.default_rng(7).standard_normal(N)  # common random numbers across algorithms
    out = [_series("NP", 100.0, shared=common)]
    for eps, (a, b) in {1.0: (120.0, 200.0), 10.0: (101.0, 110.0)}.items():
        out.append(_series("A", a, eps, shared=common + 0.01 * np.arange(N)))
        out.append(_series("B", b, eps, shared=common))
    return out


def test_order_verdicts_per_cell_with_a_false_claim(series: list[Series]) -> None:
    true = evaluate_claims([Claim("order", ("NP", "A", "B"))], series)
    assert [r.cell for r in true] == [{"epsilon": 1.0}, {"epsilon": 10.0}]
    assert all(r.verdict == "agree" for r in true)
    assert all(c.paired for r in true for c in r.comparisons)  # same seeds and replications
    false = evaluate_claims([Claim("order", ("B", "A"))], series)  # deliberately false
    assert [r.verdict for r in false] == ["disagree", "disagree"]
    assert verdict_line(true + false) == "claims: 2 agree, 2 disagree"


def test_paired_z_is_the_mean_difference_over_its_standard_error(series: list[Series]) -> None:
    a = next(s for s in series if s.label == "A" and s.grid["epsilon"] == 10.0)
    np_ = series[0]
    c = compare(np_, a)
    d = a.final - np_.final
    assert c.paired and c.t == pytest.approx(d.mean() / (d.std(ddof=1) / np.sqrt(N)))
    unpaired = compare(np_, _series("A", 101.0, 10.0, seed=3))
    assert not unpaired.paired or unpaired.se_diff > 0


def test_identical_series_are_inconclusive_never_a_disagreement() -> None:
    s1, s2 = _series("X", 50.0), _series("Y", 50.0)
    (r,) = evaluate_claims([Claim("order", ("X", "Y"))], [s1, s2])
    assert r.verdict == "inconclusive" and r.comparisons[0].t == 0.0


def test_tiers_within_and_monotone(series: list[Series]) -> None:
    (tiers,) = evaluate_claims(
        [Claim("tiers", ("NP",), above=("A", "B"), where={"epsilon": 1.0})], series
    )
    assert tiers.verdict == "agree" and len(tiers.comparisons) == 2
    within = evaluate_claims([Claim("within", ("A", "NP"), percent=5.0)], series)
    assert [r.verdict for r in within] == ["disagree", "agree"]  # +20 % at eps 1, +1 % at eps 10
    assert "+20.0 %" in within[0].detail
    mono = evaluate_claims([Claim("monotone", ("B",), param="epsilon")], series)
    assert [r.verdict for r in mono] == ["agree"]
    wrong = evaluate_claims(
        [Claim("monotone", ("B",), param="epsilon", direction="increasing")], series
    )
    assert [r.verdict for r in wrong] == ["disagree"]
    missing = evaluate_claims([Claim("order", ("A", "nothing"))], series)
    assert {r.verdict for r in missing} == {"incomplete"}


def test_paper_numbers_ratio_cells_and_table(series: list[Series]) -> None:
    numbers = [
        PaperNumber("A", "final_regret", 60.0, {"epsilon": 1.0}, "Table 1, p. 3"),
        PaperNumber("A", "final_regret", 202.0, {"epsilon": 10.0}, "Table 1, p. 3"),
        PaperNumber("B", "final_regret", 400.0, {"epsilon": 1.0}, "Table 1, p. 3"),
        PaperNumber("NP", "kappa", 18.39, {}, "Table 2"),
    ]
    rows = match_numbers(numbers, series)
    assert [r.ratio for r in rows[:3]] == pytest.approx([2.0, 0.5, 0.5])
    assert rows[3].ours is None and rows[3].ratio is None  # a metric we do not measure
    assert rows[0].ours_se == pytest.approx(1.0 / np.sqrt(N))
    table = render_table(PaperTable(title="T1", columns="epsilon", rows=("A", "B")), rows)
    assert table[0] == "| algorithm | epsilon=1 | epsilon=10 |"
    assert table[2] == "| A | 120 / 60 (2.00) | 101 / 202 (0.50) |"
    assert table[3] == "| B | 200 / 400 (0.50) | - |"


CONFIG = """
name = "known"
horizon = 100
replications = 2
[env]
d = 2
K = 3
[[algorithms]]
name = "linucb"
label = "LinUCB"
[[algorithms]]
name = "uniform"
[[claims]]
kind = "order"
items = ["LinUCB", "uniform"]
text = "LinUCB beats uniform"
[[claims]]
kind = "order"
items = ["uniform", "LinUCB"]
text = "deliberately false"
[[paper_numbers]]
algorithm = "uniform"
value = 10.0
source = "made up"
kind = "prototype"
[[tables]]
title = "T"
[[figures]]
kind = "regret_vs_t"
name = "curves"
"""


def test_report_renders_numbers_tables_and_verdicts() -> None:
    cfg = parse_config(CONFIG)
    assert [c.text for c in cfg.claims] == ["LinUCB beats uniform", "deliberately false"]
    lin, uni = _series("LinUCB", 10.0), _series("uniform", 40.0)
    lin = Series(**{**lin.__dict__, "algorithm": "linucb"})
    uni = Series(**{**uni.__dict__, "algorithm": "uniform"})
    checks = evaluate_claims(cfg.claims, [lin, uni])
    rows = match_numbers(cfg.paper_numbers, [lin, uni])
    text = render_report(cfg, [lin, uni], [Path("curves.png")], checks, None, rows)
    assert "**Claim: LinUCB < uniform** — LinUCB beats uniform" in text
    assert "**Claim: uniform < LinUCB** — deliberately false" in text
    assert "- **all runs**: agree" in text and "- **all runs**: disagree" in text
    assert (
        "| uniform | - | final_regret | 40 ± 0.16 | 10 (T = 100) | prototype | 4.00 | made up |"
        in text
    )
    assert "| uniform | 40 / 10 (4.00) |" in text
    assert "![curves](curves.png)" in text


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            '[[claims]]\nkind = "ordre"\nitems = ["LinUCB", "uniform"]\n',
            "unknown claim kind (did you mean 'order'?)",
        ),
        (
            '[[claims]]\nkind = "order"\nitems = ["LinUCB", "unifrm"]\n',
            'claims[0].items[1] = "unifrm"',
        ),
        ('[[claims]]\nkind = "within"\nitems = ["LinUCB", "uniform"]\n', "claims[0].percent"),
        ('[[claims]]\nkind = "tiers"\nitems = ["LinUCB"]\n', "needs 'above'"),
        ('[claims]\nkind = "order"\n', "write each entry as [[claims]]"),
        ('[[paper_numbers]]\nalgorithm = "LinUCB"\nvalue = "big"\n', "paper_numbers[0].value"),
        ('[[figures]]\nkind = "final_vs_param"\nname = "f"\n', "needs 'x'"),
        ('[[figures]]\nkind = "final_vs_param"\nx = "epsilon"\nerrorbars = "sd"\n', "errorbars"),
        ("[report]\nlevel = 0.7\n", "report.level"),
    ],
)
def test_bad_reproduction_sections_are_named(extra: str, message: str) -> None:
    base = CONFIG.split("[[claims]]")[0]
    with pytest.raises(ConfigError) as exc:
        parse_config(base + extra)
    assert message in str(exc.value)


def test_final_vs_param_plots_what_it_says(series: list[Series], tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    captured: list[Figure] = []
    orig = Figure.savefig

    def spy(self: Figure, *args: object, **kwargs: object) -> None:
        captured.append(self)
        orig(self, *args, **kwargs)  # type: ignore[arg-type]

    Figure.savefig = spy  # type: ignore[method-assign]
    try:
        paths = plot_final_vs_param(
            series,
            tmp_path / "f",
            x="epsilon",
            labels=["A", "B"],
            baselines=["NP"],
            errorbars="ci95",
            logx=True,
            dpi=50,
        )
    finally:
        Figure.savefig = orig  # type: ignore[method-assign]
    assert [p.name for p in paths] == ["f.png", "f.pdf"]
    ax = captured[0].axes[0]
    lines = {
        c.get_label(): c.lines[0] for c in ax.containers
    }  # error-bar lines: (data, caps, bars)
    lines.update(
        {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}
    )
    np.testing.assert_allclose(np.asarray(lines["A"].get_xdata(), dtype=float), [1.0, 10.0])
    np.testing.assert_allclose(np.asarray(lines["A"].get_ydata(), dtype=float), [120.0, 101.0])
    np.testing.assert_allclose(np.asarray(lines["B"].get_ydata(), dtype=float), [200.0, 110.0])
    np.testing.assert_allclose(
        np.asarray(lines["NP (no epsilon)"].get_ydata(), dtype=float), [100.0, 100.0]
    )
    assert ax.get_xscale() == "log"
    bars = {c.get_label(): c.lines[2][0].get_segments() for c in ax.containers}
    a_eps1 = next(s for s in series if s.label == "A" and s.grid["epsilon"] == 1.0)
    half = (
        bars["A"][0][1][1] - 120.0
    )  # upper end of the first bar minus the mean: 1.96 standard errors
    assert half == pytest.approx(1.959963984540054 * a_eps1.final_se)
    with pytest.raises(ValidationError, match="no results for series 'C'"):
        plot_final_vs_param(series, tmp_path / "g", x="epsilon", labels=["C"])


def test_gallery_lists_each_reproduction_with_figure_verdict_and_report(tmp_path: Path) -> None:
    from privbandits.experiments.config import Overrides
    from privbandits.experiments.gallery import reproduce_all, write_gallery

    out = tmp_path / "repro"
    entries = reproduce_all(
        out,
        tmp_path / "r.db",
        names=["demo"],
        quick=True,
        workers=1,
        quiet=True,
        overrides=Overrides(horizon=100, replications=2),
    )
    (entry,) = entries
    assert entry.figures == ("demo/regret.png",) and (out / "demo" / "report.md").exists()
    page = write_gallery(entries, out, quick=True).read_text()
    # at T = 100 the demo's private series are still at uniform play's regret: flagged even with
    # too few runs for a verdict
    assert "| [demo](demo/report.md) | 100 | 2 | claims: 1 too few runs" in page
    assert "no learning detected: " in page
    assert "![demo](demo/regret.png)" in page and "quick mode" in page
    from privbandits.experiments.gallery import preset_dir

    assert (
        preset_dir("han2021-fig5.1-single") == "han2021/fig5.1-single"
        and preset_dir("demo") == "demo"
    )


def test_twins_share_a_hue_and_legends_show_the_accounted_guarantee(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from privbandits.experiments.plots import plot_regret
    from privbandits.privacy.guarantee import PrivacyGuarantee

    private = Series(
        **{
            **_series("LDP-OLS", 50.0).__dict__,
            "algorithm": "ldp-ols",
            "guarantee": PrivacyGuarantee("local", 0.998, 0.01),
        }
    )
    twin = Series(**{**_series("greedy", 10.0).__dict__, "algorithm": "greedy-ols"})
    other = Series(**{**_series("uniform", 90.0).__dict__, "algorithm": "uniform"})
    captured: list[Figure] = []
    orig = Figure.savefig
    Figure.savefig = lambda self, *a, **k: (captured.append(self), orig(self, *a, **k))[1]  # type: ignore[method-assign]
    try:
        plot_regret([private, twin, other], tmp_path / "r", band="se", formats=("png",))
    finally:
        Figure.savefig = orig  # type: ignore[method-assign]
    lines = {ln.get_label(): ln for ln in captured[0].axes[0].get_lines()}
    assert set(lines) == {"LDP-OLS", "greedy", "uniform"}
    (legend,) = captured[0].legends
    assert {t.get_text() for t in legend.get_texts()} == {
        "LDP-OLS [ε=0.998, δ=0.01]",
        "greedy",
        "uniform",
    }
    assert lines["greedy"].get_color() == lines["LDP-OLS"].get_color()
    assert lines["greedy"].get_linestyle() == "--" and lines["uniform"].get_linestyle() == "-"
    assert lines["uniform"].get_color() != lines["greedy"].get_color()
    np.testing.assert_allclose(np.asarray(lines["uniform"].get_ydata(), dtype=float), [45.0, 90.0])
    band = captured[0].axes[0].collections[-1].get_paths()[0].vertices[:, 1]
    assert band.max() == pytest.approx(
        90.0 + 1.0 / np.sqrt(N)
    )  # band = one standard error (sd = 1)


def test_a_reproduction_whose_data_set_is_missing_is_listed_not_run(tmp_path: Path) -> None:
    from privbandits.experiments.gallery import reproduce_all, write_gallery

    (entry,) = reproduce_all(
        tmp_path / "g", tmp_path / "r.db", names=["zheng2020-e5"], quick=True, quiet=True
    )
    assert entry.runs == 0 and entry.verdict.startswith("not run: ") and "ua.base" in entry.verdict
    page = write_gallery([entry], tmp_path / "g").read_text()
    assert "| zheng2020-e5 | - | - | not run: " in page


def test_a_difference_equal_in_every_replication_is_decided_with_infinite_z() -> None:
    """Deterministic pseudo-regret (fixed phases, same eliminations in every replication) differs only by
    rounding across replications: the test sees no noise, not a z of 1e16 or a spurious one."""
    base = np.full(N, 26056.0) + 1e-12 * np.random.default_rng(3).standard_normal(N)
    better = _series("central", 0.0)
    better = Series(**{**better.__dict__, "regret": np.stack([base / 2, base], axis=1)})
    worse = Series(
        **{
            **better.__dict__,
            "label": "local",
            "regret": np.stack([base / 2, base + 21649.0], axis=1),
        }
    )
    same = Series(
        **{
            **better.__dict__,
            "label": "shuffle",
            "regret": np.stack([base / 2, base + 1e-11 * np.arange(N)], axis=1),
        }
    )
    c = compare(better, worse)
    assert c.paired and c.t == np.inf and c.verdict == "agree"
    assert "t = inf" in str(c)
    assert compare(worse, better).verdict == "disagree"
    tie = compare(better, same)
    assert tie.t == 0.0 and tie.verdict == "inconclusive"


def test_stable_claim_checks_adjacent_parameter_values() -> None:
    common = np.random.default_rng(11).standard_normal(N)

    def at(label: str, S: float, mean: float, sd: float = 1.0, seed: int | None = None) -> Series:
        s = _series(label, mean, sd=sd, seed=seed or 0, shared=None if seed else common)
        return Series(**{**s.__dict__, "grid": {"theta_norm": S}, "params": {"theta_norm": S}})

    flat = [at("flat", 2.0, 600.0), at("flat", 2.5, 612.0), at("flat", 3.0, 597.0)]
    steep = [at("steep", 2.0, 300.0), at("steep", 2.5, 540.0), at("steep", 3.0, 1080.0)]
    # 24 % apart, with a standard error of the relative difference of about 30 * sqrt(2 / N) / 100
    noisy = [at("noisy", 2.0, 100.0, sd=30.0, seed=1), at("noisy", 3.0, 124.0, sd=30.0, seed=2)]
    claims = [
        Claim("stable", ("flat",), param="theta_norm", percent=10.0),
        Claim("stable", ("steep",), param="theta_norm", percent=10.0),
        Claim("stable", ("noisy",), param="theta_norm", percent=25.0),
    ]
    res = evaluate_claims(claims, flat + steep + noisy)
    assert [r.verdict for r in res] == ["agree", "disagree", "inconclusive"]
    assert len(res[0].lines()) == 2 and "claimed within ±10 %" in res[0].lines()[0]
    assert "flat stable within 10 % across theta_norm" in res[0].claim.describe()


def test_final_vs_param_draws_one_line_per_other_grid_value(tmp_path: Path) -> None:
    """x = S with an epsilon grid: one line per epsilon, not a zigzag through all points."""
    from matplotlib.figure import Figure

    def at(S: float, eps: float, mean: float) -> Series:
        s = _series("P", mean, eps)
        return Series(**{**s.__dict__, "grid": {"epsilon": eps, "theta_norm": S}})

    series = [at(S, eps, 100.0 * eps + S) for S in (2.0, 3.0) for eps in (1.0, 4.0)]
    captured: list[Figure] = []
    orig = Figure.savefig

    def spy(self: Figure, *args: object, **kwargs: object) -> None:
        captured.append(self)

    Figure.savefig = spy  # type: ignore[method-assign]
    try:
        plot_final_vs_param(series, tmp_path / "s", x="theta_norm", labels=["P"], dpi=50)
    finally:
        Figure.savefig = orig  # type: ignore[method-assign]
    lines = {c.get_label(): c.lines[0] for c in captured[0].axes[0].containers}
    assert set(lines) == {"P (epsilon=1)", "P (epsilon=4)"}
    np.testing.assert_allclose(
        np.asarray(lines["P (epsilon=4)"].get_ydata(), dtype=float), [402.0, 403.0]
    )
