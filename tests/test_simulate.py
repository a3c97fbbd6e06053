"""The round loop: reproducibility, common random numbers, checkpoints, trust boundary."""

from __future__ import annotations

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
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState, ShuffledBatch
from privbandits.envs import FiniteActionEnv, SyntheticEnv
from privbandits.simulate import make_checkpoints, simulate


class Recorder(Curator):
    """Plays a fixed rule (arm = t mod K, or random from the policy stream) and records what it sees."""

    name = "recorder"
    settings = ("single", "multi")
    links = ("*",)

    def __init__(self, random: bool = False) -> None:
        super().__init__(random=random)
        self.random = random

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


def test_same_seed_identical_results() -> None:
    env = SyntheticEnv(d=3, K=4, noise="gaussian", noise_scale=0.5)
    a = simulate(make("linucb"), env, 300, replications=3, seed=7)
    b = simulate(make("linucb"), env, 300, replications=3, seed=7)
    np.testing.assert_array_equal(a.regret, b.regret)
    np.testing.assert_array_equal(a.reward, b.reward)
    np.testing.assert_array_equal(a.estimation_error, b.estimation_error)
    c = simulate(make("linucb"), env, 300, replications=3, seed=8)
    assert not np.array_equal(a.regret, c.regret)


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
    noise1 = np.array(first.rewards) - np.array([means[t][ar, a] for t, a in enumerate(first.actions)])
    noise2 = np.array(second.rewards) - np.array([means[t][ar, a] for t, a in enumerate(second.actions)])
    assert not np.array_equal(np.array(first.actions), np.array(second.actions))
    np.testing.assert_allclose(noise1, noise2, atol=1e-12)


def test_regret_and_reward_checkpoints() -> None:
    env = FiniteActionEnv(d=2, K=3, actions=np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.6]]),
                          theta=np.array([1.0, 0.0]), noise="none")
    alg = Recorder()
    res = simulate(alg, env, 30, replications=2, seed=0, checkpoints=[1, 5, 30])
    np.testing.assert_array_equal(res.checkpoints, [1, 5, 30])
    gaps = np.array([0.0, 1.0, 0.4])
    per_round = np.array([gaps[t % 3] for t in range(30)])
    np.testing.assert_allclose(res.regret, np.tile(np.cumsum(per_round)[[0, 4, 29]], (2, 1)), atol=1e-12)
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


def test_progress_callback() -> None:
    seen: list[int] = []
    simulate(make("uniform"), SyntheticEnv(d=2, K=2), 1000, progress=seen.append)
    assert seen[-1] == 1000 and len(seen) == 200 and seen == sorted(seen)


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
        return PrivatizedMessage({"y": rewards + rng.laplace(size=rewards.shape)}, mechanism="laplace")


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

    def __init__(self, leak: bool = False, public: object = None) -> None:
        super().__init__(leak=leak)
        self.leak, self.public = leak, public

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
