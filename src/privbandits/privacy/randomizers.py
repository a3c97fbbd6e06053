"""Bit randomizers: randomized rounding, the binomial bit randomizer of Cheu et al., randomized response.

These are the one-dimensional local randomizers the shuffle protocols of
:mod:`privbandits.privacy.cheu` are built from.  Every function is batched over arbitrary
leading axes, draws only from the :class:`numpy.random.Generator` it is given, and draws its noise
through the compiled samplers of :mod:`privbandits.privacy.samplers` (entry by entry in C order).

References
----------
Cheu, Joseph, Mao & Peng (2022), "Shuffle private stochastic convex optimization", ICLR,
vector-summation randomizer; as restated in Sarmasarkar (2026), Appendix T, Algorithm 4 (``R*``).
Warner (1965), "Randomized response"; Dwork & Roth (2014), section 3.2.
"""

from __future__ import annotations

import math

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.validation import (
    check_epsilon,
    check_finite_array,
    check_in_range,
    check_int,
    check_positive,
)
from privbandits.privacy import samplers

__all__ = [
    "binomial_bit_counts",
    "bits_from_counts",
    "debias_randomized_response",
    "randomized_response",
    "randomized_response_epsilon",
    "randomized_response_keep_probability",
    "randomized_rounding",
]


