"""Han et al. (2021): presets, randomizers and estimators (spec han2021-ldp-glb.md, section 7, items
1-8).

The randomizers are exercised through the clients of the compiled kernels (one call privatizes
``n`` users at once, as ``n`` replications), i.e. the exact user-side code path including clipping;
the samplers themselves through a small compiled loop.

Statistical thresholds: a sample mean of n i.i.d. draws with std s has standard error s / sqrt(n);
we accept |mean - target| < 5 se (false-alarm probability < 1e-6 per check).  The sample std of n
Gaussian draws has relative standard error 1 / sqrt(2 n); a proportion p has se sqrt(p (1-p) / n).
"""

from __future__ import annotations

import math
import warnings

import numba as nb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.algorithms.ldp_glb import LDPOLS, LDPSGD
from privbandits.algorithms.ldp_glb.calibration import (
    default_s0,
    ols_noise,
    ols_shift_constant,
    sgd_defaults,
    sigma_code,
    sigma_priv,
    sigma_strict,
)
from privbandits.algorithms.ldp_glb.estimators import (
    ols_accumulate,
    ols_solve,
    sgd_step,
    solver_scratch,
    step_size,
)
from privbandits.core.errors import ValidationError
from privbandits.core.links import LOGISTIC
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.calibration import gaussian_sigma_analytic, l2_ball_radius
from privbandits.privacy.samplers import add_gaussian, add_symmetric_gaussian, l2_ball

# spec 2.4 reference table: (eps, delta) -> (paper sigma_priv, strict sigma', code sigma)
REFERENCE = {
    (1.0, 0.01): (6.21502, 6.64618, 19.93854),
    (5.0, 0.01): (1.24300, 1.32924, 3.98771),
    (1.0, 0.1): (4.49509, 5.07454, 15.22363),
    (5.0, 0.1): (0.89902, 1.01491, 3.04473),
    (0.5, 0.01): (12.43005, 13.29236, 39.87707),
}


