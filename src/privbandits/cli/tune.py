"""``privbandits tune``: choose the exploration constants on tuning seeds, never the evaluation seeds.

See :mod:`privbandits.experiments.tuning` for the protocol and the documentation's "Tuning" page
for why the constants must not be chosen on real users' data.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from privbandits.cli._common import DbOpt, _out
from privbandits.experiments.store import DEFAULT_DB

__all__ = ["register_commands", "tune_command"]


def tune_command(
    config: Annotated[
        str, typer.Argument(help="Experiment file (TOML) or the name of a shipped experiment.")
    ],
    db: DbOpt = DEFAULT_DB,
    out: Annotated[
        Optional[Path],
        typer.Option(
            "--out", help="Where to store the choice (TOML; default <db dir>/<name>.tuned.toml)."
        ),
    ] = None,
    seeds: Annotated[
        int,
        typer.Option(
            "--seeds", min=1, help="Number of tuning seeds (disjoint from the evaluation seeds)."
        ),
    ] = 1,
    replications: Annotated[
        Optional[int],
        typer.Option(
            "--replications",
            "-r",
            min=1,
            help="Replications per tuning seed (default: the experiment's).",
        ),
    ] = None,
    horizon: Annotated[
        Optional[int],
        typer.Option("--horizon", "-T", min=1, help="Tuning horizon (default: the experiment's)."),
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Tune the experiment's quick variant.")
    ] = False,
    evaluate: Annotated[
        Optional[Path],
        typer.Option(
            "--evaluate",
            help="Then run the experiment on its evaluation seeds with each tuned series beside the "
            "as-published one, and write figures and report.md to this directory.",
        ),
    ] = None,
    workers: Annotated[
        Optional[int], typer.Option("--workers", "-w", help="Local worker processes.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Choose each algorithm's exploration constants (radius / threshold scales, step sizes) on
    tuning seeds of the same environment family; the privacy calibration is never tuned."""
    from privbandits.experiments.config import Overrides, load_config
    from privbandits.experiments.presets import available_presets, load_preset
    from privbandits.experiments.tuning import tune, tuned_config, tuning_seeds, write_choice

    over = Overrides(quick=quick)
    cfg = load_config(config, over) if Path(config).is_file() else None
    if cfg is None:
        if config not in available_presets():
            from privbandits.core.errors import ValidationError

            raise ValidationError(f"{config!r} is neither a file nor a shipped experiment")
        cfg = load_preset(config, over)
    choice = tune(
        cfg,
        db,
        seeds=tuning_seeds(cfg, seeds),
        replications=replications,
        horizon=horizon,
        workers=workers,
        quiet=quiet,
    )
    path = write_choice(choice, out or Path(db).parent / f"{cfg.name}.tuned.toml")
    console = _out()
    console.print(
        f"tuned on seeds {list(choice.seeds)} (evaluation seeds {list(cfg.seeds)}), "
        f"T = {choice.horizon}, {choice.replications} replications per seed:",
        markup=False,
    )
    for label, point in choice.chosen.items():
        console.print(f"  {label}: {point}", markup=False)
    console.print(f"choice: {path}", markup=False)
    if evaluate is not None:
        from privbandits.experiments.pipeline import run_pipeline

        outcome = run_pipeline(
            tuned_config(cfg, choice), db, evaluate, workers=workers, quiet=quiet
        )
        console.print(f"report: {outcome.report}", markup=False)


def register_commands(app: typer.Typer, guard: Callable[[Any], Any]) -> None:
    """Add ``tune`` to the ``privbandits`` command line."""
    app.command("tune")(guard(tune_command))
