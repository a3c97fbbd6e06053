"""One compiled sampler per noise type: the code that runs is the code that is audited.

Every algorithm kernel, every mechanism object of :mod:`privbandits.privacy.mechanisms` and the
empirical audit draw their privacy noise through these functions (the documentation's Concepts: engines).  Each works
on one user's data, in place where it adds noise, and consumes its generator in a fixed order
(documented per function) so that the reference and compiled drivers give the same trajectory.

==========================  =====================================================================
function                    noise
==========================  =====================================================================
:func:`add_gaussian`        i.i.d. ``N(0, sigma^2)`` on every entry of a vector
:func:`add_symmetric_gaussian`  ``N(0, sigma^2)`` on and above the diagonal of a square matrix,
                            mirrored below (symmetric-matrix Gaussian mechanism)
:func:`add_symmetric_laplace`  the same with ``Lap(scale)`` entries (pure-DP variant)
:func:`add_laplace`         i.i.d. ``Lap(scale)`` on every entry
:func:`laplace_randomize`   the scalar Laplace randomizer ``clip(y, lo, hi) + Lap(scale)`` of
                            Hanna et al. (2022), Algorithms 2-3, on a vector of users
:func:`l2_ball`             the l2-ball mechanism ``Psi_{eps,R}`` of Duchi, Jordan & Wainwright
                            (2018), with input clipping to norm ``R``
:func:`randomized_response` keep a bit with probability ``p``, flip it otherwise
:func:`randomized_rounding` ``floor(u) + Bernoulli(frac(u))`` (unbiased rounding)
:func:`binomial_bits`       the bit randomizer ``R*`` of Cheu et al. (2022): randomized rounding
                            plus ``Binomial(b, p)`` noise bits
:func:`clip_l2`, :func:`clip_scalar`  the deterministic clipping every randomizer applies first
==========================  =====================================================================

Batched wrappers (``*_rows``) loop one of these over the leading axis of their arguments, row by
row, so a batch consumes the generator exactly as the same rows randomized one at a time; the
mechanism objects, the bit randomizers and the tree aggregation call them from numpy code.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from privbandits.privacy.ziggurat import laplace_ziggurat, use_ziggurat

__all__ = [
    "CLIP_RTOL",
    "add_gaussian",
    "add_laplace",
    "add_symmetric_gaussian",
    "add_symmetric_gaussian_rows",
    "add_symmetric_laplace",
    "add_symmetric_laplace_rows",
    "binomial_bits",
    "binomial_bits_rows",
    "clip_l2",
    "clip_scalar",
    "l2_ball",
    "l2_ball_rows",
    "laplace_draw",
    "laplace_randomize",
    "randomized_response",
    "randomized_response_rows",
    "randomized_rounding",
    "randomized_rounding_rows",
]

#: Relative slack of :func:`clip_l2`: float rounding puts unit vectors at ``1 + 2e-16``.
CLIP_RTOL = 1e-12


@nb.njit(cache=True)
def clip_l2(v: np.ndarray, bound: float) -> bool:  # pragma: no cover - compiled
    """Scale ``v`` in place to l2 norm ``bound`` if it is longer; returns whether it was clipped.

    Norms within a relative ``1e-12`` of the bound (floating-point rounding) count as within it.
    """
    s = 0.0
    for i in range(v.shape[0]):
        s += v[i] * v[i]
    if s <= bound * bound * (1.0 + CLIP_RTOL):
        return False
    c = bound / math.sqrt(s)
    for i in range(v.shape[0]):
        v[i] *= c
    return True


@nb.njit(cache=True)
def clip_scalar(y: float, lo: float, hi: float) -> float:  # pragma: no cover - compiled
    """``y`` clipped into ``[lo, hi]``."""
    return min(max(y, lo), hi)


@nb.njit(cache=True)
def add_gaussian(rng: np.random.Generator, sigma: float, v: np.ndarray) -> None:  # pragma: no cover
    """``v += sigma * N(0, I)`` in place (flat order; one standard normal per entry)."""
    flat = v.reshape(-1)
    for i in range(flat.shape[0]):
        flat[i] += sigma * rng.standard_normal()


@nb.njit(cache=True)
def add_symmetric_gaussian(
    rng: np.random.Generator, sigma: float, M: np.ndarray
) -> None:  # pragma: no cover
    """``M += W`` in place, ``W`` symmetric with i.i.d. ``N(0, sigma^2)`` on and above the diagonal.

    Draw order: row by row, the entries ``(i, j)`` with ``j >= i``.
    """
    d = M.shape[0]
    for i in range(d):
        for j in range(i, d):
            w = sigma * rng.standard_normal()
            M[i, j] += w
            if j != i:
                M[j, i] += w


#: Whether Laplace draws use the exponential ziggurat (the sampler switch
#: ``PRIVBANDITS_SAMPLER=ziggurat``, :mod:`privbandits.privacy.ziggurat`); frozen into compiled code.
_LAPLACE_ZIGGURAT = use_ziggurat()


@nb.njit(cache=True)
def laplace_draw(rng: np.random.Generator, scale: float) -> float:  # pragma: no cover - compiled
    """One ``Lap(scale)`` draw: by inversion of one uniform, ``-scale sign(u) log(1 - 2|u|)``,
    ``u = U - 1/2`` (default), or, under ``PRIVBANDITS_SAMPLER=ziggurat``, ``scale`` times
    :func:`~privbandits.privacy.ziggurat.laplace_ziggurat` (exact; one 64-bit word per attempt)."""
    if _LAPLACE_ZIGGURAT:
        return scale * laplace_ziggurat(rng)
    u = rng.random() - 0.5
    if u >= 0.0:
        return -scale * math.log1p(-2.0 * u)
    return scale * math.log1p(2.0 * u)


@nb.njit(cache=True)
def add_laplace(rng: np.random.Generator, scale: float, v: np.ndarray) -> None:  # pragma: no cover
    """``v += Lap(scale)`` on every entry, in place (flat order; one uniform per entry)."""
    flat = v.reshape(-1)
    for i in range(flat.shape[0]):
        flat[i] += laplace_draw(rng, scale)


@nb.njit(cache=True)
def laplace_randomize(
    rng: np.random.Generator,
    y: np.ndarray,
    lo: float,
    hi: float,
    scale: np.ndarray,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """``out[i] = clip_scalar(y[i], lo, hi) + laplace_draw(rng, scale[i])`` for each user ``i``.

    The local randomizer of Hanna et al. (2022), Algorithms 2-3: every user clips its own reward
    into ``[lo, hi]`` *before* adding ``Lap(scale[i])``, so one report is
    ``(hi - lo) / scale[i]``-LDP.  ``y``, ``scale`` and ``out`` are 1-D of equal length; draw order:
    one uniform per entry, in index order.
    """
    for i in range(y.shape[0]):
        out[i] = clip_scalar(y[i], lo, hi) + laplace_draw(rng, scale[i])


@nb.njit(cache=True)
def l2_ball(
    rng: np.random.Generator,
    g: np.ndarray,
    epsilon: float,
    bound: float,
    radius: float,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """The l2-ball mechanism ``Psi_{eps,R}(g)`` (Duchi, Jordan & Wainwright 2018; Han et al. 2021,
    Lemma 2.2), written into ``out``.

    The input is clipped to norm ``R = bound``.  The output is ``radius * U`` with ``U`` uniform
    on the unit sphere, reflected through the origin so that it lies on the side
    ``{z : z^T g > 0}`` with probability ``1/2 + (min(||g||, R) / (2R)) tanh(eps/2)``: the law of
    the two-Bernoulli sampler (flip ``g`` to ``-g`` w.p. ``1/2 - ||g||/(2R)``, pick the hemisphere
    of the flipped vector w.p. ``e^eps / (1 + e^eps)``), including ``g = 0`` (a fair coin).
    ``radius`` must be :func:`~privbandits.privacy.calibration.l2_ball_radius` for the output to be
    unbiased.  Draw order: ``d`` standard normals, then one uniform.
    """
    d = g.shape[0]
    s = 0.0
    for i in range(d):
        u = rng.standard_normal()
        out[i] = u
        s += u * u
    c = radius / math.sqrt(s) if s > 0.0 else 0.0
    gn = 0.0
    dot = 0.0
    for i in range(d):
        out[i] *= c
        gn += g[i] * g[i]
        dot += out[i] * g[i]
    p_toward = 0.5 + min(math.sqrt(gn), bound) / (2.0 * bound) * math.tanh(epsilon / 2.0)
    toward = rng.random() < p_toward
    if toward != (dot > 0.0):
        for i in range(d):
            out[i] = -out[i]


@nb.njit(cache=True)
def randomized_response(rng: np.random.Generator, bit: int, keep: float) -> int:  # pragma: no cover
    """Report ``bit`` with probability ``keep``, ``1 - bit`` otherwise (one uniform)."""
    if rng.random() < keep:
        return bit
    return 1 - bit


@nb.njit(cache=True)
def randomized_rounding(rng: np.random.Generator, u: float) -> int:  # pragma: no cover - compiled
    """``floor(u) + Bernoulli(u - floor(u))`` for ``u >= 0`` (one uniform): unbiased, variance
    ``q (1 - q)`` with ``q = frac(u)`` (Sarmasarkar 2026, Algorithm 4, lines 2-4)."""
    f = math.floor(u)
    up = 1 if rng.random() < u - f else 0
    return int(f) + up


@nb.njit(cache=True)
def binomial_bits(
    rng: np.random.Generator, w: float, g: float, b: int, p: float, Delta: float
) -> int:  # pragma: no cover - compiled
    """Number of one-bits of the randomizer ``R*(w, g, b, p, Delta)`` of Cheu et al. (2022).

    Sarmasarkar (2026), Appendix T, Algorithm 4: ``x_hat = randomized_rounding(w g / Delta)`` (the
    argument clipped into ``[0, 2 g]``, guarding rounding overshoot of ``w`` in ``[0, 2 Delta]``)
    plus ``gamma2 ~ Binomial(b, p)``.  The user's message for this label is a multiset of
    ``ceil(2 g) + b`` bits with that many ones.  Draw order: one uniform (rounding), then the
    binomial.
    """
    u = min(max(w * (g / Delta), 0.0), 2.0 * g)
    x_hat = randomized_rounding(rng, u)
    return x_hat + rng.binomial(b, p)


# -- batched wrappers: one row after the other ---------------------------------------------------
@nb.njit(cache=True)
def add_symmetric_gaussian_rows(
    rng: np.random.Generator, sigma: float, M: np.ndarray
) -> None:  # pragma: no cover - compiled
    """:func:`add_symmetric_gaussian` on each matrix ``M[k]`` of ``M`` (shape ``(n, d, d)``)."""
    for k in range(M.shape[0]):
        add_symmetric_gaussian(rng, sigma, M[k])


@nb.njit(cache=True)
def add_symmetric_laplace_rows(
    rng: np.random.Generator, scale: float, M: np.ndarray
) -> None:  # pragma: no cover - compiled
    """:func:`add_symmetric_laplace` on each matrix ``M[k]`` of ``M`` (shape ``(n, d, d)``)."""
    for k in range(M.shape[0]):
        add_symmetric_laplace(rng, scale, M[k])


@nb.njit(cache=True)
def l2_ball_rows(
    rng: np.random.Generator,
    G: np.ndarray,
    epsilon: float,
    bound: float,
    radius: float,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """:func:`l2_ball` on each row of ``G`` (shape ``(n, d)``), written into ``out[k]``."""
    for k in range(G.shape[0]):
        l2_ball(rng, G[k], epsilon, bound, radius, out[k])


@nb.njit(cache=True)
def randomized_response_rows(
    rng: np.random.Generator, bits: np.ndarray, keep: float, out: np.ndarray
) -> None:  # pragma: no cover - compiled
    """:func:`randomized_response` on each entry of the 1-D int array ``bits``, into ``out``."""
    for k in range(bits.shape[0]):
        out[k] = randomized_response(rng, bits[k], keep)


@nb.njit(cache=True)
def randomized_rounding_rows(
    rng: np.random.Generator, u: np.ndarray, out: np.ndarray
) -> None:  # pragma: no cover - compiled
    """:func:`randomized_rounding` on each entry of the 1-D array ``u``, into ``out`` (int64)."""
    for k in range(u.shape[0]):
        out[k] = randomized_rounding(rng, u[k])


@nb.njit(cache=True)
def binomial_bits_rows(
    rng: np.random.Generator,
    w: np.ndarray,
    g: float,
    b: int,
    p: float,
    Delta: float,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """:func:`binomial_bits` on each entry of the 1-D array ``w``, into ``out`` (int64)."""
    for k in range(w.shape[0]):
        out[k] = binomial_bits(rng, w[k], g, b, p, Delta)


@nb.njit(cache=True)
def add_symmetric_laplace(
    rng: np.random.Generator, scale: float, M: np.ndarray
) -> None:  # pragma: no cover
    """``M += W`` in place, ``W`` symmetric with i.i.d. ``Lap(scale)`` on and above the diagonal
    (the epsilon-LDP variant of the symmetric-matrix mechanism, Zheng et al. 2020, correction Zheng20-17).

    Draw order: row by row, the entries ``(i, j)`` with ``j >= i`` (one uniform each, as
    :func:`laplace_draw`).
    """
    d = M.shape[0]
    for i in range(d):
        for j in range(i, d):
            w = laplace_draw(rng, scale)
            M[i, j] += w
            if j != i:
                M[j, i] += w
