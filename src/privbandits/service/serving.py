"""What ``privbandits serve`` and ``privbandits serve-shuffler`` share: the uvicorn options of their
command lines, uvicorn itself and its arguments, and the start of a deployment's database."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional, Protocol, TypeVar

import typer

__all__ = [
    "Host",
    "LogLevel",
    "Port",
    "SslCertfile",
    "SslKeyfile",
    "StateDir",
    "base_url",
    "import_uvicorn",
    "open_deployment",
    "uvicorn_options",
]

Host = Annotated[str, typer.Option("--host", help="Address to bind.")]
Port = Annotated[int, typer.Option("--port", help="Port to bind.")]
SslKeyfile = Annotated[
    Optional[Path], typer.Option("--ssl-keyfile", help="TLS private key (uvicorn).")
]
SslCertfile = Annotated[
    Optional[Path], typer.Option("--ssl-certfile", help="TLS certificate (uvicorn).")
]
LogLevel = Annotated[str, typer.Option("--log-level", help="uvicorn log level.")]
StateDir = Annotated[
    Optional[Path],
    typer.Option(
        "--state-dir",
        help="Directory recording the deployment id (default: <config stem>.state beside "
        "the config).",
    ),
]


def base_url(host: str, port: int, ssl_certfile: Path | None) -> str:
    """The address a process serves on, as its start-up line prints it (https with a certificate)."""
    return f"{'https' if ssl_certfile else 'http'}://{host}:{port}"


def uvicorn_options(
    host: str, port: int, log_level: str, ssl_keyfile: Path | None, ssl_certfile: Path | None
) -> dict[str, Any]:
    """The keyword arguments of ``uvicorn.run`` for the command line's uvicorn options."""
    from privbandits.service.tls import tls_options

    return {
        "host": host,
        "port": port,
        "log_level": log_level,
        **tls_options(ssl_keyfile, ssl_certfile),
    }


def import_uvicorn(command: str) -> Any:
    """The ``uvicorn`` module, or a :class:`~privbandits.core.errors.ValidationError` naming the
    extra ``command`` needs."""
    try:
        import uvicorn
    except ImportError:
        from privbandits.core.errors import ValidationError

        raise ValidationError(
            f"{command} needs the serve extra: pip install 'privbandits[serve]'"
        ) from None
    return uvicorn


class _DeploymentStore(Protocol):
    def deployment_id(self) -> str | None: ...
    def set_deployment_id(self, value: str) -> None: ...
    def has_data(self) -> bool: ...
    def close(self) -> None: ...


_S = TypeVar("_S", bound=_DeploymentStore)


def open_deployment(
    open_store: Callable[[], _S], *, role: str, url: str, state_dir: Path, init: bool
) -> tuple[_S, str, str]:
    """Open ``role``'s database and check (or with ``init`` create) its deployment:
    ``(store, deployment id, note)``.

    A SQLite file is checked before ``open_store`` would create it
    (:func:`~privbandits.service.storage.deployment.check_database_file`); the store is closed
    again if the deployment is refused
    (:func:`~privbandits.service.storage.deployment.resolve_deployment`).
    """
    from privbandits.service.storage.deployment import check_database_file, resolve_deployment

    check_database_file(role=role, url=url, state_dir=state_dir, init=init)
    store = open_store()
    try:
        deployment, note = resolve_deployment(
            role=role,
            url=url,
            state_dir=state_dir,
            init=init,
            read_db_id=store.deployment_id,
            write_db_id=store.set_deployment_id,
            db_has_data=store.has_data,
        )
    except BaseException:
        store.close()
        raise
    return store, deployment, note
