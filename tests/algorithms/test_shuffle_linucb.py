"""Shuffle LinUCB (Chowdhury & Zhou 2022, amplification instantiation): constants, accounting,
batch structure and the analyzer's trust boundary."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import privbandits as pb
from privbandits.algorithms.chowdhury.constants import (
    amplified_guarantee,
    authors_sigma,
    batch_sizes,
    calibrate_amplified,
    radius,
    theory_batch_size,
)
from privbandits.algorithms.chowdhury.shuffle_linucb import batch_end
from privbandits.core.errors import TrustBoundaryError
from privbandits.core.messages import PrivatizedMessage, ShuffledBatch
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.amplification import closed_form_epsilon


def test_authors_code_constants() -> None:
    # d = 5, eps = 0.2, delta = 0.1, B = 20, T = 20000, L = sqrt(2): sigma_A, Gamma, beta (Amp)
    sig = authors_sigma(0.2, 0.1, 20)
    assert sig == pytest.approx(2.78716, rel=1e-5)
    Gamma = sig * math.sqrt(20000 * 5)
    assert Gamma == pytest.approx(881.377, rel=1e-5)
    assert radius(Gamma, math.sqrt(5), 0.5, 5, 20000, math.sqrt(2)) == pytest.approx(
        70.529, rel=1e-4
    )
    assert theory_batch_size(20000) == 381


@pytest.mark.parametrize("T,B", [(100, 7), (100, 10), (5, 20), (1000, 381), (3, 1)])
def test_batches_cover_the_horizon_and_are_never_smaller_than_B(T: int, B: int) -> None:
    ends = [t for t in range(T) if batch_end(t, B, T)]
    sizes = np.diff([-1, *ends])
    assert ends[-1] == T - 1 and sizes.sum() == T
    lo, hi = batch_sizes(T, B)
    assert sizes.min() == lo and sizes.max() == hi and lo >= min(B, T)


def test_amplified_calibration_meets_the_request_and_beats_local_when_it_applies() -> None:
    sens = 2.0
    for eps, n in ((0.5, 1000), (1.0, 3982), (1.0, 20000)):
        cal = calibrate_amplified(eps, 1e-6, sens, n, 2 * n - 1)
        assert cal.amplified and cal.epsilon <= eps and cal.delta <= 1e-6
        assert cal.epsilon >= 0.999 * eps  # tight
        local = calibrate_amplified(eps, 1e-6, sens, 10, 19)  # too few users: no amplification
        assert not local.amplified and cal.sigma < local.sigma
        # half the noise breaks the claim
        acc = amplified_guarantee(cal.sigma / 2, sens, n, 2 * n - 1, 5e-7, cal.delta0)
        assert acc is None or acc[0] > eps
    # the bound used is FMT21's closed form at the local level of the messages
    cal = calibrate_amplified(1.0, 1e-6, sens, 3982, 3982)
    assert cal.epsilon == pytest.approx(closed_form_epsilon(cal.eps0, 3982, 5e-7), rel=1e-12)


def test_guarantees() -> None:
    spec = EnvSpec(d=5, K=10, horizon=1_000_000, reward_range=(0.0, 1.0))
    g = pb.algorithms.make("shuffle-linucb", epsilon=1.0, delta=1e-6).calibrate(spec).guarantee
    assert g.model == "shuffle" and g.epsilon <= 1.0 and g.delta <= 1e-6
    assert g.local_epsilon is not None and g.local_epsilon > 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = pb.algorithms.make(
            "shuffle-linucb", epsilon=0.2, preset="authors_code", batch_size=20
        ).calibrate(
            EnvSpec(d=5, K=100, horizon=20000, context_bound=math.sqrt(2), reward_range=(0.0, 1.0))
        )
    assert cal.guarantee.epsilon > 0.2  # the authors' noise is certified far above the request


def _reset(T: int = 50, B: int = 10, R: int = 3) -> pb.algorithms.Algorithm:
    alg = pb.algorithms.make("shuffle-linucb", batch_size=B, epsilon=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg.reset(EnvSpec(d=3, K=4, horizon=T), R, make_streams(5))
    return alg


def test_policy_changes_only_at_batch_ends() -> None:
    T, B, R = 50, 10, 2
    alg = _reset(T, B, R)
    rng = np.random.default_rng(0)
    last = alg.server.public_state()["theta"].copy()
    pending = []
    for t in range(T):
        X = rng.normal(size=(R, 4, 3))
        X /= np.linalg.norm(X, axis=-1, keepdims=True)
        public = alg.server.public_state()
        a = alg.client.choose(t, public, X, rng)
        pending.append(alg.client.randomize(t, public, X, a, rng.uniform(-1, 1, R), rng))
        if alg.batch_ends(t):
            for m in pending:
                alg.shuffler.collect(t, m)
            pending = []
            alg.server.receive_batch(t, alg.shuffler.release(t))
            now = alg.server.public_state()["theta"]
            assert not np.allclose(now, last)
            last = now.copy()
        else:
            assert np.array_equal(alg.server.public_state()["theta"], last)
    assert sum(alg.batch_ends(t) for t in range(T)) == T // B


def test_server_takes_shuffled_batches_only_and_is_order_invariant() -> None:
    alg = _reset()
    msg = PrivatizedMessage(
        {"V": np.zeros((3, 3, 3)), "u": np.zeros((3, 3))}, "shuffle-linucb/gaussian"
    )
    with pytest.raises(TrustBoundaryError):
        alg.server.receive(0, msg)
    rng = np.random.default_rng(1)
    V = rng.normal(size=(3, 6, 3, 3))
    V = V + np.swapaxes(V, -1, -2)
    u = rng.normal(size=(3, 6, 3))
    perm = rng.permutation(6)
    a, b = _reset(), _reset()
    a.server.receive_batch(9, ShuffledBatch({"V": V, "u": u}, "shuffle-linucb/gaussian"))
    b.server.receive_batch(
        9, ShuffledBatch({"V": V[:, perm], "u": u[:, perm]}, "shuffle-linucb/gaussian")
    )
    np.testing.assert_allclose(
        a.server.public_state()["theta"], b.server.public_state()["theta"], rtol=1e-10
    )
    with pytest.raises(TrustBoundaryError):
        a.server.receive_batch(9, ShuffledBatch({"V": V, "u": u}, "other"))
    with pytest.raises(TrustBoundaryError):
        a.server.receive_batch(
            9, ShuffledBatch({"V": V[:, :, :2], "u": u}, "shuffle-linucb/gaussian")
        )


def test_chowdhury2022_preset_matches_the_authors_setting() -> None:
    from privbandits.experiments.presets import available_presets, load_preset

    assert available_presets()["chowdhury2022-synthetic"].startswith("Chowdhury & Zhou (2022)")
    cfg = load_preset("chowdhury2022-synthetic")
    assert (cfg.horizon, cfg.replications) == (20000, 50)
    A = np.asarray(cfg.env["actions"])
    theta = np.asarray(cfg.env["theta"])
    assert A.shape == (100, 5) and np.allclose(A[:, 4], 1.0)
    assert np.all(np.linalg.norm(A, axis=1) <= math.sqrt(2) * (1 + 1e-9))
    assert np.allclose(A[:4, :4], np.eye(4)) and np.allclose(A[4, :4], 0.0)
    mu = A @ theta
    assert theta[4] == 0.5 and np.linalg.norm(theta[:4]) == pytest.approx(0.5)
    assert mu.min() >= 0.0 and mu.max() <= 1.0
    names = [e.name for e in cfg.algorithms]
    assert names == [
        "linucb",
        "jdp-linucb",
        "shuffle-linucb",
        "shuffle-linucb",
        "shuffle-linucb",
        "shuffle-linucb-vec",
        "ldp-ucb",
    ]
    assert {c.kind for c in cfg.claims} == {"order", "slope"}
    assert {n.kind for n in cfg.paper_numbers} == {"authors' code"}
