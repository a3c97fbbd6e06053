"""``privbandits serve-shuffler``: run the shuffler service on uvicorn (registered by :mod:`.cli`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from privbandits.core.errors import ConfigError
from privbandits.service.auth import read_tokens_file
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

__all__ = ["refuse_when_lost", "serve_shuffler", "shuffler_secret"]


def refuse_when_lost(app: Any) -> Any:
    """``app`` answering 503 (naming why) when the shuffler's database was lost under it
    (:class:`privbandits.service.shuffler.store.QueueLost`) instead of a 500."""
    from fastapi.responses import JSONResponse

    from privbandits.service.shuffler.store import QueueLost

    async def lost(request: Any, exc: Exception) -> Any:
        return JSONResponse(
            {"error": {"status": 503, "field": "database", "message": str(exc)}}, status_code=503
        )

    app.add_exception_handler(QueueLost, lost)
    return app


def shuffler_secret(tokens_file: Path) -> str:
    """The shuffler's own secret: the ``token`` of the tokens file's entry with ``role = "shuffler"``.

    The server keeps only the sha256 of that token; the shuffler needs it in plain text to
    authenticate its batches.
    """
    raw = read_tokens_file(tokens_file)
    found = [
        e.get("token")
        for e in raw.get("tokens", [])
        if isinstance(e, dict) and e.get("role") == "shuffler"
    ]
    secrets = [s for s in found if isinstance(s, str) and s]
    if len(secrets) != 1:
        raise ConfigError(
            f"{tokens_file.name}: the shuffler needs exactly one [[tokens]] entry with role = "
            f"\"shuffler\" and its secret in 'token' (found {len(secrets)}); the server's tokens "
            "file may hold only its sha256"
        )
    return secrets[0]


def serve_shuffler(
    config: Annotated[
        Path, typer.Argument(help="The served configuration (the same file as the server's).")
    ],
    server: Annotated[
        str, typer.Option("--server", help="Base URL of the server, e.g. http://127.0.0.1:8000.")
    ],
    tokens: Annotated[
        Path,
        typer.Option(
            "--tokens",
            help="Tokens file: the client tokens the shuffler accepts "
            "and its own shuffler token (in plain text).",
        ),
    ],
    min_batch: Annotated[
        Optional[int],
        typer.Option(
            "--min-batch",
            help="Smallest batch forwarded (>= 2; "
            "default: the config's service.min_batch, "
            "at least 2).",
        ),
    ] = None,
    host: Host = "127.0.0.1",
    port: Port = 8001,
    db: Annotated[
        Optional[Path],
        typer.Option(
            "--db",
            help="SQLite file of the pending reports (default: "
            "<config stem>.shuffler.db beside the config).",
        ),
    ] = None,
    ssl_keyfile: SslKeyfile = None,
    ssl_certfile: SslCertfile = None,
    log_level: LogLevel = "warning",
    lease_seconds: Annotated[
        float,
        typer.Option(
            "--lease-seconds",
            help="How long an action slot of GET /v1/assignment stays reserved for its "
            "device before it is reclaimed.",
        ),
    ] = 60.0,
    stall_seconds: Annotated[
        float,
        typer.Option(
            "--stall-seconds",
            help="An incomplete batch without a new report for this long logs an alert "
            "and shows as stalled on GET /v1/status.",
        ),
    ] = 300.0,
    init: Annotated[
        bool,
        typer.Option(
            "--init",
            help="Start a new deployment of the shuffler on an empty database (recorded in the "
            "database and in the state directory). Without it a missing, empty or other "
            "deployment's database is refused.",
        ),
    ] = False,
    state_dir: StateDir = None,
) -> None:
    """Run the shuffler of a shuffle-model algorithm in front of SERVER: it stores the clients' sealed
    reports durably and forwards only complete, uniformly permuted batches without client metadata."""
    uvicorn = import_uvicorn("serve-shuffler")
    from privbandits.algorithms.registry import get as get_algorithm
    from privbandits.service.auth import load_tokens
    from privbandits.service.config import load_service_config
    from privbandits.service.shuffler.app import ShufflerSettings, create_shuffler_app
    from privbandits.service.shuffler.store import ShufflerStore
    from privbandits.service.storage.deployment import default_state_dir

    cfg = load_service_config(config)
    cls = get_algorithm(cfg.algorithm)
    if cls.trust_model != "shuffle":
        raise ConfigError(
            f"{config.name}: {cfg.algorithm} runs in the {cls.trust_model} model; a shuffler serves "
            "shuffle-model algorithms only"
        )
    settings = ShufflerSettings(
        server,
        shuffler_secret(tokens),
        load_tokens(tokens),
        min_batch=max(2, cfg.min_batch) if min_batch is None else min_batch,
        device_epsilon=cfg.device_epsilon,
        lease_seconds=lease_seconds,
        stall_seconds=stall_seconds,
        rate=cfg.rate,
        burst=cfg.burst,
        anonymous_rate=cfg.anonymous_rate,
        anonymous_burst=cfg.anonymous_burst,
    )
    path = db if db is not None else config.with_name(config.stem + ".shuffler.db")
    sdir = state_dir if state_dir is not None else default_state_dir(config)
    store, deployment, note = open_deployment(
        lambda: ShufflerStore(path), role="shuffler", url=str(path), state_dir=sdir, init=init
    )
    store.expected_deployment = deployment
    pending = store.pending()
    typer.echo(
        f"shuffler for {cfg.algorithm} on {base_url(host, port, ssl_certfile)} -> {server}; "
        f"min batch {settings.min_batch}; queue {path} ({pending} pending report(s), "
        f"{len(store.outbox())} batch(es) to forward); {note}",
        err=True,
    )
    uvicorn.run(
        refuse_when_lost(create_shuffler_app(settings, store)),
        **uvicorn_options(host, port, log_level, ssl_keyfile, ssl_certfile),
    )
