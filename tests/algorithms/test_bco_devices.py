"""The devices of LDP-TwoPoint and LDP-OnePoint against an untrusted server (Zheng, Cai, Huang, Li &
Wang 2020, Algorithms 2 and 1).

The server chooses the query points (or the arm) every device reads.  LDP-TwoPoint's noise
``n^T (x_1 - x_2)`` has std ``sigma ||x_1 - x_2||``, so its device clips the loss difference to
``G ||x_1 - x_2||``: the whitened distance of two users' encoded messages is then the accounted
``2 G / sigma`` whatever the gap (the issue: a gap of 1e-3 with a fixed clip ``2 rho G`` audited at
epsilon >= 7 against a claim of 1).  LDP-OnePoint's message does not depend on the proposal.

Statistical thresholds are z-bounds at a family-wise level :data:`ALPHA` (Bonferroni over the
moments and cases of a test); each test states what it must catch.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm as normal

import privbandits as pb
from privbandits.algorithms.bco.privatizer import MIN_GAP
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.auditing import CLIENT_PATHS, client_path_spec
from privbandits.core.errors import DataBoundError, ValidationError
from privbandits.core.messages import PublicState
from privbandits.core.public_space import PublicStateError, dims_of
from privbandits.core.rng import make_streams
from privbandits.privacy.audit import audit_spec
from privbandits.privacy.device import whitened_distance

#: Family-wise level of every statistical test in this file.
ALPHA = 1e-6
#: Relative slack of the invariant (the whitened distance is a ratio of rounded floats).
RTOL = 1e-9
MECHS = ("gaussian", "laplace")


# -- helpers ---------------------------------------------------------------------------------------
def _reset(name: str, R: int, env: Any, horizon: int = 1000, **params: Any) -> tuple[Any, Any]:
    alg = pb.make(name, **params)
    streams = make_streams(0)
    spec = env.reset(R, streams, horizon)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        alg.reset(spec, R, streams)
    return alg, spec


def _two_point(
    R: int, *, domain: str = "ball", size: float = 1.0, d: int = 2, **params: Any
) -> tuple[Any, Any]:
    return _reset(
        "ldp-twopoint", R, pb.ConvexLossEnv(d=d, domain=domain, domain_size=size), **params
    )


def _points(gaps: np.ndarray, d: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """Query points ``(R, 2, d)`` centred at 0 with the given gaps, along ``e_1`` or random directions."""
    gaps = np.asarray(gaps, dtype=float)
    u = np.zeros((gaps.size, d))
    u[:, 0] = 1.0
    if rng is not None:
        u = rng.standard_normal((gaps.size, d))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
    half = (gaps / 2.0)[:, None] * u
    return np.stack([half, -half], axis=1)


def _public(points: np.ndarray) -> PublicState:
    return PublicState({"points": np.ascontiguousarray(points, dtype=float)})


def _whitened(
    client: Any, public: PublicState, X: np.ndarray, y0: np.ndarray, y1: np.ndarray
) -> np.ndarray:
    """Whitened distance of the encodings of users holding ``y0`` and ``y1`` under ``public``."""
    acts = client.choose(0, public, X, np.random.default_rng(0))
    e0 = client.encode(0, public, X, acts, y0)
    e1 = client.encode(0, public, X, acts, y1)
    noise = client.noise(0, public, X, acts)
    return whitened_distance(e0, e1, noise.scale, client.sensitivity().norm)


def _noise_ok(z: np.ndarray, kurtosis: float, q: float) -> bool:
    """``z`` (standardized ``randomize - encode``) has mean 0 and variance 1 within ``q`` standard
    errors: ``1/sqrt(n)`` for the mean, ``sqrt((E z^4 - 1) / n)`` for the variance (``E z^4`` = 3
    Gaussian, 6 Laplace)."""
    n = z.size
    return bool(
        abs(z.mean()) <= q / math.sqrt(n)
        and abs(z.var(ddof=1) - 1.0) <= q * math.sqrt((kurtosis - 1) / n)
    )


# -- the issue's reproduction ----------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", MECHS)
@pytest.mark.parametrize("gap", [1e-3, 1e-12])
def test_small_gap_message_is_clipped_relative_to_the_gap(mechanism: str, gap: float) -> None:
    # the issue: f(x_1) - f(x_2) = +-10 at a server-chosen gap; the device sends +-G gap, and the
    # whitened distance of the two users reaches (power) but never exceeds the accounted bound
    R = 4
    alg, spec = _two_point(R, mechanism=mechanism)
    c, G = alg.client, spec.lipschitz
    public = _public(_points(np.full(R, gap), spec.d))
    X = np.zeros((R, spec.d))
    y0, y1 = np.tile([5.0, -5.0], (R, 1)), np.tile([-5.0, 5.0], (R, 1))
    e0 = c.encode(0, public, X, c.choose(0, public, X, None), y0)
    np.testing.assert_allclose(e0, G * gap, rtol=1e-12)
    dist = _whitened(c, public, X, y0, y1)
    bound = c.sensitivity().bound
    assert np.all(dist <= bound * (1 + RTOL)), (dist, bound)
    assert np.all(dist >= bound * (1 - RTOL)), (dist, bound)


def _gap_case(name: str, gap: float) -> Any:
    def small_gap(spec: Any) -> dict[str, np.ndarray]:
        return {"points": _points(np.array([gap]), spec.d)[0]}

    return dataclasses.replace(CLIENT_PATHS[name], public=small_gap)


@pytest.mark.parametrize("name", ["client:ldp-twopoint", "client:ldp-twopoint-laplace"])
def test_audit_at_the_issue_gap_passes_at_the_claim_and_flags_half_noise(name: str) -> None:
    # the issue's public state (gap 1e-3, against 2 rho = 0.0138 from an honest server): before the
    # relative clip the Gaussian client audited at epsilon >= 9.8 against its claim of 1
    case = _gap_case(name, 1e-3)
    ok = audit_spec(client_path_spec(case), seed=0)
    assert ok.passed, ok
    half = audit_spec(client_path_spec(case, 0.5), seed=0)
    assert not half.passed, half


@pytest.mark.slow
@pytest.mark.parametrize("name", ["client:ldp-twopoint", "client:ldp-twopoint-laplace"])
def test_audit_at_a_gap_of_1e12_passes_and_flags_half_noise(name: str) -> None:
    case = _gap_case(name, 1e-12)
    assert audit_spec(client_path_spec(case), seed=1).passed
    assert not audit_spec(client_path_spec(case, 0.5), seed=1).passed


# -- what the device declares is what the accountant composed --------------------------------------
@pytest.mark.parametrize("preset", ["strict", "paper"])
@pytest.mark.parametrize("mechanism", MECHS)
def test_two_point_declarations_are_the_accountants(mechanism: str, preset: str) -> None:
    # at the honest gap 2 rho: noise std 2 rho sigma (Gaussian) or scale b = 4 rho G / epsilon
    # (Laplace), and bound x noise = the calibration's sensitivity 4 rho G
    R = 3
    alg, spec = _two_point(R, mechanism=mechanism, preset=preset, delta=1e-3)
    res = alg.calibration.resolved
    public = alg.server.public_state()
    X = np.zeros((R, spec.d))
    noise = alg.client.noise(0, public, X, alg.client.choose(0, public, X, None))
    honest = 2 * res["rho"] * res["sigma"] if mechanism == "gaussian" else res["noise_scale"]
    np.testing.assert_allclose(noise.scale, honest, rtol=1e-12)
    sens = alg.client.sensitivity()
    assert sens.norm == ("l1" if mechanism == "laplace" else "l2")
    assert sens.bound * honest == pytest.approx(res["sensitivity"], rel=1e-12)
    assert res["sensitivity"] == pytest.approx(4 * res["rho"] * spec.lipschitz, rel=1e-12)


@pytest.mark.parametrize("mechanism", MECHS)
def test_one_point_declarations_are_the_accountants(mechanism: str) -> None:
    alg, spec = _reset("ldp-onepoint", 3, pb.MultiArmedEnv(K=3), mechanism=mechanism)
    res = alg.calibration.resolved
    public = alg.server.public_state()
    X = np.broadcast_to(np.eye(3), (3, 3, 3)).copy()
    noise = alg.client.noise(0, public, X, alg.client.choose(0, public, X, None))
    np.testing.assert_allclose(noise.scale, res["noise_scale"])
    assert alg.client.sensitivity().bound * res["noise_scale"] == pytest.approx(
        res["clip_hi"] - res["clip_lo"]
    )


# -- the online path: randomize - encode is the declared noise -------------------------------------
N_NOISE = 200_000
#: Six cases, two moments each.
Q_NOISE = float(normal.isf(ALPHA / (2 * 6 * 2)))


def _online_two_point(mechanism: str, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Messages, encodings and declared variances of ``n`` users at per-user gaps spread over
    twelve decades (log-uniform in [1e-12, 2]) and losses partly beyond the clip."""
    rng = np.random.default_rng(11)
    alg, spec = _two_point(n, d=3, mechanism=mechanism)
    gaps = 10.0 ** rng.uniform(-12, math.log10(2.0), n)
    public = _public(_points(gaps, spec.d, rng))
    X = np.zeros((n, spec.d))
    y = rng.standard_normal((n, 2)) * gaps[:, None] * rng.choice([0.1, 10.0], (n, 1))
    c = alg.client
    acts = c.choose(0, public, X, None)
    e = c.encode(0, public, X, acts, y)
    msg = c.randomize(0, public, X, acts, y, np.random.default_rng(12))
    return msg.payload["difference"][:, None], e, c.noise(0, public, X, acts).variance


