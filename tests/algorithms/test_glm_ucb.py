"""GLM-UCB (Filippi et al. 2010): constants, estimation paths, regret."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import special

from privbandits.algorithms import available, make
from privbandits.algorithms._shared.glm import fit_glm_mle
from privbandits.algorithms.glm.glm_ucb import GLMUCB, filippi_kappa, glm_ucb_radius
from privbandits.core.errors import ValidationError
from privbandits.core.links import get_link
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.envs import FiniteActionEnv, SyntheticEnv
from privbandits.simulate import simulate


def test_registered() -> None:
    assert available()["glm-ucb"] is GLMUCB


def test_sublinear_regret_on_logistic_instance() -> None:
    # d = 5, K = 10 contexts on the sphere, ||theta*|| = 2, Bernoulli rewards with the logistic
    # link.  With the practical multiplier alpha = 0.05 the log-log slope of mean cumulative
    # regret over [1e3, 1e4] is clearly sublinear (< 0.8), and far below uniform play.
    ckpt = np.unique(np.round(np.logspace(3, 4, 8)).astype(int))
    env = SyntheticEnv(d=5, K=10, link="logistic", noise="bernoulli", theta_norm=2.0)
    res = simulate(GLMUCB(alpha=0.05), env, 10_000, replications=8, seed=2, checkpoints=ckpt)
    slope = float(np.polyfit(np.log(ckpt), np.log(res.regret.mean(axis=0)), 1)[0])
    assert slope < 0.8, slope
    uni = simulate(make("uniform"), env, 10_000, replications=8, seed=2, checkpoints=ckpt)
    assert res.regret[:, -1].mean() < 0.25 * uni.regret[:, -1].mean()
    # the MLE is consistent: estimation error shrinks over the run
    assert res.estimation_error[:, -1].mean() < 0.6 * res.estimation_error[:, 0].mean()


def test_radius_constants_from_the_link() -> None:
    spec = EnvSpec(
        d=3,
        K=4,
        horizon=1000,
        link=get_link("logistic"),
        context_bound=1.0,
        theta_bound=2.0,
        reward_range=(0.0, 1.0),
    )
    alg = GLMUCB(lam=0.5, delta=0.05, alpha=1.0)
    alg.reset(spec, 2, make_streams(0))
    res = alg.resolved_params()
    # bound on |x' theta| is C_B * S = 2: k_mu = mu'(0) = 1/4, c_mu = mu'(2)
    assert res["k_mu"] == pytest.approx(0.25)
    assert res["c_mu"] == pytest.approx(special.expit(2.0) * (1 - special.expit(2.0)))
    kappa = math.sqrt(3 + 2 * math.log(1 + 2 * 1.0 / 0.5))
    rho = (
        2
        * 0.25
        * kappa
        * 1.0
        / res["c_mu"]
        * math.sqrt(2 * 3 * math.log(50) * math.log(2 * 3 * 1000 / 0.05))
    )
    np.testing.assert_allclose(alg.radius(50), [rho, rho], rtol=1e-12)
    assert filippi_kappa(0.5, 1.0) == pytest.approx(kappa)
    assert glm_ucb_radius(1.0, 3, 1000, 0.05, 0.25, 0.1, 1.0, 1.0) == 0.0  # log(1) = 0


def test_initial_round_robin_and_lambda0() -> None:
    env = SyntheticEnv(d=3, K=5, link="logistic", noise="bernoulli")
    streams = make_streams(1)
    alg = GLMUCB(lam=1e-3)
    alg.reset(env.reset(4, streams, 50), 4, streams)
    V = 1e-3 * np.eye(3)
    for t in range(3):
        X = env.next_round()
        a = alg.select(t, X)
        np.testing.assert_array_equal(a, np.full(4, t % 5))
        alg.update(t, X, a, env.pull(a))
        V = V + np.einsum("rd,re->rde", X[:, t], X[:, t])
    lam0 = np.linalg.eigvalsh(V)[:, 0]
    np.testing.assert_allclose(alg.kappa, [filippi_kappa(v, 1.0) for v in lam0], rtol=1e-9)


def _feed(alg: GLMUCB, spec: EnvSpec, A: np.ndarray, arms: np.ndarray, y: np.ndarray) -> None:
    alg.reset(spec, A.shape[0], make_streams(0))
    for t in range(arms.shape[1]):
        alg.update(t, A, arms[:, t], y[:, t])


@pytest.mark.parametrize("link", ["logistic", "probit", "poisson"])
def test_arm_statistics_path_equals_history_path(link: str) -> None:
    # On a fixed action set the per-arm (count, sum) statistics give the exact same MLE as the
    # full history.
    rng = np.random.default_rng(3)
    R, K, d, n = 2, 6, 3, 120
    A = rng.normal(size=(R, K, d))
    A /= np.linalg.norm(A, axis=-1, keepdims=True)
    arms = rng.integers(0, K, size=(R, n))
    y = (rng.random((R, n)) < 0.4).astype(float) * (3.0 if link == "poisson" else 1.0)
    base = EnvSpec(d=d, K=K, horizon=n, link=get_link(link), reward_range=(0.0, 3.0))
    hist, arm = GLMUCB(refit_growth=1.0, tol=1e-13), GLMUCB(refit_growth=1.0, tol=1e-13)
    _feed(hist, replace(base, fixed_actions=False), A, arms, y)
    _feed(arm, replace(base, fixed_actions=True), A, arms, y)
    assert hist.resolved_params()["mode"] == "history" and arm.resolved_params()["mode"] == "arms"
    np.testing.assert_allclose(arm.estimate(), hist.estimate(), rtol=1e-7, atol=1e-9)
    X = A[np.arange(R)[:, None], arms]
    exact = fit_glm_mle(X, y, link, lam=1.0, tol=1e-14)
    np.testing.assert_allclose(hist.estimate(), exact.theta, rtol=1e-7, atol=1e-9)


def test_identity_link_is_the_ridge_estimate_every_round() -> None:
    rng = np.random.default_rng(4)
    A = rng.normal(size=(2, 4, 3))
    arms = rng.integers(0, 4, size=(2, 30))
    y = rng.normal(size=(2, 30))
    spec = EnvSpec(d=3, K=4, horizon=30)
    alg = GLMUCB(lam=2.0)
    _feed(alg, spec, A, arms, y)
    X = A[np.arange(2)[:, None], arms]
    V = 2.0 * np.eye(3) + np.einsum("rnd,rne->rde", X, X)
    np.testing.assert_allclose(
        alg.estimate(),
        np.linalg.solve(V, np.einsum("rnd,rn->rd", X, y)[..., None])[..., 0],
        rtol=1e-9,
    )


def test_geometric_refit_schedule_is_exact_at_refits() -> None:
    rng = np.random.default_rng(5)
    R, K, d, n = 2, 5, 2, 400
    spec = EnvSpec(d=d, K=K, horizon=n, link=get_link("logistic"), reward_range=(0.0, 1.0))
    alg = GLMUCB(refit_growth=1.5, tol=1e-13)
    alg.reset(spec, R, make_streams(0))
    fits = []
    Xs, ys = [], []
    for t in range(n):
        X = rng.normal(size=(R, K, d)) / 2
        a = rng.integers(0, K, size=R)
        r = (rng.random(R) < 0.5).astype(float)
        Xs.append(X[np.arange(R), a])
        ys.append(r)
        n_fit = alg.kernel.state[4]  # observations at the last fit, per replication
        before = n_fit.copy()
        alg.update(t, X, a, r)
        if np.any(n_fit != before):
            assert np.all(n_fit == t + 1)
            fits.append(t + 1)
            exact = fit_glm_mle(np.stack(Xs, 1), np.stack(ys, 1), "logistic", lam=1.0, tol=1e-14)
            # both fits stop at a half Newton decrement <= 1e-13 with H >= lam I = I, so each is
            # within ~sqrt(2e-13) ~ 4.5e-7 of the exact MLE (to second order)
            np.testing.assert_allclose(alg.estimate(), exact.theta, rtol=0, atol=1e-6)
    # first fit after the d initial rounds, then n_k >= 1.5 n_{k-1}: O(log n) refits
    assert fits[0] == d
    assert all(b >= math.ceil(1.5 * a) for a, b in itertools.pairwise(fits))
    assert len(fits) <= 2 + math.log(n / d) / math.log(1.5)


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"lam": 0.0}, "lam"),
        ({"delta": 0.0}, "delta"),
        ({"alpha": -0.1}, "alpha"),
        ({"refit_growth": 0.9}, "refit_growth"),
        ({"n_init": -1}, "n_init"),
        ({"r_max": 0.0}, "r_max"),
    ],
)
def test_validation(kw: dict, name: str) -> None:
    with pytest.raises(ValidationError, match=name):
        GLMUCB(**kw)


def test_rejects_multi_setting() -> None:
    env = SyntheticEnv(d=2, K=3, setting="multi")
    with pytest.raises(ValidationError, match="settings"):
        simulate(GLMUCB(), env, 5)


def test_runs_on_every_link() -> None:
    for link, noise in [("identity", "gaussian"), ("probit", "bernoulli"), ("poisson", "poisson")]:
        env = FiniteActionEnv(d=2, K=4, link=link, noise=noise)
        res = simulate(GLMUCB(alpha=0.1), env, 200, replications=2, seed=0)
        assert np.all(np.isfinite(res.regret)) and res.estimation_error is not None


@pytest.mark.parametrize(
    "params", [p for p in GLMUCB.test_params if p.get("preset") != "authors_code"]
)  # the authors_code preset is a numpy run (reference driver only)
@pytest.mark.parametrize("link, noise", [("logistic", "bernoulli"), ("identity", "gaussian")])
def test_reference_equals_compiled(params: dict, link: str, noise: str) -> None:
    runs = [
        simulate(
            GLMUCB(**params),
            SyntheticEnv(d=2, K=4, link=link, noise=noise),
            150,
            replications=3,
            seed=4,
            engine=engine,
        )
        for engine in ("reference", "compiled")
    ]
    np.testing.assert_allclose(runs[0].regret, runs[1].regret, rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        runs[0].estimation_error, runs[1].estimation_error, rtol=0, atol=1e-9
    )
    fixed = [
        simulate(
            GLMUCB(**params),
            FiniteActionEnv(d=2, K=4, link=link, noise=noise),
            150,
            replications=2,
            seed=4,
            engine=engine,
        )
        for engine in ("reference", "compiled")
    ]
    np.testing.assert_allclose(fixed[0].regret, fixed[1].regret, rtol=0, atol=1e-9)


def test_unconverged_refits_are_counted() -> None:
    env = SyntheticEnv(d=2, K=4, link="logistic", noise="bernoulli")
    alg = GLMUCB(n_iter=1, tol=1e-300, refit_growth=1.0)
    simulate(alg, env, 50, replications=2, seed=0)
    assert alg.n_unconverged > 0
    ok = GLMUCB()
    simulate(ok, env, 50, replications=2, seed=0)
    assert ok.n_unconverged == 0
