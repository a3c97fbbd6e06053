"""Algorithm 1 of Han et al. (2021): LDP single-parameter contextual bandit (greedy + private
updates).

Round t (spec 3.4), user side (:class:`Alg1Client`): read the public ``theta_{t-1}``, choose
``a_t = argmax_a x_{t,a}^T theta_{t-1}`` (ties uniformly at random), pull, and send only
``Z_t = psi(x_{t,a_t}, r_t; theta_{t-1})``.  Server side (:class:`OLSServer` or
:class:`SGDServer`): ``theta_t = phi(Z_1..Z_t; theta_{t-1})``.  The arm index is never sent.

References
----------
Han, Liang, Wang, Zhang (2021), "Generalized Linear Bandits with Local Differential Privacy",
NeurIPS, Algorithm 1, eq. (3.3)-(3.6).
"""

from __future__ import annotations

import math

import numpy as np

from privbandits.algorithms.base import Client, Server
from privbandits.algorithms.ldp_glb.estimators import OLSEstimator, SGDEstimator, step_size
from privbandits.algorithms.ldp_glb.protocol import TieBreaker, check_message
from privbandits.algorithms.ldp_glb.randomizers import OLSRandomizer, SGDRandomizer
from privbandits.core.messages import PrivatizedMessage, PublicState

__all__ = ["Alg1Client", "OLSServer", "SGDServer"]


class Alg1Client(Client):
    """User side of Algorithm 1 (lines 3-6): greedy choice and local randomization.

    Parameters
    ----------
    randomizer : OLSRandomizer or SGDRandomizer
        The local randomizer ``psi``.
    """

    def __init__(self, randomizer: OLSRandomizer | SGDRandomizer) -> None:
        self.randomizer = randomizer
        self._ties = TieBreaker()
        self._rows = np.arange(0)

    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Line 4: ``a_t = argmax_a x_{t,a}^T theta_{t-1}`` for contexts ``(R, K, d)``."""
        scores = np.matmul(contexts, public["theta"][:, :, None])[:, :, 0]
        return self._ties.argmax(scores, rng)

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        """Line 6: ``Z_t = psi(x_{t,a_t}, r_t; theta_{t-1})``."""
        R = contexts.shape[0]
        if self._rows.shape[0] != R:
            self._rows = np.arange(R)
        x = contexts[self._rows, actions]
        payload = self.randomizer.privatize(x, rewards, public["theta"], rng)
        return PrivatizedMessage(payload, self.randomizer.mechanism)


class _Alg1Server(Server):
    mechanism: str
    keys: tuple[str, ...]

    def __init__(self) -> None:
        self.n = 0
        self._public: PublicState | None = None

    @property
    def theta(self) -> np.ndarray:
        raise NotImplementedError

    def public_state(self) -> PublicState:
        """The broadcast ``theta_{t-1}`` (R, d)."""
        if self._public is None:
            self._public = PublicState(theta=self.theta)
        return self._public

    def estimate(self) -> np.ndarray:
        return self.theta


class OLSServer(_Alg1Server):
    """Server of Algorithm 1 with ``phi^OLS`` (eq. 3.3-3.4).

    ``theta_t = (S_M + s_t I)^{-1} S_u`` with ``s_t = c_shift sqrt(t + offset)`` after ``t``
    messages (``c_shift = shift_scale * c_tilde``).
    """

    mechanism = OLSRandomizer.mechanism
    keys = OLSRandomizer.keys

    def __init__(self, R: int, d: int, c_shift: float, offset: float = 0.0) -> None:
        super().__init__()
        self.est = OLSEstimator((R,), d)
        self.c_shift, self.offset = float(c_shift), float(offset)

    @property
    def theta(self) -> np.ndarray:
        return self.est.theta

    def shift(self, n: int) -> float:
        """``c_shift sqrt(n + offset)`` (spec 3.2 line 2)."""
        return self.c_shift * math.sqrt(n + self.offset)

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        """Lines 1-3 of OLS_UPDATE (spec 3.2)."""
        p = check_message(message, self.mechanism, self.keys)
        self.n += 1
        self.est.add(p["M"], p["u"])
        self.est.solve(self.shift(self.n))
        self._public = None


class SGDServer(_Alg1Server):
    """Server of Algorithm 1 with ``phi^SGD`` (eq. 3.6): ``theta_t = theta_{t-1} - eta_t Z_t``."""

    mechanism = SGDRandomizer.mechanism
    keys = SGDRandomizer.keys

    def __init__(
        self,
        theta0: np.ndarray,
        eta0: float,
        t0: float,
        schedule: str,
        ridge: float = 0.0,
        project_radius: float | None = None,
    ) -> None:
        super().__init__()
        self.est = SGDEstimator(theta0, ridge, project_radius)
        self.eta0, self.t0, self.schedule = float(eta0), float(t0), schedule

    @property
    def theta(self) -> np.ndarray:
        return self.est.theta

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        """SGD_UPDATE (spec 3.3 lines 5-7) with ``eta_n = eta0 / (n + t0)`` (or ``/ sqrt``)."""
        p = check_message(message, self.mechanism, self.keys)
        self.n += 1
        self.est.step(p["z"], step_size(float(self.n), self.eta0, self.t0, self.schedule))
        self._public = None
