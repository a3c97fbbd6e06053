"""Batched GLM maximum-likelihood solver (algorithms/_shared/glm.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.algorithms._shared.glm import (
    fit_glm_mle,
    glm_gradient_hessian,
    glm_objective,
    link_m,
    ridge_from_stats,
)
from privbandits.core.errors import ValidationError
from privbandits.core.links import get_link

LINKS = ["identity", "logistic", "probit", "poisson"]


def _data(
    link: str, R: int, n: int, d: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(R, n, d)) / np.sqrt(d)
    theta = rng.normal(size=(R, d))
    mu = get_link(link).mu(np.einsum("rnd,rd->rn", X, theta))
    if link == "identity":
        y = mu + 0.3 * rng.normal(size=mu.shape)
    elif link == "poisson":
        y = rng.poisson(mu).astype(float)
    else:
        y = (rng.random(mu.shape) < mu).astype(float)
    return X, y, theta


@settings(max_examples=40, deadline=None)
@given(
    link=st.sampled_from(LINKS),
    seed=st.integers(0, 10_000),
    n=st.integers(1, 60),
    d=st.integers(1, 5),
    lam=st.sampled_from([1e-2, 0.5, 3.0]),
)
def test_solution_is_stationary(link: str, seed: int, n: int, d: int, lam: float) -> None:
    # The regularized objective is strictly convex (lam > 0): the returned point must satisfy the
    # likelihood equation sum (mu(x'theta) - y) x + lam theta = 0 up to the requested tolerance.
    X, y, _ = _data(link, 3, n, d, seed)
    lk = get_link(link)
    fit = fit_glm_mle(X, y, link, lam=lam, tol=1e-14)
    assert fit.converged.all()
    g, H = glm_gradient_hessian(fit.theta, X, y, np.ones_like(y), lk, lam)
    # gradient small in the H^{-1} norm (Newton decrement) and in absolute terms
    dec = np.einsum("rd,rd->r", g, np.linalg.solve(H, g[..., None])[..., 0])
    assert np.all(dec <= 1e-10)
    # no perturbation lowers the objective
    rng = np.random.default_rng(seed)
    f0 = glm_objective(fit.theta, X, y, np.ones_like(y), lk, lam)
    for _ in range(5):
        pert = fit.theta + 1e-3 * rng.normal(size=fit.theta.shape)
        assert np.all(glm_objective(pert, X, y, np.ones_like(y), lk, lam) >= f0 - 1e-10)
    np.testing.assert_allclose(fit.hessian, H, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("link", LINKS)
def test_recovers_theta_with_much_data(link: str) -> None:
    # n = 20000 observations, d = 3: the MLE is within a few standard errors (~ 1/sqrt(n * I))
    # of theta*; 0.1 is > 5 se for every link here (Fisher information per obs >= ~0.05).
    X, y, theta = _data(link, 2, 20_000, 3, seed=7)
    fit = fit_glm_mle(X, y, link, lam=1e-3)
    assert fit.converged.all()
    assert np.abs(fit.theta - theta).max() < 0.1


@pytest.mark.parametrize("link", LINKS)
def test_aggregated_weights_equal_raw_data(link: str) -> None:
    # A fixed action set observed many times: per-arm counts and mean rewards as (weights, y)
    # give the same estimate as the raw observations.
    rng = np.random.default_rng(1)
    A = rng.normal(size=(2, 5, 3)) / 2
    arms = rng.integers(0, 5, size=(2, 300))
    Xraw = A[np.arange(2)[:, None], arms]
    _, y, _ = _data(link, 2, 300, 3, seed=2)
    cnt = np.zeros((2, 5))
    tot = np.zeros((2, 5))
    for r in range(2):
        np.add.at(cnt[r], arms[r], 1.0)
        np.add.at(tot[r], arms[r], y[r])
    raw = fit_glm_mle(Xraw, y, link, lam=0.5, tol=1e-14)
    agg = fit_glm_mle(A, tot / np.maximum(cnt, 1), link, lam=0.5, weights=cnt, tol=1e-14)
    np.testing.assert_allclose(agg.theta, raw.theta, rtol=1e-7, atol=1e-9)


def test_zero_weights_mask_padding() -> None:
    X, y, _ = _data("logistic", 2, 50, 3, seed=3)
    pad_X = np.concatenate([X, 5.0 * np.ones((2, 20, 3))], axis=1)
    pad_y = np.concatenate([y, np.ones((2, 20))], axis=1)
    w = np.concatenate([np.ones(50), np.zeros(20)])
    a = fit_glm_mle(X, y, "logistic", lam=1.0, tol=1e-14)
    b = fit_glm_mle(pad_X, pad_y, "logistic", lam=1.0, weights=w, tol=1e-14)
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-9, atol=1e-12)


def test_identity_link_equals_ridge_from_stats() -> None:
    X, y, _ = _data("identity", 3, 40, 4, seed=5)
    fit = fit_glm_mle(X, y, "identity", lam=2.0)
    gram = np.einsum("rnd,rne->rde", X, X)
    xy = np.einsum("rnd,rn->rd", X, y)
    np.testing.assert_allclose(ridge_from_stats(gram, xy, 2.0), fit.theta, rtol=1e-10, atol=1e-12)
    assert fit.n_iter.max() == 1  # a quadratic objective: one Newton step


def test_warm_start_at_the_optimum_takes_no_step() -> None:
    X, y, _ = _data("probit", 2, 80, 3, seed=9)
    first = fit_glm_mle(X, y, "probit", lam=1.0, tol=1e-14)
    again = fit_glm_mle(X, y, "probit", lam=1.0, theta0=first.theta, tol=1e-12)
    assert again.n_iter.max() == 0
    np.testing.assert_array_equal(again.theta, first.theta)


def test_batched_equals_one_by_one() -> None:
    X, y, _ = _data("poisson", 4, 30, 2, seed=4)
    joint = fit_glm_mle(X, y, "poisson", lam=0.3, tol=1e-14)
    for r in range(4):
        single = fit_glm_mle(X[r], y[r], "poisson", lam=0.3, tol=1e-14)
        np.testing.assert_allclose(single.theta[0], joint.theta[r], rtol=1e-9, atol=1e-12)


def test_separable_logistic_lam_zero_vs_ridge() -> None:
    # Perfectly separated labels: the unregularized MLE does not exist (the infimum 0 of the
    # objective is approached as |theta| -> inf).  The solver must stay finite and drive the
    # objective to within its tolerance of the infimum; with lam > 0 the estimate is the unique
    # bounded minimizer.
    X = np.array([[[1.0], [2.0], [-1.0], [-2.0]]])
    y = np.array([[1.0, 1.0, 0.0, 0.0]])
    lk = get_link("logistic")
    free = fit_glm_mle(X, y, "logistic", lam=0.0, n_iter=200)
    assert np.all(np.isfinite(free.theta)) and free.theta[0, 0] > 5.0
    assert glm_objective(free.theta, X, y, np.ones((1, 4)), lk, 0.0)[0] < 1e-8
    ridge = fit_glm_mle(X, y, "logistic", lam=1.0)
    assert ridge.converged[0] and 0.0 < ridge.theta[0, 0] < 3.0


def test_poisson_large_counts_stable() -> None:
    # Large responses and a far-off start: damped Newton must not overflow.
    X = np.ones((1, 5, 1))
    y = np.full((1, 5), 1e6)
    fit = fit_glm_mle(X, y, "poisson", lam=1e-6, theta0=np.array([[-30.0]]))
    assert fit.converged[0]
    assert fit.theta[0, 0] == pytest.approx(np.log(1e6), rel=1e-6)


@pytest.mark.parametrize(
    ("kw", "pattern"),
    [
        ({"lam": -1.0}, "lam"),
        ({"tol": 0.0}, "tol"),
        ({"n_iter": 0}, "n_iter"),
        ({"weights": -np.ones(4)}, "weights"),
        ({"theta0": np.zeros((2, 5))}, "theta0"),
        ({"link": "cauchit"}, "link"),
    ],
)
def test_validation(kw: dict, pattern: str) -> None:
    X = np.ones((1, 4, 2))
    y = np.zeros((1, 4))
    args = {"link": "logistic", **kw}
    with pytest.raises(ValidationError, match=pattern):
        fit_glm_mle(X, y, **args)


def test_shape_and_nan_validation() -> None:
    with pytest.raises(ValidationError, match="y must have shape"):
        fit_glm_mle(np.ones((1, 4, 2)), np.zeros((1, 3)), "identity")
    with pytest.raises(ValidationError, match="NaN"):
        fit_glm_mle(np.full((1, 4, 2), np.nan), np.zeros((1, 4)), "identity")
    with pytest.raises(ValidationError, match="X must have shape"):
        fit_glm_mle(np.ones(4), np.zeros(4), "identity")


@pytest.mark.parametrize("link", LINKS)
def test_compiled_antiderivative_matches_the_link(link: str) -> None:
    # link_m is the compiled m (m' = mu) the Newton solver's line search uses: equal to the numpy
    # Link.m on a wide grid and its finite-difference derivative is mu.  In the probit tail the
    # numpy form loses ~x^2 * eps relative accuracy (1 - x Phi/phi cancels), ~3e-10 at x = 36.
    lk = get_link(link)
    z = np.concatenate([np.linspace(-60, 40, 2001), [-5.0, -5.000001, -4.999999]])
    m = np.array([link_m(lk.code, float(v)) for v in z])
    np.testing.assert_allclose(m, lk.m(z), rtol=1e-9 if link == "probit" else 1e-12, atol=1e-300)
    h = 1e-5
    zz = np.linspace(-4, 4, 41)
    fd = (
        np.array([link_m(lk.code, v + h) for v in zz])
        - np.array([link_m(lk.code, v - h) for v in zz])
    ) / (2 * h)
    np.testing.assert_allclose(fd, lk.mu(zz), rtol=1e-6, atol=1e-9)
