"""The ``audit`` command: empirical privacy audits of mechanisms and client code paths."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from privbandits.cli._common import (
    _add_row,
    _cell,
    _err,
    _guard,
    _out,
)
from privbandits.core.errors import PrivbanditsError, ValidationError


def audit(
    mechanism: Annotated[
        Optional[str],
        typer.Argument(
            help="Mechanism, or an algorithm name: a local / shuffle algorithm audits its "
            "client code path (client:ALGORITHM), a central one the releases it declares "
            "(see --list)."
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

    Audits the privacy layer's mechanisms and protocols, every local / shuffle algorithm's
    client code path (``client:<algorithm>``) and the central algorithms' declared releases; an
    algorithm's name runs every case it declares, see privbandits.auditing.  Exit code 1 when an
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
        resolve = getattr(mod, "resolve", None)
        if resolve is not None:  # an entry, or an algorithm's name: every case it declares
            names = resolve(str(mechanism))
        elif mechanism in auditable:
            names = [mechanism]
        elif f"client:{mechanism}" in auditable:
            names = [f"client:{mechanism}"]  # a local algorithm's name: its client code path
        else:
            import difflib

            close = difflib.get_close_matches(str(mechanism), list(auditable), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ValidationError(
                f"unknown mechanism {mechanism!r}{hint}; "
                f"auditable: {', '.join(auditable) or 'none'}"
            )
        accepted = _accepted_options(mod.audit_mechanism, options)
        if len(names) == 1:
            results = mod.audit_mechanism(names[0], **accepted)
        else:
            results = {n: mod.audit_mechanism(n, **accepted) for n in names}
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


def register_commands(
    app: typer.Typer, guard: Callable[[Callable[..., Any]], Callable[..., Any]] = _guard
) -> None:
    """Add this group's commands to ``app``."""
    app.command()(guard(audit))
