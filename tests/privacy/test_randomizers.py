"""Tests of the bit randomizers (randomized rounding, Cheu et al. R*, randomized response)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.core.errors import ValidationError
from privbandits.privacy.randomizers import (
    binomial_bit_counts,
    bits_from_counts,
    debias_randomized_response,
    randomized_response,
    randomized_response_epsilon,
    randomized_response_keep_probability,
    randomized_rounding,
)


@settings(max_examples=100, deadline=None)
@given(st.floats(min_value=0.0, max_value=1e6, allow_nan=False))
def test_rounding_lands_on_neighbouring_integers(u: float) -> None:
    out = randomized_rounding(np.full(50, u), np.random.default_rng(0))
    assert np.all((out == math.floor(u)) | (out == math.floor(u) + 1))
    if float(u).is_integer():
        assert np.all(out == u)


def test_rounding_unbiased_with_bernoulli_variance(rng: np.random.Generator) -> None:
    N = 200_000
    for u in (0.3, 7.85, 12.5):
        out = randomized_rounding(np.full(N, u), rng)
        q = u - math.floor(u)
        var = q * (1 - q)
        # the fraction of round-ups q_hat has se sqrt(var / N); the plug-in variance is q_hat (1 - q_hat), so
        # |q_hat(1-q_hat) - var| = |(1 - 2q) e - e^2| <= |1 - 2q| |e| + e^2 with e = q_hat - q, |e| < 5 se
        e_max = 5 * math.sqrt(var / N)
        assert abs(out.mean() - u) < e_max
        assert abs(out.var() - var) < abs(1 - 2 * q) * e_max + e_max**2


def test_binomial_bit_counts_moments(rng: np.random.Generator) -> None:
    g, b, p, Delta, N = 6.3, 10, 0.25, 2.0, 200_000
    w = np.full(N, 1.37)
    c = binomial_bit_counts(w, g, b, p, Delta, rng)
    assert c.dtype == np.int64
    assert c.min() >= 0 and c.max() <= math.ceil(2 * g) + b
    u = 1.37 * g / Delta
    q = u - math.floor(u)
    mean, var = u + b * p, q * (1 - q) + b * p * (1 - p)  # x_hat + Bin(b, p), independent
    assert abs(c.mean() - mean) < 5 * math.sqrt(var / N)
    # sample variance s^2: se = sqrt((m4 - s^4 (N-3)/(N-1)) / N), m4 the (estimated) fourth central moment
    s2 = c.var(ddof=1)
    m4 = float(((c - c.mean()) ** 4).mean())
    assert abs(s2 - var) < 5 * math.sqrt((m4 - s2**2 * (N - 3) / (N - 1)) / N)


def test_binomial_bit_counts_top_of_range(rng: np.random.Generator) -> None:
    # w = 2 Delta needs 2g one-bits from the rounding part: the multiset must hold ceil(2g) + b bits
    c = binomial_bit_counts(np.full(1000, 2.0), 4.6, 0, 0.25, 1.0, rng)
    assert c.max() <= math.ceil(2 * 4.6) and c.min() >= math.floor(2 * 4.6)


def test_binomial_bit_counts_invalid(rng: np.random.Generator) -> None:
    with pytest.raises(ValidationError, match="w must lie"):
        binomial_bit_counts(np.array([2.5]), 4.0, 3, 0.25, 1.0, rng)
    with pytest.raises(ValidationError, match="w must lie"):
        binomial_bit_counts(np.array([-0.1]), 4.0, 3, 0.25, 1.0, rng)
    with pytest.raises(ValidationError, match="b"):
        binomial_bit_counts(np.array([1.0]), 4.0, -1, 0.25, 1.0, rng)
    with pytest.raises(ValidationError, match="p"):
        binomial_bit_counts(np.array([1.0]), 4.0, 3, 1.5, 1.0, rng)
    with pytest.raises(ValidationError, match="g"):
        binomial_bit_counts(np.array([1.0]), 0.0, 3, 0.25, 1.0, rng)
    with pytest.raises(ValidationError, match="Delta"):
        binomial_bit_counts(np.array([1.0]), 4.0, 3, 0.25, 0.0, rng)
    with pytest.raises(ValidationError, match="nonnegative"):
        randomized_rounding(np.array([-1.0]), rng)
    with pytest.raises(ValidationError, match="NaN"):
        randomized_rounding(np.array([np.nan]), rng)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=9), min_size=1, max_size=6))
def test_bits_from_counts(counts: list[int]) -> None:
    bits = bits_from_counts(np.array(counts), 9)
    assert bits.shape == (len(counts), 9) and bits.dtype == np.uint8
    assert list(bits.sum(axis=1)) == counts


def test_bits_from_counts_invalid() -> None:
    with pytest.raises(ValidationError, match="n_bits"):
        bits_from_counts(np.array([5]), 4)


def test_randomized_response_rates_and_debiasing(rng: np.random.Generator) -> None:
    eps, N = 1.2, 200_000
    k = randomized_response_keep_probability(eps)
    assert k == pytest.approx(math.exp(eps) / (1 + math.exp(eps)))
    assert randomized_response_epsilon(k) == pytest.approx(eps)
    ones = randomized_response(np.ones(N, dtype=np.uint8), eps, rng)
    zeros = randomized_response(np.zeros(N, dtype=np.uint8), eps, rng)
    se = math.sqrt(k * (1 - k) / N)
    assert abs(ones.mean() - k) < 5 * se
    assert abs(zeros.mean() - (1 - k)) < 5 * se
    # likelihood ratio of the two outputs is e^eps (the LDP level is attained)
    assert ones.mean() / zeros.mean() == pytest.approx(math.exp(eps), rel=0.05)
    x = (rng.random((2000, 50)) < 0.3).astype(np.uint8)
    est = debias_randomized_response(randomized_response(x, eps, rng), eps)
    err = est - x.sum(axis=1)
    var = 50 * k * (1 - k) / (2 * k - 1) ** 2  # each report has variance k(1-k) whatever the bit
    assert abs(err.mean()) < 5 * math.sqrt(var / 2000)


def test_randomized_response_invalid(rng: np.random.Generator) -> None:
    with pytest.raises(ValidationError, match="epsilon"):
        randomized_response(np.array([1]), 0.0, rng)
    with pytest.raises(ValidationError, match="only 0 and 1"):
        randomized_response(np.array([2]), 1.0, rng)
    with pytest.raises(ValidationError, match="keep_probability"):
        randomized_response_epsilon(0.4)
