"""G-optimal design by Frank-Wolfe with a small core set (spec hanna2022 sections 3.3-3.4, U2-U4)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.algorithms._shared.design import (
    design_g,
    g_optimal_design,
    greedy_spanning_subset,
    working_subspace,
)
from privbandits.core.errors import ValidationError


def _sphere(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    X = rng.normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _g_full(X: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """x^T V(pi)^+ x in the original coordinates (pseudo-inverse on span(X))."""
    V = (X * pi[:, None]).T @ X
    return np.einsum("ij,jk,ik->i", X, np.linalg.pinv(V, rcond=1e-10, hermitian=True), X)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    m=st.integers(1, 6),
    extra=st.integers(0, 60),
    kind=st.sampled_from(["sphere", "gaussian", "lowrank"]),
)
def test_design_properties(seed: int, m: int, extra: int, kind: str) -> None:
    # U2 + support bound: pi is a probability vector, m <= g <= 2m, sum pi g = m (trace identity),
    # support <= m (m + 1) / 2 (Lattimore & Szepesvari Thm 21.1 via Caratheodory pruning).
    rng = np.random.default_rng(seed)
    n = m + extra
    if kind == "lowrank":  # rows in an m-dimensional subspace of R^(m+2)
        B = np.linalg.qr(rng.normal(size=(m + 2, m)))[0]
        X = rng.normal(size=(n, m)) @ B.T
    else:
        X = _sphere(rng, n, m) if kind == "sphere" else rng.normal(size=(n, m))
    des = g_optimal_design(X)
    assert des.m == m
    assert np.all(des.pi >= 0) and abs(des.pi.sum() - 1) <= 1e-12
    assert m - 1e-9 <= des.g <= 2 * m + 1e-9
    g = _g_full(X, des.pi)
    assert g.max() == pytest.approx(des.g, rel=1e-6)
    assert float(des.pi @ g) == pytest.approx(m, abs=1e-8)
    assert des.support.size <= m * (m + 1) // 2
    assert des.support.size <= m + des.n_iter  # hard invariant of greedy init + FW (spec U4)
    np.testing.assert_array_equal(des.support, np.flatnonzero(des.pi > 0))


def test_orthonormal_basis_is_uniform() -> None:
    Q = np.linalg.qr(np.random.default_rng(0).normal(size=(5, 5)))[0]
    des = g_optimal_design(Q)
    np.testing.assert_allclose(des.pi, np.full(5, 0.2), atol=1e-12)
    assert des.g == pytest.approx(5.0, abs=1e-9)


def test_cross_polytope_plus_interior_points() -> None:
    # U3: X = {+-e_j} plus interior points: greedy picks m of the +-e_j, g = m with 0 FW steps.
    rng = np.random.default_rng(1)
    m = 4
    E = np.vstack([np.eye(m), -np.eye(m)])
    inner = 0.9 * _sphere(rng, 30, m) * rng.random((30, 1))
    X = np.vstack([inner, E])
    des = g_optimal_design(X)
    assert des.n_iter == 0
    assert des.g == pytest.approx(m, abs=1e-9)
    assert set(des.support) <= set(range(30, 30 + 2 * m))
    assert des.support.size == m


def test_duplicates_and_rank_deficiency() -> None:
    rng = np.random.default_rng(2)
    base = _sphere(rng, 4, 3)
    X = np.vstack([base, base, base[:1]])  # duplicated rows
    des = g_optimal_design(X)
    assert des.m == 3 and des.g <= 6 + 1e-9
    # rows in a 2-d plane of R^5: the design runs in m = 2 dimensions (spec 3.3)
    U = np.linalg.qr(rng.normal(size=(5, 2)))[0]
    Y = _sphere(rng, 20, 2) @ U.T
    des2 = g_optimal_design(Y)
    assert des2.m == 2 and des2.basis.shape == (5, 2)
    np.testing.assert_allclose(des2.basis @ des2.basis.T @ Y.T, Y.T, atol=1e-12)
    assert des2.g <= 4 + 1e-9
    # two collinear survivors: m = 1, either one alone is optimal
    des3 = g_optimal_design(np.array([[1.0, 1.0], [0.5, 0.5]]))
    assert des3.m == 1 and des3.g == pytest.approx(1.0)


def test_zero_actions_give_m_zero() -> None:
    des = g_optimal_design(np.zeros((3, 2)))
    assert des.m == 0 and des.g == 0.0 and des.support.tolist() == [0]
    assert des.pi.tolist() == [1.0, 0.0, 0.0]


def test_spec_reference_core_sets() -> None:
    # Spec section 3.4 prototype (30 random sphere sets per K): d = 2 needs 0 iterations and a
    # support of 2 every time; larger d: support <= 2d (spec U4 soft bound; the spec saw 7/13/32
    # for d = 5/10/20, we see up to 8/15/33 on other draws) and a handful of FW iterations.
    rng = np.random.default_rng(2022)
    for d in (2, 3, 5, 10, 20):
        for K in sorted({d, 10, 100, 1000}):
            if K < d:
                continue
            for _ in range(30 if d <= 5 else 10):
                des = g_optimal_design(_sphere(rng, K, d))
                assert des.g <= 2 * d + 1e-9
                assert des.support.size <= 2 * d
                assert des.n_iter <= 15
                if d == 2:
                    assert des.n_iter == 0 and des.support.size == 2


def test_uniform_init_without_pruning_keeps_every_action() -> None:
    # spec U4: with init="uniform" (no-core-set ablation) the support is all of X
    X = _sphere(np.random.default_rng(3), 50, 3)
    des = g_optimal_design(X, init="uniform", prune=False)
    assert des.support.size == 50
    assert des.g <= 6 + 1e-9


def test_caratheodory_pruning_does_not_increase_g() -> None:
    X = _sphere(np.random.default_rng(4), 200, 3)
    full = g_optimal_design(X, init="uniform", prune=False)
    small = g_optimal_design(X, init="uniform", prune=True)
    assert small.support.size <= 6
    assert small.g <= full.g + 1e-9


def test_tight_factor_approaches_kiefer_wolfowitz_optimum() -> None:
    X = _sphere(np.random.default_rng(5), 300, 4)
    loose = g_optimal_design(X, factor=2.0)
    tight = g_optimal_design(X, factor=1.01, max_iter=100_000)
    assert tight.g <= 1.01 * 4 + 1e-9
    # D-optimality: the tighter design has (almost) the larger log det V(pi)
    ld = [np.linalg.slogdet((X * p.pi[:, None]).T @ X)[1] for p in (loose, tight)]
    assert ld[1] >= ld[0] - 1e-9


def test_max_iter_warns_when_target_is_missed() -> None:
    # 99 points near e1 and one at e2; uniform weights give g(e2) ~ 100 > 2m = 4
    rng = np.random.default_rng(6)
    X = np.vstack([np.column_stack([np.ones(99), 0.01 * rng.normal(size=99)]), [[0.0, 1.0]]])
    with pytest.warns(UserWarning, match="max_iter"):
        des = g_optimal_design(X, init="uniform", prune=False, max_iter=0)
    assert not des.converged and des.g > 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert g_optimal_design(X, init="uniform", prune=False).converged


def test_helpers() -> None:
    X = np.array([[3.0, 0.0], [1.0, 1.0], [0.0, 0.1]])
    assert greedy_spanning_subset(X).tolist() == [0, 1]
    assert working_subspace(np.array([[1.0, 0.0], [1e-12, 0.0]])).shape == (2, 1)
    g = design_g(X, np.array([0.5, 0.5, 0.0]))
    np.testing.assert_allclose(g, _g_full(X, np.array([0.5, 0.5, 0.0])), rtol=1e-10)


@pytest.mark.parametrize(
    ("kw", "pattern"),
    [({"factor": 0.5}, "factor"), ({"init": "random"}, "init"), ({"max_iter": -1}, "max_iter")],
)
def test_validation(kw: dict, pattern: str) -> None:
    with pytest.raises(ValidationError, match=pattern):
        g_optimal_design(np.eye(2), **kw)


def test_bad_inputs() -> None:
    with pytest.raises(ValidationError, match="at least one"):
        g_optimal_design(np.zeros((0, 2)))
    with pytest.raises(ValidationError, match="NaN"):
        g_optimal_design(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValidationError, match="2 dimensions"):
        g_optimal_design(np.ones(3))
