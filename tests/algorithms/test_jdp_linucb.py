"""Joint-DP LinUCB (Shariff & Sheffet 2018, Algorithm 1): constants, accounting, noise law.

Constants against the values the implementation notes compute from the paper's formulas and from
the authors' code; the accountant against hand computations; the released noise against its law
(every release holds exactly ``m`` node draws, the shift is added once) with z-bounds derived from
the sample size.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import privbandits as pb
from privbandits.algorithms.shariff.constants import (
    gaussian_accounting,
    gaussian_regularizer,
    gaussian_sigma_paper,
    levels,
    wishart_accounting,
    wishart_dof_authors,
    wishart_dof_paper,
    wishart_regularizer,
)
from privbandits.algorithms.shariff.jdp_linucb import add_wishart
from privbandits.core.errors import ValidationError
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.accounting import ZCDP, zcdp_to_approx_dp

LT = math.sqrt(2.0)
#: two-sided z bound at family-wise level ~1e-4 over the few statistics of one test
Z = 4.5


def test_levels() -> None:
    assert levels(100_000) == 18 and levels(50_000_000) == 27 and levels(16) == 5
    for n in range(2, 300):
        assert levels(n) == 1 + math.ceil(math.log2(n))


def test_paper_constants() -> None:
    n, d, m = 100_000, 5, 18
    sig = gaussian_sigma_paper(m, LT, 1.0, 0.1)
    assert sig == pytest.approx(125.2047, rel=1e-6)
    g = gaussian_regularizer(m, d, n, sig, 0.1)
    assert g.rho_min == pytest.approx(28517.82, rel=1e-6)
    assert g.rho_max == pytest.approx(85553.46, rel=1e-6)
    assert g.gamma == pytest.approx(23.978, rel=1e-4)
    assert g.shift == pytest.approx(2 * g.rho_min)
    k = wishart_dof_paper(m, d, 1.0, 0.1)
    assert k == 87848
    u = wishart_regularizer(m, d, n, k, LT, 0.1, shifted=False)
    assert (u.rho_min, u.rho_max) == (
        pytest.approx(3.12304e6, rel=1e-5),
        pytest.approx(3.20226e6, rel=1e-5),
    )
    assert u.gamma == pytest.approx(10.780, rel=1e-4) and u.shift == 0.0
    s = wishart_regularizer(m, d, n, k, LT, 0.1, shifted=True)
    assert -s.shift == pytest.approx(3.04383e6, rel=1e-5)
    assert (s.rho_min, s.rho_max) == (
        pytest.approx(79214.6, rel=1e-5),
        pytest.approx(158429.2, rel=1e-5),
    )
    assert s.gamma == pytest.approx(138.46, rel=1e-4)


def test_authors_code_constants() -> None:
    n, d = 50_000_000, 5
    m, alpha = levels(n), 1.0 / (2 * n)
    sig = gaussian_sigma_paper(m, LT, 1.0, 0.1)
    assert sig == pytest.approx(153.3438, rel=1e-6)
    g = gaussian_regularizer(m, d, n, sig, alpha, form="authors_code")
    assert (g.rho_min, g.rho_max) == (
        pytest.approx(92208.7, rel=1e-6),
        pytest.approx(276626.2, rel=1e-6),
    )
    assert g.gamma == pytest.approx(28.269, rel=1e-4)
    k = wishart_dof_authors(m, d, 1.0, 0.1)
    assert k == 239278 and wishart_dof_paper(m, d, 1.0, 0.1) == 139115
    u = wishart_regularizer(m, d, n, k, LT, alpha, shifted=False, form="authors_code")
    assert (u.rho_min, u.rho_max) == (
        pytest.approx(1.28101e7, rel=1e-5),
        pytest.approx(1.30324e7, rel=1e-5),
    )
    assert u.gamma == pytest.approx(15.236, rel=1e-4)
    s = wishart_regularizer(m, d, n, k, LT, alpha, shifted=True, form="authors_code")
    assert (s.rho_min, s.rho_max) == (
        pytest.approx(2.22336e5, rel=1e-5),
        pytest.approx(4.44673e5, rel=1e-5),
    )
    assert s.gamma == pytest.approx(115.65, rel=1e-4)


def test_accountant() -> None:
    # paper sigma: rho = m L~^4 / (2 sigma^2) = eps^2 / (32 ln^2(4/delta)), certified 0.1477 via zCDP;
    # the exact analytic Gaussian statement is at least as strong
    T = 1 << 17  # bit_length(T) = 18 nodes per row = m of n = 1e5
    sig = gaussian_sigma_paper(18, LT, 1.0, 0.1)
    rho = 18 * LT**4 / (2 * sig**2)
    assert rho == pytest.approx(0.0022965, rel=1e-4)
    assert zcdp_to_approx_dp(ZCDP(rho).rho, 0.1, "bs") <= 0.1478
    assert gaussian_accounting(T, LT, sig, 0.1).epsilon <= 0.1478
    # Wishart, T2 inputs: advanced composition over 18 nodes
    acc = wishart_accounting(T, 5, 87848, 0.1)
    assert acc.epsilon == pytest.approx(0.5427, abs=2e-4) and acc.delta <= 0.1


@pytest.mark.parametrize("noise", ["gaussian", "wishart"])
def test_strict_calibration_is_tight(noise: str) -> None:
    spec = EnvSpec(d=5, K=10, horizon=100_000)
    for eps in (0.5, 1.0, 4.0):
        cal = pb.algorithms.make("jdp-linucb", epsilon=eps, noise=noise).calibrate(spec)
        g = cal.guarantee
        assert g.model == "joint" and g.delta <= 0.1
        assert 0.97 * eps <= g.epsilon <= eps, (noise, eps, g.epsilon)
        paper = pb.algorithms.make("jdp-linucb", epsilon=eps, noise=noise, preset="paper")
        key = "sigma_noise" if noise == "gaussian" else "k"
        more = paper.calibrate(spec).resolved[key]
        assert cal.resolved[key] <= more  # strict adds no more noise than the paper


def test_wishart_tree_needs_padding() -> None:
    alg = pb.algorithms.make("jdp-linucb", noise="wishart", tree="binary")
    with pytest.raises(ValidationError, match="binary_padded"):
        alg.calibrate(EnvSpec(d=3, K=4, horizon=100))


def test_wishart_sampler_moments() -> None:
    rng = np.random.default_rng(3)
    p, dof, s2, N = 3, 40.0, 2.0, 4000
    draws = np.zeros((N, p, p))
    A = np.zeros((p, p))
    for i in range(N):
        add_wishart(rng, s2, dof, draws[i], A)
    # E W = dof s2 I; Var W_ij = dof s2^2 (1 + [i == j])
    for i in range(p):
        for j in range(p):
            mean = dof * s2 * (i == j)
            sd = math.sqrt(dof * s2**2 * (1 + (i == j)) / N)
            assert abs(draws[:, i, j].mean() - mean) < Z * sd
    assert np.allclose(draws, np.swapaxes(draws, 1, 2))


def _released_V(
    noise: str, tree: str, n: int, R: int = 3000, **kw: object
) -> tuple[np.ndarray, dict]:
    """The released ``V`` after ``n`` zero rows (noise and shift only), over ``R`` replications."""
    spec = EnvSpec(d=3, K=2, horizon=1024, reward_range=(-1.0, 1.0))
    alg = pb.algorithms.make("jdp-linucb", noise=noise, tree=tree, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg.reset(spec, R, make_streams(11))
    X = np.zeros((R, 2, 3))
    for t in range(n):
        alg.update(t, X, np.zeros(R, dtype=np.int64), np.zeros(R))
    V = np.linalg.inv(alg.released()["V_inv"])
    assert alg.diagnostics()["floor_active"].sum() == 0
    return V, alg.resolved_params()


@pytest.mark.parametrize("n", [0, 3, 4, 7])
def test_gaussian_release_has_exactly_m_node_draws_and_one_shift(n: int) -> None:
    V, res = _released_V("gaussian", "binary_padded", n)
    m, sig, shift = res["m"], res["sigma_noise"], res["shift"]
    off = np.concatenate([V[:, 0, 1], V[:, 0, 2], V[:, 1, 2]])
    # off-diagonal: m draws of variance sigma^2; diagonal: m draws of 2 sigma^2, mean = shift (once)
    var_off = off.var()
    assert abs(var_off / (m * sig**2) - 1) < Z * math.sqrt(2 / off.size)
    diag = np.concatenate([V[:, i, i] for i in range(3)])
    assert abs(diag.mean() - shift) < Z * math.sqrt(2 * m * sig**2 / diag.size)
    assert abs(diag.var() / (2 * m * sig**2) - 1) < Z * math.sqrt(2 / diag.size)


def test_unpadded_tree_has_popcount_draws() -> None:
    V, res = _released_V("gaussian", "binary", 3)
    off = np.concatenate([V[:, 0, 1], V[:, 0, 2], V[:, 1, 2]])
    assert abs(off.var() / (2 * res["sigma_noise"] ** 2) - 1) < Z * math.sqrt(2 / off.size)


@pytest.mark.parametrize("shift", ["shifted", "unshifted"])
def test_wishart_release_mean(shift: str) -> None:
    V, res = _released_V("wishart", "binary_padded", 5, R=1000, shift=shift, epsilon=4.0)
    m, k, Lt2 = res["m"], res["k"], res["L_tilde"] ** 2
    diag = np.concatenate([V[:, i, i] for i in range(3)])
    mean = m * k * Lt2 + res["shift"]
    assert abs(diag.mean() - mean) < Z * math.sqrt(2 * m * k * Lt2**2 / diag.size)
    assert abs(diag.var() / (2 * m * k * Lt2**2) - 1) < Z * math.sqrt(2 / diag.size)
    assert np.all(np.linalg.eigvalsh(V) >= res["rho_min"] * 0.5)


def test_shariff2018_preset() -> None:
    from privbandits.experiments.presets import available_presets, load_preset

    assert available_presets()["shariff2018-exp2"].startswith("Shariff & Sheffet (2018)")
    cfg = load_preset("shariff2018-exp2")
    assert cfg.env["d"] == 5 and cfg.env["K"] == 25 and cfg.env["noise"] == "rademacher"
    names = [e.name for e in cfg.algorithms]
    assert names == ["linucb"] + ["jdp-linucb"] * 4
    noises = [e.variants[0][0].get("noise") for e in cfg.algorithms[1:]]
    assert noises == ["gaussian", "wishart", "wishart", "gaussian"]
    assert {c.kind for c in cfg.claims} == {"order", "slope"}


@pytest.mark.parametrize("scale", [0.5, 1.0, 1e6])
def test_row_clips_at_inside_and_beyond_their_bounds(scale: float) -> None:
    """The update's two clips (the context to ``L`` in l2, the reward into ``[-yb, yb]``), which
    bound the sensitivity the tree noise is calibrated for: driven with a row inside, at and far
    beyond the bounds, straight into the compiled update (the curator's input checks would refuse
    out-of-bound rows first), the inserted row ``z`` is the clipped one and the clip counter moves
    only beyond."""
    from privbandits.algorithms.shariff.jdp_linucb import _STATS, _Z, _update

    spec = EnvSpec(d=3, K=2, horizon=64, reward_range=(-1.0, 1.0))
    alg = pb.algorithms.make("jdp-linucb")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg.reset(spec, 1, make_streams(3))
    kernel = alg.kernel
    L, yb = float(kernel.params[8]), float(kernel.params[9])
    x = np.array([1.0, -2.0, 2.0]) / 3.0 * L * scale
    X = np.stack([x, np.zeros(3)])
    y = yb * scale
    _update(kernel.params, kernel.state, 0, 0, X, 0, y, np.random.default_rng(0))
    z = kernel.state[_Z][0]
    assert math.isclose(float(np.linalg.norm(z[:3])), L * min(scale, 1.0), rel_tol=1e-12)
    assert np.allclose(z[:3] / np.linalg.norm(z[:3]), x / np.linalg.norm(x))
    assert z[3] == pytest.approx(yb * min(scale, 1.0), rel=1e-12)
    assert kernel.state[_STATS][0, 1] == (1.0 if scale > 1.0 else 0.0)
