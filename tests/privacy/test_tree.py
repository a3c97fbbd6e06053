"""Tests of the binary-tree (continual release) Gaussian mechanism (spec sarmasarkar2026 sections 4.2, 4.7, 10 B-*)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privbandits.core.errors import DataBoundError, PrivacyError, ValidationError
from privbandits.privacy.accounting import zcdp_for_approx_dp
from privbandits.privacy.tree import (
    TreeAggregator,
    max_nodes_per_leaf,
    node_decomposition,
    nodes_containing,
    sample_tree_noise,
    tree_levels,
    tree_sensitivity,
)


# --------------------------------------------------------------------------------------------
# node structure (pure functions)
# --------------------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=10**6))
def test_decomposition_covers_prefix_exactly_once(t: int) -> None:
    nodes = node_decomposition(t)
    covered = []
    for level, a, b in nodes:
        assert b - a + 1 == 2**level
        assert (a - 1) % 2**level == 0  # aligned dyadic block
        covered.append((a, b))
    # contiguous, disjoint, starting at 1 and ending at t
    pos = 1
    for a, b in covered:
        assert a == pos
        pos = b + 1
    assert pos == t + 1
    assert len(nodes) == t.bit_count()


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=5000), st.data())
def test_prefix_nodes_lie_on_leaf_root_paths(T: int, data: st.DataObject) -> None:
    """Leaf s enters prefix(t) through exactly one node, and that node is on s's root path."""
    t = data.draw(st.integers(min_value=1, max_value=T))
    s = data.draw(st.integers(min_value=1, max_value=t))
    path = nodes_containing(s, T)
    hits = [n for n in node_decomposition(t) if n[1] <= s <= n[2]]
    assert len(hits) == 1
    assert hits[0] in path
    assert len(path) <= max_nodes_per_leaf(T) <= tree_levels(T)


@pytest.mark.parametrize("T", [1, 2, 3, 4, 5, 7, 8, 1000, 1024, 5000])
def test_levels_and_nodes_per_leaf(T: int) -> None:
    assert tree_levels(T) == math.ceil(math.log2(T)) + 1
    worst = max(len(nodes_containing(s, T)) for s in range(1, T + 1))
    assert worst == max_nodes_per_leaf(T) == T.bit_length()
    assert worst <= tree_levels(T)


def test_spec_b3_t5000() -> None:
    # spec B-3: at most bit_length(5000) = 13 nodes per leaf, calibration bound m = 14; popcount(5000) = 5
    assert max_nodes_per_leaf(5000) == 13
    assert tree_levels(5000) == 14
    assert len(node_decomposition(5000)) == 5


