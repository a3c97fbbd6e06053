"""Hanna et al. (2022) roles: trust boundary, the Shuffler role, one batch per user (U11), noise draws (U10),
clipping (U13), accounting, the shuffler's assignment (U15), public schedule (P2), horizons (U12)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from privbandits.algorithms.base import Algorithm, Server, Shuffler
from privbandits.algorithms.hanna import (
    HannaCentral,
    HannaLocal,
    HannaShuffle,
    HannaShuffler,
    LocalClient,
    ShuffleAnalyzer,
    ShuffleBudget,
    ShuffleClient,
    resolve_switches,
)
from privbandits.algorithms.hanna.elimination import BatchPlan, batch_size_ranges
from privbandits.algorithms.hanna.local import LOCAL_MECHANISM
from privbandits.core.errors import DataBoundError, TrustBoundaryError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState, ShuffledBatch
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.envs import FiniteActionEnv
from privbandits.privacy.accounting import compose_parallel
from privbandits.privacy.amplification import amplified_guarantee
from privbandits.privacy.laplace_shuffle import (
    LAPLACE_MECHANISM,
    laplace_randomizer,
    laplace_shuffle_params,
)
from privbandits.simulate import simulate

HEX = np.array([[math.cos(a), math.sin(a)] for a in np.linspace(0, 2 * math.pi, 6, endpoint=False)])
ENGINES = ("aggregate", "reference")


def _env(theta: tuple[float, float] = (0.8, 0.3), **kw) -> FiniteActionEnv:
    return FiniteActionEnv(
        d=2, K=6, actions=HEX, theta=np.array(theta), noise=kw.pop("noise", "rademacher"), **kw
    )


def _plan(N: int) -> BatchPlan:
    """N one-action batches (one core action each)."""
    return BatchPlan(
        rows=np.arange(N),
        index=np.ones(N, int),
        counts=np.ones((N, 1), int),
        active=np.ones((N, 1), bool),
        pi=np.ones((N, 1)),
        g=np.ones(N),
        m=np.ones(N, int),
        scale=np.ones(N),
    )


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

    def make_core(self, A):  # type: ignore[override]
        core = super().make_core(A)
        finish = core.finish_batch

        def rec(plan, r_hat, gamma=None):
            self.released.append((plan.rows.copy(), np.array(r_hat)))
            return finish(plan, r_hat, gamma)

        core.finish_batch = rec  # type: ignore[method-assign]
        return core


class SpyShuffle(HannaShuffle):
    def reset(self, spec, replications, streams):  # type: ignore[override]
        super().reset(spec, replications, streams)
        self.batches: list[ShuffledBatch] = []
        self.first_actions: list[np.ndarray] = []
        self.assigned: list[PublicState] = []
        self.sent: list[PrivatizedMessage] = []
        receive = self.server.receive_batch

        def spy(t, batch):
            self.batches.append(batch)
            receive(t, batch)

        self.server.receive_batch = spy  # type: ignore[method-assign]
        choose, randomize, assign = self.client.choose, self.client.randomize, self.shuffler.assign

        def spy_choose(t, public, contexts, rng):
            a = choose(t, public, contexts, rng)
            self.first_actions.append(a.copy())
            return a

        def spy_randomize(*args):
            msg = randomize(*args)
            self.sent.append(msg)
            return msg

        def spy_assign(t, public):
            mine = assign(t, public)
            self.assigned.append(mine)
            return mine

        self.client.choose = spy_choose  # type: ignore[method-assign]
        self.client.randomize = spy_randomize  # type: ignore[method-assign]
        self.shuffler.assign = spy_assign  # type: ignore[method-assign]


# -- trust boundary ----------------------------------------------------------------------------------------
def test_local_server_accepts_only_privatized_reports() -> None:
    alg = SpyLocal(1.0)
    res = simulate(alg, _env(), 400, replications=3, seed=1, engine="reference")
    assert res.guarantee.model == "local"
    assert alg.messages and all(
        isinstance(m, PrivatizedMessage)
        and m.mechanism == LOCAL_MECHANISM
        and set(m.payload) == {"action", "reward_hat"}
        for m in alg.messages
    )
    values = np.concatenate([m["reward_hat"] for m in alg.messages])
    assert not np.isin(values[values != 0.0], [-1.0, 1.0]).any()  # never a raw (+-1) reward
    server = alg.server
    with pytest.raises(TrustBoundaryError):
        server.receive(0, np.ones(3))  # type: ignore[arg-type]
    with pytest.raises(TrustBoundaryError, match="keys"):
        server.receive(
            0,
            PrivatizedMessage(
                payload={
                    "action": np.zeros(3, int),
                    "reward_hat": np.zeros(3),
                    "reward": np.ones(3),
                },
                mechanism=LOCAL_MECHANISM,
            ),
        )
    with pytest.raises(TrustBoundaryError, match="randomizer"):
        server.receive(
            0,
            PrivatizedMessage(
                payload={"action": np.zeros(3, int), "reward_hat": np.zeros(3)}, mechanism="other"
            ),
        )


def test_shuffle_server_receives_only_complete_shuffled_batches() -> None:
    alg = SpyShuffle(1.0, delta=1e-3)
    simulate(alg, _env(), 600, replications=3, seed=2, engine="reference")
    log = alg.batch_log
    assert alg.batches and len(log) == sum(
        int((b["action"] >= 0).any(axis=1).sum()) for b in alg.batches
    )
    for b in alg.batches:
        assert isinstance(b, ShuffledBatch) and b.mechanism == LAPLACE_MECHANISM
        assert set(b.payload) == {"action", "reward_hat"}  # no client ids, no raw rewards
    # every forwarded row is a complete batch: its report count is the batch length n_i of the log
    sizes = sorted(int(n) for b in alg.batches for n in (b["action"] >= 0).sum(axis=1) if n)
    assert sizes == sorted(rec["n"] for rec in log)
    analyzer = alg.server
    with pytest.raises(TrustBoundaryError):
        analyzer.receive_batch(
            0,
            PrivatizedMessage(
                payload={"action": np.zeros((3, 1), int), "reward_hat": np.zeros((3, 1))},
                mechanism=LAPLACE_MECHANISM,
            ),
        )  # type: ignore[arg-type]
    explore = np.flatnonzero(analyzer.core.exploring())
    if explore.size:  # an incomplete batch (one report) is refused
        a = np.full((3, 1), -1)
        a[explore[0], 0] = int(np.flatnonzero(analyzer.public_state()["counts"][explore[0]])[0])
        with pytest.raises(TrustBoundaryError, match="complete"):
            analyzer.receive_batch(
                0,
                ShuffledBatch(
                    payload={"action": a, "reward_hat": np.zeros((3, 1))},
                    mechanism=LAPLACE_MECHANISM,
                    n_users=1,
                ),
            )


def _reachable(obj: object, depth: int = 3, seen: set[int] | None = None) -> list[object]:
    """Objects reachable from ``obj`` through attributes, lists, tuples and dicts (bounded depth)."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth < 0:
        return []
    seen.add(id(obj))
    out = [obj]
    children: list[object] = []
    if isinstance(obj, dict):
        children = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        children = list(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        children = list(vars(obj).values())
    for c in children:
        out += _reachable(c, depth - 1, seen)
    return out


def test_shuffle_roles_and_channels() -> None:
    # the shuffler is the Shuffler role (not the server slot); clients hold no server or shuffler object
    alg = SpyShuffle(1.0, delta=1e-3)
    simulate(alg, _env(), 600, replications=3, seed=2, engine="reference")
    assert isinstance(alg.shuffler, HannaShuffler) and isinstance(alg.shuffler, Shuffler)
    assert isinstance(alg.server, ShuffleAnalyzer) and isinstance(alg.server, Server)
    for role in (alg.client, alg.shuffler):
        for obj in _reachable(role)[1:]:
            assert not isinstance(obj, (Server, Shuffler, Algorithm)), (role, obj)
    loc = HannaLocal(1.0)
    simulate(loc, _env(), 100, replications=2, seed=0, engine="reference")
    assert isinstance(loc.client, LocalClient)
    assert not any(isinstance(o, (Server, Algorithm)) for o in _reachable(loc.client)[1:])
    # each user receives only its own slot and the batch size; it sends only its noisy reward
    assert all(isinstance(m, PublicState) and set(m) == {"action", "n"} for m in alg.assigned)
    assert all(
        isinstance(m, PrivatizedMessage) and set(m.payload) == {"reward_hat"} for m in alg.sent
    )
    shuffler = alg.shuffler
    with pytest.raises(TrustBoundaryError):
        shuffler.collect(0, {"reward_hat": np.zeros(3)})
    with pytest.raises(TrustBoundaryError, match="reward_hat"):
        shuffler.collect(
            0,
            PrivatizedMessage(
                payload={"reward_hat": np.zeros(3), "reward": np.ones(3)},
                mechanism=LAPLACE_MECHANISM,
            ),
        )


def test_shuffler_holds_incomplete_batches() -> None:
    # at the horizon the driver asks for a release; a batch still open is not forwarded
    alg = SpyShuffle(1.0, delta=1e-3)
    T, R = (
        3000,
        3,
    )  # L = 7 batches: sum_{i <= 6} n_i ~ 1030, n_7 ~ 2010 does not fit (batch_size_ranges)
    simulate(alg, _env(), T, replications=R, seed=3, engine="reference", checkpoints=[T])
    core = alg.core
    forwarded = sum(int((b["action"] >= 0).sum()) for b in alg.batches)
    assert forwarded == sum(rec["n"] for rec in alg.batch_log) == int(core.t_done.sum())
    held = sum(T - int(core.t_done[r]) for r in range(R) if core.committed[r] < 0)
    assert (
        held > 0 and alg.shuffler.pending == held
    )  # the cut batches' reports stay with the shuffler


# -- U11: each user contributes to exactly one released sum ---------------------------------------------------
def test_each_report_enters_exactly_one_released_sum() -> None:
    T, R = 2000, 2
    alg = SpyLocal(2.0)
    simulate(alg, _env(), T, replications=R, seed=3, engine="reference")
    for r in range(R):
        acts = np.array([m["action"][r] for m in alg.messages])
        vals = np.array([m["reward_hat"][r] for m in alg.messages])
        assert acts.size == T  # one user per round
        log = [rec for rec in alg.batch_log if rec["replication"] == r]
        released = [rh[list(rows).index(r)] for rows, rh in alg.released if r in rows]
        assert len(released) == len(log)
        pos = 0
        for rec, r_hat in zip(log, released):  # batches are consecutive, disjoint blocks of reports
            a, v = acts[pos : pos + rec["n"]], vals[pos : pos + rec["n"]]
            assert np.all(a >= 0)
            np.testing.assert_allclose(r_hat, np.bincount(a, weights=v, minlength=6), atol=1e-9)
            pos += rec["n"]
        # after the last released batch: a truncated batch's reports or the commit phase (no report)
        rest = acts[pos:]
        committed = alg.core.committed[r] >= 0
        assert np.all(rest == -1) if committed else np.all(rest >= 0)


def _local_public(N: int) -> PublicState:
    """A complete public state of the local client: batch 1 running, one pull left of arm 0 (K = 1)."""
    ones = np.ones((N, 1), int)
    return PublicState(
        {"batch": np.ones(N, int), "counts": ones, "committed": np.full(N, -1), "remaining": ones}
    )


# -- U10: noise draws and scales ---------------------------------------------------------------------------
def test_central_draws_one_laplace_per_core_action_and_batch() -> None:
    for engine in ENGINES:
        alg = HannaCentral(1.0)
        simulate(alg, _env(), 3000, replications=4, seed=4, engine=engine)
        assert alg.collector.n_draws == sum(rec["core_size"] for rec in alg.batch_log)
        assert alg.collector.released == len(alg.batch_log)


@pytest.mark.parametrize(("preset", "scale"), [("strict", 4.0), ("paper", 2.0)])
def test_empirical_laplace_variance_of_each_model(preset: str, scale: float) -> None:
    # Var(Lap(s)) = 2 s^2; the sample variance of N = 1e5 draws has sd sqrt(20 s^4 / N) = 0.7% of 2 s^2,
    # so +-3% is more than 4 standard errors.
    rng = np.random.default_rng(5)
    N = 100_000
    spec = EnvSpec(d=2, K=1, horizon=10**6, fixed_actions=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c, loc = HannaCentral(0.5, preset=preset), HannaLocal(0.5, preset=preset)
        c.reset(spec, 1, make_streams(0))
        loc.reset(spec, 1, make_streams(0))
    assert c.collector.scale == loc.client.scale == scale
    z = c.collector.collect(_plan(N), np.zeros((N, 1)), rng)[:, 0]
    X = np.zeros((N, 1, 2))
    public = _local_public(N)
    local = loc.client.randomize(0, public, X, np.zeros(N, int), np.zeros(N), rng)["reward_hat"]
    for x in (z, local):
        assert x.var() == pytest.approx(2 * scale**2, rel=0.03)
    # shuffle: the client's scale is Delta / eps0^(i) for its batch's n_i (spec 3.9: n = 1e4, eps = 0.1)
    cal = ShuffleBudget(
        0.1, 1e-6, -1.0, 1.0, resolve_switches(preset), "closed", ((10_000, 10_000),)
    )
    client = ShuffleClient(cal, spec)
    mine = PublicState({"action": np.zeros(N, int), "n": np.full(N, 10_000)})
    msg = client.randomize(0, mine, X, np.zeros(N, int), np.zeros(N), rng)
    s_i = cal.params(10_000).scale
    assert s_i == pytest.approx((2.0 if preset == "strict" else 1.0) / cal.params(10_000).eps0)
    assert msg["reward_hat"].var() == pytest.approx(2 * s_i**2, rel=0.03)


# -- P1: the central release satisfies the eps-DP likelihood-ratio bound ------------------------------------------
@pytest.mark.parametrize(("preset", "holds"), [("strict", True), ("paper", False)])
def test_p1_central_release_likelihood_ratio(preset: str, holds: bool) -> None:
    # Neighbouring batches: the sum of one action differs by Delta = r_hi - r_lo = 2 (one reward -1 -> +1).
    # Histogram the released value under both; in bins with >= 2000 counts the log count ratio has
    # sd <= sqrt(2/2000) = 0.032, so max |log ratio| <= eps + 0.16 (5 sd) when the eps-DP bound holds.
    # The paper preset (scale 1/eps) has true ratio e^{2 eps}, far above that.
    eps, N = 0.5, 400_000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg = HannaCentral(eps, preset=preset)
        alg.reset(EnvSpec(d=2, K=1, horizon=100, fixed_actions=True), 1, make_streams(0))
    c = alg.collector
    rng = np.random.default_rng(31)
    x = c.collect(_plan(N), np.full((N, 1), -1.0), rng)[:, 0]
    y = c.collect(_plan(N), np.full((N, 1), 1.0), rng)[:, 0]
    edges = np.linspace(-4.0, 4.0, 33)
    hx, hy = np.histogram(x, edges)[0], np.histogram(y, edges)[0]
    ok = (hx >= 2000) & (hy >= 2000)
    worst = float(np.abs(np.log(hx[ok] / hy[ok])).max())
    assert (worst <= eps + 0.16) is holds, worst


# -- U13: clipping before the noise, on every path ------------------------------------------------------------
@pytest.mark.parametrize("y", [50.0, -50.0, 0.25])
def test_clients_clip_the_reward_before_the_noise(y: float) -> None:
    # An out-of-range reward must be clipped into [-1, 1] on the device before Lap(s) is added: the reports'
    # mean is clip(y) (not y) and their spread is the Laplace one.  N = 4e4 reports with Var = 2 s^2 = 8
    # give se(mean) = 0.014: a client that noised the raw reward (mean 50) fails by thousands of se.
    rng = np.random.default_rng(6)
    N = 40_000
    spec = EnvSpec(d=2, K=1, horizon=10**4, fixed_actions=True)
    X = np.zeros((N, 1, 2))
    rewards = np.full(N, y)
    target = min(max(y, -1.0), 1.0)
    loc = LocalClient(2.0, -1.0, 1.0, spec)
    public = _local_public(N)
    budget = ShuffleBudget(1.0, 1e-6, -1.0, 1.0, resolve_switches(), "closed", ((4, 4),))
    shuf = ShuffleClient(budget, spec)  # n = 4: no amplification, scale 2
    mine = PublicState({"action": np.zeros(N, int), "n": np.full(N, 4)})
    params = laplace_shuffle_params(1.0, 1e-6, N)
    reports = {
        "local client": loc.randomize(0, public, X, np.zeros(N, int), rewards, rng)["reward_hat"],
        "shuffle client": shuf.randomize(0, mine, X, np.zeros(N, int), rewards, rng)["reward_hat"],
        "laplace_randomizer": laplace_randomizer(rewards[None], np.zeros((1, N), int), params, rng)[
            "reward_hat"
        ][0],
    }
    for name, v in reports.items():
        s = 2.0 if name != "laplace_randomizer" else params.scale
        assert abs(v.mean() - target) < 5 * math.sqrt(2 * s**2 / N), name
        # |report - clip(y)| ~ Exp(s): its mean is s (se s / sqrt(N))
        assert abs(np.abs(v - target).mean() - s) < 5 * s / math.sqrt(N), name
    # the curator clips too (a misbehaving environment: Gaussian noise sd 5 on [-1, 1])
    env = _env(noise="gaussian", noise_scale=5.0, reward_range=(-1.0, 1.0))
    alg = HannaCentral(1.0)
    alg.reset(env.reset(2, make_streams(0), 1000), 2, make_streams(0))
    assert alg.collector.clip == (-1.0, 1.0)
    sums = env.reward_sums(np.full((2, 6), 50), rng, clip=alg.collector.clip)
    assert np.all(np.abs(sums) <= 50)


def test_clients_reject_non_finite_rewards() -> None:
    spec = EnvSpec(d=2, K=1, horizon=100, fixed_actions=True)
    X = np.zeros((2, 1, 2))
    public = _local_public(2)
    with pytest.raises(DataBoundError, match="NaN"):
        LocalClient(2.0, -1.0, 1.0, spec).randomize(
            0, public, X, np.zeros(2, int), np.array([0.0, np.nan]), np.random.default_rng(0)
        )
    budget = ShuffleBudget(1.0, 1e-6, -1.0, 1.0, resolve_switches(), "closed", ((4, 4),))
    mine = PublicState({"action": np.zeros(2, int), "n": np.full(2, 4)})
    with pytest.raises(DataBoundError, match="NaN"):
        ShuffleClient(budget, spec).randomize(
            0, mine, X, np.zeros(2, int), np.array([np.inf, 0.0]), np.random.default_rng(0)
        )


# -- accounting ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_shuffle_guarantee_is_parallel_composition_of_the_batches(engine: str) -> None:
    T = 20_000
    alg = HannaShuffle(0.5, delta=1e-4)
    res = simulate(alg, _env(), T, replications=3, seed=7, engine=engine)
    g = res.guarantee
    ranges = batch_size_ranges(T, 6, 2)
    for rec in alg.batch_log:  # every released batch is one the calibration accounted
        lo, hi = ranges[rec["i"] - 1]
        assert lo <= rec["n"] <= hi
    sizes = sorted({n for lo, hi in ranges for n in range(lo, hi + 1)})
    expected = compose_parallel(
        [amplified_guarantee(alg.budget.params(n).local_epsilon(), n, 1e-4) for n in sizes]
    )
    assert (
        g.model == "shuffle"
        and g.epsilon == pytest.approx(expected.epsilon)
        and g.delta == expected.delta
    )
    assert g.epsilon <= 0.5 * (1 + 1e-9)  # strict: (eps, delta) is met
    realized = sorted({rec["n"] for rec in alg.batch_log})
    assert max(realized) > 16 * math.log(2 / 1e-4) and g.delta == 1e-4  # the large batches amplify
    assert res.resolved_params["batch_sizes"] == [list(r) for r in ranges]


def test_central_and_paper_guarantees_are_honest() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paper = simulate(HannaCentral(0.5, preset="paper"), _env(), 3000, replications=2, seed=0)
        local = simulate(HannaLocal(0.5, preset="paper"), _env(), 3000, replications=2, seed=0)
    strict = simulate(HannaCentral(0.5), _env(), 3000, replications=2, seed=0)
    assert strict.guarantee.epsilon == pytest.approx(0.5) and strict.guarantee.delta == 0.0
    assert paper.guarantee.epsilon == pytest.approx(
        1.0
    )  # Lap(1/eps) on [-1, 1] is 2 eps-DP (spec 2.5)
    assert local.guarantee.epsilon == pytest.approx(1.0) and local.guarantee.model == "local"
    # the shuffle model with a horizon too short for any batch to complete releases nothing
    nothing = simulate(HannaShuffle(0.5), _env(), 3, replications=2, seed=0)
    assert nothing.guarantee.epsilon == 0.0 and "nothing is released" in nothing.guarantee.notes


# -- U15: the shuffler's assignment is a uniform permutation of the schedule ------------------------------------
def test_shuffler_assigns_a_uniform_permutation_of_batch_one() -> None:
    # batch 1 of T = 8 on the hexagon: a 2-point core set, n_ia = ceil(q / 2) = 2 each (q = 3.79), n_1 = 4
    R = 3000
    alg = SpyShuffle(1.0, delta=1e-3)
    simulate(alg, _env(), 8, replications=R, seed=8, engine="reference", checkpoints=[8])
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
        simulate(alg, env, 500, replications=2, seed=9, engine="reference")
        actions.append(np.array(seen))
    np.testing.assert_array_equal(actions[0], actions[1])


# -- U12: horizons, edge cases, determinism --------------------------------------------------------------------
@pytest.mark.parametrize(
    "T", [1, 2, 7, 8, 100, math.floor(math.e**7) - 1, math.floor(math.e**7) + 1]
)
@pytest.mark.parametrize("engine", ENGINES)
def test_any_horizon_runs_exactly_t_rounds(T: int, engine: str) -> None:
    for alg in (HannaCentral(1.0), HannaLocal(1.0), HannaShuffle(1.0, delta=1e-3)):
        res = simulate(alg, _env(), T, replications=2, seed=1, checkpoints=[T], engine=engine)
        assert res.checkpoints[-1] == T and np.all(np.isfinite(res.regret))
        assert np.all(res.regret[:, -1] <= T * 2.0 + 1e-9)
        assert np.all(alg.core.t_done <= T)


def test_single_action_zero_actions_and_determinism() -> None:
    one = FiniteActionEnv(d=2, K=1, actions=np.array([[0.6, 0.8]]), noise="rademacher")
    zero = FiniteActionEnv(d=2, K=3, actions=np.zeros((3, 2)), noise="rademacher")
    for engine in ENGINES:
        for alg in (HannaCentral(1.0), HannaLocal(1.0), HannaShuffle(1.0)):
            assert np.all(
                simulate(alg, one, 300, replications=2, seed=0, engine=engine).final_regret == 0
            )
            assert np.all(
                simulate(alg, zero, 300, replications=2, seed=0, engine=engine).final_regret == 0
            )
        a = simulate(HannaShuffle(1.0), _env(), 3000, replications=3, seed=9, engine=engine)
        b = simulate(HannaShuffle(1.0), _env(), 3000, replications=3, seed=9, engine=engine)
        np.testing.assert_array_equal(a.regret, b.regret)
        np.testing.assert_array_equal(a.reward, b.reward)


def test_requires_a_fixed_action_set() -> None:
    from privbandits.envs import SyntheticEnv

    for alg in (HannaCentral(1.0), HannaLocal(1.0), HannaShuffle(1.0)):
        with pytest.raises(ValidationError, match="fixed finite action set"):
            simulate(alg, SyntheticEnv(d=2, K=3), 10)
