"""Shuffle LinUCB with the vector summation (Chowdhury & Zhou 2022, second instantiation):
calibration, sensitivity, the roles' trust boundary and the analyzer's release."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

import privbandits as pb
from privbandits.algorithms.chowdhury.constants import (
    VecConstants,
    joint_labels,
    joint_norm_bound,
    joint_sensitivity,
)
from privbandits.algorithms.chowdhury.shuffle_vec import MECHANISM, _encode
from privbandits.core.errors import TrustBoundaryError
from privbandits.core.messages import PrivatizedMessage, ShuffledBatch
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy import cheu

SPEC = EnvSpec(d=3, K=4, horizon=40, context_bound=1.0, reward_range=(-1.0, 1.0))


def _joint(x: np.ndarray, y: float) -> np.ndarray:
    iu = np.triu_indices(x.shape[0])
    return np.concatenate([np.outer(x, x)[iu], x * y])


def test_sensitivity_bounds_every_pair_and_is_nearly_reached() -> None:
    rng = np.random.default_rng(0)
    C, Y = 1.3, 0.7
    bound = joint_sensitivity(C, -Y, Y)
    assert bound == pytest.approx(math.sqrt(2 * C**4 + 4 * C**2 * Y**2))
    assert bound < 2 * joint_norm_bound(C, -Y, Y)
    worst = 0.0
    for _ in range(20_000):
        x, z = rng.normal(size=(2, 3))
        x *= C * rng.uniform() ** 0.3 / np.linalg.norm(x)
        z *= C * rng.uniform() ** 0.3 / np.linalg.norm(z)
        y, yp = rng.uniform(-Y, Y, 2)
        w, wp = _joint(x, y), _joint(z, yp)
        assert np.linalg.norm(w) <= joint_norm_bound(C, -Y, Y) * (1 + 1e-12)
        worst = max(worst, float(np.linalg.norm(w - wp)))
    assert worst <= bound
    # two unit contexts at 120 degrees with y = y' = 1 reach 3 / sqrt(2) (C = Y = 1)
    a, b = math.radians(105), math.radians(345)
    far = _joint(np.array([math.cos(a), math.sin(a)]), 1.0) - _joint(
        np.array([math.cos(b), math.sin(b)]), 1.0
    )
    assert np.linalg.norm(far) == pytest.approx(3 / math.sqrt(2))
    assert 3 / math.sqrt(2) <= joint_sensitivity(1.0, -1.0, 1.0)


def test_strict_calibration_is_tight_and_paper_is_eq_122() -> None:
    c = pb.algorithms.make("shuffle-linucb-vec", epsilon=1.0, delta=0.01, batch_size=10)
    cal = c.calibrate(SPEC)
    k = cal.typed(VecConstants)
    g = cal.guarantee
    assert g.model == "shuffle" and g.epsilon <= 1.0 and g.delta <= 0.01
    assert g.epsilon >= 0.98  # tight
    s = k.sums[0]
    assert s.n == 10 and s.n_labels == joint_labels(3) == 9
    assert s.sensitivity == pytest.approx(joint_sensitivity(1.0, -1.0, 1.0))
    # 2 % fewer noise bits break the request: b is the smallest the accountant certifies
    assert dataclasses.replace(s, b=int(s.b * 0.98)).binomial_epsilon() > 1.0
    assert g.ledger is not None and g.ledger.rule == "disjoint"  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paper = pb.algorithms.make(
            "shuffle-linucb-vec", epsilon=1.0, delta=0.01, batch_size=10, preset="paper"
        ).calibrate(SPEC)
    p = paper.typed(VecConstants).sums[0]
    ref = cheu.theory_params(10, 9, 1.0, 0.01, joint_norm_bound(1.0, -1.0, 1.0))
    assert (p.b, p.g) == (ref.b, ref.g) and paper.guarantee.epsilon <= 1.0
    assert p.b > 100 * s.b  # eq. (122) adds far more noise than the accountant needs


def _reset(R: int = 2, B: int = 10, T: int = 40) -> pb.algorithms.Algorithm:
    alg = pb.algorithms.make("shuffle-linucb-vec", epsilon=1.0, delta=0.01, batch_size=B)
    spec = dataclasses.replace(SPEC, horizon=T)
    alg.reset(spec, R, make_streams(3))
    return alg


def test_shuffler_releases_the_histogram_and_the_server_refuses_anything_else() -> None:
    alg = _reset()
    rng = np.random.default_rng(1)
    public = alg.server.public_state()
    X = np.tile(np.eye(3)[None, :1], (2, 4, 1))
    msgs = []
    for t in range(10):
        a = alg.client.choose(t, public, X, rng)
        m = alg.client.randomize(t, public, X, a, np.ones(2), rng)
        assert set(m.payload) == {"count"} and m["count"].dtype.kind == "i"
        msgs.append(m)
        alg.shuffler.collect(t, m)
    batch = alg.shuffler.release(9)
    assert set(batch.payload) == {"ones"} and batch.n_users == 10
    np.testing.assert_array_equal(batch["ones"], np.sum([m["count"] for m in msgs], axis=0))
    with pytest.raises(TrustBoundaryError):
        alg.server.receive(9, msgs[0])
    per_user = ShuffledBatch({"count": np.stack([m["count"] for m in msgs], 1)}, MECHANISM)
    with pytest.raises(TrustBoundaryError):
        alg.server.receive_batch(9, per_user)  # a user's own counts never reach the analyzer
    wrong_size = dataclasses.replace(batch, n_users=7)
    with pytest.raises(TrustBoundaryError):
        alg.server.receive_batch(9, wrong_size)
    with pytest.raises(TrustBoundaryError):
        alg.shuffler.collect(0, PrivatizedMessage({"count": msgs[0]["count"]}, "other"))
    before = alg.server.public_state()["theta"].copy()
    alg.server.receive_batch(9, batch)
    assert not np.array_equal(before, alg.server.public_state()["theta"])


def test_released_statistics_are_unbiased_with_the_accounted_variance() -> None:
    """One batch of 10 users holding x = e_1 / sqrt(2) + e_2 / sqrt(2), y = 0.5: the analyzed
    ``G`` and ``u`` have mean ``10 (x x^T, y x)`` and the std of :meth:`SumParams.noise_std_bound`
    at most; the mean is checked within 5 standard errors over R = 4000 replications."""
    R = 4000
    alg = _reset(R=R)
    c = alg.calibration.typed(VecConstants)
    rng = np.random.default_rng(2)
    public = alg.server.public_state()
    x = np.array([1.0, 1.0, 0.0]) / math.sqrt(2)
    X = np.ascontiguousarray(np.broadcast_to(x, (R, 4, 3)))
    for t in range(10):
        a = alg.client.choose(t, public, X, rng)
        alg.shuffler.collect(t, alg.client.randomize(t, public, X, a, np.full(R, 0.5), rng))
    alg.server.receive_batch(9, alg.shuffler.release(9))
    G, u = alg.kernel.server[0], alg.kernel.server[1]
    est = np.concatenate([G[:, 0, :], G[:, 1, 1:2], u], axis=1)  # G_11 G_12 G_13 G_22 u
    want = 10 * np.concatenate([np.outer(x, x)[0], [x[1] ** 2], 0.5 * x])
    std = c.sums[0].noise_std_bound
    assert np.all(np.abs(est.mean(0) - want) <= 5 * std / math.sqrt(R))
    assert np.all(est.std(0) <= std * 1.05)


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0])
def test_device_encoding_clips_inside_at_and_beyond_the_bounds(scale: float) -> None:
    """The device's expected counts are those of its clipped ``(x, y)``: ``x`` onto ``||x|| <= C``,
    ``y`` into the reward range, ``w + Delta`` scaled by ``g / Delta`` (within ``[0, 2 g]``) plus
    ``b p``; beyond the bounds the message equals the one at the bound."""
    alg = _reset(R=2)
    c = alg.calibration.typed(VecConstants)
    x = np.array([0.6, -0.8, 0.0]) * scale  # norm = scale, C = 1
    y = np.array([2.0 * scale, -2.0 * scale])  # range [-1, 1]
    X = np.ascontiguousarray(np.broadcast_to(x, (2, 4, 3)))
    a = np.zeros(2, dtype=np.int64)
    kern = alg.kernel
    got = np.empty((2, c.n_labels))
    for r in range(2):  # the compiled step (the device refuses contexts beyond C before it)
        _encode(kern.params, kern.public, r, 0, X[r], 0, float(y[r]), got[r])
    if scale <= 1.0:  # the device path gives the same message
        dev = alg.client.encode(0, alg.server.public_state(), X, a, y)
        np.testing.assert_allclose(dev, got, rtol=1e-12, atol=1e-12)
    xc = x / max(1.0, np.linalg.norm(x))
    g, b, D = c.g[0], c.b[0], c.Delta
    for r in range(2):
        w = _joint(xc, float(np.clip(y[r], -1.0, 1.0))) + D
        assert np.all((w >= 0) & (w <= 2 * D))
        want = np.clip(w * g / D, 0.0, 2 * g) + b * c.p
        np.testing.assert_allclose(got[r], want, rtol=1e-12, atol=1e-9)
