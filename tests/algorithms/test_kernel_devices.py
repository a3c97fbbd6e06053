"""The device contract of the compiled local-DP kernels: LDP-OLS, LDP-SGD (Han et al. 2021,
Algorithms 1-2), LDP-UCB (Zheng et al. 2020, Algorithm 5) and LDP-GLOC (Algorithm 3).

Against a dishonest server (the documentation's Concepts: trust models, threat model):

* **online-path noise**: on the client that runs (``alg.client``), ``randomize - encode`` over many
  users in one call has mean 0 and the declared per-coordinate variance, within z-bounds of the
  sample size (Bonferroni over the coordinates and both moments at family-wise level
  :data:`ALPHA`); the same check fails on a device whose compiled step adds half the noise (or, for
  the l2-ball, runs at twice the level) while declaring the calibrated noise;
* **adversarial server**: for public states drawn from the declared space (random and extreme
  members, hypothesis) and neighbouring users with contexts on the norm bound and rewards far
  outside the range, the whitened distance of the encoded messages never exceeds the accounted
  sensitivity; and the bound is reached (a declared bound far above the truth would be no check);
* **every device clip at, inside and beyond its bound**: the output equals the bound;
* **memory-safe inputs**: malformed contexts, arms, rewards, round indices and public states give a
  clear error before any compiled step runs (in a subprocess, so a crash fails the test), and a
  malformed message is refused by the server.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import warnings
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

import privbandits as pb
from privbandits.algorithms.base import KernelClient, LocalAlgorithm
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.core.errors import DataBoundError, TrustBoundaryError, ValidationError
from privbandits.core.links import get_link
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.public_space import PublicStateError, dims_of
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.calibration import l2_ball_radius
from privbandits.privacy.device import whitened_distance

#: Family-wise level of each statistical check.
ALPHA = 1e-4
#: Users of one noise check (one call).
N_NOISE = 40_000
#: Problem size: small, with d >= 2 so that the symmetric-matrix sensitivities are attained.
D, K, T = 3, 3, 200


@dataclass(frozen=True)
class Case:
    """One device: registered algorithm, parameters, setting, link, the rounds to test."""

    name: str
    params: tuple[tuple[str, Any], ...]
    setting: str = "single"
    link: str = "identity"
    rounds: tuple[int, ...] = (5,)
    context_bound: float = 1.0

    @property
    def id(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in self.params)
        return f"{self.name}[{self.setting},{self.link}{',' + extra if extra else ''}]"


#: Multi-parameter Han et al. cases run s0 = 2 (warm-up rounds 0..5, main phase from round 6).
CASES = (
    Case("ldp-ols", ()),
    Case("ldp-ols", (("s0", 2),), "multi", rounds=(1, 10)),
    Case("ldp-ols", (("preset", "paper"), ("s0", 2)), "multi", rounds=(1, 10)),
    Case("ldp-sgd", ()),
    Case("ldp-sgd", (("preset", "paper"),), link="logistic"),
    Case("ldp-sgd", (("s0", 2),), "multi", link="poisson", rounds=(1, 10)),
    Case("ldp-sgd", (("preset", "authors_code"), ("s0", 2)), "multi", rounds=(1, 10)),
    Case("ldp-ucb", ()),
    Case("ldp-ucb", (), "multi"),
    Case("ldp-ucb", (("mechanism", "laplace"),)),
    Case("ldp-ucb", (("preset", "paper"),), context_bound=3.0),
    Case("ldp-gloc", ()),
    Case("ldp-gloc", (), "multi", link="logistic"),
    Case("ldp-gloc", (("preset", "authors_code"),)),
    Case("ldp-gloc", (("mechanism", "laplace"),), link="probit"),
    Case("ldp-gloc", (("clip_grad", False), ("gaussian_calibration", "classic"))),
)
IDS = [c.id for c in CASES]


def make_spec(case: Case) -> EnvSpec:
    return EnvSpec(
        d=D,
        K=K,
        setting=case.setting,
        horizon=T,
        link=get_link(case.link),
        context_bound=case.context_bound,
        reward_range=(-1.0, 1.0),
        reward_bound=1.0,
    )


@cache
def device(case: Case) -> tuple[LocalAlgorithm, EnvSpec]:
    """The algorithm reset on the case's problem (the client serves any number of users: the
    compiled parameters do not depend on R, the public state is validated for the users given)."""
    alg = pb.make(case.name, **dict(case.params))
    spec = make_spec(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        alg.reset(spec, 1, make_streams(0))
    assert isinstance(alg, LocalAlgorithm)
    return alg, spec


def users(
    spec: EnvSpec, n: int, rng: np.random.Generator, *, in_range: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` users: contexts on the norm bound (random directions), rewards in or far outside the range."""
    shape = (n, spec.d) if spec.setting == "multi" else (n, spec.K, spec.d)
    X = rng.standard_normal(shape)
    X *= spec.context_bound * (1 - 1e-12) / np.linalg.norm(X, axis=-1, keepdims=True)
    lo, hi = spec.reward_range
    far = np.array([hi + 1e3 * (hi - lo), lo - 1e3 * (hi - lo), lo, hi, 0.5 * (lo + hi)])
    y = rng.uniform(lo, hi, n) if in_range else rng.choice(far, n)
    return X, y


