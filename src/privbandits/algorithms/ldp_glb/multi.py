"""Algorithm 2 of Han et al. (2021): LDP multi-parameter contextual bandit.

Warm-up (rounds ``t < K s_0``, 0-based): the arm is a public function of ``t`` (round-robin
``t mod K``, or blocks of ``s_0``); the user sends only that arm's message and the server updates
only that arm.  At ``t = K s_0`` the estimates are frozen as ``Theta_warm`` (public, used only for
elimination).  Main phase: the user keeps the arms whose warm-up score is within ``h/2`` of the
best (eq. 4.1, on the mu-scale, spec 8.10), picks the greedy arm under the current estimates,
and sends **K** messages in arm order: ``psi(X_t, r_t; theta_i)`` for the pulled arm and the
synthetic ``psi(0, 0; theta_i)`` for every other arm, so that nothing in the message reveals
``a_t``; the server updates every arm.

References
----------
Han, Liang, Wang, Zhang (2021), Algorithm 2, eq. (4.1), Propositions 4.1-4.2, Theorem 4.1;
spec ``han2021-ldp-glb.md`` sections 2.6 and 3.5.
"""

from __future__ import annotations

import math

import numpy as np

from privbandits.algorithms.base import Client, Server
from privbandits.algorithms.ldp_glb.estimators import OLSEstimator, SGDEstimator, step_size, vecdot
from privbandits.algorithms.ldp_glb.protocol import TieBreaker, check_message
from privbandits.algorithms.ldp_glb.randomizers import OLSRandomizer, SGDRandomizer
from privbandits.core.errors import ValidationError
from privbandits.core.links import Link
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.validation import check_choice

__all__ = [
    "WARMUP_ORDERS",
    "Alg2Client",
    "OLSMultiServer",
    "SGDMultiServer",
    "check_warmup_order",
    "eliminate",
    "warmup_arm",
]

WARMUP_ORDERS: tuple[str, ...] = ("round_robin", "blocks")

Randomizer = OLSRandomizer | SGDRandomizer


def warmup_arm(t: int, K: int, s0: int, order: str = "round_robin") -> int:
    """Arm of warm-up round ``t`` (0-based, ``t < K s0``): ``t mod K`` or ``t // s0`` (spec 8.9)."""
    return t % K if order == "round_robin" else t // s0


def eliminate(X: np.ndarray, theta_warm: np.ndarray, link: Link, h: float | None) -> np.ndarray:
    """Kept arms ``K_hat_t = {a : w_a > max_b w_b - h/2}``, ``w_a = mu(X^T theta_warm_a)`` (4.1).

    ``X`` is ``(R, d)``, ``theta_warm`` ``(R, K, d)``; returns a boolean ``(R, K)`` mask (all True
    when ``h`` is None).  The argmax of ``w`` is always kept.
    """
    R, K = theta_warm.shape[:2]
    if h is None:
        return np.ones((R, K), dtype=bool)
    w = link.mu(vecdot(X[:, None, :], theta_warm))
    best = w.max(axis=1, keepdims=True)
    return (w > best - h / 2.0) | (w >= best)


def check_warmup_order(order: str) -> str:
    """Validate a warm-up order name."""
    return check_choice("warmup_order", order, WARMUP_ORDERS)


