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
The server is untrusted: the device accepts only public states of its declared space
(:meth:`SquareCBLDPClient.public_space`) and clips its own gradient (prediction and response into
``[-1, 1]``, norm 4), so two users' encoded messages are at most 8 apart, ``1 / sigma`` in units of
the noise, whatever iterate it is sent.

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

from privbandits.algorithms.audit import (
    AuditCase,
    near_parallel_case,
    public_state,
    steep_direction,
)
from privbandits.algorithms.base import LocalAlgorithm, Server
from privbandits.algorithms.chen.calibration import SquareCBLDPConstants
from privbandits.algorithms.chen.device import GaussianDevice
from privbandits.algorithms.chen.jdp import check_problem
from privbandits.algorithms.chen.privacy import PRIVACY_CONSTRAINTS, GaussianPrivacy
from privbandits.algorithms.chen.squarecb import SQUARECB_CONSTRAINTS, squarecb_epoch_ends
from privbandits.algorithms.chen.squarecb_kernel import build_squarecb_ldp_kernel, igw_choose_rows
from privbandits.algorithms.registry import register
from privbandits.core.messages import PrivatizedMessage, PublicState, check_payload
from privbandits.core.public_space import PublicField, PublicSpace
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.samplers import add_gaussian
from privbandits.regression import ImproperBatchSGD
from privbandits.regression.dimfree import SQ_GRADIENT_SENSITIVITY, improper_sgd_gradients
from privbandits.regression.releases import Ledger, Release, noise_multiplier

__all__ = [
    "PUBLIC_BOUND",
    "SquareCBLDP",
    "SquareCBLDPClient",
    "SquareCBLDPServer",
    "ldp_rate",
    "message_guarantee",
    "squarecb_ldp_public_space",
]

#: Slot codes of the public schedule.
IDLE, GRADIENT = 0, 2
MECHANISM = "squarecb-ldp-gaussian"
#: Largest absolute entry of an iterate or estimate the device accepts: far beyond any honest
#: iterate, small enough that every prediction the device computes is finite.  The device's clips,
#: not this bound, keep its guarantee.
PUBLIC_BOUND = 1e12


def ldp_rate(n: int, sigma: float) -> float:
    """Squared-error rate ``E(n) = (sigma^2 / n)^{1/3}`` of Algorithm 6 on ``n`` users."""
    return (sigma * sigma / max(n, 1)) ** (1.0 / 3.0)


def message_guarantee(sigma: float, delta: float) -> PrivacyGuarantee:
    """The accountant's guarantee of one user's message: a Gaussian release of sensitivity 8 at std ``8 sigma``."""
    ledger = Ledger(1)
    ledger.record(
        Release(
            "gradient message",
            np.zeros(1, dtype=np.int64),
            SQ_GRADIENT_SENSITIVITY,
            sigma * SQ_GRADIENT_SENSITIVITY,
            per_user=True,
        )
    )
    return ledger.guarantee(
        delta,
        "local",
        f"one Gaussian message per user (multiplier {sigma:.6g}): "
        "2(clip(<phi, theta>) - y) phi at sensitivity 8",
    )


def squarecb_ldp_public_space() -> PublicSpace:
    """Every public state a ``squarecb-ldp`` device accepts: ``slot`` (R,) in {IDLE, GRADIENT},
    ``theta_sgd`` and ``theta_hat`` (R, d) with entries in ``[-PUBLIC_BOUND, PUBLIC_BOUND]`` (the
    oracle is improper: no norm bound), ``gamma`` (R,) >= 0."""
    return PublicSpace(
        (
            PublicField("slot", ("R",), kind="i", values=(IDLE, GRADIENT)),
            PublicField("theta_sgd", ("R", "d"), low=-PUBLIC_BOUND, high=PUBLIC_BOUND),
            PublicField("theta_hat", ("R", "d"), low=-PUBLIC_BOUND, high=PUBLIC_BOUND),
            PublicField("gamma", ("R",), low=0.0),
        )
    )


