"""Spies for the conformance checks: what crosses the trust boundary, what the environment draws.

The spies wrap methods of *instances* (the algorithm's roles after ``reset``, the environment's
``next_chunk``), so they observe a normal :func:`privbandits.simulate` run without changing it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.algorithms.base import Algorithm, BatchClient, ShuffleAlgorithm
from privbandits.envs import Environment

__all__ = ["BoundaryLog", "after_reset", "record_chunks", "spy_on_roles"]


@dataclass
class BoundaryLog:
    """Types of everything that crossed a role boundary in one run (in order)."""

    server_received: list[tuple[str, type, Any]] = field(default_factory=list)
    client_public: list[type] = field(default_factory=list)
    client_sent: list[type] = field(default_factory=list)
    shuffler_released: list[type] = field(default_factory=list)
    shuffler_assigned: list[type] = field(default_factory=list)


def after_reset(alg: Algorithm, hook: Callable[[Algorithm], None]) -> None:
    """Run ``hook(alg)`` right after every ``alg.reset`` (instance-level wrapper)."""
    orig = alg.reset

    def reset(spec: Any, replications: int, streams: Any) -> None:
        orig(spec, replications, streams)
        hook(alg)

    alg.reset = reset  # type: ignore[method-assign]


def _wrap(
    obj: Any,
    method: str,
    before: Callable[..., None] | None = None,
    after: Callable[[Any], None] | None = None,
) -> None:
    orig = getattr(obj, method)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if before is not None:
            before(*args, **kwargs)
        out = orig(*args, **kwargs)
        if after is not None:
            after(out)
        return out

    setattr(obj, method, wrapped)


def spy_on_roles(alg: Algorithm) -> BoundaryLog:
    """Record the types crossing the client / shuffler / server boundaries of a local or shuffle
    algorithm in its next run (installed after ``reset``)."""
    log = BoundaryLog()

    def install(a: Algorithm) -> None:
        server, client = a.server, a.client  # type: ignore[attr-defined]
        _wrap(
            server,
            "receive",
            before=lambda t, m: log.server_received.append(("receive", type(m), m)),
        )
        _wrap(
            server,
            "receive_batch",
            before=lambda t, b: log.server_received.append(("receive_batch", type(b), b)),
        )
        _wrap(
            client, "choose", before=lambda t, public, *rest: log.client_public.append(type(public))
        )
        _wrap(
            client,
            "randomize",
            before=lambda t, public, *rest: log.client_public.append(type(public)),
            after=lambda out: log.client_sent.append(type(out)),
        )
        if isinstance(
            client, BatchClient
        ):  # the batch path: the same channels, a block of users at once
            _wrap(
                client,
                "choose_batch",
                before=lambda t, public, *rest: log.client_public.append(type(public)),
            )
            _wrap(
                client,
                "randomize_batch",
                before=lambda t, public, *rest: log.client_public.append(type(public)),
                after=lambda out: log.client_sent.extend(type(m) for m in out),
            )
        if isinstance(a, ShuffleAlgorithm):
            _wrap(a.shuffler, "release", after=lambda out: log.shuffler_released.append(type(out)))
            _wrap(a.shuffler, "assign", after=lambda out: log.shuffler_assigned.append(type(out)))

    after_reset(alg, install)
    return log


def record_chunks(
    env: Environment,
) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Record a copy of every chunk ``env`` draws from now on: ``(t0, X, means, rewards, best)``."""
    seen: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    orig = env.next_chunk

    def next_chunk() -> Any:
        ch = orig()
        seen.append(
            (ch.t0, np.array(ch.X), np.array(ch.means), np.array(ch.rewards), np.array(ch.best))
        )
        return ch

    env.next_chunk = next_chunk  # type: ignore[method-assign]
    return seen