class Alg2Client(Client):
    """User side of Algorithm 2 (lines 3-5 and 9-14).

    Parameters
    ----------
    K, s0 : int
        Arms and warm-up pulls per arm.
    warmup_order : {"round_robin", "blocks"}
    h : float or None
        Elimination threshold (None: no elimination).
    link : Link
        Reward link (elimination works on the mu-scale).
    warm_randomizer : OLSRandomizer or SGDRandomizer
        Randomizer of the single warm-up message.
    main_randomizer : OLSRandomizer, SGDRandomizer or JointSGDRandomizer
        Randomizer of the K main-phase slots (inputs ``(R, K, d)``).
    """

    def __init__(
        self,
        K: int,
        s0: int,
        warmup_order: str,
        h: float | None,
        link: Link,
        warm_randomizer: Randomizer,
        main_randomizer: Randomizer,
    ) -> None:
        self.K, self.s0, self.order, self.h, self.link = K, s0, warmup_order, h, link
        self.warm, self.main = warm_randomizer, main_randomizer
        self.n_warmup = K * s0
        self._ties = TieBreaker()
        self._arms = np.arange(K)

    def choose(
        self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Line 3 (warm-up, public schedule) or lines 9-11 (elimination, then greedy)."""
        R = contexts.shape[0]
        if t < self.n_warmup:
            return np.full(R, warmup_arm(t, self.K, self.s0, self.order))
        scores = vecdot(contexts[:, None, :], public["theta"])
        if self.h is not None:
            kept = eliminate(contexts, public["theta_warm"], self.link, self.h)
            scores = np.where(kept, scores, -np.inf)
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
        """Line 5 (one message for the public warm-up arm) or 13-14 (K messages, arm order)."""
        theta = public["theta"]
        if t < self.n_warmup:
            arm = warmup_arm(t, self.K, self.s0, self.order)
            payload = self.warm.privatize(contexts, rewards, theta[:, arm], rng)
            return PrivatizedMessage(payload, self.warm.mechanism)
        pulled = actions[:, None] == self._arms  # (R, K)
        xs = pulled[..., None] * contexts[:, None, :]  # real slot X_t, synthetic 0
        rs = np.where(pulled, rewards[:, None], 0.0)  # real slot r_t, synthetic 0
        payload = self.main.privatize(xs, rs, theta, rng)
        return PrivatizedMessage(payload, self.main.mechanism)


class _Alg2Server(Server):
    """Warm-up bookkeeping and the public state ``(theta, theta_warm)`` of Algorithm 2."""

    def __init__(self, R: int, K: int, d: int, s0: int, warmup_order: str) -> None:
        self.R, self.K, self.d, self.s0, self.order = R, K, d, s0, warmup_order
        self.n_warmup = K * s0
        self.n = 0
        self.theta_warm = np.zeros((R, K, d))
        self._public: PublicState | None = None

    @property
    def theta(self) -> np.ndarray:
        raise NotImplementedError

    @property
    def in_warmup(self) -> bool:
        """True while the next message is a warm-up message."""
        return self.n < self.n_warmup

    def public_state(self) -> PublicState:
        """Current estimates ``(R, K, d)`` and the frozen warm-up ones (zeros before ``K s_0``)."""
        if self._public is None:
            self._public = PublicState(theta=self.theta, theta_warm=self.theta_warm)
        return self._public

    def estimate(self) -> np.ndarray:
        return self.theta

    def _freeze_if_done(self) -> None:
        if self.n == self.n_warmup:  # line 7
            self.theta_warm = np.array(self.theta, copy=True)
        self._public = None


class OLSMultiServer(_Alg2Server):
    """Server of Algorithm 2 with per-arm ``phi^OLS``; shift ``c_shift sqrt(t + offset)``.

    ``t`` is the global round count for every arm (spec 8.27).
    """

    def __init__(
        self,
        R: int,
        K: int,
        d: int,
        s0: int,
        warmup_order: str,
        c_shift: float,
        offset: float = 0.0,
        warm_mechanism: str = OLSRandomizer.mechanism,
    ) -> None:
        super().__init__(R, K, d, s0, warmup_order)
        self.est = OLSEstimator((R, K), d)
        self.c_shift, self.offset = float(c_shift), float(offset)
        self.warm_mechanism = warm_mechanism

    @property
    def theta(self) -> np.ndarray:
        return self.est.theta

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        """Line 6 (warm-up: the public arm's statistics) or line 15 (every arm's slot)."""
        if self.in_warmup:
            p = check_message(message, self.warm_mechanism, OLSRandomizer.keys)
            arm = warmup_arm(self.n, self.K, self.s0, self.order)
            self.est.add(p["M"], p["u"], index=(slice(None), arm))
        else:
            p = check_message(message, OLSRandomizer.mechanism, OLSRandomizer.keys)
            if p["u"].shape[1:] != (self.K, self.d):
                raise ValidationError(
                    f"a main-phase message must carry K={self.K} slots of dimension "
                    f"{self.d}, got u of shape {p['u'].shape}"
                )
            self.est.add(p["M"], p["u"])
        self.n += 1
        self.est.solve(self.c_shift * math.sqrt(self.n + self.offset))
        self._freeze_if_done()


class SGDMultiServer(_Alg2Server):
    """Server of Algorithm 2 with per-arm ``phi^SGD``.

    Step of arm ``i``: ``eta0 m / (n_i + t0)`` with ``n_i`` its update count (including the
    current one), ``m = 1`` in warm-up and ``m = K`` afterwards (spec 3.5, reconstructed Thm 4.1).
    With ``warm_ols`` (the authors' code, spec 8.25) the warm-up runs the private OLS estimator
    instead and SGD starts from its estimates.

    Parameters
    ----------
    theta0 : ndarray (R, K, d)
        Initial iterates.
    eta0, t0 : float
        Step parameters.
    schedule : {"inv_t", "inv_sqrt_t"}
    ridge : float
        Ridge ``lambda``.
    project_radius : float or None
        Projection radius.
    mechanism : str
        Randomizer name of the main-phase messages (per-arm or joint).
    warm_ols : tuple (c_shift, offset) or None
        Shift of the OLS warm-up estimator, or None for SGD warm-up.
    """

    def __init__(
        self,
        R: int,
        K: int,
        d: int,
        s0: int,
        warmup_order: str,
        theta0: np.ndarray,
        eta0: float,
        t0: float,
        schedule: str,
        ridge: float = 0.0,
        project_radius: float | None = None,
        mechanism: str = SGDRandomizer.mechanism,
        warm_ols: tuple[float, float] | None = None,
    ) -> None:
        super().__init__(R, K, d, s0, warmup_order)
        self.est = SGDEstimator(theta0, ridge, project_radius)
        self.eta0, self.t0, self.schedule = float(eta0), float(t0), schedule
        self.mechanism = mechanism
        self.counts = np.zeros(K)
        self.warm_ols = warm_ols
        self.ols = OLSEstimator((R, K), d) if warm_ols is not None else None

    @property
    def theta(self) -> np.ndarray:
        if self.ols is not None and self.in_warmup:
            return self.ols.theta
        return self.est.theta

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        """Line 6 (warm-up: the public arm only) or line 15 (every arm, real or synthetic)."""
        if self.in_warmup:
            arm = warmup_arm(self.n, self.K, self.s0, self.order)
            self.counts[arm] += 1
            if self.ols is not None:
                p = check_message(message, OLSRandomizer.mechanism, OLSRandomizer.keys)
                self.ols.add(p["M"], p["u"], index=(slice(None), arm))
                c_shift, offset = self.warm_ols  # type: ignore[misc]
                self.ols.solve(c_shift * math.sqrt(self.n + 1 + offset))
            else:
                p = check_message(message, SGDRandomizer.mechanism, SGDRandomizer.keys)
                eta = float(step_size(self.counts[arm], self.eta0, self.t0, self.schedule))
                self.est.step(p["z"], eta, index=(slice(None), arm))
        else:
            p = check_message(message, self.mechanism, SGDRandomizer.keys)
            if p["z"].shape[1:] != (self.K, self.d):
                raise ValidationError(
                    f"a main-phase message must carry K={self.K} slots of dimension "
                    f"{self.d}, got z of shape {p['z'].shape}"
                )
            self.counts += 1
            self.est.step(
                p["z"], step_size(self.counts, self.eta0, self.t0, self.schedule, m=self.K)
            )
        self.n += 1
        if self.ols is not None and self.n == self.n_warmup:
            self.est.theta = np.array(self.ols.theta, copy=True)  # SGD starts from the OLS warm-up
        self._freeze_if_done()
