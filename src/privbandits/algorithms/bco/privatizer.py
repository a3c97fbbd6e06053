"""The user-side randomizer of LDP-TwoPoint (Zheng et al. 2020, Algorithm 2, line 6), relative to the
query gap.

User ``i`` holds its losses at the two public query points and sends::

    g = ||x_1 - x_2||,   a = clip(f(x_1) - f(x_2), -c g, c g),   m = a + n^T (x_1 - x_2),   n ~ N(0, s^2 I_d)

with ``c = G`` the Lipschitz constant (a ``G``-Lipschitz loss has ``|a| <= G g``) and ``s = sigma``
the per-coordinate std of the paper's noise vector.  At the honest gap ``g = 2 rho`` this is the
paper's clip to ``+-2 rho G`` and noise ``N(0, 4 rho^2 sigma^2)``.  The query points come from an
untrusted server, and the noise ``n^T (x_1 - x_2)`` has std ``s g``: a clip that does not follow
the gap lets a server that sends close points (``g`` small) read the difference through little
noise.  Clipped relative to the gap, two users' encoded differences are at most ``2 c g`` apart
against a noise std of ``s g``: the whitened distance ``2 c / s`` is the accounted one whatever the
server sends.  The Laplace variant adds ``Lap(s g)`` (``s`` the scale per unit of gap) instead of the
projected vector: l1 distance ``2 c / s`` in units of the scale.

A gap below :data:`MIN_GAP` (zero included) is read as zero: the message is exactly 0, no data and
no noise (sub-normal floating-point arithmetic would make neither the clip nor the noise exact).

The three steps of one user -- :func:`query_gap`, :func:`encode_difference` and
:func:`difference_noise` -- are the only implementation of the math: their batched forms
(:func:`query_gaps`, :func:`encode_differences`, :func:`add_difference_noise`), the client's
``encode``, ``noise`` and ``randomize``, the composite :func:`privatize_difference` and the compiled
round (:mod:`privbandits.algorithms.bco.steps`) all call them.  The
client hands them validated arrays; each step also refuses mismatched shapes itself (``ValueError``),
so no call reads or writes past an array.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from privbandits.privacy.samplers import add_gaussian, clip_scalar, laplace_draw

__all__ = [
    "MIN_GAP",
    "add_difference_noise",
    "difference_noise",
    "encode_difference",
    "encode_differences",
    "privatize_difference",
    "query_gap",
    "query_gaps",
]

#: Smallest query gap ``||x_1 - x_2||`` the device randomizes at; below it the message is 0.
MIN_GAP = 1e-150


@nb.njit(cache=True)
def query_gap(points: np.ndarray) -> float:  # pragma: no cover - compiled
    """``||points[0] - points[1]||`` of one user's two query points ``(2, d)`` (scaled by the
    largest entry, so neither overflow nor underflow), 0 below :data:`MIN_GAP`."""
    d = points.shape[1]
    m = 0.0
    for j in range(d):
        m = max(m, abs(points[0, j] - points[1, j]))
    g = 0.0
    if m > 0.0:
        s = 0.0
        for j in range(d):
            z = (points[0, j] - points[1, j]) / m
            s += z * z
        g = m * math.sqrt(s)
    return g if g >= MIN_GAP else 0.0


@nb.njit(cache=True)
def encode_difference(
    v1: float, v2: float, gap: float, clip_per_gap: float, clip: bool
) -> float:  # pragma: no cover - compiled
    """One user's encoded difference: ``clip(v1 - v2, -c g, c g)`` with ``c = clip_per_gap`` and
    ``g = gap`` (unclipped without ``clip``); 0 where the gap is 0."""
    if gap == 0.0:
        return 0.0
    a = v1 - v2
    if clip:
        c = clip_per_gap * gap
        a = clip_scalar(a, -c, c)
    return a


@nb.njit(cache=True)
def difference_noise(
    rng: np.random.Generator,
    points: np.ndarray,
    gap: float,
    scale_per_gap: float,
    laplace: bool,
    noise: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """One user's noise: ``n^T (x_1 - x_2)``, ``n ~ N(0, s^2 I_d)`` (one normal per coordinate,
    into the ``(d,)`` work array ``noise``), or ``Lap(s g)`` with ``laplace``; ``s =
    scale_per_gap``, ``points`` ``(2, d)``.  A zero gap gets nothing and draws nothing."""
    if gap == 0.0:
        return 0.0
    if laplace:
        return laplace_draw(rng, scale_per_gap * gap)
    d = points.shape[1]
    for j in range(d):
        noise[j] = 0.0
    add_gaussian(rng, scale_per_gap, noise)
    s = 0.0
    for j in range(d):
        s += noise[j] * (points[0, j] - points[1, j])
    return s


@nb.njit(cache=True)
def query_gaps(points: np.ndarray, gaps: np.ndarray) -> None:  # pragma: no cover - compiled
    """``gaps[i] = ||points[i, 0] - points[i, 1]||`` (:func:`query_gap`, user by user)."""
    if points.shape[1] != 2 or gaps.shape[0] != points.shape[0]:
        raise ValueError("query_gaps: points must be (R, 2, d) and gaps (R,)")
    for i in range(points.shape[0]):
        gaps[i] = query_gap(points[i])


@nb.njit(cache=True)
def encode_differences(
    values: np.ndarray, gaps: np.ndarray, clip_per_gap: float, clip: bool, out: np.ndarray
) -> None:  # pragma: no cover - compiled
    """``out[i] = clip(values[i, 0] - values[i, 1], -c g_i, c g_i)`` with ``c = clip_per_gap``
    (unclipped without ``clip``); 0 where the gap is 0 (:func:`encode_difference`, user by user)."""
    if values.shape[1] != 2 or gaps.shape[0] != values.shape[0] or out.shape[0] != values.shape[0]:
        raise ValueError("encode_differences: values must be (R, 2), gaps and out (R,)")
    for i in range(values.shape[0]):
        out[i] = encode_difference(values[i, 0], values[i, 1], gaps[i], clip_per_gap, clip)


@nb.njit(cache=True)
def add_difference_noise(
    rng: np.random.Generator,
    points: np.ndarray,
    gaps: np.ndarray,
    scale_per_gap: float,
    laplace: bool,
    noise: np.ndarray,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """``out[i] += n_i^T (x_{i,1} - x_{i,2})``, ``n_i ~ N(0, s^2 I_d)``, or ``out[i] += Lap(s g_i)``
    with ``laplace`` (:func:`difference_noise`, user by user); ``s = scale_per_gap``.  ``noise``
    is a ``(d,)`` work array."""
    if (
        points.shape[1] != 2
        or points.shape[0] != out.shape[0]
        or gaps.shape[0] != out.shape[0]
        or noise.shape[0] != points.shape[2]
    ):
        raise ValueError(
            "add_difference_noise: points must be (R, 2, d), gaps and out (R,), noise (d,)"
        )
    for i in range(out.shape[0]):
        out[i] += difference_noise(rng, points[i], gaps[i], scale_per_gap, laplace, noise)


@nb.njit(cache=True)
def privatize_difference(
    rng: np.random.Generator,
    values: np.ndarray,
    points: np.ndarray,
    clip_per_gap: float,
    clip: bool,
    scale_per_gap: float,
    laplace: bool,
    noise: np.ndarray,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """The whole randomizer on already validated arrays: values ``(R, 2)``, points ``(R, 2, d)``,
    ``noise`` ``(d,)``, ``out`` ``(R,)`` (:func:`query_gaps`, :func:`encode_differences`, then
    :func:`add_difference_noise`)."""
    gaps = np.empty(values.shape[0])
    query_gaps(points, gaps)
    encode_differences(values, gaps, clip_per_gap, clip, out)
    add_difference_noise(rng, points, gaps, scale_per_gap, laplace, noise, out)
