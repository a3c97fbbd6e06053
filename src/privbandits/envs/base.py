"""Environment interface: batched over R replications, with true means for pseudo-regret."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from privbandits.core.spec import EnvSpec
from privbandits.core.links import Link, get_link
from privbandits.core.rng import Streams
from privbandits.core.validation import check_int, check_positive
from privbandits.envs.noise import RewardNoise

__all__ = ["Environment"]


class Environment(ABC):
    """A batched stochastic bandit environment.

    Round protocol (driven by :func:`privbandits.simulate.simulate`)::

        env.reset(R, streams, horizon)      # draws theta*, returns the public EnvSpec
        for t in range(T):
            X = env.next_round()            # contexts of round t: (R, K, d) or (R, d)
            a = ...                         # algorithm's choice, (R,)
            r = env.pull(a)                 # realized rewards, (R,)
            env.means                       # (R, K) expected rewards of round t (for regret)

    Subclasses implement :meth:`_reset` and :meth:`_next_round`.
    """

    setting: str = "single"

    def __init__(
        self,
        d: int,
        K: int,
        link: str | Link = "identity",
        noise: str = "gaussian",
        noise_scale: float = 0.1,
        context_bound: float = 1.0,
        reward_range: tuple[float, float] | None = None,
    ) -> None:
        self.d = check_int("d", d, 1)
        self.K = check_int("K", K, 1)
        self.link = get_link(link)
        self.noise = RewardNoise(noise, noise_scale)
        self.context_bound = check_positive("context_bound", context_bound)
        self._reward_range = reward_range
        self.means: np.ndarray = np.empty((0, K))
        self.n_clipped = 0

    # -- public description ------------------------------------------------------------------
    def reward_range(self) -> tuple[float, float]:
        """Interval rewards are clipped into before privatization (``[-c_r, c_r]`` by default)."""
        if self._reward_range is not None:
            return tuple(map(float, self._reward_range))  # type: ignore[return-value]
        if self.noise.kind == "bernoulli":
            return (0.0, 1.0)
        if self.noise.kind == "rademacher":
            return (-1.0, 1.0)
        if self.noise.kind == "poisson":
            return (0.0, float(np.ceil(np.exp(self.context_bound) * 3)))
        return (-1.0, 1.0)

    def spec(self, horizon: int) -> EnvSpec:
        """The public :class:`EnvSpec` an algorithm is reset with."""
        lo, hi = self.reward_range()
        return EnvSpec(
            d=self.d_features,
            K=self.K,
            setting=self.setting,
            horizon=horizon,
            link=self.link,
            context_bound=self.context_bound * self.feature_norm_factor,
            reward_bound=max(abs(lo), abs(hi)),
            reward_range=(lo, hi),
            theta_bound=self.theta_bound,
            noise_scale=self.noise.sub_gaussian,
            fixed_actions=self.fixed_actions,
        )

    d_features = property(lambda self: self.d)
    feature_norm_factor = 1.0
    theta_bound = 1.0
    fixed_actions = False

    def describe(self) -> dict[str, Any]:
        """JSON-serializable description (stored with every result)."""
        return {"env": type(self).__name__, "d": self.d, "K": self.K, "link": self.link.name,
                "noise": self.noise.kind, "noise_scale": self.noise.scale,
                "context_bound": self.context_bound, "setting": self.setting}

    # -- protocol ----------------------------------------------------------------------------
    def reset(self, replications: int, streams: Streams, horizon: int) -> EnvSpec:
        """Draw a fresh instance for ``replications`` copies; returns the public spec."""
        self.R = check_int("replications", replications, 1)
        self.horizon = check_int("horizon", horizon, 1)
        self.streams = streams
        self.t = 0
        self.n_clipped = 0
        self._ar = np.arange(self.R)
        self._reset()
        return self.spec(horizon)

    def next_round(self) -> np.ndarray:
        """Advance to the next round and return its contexts; sets :attr:`means`."""
        X, means, variates, best = self._next_round()
        self.means = means
        self._variates = variates
        self._best = best
        self.t += 1
        return X

    def pull(self, actions: np.ndarray) -> np.ndarray:
        """Realized rewards (R,) of the chosen arms in the current round."""
        return self.step(actions)[0]

    def regret(self, actions: np.ndarray) -> np.ndarray:
        """Per-replication pseudo-regret of ``actions`` in the current round."""
        return self._best - self.means[self._ar, actions]

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Realized rewards and pseudo-regret (both (R,)) of ``actions`` in the current round."""
        chosen = self.means[self._ar, actions]
        return self.noise.realize(chosen, self._variates), self._best - chosen

    @property
    @abstractmethod
    def theta_star(self) -> np.ndarray:
        """True parameter: ``(R, d)`` (single) or ``(R, K, d)`` (multi)."""

    @abstractmethod
    def _reset(self) -> None: ...

    @abstractmethod
    def _next_round(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Return (contexts, means (R, K), reward variates (R,), best mean (R,)) of the next round."""
