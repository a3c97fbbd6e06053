"""Series pooling, regret plots, claimed-order checks and the markdown report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from privbandits.core.errors import ValidationError
from privbandits.experiments.claims import evaluate_claims
from privbandits.experiments.config import parse_config
from privbandits.experiments.plots import plot_regret, regret_figure
from privbandits.experiments.report import render_report
from privbandits.experiments.runner import run_units
from privbandits.experiments.store import ResultsStore
from privbandits.experiments.summary import build_series

from .conftest import SMALL

GRID = (
    SMALL.replace('name = "linucb"\n', 'name = "linucb"\ngrid = { alpha = [0.2, 1.0] }\n')
    + """
[report]
title = "Small"
claimed_order = ["LinUCB", "uniform"]
claims = "LinUCB beats uniform."
"""
)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory):
    cfg = parse_config(GRID)
    with ResultsStore(tmp_path_factory.mktemp("plots") / "r.db") as store:
        report = run_units(cfg.units(), store, workers=1, quiet=True)
    return cfg, report


def test_series_pool_all_replications_of_all_seeds(stored) -> None:
    cfg, report = stored
    series = build_series(report.results)
    assert [s.name for s in series] == ["LinUCB (alpha=0.2)", "LinUCB (alpha=1)", "uniform"]
    uni = series[-1]
    units = [r for r in report.results if r.label == "uniform"]
    stacked = np.concatenate([r.regret for r in sorted(units, key=lambda r: r.seed)])
    assert uni.seeds == (0, 1) and uni.n == 2 * cfg.replications
    np.testing.assert_array_equal(uni.regret, stacked)
    mean, std = uni.curve()
    np.testing.assert_allclose(mean, stacked.mean(axis=0))
    np.testing.assert_allclose(std, stacked.std(axis=0, ddof=1))
    assert uni.final_std == pytest.approx(stacked[:, -1].std(ddof=1))
    assert uni.final_se == pytest.approx(uni.final_std / np.sqrt(6))


def test_plot_draws_each_series_mean_and_band_per_facet_panel(stored) -> None:
    """The figure holds, per facet value, one line per series at exactly its checkpoints and mean
    regret, and a band spanning mean -/+ band x std at every checkpoint."""
    series = build_series(stored[1].results)
    fig = regret_figure(series, facet="alpha", band=0.5, logx=True, logy=True, title="t")
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["alpha=0.2", "alpha=1"]
    for ax, alpha in zip(axes, (0.2, 1.0)):
        assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
        members = [s for s in series if s.grid.get("alpha", alpha) == alpha]  # uniform joins both
        assert [ln.get_label() for ln in ax.get_lines()] == [s.label for s in members]
    # one legend for the whole figure, each series once (non-private series: their plain label)
    (legend,) = fig.legends
    assert sorted(t.get_text() for t in legend.get_texts()) == sorted({s.label for s in series})
    for ax, alpha in zip(axes, (0.2, 1.0)):
        members = [s for s in series if s.grid.get("alpha", alpha) == alpha]
        assert len(ax.collections) == len(members)
        for ln, s, band in zip(ax.get_lines(), members, ax.collections):
            mean, std = s.curve()
            np.testing.assert_array_equal(ln.get_xdata(), s.checkpoints)
            np.testing.assert_array_equal(ln.get_ydata(), mean)
            # the band polygon's vertices: its y-range at each checkpoint is mean -/+ 0.5 std
            verts = band.get_paths()[0].vertices
            for t, m, sd in zip(s.checkpoints, mean, std):
                ys = verts[verts[:, 0] == t, 1]
                assert ys.min() == pytest.approx(m - 0.5 * sd) and ys.max() == pytest.approx(
                    m + 0.5 * sd
                )
    assert "band: ± 0.5 standard deviation across replications" in fig.get_suptitle()
    assert fig.get_suptitle().startswith("t\n")
    no_band = regret_figure(series, band=0.0)
    (ax,) = no_band.axes
    assert not ax.collections and len(ax.get_lines()) == len(series)
    assert (ax.get_xscale(), ax.get_yscale()) == ("linear", "linear")


def test_plot_files_hold_the_drawn_figure(stored, tmp_path: Path) -> None:
    import matplotlib.image

    series = build_series(stored[1].results)
    paths = plot_regret(
        series,
        tmp_path / "fig" / "regret",
        facet="alpha",
        band=0.5,
        logx=True,
        logy=True,
        title="t",
    )
    assert [p.name for p in paths] == ["regret.png", "regret.pdf"]
    # two panels of 5.0 x 3.8 inches at 150 dpi, grown (never cropped) to hold title and legend
    h, w = matplotlib.image.imread(paths[0]).shape[:2]
    assert (
        round(3.8 * 150) <= h <= 1.15 * 3.8 * 150
        and round(2 * 5.0 * 150) <= w <= 1.15 * 2 * 5.0 * 150
    )
    assert paths[1].read_bytes()[:5] == b"%PDF-"
    one = plot_regret(series, tmp_path / "single", formats=("png",))
    assert [p.name for p in one] == ["single.png"]
    h, w = matplotlib.image.imread(one[0]).shape[:2]
    assert round(3.8 * 150) <= h <= 1.15 * 3.8 * 150 and round(5.0 * 150) <= w <= 1.15 * 5.0 * 150


def test_plot_errors(stored, tmp_path: Path) -> None:
    series = build_series(stored[1].results)
    with pytest.raises(
        ValidationError, match="facet 'epsilon' is not a parameter of any result; available: alpha"
    ):
        plot_regret(series, tmp_path / "x", facet="epsilon")
    with pytest.raises(ValidationError, match="band must lie in"):
        plot_regret(series, tmp_path / "x", band=-1.0)
    with pytest.raises(ValidationError, match="nothing to plot"):
        plot_regret([], tmp_path / "x")


def test_claimed_order_checked_per_cell(stored) -> None:
    cfg, report = stored
    series = build_series(report.results)
    checks = evaluate_claims(cfg.claims, series)  # claimed_order = ["LinUCB", "uniform"]
    assert [c.cell for c in checks] == [{"alpha": 0.2}, {"alpha": 1.0}]  # uniform joins every cell
    for chk in checks:
        (pair,) = chk.comparisons
        assert chk.agree and pair.verdict == "agree" and pair.t > 5 and pair.paired
        lin = next(s for s in series if s.label == "LinUCB" and s.grid == chk.cell)
        uni = next(s for s in series if s.label == "uniform")
        assert pair.mean_better == pytest.approx(lin.final_mean)
        d = uni.final - lin.final  # same seeds and replications: paired over common random numbers
        assert pair.se_diff == pytest.approx(d.std(ddof=1) / np.sqrt(d.size))
    reversed_ = evaluate_claims(
        [type(cfg.claims[0])(kind="order", items=("uniform", "LinUCB"))], series
    )
    assert all(c.verdict == "disagree" for c in reversed_) and all(
        p.t < -5 for c in reversed_ for p in c.comparisons
    )
    assert "disagree" in str(reversed_[0].comparisons[0])


def test_report_contents(stored) -> None:
    cfg, report = stored
    series = build_series(report.results)
    checks = evaluate_claims(cfg.claims, series)
    text = render_report(cfg, series, [Path("regret.png"), Path("regret.pdf")], checks, report)
    assert text.startswith("# Small")
    assert (
        "| algorithm | trust model | preset | guarantee | final regret | n | wall time (s) |"
        in text
    )
    uni = series[-1]
    assert (
        f"| uniform | none | - | non-private | {uni.final_mean:.4g} ± {uni.final_std:.3g} | 6 |"
        in text
    )
    assert uni.final_mean < 1e4  # (plain %g formatting applies below 1e4)
    assert "![regret](regret.png)" in text and "LinUCB beats uniform." in text
    assert "- **alpha=0.2**: agree" in text and "- **alpha=1**: agree" in text
    assert '"horizon": 300' in text  # the configuration is recorded
    from privbandits import __version__

    assert f"UTC by privbandits {__version__}." in text  # the library version is recorded


def test_report_states_the_rows_a_data_file_lost(tmp_path: Path) -> None:
    """A CSV with one row missing a value, read with na = "drop": the report says how many rows were
    dropped (nothing is dropped silently)."""
    pytest.importorskip("sklearn")
    from privbandits.experiments.config import parse_config
    from privbandits.experiments.pipeline import run_pipeline

    rows = ["x,y,label"] + [f"{i % 7},{(i * 3) % 5},{'ab'[i % 2]}" for i in range(40)]
    rows[5] = "3,,a"
    data = tmp_path / "d.csv"
    data.write_text("\n".join(rows) + "\n")
    cfg = parse_config(
        f'''
horizon = 50
replications = 2
[env]
kind = "supervised"
path = "{data}"
label = "label"
na = "drop"
[[algorithms]]
name = "uniform"
''',
        source="t.toml",
    )
    out = run_pipeline(cfg, tmp_path / "r.db", tmp_path / "out", quiet=True, formats=("png",))
    text = out.report.read_text()
    assert "1 row(s) with missing values dropped from the data" in text


def test_many_series_get_distinct_styles_and_one_legend_entry_each() -> None:
    """Sixteen series over two panels: every (colour, marker) pair distinct, each name once in the
    legend with the accounted guarantee of each panel (the colours cycle after ten)."""
    from privbandits.experiments.summary import Series
    from privbandits.privacy.guarantee import PrivacyGuarantee

    t = np.array([10.0, 100.0])
    series = [
        Series(
            label=f"alg{i}",
            algorithm=f"alg{i}",
            grid={"epsilon": eps},
            params={"epsilon": eps},
            horizon=100,
            trust_model="local",
            preset="strict",
            guarantee=PrivacyGuarantee("local", eps, 0.0),
            seeds=(0,),
            checkpoints=t,
            regret=np.array([[1.0, 2.0 + i], [1.5, 2.5 + i]]),
            wall_time=0.0,
        )
        for eps in (0.3, 1.0)
        for i in range(16)
    ]
    fig = regret_figure(series, facet="epsilon", band=0)
    styles = {
        (ln.get_label(), ln.get_color(), ln.get_marker())
        for ax in fig.axes
        for ln in ax.get_lines()
    }
    assert len({(c, m) for _, c, m in styles}) == 16 == len({lab for lab, _, _ in styles})
    (legend,) = fig.legends
    texts = [x.get_text() for x in legend.get_texts()]
    assert len(texts) == 16 and texts[0] == "alg0 [ε=0.3 | ε=1]"


def test_panels_name_theta_norm_as_the_papers_s() -> None:
    """A figure faceted by ``theta_norm`` titles its panels with the papers' symbol S (Sarmasarkar
    Table 2), and a report table with that column says S too."""
    from privbandits.experiments.summary import Series, axis_name
    from privbandits.privacy.guarantee import NON_PRIVATE

    t = np.array([10.0, 100.0])
    series = [
        Series(
            label="a",
            algorithm="a",
            grid={"theta_norm": s},
            params={},
            horizon=100,
            trust_model="none",
            preset="none",
            guarantee=NON_PRIVATE,
            seeds=(0,),
            checkpoints=t,
            regret=np.array([[1.0, 2.0]]),
            wall_time=0.0,
        )
        for s in (2.0, 2.5)
    ]
    fig = regret_figure(series, facet="theta_norm", band=0)
    assert [ax.get_title() for ax in fig.axes] == ["S=2", "S=2.5"]
    assert axis_name("epsilon") == "epsilon"


def test_up_to_twenty_series_get_distinct_colours() -> None:
    """Fifteen series in one panel (Sarmasarkar Figure 1(b)): every series its own colour, not only
    its own (colour, marker) pair."""
    from privbandits.experiments.summary import Series
    from privbandits.privacy.guarantee import NON_PRIVATE

    t = np.array([10.0, 100.0])
    series = [
        Series(
            label=f"alg{i}",
            algorithm=f"alg{i}",
            grid={},
            params={},
            horizon=100,
            trust_model="none",
            preset="none",
            guarantee=NON_PRIVATE,
            seeds=(0,),
            checkpoints=t,
            regret=np.array([[1.0, 2.0 + i], [1.5, 2.5 + i]]),
            wall_time=0.0,
        )
        for i in range(20)
    ]
    fig = regret_figure(series, band=0)
    (ax,) = fig.axes
    assert len({ln.get_color() for ln in ax.get_lines()}) == 20
