"""SquareCB on ``LDP_Improper_BatchSGD`` (Chen et al. 2025, Section 6.2 with Algorithm 6): local DP.

The epochs, the inverse-gap weighting and the learning rate are those of
:class:`~privbandits.algorithms.chen.squarecb.SquareCB`; the oracle of epoch ``m`` is Algorithm 6
run *online* by the untrusted server on the users of epoch ``m - 1`` (FALCON-style epoching: the
epoch's data only).  For every round the server publishes

* the billboard ``(theta_hat_m, gamma_m)``: the estimate released at the end of the previous epoch
  and the IGW learning rate (``theta_hat_1 = 0``, ``gamma_1 = 0``: uniform play);
* the slot of Algorithm 6's schedule for the current epoch of ``n`` users: ``K`` batches of
  ``N = floor(n / K)`` users (``K``, ``eta`` as in
  :meth:`privbandits.regression.ImproperBatchSGD.steps`, ``mode="ldp"``), then the ``n - K N``
  users the schedule leaves unused;
* the current iterate ``theta_{k-1}`` of batch ``k``.

The user draws its action by IGW on ``clip(<phi(x, a), theta_hat_m>, -1, 1)`` (its context stays on
the device), observes its reward and sends one message: in a gradient slot
``2 (clip(<phi, theta_{k-1}>, -1, 1) - y) phi + N(0, (8 sigma)^2 I)`` (``phi`` the chosen action's
feature, ``y`` the reward clipped into ``[-1, 1]``; replace-one sensitivity 8), otherwise the
constant zero vector.  After batch ``k`` the server steps ``theta_k = theta_{k-1} - eta mean(g)``
(no projection); at the end of the epoch it posts ``theta_hat_{m+1} = theta_K`` and
``gamma_{m+1} = c_gamma sqrt(A / E(n))`` with the LDP rate ``E(n) = (sigma^2 / n)^{1/3}``.

Privacy: every user's data leave the device once, through one Gaussian channel at noise
multiplier ``sigma`` per unit of sensitivity, chosen from public information only (sequentially
interactive local DP); the guarantee is the accountant's exact Gaussian epsilon of that release.

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Section 6.1 (Algorithm 6) and
Section 6.2 (SquareCB with the dimension-free oracles); Foster & Rakhlin (2020), ICML (SquareCB);
Simchi-Levi & Xu (2020) (FALCON epochs).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.base import Client, LocalAlgorithm, Server
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.chen.jdp import check_problem
from privbandits.algorithms.chen.privacy import PRIVACY_CONSTRAINTS
from privbandits.algorithms.chen.squarecb import (
    SQUARECB_CONSTRAINTS,
    igw_sample,
    squarecb_epoch_ends,
)
from privbandits.algorithms.registry import register
from privbandits.core.errors import TrustBoundaryError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.inputs import check_client_inputs
from privbandits.regression import ImproperBatchSGD
from privbandits.regression.dimfree import SQ_GRADIENT_SENSITIVITY, improper_sgd_messages
from privbandits.regression.releases import Ledger, Release, noise_multiplier

__all__ = ["SquareCBLDP", "SquareCBLDPClient", "SquareCBLDPServer", "ldp_rate", "message_guarantee"]

#: Slot codes of the public schedule.
IDLE, GRADIENT = 0, 2
MECHANISM = "squarecb-ldp-gaussian"


def ldp_rate(n: int, sigma: float) -> float:
    """Squared-error rate ``E(n) = (sigma^2 / n)^{1/3}`` of Algorithm 6 on ``n`` users."""
    return (sigma * sigma / max(n, 1)) ** (1.0 / 3.0)


def message_guarantee(sigma: float, delta: float) -> PrivacyGuarantee:
    """The accountant's guarantee of one user's message: a Gaussian release of sensitivity 8 at std ``8 sigma``."""
    ledger = Ledger(1)
    ledger.record(Release("gradient message", np.zeros(1, dtype=np.int64), SQ_GRADIENT_SENSITIVITY,
                          sigma * SQ_GRADIENT_SENSITIVITY, per_user=True))
    return ledger.guarantee(delta, "local", f"one Gaussian message per user (multiplier {sigma:.6g}): "
                                            "2(clip(<phi, theta>) - y) phi at sensitivity 8")


class SquareCBLDPClient(Client):
    """User side: inverse-gap weighting on the public estimate, then one Gaussian gradient message."""

    def __init__(self, sigma: float, context_bound: float) -> None:
        self.sigma, self.bound = sigma, context_bound

    def choose(self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        theta, gamma = np.asarray(public["theta_hat"]), np.asarray(public["gamma"])
        R = contexts.shape[0]
        u = np.asarray(rng.random(R), dtype=float)
        out = np.empty(R, dtype=np.int64)
        for r in range(R):
            out[r] = igw_sample(np.clip(contexts[r] @ theta[r], -1.0, 1.0), float(gamma[r]), float(u[r]))
        return out

    def randomize(self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray,
                  rewards: np.ndarray, rng: np.random.Generator) -> PrivatizedMessage:
        check_client_inputs(contexts, rewards, self.bound)
        R, d = contexts.shape[0], contexts.shape[-1]
        phi = contexts[np.arange(R), actions]
        y = np.clip(rewards, -1.0, 1.0)  # the user's own clipping into the model's range
        g = np.zeros((R, d))
        rows = np.flatnonzero(np.asarray(public["slot"]) == GRADIENT)
        if rows.size:
            theta = np.asarray(public["theta_sgd"])[rows]
            g[rows] = improper_sgd_messages(theta, phi[rows], y[rows], self.sigma, rng)
        return PrivatizedMessage({"g": g}, MECHANISM)


class SquareCBLDPServer(Server):
    """Untrusted server: runs each epoch's Algorithm 6 on the users' messages and posts the estimates."""

    def __init__(self, R: int, spec: EnvSpec, oracle: ImproperBatchSGD, ends: np.ndarray, c_gamma: float) -> None:
        self.R, self.d, self.A, self.oracle, self.ends, self.c_gamma = R, spec.d, spec.K, oracle, ends, c_gamma
        self.theta_hat = np.zeros((R, self.d))
        self.gamma = np.zeros(R)
        self.t = 0
        self.epoch = 0
        self._start_epoch(0)

    def _start_epoch(self, start: int) -> None:
        self.start = start
        self.n = int(self.ends[self.epoch] - start)
        self.K, self.eta = self.oracle.steps(self.n)
        self.N = self.n // self.K
        self.theta_sgd = np.zeros((self.R, self.d))
        self.acc = np.zeros((self.R, self.d))

    def slot(self) -> int:
        """What the user of the current round reports."""
        return GRADIENT if self.t - self.start < self.K * self.N else IDLE

    def public_state(self) -> PublicState:
        return PublicState(slot=np.full(self.R, self.slot()), theta_sgd=self.theta_sgd, theta_hat=self.theta_hat,
                           gamma=self.gamma)

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        if not isinstance(message, PrivatizedMessage) or message.mechanism != MECHANISM:
            raise TrustBoundaryError(f"the server only accepts {MECHANISM!r} PrivatizedMessage objects")
        if self.slot() == GRADIENT:
            self.acc += message["g"]
            if (self.t - self.start + 1) % self.N == 0:  # end of batch k: Algorithm 6, line 4
                self.theta_sgd = self.theta_sgd - self.eta * (self.acc / self.N)
                self.acc[:] = 0.0
        self.t += 1
        if self.t == self.ends[self.epoch]:
            self.theta_hat = self.theta_sgd.copy()
            self.gamma = np.full(self.R, self.c_gamma * math.sqrt(self.A / ldp_rate(self.n, self.oracle.sigma)))
            self.epoch += 1
            if self.epoch < len(self.ends):
                self._start_epoch(self.t)

    def estimate(self) -> np.ndarray:
        return self.theta_hat.copy()


@register
class SquareCBLDP(LocalAlgorithm):
    """SquareCB on ``LDP_Improper_BatchSGD`` (Chen et al. 2025, Algorithm 6): local DP, dimension-free.

    Parameters
    ----------
    epsilon, delta, gaussian
        Privacy level ``(alpha, beta)`` of every user's single message and the Gaussian calibration
        (``"analytic"``, or the paper's ``"classic"`` for epsilon < 1), as in
        :mod:`privbandits.algorithms.chen.privacy`.
    c_gamma, m0
        As for :class:`~privbandits.algorithms.chen.squarecb.SquareCB`.
    """

    name = "squarecb-ldp"
    trust_model: ClassVar[str] = "local"
    #: Algorithm 6 is improper: no projection, the estimate carries the users' isotropic noise.
    improper_estimate: ClassVar[bool] = True
    paper = "Chen, Li, Rakhlin & Simchi-Levi 2025, Sec. 6.2: SquareCB + Alg. 6 (LDP)"
    constraints = {**{key: SQUARECB_CONSTRAINTS[key] for key in ("c_gamma", "m0")}, **PRIVACY_CONSTRAINTS}
    test_params = ({"m0": 4}, {"m0": 3, "epsilon": 0.5, "gaussian": "classic"})

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-5, c_gamma: float = 1.0, m0: int = 9,
                 gaussian: str = "analytic") -> None:
        noise_multiplier(epsilon, delta, gaussian)  # classic with epsilon >= 1 raises here

    def oracle(self) -> ImproperBatchSGD:
        """Algorithm 6 at this privacy level (its schedule; the server runs it online)."""
        return ImproperBatchSGD(self.epsilon, self.delta, mode="ldp", calibration=self.gaussian)

    def _resolved(self, spec: EnvSpec) -> dict[str, Any]:
        orc = self.oracle()
        ends = squarecb_epoch_ends(spec.horizon, self.m0)
        steps = [orc.steps(int(n)) for n in np.diff(ends, prepend=0)]
        return {"epoch_ends": [int(e) for e in ends], "sigma": orc.sigma, "c_gamma": self.c_gamma,
                "K": [int(K) for K, _ in steps], "eta": [float(eta) for _, eta in steps]}

    def calibrate(self, spec: EnvSpec) -> Calibration:
        g = message_guarantee(noise_multiplier(self.epsilon, self.delta, self.gaussian), self.delta)
        return Calibration(g, self._resolved(spec), preset="strict", requested=(self.epsilon, self.delta))

    def reset(self, spec: Any, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        check_problem(self.name, spec)  # the sensitivity 8 needs ||phi|| <= 1
        orc = self.oracle()
        self.client = SquareCBLDPClient(orc.sigma, spec.context_bound)
        self.server = SquareCBLDPServer(self.R, spec, orc, squarecb_epoch_ends(spec.horizon, self.m0), self.c_gamma)
