"""K-armed stochastic bandits (context-free), as a fixed action set of one-hot features.

Arm ``k`` is the feature vector ``e_k`` in ``R^K`` and ``theta*`` is the vector of arm means, so the
K-armed bandit is the fixed-action linear bandit ``mu_k = <e_k, theta*>`` with the identity link:
every algorithm of the library runs on it unchanged, and the multi-armed algorithms
(:mod:`privbandits.algorithms.mab`) use only the arm index.  This is the decision set ``X = [K]``
of the context-free setting of Zheng, Cai, Huang, Li & Wang (2020), section 3 (MAB and best-arm
identification as special cases of one-point bandit feedback).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_choice, check_finite_array, check_in_range, check_int
from privbandits.envs.finite import FiniteActionEnv

__all__ = ["ARM_MEANS", "MultiArmedEnv"]

#: How the arm means are drawn (per replication, from the instance stream).
ARM_MEANS: tuple[str, ...] = ("uniform", "gap")


class MultiArmedEnv(FiniteActionEnv):
    """A K-armed stochastic bandit with one-hot arm features (``d = K``).

    Parameters
    ----------
    K : int
        Number of arms (>= 2).
    means : {"uniform", "gap"} or array of shape (K,)
        ``uniform``: i.i.d. ``U[0, 1]`` means per replication; ``gap``: one best arm (uniformly
        placed) with mean ``(1 + gap) / 2`` and the others at ``(1 - gap) / 2``; an array: the
        same means in every replication.
    gap : float
        Gap of the ``gap`` instance, in (0, 1].
    noise : {"bernoulli", "gaussian", "bounded", "rademacher", "none"}
        Reward model (:class:`~privbandits.envs.noise.RewardNoise`): Bernoulli, Gaussian with std
        ``noise_scale``, or mean plus ``U(-noise_scale, noise_scale)``.
    noise_scale : float
        Scale of the Gaussian / bounded noise.
    reward_range : (lo, hi), optional
        The interval rewards (and therefore losses) are declared to lie in; local randomizers clip
        into it.  Default: ``[0, 1]`` (Bernoulli, none), ``[-1, 1]`` (Rademacher),
        ``[-noise_scale, 1 + noise_scale]`` (bounded) and ``[-4 noise_scale, 1 + 4 noise_scale]``
        (Gaussian: rewards are unbounded, the range is where the privatizer clips them).

    Notes
    -----
    ``theta_star`` is the ``(R, K)`` matrix of arm means.
    """

    def __init__(
        self,
        K: int,
        means: Any = "uniform",
        gap: float = 0.2,
        noise: str = "bernoulli",
        noise_scale: float = 0.1,
        reward_range: tuple[float, float] | None = None,
    ) -> None:
        K = check_int("K", K, 2)
        self.gap = check_in_range("gap", gap, 0.0, 1.0, low_inclusive=False)
        if isinstance(means, str):
            check_choice("means", means, ARM_MEANS)
            if noise == "rademacher":
                raise ValidationError(
                    "noise='rademacher' needs explicit means in [-1, 1]; "
                    f"means={means!r} draws means in [0, 1]"
                )
        else:
            arr = check_finite_array("means", means, ndim=1)
            if arr.shape != (K,):
                raise ValidationError(f"means must have shape ({K},), got {arr.shape}")
        if reward_range is None:
            s = float(noise_scale)
            reward_range = {
                "gaussian": (-4.0 * s, 1.0 + 4.0 * s),
                "bounded": (-s, 1.0 + s),
                "rademacher": (-1.0, 1.0),
            }.get(noise, (0.0, 1.0))
        super().__init__(
            d=K,
            K=K,
            actions=np.eye(K),
            theta="sphere",
            link="identity",
            noise=noise,
            noise_scale=noise_scale,
            context_bound=1.0,
            reward_range=reward_range,
        )
        self.means_spec = means
        lo, hi = self.reward_range()
        if not isinstance(means, str):
            arr = np.asarray(means, dtype=float)
            if arr.min() < lo or arr.max() > hi:
                raise ValidationError(
                    f"means must lie in the reward_range [{lo:g}, {hi:g}], got range "
                    f"[{arr.min():g}, {arr.max():g}]"
                )
            self.noise.check_means(arr)

    @property
    def theta_bound(self) -> float:  # type: ignore[override]
        """``||theta*||`` bound: ``sqrt(K)`` for means in [0, 1], the norm of explicit means."""
        if isinstance(self.means_spec, str):
            return float(np.sqrt(self.K))
        return max(float(np.linalg.norm(np.asarray(self.means_spec, float))), 1e-12)

    def describe(self) -> dict[str, Any]:
        means = (
            self.means_spec
            if isinstance(self.means_spec, str)
            else np.asarray(self.means_spec).tolist()
        )
        return {
            "env": type(self).__name__,
            "K": self.K,
            "means": means,
            "gap": self.gap,
            "noise": self.noise.kind,
            "noise_scale": self.noise.scale,
            "reward_range": list(self.reward_range()),
        }

    def _draw_means(self, rng: np.random.Generator) -> np.ndarray:
        R, K = self.R, self.K
        if not isinstance(self.means_spec, str):
            return np.broadcast_to(np.asarray(self.means_spec, float), (R, K)).copy()
        if self.means_spec == "uniform":
            return rng.random((R, K))
        means = np.full((R, K), 0.5 * (1.0 - self.gap))
        means[np.arange(R), rng.integers(0, K, R)] = 0.5 * (1.0 + self.gap)
        return means

    def _reset(self) -> None:
        R, K = self.R, self.K
        A = np.broadcast_to(np.eye(K), (R, K, K)).copy()
        A.setflags(write=False)
        self._A = A
        means = self._draw_means(self.streams.instance)
        self.noise.check_means(means)
        self._theta = means
        self._means = means.copy()
        self._means.setflags(write=False)
        self._best_fixed = self._means.max(axis=1)
