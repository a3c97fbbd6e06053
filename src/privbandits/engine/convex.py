"""The driver of bandit convex optimization: points as actions, message level, one round at a time.

The same roles as :mod:`privbandits.engine.reference`, on a
:class:`~privbandits.envs.convex.ConvexLossEnv` (continuous actions):

* :class:`~privbandits.algorithms.base.Curator`: ``select(t, X)`` returns the round's query
  points ``(R, k, d)``; ``update(t, X, points, losses)`` receives the users' losses ``(R, k)``
  there (``X``: the users' loss parameters, which a trusted curator may hold).
* :class:`~privbandits.algorithms.base.LocalAlgorithm`: the server publishes a
  :class:`PublicState` (the query points), the client plays them on the user's own loss and
  randomizes the losses it observes; the server receives only the :class:`PrivatizedMessage`
  (checked every round).

The recorded reward is minus the mean observed loss of the round; the regret is the
environment's pseudo-regret (eq. (2) of Zheng et al. 2020 for two points).

:func:`drive_convex_compiled` runs an algorithm's compiled round
(:mod:`privbandits.algorithms.convex_kernel`) over the environment's chunks of loss parameters
instead, with the environment's compiled losses: the same seed gives the same trajectory.
"""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.base import Algorithm, Curator, LocalAlgorithm, ShuffleAlgorithm
from privbandits.algorithms.convex_kernel import ConvexCuratorKernel, ConvexLocalKernel
from privbandits.core.errors import ValidationError
from privbandits.engine import protocol
from privbandits.engine.recorder import Progress, Recorder
from privbandits.envs.base import Environment

__all__ = ["ConvexChunkRunner", "drive_convex", "drive_convex_compiled", "is_convex_env"]


def is_convex_env(env: Environment) -> bool:
    """Whether ``env`` has continuous actions (a loss environment for bandit convex optimization)."""
    from privbandits.envs.convex import ConvexLossEnv

    return isinstance(env, ConvexLossEnv)


def _points(alg: Algorithm, pts: object, R: int) -> np.ndarray:
    a = np.asarray(pts)
    if a.ndim != 3 or a.shape[0] != R or not np.issubdtype(a.dtype, np.floating):
        raise ValidationError(
            f"algorithm {alg.name!r} must return query points of shape (R={R}, k, d) on a loss "
            f"environment (continuous actions), got {a.dtype} array of shape {a.shape}; "
            "arm-index algorithms run on K-armed or contextual environments"
        )
    return a


def _propose(alg: Curator, t: int, X: np.ndarray, R: int) -> np.ndarray:
    """The curator's query points of round ``t``; an arm-index algorithm, which rejects the loss
    parameters as contexts, is named as such."""
    try:
        pts = alg.select(t, X)
    except ValidationError as exc:
        raise ValidationError(
            f"algorithm {alg.name!r} could not propose query points on a loss environment "
            f"(continuous actions): {exc}; arm-index algorithms run on K-armed or contextual "
            "environments"
        ) from exc
    return _points(alg, pts, R)


def drive_convex(alg: Algorithm, env: Environment, T: int, rec: Recorder, tick: Progress) -> None:
    """Run ``T`` rounds of ``alg`` on the loss environment ``env``, recording into ``rec``."""
    R = env.R
    if isinstance(alg, ShuffleAlgorithm):
        raise ValidationError("shuffle-model algorithms do not run on loss environments")
    if not alg.plays_continuous_actions():
        from privbandits.algorithms.registry import available

        bco = sorted(n for n, cls in available().items() if cls.continuous_actions)
        raise ValidationError(
            f"algorithm {alg.name!r} plays arm indices, not query points: it does not run on a loss "
            f'environment (kind = "convex", continuous actions); the bandit convex optimization '
            f'algorithms are {", ".join(bco)} (and ldp-onepoint with base = "fkm"); arm-index '
            "algorithms run on K-armed or contextual environments"
        )
    if isinstance(alg, LocalAlgorithm):
        client, server = alg.client, alg.server
        rng_client, rng_policy = alg.streams.client, alg.streams.policy
        for t in range(T):
            X = env.next_round()
            # continuous actions: the device validates the public state (the query points in the
            # decision set); its client checks the losses and the points it is handed and clips its
            # message relative to them (arm-index checks do not apply)
            public = protocol.device_public(client, alg.spec, server.public_state(), R)
            pts = _points(alg, client.choose(t, public, X, rng_policy), R)
            losses, reg = env.step(pts)
            protocol.deliver(alg, t, client.randomize(t, public, X, pts, losses, rng_client))
            rec.record(t, reg, -losses.mean(axis=1))
            tick(t + 1)
    elif isinstance(alg, Curator):
        for t in range(T):
            X = env.next_round()
            pts = _propose(alg, t, X, R)
            losses, reg = env.step(pts)
            alg.update(t, X, pts, losses)
            rec.record(t, reg, -losses.mean(axis=1))
            tick(t + 1)
    else:
        raise ValidationError(f"{type(alg).__name__} is not a Curator or LocalAlgorithm")