def _client(alg, spec: EnvSpec, n: int, seed: int = 0):  # type: ignore[no-untyped-def]
    """Reset ``alg`` for ``n`` users (replications); return its client and public state."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        alg.reset(spec, n, make_streams(seed))
    return alg.client, alg.server.public_state()


# ------------------------------------------------------------------------------------------------
# presets: reference numbers
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("level", sorted(REFERENCE))
def test_gaussian_multipliers_match_spec_table(level: tuple[float, float]) -> None:
    eps, delta = level
    paper, strict, code = REFERENCE[level]
    assert sigma_priv(eps, delta) == pytest.approx(paper, abs=1e-5)
    assert sigma_strict(eps, delta) == pytest.approx(strict, abs=1e-5)
    assert sigma_code(eps, delta) == pytest.approx(code, abs=1e-5)


@pytest.mark.parametrize("level", sorted(REFERENCE))
def test_ols_noise_scales_per_preset(level: tuple[float, float]) -> None:
    """Spec 2.4: classic strict s_W = s_u = 2 sigma' (raised to the analytic multiplier only where
    the classic one is not provable); paper 2 sigma_priv and sigma_priv; code sigma_code.  The
    default strict calibration is the analytic one: a common multiplier 1.06066 sigma_a(eps, delta).
    """
    eps, delta = level
    paper, strict, code = REFERENCE[level]
    s = ols_noise("strict", "classic", eps, delta)
    part = max(strict, gaussian_sigma_analytic(eps / 2, delta / 2))
    assert (s.s_W, s.s_u) == pytest.approx((2 * part, 2 * part), abs=2e-5)
    p = ols_noise("paper", "classic", eps, delta)
    assert (p.s_W, p.s_u) == pytest.approx((2 * paper, paper), abs=2e-5)
    c = ols_noise("authors_code", "classic", eps, delta)
    assert (c.s_W, c.s_u) == pytest.approx((code, code), abs=2e-5)
    a = ols_noise("strict", "analytic", eps, delta)
    sig = math.sqrt(4.5) / 2 * gaussian_sigma_analytic(eps, delta)
    assert (a.s_W, a.s_u) == pytest.approx((2 * sig, 2 * sig), rel=1e-9)
    assert a.s_W < s.s_W  # the tight calibration adds less noise


def test_ols_noise_scales_with_bounds() -> None:
    """strict: s_W = 2 C_B^2 sigma, s_u = 2 c_r C_B sigma; paper: 2 C_B sigma, C_B c_r sigma; code
    ignores the bounds."""
    sp = sigma_strict(1.0, 0.01)
    s = ols_noise("strict", "classic", 1.0, 0.01, context_bound=2.0, reward_bound=3.0)
    assert (s.s_W, s.s_u) == pytest.approx((2 * 4 * sp, 2 * 3 * 2 * sp))
    a = ols_noise("strict", "analytic", 1.0, 0.01, context_bound=2.0, reward_bound=3.0)
    assert a.s_u / a.s_W == pytest.approx(3.0 / 2.0)
    p = ols_noise("paper", "classic", 1.0, 0.01, context_bound=2.0, reward_bound=3.0)
    assert (p.s_W, p.s_u) == pytest.approx((2 * 2 * sigma_priv(1, 0.01), 6 * sigma_priv(1, 0.01)))
    c = ols_noise("authors_code", "classic", 1.0, 0.01, context_bound=2.0, reward_bound=3.0)
    assert c.s_W == c.s_u == pytest.approx(sigma_code(1.0, 0.01))


def test_multi_param_per_arm_multiplier() -> None:
    """Spec 2.6: sigma'_arm = 4 sqrt(2 ln(5/delta))/eps = strict multiplier at (eps/2, delta/2)."""
    assert sigma_strict(0.5, 0.05) == pytest.approx(11.18860, abs=1e-5)
    assert sigma_strict(2.5, 0.05) == pytest.approx(2.23772, abs=1e-5)
    arm = ols_noise("strict", "classic", 1.0, 0.1, per_arm_half=True)
    assert arm.sigma_unit == pytest.approx(11.18860, abs=1e-5)
    # the analytic calibration needs no split: the per-arm noise is the single-message noise
    assert ols_noise("strict", "analytic", 1.0, 0.1, per_arm_half=True) == ols_noise(
        "strict", "analytic", 1.0, 0.1
    )


def test_analytic_calibration_is_strict_only() -> None:
    with pytest.raises(ValidationError, match="gaussian_calibration"):
        ols_noise("paper", "analytic", 1.0, 0.01)
    with pytest.raises(ValidationError, match="gaussian_calibration"):
        LDPOLS(preset="paper", gaussian_calibration="analytic")


def test_shift_constant_reference_values() -> None:
    """Spec 7.7: c_tilde(eps=1, delta=0.01, d=2, T=1e6, alpha=0.1) = 488.244 (97.649 at eps=5)."""
    assert ols_shift_constant(sigma_priv(1, 0.01), 2, 10**6, 0.1) == pytest.approx(
        488.244, abs=1e-3
    )
    assert ols_shift_constant(sigma_priv(5, 0.01), 2, 10**6, 0.1) == pytest.approx(97.649, abs=1e-3)
    k3 = ols_shift_constant(1.0, 2, 10**6, 0.1, K=3)  # multi-parameter (Thm 4.1): ln(2 T K / alpha)
    assert k3 == pytest.approx(2 * (4 * math.sqrt(2) + 2 * math.log(2 * 3e6 / 0.1)))


def test_shift_is_resolved_from_the_calibration() -> None:
    """c_shift = shift_scale * c_tilde with the preset's sigma (paper: sigma_priv); authors_code
    single-parameter uses no shift (spec 8.19)."""
    spec = EnvSpec(d=2, K=10, horizon=10**6)
    res = LDPOLS(preset="paper").calibrate(spec).resolved  # calibrate is pure; reset() warns
    assert res["c_tilde"] == pytest.approx(488.244, abs=1e-3) and res["c_shift"] == res["c_tilde"]
    assert LDPOLS(preset="authors_code").calibrate(spec).resolved["c_shift"] == 0.0
    half = LDPOLS(shift_scale=0.5).calibrate(spec).resolved
    assert half["c_shift"] == pytest.approx(0.5 * half["c_tilde"])
    assert half["sigma_unit"] == pytest.approx(half["s_W"] / 2)


