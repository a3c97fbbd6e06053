"""Algorithm 3 of Chen et al. (2025) in the local model, on ``LDP_L1_Regression`` (Algorithm 8).

The untrusted server publishes, for every round, the billboard of released estimates and the
current slot of the epoch's regression schedule (sequential interaction):

* normalization batch ``k`` (``U_k`` public): the user sends ``SymPriv_{sqrt(2)||U_k||}(X)`` with
  ``X = U_k phi phi^T U_k / ||U_k phi||``;
* gradient batch ``m`` (``U``, ``w_m`` public): the user sends ``Priv_4(g)``,
  ``g = (U phi / ||U phi||)(nu(<U phi, w_m>) - y)`` (``||g|| <= 2``, no clipping needed);
* otherwise (samples the schedule leaves unused, or an epoch too short to fit) nothing
  data-dependent.

Every message has both fields (``X`` and ``g``); the field not used by the slot is zero, a
constant.  Each user sends one message through one Gaussian channel at noise multiplier
``sigma``: the guarantee is the exact Gaussian epsilon of ``sigma`` at ``delta``.  The server runs
the spectral step (Algorithm 1, lines 7-9) after each normalization batch, the projected gradient
step (Algorithm 7, lines 6-7) after each gradient batch, and posts ``(U w, U, c_b L_nu e_bar)`` at
the end of the epoch, exactly as :class:`privbandits.regression.ReweightedRegression` with
``mode="ldp"`` does offline.

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Section 5 (Algorithms 3, 4) and
Section 4.2 / Appendix C.5 (Algorithm 8).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.base import Client, LocalAlgorithm, Server
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.chen.jdp import (
    COMMON_CONSTRAINTS,
    check_problem,
    epoch_regressor,
    resolved_constants,
)
from privbandits.algorithms.chen.planning import Billboard, choose_planned
from privbandits.algorithms.chen.privacy import PRIVACY_CONSTRAINTS, gaussian_guarantee
from privbandits.algorithms.chen.schedule import epoch_ends
from privbandits.algorithms.registry import register
from privbandits.core.errors import TrustBoundaryError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.spec import EnvSpec
from privbandits.privacy.inputs import check_client_inputs
from privbandits.privacy.samplers import add_gaussian, add_symmetric_gaussian_rows
from privbandits.regression import ReweightedRegression
from privbandits.regression.links import LinkConstants
from privbandits.regression.matrices import EllipsoidProjector
from privbandits.regression.normalization import SQRT2, normalized_outer, spectral_step
from privbandits.regression.releases import noise_multiplier
from privbandits.regression.reweighted import GRADIENT_SENSITIVITY, reweighted_gradient

__all__ = ["ChenLDP", "ChenLDPClient", "ChenLDPServer"]

#: Slot codes of the public schedule.
IDLE, NORMALIZE, GRADIENT = 0, 1, 2
MECHANISM = "chen-ldp-gaussian"


class ChenLDPClient(Client):
    """User side: choose by Algorithm 4 on the public billboard, then send one Gaussian message."""

    def __init__(self, sigma: float, link: LinkConstants, spanner_C: float, context_bound: float) -> None:
        self.sigma, self.link, self.spanner_C, self.bound = sigma, link, spanner_C, context_bound

    def choose(self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return choose_planned(contexts, public["board_theta"], public["board_U"], public["board_scale"],
                              public["n_boards"], self.link, self.spanner_C, rng)

    def randomize(self, t: int, public: PublicState, contexts: np.ndarray, actions: np.ndarray,
                  rewards: np.ndarray, rng: np.random.Generator) -> PrivatizedMessage:
        check_client_inputs(contexts, rewards, self.bound)
        R, d = contexts.shape[0], contexts.shape[-1]
        phi = contexts[np.arange(R), actions]
        y = np.clip(rewards, -1.0, 1.0)  # the user's own clipping into the model's range
        slot = np.asarray(public["slot"])
        U, w = np.asarray(public["U"]), np.asarray(public["w"])
        X = np.zeros((R, d, d))
        g = np.zeros((R, d))
        norm_rows = np.flatnonzero(slot == NORMALIZE)
        if norm_rows.size:
            V = np.einsum("rij,rj->ri", U[norm_rows], phi[norm_rows])
            X[norm_rows] = np.stack([normalized_outer(np.eye(d), v[None])[0] for v in V])
            Z = np.zeros((norm_rows.size, d, d))
            add_symmetric_gaussian_rows(rng, 1.0, Z)  # the compiled sampler; std per user below
            opnorm = np.linalg.norm(U[norm_rows], 2, axis=(1, 2))
            X[norm_rows] += (self.sigma * SQRT2 * opnorm)[:, None, None] * Z
        grad_rows = np.flatnonzero(slot == GRADIENT)
        if grad_rows.size:
            for r in grad_rows:
                g[r] = reweighted_gradient(U[r], w[r], phi[r][None], y[r][None], self.link)[0]
            noise = np.zeros((grad_rows.size, d))
            add_gaussian(rng, self.sigma * GRADIENT_SENSITIVITY, noise)
            g[grad_rows] += noise
        return PrivatizedMessage({"X": X, "g": g}, MECHANISM)


class ChenLDPServer(Server):
    """Untrusted server: runs the epoch's Algorithm 8 schedule on the users' messages only."""

    def __init__(self, R: int, spec: EnvSpec, reg: ReweightedRegression, ends: np.ndarray, min_fit: int) -> None:
        self.R, self.d, self.reg, self.ends, self.min_fit = R, spec.d, reg, ends, min_fit
        J = len(ends)
        self.billboard = Billboard(R, J, self.d)
        self.t = 0
        self.epoch = 0
        self._start_epoch(0)

    # -- the epoch's public schedule -------------------------------------------------------------
    def _start_epoch(self, start: int) -> None:
        self.start = start
        n = int(self.ends[self.epoch] - start)
        self.n = n
        self.plan = self.reg.plan(n)
        self.fit = n >= self.min_fit and self.plan.N >= 1 and self.plan.B >= 1
        self.lam = self.reg.lam(n, self.d) if self.fit else 0.0
        self.U = np.broadcast_to(np.eye(self.d), (self.R, self.d, self.d)).copy()
        self.w = np.zeros((self.R, self.d))
        self.accX = np.zeros((self.R, self.d, self.d))
        self.accg = np.zeros((self.R, self.d))
        self.projectors: list[EllipsoidProjector] = []

    def slot(self) -> int:
        """What the user of the current round reports."""
        if not self.fit:
            return IDLE
        p, pl = self.t - self.start, self.plan
        if p < self.reg.K * pl.N:
            return NORMALIZE
        if pl.n1 <= p < pl.n1 + pl.M * pl.B:
            return GRADIENT
        return IDLE

    def public_state(self) -> PublicState:
        return PublicState({"slot": np.full(self.R, self.slot()), "U": self.U, "w": self.w, **self.billboard.public()})

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        if not isinstance(message, PrivatizedMessage) or message.mechanism != MECHANISM:
            raise TrustBoundaryError(f"the server only accepts {MECHANISM!r} PrivatizedMessage objects")
        slot, p, pl = self.slot(), self.t - self.start, self.plan
        if slot == NORMALIZE:
            self.accX += message["X"]
            if (p + 1) % pl.N == 0:  # end of normalization batch k: Algorithm 1, lines 7-9
                for r in range(self.R):
                    self.U[r] = spectral_step(self.U[r], self.accX[r] / pl.N, self.lam)
                self.accX[:] = 0.0
                if p + 1 == self.reg.K * pl.N:
                    self.projectors = [EllipsoidProjector(self.U[r]) for r in range(self.R)]
        elif slot == GRADIENT:
            self.accg += message["g"]
            if (p + 1 - pl.n1) % pl.B == 0:  # end of gradient batch m: Algorithm 7, lines 6-7
                link = self.reg.link
                eta = 1.0 / (2.0 * link.L_nu)
                c_reg = (link.L_nu if self.reg.reg_coef == "L_nu" else link.mu) * self.lam
                for r in range(self.R):
                    G = self.accg[r] / pl.B + c_reg * (self.U[r] @ self.w[r])
                    self.w[r] = self.projectors[r](self.w[r] - eta * G)
                self.accg[:] = 0.0
        self.t += 1
        if self.t == self.ends[self.epoch]:
            if self.fit:
                scale = self.reg.c_b * self.reg.link.L_nu * self.reg.e_bar(self.n, self.d)
                for r in range(self.R):
                    self.billboard.post(r, self.U[r] @ self.w[r], self.U[r], scale)
            self.epoch += 1
            if self.epoch < len(self.ends):
                self._start_epoch(self.t)

    def estimate(self) -> np.ndarray:
        return self.billboard.latest()


@register
class ChenLDP(LocalAlgorithm):
    """Private linear contextual bandit by re-weighted regression, local DP (Algorithm 3 + Algorithm 8).

    Parameters
    ----------
    epsilon, delta, gaussian
        Privacy level ``(alpha, beta)`` of every user's single message and the Gaussian calibration
        (``"analytic"``, or the paper's ``"classic"`` for epsilon < 1), as in
        :mod:`privbandits.algorithms.chen.privacy`.
    c_b, first_epoch, min_fit, K_norm, c_lam, lam_shape, failure_prob, spanner_C
        As for :class:`~privbandits.algorithms.chen.jdp.ChenElimination` (``c_lam`` defaults to 2).
    """

    name = "chen-ldp"
    trust_model: ClassVar[str] = "local"
    links = ("identity", "logistic", "probit")
    paper = "Chen, Li, Rakhlin & Simchi-Levi 2025, Alg. 3 + Alg. 8 (LDP)"
    constraints = {**COMMON_CONSTRAINTS, **PRIVACY_CONSTRAINTS}
    test_params = ({"first_epoch": 32, "min_fit": 30},
                   {"epsilon": 0.5, "first_epoch": 16, "min_fit": 16, "c_b": 0.1, "gaussian": "classic"})

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-5, c_b: float = 1.0, first_epoch: int = 1024,
                 min_fit: int = 1000, K_norm: int = 5, c_lam: float | None = None, lam_shape: str = "paper",
                 failure_prob: float | None = None, spanner_C: float = 2.0, gaussian: str = "analytic") -> None:
        noise_multiplier(epsilon, delta, gaussian)  # classic with epsilon >= 1 raises here

    mode = "ldp"

    def regressor(self, spec: EnvSpec) -> ReweightedRegression:
        """The epoch's Algorithm 8 (its plan, lambda and e_bar; the server runs it online)."""
        return epoch_regressor(self, spec, self.epsilon, self.delta, self.gaussian)

    def _resolved(self, spec: EnvSpec) -> dict[str, Any]:
        return resolved_constants(self, spec, self.regressor(spec))

    def calibrate(self, spec: EnvSpec) -> Calibration:
        g = gaussian_guarantee("local", self.epsilon, self.delta, self.gaussian,
                               "one Gaussian message per user: SymPriv of X at sensitivity sqrt(2)||U_k|| or Priv "
                               "of g at sensitivity 4")
        return Calibration(g, self._resolved(spec), preset="strict", requested=(self.epsilon, self.delta))

    def reset(self, spec: Any, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        check_problem(self.name, spec)
        reg = self.regressor(spec)
        self.client = ChenLDPClient(reg.sigma, reg.link, self.spanner_C, spec.context_bound)
        self.server = ChenLDPServer(self.R, spec, reg, epoch_ends(spec.horizon, self.first_epoch), self.min_fit)