def _online_one_point(
    mechanism: str, n: int, convex: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(13)
    if convex:
        alg, spec = _reset(
            "ldp-onepoint", n, pb.ConvexLossEnv(d=2), base="fkm", mechanism=mechanism
        )
        X = np.zeros((n, 2))
    else:
        alg, spec = _reset("ldp-onepoint", n, pb.MultiArmedEnv(K=3), mechanism=mechanism)
        X = np.broadcast_to(np.eye(3), (n, 3, 3)).copy()
    c = alg.client
    public = alg.server.public_state()
    acts = c.choose(0, public, X, None)
    y = rng.uniform(-3.0, 3.0, (n, 1) if convex else n)  # partly beyond the clip
    e = c.encode(0, public, X, acts, y)
    msg = c.randomize(0, public, X, acts, y, np.random.default_rng(14))
    return msg.payload["value"][:, None], e, c.noise(0, public, X, acts).variance


@pytest.mark.parametrize("mechanism", MECHS)
@pytest.mark.parametrize("which", ["ldp-twopoint", "ldp-onepoint", "ldp-onepoint-convex"])
def test_randomize_minus_encode_has_the_declared_noise(which: str, mechanism: str) -> None:
    # the noise actually added, per user, against the declared variance: standardized, the
    # difference has mean 0 and variance 1 (z-bounds of the sample size); the same statistic must
    # reject a noise that is half the declared one (the test's power, checked here too)
    if which == "ldp-twopoint":
        m, e, var = _online_two_point(mechanism, N_NOISE)
    else:
        m, e, var = _online_one_point(mechanism, N_NOISE, which.endswith("convex"))
    assert m.shape == e.shape == var.shape == (N_NOISE, 1)
    assert np.all(var > 0)
    z = ((m - e) / np.sqrt(var)).ravel()
    kurt = 6.0 if mechanism == "laplace" else 3.0
    assert _noise_ok(z, kurt, Q_NOISE), (z.mean(), z.var())
    assert not _noise_ok(0.5 * z, kurt, Q_NOISE)  # what halved noise would look like


def test_zero_gap_sends_an_exact_zero() -> None:
    # a gap of 0 (or below MIN_GAP) carries no information: no data, no noise, declared exact
    R = 5
    alg, spec = _two_point(R)
    c = alg.client
    gaps = np.array([0.0, 1e-320, MIN_GAP / 2, MIN_GAP * (1 - 1e-9), 0.0])
    public = _public(_points(gaps, spec.d))
    X = np.zeros((R, spec.d))
    y = np.tile([1e6, -1e6], (R, 1))
    acts = c.choose(0, public, X, None)
    assert np.all(c.encode(0, public, X, acts, y) == 0.0)
    assert np.all(c.noise(0, public, X, acts).scale == 0.0)
    assert np.all(
        c.randomize(0, public, X, acts, y, np.random.default_rng(0)).payload["difference"] == 0.0
    )


# -- the adversarial-server property ---------------------------------------------------------------
def _users(rng: np.random.Generator, R: int) -> tuple[np.ndarray, np.ndarray]:
    """Two users' losses per row at every scale (1e-300 .. 1e300), signs and ties included."""
    scale = rng.choice([0.0, 1e-300, 1e-12, 1.0, 1e6, 1e300], (2, R, 1))
    y = rng.standard_normal((2, R, 2)) * scale
    return y[0], y[1]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    extreme=st.booleans(),
    mechanism=st.sampled_from(MECHS),
    domain=st.sampled_from(["ball", "box"]),
    size=st.sampled_from([1e-3, 1.0, 50.0]),
    d=st.integers(1, 4),
)
def test_two_point_invariant_over_drawn_public_states(
    seed: int, extreme: bool, mechanism: str, domain: str, size: float, d: int
) -> None:
    # any member of the declared space (random, or with entries at the ends of the range: equal
    # points, opposite corners), any two users: whitened distance <= the accounted bound
    R = 16
    rng = np.random.default_rng(seed)
    alg, spec = _two_point(
        R, domain=domain, size=size, d=d, mechanism=mechanism, rho=min(0.01, size / 2)
    )
    c = alg.client
    public = c.public_space().draw(dims_of(spec, R), rng, extreme)
    y0, y1 = _users(rng, R)
    dist = _whitened(c, public, np.zeros((R, d)), y0, y1)
    assert np.all(dist <= c.sensitivity().bound * (1 + RTOL)), (dist.max(), c.sensitivity().bound)


