"""The compiled round of LDP-OnePoint on arms (``privbandits.algorithms.kernel.ProposalKernel``):
the server proposes with the black box's compiled steps, the device clips and noises the reward,
the black box learns from the message only; the same trajectory as the roles on the reference
driver, fused runs included."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import privbandits as pb
from privbandits.algorithms.kernel import ProposalKernel
from privbandits.algorithms.ldp_onepoint.steps import onepoint_value
from privbandits.core.messages import PublicState
from privbandits.core.rng import make_streams
from privbandits.engine.compiled import compiled_kernel
from privbandits.engine.fused import simulate_fused


def _env() -> pb.FiniteActionEnv:
    return pb.FiniteActionEnv(d=2, K=5, actions="sphere", noise_scale=0.1)


def _run(params: dict[str, Any], engine: str, seed: int = 3, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg = pb.make("ldp-onepoint", **params)
        return pb.simulate(alg, _env(), 400, replications=3, seed=seed, engine=engine, **kw)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"base": "exp3", "mechanism": "laplace"},
        {"base": "tsallis-inf", "preset": "paper", "epsilon": 2.0},
        {"base": "successive-elimination", "base_params": {"alpha": 0.2}, "loss_bound": 2.0},
        {"base": "linucb", "range_inflation": "none"},
        {"base": "squarecb"},  # a compiled kernel kept beside numpy roles
    ],
)
def test_the_compiled_round_gives_the_reference_trajectory(params: dict[str, Any]) -> None:
    ref, com = _run(params, "reference"), _run(params, "auto")
    assert (ref.engine, com.engine) == ("reference", "compiled")
    np.testing.assert_array_equal(com.regret, ref.regret)
    np.testing.assert_array_equal(com.reward, ref.reward)
    assert not np.array_equal(_run(params, "auto", seed=4).regret, com.regret)


def test_the_compiled_round_needs_a_compiled_black_box_and_the_clip() -> None:
    env = _env()
    spec = env.reset(2, make_streams(0), 50)
    for params, compiled in [
        ({}, True),
        ({"clip": False}, False),  # the device refuses users out of range: reference only
        ({"base": "phased-elimination"}, False),  # no per-round kernel
    ]:
        alg = pb.make("ldp-onepoint", **params)
        alg.reset(spec, 2, make_streams(0))
        assert isinstance(compiled_kernel(alg), ProposalKernel) is compiled, params
        if params.get("clip", True):  # without the clip this environment's users are refused
            assert _run(params, "auto").engine == ("compiled" if compiled else "reference")


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_the_compiled_device_sends_the_clients_message(mechanism: str) -> None:
    env = _env()
    alg = pb.make("ldp-onepoint", mechanism=mechanism)
    spec = env.reset(4, make_streams(0), 50)
    alg.reset(spec, 4, make_streams(0))
    k = compiled_kernel(alg)
    assert isinstance(k, ProposalKernel)
    X = env.next_round()
    arms = np.array([0, 1, 2, 4])
    rewards = np.array([0.3, 5.0, -7.0, 1.0])  # two beyond the declared range: clipped
    public = PublicState({"action": arms})
    want = alg.client.randomize(0, public, X, arms, rewards, np.random.default_rng(5))
    rng, got = np.random.default_rng(5), []
    for y in rewards:
        msg = np.empty(1)
        onepoint_value(k.params, y, rng, msg)
        got.append(msg[0])
    np.testing.assert_array_equal(got, want.payload["value"])


def test_fused_runs_of_the_compiled_round_equal_separate_runs() -> None:
    algs = [("ldp-onepoint", {}), ("ldp-onepoint", {"base": "exp3", "epsilon": 2.0}), ("ucb1", {})]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fused = simulate_fused(
            [pb.make(n, **p) for n, p in algs], _env, 300, replications=2, seed=9
        )
        for (name, params), got in zip(algs, fused):
            alone = pb.simulate(pb.make(name, **params), _env(), 300, replications=2, seed=9)
            assert got.engine == alone.engine == "compiled"
            np.testing.assert_array_equal(got.regret, alone.regret)
            np.testing.assert_array_equal(got.reward, alone.reward)
