"""User-side randomizers of LDP-UCB and LDP-GLOC: clipping plus Gaussian or Laplace noise.

Each message part is a bounded statistic of the user's own data plus fresh noise:

* ``x x^T + B`` with ``B`` symmetric, i.i.d. entries on and above the diagonal (``sym_gauss`` of
  spec section 4.0, :func:`privbandits.privacy.mechanisms.sample_symmetric_gaussian`), or the
  Laplace analogue (spec section 3.3);
* ``v + xi`` for a vector statistic ``v`` (``y x``, ``z x`` or a gradient).

Clipping to the bounds the noise is calibrated for is part of the randomizer (spec section 4.0
[CHOICE]): it is a no-op under the paper's assumptions and makes the guarantee unconditional.

References
----------
Zheng et al. (2020), Algorithm 3 line 9 and Algorithm 5; Dwork & Roth (2014) Thm A.1 / Def. 3.3.
"""

from __future__ import annotations

import numpy as np

from privbandits.privacy.mechanisms import (
    sample_gaussian,
    sample_laplace,
    sample_symmetric_gaussian,
)

__all__ = [
    "SymmetricNoise",
    "VectorNoise",
    "clip_interval",
    "clip_norm",
    "vector_noise",
]


def clip_norm(v: np.ndarray, bound: float) -> np.ndarray:
    """Scale rows of ``v`` (..., D) whose l2 norm exceeds ``bound`` back onto the sphere of radius ``bound``.

    Returns ``v`` itself (no copy) when no row exceeds the bound.
    """
    n2 = np.einsum("...d,...d->...", v, v)
    if n2.size == 0 or n2.max() <= bound * bound:
        return v
    scale = np.minimum(1.0, bound / np.maximum(np.sqrt(n2), 1e-300))
    return v * scale[..., None]


def clip_interval(y: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Clip scalars to ``[lo, hi]``."""
    return np.minimum(np.maximum(y, lo), hi)


class SymmetricNoise:
    """Symmetric ``D x D`` noise matrices for ``R`` users at once (Gaussian or Laplace).

    The Gaussian draw is bit-identical to :func:`sample_symmetric_gaussian` for the same
    generator state (it makes the same single ``standard_normal`` call for the upper triangle);
    the mirroring is one gather with an index computed once instead of two scatters per round.

    Parameters
    ----------
    D : int
        Matrix dimension.
    scale : float
        Gaussian std or Laplace scale of every entry on and above the diagonal.
    mechanism : {"gaussian", "laplace"}
    """

    def __init__(self, D: int, scale: float, mechanism: str = "gaussian") -> None:
        self.D = D
        self.scale = float(scale)
        self.mechanism = mechanism
        self._iu = np.triu_indices(D)
        # position in the upper-triangle draw of every entry (i, j) of the full matrix
        pos = np.empty((D, D), dtype=np.intp)
        pos[self._iu] = np.arange(self._iu[0].size)
        pos[self._iu[1], self._iu[0]] = np.arange(self._iu[0].size)
        self._gather = pos.ravel()

    def sample(self, rng: np.random.Generator, R: int) -> np.ndarray:
        """Draw ``R`` independent symmetric noise matrices, shape ``(R, D, D)``."""
        n = self._iu[0].size
        if self.mechanism == "gaussian":
            z = rng.standard_normal((R, n)) * self.scale
        else:
            z = sample_laplace(rng, (R, n), self.scale)
        return z[:, self._gather].reshape(R, self.D, self.D)

    def sample_reference(self, rng: np.random.Generator, R: int) -> np.ndarray:
        """Message-level twin of :meth:`sample` built on the library mechanism (used by tests)."""
        if self.mechanism == "gaussian":
            return sample_symmetric_gaussian(rng, (R,), self.D, self.scale)
        iu0, iu1 = self._iu
        z = sample_laplace(rng, (R, iu0.size), self.scale)
        W = np.zeros((R, self.D, self.D))
        W[:, iu0, iu1] = z
        W[:, iu1, iu0] = z
        return W


class VectorNoise:
    """i.i.d. noise vectors with a fixed, pre-validated scale (Gaussian std or Laplace scale).

    The Gaussian draw is bit-identical to :func:`sample_gaussian` for the same generator state;
    the scale is validated once here instead of every round.
    """

    def __init__(self, scale: float, mechanism: str = "gaussian") -> None:
        self.scale = float(scale)
        self.mechanism = mechanism
        vector_noise(np.random.default_rng(0), (1,), self.scale, mechanism)  # validates the scale

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Draw noise of the given shape."""
        if self.mechanism == "gaussian":
            return self.scale * rng.standard_normal(shape)
        return rng.laplace(0.0, self.scale, size=shape)


def vector_noise(rng: np.random.Generator, shape: tuple[int, ...], scale: float, mechanism: str) -> np.ndarray:
    """i.i.d. Gaussian (std ``scale``) or Laplace (scale ``scale``) noise of the given shape."""
    if mechanism == "gaussian":
        return sample_gaussian(rng, shape, scale)
    return sample_laplace(rng, shape, scale)