class SquareCBLDPClient(GaussianDevice):
    """User side: inverse-gap weighting on the public estimate, then one Gaussian gradient message.

    The message is :meth:`encode` (the clipped gradient ``g`` (d,) in a gradient slot, the constant
    zero otherwise) plus :meth:`noise` (``N(0, (8 sigma)^2)`` per coordinate in a gradient slot);
    the sensitivity is ``8 / (8 sigma) = 1 / sigma`` in l2.  The public states are those of
    :func:`squarecb_ldp_public_space`.

    Parameters
    ----------
    sigma, spec
        As for :class:`~privbandits.algorithms.chen.device.GaussianDevice`.
    """

    algorithm = "squarecb-ldp"
    mechanism = MECHANISM

    def __init__(self, sigma: float, spec: EnvSpec) -> None:
        super().__init__(sigma, spec, squarecb_ldp_public_space())

    def _fields(
        self, pub: PublicState, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> dict[str, np.ndarray]:
        """The clipped gradient ``g`` (R, d) of every user."""
        R = contexts.shape[0]
        phi = contexts[np.arange(R), actions]
        g = np.zeros((R, self.spec.d))
        rows = np.flatnonzero(pub["slot"] == GRADIENT)
        if rows.size:
            g[rows] = improper_sgd_gradients(pub["theta_sgd"][rows], phi[rows], rewards[rows])
        return {"g": g}

    def _scales(self, pub: PublicState) -> np.ndarray:
        """Noise std per user (R,)."""
        return np.where(pub["slot"] == GRADIENT, self.sigma * SQ_GRADIENT_SENSITIVITY, 0.0)

    def _stds(self, pub: PublicState) -> np.ndarray:
        """Gaussian, per user: ``8 sigma`` on every coordinate in a gradient slot, 0 otherwise."""
        return np.repeat(self._scales(pub)[:, None], self.spec.d, axis=1)

    def _add_noise(
        self, pub: PublicState, fields: dict[str, np.ndarray], rng: np.random.Generator
    ) -> None:
        g = fields["g"]
        s = self._scales(pub)
        rows = np.flatnonzero(pub["slot"] == GRADIENT)
        if rows.size:
            z = np.zeros((rows.size, g.shape[1]))
            add_gaussian(rng, 1.0, z)
            g[rows] += s[rows][:, None] * z

    def _choose(
        self, pub: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        R = contexts.shape[0]
        theta, gamma = pub["theta_hat"], pub["gamma"]
        u = np.asarray(rng.random(R), dtype=float)
        out = np.empty(R, dtype=np.int64)
        igw_choose_rows(
            np.ascontiguousarray(contexts, dtype=float),
            np.ascontiguousarray(theta, dtype=float),
            np.ascontiguousarray(gamma, dtype=float),
            u,
            out,
        )
        return out


class SquareCBLDPServer(Server):
    """Untrusted server: runs each epoch's Algorithm 6 on the users' messages and posts the estimates."""

    def __init__(
        self, R: int, spec: EnvSpec, oracle: ImproperBatchSGD, ends: np.ndarray, c_gamma: float
    ) -> None:
        self.R, self.d, self.A, self.oracle, self.ends, self.c_gamma = (
            R,
            spec.d,
            spec.K,
            oracle,
            ends,
            c_gamma,
        )
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
        return PublicState(
            slot=np.full(self.R, self.slot()),
            theta_sgd=self.theta_sgd,
            theta_hat=self.theta_hat,
            gamma=self.gamma,
        )

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        msg = check_payload(message, MECHANISM, {"g": self.acc.shape[1:]}, self.R)
        if self.slot() == GRADIENT:
            self.acc += msg["g"]
            if (self.t - self.start + 1) % self.N == 0:  # end of batch k: Algorithm 6, line 4
                self.theta_sgd = self.theta_sgd - self.eta * (self.acc / self.N)
                self.acc[:] = 0.0
        self.t += 1
        if self.t == self.ends[self.epoch]:
            self.theta_hat = self.theta_sgd.copy()
            self.gamma = np.full(self.R, self.gamma_for(self.n))
            self.epoch += 1
            if self.epoch < len(self.ends):
                self._start_epoch(self.t)

    def gamma_for(self, n: int) -> float:
        """The IGW rate ``gamma = c_gamma sqrt(A / E(n))`` released after an epoch of ``n`` users."""
        return self.c_gamma * math.sqrt(self.A / ldp_rate(n, self.oracle.sigma))

    def estimate(self) -> np.ndarray:
        return self.theta_hat.copy()


@register
class SquareCBLDP(GaussianPrivacy, LocalAlgorithm):
    """SquareCB on ``LDP_Improper_BatchSGD`` (Chen et al. 2025, Algorithm 6): local DP, dimension-free.

    Parameters
    ----------
    epsilon, delta, gaussian
        As for :class:`~privbandits.algorithms.chen.privacy.GaussianPrivacy`.
    c_gamma, m0
        As for :class:`~privbandits.algorithms.chen.squarecb.SquareCB`.
    """

    name = "squarecb-ldp"
    trust_model: ClassVar[str] = "local"
    #: Algorithm 6 is improper: no projection, the estimate carries the users' isotropic noise.
    improper_estimate: ClassVar[bool] = True
    paper = "Chen, Li, Rakhlin & Simchi-Levi 2025, Sec. 6.2: SquareCB + Alg. 6 (LDP)"
    constraints = {
        **{key: SQUARECB_CONSTRAINTS[key] for key in ("c_gamma", "m0")},
        **PRIVACY_CONSTRAINTS,
    }
    test_params = ({"m0": 4}, {"m0": 3, "epsilon": 0.5, "gaussian": "classic"})

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The gradient slot at an improper iterate: both users' predictions clipped."""
        text = (
            "SquareCB + Chen et al. (2025) Alg. 6 client: clipped square-loss gradient + Gaussian"
        )
        public = public_state(slot=GRADIENT, theta_sgd=steep_direction)
        return (near_parallel_case(cls, public, text),)

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        c_gamma: float = 1.0,
        m0: int = 9,
        gaussian: str = "analytic",
    ) -> None:
        noise_multiplier(epsilon, delta, gaussian)  # classic with epsilon >= 1 raises here

    def oracle(self) -> ImproperBatchSGD:
        """Algorithm 6 at this privacy level (its schedule; the server runs it online)."""
        return ImproperBatchSGD(self.epsilon, self.delta, mode="ldp", calibration=self.gaussian)

    def _resolved(self, spec: EnvSpec) -> SquareCBLDPConstants:
        orc = self.oracle()
        ends = squarecb_epoch_ends(spec.horizon, self.m0)
        steps = [orc.steps(int(n)) for n in np.diff(ends, prepend=0)]
        return SquareCBLDPConstants(
            epoch_ends=tuple(int(e) for e in ends),
            sigma=orc.sigma,
            c_gamma=self.c_gamma,
            K=tuple(int(K) for K, _ in steps),
            eta=tuple(float(eta) for _, eta in steps),
        )

    def release_guarantee(self) -> PrivacyGuarantee:
        """The accountant's guarantee of one user's message (:func:`message_guarantee`)."""
        return message_guarantee(
            noise_multiplier(self.epsilon, self.delta, self.gaussian), self.delta
        )

    def reset(self, spec: Any, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        check_problem(self.name, spec)  # the sensitivity 8 needs ||phi|| <= 1
        orc = self.oracle()
        self.client = SquareCBLDPClient(orc.sigma, spec)
        ends = squarecb_epoch_ends(spec.horizon, self.m0)
        self.server = SquareCBLDPServer(self.R, spec, orc, ends, self.c_gamma)
        #: The same round as compiled steps, for the compiled driver only
        #: (:mod:`privbandits.algorithms.chen.squarecb_kernel`); the roles above serve every other path.
        self.compiled_kernel = build_squarecb_ldp_kernel(
            orc, ends, self.server.gamma_for, spec.d, self.R, spec.K
        )

    def estimate(self) -> np.ndarray | None:
        k = self.compiled_kernel
        if k.server[2].any():  # the compiled driver advanced this run
            return k.estimate()
        return self.server.estimate()
