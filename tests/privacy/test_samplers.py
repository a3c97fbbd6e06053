"""The deterministic parts of the compiled samplers: clipping (the first step of every randomizer)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.privacy.samplers import CLIP_RTOL, clip_l2, clip_scalar


def test_clip_l2_scales_long_vectors_onto_the_sphere_in_place() -> None:
    v = np.array([3.0, 4.0])
    assert clip_l2(v, 2.0) is True
    np.testing.assert_allclose(v, [1.2, 1.6], rtol=1e-15)


def test_clip_l2_leaves_short_vectors_and_says_so() -> None:
    for v in (np.array([0.3, -0.4]), np.zeros(3), np.array([0.6, 0.8])):
        before = v.copy()
        assert clip_l2(v, 1.0) is False
        np.testing.assert_array_equal(v, before)


def test_clip_l2_tolerates_float_rounding_only() -> None:
    """A squared norm within a relative 1e-12 (CLIP_RTOL) above bound^2 counts as within the bound
    (unit vectors computed in floating point land at 1 + 2e-16); 4e-12 beyond it is clipped."""
    assert CLIP_RTOL == 1e-12
    bound = 1.5
    for rel in (2e-16, 5e-13):
        inside = np.array([bound * math.sqrt(1.0 + rel), 0.0])
        assert clip_l2(inside.copy(), bound) is False
    for rel in (4e-12, 1e-9, 0.5):
        outside = np.array([0.0, bound * math.sqrt(1.0 + rel)])
        assert clip_l2(outside, bound) is True
        assert outside[1] == pytest.approx(bound, rel=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=6), st.floats(1e-3, 1e3))
def test_clip_l2_is_the_projection_onto_the_ball(xs: list[float], bound: float) -> None:
    v = np.array(xs)
    norm = float(np.linalg.norm(v))
    clipped = clip_l2(v, bound)
    assert clipped == (norm**2 > bound**2 * (1.0 + CLIP_RTOL))
    expected = np.array(xs) * (bound / norm if clipped else 1.0)
    np.testing.assert_allclose(v, expected, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize(
    "y, expected", [(-3.0, -1.0), (-1.0, -1.0), (0.25, 0.25), (2.0, 1.0), (2.0 - 1e-12, 1.0)]
)
def test_clip_scalar(y: float, expected: float) -> None:
    assert clip_scalar(y, -1.0, 1.0) == expected


@pytest.mark.parametrize("kind, scale, kurtosis", [("gaussian", 0.7, 3.0), ("laplace", 0.7, 6.0)])
def test_symmetric_noise_matrices_have_the_stated_law(
    kind: str, scale: float, kurtosis: float
) -> None:
    """Every matrix of a batch gets its own noise, symmetric, with i.i.d. zero-mean entries on and
    above the diagonal of variance sigma^2 (Gaussian) or 2 b^2 (Laplace).

    With the mean known (0), the variance estimate mean(w^2) over n entries has relative sd
    sqrt((kurtosis - 1) / n) (kurtosis 3 Gaussian, 6 Laplace): n = 60000 entries (10000 matrices
    x 6) give 0.6% / 0.9%; the assertion allows 4 sd.  The entry means have sd sqrt(var / n') over
    the n' = 10000 matrices; 4 sd again."""
    from privbandits.privacy.noise import sample_symmetric_gaussian, sample_symmetric_laplace

    rng = np.random.default_rng(20261125)
    n, d = 10_000, 3
    if kind == "gaussian":
        W, var = sample_symmetric_gaussian(rng, (n,), d, scale), scale**2
    else:
        W, var = sample_symmetric_laplace(rng, (n,), d, scale), 2 * scale**2
    assert W.shape == (n, d, d)
    np.testing.assert_array_equal(W, np.swapaxes(W, 1, 2))
    iu = np.triu_indices(d)
    entries = W[:, iu[0], iu[1]]  # (n, 6)
    est = np.mean(entries**2) / var
    assert abs(est - 1.0) < 4 * math.sqrt((kurtosis - 1.0) / entries.size), est
    assert np.all(np.abs(entries.mean(axis=0)) < 4 * math.sqrt(var / n)), entries.mean(axis=0)
    assert np.all(entries.std(axis=0) > 0.9 * math.sqrt(var))  # every position, every matrix noised


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_symmetric_noise_matrices_accept_any_dimension_from_one(kind: str) -> None:
    from privbandits.core.errors import ValidationError
    from privbandits.privacy.noise import sample_symmetric_gaussian, sample_symmetric_laplace

    sample = sample_symmetric_gaussian if kind == "gaussian" else sample_symmetric_laplace
    rng = np.random.default_rng(1)
    one = sample(rng, (4, 2), 1, 1.0)
    assert one.shape == (4, 2, 1, 1) and np.all(one != 0.0)
    with pytest.raises(ValidationError, match=r"\bd\b"):
        sample(rng, (4,), 0, 1.0)


def test_l2_ball_mechanism_keeps_leading_axes_and_counts_clipped_inputs() -> None:
    """Inputs of shape (..., d): every output has norm l2_ball_radius(eps, d, R) whatever the
    leading axes; the count of clipped inputs is of norms above R (1.2 R is clipped, 0.5 R not)."""
    from privbandits.privacy.calibration import l2_ball_radius
    from privbandits.privacy.noise import l2_ball_mechanism

    R, eps, d = 2.0, 1.0, 3
    x = np.zeros((2, 4, d))
    x[..., 0] = R * np.array([[0.5, 1.2, 3.0, 0.0], [1.0, 0.9, 1.5, 0.1]])  # 3 of 8 above R
    z, n_clipped = l2_ball_mechanism(x, eps, R, np.random.default_rng(3))
    assert z.shape == x.shape and n_clipped == 3
    np.testing.assert_allclose(np.linalg.norm(z, axis=-1), l2_ball_radius(eps, d, R), rtol=1e-12)


def test_noise_shapes_may_be_empty_but_not_negative() -> None:
    from privbandits.core.errors import ValidationError
    from privbandits.privacy.noise import sample_gaussian

    assert sample_gaussian(np.random.default_rng(0), (0, 3), 1.0).shape == (0, 3)
    with pytest.raises(ValidationError, match="shape"):
        sample_gaussian(np.random.default_rng(0), (-1, 3), 1.0)
