"""Catalogue commands: ``list``, ``datasets`` and ``explain``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from privbandits.cli._common import (
    ImportOpt,
    WideOpt,
    _add_row,
    _cell,
    _fitted_table,
    _guard,
    _import,
    _out,
    _presets_table,
)
from privbandits.core.errors import PrivbanditsError, ValidationError


def list_(imports: ImportOpt = None, wide: WideOpt = None) -> None:
    """List the registered algorithms (paper, trust model, settings, reward links) and the presets."""
    from privbandits.algorithms import available

    _import(imports)
    from privbandits.experiments.presets import available_presets

    rows = [
        (
            name,
            cls.trust_model,
            "yes" if "preset" in cls.param_names() else "-",
            ", ".join(cls.settings),
            ", ".join(cls.links),
            cls.paper,
        )
        for name, cls in available().items()
    ]
    table = _fitted_table(
        "Algorithms (calibration presets: strict, paper, authors_code)",
        ("name", "trust model", "presets", "settings", "links", "paper"),
        rows,
        keys=("name", "trust model", "presets"),
        wide_only=("settings", "links"),
        wide=wide,
    )
    out = _out()
    out.print(table)
    out.print(_presets_table(available_presets()))


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
    delimiter: Annotated[
        Optional[str],
        typer.Option(
            "--delimiter", help="Field separator of --path, e.g. ';' (default: detected)."
        ),
    ] = None,
    wide: WideOpt = None,
) -> None:
    """List the registered real data sets, or describe one: n, d, K, class balance, the best fixed
    policies' rewards, source and licence (``describe`` loads the data)."""
    from privbandits.envs.datasets.catalog import LIST_COLUMNS, describe_rows, list_rows

    if action == "list":
        if name is not None:
            raise ValidationError(
                f"datasets list takes no NAME (got {name!r}); use datasets describe {name}"
            )
        table = _fitted_table(
            "Data sets (privbandits datasets describe NAME: source, licence and statistics)",
            LIST_COLUMNS,
            list_rows(),
            keys=("name", "kind", "availability"),
            wide_only=("source", "licence"),
            wide=wide,
        )
    elif action == "describe":
        if name is None:
            raise ValidationError("datasets describe needs a NAME (see privbandits datasets list)")
        options = {
            "path": path,
            "label": label,
            "na": na,
            "data_home": data_home,
            "delimiter": delimiter,
        }
        try:
            rows = describe_rows(name, **options)
        except PrivbanditsError as exc:  # the fixes spelled as this command's options
            raise type(exc)(_as_options(str(exc))) from None
        table = Table(title=f"Data set {name}", title_justify="left")
        table.add_column("field")
        table.add_column("value", overflow="fold")
        for row in rows:
            _add_row(table, *row)
    else:
        raise ValidationError(f"datasets action must be 'list' or 'describe', got {action!r}")
    _out().print(table)


def _as_options(message: str) -> str:
    """A data loader's error with the configuration keys it suggests (``na = "drop"``,
    ``delimiter = ";"``) written as the options of ``datasets describe``."""
    message = message.replace('na = "drop"', "--na drop")
    return re.sub(r'delimiter = "([^"]+)"', r"--delimiter '\1'", message)


def explain(
    algorithm: Annotated[str, typer.Argument(help="Registered algorithm (see privbandits list).")],
    param: Annotated[
        Optional[list[str]],
        typer.Option(
            "--param",
            "-p",
            metavar="KEY=VALUE",
            help="KEY=VALUE constructor argument (repeatable), e.g. epsilon=1.",
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
    if g.notes and (g.ledger is None or g.notes != g.ledger.summary()):
        out.print(f"how it is accounted: {g.notes}", markup=False, soft_wrap=True)
    if g.ledger is not None:
        from privbandits.privacy.ledger import render

        out.print("privacy events (ledger):", markup=False)
        for line in render(g.ledger, "  "):
            out.print(line, markup=False, soft_wrap=True)
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


def register_commands(
    app: typer.Typer, guard: Callable[[Callable[..., Any]], Callable[..., Any]] = _guard
) -> None:
    """Add this group's commands to ``app``."""
    app.command("list")(guard(list_))
    app.command()(guard(datasets))
    app.command()(guard(explain))
