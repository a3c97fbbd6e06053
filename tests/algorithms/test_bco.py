"""Bandit convex optimization: domains, loss environments, FKM, two-point BCO (Alg. 4) and
LDP-TwoPoint (Alg. 2) of Zheng et al. 2020 (spec section 7, items 7, 9-13)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privbandits as pb
from privbandits.algorithms.bco.ldp_two_point import LDPTwoPointConstants
from privbandits.algorithms.bco.privatizer import privatize_difference
from privbandits.algorithms.bco.two_point import TwoPointConstants, TwoPointState
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.core.convex import Domain
from privbandits.core.errors import DataBoundError, ValidationError
from privbandits.core.rng import make_streams


# -- domains --------------------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(
    kind=st.sampled_from(["ball", "box"]),
    size=st.floats(0.1, 5),
    d=st.integers(1, 6),
    shrink=st.floats(0, 0.99),
    seed=st.integers(0, 2**31),
)
def test_projection_lands_in_the_shrunk_set_and_is_idempotent(
    kind: str, size: float, d: int, shrink: float, seed: int
) -> None:
    dom = Domain(kind, size, d)
    x = np.random.default_rng(seed).normal(scale=3 * size, size=(20, d))
    p = dom.project(x, shrink)
    assert np.all(dom.contains(p, shrink))
    np.testing.assert_allclose(dom.project(p, shrink), p, atol=1e-12)
    inside = dom.contains(x, shrink, rtol=0.0)
    np.testing.assert_allclose(p[inside], x[inside])
    # the Euclidean projection is a contraction
    q = dom.project(x[::-1], shrink)
    assert np.all(np.linalg.norm(p - q, axis=1) <= np.linalg.norm(x - x[::-1], axis=1) + 1e-9)
    assert dom.inner_radius <= dom.outer_radius


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"domain": "sphere"}, "domain"),
        ({"domain_size": -1.0}, "domain_size"),
        ({"center_norm": 0.8, "spread": 0.5}, "center_norm"),
        ({"loss": "hinge"}, "loss"),
    ],
)
def test_invalid_domains_and_losses_are_rejected(kw: dict, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        pb.ConvexLossEnv(d=3, **kw)


@pytest.mark.parametrize("loss", ["quadratic", "logistic", "linear"])
@pytest.mark.parametrize("domain", ["ball", "box"])
def test_loss_environment_declares_true_bounds(loss: str, domain: str) -> None:
    # losses stay in the declared range on X, are G-Lipschitz (random pairs), x* minimizes F
    env = pb.ConvexLossEnv(d=4, loss=loss, domain=domain, domain_size=2.0)
    spec = env.reset(6, make_streams(0), 50)
    rng = np.random.default_rng(1)
    x = env.domain.project(rng.normal(scale=3, size=(6, 40, 4)))
    y = env.domain.project(rng.normal(scale=3, size=(6, 40, 4)))
    lo, hi = spec.loss_range
    for _ in range(5):
        P = env.next_round()
        fx, fy = env.loss_values(P, x), env.loss_values(P, y)
        assert fx.min() >= lo - 1e-12 and fx.max() <= hi + 1e-12
        assert np.all(np.abs(fx - fy) <= spec.lipschitz * np.linalg.norm(x - y, axis=2) + 1e-12)
    _, reg = env.step(x[:, :3])
    assert np.all(reg >= -1e-9)
    np.testing.assert_allclose(env.step(env.theta_star[:, None, :])[1], 0.0, atol=1e-12)


def test_queries_outside_the_domain_and_arm_algorithms_are_rejected() -> None:
    env = pb.ConvexLossEnv(d=2)
    env.reset(2, make_streams(0), 5)
    env.next_round()
    with pytest.raises(ValidationError, match="outside the decision set"):
        env.step(np.full((2, 1, 2), 3.0))
    with pytest.raises(ValidationError, match="query points"):
        pb.simulate(pb.make("ucb1"), env, 5)
    with pytest.raises(ValidationError, match="loss environment"):
        pb.simulate(pb.make("fkm"), pb.MultiArmedEnv(K=3), 5)
    with pytest.raises(ValidationError, match="reference or compiled driver"):
        pb.simulate(pb.make("fkm"), env, 5, engine="aggregate")
    # without the clip the device refuses users, which only the reference driver reports
    with pytest.raises(ValidationError, match="reference driver only"):
        pb.simulate(pb.make("ldp-twopoint", clip=False), env, 5, engine="compiled")


@pytest.mark.parametrize("name", ["chen-elim", "chen-jdp", "squarecb", "squarecb-jdp", "ldp-ols"])
def test_arm_index_algorithms_are_refused_on_a_loss_environment(name: str) -> None:
    """Arm-index algorithms whose compiled or NumPy rounds would index the loss parameters as
    contexts (numba TypingError, IndexError) are refused before the first round, naming the kind
    and the algorithms that do run there."""
    env = pb.ConvexLossEnv(d=3)
    with pytest.raises(ValidationError, match=r"plays arm indices.*kind = \"convex\".*fkm"):
        pb.simulate(pb.make(name), env, 2, replications=1, engine="reference")


def test_ldp_onepoint_runs_on_a_loss_environment_with_a_query_point_base() -> None:
    env = pb.ConvexLossEnv(d=2)
    assert pb.make("ldp-onepoint", base="fkm").plays_continuous_actions()
    assert not pb.make("ldp-onepoint").plays_continuous_actions()
    pb.simulate(pb.make("ldp-onepoint", base="fkm"), env, 3, replications=1)


def test_schedule_errors_name_the_parameter() -> None:
    env = pb.ConvexLossEnv(d=2, loss="linear")
    with pytest.raises(ValidationError, match="sc_modulus"):
        pb.simulate(pb.make("two-point-bco", schedule="strongly_convex"), env, 5)
    with pytest.raises(ValidationError, match="rho"):
        pb.simulate(pb.make("ldp-twopoint", rho=2.0), env, 5)


# -- geometry and estimators -----------------------------------------------------------------------
def test_two_point_geometry() -> None:
    # spec section 7 item 11
    dom = Domain("ball", 1.0, 4)
    st_ = TwoPointState(
        dom,
        50,
        TwoPointConstants(
            T=30,
            rho=0.1,
            xi=0.1,
            schedule="convex",
            step="paper",
            eta_scale=1.0,
            sigma=0.0,
            mu=None,
            eta=0.5,
        ),
        np.random.default_rng(0),
    )
    rng = np.random.default_rng(1)
    for t in range(30):
        pts = st_.query()
        assert np.all(dom.contains(st_.x, 0.1)) and np.all(dom.contains(pts))
        np.testing.assert_allclose(np.linalg.norm(pts[:, 0] - pts[:, 1], axis=1), 0.2)
        np.testing.assert_allclose(np.linalg.norm(st_.u, axis=1), 1.0)
        st_.step(t, rng.normal(scale=5.0, size=50))


N_MC = 200_000


def _two_point_estimates(
    c: np.ndarray, sigma: float, rho: float, fixed_noise: np.ndarray | None = None
):  # type: ignore[no-untyped-def]
    """g_tilde = d/(2 rho) m u for linear f(x) = c^T x at x = 0, over N_MC draws of u (and n)."""
    d = c.size
    rng = np.random.default_rng(7)
    u = rng.normal(size=(N_MC, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    pts = np.stack([rho * u, -rho * u], axis=1)
    vals = np.einsum("nkd,d->nk", pts, c)
    if fixed_noise is None:
        out = np.empty(N_MC)
        privatize_difference(
            np.random.default_rng(8), vals, pts, 10.0, True, sigma, False, np.empty(d), out
        )
    else:
        out = (
            vals[:, 0]
            - vals[:, 1]
            + np.einsum("nkd,d->nk", pts, fixed_noise) @ np.array([1.0, -1.0])
        )
    return (d / (2 * rho)) * out[:, None] * u


def test_private_two_point_estimate_is_unbiased_for_linear_losses() -> None:
    # spec section 7 item 12: E[g_tilde] = c over u and n; = c + n over u with n fixed.  Each
    # coordinate has variance <= d (||c||^2 + sigma^2) (module docstring of ldp_two_point); 5 s.e.
    c, sigma, rho = np.array([0.3, -0.2, 0.1]), 0.8, 0.05
    se = math.sqrt(3 * (c @ c + sigma**2) / N_MC)
    g = _two_point_estimates(c, sigma, rho)
    assert np.all(np.abs(g.mean(axis=0) - c) < 5 * se)
    n = np.array([0.5, 0.0, -1.0])
    g = _two_point_estimates(c, sigma, rho, fixed_noise=n)
    assert np.all(np.abs(g.mean(axis=0) - (c + n)) < 5 * math.sqrt(3 * ((c + n) @ (c + n)) / N_MC))


def test_fkm_estimate_is_the_gradient_for_linear_losses() -> None:
    # spec section 7 item 13: E_u[(d/rho) f(x + rho u) u] = a for f(x) = a^T x + b; per coordinate
    # variance <= (d/rho)^2 max f^2 / d; 5 s.e.
    a, b, x, rho, d = np.array([0.4, -0.3, 0.2, 0.1]), 0.7, np.array([0.1, 0.0, -0.2, 0.3]), 0.2, 4
    rng = np.random.default_rng(3)
    u = rng.normal(size=(N_MC, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    f = (x + rho * u) @ a + b
    g = (d / rho) * f[:, None] * u
    se = (d / rho) * np.abs(f).max() / math.sqrt(d * N_MC)
    assert np.all(np.abs(g.mean(axis=0) - a) < 5 * se)


# -- LDP-TwoPoint ---------------------------------------------------------------------------------
def test_two_point_message_noise_has_the_mechanism_scale() -> None:
    # spec section 7 item 7: m - a ~ N(0, 4 rho^2 sigma^2), and 2 rho sigma is the Gaussian-mechanism
    # std for sensitivity 4 rho G (paper preset: classic formula)
    env = pb.ConvexLossEnv(d=3)
    spec = env.reset(1, make_streams(0), 1000)
    alg = pb.make("ldp-twopoint", epsilon=0.7, delta=1e-3, preset="paper")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        c = alg.calibrate(spec).typed(LDPTwoPointConstants)
    rho, sigma, G = c.rho, c.sigma, spec.lipschitz
    assert 2 * rho * sigma == pytest.approx(
        4 * rho * G * math.sqrt(2 * math.log(1.25 / 1e-3)) / 0.7
    )
    u = np.random.default_rng(0).normal(size=(N_MC, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    pts = np.stack([rho * u, -rho * u], axis=1)
    vals = np.zeros((N_MC, 2))
    out = np.empty(N_MC)
    privatize_difference(
        np.random.default_rng(1), vals, pts, 2 * rho * G, True, sigma, False, np.empty(3), out
    )
    var = 4 * rho**2 * sigma**2
    assert abs(out.mean()) < 5 * math.sqrt(var / N_MC)
    assert abs(out.var(ddof=1) - var) < 5 * var * math.sqrt(
        2 / N_MC
    )  # Var(s^2) = 2 var^2 / N (Gaussian)


def test_strict_two_point_guarantee_meets_the_request() -> None:
    from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

    env = pb.ConvexLossEnv(d=3)
    spec = env.reset(1, make_streams(0), 1000)
    cal = pb.make("ldp-twopoint", epsilon=1.0, delta=1e-4).calibrate(spec)
    c = cal.typed(LDPTwoPointConstants)
    pl = GaussianPrivacyLoss(2 * c.rho * c.sigma, sensitivity=c.sensitivity)
    assert pl.get_delta_for_epsilon(1.0) <= 1e-4 * (1 + 1e-6)
    assert cal.guarantee.epsilon == pytest.approx(1.0, rel=1e-6) and cal.meets_request


def _drive_two_point(alg, env, T, seed):  # type: ignore[no-untyped-def]
    streams = make_streams(seed)
    spec = env.reset(3, streams, T)
    alg.reset(spec, 3, streams)
    pts_log, msgs = [], []
    for t in range(T):
        X = env.next_round()
        public = alg.server.public_state()
        pts = alg.client.choose(t, public, X, streams.policy)
        losses, _ = env.step(pts)
        msg = alg.client.randomize(t, public, X, pts, losses, streams.client)
        assert np.all(
            msg.payload["difference"] != losses[:, 0] - losses[:, 1]
        )  # item 8: noisy payloads
        alg.server.receive(t, msg)
        pts_log.append(pts)
        msgs.append(msg.payload["difference"])
    return pts_log, msgs


def test_ldp_two_point_is_algorithm_4_on_the_virtual_losses() -> None:
    # spec section 7 item 10: same seed, Algorithm 4 fed the recorded messages queries the same points
    T, seed = 200, 3
    env = pb.ConvexLossEnv(d=3, loss="logistic")
    kw = {"step": "paper", "rho": 0.05}
    pts_log, msgs = _drive_two_point(pb.make("ldp-twopoint", epsilon=1.0, **kw), env, T, seed)
    streams = make_streams(seed)
    spec = env.reset(3, streams, T)
    box = pb.make("two-point-bco", **kw)
    box.reset(spec, 3, streams)
    for t in range(T):
        np.testing.assert_allclose(box.select(t, None), pts_log[t], atol=1e-12)
        box.state.step(t, msgs[t])


@pytest.mark.parametrize("schedule", ["convex", "strongly_convex"])
def test_tiny_noise_reproduces_algorithm_4(schedule: str) -> None:
    # spec section 7 item 9 (paper step: the same tuning whatever the noise)
    env = pb.ConvexLossEnv(d=3)
    kw = {"step": "paper", "schedule": schedule}
    priv = pb.simulate(
        pb.make("ldp-twopoint", epsilon=1e12, **kw), env, 500, replications=3, seed=1
    )
    plain = pb.simulate(pb.make("two-point-bco", **kw), env, 500, replications=3, seed=1)
    # the trajectories differ only by the injected noise (message std ~ 4 rho G 1e-6 at epsilon =
    # 1e12, amplified at most by the early strongly convex steps 1/(mu t)): relative 1e-3 bounds it
    np.testing.assert_allclose(priv.regret, plain.regret, rtol=1e-3, atol=1e-8)
    assert not np.allclose(
        pb.simulate(
            pb.make("ldp-twopoint", epsilon=1.0, **kw), env, 500, replications=3, seed=1
        ).regret,
        plain.regret,
        rtol=1e-3,
    )


def test_out_of_lipschitz_difference_without_clipping_raises() -> None:
    alg = pb.make("ldp-twopoint", clip=False)
    env = pb.ConvexLossEnv(d=2)
    streams = make_streams(0)
    alg.reset(env.reset(2, streams, 100), 2, streams)
    public = alg.server.public_state()
    pts = alg.client.choose(0, public, np.zeros((2, 2)), streams.policy)
    with pytest.raises(DataBoundError, match=r"exceeds G \|\|x_1 - x_2\|\|"):
        alg.client.randomize(
            0, public, np.zeros((2, 2)), pts, np.array([[1.0, 0.0], [0.0, 0.0]]), streams.client
        )


# -- regret -----------------------------------------------------------------------------------------
def test_regret_orderings_and_sublinear_growth() -> None:
    # spec section 7 item 17 on E1's quadratic losses (d = 5), 4 replications: non-private <= LDP,
    # regret decreasing in epsilon (gaps of several standard deviations at these sizes), and the
    # average regret R(T)/T decreasing between T/10 and T
    env = pb.ConvexLossEnv(d=5)
    T = 6000

    def final(name: str, **kw: object) -> np.ndarray:
        r = pb.simulate(
            pb.make(name, **kw), env, T, replications=4, seed=2, checkpoints=[T // 10, T]
        )
        return r.regret.mean(axis=0)

    two = {eps: final("ldp-twopoint", epsilon=eps) for eps in (1.0, 10.0)}
    two_np = final("two-point-bco")
    assert two_np[1] < two[10.0][1] < two[1.0][1]
    one = {eps: final("ldp-onepoint", base="fkm", epsilon=eps) for eps in (1.0, 10.0)}
    one_np = final("fkm")
    assert one_np[1] < one[10.0][1] < one[1.0][1]
    for curve in (two_np, one_np, one[1.0]):
        assert curve[1] / T < curve[0] / (T // 10)


def test_readme_loss_environment_example_runs() -> None:
    import contextlib
    import io
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "add-your-own-algorithm.md"
    text = page.read_text(encoding="utf-8")
    blocks = [
        b
        for b in re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
        if "pb.ConvexLossEnv(" in b
    ]
    assert len(blocks) == 1
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], f"{page}:ConvexLossEnv", "exec"), {"__name__": "readme_convex"})
    rows = [line.split() for line in out.getvalue().strip().splitlines()]
    assert [r[0] for r in rows] == ["fkm", "ldp-onepoint", "two-point-bco", "ldp-twopoint"]
    assert all(0 < float(r[1]) < 2000 * 1.0 for r in rows)  # below the loss range times T