def arms(
    client: KernelClient,
    t: int,
    public: PublicState,
    X: np.ndarray,
    rng: np.random.Generator,
    spec: EnvSpec,
) -> np.ndarray:
    """Any arm in the main phase (the arm depends on the user's context); the public warm-up arm
    (the device's own choice) in the warm-up of Algorithm 2."""
    warm = getattr(client._params, "n_warmup", 0)
    if t < warm:
        return client.choose(t, public, X, rng)
    return rng.integers(0, spec.K, X.shape[0])


def flat(msg: PrivatizedMessage) -> np.ndarray:
    return np.concatenate(
        [np.asarray(v, dtype=float).reshape(v.shape[0], -1) for v in msg.payload.values()], axis=1
    )


# -- online-path noise --------------------------------------------------------------------------
def check_declared_noise(
    client: KernelClient, spec: EnvSpec, t: int, seed: int, n: int = N_NOISE
) -> None:
    """``randomize - encode`` has the declared mean (0) and per-coordinate variance (module
    docstring); entries declared exact agree exactly.  Rewards half outside the range: the clip of
    ``encode`` must be the clip of ``randomize``."""
    rng = np.random.default_rng(seed)
    space = client.public_space()
    assert space is not None
    public = space.draw(dims_of(spec, n), rng)
    X, y = users(spec, n, rng)
    a = arms(client, t, public, X, rng, spec)
    e = client.encode(t, public, X, a, y)
    noise = client.noise(t, public, X, a, rewards=y)
    diff = flat(client.randomize(t, public, X, a, y, np.random.default_rng(seed + 1))) - e
    var = np.asarray(noise.variance, dtype=float)
    assert var.shape == e.shape == diff.shape
    exact = var <= 0
    assert np.all(np.abs(diff[exact]) <= 1e-12 * (1 + np.abs(e[exact]))), (
        "an entry declared exact carries noise"
    )
    cols = ~exact.any(axis=0)
    z = diff[:, cols] / np.sqrt(var[:, cols])
    m = int(cols.sum())
    q = float(stats.norm.isf(ALPHA / (4 * m)))
    mean = z.mean(axis=0)
    assert np.all(np.abs(mean) <= q / math.sqrt(n)), (
        f"biased noise: {mean[np.abs(mean) > q / math.sqrt(n)][:4]}"
    )
    s2 = z.var(axis=0, ddof=1)
    m4 = ((z - mean) ** 4).mean(axis=0)
    se = np.sqrt(np.maximum(m4 - s2**2, 1e-12) / n)
    bad = np.abs(s2 - 1.0) > q * se
    assert not bad.any(), (
        f"variance {s2[bad][:4]} x the declared one on {int(bad.sum())} of {m} coordinates"
    )


