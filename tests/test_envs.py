"""Environments: context distributions, settings, reward noise, fixed and replayed action sets."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from privbandits.core.errors import DataBoundError, TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, shuffle_messages
from privbandits.core.rng import make_streams
from privbandits.envs import ContextSequenceEnv, FiniteActionEnv, SyntheticEnv
from privbandits.envs.base import CHUNK_FLOATS, MAX_CHUNK_ROUNDS
from privbandits.envs.contexts import CONTEXT_DISTRIBUTIONS, sample_contexts
from privbandits.envs.noise import RewardNoise


def _rounds(env, R: int, T: int, n: int, seed: int = 0, arm: int = 0):
    env.reset(R, make_streams(seed), T)
    X, M, r = [], [], []
    for _ in range(n):
        X.append(np.array(env.next_round()))
        M.append(env.means.copy())
        r.append(env.pull(np.full(R, arm)))
    return np.array(X), np.array(M), np.array(r)


# -- contexts ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dist", CONTEXT_DISTRIBUTIONS)
def test_every_distribution_respects_the_norm_bound(dist: str) -> None:
    rng = np.random.default_rng(0)
    bound, d = 2.5, 4
    X, nclip = sample_contexts(rng, (2000, 3), d, dist, bound)
    n = np.linalg.norm(X, axis=-1)
    assert X.shape == (2000, 3, d)
    assert n.max() <= bound * (1 + 1e-12)
    if dist in ("sphere", "gaussian_normalized"):
        np.testing.assert_allclose(n, bound, rtol=1e-12)
    if dist == "ball":
        # radius of a uniform point in the d-ball: P(|x| <= r) = (r / bound)^d; KS test
        assert stats.kstest((n / bound).ravel() ** d, "uniform").pvalue > 1e-3
    if dist == "gaussian":
        # N(0, bound^2 I / d): |x|^2 d / bound^2 ~ chi2_d, clipped at bound (chi2_d > d)
        assert nclip == int(np.sum(np.isclose(n, bound)))
        assert nclip / n.size == pytest.approx(stats.chi2(d).sf(d), abs=5 * np.sqrt(0.25 / n.size))
    else:
        assert nclip == 0


def test_gaussian_covariance_and_env_clip_count() -> None:
    # N(0, C_B^2 Sigma / d); Sigma small enough that clipping at C_B has probability ~ e^-9
    cov = 0.05 * np.array([[2.0, 0.5], [0.5, 1.0]])
    env = SyntheticEnv(d=2, K=3, contexts="gaussian", context_cov=cov, context_bound=3.0)
    X, _, _ = _rounds(env, 50, 200, 200)
    emp = np.cov(X.reshape(-1, 2).T)
    # 30000 draws: relative se of a variance ~ sqrt(2/30000) ~ 0.8%, of the covariance ~1.2%
    np.testing.assert_allclose(emp, 9.0 * cov / 2, rtol=0.06)
    small = SyntheticEnv(d=2, K=3, contexts="gaussian", context_bound=1.0)
    _rounds(small, 4, 50, 50)
    assert small.n_clipped > 0  # the recorded clipping policy counts clipped vectors
    with pytest.raises(ValidationError, match="positive definite"):
        SyntheticEnv(d=2, K=3, contexts="gaussian", context_cov=[[1.0, 2.0], [2.0, 1.0]])


@pytest.mark.parametrize("dist", CONTEXT_DISTRIBUTIONS)
@pytest.mark.parametrize("setting", ["single", "multi"])
def test_prefix_property(dist: str, setting: str) -> None:
    # The first 100 rounds of a T = 100 run equal those of a T = 1000 run (same seed): contexts,
    # means and rewards.
    make = lambda: SyntheticEnv(
        d=3, K=4, contexts=dist, setting=setting, link="logistic", noise="bernoulli"
    )
    a = _rounds(make(), 2, 100, 100)
    b = _rounds(make(), 2, 1000, 100)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


# -- settings ------------------------------------------------------------------------------------
@pytest.mark.parametrize("link", ["identity", "logistic", "probit", "poisson"])
def test_single_and_multi_means(link: str) -> None:
    noise = {"identity": "gaussian", "poisson": "poisson"}.get(link, "bernoulli")
    single = SyntheticEnv(d=3, K=5, link=link, noise=noise)
    X, M, _ = _rounds(single, 2, 10, 10)
    from privbandits.core.links import get_link

    mu = get_link(link).mu
    assert X.shape == (10, 2, 5, 3)
    np.testing.assert_allclose(M, mu(np.einsum("trkd,rd->trk", X, single.theta_star)), rtol=1e-12)
    multi = SyntheticEnv(d=3, K=5, setting="multi", link=link, noise=noise)
    X, M, _ = _rounds(multi, 2, 10, 10)
    assert X.shape == (10, 2, 3) and multi.theta_star.shape == (2, 5, 3)
    np.testing.assert_allclose(M, mu(np.einsum("trd,rkd->trk", X, multi.theta_star)), rtol=1e-12)
    assert multi.spec(10).setting == "multi"


def test_block_features_reproduce_multi_param_means() -> None:
    shared = SyntheticEnv(
        d=3, K=4, setting="multi", link="logistic", noise="bernoulli", theta_norm=2.0
    )
    block = SyntheticEnv(
        d=3,
        K=4,
        setting="multi",
        features="block",
        link="logistic",
        noise="bernoulli",
        theta_norm=2.0,
    )
    Xs, Ms, rs = _rounds(shared, 3, 20, 20, seed=4)
    Xb, Mb, rb = _rounds(block, 3, 20, 20, seed=4)
    assert Xb.shape == (20, 3, 4, 12)
    np.testing.assert_array_equal(Ms, Mb)
    np.testing.assert_array_equal(rs, rb)
    from privbandits.core.links import get_link

    np.testing.assert_allclose(
        get_link("logistic").mu(np.einsum("trkd,rd->trk", Xb, block.theta_star)), Mb, rtol=1e-12
    )
    spec = block.spec(20)
    assert spec.setting == "single" and spec.d == 12 and spec.theta_bound == pytest.approx(4.0)
    # block feature of arm a is e_a kron X_t: norm equals the shared context's
    np.testing.assert_allclose(
        np.linalg.norm(Xb, axis=-1), np.linalg.norm(Xs, axis=-1)[..., None].repeat(4, -1)
    )
    with pytest.raises(ValidationError, match="block"):
        SyntheticEnv(d=2, K=3, features="block")


def test_same_seed_same_instance_and_regret_bookkeeping() -> None:
    env = SyntheticEnv(d=3, K=4)
    a = _rounds(env, 2, 30, 30, seed=1)
    th = env.theta_star.copy()
    b = _rounds(env, 2, 30, 30, seed=1)
    np.testing.assert_array_equal(th, env.theta_star)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    _rounds(env, 2, 30, 1, seed=2)
    assert not np.array_equal(th, env.theta_star)
    env.reset(3, make_streams(0), 5)
    env.next_round()
    acts = np.array([0, 1, 2])
    _r, reg = env.step(acts)
    np.testing.assert_allclose(reg, env.means.max(axis=1) - env.means[np.arange(3), acts])
    np.testing.assert_allclose(env.regret(acts), reg)
    assert np.all(reg >= 0)
    json.dumps(env.describe())


# -- chunks ----------------------------------------------------------------------------------------
def _chunks(env, R: int, T: int, seed: int = 0, rounds: int | None = None):
    """All chunks of a T-round run, concatenated: X, means, rewards, best, and the chunk starts."""
    if rounds is not None:
        env.chunk_rounds = lambda: rounds  # instance override: a different chunk length
    env.reset(R, make_streams(seed), T)
    parts, starts, drawn = [], [], 0
    while drawn < T:
        ch = env.next_chunk()
        starts.append(ch.t0)
        parts.append((np.array(ch.X), ch.means, ch.rewards, ch.best))
        drawn += ch.B
    assert drawn == T  # the last chunk stops at the horizon
    return [np.concatenate(p) for p in zip(*parts)], starts


_ENVS = {
    "sphere-single": lambda: SyntheticEnv(d=3, K=4),
    "ball-multi": lambda: SyntheticEnv(d=3, K=4, setting="multi", contexts="ball"),
    "gaussian-logistic": lambda: SyntheticEnv(
        d=3, K=4, contexts="gaussian", link="logistic", noise="bernoulli"
    ),
    "block-poisson": lambda: SyntheticEnv(
        d=2, K=3, setting="multi", features="block", link="poisson", noise="poisson", theta_norm=0.5
    ),
    "normalized-bounded": lambda: SyntheticEnv(
        d=3, K=4, contexts="gaussian_normalized", noise="bounded"
    ),
    "finite": lambda: FiniteActionEnv(d=3, K=5, noise="rademacher", theta_norm=0.5),
    "sequence": lambda: ContextSequenceEnv(
        d=2, K=3, contexts=lambda: (np.full((3, 2), 0.1 * (t % 7)) for t in range(10**6))
    ),
}


@pytest.mark.parametrize("name", sorted(_ENVS))
def test_chunks_serve_the_rounds(name: str) -> None:
    # next_round() walks through the same chunks next_chunk() draws: contexts, means, realized
    # rewards of every arm and best means agree round by round.
    (X, M, Y, best), starts = _chunks(_ENVS[name](), 3, 40, seed=5, rounds=16)
    assert starts == [0, 16, 32]
    env = _ENVS[name]()
    env.chunk_rounds = lambda: 16
    env.reset(3, make_streams(5), 40)
    K = M.shape[-1]
    for t in range(40):
        np.testing.assert_array_equal(env.next_round(), X[t])
        np.testing.assert_array_equal(env.means, M[t])
        arms = np.arange(3) % K
        r, reg = env.step(arms)
        np.testing.assert_array_equal(r, Y[t, np.arange(3), arms])
        np.testing.assert_allclose(reg, best[t] - M[t, np.arange(3), arms], atol=0)
    assert env.t == 40
    np.testing.assert_array_equal(best, M.max(axis=-1))


@pytest.mark.parametrize("name", sorted(_ENVS))
def test_draws_do_not_depend_on_the_chunk_length(name: str) -> None:
    # The streams are consumed round-major, so chunks of 1, 7 or the default length give the
    # same rounds (what makes a run independent of memory settings and of the driver).
    ref, _ = _chunks(_ENVS[name](), 2, 50, seed=9)
    for rounds in (1, 7):
        got, starts = _chunks(_ENVS[name](), 2, 50, seed=9, rounds=rounds)
        assert starts == list(range(0, 50, rounds))
        for a, b in zip(ref, got):
            np.testing.assert_array_equal(a, b)


def test_chunk_length_bounds_memory() -> None:
    big = SyntheticEnv(d=50, K=40)
    big.reset(100, make_streams(0), 10**6)
    B = big.chunk_rounds()
    assert 1 <= B <= MAX_CHUNK_ROUNDS and B * 100 * 40 * 50 <= CHUNK_FLOATS
    ch = big.next_chunk()
    assert ch.X.shape == (B, 100, 40, 50) and ch.means.shape == ch.rewards.shape == (B, 100, 40)
    assert ch.best.shape == (B, 100) and ch.t0 == 0
    huge = SyntheticEnv(d=1000, K=1000)
    huge.reset(10, make_streams(0), 5)
    assert huge.chunk_rounds() == 1  # never zero rounds, even above the memory target
    small = SyntheticEnv(d=2, K=2)
    small.reset(1, make_streams(0), 10**6)
    assert small.chunk_rounds() == MAX_CHUNK_ROUNDS
    short = SyntheticEnv(d=2, K=2)
    short.reset(2, make_streams(0), 10)
    assert short.next_chunk().B == 10  # stops at the horizon
    assert short.next_chunk().B == short.chunk_rounds()  # past the horizon: full chunks again


def test_fixed_action_chunks_are_views() -> None:
    env = FiniteActionEnv(d=2, K=3, actions="circle")
    env.reset(2, make_streams(1), 1000)
    ch = env.next_chunk()
    assert ch.X.shape == (1000, 2, 3, 2) and np.shares_memory(ch.X, env.action_set)
    np.testing.assert_array_equal(ch.means[-1], env.fixed_means)


# -- reward noise --------------------------------------------------------------------------------
def _fixed_env(
    noise: str, link: str = "identity", scale: float = 0.3, theta=(0.6, 0.0)
) -> FiniteActionEnv:
    A = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    return FiniteActionEnv(
        d=2, K=3, actions=A, theta=np.array(theta), link=link, noise=noise, noise_scale=scale
    )


@pytest.mark.parametrize(
    ("noise", "link", "var"),
    [
        ("gaussian", "identity", lambda m: 0.3**2 + 0 * m),
        ("bounded", "identity", lambda m: 0.3**2 / 3 + 0 * m),
        ("bernoulli", "logistic", lambda m: m * (1 - m)),
        ("poisson", "poisson", lambda m: m),
        ("none", "identity", lambda m: 0 * m),
    ],
)
def test_reward_means_and_variances(noise: str, link: str, var) -> None:
    env = _fixed_env(noise, link)
    n, R = 4000, 5
    _, M, r = _rounds(env, R, n, n)
    mean = M[0, 0, 0]
    v = float(var(mean))
    # sample mean within 5 standard errors sqrt(v / N); exact when there is no noise
    N = n * R
    assert abs(r.mean() - mean) <= 5 * np.sqrt(v / N) + 1e-12
    if (
        v > 0
    ):  # sample variance within 5 se (sd of s^2 ~ sqrt(2/N) v for near-Gaussian, looser here)
        assert abs(r.var() - v) <= 10 * v * np.sqrt(2 / N) + 0.05 * v
    if noise == "bounded":
        assert np.all(np.abs(r - mean) <= 0.3)
    if noise == "bernoulli":
        assert set(np.unique(r)) <= {0.0, 1.0}
    if noise == "poisson":
        assert np.all(r == np.round(r)) and r.min() >= 0


def test_reward_model_range_errors_and_sub_gaussian() -> None:
    with pytest.raises(ValidationError, match="noise='bernoulli' needs mean rewards in \\[0, 1\\]"):
        _fixed_env("bernoulli", "identity").reset(1, make_streams(0), 5)
    with pytest.raises(ValidationError, match="non-negative"):
        _fixed_env("poisson", "identity").reset(1, make_streams(0), 5)
    with pytest.raises(ValidationError, match="noise must be one of"):
        RewardNoise("cauchy")
    with pytest.raises(ValidationError, match="noise_scale"):
        RewardNoise("gaussian", -1.0)
    assert RewardNoise("bernoulli").sub_gaussian == 0.5
    assert (
        RewardNoise("gaussian", 0.2).sub_gaussian == 0.2 and RewardNoise("none").sub_gaussian == 0.0
    )


def test_common_random_numbers_across_arms() -> None:
    # the reward variate of a round does not depend on the arm pulled
    env = _fixed_env("gaussian")
    _, _, r0 = _rounds(env, 2, 50, 50, arm=0)
    _, M, r2 = _rounds(env, 2, 50, 50, arm=2)
    np.testing.assert_allclose(r0 - M[..., 0], r2 - M[..., 2], atol=1e-12)


# -- fixed action sets ---------------------------------------------------------------------------
def test_finite_action_env_circle() -> None:
    env = FiniteActionEnv(d=2, K=10, actions="circle", context_bound=1.0)
    spec = env.reset(4, make_streams(0), 100)
    assert spec.fixed_actions and spec.K == 10
    X1 = env.next_round()
    X2 = env.next_round()
    assert X1.shape == (4, 10, 2) and np.shares_memory(X1, env.action_set)  # views, no copies
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_allclose(np.linalg.norm(X1, axis=-1), 1.0)
    np.testing.assert_allclose(env.fixed_means, np.einsum("rkd,rd->rk", X1, env.theta_star))
    with pytest.raises(ValueError):
        env.action_set[0, 0, 0] = 3.0  # read-only
    ang = np.arctan2(X1[..., 1], X1[..., 0]) % (2 * np.pi)
    assert stats.kstest(ang.ravel() / (2 * np.pi), "uniform").pvalue > 1e-3
    with pytest.raises(ValidationError, match="d=2"):
        FiniteActionEnv(d=3, K=4, actions="circle")
    with pytest.raises(ValidationError, match="shape"):
        FiniteActionEnv(d=2, K=3, actions=np.ones((2, 2)))
    with pytest.raises(ValidationError, match="norm"):
        FiniteActionEnv(d=2, K=1, actions=np.array([[1.0, 1.0]]))


# -- context sequences ----------------------------------------------------------------------------
def test_context_sequence_env() -> None:
    rng = np.random.default_rng(0)
    seq = [rng.normal(size=(3, 2)) / 3 for _ in range(20)]
    env = ContextSequenceEnv(d=2, K=3, contexts=lambda: iter(seq))
    X, _M, _ = _rounds(env, 2, 20, 20)
    np.testing.assert_array_equal(X[:, 0], np.array(seq))  # (K, d) broadcast to every replication
    X2, _, _ = _rounds(env, 2, 20, 20)  # a callable replays the same sequence
    np.testing.assert_array_equal(X, X2)
    with pytest.raises(ValidationError, match="must have shape"):
        _rounds(ContextSequenceEnv(d=2, K=3, contexts=[np.zeros((4, 2))]), 1, 1, 1)
    with pytest.raises(DataBoundError, match="above the declared bound"):
        _rounds(ContextSequenceEnv(d=2, K=3, contexts=[np.ones((3, 2))]), 1, 1, 1)
    with pytest.raises(ValidationError, match="NaN"):
        _rounds(ContextSequenceEnv(d=2, K=3, contexts=[np.full((3, 2), np.nan)]), 1, 1, 1)
    with pytest.raises(ValidationError, match="ended after 1 rounds"):
        _rounds(ContextSequenceEnv(d=2, K=3, contexts=[np.zeros((3, 2))]), 1, 2, 2)
    per_rep = ContextSequenceEnv(d=2, K=3, contexts=[np.zeros((2, 3, 2))] * 3)
    X, _, _ = _rounds(per_rep, 2, 3, 3)
    assert X.shape == (3, 2, 3, 2)


def test_parameter_validation() -> None:
    with pytest.raises(ValidationError, match="d must be"):
        SyntheticEnv(d=0, K=2)
    with pytest.raises(ValidationError, match="contexts must be one of"):
        SyntheticEnv(d=2, K=2, contexts="cube")
    with pytest.raises(ValidationError, match="theta must have shape"):
        SyntheticEnv(d=2, K=2, theta=np.ones(3)).reset(1, make_streams(0), 1)
    with pytest.raises(ValidationError, match="theta_norm"):
        SyntheticEnv(d=2, K=2, theta_norm=0.0)


def test_rademacher_rewards_are_pm1_with_the_right_mean() -> None:
    # r in {-1, +1} with P(+1) = (1 + mu)/2, so E[r] = mu and Var[r] = 1 - mu^2 <= 1:
    # with 2e5 draws the mean's se is <= 1/sqrt(2e5) ~ 0.0022; test at 5 se.
    env = FiniteActionEnv(
        d=2,
        K=3,
        actions=[[0.6, 0.0], [0.0, -0.8], [0.1, 0.1]],
        theta=[1.0, 0.0],
        noise="rademacher",
    )
    n = 200_000
    env.reset(1, make_streams(3), n)
    draws = np.concatenate(
        [env.next_chunk().rewards[:, 0, 0] for _ in range(-(-n // env.chunk_rounds()))]
    )
    assert draws.size == n
    assert set(np.unique(draws)) == {-1.0, 1.0}
    assert abs(draws.mean() - 0.6) < 5 / np.sqrt(n)
    assert env.spec(10).reward_range == (-1.0, 1.0)


def test_shuffle_rejects_mixed_message_counts() -> None:
    msgs = [
        PrivatizedMessage({"z": np.zeros((2, 3)), "bits_multi": np.zeros((2, 4))}, mechanism="m")
    ] * 3
    with pytest.raises(TrustBoundaryError, match="same message count"):
        shuffle_messages(msgs, np.random.default_rng(0))
