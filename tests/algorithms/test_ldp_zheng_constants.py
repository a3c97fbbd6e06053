"""Constants and noise calibration of LDP-UCB / LDP-GLOC (spec zheng2020-ldp-bandits.md, section 7 items 1-3, 14, 15)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.algorithms.ldp_zheng.constants import (
    RadiusTable,
    beta_gloc,
    beta_ucb_paper,
    beta_ucb_ss,
    common_gaussian_sigma,
    common_laplace_scale,
    regularizer,
    upsilon,
    zeta_default,
)
from privbandits.algorithms.ldp_zheng.presets import gloc_calibration, ucb_calibration
from privbandits.algorithms.ldp_zheng.randomizer import SymmetricNoise
from privbandits.core.links import get_link
from privbandits.core.spec import EnvSpec
from privbandits.privacy.mechanisms import gaussian_epsilon


def _spec(d: int = 2, K: int = 10, link: str = "identity", reward_range=(-1.0, 1.0), setting="single", T=1000):
    lo, hi = reward_range
    return EnvSpec(d=d, K=K, setting=setting, horizon=T, link=get_link(link), reward_range=(lo, hi),
                   reward_bound=max(abs(lo), abs(hi)))


def _ucb(spec, preset="strict", eps=1.0, delta=0.1, mechanism="gaussian", split="split", calib="classic",
         code="han2021"):
    return ucb_calibration(spec, spec.d, eps, delta, preset, mechanism, split, calib, code)


def _gloc(spec, preset="strict", eps=1.0, delta=0.1, mechanism="gaussian", **kw):
    args = {"gaussian_calibration": "classic", "theta_radius": 1.0, "link_bound": None,
            "link_min_slope": None, "grad_bound": None, "clip_grad": None, "zeta": None, "block": False}
    args.update(kw)
    return gloc_calibration(spec, spec.d, spec.horizon, eps, delta, preset, mechanism, **args)


# --- section 7 item 1: the Gaussian mechanism -----------------------------------------------------
def test_gaussian_sigma_reference_values():
    assert common_gaussian_sigma((2.0,), 1.0, 0.1) == pytest.approx(4.495089, abs=1e-6)
    assert common_gaussian_sigma((2.0,), 1.0, 1e-5) == pytest.approx(9.689611, abs=1e-6)


# --- section 7 item 2: noise scales per preset ----------------------------------------------------
def test_ldp_ucb_sigma_per_preset():
    spec = _spec()
    # paper: 6 sqrt(2 ln 25) (Alg. 5, |y| <= 2); joint calibration 6 sqrt(2 ln 12.5)
    assert _ucb(spec, "paper").sigma == pytest.approx(15.223635, abs=1e-6)
    assert _ucb(spec, "paper", split="joint").sigma == pytest.approx(13.485268, abs=1e-6)
    # authors_code: Han et al.'s code uses the paper value; Zheng et al.'s demo 4 sqrt(ln(1.25/delta))
    assert _ucb(spec, "authors_code").sigma == pytest.approx(15.223635, abs=1e-6)
    assert _ucb(spec, "authors_code", code="zheng2020").sigma == pytest.approx(4 * math.sqrt(math.log(12.5)))
    # strict: the general form 2 (1 + c_r) sqrt(2 ln(2.5/delta))/eps with the EnvSpec's c_r = 1
    assert _ucb(spec, "strict").sigma == pytest.approx(4 * math.sqrt(2 * math.log(25.0)))
    # strict with Zheng's model |y| <= 2 reproduces the paper constant
    assert _ucb(_spec(reward_range=(-2.0, 2.0)), "strict").sigma == pytest.approx(15.223635, abs=1e-6)
    # the unequal split: part x x^T at eps/3 and y x at 2 eps/3 both need exactly this sigma
    s = _ucb(spec, "paper").sigma
    assert s == pytest.approx(2 * math.sqrt(2 * math.log(1.25 / 0.05)) / (1 / 3))
    assert s == pytest.approx(4 * math.sqrt(2 * math.log(1.25 / 0.05)) / (2 / 3))


def test_ldp_gloc_sigma_per_preset():
    spec = _spec(link="logistic", reward_range=(0.0, 1.0))
    paper = _gloc(spec, "paper")
    assert paper.sigma == pytest.approx(16.154026, abs=1e-6)  # 6 sqrt(2 ln 37.5)
    C = 1.0 / (1.0 + math.exp(-1.0))
    assert paper.link_bound == pytest.approx(C)
    assert paper.grad_sigma == pytest.approx(C * 16.154026, rel=1e-7)  # r_t ~ N(0, C^2 sigma^2)
    assert paper.link_min_slope == pytest.approx(0.196612, abs=1e-6)
    strict = _gloc(spec, "strict")
    assert strict.sigma == pytest.approx(paper.sigma) and strict.grad_clip == pytest.approx(C)
    code = _gloc(spec, "authors_code")
    assert code.scale_V == pytest.approx(15.223635, abs=1e-6)  # mechanism: the 2.5 form for all parts
    assert code.scale_g == pytest.approx(15.223635, abs=1e-6)  # gradient noise without C
    assert code.sigma == pytest.approx(16.154026, abs=1e-6)  # 3.75 form in Upsilon / beta
    assert code.zeta == pytest.approx(1 / math.sqrt(spec.horizon)) and not code.project
    assert _gloc(spec, "authors_code", block=True).scale_g == pytest.approx(2 * 15.223635, abs=1e-5)


def test_laplace_scales():
    spec = _spec(d=3)
    cal = _ucb(spec, mechanism="laplace", eps=2.0)
    # b = (Delta_1(x x^T) + Delta_1(y x)) / eps = ((d + 1) + 2 sqrt(d)) / eps  (spec section 3.3)
    assert cal.scale_V == pytest.approx((4 + 2 * math.sqrt(3)) / 2.0)
    assert cal.sigma == pytest.approx(math.sqrt(2) * cal.scale_V)
    assert sum(p.sensitivity / p.scale for p in cal.parts) == pytest.approx(2.0)


@settings(max_examples=60, deadline=None)
@given(
    sens=st.lists(st.floats(0.1, 10.0), min_size=1, max_size=3),
    eps=st.floats(0.05, 20.0),
    delta=st.floats(1e-8, 0.3),
)
def test_common_sigma_splits_budget_exactly(sens, eps, delta):
    """Classic: the per-part epsilons Delta_i sqrt(2 ln(1.25/delta))/sigma sum to eps; analytic: each part's
    exact epsilon is at most its share Delta_i/sum(Delta) * eps."""
    sigma = common_gaussian_sigma(tuple(sens), eps, delta)
    per_part = [s * math.sqrt(2 * math.log(1.25 / delta)) / sigma for s in sens]
    assert math.fsum(per_part) == pytest.approx(eps, rel=1e-12)
    sig_a = common_gaussian_sigma(tuple(sens), eps, delta, "analytic")
    for s in sens:
        assert gaussian_epsilon(sig_a, delta, s) <= eps * s / sum(sens) * (1 + 1e-9)
    assert common_laplace_scale(tuple(sens), eps) == pytest.approx(sum(sens) / eps)


# --- section 7 item 3: the constants of Algorithm 5 ----------------------------------------------
def test_algorithm5_reference_constants():
    sigma, d, T, alpha = 15.223635, 10, 10**5, 0.1
    assert upsilon(1, sigma, d, T, alpha) == pytest.approx(634.3145, abs=1e-3)
    assert regularizer(1, sigma, d, T, alpha) == pytest.approx(1268.629, abs=1e-3)
    assert beta_ucb_paper(1, sigma, d, T, alpha) == pytest.approx(5569.01, abs=1e-2)
    assert upsilon(10**4, sigma, d, T, alpha) == pytest.approx(63431.4, abs=0.1)
    assert beta_ucb_paper(10**4, sigma, d, T, alpha) == pytest.approx(52749.9, abs=0.1)


# --- section 7 item 15: monotonicity and scaling ---------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    sigma=st.floats(1e-3, 100.0),
    D=st.integers(1, 50),
    T=st.integers(10, 10**7),
    alpha=st.floats(0.001, 0.5),
    t=st.integers(1, 10**6),
)
def test_radii_monotone_and_scaling(sigma, D, T, alpha, t):
    ts = np.array([t, t + 1, 4 * t], dtype=float)
    for fn in (beta_ucb_paper, beta_ucb_ss):
        b = fn(ts, sigma, D, T, alpha)
        assert np.all(np.diff(b) > 0)
    assert np.all(np.diff(beta_gloc(ts, sigma, 0.2, D)) > 0)
    c = regularizer(ts, sigma, D, T, alpha)
    assert c[2] / c[0] == pytest.approx(2.0, rel=1e-12)  # c_t grows like sqrt(t)
    # Upsilon is linear in sigma, hence in 1/eps
    assert upsilon(t, 2 * sigma, D, T, alpha) == pytest.approx(2 * upsilon(t, sigma, D, T, alpha), rel=1e-12)


def test_upsilon_linear_in_inverse_epsilon():
    spec = _spec()
    s1, s2 = _ucb(spec, eps=1.0).sigma, _ucb(spec, eps=2.0).sigma
    assert upsilon(100, s1, 2, 1000, 0.1) == pytest.approx(2 * upsilon(100, s2, 2, 1000, 0.1))


def test_radius_table_matches_function():
    fn = lambda s: beta_ucb_paper(s, 3.0, 4, 1000, 0.1)
    table = RadiusTable(fn, chunk=50)
    for s in (1, 2, 49, 50, 51, 1000, 3, 151):  # across chunks, and back to an earlier chunk
        assert table(s) == pytest.approx(float(fn(np.asarray(float(s)))), rel=1e-14)


def test_zeta_default_formula():
    # 2 / (C sqrt(1 + D sigma^2) sqrt(T)) for W the unit ball (spec section 4.4.2)
    assert zeta_default(10**4, 0.73, 0.73 * 16.0, 2) == pytest.approx(2 / (0.73 * math.sqrt(1 + 2 * 256) * 100))
    spec = _spec(link="logistic", reward_range=(0.0, 1.0), T=10**4)
    cal = _gloc(spec, "strict")
    assert cal.zeta == pytest.approx(zeta_default(10**4, cal.link_bound, cal.grad_sigma, 2))
    assert _gloc(spec, "paper").zeta == pytest.approx(0.01)


# --- section 7 item 14: Upsilon_t bounds the accumulated noise ------------------------------------
def test_upsilon_bounds_accumulated_noise(rng):
    """d=5, t=1000, sigma=1, T=1e4, alpha=0.1: Upsilon ~ 1054.8 while ||sum_s B_s||_op stays near 190.

    The sum of 1000 draws is built from the message-level sampler (no fast path), 200 times.
    """
    d, t, T, alpha = 5, 1000, 10**4, 0.1
    ups = upsilon(t, 1.0, d, T, alpha)
    assert ups == pytest.approx(1054.8, abs=0.1)
    noise = SymmetricNoise(d, 1.0)
    sums = np.stack([noise.sample(rng, t).sum(axis=0) for _ in range(200)])
    op = np.abs(np.linalg.eigvalsh(sums)).max(axis=1)
    assert op.max() < ups
    assert 100 < np.median(op) < 250  # spec: max over 200 draws ~ 190
    lam_min = np.linalg.eigvalsh(sums + 2 * ups * np.eye(d))[:, 0]
    assert np.all(lam_min >= ups)
