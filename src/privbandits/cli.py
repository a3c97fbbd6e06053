"""The ``privbandits`` command-line tool (typer + rich).

Commands: ``demo``, ``run``, ``sweep``, ``reproduce``, ``plot``, ``export``, ``list``, ``audit``.
Every :class:`~privbandits.core.errors.PrivbanditsError` is reported as one red line
``error: ...`` with exit code 2 (never a traceback); Ctrl-C exits with code 130 after the finished
work units have been stored, and rerunning the same command resumes.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import warnings
from collections.abc import Callable, Sequence
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Annotated, Any, Optional, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from privbandits.core.errors import PrivbanditsError, ValidationError
from privbandits.experiments.overrides import option_flags, option_help
from privbandits.experiments.store import DEFAULT_DB
from privbandits.service.cli import register_commands

app = typer.Typer(
    name="privbandits",
    help="Differentially private contextual bandits: run, sweep, reproduce, plot, export, audit.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

F = TypeVar("F", bound=Callable[..., Any])

# -- shared options ----------------------------------------------------------------------------
DbOpt = Annotated[Path, typer.Option("--db", help="Results database (SQLite).")]
OutOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--out", help="Output directory for figures and report (default: <db dir>/<experiment>)."
    ),
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bar or status messages.")
]
WorkersOpt = Annotated[
    Optional[int],
    typer.Option(
        "--workers",
        "-w",
        help="Local worker processes (default: min(2, CPUs)); 1 runs in this process.",
    ),
]
SchedulerOpt = Annotated[
    Optional[str],
    typer.Option(
        "--scheduler",
        help="Dask scheduler address, e.g. tcp://host:8786 (needs the cluster extra).",
    ),
]
# options overriding a key of the experiment file: flags and help from the key's declaration
HorizonOpt = Annotated[
    Optional[int], typer.Option(*option_flags("horizon"), help=option_help("horizon"))
]
ReplicationsOpt = Annotated[
    Optional[int], typer.Option(*option_flags("replications"), help=option_help("replications"))
]
SeedOpt = Annotated[Optional[int], typer.Option(*option_flags("seeds"), help=option_help("seeds"))]
PresetOpt = Annotated[
    Optional[str], typer.Option(*option_flags("preset"), help=option_help("preset"))
]
EngineOpt = Annotated[
    Optional[str], typer.Option(*option_flags("engine"), help=option_help("engine"))
]
QuickOpt = Annotated[
    bool, typer.Option("--quick", help="Apply the overrides in the config's quick table.")
]
ImportOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--import",
        "-I",
        help="Import MODULE first (repeatable), so that the algorithms it registers can be named; "
        "imported again in every worker.",
    ),
]


def _import(modules: Sequence[str] | None) -> tuple[str, ...]:
    """Import the ``--import`` modules in this process; returns them for the work units."""
    from privbandits.algorithms.registry import import_modules

    mods = tuple(modules or ())
    import_modules(mods)
    return mods


def _out() -> Console:
    return Console(highlight=False)


def _err() -> Console:
    return Console(stderr=True, highlight=False)


def _guard(fn: F) -> F:
    """Turn library errors into one red line and exit code 2; Ctrl-C into exit code 130."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with warnings.catch_warnings():
                warnings.showwarning = functools.partial(_show_warning, set())
                return fn(*args, **kwargs)
        except PrivbanditsError as exc:
            msg = " ".join(str(exc).split())
            _err().print(f"error: {msg}", style="bold red", markup=False, soft_wrap=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            _err().print(
                "interrupted: finished work units are stored; rerun the same command to resume",
                style="yellow",
                markup=False,
                soft_wrap=True,
            )
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def _show_warning(
    shown: set[str],
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Library warnings as one yellow line each (no source line), every distinct text once per command."""
    text = " ".join(str(message).split())
    if text in shown:
        return
    shown.add(text)
    _err().print(f"warning: {text}", style="yellow", markup=False, soft_wrap=True)


# -- rendering ---------------------------------------------------------------------------------
def _add_row(table: Table, *cells: str) -> None:
    """Add a row of plain text (no rich markup: guarantees contain brackets such as "[local, per user]")."""
    table.add_row(*(Text(str(c)) for c in cells))


def _regret_table(series: Sequence[Any], title: str) -> Table:
    from privbandits.experiments.report import regret_table_rows

    rows = regret_table_rows(series)
    no_presets = all(row["preset"] == "-" for row in rows)
    for row, s in zip(rows, series):
        model = row.pop("trust model")
        # compact accounted guarantee and trust model (the full statement is in report.md / explain)
        row["guarantee"] = (
            f"{s.guarantee.short()} ({model})" if s.guarantee.is_private else "non-private"
        )
        del row["wall time (s)"]
        if no_presets:
            del row["preset"]
    table = Table(title=title, title_justify="left")
    for col in rows[0] if rows else {"algorithm": ""}:
        table.add_column(
            col,
            justify="right" if col in ("final regret", "n") else "left",
            overflow="fold",
            ratio=2 if col == "algorithm" else None,
        )
    for row in rows:
        _add_row(table, *row.values())
    return table


def _print_outcome(outcome: Any, *, show_report: bool = True) -> None:
    from privbandits.experiments.regression_study import RegressionOutcome

    out = _out()
    if isinstance(outcome, RegressionOutcome):  # a regression study: its summary, figure and report
        study = outcome.config
        out.print(
            f"{study.name}: {study.n_cells} cells x {study.replications} seeds "
            f"({outcome.executed} units run, {outcome.skipped} stored)",
            markup=False,
        )
        for line in outcome.summary:
            out.print(f"  {line}", markup=False, soft_wrap=True)
        for path in outcome.figures:
            out.print(f"figure: {path}", markup=False, soft_wrap=True)
        if show_report and outcome.report is not None:
            out.print(f"report: {outcome.report}", markup=False, soft_wrap=True)
        return
    cfg = outcome.config
    n_runs = cfg.replications * len(cfg.seeds)
    out.print(
        _regret_table(
            outcome.series,
            f"Final cumulative regret at T = {cfg.horizon} (mean ± std over {n_runs} runs per row)",
        )
    )
    styles = {
        "agree": "green",
        "disagree": "red",
        "inconclusive": "yellow",
        "incomplete": "yellow",
        "too few runs": "yellow",
    }
    for chk in outcome.checks:
        out.print(f"claim {chk.claim.describe()} ({chk.cell_name}): ", end="", markup=False)
        out.print(chk.verdict, style=styles[chk.verdict])
        for line in chk.lines():
            out.print(f"  {line}", markup=False)
    for row in outcome.paper_rows:
        ratio = "n/a" if row.ratio is None else f"{row.ratio:.2f}"
        out.print(
            f"paper {row.number.source or ''}: {row.number.algorithm} {dict(row.number.where) or ''} "
            f"{row.number.metric} = {row.number.value:g}, ours / paper = {ratio}",
            markup=False,
        )
    for path in outcome.figures:
        out.print(f"figure: {path}", markup=False, soft_wrap=True)
    if show_report and outcome.report is not None:
        out.print(f"report: {outcome.report}", markup=False, soft_wrap=True)


def _overrides(
    quick: bool = False,
    horizon: int | None = None,
    replications: int | None = None,
    seed: int | None = None,
    preset: str | None = None,
    grid: dict[str, list[Any]] | None = None,
    engine: str | None = None,
    data: Path | None = None,
    imports: Sequence[str] = (),
) -> Any:
    from privbandits.experiments.config import Overrides

    return Overrides(
        quick=quick,
        horizon=horizon,
        replications=replications,
        seeds=None if seed is None else [seed],
        preset=preset,
        grid=grid,
        engine=engine,
        data=None if data is None else str(data),
        imports=_import(imports),
    )


def _run_config(
    config: Any, db: Path, out: Path | None, workers: int | None, scheduler: str | None, quiet: bool
) -> None:
    from privbandits.experiments.pipeline import run_pipeline

    outcome = run_pipeline(
        config, db, out, workers=workers, scheduler=scheduler, quiet=quiet, console=_err()
    )
    _print_outcome(outcome)


# -- commands ----------------------------------------------------------------------------------
@app.command()
@_guard
def demo(
    db: DbOpt = DEFAULT_DB,
    out: OutOpt = None,
    quiet: QuietOpt = False,
    horizon: HorizonOpt = None,
    replications: ReplicationsOpt = None,
    workers: WorkersOpt = None,
) -> None:
    """Short comparison of the algorithms on synthetic data: progress bar, regret table, PNG plot."""
    from privbandits.experiments.pipeline import run_pipeline
    from privbandits.experiments.presets import load_preset

    config = load_preset("demo", _overrides(horizon=horizon, replications=replications))
    outcome = run_pipeline(
        config,
        db,
        out,
        workers=workers,
        quiet=quiet,
        console=_err(),
        formats=("png",),
        write_markdown=False,
    )
    _print_outcome(outcome, show_report=False)


@app.command()
@_guard
def run(
    config: Annotated[Path, typer.Argument(help="Experiment TOML file.")],
    db: DbOpt = DEFAULT_DB,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    quiet: QuietOpt = False,
    out: OutOpt = None,
    quick: QuickOpt = False,
    horizon: HorizonOpt = None,
    replications: ReplicationsOpt = None,
    seed: SeedOpt = None,
    preset: PresetOpt = None,
    engine: EngineOpt = None,
    imports: ImportOpt = None,
) -> None:
    """Run a TOML experiment (algorithms x parameters x seeds); resumes where a previous run stopped."""
    from privbandits.experiments.config import load_config

    cfg = load_config(
        config,
        _overrides(
            quick, horizon, replications, seed, preset, engine=engine, imports=imports or ()
        ),
    )
    _run_config(cfg, db, out, workers, scheduler, quiet)


@app.command()
@_guard
def sweep(
    config: Annotated[Path, typer.Argument(help="Experiment TOML file.")],
    grid: Annotated[
        list[str],
        typer.Option(
            "--grid",
            "-g",
            help="KEY=V1,V2,... (repeatable); replaces "
            "every value of KEY in the config (its global grid and "
            "each entry's grid and params).",
        ),
    ],
    db: DbOpt = DEFAULT_DB,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    quiet: QuietOpt = False,
    out: OutOpt = None,
    quick: QuickOpt = False,
    horizon: HorizonOpt = None,
    replications: ReplicationsOpt = None,
    seed: SeedOpt = None,
    preset: PresetOpt = None,
    engine: EngineOpt = None,
    imports: ImportOpt = None,
) -> None:
    """Run a TOML experiment with a parameter grid given on the command line."""
    from privbandits.experiments.config import load_config, parse_grid_option

    cfg = load_config(
        config,
        _overrides(
            quick,
            horizon,
            replications,
            seed,
            preset,
            parse_grid_option(grid),
            engine,
            imports=imports or (),
        ),
    )
    _run_config(cfg, db, out, workers, scheduler, quiet)


@app.command()
@_guard
def reproduce(
    name: Annotated[Optional[str], typer.Argument(help="Shipped experiment (see --list).")] = None,
    list_: Annotated[
        bool, typer.Option("--list", help="List the shipped experiments and exit.")
    ] = False,
    all_: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Run every reproduction preset into "
            "<out>/<paper>/<figure>/ and write the gallery "
            "<out>/README.md.",
        ),
    ] = False,
    match: Annotated[
        Optional[list[str]],
        typer.Option(
            "--match",
            help="With --all: only presets matching this glob, e.g. 'han2021-*' (repeatable).",
        ),
    ] = None,
    quick: QuickOpt = False,
    horizon: HorizonOpt = None,
    replications: ReplicationsOpt = None,
    seed: SeedOpt = None,
    preset: PresetOpt = None,
    quiet: QuietOpt = False,
    out: OutOpt = None,
    db: DbOpt = DEFAULT_DB,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    engine: EngineOpt = None,
    dpi: Annotated[
        Optional[int],
        typer.Option(
            "--dpi", min=20, max=1200, help="PNG resolution (default: the preset's, 150)."
        ),
    ] = None,
    data: Annotated[
        Optional[Path],
        typer.Option(
            "--data",
            help="Data file the preset's environment "
            "reads (sets [env] path), e.g. the CPRM-12-001 CSV "
            "for han2021-autoloan.",
        ),
    ] = None,
) -> None:
    """Reproduce a paper's experiment from a preset; writes PNG + PDF figures and report.md."""
    from privbandits.experiments.pipeline import run_reproduction
    from privbandits.experiments.presets import available_presets, load_reproduction

    if list_:
        _out().print(_presets_table(available_presets()))
        return
    overrides = _overrides(quick, horizon, replications, seed, preset, engine=engine, data=data)
    if all_:
        if data is not None:
            raise ValidationError("--data applies to one preset NAME, not to --all")
        if name:
            raise ValidationError("give either a preset NAME or --all, not both")
        from privbandits.experiments.gallery import reproduce_all, write_gallery

        root = out or Path(db).parent / "reproductions"
        import fnmatch

        names = None
        if match:
            names = [n for n in available_presets() if any(fnmatch.fnmatch(n, m) for m in match)]
            if not names:
                raise ValidationError(
                    f"--match {' '.join(match)}: no preset matches; "
                    f"presets: {', '.join(available_presets())}"
                )
        entries = reproduce_all(
            root,
            db,
            names=names,
            quick=quick,
            overrides=overrides,
            workers=workers,
            scheduler=scheduler,
            quiet=quiet,
            dpi=dpi,
            on_done=lambda n, o: _print_outcome(o),
        )
        import shlex
        import sys

        command = "privbandits " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        _out().print(
            f"gallery: {write_gallery(entries, root, quick=quick, command=command)}",
            markup=False,
            soft_wrap=True,
        )
        return
    if not name:
        raise ValidationError(
            "give a shipped experiment NAME or --all (privbandits reproduce --list shows them)"
        )
    cfg = load_reproduction(name, overrides)
    outcome = run_reproduction(
        cfg, db, out, workers=workers, scheduler=scheduler, quiet=quiet, console=_err(), dpi=dpi
    )
    _print_outcome(outcome)


@app.command()
@_guard
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

    The figure goes to its own file (``plot-T<horizon>[-facet-<key>][-logx][-logy]``), never over a
    run's figures; without ``--facet`` the grid parameter that varies (if only one does) gets a panel
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


@app.command()
@_guard
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


@app.command("list")
@_guard
def list_(imports: ImportOpt = None) -> None:
    """List the registered algorithms (paper, trust model, settings, reward links) and the presets."""
    from privbandits.algorithms import available

    _import(imports)
    from privbandits.experiments.presets import available_presets

    table = Table(title="Algorithms", title_justify="left")
    for col in ("name", "paper", "trust model", "settings", "links", "presets"):
        table.add_column(col, overflow="fold")
    for name, cls in available().items():
        has_preset = "preset" in inspect.signature(cls.__init__).parameters
        _add_row(
            table,
            name,
            cls.paper,
            cls.trust_model,
            ", ".join(cls.settings),
            ", ".join(cls.links),
            "strict, paper, authors_code" if has_preset else "-",
        )
    out = _out()
    out.print(table)
    out.print(_presets_table(available_presets()))


def _presets_table(presets: dict[str, str]) -> Table:
    table = Table(title="Shipped experiments (privbandits reproduce NAME)", title_justify="left")
    table.add_column("name", overflow="fold")
    table.add_column("description", overflow="fold")
    for name, text in presets.items():
        _add_row(table, name, text)
    return table


@app.command()
@_guard
def datasets(
    action: Annotated[
        str, typer.Argument(help="list (every registered data set) or describe NAME.")
    ],
    name: Annotated[
        Optional[str], typer.Argument(help="Data set to describe (see datasets list).")
    ] = None,
    path: Annotated[
        Optional[str], typer.Option("--path", help="File of the 'file' data set (CSV or Parquet).")
    ] = None,
    label: Annotated[Optional[str], typer.Option("--label", help="Class column of --path.")] = None,
    na: Annotated[
        Optional[str],
        typer.Option("--na", help="Missing values in --path: error (default) or drop (counted)."),
    ] = None,
    data_home: Annotated[
        Optional[str],
        typer.Option("--data-home", help="Cache directory of the downloadable data sets."),
    ] = None,
) -> None:
    """List the registered real data sets, or describe one: n, d, K, class balance, the best fixed
    policies' rewards, source and licence (``describe`` loads the data)."""
    from privbandits.envs.datasets.catalog import LIST_COLUMNS, describe_rows, list_rows

    if action == "list":
        if name is not None:
            raise ValidationError(
                f"datasets list takes no NAME (got {name!r}); use datasets describe {name}"
            )
        table = Table(title="Data sets (privbandits datasets describe NAME)", title_justify="left")
        for col in LIST_COLUMNS:
            table.add_column(col, overflow="fold")
        for row in list_rows():
            _add_row(table, *row)
    elif action == "describe":
        if name is None:
            raise ValidationError("datasets describe needs a NAME (see privbandits datasets list)")
        options = {"path": path, "label": label, "na": na, "data_home": data_home}
        table = Table(title=f"Data set {name}", title_justify="left")
        table.add_column("field")
        table.add_column("value", overflow="fold")
        for row in describe_rows(name, **options):
            _add_row(table, *row)
    else:
        raise ValidationError(f"datasets action must be 'list' or 'describe', got {action!r}")
    _out().print(table)


@app.command()
@_guard
def explain(
    algorithm: Annotated[str, typer.Argument(help="Registered algorithm (see privbandits list).")],
    param: Annotated[
        Optional[list[str]],
        typer.Option(
            "--param", "-p", help="KEY=VALUE constructor argument (repeatable), e.g. epsilon=1."
        ),
    ] = None,
    d: Annotated[int, typer.Option("--d", min=1, help="Feature dimension of the problem.")] = 5,
    K: Annotated[int, typer.Option("--K", min=1, help="Arms per round.")] = 10,
    horizon: Annotated[
        int, typer.Option("--horizon", "-T", min=1, help="Horizon T (users).")
    ] = 10_000,
    setting: Annotated[str, typer.Option("--setting", help="single or multi.")] = "single",
    imports: ImportOpt = None,
) -> None:
    """Print an algorithm's full calibration on a problem: what is clipped, what noise, which
    composition, and the accounted guarantee (computed from the noise it adds)."""
    import json

    from privbandits.algorithms import make
    from privbandits.core.spec import EnvSpec
    from privbandits.experiments.config import parse_grid_option

    _import(imports)
    params = {k: v[0] for k, v in parse_grid_option(param or []).items()}
    spec = EnvSpec(d=d, K=K, setting=setting, horizon=horizon)
    alg = make(algorithm, **params)
    from privbandits.algorithms.calibration import warn_if_not_strict

    cal = alg.calibrate(spec)
    warn_if_not_strict(algorithm, cal)  # printed as one line by the command guard
    out = _out()
    g = cal.guarantee
    out.print(
        f"{algorithm} ({type(alg).paper or 'no paper'}), trust model: {type(alg).trust_model}",
        markup=False,
    )
    out.print(
        f"problem: d = {d}, K = {K}, T = {horizon}, setting = {setting}, contexts ||x|| <= "
        f"{spec.context_bound:g}, rewards clipped to [{spec.reward_range[0]:g}, {spec.reward_range[1]:g}]",
        markup=False,
    )
    out.print(
        f"parameters: {json.dumps(alg.get_params(), default=str)}", markup=False, soft_wrap=True
    )
    if cal.requested is not None:
        out.print(
            f"requested: epsilon = {cal.requested[0]:g}, delta = {cal.requested[1]:g}; "
            f"calibration preset: {cal.preset}",
            markup=False,
        )
    out.print(f"accounted guarantee: {g}", markup=False, soft_wrap=True)
    if g.assumptions:
        out.print(f"trust assumption: {g.assumptions}", markup=False, soft_wrap=True)
    if g.notes:
        out.print(f"how it is accounted: {g.notes}", markup=False, soft_wrap=True)
    table = Table(
        title="Resolved constants (noise scales, clip norms, budget split)", title_justify="left"
    )
    table.add_column("name", overflow="fold")
    table.add_column("value", overflow="fold")
    for key, value in cal.resolved.items():
        _add_row(
            table,
            key,
            _cell(value)
            if not isinstance(value, (list, tuple, dict))
            else json.dumps(value, default=str),
        )
    out.print(table)


@app.command()
@_guard
def audit(
    mechanism: Annotated[
        Optional[str],
        typer.Argument(
            help="Mechanism, or an algorithm name (= "
            "client:ALGORITHM) to audit its whole client code "
            "path (see --list)."
        ),
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Audit every mechanism and client code path.")
    ] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the auditable mechanisms.")] = False,
    under_noised: Annotated[
        Optional[float],
        typer.Option(
            "--under-noised",
            help="Audit the variant "
            "with this multiple of the calibrated noise "
            "(0.5 = half) against the unchanged claim.",
        ),
    ] = None,
    samples: Annotated[
        Optional[int], typer.Option("--samples", "-n", help="Outputs drawn per neighbouring input.")
    ] = None,
    seed: Annotated[
        Optional[int], typer.Option("--seed", help="Seed of the sampling streams.")
    ] = None,
    alpha: Annotated[
        Optional[float], typer.Option("--alpha", help="1 - confidence of the audited lower bound.")
    ] = None,
    adversarial: Annotated[
        bool,
        typer.Option(
            "--adversarial",
            help="Audit each local / shuffle device "
            "at the worst public state an adversarial server can "
            "send (searched in the declared space), and its half-noise "
            "twin, which must be flagged.",
        ),
    ] = False,
) -> None:
    """Empirical privacy audit: audited lower bound on epsilon vs the claimed epsilon.

    Audits the privacy layer's mechanisms and protocols and every local / shuffle algorithm's
    client code path (``client:<algorithm>``), see privbandits.auditing.  Exit code 1 when an
    audited lower bound exceeds a claimed epsilon (a detected violation).

    With ``--adversarial`` (``ALGORITHM`` or ``--all``): for each local / shuffle device, the public
    state maximizing the distance of two neighbouring users' encoded messages is searched in the
    space the device declares; the report gives that state, the sensitivity reached against the
    accounted one, the audited lower bound against the claim at that state, and whether the
    half-noise twin is flagged.  Exit code 1 when a device fails or a twin is not flagged.
    """
    try:
        mod = importlib.import_module("privbandits.auditing")
    except ModuleNotFoundError as exc:
        if exc.name in ("privbandits.auditing", "privbandits.privacy.audit"):
            raise PrivbanditsError(
                "privacy auditing is not available in this version yet "
                f"(module {exc.name} is missing)"
            ) from None
        raise
    auditable = getattr(mod, "AUDITABLE", {})
    out = _out()
    if list_ or (mechanism is None and not all_ and not adversarial):
        table = Table(
            title="Auditable mechanisms (privbandits audit NAME | --all)", title_justify="left"
        )
        table.add_column("name", overflow="fold")
        table.add_column("description", overflow="fold")
        for name, obj in auditable.items():
            _add_row(table, name, _describe(obj))
        out.print(table)
        return
    options = {"under_noised": under_noised, "n_samples": samples, "seed": seed, "alpha": alpha}
    if adversarial:
        if under_noised is not None:
            raise ValidationError(
                "--adversarial audits the half-noise twin itself; drop --under-noised"
            )
        if mechanism is None and not all_:
            raise ValidationError("--adversarial needs an ALGORITHM or --all")
        target = None if all_ else str(mechanism)
        rows = mod.run_adversarial(target, **_accepted_options(mod.run_adversarial, options))
        _render(out, rows)
        bad = [r.name for r in rows if not r.passed]
        if bad:
            _err().print(
                f"adversarial audit failed for {', '.join(bad)} (sensitivity exceeded, a violation "
                "detected, a half-noise twin not flagged, or a device without its contract; see the "
                "notes)",
                style="bold red",
                markup=False,
                soft_wrap=True,
            )
            raise typer.Exit(1)
        return
    if all_:
        results = mod.run_all(**_accepted_options(mod.run_all, options))
    else:
        if mechanism not in auditable and f"client:{mechanism}" in auditable:
            mechanism = f"client:{mechanism}"  # an algorithm name audits its whole client code path
        if mechanism not in auditable:
            import difflib

            close = difflib.get_close_matches(str(mechanism), list(auditable), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ValidationError(
                f"unknown mechanism {mechanism!r}{hint}; "
                f"auditable: {', '.join(auditable) or 'none'}"
            )
        results = mod.audit_mechanism(mechanism, **_accepted_options(mod.audit_mechanism, options))
    _render(out, results)
    items = (
        results.values()
        if isinstance(results, dict)
        else (results if isinstance(results, (list, tuple)) else [results])
    )
    if any(getattr(r, "passed", True) is False for r in items):
        _err().print(
            "privacy violation detected: an audited lower bound exceeds the claimed epsilon",
            style="bold red",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)


def _accepted_options(fn: Callable[..., Any], options: dict[str, Any]) -> dict[str, Any]:
    """The options the user gave, checked against what the audit function takes."""
    params = inspect.signature(fn).parameters
    given = {k: v for k, v in options.items() if v is not None}
    unknown = [k for k in given if k not in params]
    if unknown:
        raise ValidationError(
            f"this audit does not take {', '.join('--' + k.replace('_', '-') for k in unknown)}"
        )
    return given


def _describe(obj: Any) -> str:
    if isinstance(obj, str):
        return obj
    doc = inspect.getdoc(obj) or ""
    return doc.splitlines()[0] if doc else type(obj).__name__


def _render(out: Console, obj: Any) -> None:
    """Print audit results: dataclasses as table rows, mappings as name -> value, else ``str``."""
    if isinstance(obj, dict):
        items = list(obj.items())
    elif isinstance(obj, (list, tuple)):
        items = [(None, o) for o in obj]
    else:
        items = [(None, obj)]
    if items and all(is_dataclass(v) and not isinstance(v, type) for _, v in items):
        names = [f.name for f in fields(items[0][1]) if f.name != "notes"]
        table = Table(title="Privacy audit", title_justify="left")
        if any(k is not None for k, _ in items):
            table.add_column("name", overflow="fold")
        for n in names:
            table.add_column(n, overflow="fold")
        for k, v in items:
            cells = [_cell(getattr(v, n, "")) for n in names]
            _add_row(table, *([str(k)] if k is not None else []), *cells)
        out.print(table)
        for k, v in items:  # long free-text notes below the table, one line per result
            if getattr(v, "notes", ""):
                out.print(
                    f"{k or getattr(v, names[0], '')}: {v.notes}",
                    markup=False,
                    soft_wrap=True,
                    style="dim",
                )
        return
    for k, v in items:
        out.print(f"{k}: {v}" if k is not None else str(v), markup=False, soft_wrap=True)


def _cell(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _version(value: bool) -> None:
    if value:
        from privbandits import __version__

        _out().print(f"privbandits {__version__}")
        raise typer.Exit()


register_commands(app, _guard)  # serve (privbandits.service)
importlib.import_module("privbandits.commands.tune").register_commands(app, _guard)  # tune


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Differentially private contextual bandits: run, sweep, reproduce, plot, export, audit."""


def main() -> None:
    """Console-script entry point ``privbandits``."""
    app()


if __name__ == "__main__":
    main()
