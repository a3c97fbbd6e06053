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
    """A squared norm within a relative CLIP_RTOL above bound^2 counts as within the bound (unit
    vectors computed in floating point land at 1 + 2e-16); just beyond it, the vector is clipped."""
    bound = 1.5
    inside = np.array([bound * math.sqrt(1.0 + 0.5 * CLIP_RTOL), 0.0])
    assert clip_l2(inside.copy(), bound) is False
    outside = np.array([bound * math.sqrt(1.0 + 4.0 * CLIP_RTOL), 0.0])
    assert clip_l2(outside, bound) is True
    assert outside[0] == pytest.approx(bound, rel=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=6), st.floats(1e-3, 1e3))
def test_clip_l2_is_the_projection_onto_the_ball(xs: list[float], bound: float) -> None:
    v = np.array(xs)
    norm = float(np.linalg.norm(v))
    clipped = clip_l2(v, bound)
    assert clipped == (norm**2 > bound**2 * (1.0 + CLIP_RTOL))
    expected = np.array(xs) * (bound / norm if clipped else 1.0)
    np.testing.assert_allclose(v, expected, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("y, expected", [(-3.0, -1.0), (-1.0, -1.0), (0.25, 0.25), (2.0, 1.0), (2.0 - 1e-12, 1.0)])
def test_clip_scalar(y: float, expected: float) -> None:
    assert clip_scalar(y, -1.0, 1.0) == expected
