"""``privbandits make-tokens`` (registered by :mod:`.cli`): a tokens file with fresh secrets."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated

import typer

from privbandits.core.errors import ConfigError, ValidationError
from privbandits.service.auth import read_tokens_file

__all__ = ["client_secrets", "make_tokens", "tokens_toml"]


def tokens_toml(clients: int, admins: int = 1, shufflers: int = 1, operators: int = 1) -> str:
    """A tokens file with fresh random secrets (``secrets.token_urlsafe``): ``clients`` devices,
    ``admins`` administrators, ``shufflers`` shufflers and ``operators`` operators (status,
    metrics and the dashboard)."""
    lines = ["# privbandits tokens: keep this file secret (it holds the plain tokens).", ""]
    for role, count, prefix in (
        ("admin", admins, "admin"),
        ("operator", operators, "operator"),
        ("shuffler", shufflers, "shuffler"),
        ("client", clients, "device"),
    ):
        for i in range(count):
            lines += [
                "[[tokens]]",
                f'name = "{prefix}-{i:04d}"',
                f'role = "{role}"',
                f'token = "{secrets.token_urlsafe(24)}"',
                "",
            ]
    return "\n".join(lines)


def client_secrets(tokens_file: Path) -> list[str]:
    """The plain secrets of the ``client`` entries of a tokens file (in file order)."""
    raw = read_tokens_file(tokens_file)
    out = [
        e["token"]
        for e in raw.get("tokens", [])
        if isinstance(e, dict) and e.get("role") == "client" and isinstance(e.get("token"), str)
    ]
    if not out:
        raise ConfigError(
            f"{tokens_file.name}: no [[tokens]] entry with role = \"client\" and a plain 'token'"
        )
    return out


def make_tokens(
    out: Annotated[Path, typer.Argument(help="Tokens file to write (TOML).")],
    clients: Annotated[
        int, typer.Option("--clients", help="Number of device (client) tokens.")
    ] = 1000,
    admins: Annotated[int, typer.Option("--admins", help="Number of admin tokens.")] = 1,
    shufflers: Annotated[int, typer.Option("--shufflers", help="Number of shuffler tokens.")] = 1,
    operators: Annotated[
        int, typer.Option("--operators", help="Number of operator tokens (status, dashboard).")
    ] = 1,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a tokens file with fresh random tokens for `serve`, `serve-shuffler` and `simulate-clients`."""
    for name, value, lo in (
        ("--clients", clients, 0),
        ("--admins", admins, 0),
        ("--shufflers", shufflers, 0),
        ("--operators", operators, 0),
    ):
        if value < lo or value > 1_000_000:
            raise ValidationError(f"{name} must be in [{lo}, 1000000], got {value}")
    if out.exists() and not force:
        raise ValidationError(f"{out} exists; pass --force to overwrite it")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(tokens_toml(clients, admins, shufflers, operators), encoding="utf-8")
    out.chmod(0o600)
    typer.echo(
        f"wrote {out}: {clients} client, {admins} admin, {operators} operator and {shufflers} "
        "shuffler token(s)",
        err=True,
    )
