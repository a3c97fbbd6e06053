"""The one calibration search: the result meets its target and is tight."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.core.errors import PrivacyError
from privbandits.privacy.amplification import closed_form_epsilon, closed_form_inverse
from privbandits.privacy.calibration import (
    Bracket,
    calibrate_noise,
    certify,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_sigma_analytic,
)

EPS = st.floats(0.05, 30.0)
DELTA = st.floats(1e-10, 0.3)


@settings(max_examples=40, deadline=None)
@given(eps=EPS, delta=DELTA)
def test_gaussian_sigma_meets_target_and_is_tight(eps, delta):
    sigma = gaussian_sigma_analytic(eps, delta)
    assert gaussian_delta(eps, sigma) <= delta
    # a relative 1e-9 less noise breaks the target: the search is tight
    assert gaussian_delta(eps, sigma * (1.0 - 1e-9)) > delta


@settings(max_examples=40, deadline=None)
@given(sigma=st.floats(0.05, 50.0), delta=DELTA)
def test_gaussian_epsilon_is_the_smallest_certified(sigma, delta):
    eps = gaussian_epsilon(sigma, delta)
    if eps == 0.0:
        assert gaussian_delta(0.0, sigma) <= delta
        return
    assert gaussian_delta(eps, sigma) <= delta
    assert gaussian_delta(eps * (1.0 - 1e-9), sigma) > delta


@settings(max_examples=30, deadline=None)
@given(eps=EPS, delta=DELTA, n=st.integers(2, 10**6))
def test_increasing_loss_returns_the_largest_level(eps, delta, n):
    e0 = closed_form_inverse(eps, delta, n)
    assert closed_form_epsilon(e0, n, delta) <= eps
    assert closed_form_epsilon(e0 * (1.0 + 1e-9), n, delta) > eps


@settings(max_examples=50, deadline=None)
@given(
    target=st.floats(1e-3, 1e3),
    power=st.floats(0.3, 3.0),
    start=st.floats(1e-3, 1e3),
)
def test_generic_search_on_a_power_law(target, power, start):
    """loss(s) = s^-power: the root is target^(-1/power), whatever bracket the search starts from."""
    loss = lambda s: s**-power
    s = calibrate_noise(loss, target, Bracket(1e-12, start, factor=2.0))
    exact = target ** (-1.0 / power)
    assert loss(s) <= target
    assert s == pytest.approx(exact, rel=1e-9)


def test_log_scale_bracket_widens_both_ends():
    loss = lambda s: 1.0 / s
    s = calibrate_noise(loss, 1e-9, Bracket(-1.0, 1.0, step=1.0), param=math.exp)
    assert loss(s) <= 1e-9 and s == pytest.approx(1e9, rel=1e-9)
    s = calibrate_noise(loss, 1e9, Bracket(-1.0, 1.0, step=1.0), param=math.exp)
    assert loss(s) <= 1e9 and s == pytest.approx(1e-9, rel=1e-9)


def test_certify_steps_to_the_safe_side():
    loss = lambda s: 1.0 / s
    # start a hair below the exact root 1/target: the walk goes up until the target holds
    x = certify(loss, 0.3, (1.0 / 0.3) * (1.0 - 5e-12), decreasing=True)
    assert loss(x) <= 0.3
    x = certify(
        lambda e: e, 2.0, 2.0 + 1e-9, decreasing=False, rel=1e-10, additive=True, growth=2.0
    )
    assert x <= 2.0
    assert certify(loss, 0.3, 1.0, decreasing=True, growth=2.0, limit=1.5) == 1.5


def test_a_bracket_that_cannot_widen_is_refused():
    with pytest.raises(PrivacyError):
        calibrate_noise(lambda s: 1.0 / s, 1e-3, Bracket(0.5, 2.0))


def test_final_check_catches_a_wrong_monotonicity():
    """Declaring an increasing loss as decreasing cannot return a value that misses the target."""
    with pytest.raises((PrivacyError, ValueError)):
        calibrate_noise(lambda s: s, 1.0, Bracket(0.0, 4.0), decreasing=True)