def test_sgd_defaults_per_preset() -> None:
    s = sgd_defaults("strict", "single", "identity", 1.0, 1.0)
    assert (s["grad_bound"], s["eta0"], s["t0"], s["init"], s["ridge"]) == (
        2.0,
        5.0,
        1.0,
        "zero",
        0.0,
    )
    assert (
        not s["half_arm_level"]
        and sgd_defaults("paper", "multi", "identity", 1.0, 1.0)["half_arm_level"]
    )
    c = sgd_defaults("authors_code", "single", "logistic", 1.0, 1.0)
    assert (c["grad_bound"], c["init"], c["ridge"]) == (1.0, "random_unit", 0.05)
    assert sgd_defaults("authors_code", "single", "identity", 1.0, 1.0)["ridge"] == 0.0
    m = sgd_defaults("authors_code", "multi", "identity", 1.0, 1.0)
    assert (m["sgd_warmup"], m["synthetic_update"], m["joint_radius"], m["ridge"]) == (
        "ols",
        "joint",
        "d",
        0.05,
    )


def test_default_warmup_length() -> None:
    assert default_s0(10**6, 3) == 1000
    assert default_s0(2000, 3) == 66
    assert default_s0(5, 3) == 1


# ------------------------------------------------------------------------------------------------
# OLS randomizer (the client of the compiled kernel)
# ------------------------------------------------------------------------------------------------
OLS_PRESETS = [
    ({}, "strict analytic"),
    ({"gaussian_calibration": "classic"}, "strict classic"),
    ({"preset": "paper"}, "paper"),
    ({"preset": "authors_code"}, "authors_code"),
]


@pytest.mark.parametrize("kwargs, label", OLS_PRESETS)
def test_ols_noise_symmetric_with_calibrated_std(kwargs: dict, label: str) -> None:
    """Spec 7.7: W exactly symmetric; diagonal and off-diagonal entry stds equal s_W and the xi std
    equals s_u of the preset (n = 1e5; 5 relative se = 1.1%)."""
    n, d = 100_000, 3
    alg = LDPOLS(epsilon=1.0, **kwargs)
    client, public = _client(alg, EnvSpec(d=d, K=2, horizon=1000), n)
    s_W, s_u = alg.resolved_params()["s_W"], alg.resolved_params()["s_u"]
    msg = client.randomize(
        0,
        public,
        np.zeros((n, 2, d)),
        np.zeros(n, dtype=int),
        np.zeros(n),
        np.random.default_rng(1),
    )
    W, xi = msg["M"], msg["u"]
    assert np.array_equal(W, np.swapaxes(W, -1, -2))
    tol = 5 / math.sqrt(2 * n)
    for entry in (W[:, 0, 0], W[:, 0, 2], W[:, 1, 2]):
        assert entry.std() == pytest.approx(s_W, rel=tol)
        assert abs(entry.mean()) < 5 * s_W / math.sqrt(n)
    assert xi[:, 1].std() == pytest.approx(s_u, rel=tol)
    assert abs(np.corrcoef(W[:, 0, 1], W[:, 1, 2])[0, 1]) < 5 / math.sqrt(n)  # independent entries


def test_ols_message_unbiased() -> None:
    """E[M] = x x^T, E[u] = r x; 5-se tolerance with se = s / sqrt(n)."""
    n = 200_000
    alg = LDPOLS(epsilon=5.0)
    client, public = _client(alg, EnvSpec(d=2, K=2, horizon=1000), n)
    X = np.zeros((n, 2, 2))
    X[:, 1] = [0.6, -0.8]
    msg = client.randomize(
        0, public, X, np.ones(n, dtype=int), np.full(n, 0.7), np.random.default_rng(2)
    )
    res = alg.resolved_params()
    x = np.array([0.6, -0.8])
    assert np.all(np.abs(msg["M"].mean(0) - np.outer(x, x)) < 5 * res["s_W"] / math.sqrt(n))
    assert np.all(np.abs(msg["u"].mean(0) - 0.7 * x) < 5 * res["s_u"] / math.sqrt(n))


