"""User-side local randomizers psi of Han et al. (2021): OLS (eq. 3.3) and SGD (eq. 3.5).

Each randomizer clips the user's own data to the declared bounds (deterministic preprocessing,
spec 1.5 and 8.3), computes the statistic the server's estimator consumes, and adds the privacy
noise.  Inputs carry arbitrary leading axes: ``(R,)`` for one message per user, ``(R, K)`` for the
K per-arm slots of Algorithm 2 (an unpulled slot holds ``(x, r) = (0, 0)``, the synthetic input).

Two sampling paths give the same output law:

* :meth:`privatize_reference` calls :mod:`privbandits.privacy.mechanisms` once per call (the
  message-level reference);
* :meth:`privatize` (the hot path) draws the same noise for many rounds at once from the given
  generator and consumes it round by round.  For the l2-ball mechanism it uses the equivalent
  single-Bernoulli form: the output lies on the side of ``g`` with probability
  ``1/2 + (||g||/(2R)) tanh(eps/2)`` (spec 2.5: ``p q + (1-p)(1-q)``), uniformly on that
  hemisphere.  Tests compare both paths with two-sample tests (DESIGN section 3).

References
----------
Han, Liang, Wang, Zhang (2021), section 3.1 (OLS mechanism, Prop. 3.1), section 3.2 and Lemma 2.2
(l2-ball mechanism of Duchi, Jordan & Wainwright 2018, Prop. 3.2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from privbandits.algorithms.ldp_glb.estimators import glm_gradient, ols_statistics, vecdot
from privbandits.algorithms.ldp_glb.presets import OLSCalibration
from privbandits.core.links import Link
from privbandits.core.validation import check_epsilon, check_positive
from privbandits.privacy.mechanisms import (
    l2_ball_mechanism,
    l2_ball_radius,
    sample_gaussian,
    sample_symmetric_gaussian,
)

__all__ = [
    "ChunkedDraws",
    "JointSGDRandomizer",
    "OLSRandomizer",
    "SGDRandomizer",
    "clip_norm",
    "l2_ball_from_draws",
    "unit_vectors",
]

#: Floats drawn per refill of a noise buffer, and the cap on rounds per refill.
_CHUNK_FLOATS = 1 << 20
_MAX_CHUNK_ROUNDS = 2048


class ChunkedDraws:
    """Pre-draws i.i.d. noise for many rounds from one generator and hands it out round by round.

    Exact in distribution: round ``i`` of a chunk receives independent draws of the same law as a
    per-round call.  Buffers are kept per leading shape; handing in a different generator
    discards them (the remaining draws of the old stream are never used for the new one).

    Parameters
    ----------
    draw : callable ``(rng, prefix) -> tuple of ndarray``
        Draws the noise for ``prefix = (B,) + lead`` (B rounds).
    floats_per_unit : int
        Floats drawn per element of ``lead`` (to size the chunks).
    """

    def __init__(
        self,
        draw: Callable[[np.random.Generator, tuple[int, ...]], tuple[np.ndarray, ...]],
        floats_per_unit: int,
    ) -> None:
        self._draw = draw
        self._fpu = max(1, int(floats_per_unit))
        self._rng: np.random.Generator | None = None
        self._buf: dict[tuple[int, ...], list[Any]] = {}

    def take(self, rng: np.random.Generator, lead: tuple[int, ...]) -> list[np.ndarray]:
        """The next round's draws, each of shape ``lead + (...)``."""
        if rng is not self._rng:
            self._rng, self._buf = rng, {}
        entry = self._buf.get(lead)
        if entry is None or entry[1] >= entry[2]:
            per_round = self._fpu * int(np.prod(lead, dtype=np.int64))
            B = int(max(1, min(_MAX_CHUNK_ROUNDS, _CHUNK_FLOATS // max(1, per_round))))
            entry = [self._draw(rng, (B,) + lead), 0, B]
            self._buf[lead] = entry
        i = entry[1]
        entry[1] = i + 1
        return [a[i] for a in entry[0]]


#: Relative slack of :func:`clip_norm`: float rounding puts unit vectors at ``1 + 2e-16``.
_CLIP_RTOL = 1e-12


def clip_norm(x: np.ndarray, bound: float) -> tuple[np.ndarray, int]:
    """Scale every vector (last axis) of norm above ``bound`` back to norm ``bound``.

    Returns the clipped array and the number of clipped vectors (spec 1.5 clipping rule).  Norms
    within a relative ``1e-12`` of the bound (floating-point rounding) count as within it.
    """
    sq = vecdot(x, x)
    lim = bound * bound * (1.0 + _CLIP_RTOL)
    if np.maximum.reduce(sq, axis=None) <= lim:
        return x, 0
    over = sq > lim
    scale = np.where(over, bound / np.sqrt(np.where(over, sq, 1.0)), 1.0)
    return x * scale[..., None], int(over.sum())


def unit_vectors(rng: np.random.Generator, shape: tuple[int, ...], d: int) -> np.ndarray:
    """Uniform draws on the unit sphere ``S^{d-1}`` of shape ``shape + (d,)``."""
    g = rng.standard_normal(shape + (d,))
    n = np.sqrt(vecdot(g, g))
    return g / np.where(n == 0.0, 1.0, n)[..., None]


def l2_ball_from_draws(
    g: np.ndarray, U: np.ndarray, v: np.ndarray, epsilon: float, bound: float, radius: float
) -> np.ndarray:
    """The l2-ball mechanism ``Psi_{eps,R}(g)`` from pre-drawn randomness (Lemma 2.2, spec 2.5).

    ``U`` is uniform on the unit sphere and ``v`` uniform on [0, 1).  The output is ``radius * U``
    reflected through the origin so that it lies on the side ``{z : z^T g > 0}`` with probability
    ``1/2 + (min(||g||, R) / (2R)) tanh(eps/2)`` and on the other side otherwise.  This is the law
    of the two-Bernoulli sampler of the spec (clip, flip to ``-g`` w.p. ``1/2 - ||g||/(2R)``, pick
    the hemisphere of the flipped vector w.p. ``e^eps/(1+e^eps)``), including ``g = 0`` (uniform:
    the side is then a fair coin).
    """
    Ur, nUr, w = _prepare_l2_draws(U, v, epsilon, bound, radius)
    return _l2_ball_prepared(g, Ur, nUr, w, bound)


def _prepare_l2_draws(
    U: np.ndarray, v: np.ndarray, epsilon: float, bound: float, radius: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(r U, -r U, w)`` with ``w = (v - 1/2) 2R / tanh(eps/2)``, so that ``v < p_toward`` iff
    ``w < min(||g||, R)`` (done once per chunk of rounds)."""
    Ur = radius * U
    return Ur, -Ur, (v - 0.5) * (2.0 * bound / math.tanh(epsilon / 2.0))


def _l2_ball_prepared(
    g: np.ndarray, Ur: np.ndarray, nUr: np.ndarray, w: np.ndarray, bound: float
) -> np.ndarray:
    toward = w < np.minimum(np.sqrt(vecdot(g, g)), bound)
    keep = toward == (vecdot(Ur, g) > 0.0)
    return np.where(keep[..., None], Ur, nUr)


class OLSRandomizer:
    """``psi^OLS(x, r) = (x x^T + W, r x + xi)`` (Han et al. 2021, eq. 3.3, Prop. 3.1).

    ``W`` is a symmetric Gaussian matrix (i.i.d. ``N(0, s_W^2)`` on and above the diagonal,
    mirrored) and ``xi ~ N(0, s_u^2 I)``, with the scales of the ``calibration`` preset.

    Parameters
    ----------
    calibration : OLSCalibration
        Noise scales (see :func:`~privbandits.algorithms.ldp_glb.presets.ols_calibration`).
    context_bound : float
        ``C_B``; contexts are clipped to it.
    reward_range : tuple of float
        Rewards are clipped into it (``[-c_r, c_r]`` by default).
    """

    mechanism = "han2021-ols-gaussian"
    keys: tuple[str, ...] = ("M", "u")

    def __init__(
        self, calibration: OLSCalibration, context_bound: float, reward_range: tuple[float, float]
    ) -> None:
        self.calibration = calibration
        self.s_W, self.s_u = calibration.s_W, calibration.s_u
        self.C_B = check_positive("context_bound", context_bound)
        self.r_lo, self.r_hi = float(reward_range[0]), float(reward_range[1])
        self.n_clipped = 0
        self._noise: ChunkedDraws | None = None
        self._d = 0

    def _draw(
        self, rng: np.random.Generator, prefix: tuple[int, ...]
    ) -> tuple[np.ndarray, np.ndarray]:
        d = self._d
        return sample_symmetric_gaussian(rng, prefix, d, self.s_W), sample_gaussian(
            rng, prefix + (d,), self.s_u
        )

    def statistics(self, x: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Clip ``(x, r)`` to the bounds and return ``(x x^T, r x)``."""
        x, k = clip_norm(x, self.C_B)
        self.n_clipped += k
        return ols_statistics(x, np.minimum(np.maximum(r, self.r_lo), self.r_hi))

    def privatize(
        self, x: np.ndarray, r: np.ndarray, theta: np.ndarray | None, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """Privatize ``x`` (lead + (d,)) and ``r`` (lead); ``theta`` is unused (hot path)."""
        xx, rx = self.statistics(x, r)
        d = x.shape[-1]
        if self._noise is None or self._d != d:
            self._d = d
            self._noise = ChunkedDraws(self._draw, d * d + 2 * d)
        W, xi = self._noise.take(rng, x.shape[:-1])
        return {"M": xx + W, "u": rx + xi}

    def privatize_reference(
        self, x: np.ndarray, r: np.ndarray, theta: np.ndarray | None, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """Message-level twin of :meth:`privatize` (one mechanism call per message)."""
        xx, rx = self.statistics(x, r)
        lead, d = x.shape[:-1], x.shape[-1]
        W = sample_symmetric_gaussian(rng, lead, d, self.s_W)
        return {"M": xx + W, "u": rx + sample_gaussian(rng, lead + (d,), self.s_u)}


class SGDRandomizer:
    """``psi^SGD(x, r; theta) = Psi_{eps,R}((mu(x^T theta) - r) x)`` (eq. 3.5, Prop. 3.2).

    The gradient is clipped to norm ``R`` (spec 3.3 line 3, required for privacy when
    ``|mu(x^T theta)| > c_r``) inside the l2-ball mechanism, whose output has norm
    ``r_{eps,d}`` and mean equal to the clipped gradient.

    Parameters
    ----------
    epsilon : float
        Level of this randomizer (``eps`` in Algorithm 1, ``eps/2`` per arm in Algorithm 2).
    grad_bound : float
        ``R`` (``2 c_r C_B`` by default).
    link : Link
        Reward link ``mu``.
    context_bound : float
        ``C_B``.
    reward_range : tuple of float
        Rewards are clipped into it.
    """

    mechanism = "han2021-l2-ball"
    keys: tuple[str, ...] = ("z",)

    def __init__(
        self,
        epsilon: float,
        grad_bound: float,
        link: Link,
        context_bound: float,
        reward_range: tuple[float, float],
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.bound = check_positive("grad_bound", grad_bound)
        self.link = link
        self.C_B = check_positive("context_bound", context_bound)
        self.r_lo, self.r_hi = float(reward_range[0]), float(reward_range[1])
        self.n_clipped = 0
        self._noise: ChunkedDraws | None = None
        self._d = 0

    def radius(self, d: int) -> float:
        """Output norm ``r_{eps,d}`` for inputs of dimension ``d`` (spec 2.5)."""
        return l2_ball_radius(self.epsilon, d, self.bound)

    def gradient(self, x: np.ndarray, r: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """Clip ``(x, r)`` and return ``(mu(x^T theta) - r) x`` (before the norm clip to R)."""
        x, k = clip_norm(x, self.C_B)
        self.n_clipped += k
        return glm_gradient(x, np.minimum(np.maximum(r, self.r_lo), self.r_hi), theta, self.link)

    def _draw(self, rng: np.random.Generator, prefix: tuple[int, ...]) -> tuple[np.ndarray, ...]:
        U, v = unit_vectors(rng, prefix, self._d), rng.random(prefix)
        return _prepare_l2_draws(U, v, self.epsilon, self.bound, self._radius)

    def _privatize_vector(self, g: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        d = g.shape[-1]
        if self._noise is None or self._d != d:
            self._d = d
            self._radius = self.radius(d)
            self._noise = ChunkedDraws(self._draw, 3 * d + 1)
        Ur, nUr, w = self._noise.take(rng, g.shape[:-1])
        return _l2_ball_prepared(g, Ur, nUr, w, self.bound)

    def privatize(
        self, x: np.ndarray, r: np.ndarray, theta: np.ndarray, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """Privatize ``x`` (lead + (d,)), ``r`` (lead) at the public ``theta`` (hot path)."""
        return {"z": self._privatize_vector(self.gradient(x, r, theta), rng)}

    def privatize_reference(
        self, x: np.ndarray, r: np.ndarray, theta: np.ndarray, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """Message-level twin of :meth:`privatize` via
        :func:`~privbandits.privacy.mechanisms.l2_ball_mechanism`.
        """
        z, _ = l2_ball_mechanism(self.gradient(x, r, theta), self.epsilon, self.bound, rng)
        return {"z": z}


class JointSGDRandomizer(SGDRandomizer):
    """Joint ``dK``-dimensional l2-ball update of the authors' multi-parameter code (spec 2.6).

    The K per-arm gradient slots (zero except the pulled arm's) are stacked into one
    ``dK``-vector and privatized by a single ``Psi_{eps,R}`` in dimension ``dK``; arm ``i`` gets
    block ``i`` of the output.  ``joint_radius="dK"`` uses the unbiased radius ``r_{eps,dK}``;
    ``"d"`` reproduces the code's ``r_{eps,d}`` by rescaling the output (post-processing: the
    privacy level is unchanged, the mean is shrunk by ``r_{eps,d} / r_{eps,dK}``).
    """

    mechanism = "han2021-l2-ball-joint"

    def __init__(
        self,
        epsilon: float,
        grad_bound: float,
        link: Link,
        context_bound: float,
        reward_range: tuple[float, float],
        joint_radius: str = "dK",
    ) -> None:
        super().__init__(epsilon, grad_bound, link, context_bound, reward_range)
        self.joint_radius = joint_radius

    def shrink(self, d: int, K: int) -> float:
        """Output scale relative to the unbiased radius (1 for ``"dK"``)."""
        if self.joint_radius == "dK":
            return 1.0
        return self.radius(d) / self.radius(d * K)

    def _joint(self, g: np.ndarray, rng: np.random.Generator, reference: bool) -> np.ndarray:
        lead, K, d = g.shape[:-2], g.shape[-2], g.shape[-1]
        G = g.reshape(lead + (K * d,))
        if reference:
            Z, _ = l2_ball_mechanism(G, self.epsilon, self.bound, rng)
        else:
            Z = self._privatize_vector(G, rng)
        return (self.shrink(d, K) * Z).reshape(g.shape)

    def privatize(
        self, x: np.ndarray, r: np.ndarray, theta: np.ndarray, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """``x`` (R, K, d) slots, ``r`` (R, K), ``theta`` (R, K, d) -> ``z`` (R, K, d)."""
        return {"z": self._joint(self.gradient(x, r, theta), rng, False)}

    def privatize_reference(
        self, x: np.ndarray, r: np.ndarray, theta: np.ndarray, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """Message-level twin of :meth:`privatize`."""
        return {"z": self._joint(self.gradient(x, r, theta), rng, True)}
