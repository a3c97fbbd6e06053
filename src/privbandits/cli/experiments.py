"""Experiment commands: ``demo``, ``run``, ``sweep`` and ``reproduce``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from privbandits.cli._common import (
    DbOpt,
    EngineOpt,
    HorizonOpt,
    ImportOpt,
    OutOpt,
    PresetOpt,
    QuickOpt,
    QuietOpt,
    ReplicationsOpt,
    SchedulerOpt,
    SeedOpt,
    WorkersOpt,
    _err,
    _guard,
    _loading,
    _out,
    _overrides,
    _presets_table,
    _print_outcome,
    _run_config,
)
from privbandits.core.errors import ValidationError
from privbandits.experiments.store import DEFAULT_DB


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
    _load_and_run(
        config,
        None,
        db=db,
        workers=workers,
        scheduler=scheduler,
        quiet=quiet,
        out=out,
        quick=quick,
        horizon=horizon,
        replications=replications,
        seed=seed,
        preset=preset,
        engine=engine,
        imports=imports,
    )


def _load_and_run(
    config: Path,
    grid: list[str] | None,
    *,
    db: Path,
    workers: int | None,
    scheduler: str | None,
    quiet: bool,
    out: Path | None,
    quick: bool,
    horizon: int | None,
    replications: int | None,
    seed: int | None,
    preset: str | None,
    engine: str | None,
    imports: list[str] | None,
) -> None:
    """Load ``config`` with the command-line overrides (and ``--grid`` values) and run it."""
    from privbandits.experiments.config import load_config, parse_grid_option

    with _loading(quiet):
        cfg = load_config(
            config,
            _overrides(
                quick,
                horizon,
                replications,
                seed,
                preset,
                None if grid is None else parse_grid_option(grid),
                engine,
                imports=imports or (),
            ),
        )
    _run_config(cfg, db, out, workers, scheduler, quiet)


GridOpt = Annotated[
    list[str],
    typer.Option(
        "--grid",
        "-g",
        metavar="KEY=V1,V2",
        help="KEY=V1,V2,... (repeatable); replaces "
        "every value of KEY in the config (its global grid and "
        "each entry's grid and params).",
    ),
]


def sweep(config: Path, grid: list[str], **options: Any) -> None:
    """Run a TOML experiment with a parameter grid given on the command line."""
    _load_and_run(config, grid, **options)


def _with_grid(command: Callable[..., Any]) -> inspect.Signature:
    """``command``'s parameters with ``--grid`` after the first (the CONFIG argument)."""
    first, *rest = inspect.signature(command, eval_str=True).parameters.values()
    grid = inspect.Parameter("grid", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=GridOpt)
    return inspect.Signature([first, grid, *rest], return_annotation=None)


# sweep takes every option of run (one declaration, so the two never drift apart) plus --grid
sweep.__signature__ = _with_grid(run)  # type: ignore[attr-defined]


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
            metavar="GLOB",
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
    with _loading(quiet):
        cfg = load_reproduction(name, overrides)
    outcome = run_reproduction(
        cfg, db, out, workers=workers, scheduler=scheduler, quiet=quiet, console=_err(), dpi=dpi
    )
    _print_outcome(outcome)


def register_commands(
    app: typer.Typer, guard: Callable[[Callable[..., Any]], Callable[..., Any]] = _guard
) -> None:
    """Add this group's commands to ``app``."""
    app.command()(guard(demo))
    app.command()(guard(run))
    app.command()(guard(sweep))
    app.command()(guard(reproduce))
