"""Algorithm 3 of Chen et al. (2025) in the joint model, and its non-private twin.

Doubling epochs; in epoch ``j`` every user's action is drawn from ``Confidence_based_Planning``
(Algorithm 4) on the estimates released at the end of epochs ``1..j-1`` (the billboard); at the
end of epoch ``j`` the curator fits ``JDP_L1_Regression`` (Algorithm 2) on that epoch's data only
and releases the estimate ``(theta_hat, U, e_bar)``.

Privacy (joint DP, billboard lemma): every user's data enter exactly one release (their epoch's
estimate), the releases of different epochs read disjoint users, and each user's action is a
function of the billboard and the user's own context.  Every release inside Algorithm 2 is a
Gaussian mechanism at the same noise multiplier ``sigma`` per unit of sensitivity, so the
guarantee is the exact Gaussian epsilon of ``sigma`` at ``delta`` (parallel composition); each
fit's ledger is checked against it.

Choices (reconstruction, see :mod:`privbandits.regression.reweighted` for the estimator's):
``T_1 = first_epoch`` and doubling, per-epoch failure probability ``delta_f / J`` with
``delta_f = 1/T`` by default, epochs shorter than ``min_fit`` release nothing (the trivial width 2
eliminates nothing), rewards clipped into ``[-1, 1]``, the width multiplier ``c_b`` (1 is the
theory-valid width; smaller values eliminate earlier and must be checked for coverage).

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), "Near-optimal private learning in linear contextual bandits",
arXiv:2502.13115v1, Section 5 (Algorithms 3 and 4) and Section 4 (Algorithm 2).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.audit import ReleaseCase
from privbandits.algorithms.calibration import NON_PRIVATE_CALIBRATION, Calibration
from privbandits.algorithms.chen.calibration import ChenConstants
from privbandits.algorithms.chen.jdp_kernel import build_jdp_kernel
from privbandits.algorithms.chen.planning import Billboard, Board
from privbandits.algorithms.chen.privacy import PRIVACY_CONSTRAINTS, GaussianPrivacy
from privbandits.algorithms.chen.schedule import EpochCurator, epoch_ends
from privbandits.algorithms.registry import register
from privbandits.core.errors import ValidationError
from privbandits.core.params import Choice, Int, Optional, Positive, Real
from privbandits.core.spec import EnvSpec
from privbandits.regression import ReweightedRegression
from privbandits.regression.releases import noise_multiplier

__all__ = [
    "ChenElimination",
    "ChenJDP",
    "ChenPrivate",
    "check_problem",
    "epoch_regressor",
    "resolved_constants",
]

COMMON_CONSTRAINTS = {
    "c_b": Positive,
    "first_epoch": Int(2, None),
    "min_fit": Int(1, None),
    "K_norm": Int(1, 64),
    "c_lam": Optional(Positive),
    "lam_shape": Choice("paper", "bernstein"),
    "failure_prob": Optional(Real(0.0, 1.0, low_open=True, high_open=True)),
    "spanner_C": Real(1.0, None, low_open=True),
}


def check_problem(name: str, spec: EnvSpec) -> None:
    """The model of Chen et al. (2025), Section 1.2: features in the unit ball, ``||theta*|| <= 1``."""
    if spec.context_bound > 1.0 or spec.theta_bound > 1.0:
        raise ValidationError(
            f"{name} needs context_bound <= 1 and theta_bound <= 1 (features and parameter in "
            f"the unit ball), got context_bound={spec.context_bound:g}, "
            f"theta_bound={spec.theta_bound:g}"
        )


def epoch_regressor(
    alg: Any, spec: EnvSpec, epsilon: float, delta: float, gaussian: str
) -> ReweightedRegression:
    """The per-epoch estimator of ``alg`` (its ``mode``, ``first_epoch``, ``failure_prob``, ...) on ``spec``."""
    J = len(epoch_ends(spec.horizon, alg.first_epoch))
    fp = (1.0 / max(spec.horizon, 2)) if alg.failure_prob is None else alg.failure_prob
    return ReweightedRegression(
        epsilon,
        delta,
        mode=alg.mode,
        link=spec.link,
        failure_prob=fp / J,
        K=alg.K_norm,
        c_lam=alg.c_lam,
        lam_shape=alg.lam_shape,
        c_b=alg.c_b,
        calibration=gaussian,
    )


def resolved_constants(alg: Any, spec: EnvSpec, reg: ReweightedRegression) -> ChenConstants:
    """The constants a run of ``alg`` on ``spec`` resolves (stored with every result)."""
    ends = epoch_ends(spec.horizon, alg.first_epoch)
    return ChenConstants(
        sigma=reg.sigma,
        epoch_ends=tuple(int(e) for e in ends),
        failure_prob_per_epoch=reg.failure_prob,
        c_b=alg.c_b,
        c_lam=reg.c_lam,
        L_nu=reg.link.L_nu,
        mu=reg.link.mu,
    )


@register
class ChenElimination(EpochCurator):
    """Epoch-based elimination with re-weighted regression, non-private twin (``epsilon = inf``).

    Parameters
    ----------
    c_b : float
        Width multiplier of the confidence widths (1 = theory).
    first_epoch : int
        Length ``T_1`` of the first epoch (epochs then double).
    min_fit : int
        Epochs with fewer users release nothing.
    K_norm : int
        Spectral iterations of Algorithm 1.
    c_lam : float, optional
        ``lambda = c_lam eps_N`` (default 1).
    lam_shape : {"paper", "bernstein"}
        Form of ``eps_N``.
    failure_prob : float, optional
        Total failure probability ``delta_f`` of the widths (default ``1/T``), split over epochs.
    spanner_C : float
        Barycentric spanner constant ``C > 1``.
    """

    name = "chen-elim"
    trust_model: ClassVar[str] = "none"
    links = ("identity", "logistic", "probit")
    paper = "Chen, Li, Rakhlin & Simchi-Levi 2025, Alg. 3 (non-private)"
    constraints = COMMON_CONSTRAINTS
    test_params = (
        {"first_epoch": 32, "min_fit": 30},
        {"first_epoch": 16, "min_fit": 16, "c_b": 0.1},
    )
    mode = "jdp"

    def __init__(
        self,
        c_b: float = 1.0,
        first_epoch: int = 1024,
        min_fit: int = 1000,
        K_norm: int = 5,
        c_lam: float | None = None,
        lam_shape: str = "paper",
        failure_prob: float | None = None,
        spanner_C: float = 2.0,
    ) -> None:
        pass

    # -- privacy --------------------------------------------------------------------------------
    def regressor(self, spec: EnvSpec) -> ReweightedRegression:
        """The per-epoch estimator (Algorithm 2) on problem ``spec``."""
        return epoch_regressor(self, spec, math.inf, 1e-5, "analytic")

    def _resolved(self, spec: EnvSpec) -> ChenConstants:
        return resolved_constants(self, spec, self.regressor(spec))

    def calibrate(self, spec: EnvSpec) -> Calibration:
        return Calibration(NON_PRIVATE_CALIBRATION.guarantee, constants=self._resolved(spec))

    # -- lifecycle ------------------------------------------------------------------------------
    def reset(self, spec: Any, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        check_problem(self.name, spec)
        self.ends = epoch_ends(spec.horizon, self.first_epoch)
        self.reg = self.regressor(spec)
        self.billboard = Billboard(self.R, len(self.ends), spec.d)
        self._start_epochs(self.ends, spec.d)
        #: The same round as compiled steps, for the compiled driver only
        #: (:mod:`privbandits.algorithms.chen.jdp_kernel`); the numpy steps serve every other path.
        self.compiled_kernel = build_jdp_kernel(
            self.reg, self.ends, self.min_fit, spec.d, self.R, self.spanner_C, spec.K
        )

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        return self.billboard.choose(contexts, self.reg.link, self.spanner_C, self.streams.policy)

    def _end_epoch(self, n: int) -> None:
        """Fit Algorithm 2 on the epoch's data of every replication and post the estimates (an
        epoch shorter than ``min_fit`` releases nothing)."""
        if n < self.min_fit:
            return
        for r in range(self.R):
            est = self.reg.fit(self.X[r, :n], self.y[r, :n], self.streams.server)
            if est.width_matrix is None:  # the trivial estimate: too few samples to fit
                continue
            self._check_release(est.guarantee)
            self.billboard.post(r, est.theta, est.width_matrix, est.width_scale)

    @property
    def boards(self) -> list[list[Board]]:
        """The released estimates of every replication (the billboard, as :class:`Board` objects)."""
        return [self.billboard.boards(r, self.reg.link) for r in range(self.R)]

    def estimate(self) -> np.ndarray:
        k = self.compiled_kernel
        if k.state[7].any():  # the compiled driver advanced this run
            return k.estimate()  # type: ignore[return-value]
        return self.billboard.latest()


class ChenPrivate(GaussianPrivacy):
    """The parameters and the calibration the private algorithms of Algorithm 3 share
    (``chen-jdp``, ``chen-ldp``): every user in one Gaussian release at the noise multiplier of
    ``(epsilon, delta)``, the per-epoch estimator at that level."""

    links = ("identity", "logistic", "probit")
    constraints = {**COMMON_CONSTRAINTS, **PRIVACY_CONSTRAINTS}
    test_params = (
        {"first_epoch": 32, "min_fit": 30},
        {"epsilon": 0.5, "first_epoch": 16, "min_fit": 16, "c_b": 0.1, "gaussian": "classic"},
    )
    mode: ClassVar[str]

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        c_b: float = 1.0,
        first_epoch: int = 1024,
        min_fit: int = 1000,
        K_norm: int = 5,
        c_lam: float | None = None,
        lam_shape: str = "paper",
        failure_prob: float | None = None,
        spanner_C: float = 2.0,
        gaussian: str = "analytic",
    ) -> None:
        noise_multiplier(epsilon, delta, gaussian)  # classic with epsilon >= 1 raises here

    def regressor(self, spec: EnvSpec) -> ReweightedRegression:
        """The per-epoch estimator (Algorithm 2 or 8, by ``mode``) at this privacy level on ``spec``."""
        return epoch_regressor(self, spec, self.epsilon, self.delta, self.gaussian)

    def _resolved(self, spec: EnvSpec) -> ChenConstants:
        return resolved_constants(self, spec, self.regressor(spec))


@register
class ChenJDP(ChenPrivate, ChenElimination):
    """Private linear contextual bandit by re-weighted regression, joint DP (Algorithm 3 + Algorithm 2).

    Parameters
    ----------
    epsilon, delta, gaussian
        As for :class:`~privbandits.algorithms.chen.privacy.GaussianPrivacy`.
    c_b, first_epoch, min_fit, K_norm, c_lam, lam_shape, failure_prob, spanner_C
        As for :class:`ChenElimination`.
    """

    name = "chen-jdp"
    trust_model: ClassVar[str] = "joint"
    paper = "Chen, Li, Rakhlin & Simchi-Levi 2025, Alg. 3 + Alg. 2 (JDP)"
    release_note = (
        "every user in one Gaussian release, disjoint epochs and batches: parallel "
        "composition; actions by the billboard lemma"
    )

    @classmethod
    def audit_cases(cls) -> tuple[ReleaseCase, ...]:
        """The Gaussian releases of the per-epoch fit (Algorithm 1's normalization)."""
        from privbandits.algorithms.chen.audit import chen_jdp_release_spec

        return (ReleaseCase("chen-jdp-release", chen_jdp_release_spec),)
