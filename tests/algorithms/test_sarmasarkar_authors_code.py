"""The ``authors_code`` preset of the Sarmasarkar family: the constants of the authors' public code
(read at commit d9c93e1), the accounted guarantee computed from the noise actually added, and the
behaviour of the re-implemented steps (tree, switching test, DP-SGD plan, baselines)."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
from scipy.stats import norm

import privbandits as pb
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.algorithms.sarmasarkar import authors_code as ac
from privbandits.core.rng import make_streams

KAPPA_STAR = 1.0 / norm.pdf(0.0)


def table2(S: float = 2.0, eps: float = 4.0, T: int = 5000, d: int = 3) -> ac.AuthorsConstants:
    """The constants on a Table 2 instance (probit, delta = zeta = 0.02, R = 1)."""
    return ac.authors_constants(
        d=d,
        T=T,
        epsilon=eps,
        delta=0.02,
        zeta=0.02,
        kappa=1.0 / norm.pdf(S),
        kappa_star=KAPPA_STAR,
        R=1.0,
        S=S,
        sup_dmu=norm.pdf(0.0),
    )


# -- constants as in the authors' code ---------------------------------------------------------
@pytest.mark.parametrize(("eps", "lam"), [(4.0, 232.8), (6.0, 165.6), (8.0, 131.9)])
def test_one_lambda_for_both_trees_as_in_the_code(eps: float, lam: float) -> None:
    # 2 log(4/delta) log(4T/zeta)^2/(eps kappa*) + 0.75 d log(4T/zeta)/R^2 (the values the code prints)
    assert table2(eps=eps).lam == pytest.approx(lam, abs=0.05)


def test_switching_factor_cutoffs_threshold_and_radii() -> None:
    c = table2(S=2.0, eps=4.0)
    assert c.switch_factor == pytest.approx(1.0 + 5.0 / (8.0 * math.sqrt(3.0)) + 0.05)
    assert c.switch_factor == pytest.approx(1.411, abs=5e-4)
    assert [table2(eps=e).count2_cutoff for e in (4.0, 6.0, 8.0)] == [8, 9, 9]
    L = math.log(4 * 5000 / 0.02)
    A = math.log(4 / 0.02) * L**2 / (4.0 * KAPPA_STAR)
    lam = c.lam
    assert c.count2_cutoff == int(
        3
        * math.log2(
            (lam + 1.5 * A) / (lam - 1.5 * A) + 5000 / (KAPPA_STAR**2 * (lam - 1.5 * A) * 3)
        )
    )
    assert c.thr == pytest.approx(1.0 / (0.01 * c.kappa * 4.0 * 3))
    assert c.gamma == pytest.approx(2.0 * math.sqrt(3 * math.log(5000 / 0.02)))
    assert c.beta == pytest.approx(4.0 * math.sqrt(3 * math.log(5000 / 0.02)))
    assert c.count1_cutoff == max(1, int(3 * c.kappa * c.gamma**2 * math.log(5000) / 20000))
    assert (c.clip, c.lr0, c.batch, c.ridge) == (0.2, 10.0, 2048, 1e-5)


def test_tree_noise_for_sensitivities_one_and_one_over_kappa_star() -> None:
    c = table2(eps=6.0)
    a = math.sqrt(math.log(3 / 0.02))  # (eps/3, delta/3) for the trees
    rho = (math.sqrt(a * a + 2.0) - a) ** 2
    m = math.ceil(math.log2(5000)) + 1
    assert c.tree_nodes == m == 14
    assert c.sigma_V == pytest.approx(1.0 / math.sqrt(2 * rho / m))
    assert c.sigma_H == pytest.approx(c.sigma_V / KAPPA_STAR)


def test_eps_thirds_split_naive_up_to_ten_calls_else_advanced() -> None:
    e0, d0 = ac.per_step_budget(4.0 / 3, 0.02 / 3, 8)
    assert (e0, d0) == pytest.approx((4.0 / 24, 0.02 / 24))
    k = 96
    e0, d0 = ac.per_step_budget(4.0 / 3, 0.02 / 3, k)
    assert d0 == pytest.approx(0.02 / 3 / (2 * k))
    # advanced composition spends exactly eps/3 at delta' = delta/6
    total = math.sqrt(2 * k * math.log(1 / (0.02 / 6))) * e0 + k * e0 * math.expm1(e0)
    assert total == pytest.approx(4.0 / 3, rel=1e-9)
    assert [ac.start_epochs(e) for e in (0.05, 0.2, 0.5, 1.5, 3.0)] == [15, 25, 50, 75, 100]


def test_dp_sgd_multiplier_matches_dp_accounting_rdp() -> None:
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    eps0, delta0 = 0.444, 0.02 / 9
    sigma1 = ac.gaussian_multiplier(eps0, delta0)
    E = 75
    orders = ac._orders(eps0)
    acc = rdp.RdpAccountant(
        orders=list(orders),
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
    )
    n = 300  # q = 1 (batch = n): the code's event without amplification
    acc.compose(
        dp_event.SampledWithoutReplacementDpEvent(
            n, n, dp_event.GaussianDpEvent(sigma1 * math.sqrt(E))
        ),
        count=E,
    )
    assert acc.get_epsilon(delta0) == pytest.approx(eps0, rel=1e-6)


def test_dp_sgd_plan_batch_epochs_and_burn_in() -> None:
    sigma1 = ac.gaussian_multiplier(0.167, 0.02 / 24)
    E, burn, b, z = ac.dp_sgd_plan(40, 0.167, 3, sigma1)  # start 25, noisy: factors up to 1.5
    assert (E, b) == (38, 40) and burn == round(10 * 38 / 25)
    assert z == pytest.approx(sigma1 * math.sqrt(38))
    E, burn, b, z = ac.dp_sgd_plan(5000, 3.0, 3, ac.gaussian_multiplier(3.0, 1e-3))
    assert (b, E) == (2048, 150) and z == pytest.approx(
        ac.gaussian_multiplier(3.0, 1e-3) * math.sqrt(300)
    )


# -- the accounted guarantee: our accountant, from the noise added ------------------------------
def test_accounting_is_computed_from_the_noise_added() -> None:
    c = table2(eps=4.0)
    g, parts = ac.authors_accounting(c)
    m = c.tree_nodes
    assert parts["rho_V"] == pytest.approx(m / c.sigma_V**2)
    assert parts["rho_H"] == pytest.approx(m * (norm.pdf(0) / math.e) ** 2 / c.sigma_H**2)
    assert parts["rho_w"] == pytest.approx(c.count1_cutoff * 2 / c.sigma1_w**2)
    assert parts["rho_tau"] == pytest.approx(c.count2_cutoff * 2 / c.sigma1_tau**2)
    # half the tree noise: four times the tree's zCDP, a larger epsilon
    g2, parts2 = ac.authors_accounting(dataclasses.replace(c, sigma_V=c.sigma_V / 2))
    assert parts2["rho_V"] == pytest.approx(4 * parts["rho_V"])
    assert g2.epsilon > g.epsilon
    # not the nominal guarantee: 2.33 / 3.71 / 5.24 at the requested 4 / 6 / 8 (S = 2)
    eps = [ac.authors_accounting(table2(eps=e))[0].epsilon for e in (4.0, 6.0, 8.0)]
    assert eps == pytest.approx([2.33, 3.71, 5.24], abs=0.01)
    assert "not covered by noise" in g.notes


def test_preset_warns_and_records_the_accounted_guarantee() -> None:
    env = pb.SyntheticEnv(
        d=3, K=5, contexts="ball", link="probit", noise="bernoulli", theta_norm=2.0
    )
    alg = pb.make("jdp-glm", epsilon=4.0, preset="authors_code")
    with pytest.warns(CalibrationWarning, match="authors_code"):
        res = pb.simulate(alg, env, horizon=60, replications=2, seed=1)
    cal = alg.calibration
    assert cal.preset == "authors_code" and cal.requested == (4.0, 0.02)
    g, _ = ac.authors_accounting(
        dataclasses.replace(
            table2(S=2.0, eps=4.0, T=60), kappa=cal.resolved["kappa"], thr=cal.resolved["thr"]
        )
    )
    assert cal.guarantee.epsilon == pytest.approx(g.epsilon)
    assert res.engine == "reference" and np.all(np.isfinite(res.regret))


# -- behaviour of the steps ----------------------------------------------------------------------
def test_tree_reuses_one_noise_matrix_per_node() -> None:
    rng = np.random.default_rng(0)
    tree = ac._Tree(2, 1.0, 100.0, rng)
    leaves = [np.outer(v, v) for v in rng.normal(size=(5, 2))]
    rel = [tree.insert(L) for L in leaves]
    # count 4 = node (2, 1); count 5 = node (2, 1) + leaf node (0, 5): the shared node's noise is reused
    assert np.allclose(rel[4] - rel[3], leaves[4] + tree.noise[(0, 5)])
    assert np.allclose(rel[3], sum(leaves[:4]) + tree.noise[(2, 1)] + 100.0 * np.eye(2))
    assert all(np.allclose(z, z.T) for z in tree.noise.values())


def test_dp_sgd_clips_each_example_gradient_to_the_clip_norm() -> None:
    g = np.array([[3.0, 4.0], [0.03, 0.04], [0.0, 0.0], [-1e6, 0.0]])
    out = ac.clip_rows(g, 0.2)
    assert np.linalg.norm(out, axis=1) == pytest.approx([0.2, 0.05, 0.0, 0.2])
    assert np.allclose(out[0], [0.12, 0.16]) and np.allclose(out[1], g[1])


def test_switching_test_is_the_psd_order_at_the_code_factor() -> None:
    f = 1.0 + 5.0 / (8.0 * math.sqrt(3.0)) + 0.05
    B = np.diag([2.0, 3.0, 5.0])
    A = B.copy()
    A[0, 0] = 2.0 * (f - 0.01)
    assert not ac._not_below(A, B, f)
    A[0, 0] = 2.0 * (f + 0.01)
    assert ac._not_below(A, B, f)


def test_baselines_constants_and_steps() -> None:
    env = pb.SyntheticEnv(
        d=3, K=8, contexts="ball", link="probit", noise="bernoulli", theta_norm=2.0
    )
    gloc = pb.make("gloc", preset="authors_code", delta=0.02)
    glm = pb.make("glm-ucb", preset="authors_code", delta=0.02)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        pb.simulate(gloc, env, horizon=40, replications=2, seed=0)
        pb.simulate(glm, env, horizon=40, replications=2, seed=0)
    # GLOC: the ONS iterate is normalized onto the sphere of radius S
    assert np.allclose(np.linalg.norm(gloc.estimate(), axis=1), 2.0)
    assert gloc._authors.lam == 3.0 and gloc.calibration.preset == "authors_code"
    # GLM-UCB: lambda = d, the code's radius constant, the estimate a root of the code's gradient
    run = glm._authors
    L = norm.pdf(0.0)
    c = (
        2
        * L
        * math.sqrt(3 + 2 * math.log(1 + 2 / 3))
        * run_kappa(glm)
        * math.sqrt(6 * math.log(6 * 40 / 0.02))
    )
    assert run.lam == 3.0 and run.c == pytest.approx(c)
    X, Y = run.X[0, : run.n], run.Y[0, : run.n]
    th = run.theta[0]
    grad = X.T @ (norm.cdf(X @ th) - Y) + 2 * 3.0 * th
    assert np.abs(grad).max() < 1e-7


def run_kappa(alg: object) -> float:
    return float(alg.calibration.resolved["kappa"])  # type: ignore[attr-defined]


def test_score_root_is_the_lbfgs_optimum_for_the_logistic_link() -> None:
    from scipy.optimize import minimize

    env = pb.SyntheticEnv(d=3, K=5, link="logistic", noise="bernoulli", theta_norm=2.0)
    spec = env.reset(1, make_streams(0), 50)
    run = ac.AuthorsGLMUCB(spec, 1, 10.0, 0.02, np.random.default_rng(0))
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3)) / 2
    Y = (rng.random(60) < 1 / (1 + np.exp(-X @ [1.0, -1.0, 0.5]))).astype(float)
    root = run._score_root(X, Y, np.zeros(3))
    opt = minimize(run._nll, np.zeros(3), args=(X, Y), jac=True, method="L-BFGS-B").x
    assert np.allclose(root, opt, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gloc", "glm-ucb", "rs-glinucb", "jdp-glm"])
def test_authors_code_runs_pass_the_conformance_checks(name: str) -> None:
    from privbandits.testing import check_algorithm

    params = {"preset": "authors_code"} | ({"epsilon": 6.0} if name == "jdp-glm" else {})
    check_algorithm(name, params=params, envs=("single",), quick=True)


def test_the_fit_clips_every_example_gradient_it_uses(monkeypatch) -> None:
    """Private-GLM's DP-SGD fit (authors_code) passes each batch through clip_rows at the code's
    clip norm: gradients beyond it reach the clip and leave it at norm 0.2."""
    seen: list[tuple[float, float, float]] = []
    orig = ac.clip_rows

    def spy(g: np.ndarray, clip: float) -> np.ndarray:
        out = orig(g, clip)
        norms = np.linalg.norm(g, axis=1)
        seen.append((float(norms.max()), clip, float(np.linalg.norm(out, axis=1).max())))
        return out

    monkeypatch.setattr(ac, "clip_rows", spy)
    env = pb.SyntheticEnv(
        d=3, K=8, contexts="ball", link="probit", noise="bernoulli", theta_norm=2.0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        pb.simulate(
            pb.make("jdp-glm", preset="authors_code", epsilon=8.0),
            env,
            horizon=3000,
            replications=1,
            seed=0,
        )
    assert seen and all(clip == 0.2 for _, clip, _ in seen)
    assert any(beyond > 0.2 for beyond, _, _ in seen)
    assert all(after <= 0.2 * (1 + 1e-12) for _, _, after in seen)
