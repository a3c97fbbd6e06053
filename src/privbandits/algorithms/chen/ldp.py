"""Algorithm 3 of Chen et al. (2025) in the local model, on ``LDP_L1_Regression`` (Algorithm 8).

The untrusted server publishes, for every round, the billboard of released estimates and the
current slot of the epoch's regression schedule (sequential interaction):

* normalization batch ``k`` (``U_k`` public): the user sends ``SymPriv_{sqrt(2)||U_k||}(X)`` with
  ``X = U_k phi phi^T U_k / ||U_k phi||``;
* gradient batch ``m`` (``U``, ``w_m`` public): the user sends ``Priv_4(g)``,
  ``g = (U phi / ||U phi||)(nu(<U phi, w_m>) - y)`` (``||g|| <= 2`` on the server's honest iterates);
* otherwise (samples the schedule leaves unused, or an epoch too short to fit) nothing
  data-dependent.

Every message has both fields (``X`` and ``g``); the field not used by the slot is zero, a
constant.  Each user sends one message through one Gaussian channel at noise multiplier
``sigma``: the guarantee is the exact Gaussian epsilon of ``sigma`` at ``delta``.

The server is untrusted (local model): it chooses the slot, ``U``, ``w`` and the billboard.  The
device accepts only public states of its declared space (:meth:`ChenLDPClient.public_space`:
slots of the schedule, symmetric finite ``U``, bounded ``w``, released estimates in the unit ball,
at most one per epoch) and clips its own message whatever the state: ``X`` to Frobenius norm
``||U||`` (:func:`~privbandits.regression.normalization.normalization_encode`), the prediction
``<U phi, w>`` into ``[-1, 1]`` and ``g`` to norm 2
(:func:`~privbandits.regression.reweighted.reweighted_gradient`).  Two users' encoded messages are
then at most ``sqrt(2) ||U||`` (normalization) or 4 (gradient) apart: one noise multiplier in units
of the noise it adds, ``1 / sigma`` (:meth:`ChenLDPClient.sensitivity`).  The server runs
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

from privbandits.algorithms.audit import (
    AuditCase,
    near_parallel_case,
    public_state,
    steep_direction,
)
from privbandits.algorithms.base import LocalAlgorithm, Server
from privbandits.algorithms.chen.device import GaussianDevice
from privbandits.algorithms.chen.jdp import ChenPrivate, check_problem
from privbandits.algorithms.chen.ldp_kernel import build_ldp_kernel
from privbandits.algorithms.chen.planning import Billboard, choose_planned
from privbandits.algorithms.chen.schedule import epoch_ends
from privbandits.algorithms.registry import register
from privbandits.core.messages import PrivatizedMessage, PublicState, check_payload
from privbandits.core.public_space import PublicField, PublicSpace
from privbandits.core.spec import EnvSpec
from privbandits.privacy.samplers import add_gaussian, add_symmetric_gaussian_rows
from privbandits.regression import ReweightedRegression
from privbandits.regression.links import LinkConstants
from privbandits.regression.matrices import EllipsoidProjector
from privbandits.regression.normalization import SQRT2, normalization_encode, spectral_step
from privbandits.regression.reweighted import GRADIENT_SENSITIVITY, reweighted_gradient

__all__ = ["PUBLIC_BOUND", "ChenLDP", "ChenLDPClient", "ChenLDPServer", "ldp_public_space"]

#: Slot codes of the public schedule.
IDLE, NORMALIZE, GRADIENT = 0, 1, 2
MECHANISM = "chen-ldp-gaussian"
#: Largest absolute entry of a matrix ``U`` or a weight ``w`` the device accepts.  The server's
#: honest states are far inside (``||U|| <= 1 / lambda``, ``||U w|| <= 1``); the bound keeps every
#: product the device computes finite.  The device's clips, not this bound, keep its guarantee.
PUBLIC_BOUND = 1e12


def ldp_public_space(epochs: int) -> PublicSpace:
    """Every public state a ``chen-ldp`` device accepts, with ``epochs`` released estimates at most.

    ``slot`` (R,) in {IDLE, NORMALIZE, GRADIENT}; ``U`` (R, d, d) symmetric and ``w`` (R, d) with
    entries in ``[-PUBLIC_BOUND, PUBLIC_BOUND]``; the billboard: ``n_boards`` (R,) in
    ``[0, epochs]``, ``board_theta`` (R, epochs, d) in the unit ball (the estimates ``U w`` of the
    projected descent), ``board_U`` (R, epochs, d, d) as ``U``, ``board_scale`` (R, epochs) >= 0.
    """
    J = int(epochs)
    return PublicSpace(
        (
            PublicField("slot", ("R",), kind="i", values=(IDLE, NORMALIZE, GRADIENT)),
            PublicField("U", ("R", "d", "d"), low=-PUBLIC_BOUND, high=PUBLIC_BOUND, symmetric=True),
            PublicField("w", ("R", "d"), low=-PUBLIC_BOUND, high=PUBLIC_BOUND),
            PublicField("n_boards", ("R",), kind="i", low=0, high=J),
            PublicField("board_theta", ("R", J, "d"), norm=1.0),
            PublicField(
                "board_U", ("R", J, "d", "d"), low=-PUBLIC_BOUND, high=PUBLIC_BOUND, symmetric=True
            ),
            PublicField("board_scale", ("R", J), low=0.0),
        )
    )


class ChenLDPClient(GaussianDevice):
    """User side: choose by Algorithm 4 on the public billboard, then send one Gaussian message.

    The message is :meth:`encode` (the fields ``X`` (d, d) and ``g`` (d,), flattened in that
    order, after the device's clips) plus :meth:`noise` (``SymPriv`` at std ``sigma sqrt(2) ||U||``
    on ``X`` in a normalization slot, ``Priv`` at std ``4 sigma`` on ``g`` in a gradient slot, no
    noise on the constant zero field); the sensitivity is ``1 / sigma`` in l2 (``sqrt(2) ||U|| /
    (sigma sqrt(2) ||U||)`` or ``4 / (4 sigma)``).  The public states are those of
    :func:`ldp_public_space`.

    Parameters
    ----------
    sigma
        As for :class:`~privbandits.algorithms.chen.device.GaussianDevice`.
    link : LinkConstants
        The link ``nu`` of the model.
    spanner_C : float
        Barycentric spanner constant of Algorithm 4.
    spec
        As for :class:`~privbandits.algorithms.chen.device.GaussianDevice`.
    epochs : int
        Number of epochs: the most estimates the billboard can hold.
    """

    algorithm = "chen-ldp"
    mechanism = MECHANISM

    def __init__(
        self, sigma: float, link: LinkConstants, spanner_C: float, spec: EnvSpec, epochs: int
    ) -> None:
        super().__init__(sigma, spec, ldp_public_space(epochs))
        self.link, self.spanner_C = link, spanner_C

    def _fields(
        self, pub: PublicState, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> dict[str, np.ndarray]:
        """The message before noise: ``X`` (R, d, d) and ``g`` (R, d), every clip applied."""
        R, d = contexts.shape[0], self.spec.d
        phi = contexts[np.arange(R), actions]
        slot = pub["slot"]
        X, g = np.zeros((R, d, d)), np.zeros((R, d))
        rows = np.flatnonzero(slot == NORMALIZE)
        if rows.size:
            X[rows] = normalization_encode(pub["U"][rows], phi[rows])
        rows = np.flatnonzero(slot == GRADIENT)
        if rows.size:
            g[rows] = reweighted_gradient(
                pub["U"][rows], pub["w"][rows], phi[rows], rewards[rows], self.link
            )
        return {"X": X, "g": g}

    def _scales(self, pub: PublicState) -> tuple[np.ndarray, np.ndarray]:
        """Noise std per user on ``X`` and on ``g`` (R,) each."""
        slot = pub["slot"]
        s_X, s_g = np.zeros(slot.shape[0]), np.zeros(slot.shape[0])
        rows = np.flatnonzero(slot == NORMALIZE)
        if rows.size:
            s_X[rows] = self.sigma * SQRT2 * np.linalg.norm(pub["U"][rows], 2, axis=(1, 2))
        s_g[slot == GRADIENT] = self.sigma * GRADIENT_SENSITIVITY
        return s_X, s_g

    def _stds(self, pub: PublicState) -> np.ndarray:
        """Gaussian, per user: ``sigma sqrt(2) ||U||`` on ``X`` (normalization slot), ``4 sigma``
        on ``g`` (gradient slot), 0 elsewhere."""
        s_X, s_g = self._scales(pub)
        d = self.spec.d
        return np.concatenate(
            [np.repeat(s_X[:, None], d * d, axis=1), np.repeat(s_g[:, None], d, axis=1)], axis=1
        )

    def _add_noise(
        self, pub: PublicState, fields: dict[str, np.ndarray], rng: np.random.Generator
    ) -> None:
        Xm, g = fields["X"], fields["g"]
        s_X, s_g = self._scales(pub)
        slot = pub["slot"]
        rows = np.flatnonzero(slot == NORMALIZE)
        if rows.size:  # SymPriv: the compiled symmetric sampler, std per user
            Z = np.zeros((rows.size,) + Xm.shape[1:])
            add_symmetric_gaussian_rows(rng, 1.0, Z)
            Xm[rows] += s_X[rows][:, None, None] * Z
        rows = np.flatnonzero(slot == GRADIENT)
        if rows.size:  # Priv
            z = np.zeros((rows.size, g.shape[1]))
            add_gaussian(rng, 1.0, z)
            g[rows] += s_g[rows][:, None] * z

    def _choose(
        self, pub: PublicState, contexts: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        return choose_planned(
            contexts,
            pub["board_theta"],
            pub["board_U"],
            pub["board_scale"],
            pub["n_boards"],
            self.link,
            self.spanner_C,
            rng,
        )


class ChenLDPServer(Server):
    """Untrusted server: runs the epoch's Algorithm 8 schedule on the users' messages only."""

    def __init__(
        self, R: int, spec: EnvSpec, reg: ReweightedRegression, ends: np.ndarray, min_fit: int
    ) -> None:
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
        return PublicState(
            {
                "slot": np.full(self.R, self.slot()),
                "U": self.U,
                "w": self.w,
                **self.billboard.public(),
            }
        )

    def receive(self, t: int, message: PrivatizedMessage) -> None:
        msg = check_payload(message, MECHANISM, {"X": (self.d, self.d), "g": (self.d,)}, self.R)
        slot, p, pl = self.slot(), self.t - self.start, self.plan
        if slot == NORMALIZE:
            self.accX += msg["X"]
            if (p + 1) % pl.N == 0:  # end of normalization batch k: Algorithm 1, lines 7-9
                for r in range(self.R):
                    self.U[r] = spectral_step(self.U[r], self.accX[r] / pl.N, self.lam)
                self.accX[:] = 0.0
                if p + 1 == self.reg.K * pl.N:
                    self.projectors = [EllipsoidProjector(self.U[r]) for r in range(self.R)]
        elif slot == GRADIENT:
            self.accg += msg["g"]
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
class ChenLDP(ChenPrivate, LocalAlgorithm):
    """Private linear contextual bandit by re-weighted regression, local DP (Algorithm 3 + Algorithm 8).

    Parameters
    ----------
    epsilon, delta, gaussian
        As for :class:`~privbandits.algorithms.chen.privacy.GaussianPrivacy`.
    c_b, first_epoch, min_fit, K_norm, c_lam, lam_shape, failure_prob, spanner_C
        As for :class:`~privbandits.algorithms.chen.jdp.ChenElimination` (``c_lam`` defaults to 2).
    """

    name = "chen-ldp"
    trust_model: ClassVar[str] = "local"
    paper = "Chen, Li, Rakhlin & Simchi-Levi 2025, Alg. 3 + Alg. 8 (LDP)"
    mode = "ldp"
    release_note = (
        "one Gaussian message per user: SymPriv of X at sensitivity sqrt(2)||U_k|| or Priv "
        "of g at sensitivity 4"
    )

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The gradient slot at an adversarial weight: both users' predictions clipped."""
        text = (
            "Chen et al. (2025) Alg. 8 client, gradient slot at an adversarial weight: clipped "
            "re-weighted gradient + Gaussian"
        )
        # U = I and w = P e_2 / (B sin a), far outside the descent's ellipsoid ||U w|| <= 1
        public = public_state(slot=GRADIENT, U=lambda spec: np.eye(spec.d), w=steep_direction)
        return (near_parallel_case(cls, public, text),)

    def reset(self, spec: Any, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        check_problem(self.name, spec)
        reg = self.regressor(spec)
        ends = epoch_ends(spec.horizon, self.first_epoch)
        self.client = ChenLDPClient(reg.sigma, reg.link, self.spanner_C, spec, len(ends))
        self.server = ChenLDPServer(self.R, spec, reg, ends, self.min_fit)
        #: The same round as compiled steps, for the compiled driver only
        #: (:mod:`privbandits.algorithms.chen.ldp_kernel`); the roles above serve every other path.
        self.compiled_kernel = build_ldp_kernel(
            reg, ends, self.min_fit, spec.d, self.R, self.spanner_C, spec.K
        )

    def estimate(self) -> np.ndarray | None:
        k = self.compiled_kernel
        if k.server[5].any():  # the compiled driver advanced this run
            return k.estimate()
        return self.server.estimate()
