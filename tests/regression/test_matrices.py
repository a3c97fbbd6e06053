"""Primitives of re-weighted regression (Chen et al. 2025 spec section 9, items 3-4)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.regression.matrices import (
    proj_ellipsoid,
    psd_apply,
    psd_project,
    row_norms,
    sym_polar,
)

from .helpers import random_spd

seeds = st.integers(0, 2**32 - 1)
dims = st.integers(1, 6)


@settings(max_examples=60, deadline=None)
@given(seeds, dims)
def test_sym_polar_is_psd_and_preserves_norms(seed: int, d: int) -> None:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    S = sym_polar(A)
    assert np.array_equal(S, S.T)
    assert np.linalg.eigvalsh(S).min() >= -1e-10
    V = rng.normal(size=(5, d))
    np.testing.assert_allclose(
        row_norms(V, S), np.linalg.norm(V @ A.T, axis=1), rtol=1e-9, atol=1e-12
    )


@settings(max_examples=60, deadline=None)
@given(seeds, dims)
def test_sym_polar_square_is_u_sigma_inv_u(seed: int, d: int) -> None:
    rng = np.random.default_rng(seed)
    U, Sigma = random_spd(d, rng, 30.0), random_spd(d, rng, 30.0)
    S = sym_polar(psd_apply(Sigma, lambda e: e**-0.5) @ U)
    np.testing.assert_allclose(S @ S, U @ np.linalg.inv(Sigma) @ U, rtol=1e-8, atol=1e-10)


@settings(max_examples=60, deadline=None)
@given(seeds, dims, st.floats(0.1, 30.0))
def test_proj_ellipsoid_feasible_idempotent_kkt(seed: int, d: int, scale: float) -> None:
    rng = np.random.default_rng(seed)
    U = random_spd(d, rng, 1e3)
    v = scale * rng.normal(size=d)
    w = proj_ellipsoid(v, U)
    assert np.linalg.norm(U @ w) <= 1.0 + 1e-9
    np.testing.assert_allclose(proj_ellipsoid(w, U), w, rtol=1e-9, atol=1e-12)
    if np.linalg.norm(U @ v) <= 1.0:
        np.testing.assert_array_equal(w, v)
        return
    # KKT: v - w = m U^2 w with m >= 0, on the boundary
    assert abs(np.linalg.norm(U @ w) - 1.0) < 1e-8
    g = U @ U @ w
    m = float(g @ (v - w)) / float(g @ g)
    assert m >= 0.0
    np.testing.assert_allclose(v - w, m * g, rtol=1e-6, atol=1e-8 * np.linalg.norm(v))


def test_proj_ellipsoid_matches_a_convex_solver(rng: np.random.Generator) -> None:
    from scipy.optimize import minimize

    U = random_spd(3, rng, 50.0)
    v = 5.0 * rng.normal(size=3)
    w = proj_ellipsoid(v, U)
    ref = minimize(
        lambda x: 0.5 * np.sum((x - v) ** 2),
        np.zeros(3),
        jac=lambda x: x - v,
        constraints=[{"type": "ineq", "fun": lambda x: 1.0 - np.sum((U @ x) ** 2)}],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    np.testing.assert_allclose(w, ref.x, atol=1e-6)


def test_psd_project_clears_negative_eigenvalues(rng: np.random.Generator) -> None:
    A = rng.normal(size=(5, 5))
    S = psd_project(A + A.T)
    assert np.linalg.eigvalsh(S).min() >= -1e-12
    e = np.linalg.eigvalsh(A + A.T)
    np.testing.assert_allclose(
        np.sort(np.linalg.eigvalsh(S)), np.sort(np.maximum(e, 0.0)), atol=1e-10
    )
