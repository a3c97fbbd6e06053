"""Batched phased elimination: the engine and NP-batched skeleton (Hanna et al. 2022) and L&S Algorithm 12."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privbandits.algorithms import available
from privbandits.algorithms.hanna import NPBatched
from privbandits.algorithms.hanna.elimination import (
    BatchPlan,
    HannaElimination,
    batch_growth,
    batch_size_ranges,
    confidence_log,
    max_core_size,
    n_batches,
)
from privbandits.algorithms.hanna.widths import NonPrivateWidth
from privbandits.algorithms.linear.phased_elimination import LSElimination, PhasedElimination
from privbandits.core.errors import NotResetError, ValidationError
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.envs import FiniteActionEnv, SyntheticEnv
from privbandits.simulate import simulate


def _circle(K: int, offset: float = 0.0) -> np.ndarray:
    ang = offset + 2 * np.pi * np.arange(K) / K
    return np.column_stack([np.cos(ang), np.sin(ang)])


def test_registered() -> None:
    reg = available()
    assert reg["pe-batched"] is NPBatched
    assert reg["phased-elimination"] is PhasedElimination


# -- U1: schedule constants ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("T", "q", "L", "qL", "total"),
    [
        (10**4, 2.9307, 8, 5443, 8260),
        (10**5, 2.8870, 10, 40218, 61529),
        (10**6, 2.8581, 12, 297170, 457097),
        (10**7, 2.8377, 15, 6231105, 9621758),
    ],
)
def test_schedule_constants_match_spec_table(
    T: int, q: float, L: int, qL: float, total: float
) -> None:
    qq = batch_growth(T)
    assert qq == pytest.approx(q, abs=1e-4)
    assert n_batches(T) == L
    assert qq**L == pytest.approx(qL, rel=1e-4)
    assert sum(qq**i for i in range(1, L + 1)) == pytest.approx(total, rel=1e-4)
    assert qq ** math.log(T) == pytest.approx(2 * T, rel=1e-9)


def test_schedule_constants_edge_cases() -> None:
    assert batch_growth(1) == pytest.approx(math.e**2)
    assert n_batches(1) == n_batches(7) == 1
    for T in (2, 3, 100, 10**9):
        assert math.e < batch_growth(T) <= math.e**2 + 1e-12
    assert batch_growth(10**6) == pytest.approx(2.858142, abs=1e-6)


# -- U8: widths ------------------------------------------------------------------------------------
def _plan(
    K: int = 10,
    counts: tuple[int, ...] = (4, 4),
    g: float = 2.0,
    i: int = 12,
    q: float | None = None,
    T: int = 10**6,
) -> BatchPlan:
    c = np.zeros((1, K), dtype=np.int64)
    c[0, : len(counts)] = counts
    qi = (batch_growth(T) if q is None else q) ** i
    return BatchPlan(
        rows=np.array([0]),
        index=np.array([i]),
        counts=c,
        active=np.ones((1, K), bool),
        pi=c / c.sum(),
        g=np.array([g]),
        m=np.array([2]),
        scale=np.array([qi]),
    )


def test_non_private_width_reference_numbers() -> None:
    # spec U8 / section 4.1: T = 1e6, d = 2, |A_i| = 10: ell = ln(4e13) = 31.3199 and the
    # non-private (sub-Gaussian) paper width at i = 12 is 0.0290371.
    spec = EnvSpec(d=2, K=10, horizon=10**6)
    plan = _plan()
    assert confidence_log(plan.n_active, 10**6, 12)[0] == pytest.approx(31.3199, abs=1e-4)
    assert NonPrivateWidth("paper")(plan, spec, 12)[0] == pytest.approx(0.0290371, abs=1e-7)
    # rigorous: sqrt(2 G ell) with G = g / q^i; at g = d = 2 it is 1/sqrt(2) of the paper width
    rig = NonPrivateWidth("rigorous")(plan, spec, 12)[0]
    assert rig == pytest.approx(0.0290371 / math.sqrt(2), rel=1e-5)
    # sigma scales, fail_prob switches to ln(4 |A_i| L / fail_prob)
    assert NonPrivateWidth("rigorous", sigma=0.5)(plan, spec, 12)[0] == pytest.approx(rig / 2)
    alt = NonPrivateWidth("rigorous", fail_prob=0.01)(plan, spec, 12)[0]
    G = 2.0 / batch_growth(10**6) ** 12
    assert alt == pytest.approx(math.sqrt(2 * G * math.log(4 * 10 * 12 / 0.01)))


def test_plan_properties() -> None:
    plan = _plan(counts=(3, 1, 5))
    assert plan.n_total.tolist() == [9] and plan.core_size.tolist() == [3]
    assert plan.n_min.tolist() == [1] and plan.n_active.tolist() == [10] and len(plan) == 1


# -- engine (role-free) ---------------------------------------------------------------------------
def _core(
    A: np.ndarray, T: int = 10**5, width_mode: str = "rigorous", core_set: str = "greedy"
) -> HannaElimination:
    spec = EnvSpec(d=A.shape[-1], K=A.shape[1], horizon=T, fixed_actions=True)
    return HannaElimination(A, spec, NonPrivateWidth(width_mode), core_set=core_set)


def test_allocation_u5() -> None:
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 40, 4))
    A /= np.linalg.norm(A, axis=-1, keepdims=True)
    core = _core(A)
    plan = core.plan_batch()
    for i in (1, 2, 3):
        qi = core.q**i
        for k in range(3):
            supp = plan.counts[k] > 0
            np.testing.assert_array_equal(plan.counts[k], np.ceil(plan.pi[k] * qi).astype(int))
            assert supp.sum() >= 1 and qi <= plan.n_total[k] <= qi + supp.sum()
            X = A[k]
            Vi = (X * plan.counts[k][:, None]).T @ X
            assert np.linalg.eigvalsh(Vi - qi * (X * plan.pi[k][:, None]).T @ X).min() >= -1e-9
            gmax = np.einsum("ij,jk,ik->i", X, np.linalg.inv(Vi), X).max()
            assert gmax <= 2 * 4 / qi + 1e-12
        # noise-free sums -> advance to the next batch with all actions surviving (huge widths)
        core.finish_batch(plan, plan.counts * 0.0, gamma=np.full(3, 1e9))
        plan = core.plan_batch()
        assert plan.index.tolist() == [i + 1] * 3


def test_estimator_is_exact_without_noise_u6() -> None:
    rng = np.random.default_rng(1)
    A = rng.normal(size=(2, 12, 3))
    theta = rng.normal(size=(2, 3))
    means = np.einsum("rkd,rd->rk", A, theta)
    core = _core(A)
    plan = core.plan_batch()
    core.finish_batch(plan, plan.counts * means)
    np.testing.assert_allclose(core.theta, theta, atol=1e-9)
    # in a subspace: the estimate is the projection of theta* on span(A_i)
    B = np.zeros((1, 6, 3))
    B[0, :, :2] = rng.normal(size=(6, 2))
    th = np.array([[0.3, -0.7, 5.0]])
    core2 = _core(B)
    plan2 = core2.plan_batch()
    assert plan2.m.tolist() == [2]
    core2.finish_batch(plan2, plan2.counts * np.einsum("rkd,rd->rk", B, th))
    np.testing.assert_allclose(core2.theta, [[0.3, -0.7, 0.0]], atol=1e-9)


def test_elimination_is_against_the_surviving_set_u7() -> None:
    # actions: 0 = e1 (already eliminated), 1 = 0.5 e1, 2 = e2, 3 = -e1.  With theta_hat = e1 and
    # gamma = 0.3 the threshold is max_{A_i} - 0.6 = -0.1: action 2 (prediction 0) survives.  A max
    # over all of A (prediction 1) would have eliminated it.
    A = np.array([[[1.0, 0.0], [0.5, 0.0], [0.0, 1.0], [-1.0, 0.0]]])
    core = _core(A)
    core.active[0, 0] = False
    plan = core.plan_batch()
    assert not plan.counts[0, 0]
    core.finish_batch(plan, plan.counts * (A[0] @ np.array([1.0, 0.0])), gamma=np.array([0.3]))
    assert core.active[0].tolist() == [False, True, True, False]
    assert core.committed[0] == -1
    # the empirical best always survives; a single survivor commits
    plan = core.plan_batch()
    core.finish_batch(plan, plan.counts * (A[0] @ np.array([0.0, 1.0])), gamma=np.array([0.1]))
    assert core.active[0].tolist() == [False, False, True, False] and core.committed[0] == 2


def test_commit_after_L_batches_and_m_zero() -> None:
    A = np.repeat(_circle(6)[None], 2, axis=0)
    core = _core(A, T=50)  # L = max(1, floor(ln 50) - 1) = 2
    assert core.L == 2
    for _ in range(2):
        plan = core.plan_batch()
        core.finish_batch(plan, plan.counts * (A[:, :, 0]), gamma=np.full(2, 1e9))
    # after L batches: committed to the empirical best (action 0 = e1), ties -> smallest index
    assert core.committed.tolist() == [0, 0]
    assert len(core.plan_batch()) == 0
    zero = _core(np.zeros((1, 3, 2)))
    assert len(zero.plan_batch()) == 0 and zero.committed.tolist() == [0]


def test_no_core_set_options() -> None:
    A = np.repeat(_circle(8, 0.1)[None], 1, axis=0)
    fw = _core(A, core_set="nocore-fw").plan_batch()
    assert fw.core_size.tolist() == [8]
    uni = _core(A, core_set="nocore-uniform").plan_batch()
    q = batch_growth(10**5)
    np.testing.assert_array_equal(uni.counts[0], np.full(8, math.ceil(q / 8)))
    assert uni.g[0] == pytest.approx(2.0)  # uniform on a regular polygon is G-optimal


def test_aggregate_batch_path_finds_the_best_arm() -> None:
    # The per-batch interface without a round loop (the future exact fast path): noise-free sums.
    rng = np.random.default_rng(2)
    A = rng.normal(size=(4, 20, 3))
    A /= np.linalg.norm(A, axis=-1, keepdims=True)
    theta = rng.normal(size=(4, 3))
    means = np.einsum("rkd,rd->rk", A, theta)
    core = _core(A, T=10**6)
    while core.exploring().any():
        plan = core.plan_batch()
        core.finish_batch(plan, plan.counts * means[plan.rows])
    np.testing.assert_array_equal(core.committed, means.argmax(axis=1))
    assert all(rec["survivors"] <= rec["n_active"] for rec in core.batch_log)


# -- Curator driver ------------------------------------------------------------------------------
def _easy_env(noise_scale: float = 0.1) -> FiniteActionEnv:
    A = _circle(5)  # gaps >= 1 - cos(72 deg) = 0.69
    return FiniteActionEnv(
        d=2, K=5, actions=A, theta=np.array([1.0, 0.0]), noise="gaussian", noise_scale=noise_scale
    )


@pytest.mark.parametrize("alg", [NPBatched(), NPBatched(preset="paper"), PhasedElimination()])
def test_eliminates_suboptimal_arms_and_plays_active_set(alg) -> None:
    env = _easy_env()
    T, R = 20_000, 4
    streams = make_streams(3)
    spec = env.reset(R, streams, T)
    alg.reset(spec, R, streams)
    for t in range(T):
        X = env.next_round()
        a = alg.select(t, X)
        core = alg.core
        exploring = core.committed < 0
        assert core.active[np.arange(R), a].all()  # every pull is from the surviving set
        if exploring.any():
            sched = alg.core.view(np.flatnonzero(exploring)).counts  # and from the batch's core set
            assert np.all(sched[np.arange(exploring.sum()), a[exploring]] > 0)
        alg.update(t, X, a, env.pull(a))
    assert np.all(alg.core.committed == 0)
    assert np.all(alg.core.active.sum(axis=1) == 1) and np.all(alg.core.active[:, 0])


@pytest.mark.parametrize("name", ["pe-batched", "phased-elimination"])
def test_regret_is_sublinear(name: str) -> None:
    # K = 10 actions and theta* on the unit circle (spec section 6.1), bounded noise U(-1, 1).
    # Regret grows like sqrt(T log T): from T = 3e3 to 3e4 the mean regret must grow by far less
    # than 10x (spec S6; sqrt(10) ~ 3.2 up to logs) -- we require < 5x over 12 replications
    # (observed ratios 2.4-3.1 across seeds).
    from privbandits.algorithms import make

    means = []
    for T in (3_000, 30_000):
        env = FiniteActionEnv(d=2, K=10, actions="circle", noise="bounded", noise_scale=1.0)
        res = simulate(make(name), env, T, replications=12, seed=5, checkpoints=[T])
        means.append(res.final_regret.mean())
    assert means[1] / means[0] < 5.0, means
    # far below uniform play, whose regret is T * mean gap ~ 0.64 T on circle instances
    assert means[1] < 0.2 * 30_000


def test_random_order_within_a_batch_is_uniform() -> None:
    # The first pull of batch 1 is uniform over the schedule's multiset: P(a) = n_ia / n_i.
    A = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.6]])
    env = FiniteActionEnv(d=2, K=3, actions=A, theta=np.array([0.5, 0.5]))
    R = 1000
    alg = NPBatched()
    streams = make_streams(7)
    alg.reset(env.reset(R, streams, 10**5), R, streams)
    a = alg.select(0, env.next_round())
    counts = alg.core.view(np.arange(1))
    p = counts.counts[0] / counts.n_total[0]
    obs = np.bincount(a, minlength=3)
    keep = p > 0
    assert np.all(obs[~keep] == 0)
    assert stats.chisquare(obs[keep], R * p[keep]).pvalue > 1e-3


@pytest.mark.parametrize("T", [1, 2, 7, 8, 100, 1096, 1097])
def test_any_horizon_runs_exactly_t_rounds_u12(T: int) -> None:
    env = FiniteActionEnv(d=2, K=4, actions="circle")
    for alg in (NPBatched(), PhasedElimination()):
        res = simulate(alg, env, T, replications=3, seed=1, checkpoints=[T])
        assert res.checkpoints[-1] == T
        assert np.all(alg.core.t_done <= T)


def test_single_action_and_determinism_u14() -> None:
    env = FiniteActionEnv(d=2, K=1, actions=np.array([[0.6, 0.8]]))
    res = simulate(NPBatched(), env, 500, replications=2, seed=0)
    assert np.all(res.final_regret == 0)
    env = FiniteActionEnv(d=2, K=10, actions="circle", noise="bounded", noise_scale=1.0)
    a = simulate(NPBatched(), env, 3000, replications=3, seed=9)
    alg = NPBatched()
    b = simulate(alg, env, 3000, replications=3, seed=9)
    np.testing.assert_array_equal(a.regret, b.regret)
    assert alg.batch_log and {
        "i",
        "n_active",
        "m",
        "core_size",
        "n",
        "g",
        "gamma",
        "survivors",
    } <= set(alg.batch_log[0])


def test_ls_phase_lengths_and_threshold() -> None:
    A = np.repeat(_circle(7, 0.3)[None], 2, axis=0)
    spec = EnvSpec(d=2, K=7, horizon=10**4, fixed_actions=True)
    core = LSElimination(A, spec, delta=1e-4, sigma=0.5)
    plan = core.plan_batch()
    # T_1(a) = ceil(2 g sigma^2 pi(a) / eps_1^2 ln(K * 1 * 2 / delta)), eps_1 = 1/2
    scale = 2 * plan.g[0] * 0.25 / 0.25 * math.log(7 * 2 / 1e-4)
    np.testing.assert_array_equal(plan.counts[0], np.ceil(plan.pi[0] * scale).astype(int))
    np.testing.assert_allclose(core._threshold(plan), [0.5, 0.5])
    book = LSElimination(A, spec, delta=1e-4, sigma=0.5, allocation="book").plan_batch()
    assert book.scale[0] == pytest.approx(2 * 2 * 0.25 / 0.25 * math.log(7 * 2 / 1e-4))


def test_requires_fixed_action_set() -> None:
    with pytest.raises(ValidationError, match="fixed finite action set"):
        simulate(NPBatched(), SyntheticEnv(d=2, K=3), 10)


@pytest.mark.parametrize(
    ("cls", "kw", "name"),
    [
        (NPBatched, {"preset": "fast"}, "preset"),
        (NPBatched, {"width_mode": "loose"}, "width_mode"),
        (NPBatched, {"core_set": "all"}, "core_set"),
        (NPBatched, {"design_factor": 0.5}, "design_factor"),
        (NPBatched, {"fail_prob": 1.0}, "fail_prob"),
        (PhasedElimination, {"delta": 0.0}, "delta"),
        (PhasedElimination, {"allocation": "exact"}, "allocation"),
        (PhasedElimination, {"sigma": 0.0}, "sigma"),
    ],
)
def test_validation(cls, kw: dict, name: str) -> None:
    with pytest.raises(ValidationError, match=name):
        cls(**kw)


def test_presets_set_the_width_mode() -> None:
    spec = EnvSpec(d=2, K=4, horizon=1000, fixed_actions=True)
    width = lambda alg: alg.calibrate(spec).resolved["width_mode"]
    assert width(NPBatched()) == "rigorous"
    assert width(NPBatched(preset="paper")) == "paper"
    assert width(NPBatched(preset="paper", width_mode="rigorous")) == "rigorous"
    assert (
        NPBatched(preset="paper").width_mode is None
    )  # the parameter as given; resolved in calibrate
    assert not NPBatched().guarantee_for(spec).is_private
    with pytest.raises(NotResetError):
        NPBatched().guarantee
    res = simulate(
        NPBatched(preset="paper"), FiniteActionEnv(d=2, K=4, actions="circle"), 100, seed=0
    )
    assert res.preset == "paper" and res.resolved_params["width_mode"] == "paper"
    assert res.resolved_params["L"] == n_batches(100) and res.resolved_params["q"] == batch_growth(
        100
    )


def test_phased_elimination_resolves_delta() -> None:
    spec = EnvSpec(d=2, K=4, horizon=1000, fixed_actions=True)
    assert PhasedElimination().calibrate(spec).resolved["delta"] == pytest.approx(1e-3)
    assert PhasedElimination(delta=0.05).calibrate(spec).resolved["delta"] == 0.05
    assert (
        PhasedElimination()
        .calibrate(EnvSpec(d=2, K=4, horizon=1, fixed_actions=True))
        .resolved["delta"]
        == 0.5
    )


def test_core_set_parameter_accepts_booleans() -> None:
    spec = EnvSpec(d=2, K=4, horizon=1000, fixed_actions=True)
    for value, name in (
        (True, "greedy"),
        (False, "nocore-fw"),
        ("nocore-uniform", "nocore-uniform"),
    ):
        alg = NPBatched(core_set=value)
        assert alg.get_params()["core_set"] == value  # as given
        assert alg.calibrate(spec).resolved["core_set"] == name


# -- the batch sizes the shuffle model calibrates over ----------------------------------------------
@pytest.mark.parametrize(
    ("T", "K", "d"), [(3000, 10, 2), (10**5, 5, 3), (20_000, 40, 4), (8, 6, 2)]
)
def test_realized_batch_sizes_lie_in_the_public_ranges(T: int, K: int, d: int) -> None:
    # every completed batch of any run has n_i in batch_size_ranges(T, K, d)[i - 1]
    ranges = batch_size_ranges(T, K, d)
    assert len(ranges) <= n_batches(T) and max_core_size(K, d) == min(K, d * (d + 1) // 2)
    env = FiniteActionEnv(d=d, K=K, actions="sphere" if d > 2 else "circle", noise="rademacher")
    for seed in (0, 1):
        alg = NPBatched()
        simulate(alg, env, T, replications=6, seed=seed, checkpoints=[T])
        for rec in alg.batch_log:
            lo, hi = ranges[rec["i"] - 1]
            assert lo <= rec["n"] <= hi, (rec, ranges)
    # the first range is the spec's: n_1 in [ceil(q), floor(q) + |C|]
    q = batch_growth(T)
    assert ranges[0][0] == math.ceil(q) and ranges[0][1] == min(
        math.floor(q) + max_core_size(K, d), T
    )
