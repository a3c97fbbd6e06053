"""Simulated devices against a served model.

:func:`simulate_users` (local model and curators) and :func:`simulate_shuffle_users` (shuffle
model, through the shuffler) play users one after another with the random streams of
``simulate(..., engine="reference")``: with the server's seed equal to ``seed`` the trajectory is
the reference simulation's.

:func:`simulate_clients` plays ``n`` simulated users against a running server (and, for a
shuffle-model algorithm, its shuffler) with ``workers`` concurrent connections.  Each user is a
:class:`~privbandits.service.device.client.DeviceClient` (or :class:`~privbandits.service.device.shuffle.ShuffleDevice`)
with its own client token: it reads the public model, chooses its action and randomizes on the
"device", and sends only the privatized report.  The users' contexts and rewards come from the
environment of the served configuration (``GET /v1/model``'s ``config``), seeded with ``seed``,
shared by the workers; the rewards are posted to ``POST /v1/simulation/rewards`` in small groups,
so the dashboard's chart follows the simulated traffic.

Unlike :func:`simulate_users` (one user after another, the exact trajectory
of ``simulate(..., engine="reference")``), the interleaving of concurrent users is not
reproducible; this is load, not a replication.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.algorithms.base import Algorithm, Curator
from privbandits.core.errors import ValidationError
from privbandits.core.rng import make_streams
from privbandits.core.validation import check_int
from privbandits.engine import protocol
from privbandits.service.device.client import DeviceClient, ServiceError, local_algorithm
from privbandits.service.device.shuffle import ShuffleDevice

__all__ = [
    "ClientsSummary",
    "ShuffleRun",
    "SimulatedRun",
    "simulate_clients",
    "simulate_shuffle_users",
    "simulate_users",
]

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
        trend = (
            f"; mean reward first {k} users {r[:k].mean():.3f}, last {k} users {r[-k:].mean():.3f}"
            if len(r)
            else ""
        )
        errs = f"; {len(self.errors)} error(s), first: {self.errors[0]}" if self.errors else ""
        return (
            f"{self.users} simulated users, {self.reported} reports accepted in {self.seconds:.1f} s "
            f"({self.users / max(self.seconds, 1e-9):.0f} users/s){trend}{errs}"
        )


def simulate_clients(
    server_url: str,
    tokens: Sequence[str],
    n: int,
    *,
    seed: int = 0,
    workers: int = 4,
    shuffler_url: str | None = None,
    post_rewards: bool = True,
    timeout: float = 30.0,
    http: Any = None,
    wait: float = 120.0,
) -> ClientsSummary:
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
        Seconds to wait for the server (and shuffler) to answer ``GET /v1/health`` (a server
        that was just started may still be calibrating).
    """
    import httpx

    from privbandits.algorithms.base import ShuffleAlgorithm
    from privbandits.experiments.units import build_env

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
        raise ValidationError(
            f"{info['algorithm']} is a shuffle-model algorithm: give the shuffler's URL "
            "(shuffler_url / --shuffler); its reports never go to the server directly"
        )
    env_lock, out_lock = threading.Lock(), threading.Lock()
    rewards_off = threading.Event()
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
        if post_rewards and not rewards_off.is_set():
            try:
                dev.post_simulated_rewards(batch)
            except ServiceError as exc:
                if exc.status != 404:  # 404: not a simulated deployment, the chart stays off
                    raise
                rewards_off.set()

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
            extra = (
                {"server_key": info["public_key"]} if shuffle else {}
            )  # the key read from the server itself
            dev = cls(
                base,
                tokens[i % len(tokens)],
                algorithm=alg,
                rng_policy=rng_policy,
                rng_client=rng_client,
                http=http,
                **extra,
            )
            try:
                r = _one_user(
                    dev,
                    alg,
                    env,
                    env_lock,
                    isinstance(alg, Curator),
                    isinstance(alg, ShuffleAlgorithm),
                )
            except (
                Exception
            ) as exc:  # one failed user must not stop the others; reported in the summary
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
    """Poll ``url/v1/health`` until it answers 200, at most ``wait`` seconds."""
    import httpx

    deadline = time.monotonic() + wait
    while True:
        try:
            if http.get(url.rstrip("/") + "/v1/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise ValidationError(
                f"{url} did not answer GET /v1/health within {wait:g} s: is it running?"
            )
        time.sleep(0.2)


def _one_user(
    dev: Any, alg: Any, env: Any, env_lock: threading.Lock, curator: bool, shuffle: bool
) -> tuple[float, bool]:
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


@dataclass
class SimulatedRun:
    """Per-round regret and reward of simulated users, and the server's last answer."""

    regret: np.ndarray
    reward: np.ndarray
    actions: np.ndarray
    last_answer: dict[str, Any]


