"""LDP-OnePoint (Zheng et al. 2020, Algorithm 1): calibration, randomizer law, reduction, errors,
audit (spec zheng2020 section 7, items 1, 4, 8, 9, 10)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privbandits as pb
from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.algorithms.ldp_onepoint import calibrate_onepoint, inflated_spec, privatize_values
from privbandits.algorithms.ldp_onepoint.calibration import noise_bound
from privbandits.auditing import audit_mechanism
from privbandits.core.errors import DataBoundError, ValidationError
from privbandits.core.messages import PrivatizedMessage
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec


def _env(**kw):  # type: ignore[no-untyped-def]
    return pb.MultiArmedEnv(K=4, means=kw.pop("means", [0.2, 0.4, 0.5, 0.8]), **kw)


# -- calibration ---------------------------------------------------------------------------------
@pytest.mark.parametrize("delta, expected", [(0.1, 4.495089), (1e-5, 9.689611)])
def test_paper_sigma_matches_the_spec_values(delta: float, expected: float) -> None:
    # spec section 7 item 1: gaussian_sigma(Delta = 2, eps = 1, delta) for |f| <= B = 1
    cal = calibrate_onepoint(1.0, delta, -1.0, 1.0, preset="paper")
    assert cal.scale == pytest.approx(expected, abs=1e-6)
    assert cal.sensitivity == 2.0


@pytest.mark.parametrize(
    "eps, delta, lo, hi", [(0.5, 1e-5, 0.0, 1.0), (1.0, 0.01, -1.0, 1.0), (4.0, 1e-3, 0.0, 3.0)]
)
def test_strict_sigma_and_guarantee_match_dp_accounting(
    eps: float, delta: float, lo: float, hi: float
) -> None:
    from dp_accounting.pld.common import DifferentialPrivacyParameters
    from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

    cal = calibrate_onepoint(eps, delta, lo, hi)
    ref = GaussianPrivacyLoss.from_privacy_guarantee(
        DifferentialPrivacyParameters(eps, delta), sensitivity=hi - lo
    )
    assert cal.scale == pytest.approx(ref.standard_deviation, rel=1e-6)
    # the accounted guarantee of the noise added, checked independently: delta(eps) <= request
    pl = GaussianPrivacyLoss(cal.scale, sensitivity=hi - lo)
    assert pl.get_delta_for_epsilon(eps) <= delta * (1 + 1e-9)
    assert cal.guarantee.epsilon <= eps * (1 + 1e-9) and cal.guarantee.epsilon == pytest.approx(
        eps, rel=1e-6
    )


def test_paper_preset_guarantee_is_accounted_from_the_noise() -> None:
    # paper sigma at B = 1 on [-1, 1]; the accountant's epsilon is that of N(0, sigma^2) at sensitivity 2
    from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

    cal = calibrate_onepoint(1.0, 1e-3, -1.0, 1.0, preset="paper")
    pl = GaussianPrivacyLoss(cal.scale, sensitivity=2.0)
    assert pl.get_delta_for_epsilon(cal.guarantee.epsilon) == pytest.approx(1e-3, rel=1e-4)
    assert cal.guarantee.epsilon < 1.0  # the classic formula is conservative at eps = 1


@pytest.mark.parametrize("preset, factor", [("strict", 1.0), ("paper", 2.0)])
def test_laplace_scale_and_pure_guarantee(preset: str, factor: float) -> None:
    cal = calibrate_onepoint(2.0, 0.01, 0.0, 1.0, mechanism="laplace", preset=preset)
    # strict: b = Delta / eps with Delta = 1; paper: b = 2B / eps with B = 1
    assert cal.scale == pytest.approx(factor * 1.0 / 2.0)
    assert cal.guarantee.delta == 0.0
    assert cal.guarantee.epsilon == pytest.approx(1.0 / cal.scale)
    assert cal.std == pytest.approx(math.sqrt(2) * cal.scale)


def test_unbounded_loss_range_is_rejected() -> None:
    with pytest.raises(ValidationError, match="bounded losses"):
        calibrate_onepoint(1.0, 0.01, -math.inf, 1.0)
    with pytest.raises(ValidationError, match="bounded losses"):
        calibrate_onepoint(1.0, 0.01, 1.0, 1.0)


# -- randomizer law (spec section 7 item 4) -------------------------------------------------------
N_DRAWS = 200_000


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_privatized_value_is_unbiased_with_the_calibrated_variance(mechanism: str) -> None:
    cal = calibrate_onepoint(1.0, 0.01, 0.0, 1.0, mechanism=mechanism)
    v = np.random.default_rng(3).random(N_DRAWS)  # in range: clipping is a no-op
    out = np.empty(N_DRAWS)
    privatize_values(
        np.random.default_rng(4), v, 0.0, 1.0, True, cal.scale, mechanism == "laplace", out
    )
    z = out - v
    var = cal.std**2
    # mean: z-test with 5 standard errors (sd(mean) = std / sqrt(N))
    assert abs(z.mean()) < 5 * cal.std / math.sqrt(N_DRAWS)
    # sample variance: Var(s^2) ~ (mu4 - var^2) / N, mu4 = 3 var^2 (Gaussian) or 6 var^2 (Laplace:
    # 24 b^4 with var = 2 b^2); 5 standard errors
    mu4 = (3.0 if mechanism == "gaussian" else 6.0) * var**2
    assert abs(z.var(ddof=1) - var) < 5 * math.sqrt((mu4 - var**2) / N_DRAWS)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.floats(-50, 50), min_size=1, max_size=20),
    lo=st.floats(-5, 0),
    width=st.floats(0.01, 10),
)
def test_clipping_puts_every_value_in_range(values: list[float], lo: float, width: float) -> None:
    hi = lo + width
    v = np.array(values)
    out = np.empty_like(v)
    privatize_values(np.random.default_rng(0), v, lo, hi, True, 0.0, False, out)
    np.testing.assert_array_equal(out, np.clip(v, lo, hi))
    privatize_values(np.random.default_rng(0), v, lo, hi, False, 0.0, False, out)
    np.testing.assert_array_equal(out, v)


@settings(max_examples=40, deadline=None)
@given(
    eps=st.floats(0.05, 20),
    lo=st.floats(-3, 1),
    width=st.floats(0.1, 5),
    T=st.integers(2, 10**7),
    mech=st.sampled_from(["gaussian", "laplace"]),
)
def test_inflated_range_contains_the_raw_range_and_grows_with_noise(
    eps: float, lo: float, width: float, T: int, mech: str
) -> None:
    hi = lo + width
    spec = EnvSpec(d=3, K=3, horizon=T, reward_range=(lo, hi), noise_scale=0.1)
    cal = calibrate_onepoint(eps, 0.01, lo, hi, mechanism=mech)
    inner = inflated_spec(spec, cal, T)
    w = noise_bound(cal, T)
    assert inner.reward_range == pytest.approx((lo - w, hi + w))
    assert inner.noise_scale == pytest.approx(math.sqrt(min(0.1, width / 2) ** 2 + cal.std**2))
    assert inner.d == inner.K == 3 and inner.fixed_actions
    louder = calibrate_onepoint(eps / 2, 0.01, lo, hi, mechanism=mech)
    assert noise_bound(louder, T) > w
    raw = inflated_spec(spec, cal, T, inflate=False)
    assert raw.reward_range == (lo, hi)


def test_noise_bound_covers_the_noise_with_probability_one_minus_one_over_T() -> None:
    # P(max_t |Z_t| > w) <= 1/T; over 200 batches of T = 1000 draws expect <= 0.2 exceedances,
    # allow 3 (Poisson(0.2) tail P(>= 4) < 1e-4)
    T = 1000
    for mech in ("gaussian", "laplace"):
        cal = calibrate_onepoint(1.0, 0.01, 0.0, 1.0, mechanism=mech)
        out = np.empty(200 * T)
        privatize_values(
            np.random.default_rng(9),
            np.zeros(200 * T),
            0.0,
            1.0,
            True,
            cal.scale,
            mech == "laplace",
            out,
        )
        exceed = (np.abs(out).reshape(200, T).max(axis=1) > noise_bound(cal, T)).sum()
        assert exceed <= 3, (mech, exceed)


# -- the protocol ---------------------------------------------------------------------------------
def _drive(alg, env, T, seed):  # type: ignore[no-untyped-def]
    """Run the reference protocol by hand; returns actions (T, R), raw rewards, messages."""
    streams = make_streams(seed)
    spec = env.reset(3, streams, T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        alg.reset(spec, 3, streams)
    acts, raws, msgs = [], [], []
    for t in range(T):
        X = env.next_round()
        public = alg.server.public_state()
        a = alg.client.choose(t, public, X, streams.policy)
        r, _ = env.step(a)
        msg = alg.client.randomize(t, public, X, a, r, streams.client)
        alg.server.receive(t, msg)
        acts.append(a)
        raws.append(r)
        msgs.append(msg)
    return np.array(acts), np.array(raws), msgs


def test_server_receives_noisy_values_only() -> None:
    # spec section 7 item 8: every payload carries noise (differs from the raw reward)
    acts, raws, msgs = _drive(pb.make("ldp-onepoint", epsilon=1.0), _env(), 200, 0)
    for raw, msg in zip(raws, msgs):
        assert isinstance(msg, PrivatizedMessage) and set(msg.payload) == {"value"}
        assert np.all(msg.payload["value"] != raw)


@pytest.mark.parametrize("base", ["tsallis-inf", "exp3", "ucb1"])
def test_virtual_loss_equivalence(base: str) -> None:
    # spec section 7 item 10: Alg. 1 equals the black box run non-privately on f_t + Z_t with the
    # same pre-drawn Z_t (here: the recorded messages), on the same seed
    T, seed = 300, 5
    env = _env()
    alg = pb.make("ldp-onepoint", base=base, epsilon=0.5)
    acts, _raws, msgs = _drive(alg, env, T, seed)
    streams = make_streams(seed)
    spec = env.reset(3, streams, T)
    box = pb.make(base)
    box.reset(alg.base_spec(spec), 3, streams)
    cat = np.broadcast_to(np.eye(4), (3, 4, 4)).copy()
    for t in range(T):
        a = box.select(t, cat)
        np.testing.assert_array_equal(a, acts[t])
        box.update(t, cat, a, msgs[t].payload["value"])


@pytest.mark.parametrize("base", ["ucb1", "exp3", "successive-elimination"])
def test_tiny_noise_reproduces_the_black_box(base: str) -> None:
    # spec section 7 item 9: with sigma -> 0 and the same tuning, Alg. 1 follows the black box's
    # trajectory (bounded rewards: clipping is a no-op; range_inflation="none" keeps the tuning identical)
    env = _env(noise="bounded", noise_scale=0.1)
    alg = pb.make("ldp-onepoint", base=base, epsilon=1e14, range_inflation="none")
    priv = pb.simulate(alg, env, 2000, replications=3, seed=2)
    plain = pb.simulate(pb.make(base), env, 2000, replications=3, seed=2)
    np.testing.assert_allclose(priv.regret, plain.regret, atol=1e-9)
    assert priv.resolved_params["noise_std"] < 1e-6  # analytic sigma ~ Delta / sqrt(2 eps)


def test_regret_ordering_over_epsilon() -> None:
    # spec section 7 item 17 on a K = 4 Bernoulli instance, 8 replications: non-private <= LDP and
    # regret non-increasing in epsilon; the gaps (hundreds) are several standard errors wide
    env = _env(means="gap", gap=0.4)
    final = {}
    for eps in (0.5, 2.0, None):
        alg = pb.make("ucb1") if eps is None else pb.make("ldp-onepoint", epsilon=eps)
        final[eps] = pb.simulate(alg, env, 4000, replications=8, seed=1).final_regret.mean()
    assert final[None] < final[2.0] < final[0.5]


# -- errors ---------------------------------------------------------------------------------------
class _BadFloats(Curator):
    name, links, paper = "test-bad-floats", ("*",), "test"

    def select(self, t, contexts):  # type: ignore[no-untyped-def]
        return np.zeros(self.R)  # floats: not arm indices

    def update(self, t, contexts, actions, rewards):  # type: ignore[no-untyped-def]
        pass


class _BadRange(_BadFloats):
    name = "test-bad-range"

    def select(self, t, contexts):  # type: ignore[no-untyped-def]
        return np.full(self.R, contexts.shape[1], dtype=np.int64)


@pytest.mark.parametrize("bad", [_BadFloats, _BadRange])
def test_wrapped_algorithm_violating_the_interface_is_named(bad: type) -> None:
    with pytest.raises(ValidationError, match="violates the black-box interface"):
        pb.simulate(pb.make("ldp-onepoint", base=bad()), _env(), 5)


@pytest.mark.parametrize(
    "base, match",
    [
        ("ldp-ucb", "non-private Curator"),
        ("nope", "unknown algorithm"),
        (3, "registered algorithm name"),
        ("hanna-central", "non-private"),
    ],
)
def test_unwrappable_base_is_rejected_naming_the_parameter(base: object, match: str) -> None:
    with pytest.raises(ValidationError, match=match) as exc:
        pb.make("ldp-onepoint", base=base)
    assert "base" in str(exc.value)


def test_bad_base_params_are_named() -> None:
    with pytest.raises(ValidationError, match="base_params"):
        pb.make("ldp-onepoint", base="ucb1", base_params={"scale": -1.0})
    with pytest.raises(ValidationError, match="base_params"):
        pb.make("ldp-onepoint", base="ucb1", base_params={"not_a_parameter": 1})
    with pytest.raises(ValidationError, match="base_params"):
        pb.make("ldp-onepoint", base=pb.make("ucb1"), base_params={"scale": 1.0})


def test_unbounded_reward_range_is_rejected() -> None:
    # an infinite range cannot be declared (the problem description requires a finite bound), and
    # the privatizer's own check names the requirement
    env = pb.MultiArmedEnv(
        K=3, means=[0.1, 0.5, 0.9], noise="gaussian", reward_range=(-math.inf, math.inf)
    )
    with pytest.raises(ValidationError, match="reward_bound must be finite"):
        pb.simulate(pb.make("ldp-onepoint"), env, 10)
    with pytest.raises(ValidationError, match="bounded losses"):
        calibrate_onepoint(1.0, 0.01, -math.inf, math.inf)


def test_out_of_range_reward_without_clipping_raises() -> None:
    env = pb.MultiArmedEnv(
        K=3, means=[0.1, 0.5, 0.9], noise="gaussian", noise_scale=1.0, reward_range=(0.0, 1.0)
    )
    with pytest.raises(DataBoundError, match="outside the declared range"):
        pb.simulate(pb.make("ldp-onepoint", clip=False), env, 50)
    pb.simulate(pb.make("ldp-onepoint"), env, 50)  # clipping (the default) makes it private


# -- audit of the client code path ----------------------------------------------------------------
@pytest.mark.parametrize("name", ["client:ldp-onepoint", "client:ldp-onepoint-laplace"])
def test_client_path_audit_passes_and_flags_the_under_noised_variant(name: str) -> None:
    # the exact client path (clipping of out-of-range rewards included); the variant at eps / 0.5
    # has half the noise and must be flagged against the unchanged claim
    ok = audit_mechanism(name, seed=0)
    assert ok.passed, ok
    half = audit_mechanism(name, under_noised=0.5, seed=0)
    assert not half.passed, half


# -- the README example ---------------------------------------------------------------------------
def test_readme_wrapping_example_runs_verbatim() -> None:
    import contextlib
    import io
    import re
    from pathlib import Path

    from privbandits.algorithms import registry

    readme = Path(__file__).resolve().parents[2] / "docs" / "add-your-own-algorithm.md"
    text = readme.read_text(encoding="utf-8")
    start = text.index("## Make any non-private algorithm locally private (LDP-OnePoint)")
    match = re.search(r"```python\n(.*?)```", text[start:], flags=re.DOTALL)
    assert match and "class FollowTheLeader" in match.group(1)
    assert "ftl" not in pb.available()
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(
                compile(match.group(1), f"{readme}:FollowTheLeader", "exec"),
                {"__name__": "readme_wrap"},
            )
        lines = out.getvalue().strip().splitlines()
        rows = [re.match(r"^(ftl|own instance|ucb1) ([0-9.]+) (.*)$", line) for line in lines]
        assert len(rows) == 3 and all(rows), lines
        assert [m.group(1) for m in rows] == ["ftl", "own instance", "ucb1"]  # type: ignore[union-attr]
        assert [m.group(3) for m in rows] == [  # type: ignore[union-attr]
            "(1, delta=0.01)-DP [local, per user]",
            "(1)-DP [local, per user]",
            "(1, delta=0.01)-DP [local, per user]",
        ]
        # privatized black boxes still learn: regret below uniform play (4/5 * 0.3 * 2000 = 480)
        assert all(float(m.group(2)) < 480 for m in rows)  # type: ignore[union-attr]
    finally:
        registry._REGISTRY.pop("ftl", None)