# --------------------------------------------------------------------------------------------
# exactness without noise (spec B-1), norm policy
# --------------------------------------------------------------------------------------------
def _sym(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    a = rng.standard_normal(shape)
    return 0.5 * (a + np.swapaxes(a, -1, -2))


@pytest.mark.parametrize("kind", ["vector", "matrix"])
def test_noise_free_prefix_sums_exact(kind: str, rng: np.random.Generator) -> None:
    T, d, R = 23, 3, 4
    shape = (T, R, d) if kind == "vector" else (T, R, d, d)
    xs = rng.standard_normal(shape) if kind == "vector" else _sym(rng, shape)
    tree = TreeAggregator(T, d, sigma=0.0, leaf_bound=100.0, rng=rng, replications=R, kind=kind)
    assert np.array_equal(tree.prefix_sum(), np.zeros((R,) + shape[2:]))
    for t in range(T):
        tree.add(xs[t])
        np.testing.assert_allclose(tree.prefix_sum(), xs[: t + 1].sum(axis=0), atol=1e-12)
    assert tree.n_clipped == 0


def test_clip_policy_rescales_and_counts(rng: np.random.Generator) -> None:
    tree = TreeAggregator(4, 2, sigma=0.0, leaf_bound=1.0, rng=rng, replications=2)
    x = np.array([[3.0, 4.0], [0.3, 0.4]])
    tree.add(x)
    np.testing.assert_allclose(
        tree.prefix_sum(), [[0.6, 0.8], [0.3, 0.4]]
    )  # rescaled, direction kept
    assert tree.n_clipped == 1


def test_reject_policy_raises(rng: np.random.Generator) -> None:
    tree = TreeAggregator(4, 2, sigma=1.0, leaf_bound=1.0, rng=rng, norm_policy="reject")
    with pytest.raises(DataBoundError, match="leaf_bound"):
        tree.add(np.array([[3.0, 4.0]]))


# --------------------------------------------------------------------------------------------
# noise: variance popcount(t) sigma^2, symmetric matrices, covariance structure (spec B-2)
# --------------------------------------------------------------------------------------------
def _var_se(sigma2: float, n: int) -> float:
    # sample variance of n i.i.d. normals: Var(s^2) = 2 sigma^4 / (n - 1)
    return sigma2 * math.sqrt(2.0 / (n - 1))


def test_vector_prefix_variance_and_node_sharing(rng: np.random.Generator) -> None:
    T, d, R, sigma = 13, 2, 40_000, 1.5
    tree = TreeAggregator(T, d, sigma=sigma, leaf_bound=1.0, rng=rng, replications=R)
    prefixes = []
    for _ in range(T):
        tree.add(np.zeros((R, d)))
        prefixes.append(tree.prefix_sum())
    P = np.stack(prefixes)  # (T, R, d), pure noise
    n = R * d
    for t in range(1, T + 1):
        var = tree.prefix_noise_variance(t)
        assert var == t.bit_count() * sigma**2
        s2 = float(P[t - 1].var(ddof=1))
        assert abs(s2 - var) < 5 * _var_se(var, n), (t, s2, var)
        assert abs(float(P[t - 1].mean())) < 5 * math.sqrt(var / n)
    # Cov(prefix(t), prefix(t')) = sigma^2 * (number of shared nodes); se of a sample covariance of two
    # jointly normal variables with variances a, b and covariance c is sqrt((a b + c^2) / n)
    for t1, t2 in [(4, 6), (3, 4), (8, 13), (12, 13), (5, 7)]:
        shared = len(set(node_decomposition(t1)) & set(node_decomposition(t2)))
        c = shared * sigma**2
        a, b = tree.prefix_noise_variance(t1), tree.prefix_noise_variance(t2)
        emp = float(np.mean(P[t1 - 1] * P[t2 - 1]))
        assert abs(emp - c) < 5 * math.sqrt((a * b + c * c) / n), (t1, t2, emp, c)


def test_matrix_prefix_noise_symmetric_with_half_offdiagonal_variance(
    rng: np.random.Generator,
) -> None:
    T, d, R, sigma = 7, 3, 30_000, 2.0
    tree = TreeAggregator(T, d, sigma=sigma, leaf_bound=1.0, rng=rng, replications=R, kind="matrix")
    for _ in range(T):
        tree.add(np.zeros((R, d, d)))
    P = tree.prefix_sum()  # t = 7: popcount 3
    assert np.array_equal(P, np.swapaxes(P, -1, -2))  # exactly symmetric
    var = tree.prefix_noise_variance()
    assert var == 3 * sigma**2
    diag = P[:, np.arange(d), np.arange(d)].ravel()
    iu = np.triu_indices(d, 1)
    off = P[:, iu[0], iu[1]]
    assert abs(diag.var(ddof=1) - var) < 5 * _var_se(var, diag.size)
    assert abs(off.ravel().var(ddof=1) - var / 2) < 5 * _var_se(var / 2, off.size)
    # upper-triangular entries independent: |corr| < 5 / sqrt(R)
    corr = np.corrcoef(off.T)
    assert np.max(np.abs(corr - np.eye(corr.shape[0]))) < 5 / math.sqrt(R)


def test_matrix_noise_normality(rng: np.random.Generator) -> None:
    W = sample_tree_noise(rng, (20_000,), (2, 2), 1.0)
    assert stats.kstest(W[:, 0, 0], "norm").pvalue > 1e-3
    assert stats.kstest(W[:, 0, 1] * math.sqrt(2.0), "norm").pvalue > 1e-3


def test_symmetrization_gives_frobenius_privacy_loss(rng: np.random.Generator) -> None:
    """(Z'+Z'^T)/2 = Gaussian mechanism on (X_ii, sqrt(2) X_ij): loss ||E||_F^2 / (2 sigma^2) (spec 4.2)."""
    d, sigma = 3, 1.3
    E = _sym(rng, (d, d))
    iu = np.triu_indices(d)
    scale = np.where(iu[0] == iu[1], 1.0, math.sqrt(2.0))
    std = np.where(iu[0] == iu[1], sigma, sigma / math.sqrt(2.0))
    # KL (= zCDP rho) of independent Gaussians with these stds, mean shift E_upper
    kl = float(np.sum(E[iu] ** 2 / (2 * std**2)))
    assert kl == pytest.approx(np.linalg.norm(E) ** 2 / (2 * sigma**2), rel=1e-12)
    assert np.linalg.norm(E[iu] * scale) == pytest.approx(np.linalg.norm(E), rel=1e-12)


# --------------------------------------------------------------------------------------------
# calibration and accounting (spec B-4, A-3), cross-checked against dp-accounting
# --------------------------------------------------------------------------------------------
def test_spec_b4_practical_sigmas(rng: np.random.Generator) -> None:
    w_max = math.exp(-0.5 * 0) / math.sqrt(2 * math.pi) / math.e  # probit phi(0)/e
    assert w_max == pytest.approx(0.146763, rel=1e-5)
    kw = {"rng": rng, "delta": 0.02 / 3, "epsilon": 4 / 3, "kind": "matrix", "psd_leaves": True}
    tv = TreeAggregator.calibrated(5000, 3, leaf_bound=1.0, **kw)
    th = TreeAggregator.calibrated(5000, 3, leaf_bound=w_max, **kw)
    assert tv.sigma == pytest.approx(13.3498, rel=1e-5)
    assert th.sigma == pytest.approx(1.95925, rel=1e-5)
    assert tv.sensitivity == pytest.approx(math.sqrt(2.0))
    assert zcdp_for_approx_dp(4 / 3, 0.02 / 3, method="bs").rho == pytest.approx(
        0.0785562, rel=1e-5
    )


@pytest.mark.parametrize("T", [4096, 5000])
def test_calibrated_guarantee_meets_target(T: int, rng: np.random.Generator) -> None:
    eps, delta = 1.0, 1e-5
    tree = TreeAggregator.calibrated(T, 4, leaf_bound=1.0, rng=rng, delta=delta, epsilon=eps)
    g = tree.guarantee(delta)
    rho_expected = max_nodes_per_leaf(T) * tree.sensitivity**2 / (2 * tree.sigma**2)
    assert g.rho == pytest.approx(rho_expected, rel=1e-12)
    assert g.epsilon <= eps * (1 + 1e-12)
    if T == 4096:  # power of two: bit_length(T) = ceil(log2 T) + 1, the calibration is tight
        assert g.epsilon == pytest.approx(eps, rel=1e-9)
    else:  # 13 of the 14 calibrated levels can hold a leaf
        assert g.epsilon < eps
    assert g.delta == delta and g.model == "central"


def test_guarantee_against_dp_accounting(rng: np.random.Generator) -> None:
    dp_accounting = pytest.importorskip("dp_accounting")
    tree = TreeAggregator(
        1000, 2, sigma=3.0, leaf_bound=0.5, rng=rng
    )  # sensitivity 1, noise multiplier 3
    ours = tree.guarantee(1e-6, method="cks").epsilon
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(3.0), max_nodes_per_leaf(1000))
    ref = acc.get_epsilon(1e-6)
    # same RDP curve and CKS conversion; dp-accounting optimizes over a finite order grid (>= ours)
    assert ours <= ref * (1 + 1e-9)
    assert ours == pytest.approx(ref, rel=0.02)