def under_noised(alg: LocalAlgorithm, spec: EnvSpec) -> KernelClient:
    """A client of the same kernel whose compiled step adds half the noise (the l2-ball: runs at
    twice the level, with its unbiased radius) while declaring the calibrated noise."""
    assert alg.kernel is not None
    client = KernelClient(alg.kernel, spec)
    p = client._params
    if alg.name == "ldp-ols":
        client._params = p._replace(
            s_W=p.s_W / 2, s_u=p.s_u / 2, s_W_warm=p.s_W_warm / 2, s_u_warm=p.s_u_warm / 2
        )
    elif alg.name == "ldp-sgd":
        d, k = p.d, p.K
        client._params = p._replace(
            epsilon=2 * p.epsilon,
            radius=l2_ball_radius(2 * p.epsilon, d, p.R),
            epsilon_warm=2 * p.epsilon_warm,
            radius_warm=l2_ball_radius(2 * p.epsilon_warm, d, p.R),
            epsilon_joint=2 * p.epsilon_joint,
            radius_joint=p.radius_joint
            * l2_ball_radius(2 * p.epsilon_joint, d * k, p.R)
            / l2_ball_radius(p.epsilon_joint, d * k, p.R),
            s_W_warm=p.s_W_warm / 2,
            s_u_warm=p.s_u_warm / 2,
        )
    else:
        c = list(p[1])
        for i in (5, 6, 7) if alg.name == "ldp-gloc" else (5, 6):
            c[i] = c[i] / 2
        client._params = (p[0], tuple(c), *p[2:])
    return client


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_online_noise_is_declared(case: Case) -> None:
    alg, spec = device(case)
    for i, t in enumerate(case.rounds):
        check_declared_noise(alg.client, spec, t, seed=100 + i)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_online_noise_check_flags_half_noise(case: Case) -> None:
    """The check above can fail: on every case and phase it flags the under-noised device."""
    alg, spec = device(case)
    for i, t in enumerate(case.rounds):
        with pytest.raises(AssertionError):
            check_declared_noise(under_noised(alg, spec), spec, t, seed=200 + i)


def test_noise_without_rewards_bounds_the_l2_ball_variance() -> None:
    """Without the rewards the l2-ball declares the variance's upper bound ``radius^2 / d``."""
    alg, spec = device(CASES[3])
    rng = np.random.default_rng(3)
    public = alg.client.public_space().draw(dims_of(spec, 8), rng)
    X, y = users(spec, 8, rng)
    a = rng.integers(0, K, 8)
    loose, exact = alg.client.noise(0, public, X, a), alg.client.noise(0, public, X, a, rewards=y)
    r = alg.client._params.radius
    assert np.allclose(loose.variance, r * r / D)
    assert np.all(exact.variance <= loose.variance) and np.array_equal(loose.scale, exact.scale)


