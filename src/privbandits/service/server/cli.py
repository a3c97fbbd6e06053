"""``privbandits serve``: run a served model on uvicorn (registered by :mod:`privbandits.service.cli`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from privbandits.service.serving import (
    Host,
    LogLevel,
    Port,
    SslCertfile,
    SslKeyfile,
    StateDir,
    base_url,
    import_uvicorn,
    open_deployment,
    uvicorn_options,
)

__all__ = ["serve"]


def serve(
    config: Annotated[
        Path,
        typer.Argument(
            help="Experiment TOML with exactly one algorithms entry and an "
            "optional service table (see the deployment guide)."
        ),
    ],
    tokens: Annotated[
        Path,
        typer.Option(
            "--tokens",
            help="Tokens file (TOML: a tokens array of tables with name, "
            "role, token or sha256; see the deployment guide).",
        ),
    ],
    host: Host = "127.0.0.1",
    port: Port = 8000,
    db: Annotated[
        Optional[str],
        typer.Option(
            "--db",
            help="Database: a SQLite file path or sqlite:///path "
            "(default: <config stem>.service.db beside the "
            "config), or postgresql://user@host:port/db.",
        ),
    ] = None,
    ssl_keyfile: SslKeyfile = None,
    ssl_certfile: SslCertfile = None,
    log_level: LogLevel = "warning",
    init: Annotated[
        bool,
        typer.Option(
            "--init",
            help="Start a new deployment on an empty database (recorded in the database and in "
            "the state directory). Without it the server refuses a missing, empty or other "
            "deployment's database.",
        ),
    ] = False,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            help="Worker processes (uvicorn). Several workers share the database through its "
            "writer lock; use PostgreSQL for more than one (see the deployment guide).",
        ),
    ] = 1,
    state_dir: StateDir = None,
) -> None:
    """Serve CONFIG's algorithm over HTTP: the server role of a local- or shuffle-DP algorithm, or a
    trusted curator for central / joint DP, with every accepted report stored in a database."""
    uvicorn = import_uvicorn("serve")
    from privbandits.service.auth import load_tokens
    from privbandits.service.config import load_service_config
    from privbandits.service.server.app import create_app
    from privbandits.service.server.store import open_store
    from privbandits.service.storage.deployment import default_state_dir

    cfg = load_service_config(config)
    toks = load_tokens(tokens)
    url = db if db is not None else str(config.with_suffix(".service.db"))
    sdir = state_dir if state_dir is not None else default_state_dir(config)
    store, _, note = open_deployment(
        lambda: open_store(url), role="server", url=url, state_dir=sdir, init=init
    )
    options = uvicorn_options(host, port, log_level, ssl_keyfile, ssl_certfile)
    if workers > 1:
        import json
        import os

        from privbandits.service.server.workers import ENV

        store.close()
        os.environ[ENV] = json.dumps(
            {
                "config": str(config.resolve()),
                "tokens": str(tokens.resolve()),
                "db": url,
                "state_dir": str(sdir.resolve()),
            }
        )
        typer.echo(
            f"serving {cfg.algorithm} with {workers} workers on "
            f"{base_url(host, port, ssl_certfile)}; database {url.split('@')[-1]}; {note}",
            err=True,
        )
        uvicorn.run(
            "privbandits.service.server.workers:app_factory",
            factory=True,
            workers=workers,
            # a worker starts by calibrating and compiling the model: give it time before the
            # supervisor's health check restarts it
            timeout_worker_healthcheck=300,
            **options,
        )
        return
    from privbandits.service.server.workers import SnapshotOnShutdown

    app = create_app(cfg, store, toks)
    svc = app.state.service
    typer.echo(
        f"serving {cfg.algorithm} ({svc.model.alg.trust_model} model, {svc.model.guarantee}) on "
        f"{base_url(host, port, ssl_certfile)}; database {store.url.split('@')[-1]}; "
        f"{note}; restored {svc.restored_events} stored request(s), model version "
        f"{svc.model.version}",
        err=True,
    )
    uvicorn.run(SnapshotOnShutdown(app, svc), **options)