GAPS = st.one_of(
    st.sampled_from([0.0, 5e-324, 1e-300, MIN_GAP, MIN_GAP * 1.5, 1e-12, 1e-3, 2.0]),
    st.floats(0.0, 2.0),
    st.floats(1e-200, 1e-6).map(lambda g: g),
)


@settings(max_examples=80, deadline=None)
@given(
    gap=GAPS,
    seed=st.integers(0, 2**32 - 1),
    mechanism=st.sampled_from(MECHS),
    shift=st.floats(0.0, 1.0),
)
def test_two_point_invariant_at_every_gap(
    gap: float, seed: int, mechanism: str, shift: float
) -> None:
    # the gap itself drawn (zero, sub-normal, at MIN_GAP, 1e-12, 1e-3, the diameter), the pair placed
    # anywhere in the unit ball; the declared noise is sigma (or s) times the gap the device reads
    R = 8
    rng = np.random.default_rng(seed)
    alg, spec = _two_point(R, d=3, mechanism=mechanism)
    c = alg.client
    pts = _points(np.full(R, gap), spec.d, rng)
    mid = rng.standard_normal((R, 1, spec.d))
    mid *= shift * max(0.0, 1.0 - gap / 2) / np.linalg.norm(mid, axis=2, keepdims=True)
    public = _public(pts + mid)
    y0, y1 = _users(rng, R)
    X = np.zeros((R, spec.d))
    assert np.all(_whitened(c, public, X, y0, y1) <= c.sensitivity().bound * (1 + RTOL))
    gaps = np.linalg.norm(public["points"][:, 0] - public["points"][:, 1], axis=1)
    expect = np.where(gaps >= MIN_GAP * (1 + 1e-12), c.scale_per_gap * gaps, 0.0)
    scale = c.noise(0, public, X, None).scale[:, 0]
    near = np.abs(gaps - MIN_GAP) <= MIN_GAP * 1e-12
    np.testing.assert_allclose(scale[~near], expect[~near], rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), gap=GAPS, frac=st.floats(-1.0, 1.0))
