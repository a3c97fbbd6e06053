"""The exact aggregate path (``engine="aggregate"``) against the per-round / per-user reference path.

Exact values of the commit phase on a rigged instance (both engines), and two-sample tests with fixed
seeds.  Regret on a fixed instance is discrete (sums of counts x gaps),
so the Kolmogorov-Smirnov test does not apply; :func:`same_law` bins both samples at the pooled
deciles and runs a chi-square test of homogeneity (valid with ties), threshold p > 1e-3.  The
released noisy sums are continuous: Kolmogorov-Smirnov, same threshold.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from privbandits.algorithms.hanna import HannaCentral, HannaLocal, HannaShuffle, NPBatched
from privbandits.algorithms.linear.phased_elimination import PhasedElimination
from privbandits.core.errors import ValidationError
from privbandits.core.rng import make_streams
from privbandits.engine.aggregate import _prefix_counts
from privbandits.envs import FiniteActionEnv
from privbandits.simulate import simulate

HEX = np.array([[math.cos(a), math.sin(a)] for a in np.linspace(0, 2 * math.pi, 6, endpoint=False)])
P_MIN = 1e-3


def same_law(a: np.ndarray, b: np.ndarray, bins: int = 10) -> float:
    """p-value of a chi-square homogeneity test on the pooled-decile bins of two samples.

    Values are rounded to 1e-6 first: the per-round path accumulates regret round by round, so the
    same discrete value can differ in the last bits between the paths.
    """
    a, b = np.round(a, 6), np.round(b, 6)
    pooled = np.concatenate([a, b])
    edges = np.unique(np.quantile(pooled, np.linspace(0, 1, bins + 1)[1:-1]))
    table = np.array(
        [
            np.bincount(np.searchsorted(edges, x, side="right"), minlength=edges.size + 1)
            for x in (a, b)
        ]
    )
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return 1.0 if np.array_equal(np.sort(a), np.sort(b)) or np.ptp(pooled) == 0 else 0.0
    return float(stats.chi2_contingency(table).pvalue)


def _env(**kw) -> FiniteActionEnv:
    return FiniteActionEnv(
        d=2, K=6, actions=HEX, theta=np.array([0.8, 0.3]), noise=kw.pop("noise", "rademacher"), **kw
    )


def recording(cls: type) -> type:
    """Subclass of ``cls`` whose engines record every released batch (index, rows, counts, r_hat)."""

    class Rec(cls):  # type: ignore[misc, valid-type]
        def make_core(self, A):  # type: ignore[override]
            core = super().make_core(A)
            self.releases = getattr(self, "releases", [])
            finish = core.finish_batch

            def rec(plan, r_hat, gamma=None):
                self.releases.append(
                    (plan.index.copy(), plan.rows.copy(), plan.counts.copy(), np.array(r_hat))
                )
                return finish(plan, r_hat, gamma)

            core.finish_batch = rec
            return core

    Rec.__name__ = f"Recording{cls.__name__}"
    return Rec


CASES = [
    ("central", HannaCentral, {"epsilon": 1.0}),
    ("local", HannaLocal, {"epsilon": 2.0}),
    ("shuffle", HannaShuffle, {"epsilon": 1.0, "delta": 1e-3}),
    ("np", NPBatched, {}),
]


@pytest.mark.parametrize(("label", "cls", "kw"), CASES, ids=[c[0] for c in CASES])
def test_aggregate_path_matches_the_reference_path_in_distribution(
    label: str, cls: type, kw: dict
) -> None:
    T, R = 3000, 300
    ck = [700, 1500, T]  # 700 and 1500 fall inside batches (n_i = 4, 10, 28, 78, 230, 680, ...)
    runs = {}
    for engine in ("aggregate", "reference"):
        alg = recording(cls)(**kw)
        res = simulate(
            alg,
            _env(),
            T,
            replications=R,
            seed=11 if engine == "aggregate" else 12,
            engine=engine,
            checkpoints=ck,
        )
        assert res.engine == engine
        runs[engine] = (alg, res)
    (fa, f), (sa, s) = runs["aggregate"], runs["reference"]
    for j in range(len(ck)):
        assert same_law(f.regret[:, j], s.regret[:, j]) > P_MIN, ("regret", j)
        assert same_law(f.reward[:, j], s.reward[:, j]) > P_MIN, ("reward", j)
        assert same_law(f.estimation_error[:, j], s.estimation_error[:, j]) > P_MIN, ("error", j)
    # per-batch released sums of the first three batches: identical public schedules, same law
    for i in (1, 2, 3):
        fb = [x for x in fa.releases if x[0][0] == i]
        sb = [x for x in sa.releases if x[0][0] == i]
        fc = np.concatenate([x[2] for x in fb])
        sc = np.concatenate([x[2] for x in sb])
        assert np.all(fc == fc[0]) and np.array_equal(
            fc[0], sc[0]
        )  # nothing eliminated yet: same plan
        fr = np.concatenate([x[3] for x in fb])
        sr = np.concatenate([x[3] for x in sb])
        for a in np.flatnonzero(fc[0]):
            assert stats.ks_2samp(fr[:, a], sr[:, a]).pvalue > P_MIN, (i, a)
    assert f.guarantee.model == s.guarantee.model


def no_round_loop(cls: type) -> type:
    """Subclass of ``cls`` whose per-round / per-user steps raise (the aggregate path must not call them)."""

    class NoLoop(cls):  # type: ignore[misc, valid-type]
        def reset(self, spec, replications, streams):  # type: ignore[override]
            super().reset(spec, replications, streams)
            for role in (getattr(self, "client", None), getattr(self, "shuffler", None)):
                if role is not None:
                    for m in ("choose", "randomize", "assign", "collect", "release"):
                        if hasattr(role, m):
                            setattr(role, m, _forbidden)

        def select(self, t, contexts):  # type: ignore[override]
            _forbidden()

        def update(self, t, contexts, actions, rewards):  # type: ignore[override]
            _forbidden()

    return NoLoop


def _forbidden(*args: object) -> None:
    raise AssertionError("the aggregate path ran a per-round step")


@pytest.mark.parametrize(
    ("label", "cls", "kw"),
    CASES + [("ls", PhasedElimination, {})],
    ids=[c[0] for c in CASES] + ["ls"],
)
def test_auto_picks_the_aggregate_path_which_runs_batch_by_batch(
    label: str, cls: type, kw: dict
) -> None:
    # engine="auto" chooses the aggregate path for these algorithms on a fixed action set, and that path
    # never runs a round: no select/update, no client, no shuffler (a non-timing check of the fast path)
    res = simulate(no_round_loop(cls)(**kw), _env(), 20_000, replications=5, seed=0)
    assert res.engine == "aggregate" and np.all(np.isfinite(res.regret))
    with pytest.raises(AssertionError, match="per-round"):
        simulate(no_round_loop(cls)(**kw), _env(), 50, replications=2, seed=0, engine="reference")


def test_engine_is_validated() -> None:
    with pytest.raises(ValidationError, match="engine"):
        simulate(HannaCentral(1.0), _env(), 10, engine="fast")
    from privbandits.envs import SyntheticEnv

    with pytest.raises(ValidationError, match="fixed finite action set"):
        simulate(NPBatched(), SyntheticEnv(d=2, K=3), 10, engine="aggregate")


# -- exact values of the commit phase ----------------------------------------------------------------------
THETA_FAKE = np.array(
    [-1.0, 0.0]
)  # its best hexagon action is 3 (angle pi): true mean -0.8, gap 1.6


def rigged(cls: type) -> type:
    """Subclass of ``cls`` whose engines estimate from noise-free sums of a *fake* parameter.

    Every release is replaced by ``n_ia <a, THETA_FAKE>``: the elimination is deterministic and the run
    commits to the fake best action 3, which is suboptimal under the true parameter, so the commit phase
    has a known positive gap.  Records each finished batch's (rows, counts).
    """

    class Rig(cls):  # type: ignore[misc, valid-type]
        def make_core(self, A):  # type: ignore[override]
            core = super().make_core(A)
            self.finished = []
            finish = core.finish_batch

            def fake(plan, r_hat, gamma=None):
                self.finished.append((plan.rows.copy(), plan.counts.copy()))
                return finish(plan, plan.counts * (core.A[plan.rows] @ THETA_FAKE), gamma)

            core.finish_batch = fake
            return core

    Rig.__name__ = f"Rigged{cls.__name__}"
    return Rig


@pytest.mark.parametrize("engine", ["aggregate", "reference"])
@pytest.mark.parametrize(("label", "cls", "kw"), CASES, ids=[c[0] for c in CASES])
def test_commit_phase_regret_is_the_committed_gap_times_the_remaining_rounds(
    label: str, cls: type, kw: dict, engine: str
) -> None:
    # Noise-free rewards and checkpoints at every round: at each batch end the regret is exactly the sum of
    # n_ia * gap_a over the finished batches, and from the commit round t_c on it grows by exactly the
    # committed action's gap per round: regret(t) = regret(t_c) + (t - t_c) gap, reward likewise.  A commit
    # phase shifted by one round, or without the gap, fails (the gap is 1.6, the tolerance 1e-9).
    T, R = 1500, 3  # L = 6 batches of ~3, 9, 27, 80, 239, 714 pulls, then >= 400 committed rounds
    env = _env(noise="none")
    alg = rigged(cls)(**kw)
    res = simulate(
        alg, env, T, replications=R, seed=4, engine=engine, checkpoints=np.arange(1, T + 1)
    )
    means = env.fixed_means
    gaps = means.max(axis=1, keepdims=True) - means
    core = alg.core
    assert np.all(core.committed == 3) and np.all(gaps[:, 3] == pytest.approx(1.6))
    for r in range(R):
        t, regret, reward = 0, 0.0, 0.0
        for rows, counts in alg.finished:
            if r not in rows:
                continue
            n_ia = counts[list(rows).index(r)]
            t += int(n_ia.sum())
            regret += float(n_ia @ gaps[r])
            reward += float(n_ia @ means[r])
            assert res.regret[r, t - 1] == pytest.approx(regret, abs=1e-9)  # a batch end
            assert res.reward[r, t - 1] == pytest.approx(reward, abs=1e-9)
        t_c = t
        assert t_c == core.t_done[r] and 0 < t_c < T - 100
        rounds = np.arange(t_c, T + 1)  # round counts from the commit on
        np.testing.assert_allclose(
            res.regret[r, t_c - 1 :], regret + (rounds - t_c) * gaps[r, 3], rtol=0, atol=1e-9
        )
        np.testing.assert_allclose(
            res.reward[r, t_c - 1 :], reward + (rounds - t_c) * means[r, 3], rtol=0, atol=1e-9
        )


# -- building blocks of the aggregate path-----------------------------------------------------------------
def test_prefix_counts_are_nested_hypergeometric_prefixes() -> None:
    # brute force: uniformly random orders of the multiset {0 x5, 1 x3, 2 x2}, cut after 3 and 7 pulls
    rng = np.random.default_rng(1)
    colors = np.array([5, 3, 2])
    base = np.repeat(np.arange(3), colors)
    N = 8_000
    brute = np.empty((N, 3, 3), dtype=int)
    fast = np.empty((N, 3, 3), dtype=int)
    for k in range(N):
        perm = rng.permutation(base)
        for s, (lo, hi) in enumerate([(0, 3), (3, 7), (7, 10)]):
            brute[k, s] = np.bincount(perm[lo:hi], minlength=3)
        fast[k] = _prefix_counts(rng, colors, np.array([3, 7, 10]))
    assert np.all(fast.sum(axis=1) == colors) and np.all(fast.sum(axis=2) == [3, 4, 3])
    # joint law of (first-segment count of color 0, second-segment count of color 0)
    code = lambda x: x[:, 0, 0] * 10 + x[:, 1, 0]
    assert same_law(code(brute).astype(float), code(fast).astype(float), bins=20) > P_MIN


@pytest.mark.parametrize(
    ("noise", "link", "clip"),
    [
        ("rademacher", "identity", None),
        ("rademacher", "identity", (-0.5, 1.0)),
        ("gaussian", "identity", None),
        ("gaussian", "identity", (-1.0, 1.0)),
        ("bounded", "identity", (-0.2, 0.2)),
        ("bernoulli", "logistic", None),
        ("poisson", "poisson", None),
        ("poisson", "poisson", (0.0, 1.0)),
        ("none", "identity", (-0.1, 0.1)),
    ],
)
def test_reward_sums_have_the_law_of_summed_rewards(noise: str, link: str, clip) -> None:
    env = FiniteActionEnv(
        d=2,
        K=6,
        actions=HEX * 0.5,
        theta=np.array([0.8, 0.3]),
        noise=noise,
        noise_scale=0.7,
        link=link,
    )
    N, n = 6000, 7
    env.reset(N, make_streams(3), 10)
    rng = np.random.default_rng(4)
    counts = np.zeros((N, 6), dtype=int)
    counts[:, 2] = n
    fast = env.reward_sums(counts, rng, clip=clip)[:, 2]
    lo, hi = clip if clip is not None else (-np.inf, np.inf)
    mu = np.repeat(env.fixed_means[:, 2:3], n, axis=1)
    direct = np.clip(env.noise.realize(mu, env.noise.draw_variates(rng, (N, n))), lo, hi).sum(
        axis=1
    )
    assert same_law(fast, direct) > P_MIN
    assert np.all(env.reward_sums(counts * 0, rng) == 0)
    # the explicit-draw fallback agrees too (forced through the generic branch)
    explicit = env._explicit_sums(counts[:, 2:3], env.fixed_means[:, 2:3], rng, lo, hi)[:, 0]
    assert same_law(explicit, direct) > P_MIN


def test_reward_sums_row_and_action_selection() -> None:
    env = _env(noise="none")
    env.reset(3, make_streams(0), 10)
    out = env.reward_sums(
        np.array([[2, 1], [0, 4]]),
        np.random.default_rng(0),
        rows=np.array([2, 0]),
        actions=np.array([[0, 5], [1, 3]]),
    )
    m = env.fixed_means
    np.testing.assert_allclose(out, [[2 * m[2, 0], m[2, 5]], [0.0, 4 * m[0, 3]]])
    from privbandits.core.errors import ValidationError

    with pytest.raises(ValidationError, match="counts"):
        env.reward_sums(np.full((3, 6), -1), np.random.default_rng(0))
    with pytest.raises(ValidationError, match="K=6"):
        env.reward_sums(np.ones((3, 2), int), np.random.default_rng(0))


def test_nocore_and_ls_elimination_run_on_the_aggregate_path() -> None:
    from privbandits.algorithms import make

    env = FiniteActionEnv(d=2, K=50, actions="circle", noise="rademacher")
    T, R = 8000, 40
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for alg in (
            HannaCentral(0.1, core_set=False),
            HannaCentral(0.1, core_set="nocore-uniform"),
            make("phased-elimination"),
        ):
            f = simulate(alg, env, T, replications=R, seed=5, checkpoints=[T])
            s = simulate(
                type(alg)(**alg.get_params()),
                env,
                T,
                replications=R,
                seed=6,
                engine="reference",
                checkpoints=[T],
            )
            # instances are drawn per seed: compare the means with their standard errors (z < 4)
            se = math.hypot(f.final_regret.std(ddof=1), s.final_regret.std(ddof=1)) / math.sqrt(R)
            assert abs(f.final_regret.mean() - s.final_regret.mean()) < 4 * se
