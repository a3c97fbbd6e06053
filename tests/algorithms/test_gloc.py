"""GLOC with ONS-GLM (Jun et al. 2017): formulas, incremental state, ONS regret bound, regret."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from privbandits.algorithms import make
from privbandits.algorithms.glm.gloc import GLOC, gloc_alpha, gloc_beta, mahalanobis_ball_projection
from privbandits.core.errors import ValidationError
from privbandits.envs.synthetic import SyntheticEnv
from privbandits.simulate import simulate


def _logistic_env(d=2, K=10, **kw):
    return SyntheticEnv(d=d, K=K, link="logistic", noise="bernoulli", **kw)


# --- formulas --------------------------------------------------------------------------------------
def test_alpha_formula():
    kappa, R, delta, B = 0.2, 0.5, 0.01, 3.0
    inner = 1 + 2 * B / kappa + 4 * R**4 / (kappa**4 * delta**2)
    want = 1 + 4 * B / kappa + 8 * R**2 / kappa**2 * math.log(2 / delta * math.sqrt(inner))
    assert float(gloc_alpha(B, kappa, R, delta)) == pytest.approx(want, rel=1e-14)
    assert float(gloc_alpha(B, kappa, 0.0, delta)) == pytest.approx(1 + 4 * B / kappa)  # noiseless


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), lam=st.floats(0.01, 10.0))
def test_beta_residual_term_is_nonnegative_ridge_residual(seed, n, lam):
    """||z||^2 - theta_hat^T X^T z = z^T (I - X (lam I + X^T X)^{-1} X^T) z >= 0 (Theorem 1's correction)."""
    rng = np.random.default_rng(seed)
    d = 3
    X = rng.standard_normal((n, d))
    z = rng.standard_normal(n)
    V = lam * np.eye(d) + X.T @ X
    theta = np.linalg.solve(V, X.T @ z)
    beta = gloc_beta(0.0, 1.0, 0.0, 0.5, lam, 1.0, float(z @ z), theta, X.T @ z)
    resid = z @ (np.eye(n) - X @ np.linalg.solve(V, X.T)) @ z
    assert resid >= -1e-9
    assert beta == pytest.approx(1.0 + lam - resid, rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    D=st.integers(1, 5),
    S=st.floats(0.1, 3.0),
    scale=st.floats(0.01, 30.0),
)
def test_mahalanobis_projection_kkt(seed, D, S, scale):
    """w = argmin_{||w||<=S} ||w - theta||_A: inside points unchanged; outside, ||w|| = S and
    A (theta - w) = nu w with nu >= 0 (KKT), and no feasible point of a random sample is better."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((4, D, D))
    A = G @ G.transpose(0, 2, 1) + 0.1 * np.eye(D)
    theta = rng.standard_normal((4, D)) * scale
    w = mahalanobis_ball_projection(A, theta, S)
    for k in range(4):
        if np.linalg.norm(theta[k]) <= S:
            np.testing.assert_array_equal(w[k], theta[k])
            continue
        assert np.linalg.norm(w[k]) == pytest.approx(S, rel=1e-9)
        g = A[k] @ (theta[k] - w[k])
        nu = g @ w[k] / S**2
        assert nu >= -1e-9 * (1 + np.abs(g).max())
        np.testing.assert_allclose(g, nu * w[k], atol=1e-7 * (1 + np.abs(g).max()))
        Ak, tk = A[k], theta[k]

        def f(v, Ak=Ak, tk=tk):
            return (v - tk) @ Ak @ (v - tk)

        cand = rng.standard_normal((200, D))
        cand *= S * rng.random((200, 1)) ** (1 / D) / np.linalg.norm(cand, axis=1, keepdims=True)
        assert f(w[k]) <= min(f(c) for c in cand) + 1e-9 * (1 + f(w[k]))


def test_mahalanobis_projection_matches_scipy():
    rng = np.random.default_rng(0)
    A = np.array([[[4.0, 1.0], [1.0, 0.5]]])
    theta = np.array([[3.0, -2.0]])
    w = mahalanobis_ball_projection(A, theta, 1.0)[0]
    res = optimize.minimize(
        lambda v: (v - theta[0]) @ A[0] @ (v - theta[0]),
        np.zeros(2),
        constraints=[{"type": "ineq", "fun": lambda v: 1.0 - v @ v}],
        tol=1e-14,
    )
    np.testing.assert_allclose(w, res.x, atol=1e-6)
    assert rng is not None


# --- incremental state equals the batch formulas ---------------------------------------------------
STATE = ("V_inv", "xz", "z_sq", "theta_hat", "A", "A_inv", "theta_ons", "B", "beta")


def _state(alg) -> dict:
    """The kernel state arrays of a GLOC run by name."""
    return dict(zip(STATE, alg.kernel.state))


def _run_logged(alg, env, T, R, seed=0):
    """Run GLOC recording x_t, y_t and the ONS prediction z_t = x_t^T theta_t of every round."""
    from privbandits.core.rng import make_streams

    streams = make_streams(seed)
    spec = env.reset(R, streams, T)
    alg.reset(spec, R, streams)
    log = {"x": [], "y": [], "z": [], "theta_ons": []}
    for t in range(T):
        X = env.next_round()
        a = alg.select(t, X)
        y = env.pull(a)
        x = X[np.arange(R), a]
        theta_ons = alg.ons_estimate()
        log["x"].append(x)
        log["y"].append(y)
        log["z"].append(np.einsum("rd,rd->r", x, theta_ons))
        log["theta_ons"].append(theta_ons)
        alg.update(t, X, a, y)
    return {k: np.stack(v, axis=1) for k, v in log.items()}


def test_incremental_statistics_match_batch():
    alg = GLOC(lam=2.0, ons_eps=0.5)
    env = _logistic_env(d=3, K=5)
    log = _run_logged(alg, env, 300, 2)
    X, z = log["x"], log["z"]
    st = _state(alg)
    for r in range(2):
        V = 2.0 * np.eye(3) + X[r].T @ X[r]
        np.testing.assert_allclose(st["V_inv"][r], np.linalg.inv(V), rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(
            st["theta_hat"][r], np.linalg.solve(V, X[r].T @ z[r]), rtol=1e-7, atol=1e-10
        )
        np.testing.assert_allclose(st["A"][r], 0.5 * np.eye(3) + X[r].T @ X[r], rtol=1e-12)
        np.testing.assert_allclose(st["A_inv"][r], np.linalg.inv(st["A"][r]), rtol=1e-8, atol=1e-12)
    assert np.all(
        np.linalg.norm(log["theta_ons"], axis=-1) <= alg.resolved_params()["S"] * (1 + 1e-12)
    )


def test_ons_regret_is_below_its_data_dependent_bound():
    """Theorem 3 holds deterministically: sum_s l_s(theta_s) - l_s(theta*) <= B_t for theta* in the ball."""
    alg = GLOC()
    env = _logistic_env(d=3, K=5)
    T = 2000
    log = _run_logged(alg, env, T, 4, seed=1)
    link = env.link
    zstar = np.einsum("rtd,rd->rt", log["x"], env.theta_star)
    loss = lambda z: link.m(z) - log["y"] * z
    regret = (loss(log["z"]) - loss(zstar)).sum(axis=1)
    B = _state(alg)["B"]
    res = alg.resolved_params()
    assert np.all(regret <= B)
    assert np.all(B > 2 * res["kappa"] * res["S"] ** 2 * alg.ons_eps)


def test_confidence_set_covers_theta_star():
    """||theta* - theta_hat_t||^2_{V_t} <= beta_t for every t in every replication (Theorem 1; delta = 0.05,
    so a violation in more than a few of 20 replications would contradict it)."""
    alg = GLOC(delta=0.05)
    env = _logistic_env(d=2, K=10)
    from privbandits.core.rng import make_streams

    R, T = 20, 1500
    streams = make_streams(3)
    spec = env.reset(R, streams, T)
    alg.reset(spec, R, streams)
    violated = np.zeros(R, dtype=bool)
    ratio = []
    for t in range(T):
        X = env.next_round()
        a = alg.select(t, X)
        alg.update(t, X, a, env.pull(a))
        st = _state(alg)
        diff = env.theta_star - st["theta_hat"]
        V = np.linalg.inv(st["V_inv"])
        dist2 = np.einsum("rd,rde,re->r", diff, V, diff)
        violated |= dist2 > st["beta"]
        ratio.append(dist2 / st["beta"])
    assert violated.sum() <= 2
    assert np.all(alg.beta > 0)
    assert np.median(np.array(ratio)) < 0.5


# --- behaviour --------------------------------------------------------------------------------------
def test_sublinear_regret_and_ons_convergence_on_logistic_instance():
    """Diverse contexts (uniform on the sphere), logistic rewards: log-log slope of the cumulative regret
    between T/10 and T well below 1, far below the uniform policy, and the ONS iterate converges."""
    T, R = 20000, 4
    env = _logistic_env()
    alg = make("gloc")
    res = simulate(alg, env, T, replications=R, seed=11, checkpoints=[T // 100, T // 10, T])
    reg = res.regret.mean(axis=0)
    slope = math.log10(reg[2] / reg[1])
    assert slope < 0.75
    uni = simulate(make("uniform"), _logistic_env(), T, replications=R, seed=11).final_regret.mean()
    assert reg[2] < 0.1 * uni
    err = res.estimation_error.mean(axis=0)
    assert err[2] < err[0]
    ons_err = np.linalg.norm(alg.ons_estimate() - env.theta_star, axis=1)
    assert ons_err.mean() < 0.15


def test_ons_error_decreases_over_time():
    env = _logistic_env(d=2, K=10)
    alg = GLOC()
    errs = []
    from privbandits.core.rng import make_streams

    R, T = 6, 8000
    streams = make_streams(2)
    spec = env.reset(R, streams, T)
    alg.reset(spec, R, streams)
    for t in range(T):
        X = env.next_round()
        a = alg.select(t, X)
        alg.update(t, X, a, env.pull(a))
        if t + 1 in (T // 80, T // 8, T):
            errs.append(np.linalg.norm(alg.ons_estimate() - env.theta_star, axis=1).mean())
    assert errs[0] > errs[1] > errs[2]


@pytest.mark.parametrize(
    "link, noise", [("identity", "gaussian"), ("probit", "bernoulli"), ("poisson", "poisson")]
)
def test_other_links_learn(link, noise):
    env = SyntheticEnv(d=2, K=6, link=link, noise=noise, noise_scale=0.1)
    res = simulate(make("gloc", alpha=0.5), env, 3000, replications=3, seed=5)
    uni = simulate(
        make("uniform"),
        SyntheticEnv(d=2, K=6, link=link, noise=noise, noise_scale=0.1),
        3000,
        replications=3,
        seed=5,
    )
    assert res.final_regret.mean() < 0.3 * uni.final_regret.mean()


def test_multi_setting_block_features():
    env = SyntheticEnv(d=2, K=3, setting="multi", link="logistic", noise="bernoulli")
    alg = make("gloc")
    res = simulate(alg, env, 3000, replications=3, seed=1)
    assert alg.estimate().shape == (3, 3, 2)
    assert res.estimation_error[:, -1].mean() < res.estimation_error[:, 0].mean()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"lam": 0.0}, "lam"),
        ({"delta": 0.0}, "delta"),
        ({"ons_eps": -1.0}, "ons_eps"),
        ({"kappa": 0.0}, "kappa"),
        ({"alpha": -0.1}, "alpha"),
        ({"S": 0.0}, "S"),
    ],
)
def test_validation(kwargs, match):
    with pytest.raises(ValidationError, match=match):
        GLOC(**kwargs)


@pytest.mark.parametrize("setting", ["single", "multi"])
@pytest.mark.parametrize("params", GLOC.test_params)
def test_reference_equals_compiled(setting, params):
    runs = [
        simulate(
            GLOC(**params),
            _logistic_env(d=2, K=4, setting=setting),
            200,
            replications=3,
            seed=3,
            engine=engine,
        )
        for engine in ("reference", "compiled")
    ]
    np.testing.assert_allclose(runs[0].regret, runs[1].regret, rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        runs[0].estimation_error, runs[1].estimation_error, rtol=0, atol=1e-9
    )


def test_guarantee_is_non_private_and_needs_reset():
    from privbandits.core.errors import NotResetError

    alg = GLOC()
    with pytest.raises(NotResetError):
        _ = alg.guarantee
    res = simulate(alg, _logistic_env(), 5, seed=0)
    assert not res.guarantee.is_private and res.resolved_params["S"] == pytest.approx(1.0)
