"""simulate and its drivers: reproducibility, reference == compiled, engine choice, common random
numbers, checkpoints, progress, trust boundary."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from privbandits.algorithms import make
from privbandits.algorithms.base import (
    Algorithm,
    Client,
    Curator,
    LocalAlgorithm,
    Server,
    ShuffleAlgorithm,
)
from privbandits.core.errors import NotResetError, TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState, ShuffledBatch
from privbandits.core.params import Any_, Bool
from privbandits.envs import FiniteActionEnv, SyntheticEnv
from privbandits.simulate import make_checkpoints, simulate


class Recorder(Curator):
    """Plays a fixed rule (arm = t mod K, or random from the policy stream) and records what it sees."""

    name = "recorder"
    settings = ("single", "multi")
    links = ("*",)
    constraints: ClassVar = {"random": Bool()}

    def __init__(self, random: bool = False) -> None:
        pass

    def reset(self, spec, replications, streams) -> None:
        super().reset(spec, replications, streams)
        self.contexts: list[np.ndarray] = []
        self.rewards: list[np.ndarray] = []
        self.actions: list[np.ndarray] = []

    def select(self, t, contexts):
        self.contexts.append(np.array(contexts, copy=True))
        if self.random:
            return self.streams.policy.integers(0, self.spec.K, self.R)
        return np.full(self.R, t % self.spec.K)

    def update(self, t, contexts, actions, rewards):
        self.actions.append(actions.copy())
        self.rewards.append(np.array(rewards, copy=True))


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_same_seed_identical_results(engine: str) -> None:
    env = SyntheticEnv(d=3, K=4, noise="gaussian", noise_scale=0.5)
    a = simulate(make("linucb"), env, 300, replications=3, seed=7, engine=engine)
    b = simulate(make("linucb"), env, 300, replications=3, seed=7, engine=engine)
    assert a.engine == b.engine == engine
    np.testing.assert_array_equal(a.regret, b.regret)
    np.testing.assert_array_equal(a.reward, b.reward)
    np.testing.assert_array_equal(a.estimation_error, b.estimation_error)
    c = simulate(make("linucb"), env, 300, replications=3, seed=8, engine=engine)
    assert not np.array_equal(a.regret, c.regret)


@pytest.mark.parametrize(
    ("name", "env"),
    [
        ("linucb", lambda: SyntheticEnv(d=3, K=4, noise_scale=0.5)),
        (
            "uniform",
            lambda: SyntheticEnv(d=3, K=4, setting="multi", link="logistic", noise="bernoulli"),
        ),
        ("uniform", lambda: FiniteActionEnv(d=2, K=5, actions="circle")),
    ],
)
def test_reference_and_compiled_drivers_agree(name: str, env) -> None:
    # Same seed, same trajectory under both drivers, at every checkpoint; a horizon spanning
    # several environment chunks (chunk length forced to 64 rounds) and checkpoints inside chunks.
    e = env()
    e.chunk_rounds = lambda: 64
    ref = simulate(
        make(name),
        e,
        200,
        replications=3,
        seed=4,
        engine="reference",
        checkpoints=[1, 63, 64, 65, 150, 200],
    )
    com = simulate(
        make(name),
        e,
        200,
        replications=3,
        seed=4,
        engine="compiled",
        checkpoints=[1, 63, 64, 65, 150, 200],
    )
    assert (ref.engine, com.engine) == ("reference", "compiled")
    np.testing.assert_allclose(com.regret, ref.regret, rtol=0, atol=1e-9)
    np.testing.assert_allclose(com.reward, ref.reward, rtol=0, atol=1e-9)
    if ref.estimation_error is None:
        assert com.estimation_error is None
    else:
        np.testing.assert_allclose(com.estimation_error, ref.estimation_error, rtol=0, atol=1e-9)
    assert e.t == 200


def test_engine_selection_and_errors() -> None:
    env = SyntheticEnv(d=2, K=3)
    assert simulate(make("linucb"), env, 5).engine == "compiled"  # auto: kernel -> compiled
    assert simulate(Recorder(), env, 5).engine == "reference"  # auto: numpy roles -> reference
    with pytest.raises(ValidationError, match="engine must be one of"):
        simulate(make("uniform"), env, 5, engine="fast")
    with pytest.raises(ValidationError, match="has no compiled kernel|compiled kernel"):
        simulate(Recorder(), env, 5, engine="compiled")
    with pytest.raises(ValidationError, match="aggregate"):
        simulate(make("uniform"), FiniteActionEnv(d=2, K=3), 5, engine="aggregate")
    with pytest.raises(TypeError):
        simulate(make("uniform"), env, 5, fast=False)  # the old argument is gone


def test_result_records_params_calibration_and_guarantee() -> None:
    alg = make("linucb", alpha=0.5)
    with pytest.raises(NotResetError, match="reset"):
        alg.guarantee
    res = simulate(alg, SyntheticEnv(d=2, K=3, noise_scale=0.3), 20, replications=2, seed=1)
    assert res.params == alg.get_params() and res.params["alpha"] == 0.5
    assert res.resolved_params == alg.resolved_params() == {"sigma": 0.3, "S": 1.0}
    assert res.guarantee == alg.guarantee and res.guarantee.model == "none"
    assert res.preset == "none" and res.trust_model == "none"
    assert res.env["d"] == 2 and res.seed == 1 and res.wall_time >= 0
    assert res.extra["contexts_clipped"] == 0


def test_algorithms_share_contexts_and_reward_noise() -> None:
    # Common random numbers: two algorithms with the same seed see the same contexts, and the
    # reward of every round is mean(arm) + the same noise variate whatever arm is pulled.
    env = SyntheticEnv(d=3, K=4, noise="gaussian", noise_scale=0.5)
    first, second = Recorder(random=False), Recorder(random=True)
    simulate(first, env, 50, replications=2, seed=3)
    th = env.theta_star.copy()
    simulate(second, env, 50, replications=2, seed=3)
    np.testing.assert_array_equal(th, env.theta_star)
    np.testing.assert_array_equal(np.array(first.contexts), np.array(second.contexts))
    X = np.array(first.contexts)
    means = np.einsum("trkd,rd->trk", X, th)
    ar = np.arange(2)
    noise1 = np.array(first.rewards) - np.array(
        [means[t][ar, a] for t, a in enumerate(first.actions)]
    )
    noise2 = np.array(second.rewards) - np.array(
        [means[t][ar, a] for t, a in enumerate(second.actions)]
    )
    assert not np.array_equal(np.array(first.actions), np.array(second.actions))
    np.testing.assert_allclose(noise1, noise2, atol=1e-12)


def test_regret_and_reward_checkpoints() -> None:
    env = FiniteActionEnv(
        d=2,
        K=3,
        actions=np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.6]]),
        theta=np.array([1.0, 0.0]),
        noise="none",
    )
    alg = Recorder()
    res = simulate(alg, env, 30, replications=2, seed=0, checkpoints=[1, 5, 30])
    np.testing.assert_array_equal(res.checkpoints, [1, 5, 30])
    gaps = np.array([0.0, 1.0, 0.4])
    per_round = np.array([gaps[t % 3] for t in range(30)])
    np.testing.assert_allclose(
        res.regret, np.tile(np.cumsum(per_round)[[0, 4, 29]], (2, 1)), atol=1e-12
    )
    means = np.array([1.0, 0.0, 0.6])
    np.testing.assert_allclose(res.reward[:, -1], np.sum([means[t % 3] for t in range(30)]))
    assert res.estimation_error is None  # the recorder exposes no estimate
    np.testing.assert_allclose(res.final_regret, res.regret[:, -1])
    assert res.summary()["mean"] == pytest.approx(res.final_regret.mean())
    assert res.replications == 2 and res.horizon == 30 and res.algorithm == "recorder"


def test_make_checkpoints() -> None:
    ck = make_checkpoints(1000, log_points=4, every=250, points=[7])
    assert ck.tolist() == sorted({1, 10, 100, 1000, 250, 500, 750, 7})
    assert make_checkpoints(5, log_points=0).tolist() == [5]
    with pytest.raises(ValidationError, match="checkpoints must lie in"):
        make_checkpoints(10, points=[0])
    with pytest.raises(ValidationError, match="horizon"):
        make_checkpoints(0)
    res = simulate(make("uniform"), SyntheticEnv(d=2, K=2), 100, checkpoints=5)
    assert res.checkpoints[-1] == 100 and res.checkpoints[0] == 1


def test_progress_callback_reference() -> None:
    # called with the number of rounds completed, every T // 200 rounds, and with T at the end
    seen: list[int] = []
    simulate(
        make("uniform"), SyntheticEnv(d=2, K=2), 1000, progress=seen.append, engine="reference"
    )
    assert seen == list(range(5, 1001, 5))
    short: list[int] = []
    simulate(make("uniform"), SyntheticEnv(d=2, K=2), 7, progress=short.append, engine="reference")
    assert short == [1, 2, 3, 4, 5, 6, 7]
    odd: list[int] = []
    simulate(make("uniform"), SyntheticEnv(d=2, K=2), 1003, progress=odd.append, engine="reference")
    assert odd[-1] == 1003 and len(odd) == 201 and np.all(np.diff(odd) > 0)


@pytest.mark.parametrize("engine", ["compiled", "auto"])
def test_progress_callback_compiled(engine: str) -> None:
    # the compiled driver reports at chunk ends (at most as often as the reference driver),
    # increasing, and always with T at the end
    for T in (1000, 9000):
        seen: list[int] = []
        simulate(make("uniform"), SyntheticEnv(d=2, K=2), T, progress=seen.append, engine=engine)
        assert seen[-1] == T and np.all(np.diff(seen) > 0) and 1 <= len(seen) <= 201


# -- trust boundary ---------------------------------------------------------------------------------
class _Client(Client):
    def __init__(self, leak: bool) -> None:
        self.leak = leak

    def choose(self, t, public, contexts, rng):
        assert isinstance(public, PublicState)
        return np.zeros(contexts.shape[0], dtype=int)

    def randomize(self, t, public, contexts, actions, rewards, rng):
        if self.leak:
            return rewards  # raw data: must never reach the server
        return PrivatizedMessage(
            {"y": rewards + rng.laplace(size=rewards.shape)}, mechanism="laplace"
        )


class _Server(Server):
    def __init__(self, public: object = None) -> None:
        self.received: list[object] = []
        self._public = public

    def public_state(self):
        return PublicState(n=np.array(len(self.received))) if self._public is None else self._public

    def receive(self, t, message):
        self.received.append(message)

    def receive_batch(self, t, batch):
        self.received.append(batch)


class _Local(LocalAlgorithm):
    name = "test-local"
    links = ("*",)
    constraints: ClassVar = {"leak": Bool(), "public": Any_()}

    def __init__(self, leak: bool = False, public: object = None) -> None:
        pass

    def reset(self, spec, replications, streams) -> None:
        super().reset(spec, replications, streams)
        self.client, self.server = _Client(self.leak), _Server(self.public)


class _Shuffle(ShuffleAlgorithm, _Local):
    name = "test-shuffle"

    def batch_ends(self, t: int) -> bool:
        return (t + 1) % 4 == 0


def test_local_server_receives_only_privatized_messages() -> None:
    alg = _Local()
    simulate(alg, SyntheticEnv(d=2, K=3), 10, replications=2)
    assert len(alg.server.received) == 10
    assert all(isinstance(m, PrivatizedMessage) for m in alg.server.received)


def test_raw_client_output_raises_trust_boundary_error() -> None:
    with pytest.raises(TrustBoundaryError, match="only PrivatizedMessage may reach the server"):
        simulate(_Local(leak=True), SyntheticEnv(d=2, K=3), 10)
    with pytest.raises(TrustBoundaryError):
        simulate(_Shuffle(leak=True), SyntheticEnv(d=2, K=3), 10)


def test_server_must_broadcast_public_state() -> None:
    with pytest.raises(TrustBoundaryError, match="users may only receive PublicState"):
        simulate(_Local(public={"theta": np.zeros(2)}), SyntheticEnv(d=2, K=3), 3)


def test_shuffle_driver_delivers_shuffled_batches() -> None:
    alg = _Shuffle()
    simulate(alg, SyntheticEnv(d=2, K=3), 10, replications=2)
    sizes = [b.n_users for b in alg.server.received]
    assert all(isinstance(b, ShuffledBatch) for b in alg.server.received)
    assert sizes == [4, 4, 2]  # batches close at t = 3, 7 and at the horizon


def test_non_algorithm_rejected() -> None:
    class Plain(Algorithm):  # neither Curator nor Local/Shuffle
        name = "plain"

    with pytest.raises(ValidationError, match="is not a Curator"):
        simulate(Plain(), SyntheticEnv(d=2, K=2), 3)
    with pytest.raises(ValidationError, match="replications"):
        simulate(make("uniform"), SyntheticEnv(d=2, K=2), 3, replications=0)
