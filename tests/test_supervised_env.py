"""The supervised-to-bandit environment and its preprocessing (projection, norm policy)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privbandits.algorithms import make
from privbandits.core.errors import ValidationError
from privbandits.core.rng import make_streams
from privbandits.envs.datasets import SupervisedEnv, load_sklearn
from privbandits.envs.datasets.preprocess import bound_norms, project
from privbandits.experiments.units import ENV_KINDS, build_env
from privbandits.simulate import simulate

pytest.importorskip("sklearn")

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
matrices = st.tuples(st.integers(2, 30), st.integers(1, 8)).flatmap(
    lambda s: arrays(np.float64, s, elements=finite)
)


# -- preprocessing invariants --------------------------------------------------------------------


def _norms(Z: np.ndarray) -> np.ndarray:
    """Row norms by ``math.hypot`` (exact scaling: no underflow for tiny entries, unlike a sum of squares)."""
    return np.array([math.hypot(*row) for row in Z])


@settings(max_examples=60, deadline=None)
@given(Z=matrices, bound=st.floats(0.1, 10.0))
def test_max_policy_scales_uniformly_to_the_ball(Z: np.ndarray, bound: float) -> None:
    if not np.any(Z):
        with pytest.raises(ValidationError, match="every context is zero"):
            bound_norms(Z, "max", bound)
        return
    Zs = Z / np.abs(Z).max()  # exact arithmetic of the reference values, subnormal inputs included
    norms = _norms(Zs)
    out, rec = bound_norms(Z, "max", bound)
    got = _norms(out)
    assert got.max() == pytest.approx(bound, rel=1e-12)
    assert np.allclose(
        out, Zs / norms.max() * bound
    )  # one common factor: directions and ratios kept
    assert rec["n_clipped_rows"] == 0 and rec["norm"] == "max"


@settings(max_examples=60, deadline=None)
@given(Z=matrices, bound=st.floats(0.1, 10.0), q=st.floats(0.05, 1.0))
def test_clip_policy_bounds_every_row_and_counts_the_clipped_ones(
    Z: np.ndarray, bound: float, q: float
) -> None:
    Zs = Z / np.abs(Z).max() if np.any(Z) else Z  # exact arithmetic of the reference values
    norms = _norms(Zs)
    ref = np.quantile(norms, q)
    if ref == 0:
        with pytest.raises(ValidationError, match="every context is zero"):
            bound_norms(Z, "clip", bound, q)
        return
    out, rec = bound_norms(Z, "clip", bound, q)
    got = _norms(out)
    assert np.all(got <= bound * (1 + 1e-12))
    over = norms > ref
    assert rec["n_clipped_rows"] == int(over.sum())
    assert np.allclose(out[~over], Zs[~over] * bound / ref)  # rows inside the ball are only scaled
    assert np.allclose(got[over], bound)  # clipped rows land on the sphere, same direction
    assert np.allclose(out[over] * norms[over, None], Zs[over] * got[over, None])


@pytest.mark.parametrize("tiny", [5e-324, 2.2250738585e-311, 1e-300])
def test_subnormal_contexts_are_bounded_without_overflow(tiny: float) -> None:
    Z = np.array([[tiny, tiny], [tiny, 0.0], [0.0, 0.0]])
    for policy in ("max", "clip"):
        out, _ = bound_norms(Z, policy, 1.0, 1.0)
        assert np.all(np.isfinite(out))
        assert _norms(out).max() == pytest.approx(1.0, rel=1e-12)
        assert out[2].tolist() == [0.0, 0.0]


@settings(max_examples=40, deadline=None)
@given(Z=matrices, d=st.integers(1, 6), seed=st.integers(0, 2**31))
def test_random_projection_is_linear_and_fixed_by_its_seed(
    Z: np.ndarray, d: int, seed: int
) -> None:
    P1, rec = project(Z, d, "random", seed)
    P2, _ = project(Z, d, "random", seed)
    assert P1.shape == (Z.shape[0], d) and np.array_equal(P1, P2)
    assert rec == {"projection": "random", "d_projected": d, "projection_seed": seed}
    G = project(np.eye(Z.shape[1]), d, "random", seed)[0]  # the projection matrix itself
    assert np.allclose(P1, Z @ G, atol=1e-9 * max(1.0, float(np.abs(Z).max())) * Z.shape[1])


@settings(max_examples=40, deadline=None)
@given(Z=matrices)
def test_pca_scores_are_uncorrelated_with_decreasing_variance(Z: np.ndarray) -> None:
    Zc = Z - Z.mean(axis=0)
    d = min(Z.shape)
    P, rec = project(Zc, d, "pca")
    cov = P.T @ P
    scale = max(1.0, float(np.abs(cov).max()))
    assert np.allclose(cov - np.diag(np.diag(cov)), 0.0, atol=1e-8 * scale)
    assert np.all(np.diff(np.diag(cov)) <= 1e-8 * scale)
    assert 0.0 <= rec["explained_variance"] <= 1.0 + 1e-12
    # all components kept: the projection is a rotation (norms preserved when d = p <= n)
    if Z.shape[1] <= Z.shape[0]:
        assert np.allclose(np.linalg.norm(P, axis=1), np.linalg.norm(Zc, axis=1), atol=1e-8 * scale)
        assert rec["explained_variance"] == pytest.approx(1.0) or not np.any(Zc)


def test_projection_errors_name_the_parameter() -> None:
    Z = np.ones((5, 3))
    with pytest.raises(ValidationError, match="d is required with projection='pca'"):
        project(Z, None, "pca")
    with pytest.raises(ValidationError, match=r"d must be an integer in \[1, 3\]"):
        project(Z, 4, "pca")
    with pytest.raises(ValidationError, match="d 2 differs from the data's 3 features"):
        project(Z, 2, "none")
    with pytest.raises(ValidationError, match="projection must be one of"):
        project(Z, 2, "umap")
    with pytest.raises(ValidationError, match="norm must be one of"):
        bound_norms(Z, "tanh")
    with pytest.raises(ValidationError, match=r"clip_quantile must lie in \(0, 1\]"):
        bound_norms(Z, "clip", 1.0, 0.0)


# -- the environment -----------------------------------------------------------------------------


def test_disjoint_encoding_shapes_means_and_regret() -> None:
    env = SupervisedEnv("wine", d=5, projection="pca")
    spec = env.reset(3, make_streams(0), 500)
    assert (spec.d, spec.K, spec.setting) == (6, 3, "multi")  # 5 components + intercept
    assert spec.reward_range == (0.0, 1.0) and spec.noise_scale == 0.5 and not spec.fixed_actions
    ch = env.next_chunk()
    assert ch.X.shape == (500, 3, 6) and ch.means.shape == (500, 3, 3)
    assert np.all(np.linalg.norm(ch.X, axis=-1) <= 1.0 + 1e-12)
    assert np.all(ch.means.sum(axis=-1) == 1.0) and np.all(
        ch.best == 1.0
    )  # one-hot label, best mean 1
    assert np.array_equal(ch.rewards, ch.means)  # the reward is the label indicator, no noise
    # the contexts are rows of the processed data and the means their labels
    idx = [int(np.flatnonzero((env.contexts == x).all(axis=1))[0]) for x in ch.X[:20, 0]]
    assert np.array_equal(ch.means[:20, 0].argmax(axis=1), env.data.y[idx])
    env.reset(3, make_streams(0), 500)
    env.next_round()
    labels = env.means.argmax(axis=1)
    r, regret = env.step(labels)
    assert np.all(r == 1.0) and np.all(regret == 0.0)
    r, regret = env.step((labels + 1) % 3)
    assert np.all(r == 0.0) and np.all(regret == 1.0)
    assert env.theta_star.shape == (3, 3, 6)


def test_shared_encoding_is_the_block_one_hot_of_the_disjoint_contexts() -> None:
    a = SupervisedEnv("iris", encoding="disjoint")
    b = SupervisedEnv("iris", encoding="shared")
    a.reset(2, make_streams(7), 100)
    spec = b.reset(2, make_streams(7), 100)
    assert (spec.d, spec.setting) == (3 * 5, "single")
    ca, cb = a.next_chunk(), b.next_chunk()
    assert cb.X.shape == (100, 2, 3, 15)
    for k in range(3):
        assert np.array_equal(cb.X[:, :, k, 5 * k : 5 * k + 5], ca.X)
        assert not np.any(np.delete(cb.X[:, :, k], np.s_[5 * k : 5 * k + 5], axis=-1))
    assert np.array_equal(ca.means, cb.means)
    assert b.theta_star.shape == (2, 15) and np.array_equal(b.theta_star[0], a._fit.reshape(-1))


def test_iid_draws_follow_the_empirical_class_distribution() -> None:
    env = SupervisedEnv("wine")
    env.reset(8, make_streams(1), 4000)
    labels = env.next_chunk().means.argmax(axis=-1).ravel()
    n = labels.size
    freq = np.bincount(env.data.y, minlength=3) / env.data.n
    got = np.bincount(labels, minlength=3) / n
    assert np.all(np.abs(got - freq) <= 5 * np.sqrt(freq * (1 - freq) / n))  # 5 standard errors


def test_pass_orders_visit_every_row_once_per_pass() -> None:
    env = SupervisedEnv("iris", order="pass", intercept=False)
    env.reset(2, make_streams(0), 400)
    X = np.concatenate([env.next_chunk().X for _ in range(1)])
    n = env.data.n
    assert np.array_equal(X[:n, 0], env.contexts) and np.array_equal(X[:n, 1], env.contexts)
    assert np.array_equal(X[n : 2 * n, 0], env.contexts)  # T > n repeats the pass
    perm = SupervisedEnv("iris", order="permuted")
    perm.reset(3, make_streams(0), 150)
    Xp = perm.next_chunk().X

    def rowsort(A: np.ndarray) -> np.ndarray:
        return A[np.lexsort(A.T[::-1])]

    for r in range(3):  # every row once (iris has duplicate rows: compare the sorted multisets)
        assert np.array_equal(rowsort(Xp[:, r]), rowsort(perm.contexts))
    assert not np.array_equal(Xp[:, 0], Xp[:, 1])


def test_same_seed_same_stream_and_reward_matrix() -> None:
    rm = np.eye(3) + 0.5 * np.eye(3, k=1)  # the arm after the label pays half
    env = SupervisedEnv("wine", reward_matrix=rm.tolist())
    spec = env.reset(2, make_streams(3), 50)
    assert spec.reward_range == (0.0, 1.0)
    ch = env.next_chunk()
    rows = ch.means.reshape(-1, 3)
    labels = rows.argmax(axis=1)  # the label's arm pays 1, the most
    assert np.array_equal(rows, rm[labels]) and np.all(ch.best == 1.0)
    assert np.any(rows == 0.5)
    cost = rm
    env2 = SupervisedEnv("wine", reward_matrix=cost.tolist())
    env2.reset(2, make_streams(3), 50)
    assert np.array_equal(env2.next_chunk().X, ch.X)
    with pytest.raises(ValidationError, match=r"reward_matrix must have shape \(3, 3\)"):
        SupervisedEnv("wine", reward_matrix=np.eye(2))
    with pytest.raises(ValidationError, match="reward_matrix must not be constant"):
        SupervisedEnv("wine", reward_matrix=np.ones((3, 3)))


def test_describe_records_the_preprocessing_and_the_benchmarks() -> None:
    env = SupervisedEnv("digits", d=10, norm="clip", clip_quantile=0.9)
    desc = env.describe()
    assert desc["dataset"] == "digits" and desc["data"]["n"] == 1797 and desc["d"] == 11
    assert (
        desc["projection"] == "pca"
        and desc["d_projected"] == 10
        and 0.5 < desc["explained_variance"] < 1
    )
    assert desc["norm"] == "clip" and desc["clip_quantile"] == 0.9
    # about 10 % of the rows lie beyond the 0.9 quantile of the norms
    assert abs(desc["n_clipped_rows"] - 0.1 * 1797) <= 2
    assert desc["best_arm_reward"] == pytest.approx(desc["data"]["best_arm_reward"])
    assert (
        desc["best_arm_reward"] < desc["linear_policy_reward"] <= 1.0
        and desc["best_mean_reward"] == 1.0
    )
    assert desc["least_squares_theta_norm"] > 0


def test_environment_errors() -> None:
    with pytest.raises(ValidationError, match="dataset or path: give exactly one"):
        SupervisedEnv()
    with pytest.raises(ValidationError, match="dataset or path: give exactly one"):
        SupervisedEnv("wine", path="x.csv")
    with pytest.raises(ValidationError, match="label is required with path"):
        SupervisedEnv(path="x.csv")
    with pytest.raises(ValidationError, match="label applies to path"):
        SupervisedEnv("wine", label="y")
    with pytest.raises(ValidationError, match="encoding must be one of"):
        SupervisedEnv("wine", encoding="onehot")
    with pytest.raises(ValidationError, match="order must be one of"):
        SupervisedEnv("wine", order="sorted")
    with pytest.raises(ValidationError, match="intercept must be true or false"):
        SupervisedEnv("wine", intercept=1)  # type: ignore[arg-type]


def test_csv_file_environment_reports_dropped_rows(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    y = np.where(X[:, 0] > 0, "pos", "neg")
    lines = ["f1,f2,f3,cls"] + [f"{a:.6f},{b:.6f},{c:.6f},{lab}" for (a, b, c), lab in zip(X, y)]
    lines[5] = "1.0,,2.0,pos"
    p = tmp_path / "data.csv"
    p.write_text("\n".join(lines) + "\n")
    env = build_env(
        {"kind": "supervised", "path": str(p), "label": "cls", "na": "drop", "encoding": "shared"}
    )
    desc = env.describe()
    assert desc["data"]["n_dropped"] == 1 and desc["data"]["n"] == 59 and desc["path"] == str(p)
    assert desc["linear_policy_reward"] > 0.9  # the label is the sign of f1


def test_registered_as_an_env_kind() -> None:
    assert ENV_KINDS["supervised"] is SupervisedEnv


_slow = (
    pytest.mark.slow
)  # numba compilation of each kernel on a fresh cache, reference driver in Python


@pytest.mark.parametrize(
    ("name", "params", "encoding", "link"),
    [
        ("ldp-sgd", {"epsilon": 1.0}, "disjoint", "identity"),
        pytest.param("ldp-ols", {"epsilon": 1.0}, "shared", "identity", marks=_slow),
        pytest.param("ldp-ucb", {"epsilon": 1.0}, "disjoint", "identity", marks=_slow),
        pytest.param("greedy-ols", {}, "disjoint", "identity", marks=_slow),
        pytest.param("linucb", {}, "shared", "identity", marks=_slow),
        pytest.param("gloc", {}, "shared", "logistic", marks=_slow),
        pytest.param("jdp-glm", {"epsilon": 1.0}, "shared", "logistic", marks=_slow),
    ],
)
def test_reference_and_compiled_drivers_agree(
    name: str, params: dict, encoding: str, link: str
) -> None:
    runs = [
        simulate(
            make(name, **params),
            SupervisedEnv("iris", encoding=encoding, link=link),
            horizon=200,
            replications=2,
            seed=4,
            engine=engine,
        )
        for engine in ("reference", "compiled")
    ]
    assert np.array_equal(runs[0].regret, runs[1].regret)
    assert np.all(runs[0].final_regret <= 200)


@_slow
@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("shuffle-glm", {"epsilon": 1.0}),
        ("chen-jdp", {"epsilon": 1.0}),
        ("chen-ldp", {"epsilon": 1.0}),
    ],
)
def test_shuffle_and_joint_algorithms_run(name: str, params: dict) -> None:
    res = simulate(
        make(name, **params),
        SupervisedEnv("iris", encoding="shared", link="logistic"),
        horizon=200,
        replications=2,
        seed=0,
    )
    assert res.final_regret.shape == (2,) and np.all(
        (0 <= res.final_regret) & (res.final_regret <= 200)
    )


@_slow
def test_greedy_learns_the_labels_of_a_separable_data_set() -> None:
    """On wine (linearly separable) non-private greedy least squares ends far below uniform play."""
    res = simulate(make("greedy-ols"), SupervisedEnv("wine"), horizon=2000, replications=2, seed=0)
    uniform = simulate(make("uniform"), SupervisedEnv("wine"), horizon=2000, replications=2, seed=0)
    assert float(np.mean(res.final_regret)) < 0.25 * float(np.mean(uniform.final_regret))


def test_load_sklearn_matches_the_environment_data() -> None:
    assert np.array_equal(SupervisedEnv("iris").data.X, load_sklearn("iris").X)
