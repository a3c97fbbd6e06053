"""The served application as uvicorn builds it in each worker process (``privbandits serve
--workers N``), and the snapshot taken when a server shuts down.

With ``--workers N`` the command line checks the deployment once (and creates it with
``--init``), then hands uvicorn the import string of :func:`app_factory` with its arguments in
the environment variable :data:`ENV`; each worker process opens its own connection pool, restores
the newest snapshot, replays the tail and serves.  Workers write through the database's writer lock
(:meth:`privbandits.service.server.store.Store.writer`): each request first applies the events the
other workers stored, so the idempotency keys, the per-device budgets and the model are those of
one sequence of events whatever worker answers.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio

__all__ = ["ENV", "SnapshotOnShutdown", "app_factory"]

#: Environment variable carrying the worker's arguments (JSON: config, tokens, db, state_dir).
ENV = "PRIVBANDITS_SERVE_WORKER"


class SnapshotOnShutdown:
    """ASGI wrapper: store a snapshot of the model state when the server shuts down (lifespan)."""

    def __init__(self, app: Any, service: Any) -> None:
        self.app, self.service = app, service
        self.state = getattr(app, "state", None)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def recv() -> Any:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                try:
                    await anyio.to_thread.run_sync(self.service.snapshot)
                except Exception:  # a snapshot only saves start-up time
                    pass
            return message

        await self.app(scope, recv, send)


def app_factory() -> Any:
    """The application of one worker process (arguments from :data:`ENV`)."""
    from pathlib import Path

    from privbandits.service.auth import load_tokens
    from privbandits.service.config import load_service_config
    from privbandits.service.server.app import create_app
    from privbandits.service.server.store import open_store
    from privbandits.service.storage.deployment import resolve_deployment

    args = json.loads(os.environ[ENV])
    cfg = load_service_config(args["config"])
    store = open_store(args["db"])
    resolve_deployment(  # the parent process checked or created it; a worker only re-checks
        role="server",
        url=args["db"],
        state_dir=Path(args["state_dir"]),
        init=False,
        read_db_id=store.deployment_id,
        write_db_id=store.set_deployment_id,
        db_has_data=store.has_data,
    )
    app = create_app(cfg, store, load_tokens(Path(args["tokens"])))
    return SnapshotOnShutdown(app, app.state.service)