# -- the adversarial server ----------------------------------------------------------------------
def reached(
    case: Case, seed: int, extreme: bool, t: int, n: int = 16, honest: bool = False
) -> tuple[float, float]:
    """Largest whitened distance over ``n`` neighbouring pairs at a public state of the declared
    space, and the accounted bound."""
    alg, spec = device(case)
    client = alg.client
    rng = np.random.default_rng(seed)
    space = client.public_space()
    assert space is not None
    dims = dims_of(spec, n)
    if honest:
        public = PublicState(
            {
                k: np.repeat(np.asarray(v)[:1], n, axis=0)
                for k, v in alg.server.public_state().items()
            }
        )
    else:
        public = space.draw(dims, rng, extreme)
    in_range = dict(case.params).get("clip") is False  # clip=False: conditional on data in range
    X0, y0 = users(spec, n, rng, in_range=in_range)
    X1, y1 = users(spec, n, rng, in_range=in_range)
    if (
        spec.setting == "single"
    ):  # some pairs share every arm's context, or differ only in the reward
        X1[: n // 4] = X0[: n // 4]
    a0 = arms(client, t, public, X0, rng, spec)
    a1 = (
        a0 if t < getattr(client._params, "n_warmup", 0) else arms(client, t, public, X1, rng, spec)
    )
    e0, e1 = client.encode(t, public, X0, a0, y0), client.encode(t, public, X1, a1, y1)
    s0, s1 = client.noise(t, public, X0, a0).scale, client.noise(t, public, X1, a1).scale
    sens = client.sensitivity()
    dist = np.maximum(
        whitened_distance(e0, e1, s0, sens.norm), whitened_distance(e0, e1, s1, sens.norm)
    )
    assert np.all(np.isfinite(e0)) and np.all(np.isfinite(e1))
    for e in (e0, e1):
        assert_symmetric_fields(client, e)
    return float(dist.max()), sens.bound


def assert_symmetric_fields(client: KernelClient, e: np.ndarray) -> None:
    """The matrix fields (noised on the upper triangle and mirrored) are symmetric before the noise:
    an entry below the diagonal that differs from its mirror is released unaccounted."""
    fields = client._message.split(e)
    for name, _ in client._message.fields:
        if name in ("M", "V"):
            v = fields[name]
            np.testing.assert_array_equal(
                v, np.swapaxes(v, -1, -2), err_msg=f"field {name} is not symmetric"
            )


@pytest.mark.parametrize("case", CASES, ids=IDS)
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(seed=st.integers(0, 2**32 - 1), extreme=st.booleans(), phase=st.integers(0, 1))
def test_sensitivity_holds_for_every_public_state(
    case: Case, seed: int, extreme: bool, phase: int
) -> None:
    t = case.rounds[min(phase, len(case.rounds) - 1)]
    dist, bound = reached(case, seed, extreme, t)
    assert dist <= bound * (1 + 1e-9), (
        f"whitened distance {dist:.6g} above the accounted {bound:.6g}"
    )


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sensitivity_bound_is_reached(case: Case) -> None:
    """The accounted bound is (nearly) attained by some public state and pair: a declared bound far
    above the truth would make the adversarial check vacuous."""
    best, bound = 0.0, 1.0
    for t in case.rounds:
        for seed in range(12):
            for extreme in (False, True):
                d, bound = reached(case, seed, extreme, t, n=256)
                best = max(best, d)
        best = max(best, reached(case, 99, False, t, n=256, honest=True)[0])
    assert best <= bound * (1 + 1e-9)
    assert best >= 0.5 * bound, (
        f"reached only {best / bound:.3f} of the accounted sensitivity {bound:.6g}"
    )


@pytest.mark.slow
def test_honest_runs_stay_in_the_declared_space() -> None:
    """Every broadcast of a reference run is checked on the device (engine/protocol): honest
    servers publish members of the declared space, presets and settings included (the
    algorithms' own suites run more configurations through the same check)."""
    for case in CASES:
        alg = pb.make(case.name, **dict(case.params))
        env = pb.SyntheticEnv(d=D, K=K, setting=case.setting, link=case.link)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)
            pb.simulate(alg, env, 30, replications=2, seed=1, engine="reference")
        space = alg.client.public_space()
        assert space is not None
        space.validate(alg.server.public_state(), dims_of(alg.spec, 2))


# -- every device clip, at, inside and beyond its bound -----------------------------------------------
def _one(case: Case) -> tuple[KernelClient, EnvSpec, PublicState]:
    alg, spec = device(case)
    return (
        alg.client,
        spec,
        PublicState({k: np.asarray(v)[:1].copy() for k, v in alg.server.public_state().items()}),
    )


def _unit_contexts(spec: EnvSpec, norm: float) -> np.ndarray:
    x = np.zeros(spec.d)
    x[0], x[1] = 0.6, 0.8
    x *= norm
    return (x[None] if spec.setting == "multi" else np.tile(x, (1, spec.K, 1))), x


@pytest.mark.parametrize("name", ["ldp-ols", "ldp-ucb", "ldp-gloc"])
def test_reward_clip(name: str) -> None:
    """The reward enters ``u = y x`` (OLS, UCB; GLOC's gradient) clipped into the range: beyond
    the range it equals the bound, inside it is unchanged."""
    case = next(c for c in CASES if c.name == name and c.setting == "single" and not c.params)
    client, spec, public = _one(case)
    X, x = _unit_contexts(spec, 1.0)
    dd = D * D
    for y, want in (
        (1e9, 1.0),
        (1.0 + 1e-9, 1.0),
        (1.0, 1.0),
        (0.999, 0.999),
        (-0.999, -0.999),
        (-1e9, -1.0),
    ):
        e = client.encode(0, public, X, np.array([0]), np.array([y]))[0]
        if name == "ldp-gloc":  # the gradient (mu(z) - y) x at z = 0: identity link, theta_hat = 0
            np.testing.assert_allclose(
                e[dd + D :], min(1.0, abs(want)) * np.sign(-want) * x, rtol=1e-12
            )
        else:
            np.testing.assert_allclose(e[dd : dd + D], want * x, rtol=1e-12)
            np.testing.assert_allclose(e[:dd], np.outer(x, x).ravel(), rtol=1e-12)


