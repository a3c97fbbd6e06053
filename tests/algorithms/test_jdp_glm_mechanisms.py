"""JDP-GLM mechanisms on the code that runs: compiled tree, strict DPPGD, projections, and an audit.

Statistical thresholds are derived from the sampling variance (stated per test); seeds are fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from privbandits.algorithms.sarmasarkar.audit import gradient_release_spec
from privbandits.algorithms.sarmasarkar.optim import (
    dppgd,
    dppgd_iterations,
    dppgd_sigma,
    newton_mle,
    noisy_gradient_sum,
    project_ellipsoid,
)
from privbandits.algorithms.sarmasarkar.tree import tree_insert, tree_prefix
from privbandits.core.links import LINK_PROBIT, PROBIT
from privbandits.privacy.audit import audit_spec
from privbandits.privacy.tree import TreeAggregator, tree_levels


def _leaves(rng, T, d):
    x = rng.standard_normal((T, d))
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1.0)
    return np.einsum("ti,tj->tij", x, x)


def test_compiled_tree_matches_tree_aggregator_draw_for_draw():
    T, d, sigma = 37, 3, 0.7
    leaves = _leaves(np.random.default_rng(1), T, d)
    ref = TreeAggregator(
        T, d, sigma=sigma, leaf_bound=1.0, rng=np.random.default_rng(5), kind="matrix"
    )
    m = tree_levels(T)
    alpha, noisy, W, out = (
        np.zeros((m, d, d)),
        np.zeros((m, d, d)),
        np.zeros((d, d)),
        np.zeros((d, d)),
    )
    rng = np.random.default_rng(5)
    for t in range(1, T + 1):
        ref.add(leaves[t - 1][None])
        tree_insert(alpha, noisy, t, leaves[t - 1], sigma, rng, W)
        tree_prefix(noisy, t, out)
        np.testing.assert_allclose(out, ref.prefix_sum()[0], rtol=0, atol=1e-12)
        assert np.array_equal(out, out.T)


def test_compiled_tree_exact_without_noise_and_prefix_variance():
    # B-1: exact prefix sums at sigma = 0
    T, d = 5000, 2
    leaves = _leaves(np.random.default_rng(2), T, d)
    m = tree_levels(T)
    alpha, noisy, W, out = (
        np.zeros((m, d, d)),
        np.zeros((m, d, d)),
        np.zeros((d, d)),
        np.zeros((d, d)),
    )
    rng = np.random.default_rng(0)
    csum = np.cumsum(leaves, axis=0)
    for t in range(1, T + 1):
        tree_insert(alpha, noisy, t, leaves[t - 1], 0.0, rng, W)
        if t % 97 == 0 or t == T:
            tree_prefix(noisy, t, out)
            np.testing.assert_allclose(out, csum[t - 1], atol=1e-9)
    # B-2: prefix(t) noise variance popcount(t) sigma^2 (diagonal), popcount(t) sigma^2 / 2 (off-diagonal).
    # t = 7 (popcount 3), sigma = 1, N = 20000 replicates: the sample variance of a Gaussian has relative
    # standard error sqrt(2/N) = 1.0%; 5 standard errors = 5%.
    N, t, zero = 20_000, 7, np.zeros((d, d))
    rng = np.random.default_rng(3)
    samples = np.empty((N, d, d))
    for i in range(N):
        alpha[:] = 0.0
        noisy[:] = 0.0
        for s in range(1, t + 1):
            tree_insert(alpha, noisy, s, zero, 1.0, rng, W)
        tree_prefix(noisy, t, samples[i])
    var = samples.var(axis=0)
    assert var[0, 0] == pytest.approx(3.0, rel=0.05) and var[1, 1] == pytest.approx(3.0, rel=0.05)
    assert var[0, 1] == pytest.approx(1.5, rel=0.05)


def _data(rng, n, d, theta):
    X = rng.standard_normal((n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = (rng.random(n) < PROBIT.mu(X @ theta)).astype(float)
    return X, y


def test_noisy_gradient_sum_mean_and_variance():
    # mean = the exact clipped gradient sum of the family; per-coordinate variance = sigma_sum^2.
    # N = 20000: mean within 5 sigma_sum / sqrt(N); variance within 5 sqrt(2/N) relative.
    rng = np.random.default_rng(4)
    d, n = 3, 50
    X, y = _data(rng, n, d, np.array([1.0, -0.5, 0.2]))
    X[0] *= 4.0  # a point outside the unit ball: its gradient is clipped to norm R
    y[0] = 7.0
    member = (rng.random(n) < 0.5).astype(np.int8)
    theta = np.array([0.3, 0.1, -0.2])
    R, sigma = 1.0, 2.5
    exact = np.zeros(d)
    for i in range(n):
        if member[i] == 1:
            gi = (PROBIT.mu(X[i] @ theta) - y[i]) * X[i]
            exact += gi * min(1.0, R / np.linalg.norm(gi))
    N = 20_000
    g, x = np.empty(d), np.empty(d)
    out = np.empty((N, d))
    r = np.random.default_rng(5)
    for k in range(N):
        noisy_gradient_sum(X, y, member, 1, n, theta, LINK_PROBIT, R, sigma, r, g, x)
        out[k] = g
    assert np.all(np.abs(out.mean(axis=0) - exact) < 5 * sigma / math.sqrt(N))
    assert np.all(np.abs(out.var(axis=0) / sigma**2 - 1) < 5 * math.sqrt(2 / N))


def test_dppgd_sigma_gives_rho_per_call():
    # O-3: T_it steps of sensitivity 2R at sigma_sum compose to exactly rho
    for T_it, rho in [(1, 0.01), (37, 0.002), (1000, 0.1)]:
        s = dppgd_sigma(1.0, T_it, rho)
        assert T_it * (2.0**2) / (2 * s**2) == pytest.approx(rho, rel=1e-12)
    assert dppgd_iterations(1000, 0.01, 5, 1e-3, 5000) == math.ceil((1e4 + math.log(1e3)) / 5)
    assert dppgd_iterations(10**6, 0.01, 5, 1e-3, 500) == 500
    assert dppgd_iterations(0, 0.01, 5, 0.5, 500) == 1


def _reference_minimizer(X, y, lam, S):
    def f(th):
        z = X @ th
        return float(np.sum(z * PROBIT.mu(z) + PROBIT.dmu(z) - y * z) + 0.5 * lam * th @ th)

    def grad(th):
        return X.T @ (PROBIT.mu(X @ th) - y) + lam * th

    cons = {"type": "ineq", "fun": lambda th: S**2 - th @ th, "jac": lambda th: -2 * th}
    return optimize.minimize(
        f,
        np.zeros(X.shape[1]),
        jac=grad,
        constraints=[cons],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    ).x


@pytest.mark.parametrize("S", [0.4, 3.0])
def test_noise_free_optimizers_reach_the_constrained_minimizer(S):
    # O-2: the probit loss m(z) = z Phi(z) + phi(z) - phi(0); active (S = 0.4) and inactive (S = 3) constraint
    rng = np.random.default_rng(6)
    d, n, lam = 3, 400, 2.0
    theta_star = np.array([1.5, -1.0, 0.5])
    X, y = _data(rng, n, d, theta_star)
    member = np.ones(n, dtype=np.int8)
    ref = _reference_minimizer(X, y, lam, S)
    dummy, eye, ones = np.zeros(d), np.eye(d), np.ones(d)
    th = np.zeros(d)
    newton_mle(X, y, member, 1, n, LINK_PROBIT, lam, True, S, dummy, eye, ones, 0.0, th, 100)
    assert np.linalg.norm(th) <= S + 1e-9
    if S > 1:  # projected Newton is the exact regularized MLE when the constraint is inactive
        np.testing.assert_allclose(th, ref, atol=1e-5)
    out = np.empty(d)
    T_it = 20_000
    eta = (
        2 * S / ((1.0 + lam * S / n) * math.sqrt(T_it)) * 20
    )  # a larger step: noise-free convergence check
    dppgd(
        X,
        y,
        member,
        1,
        n,
        LINK_PROBIT,
        1.0,
        lam,
        float(n),
        T_it,
        0.0,
        eta,
        True,
        S,
        dummy,
        eye,
        ones,
        0.0,
        dummy,
        np.random.default_rng(0),
        out,
    )

    def loss(th):
        z = X @ th
        return float(np.sum(z * PROBIT.mu(z) + PROBIT.dmu(z) - y * z) + 0.5 * lam * th @ th)

    assert np.linalg.norm(out) <= S + 1e-9
    assert loss(out) - loss(ref) < 1e-3 * n


def test_ellipsoid_projection_feasible_idempotent_kkt():
    # O-4
    rng = np.random.default_rng(7)
    d = 3
    for _ in range(50):
        A = rng.standard_normal((d, d))
        V = A @ A.T + 0.1 * np.eye(d)
        vals, U = np.linalg.eigh(V)
        c, y = rng.standard_normal(d), 5 * rng.standard_normal(d)
        r = 0.5 + rng.random()
        out, w = np.empty(d), np.empty(d)
        project_ellipsoid(y, c, U, vals, r, out, w)
        q = (out - c) @ V @ (out - c)
        assert q <= r * r * (1 + 1e-9)
        again = np.empty(d)
        project_ellipsoid(out, c, U, vals, r, again, w)
        np.testing.assert_allclose(again, out, atol=1e-9)
        if (y - c) @ V @ (y - c) > r * r:
            assert q == pytest.approx(r * r, rel=1e-9)
            g = V @ (out - c)  # y - out = nu V (out - c), nu >= 0
            nu = (y - out) @ g / (g @ g)
            assert nu >= 0
            np.testing.assert_allclose(y - out, nu * g, atol=1e-7 * max(1.0, np.abs(y).max()))
        else:
            np.testing.assert_allclose(out, y)


def test_audit_of_the_gradient_release_passes_and_flags_under_noise():
    # the exact compiled step JDP-GLM runs, clipping included; half the noise must be flagged
    ok = audit_spec(gradient_release_spec(), seed=0)
    assert ok.passed, ok.notes
    bad = audit_spec(gradient_release_spec(0.5), seed=0)
    assert not bad.passed, bad.notes