def test_ols_clips_rewards_and_depends_on_data_only_through_the_statistic() -> None:
    """Same noise stream: the payload minus the pure-noise payload is the statistic of the clipped
    data (spec 1.5); a reward of 7 is clipped to c_r = 1."""
    client, public = _client(LDPOLS(), EnvSpec(d=3, K=2, horizon=100), 1)
    x = np.array([0.0, 0.6, -0.8])
    X = np.array([[x, [1.0, 0.0, 0.0]]])
    a = client.randomize(0, public, X, np.array([0]), np.array([7.0]), np.random.default_rng(5))
    b = client.randomize(
        0, public, np.zeros((1, 2, 3)), np.array([0]), np.array([0.0]), np.random.default_rng(5)
    )
    assert np.allclose(a["M"][0] - b["M"][0], np.outer(x, x))
    assert np.allclose(a["u"][0] - b["u"][0], x)


# ------------------------------------------------------------------------------------------------
# the samplers (compiled loop over users, as the kernels call them)
# ------------------------------------------------------------------------------------------------
@nb.njit(cache=True)
def _l2_rows(rng, G, epsilon, bound, radius, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    for k in range(G.shape[0]):
        l2_ball(rng, G[k], epsilon, bound, radius, out[k])


@nb.njit(cache=True)
def _gauss_rows(rng, s_W, s_u, M, u):  # type: ignore[no-untyped-def]  # pragma: no cover
    for k in range(M.shape[0]):
        add_symmetric_gaussian(rng, s_W, M[k])
        add_gaussian(rng, s_u, u[k])


def _l2(g: np.ndarray, eps: float, R: float, seed: int) -> np.ndarray:
    g = np.ascontiguousarray(np.broadcast_to(g, g.shape), dtype=float)
    out = np.empty_like(g)
    _l2_rows(np.random.default_rng(seed), g, eps, R, l2_ball_radius(eps, g.shape[-1], R), out)
    return out


def _unit(rng: np.random.Generator, d: int) -> np.ndarray:
    u = rng.standard_normal(d)
    return u / np.linalg.norm(u)


def test_gaussian_samplers_mean_and_variance(rng: np.random.Generator) -> None:
    """add_symmetric_gaussian / add_gaussian: the added noise has mean 0 (5 se), variance s^2 (the
    sample variance of n normals has relative se sqrt(2/n); 5 se), and W is exactly symmetric."""
    n, d, s_W, s_u = 100_000, 3, 2.5, 0.7
    M, u = np.full((n, d, d), 1.0), np.full((n, d), -1.0)
    _gauss_rows(np.random.default_rng(3), s_W, s_u, M, u)
    assert np.array_equal(M, np.swapaxes(M, -1, -2))
    for noise, s in ((M[:, 0, 1] - 1.0, s_W), (M[:, 2, 2] - 1.0, s_W), (u[:, 0] + 1.0, s_u)):
        assert abs(noise.mean()) < 5 * s / math.sqrt(n)
        assert noise.var() == pytest.approx(s * s, rel=5 * math.sqrt(2 / n))


def test_sgd_radius_reference_values() -> None:
    """Spec 2.5 / 7.1 / 7.8: R = 2, d = 2: 6.79826 at eps = 1, 12.82709 at eps/2 = 0.5; the
    resolved radius of the algorithm is the l2-ball radius at the slot level (R inside once)."""
    assert l2_ball_radius(1.0, 2, 2.0) == pytest.approx(6.79826, abs=1e-5)
    assert l2_ball_radius(0.5, 2, 2.0) == pytest.approx(12.82709, abs=1e-5)
    assert l2_ball_radius(1.0, 1, 1.0) == pytest.approx(2.163953, abs=1e-6)
    assert LDPSGD().calibrate(EnvSpec(d=2, K=3, horizon=100)).resolved["radius"] == pytest.approx(
        6.79826, abs=1e-5
    )
    paper = (
        LDPSGD(preset="paper").calibrate(EnvSpec(d=2, K=3, setting="multi", horizon=100)).resolved
    )
    assert paper["radius"] == pytest.approx(12.82709, abs=1e-5)
    strict = LDPSGD().calibrate(EnvSpec(d=2, K=3, setting="multi", horizon=100)).resolved
    assert strict["epsilon_slot"] == 1.0 and strict["radius"] == pytest.approx(6.79826, abs=1e-5)


@pytest.mark.parametrize("d", [1, 2, 5, 20])
def test_l2_ball_unbiased(d: int, rng: np.random.Generator) -> None:
    """Spec 7.3: ||x|| = 0.6 R, 2e5 draws, mean within 5 se per coordinate, se = r / sqrt(d n)
    (E z_i^2 = r^2 / d for the reflected uniform direction)."""
    n, R, eps = 200_000, 2.0, 1.0
    u = _unit(rng, d)
    z = _l2(np.tile(0.6 * R * u, (n, 1)), eps, R, d)
    se = l2_ball_radius(eps, d, R) / math.sqrt(d * n)
    assert np.all(np.abs(z.mean(0) - 0.6 * R * u) < 5 * se)


@pytest.mark.parametrize("norm_frac, target", [(1.0, 0.731059), (0.5, 0.615529), (0.0, 0.5)])
def test_l2_ball_side_probability(norm_frac: float, target: float) -> None:
    """Spec 7.4: P(Z^T x > 0) = [1 + (1/2 + ||x||/(2R))(e^eps - 1)]/(1 + e^eps); binomial 5-se
    bound."""
    n, R = 200_000, 1.0
    v = np.array([1.0, 0.0, 0.0])
    z = _l2(np.tile(norm_frac * R * v, (n, 1)), 1.0, R, 11)
    p_hat = float((z @ v > 0).mean())
    assert abs(p_hat - target) < 5 * math.sqrt(target * (1 - target) / n)


def test_l2_ball_output_norm_and_clipping(rng: np.random.Generator) -> None:
    """Spec 7.2 and 7.6: ||Z|| = r to 1e-9 (incl. x = 0, ||x|| = R); x and x R/||x|| give identical
    outputs from the same stream (clipped, never rejected)."""
    R, d = 2.0, 4
    g = np.stack([np.zeros(d), R * _unit(rng, d), 7.0 * _unit(rng, d)])
    out = _l2(g, 1.0, R, 3)
    assert np.allclose(np.linalg.norm(out, axis=-1), l2_ball_radius(1.0, d, R), rtol=1e-9)
    big = 5.0 * R * np.stack([_unit(rng, d) for _ in range(50)])
    clipped = big * (R / np.linalg.norm(big, axis=-1, keepdims=True))
    assert np.array_equal(_l2(big, 1.0, R, 9), _l2(clipped, 1.0, R, 9))


def test_l2_ball_at_zero_is_rotation_invariant(rng: np.random.Generator) -> None:
    """Spec 7.5: Psi(0) has mean ~ 0 (5 se, se = r / sqrt(d n)) and P(Z^T v > 0) ~ 1/2 for any v."""
    n, d = 100_000, 3
    z = _l2(np.zeros((n, d)), 1.0, 1.0, 4)
    r = l2_ball_radius(1.0, d, 1.0)
    assert np.all(np.abs(z.mean(0)) < 5 * r / math.sqrt(d * n))
    for v in (np.array([1.0, 0, 0]), _unit(rng, d)):
        assert abs(float((z @ v > 0).mean()) - 0.5) < 5 * 0.5 / math.sqrt(n)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), eps=st.floats(0.05, 20.0), d=st.integers(1, 8))