def test_context_clip_of_the_paper_presets() -> None:
    """LDP-UCB's paper preset assumes ``||x|| <= 1``: a context of norm 3 (within the problem's
    bound, so the device accepts it) enters the message clipped to norm 1."""
    case = next(c for c in CASES if c.context_bound == 3.0)
    client, spec, public = _one(case)
    for norm in (3.0, 1.5, 1.0, 0.5):
        X, x = _unit_contexts(spec, norm)
        e = client.encode(0, public, X, np.array([1]), np.array([5.0]))[0]
        xc = x * min(1.0, 1.0 / norm)
        np.testing.assert_allclose(e[: D * D], np.outer(xc, xc).ravel(), rtol=1e-12)
        np.testing.assert_allclose(e[D * D :], 2.0 * xc, rtol=1e-12)  # rewards clipped to [-2, 2]


def test_contexts_above_the_bound_are_refused() -> None:
    for case in (CASES[0], CASES[3], CASES[7], CASES[11]):
        client, spec, public = _one(case)
        X, _ = _unit_contexts(spec, spec.context_bound * (1 + 1e-6))
        with pytest.raises(DataBoundError):
            client.encode(0, public, X, np.array([0]), np.array([0.0]))
        with pytest.raises(DataBoundError):
            client.randomize(0, public, X, np.array([0]), np.array([0.0]), np.random.default_rng(0))
        X, _ = _unit_contexts(spec, spec.context_bound)
        client.encode(0, public, X, np.array([0]), np.array([0.0]))


def _norm_bound(client: KernelClient, name: str) -> float:
    space = client.public_space()
    assert space is not None
    field = next(f for f in space.fields if f.name == name)
    assert field.norm is not None
    return field.norm


@pytest.mark.parametrize("setting", ["single", "multi"])
@pytest.mark.parametrize(
    "link,preset", [("identity", "strict"), ("identity", "paper"), ("poisson", "paper")]
)
def test_sgd_gradient_clip_whatever_theta(setting: str, link: str, preset: str) -> None:
    """LDP-SGD's gradient at the server's theta: the residual ``mu(x^T theta) - y`` is clipped so
    that ``||g|| = R`` at and beyond the bound (a theta far out, an overflowing link), unchanged
    inside.  ``strict`` projects theta onto the unit ball (the device refuses more); ``paper`` does
    not, so any theta up to ESTIMATE_BOUND reaches the device."""
    alg, spec = device(Case("ldp-sgd", (("s0", 2), ("preset", preset)), setting, link=link))
    client = alg.client
    R_g, top = client._params.R, _norm_bound(client, "theta")
    t = 10 if setting == "multi" else 0
    X, x = _unit_contexts(spec, 1.0)
    names = list(alg.server.public_state())
    shape = np.asarray(alg.server.public_state()["theta"])[:1].shape
    lo = D if setting == "multi" else 0  # arm 1's slot
    for scale, y in (
        (top, -1.0),
        (min(top, 1e3), -1.0),
        (-min(top, 1e3), 1.0),
        (0.3, 0.2),
        (0.0, 1e9),
    ):
        theta = np.zeros(shape)
        theta[..., :] = scale * x
        public = PublicState({k: (theta if k == "theta" else np.zeros(shape)) for k in names})
        e = client.encode(t, public, X, np.array([1]), np.array([y]))[0]
        g = e[lo : lo + D]
        with np.errstate(over="ignore"):
            resid = float(get_link(link).mu(np.array(scale))) - float(np.clip(y, -1.0, 1.0))
        if abs(resid) > R_g:  # beyond the bound (||x|| = 1): the gradient's norm is the bound
            assert np.linalg.norm(g) == pytest.approx(R_g, rel=1e-12)
            np.testing.assert_allclose(g, np.sign(resid) * R_g * x, rtol=1e-12)
        else:
            np.testing.assert_allclose(g, resid * x, rtol=1e-9)
    # a context of norm 0 gives a zero gradient, whatever theta
    public = PublicState({k: np.full(shape, top / math.sqrt(D)) for k in names})
    e = client.encode(t, public, np.zeros_like(X), np.array([1]), np.array([1e9]))
    assert np.all(e == 0.0)