def convex_kernel(alg: Algorithm) -> ConvexCuratorKernel | ConvexLocalKernel | None:
    """The compiled round of a bandit-convex-optimization algorithm (after reset), or None."""
    k = getattr(alg, "compiled_kernel", None)
    return k if isinstance(k, (ConvexCuratorKernel, ConvexLocalKernel)) else None


class ConvexChunkRunner:
    """Advances one algorithm's compiled round over the rounds of loss-environment chunks, stopping
    at every checkpoint of its recorder (the loop body of :func:`drive_convex_compiled`)."""

    def __init__(self, alg: Algorithm, env: Environment) -> None:
        k = convex_kernel(alg)
        if k is None:
            raise ValidationError(
                f"algorithm {alg.name!r} has no compiled round on a loss environment; use "
                "engine='reference'"
            )
        from privbandits.envs.convex import ConvexLossEnv

        assert isinstance(env, ConvexLossEnv)
        self.k, self.streams = k, alg.streams  # type: ignore[attr-defined]
        self.problem = env.compiled_problem()
        self.losses = np.empty(k.k)
        self.points = np.empty((k.k, env.d))
        self.msg = np.empty(k.message.size) if isinstance(k, ConvexLocalKernel) else None
        self.loop = k.chunk_loop

    def __call__(self, X: np.ndarray, B: int, t: int, rec: Recorder) -> None:
        """Rounds ``t .. t + B - 1`` (the first ``B`` rounds of the chunk's loss parameters ``X``)."""
        k, streams, run, problem = self.k, self.streams, self.loop, self.problem
        start = 0
        while start < B:
            nxt = rec.next_t
            stop = B if nxt < 0 else min(B, nxt - t)
            rounds = (X, *problem, start, stop, t, streams.policy)
            totals = (rec.cum_regret, rec.cum_reward)
            if isinstance(k, ConvexLocalKernel):
                run(
                    k.params,
                    k.public,
                    k.server,
                    *rounds,
                    streams.client,
                    self.losses,
                    self.msg,
                    *totals,
                )
            else:
                run(k.params, k.state, *rounds, streams.server, self.points, self.losses, *totals)
            if t + stop == rec.next_t:
                rec.snapshot()
            start = stop


def drive_convex_compiled(
    alg: Algorithm, env: Environment, T: int, rec: Recorder, tick: Progress
) -> None:
    """Run ``T`` rounds of ``alg``'s compiled round on the loss environment ``env`` (the users'
    loss parameters of each chunk checked first: finite, the declared width)."""
    from privbandits.algorithms.bco.problem import check_loss_parameters

    run = ConvexChunkRunner(alg, env)
    width = getattr(alg.spec, "param_dim", 0)  # type: ignore[attr-defined]
    t = 0
    while t < T:
        ch = env.next_chunk()
        B = min(ch.B, T - t)
        X = np.ascontiguousarray(ch.X, dtype=float)
        check_loss_parameters(alg.name, X[:B].reshape(-1, X.shape[-1]), None, width)
        run(X, B, t, rec)
        env.t = t + B
        t += B
        tick(t)
