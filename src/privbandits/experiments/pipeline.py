"""Run an experiment end to end: execute (resumably), pool into series, plot, check claims, report."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from privbandits.experiments.claims import ClaimResult, evaluate_claims
from privbandits.experiments.config import ExperimentConfig, FigureSpec
from privbandits.experiments.paper_numbers import Row, match_numbers
from privbandits.experiments.runner import RunReport, run_experiment
from privbandits.experiments.store import DEFAULT_DB, ResultsStore
from privbandits.experiments.summary import Series, build_series

__all__ = ["Outcome", "default_out_dir", "run_pipeline", "run_reproduction"]


@dataclass
class Outcome:
    """Everything a finished pipeline produced."""

    config: ExperimentConfig
    run: RunReport
    series: list[Series]
    figures: list[Path]
    checks: list[ClaimResult]
    report: Path | None
    paper_rows: list[Row]


def default_out_dir(db: str | Path, name: str, tag: str = "") -> Path:
    """Figures and reports go next to the database: ``<db dir>/<experiment name>/``, and a run with
    command-line overrides (a sweep's ``--grid``, ``--quick``, ``--horizon``, ...) into its own
    ``<db dir>/<experiment name>/<tag>/`` so that it never overwrites another run's report."""
    base = Path(db).parent / name
    return base / tag if tag else base


def run_pipeline(
    config: ExperimentConfig,
    db: str | Path = DEFAULT_DB,
    out: str | Path | None = None,
    *,
    workers: int | None = None,
    scheduler: Any = None,
    quiet: bool = False,
    console: Console | None = None,
    formats: Sequence[str] = ("png", "pdf"),
    write_markdown: bool = True,
    dpi: int | None = None,
) -> Outcome:
    """Run ``config`` (skipping stored units), then write ``regret.<fmt>`` and ``report.md`` to ``out``.

    Parameters
    ----------
    config : ExperimentConfig
        A validated configuration.
    db : path
        Results database.
    out : path, optional
        Output directory (default :func:`default_out_dir`).
    workers, scheduler, quiet, console :
        As for :func:`~privbandits.experiments.runner.run_units`.
    formats : sequence of str
        Figure formats.
    write_markdown : bool
        Also write ``report.md``.
    dpi : int, optional
        Resolution of the PNG figures (default: ``[plot] dpi`` of the configuration).
    """
    from privbandits.experiments.report import write_report

    with ResultsStore(db) as store:
        run = run_experiment(
            config, store, workers=workers, scheduler=scheduler, quiet=quiet, console=console
        )
    series = build_series(run.results)
    out_dir = Path(out) if out is not None else default_out_dir(db, config.name, config.run_tag)
    figures: list[Path] = []
    for spec in figure_specs(config):
        figures += draw_figure(
            spec, config, series, out_dir, formats=formats, dpi=dpi or config.plot.dpi
        )
    checks = evaluate_claims(config.claims, series, config.report.level)
    rows = match_numbers(
        config.paper_numbers,
        series,
        config.env,
        environment_metrics(config),
        horizon=config.horizon,
    )
    report = None
    if write_markdown:
        report = write_report(out_dir / "report.md", config, series, figures, checks, run, rows)
    return Outcome(
        config=config,
        run=run,
        series=series,
        figures=figures,
        checks=checks,
        report=report,
        paper_rows=rows,
    )


def run_reproduction(
    config: Any,
    db: str | Path = DEFAULT_DB,
    out: str | Path | None = None,
    *,
    workers: int | None = None,
    scheduler: Any = None,
    quiet: bool = False,
    console: Console | None = None,
    dpi: int | None = None,
) -> Any:
    """Run a preset of either kind (:func:`~privbandits.experiments.presets.load_reproduction`): a bandit
    experiment through :func:`run_pipeline`, a regression study through
    :func:`~privbandits.experiments.regression_study.run_regression_study` (local workers only)."""
    from privbandits.experiments.regression_study import RegressionStudy, run_regression_study

    if isinstance(config, RegressionStudy):
        return run_regression_study(
            config, db, out, workers=workers, quiet=quiet, console=console, dpi=dpi or 150
        )
    return run_pipeline(
        config, db, out, workers=workers, scheduler=scheduler, quiet=quiet, console=console, dpi=dpi
    )


def environment_metrics(config: ExperimentConfig) -> dict[str, Callable[[Series], float]]:
    """Metrics of the problem instance a reported number may refer to: ``kappa`` / ``kappa_star``
    (Sarmasarkar 2026, eqs. (3)-(4): 1 / min and 1 / max of mu' over the arms drawn, averaged over
    the replications of every seed), computed only when a reported number asks for them, for each
    environment variant of ``[env] grid`` (a series gets the value of its variant)."""
    wanted = {n.metric for n in config.paper_numbers} & {"kappa", "kappa_star"}
    if not wanted:
        return {}
    from privbandits.envs.kappa import instance_kappa
    from privbandits.experiments.units import build_env

    by_variant: dict[str, dict[str, float]] = {}
    for env, values in config.env_variants():
        collected: dict[str, list[float]] = {k: [] for k in wanted}
        for seed in config.seeds:
            k = instance_kappa(build_env(env), config.horizon, config.replications, seed)
            for key in wanted:
                collected[key] += list(k[key])
        by_variant[_variant_key(values)] = {key: float(np.mean(v)) for key, v in collected.items()}
    keys = tuple(config.env_grid)
    return {key: functools.partial(_of_variant, by_variant, keys, key) for key in wanted}


def _variant_key(values: Mapping[str, Any]) -> str:
    return repr(sorted(values.items()))


def _of_variant(
    by_variant: dict[str, dict[str, float]], keys: tuple[str, ...], metric: str, series: Series
) -> float:
    return by_variant[_variant_key({k: series.grid[k] for k in keys})][metric]


def figure_specs(config: ExperimentConfig) -> tuple[FigureSpec, ...]:
    """The configured figures, or one regret-vs-t figure from ``[plot]``."""
    if config.figures:
        return config.figures
    p = config.plot
    return (
        FigureSpec(
            kind="regret_vs_t", name="regret", facet=p.facet, band=p.band, logx=p.logx, logy=p.logy
        ),
    )


def _shape(config: ExperimentConfig) -> str:
    env = config.env
    dims = ", ".join(f"{k} = {env[k]}" for k in ("d", "K") if k in env)
    runs = config.replications * len(config.seeds)
    shape = ", ".join(x for x in (dims, config.horizon_text(","), f"{runs} runs per series") if x)
    if config.reduced:  # a title that names the paper's T must not pass a quick run for a full one
        what = "QUICK RUN" if config.quick else "REDUCED RUN"
        shape = (
            f"{what}: {shape} (the experiment declares {config.horizon_text(',', declared=True)})"
        )
    return shape


def draw_figure(
    spec: FigureSpec,
    config: ExperimentConfig,
    series: Sequence[Series],
    out_dir: Path,
    *,
    formats: Sequence[str] = ("png", "pdf"),
    dpi: int = 150,
) -> list[Path]:
    """Draw one configured figure of ``series`` into ``out_dir / spec.name``."""
    from privbandits.experiments.plots import plot_final_vs_param, plot_regret

    title = f"{spec.title or config.report.title or config.name}\n{_shape(config)}"
    common: dict[str, Any] = {
        "logx": spec.logx,
        "logy": spec.logy,
        "title": title,
        "formats": formats,
        "dpi": dpi,
    }
    if spec.kind == "regret_vs_t":
        return plot_regret(series, out_dir / spec.name, facet=spec.facet, band=spec.band, **common)
    return plot_final_vs_param(
        series,
        out_dir / spec.name,
        x=spec.x or "",
        labels=spec.series,
        baselines=spec.baselines,
        errorbars=spec.errorbars,
        **common,
    )
