"""Non-private twins of LDP-OLS / LDP-SGD: greedy OLS and greedy online SGD."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.algorithms import get, make
from privbandits.algorithms.base import Curator
from privbandits.algorithms.kernel import CuratorKernel
from privbandits.algorithms.ldp_glb import estimators, kernels, policy
from privbandits.algorithms.linear import greedy
from privbandits.algorithms.linear.greedy import GreedyOLS, GreedySGD
from privbandits.core.errors import NotResetError, ValidationError
from privbandits.core.rng import make_streams
from privbandits.envs import SyntheticEnv
from privbandits.simulate import simulate

#: Per-round regret of the uniform policy on d = 2, K = 10, sphere contexts (spec 5.1: 0.929).
RANDOM_PER_ROUND = 0.929


def test_registered_and_non_private() -> None:
    for name in ("greedy-ols", "greedy-sgd"):
        cls = get(name)
        assert issubclass(cls, Curator) and set(cls.settings) == {"single", "multi"}
        with pytest.raises(NotResetError):
            _ = cls().guarantee
        alg = cls()
        env = SyntheticEnv(d=2, K=3)
        alg.reset(env.reset(2, make_streams(0), 10), 2, make_streams(0))
        assert not alg.guarantee.is_private and isinstance(alg.kernel, CuratorKernel)
    assert get("greedy-sgd").links == ("*",)


def test_twins_share_the_private_estimators_and_choice() -> None:
    """The non-private twins call the same compiled estimator steps and arm choice as the LDP
    servers and clients (fed raw statistics), not copies."""
    for fn in ("ols_accumulate", "ols_solve", "sgd_step", "step_size", "glm_gradient"):
        assert getattr(greedy, fn) is getattr(estimators, fn)
    for fn in ("choose_single", "choose_multi"):
        assert getattr(greedy, fn) is getattr(policy, fn) is getattr(kernels, fn)
    for fn in ("ols_accumulate", "ols_solve", "sgd_step", "step_size"):
        assert getattr(kernels, fn) is getattr(estimators, fn)


def test_greedy_ols_equals_ridge_regression() -> None:
    """After T rounds theta = (sum x x^T + lam I)^{-1} sum r x over the pulled features."""
    env = SyntheticEnv(d=3, K=4)
    alg = GreedyOLS(lam=0.5)
    R, T = 2, 40
    spec = env.reset(R, make_streams(2), T)
    alg.reset(spec, R, make_streams(2))
    V = np.broadcast_to(0.5 * np.eye(3), (R, 3, 3)).copy()
    b = np.zeros((R, 3))
    for t in range(T):
        X = env.next_round()
        a = alg.select(t, X)
        r = env.pull(a)
        alg.update(t, X, a, r)
        x = X[np.arange(R), a]
        V += np.einsum("rd,re->rde", x, x)
        b += r[:, None] * x
    assert np.allclose(alg.estimate(), np.linalg.solve(V, b[..., None])[..., 0])


@pytest.mark.parametrize("name", ["greedy-ols", "greedy-sgd"])
@pytest.mark.parametrize("setting", ["single", "multi"])
def test_reference_equals_compiled(name: str, setting: str) -> None:
    runs = [
        simulate(
            make(name, **({"s0": 5} if setting == "multi" else {})),
            SyntheticEnv(d=2, K=3, setting=setting),
            300,
            replications=2,
            seed=1,
            engine=e,
        )
        for e in ("reference", "compiled")
    ]
    for key in ("regret", "reward", "estimation_error"):
        np.testing.assert_allclose(getattr(runs[1], key), getattr(runs[0], key), rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["greedy-ols", "greedy-sgd"])
def test_tiny_regret_on_sphere_instance(name: str) -> None:
    """d = 2, K = 10, sphere contexts, noise 0.1: greedy learns in a few hundred rounds; its regret
    over
    1e4 rounds is below 0.5% of the uniform policy's (0.929 T = 9290)."""
    res = simulate(make(name), SyntheticEnv(d=2, K=10), 10_000, replications=4, seed=0)
    assert res.final_regret.max() < 0.005 * RANDOM_PER_ROUND * 10_000
    assert res.estimation_error[:, -1].max() < 0.05


def test_greedy_sgd_logistic_learns() -> None:
    """Any link: logistic rewards with Bernoulli noise; the estimate approaches theta* and regret is
    small.
    """
    env = SyntheticEnv(d=2, K=10, link="logistic", noise="bernoulli")
    res = simulate(
        make("greedy-sgd"), env, 10_000, replications=4, seed=1, checkpoints=[100, 10_000]
    )
    err = res.estimation_error
    assert np.all(err[:, -1] < err[:, 0])
    assert np.all(err[:, -1] < 0.5)
    # logistic regret on the probability scale; uniform is ~0.2 per round here
    assert res.final_regret.mean() < 0.05 * 10_000 * 0.2


@pytest.mark.parametrize("name", ["greedy-ols", "greedy-sgd"])
def test_multi_parameter_twin(name: str) -> None:
    """Multi: round-robin warm-up of s0 pulls per arm, then greedy; after warm-up regret grows
    slowly.
    """
    s0, K, T = 50, 3, 5000
    res = simulate(
        make(name, s0=s0),
        SyntheticEnv(d=2, K=K, setting="multi"),
        T,
        replications=4,
        seed=2,
        checkpoints=[K * s0, T],
    )
    warm, final = res.regret[:, 0], res.regret[:, 1]
    per_round_warm = warm.mean() / (K * s0)
    per_round_main = (final - warm).mean() / (T - K * s0)
    assert per_round_main < 0.05 * per_round_warm
    assert res.estimation_error[:, -1].max() < 0.3


def test_multi_warmup_schedule_and_frozen_estimates() -> None:
    env = SyntheticEnv(d=2, K=3, setting="multi")
    alg = GreedySGD(s0=4, h=0.5)
    R, T = 3, 20
    spec = env.reset(R, make_streams(0), T)
    alg.reset(spec, R, make_streams(0))
    for t in range(T):
        X = env.next_round()
        a = alg.select(t, X)
        if t < 12:
            assert np.all(a == t % 3)
        alg.update(t, X, a, env.pull(a))
        if t == 11:
            frozen = alg.theta_warm.copy()
            assert np.array_equal(frozen, alg.estimate())
        if t < 11:
            assert not alg.theta_warm.any()
    assert np.array_equal(alg.theta_warm, frozen)
    counts = alg.kernel.state[2]
    assert np.all(counts.sum(axis=1) == T) and np.all(counts[:, :].min(axis=1) >= 4)


@pytest.mark.parametrize(
    "kwargs, match", [({"lam": 0.0}, "lam"), ({"s0": 0}, "s0"), ({"h": -1.0}, "h")]
)
def test_greedy_ols_validation(kwargs: dict, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        GreedyOLS(**kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"eta0": 0.0}, "eta0"),
        ({"step_schedule": "x"}, "step_schedule"),
        ({"init": "x"}, "init"),
        ({"ridge": -0.1}, "ridge"),
    ],
)
def test_greedy_sgd_validation(kwargs: dict, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        GreedySGD(**kwargs)