def test_half_noise_doubles_rho(rng: np.random.Generator) -> None:
    a = TreeAggregator(64, 2, sigma=2.0, leaf_bound=1.0, rng=rng)
    b = TreeAggregator(64, 2, sigma=1.0, leaf_bound=1.0, rng=rng)
    assert b.zcdp().rho == pytest.approx(4 * a.zcdp().rho)
    assert b.guarantee(1e-5).epsilon > a.guarantee(1e-5).epsilon


def test_no_noise_is_not_private(rng: np.random.Generator) -> None:
    tree = TreeAggregator(8, 2, sigma=0.0, leaf_bound=1.0, rng=rng)
    assert not tree.guarantee(1e-5).is_private
    with pytest.raises(PrivacyError):
        tree.zcdp()


def test_sensitivities() -> None:
    assert tree_sensitivity(0.5) == 1.0
    assert tree_sensitivity(1.0, kind="matrix") == 2.0
    assert tree_sensitivity(1.0, kind="matrix", psd_leaves=True) == pytest.approx(math.sqrt(2.0))
    # the PSD bound is attained: x x^T versus an orthogonal y y^T
    A, B = np.diag([1.0, 0.0]), np.diag([0.0, 1.0])
    assert np.linalg.norm(A - B) == pytest.approx(
        tree_sensitivity(1.0, kind="matrix", psd_leaves=True)
    )