def test_l2_ball_norm_property(seed: int, eps: float, d: int) -> None:
    g = np.random.default_rng(seed).standard_normal((5, d)) * 3
    z = _l2(g, eps, 1.5, seed)
    assert np.allclose(np.linalg.norm(z, axis=-1), l2_ball_radius(eps, d, 1.5), rtol=1e-9)


# ------------------------------------------------------------------------------------------------
# SGD randomizer (the client of the compiled kernel)
# ------------------------------------------------------------------------------------------------
def test_sgd_client_unbiased_for_clipped_gradient() -> None:
    """E[Z] = clip_R((mu(x^T theta) - r) x) for a logistic link (eq. 3.5); 5-se bound per
    coordinate; the public theta is set on the server (the user reads it)."""
    n = 200_000
    spec = EnvSpec(d=2, K=2, horizon=1000, link=LOGISTIC, reward_bound=1.0, reward_range=(0.0, 1.0))
    alg = LDPSGD(epsilon=2.0, grad_bound=1.0)
    client, _ = _client(alg, spec, n)
    alg.kernel.public[0][:] = [0.8, 0.4]  # within the projection ball the device accepts
    X = np.zeros((n, 2, 2))
    X[:, 0] = [0.6, 0.8]
    z = client.randomize(
        0,
        alg.server.public_state(),
        X,
        np.zeros(n, dtype=int),
        np.zeros(n),
        np.random.default_rng(6),
    )["z"]
    g = (1.0 / (1.0 + math.exp(-0.8))) * np.array([0.6, 0.8])
    r = l2_ball_radius(2.0, 2, 1.0)
    assert np.allclose(np.linalg.norm(z, axis=-1), r, rtol=1e-9)
    assert np.all(np.abs(z.mean(0) - g) < 5 * r / math.sqrt(2 * n))


