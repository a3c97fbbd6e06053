"""Reward models: turn mean rewards into realized rewards with action-independent randomness.

For common random numbers (the documentation's Concepts: randomness and reproducibility) the reward stream is consumed the same way whatever
arm is pulled: each round draws one standard variate per replication (a standard normal for
Gaussian noise, a uniform otherwise) and the realized reward is a deterministic function of that
variate and the pulled arm's mean (inverse-CDF sampling).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_choice, check_nonnegative
from privbandits.privacy.ziggurat import pcg64_standard_normal, use_ziggurat

__all__ = ["REWARD_NOISES", "RewardNoise"]

REWARD_NOISES: tuple[str, ...] = (
    "gaussian",
    "bounded",
    "bernoulli",
    "rademacher",
    "poisson",
    "none",
)


class RewardNoise:
    """A reward model.

    Parameters
    ----------
    kind : {"gaussian", "bounded", "bernoulli", "poisson", "none"}
        ``gaussian``: ``r = mean + scale * N(0, 1)``.  ``bounded``: ``r = mean + U(-scale, scale)``.
        ``bernoulli``: ``r ~ Bernoulli(mean)`` (means must lie in [0, 1]).  ``rademacher``:
        ``r in {-1, +1}`` with ``P(r = +1) = (1 + mean) / 2`` (means in [-1, 1]; Hanna et al.
        2022, section 6: bounded, 1-sub-Gaussian, mean exactly ``mean``).  ``poisson``:
        ``r ~ Poisson(mean)`` (means must be non-negative).  ``none``: ``r = mean``.
    scale : float
        Noise scale for the additive kinds (sub-Gaussian parameter: ``scale`` for Gaussian,
        ``scale`` also bounds the uniform noise's sub-Gaussian parameter).
    """

    def __init__(self, kind: str = "gaussian", scale: float = 0.1) -> None:
        self.kind = check_choice("noise", kind, REWARD_NOISES)
        self.scale = check_nonnegative("noise_scale", scale)

    @property
    def sub_gaussian(self) -> float:
        """Sub-Gaussian parameter of ``r - mean`` (1/2 for Bernoulli; Poisson is not sub-Gaussian)."""
        if self.kind == "bernoulli":
            return 0.5
        if self.kind == "rademacher":
            return 1.0
        if self.kind == "none":
            return 0.0
        return self.scale

    def draw_variates(self, rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
        """Action-independent variates for ``size`` (rounds, replications)."""
        if self.kind == "gaussian":
            if use_ziggurat():  # the same values, drawn by the inline-PCG64 ziggurat
                return pcg64_standard_normal(rng, size)
            return rng.standard_normal(size)
        return rng.random(size)

    def check_means(self, means: np.ndarray) -> None:
        """Reject mean rewards the reward model cannot produce."""
        if self.kind == "bernoulli" and (means.min() < 0.0 or means.max() > 1.0):
            raise ValidationError(
                "noise='bernoulli' needs mean rewards in [0, 1], got range "
                f"[{means.min():.3g}, {means.max():.3g}]; use the logistic or probit link"
            )
        if self.kind == "rademacher" and (means.min() < -1.0 or means.max() > 1.0):
            raise ValidationError(
                "noise='rademacher' needs mean rewards in [-1, 1], got range "
                f"[{means.min():.3g}, {means.max():.3g}]"
            )
        if self.kind == "poisson" and means.min() < 0.0:
            raise ValidationError(
                "noise='poisson' needs non-negative mean rewards; use the poisson link"
            )

    def realize(self, means: np.ndarray, variates: np.ndarray) -> np.ndarray:
        """Realized rewards from the pulled arms' means and the round's variates."""
        if self.kind == "gaussian":
            return means + self.scale * variates
        if self.kind == "bounded":
            return means + self.scale * (2.0 * variates - 1.0)
        if self.kind == "bernoulli":
            return (variates < means).astype(float)
        if self.kind == "rademacher":
            return np.where(variates < 0.5 * (1.0 + means), 1.0, -1.0)
        if self.kind == "poisson":
            return _poisson_ppf(variates, means)
        return np.array(means, dtype=float, copy=True)


def _poisson_ppf(u: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Inverse CDF of Poisson(lam) at u, vectorized (smallest k with CDF(k) >= u)."""
    lam = np.asarray(lam, dtype=float)
    u = np.asarray(u, dtype=float)
    # start near the mean and walk; pdtr(k, lam) = P(X <= k)
    k = np.maximum(np.floor(lam + special.ndtri(np.clip(u, 1e-12, 1 - 1e-12)) * np.sqrt(lam)), 0.0)
    cdf = special.pdtr(k, lam)
    for _ in range(10_000):  # bounded walk, a few steps in practice
        down = (k > 0) & (special.pdtr(k - 1, lam) >= u)
        up = cdf < u
        if not (down.any() or up.any()):
            break
        k = np.where(down, k - 1, np.where(up, k + 1, k))
        cdf = special.pdtr(k, lam)
    return k