def test_gloc_relabel_and_gradient_clips_whatever_theta_hat() -> None:
    """LDP-GLOC reads ``z = x^T theta_hat`` from the server's iterate: ``z`` is clipped to
    ``+-z_bound`` (``u = z x`` at the bound) and the gradient to norm ``G`` -- also with ``clip=False``
    (which concerns the user's own data only) and without the projection (authors_code, where the
    device accepts any iterate up to ESTIMATE_BOUND)."""
    for params in (
        (),
        (("clip", False),),
        (("preset", "authors_code"),),
        (("preset", "authors_code"), ("clip", False)),
    ):
        alg, spec = device(Case("ldp-gloc", params))
        client = alg.client
        c = client._params[1]
        z_bound, G, top = c[9], c[11], _norm_bound(client, "theta_hat")
        X, x = _unit_contexts(spec, 1.0)
        honest = {k: np.asarray(v)[:1].copy() for k, v in alg.server.public_state().items()}
        for h, y in (
            (top, -1.0),
            (min(top, 1e6), -1.0),
            (0.5, -1.0),
            (-min(top, 1e6), 1.0),
            (-0.2, 0.0),
        ):
            public = PublicState({**honest, "theta_hat": (h * x)[None]})
            e = client.encode(0, public, X, np.array([2]), np.array([y]))[0]
            z = float(np.clip(h, -z_bound, z_bound))
            np.testing.assert_allclose(e[D * D : D * D + D], z * x, rtol=1e-12)
            g = e[D * D + D :]
            want = ((z if c[12] else h) - y) * x  # identity link
            if np.linalg.norm(want) > G:
                assert np.linalg.norm(g) == pytest.approx(G, rel=1e-12)
                want = want * G / np.linalg.norm(want)
            np.testing.assert_allclose(g, want, rtol=1e-9)


# -- memory safety: malformed inputs never reach a compiled step ------------------------------------
_SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import privbandits as pb
    from privbandits.core.errors import PrivbanditsError
    from privbandits.core.rng import make_streams
    from privbandits.core.spec import EnvSpec
    from privbandits.engine import protocol
    warnings.simplefilter("ignore")
    def run_case(name, setting):
        d, K, R = 3, 3, 4
        alg = pb.make(name, **({"s0": 2} if name in ("ldp-ols", "ldp-sgd") and setting == "multi" else {}))
        spec = EnvSpec(d=d, K=K, setting=setting, horizon=100)
        alg.reset(spec, R, make_streams(0))
        c, pub = alg.client, alg.server.public_state()
        rng = np.random.default_rng(0)
        good = np.full((R, d) if setting == "multi" else (R, K, d), 0.5 / np.sqrt(d))
        a, y = np.zeros(R, dtype=np.int64), np.zeros(R)
        wide = np.full(good.shape[:-1] + (d + 1,), 0.1)
        flat_ctx = np.full((R, d), 0.1)
        cases = {
            "contexts with d+1 features": (wide, a, y),
            "action K": (good, np.full(R, K), y),
            "action -1": (good, np.full(R, -1), y),
            "rewards shorter than R": (good, a, y[:-1]),
            "float actions": (good, a + 0.5, y),
        }
        if setting == "single":
            cases["(R, d) contexts in the single-parameter setting"] = (flat_ctx, a, y)
        out = {}
        def run(key, fn):
            try:
                fn()
                out[key] = "no error"
            except PrivbanditsError as exc:
                out[key] = type(exc).__name__ + ": " + str(exc)[:120]
        for what, (X, A, Y) in cases.items():
            run("choose/" + what, lambda: c.choose(0, pub, X, rng)) if what.startswith(("contexts", "(R")) else None
            run("randomize/" + what, lambda: c.randomize(0, pub, X, A, Y, rng))
            run("encode/" + what, lambda: c.encode(0, pub, X, A, Y))
            run("noise/" + what, lambda: c.noise(0, pub, X, A, rewards=Y))
            run("protocol.device_randomize/" + what,
                lambda: protocol.device_randomize(c, spec, 0, pub, X, A, Y, rng))
            if what.startswith(("contexts", "(R")):
                run("protocol.device_choose/" + what, lambda: protocol.device_choose(c, spec, 0, pub, X, rng))
        run("randomize/round -1", lambda: c.randomize(-1, pub, good, a, y, rng))
        bad = dict(pub)
        first = next(iter(bad))
        bad[first] = np.asarray(bad[first])[..., :-1]
        from privbandits.core.messages import PublicState
        run("randomize/public field one entry short", lambda: c.randomize(0, PublicState(bad), good, a, y, rng))
        run("choose/public field one entry short", lambda: c.choose(0, PublicState(bad), good, rng))
        bad = dict(pub)
        bad["extra"] = np.zeros(R)
        run("randomize/unknown public field", lambda: c.randomize(0, PublicState(bad), good, a, y, rng))
        msg = c.randomize(0, pub, good, a, y, rng)
        payload = dict(msg.payload)
        k0 = next(iter(payload))
        short = dict(payload, **{k0: np.asarray(payload[k0])[:, :-1]})
        run("server/message field one entry short",
            lambda: alg.server.receive(0, type(msg)(short, msg.mechanism)))
        nan = dict(payload, **{k0: np.full(np.shape(payload[k0]), np.nan)})
        run("server/message with NaN", lambda: alg.server.receive(0, type(msg)(nan, msg.mechanism)))
        return out
    results = {}
    for arg in sys.argv[1:]:
        name, setting = arg.split(':')
        print('case', arg, file=sys.stderr, flush=True)  # the case a crash died on
        results[arg] = run_case(name, setting)
    print(json.dumps(results))
