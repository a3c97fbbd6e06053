"""The command-line reference, generated from the ``privbandits`` typer application."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["cli_commands", "render_cli_reference"]


def _group(app: Any = None) -> Any:
    import typer.main

    if app is None:
        from privbandits.cli import app as default_app

        app = default_app
    return typer.main.get_command(app)


def cli_commands(app: Any = None) -> dict[str, list[str]]:
    """Command name -> its option strings (``--horizon``, ``-T``, ...) and argument names."""
    group = _group(app)
    out: dict[str, list[str]] = {}
    for name, cmd in group.commands.items():
        names: list[str] = []
        for p in cmd.params:
            names += [*p.opts, *p.secondary_opts] if _is_option(p) else [p.name.upper()]
        out[name] = names
    return out


def _is_option(param: Any) -> bool:
    return type(param).__name__.endswith("Option")


def _default(param: Any) -> str:
    if getattr(param, "is_flag", False):
        return "off" if not param.default else "on"
    if param.default is None or param.default == ():
        return ""
    return f"`{param.default}`"


def _cell(text: str) -> str:
    return " ".join(str(text or "").split()).replace("|", "\\|")


def _usage(group: Any, name: str, cmd: Any) -> str:
    import typer._click as click

    ctx = click.Context(cmd, info_name=name, parent=click.Context(group, info_name="privbandits"))
    return " ".join(cmd.get_usage(ctx).split())


def render_cli_reference(app: Any = None) -> str:
    """The complete command-line reference page (markdown)."""
    group = _group(app)
    out = [
        "# Command-line reference",
        "",
        "This page is generated from the command-line application of the installed version; "
        "`privbandits COMMAND --help` prints the same.  Every library error is printed as one line "
        "`error: ...` with exit code 2; Ctrl-C exits with code 130 after the finished work units are "
        "stored, and rerunning the same command resumes.",
        "",
        "```text",
        "privbandits [--version] COMMAND [ARGS] [OPTIONS]",
        "```",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for name, cmd in group.commands.items():
        first = inspect.cleandoc(cmd.help or "").split("\n\n", 1)[0]
        out.append(f"| [`{name}`](#{name}) | {_cell(first)} |")
    out.append("")
    for name, cmd in group.commands.items():
        out += [f"## {name}", "", "```text", _usage(group, name, cmd), "```", ""]
        help_text = inspect.cleandoc(cmd.help or "")
        out += [help_text.replace("``", "`"), ""]
        args = [p for p in cmd.params if not _is_option(p)]
        opts = [p for p in cmd.params if _is_option(p)]
        if args:
            out += ["| argument | required | meaning |", "|---|---|---|"]
            out += [
                f"| `{p.name.upper()}` | {'yes' if p.required else 'no'} | {_cell(getattr(p, 'help', ''))} |"
                for p in args
            ]
            out.append("")
        if opts:
            out += ["| option | default | meaning |", "|---|---|---|"]
            for p in opts:
                flags = ", ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
                out.append(f"| {flags} | {_cell(_default(p))} | {_cell(getattr(p, 'help', ''))} |")
            out.append("")
    return "\n".join(out)
