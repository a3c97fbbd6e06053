"""Simulated traffic against a served model: many simulated devices, concurrently.

:func:`simulate_clients` plays ``n`` simulated users against a running server (and, for a
shuffle-model algorithm, its shuffler) with ``workers`` concurrent connections.  Each user is a
:class:`~privbandits.service.device.client.DeviceClient` (or :class:`~privbandits.service.device.shuffle.ShuffleDevice`)
with its own client token: it reads the public model, chooses its action and randomizes on the
"device", and sends only the privatized report.  The users' contexts and rewards come from the
environment of the served configuration (``GET /v1/model``'s ``config``), seeded with ``seed``,
shared by the workers; the rewards are posted to ``POST /v1/simulation/rewards`` in small groups,
so the dashboard's chart follows the simulated traffic.

Unlike :func:`privbandits.service.device.client.simulate_users` (one user after another, the exact trajectory
of ``simulate(..., engine="reference")``), the interleaving of concurrent users is not
reproducible; this is load, not a replication.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_int

__all__ = ["ClientsSummary", "simulate_clients"]

#: Simulated rewards are posted to the dashboard in groups of this many users.
REWARD_GROUP = 25


@dataclass
class ClientsSummary:
    """What a simulated-traffic run did."""

    users: int
    reported: int
    seconds: float
    rewards: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def text(self) -> str:
        """A short human-readable summary."""
        r = np.asarray(self.rewards)
        k = max(1, len(r) // 10)
        trend = (f"; mean reward first {k} users {r[:k].mean():.3f}, last {k} users {r[-k:].mean():.3f}"
                 if len(r) else "")
        errs = f"; {len(self.errors)} error(s), first: {self.errors[0]}" if self.errors else ""
        return (f"{self.users} simulated users, {self.reported} reports accepted in {self.seconds:.1f} s "
                f"({self.users / max(self.seconds, 1e-9):.0f} users/s){trend}{errs}")


def simulate_clients(server_url: str, tokens: Sequence[str], n: int, *, seed: int = 0, workers: int = 4,
                     shuffler_url: str | None = None, post_rewards: bool = True, timeout: float = 30.0,
                     http: Any = None, wait: float = 120.0) -> ClientsSummary:
    """Run ``n`` simulated users against ``server_url`` (see the module docstring).

    Parameters
    ----------
    server_url : str
        The server (``privbandits serve``).
    tokens : sequence of str
        Client tokens; user ``i`` uses ``tokens[i % len(tokens)]`` (one token per user keeps each
        device within its report budget).
    n : int
        Number of simulated users.
    seed : int
        Seed of the environment and of the devices' randomness.
    workers : int
        Concurrent connections (threads).
    shuffler_url : str, optional
        For a shuffle-model algorithm: the shuffler the devices report to.
    post_rewards : bool
        Post the simulated rewards to the dashboard.
    timeout : float
        Seconds per HTTP request.
    http : httpx.Client, optional
        The HTTP client to use (default: a new one, closed at the end).
    wait : float
        Seconds to wait for the server (and shuffler) to answer ``GET /v1/status`` (a server
        that was just started may still be calibrating).
    """
    import httpx

    from privbandits.algorithms.base import Curator, ShuffleAlgorithm
    from privbandits.core.rng import make_streams
    from privbandits.experiments.units import build_env
    from privbandits.service.device.client import DeviceClient, local_algorithm
    from privbandits.service.device.shuffle import ShuffleDevice

    n = check_int("n", n, 1)
    workers = check_int("workers", workers, 1, 256)
    if not tokens:
        raise ValidationError("tokens: at least one client token is needed, got none")
    own = http is None
    if own:
        http = httpx.Client(timeout=timeout, limits=httpx.Limits(max_connections=workers + 2))
    for url in (server_url, shuffler_url):
        if url is not None:
            _wait_until_up(http, url, wait)
    probe = DeviceClient(server_url, tokens[0], http=http)
    info = probe.fetch_model().info
    cfg = info["config"]
    env = build_env(cfg["env"])
    env.reset(1, make_streams(seed), int(cfg["horizon"]))
    shuffle = info.get("trust_model") == "shuffle"
    if shuffle and shuffler_url is None:
        raise ValidationError(f"{info['algorithm']} is a shuffle-model algorithm: give the shuffler's URL "
                              "(shuffler_url / --shuffler); its reports never go to the server directly")
    env_lock, out_lock = threading.Lock(), threading.Lock()
    summary = ClientsSummary(users=n, reported=0, seconds=0.0)
    pending: list[float] = []
    next_user = iter(range(n))
    user_lock = threading.Lock()
    seeds = np.random.SeedSequence(seed).spawn(workers)

    def flush(dev: Any, force: bool = False) -> None:
        with out_lock:
            if not pending or (len(pending) < REWARD_GROUP and not force):
                return
            batch = list(pending)
            pending.clear()
        if post_rewards:
            dev.post_simulated_rewards(batch)

    def worker(w: int) -> None:
        rng_policy, rng_client = (np.random.default_rng(s) for s in seeds[w].spawn(2))
        alg = local_algorithm(info)
        cls = ShuffleDevice if shuffle else DeviceClient
        base = shuffler_url if shuffle else server_url
        assert base is not None
        reporter = DeviceClient(server_url, tokens[w % len(tokens)], http=http)
        while True:
            with user_lock:
                i = next(next_user, None)
            if i is None:
                break
            extra = {"server_key": info["public_key"]} if shuffle else {}  # the key read from the server itself
            dev = cls(base, tokens[i % len(tokens)], algorithm=alg, rng_policy=rng_policy, rng_client=rng_client,
                      http=http, **extra)
            try:
                r = _one_user(dev, alg, env, env_lock, isinstance(alg, Curator), isinstance(alg, ShuffleAlgorithm))
            except Exception as exc:  # one failed user must not stop the others; reported in the summary
                with out_lock:
                    summary.errors.append(f"user {i}: {exc}")
                continue
            with out_lock:
                summary.rewards.append(r[0])
                summary.reported += int(r[1])
                pending.append(r[0])
            flush(reporter)
        flush(reporter, force=True)

    start = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    summary.seconds = time.perf_counter() - start
    if own:
        http.close()
    return summary


def _wait_until_up(http: Any, url: str, wait: float) -> None:
    """Poll ``url/v1/status`` until it answers 200, at most ``wait`` seconds."""
    import httpx

    deadline = time.monotonic() + wait
    while True:
        try:
            if http.get(url.rstrip("/") + "/v1/status").status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise ValidationError(f"{url} did not answer GET /v1/status within {wait:g} s: is it running?")
        time.sleep(0.2)


def _one_user(dev: Any, alg: Any, env: Any, env_lock: threading.Lock, curator: bool,
              shuffle: bool) -> tuple[float, bool]:
    """One simulated user: ``(reward, reported)``."""
    if curator:
        with env_lock:  # the curator's choice needs the user's contexts: keep the round atomic
            X = env.next_round()
            a, ticket = dev.select(X[0])
            r, _ = env.step(np.array([a]))
        dev.report_reward(ticket, float(r[0]), dev.model_version())
        return float(r[0]), True
    model = dev.fetch_model()
    if shuffle:
        assigned = dev.assignment()
        with env_lock:
            X = env.next_round()
            r, _ = env.step(np.array([assigned.action]))
        if not assigned.reports:
            return float(r[0]), False
        dev.report_sealed(X[0], float(r[0]), model, assigned)
        return float(r[0]), True
    with env_lock:
        X = env.next_round()
        a = dev.choose(X[0], model)
        r, _ = env.step(np.array([a]))
    dev.report(X[0], a, float(r[0]), model)
    return float(r[0]), True
