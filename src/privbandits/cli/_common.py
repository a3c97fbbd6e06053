"""Shared options, the error guard and the rendering helpers of the command line."""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Optional, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from privbandits.core.errors import PrivbanditsError
from privbandits.experiments.overrides import option_flags, option_help

F = TypeVar("F", bound=Callable[..., Any])


def _flags_without_placeholder() -> None:
    """Boolean flags (``--quiet``, ``--wide/--narrow``, ``--help``) read as flags in the help:
    typer >= 0.20 prints a ``<bool>`` value placeholder after them, although they take no value."""
    try:
        from typer.core import TyperOption
    except ImportError:  # pragma: no cover - an older typer has no placeholders
        return
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_privbandits", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False) and getattr(self, "metavar", None) is None:
            return None
        return shown(self, ctx)  # type: ignore[no-any-return]

    display_type_rich._privbandits = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_without_placeholder()

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
        metavar="MODULE",
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


@contextlib.contextmanager
def _loading(quiet: bool, what: str = "reading the experiment") -> Iterator[None]:
    """A status line on stderr while a configuration and its data files load (a spinner whose
    text follows the data loader's steps on a terminal; each step once, as a plain line,
    otherwise)."""
    from privbandits.envs.datasets.filecache import loading_status

    if quiet:
        yield
        return
    console = _err()
    if console.is_terminal:
        with console.status(what) as spinner, loading_status(spinner.update):
            yield
        return
    shown: set[str] = set()

    def line(message: str) -> None:
        step = message.split(":")[0]
        if step not in shown:
            shown.add(step)
            console.print(message, markup=False, soft_wrap=True)

    with loading_status(line):
        yield


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

    # the docstring is the command's help: reStructuredText and Markdown literals shown as plain
    # quotes, and the summary paragraph on one line (the command list wraps it itself)
    doc = re.sub(r"``([^`]+)``", r"'\1'", inspect.cleandoc(fn.__doc__ or ""))
    doc = re.sub(r"`([^`]+)`", r"'\1'", doc)
    summary, sep, rest = doc.partition("\n\n")
    if not summary.startswith("\b"):
        summary = " ".join(summary.split())
    wrapper.__doc__ = summary + sep + rest
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
WideOpt = Annotated[
    Optional[bool],
    typer.Option(
        "--wide/--narrow",
        help="All columns (default: all when the terminal has 120 columns or more, else the "
        "essential ones, so that tables stay readable at 80 columns).",
    ),
]
#: Terminal width from which tables show all their columns by default.
WIDE_COLUMNS = 120


def _fitted_table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    keys: Sequence[str] = (),
    wide_only: Sequence[str] = (),
    wide: bool | None = None,
) -> Table:
    """A table readable at the terminal's width: ``keys`` columns (names, short codes) never wrap,
    the others wrap at word boundaries and share the remaining width; ``wide_only`` columns are
    shown with ``--wide`` or on a terminal of :data:`WIDE_COLUMNS` columns or more."""
    show_all = wide if wide is not None else _out().width >= WIDE_COLUMNS
    shown = [i for i, c in enumerate(columns) if show_all or c not in wide_only]
    table = Table(title=title, title_justify="left")
    for i in shown:
        col = columns[i]
        if col in keys:
            table.add_column(col, no_wrap=True)
        else:
            table.add_column(col, overflow="fold", ratio=1, min_width=8)
    for row in rows:
        _add_row(table, *(row[i] for i in shown))
    return table


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
            f"Final cumulative regret at {cfg.horizon_text()} (mean ± std over {n_runs} runs per row)",
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
    _print_learning(out, outcome)
    for row in outcome.paper_rows:
        ratio = "n/a" if row.ratio is None else f"{row.ratio:.2f}"
        kind = row.number.kind  # who reported it: paper, authors' code, prototype, theory
        out.print(
            f"{kind} ({row.number.source or 'no source given'}): {row.number.algorithm} "
            f"{dict(row.number.where) or ''} {row.number.metric} = {row.number.value:g}, "
            f"ours / {kind} = {ratio}",
            markup=False,
        )
    for path in outcome.figures:
        out.print(f"figure: {path}", markup=False, soft_wrap=True)
    if show_report and outcome.report is not None:
        out.print(f"report: {outcome.report}", markup=False, soft_wrap=True)


def _print_learning(out: Any, outcome: Any) -> None:
    """One line per series with no learning detected against ``uniform`` on the same seeds (the
    report's learning check; nothing when the experiment runs no ``uniform`` baseline)."""
    from privbandits.experiments.learning import learning_checks

    level = getattr(getattr(outcome.config, "report", None), "level", 0.05)
    for chk in learning_checks(outcome.series, level):
        if chk.verdict != "no learning detected":
            continue
        out.print(f"{chk.series}: ", end="", markup=False)
        out.print("no learning detected", style="yellow", end="")
        phase = chk.phase()
        out.print(
            f" at T = {chk.horizon:g} (final regret {chk.comparison.mean_better:.4g} against "
            f"uniform's {chk.comparison.mean_worse:.4g})" + (f"; {phase}" if phase else ""),
            markup=False,
        )


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


def _cell(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _presets_table(presets: dict[str, str]) -> Table:
    table = Table(title="Shipped experiments (privbandits reproduce NAME)", title_justify="left")
    table.add_column("name", overflow="fold")
    table.add_column("description", overflow="fold")
    for name, text in presets.items():
        _add_row(table, name, text)
    return table