def test_sgd_client_payload_depends_on_data_only_through_the_side() -> None:
    """Same noise stream: the l2-ball output keeps its norm and line; only the side can change."""
    spec = EnvSpec(d=2, K=2, horizon=100)
    outs = []
    for X, r in [
        (np.array([[[0.6, 0.8], [1.0, 0.0]]]), 0.9),
        (np.array([[[-1.0, 0.0], [0.0, 1.0]]]), -0.2),
    ]:
        client, public = _client(LDPSGD(), spec, 1)
        outs.append(
            client.randomize(0, public, X, np.array([0]), np.array([r]), np.random.default_rng(4))[
                "z"
            ][0]
        )
    assert np.linalg.norm(outs[0]) == pytest.approx(np.linalg.norm(outs[1]))
    assert np.allclose(outs[0], outs[1]) or np.allclose(outs[0], -outs[1])


@pytest.mark.parametrize("joint_radius", ["dK", "d"])
def test_joint_update_radius_and_shrink(joint_radius: str) -> None:
    """Spec 2.6: the joint dK mechanism is unbiased with r_{eps,dK}; the code's r_{eps,d} shrinks
    the mean by r_{eps,d} / r_{eps,dK} = 0.533 (d = 2, K = 3).  Main-phase message of arm 1's user
    with theta = 0: gradient -r x in block 1, zero elsewhere."""
    n, K, d = 100_000, 3, 2
    spec = EnvSpec(d=d, K=K, setting="multi", horizon=10**4)
    alg = LDPSGD(
        epsilon=1.0, grad_bound=1.0, synthetic_update="joint", joint_radius=joint_radius, s0=1
    )
    client, public = _client(alg, spec, n)
    x = np.array([0.6, 0.8])
    z = client.randomize(
        K,
        public,
        np.tile(x, (n, 1)),
        np.ones(n, dtype=int),
        np.full(n, 0.5),
        np.random.default_rng(7),
    )["z"]
    r_dK = l2_ball_radius(1.0, d * K, 1.0)
    assert l2_ball_radius(1.0, d, 1.0) / r_dK == pytest.approx(0.5333, abs=1e-4)
    shrink = 1.0 if joint_radius == "dK" else l2_ball_radius(1.0, d, 1.0) / r_dK
    assert np.allclose(np.linalg.norm(z.reshape(n, -1), axis=-1), shrink * r_dK, rtol=1e-9)
    target = np.zeros((K, d))
    target[1] = -0.5 * x
    se = shrink * r_dK / math.sqrt(K * d * n)
    assert np.all(np.abs(z.mean(0) - shrink * target) < 5 * se)