def test_two_point_without_clip_holds_for_lipschitz_users_and_refuses_the_others(
    seed: int, gap: float, frac: float
) -> None:
    # clip=False: the guarantee is conditional on G-Lipschitz losses, |f(x_1) - f(x_2)| <= G gap,
    # which the device checks at the gap it reads (a server's small gap cannot widen it)
    R = 4
    rng = np.random.default_rng(seed)
    alg, spec = _two_point(R, clip=False)
    c, G = alg.client, spec.lipschitz
    public = _public(_points(np.full(R, gap), spec.d, rng))
    X = np.zeros((R, spec.d))
    g = np.linalg.norm(public["points"][:, 0] - public["points"][:, 1], axis=1)
    g = np.where(g >= MIN_GAP * (1 + 1e-12), g, 0.0)
    # exact differences (losses of size 1 would carry rounding errors of 1e-16, beyond G g at the
    # smallest gaps: the device then refuses, which is safe)
    y0 = np.stack([frac * G * g, np.zeros(R)], axis=1)
    y1 = np.stack([-G * g, np.zeros(R)], axis=1)
    assert np.all(_whitened(c, public, X, y0, y1) <= c.sensitivity().bound * (1 + RTOL))
    if g.max() > 0:
        with pytest.raises(DataBoundError, match="not G-Lipschitz"):
            c.encode(0, public, X, None, np.stack([2 * G * g, np.zeros(R)], axis=1))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    extreme=st.booleans(),
    mechanism=st.sampled_from(MECHS),
    convex=st.booleans(),
)
def test_one_point_invariant_over_drawn_public_states(
    seed: int, extreme: bool, mechanism: str, convex: bool
) -> None:
    R = 16
    rng = np.random.default_rng(seed)
    if convex:
        alg, spec = _reset(
            "ldp-onepoint", R, pb.ConvexLossEnv(d=2), base="fkm", mechanism=mechanism
        )
        X = np.zeros((R, 2))
        shape: tuple[int, ...] = (R, 1)
    else:
        alg, spec = _reset("ldp-onepoint", R, pb.MultiArmedEnv(K=4), mechanism=mechanism)
        X = np.broadcast_to(np.eye(4), (R, 4, 4)).copy()
        shape = (R,)
    c = alg.client
    public = c.public_space().draw(dims_of(spec, R), rng, extreme)
    y = rng.standard_normal((2, *shape)) * rng.choice([0.0, 1.0, 1e6, 1e300], (2, *shape))
    dist = _whitened(c, public, X, y[0], y[1])
    assert np.all(dist <= c.sensitivity().bound * (1 + RTOL))