def randomized_rounding(u: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Unbiased stochastic rounding of nonnegative reals to integers.

    Returns ``floor(u) + Bernoulli(u - floor(u))`` element-wise (Algorithm 4, lines 2-4 of
    Sarmasarkar 2026), so that ``E[out] = u`` and ``Var[out] = q (1 - q)`` with ``q = frac(u)``.

    Parameters
    ----------
    u : ndarray
        Nonnegative finite reals.
    rng : Generator
        Client noise stream.

    Returns
    -------
    ndarray of int64, same shape as ``u``.
    """
    u = check_finite_array("u", u)
    if u.size and float(u.min()) < 0.0:
        raise ValidationError(
            f"u must be nonnegative for randomized rounding, got minimum {float(u.min()):g}"
        )
    out = np.empty(u.size, dtype=np.int64)
    samplers.randomized_rounding_rows(rng, np.ascontiguousarray(u, dtype=float).reshape(-1), out)
    return out.reshape(u.shape)


def binomial_bit_counts(
    w: np.ndarray, g: float, b: int, p: float, Delta: float, rng: np.random.Generator
) -> np.ndarray:
    """The 1-D randomizer ``R*(w, g, b, p, Delta)``, returned as the number of one-bits.

    Sarmasarkar (2026), Appendix T, Algorithm 4 (after Cheu et al. 2022):
    ``x_bar = floor(w g / Delta)``, ``gamma1 ~ Bernoulli(w g / Delta - x_bar)``,
    ``x_hat = x_bar + gamma1``, ``gamma2 ~ Binomial(b, p)`` (compiled sampler
    :func:`~privbandits.privacy.samplers.binomial_bits`, entry by entry); the message is a multiset of
    ``ceil(2 g) + b`` bits of which ``x_hat + gamma2`` are ones (``w`` ranges
    over ``[0, 2 Delta]``, so ``g + b`` bits as printed would not always suffice).  A multiset of
    bits is determined by its number of ones, which is what this function returns; use
    :func:`bits_from_counts` to materialize the bits.

    Parameters
    ----------
    w : ndarray
        Biased coordinates in ``[0, 2 Delta]`` (any shape).
    g : float
        Precision (accuracy parameter), ``g > 0``.
    b : int
        Number of binomial noise bits, ``b >= 0``.
    p : float
        Bit probability of the binomial noise, in ``[0, 1]``.
    Delta : float
        Bias and scale, ``Delta > 0``.
    rng : Generator
        Client noise stream.

    Returns
    -------
    ndarray of int64
        ``x_hat + gamma2``, same shape as ``w``, in ``[0, ceil(2 g) + b]``.
    """
    g = check_positive("g", g)
    b = check_int("b", b, 0)
    p = check_in_range("p", p, 0.0, 1.0)
    Delta = check_positive("Delta", Delta)
    w = check_finite_array("w", w)
    if w.size and (float(w.min()) < 0.0 or float(w.max()) > 2.0 * Delta * (1.0 + 1e-12)):
        raise ValidationError(
            f"w must lie in [0, 2 Delta] = [0, {2.0 * Delta:g}] (a coordinate plus the bias Delta), "
            f"got range [{float(w.min()):g}, {float(w.max()):g}]"
        )
    out = np.empty(w.size, dtype=np.int64)
    samplers.binomial_bits_rows(
        rng, np.ascontiguousarray(w, dtype=float).reshape(-1), g, b, p, Delta, out
    )
    return out.reshape(w.shape)


def bits_from_counts(counts: np.ndarray, n_bits: int) -> np.ndarray:
    """Materialize multisets of bits: ``counts[...]`` ones followed by zeros, ``n_bits`` in total.

    Parameters
    ----------
    counts : ndarray of int
        Number of ones of each multiset, in ``[0, n_bits]``.
    n_bits : int
        Size of every multiset.

    Returns
    -------
    ndarray of uint8 with shape ``counts.shape + (n_bits,)``.
    """
    n_bits = check_int("n_bits", n_bits, 0)
    counts = np.asarray(counts)
    if counts.size and (int(counts.min()) < 0 or int(counts.max()) > n_bits):
        raise ValidationError(
            f"counts must lie in [0, n_bits={n_bits}], got range "
            f"[{int(counts.min())}, {int(counts.max())}]"
        )
    return (np.arange(n_bits) < counts[..., None]).astype(np.uint8)


# --------------------------------------------------------------------------------------------
# binary randomized response
# --------------------------------------------------------------------------------------------
def randomized_response_keep_probability(epsilon: float) -> float:
    """Probability ``e^eps / (1 + e^eps)`` of reporting the true bit (Dwork & Roth 2014, section 3.2)."""
    eps = check_epsilon(epsilon)
    return 1.0 / (1.0 + math.exp(-eps))


def randomized_response_epsilon(keep_probability: float) -> float:
    """Pure LDP epsilon ``ln(k / (1 - k))`` of randomized response that keeps the bit w.p. ``k``."""
    k = check_in_range("keep_probability", keep_probability, 0.5, 1.0, high_inclusive=False)
    return math.log(k / (1.0 - k))


def randomized_response(bits: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Binary randomized response: keep each bit w.p. ``e^eps/(1+e^eps)``, else flip it.

    epsilon-LDP for one bit (Warner 1965); compiled sampler
    :func:`~privbandits.privacy.samplers.randomized_response`, one uniform per bit in C order.
    Returns uint8 bits of the same shape.
    """
    k = randomized_response_keep_probability(epsilon)
    x = np.asarray(bits)
    if x.size and not np.all((x == 0) | (x == 1)):
        raise ValidationError("bits must contain only 0 and 1")
    out = np.empty(x.size, dtype=np.int64)
    samplers.randomized_response_rows(
        rng, np.ascontiguousarray(x, dtype=np.int64).reshape(-1), k, out
    )
    return out.astype(np.uint8).reshape(x.shape)


def debias_randomized_response(reports: np.ndarray, epsilon: float, axis: int = -1) -> np.ndarray:
    """Unbiased estimate of the number of one-bits from randomized-response ``reports`` along ``axis``.

    With keep probability ``k``, ``E[report] = (1 - k) + (2k - 1) x``, so
    ``(sum(reports) - n (1 - k)) / (2k - 1)`` is unbiased for ``sum(x)`` over ``n`` reports.
    """
    k = randomized_response_keep_probability(epsilon)
    y = np.asarray(reports, dtype=float)
    n = y.shape[axis]
    return (y.sum(axis=axis) - n * (1.0 - k)) / (2.0 * k - 1.0)
