"""The compiled rounds of the bandit-convex-optimization algorithms (``privbandits.engine.convex``,
``privbandits.algorithms.bco.steps``): the same trajectory as the message-level driver, the same
device message for any public state, the environment's losses as defined."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privbandits as pb
from privbandits.algorithms.bco.steps import ldp_two_point_randomize, project_row
from privbandits.algorithms.ldp_onepoint.steps import onepoint_fkm_randomize
from privbandits.core.convex import Domain
from privbandits.core.messages import PublicState
from privbandits.core.rng import make_streams
from privbandits.engine.convex import convex_kernel
from privbandits.envs.convex_losses import FAMILY_CODES, expected_at, loss_at

CASES: list[tuple[str, dict[str, Any]]] = [
    ("fkm", {}),
    ("fkm", {"rho": 0.3, "eta": 0.01}),
    ("two-point-bco", {}),
    ("two-point-bco", {"schedule": "strongly_convex"}),
    ("ldp-twopoint", {}),
    ("ldp-twopoint", {"mechanism": "laplace"}),
    ("ldp-twopoint", {"preset": "paper", "step": "paper", "schedule": "strongly_convex"}),
    ("ldp-onepoint", {"base": "fkm"}),
    ("ldp-onepoint", {"base": "fkm", "mechanism": "laplace", "epsilon": 2.0}),
]


def _run(name: str, params: dict[str, Any], env: pb.ConvexLossEnv, engine: str, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pb.simulate(pb.make(name, **params), env, engine=engine, **kw)


@pytest.mark.parametrize(("name", "params"), CASES)
@pytest.mark.parametrize("loss", ["quadratic", "logistic", "linear"])
@pytest.mark.parametrize("domain", ["ball", "box"])
def test_the_compiled_round_gives_the_reference_trajectory(
    name: str, params: dict[str, Any], loss: str, domain: str
) -> None:
    if params.get("schedule") == "strongly_convex" and loss != "quadratic":
        pytest.skip("the strongly convex schedule needs a strongly convex loss")
    kw = {"horizon": 300, "replications": 3, "seed": 4}
    ref = _run(name, params, pb.ConvexLossEnv(d=3, loss=loss, domain=domain), "reference", **kw)
    com = _run(name, params, pb.ConvexLossEnv(d=3, loss=loss, domain=domain), "auto", **kw)
    assert (ref.engine, com.engine) == ("reference", "compiled")
    np.testing.assert_allclose(com.regret, ref.regret, rtol=0, atol=1e-9)
    np.testing.assert_allclose(com.reward, ref.reward, rtol=0, atol=1e-9)
    if ref.estimation_error is not None:
        np.testing.assert_allclose(com.estimation_error, ref.estimation_error, rtol=0, atol=1e-9)
    other = _run(
        name, params, pb.ConvexLossEnv(d=3, loss=loss, domain=domain), "auto", **{**kw, "seed": 5}
    )
    assert not np.array_equal(other.regret, com.regret)


def test_the_compiled_round_crosses_chunks_and_checkpoints() -> None:
    # R (d + 1) = 1024 floats per round: chunks of 1024 rounds, so 2500 rounds take three
    env = pb.ConvexLossEnv(d=3)
    env.reset(256, make_streams(0), 2500)
    assert env.chunk_rounds() == 1024
    kw = {
        "horizon": 2500,
        "replications": 256,
        "seed": 1,
        "checkpoints": [1, 1023, 1024, 1025, 2500],
    }
    ref = _run("ldp-twopoint", {}, pb.ConvexLossEnv(d=3), "reference", **kw)
    com = _run("ldp-twopoint", {}, pb.ConvexLossEnv(d=3), "compiled", **kw)
    np.testing.assert_array_equal(com.checkpoints, [1, 1023, 1024, 1025, 2500])
    np.testing.assert_allclose(com.regret, ref.regret, rtol=0, atol=1e-9)


def test_the_driver_is_picked_by_what_the_algorithm_has() -> None:
    env = pb.ConvexLossEnv(d=2)
    assert _run("fkm", {}, env, "auto", horizon=5).engine == "compiled"
    assert _run("fkm", {}, env, "reference", horizon=5).engine == "reference"
    # without the clip the device refuses users: only the message-level driver reports it
    assert _run("ldp-twopoint", {"clip": False}, env, "auto", horizon=5).engine == "reference"
    assert _run("ldp-onepoint", {"base": "fkm", "clip": False}, env, "auto", horizon=5).engine == (
        "reference"
    )

    class MyFKM(pb.algorithms.bco.fkm.FKM):
        name = ""

    # a user's subclass of the black box may change the round: it is not replaced by FKM's steps
    alg = pb.make("ldp-onepoint", base=MyFKM())
    assert _run("ldp-onepoint", {"base": MyFKM()}, env, "auto", horizon=5).engine == "reference"
    alg.reset(env.reset(2, make_streams(0), 5), 2, make_streams(0))
    assert convex_kernel(alg) is None


def _adversarial_points(d: int) -> list[np.ndarray]:
    """Query-point pairs a dishonest server may send (R = 4): honest, close, equal, far apart."""
    rng = np.random.default_rng(3)
    mid = rng.uniform(-0.3, 0.3, (4, 1, d))
    u = rng.standard_normal((4, 1, d))
    u /= np.linalg.norm(u, axis=2, keepdims=True)
    return [mid + s * np.concatenate([u, -u], axis=1) for s in (0.05, 1e-3, 0.0, 0.6)]


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_the_compiled_device_sends_the_clients_message_for_any_points(mechanism: str) -> None:
    env = pb.ConvexLossEnv(d=3)
    alg = pb.make("ldp-twopoint", mechanism=mechanism)
    spec = env.reset(4, make_streams(0), 100)
    alg.reset(spec, 4, make_streams(0))
    k = convex_kernel(alg)
    assert k is not None
    X = env.next_round()
    losses = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5], [1.0, 0.0]])
    for pts in _adversarial_points(3):
        public = PublicState({"points": pts})
        want = alg.client.randomize(0, public, X, pts, losses, np.random.default_rng(11))
        got = np.empty(4)
        rng = np.random.default_rng(11)
        k.public[0][...] = pts
        for r in range(4):
            out = np.empty(1)
            ldp_two_point_randomize(k.params, k.public, r, 0, losses[r], rng, out)
            got[r] = out[0]
        np.testing.assert_array_equal(got, want.payload["difference"])
        encoded = alg.client.encode(0, public, X, pts, losses)[:, 0]
        gaps = np.linalg.norm(pts[:, 0] - pts[:, 1], axis=1)
        assert np.all(np.abs(encoded) <= spec.lipschitz * gaps * (1 + 1e-12))


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_the_compiled_onepoint_device_sends_the_clients_message(mechanism: str) -> None:
    env = pb.ConvexLossEnv(d=2)
    alg = pb.make("ldp-onepoint", base="fkm", mechanism=mechanism)
    spec = env.reset(3, make_streams(0), 100)
    alg.reset(spec, 3, make_streams(0))
    k = convex_kernel(alg)
    assert k is not None
    X = env.next_round()
    pts = np.array([[[0.1, 0.2]], [[-0.9, 0.0]], [[0.0, 0.0]]])
    losses = np.array([[0.3], [7.0], [-4.0]])  # beyond the declared range: clipped
    want = alg.client.randomize(
        0, PublicState({"points": pts}), X, pts, losses, np.random.default_rng(2)
    )
    rng = np.random.default_rng(2)
    got = []
    for r in range(3):
        out = np.empty(1)
        onepoint_fkm_randomize(k.params, k.public, r, 0, losses[r], rng, out)
        got.append(out[0])
    np.testing.assert_array_equal(got, want.payload["value"])


def _numpy_loss(kind: str, Rx: float, param: np.ndarray, x: np.ndarray) -> float:
    """The families of ``privbandits.envs.convex``'s docstring, written independently."""
    d = x.shape[0]
    if kind == "quadratic":
        return float(np.sum((x - param[:d]) ** 2) / (4 * Rx * Rx))
    if kind == "linear":
        return float(0.5 * (1 + param[:d] @ x / Rx))
    return float(np.logaddexp(0.0, -param[d] * (param[:d] @ x) / Rx))


