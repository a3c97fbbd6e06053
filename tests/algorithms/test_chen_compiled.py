"""The compiled round of chen-ldp (:mod:`privbandits.algorithms.chen.ldp_kernel`) against its numpy roles.

The numpy client and server of :mod:`privbandits.algorithms.chen.ldp` serve the reference driver,
the service and the audits; the compiled driver runs the same round as compiled steps.  The two
must agree: the device's clips and noise on any public state (honest or not), and whole
trajectories for the same seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privbandits as pb
from privbandits.algorithms.chen.ldp import GRADIENT, IDLE, NORMALIZE
from privbandits.algorithms.chen.ldp_kernel import GRADIENT as K_GRADIENT
from privbandits.algorithms.chen.ldp_kernel import IDLE as K_IDLE
from privbandits.algorithms.chen.ldp_kernel import NORMALIZE as K_NORMALIZE
from privbandits.algorithms.chen.ldp_kernel import _clip_norm
from privbandits.algorithms.chen.planning_kernel import SPANNER_TOL, spanner_indices
from privbandits.algorithms.chen.spanner import barycentric_spanner
from privbandits.core.messages import PublicState
from privbandits.core.rng import make_streams
from privbandits.engine.compiled import compiled_kernel
from privbandits.regression.normalization import normalization_encode


def _reset(d: int = 3, K: int = 4, R: int = 1, link: str = "identity", **params: Any) -> Any:
    alg = pb.make("chen-ldp", **params)
    noise = "gaussian" if link == "identity" else "bernoulli"
    spec = pb.SyntheticEnv(d=d, K=K, link=link, noise=noise).reset(R, make_streams(0), 1000)
    alg.reset(spec, R, make_streams(0))
    return alg


def _kernel_public(alg: Any, pub: PublicState) -> tuple[np.ndarray, ...]:
    k = compiled_kernel(alg)
    assert k is not None
    return tuple(np.ascontiguousarray(pub[name]) for name in k.public_names)


def _states(alg: Any, n: int, rng: np.random.Generator) -> PublicState:
    """Every slot, a non-identity ``U`` of norm 3 (some users: 1e6, far beyond an honest state),
    a large ``w`` (the prediction leaves [-1, 1])."""
    d = alg.spec.d
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    U = Q @ np.diag(np.linspace(0.5, 3.0, d)) @ Q.T
    U = (U + U.T) / 2
    base = alg.server.public_state()
    pub = {k: np.repeat(np.asarray(v)[:1], n, axis=0) for k, v in base.items()}
    pub["slot"] = np.asarray([IDLE, NORMALIZE, GRADIENT])[np.arange(n) % 3]
    pub["U"] = np.broadcast_to(U, (n, d, d)).copy()
    pub["U"][::7] *= 1e6 / 3.0
    pub["w"] = np.broadcast_to(np.linspace(-50.0, 50.0, d), (n, d)).copy()
    pub["w"][::5] = 0.0
    return PublicState(pub)


def _inputs(alg: Any, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    K, d = alg.spec.K, alg.spec.d
    X = rng.standard_normal((n, K, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=2, keepdims=True))
    a = rng.integers(0, K, n)
    y = rng.uniform(-3.0, 3.0, n)  # responses beyond [-1, 1] too
    return X, a, y


def test_slot_codes_match_the_numpy_roles() -> None:
    assert (K_IDLE, K_NORMALIZE, K_GRADIENT) == (IDLE, NORMALIZE, GRADIENT)


@pytest.mark.parametrize("link", ["identity", "logistic"])
def test_compiled_encode_equals_the_device_beyond_every_clip(link: str) -> None:
    """The compiled ``encode`` equals the numpy device's on 600 users whose states and data reach
    every clip: the normalization message clipped to Frobenius norm ``||U||``, the prediction
    ``<U phi, w>`` clipped into [-1, 1] (w up to 50), the response into [-1, 1] (y up to 3) and the
    gradient to norm 2; the clipped messages sit at their bounds."""
    n = 600
    alg = _reset(d=3, K=4, R=n, link=link)
    rng = np.random.default_rng(3)
    pub = _states(alg, n, rng)
    X, a, y = _inputs(alg, n, rng)
    want = alg.client.encode(0, pub, X, a, y)
    k = compiled_kernel(alg)
    got = np.empty((n, k.message.size))
    k.loops.encode_all(k.params, _kernel_public(alg, pub), 0, X, a, y, got)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    d = alg.spec.d
    g = got[:, d * d :]
    rows = pub["slot"] == GRADIENT
    norms = np.linalg.norm(g[rows], axis=1)
    assert np.all(norms <= 2.0 * (1 + 1e-12))
    if link == "identity":  # |nu(1) - (-1)| = 2: the largest residual, at the bound
        assert np.sum(np.isclose(norms, 2.0, rtol=1e-12)) > 10
    assert np.all(got[pub["slot"] == IDLE] == 0.0)
    rows = pub["slot"] == NORMALIZE
    fro = np.linalg.norm(got[rows, : d * d], axis=1)
    op = np.linalg.norm(pub["U"][rows], 2, axis=(1, 2))
    assert np.all(fro <= op * (1 + 1e-12))
    # prediction and response clips: an unclipped residual would make these differ
    rows = (pub["slot"] == GRADIENT) & (np.abs(y) > 1.0)
    assert rows.sum() > 10


def test_compiled_normalization_message_is_clipped_to_the_operator_norm() -> None:
    """Features beyond the unit ball (norm up to 3, which the checked inputs never hold; the
    compiled step is called directly): the normalization message is clipped to Frobenius norm
    ``||U||``, as :func:`~privbandits.regression.normalization.normalization_encode` clips it."""
    n = 200
    alg = _reset(d=3, K=2, R=n)
    rng = np.random.default_rng(8)
    pub = PublicState({**_states(alg, n, rng), "slot": np.full(n, NORMALIZE)})
    X, a, y = _inputs(alg, n, rng)
    X *= 3.0
    k = compiled_kernel(alg)
    got = np.empty((n, k.message.size))
    k.loops.encode_all(k.params, _kernel_public(alg, pub), 0, X, a, y, got)
    want = normalization_encode(pub["U"], X[np.arange(n), a]).reshape(n, -1)
    np.testing.assert_allclose(got[:, :9], want, rtol=1e-12, atol=1e-12)
    op = np.linalg.norm(pub["U"], 2, axis=(1, 2))
    fro = np.linalg.norm(got[:, :9], axis=1)
    assert np.all(fro <= op * (1 + 1e-12)) and np.sum(np.isclose(fro, op, rtol=1e-12)) > n // 2


def test_clip_norm_at_inside_and_beyond_the_bound() -> None:
    """The compiled norm clip of both message fields: a vector at or inside the bound is unchanged,
    one beyond it is scaled to the bound in its own direction, also with tiny or huge entries."""
    for scale in (1e-300, 1.0, 1e300):
        v = np.array([3.0, 4.0]) * scale
        for bound, want_norm in ((10.0 * scale, 5.0 * scale), (5.0 * scale, 5.0 * scale)):
            w = v.copy()
            _clip_norm(w, bound)
            np.testing.assert_array_equal(w, v)
            assert np.isclose(np.linalg.norm(w / scale), want_norm / scale)
        w = v.copy()
        _clip_norm(w, 1.0 * scale)
        np.testing.assert_allclose(w / scale, [0.6, 0.8], rtol=1e-12)
    w = np.array([np.nextafter(5.0, 6.0), 0.0])
    _clip_norm(w, 5.0)
    assert w[0] == 5.0


def test_compiled_randomize_draws_the_devices_noise() -> None:
    """Same client stream, same users: the compiled ``randomize`` gives the numpy device's messages
    (the noise drawn in the same order, at the same scales), not only the same distribution.  In a
    run every user of a round has the same slot (the schedule depends on the round only); the numpy
    device draws slot by slot, so the states here have one slot each."""
    n = 300
    alg = _reset(d=3, K=2, R=n, epsilon=1.0)
    rng = np.random.default_rng(5)
    for slot in (IDLE, NORMALIZE, GRADIENT):
        pub = PublicState({**_states(alg, n, rng), "slot": np.full(n, slot)})
        X, a, y = _inputs(alg, n, rng)
        msg = alg.client.randomize(0, pub, X, a, y, np.random.default_rng(9))
        want = np.concatenate([msg["X"].reshape(n, -1), msg["g"]], axis=1)
        k = compiled_kernel(alg)
        got = np.empty((n, k.message.size))
        k.loops.randomize_all(
            k.params, _kernel_public(alg, pub), 0, X, a, y, np.random.default_rng(9), got
        )
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.max(np.abs(want)))
        enc = alg.client.encode(0, pub, X, a, y)
        assert np.array_equal(got, enc) == (slot == IDLE)


@pytest.mark.slow  # ~60 s of reference-driver rounds; the conformance suite compares the drivers by default
@pytest.mark.parametrize(
    ("d", "K", "link", "params"),
    [
        (3, 5, "identity", {"first_epoch": 16, "min_fit": 16, "c_b": 0.1}),
        (2, 6, "logistic", {"first_epoch": 32, "min_fit": 30, "c_b": 0.05, "epsilon": 4.0}),
    ],
)
def test_reference_equals_compiled(d: int, K: int, link: str, params: dict) -> None:
    """Whole trajectories (regret, reward, estimation error at every checkpoint) under both
    drivers, over several epochs with releases (c_b small: elimination acts)."""
    noise = "gaussian" if link == "identity" else "bernoulli"
    runs = [
        pb.simulate(
            pb.make("chen-ldp", **params),
            pb.SyntheticEnv(d=d, K=K, link=link, noise=noise, noise_scale=0.1),
            260,
            replications=3,
            seed=7,
            engine=engine,
            checkpoints=[1, 15, 16, 64, 200, 260],
        )
        for engine in ("reference", "compiled")
    ]
    assert runs[1].engine == "compiled"
    np.testing.assert_array_equal(runs[0].regret, runs[1].regret)
    np.testing.assert_array_equal(runs[0].reward, runs[1].reward)
    np.testing.assert_allclose(
        runs[0].estimation_error, runs[1].estimation_error, rtol=0, atol=1e-9
    )
    assert np.any(runs[1].estimation_error[:, -1] != runs[1].estimation_error[:, 0])


def test_compiled_spanner_equals_the_svd_construction() -> None:
    """The compiled spanner (Jacobi basis, hand-written solves) picks the indices of the numpy
    construction on random rows, rank-deficient rows and repeated rows."""
    rng = np.random.default_rng(0)
    n = 0
    for m in range(1, 12):
        for d in range(1, 6):
            for kind in range(3):
                F = rng.standard_normal((m, d))
                if kind == 1 and d > 1:
                    F[:, -1] = F[:, 0]  # rank d - 1
                if kind == 2 and m > 1:
                    F[-1] = F[0]
                buf = np.empty(m, dtype=np.int64)
                k = spanner_indices(np.ascontiguousarray(F), 2.0, SPANNER_TOL, buf)
                np.testing.assert_array_equal(buf[:k], barycentric_spanner(F, 2.0))
                n += 1
    assert n == 165


def test_remembered_planning_skips_only_estimates_that_eliminate_nothing() -> None:
    """The device's memory of the billboard (``remember``) skips an estimate only when it certainly
    keeps every action: the action equals the full evaluation's on boards with wide and narrow
    widths, and after the server swaps in other matrices, non-finite entries or a non-symmetric
    ``U`` (adversarial public states); both kinds of board occur (identity link: means in [-1, 1],
    so a board whose widths are below 1 can eliminate)."""
    from privbandits.algorithms.chen.planning_kernel import board_memory, plan_one, plan_workspace

    rng = np.random.default_rng(3)
    K, J = 8, 5
    skipped = evaluated = 0
    for d in (2, 4):
        memory = board_memory(1, J, d)
        work = plan_workspace(K, d)
        for trial in range(300):
            F = rng.standard_normal((K, d))
            F /= np.linalg.norm(F, axis=1, keepdims=True)
            F *= rng.uniform(0.2, 1.0, size=(K, 1))
            theta = 2.0 * rng.standard_normal((J, d))
            U = rng.standard_normal((J, d, d)) * 0.3 + np.eye(d)
            scale = rng.choice([0.05, 0.5, 2.0, 50.0], size=J)
            if trial % 7 == 0:
                U[rng.integers(J), 0, 0] = np.nan
            if trial % 11 == 0:
                scale[rng.integers(J)] = np.inf
            n = int(rng.integers(0, J + 1))
            seed = int(rng.integers(2**32))
            args = (F, theta, U, scale, n, 0, 2.0, SPANNER_TOL)
            full = plan_one(*args, np.random.default_rng(seed), work, memory, 0, False)
            kept = plan_one(*args, np.random.default_rng(seed), work, memory, 0, True)
            assert kept == full, (d, trial)
            floor = memory[2][0]
            norm = float(np.min(np.linalg.norm(F, axis=1)))
            inert = floor[:n] * norm >= 1.0
            skipped += int(inert.sum())
            evaluated += int(n - inert.sum())
    assert skipped > 100 and evaluated > 100


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 6),
    st.integers(0, 8),
    st.floats(-14.0, 0.0),
)
def test_full_rank_certificate_only_certifies_full_rank(
    seed: int, d: int, extra: int, log_kappa: float
) -> None:
    """The spanner's full-rank certificate (no singular values) never certifies rows whose
    singular-value ratio is at or below 1e-4 (the rank tolerance is 1e-9), and certifies rows whose
    ratio exceeds ``2e-4 d``: rows ``A diag(s) B`` with a chosen ratio ``s_min / s_max =
    10^log_kappa``."""
    from privbandits.algorithms.chen.planning_kernel import _surely_full_rank

    rng = np.random.default_rng(seed)
    m = d + extra
    A = np.linalg.qr(rng.standard_normal((m, d)))[0]
    B = np.linalg.qr(rng.standard_normal((d, d)))[0]
    s = np.logspace(0.0, log_kappa, d)
    F = np.ascontiguousarray((A * s) @ B)
    S, L, z = np.empty((d, d)), np.empty((d, d)), np.empty(d)
    certified = _surely_full_rank(F, m, S, L, z)
    ratio = s.min() / s.max()
    if ratio <= 1e-4:
        assert not certified
    if ratio >= 2e-4 * d:  # the bound loses at most a factor d^2 on the squared ratio
        assert certified