# -- every clip at, just inside and beyond its bound -----------------------------------------------
@pytest.mark.parametrize("gap", [1e-3, None])
@pytest.mark.parametrize("factor", [0.0, 1 - 1e-9, 1.0, 1 + 1e-9, 10.0, 1e300])
def test_difference_clip_at_inside_and_beyond_the_bound(factor: float, gap: float | None) -> None:
    R = 2
    alg, spec = _two_point(R)
    c, G = alg.client, spec.lipschitz
    public = alg.server.public_state() if gap is None else _public(_points(np.full(R, gap), spec.d))
    g = np.linalg.norm(public["points"][:, 0] - public["points"][:, 1], axis=1)
    a = factor * G * g * np.array([1.0, -1.0])
    y = np.stack([a, np.zeros(R)], axis=1)
    e = c.encode(0, public, np.zeros((R, 2)), None, y)[:, 0]
    want = np.clip(a, -G * g, G * g)
    np.testing.assert_allclose(e, want, rtol=1e-12)
    assert np.all(np.abs(e) <= G * g * (1 + 1e-12))
    if factor > 1:
        assert np.all(np.abs(e) < np.abs(a))


@pytest.mark.parametrize(
    "factor,ok", [(1.0, True), (1 - 1e-9, True), (1 + 1e-12, True), (1 + 1e-6, False)]
)
def test_difference_check_without_clip_at_the_bound(factor: float, ok: bool) -> None:
    R = 2
    alg, spec = _two_point(R, clip=False)
    c, G = alg.client, spec.lipschitz
    public = _public(_points(np.full(R, 1e-3), spec.d))
    y = np.stack([np.full(R, factor * G * 1e-3), np.zeros(R)], axis=1)
    if ok:
        np.testing.assert_allclose(c.encode(0, public, np.zeros((R, 2)), None, y)[:, 0], y[:, 0])
    else:
        with pytest.raises(DataBoundError):
            c.encode(0, public, np.zeros((R, 2)), None, y)


@pytest.mark.parametrize("factor,zero", [(1 - 1e-6, True), (1 + 1e-6, False)])
def test_min_gap_at_its_bound(factor: float, zero: bool) -> None:
    R = 2
    alg, spec = _two_point(R)
    c = alg.client
    public = _public(_points(np.full(R, MIN_GAP * factor), spec.d))
    y = np.tile([1.0, -1.0], (R, 1))
    e = c.encode(0, public, np.zeros((R, 2)), None, y)[:, 0]
    scale = c.noise(0, public, np.zeros((R, 2)), None).scale[:, 0]
    m = c.randomize(0, public, np.zeros((R, 2)), None, y, np.random.default_rng(0)).payload[
        "difference"
    ]
    if zero:
        assert np.all(e == 0) and np.all(scale == 0) and np.all(m == 0)
    else:
        np.testing.assert_allclose(e, spec.lipschitz * MIN_GAP * factor, rtol=1e-9)
        np.testing.assert_allclose(scale, c.scale_per_gap * MIN_GAP * factor, rtol=1e-9)
        assert np.all(m != e)


@pytest.mark.parametrize("domain", ["ball", "box"])
@pytest.mark.parametrize(
    "factor,ok", [(1.0, True), (1 - 1e-9, True), (1 + 1e-12, True), (1 + 1e-6, False)]
)
def test_query_points_at_the_domain_bound(domain: str, factor: float, ok: bool) -> None:
    R, size = 2, 2.0
    alg, spec = _two_point(R, domain=domain, size=size)
    pts = np.zeros((R, 2, 2))
    pts[:, 0, 0] = size * factor
    pts[:, 1, :] = -size * factor if domain == "box" else [-size * factor, 0.0]
    public = _public(pts)
    y = np.zeros((R, 2))
    if ok:
        alg.client.randomize(0, public, np.zeros((R, 2)), None, y, np.random.default_rng(0))
    else:
        with pytest.raises(PublicStateError):
            alg.client.randomize(0, public, np.zeros((R, 2)), None, y, np.random.default_rng(0))
        with pytest.raises(PublicStateError):
            alg.client.choose(0, public, np.zeros((R, 2)), None)


@pytest.mark.parametrize("convex", [False, True])
@pytest.mark.parametrize("where", ["lo", "hi"])
@pytest.mark.parametrize("offset", [-1e-9, 0.0, 1e-9, 10.0])
def test_value_clip_at_inside_and_beyond_the_range(where: str, offset: float, convex: bool) -> None:
    R = 2
    if convex:
        alg, _ = _reset("ldp-onepoint", R, pb.ConvexLossEnv(d=2), base="fkm")
        X = np.zeros((R, 2))
    else:
        alg, _ = _reset("ldp-onepoint", R, pb.MultiArmedEnv(K=3))
        X = np.broadcast_to(np.eye(3), (R, 3, 3)).copy()
    c = alg.client
    lo, hi = c.lo, c.hi
    v = lo - offset if where == "lo" else hi + offset  # offset > 0: beyond the range
    public = alg.server.public_state()
    acts = c.choose(0, public, X, None)
    e = c.encode(0, public, X, acts, np.full((R, 1) if convex else R, v))[:, 0]
    np.testing.assert_array_equal(e, np.clip(v, lo, hi))


