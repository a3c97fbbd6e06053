"""``privbandits simulate-clients`` (registered by :mod:`privbandits.service.cli`): simulated devices."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from privbandits.service.tools_cli import client_secrets

__all__ = ["simulate_clients_command"]


def simulate_clients_command(
    url: Annotated[str, typer.Argument(help="The server, e.g. http://127.0.0.1:8000.")],
    tokens: Annotated[
        Path,
        typer.Option(
            "--tokens",
            help="Tokens file; its client tokens are the devices (user i uses the i-th, cycling).",
        ),
    ],
    n: Annotated[int, typer.Option("--n", help="Number of simulated users.")] = 1000,
    workers: Annotated[int, typer.Option("--workers", help="Concurrent connections.")] = 4,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the simulated environment and devices.")
    ] = 0,
    shuffler: Annotated[
        Optional[str],
        typer.Option(
            "--shuffler", help="Shuffle-model algorithms: the shuffler the devices report to."
        ),
    ] = None,
    no_rewards: Annotated[
        bool,
        typer.Option("--no-rewards", help="Do not post the simulated rewards to the dashboard."),
    ] = False,
    wait: Annotated[
        float,
        typer.Option("--wait", help="Seconds to wait for the server (and shuffler) to come up."),
    ] = 120.0,
) -> None:
    """Run N simulated users against a served model (each a device with its own token: model read,
    action chosen and report randomized on the device) and post their rewards to the dashboard."""
    from privbandits.service.device.simulate import simulate_clients

    summary = simulate_clients(
        url,
        client_secrets(tokens),
        n,
        seed=seed,
        workers=workers,
        shuffler_url=shuffler,
        post_rewards=not no_rewards,
        wait=wait,
    )
    typer.echo(summary.text())
    if summary.errors:
        raise typer.Exit(1)
