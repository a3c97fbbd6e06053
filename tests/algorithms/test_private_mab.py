"""Private K-armed bandits: DP-UCB (Mishra & Thakurta 2015), DP-SE (Sajed & Sheffet 2019),
AdaP-UCB and AdaP-KLUCB (Azize & Basu 2022).

Constants against the reference values of the implementation notes (section "testable properties")
and hand computations; the noise actually added against the calibration (z-tests whose thresholds
come from the sample size); the episode and epoch structure; one release's privacy loss from
histograms; and learning on an easy instance.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privbandits as pb
from privbandits.algorithms.mab.adap_ucb import adap_ucb_index, bernoulli_kl, kl_ucb_index
from privbandits.algorithms.mab.dp_se import epoch_length, epoch_threshold
from privbandits.algorithms.mab.dp_ucb import confidence_relaxation
from privbandits.algorithms.mab.private import (
    argmax_first,
    laplace_tree_insert,
    tree_prefix_sum,
    unit_reward,
)
from privbandits.core.errors import ValidationError
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.tree import TreeAggregator, node_decomposition

PRIVATE = ("dp-ucb", "dp-se", "adap-ucb", "adap-klucb")
#: Two-sided z bound at family-wise level 1e-4 over the few statistics of one test (Bonferroni).
Z = 4.5


def _spec(K: int = 5, T: int = 100_000, lo: float = 0.0, hi: float = 1.0) -> EnvSpec:
    return EnvSpec(d=K, K=K, horizon=T, reward_range=(lo, hi), fixed_actions=True)


# -- constants: reference values of the implementation notes and hand computations ----------------
def test_dp_se_epoch_lengths_and_thresholds_match_the_reference_values() -> None:
    # K = 5, beta = 1/T, T = 1e7: R_e before flooring (the "+1" included) 2536.29, 10851.95, 45065.60
    beta = 1e-7
    for e, R_ref, thr_ref in (
        (1, 2536.29, 0.14005),
        (2, 10851.95, 0.06628),
        (3, 45065.60, 0.03220),
    ):
        R = epoch_length(5.0, float(e), 1.0, beta)
        assert R == math.floor(R_ref)
        assert epoch_threshold(5.0, float(e), R, 1.0, beta) == pytest.approx(thr_ref, rel=2e-4)
    # by hand at e = 1: h_1 = sqrt(ln(4e8)/(2 R_1)), c_1 = ln(2e8)/R_1
    R1 = epoch_length(5.0, 1.0, 1.0, beta)
    h1, c1 = math.sqrt(math.log(4e8) / (2 * R1)), math.log(2e8) / R1
    assert h1 == pytest.approx(0.062488, rel=1e-4) and c1 == pytest.approx(0.0075361, rel=2e-4)
    assert epoch_threshold(5.0, 1.0, R1, 1.0, beta) == pytest.approx(2 * h1 + 2 * c1, rel=1e-12)
    # eps = 0.1: the privacy term binds in epoch 1 only
    R1p = epoch_length(5.0, 1.0, 0.1, beta)
    assert R1p == math.floor(3059.21) == math.floor(8 * math.log(2e8) / (0.1 * 0.5)) + 1
    assert math.log(2e8) / (0.1 * R1p) == pytest.approx(0.062480, rel=2e-4)
    assert epoch_threshold(5.0, 1.0, R1p, 0.1, beta) == pytest.approx(0.23875, rel=2e-4)
    for e in (2.0, 3.0):
        assert epoch_length(5.0, e, 0.1, beta) == epoch_length(5.0, e, 1.0, beta)


def test_dp_ucb_confidence_relaxation_matches_the_reference_values() -> None:
    assert confidence_relaxation(5, 10**5, 1.0, 0.1) == pytest.approx(11842.07, rel=1e-6)
    assert confidence_relaxation(5, 10**7, 1.0, 0.1) == pytest.approx(29629.47, rel=1e-6)
    lnT = math.log(1e5)
    assert confidence_relaxation(5, 10**5, 2.0, 0.1) == pytest.approx(
        5 * lnT**2 * math.log(5e5 * lnT / 0.1) / 2
    )


def test_adap_ucb_index_matches_the_reference_values() -> None:
    # alpha = 3.1, eps = 1: t_l = 1000, N_a = 64 (len 32); t_l = 1e6, N_a = 1024 (len 512)
    for t_l, length, expl, priv in (
        (1000.0, 32.0, 0.60677, 0.66919),
        (1e6, 512.0, 0.20958, 0.083649),
    ):
        assert adap_ucb_index(0.25, length, t_l, 1.0, 3.1) == pytest.approx(
            0.25 + expl + priv, rel=5e-5
        )
        assert adap_ucb_index(0.0, length, t_l, 1e300, 3.1) == pytest.approx(expl, rel=5e-5)
    assert 1.0 / (1.0 * 32) == 0.03125 and 1.0 / 512 == pytest.approx(0.0019531, rel=1e-4)


@given(
    mu=st.floats(-0.5, 1.5),
    length=st.sampled_from([1.0, 2.0, 16.0, 1024.0]),
    t_l=st.floats(2.0, 1e7),
    eps=st.floats(0.05, 20.0),
)
@settings(max_examples=60, deadline=None)
def test_kl_ucb_index_is_the_largest_q_within_the_kl_level(
    mu: float, length: float, t_l: float, eps: float
) -> None:
    alpha = 3.1
    q = kl_ucb_index(mu, length, t_l, eps, alpha)
    p = min(max(mu + alpha * math.log(t_l) / (eps * length), 0.0), 1.0)
    level = alpha * math.log(t_l) / length
    assert p <= q <= 1.0
    if q < 1.0 - 1e-9:
        assert bernoulli_kl(p, q) <= level + 1e-9
        assert bernoulli_kl(p, min(q + 1e-6, 1.0)) > level  # bisection to 2^-50: maximal up to 1e-6


def test_bernoulli_kl_by_hand() -> None:
    assert bernoulli_kl(0.5, 0.5) == 0.0
    assert bernoulli_kl(0.2, 0.6) == pytest.approx(
        0.2 * math.log(0.2 / 0.6) + 0.8 * math.log(0.8 / 0.4)
    )
    assert (
        bernoulli_kl(0.0, 0.3) == pytest.approx(-math.log(0.7))
        and bernoulli_kl(0.3, 1.0) == math.inf
    )


# -- calibration and guarantee from the noise actually added --------------------------------------
def test_dp_ucb_calibration_by_hand() -> None:
    spec = _spec(K=5, T=100_000)
    cal = pb.make("dp-ucb", epsilon=1.0).calibrate(spec)
    h = (100_000).bit_length()
    assert h == 17 and cal.resolved["levels"] == h
    assert cal.resolved["epsilon_0"] == pytest.approx(0.2) and cal.resolved[
        "node_scale"
    ] == pytest.approx(85.0)
    assert cal.resolved["Gamma"] == pytest.approx(11842.07, rel=1e-6)
    # accountant: K trees x h nodes x (1 / node scale)
    assert cal.guarantee.epsilon == pytest.approx(5 * 17 / 85.0) and cal.guarantee.delta == 0.0
    assert cal.guarantee.model == "central" and cal.meets_request
    full = pb.make("dp-ucb", epsilon=1.0, per_arm_budget="full").calibrate(spec)
    assert full.resolved["node_scale"] == pytest.approx(17.0)
    assert full.guarantee.epsilon == pytest.approx(17 / 17.0) and "parallel" in full.guarantee.notes
    assert "library's argument" in full.guarantee.notes


@pytest.mark.parametrize("name", ["dp-se", "adap-ucb", "adap-klucb"])
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_release_algorithms_account_their_laplace_scale(name: str, eps: float) -> None:
    spec = _spec(K=4, T=10_000, lo=-1.0, hi=2.0)
    cal = pb.make(name, epsilon=eps).calibrate(spec)
    g = cal.guarantee
    assert g.epsilon == pytest.approx(eps, rel=1e-12) and g.delta == 0.0 and g.model == "central"
    if name == "dp-se":
        R1 = epoch_length(4.0, 1.0, eps, 1e-4)
        assert cal.resolved["beta"] == 1e-4 and cal.resolved["R_1"] == R1
        assert cal.resolved["laplace_scale_1"] == pytest.approx(1.0 / (eps * R1))
    else:
        assert cal.resolved["laplace_scale_per_sample"] == pytest.approx(1.0 / eps)


# -- the tree counter -----------------------------------------------------------------------------
def test_tree_counter_releases_the_nodes_of_the_binary_decomposition() -> None:
    rng = np.random.default_rng(0)
    leaves = rng.random(37)
    h = 6
    alpha, noisy = np.zeros(h), np.zeros(h)
    agg = TreeAggregator(37, 1, sigma=0.0, leaf_bound=1.0, rng=np.random.default_rng(1))
    gen = np.random.default_rng(2)
    for s in range(1, 38):
        laplace_tree_insert(alpha, noisy, s, float(leaves[s - 1]), 0.0, gen)
        agg.add(np.array([[leaves[s - 1]]]))
        assert tree_prefix_sum(noisy, s) == pytest.approx(leaves[:s].sum(), rel=1e-12)
        assert tree_prefix_sum(noisy, s) == pytest.approx(float(agg.prefix_sum()[0, 0]), rel=1e-12)
        for level, start, end in node_decomposition(s):
            assert noisy[level] == pytest.approx(leaves[start - 1 : end].sum(), rel=1e-12)


def test_tree_counter_noise_variance_is_popcount_times_two_scale_squared() -> None:
    # 20000 independent trees of 12 leaves; the noise of prefix(s) is a sum of popcount(s)
    # independent Lap(b): variance popcount(s) 2 b^2; z^2 has variance 2 + 3/popcount <= 5
    n, T, b = 20_000, 12, 0.7
    gen = np.random.default_rng(5)
    noise = np.zeros((n, T))
    for i in range(n):
        alpha, noisy = np.zeros(4), np.zeros(4)
        for s in range(1, T + 1):
            laplace_tree_insert(alpha, noisy, s, 0.5, b, gen)
            noise[i, s - 1] = tree_prefix_sum(noisy, s) - 0.5 * s
    for s in (1, 3, 7, 8, 11):
        z = noise[:, s - 1] / math.sqrt(s.bit_count() * 2 * b * b)
        assert abs(z.mean()) < Z / math.sqrt(n)
        assert abs((z**2).mean() - 1.0) < Z * math.sqrt(5.0 / n)


def test_dp_ucb_adds_the_calibrated_tree_noise() -> None:
    # the algorithm's own update step on a fixed (non-adaptive) schedule: arm 0 twice as often as
    # arm 1, rewards 0.5; private sum - exact sum (the exact dyadic sums at the set bits of n_a)
    # has variance popcount(n_a) 2 b^2 with b = h / eps_0
    R, K, T = 4000, 2, 40
    spec = _spec(K=K, T=T)
    alg = pb.make("dp-ucb", epsilon=2.0)
    alg.reset(spec, R, make_streams(11))
    b = alg.calibration.resolved["node_scale"]
    assert b == pytest.approx((40).bit_length() / 1.0)
    X = np.broadcast_to(np.eye(K), (R, K, K))
    z = []
    for t in range(T):
        alg.update(t, X, np.full(R, 0 if t % 3 else 1, dtype=np.int64), np.full(R, 0.5))
        if t in (10, 23, 39):
            n, alpha, _noisy, _s = alg.kernel.state
            priv = alg.private_sums()
            for a in range(K):
                m = int(n[0, a])
                exact = sum(alpha[0, a, j] for j in range(alpha.shape[2]) if (m >> j) & 1)
                assert exact == pytest.approx(0.5 * m)
                z.append((priv[:, a] - 0.5 * m) / math.sqrt(m.bit_count() * 2 * b * b))
    for zz in z:  # 6 statistics x 2 moments: Z = 4.5 keeps the family-wise level below 1e-4
        assert abs(zz.mean()) < Z / math.sqrt(zz.size)
        assert abs((zz**2).mean() - 1.0) < Z * math.sqrt(5.0 / zz.size)


# -- the noise of the releases --------------------------------------------------------------------
def test_dp_se_releases_epoch_means_with_the_calibrated_laplace_noise() -> None:
    # deterministic rewards: the epoch mean is the arm mean, so mu_tilde - mean is the noise alone,
    # Lap(1/(eps R_1)): z = noise eps R_1 has mean 0, E z^2 = 2 (var z^2 = 20), E|z| = 1 (var 1)
    R, eps = 3000, 5.0
    env = pb.MultiArmedEnv(K=2, means=[0.2, 0.7], noise="none")
    alg = pb.make("dp-se", epsilon=eps, beta=0.5)
    R1 = epoch_length(2.0, 1.0, eps, 0.5)
    pb.simulate(alg, env, int(2 * R1), replications=R, seed=3)
    assert np.all(alg.epochs_completed() == 1)
    z = ((alg.private_means() - np.array([0.2, 0.7])) * eps * R1).ravel()
    n = z.size
    assert abs(z.mean()) < Z * math.sqrt(2.0 / n)
    assert abs((z**2).mean() - 2.0) < Z * math.sqrt(20.0 / n)
    assert abs(np.abs(z).mean() - 1.0) < Z * math.sqrt(1.0 / n)


def test_adap_releases_episode_means_with_the_calibrated_laplace_noise() -> None:
    R, eps, K = 2000, 0.5, 3
    means = np.array([0.1, 0.5, 0.8])
    env = pb.MultiArmedEnv(K=K, means=means, noise="none")
    alg = pb.make("adap-ucb", epsilon=eps)
    pb.simulate(alg, env, 300, replications=R, seed=4)
    length = alg.episode_lengths()
    z = ((alg.private_means() - means) * eps * length).ravel()
    n = z.size
    assert abs(z.mean()) < Z * math.sqrt(2.0 / n)
    assert abs((z**2).mean() - 2.0) < Z * math.sqrt(20.0 / n)
    assert abs(np.abs(z).mean() - 1.0) < Z * math.sqrt(1.0 / n)


def test_one_release_has_privacy_loss_at_most_epsilon() -> None:
    # the first release of arm 0 is r + Lap(1/eps) with r = 0 or r = 1 (neighbouring rewards):
    # in every bin with enough mass, ln(p0 / p1) <= eps up to sampling error (delta method:
    # sd of a log count ratio ~ sqrt(1/n0 + 1/n1)); Bonferroni over the bins
    eps, R = 1.0, 40_000
    out = []
    for mean0, seed in ((0.0, 21), (1.0, 22)):
        env = pb.MultiArmedEnv(K=2, means=[mean0, 0.5], noise="none")
        alg = pb.make("adap-ucb", epsilon=eps)
        pb.simulate(alg, env, 2, replications=R, seed=seed)
        out.append(alg.private_means()[:, 0])
    edges = np.linspace(-3.0, 4.0, 15)
    c0, _ = np.histogram(out[0], edges)
    c1, _ = np.histogram(out[1], edges)
    keep = (c0 >= 200) & (c1 >= 200)
    assert keep.sum() >= 8
    lr = np.abs(np.log(c0[keep] / c1[keep]))
    sd = np.sqrt(1.0 / c0[keep] + 1.0 / c1[keep])
    zb = 3.0 + math.sqrt(2.0 * math.log(keep.sum()))
    assert np.all(lr <= eps + zb * sd), (lr, sd)
    # the bound is attained in the tails (the test can see a larger loss)
    assert lr.max() > eps - zb * sd[lr.argmax()]


# -- structure ------------------------------------------------------------------------------------
@given(
    K=st.integers(2, 5),
    T=st.integers(1, 400),
    seed=st.integers(0, 2**16),
    eps=st.floats(0.1, 10.0),
    kl=st.booleans(),
)
@settings(max_examples=25, deadline=None)
def test_adap_episodes_double_the_pull_count(
    K: int, T: int, seed: int, eps: float, kl: bool
) -> None:
    alg = pb.make("adap-klucb" if kl else "adap-ucb", epsilon=eps)
    pb.simulate(alg, pb.MultiArmedEnv(K=K), T, replications=3, seed=seed)
    N, length = alg.counts(), alg.episode_lengths()
    assert np.all(N.sum(axis=1) == T)
    current = alg.kernel.state[4][:, 0].astype(int)
    for r in range(3):
        for a in range(K):
            L = length[r, a]
            assert L >= 1 and (int(L) & (int(L) - 1)) == 0  # a power of two: 1, 2, 4, ...
            if N[r, a] == 0:
                continue
            done = 1 if L == 1 and N[r, a] == 1 else 2 * L  # pulls after the last released episode
            if T > K and a == current[r]:
                assert done <= N[r, a] < 2 * done  # an episode running: at most doubling
            else:
                assert N[r, a] == done
            # releases of this arm: 1 + log2(L) <= floor(log2 T) + 1
            assert math.log2(L) + 1 <= math.floor(math.log2(T)) + 1


def test_dp_se_eliminates_round_robin_within_epochs() -> None:
    env = pb.MultiArmedEnv(K=3, means=[0.9, 0.1, 0.1], noise="bernoulli")
    alg = pb.make("dp-se", epsilon=2.0, beta=0.5)
    R1 = epoch_length(3.0, 1.0, 2.0, 0.5)
    res = pb.simulate(alg, env, int(3 * R1) + 50, replications=4, seed=2)
    assert np.all(alg.epochs_completed() == 1)
    np.testing.assert_array_equal(alg.surviving(), np.tile([True, False, False], (4, 1)))
    # after elimination only arm 0 is played: regret frozen at 2 R1 * 0.8
    np.testing.assert_allclose(res.final_regret, 2 * R1 * 0.8)


def test_dp_ucb_plays_each_arm_first_then_the_largest_index() -> None:
    env = pb.MultiArmedEnv(K=4, means=[0.1, 0.2, 0.3, 0.4], noise="none")
    alg = pb.make("dp-ucb", epsilon=1.0)
    pb.simulate(alg, env, 4, replications=2, seed=0)
    np.testing.assert_array_equal(alg.counts(), np.ones((2, 4)))
    pb.simulate(alg, env, 403, replications=2, seed=0)
    assert np.all(alg.counts().sum(axis=1) == 403) and np.all(alg.counts() >= 1)


@pytest.mark.parametrize("name", PRIVATE)
def test_unplayed_arms_come_first_whatever_the_round_index(name: str) -> None:
    spec = _spec(K=3, T=50)
    alg = pb.make(name, epsilon=1.0)
    alg.reset(spec, 2, make_streams(0))
    X = np.broadcast_to(np.eye(3), (2, 3, 3))
    for t in (0, 49, 10**9):
        np.testing.assert_array_equal(alg.select(t, X), [0, 0])
    alg.update(0, X, np.array([0, 0]), np.array([1.0, 0.0]))
    for t in (1, 10**9):
        np.testing.assert_array_equal(alg.select(t, X), [1, 1])
    with pytest.raises(ValidationError, match="round index t must be an integer >= 0"):
        alg.select(-1, X)


def test_shared_helpers() -> None:
    assert unit_reward(5.0, -1.0, 1.0) == 1.0 and unit_reward(-7.0, -1.0, 1.0) == 0.0
    assert unit_reward(0.0, -1.0, 3.0) == 0.25
    assert argmax_first(np.array([1.0, 3.0, 3.0]), np.ones(3)) == 1
    assert argmax_first(np.array([1.0, 3.0, 3.0]), np.array([1.0, 0.0, 1.0])) == 2
    assert argmax_first(np.array([1.0]), np.zeros(1)) == -1


@pytest.mark.parametrize("lo, hi", [(0.0, 1.0), (-1.0, 3.0)])
def test_unit_reward_clip_at_inside_and_beyond_the_range(lo: float, hi: float) -> None:
    width = hi - lo
    assert unit_reward(hi, lo, hi) == 1.0 and unit_reward(lo, lo, hi) == 0.0  # at the bounds
    inside = 1e-9 * width
    assert unit_reward(hi - inside, lo, hi) == pytest.approx(1.0 - 1e-9, abs=1e-15)  # just inside
    assert unit_reward(lo + inside, lo, hi) == pytest.approx(1e-9, abs=1e-15)
    for beyond in (1e-9, 1.0, 1e300, math.inf):  # beyond
        assert unit_reward(hi + beyond, lo, hi) == 1.0
        assert unit_reward(lo - beyond, lo, hi) == 0.0


def test_rewards_outside_the_range_are_clipped_before_any_statistic() -> None:
    # Gaussian rewards with a declared range [0, 1]: the counters' exact sums stay within [0, n_a]
    env = pb.MultiArmedEnv(
        K=2, means=[0.5, 0.5], noise="gaussian", noise_scale=3.0, reward_range=(0.0, 1.0)
    )
    alg = pb.make("dp-ucb", epsilon=1.0)
    pb.simulate(alg, env, 64, replications=4, seed=1)
    n, alpha, _noisy, _s = alg.kernel.state
    for r in range(4):
        for a in range(2):
            m = int(n[r, a])
            exact = sum(alpha[r, a, j] for j in range(alpha.shape[2]) if (m >> j) & 1)
            assert 0.0 <= exact <= m


# -- learning -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", PRIVATE)
def test_private_mab_learns_an_easy_instance(name: str) -> None:
    env = pb.MultiArmedEnv(K=2, means=[0.9, 0.1])
    T = 30_000
    uniform = pb.simulate(pb.make("uniform"), env, T, replications=4, seed=7).final_regret.mean()
    reg = pb.simulate(pb.make(name, epsilon=1.0), env, T, replications=4, seed=7).final_regret
    assert uniform == pytest.approx(0.4 * T, rel=0.05)
    assert reg.max() < 0.3 * uniform, (name, reg)


def test_more_budget_less_regret_for_adap() -> None:
    env = pb.MultiArmedEnv(K=5, means=[0.75, 0.625, 0.5, 0.375, 0.25])
    lo = pb.simulate(
        pb.make("adap-ucb", epsilon=0.05), env, 20_000, replications=6, seed=9
    ).final_regret
    hi = pb.simulate(
        pb.make("adap-ucb", epsilon=5.0), env, 20_000, replications=6, seed=9
    ).final_regret
    assert hi.mean() < lo.mean()


# -- the reproduction preset ----------------------------------------------------------------------
def test_azize2022_fig2_preset_matches_the_experiment() -> None:
    from privbandits.experiments.config import Overrides
    from privbandits.experiments.presets import available_presets, load_preset

    assert available_presets()["azize2022-fig2"].startswith("Azize & Basu (2022), Figure 2")
    cfg = load_preset("azize2022-fig2")
    assert (cfg.horizon, cfg.replications) == (10_000_000, 20)
    assert cfg.env["kind"] == "k-armed" and list(cfg.env["means"]) == [
        0.75,
        0.625,
        0.5,
        0.375,
        0.25,
    ]
    assert tuple(e.name for e in cfg.algorithms) == ("dp-ucb", "dp-se", "adap-ucb", "adap-klucb")
    params = {e.name: e.variants[0] for e in cfg.algorithms}
    assert (
        params["dp-ucb"][0]["gamma"] == 0.1 and "beta" not in params["dp-se"][0]
    )  # beta = 1/T default
    assert params["adap-ucb"][0]["alpha"] == params["adap-klucb"][0]["alpha"] == 3.1
    assert all(grid["epsilon"] == 1.0 for _, grid in (params[n] for n in params))
    assert {c.kind for c in cfg.claims} == {"order", "tiers", "slope"}
    (bound,) = cfg.paper_numbers
    deltas = 0.75 - np.array([0.625, 0.5, 0.375, 0.25])
    assert bound.kind == "theory" and bound.horizon == 10_000_000
    assert bound.value == pytest.approx(
        np.sum(16 * 3.1 * math.log(1e7) / np.minimum(deltas, 1.0)) + 3.1 / 0.1, abs=0.5
    )
    quick = load_preset("azize2022-fig2", Overrides(quick=True))
    assert (quick.horizon, quick.replications) == (100_000, 5)


def test_tsallis_inf_clips_losses_to_the_unit_interval() -> None:
    """Tsallis-INF's bound assumes losses in [0, 1]: a reward at, just inside and far beyond the
    declared range adds the clipped loss (0 or 1) over the played arm's weight, never more."""
    spec = _spec(K=3, T=50)
    lo, hi = spec.reward_range
    X = np.broadcast_to(np.eye(3), (2, 3, 3))
    for reward, loss in (
        (hi, 0.0),
        (hi - 1e-9 * (hi - lo), 1e-9),
        (1e300, 0.0),
        (lo, 1.0),
        (-1e300, 1.0),
    ):
        alg = pb.make("tsallis-inf")
        alg.reset(spec, 2, make_streams(0))
        L, w = alg.kernel.state
        w0 = w[:, 0].copy()
        alg.update(0, X, np.array([0, 0]), np.array([reward, reward]))
        np.testing.assert_allclose(L[:, 0], loss / w0, rtol=1e-6, atol=1e-12)
