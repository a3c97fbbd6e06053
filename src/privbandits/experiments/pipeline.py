"""Run an experiment end to end: execute (resumably), pool into series, plot, check claims, report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from privbandits.experiments.claims import OrderCheck, check_claimed_order
from privbandits.experiments.config import ExperimentConfig
from privbandits.experiments.runner import RunReport, run_experiment
from privbandits.experiments.store import DEFAULT_DB, ResultsStore
from privbandits.experiments.summary import Series, build_series

__all__ = ["Outcome", "default_out_dir", "run_pipeline"]


@dataclass
class Outcome:
    """Everything a finished pipeline produced."""

    config: ExperimentConfig
    run: RunReport
    series: list[Series]
    figures: list[Path]
    checks: list[OrderCheck]
    report: Path | None


def default_out_dir(db: str | Path, name: str) -> Path:
    """Figures and reports go next to the database: ``<db dir>/<experiment name>/``."""
    return Path(db).parent / name


def run_pipeline(config: ExperimentConfig, db: str | Path = DEFAULT_DB, out: str | Path | None = None, *,
                 workers: int | None = None, scheduler: Any = None, quiet: bool = False,
                 console: Console | None = None, formats: Sequence[str] = ("png", "pdf"),
                 write_markdown: bool = True) -> Outcome:
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
    """
    from privbandits.experiments.plots import plot_regret
    from privbandits.experiments.report import write_report

    with ResultsStore(db) as store:
        run = run_experiment(config, store, workers=workers, scheduler=scheduler, quiet=quiet, console=console)
    series = build_series(run.results)
    out_dir = Path(out) if out is not None else default_out_dir(db, config.name)
    title = config.report.title or config.name
    figures = plot_regret(series, out_dir / "regret", facet=config.plot.facet, band=config.plot.band,
                          logx=config.plot.logx, logy=config.plot.logy, title=title, formats=formats)
    checks = check_claimed_order(config.report.claimed_order, series)
    report = None
    if write_markdown:
        report = write_report(out_dir / "report.md", config, series, figures, checks, run)
    return Outcome(config=config, run=run, series=series, figures=figures, checks=checks, report=report)