finite = st.floats(-3, 3, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(sorted(FAMILY_CODES)),
    Rx=st.floats(0.1, 5.0),
    x=st.lists(finite, min_size=3, max_size=3),
    p=st.lists(finite, min_size=4, max_size=4),
    y=st.sampled_from([-1.0, 1.0]),
)
def test_the_compiled_losses_are_the_documented_families(
    kind: str, Rx: float, x: list[float], p: list[float], y: float
) -> None:
    xa, pa = np.array(x), np.array(p)
    pa[3] = y
    want = _numpy_loss(kind, Rx, pa, xa)
    assert loss_at(FAMILY_CODES[kind], Rx, pa, xa) == pytest.approx(want, rel=1e-12, abs=1e-15)
    pool = np.stack([pa, -pa])
    pool[:, 3] = [y, -y]
    mean = (_numpy_loss(kind, Rx, pool[0], xa) + _numpy_loss(kind, Rx, pool[1], xa)) / 2
    got = expected_at(FAMILY_CODES[kind], Rx, pa[:3], pool, xa)
    assert got == pytest.approx(mean if kind == "logistic" else want, rel=1e-12, abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(["ball", "box"]),
    size=st.floats(0.1, 3.0),
    shrink=st.floats(0.0, 0.9),
    x=st.lists(st.floats(-10, 10), min_size=3, max_size=3),
)
def test_the_compiled_projection_is_the_domains(
    kind: str, size: float, shrink: float, x: list[float]
) -> None:
    dom = Domain(kind, size, 3)
    want = dom.project(np.array(x), shrink)
    got = np.array(x)
    project_row(got, kind == "box", (1.0 - shrink) * size)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    assert dom.contains(got, shrink)


@pytest.mark.parametrize("box", [False, True])
def test_the_compiled_projection_at_inside_and_beyond_the_boundary(box: bool) -> None:
    s = 0.7
    v = np.array([0.6, -0.8, 0.0])  # unit norm, largest entry 0.8
    unit = 0.8 if box else 1.0  # the size at which v lies on the boundary
    for f, want in ((1.0, 1.0), (1 - 1e-9, 1 - 1e-9), (3.0, 1.0)):
        x = v * (s / unit) * f
        project_row(x, box, s)
        expected = v * (s / unit) * want
        if box and f > 1:  # each entry clamped to [-s, s]
            expected = np.clip(v * (s / unit) * f, -s, s)
        np.testing.assert_allclose(x, expected, rtol=1e-15, atol=0)