# --------------------------------------------------------------------------------------------
# invalid inputs
# --------------------------------------------------------------------------------------------
def test_invalid_inputs(rng: np.random.Generator) -> None:
    with pytest.raises(ValidationError, match="T"):
        TreeAggregator(0, 2, sigma=1.0, leaf_bound=1.0, rng=rng)
    with pytest.raises(ValidationError, match="sigma"):
        TreeAggregator(4, 2, sigma=-1.0, leaf_bound=1.0, rng=rng)
    with pytest.raises(ValidationError, match="leaf_bound"):
        TreeAggregator(4, 2, sigma=1.0, leaf_bound=0.0, rng=rng)
    with pytest.raises(ValidationError, match="kind"):
        TreeAggregator(4, 2, sigma=1.0, leaf_bound=1.0, rng=rng, kind="tensor")
    with pytest.raises(ValidationError, match="psd_leaves"):
        TreeAggregator(4, 2, sigma=1.0, leaf_bound=1.0, rng=rng, psd_leaves=True)
    with pytest.raises(ValidationError, match="rng"):
        TreeAggregator(4, 2, sigma=1.0, leaf_bound=1.0, rng=np.random.RandomState(0))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="exactly one"):
        TreeAggregator.calibrated(4, 2, leaf_bound=1.0, rng=rng, delta=1e-5)
    with pytest.raises(ValidationError, match="delta"):
        TreeAggregator.calibrated(4, 2, leaf_bound=1.0, rng=rng, delta=1.5, epsilon=1.0)
    tree = TreeAggregator(
        2, 2, sigma=1.0, leaf_bound=1.0, rng=rng, replications=3, kind="matrix", psd_leaves=True
    )
    with pytest.raises(ValidationError, match="shape"):
        tree.add(np.zeros((3, 2)))
    with pytest.raises(ValidationError, match="NaN"):
        tree.add(np.full((3, 2, 2), np.nan))
    with pytest.raises(ValidationError, match="symmetric"):
        tree.add(np.array([[[0.0, 0.5], [0.0, 0.0]]] * 3))
    with pytest.raises(DataBoundError, match="semidefinite"):
        tree.add(np.array([[[0.5, 0.0], [0.0, -0.5]]] * 3))
    tree.add(np.zeros((3, 2, 2)))
    tree.add(np.zeros((3, 2, 2)))
    with pytest.raises(ValidationError, match="T=2"):
        tree.add(np.zeros((3, 2, 2)))
    with pytest.raises(ValidationError, match="delta"):
        tree.guarantee(0.0)