@pytest.mark.parametrize("offset,ok", [(0.0, True), (-1e-9, True), (1e-9, False)])
def test_value_check_without_clip_at_the_range(offset: float, ok: bool) -> None:
    R = 2
    alg, _ = _reset("ldp-onepoint", R, pb.MultiArmedEnv(K=3), clip=False)
    c = alg.client
    X = np.broadcast_to(np.eye(3), (R, 3, 3)).copy()
    public = alg.server.public_state()
    y = np.full(R, c.hi + offset)
    if ok:
        c.encode(0, public, X, c.choose(0, public, X, None), y)
    else:
        with pytest.raises(DataBoundError, match="outside the declared range"):
            c.encode(0, public, X, c.choose(0, public, X, None), y)


@pytest.mark.parametrize("arm,ok", [(0, True), (2, True), (3, False), (-1, False), (1.5, False)])
def test_proposed_arm_at_the_ends_of_its_range(arm: float, ok: bool) -> None:
    R = 2
    alg, _ = _reset("ldp-onepoint", R, pb.MultiArmedEnv(K=3))
    c = alg.client
    X = np.broadcast_to(np.eye(3), (R, 3, 3)).copy()
    public = PublicState({"action": np.full(R, arm)})
    if ok:
        np.testing.assert_array_equal(c.choose(0, public, X, None), np.full(R, arm))
    else:
        with pytest.raises(PublicStateError):
            c.choose(0, public, X, None)
        with pytest.raises(PublicStateError):
            c.randomize(
                0, public, X, np.zeros(R, dtype=np.int64), np.zeros(R), np.random.default_rng(0)
            )


# -- malformed inputs: a clear error, never a report -----------------------------------------------
def _bad_points(R: int, d: int) -> list[tuple[str, Any]]:
    good = _points(np.full(R, 0.1), d)
    nan = good.copy()
    nan[0, 0, 0] = np.nan
    inf = good.copy()
    inf[0, 1, 0] = np.inf
    return [
        ("d + 1 coordinates", np.zeros((R, 2, d + 1))),
        ("three points", np.zeros((R, 3, d))),
        ("one user short", good[:-1]),
        ("flat", good.reshape(R, -1)),
        ("NaN", nan),
        ("inf", inf),
        ("strings", np.full((R, 2, d), "a")),
        ("complex", good.astype(complex)),
    ]


@pytest.mark.parametrize("what", [w for w, _ in _bad_points(3, 2)])
def test_two_point_refuses_malformed_query_points(what: str) -> None:
    R = 3
    alg, spec = _two_point(R)
    pts = dict(_bad_points(R, spec.d))[what]
    public = PublicState({"points": pts})
    y, X = np.zeros((R, 2)), np.zeros((R, spec.d))
    for call in (
        lambda: alg.client.choose(0, public, X, None),
        lambda: alg.client.encode(0, public, X, None, y),
        lambda: alg.client.noise(0, public, X, None),
        lambda: alg.client.randomize(0, public, X, None, y, np.random.default_rng(0)),
    ):
        with pytest.raises(PublicStateError):
            call()


def test_two_point_refuses_unknown_or_missing_fields() -> None:
    R = 2
    alg, spec = _two_point(R)
    pts = _points(np.full(R, 0.1), spec.d)
    for state in ({"points": pts, "sigma": np.zeros(1)}, {}):
        with pytest.raises(PublicStateError):
            alg.client.randomize(
                0,
                PublicState(state),
                np.zeros((R, 2)),
                None,
                np.zeros((R, 2)),
                np.random.default_rng(0),
            )


@pytest.mark.parametrize(
    "losses,error",
    [
        (np.zeros((3, 3)), ValidationError),
        (np.zeros(3), ValidationError),
        (np.zeros((2, 2)), ValidationError),  # 2 users' losses, 3 users' loss parameters
        (np.array([[np.nan, 0.0]] * 3), DataBoundError),
        (np.array([[np.inf, 0.0]] * 3), DataBoundError),
        (np.full((3, 2), "x"), ValidationError),
        (np.zeros((3, 2), dtype=bool), ValidationError),
    ],
)
def test_two_point_refuses_malformed_losses(losses: np.ndarray, error: type[Exception]) -> None:
    R = 3
    alg, spec = _two_point(R)
    public = _public(_points(np.full(R, 0.1), spec.d))
    with pytest.raises(error):
        alg.client.randomize(0, public, np.zeros((R, 2)), None, losses, np.random.default_rng(0))