# ------------------------------------------------------------------------------------------------
# estimators (compiled; hypothesis property tests for the math)
# ------------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(d=st.integers(1, 6), seed=st.integers(0, 2**31 - 1), shift=st.floats(0.0, 50.0))
def test_ols_solve_matches_linalg(d: int, seed: int, shift: float) -> None:
    """Also indefinite S_M (noisy Gram matrices): partial pivoting solves any regular system."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((2, 1, d, d))
    S_M = B + np.swapaxes(B, -1, -2)  # symmetric, indefinite
    S_u = rng.standard_normal((2, 1, d))
    theta, A = np.zeros((2, 1, d)), solver_scratch(2, d)
    ols_solve(S_M, S_u, theta, A, 1, 0, shift)
    want = np.linalg.solve(S_M[1, 0] + shift * np.eye(d), S_u[1, 0])
    assert np.allclose(theta[1, 0], want, rtol=1e-7, atol=1e-9 * np.abs(want).max())
    assert not np.any(theta[0])  # only estimator (r, k) = (1, 0) is touched


def test_ols_solve_singular_gets_the_basic_solution() -> None:
    """Exactly singular systems (shift 0, rank-deficient S_M): complete pivoting solves the regular
    part and sets the free coordinates to 0; a zero matrix gives theta = 0."""
    S_M, S_u = np.zeros((1, 2, 3, 3)), np.ones((1, 2, 3))
    S_M[0, 0] = [[2.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    S_u[0, 1] = 0.0
    theta, A = np.full((1, 2, 3), 7.0), solver_scratch(1, 3)
    ols_solve(S_M, S_u, theta, A, 0, 0, 0.0)
    assert np.allclose(theta[0, 0], [0.0, 1.0, 0.0])  # 2a + b = 1, a + b = 1; c free
    ols_solve(S_M, S_u, theta, A, 0, 1, 0.0)
    assert np.array_equal(theta[0, 1], np.zeros(3))


@settings(max_examples=60, deadline=None)
@given(
    d=st.integers(2, 6),
    rank=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
)
def test_ols_solve_singular_is_a_solution_with_free_coordinates_zero(
    d: int, rank: int, seed: int
) -> None:
    """Rank-deficient consistent systems ``S_M theta = S_u`` (shift 0), with zero rows and
    columns so that complete pivoting permutes columns: the basic solution solves the system,
    has at least ``d - rank`` zero coordinates, and touches only estimator (r, k) = (1, 0)."""
    rank = min(rank, d - 1)
    rng = np.random.default_rng(seed)
    B = np.zeros((d, rank))
    rows = rng.permutation(d)[:rank]  # the other coordinates are exactly zero rows / columns
    B[rows] = np.eye(rank) + 0.5 * rng.standard_normal((rank, rank))
    S_M, S_u = np.zeros((2, 1, d, d)), np.zeros((2, 1, d))
    S_M[1, 0] = B @ B.T
    S_u[1, 0] = S_M[1, 0] @ rng.standard_normal(d)
    theta, A = np.full((2, 1, d), 7.0), solver_scratch(2, d)
    ols_solve(S_M, S_u, theta, A, 1, 0, 0.0)
    assert np.allclose(S_M[1, 0] @ theta[1, 0], S_u[1, 0], atol=1e-8 * (1 + np.abs(S_u).max()))
    assert np.count_nonzero(theta[1, 0]) <= rank
    assert np.all(theta[0] == 7.0)


def test_ols_accumulate_and_sgd_step() -> None:
    d = 2
    S_M, S_u = np.zeros((1, 2, d, d)), np.zeros((1, 2, d))
    msg = np.array([1.0, 2.0, 2.0, 5.0, -1.0, 3.0])  # M row-major, then u
    ols_accumulate(S_M, S_u, 0, 1, msg, 0, 4)
    assert (
        np.array_equal(S_M[0, 1], [[1, 2], [2, 5]])
        and np.array_equal(S_u[0, 1], [-1, 3])
        and not S_M[0, 0].any()
    )
    theta = np.ones((1, 1, d))
    sgd_step(
        theta, 0, 0, np.zeros(3), 1, 0.4, 0.5, 1.0
    )  # (1 - 0.4 * 0.5) (1, 1), projected to norm 1
    assert np.allclose(theta[0, 0], 1.0 / math.sqrt(2))
    theta = np.ones((1, 1, d))
    sgd_step(theta, 0, 0, np.ones(d), 0, 0.4, 0.5, math.inf)
    assert np.allclose(theta[0, 0], 0.8 * 0.6)  # theta - eta Z = 0.6, then (1 - eta lambda) = 0.8
    assert step_size(4.0, 5.0, 1.0, False, 1.0) == pytest.approx(1.0)
    assert step_size(3.0, 2.0, 1.0, True, 3.0) == pytest.approx(3.0)


def test_ols_statistic_is_computed_from_the_clipped_data() -> None:
    """Eq. (3.3) on clipped inputs (spec 1.5): a context longer than C_B is scaled to norm C_B and the
    reward clipped into [r_lo, r_hi] before M = x x^T and u = y x are formed; x itself is untouched."""
    from collections import namedtuple

    from privbandits.algorithms.ldp_glb.randomizers import ols_statistic

    P = namedtuple("P", "C_B r_lo r_hi")
    x = np.array([3.0, 4.0])
    msg = np.full(7, np.nan)
    ols_statistic(P(1.0, -1.0, 1.0), x, 2.5, msg, 1, 5)  # M at offset 1, u at offset 5
    xc = np.array([0.6, 0.8])
    np.testing.assert_allclose(msg[1:5], np.outer(xc, xc).ravel(), rtol=1e-15)
    np.testing.assert_allclose(msg[5:7], 1.0 * xc, rtol=1e-15)
    assert np.isnan(msg[0])
    np.testing.assert_array_equal(x, [3.0, 4.0])
    ols_statistic(P(10.0, -1.0, 1.0), x, -0.5, msg, 1, 5)  # inside the ball: unclipped
    np.testing.assert_allclose(msg[1:5], np.outer(x, x).ravel(), rtol=1e-15)
    np.testing.assert_allclose(msg[5:7], -0.5 * x, rtol=1e-15)


@pytest.mark.parametrize(
    "setting, kwargs",
    [
        ("single", {}),
        ("multi", {}),
        ("multi", {"preset": "paper", "warmup_full_budget": True}),
        ("multi", {"synthetic_update": "joint"}),
        ("multi", {"sgd_warmup": "ols", "synthetic_update": "joint", "joint_radius": "d"}),
    ],
    ids=["single", "multi", "paper-full-warmup", "joint", "ols-warmup"],
)
def test_sgd_output_range_is_the_largest_l2_ball_radius(setting: str, kwargs: dict) -> None:
    """Every l2-ball row a device sends (warm-up and main phase) has norm at most the declared
    bound, and the per-arm slots attain it (a bound without the warm-up slot's larger radius, or
    without the joint radius, refuses genuine reports); the OLS fields are declared exactly with
    the OLS warm-up."""
    from privbandits.algorithms.ldp_glb.calibration import SGDConstants

    n, d, K = 300, 2, 3
    alg = LDPSGD(epsilon=1.0, s0=2, **kwargs)
    client, public = _client(alg, EnvSpec(d=d, K=K, setting=setting, horizon=100), n)
    c = alg.calibration.typed(SGDConstants)
    ranges = alg.output_ranges()
    assert set(ranges) == ({"z", "M", "u"} if c.ols_warmup else {"z"})
    bound = ranges["z"].bound
    X = np.zeros((n, d)) if setting == "multi" else np.zeros((n, K, d))
    X[..., 0] = 0.8
    norms = []
    for t in sorted({0, c.n_warmup}):
        msg = client.randomize(
            t, public, X, np.zeros(n, dtype=int), np.full(n, 0.5), np.random.default_rng(t)
        )
        norms.append(np.linalg.norm(msg["z"].reshape(-1, d), axis=1))
    top = float(np.concatenate(norms).max())
    assert top <= bound * (1 + 1e-12)
    if not c.joint:
        assert top == pytest.approx(bound, rel=1e-12)
