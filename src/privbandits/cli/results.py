"""Commands on stored results: ``plot`` and ``export``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from privbandits.cli._common import (
    DbOpt,
    OutOpt,
    _err,
    _guard,
    _out,
)
from privbandits.core.errors import ValidationError
from privbandits.experiments.store import DEFAULT_DB


def plot(
    db: DbOpt = DEFAULT_DB,
    experiment: Annotated[
        Optional[str],
        typer.Option("--experiment", "-e", help="Experiment name (default: the most recent)."),
    ] = None,
    facet: Annotated[
        Optional[str],
        typer.Option("--facet", help="One panel per value of this parameter, e.g. epsilon."),
    ] = None,
    band: Annotated[
        str,
        typer.Option(
            "--band",
            help="Band: ci95 (95 % interval of the mean), se "
            "(one standard error) or a number of standard deviations.",
        ),
    ] = "ci95",
    logx: Annotated[bool, typer.Option("--logx", help="Logarithmic t axis.")] = False,
    logy: Annotated[bool, typer.Option("--logy", help="Logarithmic regret axis.")] = False,
    loglog: Annotated[bool, typer.Option("--loglog", help="Both axes logarithmic.")] = False,
    horizon: Annotated[
        Optional[int],
        typer.Option(
            "--horizon",
            "-T",
            help="Only units with this horizon (default: that of the newest unit).",
        ),
    ] = None,
    out: OutOpt = None,
) -> None:
    """Plot mean regret curves with a band (95 % interval by default) of a stored experiment (PNG and PDF).

    The figure goes to its own file (``plot-T<horizon>``, then ``-facet-<key>``, ``-logx`` and
    ``-logy`` as they apply), never over a run's figures; without ``--facet`` the grid parameter that varies (if only one does) gets a panel
    per value."""
    from privbandits.experiments.pipeline import default_out_dir
    from privbandits.experiments.plots import plot_regret
    from privbandits.experiments.store import ResultsStore
    from privbandits.experiments.summary import build_series

    with ResultsStore(db, create=False) as store:
        name = experiment or _latest_experiment(store)
        results = store.load(experiment=name)
        if not results:
            known = ", ".join(e[0] for e in store.experiments()) or "none"
            raise ValidationError(
                f"no results for experiment {name!r} in {str(db)!r} (experiments: {known})"
            )
    if horizon is None:
        horizon = max(results, key=lambda r: r.created_at).horizon
    kept = [r for r in results if r.horizon == horizon]
    if not kept:
        raise ValidationError(
            f"experiment {name!r} has no units with horizon {horizon} "
            f"(horizons: {sorted({r.horizon for r in results})})"
        )
    if len(kept) < len(results):
        _err().print(
            f"note: plotting the {len(kept)} units with horizon {horizon}; "
            f"{len(results) - len(kept)} with other horizons left out (--horizon)",
            markup=False,
        )
    series = build_series(kept)
    if facet is None:  # the experiment's own panels: the one grid parameter that varies, if any
        varying = [
            k
            for k in dict.fromkeys(k for s in series for k in s.grid)
            if len({repr(s.grid.get(k)) for s in series}) > 1
        ]
        facet = varying[0] if len(varying) == 1 else None
    lx, ly = logx or loglog, logy or loglog
    # its own file name: never the run's regret.png
    stem = "-".join(
        [
            "plot",
            f"T{horizon}",
            *([f"facet-{facet}"] if facet else []),
            *(["logx"] if lx else []),
            *(["logy"] if ly else []),
        ]
    )
    paths = plot_regret(
        series,
        (out or default_out_dir(db, name)) / stem,
        facet=facet,
        band=_band_option(band),
        logx=lx,
        logy=ly,
        title=name,
    )
    for p in paths:
        _out().print(f"figure: {p}", markup=False, soft_wrap=True)


def _band_option(band: str) -> float | str:
    if band in ("se", "ci95"):
        return band
    try:
        return float(band)
    except ValueError:
        raise ValidationError(
            f"--band {band!r}: give ci95, se or a number of standard deviations >= 0"
        ) from None


def _latest_experiment(store: Any) -> str:
    exps = store.experiments()
    if not exps:
        raise ValidationError(f"the results database {str(store.path)!r} is empty")
    return exps[0][0]


def export(
    db: DbOpt = DEFAULT_DB,
    fmt: Annotated[str, typer.Option("--format", "-f", help="csv or parquet.")] = "csv",
    out: Annotated[
        Optional[Path],
        typer.Option(
            "--out", help="Output file (default: <db dir>/<experiment or results>.<format>)."
        ),
    ] = None,
    experiment: Annotated[
        Optional[str],
        typer.Option("--experiment", "-e", help="Only this experiment (default: all)."),
    ] = None,
) -> None:
    """Export stored results in long format (one row per replication and checkpoint)."""
    from privbandits.experiments.export import export_results
    from privbandits.experiments.store import ResultsStore

    target = out or db.parent / f"{experiment or 'results'}.{fmt}"
    with ResultsStore(db, create=False) as store:
        path, n = export_results(store, target, fmt, experiment)
    _out().print(f"wrote {n} rows to {path}", markup=False, soft_wrap=True)


def register_commands(
    app: typer.Typer, guard: Callable[[Callable[..., Any]], Callable[..., Any]] = _guard
) -> None:
    """Add this group's commands to ``app``."""
    app.command()(guard(plot))
    app.command()(guard(export))