""")

MEMORY_CASES = [
    (n, s) for n in ("ldp-ols", "ldp-sgd", "ldp-ucb", "ldp-gloc") for s in ("single", "multi")
]


@cache
def memory_results() -> dict[str, dict[str, str]]:
    """Every case of every device in one worker process (a crash fails every test, naming the case)."""
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *(f"{n}:{s}" for n, s in MEMORY_CASES)],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, (
        f"the device process died (exit {proc.returncode}): {proc.stderr[-2000:]}"
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name,setting", MEMORY_CASES, ids=[f"{n}-{s}" for n, s in MEMORY_CASES])
def test_malformed_inputs_give_a_clear_error(name: str, setting: str) -> None:
    """Issue 21's reproductions (d + 1 features, action K, short rewards, ``(R, d)`` contexts in the
    single-parameter setting) and more, through the client and through engine/protocol: each is
    a clear error naming what was wrong, no crash (the subprocess would die), no report."""
    out = memory_results()[f"{name}:{setting}"]
    assert out, "no case ran"
    for key, result in out.items():
        if key.startswith("server/") or "public" in key:
            assert result.startswith(("TrustBoundaryError", "PublicStateError")), (key, result)
        else:
            # a ValidationError or one of its subclasses (a bad round index is a ParameterError)
            assert result.startswith(("ValidationError", "DataBoundError", "ParameterError")), (
                key,
                result,
            )
        assert result != "no error", key
    assert any("d+1" in k for k in out) and any("action K" in k for k in out)
    assert (
        "shape (2,)" in out["randomize/rewards shorter than R"]
        or "shape (3,)" in out["randomize/rewards shorter than R"]
    )


def test_public_state_errors_are_trust_boundary_errors() -> None:
    assert issubclass(PublicStateError, TrustBoundaryError)
    assert issubclass(DataBoundError, ValidationError)


def test_ucb_without_clip_is_conditional_on_the_data() -> None:
    """``clip=False`` (LDP-UCB) releases the user's own reward unclipped: its guarantee is stated as
    conditional on data within the declared bounds (and the device still refuses contexts above
    the bound); nothing the server sends enters the message."""
    alg, spec = device(Case("ldp-ucb", (("clip", False),)))
    assert "clip=False: conditional on data within the declared bounds" in alg.guarantee.notes
    client, _, public = _one(Case("ldp-ucb", (("clip", False),)))
    X, x = _unit_contexts(spec, 1.0)
    e = client.encode(0, public, X, np.array([0]), np.array([7.0]))[0]
    np.testing.assert_allclose(e[D * D :], 7.0 * x, rtol=1e-12)
    assert 7.0 > alg.calibration.resolved["reward_hi"]  # beyond what the accountant assumed