@pytest.mark.parametrize("played", ["other", "d + 1", "NaN", "str"])
def test_the_message_follows_the_public_points_whatever_the_points_reported(played: str) -> None:
    # the clip and the noise come from the validated public points; the points the caller reports
    # having played are checked (shape, dtype, finiteness), never used for the noise
    R = 3
    alg, spec = _two_point(R)
    public = _public(_points(np.full(R, 1e-3), spec.d))
    X, y = np.zeros((R, 2)), np.tile([5.0, -5.0], (R, 1))
    c = alg.client
    if played == "other":
        other = _points(np.full(R, 1.0), spec.d)
        np.testing.assert_array_equal(
            c.encode(0, public, X, other, y), c.encode(0, public, X, None, y)
        )
        np.testing.assert_array_equal(
            c.noise(0, public, X, other).scale, c.noise(0, public, X, None).scale
        )
        return
    bad = {
        "d + 1": np.zeros((R, 2, 3)),
        "NaN": np.full((R, 2, 2), np.nan),
        "str": np.full((R, 2, 2), "0"),
    }[played]
    with pytest.raises(ValidationError):
        c.randomize(0, public, X, bad, y, np.random.default_rng(0))


def test_loss_parameters_are_checked_though_never_read() -> None:
    R = 3
    alg, spec = _two_point(R)
    public = _public(_points(np.full(R, 0.1), spec.d))
    y = np.zeros((R, 2))
    assert spec.param_dim == spec.d  # quadratic losses: a centre per user (logistic: d + 1)
    for X, error in (
        (np.zeros((R, 0)), ValidationError),
        (np.zeros((R + 1, 2)), ValidationError),
        (np.zeros((R, 3)), ValidationError),
        (np.zeros((R, 1)), ValidationError),
        (np.zeros(R), ValidationError),
        (np.full((R, 2), np.nan), DataBoundError),
        (np.full((R, 2), "a"), ValidationError),
    ):
        with pytest.raises(error):
            alg.client.randomize(0, public, X, None, y, np.random.default_rng(0))
    alg.client.randomize(0, public, np.zeros((R, 2)), None, y, np.random.default_rng(0))


def test_a_dishonest_server_cannot_move_the_device_off_its_guarantee() -> None:
    # through the loss-environment driver: a server broadcasting a 1e-3 gap gets messages whose
    # difference part is at most G 1e-3; a server broadcasting points outside the decision set
    # gets an error and no report
    env = pb.ConvexLossEnv(d=2)
    alg = pb.make("ldp-twopoint")
    seen: list[np.ndarray] = []

    class SmallGap(type(alg)):  # type: ignore[misc]
        name = ""

        def reset(self, spec: Any, replications: int, streams: Any) -> None:
            super().reset(spec, replications, streams)
            server, client = self.server, self.client
            honest = server.public_state

            def public_state() -> PublicState:
                pts = np.array(honest()["points"])
                mid = pts.mean(axis=1, keepdims=True)
                return _public(
                    mid
                    + (pts - mid)
                    * (1e-3 / np.linalg.norm(pts[:, :1] - pts[:, 1:], axis=2)[..., None])
                )

            randomize = client.randomize

            def spy(t: int, public: PublicState, X: Any, a: Any, y: Any, rng: Any) -> Any:
                seen.append(np.asarray(client.encode(t, public, X, a, y)))
                return randomize(t, public, X, a, y, rng)

            server.public_state = public_state  # type: ignore[method-assign]
            client.randomize = spy  # type: ignore[method-assign]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pb.simulate(SmallGap(), env, 20, replications=3, seed=0, engine="reference")
    G = env.reset(1, make_streams(0), 20).lipschitz
    assert len(seen) == 20 and all(np.all(np.abs(e) <= G * 1e-3 * (1 + 1e-9)) for e in seen)

    class Outside(type(alg)):  # type: ignore[misc]
        name = ""

        def reset(self, spec: Any, replications: int, streams: Any) -> None:
            super().reset(spec, replications, streams)
            self.server.public_state = lambda: _public(np.full((replications, 2, 2), 3.0))  # type: ignore[method-assign]

    with pytest.raises(PublicStateError, match="points"):
        pb.simulate(Outside(), env, 5, replications=2, seed=0, engine="reference")


