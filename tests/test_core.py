"""Core building blocks: links, validation, parameter constraints, seed streams, typed messages,
EnvSpec, errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special

from privbandits.core import (
    DataBoundError,
    PrivbanditsError,
    TrustBoundaryError,
    UnknownNameError,
    ValidationError,
    get_link,
    make_streams,
)
from privbandits.core import validation as v
from privbandits.core.links import LINKS, POISSON_Z_MAX
from privbandits.core.messages import PrivatizedMessage, PublicState, shuffle_messages
from privbandits.core.params import (
    Any_,
    Bool,
    Choice,
    Delta,
    Epsilon,
    Int,
    NonNegative,
    Optional,
    Positive,
    Real,
    validate_params,
)
from privbandits.core.rng import ROLES
from privbandits.core.spec import EnvSpec

NAMES = sorted(LINKS)


# -- links --------------------------------------------------------------------------------------
def _grid(name: str) -> np.ndarray:
    return np.linspace(-6.0, 6.0, 49) if name != "poisson" else np.linspace(-6.0, 4.0, 41)


@pytest.mark.parametrize("name", NAMES)
def test_derivatives_match_finite_differences(name: str) -> None:
    lk = get_link(name)
    z = _grid(name)
    h = 1e-5
    # central differences have error O(h^2 f''') ~ 1e-10 * scale; rounding ~ eps * f / h ~ 1e-11
    tol = 1e-6 * (1.0 + np.abs(lk.mu(z)))
    np.testing.assert_array_less(np.abs((lk.mu(z + h) - lk.mu(z - h)) / (2 * h) - lk.dmu(z)), tol)
    np.testing.assert_array_less(
        np.abs((lk.dmu(z + h) - lk.dmu(z - h)) / (2 * h) - lk.d2mu(z)), tol
    )
    # m is an antiderivative of mu
    np.testing.assert_array_less(np.abs((lk.m(z + h) - lk.m(z - h)) / (2 * h) - lk.mu(z)), tol)


@pytest.mark.parametrize("name", NAMES)
def test_stable_at_large_arguments(name: str) -> None:
    lk = get_link(name)
    z = np.array([-1e3, -50.0, 0.0, 50.0, 1e3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for f in (lk.mu, lk.dmu, lk.d2mu, lk.m):
            out = f(z)
            assert np.all(np.isfinite(out)), (name, f)
    if name == "logistic":
        assert lk.mu(np.array(-1e3)) == 0.0 and lk.mu(np.array(1e3)) == 1.0
        assert lk.m(np.array(1e3)) == pytest.approx(1e3) and lk.m(np.array(-1e3)) == 0.0
    if name == "probit":
        assert lk.m(np.array(1e3)) == pytest.approx(1e3)
        assert lk.m(np.array(-1e3)) == 0.0  # true value ~1e-217000 underflows to 0, no NaN
    if name == "poisson":  # documented clip of the linear predictor at z_max = 50
        assert lk.mu(np.array(1e3)) == pytest.approx(math.exp(POISSON_Z_MAX))


@pytest.mark.parametrize("z", [-4.0, -5.0, -5.5, -8.0, -15.0, -30.0, -37.0])
def test_probit_m_in_the_far_left_tail(z: float) -> None:
    # m(z) = int_{-inf}^z Phi(u) du.  Reference by quadrature of the well-scaled integrand
    # Phi(z - s) / Phi(z) = exp(log_ndtr(z - s) - log_ndtr(z)) over s in [0, inf):
    # m(z) = Phi(z) * int_0^inf exp(log_ndtr(z - s) - log_ndtr(z)) ds.
    ratio, _err = integrate.quad(
        lambda s: math.exp(special.log_ndtr(z - s) - special.log_ndtr(z)),
        0,
        np.inf,
        epsabs=0,
        epsrel=1e-12,
        limit=200,
    )
    ref_log = special.log_ndtr(z) + math.log(ratio)
    got = float(get_link("probit").m(np.array(z)))
    assert got > 0
    assert math.log(got) == pytest.approx(ref_log, abs=1e-8)


def test_probit_m_continuous_at_branch_switch() -> None:
    m = get_link("probit").m
    z = np.array([-5.0 - 1e-9, -5.0, -5.0 + 1e-9])
    vals = m(z)
    assert np.all(np.diff(vals) > 0) and abs(vals[2] - vals[0]) < 1e-12


@settings(max_examples=50, deadline=None)
@given(name=st.sampled_from(NAMES), a=st.floats(-8, 3), b=st.floats(-8, 3))
def test_m_convex_and_mu_monotone(name: str, a: float, b: float) -> None:
    lk = get_link(name)
    lo, hi = min(a, b), max(a, b)
    assert lk.mu(np.array(hi)) >= lk.mu(np.array(lo))
    mid = 0.5 * (lo + hi)
    assert lk.m(np.array(mid)) <= 0.5 * (lk.m(np.array(lo)) + lk.m(np.array(hi))) + 1e-12
    assert lk.dmu(np.array(mid)) >= 0


def test_curvature_constants() -> None:
    lg, pr, po, idn = (get_link(n) for n in ("logistic", "probit", "poisson", "identity"))
    s = special.expit(2.0)
    assert lg.kappa(2.0) == pytest.approx(s * (1 - s)) and lg.lipschitz(2.0) == pytest.approx(0.25)
    assert pr.kappa(3.0) == pytest.approx(math.exp(-4.5) / math.sqrt(2 * math.pi))
    assert pr.lipschitz(3.0) == pytest.approx(1 / math.sqrt(2 * math.pi))
    assert po.kappa(1.0) == pytest.approx(math.exp(-1)) and po.lipschitz(1.0) == pytest.approx(
        math.e
    )
    assert idn.kappa(5.0) == idn.lipschitz(5.0) == 1.0
    with pytest.raises(ValidationError, match="bound"):
        lg.kappa(-1.0)


def test_neg_log_likelihood_is_bernoulli_nll_for_logistic() -> None:
    lk = get_link("logistic")
    z = np.array([-2.0, 0.3, 4.0])
    r = np.array([1.0, 0.0, 1.0])
    p = special.expit(z)
    np.testing.assert_allclose(
        lk.neg_log_likelihood(z, r), -(r * np.log(p) + (1 - r) * np.log1p(-p)), rtol=1e-12
    )


def test_get_link_aliases_and_unknown() -> None:
    assert get_link("logit") is get_link("logistic") and get_link("LINEAR") is get_link("identity")
    assert get_link(get_link("exp")) is get_link("poisson")
    with pytest.raises(UnknownNameError) as exc:
        get_link("cauchit")
    assert "cauchit" in str(exc.value) and "logistic" in str(exc.value)
    assert isinstance(exc.value, KeyError) and not str(exc.value).startswith("'")


# -- validation ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: v.check_epsilon(0.0), r"epsilon must lie in \(0, inf\), got 0"),
        (lambda: v.check_epsilon(float("inf")), "epsilon must be finite"),
        (lambda: v.check_delta(1.5), r"delta must lie in \(0, 1\), got 1.5"),
        (lambda: v.check_delta(0.0), r"delta must lie in \(0, 1\)"),
        (lambda: v.check_positive("lam", -1), r"lam must lie in \(0, inf\), got -1"),
        (lambda: v.check_probability("p", 1.1), r"p must lie in \[0, 1\]"),
        (lambda: v.check_int("K", 0, 1), r"K must be an integer in \[1, inf\], got 0"),
        (lambda: v.check_int("K", True), "K must be an integer, got True"),
        (lambda: v.check_int("K", 2.5), "K must be an integer"),
        (lambda: v.check_in_range("x", float("nan")), "x must be a real number, got NaN"),
        (lambda: v.check_in_range("x", "3"), "x must be a real number, got '3'"),
        (
            lambda: v.check_choice("noise", "cauchy", ("gaussian", "bernoulli")),
            "noise must be one of 'gaussian', 'bernoulli'; got 'cauchy'",
        ),
        (
            lambda: v.check_finite_array("X", [1.0, np.nan, np.inf]),
            "X contains 2 NaN or infinite entries",
        ),
        (
            lambda: v.check_finite_array("X", [1.0], ndim=2),
            r"X must have 2 dimensions, got shape \(1,\)",
        ),
        (
            lambda: v.check_shape("X", np.zeros((2, 3)), (2, None, 1)),
            r"X must have shape \(2, \*, 1\), got \(2, 3\)",
        ),
    ],
)
def test_validation_messages(call, pattern: str) -> None:
    with pytest.raises(ValidationError, match=pattern):
        call()


def test_validation_accepts() -> None:
    assert v.check_int("T", 1e6) == 1_000_000 and isinstance(v.check_int("T", np.int64(3)), int)
    assert v.check_epsilon(float("inf"), allow_inf=True) == math.inf
    assert v.check_delta(0.0, allow_zero=True) == 0.0
    assert v.check_in_range("x", 1.0, 0.0, 1.0, high_inclusive=True) == 1.0
    with pytest.raises(ValidationError):
        v.check_in_range("x", 1.0, 0.0, 1.0, high_inclusive=False)
    v.check_norm_bound("X", np.ones((3, 4)) / 2.0, 1.0)  # norm exactly 1: allowed
    with pytest.raises(DataBoundError, match="above the declared bound 1"):
        v.check_norm_bound("X", np.ones((3, 4)), 1.0)


def test_error_hierarchy() -> None:
    assert issubclass(DataBoundError, ValidationError) and issubclass(ValidationError, ValueError)
    assert issubclass(TrustBoundaryError, PrivbanditsError) and issubclass(
        UnknownNameError, KeyError
    )


# -- seed streams -------------------------------------------------------------------------------
def test_streams_reproducible_and_independent() -> None:
    a, b, c = make_streams(42), make_streams(42), make_streams(43)
    for role in ROLES:
        x = getattr(a, role).random(5)
        np.testing.assert_array_equal(x, getattr(b, role).random(5))
        assert not np.array_equal(x, getattr(c, role).random(5))
    first = [getattr(make_streams(1), role).random() for role in ROLES]
    assert len(set(first)) == len(ROLES)  # roles do not share a stream
    assert ROLES[:3] == ("instance", "contexts", "rewards")  # append-only order
    with pytest.raises(ValidationError, match="seed"):
        make_streams(-1)


# -- typed messages ----------------------------------------------------------------------------
def test_messages_are_read_only() -> None:
    # A message wraps the randomizer's fresh output as a read-only view (no copy on the hot
    # path); the public state is a read-only copy, so later in-place server updates cannot
    # change what users already received.
    src = np.arange(3.0)
    msg = PrivatizedMessage({"y": src}, mechanism="laplace")
    with pytest.raises(ValueError):
        msg["y"][1] = 5.0
    theta = np.zeros((2, 3))
    pub = PublicState(theta=theta)
    theta[0, 0] = 7.0
    assert pub["theta"][0, 0] == 0.0
    assert set(pub) == {"theta"} and len(pub) == 1 and "theta" in repr(pub)
    with pytest.raises(ValueError):
        pub["theta"][0, 0] = 1.0
    with pytest.raises(TrustBoundaryError, match="name the randomizer"):
        PrivatizedMessage({"y": src}, mechanism="")


def test_shuffle_permutes_within_each_replication() -> None:
    R, n = 3, 6
    msgs = [
        PrivatizedMessage(
            {"y": np.full(R, float(j)) + 10 * np.arange(R), "z": np.full((R, 2), -float(j))}, "rr"
        )
        for j in range(n)
    ]
    out = shuffle_messages(msgs, np.random.default_rng(0))
    assert out["y"].shape == (R, n) and out["z"].shape == (R, n, 2) and out.n_users == n
    for r in range(R):  # same multiset per replication; fields of one message stay together
        assert sorted(out["y"][r] - 10 * r) == list(range(n))
        np.testing.assert_array_equal(out["z"][r, :, 0], -(out["y"][r] - 10 * r))
    assert any(not np.array_equal(out["y"][r] - 10 * r, np.arange(n)) for r in range(R))
    # multi-message protocols: all m * n messages of the batch are shuffled together
    multi = [
        PrivatizedMessage(
            {"v_multi": np.stack([np.full(R, 2.0 * j), np.full(R, 2.0 * j + 1)], axis=1)}, "rr"
        )
        for j in range(n)
    ]
    mo = shuffle_messages(multi, np.random.default_rng(1))
    assert mo["v_multi"].shape == (R, 2 * n)
    for r in range(R):
        assert sorted(mo["v_multi"][r]) == list(range(2 * n))
    with pytest.raises(TrustBoundaryError, match="only accepts PrivatizedMessage"):
        shuffle_messages([np.zeros(R)], np.random.default_rng(0))  # type: ignore[list-item]
    with pytest.raises(TrustBoundaryError, match="single randomizer"):
        shuffle_messages(
            [msgs[0], PrivatizedMessage({"y": np.zeros(R)}, "other")], np.random.default_rng(0)
        )
    with pytest.raises(TrustBoundaryError, match="empty"):
        shuffle_messages([], np.random.default_rng(0))


def test_shuffle_is_uniform() -> None:
    # Position of message 0 after shuffling n = 4 messages: uniform over 4 slots.  Chi-square at a
    # fixed seed over 4000 replications.
    from scipy import stats

    R, n = 4000, 4
    msgs = [PrivatizedMessage({"y": np.full(R, float(j))}, "rr") for j in range(n)]
    out = shuffle_messages(msgs, np.random.default_rng(1))
    pos = np.argmax(out["y"] == 0.0, axis=1)
    assert stats.chisquare(np.bincount(pos, minlength=n)).pvalue > 1e-3


# -- EnvSpec ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kw", "pattern"),
    [
        ({"d": 0}, "d must be"),
        ({"K": 0}, "K must be"),
        ({"setting": "dual"}, "setting must be one of"),
        ({"horizon": 0}, "horizon"),
        ({"context_bound": 0.0}, "context_bound"),
        ({"reward_range": (1.0, 1.0)}, "reward_range must satisfy lo < hi"),
    ],
)
def test_envspec_validation(kw: dict, pattern: str) -> None:
    args = {"d": 2, "K": 3, **kw}
    with pytest.raises(ValidationError, match=pattern):
        EnvSpec(**args)


# -- declarative parameter constraints ----------------------------------------------------------
@pytest.mark.parametrize(
    ("rule", "value", "pattern"),
    [
        (Real(0.0, None, low_open=True), 0.0, r"lam must lie in \(0, inf\), got 0"),
        (Real(0.0, 1.0), 1.5, r"lam must lie in \[0, 1\], got 1.5"),
        (Real(0.0, None), "1", r"lam must be a real number, got '1'"),
        (Real(0.0, None), float("inf"), "lam must be finite"),
        (Real(0.0, None), True, "lam must be a real number"),
        (Int(1, 10), 0, r"lam must be an integer in \[1, 10\], got 0"),
        (Int(1, None), 2.5, "lam must be an integer"),
        (Choice("strict", "paper"), "nope", "lam must be one of 'strict', 'paper'; got 'nope'"),
        (Bool(), 1, "lam must be True or False, got 1"),
        (Optional(Positive), -1.0, r"lam must lie in \(0, inf\)"),
    ],
)
def test_constraints_reject_with_the_parameter_name(rule, value, pattern: str) -> None:
    with pytest.raises(ValidationError, match=pattern):
        rule.check("lam", value)


def test_constraints_normalize() -> None:
    assert Real(0.0, None, allow_inf=True).check("eps", float("inf")) == math.inf
    assert type(Real().check("x", np.int64(3))) is float
    assert Int(1).check("T", 1e6) == 1_000_000 and type(Int(1).check("T", np.int32(4))) is int
    assert Bool().check("b", np.bool_(True)) is True
    assert Optional(Epsilon).check("eps", None) is None and Delta.check("delta", 0.5) == 0.5
    assert NonNegative.check("x", 0) == 0.0
    marker = object()
    assert Any_().check("x", marker) is marker
    for rule in (Real(0, 1), Int(0, 3), Choice("a"), Bool(), Optional(Positive), Any_()):
        assert isinstance(rule.describe(), str) and rule.describe()
    out = validate_params(
        "alg", {"a": Positive, "b": Choice("x", "y")}, {"a": 2, "b": "x", "c": [1]}
    )
    assert out == {"a": 2.0, "b": "x", "c": [1]}  # parameters without a rule pass through unchanged
    with pytest.raises(ValidationError, match="b must be one of"):
        validate_params("alg", {"b": Choice("x", "y")}, {"b": "z"})


def test_make_suggests_names_and_lists_parameters() -> None:
    import privbandits as pb
    from privbandits.core.errors import ValidationError

    with pytest.raises(
        UnknownNameError, match=r"unknown algorithm 'linucbb' \(did you mean 'linucb'\?\)"
    ):
        pb.make("linucbb")
    with pytest.raises(ValidationError) as exc:
        pb.make("linucb", lamb=1.0)
    assert "unexpected keyword argument 'lamb'" in str(exc.value)
    assert "parameters are: lam, delta, alpha, sigma" in str(exc.value)


def test_a_validated_public_state_is_not_validated_twice_but_a_decoded_one_is() -> None:
    """The round protocol and the device both validate; the second pass is free for the same
    space and dimensions, and a plain state (as decoded from a server's bytes) is always checked."""
    from privbandits.core.messages import PublicState
    from privbandits.core.public_space import (
        CheckedPublicState,
        PublicField,
        PublicSpace,
        PublicStateError,
    )

    space = PublicSpace((PublicField("w", ("R", "d"), norm=1.0),))
    dims = {"R": 2, "d": 3}
    checked = space.validate(PublicState(w=np.full((2, 3), 0.5)), dims)
    assert isinstance(checked, CheckedPublicState) and space.validate(checked, dims) is checked
    with pytest.raises(PublicStateError, match="expected"):
        space.validate(checked, {"R": 3, "d": 3})  # other dimensions: checked again
    other = PublicSpace((PublicField("w", ("R", "d"), norm=0.1),))
    with pytest.raises(PublicStateError, match="norm"):
        other.validate(checked, dims)  # another space: checked again
    with pytest.raises(PublicStateError, match="norm"):
        space.validate(PublicState(w=np.full((2, 3), 5.0)), dims)
