"""ShuffleGLM's batch path: compiled design draws, batch client methods, the batch driver."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privbandits as pb
from privbandits.algorithms._shared.design import g_optimal_design
from privbandits.algorithms._shared.design_draws import design_draws, uniform_start_design
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.algorithms.sarmasarkar.shuffle_glm import ShuffleGLM, ShuffleGLMClient
from privbandits.algorithms.sarmasarkar.shuffle_plan import shuffle_plan
from privbandits.core.links import get_link
from privbandits.core.messages import PublicState
from privbandits.core.spec import EnvSpec
from privbandits.engine.batches import supports_batches
from privbandits.envs.contexts import sample_contexts


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 12),
    d=st.integers(1, 5),
    rank=st.integers(0, 5),
    factor=st.sampled_from([1.05, 1.5, 2.0]),
)
def test_uniform_start_design_matches_the_numpy_design(
    seed: int, n: int, d: int, rank: int, factor: float
) -> None:
    # rank-deficient sets included (rows in a random subspace of dimension <= rank; rank 0: zero rows)
    rng = np.random.default_rng(seed)
    X = (
        rng.normal(size=(n, min(rank, d))) @ rng.normal(size=(min(rank, d), d))
        if rank
        else np.zeros((n, d))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = g_optimal_design(X, factor=factor, init="uniform", prune=False)
    pi, ok = uniform_start_design(np.ascontiguousarray(X), factor, 10_000)
    np.testing.assert_allclose(pi, ref.pi, rtol=0, atol=1e-9)
    assert ok == ref.converged


def test_design_draws_follow_the_design_weights() -> None:
    # the draw is the inverse CDF of the design at the given uniform: frequencies match pi
    rng = np.random.default_rng(4)
    X = rng.normal(size=(6, 3))
    alive = np.array([True, False, True, True, False, True])
    pi = g_optimal_design(X[alive], init="uniform", prune=False).pi
    N = 40_000
    out = np.empty(N, dtype=np.int64)
    missed = design_draws(
        np.broadcast_to(X, (N, 6, 3)).copy(),
        np.broadcast_to(alive, (N, 6)).copy(),
        rng.random(N),
        2.0,
        10_000,
        out,
    )
    assert missed == 0 and set(np.unique(out)) <= set(np.flatnonzero(alive))
    freq = np.bincount(out, minlength=6)[alive] / N
    # binomial standard errors: 5 sigma
    assert np.all(np.abs(freq - pi) <= 5 * np.sqrt(pi * (1 - pi) / N) + 1e-12), (freq, pi)


def _client_and_public(batch: int, R: int, seed: int) -> tuple[ShuffleGLMClient, PublicState]:
    d, M = 3, 3
    spec = EnvSpec(
        d=d,
        K=7,
        horizon=2000,
        link=get_link("logistic"),
        context_bound=1.0,
        reward_range=(0.0, 1.0),
        theta_bound=2.0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        plan = shuffle_plan(
            T=2000,
            d=d,
            epsilon=2.0,
            delta=1e-3,
            link=spec.link,
            S=2.0,
            C_B=1.0,
            reward_range=(0.0, 1.0),
            M=M,
            gamma=0.3,
        )
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(R, M, d, d))
    Minv = np.einsum("rmij,rmkj->rmik", A, A) / d + 0.05 * np.eye(d)
    theta = rng.normal(size=(R, M, d))
    theta *= np.minimum(
        1.0, 1.9 / np.linalg.norm(theta, axis=-1, keepdims=True)
    )  # published estimates: ||.|| <= S
    public = PublicState(
        {
            "batch": np.full(R, batch, dtype=np.int64),
            "theta": theta,
            "Minv": Minv,
            "gd_batch": np.full(R, batch, dtype=np.int64),
            "theta_gd": np.zeros((R, d)),
        }
    )
    return ShuffleGLMClient(plan, spec), public


@pytest.mark.parametrize("batch", [0, 1, 2])
def test_batch_methods_equal_round_by_round_calls(batch: int) -> None:
    n, R, K, d = 30, 3, 7, 3
    rng = np.random.default_rng(batch)
    X, _ = sample_contexts(rng, (n, R, K), d, "ball")
    y = rng.random((n, R))
    one, public = _client_and_public(batch, R, seed=9)
    many, _ = _client_and_public(batch, R, seed=9)
    pol1, pol2 = np.random.default_rng(5), np.random.default_rng(5)
    cl1, cl2 = np.random.default_rng(6), np.random.default_rng(6)
    a_seq, msgs_seq = [], []
    for t in range(n):
        a = one.choose(t, public, X[t], pol1)
        a_seq.append(a)
        msgs_seq.append(one.randomize(t, public, X[t], a, y[t], cl1))
    a_bat = many.choose_batch(0, public, X, pol2)
    np.testing.assert_array_equal(a_bat, np.array(a_seq))
    msgs_bat = many.randomize_batch(0, public, X, a_bat, y, cl2)
    assert len(msgs_bat) == n
    for m1, m2 in zip(msgs_seq, msgs_bat, strict=True):
        assert m1.mechanism == m2.mechanism
        np.testing.assert_array_equal(m1["count"], m2["count"])
    if batch > 0:  # elimination is active: some arms are dropped for some users
        assert len(np.unique(a_bat)) >= 2


def test_auto_engine_runs_the_batch_path_with_the_reference_trajectory() -> None:
    env = pb.SyntheticEnv(d=3, K=8, link="logistic", theta_norm=2.0, contexts="ball")
    runs = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        for engine in ("reference", "auto"):
            alg = ShuffleGLM(epsilon=8.0, delta=1e-3, gamma=0.3, path="aggregate")
            runs[engine] = pb.simulate(
                alg, env, horizon=1500, replications=2, seed=7, checkpoints=12, engine=engine
            )
            if engine == "auto":
                assert supports_batches(alg)
    assert runs["reference"].engine == "reference" and runs["auto"].engine == "compiled"
    np.testing.assert_allclose(runs["auto"].regret, runs["reference"].regret, rtol=0, atol=1e-9)
    np.testing.assert_allclose(runs["auto"].reward, runs["reference"].reward, rtol=0, atol=1e-9)
    assert (runs["auto"].estimation_error is None) == (runs["reference"].estimation_error is None)


@pytest.mark.parametrize("link", ["logistic", "probit"])
def test_compiled_pgd_round_equals_the_numpy_encoding_and_rounding(link: str) -> None:
    # the fused aggregate P_GD round against the message path's steps (gradient, encode_vectors,
    # aggregate_release) on the same stream: the same release
    from privbandits.algorithms.sarmasarkar.pgd_round import pgd_rounded_sums
    from privbandits.privacy import cheu

    R, n, d = 3, 400, 4
    rng = np.random.default_rng(1)
    X, _ = sample_contexts(rng, (R, n), d, "ball")
    y = rng.random((R, n))
    theta = rng.normal(size=(R, d)) * 3.0  # large enough that some gradients are clipped
    lk = get_link(link)
    lam_n, L = 0.7, 0.9
    params = cheu.calibrated_params(n, d, L, delta=1e-3, rho=0.5, kind="vector", conversion="bs")
    mu = lk.mu(np.einsum("rnd,rd->rn", X, theta))
    u = (mu - y)[..., None] * X + lam_n * theta[:, None, :]
    w, n_clipped = cheu.encode_vectors(u, params.Delta)
    assert n_clipped > 0
    ref = cheu.aggregate_release(w, params, np.random.default_rng(3))
    x_hat = np.empty((R, d), dtype=np.int64)
    rng2 = np.random.default_rng(3)
    pgd_rounded_sums(
        np.ascontiguousarray(X), y, theta, lk.code, lam_n, params.Delta, params.g, rng2, x_hat
    )
    got = cheu.release_from_rounded(x_hat, params, rng2)
    np.testing.assert_array_equal(got["ones"], ref["ones"])
    assert got.n_users == ref.n_users == n and got.mechanism == ref.mechanism
