"""The device's own checks, at, inside and beyond each bound: inputs, public states, declared noise.

A device in the local and shuffle models keeps its guarantee on its own: its inputs are checked
(:func:`~privbandits.privacy.inputs.check_device_inputs`), every public state the server sends is
checked against the declared space (:class:`~privbandits.core.public_space.PublicSpace`), and the
accounted quantity is the whitened distance of two encoded messages
(:func:`~privbandits.privacy.device.whitened_distance`).  Each check is exercised here exactly at
its bound (accepted), just beyond it (refused, naming what was wrong) and on the degenerate cases
(no users, empty fields, zero noise scales), so that a comparison turned strict or loose, a
tolerance changed or a branch dropped is seen.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from privbandits.core.errors import DataBoundError, TrustBoundaryError, ValidationError
from privbandits.core.public_space import PublicField, PublicSpace, PublicStateError, dims_of
from privbandits.core.spec import EnvSpec
from privbandits.privacy.device import (
    NOISE_KINDS,
    DeviceNoise,
    DeviceSensitivity,
    whitened_distance,
)
from privbandits.privacy.inputs import (
    NORM_RTOL,
    check_client_inputs,
    check_device_inputs,
    context_shape,
)

SINGLE = EnvSpec(d=3, K=4, setting="single", context_bound=2.5)
MULTI = EnvSpec(d=3, K=4, setting="multi", context_bound=0.8)


# ------------------------------------------------------------------------------------------------
# privacy/inputs.py
# ------------------------------------------------------------------------------------------------
def _contexts(spec: EnvSpec, R: int, norm: float) -> np.ndarray:
    X = np.zeros(context_shape(spec, R))
    X[..., 0] = norm
    return X


def test_context_shape_follows_the_setting() -> None:
    assert context_shape(SINGLE, 5) == (5, 4, 3)
    assert context_shape(MULTI, 5) == (5, 3)


@pytest.mark.parametrize("spec", [SINGLE, MULTI], ids=["single", "multi"])
def test_contexts_at_the_bound_pass_and_beyond_it_are_refused(spec: EnvSpec) -> None:
    B = spec.context_bound
    X, a, y = check_device_inputs(
        spec, _contexts(spec, 2, B * (1 + 0.5 * NORM_RTOL)), [0, 3], [0.5, -7.0]
    )
    assert (
        X.dtype == np.float64
        and X.flags.c_contiguous
        and a.dtype == np.int64
        and y.dtype == np.float64
    )
    assert a.tolist() == [0, 3] and y.tolist() == [
        0.5,
        -7.0,
    ]  # rewards are clipped by the randomizers
    with pytest.raises(DataBoundError, match=f"above the declared context_bound={B:g}"):
        check_device_inputs(spec, _contexts(spec, 2, B * (1 + 3 * NORM_RTOL)))
    # one bad row among good ones is found (not only the first)
    X = _contexts(spec, 3, 0.1 * B)
    X[2, ..., 1] = B
    with pytest.raises(DataBoundError, match="l2 norm"):
        check_device_inputs(spec, X)
    # bound=False: finiteness only
    check_device_inputs(spec, _contexts(spec, 2, 100 * B), bound=False)


@pytest.mark.parametrize("R", [1, 2, 5])
def test_every_feature_counts_whatever_the_number_of_users(R: int) -> None:
    """The excess sits in the last feature of the last user, with fewer users than features too."""
    X = np.zeros((R, 3))
    X[-1, 2] = 0.81  # bound 0.8
    with pytest.raises(DataBoundError, match="l2 norm 0.81"):
        check_device_inputs(MULTI, X)
    X[-1, 2] = 0.8
    check_device_inputs(MULTI, X)


def test_the_norm_is_the_l2_norm_of_each_feature_vector() -> None:
    X = np.zeros((1, 4, 3))
    X[0, 2] = [1.5, 2.0, 0.0]  # norm 2.5 exactly: at the bound
    check_device_inputs(SINGLE, X)
    X[0, 2] = [1.5, 2.0, 0.01]
    with pytest.raises(DataBoundError, match="l2 norm 2.50002"):
        check_device_inputs(SINGLE, X)
    X[0, 2] = [-1.5, -2.0, 0.0]  # signs do not matter
    check_device_inputs(SINGLE, X)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_are_refused_and_counted(bad: float) -> None:
    X = _contexts(SINGLE, 2, 1.0)
    X[1, 3, 2] = bad
    with pytest.raises(DataBoundError, match="contexts contain 1 NaN or infinite"):
        check_device_inputs(SINGLE, X)
    with pytest.raises(DataBoundError, match="contexts contain 1 NaN"):  # also without the bound
        check_device_inputs(SINGLE, X, bound=False)
    with pytest.raises(DataBoundError, match="rewards contain 2 NaN or infinite"):
        check_device_inputs(SINGLE, _contexts(SINGLE, 3, 1.0), None, [bad, 0.0, bad])
    with pytest.raises(DataBoundError, match="rewards contain 1 NaN"):
        check_client_inputs(np.zeros((2, 3)), np.array([0.0, bad]), 1.0)


def test_check_client_inputs_directly() -> None:
    check_client_inputs(np.full((2, 1), 0.5), np.zeros(2), 0.5)
    with pytest.raises(DataBoundError, match="l2 norm 0.6"):
        check_client_inputs(np.full((2, 1), 0.6), np.zeros(2), 0.5)
    check_client_inputs(np.zeros((0, 3)), np.zeros(0), 1.0)  # nobody: nothing to check
    with pytest.raises(DataBoundError):
        check_client_inputs(np.array([[np.nan, 0.0]]), np.zeros(0), 1.0)


def test_shapes_are_checked_against_the_problem() -> None:
    with pytest.raises(
        ValidationError, match=r"shape \(2, 3\); the single-parameter problem needs \(R, K, d\)"
    ):
        check_device_inputs(SINGLE, np.zeros((2, 3)))
    with pytest.raises(ValidationError, match=r"multi-parameter problem needs \(R, d\) = \(2, 3\)"):
        check_device_inputs(MULTI, np.zeros((2, 4, 3)))
    with pytest.raises(ValidationError, match="K=4 arms, d=3 features"):
        check_device_inputs(SINGLE, np.zeros((2, 4, 2)))
    with pytest.raises(ValidationError, match="scalar"):
        check_device_inputs(SINGLE, 1.0)
    with pytest.raises(ValidationError, match=r"actions have shape \(3,\), expected \(2,\)"):
        check_device_inputs(SINGLE, np.zeros((2, 4, 3)), [0, 1, 2])
    with pytest.raises(ValidationError, match=r"rewards have shape \(2, 1\), expected \(2,\)"):
        check_device_inputs(SINGLE, np.zeros((2, 4, 3)), None, np.zeros((2, 1)))
    X, a, y = check_device_inputs(MULTI, np.zeros((0, 3)), np.zeros(0, dtype=int), np.zeros(0))
    assert X.shape == (0, 3) and a.shape == (0,) and y.shape == (0,)


def test_actions_are_exact_arm_indices() -> None:
    X = np.zeros((3, 4, 3))
    _, a, _ = check_device_inputs(SINGLE, X, np.array([0.0, 3.0, 2.0]))  # exact floats are accepted
    assert a.dtype == np.int64 and a.tolist() == [0, 3, 2]
    _, a, _ = check_device_inputs(SINGLE, X, np.array([1, 2, 3], dtype=np.uint8))
    assert a.tolist() == [1, 2, 3]
    with pytest.raises(ValidationError, match="integer arm indices"):
        check_device_inputs(SINGLE, X, np.array([0.0, 2.5, 1.0]))
    with pytest.raises(ValidationError, match="integer arm indices"):
        check_device_inputs(SINGLE, X, np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValidationError, match="integer arm indices"):
        check_device_inputs(SINGLE, X, np.array(["0", "1", "2"]))
    with pytest.raises(ValidationError, match=r"action 4 is not an arm index in \[0, 3\]"):
        check_device_inputs(SINGLE, X, [0, 4, 1])
    with pytest.raises(ValidationError, match="action -1 is not an arm index"):
        check_device_inputs(SINGLE, X, [0, -1, 3])
    with pytest.raises(
        ValidationError, match="action -2 is not"
    ):  # both ends wrong: the low one is named
        check_device_inputs(SINGLE, X, [-2, 9, 3])


def test_dtypes_of_contexts_and_rewards() -> None:
    X, _, y = check_device_inputs(
        MULTI, np.zeros((2, 3), dtype=np.int32), None, np.array([1, 0], dtype=np.int8)
    )
    assert X.dtype == np.float64 and y.dtype == np.float64
    with pytest.raises(ValidationError, match="contexts must be real numbers, got dtype bool"):
        check_device_inputs(MULTI, np.zeros((2, 3), dtype=bool))
    with pytest.raises(ValidationError, match="contexts must be real numbers"):
        check_device_inputs(MULTI, np.zeros((2, 3), dtype=complex))
    with pytest.raises(ValidationError, match="rewards must be real numbers, got dtype bool"):
        check_device_inputs(MULTI, np.zeros((2, 3)), None, np.array([True, False]))
    with pytest.raises(ValidationError, match="rewards must be real numbers"):
        check_device_inputs(MULTI, np.zeros((2, 3)), None, np.array(["a", "b"]))
    Xf = np.asfortranarray(np.zeros((2, 4, 3)))
    assert check_device_inputs(SINGLE, Xf)[0].flags.c_contiguous


# ------------------------------------------------------------------------------------------------
# privacy/device.py
# ------------------------------------------------------------------------------------------------
def test_declared_noise_kinds_and_variances() -> None:
    g = DeviceNoise.gaussian(np.array([[0.5, 2.0]]))
    assert (
        g.kind == "gaussian"
        and g.variance.tolist() == [[0.25, 4.0]]
        and g.scale.dtype == np.float64
    )
    lap = DeviceNoise.laplace([[0.5, 3.0]])
    assert lap.kind == "laplace" and lap.variance.tolist() == [[0.5, 18.0]]
    assert NOISE_KINDS == ("gaussian", "laplace", "unbiased", "exact")
    for kind in NOISE_KINDS:
        DeviceNoise(kind, np.ones((1, 1)), np.ones((1, 1)))
    with pytest.raises(ValidationError, match="noise kind"):
        DeviceNoise("uniform", np.ones((1, 1)), np.ones((1, 1)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.kind = "laplace"  # type: ignore[misc]


def test_declared_sensitivity_is_validated() -> None:
    assert DeviceSensitivity("l2", 0.0).bound == 0.0
    for norm in ("l1", "l2", "linf"):
        DeviceSensitivity(norm, 2.5)
    with pytest.raises(ValidationError, match="sensitivity norm"):
        DeviceSensitivity("l3", 1.0)
    for bad in (-1e-12, math.inf, math.nan):
        with pytest.raises(ValidationError, match="sensitivity bound"):
            DeviceSensitivity("l1", bad)
    with pytest.raises(dataclasses.FrozenInstanceError):
        DeviceSensitivity("l1", 1.0).bound = 2.0  # type: ignore[misc]


def test_whitened_distance_in_each_norm() -> None:
    e0 = np.array([[3.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    e1 = np.array([[0.0, 4.0, 1.0], [1.0, -2.0, 0.0]])
    s = np.array([[1.0, 2.0, 0.5], [0.5, 1.0, 4.0]])
    # whitened differences: [3, -2, 0] and [-2, 2, 0]
    assert whitened_distance(e0, e1, s, "l1").tolist() == [5.0, 4.0]
    assert whitened_distance(e0, e1, s, "l2") == pytest.approx(
        [math.sqrt(13), math.sqrt(8)], rel=1e-15
    )
    assert whitened_distance(e0, e1, s, "linf").tolist() == [3.0, 2.0]
    assert whitened_distance(e1, e0, s, "linf").tolist() == [3.0, 2.0]  # symmetric
    # a scalar scale broadcasts; messages with more axes are flattened per user
    assert whitened_distance(e0.reshape(2, 3, 1), e1.reshape(2, 3, 1), 2.0, "l1").tolist() == [
        3.5,
        1.5,
    ]
    # no coordinates: distance 0
    assert whitened_distance(
        np.zeros((2, 0)), np.zeros((2, 0)), np.ones((2, 0)), "linf"
    ).tolist() == [0.0, 0.0]


def test_exact_coordinates_must_agree() -> None:
    """A zero-scale coordinate that differs is infinitely distinguishable; one that agrees adds 0."""
    s = np.array([[1.0, 0.0]])
    assert whitened_distance([[1.0, 5.0]], [[0.0, 5.0]], s, "l2").tolist() == [1.0]
    for norm in ("l1", "l2", "linf"):
        assert whitened_distance([[1.0, 5.0]], [[0.0, 5.5]], s, norm).tolist() == [math.inf]
        assert whitened_distance([[0.0, -1e-300]], [[0.0, 0.0]], s, norm).tolist() == [math.inf]


# ------------------------------------------------------------------------------------------------
# core/public_space.py
# ------------------------------------------------------------------------------------------------
DIMS = {"R": 2, "K": 4, "d": 3, "D": 12}


def test_dims_of_the_two_settings() -> None:
    assert dims_of(SINGLE, 5) == {"R": 5, "K": 4, "d": 3, "D": 3}
    assert dims_of(MULTI, 2, m=7) == {"R": 2, "K": 4, "d": 3, "D": 12, "m": 7}


def test_shapes_resolve_and_are_enforced() -> None:
    f = PublicField("w", ("R", "*", 2, "d"))
    assert f.resolve(DIMS) == (2, None, 2, 3)
    assert f.validate(np.zeros((2, 5, 2, 3)), DIMS).shape == (2, 5, 2, 3)
    for bad in [(2, 5, 2), (2, 5, 2, 4), (3, 1, 2, 3), (2, 5, 3, 3)]:
        with pytest.raises(PublicStateError, match=r"has shape .*expected \(2, '\*', 2, 3\)"):
            f.validate(np.zeros(bad), DIMS)
    assert issubclass(PublicStateError, TrustBoundaryError)


def test_float_fields_at_and_beyond_their_range() -> None:
    f = PublicField("x", ("R",), low=-1.5, high=2.0)
    out = f.validate([-1.5, 2.0], DIMS)
    assert out.dtype == np.float64 and out.flags.c_contiguous and out.tolist() == [-1.5, 2.0]
    with pytest.raises(PublicStateError, match="below its allowed minimum -1.5"):
        f.validate([-1.5000001, 0.0], DIMS)
    with pytest.raises(PublicStateError, match="above its allowed maximum 2"):
        f.validate([0.0, 2.0000001], DIMS)
    with pytest.raises(PublicStateError, match="NaN or infinite"):
        f.validate([0.0, np.nan], DIMS)
    with pytest.raises(PublicStateError, match="NaN or infinite"):
        PublicField("x", ("R",)).validate([np.inf, 0.0], DIMS)
    with pytest.raises(PublicStateError, match="must hold real numbers"):
        f.validate(np.array(["a", "b"]), DIMS)
    assert f.validate(np.array([True, False]), DIMS).tolist() == [1.0, 0.0]  # booleans are 0/1
    assert PublicField("x", ("*",), low=5.0).validate(np.zeros(0), DIMS).shape == (
        0,
    )  # empty: nothing to check


def test_integer_fields_and_allowed_values() -> None:
    f = PublicField("slot", ("R",), kind="i", low=0, high=3)
    out = f.validate(np.array([0.0, 3.0]), DIMS)  # exact floats are integers
    assert out.dtype == np.int64 and out.tolist() == [0, 3]
    with pytest.raises(PublicStateError, match="must hold integers"):
        f.validate(np.array([0.5, 1.0]), DIMS)
    with pytest.raises(PublicStateError, match="must hold integers"):
        f.validate(np.array([np.inf, 1.0]), DIMS)
    with pytest.raises(PublicStateError, match="above its allowed maximum 3"):
        f.validate([0, 4], DIMS)
    with pytest.raises(PublicStateError, match="below its allowed minimum 0"):
        f.validate([-1, 2], DIMS)
    v = PublicField("phase", ("R",), kind="i", values=(1, 4, 9))
    assert v.validate([4, 9], DIMS).tolist() == [4, 9]
    with pytest.raises(PublicStateError, match=r"has the value 5; allowed: \[1, 4, 9\]"):
        v.validate([4, 5], DIMS)


def test_norm_fields_at_and_beyond_the_norm() -> None:
    f = PublicField("theta", ("R", "d"), norm=2.0)
    at = np.array([[1.2, 1.6, 0.0], [0.0, 0.0, -2.0]])  # both rows of norm 2
    f.validate(at * (1 + 0.5e-9), DIMS)
    with pytest.raises(PublicStateError, match="a row of l2 norm 2 above its allowed 2"):
        f.validate(np.array([[1.2, 1.6, 0.0], [0.0, 0.0, -2.00000001]]), DIMS)


def test_symmetric_and_psd_fields() -> None:
    sym = PublicField("M", ("R", "d", "d"), symmetric=True)
    A = np.array([[[2.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 1.0]]] * 2)
    sym.validate(A, DIMS)
    B = A.copy()
    B[1, 0, 2] = 1e-6
    with pytest.raises(PublicStateError, match="symmetric matrix"):
        sym.validate(B, DIMS)
    C = A.copy()
    C[1, 0, 2] = 5e-13  # rounding-size asymmetry (absolute 1e-12) is accepted
    sym.validate(C, DIMS)
    floor = float(np.linalg.eigvalsh(A[0]).min())
    psd = PublicField("V", ("R", "d", "d"), psd_floor=floor)
    psd.validate(A, DIMS)  # at the floor
    with pytest.raises(PublicStateError, match="symmetric matrix"):  # a floor implies symmetry
        psd.validate(B, DIMS)
    with pytest.raises(PublicStateError, match="eigenvalue .* below its allowed minimum"):
        psd.validate(A - 1e-6 * np.eye(3), DIMS)
    big = A * 1e6  # slack relative to the largest eigenvalue
    PublicField("V", ("R", "d", "d"), psd_floor=floor * 1e6).validate(big, DIMS)
    # small matrices: the absolute slack is 1e-12 (not 1e-12 times their largest eigenvalue)
    tiny = PublicField("V", ("R", "d", "d"), psd_floor=1e-3)
    low = 1e-3 * (1 - 1e-9)
    tiny.validate(np.array([np.diag([low - 5e-13, 2e-3, 3e-3])] * 2), DIMS)
    with pytest.raises(PublicStateError, match="eigenvalue"):
        tiny.validate(np.array([np.diag([low - 2e-12, 2e-3, 3e-3])] * 2), DIMS)


def test_spaces_refuse_unknown_and_missing_fields() -> None:
    space = PublicSpace((PublicField("a", ("R",)), PublicField("b", ("K",), kind="i", low=0)))
    assert space.names == ("a", "b")
    state = space.validate({"a": [0.5, 1.0], "b": [0, 1, 2, 3]}, DIMS)
    assert state["a"].tolist() == [0.5, 1.0] and state["b"].dtype == np.int64
    with pytest.raises(
        PublicStateError, match="field 'c' is not part of this algorithm's public state"
    ):
        space.validate({"a": [0.5, 1.0], "b": [0, 1, 2, 3], "c": 1}, DIMS)
    with pytest.raises(PublicStateError, match="field 'b' is missing"):
        space.validate({"a": [0.5, 1.0]}, DIMS)
    with pytest.raises(PublicStateError, match="not a public state"):
        space.validate([("a", 1)], DIMS)
    assert PublicSpace().validate({}, DIMS) == PublicSpace().validate({}, DIMS)


def test_a_checked_state_is_checked_again_unless_same_space_and_dimensions() -> None:
    space = PublicSpace((PublicField("a", ("R",), high=1.0),))
    other = PublicSpace((PublicField("a", ("R",), high=1.0),))  # equal, but another object
    checked = space.validate({"a": [0.5, 1.0]}, DIMS)
    assert space.validate(checked, dict(DIMS)) is checked  # same space, same dimensions: as is
    again = other.validate(checked, DIMS)
    assert again is not checked and again["a"].tolist() == [0.5, 1.0]
    with pytest.raises(PublicStateError, match="has shape"):  # other dimensions: checked again
        space.validate(checked, {**DIMS, "R": 3})


def test_random_draws_span_their_ranges() -> None:
    """Integer draws reach both ends; a norm field's rows within the norm are left as drawn (at the
    smallest scale, 1e-3, their norms stay near 1e-3); unbounded extremes are +-1e6 or 0."""
    rng = np.random.default_rng(8)
    dims = {"R": 300, "K": 4, "d": 3, "D": 12}
    i = PublicField("i", ("R",), kind="i", low=-3, high=7).draw(dims, rng)
    assert set(np.unique(i)) == set(range(-3, 8))
    small = 0
    for _ in range(40):
        n = np.linalg.norm(PublicField("n", ("R", "d"), norm=1.5).draw(dims, rng), axis=-1)
        if np.median(n) < 1e-2:  # a draw at scale 1e-3
            small += 1
            assert np.median(n) > 5e-4
    assert small > 0
    u = PublicField("u", ("R",)).draw(dims, rng, extreme=True)
    assert set(np.unique(u)) == {-1e6, 0.0, 1e6}
    # a range around 0 (not symmetric) has 0 among its extremes; an integer range is capped at +-1e6
    z = PublicField("z", ("R",), low=-0.5, high=2.0).draw(dims, rng, extreme=True)
    assert set(np.unique(z)) == {-0.5, 0.0, 2.0}
    big = PublicField("b", ("R",), kind="i", low=-(10**7)).draw(dims, rng, extreme=True)
    assert set(np.unique(big)) == {-(10**6), 10**6}


@pytest.mark.parametrize("extreme", [False, True])
def test_drawn_states_are_members_and_extremes_reach_the_bounds(extreme: bool) -> None:
    space = PublicSpace(
        (
            PublicField("x", ("R", "d"), low=-0.5, high=2.0),
            PublicField("n", ("R", "d"), norm=1.5),
            PublicField("i", ("R",), kind="i", low=-3, high=7),
            PublicField("v", ("R", "*"), kind="i", values=(2, 5, 11)),
            PublicField("s", ("R", "d", "d"), symmetric=True, low=-1.0, high=1.0),
            PublicField("p", ("R", "d", "d"), psd_floor=0.25),
            PublicField("u", ("K",)),
        )
    )
    rng = np.random.default_rng(4)
    dims = {"R": 400, "K": 4, "d": 3, "D": 12}
    for _ in range(3):
        state = space.draw(dims, rng, extreme)
        space.validate(dict(state.items()), dims)  # every draw is a member
    assert state["v"].shape == (400, 1) and state["i"].dtype == np.int64
    if extreme:
        assert set(np.unique(state["x"])) <= {-0.5, 2.0, 0.0} and {-0.5, 2.0} <= set(
            np.unique(state["x"])
        )
        assert set(np.unique(state["i"])) == {-3, 7}
        assert set(np.unique(state["v"])) == {2, 11}
        norms = np.linalg.norm(state["n"], axis=-1)
        assert np.allclose(norms[norms > 0], 1.5)
        eig = np.linalg.eigvalsh(state["p"])
        assert np.isclose(eig.min(), 0.25) and np.isclose(eig.max(), 1e6)
    else:
        assert state["x"].min() >= -0.5 and state["x"].max() <= 2.0
        assert len(np.unique(state["i"])) > 5 and state["i"].min() >= -3 and state["i"].max() <= 7
        assert set(np.unique(state["v"])) == {2, 5, 11}
        assert np.linalg.norm(state["n"], axis=-1).max() <= 1.5 * (1 + 1e-12)
        assert np.linalg.eigvalsh(state["p"]).min() >= 0.25 - 1e-9
    assert np.array_equal(state["s"], np.swapaxes(state["s"], -1, -2))
