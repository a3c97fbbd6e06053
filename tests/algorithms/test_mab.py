"""K-armed black boxes (UCB1, EXP3, Tsallis-INF, successive elimination) and the K-armed
environment."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privbandits as pb
from privbandits.algorithms.mab.successive_elimination import elimination_radius
from privbandits.algorithms.mab.tsallis_inf import tsallis_weights
from privbandits.core.errors import ValidationError
from privbandits.core.rng import make_streams


# -- environment ----------------------------------------------------------------------------------
def test_k_armed_env_is_one_hot_with_the_means_as_theta() -> None:
    env = pb.MultiArmedEnv(K=4, means="gap", gap=0.3)
    spec = env.reset(5, make_streams(0), 10)
    assert spec.d == spec.K == 4 and spec.fixed_actions and spec.reward_range == (0.0, 1.0)
    assert spec.theta_bound == 2.0  # means in [0, 1]^4
    X = env.next_round()
    np.testing.assert_array_equal(X, np.broadcast_to(np.eye(4), (5, 4, 4)))
    th = env.theta_star
    assert th.shape == (5, 4)
    np.testing.assert_allclose(np.sort(th, axis=1)[:, -1] - np.sort(th, axis=1)[:, -2], 0.3)
    r, reg = env.step(np.zeros(5, dtype=np.int64))
    assert set(np.unique(r)) <= {0.0, 1.0}
    np.testing.assert_allclose(reg, th.max(axis=1) - th[:, 0])


def test_k_armed_env_bernoulli_rewards_have_the_arm_means() -> None:
    # 20000 rounds x 2 replications of arm 2: mean within 5 standard errors of 0.7
    env = pb.MultiArmedEnv(K=3, means=[0.1, 0.4, 0.7])
    env.reset(2, make_streams(1), 20_000)
    total = 0.0
    for _ in range(20_000):
        env.next_round()
        total += env.pull(np.full(2, 2, dtype=np.int64)).sum()
    se = math.sqrt(0.7 * 0.3 / 40_000)
    assert abs(total / 40_000 - 0.7) < 5 * se


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"K": 1}, "K"),
        ({"K": 3, "means": [0.1, 0.2]}, "means"),
        ({"K": 2, "means": [0.1, 1.5]}, "means"),
        ({"K": 2, "means": "zipf"}, "means"),
        ({"K": 2, "gap": 0.0}, "gap"),
    ],
)
def test_k_armed_env_rejects_bad_arguments(kw: dict, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        pb.MultiArmedEnv(**kw)


def test_k_armed_env_runs_from_a_config_table() -> None:
    from privbandits.experiments.units import build_env

    env = build_env(
        {"kind": "k-armed", "K": 5, "means": "uniform", "noise": "gaussian", "noise_scale": 0.2}
    )
    assert isinstance(env, pb.MultiArmedEnv) and env.reward_range() == pytest.approx((-0.8, 1.8))


# -- Tsallis-INF weights --------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(L=st.lists(st.floats(-100, 100), min_size=2, max_size=12), eta=st.floats(0.01, 5.0))
def test_tsallis_weights_form_a_distribution_of_the_paper_form(L: list[float], eta: float) -> None:
    Lv = np.array(L)
    w = np.empty_like(Lv)
    tsallis_weights(Lv, eta, w)
    assert np.all(w > 0) and w.sum() == pytest.approx(1.0, abs=1e-9)
    # w_i = 4 (eta (L_i - x))^-2 with one common x: L_i - 2 / (eta sqrt(w_i)) is the same for all i
    x = Lv - 2.0 / (eta * np.sqrt(w))
    assert np.ptp(x) <= 1e-6 * (1.0 + np.abs(Lv).max() + 2.0 / eta)
    assert np.all(x < Lv.min())
    # smaller cumulative loss, larger weight
    order = np.argsort(Lv)
    assert np.all(np.diff(w[order]) <= 1e-12)


# -- the black boxes ------------------------------------------------------------------------------
def _final(
    name: str, env: pb.MultiArmedEnv, T: int, R: int = 8, seed: int = 0, **kw: object
) -> np.ndarray:
    return pb.simulate(pb.make(name, **kw), env, T, replications=R, seed=seed).final_regret


@pytest.mark.parametrize("name", ["ucb1", "exp3", "tsallis-inf", "successive-elimination"])
def test_black_boxes_beat_uniform_play(name: str) -> None:
    # gap 0.4, K = 4, T = 5000: uniform play has regret 3/4 * 0.4 * 5000 = 1500; each black box
    # stays below half of that on average over 8 replications
    env = pb.MultiArmedEnv(K=4, means="gap", gap=0.4)
    assert _final(name, env, 5000).mean() < 750


def test_ucb1_regret_is_logarithmic() -> None:
    # stochastic instance: regret from T to 4T grows by far less than 4x (O(log T): about +20%)
    env = pb.MultiArmedEnv(K=3, means="gap", gap=0.5)
    res = pb.simulate(pb.make("ucb1"), env, 8000, replications=8, seed=3, checkpoints=[2000, 8000])
    r = res.regret.mean(axis=0)
    assert r[1] / r[0] < 2.0


def test_ucb1_tries_every_arm_first() -> None:
    alg = pb.make("ucb1")
    pb.simulate(alg, pb.MultiArmedEnv(K=6), 6, replications=4)
    np.testing.assert_array_equal(alg.counts(), np.ones((4, 6)))


def test_exp3_probabilities_are_a_distribution() -> None:
    alg = pb.make("exp3")
    pb.simulate(alg, pb.MultiArmedEnv(K=5), 500, replications=3)
    p = alg.probabilities()
    assert np.all(p > 0) and np.allclose(p.sum(axis=1), 1.0)
    assert alg.resolved_params()["eta"] == pytest.approx(math.sqrt(2 * math.log(5) / (500 * 5)))


def test_successive_elimination_identifies_the_best_arm() -> None:
    # alpha = 0.1: the best arm survives in every replication but at most a few (binomial(200, 0.1)
    # has mean 20; the union bound is loose, so no failures are expected; allow 20)
    env = pb.MultiArmedEnv(K=3, means="gap", gap=0.6)
    alg = pb.make("successive-elimination", alpha=0.1)
    pb.simulate(alg, env, 1500, replications=200, seed=4)
    best = env.theta_star.argmax(axis=1)
    assert alg.done().mean() > 0.95
    assert (alg.recommendation() != best).sum() <= 20


def test_elimination_radius_formula() -> None:
    assert elimination_radius(0.5, 3, 4.0, 0.1) == pytest.approx(
        0.5 * math.sqrt(2 * math.log(4 * 3 * 16 / 0.1) / 4)
    )
