"""Environment interface: batched over R replications, drawn in chunks of rounds, with true means
for pseudo-regret."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from privbandits.core.links import Link, get_link
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_int, check_positive
from privbandits.envs.noise import RewardNoise

__all__ = ["CHUNK_FLOATS", "MAX_CHUNK_ROUNDS", "Chunk", "Environment"]

#: Target number of floats per chunk of contexts (bounds memory, amortizes RNG calls).
CHUNK_FLOATS = 1 << 21
#: Cap on the rounds of one chunk.
MAX_CHUNK_ROUNDS = 4096


@dataclass(frozen=True)
class Chunk:
    """Rounds ``t0 .. t0 + B - 1`` of an environment, for all R replications.

    Attributes
    ----------
    t0 : int
        0-based index of the first round.
    X : ndarray
        Contexts, ``(B, R, K, d)`` (single) or ``(B, R, d)`` (multi).
    means : ndarray of shape (B, R, K)
        Mean reward of every arm.
    rewards : ndarray of shape (B, R, K)
        Realized reward of every arm (one action-independent variate per round and replication,
        so the reward stream does not depend on the algorithm: common random numbers).
    best : ndarray of shape (B, R)
        Best mean of each round.
    """

    t0: int
    X: np.ndarray
    means: np.ndarray
    rewards: np.ndarray
    best: np.ndarray

    @property
    def B(self) -> int:
        """Number of rounds in the chunk."""
        return int(self.means.shape[0])


class Environment(ABC):
    """A batched stochastic bandit environment, drawn in chunks of rounds.

    Both drivers see the same chunks (the chunk length depends on the environment only), so the
    same seed gives the same contexts and rewards whatever the algorithm or driver::

        env.reset(R, streams, horizon)      # draws theta*, returns the public EnvSpec
        chunk = env.next_chunk()            # compiled driver: B rounds at once
        X = env.next_round()                # reference driver: one round of the current chunk
        r, regret = env.step(a)             # realized rewards and pseudo-regret of actions (R,)

    Subclasses implement :meth:`_reset`, :meth:`_draw_chunk` and :attr:`theta_star`; they may
    override :meth:`chunk_rounds`.
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
        return {
            "env": type(self).__name__,
            "d": self.d,
            "K": self.K,
            "link": self.link.name,
            "noise": self.noise.kind,
            "noise_scale": self.noise.scale,
            "context_bound": self.context_bound,
            "setting": self.setting,
        }

    # -- protocol ----------------------------------------------------------------------------
    def reset(self, replications: int, streams: Streams, horizon: int) -> EnvSpec:
        """Draw a fresh instance for ``replications`` copies; returns the public spec."""
        self.R = check_int("replications", replications, 1)
        self.horizon = check_int("horizon", horizon, 1)
        self.streams = streams
        self.t = 0
        self.n_clipped = 0
        self._ar = np.arange(self.R)
        self._drawn = 0
        self._chunk: Chunk | None = None
        self._pos = 0
        self._reset()
        return self.spec(horizon)

    def chunk_rounds(self) -> int:
        """Rounds per chunk (about :data:`CHUNK_FLOATS` context floats, at most
        :data:`MAX_CHUNK_ROUNDS`)."""
        per_round = self.R * (self.K if self.setting == "single" else 1) * max(self.d_features, 1)
        return int(max(1, min(MAX_CHUNK_ROUNDS, CHUNK_FLOATS // per_round)))

    def next_chunk(self) -> Chunk:
        """Draw the next chunk of rounds (at most up to the horizon, then chunk_rounds() more)."""
        left = self.horizon - self._drawn
        B = min(self.chunk_rounds(), left) if left > 0 else self.chunk_rounds()
        X, means, variates, best = self._draw_chunk(B)
        rewards = self.noise.realize(means, variates[..., None])
        chunk = Chunk(self._drawn, X, means, rewards, best)
        self._drawn += B
        self._chunk, self._pos = chunk, 0
        return chunk

    def next_round(self) -> np.ndarray:
        """Advance to the next round and return its contexts; sets :attr:`means`."""
        if self._chunk is None or self._pos >= self._chunk.B:
            self.next_chunk()
        ch, i = self._chunk, self._pos
        assert ch is not None
        self._pos += 1
        self.t += 1
        self.means = ch.means[i]
        self._rewards = ch.rewards[i]
        self._best = ch.best[i]
        return ch.X[i]

    def pull(self, actions: np.ndarray) -> np.ndarray:
        """Realized rewards (R,) of the chosen arms in the current round."""
        return self.step(actions)[0]

    def regret(self, actions: np.ndarray) -> np.ndarray:
        """Per-replication pseudo-regret of ``actions`` in the current round."""
        return self._best - self.means[self._ar, actions]

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Realized rewards and pseudo-regret (both (R,)) of ``actions`` in the current round."""
        return self._rewards[self._ar, actions], self._best - self.means[self._ar, actions]

    @property
    @abstractmethod
    def theta_star(self) -> np.ndarray:
        """True parameter: ``(R, d)`` (single) or ``(R, K, d)`` (multi)."""

    @abstractmethod
    def _reset(self) -> None: ...

    @abstractmethod
    def _draw_chunk(self, B: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Contexts, means ``(B, R, K)``, reward variates ``(B, R)`` and best means ``(B, R)`` of
        the next ``B`` rounds."""
