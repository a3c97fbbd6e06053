"""ShuffleGLM (Sarmasarkar 2026, Algorithm 1): schedule, constants, accounting, roles, protocol."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

import privbandits as pb
from privbandits.algorithms.base import Client
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.algorithms.sarmasarkar.binomial_composition import composed_epsilon
from privbandits.algorithms.sarmasarkar.shuffle_glm import ShuffleGLM, eliminate, scale_weights
from privbandits.algorithms.sarmasarkar.shuffle_plan import (
    ShuffleGLMConstants,
    batch_calls,
    batch_exponent,
    batch_lengths,
    default_n_batches,
    practical_warmup,
    shuffle_plan,
)
from privbandits.core.errors import TrustBoundaryError, ValidationError
from privbandits.core.links import get_link
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy import cheu


def _spec(T: int = 400, d: int = 2, link: str = "probit", S: float = 1.0) -> EnvSpec:
    return EnvSpec(
        d=d,
        K=4,
        horizon=T,
        link=get_link(link),
        context_bound=1.0,
        reward_range=(0.0, 1.0),
        theta_bound=S,
    )


def _reset(alg: ShuffleGLM, spec: EnvSpec, R: int, seed: int = 0) -> ShuffleGLM:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        alg.reset(spec, R, make_streams(seed))
    return alg


# -- batch schedule (P1-1, P1-2) -----------------------------------------------------------------
def test_batch_schedule_matches_the_spec_numbers() -> None:
    T = 100_000
    assert batch_exponent(T, 4) == pytest.approx(719.686, rel=1e-5)
    lengths = batch_lengths(T, 4, 100)
    assert lengths[1] == 720 and lengths[2] == 19_307  # alpha, alpha sqrt(alpha)
    assert sum(lengths) == T  # every round belongs to exactly one batch
    assert batch_exponent(T, 3) == pytest.approx(2154.43, rel=1e-5)
    five = batch_lengths(T, 5, 100)
    assert five[1:4] == [464, 10_000, 46_416]
    for M in (
        2,
        3,
        4,
        5,
        6,
    ):  # main-text alpha: the unrounded B_M = alpha^(2 - 2^-(M-2)) is T exactly
        alpha = batch_exponent(T, M)
        assert alpha ** (2.0 - 2.0 ** (-(M - 2))) == pytest.approx(T, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(T=st.integers(1, 10**6), M=st.integers(2, 7), d=st.integers(1, 10))
def test_batches_partition_the_horizon(T: int, M: int, d: int) -> None:
    lengths = batch_lengths(T, M, practical_warmup(T, M, d))
    assert sum(lengths) == T and min(lengths) >= 1 and len(lengths) <= M


def test_default_number_of_batches() -> None:
    assert (
        default_n_batches(5000) == 4 and default_n_batches(10**5) == 5 and default_n_batches(2) == 2
    )


# -- calibration and accounting (P1-2, A-3) ------------------------------------------------------
def test_calibration_follows_the_practical_formulas_and_the_accountant_uses_the_noise_drawn() -> (
    None
):
    spec = _spec(T=2000, d=3)
    alg = ShuffleGLM(epsilon=2.0, delta=1e-4, preset="paper")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        cal = alg.calibrate(spec)
    plan = alg.plan_for(spec)
    # rho_for(1, 5e-5), by hand: (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2
    L = math.log(1 / 5e-5)
    rho = (math.sqrt(L + 1.0) - math.sqrt(L)) ** 2
    assert plan.rho_target == pytest.approx(rho, rel=1e-9)
    for k, p in enumerate(plan.matrix):
        # b = ceil(sigma_G^2 g^2 / (Delta^2 n p (1-p))) with sigma_G = sqrt(2) Delta / sqrt(2 rho)
        sigma_G = math.sqrt(2.0) * p.Delta / math.sqrt(2 * rho)
        assert p.b == math.ceil(sigma_G**2 * p.g**2 / (p.Delta**2 * p.n * 0.25 * 0.75))
        assert p.Delta == (1.0 if k == 0 else 1.0 / plan.kappa_star)
    assert plan.kappa_star == pytest.approx(math.sqrt(2 * math.pi))
    assert plan.vector[-1] is None and plan.T_it[-1] == 0  # the last estimate is never used
    eps_k = cal.typed(ShuffleGLMConstants).epsilon_by_batch
    assert eps_k is not None and cal.resolved["epsilon_by_batch"] == list(eps_k)
    for k in range(plan.n_batches):
        assert eps_k[k] == pytest.approx(composed_epsilon(batch_calls(plan, k), 1e-4), rel=1e-12)
    g = cal.guarantee
    assert g.epsilon == pytest.approx(max(eps_k), rel=1e-12)
    assert not g.approximate and g.model == "shuffle" and g.delta == 1e-4
    assert g.epsilon <= 2.0 and cal.meets_request and cal.preset == "paper"


def test_theta_bound_and_links_enter_kappa() -> None:
    plan = shuffle_plan(
        T=1000,
        d=2,
        epsilon=1.0,
        delta=1e-3,
        link=get_link("logistic"),
        S=3.0,
        C_B=1.0,
        reward_range=(0.0, 1.0),
    )
    assert plan.kappa == pytest.approx(2 + math.e**3 + math.e**-3, rel=1e-9)  # spec G-3
    assert plan.kappa_star == pytest.approx(4.0)


def test_invalid_parameters_name_the_parameter() -> None:
    with pytest.raises(ValidationError, match="n_batches"):
        ShuffleGLM(n_batches=1)
    with pytest.raises(ValidationError, match="zeta"):
        ShuffleGLM(zeta=1.5)
    with pytest.raises(ValidationError, match="epsilon"):
        ShuffleGLM(epsilon=-1.0)


# -- scaling and elimination (P1-3, P1-4) ----------------------------------------------------------
_vec = st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3)


@settings(max_examples=100, deadline=None)
@given(xs=st.lists(_vec, min_size=1, max_size=8), th=_vec, scale=st.floats(0.0, 5.0))
def test_weights_never_exceed_mu_dot_or_one_over_kappa_star(
    xs: list[list[float]], th: list[float], scale: float
) -> None:
    plan = shuffle_plan(
        T=1000,
        d=3,
        epsilon=1.0,
        delta=1e-3,
        link=get_link("probit"),
        S=2.0,
        C_B=2.0,
        reward_range=(0.0, 1.0),
    )
    X, theta = np.array(xs), np.array(th)
    Vinv = scale * np.eye(3)
    w = scale_weights(X, theta, Vinv, plan, get_link("probit"))
    dmu = get_link("probit").dmu(X @ theta)
    assert np.all(w <= dmu + 1e-15) and np.all(w <= 1 / plan.kappa_star + 1e-15) and np.all(w > 0)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**31), k=st.integers(1, 4), wid=st.floats(0.0, 3.0))
def test_elimination_never_empties_and_keeps_the_best_arm_under_the_true_parameter(
    seed: int, k: int, wid: float
) -> None:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(10, 3))
    theta_star = rng.normal(size=3)
    thetas = np.broadcast_to(theta_star, (k, 3))  # exact theta* plugged in
    Minvs = np.broadcast_to(np.eye(3), (k, 3, 3))
    alive = eliminate(X, thetas, Minvs, [wid] * k, k)
    assert alive.any() and alive[np.argmax(X @ theta_star)]
    # arbitrary estimates: never empty
    alive2 = eliminate(X, rng.normal(size=(k, 3)), Minvs, [wid] * k, k)
    assert alive2.any()


# -- the protocol on the reference driver --------------------------------------------------------
def _warmup_roles(R: int, seed: int = 0) -> tuple[ShuffleGLM, np.ndarray]:
    """Run the warm-up users of a small problem through client and shuffler into the server."""
    spec = _spec(T=200, d=2)
    alg = _reset(ShuffleGLM(epsilon=1.0, delta=1e-3), spec, R, seed)
    n = alg.plan.lengths[0]
    rng = np.random.default_rng(seed)
    xs = rng.normal(size=(n, spec.d))
    xs /= np.maximum(1.0, np.linalg.norm(xs, axis=1, keepdims=True))
    public = alg.shuffler.assign(0, alg.server.public_state())
    for u in range(n):
        X = np.ascontiguousarray(np.broadcast_to(xs[u], (R, spec.K, spec.d)))
        a = (
            alg.client.choose(u, public, X, alg.streams.policy)
            if R <= 4
            else np.zeros(R, dtype=np.int64)
        )
        alg.shuffler.collect(
            u, alg.client.randomize(u, public, X, a, np.ones(R), alg.streams.client)
        )
    alg.server.receive_batch(n - 1, alg.shuffler.release(n - 1))
    return alg, xs


def test_released_design_matrix_is_unbiased_with_the_analyzer_variance() -> None:
    R = 4000
    alg, xs = _warmup_roles(R)
    V = np.stack(alg.server.matrices)[0] - alg.plan.lam * np.eye(2)
    exact = xs.T @ xs
    params = alg.plan.matrix[0]
    w, _ = cheu.encode_rank_one(xs, 1.0, params.Delta)
    var = cheu.analyzer_variance(w[None], params)[0]  # upper triangle (0,0), (0,1), (1,1)
    iu = np.triu_indices(2)
    err = V[:, iu[0], iu[1]].mean(axis=0) - exact[iu]
    # the mean of R independent releases has std sqrt(var / R): 4 standard errors (two-sided
    # false-alarm probability 6e-5 per entry)
    assert np.all(np.abs(err) <= 4 * np.sqrt(var / R)), (err, np.sqrt(var / R))
    # the empirical variance matches the analyzer's exact variance: its standard error is about
    # var sqrt(2 / R) for near-Gaussian noise, so 5 such errors bound the relative gap by 11%
    emp = V[:, iu[0], iu[1]].var(axis=0)
    assert np.all(np.abs(emp / var - 1) <= 5 * math.sqrt(2 / R))
    assert np.array_equal(V, np.swapaxes(V, 1, 2))  # exactly symmetric


def test_pgd_runs_its_rounds_over_the_same_users_and_reaches_the_constrained_minimiser() -> None:
    spec = _spec(T=300, d=2, link="logistic", S=2.0)
    alg = _reset(ShuffleGLM(epsilon=2000.0, delta=1e-3, n_batches=2), spec, 2)
    env = pb.SyntheticEnv(d=2, K=4, link="logistic", theta_norm=2.0)
    pb.simulate(alg, env, horizon=300, replications=2, engine="reference", seed=3)
    plan = alg.plan
    received = alg.server.received
    n1, T_it = plan.lengths[0], plan.T_it[0]
    # the warm-up batch: one matrix release, then T_it gradient rounds of the same n1 users
    assert received[0] == ("cheu-matrix-sum", 0, n1)
    assert received[1 : 1 + T_it] == [("cheu-vector-sum", s, n1) for s in range(1, T_it + 1)]
    assert received[1 + T_it] == ("cheu-matrix-sum", 0, plan.lengths[1])
    assert len(received) == 2 + T_it  # the last batch runs no P_GD


def test_pgd_estimate_is_within_the_projected_gd_bound_of_the_minimiser() -> None:
    spec = _spec(T=300, d=2, link="logistic", S=2.0)
    alg = _reset(ShuffleGLM(epsilon=5000.0, delta=1e-3, n_batches=2, max_iters=2000), spec, 1)
    rng = np.random.default_rng(5)
    n = alg.plan.lengths[0]
    xs = rng.normal(size=(n, 2)) / 1.5
    xs /= np.maximum(1.0, np.linalg.norm(xs, axis=1, keepdims=True))
    ys = (rng.random(n) < 1 / (1 + np.exp(-xs @ np.array([1.5, -1.0])))).astype(float)
    public = alg.server.public_state()
    for u in range(n):
        X = np.ascontiguousarray(np.broadcast_to(xs[u], (1, 4, 2)))
        alg.shuffler.collect(
            u, alg.client.randomize(u, public, X, np.zeros(1, dtype=np.int64), ys[u : u + 1], rng)
        )
    alg.server.receive_batch(n - 1, alg.shuffler.release(n - 1))
    while alg.server.wants_round():
        for msg in alg.client.respond(n - 1, alg.server.public_state(), rng):
            alg.shuffler.collect(n - 1, msg)
        alg.server.receive_batch(n - 1, alg.shuffler.release(n - 1))
    theta_hat = alg.server.estimate()[0]
    lam = alg.plan.lam_max
    link = get_link("logistic")

    def loss(th: np.ndarray) -> float:
        z = xs @ th
        return float(np.sum(link.m(z) - ys * z) + lam / 2 * th @ th) / n

    ref = minimize(
        loss, np.zeros(2), constraints=[{"type": "ineq", "fun": lambda th: 4.0 - th @ th}]
    )
    assert np.linalg.norm(theta_hat) <= 2.0 + 1e-9
    # averaged projected GD with step D/(L sqrt(T)) has excess mean loss <= D L / sqrt(T)
    # (Bubeck 2015, Thm 3.2); the remaining noise at epsilon = 5000 adds < 1e-3
    D, L, T_it = 4.0, alg.plan.L[0], alg.plan.T_it[0]
    assert loss(theta_hat) - ref.fun <= D * L / math.sqrt(T_it) + 1e-3


def test_server_holds_no_user_data_and_rejects_other_objects() -> None:
    alg, _ = _warmup_roles(2)
    seen = [type(v) for v in vars(alg.server).values()]
    assert Client not in seen and not any(isinstance(v, Client) for v in vars(alg.server).values())
    with pytest.raises(TrustBoundaryError):
        alg.server.receive_batch(0, {"ones": np.zeros((2, 3))})  # type: ignore[arg-type]
    with pytest.raises(TrustBoundaryError):
        alg.shuffler.collect(0, np.zeros(3))
    # a P_GD round for a batch other than the client's own is refused
    public = alg.server.public_state()
    forged = type(public)({**dict(public), "gd_batch": np.full(2, 1, dtype=np.int64)})
    with pytest.raises(TrustBoundaryError):
        alg.client.respond(0, forged, np.random.default_rng(0))


@pytest.mark.slow
def test_estimate_points_at_theta_star_with_weak_privacy_and_regret_stays_below_uniform() -> None:
    # probit, d = 2, T = 1500, 4 replications.  With the practical constants the confidence widths
    # (gamma sqrt(kappa) ~ 110 for V) stay above the arms' mean gaps at this horizon, so the play
    # is the G-optimal design on (nearly) all arms and the regret is close to a uniform policy's;
    # the estimate itself must already point at theta*.
    env = pb.SyntheticEnv(d=2, K=10, link="probit", theta_norm=2.0)
    kw = {"horizon": 1500, "replications": 4, "seed": 7, "engine": "reference"}
    uni = pb.simulate(pb.make("uniform"), env, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        alg = ShuffleGLM(epsilon=200.0)
        res = pb.simulate(alg, env, **kw)
    theta_star = env._theta
    est = alg.estimate()
    cos = np.sum(est * theta_star, axis=1) / (
        np.linalg.norm(est, axis=1) * np.linalg.norm(theta_star, axis=1)
    )
    assert np.all(cos > 0.9), cos
    # final regret per replication: mean over 4 replications, 4 standard errors of the difference
    a, b = res.final_regret, uni.final_regret
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert a.mean() <= b.mean() + 4 * se, (a.mean(), b.mean(), se)


# -- aggregate path against the message path -----------------------------------------------------
def _warmup_estimate(path: str, R: int, seed: int) -> np.ndarray:
    """theta_hat_1 of R replications of the same warm-up users (fixed data), through ``path``."""
    spec = _spec(T=200, d=2, link="logistic", S=2.0)
    alg = _reset(ShuffleGLM(epsilon=1.0, delta=1e-3, path=path), spec, R, seed)
    data = np.random.default_rng(99)
    n = alg.plan.lengths[0]
    xs = data.normal(size=(n, 2))
    xs /= np.maximum(1.0, np.linalg.norm(xs, axis=1, keepdims=True))
    ys = (data.random(n) < 0.5).astype(float)
    public = alg.server.public_state()
    for u in range(n):
        X = np.ascontiguousarray(np.broadcast_to(xs[u], (R, 4, 2)))
        alg.shuffler.collect(
            u,
            alg.client.randomize(
                u, public, X, np.zeros(R, dtype=np.int64), np.full(R, ys[u]), alg.streams.client
            ),
        )
    alg.server.receive_batch(n - 1, alg.shuffler.release(n - 1))
    while alg.server.wants_round():
        for msg in alg.client.respond(n - 1, alg.server.public_state(), alg.streams.client):
            alg.shuffler.collect(n - 1, msg)
        alg.server.receive_batch(n - 1, alg.shuffler.release(n - 1))
    est = alg.server.estimate()
    assert est is not None
    return est


def test_aggregate_path_matches_the_message_path_in_distribution() -> None:
    from scipy.stats import ks_2samp

    R = 3000
    msg = _warmup_estimate("messages", R, seed=1)
    agg = _warmup_estimate("aggregate", R, seed=2)
    assert msg.std(axis=0).min() > 0.01  # the privacy noise moves the estimate: the test has power
    for j in range(2):
        # two-sample KS at level 1e-3 per coordinate (fixed seeds; the estimate is a continuous
        # statistic of the T_it released rounds, so the paths agree iff every round's law agrees)
        assert ks_2samp(msg[:, j], agg[:, j]).pvalue > 1e-3, j


def test_aggregate_release_has_the_message_paths_histogram_law() -> None:
    from scipy.stats import ks_2samp

    params = cheu.calibrated_params(20, 2, 1.0, delta=1e-3, rho=0.05, kind="vector")
    rng = np.random.default_rng(4)
    v = rng.normal(size=(1, 20, 2)) / 2
    w, _ = cheu.encode_vectors(np.broadcast_to(v, (4000, 20, 2)).copy(), 1.0)
    via_messages = cheu.shuffle(cheu.randomize_users(w, params, rng), rng)["ones"]
    direct = cheu.aggregate_release(w, params, rng)["ones"]
    for j in range(2):
        # same mean within 4 standard errors of the difference, and KS at level 1e-3
        diff = via_messages[:, j].mean() - direct[:, j].mean()
        se = math.sqrt((via_messages[:, j].var() + direct[:, j].var()) / 4000)
        assert abs(diff) <= 4 * se
        assert ks_2samp(via_messages[:, j], direct[:, j]).pvalue > 1e-3


def test_gamma_override_changes_the_policy_only() -> None:
    spec = _spec(T=2000, d=3)
    base, tuned = ShuffleGLM(epsilon=2.0), ShuffleGLM(epsilon=2.0, gamma=0.5)
    assert tuned.plan_for(spec).gamma == 0.5 and base.plan_for(spec).gamma > 1.0
    assert tuned.plan_for(spec).constants.gamma_eq26 == base.plan_for(spec).gamma  # type: ignore[union-attr]
    assert tuned.guarantee_for(spec) == base.guarantee_for(spec)
    with pytest.raises(ValidationError, match="gamma"):
        ShuffleGLM(gamma=0.0)


def test_with_a_hand_set_gamma_it_learns_and_regret_falls_as_epsilon_grows() -> None:
    # probit, d = 2, K = 10, T = 1500, 4 replications, gamma = 0.3 (Remark B.1: a hyperparameter)
    env = pb.SyntheticEnv(d=2, K=10, link="probit", theta_norm=2.0)
    kw = {"horizon": 1500, "replications": 4, "seed": 7, "engine": "reference"}
    uni = pb.simulate(pb.make("uniform"), env, **kw).final_regret
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        weak = pb.simulate(
            ShuffleGLM(epsilon=8.0, gamma=0.3, path="aggregate"), env, **kw
        ).final_regret
        strong = pb.simulate(
            ShuffleGLM(epsilon=0.5, gamma=0.3, path="aggregate"), env, **kw
        ).final_regret
    assert weak.mean() < 0.5 * uni.mean(), (weak, uni)
    # same seed = same instances: paired differences, one-sided 2-standard-error bound (2.3 % level)
    diff = strong - weak
    assert diff.mean() > 2 * diff.std(ddof=1) / math.sqrt(diff.size), (strong, weak)


# -- theory mode (the paper's literal constants) ---------------------------------------------------
def test_theory_constants_are_the_papers_formulas() -> None:
    from privbandits.algorithms.sarmasarkar.shuffle_plan import theory_constants

    T, d, M, eps, delta, R, S, kappa, ks = (
        5000,
        3,
        4,
        4.0,
        1e-3,
        1.0,
        2.0,
        18.52,
        math.sqrt(2 * math.pi),
    )
    c = theory_constants(
        T=T, d=d, M=M, epsilon=eps, delta=delta, R=R, S=S, kappa=kappa, kappa_star=ks
    )
    sigma = 8 * R * math.log(d * d / delta) / (ks * eps)  # eq. (22) with the constant 8 of eq. (23)
    lam = 20 * d * R * math.log(T) + sigma * (
        2 * math.sqrt(math.log(2 * d * M * T / delta)) + 4 * math.sqrt(d)
    )
    spread = sigma * (4 * math.sqrt(d) + 2 * math.sqrt(math.log(2 * M * T / delta)))
    nu = R * S**2 / eps * math.sqrt(d * math.log(T * d / delta) ** 3)
    gamma = (
        24 * R * S * math.sqrt(math.log(T) + d)
        + R * (math.log(T) + d) / math.sqrt(lam - spread)
        + 2 * S * math.sqrt(lam + spread)
        + math.sqrt(4 * R * S * nu)
    )  # eq. (26)
    alpha = T ** (1 / (2 * (1 - 2 ** (-M + 1))))
    B1 = (math.sqrt(kappa) * math.exp(3 * S) * d**2 * gamma**2 * alpha / S) ** (2 / 3)  # eq. (6)
    assert c == pytest.approx(
        {
            "sigma_tilde": sigma,
            "nu": nu,
            "lambda": lam,
            "lambda_max": lam + spread,
            "lambda_min": lam - spread,
            "gamma": gamma,
            "B1": B1,
        },
        rel=1e-12,
    )
    assert c["lambda_min"] >= 20 * d * R * math.log(T)  # the condition of Theorem F.1
    assert B1 > T  # the literal warm-up outlasts any simulated horizon


def test_theory_pgd_rounds_match_the_spec_numbers() -> None:
    """Spec O-1: Algorithm 7 at n = 1000, d = 5, eps = 0.5, delta = 0.005, and the bisection fallback."""
    from privbandits.algorithms.sarmasarkar.shuffle_plan import pgd_theory_rounds

    T_it, e_it, d_it, slack = pgd_theory_rounds(1000, 5, 0.5, 0.005, 10**9)
    assert (
        T_it == 18
        and e_it == pytest.approx(0.0181017, rel=1e-4)
        and d_it == pytest.approx(2.63158e-4, rel=1e-4)
    )
    assert T_it * d_it + slack == pytest.approx(0.005, rel=1e-12)
    assert pgd_theory_rounds(10**4, 5, 0.5, 0.005, 10**9)[0] == 1194
    T6, e6, d6, s6 = pgd_theory_rounds(10**6, 5, 0.5, 0.005, 10**9)
    assert T6 == 5_618_176 and e6 == pytest.approx(
        3.22917e-5, rel=1e-4
    )  # Alg. 7's 3.24010e-5 would compose to 0.5017
    composed = math.sqrt(2 * T6 * math.log(1 / s6)) * e6 + T6 * e6 * math.expm1(e6)
    assert composed == pytest.approx(0.5, rel=1e-9) and composed <= 0.5
    assert pgd_theory_rounds(10**4, 5, 0.5, 0.005, 40)[0] == 40  # max_iters caps the count


def test_theory_plan_uses_eq_122_and_its_guarantee_is_computed_from_the_noise() -> None:
    from privbandits.algorithms.sarmasarkar.shuffle_plan import plan_guarantee
    from privbandits.privacy.accounting import ApproxDP, compose_advanced

    eps, delta = 2.0, 1e-4
    kw = {
        "T": 6000,
        "d": 2,
        "epsilon": eps,
        "delta": delta,
        "link": get_link("logistic"),
        "S": 1.0,
        "C_B": 1.0,
        "reward_range": (0.0, 1.0),
        "mode": "theory",
        "max_iters": 30,
    }
    assert shuffle_plan(**kw).lengths == [6000]  # eq. (6): the whole run is warm-up
    plan = shuffle_plan(**kw, warmup=400)
    assert len(plan.lengths) >= 2 and plan.lengths[0] == 400
    worst = 0.0
    for k, n in enumerate(plan.lengths):
        m = plan.matrix[k]
        ref = cheu.theory_params(
            n, 2, eps / 2, delta / 2, 1.0 if k == 0 else 1.0 / plan.kappa_star, kind="matrix"
        )
        assert (m.mode, m.b, m.g) == ("theory", ref.b, ref.g)
        e_k = m.guarantee().epsilon
        v = plan.vector[k]
        if v is not None:
            assert v.mode == "theory" and v.Delta == pytest.approx(
                1.0 + 1.0 + plan.lam_max / n
            )  # RS + S + S lam/n
            assert plan.eta[k] == pytest.approx(
                2.0 / math.sqrt(plan.T_it[k])
            )  # 2S / (R S sqrt(T_it))
            e_k += compose_advanced(
                ApproxDP(v.guarantee().epsilon, v.delta), plan.T_it[k], plan.pgd_slack[k]
            ).epsilon
        worst = max(worst, e_k)
    g, by_batch = plan_guarantee(plan, delta)
    assert g.epsilon == pytest.approx(worst, rel=1e-12) and max(by_batch) == pytest.approx(
        worst, rel=1e-12
    )
    assert not g.approximate and g.delta <= delta * (1 + 1e-9)
    # eq. (122) at the literal d certifies the d(d+1)/2-dimensional sum only slightly above eps/2
    assert eps / 2 < plan.matrix[0].theorem_epsilon() < 1.2 * eps / 2
    with pytest.raises(ValidationError, match="epsilon"):
        shuffle_plan(**{**kw, "epsilon": 40.0})


def test_theory_mode_runs_end_to_end_with_its_accounted_guarantee() -> None:
    env = pb.SyntheticEnv(d=2, K=4, link="probit", theta_norm=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        alg = ShuffleGLM(epsilon=2.0, delta=1e-3, mode="theory")
        res = pb.simulate(alg, env, horizon=300, replications=2, seed=3, engine="reference")
    g = alg.calibration.guarantee
    assert not g.approximate and g.model == "shuffle" and "theory constants" in g.notes
    assert g.epsilon == pytest.approx(
        alg.plan.matrix[0].theorem_epsilon(), rel=1e-12
    )  # one batch: the warm-up sum
    assert alg.plan.lengths == [300] and res.final_regret.shape == (2,)


# -- spec P1-6 and P1-5 (privacy effectively off) -----------------------------------------------------
def _warmup_leverage(B1: int, seed: int, d: int = 3, K: int = 20, n_test: int = 2000) -> float:
    """Mean over fresh context sets of ``max_x ||x||^2_{V^-1}`` after a warm-up of ``B1`` rounds.

    The warm-up runs the client's own choice (G-optimal design on each fresh set) and ``V`` is the
    exact design matrix plus ``lambda I`` (privacy off: no summation noise).
    """
    from privbandits.algorithms.sarmasarkar.shuffle_glm import ShuffleGLMClient, ShuffleGLMServer
    from privbandits.envs.contexts import sample_contexts

    spec = EnvSpec(
        d=d,
        K=K,
        horizon=10 * B1,
        link=get_link("logistic"),
        context_bound=1.0,
        reward_range=(0.0, 1.0),
        theta_bound=2.0,
    )
    plan = shuffle_plan(
        T=10 * B1,
        d=d,
        epsilon=1e4,
        delta=1e-3,
        link=spec.link,
        S=2.0,
        C_B=1.0,
        reward_range=(0.0, 1.0),
        warmup=B1,
    )
    client = ShuffleGLMClient(plan, spec)
    public = ShuffleGLMServer(plan, 1).public_state()  # the warm-up's (batch 0)
    rng = np.random.default_rng(seed)
    X, _ = sample_contexts(rng, (B1, K), d, "ball")
    V = np.eye(d) * plan.lam
    for t in range(B1):
        a = client.choose(t, public, X[t][None], rng)[0]
        V += np.outer(X[t, a], X[t, a])
    Vinv = np.linalg.inv(V)
    Z, _ = sample_contexts(rng, (n_test, K), d, "ball")
    return float(np.einsum("nkd,de,nke->nk", Z, Vinv, Z).max(axis=1).mean())


def test_p1_6_warmup_leverage_scales_as_one_over_B1() -> None:
    """Spec P1-6 (Lemma I.1): after the warm-up, E max_x ||x||^2_{V^-1} = O(d^2 / B_1), and doubling
    B_1 halves it.  Four seeds per B_1; the ratio of means must lie in [1.7, 2.3] for each doubling
    (the seed-to-seed spread of the means is a few percent here, and lambda = 1 adds a small
    constant that pulls the ratio slightly below 2)."""
    means = {B: np.mean([_warmup_leverage(B, s) for s in range(4)]) for B in (150, 300, 600)}
    assert means[150] <= 9 / 150 * 2  # O(d^2 / B_1) with a constant below 2 (d = 3)
    for lo, hi in ((150, 300), (300, 600)):
        assert 1.7 <= means[lo] / means[hi] <= 2.3, means


def _shuffle_glm_regret(T: int, gamma: float | None, R: int = 4, seed: int = 11) -> float:
    env = pb.SyntheticEnv(d=3, K=20, link="logistic", theta_norm=2.0, contexts="ball")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        res = pb.simulate(
            ShuffleGLM(epsilon=1e4, delta=1e-3, gamma=gamma, path="aggregate"),
            env,
            horizon=T,
            replications=R,
            seed=seed,
            engine="auto",
        )
    assert res.engine == "compiled"  # the batch path (same trajectory as the reference driver)
    return float(res.final_regret.mean())


@pytest.mark.slow
def test_p1_5_regret_is_sublinear_with_privacy_effectively_off() -> None:
    """Spec P1-5 (privacy off, d = 3, logistic, S = 2): log-log slope of the regret against T at most 0.65.

    epsilon = 1e4 makes the summation noise negligible (privacy effectively off).  The spec's range
    T in [1e4, 3e5], on the batch path (engine "auto"; the reference driver's trajectory).  With the
    eq. (26) confidence radius of the practical constants the widths stay above every gap at these horizons and the play is the G-optimal design (linear regret, slope
    about 1); the slope is asserted with the radius as a hand-set hyperparameter (Remark B.1),
    gamma = 0.3, and the default's slope is asserted to stay above 0.9 (the known limitation
    reported in the sarmasarkar2026-alg1 reproduction).
    """
    Ts = np.array([10_000, 30_000, 100_000, 300_000])
    tuned = np.array([_shuffle_glm_regret(int(T), 0.3) for T in Ts])
    slope = np.polyfit(np.log(Ts), np.log(tuned), 1)[0]
    assert slope <= 0.65, (tuned, slope)
    default = np.array([_shuffle_glm_regret(int(T), None, R=2) for T in Ts[:2]])
    assert np.log(default[1] / default[0]) / np.log(Ts[1] / Ts[0]) > 0.9, default


def test_shuffler_refuses_an_off_layout_count_message_after_the_batch_first() -> None:
    # every later message of a batch is checked against the first one's randomizer and layout
    from privbandits.algorithms.sarmasarkar.shuffle_glm import ShuffleGLMShuffler
    from privbandits.core.errors import ValidationError as VErr
    from privbandits.core.messages import PrivatizedMessage

    def msg(count: np.ndarray, mech: str = "cheu-vector-sum") -> PrivatizedMessage:
        return PrivatizedMessage(payload={"count": count}, mechanism=mech)

    ok = np.zeros((2, 3), dtype=np.int64)
    bad = [
        msg(np.zeros((2, 4), dtype=np.int64)),  # another shape
        msg(ok.copy(), "cheu-matrix-sum"),  # another randomizer of the family
        msg(ok.copy(), "gaussian"),  # not a Cheu et al. message
        msg(np.full((2, 3), np.nan)),  # not finite
        msg(np.zeros((2, 3), dtype=complex)),  # not real
        PrivatizedMessage(
            payload={"count": ok.copy(), "x": ok.copy()}, mechanism="cheu-vector-sum"
        ),
    ]
    for m in bad:
        sh = ShuffleGLMShuffler(np.random.default_rng(0))
        sh.collect(0, msg(ok.copy()))
        sh.collect(1, msg(ok.copy()))
        with pytest.raises((TrustBoundaryError, VErr)):
            sh.collect(2, m)
        assert sh.pending == 2
    sh = ShuffleGLMShuffler(np.random.default_rng(0))
    for u in range(3):
        sh.collect(u, msg(np.full((2, 3), u, dtype=np.int64)))
    assert np.array_equal(sh.release(2).payload["ones"], np.full((2, 3), 3))
    # a new batch takes its own first message's layout
    sh.collect(3, msg(np.zeros((2, 4), dtype=np.int64)))
    with pytest.raises(TrustBoundaryError):
        sh.collect(4, msg(ok.copy()))