def test_compiled_steps_refuse_mismatched_shapes() -> None:
    # the compiled steps are public: called directly with arrays that do not fit each other they
    # raise instead of reading or writing past an array
    from privbandits.algorithms.bco.privatizer import privatize_difference
    from privbandits.algorithms.ldp_onepoint import privatize_values

    rng = np.random.default_rng(0)
    bad = [
        lambda: privatize_difference(
            rng,
            np.zeros((3, 2)),
            np.zeros((2, 2, 2)),
            1.0,
            True,
            1.0,
            False,
            np.zeros(2),
            np.zeros(3),
        ),
        lambda: privatize_difference(
            rng,
            np.zeros((3, 2)),
            np.zeros((3, 2, 2)),
            1.0,
            True,
            1.0,
            False,
            np.zeros(1),
            np.zeros(3),
        ),
        lambda: privatize_difference(
            rng,
            np.zeros((3, 2)),
            np.zeros((3, 2, 2)),
            1.0,
            True,
            1.0,
            False,
            np.zeros(2),
            np.zeros(2),
        ),
        lambda: privatize_difference(
            rng,
            np.zeros((3, 3)),
            np.zeros((3, 3, 2)),
            1.0,
            True,
            1.0,
            False,
            np.zeros(2),
            np.zeros(3),
        ),
        lambda: privatize_values(rng, np.zeros(3), 0.0, 1.0, True, 1.0, False, np.zeros(2)),
    ]
    for call in bad:
        with pytest.raises(ValueError):
            call()


# -- the declared output ranges (the service refuses reports outside them) ---------------------------
def _far_points(spec: Any, R: int) -> np.ndarray:
    """Query points at the decision set's diameter: antipodes of the ball / opposite box corners."""
    half = np.full(spec.d, spec.domain.size)
    if spec.domain.kind == "ball":
        half = np.zeros(spec.d)
        half[0] = spec.domain.size
    return np.broadcast_to(np.stack([half, -half]), (R, 2, spec.d)).copy()


@pytest.mark.parametrize("domain", ["ball", "box"])
def test_two_point_output_range_is_the_widest_clipped_difference_plus_the_noise_tail(
    domain: str,
) -> None:
    # the declared bound is (G + z sigma) D: a report of a difference clipped at the widest gap D
    # the server may send, plus z = Z_TAIL noise stds at that gap; the clipped difference attains
    # its part (a range that left it out, or used the honest gap 2 rho, would refuse genuine
    # reports) and every genuine report lies within it
    from privbandits.privacy.ranges import Z_TAIL

    R = 20_000
    alg, spec = _two_point(R, domain=domain, d=3, epsilon=0.5)
    ranges = alg.output_ranges()
    assert set(ranges) == {"difference"} and ranges["difference"].kind == "abs"
    bound, D = ranges["difference"].bound, spec.domain.diameter
    c = alg.client
    public = _public(_far_points(spec, R))
    y = np.stack([np.full(R, 1e6), np.full(R, -1e6)], axis=1)  # far beyond G-Lipschitz
    e = c.encode(0, public, np.zeros((R, spec.param_dim)), None, y)[:, 0]
    np.testing.assert_allclose(np.abs(e), bound - Z_TAIL * c.scale_per_gap * D, rtol=1e-12)
    np.testing.assert_allclose(
        c.noise(0, public, np.zeros((R, spec.param_dim)), None).scale, c.scale_per_gap * D
    )
    msg = c.randomize(0, public, np.zeros((R, spec.param_dim)), None, y, np.random.default_rng(3))
    assert np.all(np.abs(msg["difference"]) <= bound)


@pytest.mark.parametrize(
    "params", [{"mechanism": "laplace"}, {"clip": False}], ids=["laplace", "no-clip"]
)
def test_two_point_declares_no_range_without_a_bounded_report(params: dict[str, Any]) -> None:
    alg, _ = _two_point(2, **params)
    assert alg.output_ranges() == {}


@pytest.mark.parametrize("convex", [False, True])
def test_one_point_output_range_is_the_clipped_value_plus_the_noise_tail(convex: bool) -> None:
    from privbandits.privacy.ranges import Z_TAIL

    R = 20_000
    if convex:
        alg, _ = _reset("ldp-onepoint", R, pb.ConvexLossEnv(d=2), base="fkm")
        X = np.zeros((R, 2))
    else:
        alg, _ = _reset("ldp-onepoint", R, pb.MultiArmedEnv(K=3))
        X = np.broadcast_to(np.eye(3), (R, 3, 3)).copy()
    ranges = alg.output_ranges()
    assert set(ranges) == {"value"}
    bound, c = ranges["value"].bound, alg.client
    public = alg.server.public_state()
    acts = c.choose(0, public, X, None)
    v = np.where(np.arange(R) % 2 == 0, 1e6, -1e6)  # beyond both ends of the range
    v = v[:, None] if convex else v
    e = c.encode(0, public, X, acts, v)[:, 0]
    std = float(alg.calibration.constants.noise_std)
    assert np.abs(e).max() == pytest.approx(bound - Z_TAIL * std, rel=1e-12)
    m = c.randomize(0, public, X, acts, v, np.random.default_rng(4))["value"]
    assert np.all(np.abs(m) <= bound)
    laplace, _ = _reset("ldp-onepoint", 2, pb.MultiArmedEnv(K=3), mechanism="laplace")
    assert laplace.output_ranges() == {}
