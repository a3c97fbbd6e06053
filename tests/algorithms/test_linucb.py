"""LinUCB / OFUL (Abbasi-Yadkori et al. 2011): textbook properties of the compiled kernel."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.algorithms import make
from privbandits.algorithms.kernel import CuratorKernel
from privbandits.algorithms.linear.linucb import LinUCB, oful_radius
from privbandits.core.errors import NotResetError, ValidationError
from privbandits.core.rng import make_streams
from privbandits.envs import SyntheticEnv
from privbandits.simulate import simulate

#: Checkpoints of one long run, log-spaced over [1e3, 3e4].
CKPT = np.unique(np.round(np.logspace(3, np.log10(3e4), 12)).astype(int))


def _loglog_slope(ckpt: np.ndarray, regret: np.ndarray) -> float:
    return float(np.polyfit(np.log(ckpt), np.log(regret.mean(axis=0)), 1)[0])


def test_regret_grows_like_sqrt_t() -> None:
    # Standard synthetic instance: d = 5, K = 10 contexts uniform on the sphere, theta* on the
    # sphere, Gaussian noise with sigma = 1.  OFUL's regret is O(d sqrt(T) log T): the log-log slope
    # of mean cumulative regret over [1e3, 3e4] must be well below 1 (we require < 0.7), and
    # positive (regret keeps growing).
    env = SyntheticEnv(d=5, K=10, contexts="sphere", noise="gaussian", noise_scale=1.0)
    res = simulate(LinUCB(), env, int(CKPT[-1]), replications=10, seed=11, checkpoints=CKPT)
    assert res.engine == "compiled"
    slope = _loglog_slope(CKPT, res.regret)
    assert 0.0 < slope < 0.7, slope
    uni = simulate(make("uniform"), env, int(CKPT[-1]), replications=10, seed=11, checkpoints=CKPT)
    assert res.regret[:, -1].mean() < 0.2 * uni.regret[:, -1].mean()


def _run_rounds(
    alg: LinUCB, n: int, seed: int = 0, R: int = 2
) -> tuple[np.ndarray, np.ndarray, SyntheticEnv]:
    """``n`` rounds through the role methods; returns the chosen contexts (R, n, d) and rewards."""
    env = SyntheticEnv(d=3, K=4, noise="gaussian", noise_scale=0.5)
    streams = make_streams(seed)
    spec = env.reset(R, streams, n + 1)
    alg.reset(spec, R, streams)
    xs, rs = [], []
    for t in range(n):
        X = env.next_round()
        a = alg.select(t, X)
        r = env.pull(a)
        alg.update(t, X, a, r)
        xs.append(X[np.arange(R), a])
        rs.append(r)
    return np.stack(xs, axis=1), np.stack(rs, axis=1), env


def test_estimate_is_the_ridge_solution_and_state_is_consistent() -> None:
    lam = 0.7
    alg = LinUCB(lam=lam)
    X, r, _ = _run_rounds(alg, 40)
    assert isinstance(alg.kernel, CuratorKernel)
    V_inv, b, theta, logdet = alg.kernel.state[:4]
    for k in range(2):
        V = lam * np.eye(3) + X[k].T @ X[k]
        np.testing.assert_allclose(V_inv[k], np.linalg.inv(V), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(b[k], X[k].T @ r[k], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(
            theta[k], np.linalg.solve(V, X[k].T @ r[k]), rtol=1e-9, atol=1e-12
        )
        # log det(V) / det(lam I) tracked with the matrix determinant lemma
        assert logdet[k] == pytest.approx(np.linalg.slogdet(V)[1] - 3 * np.log(lam), rel=1e-9)
    np.testing.assert_array_equal(alg.estimate(), theta)


def test_select_maximizes_the_optimistic_index() -> None:
    # After 25 rounds, the compiled select picks argmax_a x_a^T theta + alpha sqrt(beta) ||x_a||_{V^-1}
    # with sqrt(beta) = oful_radius(log det V / det(lam I)) (numpy recomputation).
    lam, alpha, sigma, delta = 1.3, 0.8, 0.5, 0.05
    alg = LinUCB(lam=lam, alpha=alpha, sigma=sigma, delta=delta)
    R = 5
    Xc, r, env = _run_rounds(alg, 25, seed=2, R=R)
    V = lam * np.eye(3) + np.einsum("rnd,rne->rde", Xc, Xc)
    theta = np.linalg.solve(V, np.einsum("rnd,rn->rd", Xc, r)[..., None])[..., 0]
    logdet = np.linalg.slogdet(V)[1] - 3 * np.log(lam)
    beta = oful_radius(logdet, sigma, lam, env.theta_bound, delta)
    X = env.next_round()
    width = np.sqrt(np.einsum("rkd,rde,rke->rk", X, np.linalg.inv(V), X))
    index = np.einsum("rkd,rd->rk", X, theta) + alpha * beta[:, None] * width
    np.testing.assert_array_equal(alg.select(25, X), index.argmax(axis=1))


def test_oful_radius_formula() -> None:
    # Abbasi-Yadkori et al. (2011), Theorem 2: sigma sqrt(2 ln(1/delta) + ln det V/det(lam I)) + sqrt(lam) S
    val = oful_radius(np.array([0.0, 2.0]), sigma=0.5, lam=4.0, S=1.5, delta=0.01)
    expect = 0.5 * np.sqrt(2 * np.log(100.0) + np.array([0.0, 2.0])) + 2.0 * 1.5
    np.testing.assert_allclose(val, expect, rtol=1e-12)


def test_zero_alpha_is_greedy() -> None:
    alg = LinUCB(alpha=0.0)
    env = SyntheticEnv(d=3, K=5)
    streams = make_streams(3)
    alg.reset(env.reset(4, streams, 10), 4, streams)
    alg.kernel.state[2][:] = np.array([1.0, 0.0, 0.0])  # theta_hat, in place (the kernel's state)
    X = env.next_round()
    np.testing.assert_array_equal(alg.select(0, X), np.argmax(X[..., 0], axis=1))


def test_sigma_defaults_to_the_announced_noise_scale() -> None:
    alg = LinUCB()
    with pytest.raises(NotResetError):
        alg.resolved_params()
    simulate(alg, SyntheticEnv(d=2, K=3, noise_scale=0.37, theta_norm=0.8), 5)
    assert alg.resolved_params() == {"sigma": 0.37, "S": 0.8}
    res = simulate(LinUCB(sigma=0.2), SyntheticEnv(d=2, K=3, noise_scale=0.37), 5)
    assert res.resolved_params["sigma"] == 0.2 and res.params["sigma"] == 0.2


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"lam": 0.0}, "lam"),
        ({"delta": 1.0}, "delta"),
        ({"alpha": -1.0}, "alpha"),
        ({"sigma": -0.1}, "sigma"),
    ],
)
def test_validation_names_the_parameter(kw: dict, name: str) -> None:
    with pytest.raises(ValidationError, match=name):
        LinUCB(**kw)


def test_rejects_unsupported_link() -> None:
    env = SyntheticEnv(d=2, K=3, link="logistic", noise="bernoulli")
    with pytest.raises(ValidationError, match="links"):
        simulate(LinUCB(), env, 5)