def simulate_users(
    base_url: str,
    tokens: Sequence[str],
    seed: int,
    rounds: int,
    *,
    http: Any = None,
    on_round: Callable[[int, dict[str, Any]], None] | None = None,
    post_rewards_every: int = 0,
) -> SimulatedRun:
    """``rounds`` simulated users, one after another, each with its own token (cycled).

    Uses the streams of ``simulate(alg, env, horizon, seed=seed, engine="reference")``: the
    environment's, the policy stream for choices and the client stream for privacy noise, in the
    reference driver's order, so the trajectory equals the reference one.  With
    ``post_rewards_every = n > 0`` the simulated rewards are also posted to the status page's
    reward chart every ``n`` users (``POST /v1/simulation/rewards``: simulation only, a real
    device never sends its reward).
    """
    probe = DeviceClient(base_url, tokens[0], http=http)
    try:
        return _drive_users(probe, base_url, tokens, seed, rounds, on_round, post_rewards_every)
    finally:
        if http is None:
            probe.http.close()


def _drive_users(
    probe: DeviceClient,
    base_url: str,
    tokens: Sequence[str],
    seed: int,
    rounds: int,
    on_round: Callable[[int, dict[str, Any]], None] | None,
    post_rewards_every: int,
) -> SimulatedRun:
    from privbandits.experiments.units import build_env

    info = probe.fetch_model().info
    cfg = info["config"]
    streams = make_streams(seed)
    env = build_env(cfg["env"])
    spec = env.reset(1, streams, int(cfg["horizon"]))
    alg = local_algorithm(info)
    alg.reset(spec, 1, streams)  # as simulate: the algorithm is reset on the run's streams
    curator = isinstance(alg, Curator)
    devices = [
        DeviceClient(
            base_url,
            tok,
            algorithm=alg,
            rng_policy=streams.policy,
            rng_client=streams.client,
            http=probe.http,
        )
        for tok in tokens
    ]
    regret, reward, actions = np.zeros(rounds), np.zeros(rounds), np.zeros(rounds, dtype=np.int64)
    answer: dict[str, Any] = {}
    for t in range(rounds):
        X = env.next_round()
        if t == 0:
            protocol.start(
                alg, X
            )  # a batched elimination installs the public catalogue, as the reference driver
        dev = devices[t % len(devices)]
        if curator:
            a, ticket = dev.select(X[0])
            r, reg = env.step(np.array([a]))
            answer = dev.report_reward(ticket, float(r[0]), dev.model_version())
        else:
            model = dev.fetch_model()
            a = dev.choose(X[0], model)
            r, reg = env.step(np.array([a]))
            answer = dev.report(X[0], a, float(r[0]), model)
        regret[t], reward[t], actions[t] = float(reg[0]), float(r[0]), a
        if post_rewards_every and ((t + 1) % post_rewards_every == 0 or t == rounds - 1):
            start = (t // post_rewards_every) * post_rewards_every
            dev.post_simulated_rewards(reward[start : t + 1].tolist())
        if on_round is not None:
            on_round(t, answer)
    return SimulatedRun(regret, reward, actions, answer)


@dataclass
class ShuffleRun:
    """Rewards, regret and actions of simulated users, and how many reported."""

    reward: np.ndarray
    regret: np.ndarray
    actions: np.ndarray
    reported: int
    answers: list[dict[str, Any]] = field(default_factory=list)


def simulate_shuffle_users(
    shuffler_url: str,
    tokens: Sequence[str],
    seed: int,
    rounds: int,
    *,
    http: Any = None,
    algorithm: Algorithm | None = None,
    server_key: str | None = None,
    on_round: Callable[[int, float], None] | None = None,
) -> ShuffleRun:
    """``rounds`` simulated users, one after another, through the shuffler at ``shuffler_url``.

    Each user: reads the model and its assignment from the shuffler, plays the assigned action
    in the configured environment (seeded with ``seed``), and sends its sealed report when its
    batch is open.  ``server_key`` pins the server's sealing key (see :class:`ShuffleDevice`).
    ``on_round(t, reward)`` is called after each user (e.g. to post the simulated rewards to
    the dashboard).
    """
    from privbandits.experiments.units import build_env

    probe = ShuffleDevice(shuffler_url, tokens[0], http=http, server_key=server_key)
    info = probe.fetch_model().info
    cfg = info["config"]
    streams = make_streams(seed)
    env = build_env(cfg["env"])
    spec = env.reset(1, streams, int(cfg["horizon"]))
    alg = algorithm if algorithm is not None else local_algorithm(info)
    alg.reset(spec, 1, streams)
    devices = [
        ShuffleDevice(
            shuffler_url,
            tok,
            algorithm=alg,
            rng_client=streams.client,
            http=probe.http,
            server_key=server_key,
        )
        for tok in tokens
    ]
    reward, regret = np.zeros(rounds), np.zeros(rounds)
    actions = np.zeros(rounds, dtype=np.int64)
    answers: list[dict[str, Any]] = []
    reported = 0
    for t in range(rounds):
        X = env.next_round()
        dev = devices[t % len(devices)]
        model = dev.fetch_model()
        assigned = dev.assignment()
        a = assigned.action
        r, reg = env.step(np.array([a]))
        if assigned.reports:
            answers.append(dev.report_sealed(X[0], float(r[0]), model, assigned))
            reported += 1
        reward[t], regret[t], actions[t] = float(r[0]), float(reg[0]), a
        if on_round is not None:
            on_round(t, float(r[0]))
    return ShuffleRun(reward, regret, actions, reported, answers)
