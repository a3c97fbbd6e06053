"""Hanna et al. (2022) roles: trust boundary, one batch per user (U11), noise draws (U10), clipping (U13),
accounting, the shuffler's assignment (U15), public schedule (P2), horizons (U12)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from privbandits.algorithms.hanna import (
    CentralLaplaceSums,
    HannaCentral,
    HannaLocal,
    HannaShuffle,
    LocalLaplaceRandomizer,
    ShuffleCalibration,
    ShuffleClient,
    resolve_switches,
)
from privbandits.algorithms.hanna.local import LOCAL_MECHANISM
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, ShuffledBatch
from privbandits.core.rng import make_streams
from privbandits.envs import FiniteActionEnv
from privbandits.privacy.accounting import compose_parallel
from privbandits.privacy.amplification import amplified_guarantee
from privbandits.privacy.shuffle import LAPLACE_MECHANISM
from privbandits.simulate import simulate

HEX = np.array([[math.cos(a), math.sin(a)] for a in np.linspace(0, 2 * math.pi, 6, endpoint=False)])


def _env(theta: tuple[float, float] = (0.8, 0.3), **kw) -> FiniteActionEnv:
    return FiniteActionEnv(d=2, K=6, actions=HEX, theta=np.array(theta), noise=kw.pop("noise", "rademacher"), **kw)


# -- spies (instrumented subclasses; the algorithms build their roles in reset) -------------------------------
class SpyLocal(HannaLocal):
    def reset(self, spec, replications, streams):  # type: ignore[override]
        super().reset(spec, replications, streams)
        self.messages: list[PrivatizedMessage] = []
        self.released: list[tuple[np.ndarray, np.ndarray]] = []
        receive = self.server.receive

        def spy(t, message):
            self.messages.append(message)
            receive(t, message)

        self.server.receive = spy  # type: ignore[method-assign]
        make = self.server._make_core

        def make_core(A):
            core = make(A)
            finish = core.finish_batch

            def rec(plan, r_hat, gamma=None):
                self.released.append((plan.rows.copy(), np.array(r_hat)))
                return finish(plan, r_hat, gamma)

            core.finish_batch = rec  # type: ignore[method-assign]
            return core

        self.server._make_core = make_core  # type: ignore[method-assign]


class SpyShuffle(HannaShuffle):
    def reset(self, spec, replications, streams):  # type: ignore[override]
        super().reset(spec, replications, streams)
        self.batches: list[ShuffledBatch] = []
        self.first_actions: list[np.ndarray] = []
        receive = self.analyzer.receive_batch

        def spy(t, batch):
            self.batches.append(batch)
            receive(t, batch)

        self.analyzer.receive_batch = spy  # type: ignore[method-assign]
        choose = self.client.choose

        def spy_choose(t, public, contexts, rng):
            a = choose(t, public, contexts, rng)
            self.first_actions.append(a.copy())
            return a

        self.client.choose = spy_choose  # type: ignore[method-assign]


# -- trust boundary ----------------------------------------------------------------------------------------
def test_local_server_accepts_only_privatized_reports() -> None:
    alg = SpyLocal(1.0)
    res = simulate(alg, _env(), 400, replications=3, seed=1, fast=False)
    assert res.guarantee.model == "local"
    assert alg.messages and all(isinstance(m, PrivatizedMessage) and m.mechanism == LOCAL_MECHANISM
                                and set(m.payload) == {"action", "reward_hat"} for m in alg.messages)
    values = np.concatenate([m["reward_hat"] for m in alg.messages])
    assert not np.isin(values[values != 0.0], [-1.0, 1.0]).any()  # never a raw (+-1) reward
    server = alg.server
    with pytest.raises(TrustBoundaryError):
        server.receive(0, np.ones(3))  # type: ignore[arg-type]
    with pytest.raises(TrustBoundaryError, match="keys"):
        server.receive(0, PrivatizedMessage(payload={"action": np.zeros(3, int), "reward_hat": np.zeros(3),
                                                     "reward": np.ones(3)}, mechanism=LOCAL_MECHANISM))
    with pytest.raises(TrustBoundaryError, match="randomizer"):
        server.receive(0, PrivatizedMessage(payload={"action": np.zeros(3, int), "reward_hat": np.zeros(3)},
                                            mechanism="other"))


def test_shuffle_server_receives_only_complete_shuffled_batches() -> None:
    alg = SpyShuffle(1.0, delta=1e-3)
    simulate(alg, _env(), 600, replications=3, seed=2, fast=False)
    log = alg.batch_log
    assert alg.batches and len(log) == sum(int((b["action"] >= 0).any(axis=1).sum()) for b in alg.batches)
    for b in alg.batches:
        assert isinstance(b, ShuffledBatch) and b.mechanism == LAPLACE_MECHANISM
        assert set(b.payload) == {"action", "reward_hat"}  # no client ids, no raw rewards
    # every forwarded row is a complete batch: its report count is the batch length n_i of the log
    sizes = sorted(int(n) for b in alg.batches for n in (b["action"] >= 0).sum(axis=1) if n)
    assert sizes == sorted(rec["n"] for rec in log)
    analyzer = alg.analyzer
    with pytest.raises(TrustBoundaryError):
        analyzer.receive_batch(0, PrivatizedMessage(payload={"action": np.zeros((3, 1), int),
                                                             "reward_hat": np.zeros((3, 1))},
                                                    mechanism=LAPLACE_MECHANISM))  # type: ignore[arg-type]
    explore = np.flatnonzero(analyzer.core.exploring())
    if explore.size:  # an incomplete batch (one report) is refused
        a = np.full((3, 1), -1)
        a[explore[0], 0] = int(np.flatnonzero(analyzer.public_state()["counts"][explore[0]])[0])
        with pytest.raises(TrustBoundaryError, match="complete"):
            analyzer.receive_batch(0, ShuffledBatch(payload={"action": a, "reward_hat": np.zeros((3, 1))},
                                                    mechanism=LAPLACE_MECHANISM, n_users=1))


# -- U11: each user contributes to exactly one released sum ---------------------------------------------------
def test_each_report_enters_exactly_one_released_sum() -> None:
    T, R = 2000, 2
    alg = SpyLocal(2.0)
    simulate(alg, _env(), T, replications=R, seed=3, fast=False)
    for r in range(R):
        acts = np.array([m["action"][r] for m in alg.messages])
        vals = np.array([m["reward_hat"][r] for m in alg.messages])
        assert acts.size == T  # one user per round
        log = [rec for rec in alg.batch_log if rec["replication"] == r]
        released = [rh[list(rows).index(r)] for rows, rh in alg.released if r in rows]
        assert len(released) == len(log)
        pos = 0
        for rec, r_hat in zip(log, released):  # batches are consecutive, disjoint blocks of reports
            a, v = acts[pos: pos + rec["n"]], vals[pos: pos + rec["n"]]
            assert np.all(a >= 0)
            np.testing.assert_allclose(r_hat, np.bincount(a, weights=v, minlength=6), atol=1e-9)
            pos += rec["n"]
        # after the last released batch: a truncated batch's reports or the commit phase (no report)
        rest = acts[pos:]
        committed = alg.core.committed[r] >= 0
        assert (np.all(rest == -1) if committed else np.all(rest >= 0))


# -- U10: noise draws and scales ---------------------------------------------------------------------------
def test_central_draws_one_laplace_per_core_action_and_batch() -> None:
    alg = HannaCentral(1.0)
    simulate(alg, _env(), 3000, replications=4, seed=4, fast=False)
    assert alg.collector.n_draws == sum(rec["core_size"] for rec in alg.batch_log)
    assert alg.collector.released == len(alg.batch_log)
    alg2 = HannaCentral(1.0)
    simulate(alg2, _env(), 3000, replications=4, seed=4, fast=True)
    assert alg2.collector.n_draws == sum(rec["core_size"] for rec in alg2.batch_log)


@pytest.mark.parametrize(("preset", "scale"), [("strict", 4.0), ("paper", 2.0)])
def test_empirical_laplace_variance_of_each_model(preset: str, scale: float) -> None:
    # Var(Lap(s)) = 2 s^2; the sample variance of N = 1e5 draws has sd sqrt(20 s^4 / N) = 0.7% of 2 s^2,
    # so +-3% is more than 4 standard errors.
    rng = np.random.default_rng(5)
    N = 100_000
    sens = 1.0 if preset == "paper" else 2.0
    central = CentralLaplaceSums(0.5, -1.0, 1.0, sens)
    from privbandits.algorithms.phased_elimination import BatchPlan

    plan = BatchPlan(rows=np.arange(N), index=np.ones(N, int), counts=np.ones((N, 1), int),
                     active=np.ones((N, 1), bool), pi=np.ones((N, 1)), g=np.ones(N), m=np.ones(N, int),
                     scale=np.ones(N))
    z = central.collect(plan, np.zeros((N, 1)), rng)[:, 0]
    local = LocalLaplaceRandomizer(0.5, -1.0, 1.0, sens).privatize(np.zeros(N, int), np.zeros(N),
                                                                   np.ones(N, bool), rng)["reward_hat"]
    for x in (z, local):
        assert x.var() == pytest.approx(2 * scale**2, rel=0.03)
    # shuffle: the client's scale is Delta / eps0^(i) for its batch's n_i (spec 3.9: n = 1e4, eps = 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = ShuffleCalibration(0.1, 1e-6, -1.0, 1.0, resolve_switches(preset, warn=False), "closed")
    client = ShuffleClient(cal, shuffler=None)  # type: ignore[arg-type]
    client._n = np.full(N, 10_000)
    msg = client.randomize(0, None, None, np.zeros(N, int), np.zeros(N), rng)  # type: ignore[arg-type]
    s_i = cal.params(10_000).scale
    assert s_i == pytest.approx(sens / cal.params(10_000).eps0)
    assert msg["reward_hat"].var() == pytest.approx(2 * s_i**2, rel=0.03)


# -- P1: the central release satisfies the eps-DP likelihood-ratio bound ------------------------------------------
@pytest.mark.parametrize(("preset", "holds"), [("strict", True), ("paper", False)])
def test_p1_central_release_likelihood_ratio(preset: str, holds: bool) -> None:
    # Neighbouring batches: the sum of one action differs by Delta = r_hi - r_lo = 2 (one reward -1 -> +1).
    # Histogram the released value under both; in bins with >= 2000 counts the log count ratio has
    # sd <= sqrt(2/2000) = 0.032, so max |log ratio| <= eps + 0.16 (5 sd) when the eps-DP bound holds.
    # The paper preset (scale 1/eps) has true ratio e^{2 eps}, far above that.
    eps, N = 0.5, 400_000
    from privbandits.algorithms.phased_elimination import BatchPlan

    plan = BatchPlan(rows=np.arange(N), index=np.ones(N, int), counts=np.ones((N, 1), int),
                     active=np.ones((N, 1), bool), pi=np.ones((N, 1)), g=np.ones(N), m=np.ones(N, int),
                     scale=np.ones(N))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg = HannaCentral(eps, preset=preset)
    c = CentralLaplaceSums(eps, -1.0, 1.0, alg.switches.sensitivity(-1.0, 1.0))
    rng = np.random.default_rng(31)
    x = c.collect(plan, np.full((N, 1), -1.0), rng)[:, 0]
    y = c.collect(plan, np.full((N, 1), 1.0), rng)[:, 0]
    edges = np.linspace(-4.0, 4.0, 33)
    hx, hy = np.histogram(x, edges)[0], np.histogram(y, edges)[0]
    ok = (hx >= 2000) & (hy >= 2000)
    worst = float(np.abs(np.log(hx[ok] / hy[ok])).max())
    assert (worst <= eps + 0.16) is holds, worst


# -- U13: clipping ------------------------------------------------------------------------------------------
def test_rewards_are_clipped_before_the_noise() -> None:
    c = CentralLaplaceSums(1.0, -1.0, 1.0, 2.0)
    np.testing.assert_array_equal(c.prepare(np.array([5.0, -7.0, 0.3])), [1.0, -1.0, 0.3])
    rng = np.random.default_rng(6)
    N = 40_000
    rnd = LocalLaplaceRandomizer(1.0, -1.0, 1.0, 2.0)
    y = rnd.privatize(np.zeros(N, int), np.full(N, 50.0), np.ones(N, bool), rng)["reward_hat"]
    # mean of clip(50) + Lap(2) is 1; se = sqrt(8 / N) = 0.014
    assert abs(y.mean() - 1.0) < 5 * math.sqrt(8 / N)
    # a misbehaving environment (Gaussian noise sd 5 on [-1, 1]): the released sums stay within n_ia * [-1, 1]
    env = _env(noise="gaussian", noise_scale=5.0, reward_range=(-1.0, 1.0))
    alg = HannaCentral(1.0)
    alg.reset(env.reset(2, make_streams(0), 1000), 2, make_streams(0))
    sums = env.reward_sums(np.full((2, 6), 50), rng, clip=alg.collector.clip)
    assert np.all(np.abs(sums) <= 50)


# -- accounting ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fast", [True, False])
def test_shuffle_guarantee_is_parallel_composition_of_the_batches(fast: bool) -> None:
    alg = HannaShuffle(0.5, delta=1e-4)
    res = simulate(alg, _env(), 20_000, replications=3, seed=7, fast=fast)
    g = res.guarantee
    sizes = sorted({rec["n"] for rec in alg.batch_log})
    expected = compose_parallel([amplified_guarantee(alg.calibration.params(n).local_epsilon(), n, 1e-4)
                                 for n in sizes])
    assert g.model == "shuffle" and g.epsilon == pytest.approx(expected.epsilon) and g.delta == expected.delta
    assert g.epsilon <= 0.5 * (1 + 1e-9)  # strict: (eps, delta) is met
    assert max(sizes) > 16 * math.log(2 / 1e-4) and g.delta == 1e-4  # the large batches amplify
    assert sum(alg.accountant.batches.values()) == len(alg.batch_log)


def test_central_and_paper_guarantees_are_honest() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paper = simulate(HannaCentral(0.5, preset="paper"), _env(), 3000, replications=2, seed=0)
        local = simulate(HannaLocal(0.5, preset="paper"), _env(), 3000, replications=2, seed=0)
    strict = simulate(HannaCentral(0.5), _env(), 3000, replications=2, seed=0)
    assert strict.guarantee.epsilon == pytest.approx(0.5) and strict.guarantee.delta == 0.0
    assert paper.guarantee.epsilon == pytest.approx(1.0)  # Lap(1/eps) on [-1, 1] is 2 eps-DP (spec 2.5)
    assert local.guarantee.epsilon == pytest.approx(1.0) and local.guarantee.model == "local"
    nothing = simulate(HannaCentral(0.5), _env(), 3, replications=2, seed=0)  # no batch completes
    assert nothing.guarantee.epsilon == 0.0


# -- U15: the shuffler's assignment is a uniform permutation of the schedule ------------------------------------
def test_shuffler_assigns_a_uniform_permutation_of_batch_one() -> None:
    # batch 1 of T = 8 on the hexagon: a 2-point core set, n_ia = ceil(q / 2) = 2 each (q = 3.79), n_1 = 4
    R = 3000
    alg = SpyShuffle(1.0, delta=1e-3)
    simulate(alg, _env(), 8, replications=R, seed=8, fast=False, checkpoints=[8])
    counts = alg.batch_log[0]["n"]
    assert counts == 4
    first = np.stack(alg.first_actions[:4], axis=1)  # (R, 4): the four clients of batch 1
    core = np.unique(first)
    assert core.size == 2
    for a in core:
        assert np.all((first == a).sum(axis=1) == 2)  # each replication plays the schedule exactly
    # P(client j gets action a) = 1/2 for each slot j: chi-square over the 4 x 2 table
    table = np.array([[(first[:, j] == a).sum() for a in core] for j in range(4)])
    assert stats.chisquare(table.ravel(), np.full(8, R / 2)).pvalue > 1e-3


# -- P2: the schedule depends on the rewards only through the released sums -----------------------------------
def test_public_schedule_is_a_function_of_the_released_sums() -> None:
    class FixedRelease(HannaCentral):
        def make_collector(self):  # type: ignore[override]
            c = super().make_collector()
            c.collect = lambda plan, sums, rng: plan.counts * 0.3  # type: ignore[method-assign]
            return c

    actions = []
    for theta in ((0.8, 0.3), (-0.5, 0.7)):
        alg = FixedRelease(1.0)
        env = _env(theta)
        seen: list[np.ndarray] = []
        select = alg.select

        def spy(t, X, select=select, seen=seen):
            a = select(t, X)
            seen.append(a)
            return a

        alg.select = spy  # type: ignore[method-assign]
        simulate(alg, env, 500, replications=2, seed=9, fast=False)
        actions.append(np.array(seen))
    np.testing.assert_array_equal(actions[0], actions[1])


# -- U12: horizons, edge cases, determinism --------------------------------------------------------------------
@pytest.mark.parametrize("T", [1, 2, 7, 8, 100, math.floor(math.e**7) - 1, math.floor(math.e**7) + 1])
@pytest.mark.parametrize("fast", [True, False])
def test_any_horizon_runs_exactly_t_rounds(T: int, fast: bool) -> None:
    for alg in (HannaCentral(1.0), HannaLocal(1.0), HannaShuffle(1.0, delta=1e-3)):
        res = simulate(alg, _env(), T, replications=2, seed=1, checkpoints=[T], fast=fast)
        assert res.checkpoints[-1] == T and np.all(np.isfinite(res.regret))
        assert np.all(res.regret[:, -1] <= T * 2.0 + 1e-9)
        assert np.all(alg.core.t_done <= T)


def test_single_action_zero_actions_and_determinism() -> None:
    one = FiniteActionEnv(d=2, K=1, actions=np.array([[0.6, 0.8]]), noise="rademacher")
    zero = FiniteActionEnv(d=2, K=3, actions=np.zeros((3, 2)), noise="rademacher")
    for fast in (True, False):
        for alg in (HannaCentral(1.0), HannaLocal(1.0), HannaShuffle(1.0)):
            assert np.all(simulate(alg, one, 300, replications=2, seed=0, fast=fast).final_regret == 0)
            assert np.all(simulate(alg, zero, 300, replications=2, seed=0, fast=fast).final_regret == 0)
        a = simulate(HannaShuffle(1.0), _env(), 3000, replications=3, seed=9, fast=fast)
        b = simulate(HannaShuffle(1.0), _env(), 3000, replications=3, seed=9, fast=fast)
        np.testing.assert_array_equal(a.regret, b.regret)
        np.testing.assert_array_equal(a.reward, b.reward)


def test_requires_a_fixed_action_set() -> None:
    from privbandits.envs import SyntheticEnv

    for alg in (HannaCentral(1.0), HannaLocal(1.0), HannaShuffle(1.0)):
        with pytest.raises(ValidationError, match="fixed finite action set"):
            simulate(alg, SyntheticEnv(d=2, K=3), 10)
