"""Hanna et al. (2022): widths (U8), presets (U16), noise scales per model and preset (U10), accounting."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.algorithms import available, make
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.algorithms.hanna import (
    HannaCentral,
    HannaLocal,
    HannaShuffle,
    ShuffleBudget,
    resolve_switches,
)
from privbandits.algorithms.hanna.elimination import BatchPlan, batch_growth, batch_size_ranges
from privbandits.algorithms.hanna.widths import (
    central_width_paper,
    central_width_rigorous,
    local_width_paper,
    local_width_rigorous,
    nocore_uniform_width_paper,
)
from privbandits.core.errors import NotResetError, ValidationError
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.envs import FiniteActionEnv
from privbandits.privacy.accounting import compose_parallel
from privbandits.privacy.amplification import amplified_guarantee, local_epsilon_for_target
from privbandits.privacy.sensitivity import laplace_sum_deviation
from privbandits.simulate import simulate

T6 = 10**6
ELL = math.log(4 * 10 * T6**2)  # ln(4 |A_i| T^2) = 31.3199 for |A_i| = 10 (spec 4.1)


def test_registered() -> None:
    reg = available()
    assert reg["hanna-central"] is HannaCentral and reg["hanna-local"] is HannaLocal
    assert reg["hanna-shuffle"] is HannaShuffle
    assert (HannaCentral.trust_model, HannaLocal.trust_model, HannaShuffle.trust_model) == (
        "central",
        "local",
        "shuffle",
    )


# -- U8: reference widths (spec 4.1, 4.2; T = 1e6, d = 2, |A_i| = 10, |C_i| = 2, eps = 1, Delta = 1) -------
@pytest.mark.parametrize(
    ("i", "n", "central", "local"),
    [(1, 4, 55.994521, 25.027458), (5, 192, 1.844949, 2.772466), (12, 297172, 0.029486, 0.070102)],
)
def test_paper_widths_reference_numbers(i: int, n: int, central: float, local: float) -> None:
    qi = batch_growth(T6) ** i
    assert 2 * math.ceil(0.5 * qi) == n  # n_ia = ceil(pi q^i) with pi = (1/2, 1/2)
    assert central_width_paper(2, ELL, qi, 2, 1.0) == pytest.approx(central, abs=1e-6)
    assert local_width_paper(2, ELL, qi, n, 1.0) == pytest.approx(local, abs=1e-6)
    # the sub-Gaussian part alone is the non-private width (0.0290371 at i = 12)
    if i == 12:
        assert central_width_paper(2, ELL, qi, 2, 0.0) == pytest.approx(0.0290371, abs=1e-7)


def _plan(counts: tuple[int, ...], g: float, i: int, T: int = T6, K: int = 10) -> BatchPlan:
    c = np.zeros((1, K), dtype=np.int64)
    c[0, : len(counts)] = counts
    return BatchPlan(
        rows=np.array([0]),
        index=np.array([i]),
        counts=c,
        active=np.ones((1, K), bool),
        pi=c / c.sum(),
        g=np.array([g]),
        m=np.array([2]),
        scale=np.array([batch_growth(T) ** i]),
    )


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_width_strategies_use_the_scale_actually_used() -> None:
    spec = EnvSpec(d=2, K=10, horizon=T6, fixed_actions=True, reward_range=(-1.0, 1.0))
    plan = _plan((2, 2), 2.0, 1)
    A = np.ones((1, 10, 2))
    paper = HannaCentral(1.0, preset="paper")  # Delta = 1 -> s = 1
    paper.reset(spec, 1, make_streams(0))
    assert paper.make_core(A).width(plan, spec, 12)[0] == pytest.approx(55.994521, abs=1e-6)
    strict = HannaCentral(1.0, width_mode="paper")  # strict sensitivity 2 -> s = 2, paper formula
    strict.reset(spec, 1, make_streams(0))
    qi = batch_growth(T6)
    assert strict.make_core(A).width(plan, spec, 12)[0] == pytest.approx(
        central_width_paper(2, ELL, qi, 2, 2.0)
    )
    loc = HannaLocal(1.0, preset="paper")
    loc.reset(spec, 1, make_streams(0))
    assert loc.make_core(A).width(plan, spec, 12)[0] == pytest.approx(25.027458, abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    G=st.floats(1e-6, 3.0),
    ell=st.floats(0.5, 60.0),
    C=st.integers(1, 50),
    n_min=st.integers(1, 10**6),
    s=st.floats(1e-3, 1e3),
)
def test_rigorous_widths_are_the_corrected_lemma_4(
    G: float, ell: float, C: int, n_min: int, s: float
) -> None:
    # privacy part = laplace_sum_deviation(s, S, c, ell) with valid bounds S >= sum l^2, c >= max |l|
    S = min(C * G**2, G / n_min)
    c = min(G, math.sqrt(S))
    got = central_width_rigorous(
        np.array(G), np.array(ell), np.array(C), np.array(n_min), np.array(s)
    )
    assert float(got) == pytest.approx(
        math.sqrt(2 * G * ell) + laplace_sum_deviation(s, S, c, ell), rel=1e-12
    )
    # never wider than the spec's printed form with c = G (the coefficient bound only tightens)
    assert (
        float(got)
        <= math.sqrt(2 * G * ell) + s * (math.sqrt(8 * S * ell) + math.sqrt(2) * G * ell) + 1e-12
    )
    loc = local_width_rigorous(np.array(G), np.array(ell), np.array(s))
    assert float(loc) == pytest.approx(
        math.sqrt(2 * G * ell) + laplace_sum_deviation(s, G, min(G, math.sqrt(G)), ell), rel=1e-12
    )


def test_nocore_uniform_paper_width() -> None:
    # spec 4.5: sqrt(2 g ell / q^i) + (g / q^i) s (|A_i| + ell)
    qi = batch_growth(10**7) ** 3
    got = nocore_uniform_width_paper(
        np.array(2.0), np.array(30.0), np.array(qi), np.array(1000), np.array(10.0)
    )
    assert float(got) == pytest.approx(math.sqrt(2 * 2 * 30 / qi) + 2 / qi * 10 * 1030)


# -- U16: presets -----------------------------------------------------------------------------------------
SPEC4 = EnvSpec(d=2, K=4, horizon=3000, fixed_actions=True)


def test_default_preset_is_strict_and_silent() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sw = resolve_switches()
        for alg in (HannaCentral(1.0), HannaLocal(1.0), HannaShuffle(1.0)):
            alg.reset(SPEC4, 1, make_streams(0))
            assert alg.calibration.preset == "strict" and alg.calibration.meets_request
    assert (sw.preset, sw.paper_sensitivity, sw.width_mode, sw.shuffle_bound) == (
        "strict",
        False,
        "rigorous",
        "fmt-valid",
    )
    assert sw.certified and sw.sensitivity(-1.0, 1.0) == 2.0


@pytest.mark.parametrize("cls", [HannaCentral, HannaLocal, HannaShuffle])
def test_paper_preset_warns_with_the_accounted_guarantee(cls: type) -> None:
    sw = resolve_switches("paper")
    assert (sw.paper_sensitivity, sw.width_mode, sw.shuffle_bound) == (True, "paper", "paper")
    assert sw.sensitivity(-1.0, 1.0) == 1.0 and not sw.certified
    alg = cls(0.5, preset="paper")
    with pytest.warns(CalibrationWarning, match="preset='paper'.*accounted guarantee"):
        alg.reset(SPEC4, 1, make_streams(0))
    # a strict preset with the paper's sensitivity is weaker than requested: warns too
    with pytest.warns(CalibrationWarning, match="weaker than the request"):
        cls(0.5, paper_sensitivity=True).reset(SPEC4, 1, make_streams(0))


def test_overriding_one_switch_keeps_the_others() -> None:
    sw = resolve_switches("strict", width_mode="paper")
    assert (sw.paper_sensitivity, sw.width_mode, sw.shuffle_bound) == (False, "paper", "fmt-valid")
    sw = resolve_switches("paper", shuffle_bound="fmt-valid")
    assert (sw.paper_sensitivity, sw.width_mode, sw.shuffle_bound) == (True, "paper", "fmt-valid")
    sw = resolve_switches("paper", paper_sensitivity=False)
    assert (sw.paper_sensitivity, sw.width_mode, sw.shuffle_bound) == (False, "paper", "paper")
    res = HannaShuffle(1.0, preset="paper", paper_sensitivity=False).calibrate(SPEC4).resolved
    assert (res["paper_sensitivity"], res["width_mode"], res["shuffle_bound"]) == (
        False,
        "paper",
        "paper",
    )


@pytest.mark.parametrize("cls", [HannaCentral, HannaLocal, HannaShuffle])
def test_guarantee_needs_a_problem(cls: type) -> None:
    alg = cls(1.0)
    with pytest.raises(NotResetError):
        alg.guarantee
    assert alg.guarantee_for(SPEC4).epsilon <= 1.0 + 1e-12
    alg.reset(SPEC4, 1, make_streams(0))
    assert alg.guarantee == alg.guarantee_for(SPEC4)


@pytest.mark.parametrize("preset", ["strict", "paper"])
def test_switches_are_recorded_in_the_results(preset: str) -> None:
    env = FiniteActionEnv(d=2, K=4, actions="circle", noise="rademacher")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, kw in [
            ("hanna-central", {}),
            ("hanna-local", {}),
            ("hanna-shuffle", {"delta": 1e-3}),
        ]:
            alg = make(name, epsilon=1.0, preset=preset, **kw)
            res = simulate(alg, env, 3000, replications=2, seed=0)
            assert res.preset == preset
            notes = res.guarantee.notes
            assert (
                f"preset={preset}" in notes and "width_mode=" in notes and "sensitivity=" in notes
            )
            if name == "hanna-shuffle":
                assert "shuffle_bound=" in notes
            assert alg.resolved_params()["width_mode"] == (
                "paper" if preset == "paper" else "rigorous"
            )


@pytest.mark.parametrize(
    ("cls", "kw", "name"),
    [
        (HannaCentral, {"epsilon": 0.0}, "epsilon"),
        (HannaCentral, {"epsilon": 1.0, "preset": "x"}, "preset"),
        (HannaCentral, {"epsilon": 1.0, "core_set": 1}, "core_set"),
        (HannaCentral, {"epsilon": 1.0, "width_mode": "tight"}, "width_mode"),
        (HannaCentral, {"epsilon": 1.0, "core_set": "none"}, "core_set"),
        (HannaCentral, {"epsilon": 1.0, "paper_sensitivity": 1}, "paper_sensitivity"),
        (HannaCentral, {"epsilon": 1.0, "fail_prob": 1.0}, "fail_prob"),
        (HannaLocal, {"epsilon": -1.0}, "epsilon"),
        (HannaLocal, {"epsilon": 1.0, "sigma": 0.0}, "sigma"),
        (HannaLocal, {"epsilon": 1.0, "design_factor": 0.9}, "design_factor"),
        (HannaShuffle, {"epsilon": 1.0, "delta": 1.0}, "delta"),
        (HannaShuffle, {"epsilon": 1.0, "shuffle_bound": "loose"}, "shuffle_bound"),
        (HannaShuffle, {"epsilon": 1.0, "bound": "exact"}, "bound"),
        (HannaShuffle, {"epsilon": 1.0, "fail_prob": 0.0}, "fail_prob"),
        (HannaShuffle, {"epsilon": 1.0, "paper_sensitivity": "yes"}, "paper_sensitivity"),
        (HannaCentral, {"epsilon": 1.0, "shuffle_bound": "paper"}, "shuffle_bound"),
    ],
)
def test_parameter_validation(cls: type, kw: dict, name: str) -> None:
    with pytest.raises(ValidationError, match=name):
        cls(**kw)


def test_core_set_option() -> None:
    # kept as given (get_params round-trips), resolved to the construction in the calibration
    for value, name in (
        (True, "greedy"),
        (False, "nocore-fw"),
        ("nocore-uniform", "nocore-uniform"),
    ):
        alg = HannaCentral(1.0, core_set=value)
        assert alg.get_params()["core_set"] is value or alg.get_params()["core_set"] == value
        assert alg.calibrate(SPEC4).resolved["core_set"] == name
        assert f"core_set={name}" in alg.calibrate(SPEC4).guarantee.notes


# -- U10: noise scales per model and preset -----------------------------------------------------------------
SPEC = EnvSpec(d=2, K=10, horizon=T6, fixed_actions=True, reward_range=(-1.0, 1.0))


@pytest.mark.parametrize(
    ("preset", "eps", "scale", "accounted"),
    [
        ("strict", 1.0, 2.0, 1.0),
        ("strict", 0.1, 20.0, 0.1),
        ("paper", 1.0, 1.0, 2.0),
        ("paper", 0.1, 10.0, 0.2),
    ],
)
def test_central_and_local_scales(preset: str, eps: float, scale: float, accounted: float) -> None:
    # strict: Delta = r_hi - r_lo = 2; paper: Delta = 1, which is only 2 eps-DP on [-1, 1] (spec 2.5)
    c, loc = HannaCentral(eps, preset=preset), HannaLocal(eps, preset=preset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c.reset(SPEC, 1, make_streams(0))
        loc.reset(SPEC, 1, make_streams(0))
    assert c.collector.scale == pytest.approx(scale) and loc.client.scale == pytest.approx(scale)
    assert c.resolved_params()["laplace_scale"] == pytest.approx(scale)
    assert c.guarantee.epsilon == pytest.approx(accounted) and c.guarantee.delta == 0.0
    assert c.guarantee.model == "central"
    assert loc.guarantee.epsilon == pytest.approx(accounted) and loc.guarantee.model == "local"
    assert loc.resolved_params()["eps0"] == eps
    # a [0, 1] reward range has Delta = 1: strict reproduces the paper's noise with a valid guarantee
    c01 = HannaCentral(eps)
    c01.reset(
        EnvSpec(d=2, K=10, horizon=T6, fixed_actions=True, reward_range=(0.0, 1.0)),
        1,
        make_streams(0),
    )
    assert c01.collector.scale == pytest.approx(
        1.0 / eps
    ) and c01.guarantee.epsilon == pytest.approx(eps)


@pytest.mark.parametrize(
    ("n", "eps", "eps0"),
    [
        (4, 1.0, 1.0),
        (300, 1.0, 1.0),
        (1000, 1.0, 1.4604),
        (10**4, 0.1, 0.5281),
        (10**6, 1.0, 7.9915),
    ],
)
def test_shuffle_scale_is_delta_over_e0_and_inverts_the_accountant(
    n: int, eps: float, eps0: float
) -> None:
    # spec 3.9 reference values (delta = 1e-6); strict: s_i = 2 / eps0^(i)
    cal = ShuffleBudget(eps, 1e-6, -1.0, 1.0, resolve_switches(), "closed", ((n, n),))
    p = cal.params(n)
    assert p.eps0 == pytest.approx(eps0, abs=1e-4)
    assert p.eps0 == pytest.approx(local_epsilon_for_target(eps, 1e-6, n), rel=1e-12)
    assert cal.scales(np.array([n]))[0] == pytest.approx(2.0 / eps0, rel=1e-4)
    g = amplified_guarantee(p.local_epsilon(), n, 1e-6)
    assert g.epsilon <= eps * (1 + 1e-9)  # the inversion meets the target at the accountant
    if p.eps0 > eps:
        assert (
            g.epsilon == pytest.approx(eps, rel=1e-6) or n == 1000
        )  # f = eps, or capped (f = 0.8317 < eps)


def test_shuffle_paper_preset_scale_and_honest_accounting() -> None:
    cal = ShuffleBudget(1.0, 1e-6, -1.0, 1.0, resolve_switches("paper"), "closed", ((1000, 1000),))
    p = cal.params(1000)
    assert p.eps0 == pytest.approx(1.764, abs=1e-3)  # literal inverse (spec 3.9)
    assert p.scale == pytest.approx(1.0 / p.eps0)  # Lap(1/eps0^(i)) as printed
    assert amplified_guarantee(p.local_epsilon(), 1000, 1e-6).epsilon == pytest.approx(2 * p.eps0)
    assert cal.accounted().epsilon == pytest.approx(2 * p.eps0)  # the calibration reports it


# -- the shuffle model's default delta and its accounting over every reachable batch size -------------------
@pytest.mark.parametrize("T", [2 * 10**4, 10**6])
def test_shuffle_default_delta_is_far_below_one_over_the_batch_sizes(T: int) -> None:
    # delta = 1/T was 5e-5 at T = 2e4 with batches of ~5000 users (delta * n ~ 0.3); the default is 1/T^2
    spec = EnvSpec(d=2, K=10, horizon=T, fixed_actions=True)
    cal = HannaShuffle(1.0).calibrate(spec)
    res = cal.resolved
    assert res["delta"] == pytest.approx(1.0 / T**2) and res["delta_rule"].startswith("1/T^2")
    assert res["n_max"] >= 0.2 * T  # the last batches hold a large fraction of the users
    assert res["delta_times_n_max"] <= 1.0 / T  # delta << 1/n_i for every batch
    assert cal.guarantee.delta <= 1.0 / T**2 and cal.requested == (1.0, res["delta"])
    assert "delta * n_max" in cal.guarantee.notes and "1/T^2" in cal.guarantee.notes
    assert cal.guarantee.epsilon <= 1.0 * (1 + 1e-9)  # strict meets the request
    # an explicit delta is kept (and the notes say how it compares with the batch sizes)
    given = HannaShuffle(1.0, delta=1.0 / T).calibrate(spec)
    assert given.resolved["delta"] == 1.0 / T and given.resolved["delta_rule"] == "given"
    assert given.resolved["delta_times_n_max"] > 0.2


def test_shuffle_guarantee_covers_every_reachable_batch_size() -> None:
    spec = EnvSpec(d=2, K=10, horizon=T6, fixed_actions=True)
    alg = HannaShuffle(1.0, delta=1e-6)
    cal = alg.calibrate(spec)
    ranges = batch_size_ranges(T6, 10, 2)
    assert cal.resolved["batch_sizes"] == [list(r) for r in ranges]
    sizes = sorted({n for lo, hi in ranges for n in range(lo, hi + 1)})
    budget = alg.budget_for(spec)
    expected = compose_parallel(
        [amplified_guarantee(budget.params(n).local_epsilon(), n, 1e-6) for n in sizes]
    )
    assert (
        cal.guarantee.epsilon == pytest.approx(expected.epsilon)
        and cal.guarantee.delta == expected.delta
    )
    assert cal.guarantee.delta == 1e-6  # the large batches amplify (n > 16 ln(2/delta) = 232)
    # eps0^(i) per batch: e.g. the last batch (n ~ 297170) gets the FMT cap ln(n / (16 ln(2e6)))
    lo, hi = ranges[-1]
    assert cal.resolved["eps0"][-1][0] == pytest.approx(local_epsilon_for_target(1.0, 1e-6, lo))
    assert cal.resolved["laplace_scale"][-1][0] == pytest.approx(2.0 / cal.resolved["eps0"][-1][0])
    # a batch size the calibration does not cover is never released
    with pytest.raises(ValidationError, match="calibrated"):
        budget.check_released(np.array([hi + 1]))
