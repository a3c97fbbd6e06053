"""Algorithm 1 (normalization matrix U) of Chen et al. (2025): spec section 9, items 6-12."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.regression.normalization import (
    learn_normalization,
    normalization_messages,
    normalization_moment,
    normalization_release,
    normalization_sensitivity,
    population_sigma,
    spectral_step,
)
from privbandits.regression.releases import noise_multiplier
from privbandits.regression.reweighted import ReweightedRegression

from .helpers import covariates, random_spd, unit


def _discrete_law(rng: np.random.Generator, d: int) -> tuple[np.ndarray, np.ndarray]:
    """An ill-conditioned finite law: 3d atoms in the unit ball, scales down to 1e-3, skewed weights."""
    m = 3 * d
    scales = np.exp(-rng.uniform(0, math.log(1e3), size=d))
    Phi = rng.normal(size=(m, d)) * scales
    Phi /= np.maximum(1.0, np.linalg.norm(Phi, axis=1))[:, None]
    p = rng.dirichlet(np.full(m, 0.3))
    return Phi, p


def _exact_iteration(Phi: np.ndarray, p: np.ndarray, lam: float, steps: int) -> list[np.ndarray]:
    U = np.eye(Phi.shape[1])
    out = [population_sigma(U, Phi, lam, p)]
    for _ in range(steps):
        U = spectral_step(U, out[-1] - lam * U, lam)
        out.append(population_sigma(U, Phi, lam, p))
    return out


@pytest.mark.parametrize("seed", range(20))
def test_exact_iteration_square_root_sandwich_and_convergence(seed: int) -> None:
    """Items 6-7: lambda_min(S_k)^{1/2} <= lambda_min(S_{k+1}) <= lambda_max(S_{k+1}) <= lambda_max(S_k)^{1/2},
    spec(S_k) within [lam^{2^-k}, (1+lam)^{2^-k}], and S_k -> I."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 6))
    lam = float(10 ** rng.uniform(-4, -1))
    Phi, p = _discrete_law(rng, d)
    sig = _exact_iteration(Phi, p, lam, 40)
    for k in range(40):
        e0, e1 = np.linalg.eigvalsh(sig[k]), np.linalg.eigvalsh(sig[k + 1])
        assert e1[0] >= math.sqrt(e0[0]) - 1e-9
        assert e1[-1] <= math.sqrt(e0[-1]) + 1e-9
        if k <= 6:
            assert e0[0] >= lam ** (2.0**-k) - 1e-9 and e0[-1] <= (1 + lam) ** (2.0**-k) + 1e-9
    np.testing.assert_allclose(sig[-1], np.eye(d), atol=1e-8)
    k2 = math.ceil(math.log2(math.log2(1.0 / lam)))
    e = np.linalg.eigvalsh(sig[k2])
    assert 0.5 <= e[0] and e[-1] <= 2.0  # Eq. (2) after log2 log2(1/lam) steps


@pytest.mark.parametrize("seed", range(10))
def test_fixed_point_bounds(seed: int) -> None:
    """Item 8 (spec 4.1 (a)-(d)) at the exact fixed point Sigma_lambda(U) = I."""
    rng = np.random.default_rng(100 + seed)
    d = int(rng.integers(2, 6))
    lam = float(10 ** rng.uniform(-3, -1))
    Phi, p = _discrete_law(rng, d)
    U = np.eye(d)
    for _ in range(40):
        U = spectral_step(U, population_sigma(U, Phi, lam, p) - lam * U, lam)
    np.testing.assert_allclose(population_sigma(U, Phi, lam, p), np.eye(d), atol=1e-8)
    ev = np.linalg.eigvalsh(U)
    assert ev[0] >= 1.0 / (1.0 + lam) - 1e-9
    assert ev[-1] <= 1.0 / lam + 1e-9
    assert float(p @ np.linalg.norm(Phi @ U, axis=1)) <= d + 1e-9
    for _ in range(50):  # max over unit v of E|<U phi, v>| <= sqrt(d)
        v = unit(d, rng)
        assert float(p @ np.abs(Phi @ U @ v)) <= math.sqrt(d) + 1e-9


def test_noiseless_algorithm1_tracks_the_exact_iteration(rng: np.random.Generator) -> None:
    """Item 9: sigma = 0 and large N reproduce the population iteration within sampling error."""
    d, lam, K, N = 3, 0.05, 5, 200_000
    Phi, p = _discrete_law(rng, d)
    batches = [Phi[rng.choice(len(p), size=N, p=p)] for _ in range(K)]
    res = learn_normalization(batches, lam, 0.0, rng)
    sig = _exact_iteration(Phi, p, lam, K)
    U_exact = np.eye(d)
    for k in range(K):
        U_exact = spectral_step(U_exact, sig[k] - lam * U_exact, lam)
    # relative sampling error of a batch mean of bounded matrices ~ 1/sqrt(N) = 2e-3; 5 steps, each
    # a contraction of the relative error (square root), allow 10x
    assert np.linalg.norm(res.U - U_exact, 2) <= 0.02 * np.linalg.norm(U_exact, 2)


@pytest.mark.parametrize("epsilon", [0.5, 0.9])
def test_private_normalization_meets_eq2_on_ill_conditioned_data(epsilon: float) -> None:
    """Item 10: with the default lambda = eps_N and K = 5, spec(Sigma_lambda(U)) in [1/2, 2] in >= 95%
    of seeds (d = 8, scales e^0 .. e^-5, n = 10^4 samples for Algorithm 1)."""
    d, n = 8, 20_000
    est = ReweightedRegression(epsilon)
    lam = est.lam(n, d)
    N = est.plan(n).N
    hits = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        X = covariates(est.K * N, d, 5.0, rng)
        res = learn_normalization(np.split(X, est.K), lam, est.sigma, rng)
        e = np.linalg.eigvalsh(population_sigma(res.U, covariates(50_000, d, 5.0, rng), lam))
        hits += int(0.5 <= e[0] and e[-1] <= 2.0)
        # item 11: the PSD safeguard keeps Sigma_hat >= lambda U_k and ||U_k|| <= 1/lambda
        for Uk, Sk in zip(res.iterates, res.sigma_hats):
            assert np.linalg.eigvalsh(Sk - lam * Uk).min() >= -1e-10
        assert all(np.linalg.norm(Uk, 2) <= 1.0 / lam * (1 + 1e-9) for Uk in res.iterates)
    assert hits >= 19


def test_safeguard_bounds_u_under_huge_noise(rng: np.random.Generator) -> None:
    """Item 11 when the noise dominates (sigma 100x the signal)."""
    X = covariates(1000, 4, 3.0, rng)
    res = learn_normalization(np.split(X, 5), 0.01, 1e4, rng)
    assert all(np.linalg.norm(Uk, 2) <= 100.0 * (1 + 1e-9) for Uk in res.iterates)
    assert np.all(np.isfinite(res.U))


@settings(max_examples=80, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 5),
    st.integers(1, 8),
    st.sampled_from(["random", "eigen"]),
)
def test_normalization_sensitivity_bound(seed: int, d: int, N: int, kind: str) -> None:
    """Item 12: ||M(D) - M(D')||_F <= sqrt(2) ||U|| / N for replace-one neighbours (tight for orthogonal
    top eigenvectors)."""
    rng = np.random.default_rng(seed)
    U = random_spd(d, rng, 1e3)
    X = covariates(N, d, 2.0, rng)
    Xp = X.copy()
    if kind == "eigen":
        ev, Q = np.linalg.eigh(U)
        X[-1], Xp[-1] = Q[:, -1], Q[:, 0]
    else:
        Xp[-1] = unit(d, rng) * rng.uniform(0, 1)
    diff = np.linalg.norm(normalization_moment(U, X) - normalization_moment(U, Xp))
    assert diff <= normalization_sensitivity(U, N) * (1 + 1e-12)
    iu = np.triu_indices(d)  # the released upper triangle moves by no more than the Frobenius norm
    assert (
        np.linalg.norm((normalization_moment(U, X) - normalization_moment(U, Xp))[iu])
        <= diff + 1e-15
    )


def test_local_message_sensitivity(rng: np.random.Generator) -> None:
    """Item 12 (local): one user's X_i moves by at most sqrt(2) ||U|| (attained on orthogonal eigenvectors)."""
    U = random_spd(4, rng, 100.0)
    ev, Q = np.linalg.eigh(U)
    a = normalization_moment(U, Q[:, -1][None])
    b = normalization_moment(U, Q[:, -2][None])
    assert np.linalg.norm(a - b) <= math.sqrt(2) * ev[-1] * (1 + 1e-12)
    assert np.linalg.norm(a - b) >= ev[-1]  # the bound is of the right order


def test_jdp_release_noise_distribution(rng: np.random.Generator) -> None:
    """The released matrix is the batch average plus symmetric N(0, (sigma Delta)^2) noise on and above
    the diagonal.  R = 20000 releases at once: each entry's mean error has standard error s/sqrt(R) (5 SE
    bound) and its sample variance relative standard error sqrt(2/R) = 1% (5% bound)."""
    U, Phi = random_spd(3, rng, 10.0), covariates(7, 3, 1.0, rng)
    sigma, R = noise_multiplier(0.8, 1e-5), 20_000
    M = normalization_moment(U, Phi)
    out, Delta, std = normalization_release(U, np.broadcast_to(Phi, (R, 7, 3)), sigma, rng)
    assert Delta == pytest.approx(math.sqrt(2) * np.linalg.norm(U, 2) / 7) and std == pytest.approx(
        sigma * Delta
    )
    np.testing.assert_array_equal(out, np.swapaxes(out, 1, 2))
    Z = out - M
    iu = np.triu_indices(3)
    up = Z[:, iu[0], iu[1]]
    assert np.all(np.abs(up.mean(axis=0)) <= 5 * std / math.sqrt(R))
    np.testing.assert_allclose(up.var(axis=0), std**2, rtol=0.05)
    assert abs(np.corrcoef(up[:, 0], up[:, 1])[0, 1]) <= 5 / math.sqrt(R)  # independent entries


def test_ldp_messages_unbiased_with_per_user_noise(rng: np.random.Generator) -> None:
    """Each user's message is X_i + symmetric N(0, (sigma sqrt(2) ||U||)^2): mean over 20000 users within
    5 SE of X, variance within 5% (relative SE 1%)."""
    U, phi = random_spd(2, rng, 5.0), covariates(1, 2, 0.0, rng)
    sigma, R = noise_multiplier(0.5, 1e-5), 20_000
    msgs = normalization_messages(U, np.broadcast_to(phi, (R, 2)), sigma, rng)
    std = sigma * math.sqrt(2) * np.linalg.norm(U, 2)
    X = normalization_moment(U, phi)
    assert np.all(np.abs(msgs.mean(axis=0) - X) <= 5 * std / math.sqrt(R))
    np.testing.assert_allclose(msgs[:, 0, 1].var(), std**2, rtol=0.05)
