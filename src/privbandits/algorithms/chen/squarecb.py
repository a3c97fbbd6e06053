"""SquareCB with the dimension-free private regression oracles (Chen et al. 2025, Section 6.2).

Epochs ``tau_m = min(T, 2^(m + m0))``; in epoch ``m >= 2`` the oracle is fitted on the data of
epoch ``m - 1`` only (FALCON-style epoching), ``f_hat_m(x, a) = clip(<phi(x, a), theta_hat_m>, -1, 1)``
and each user draws its action by inverse-gap weighting

    p(a) = 1 / (A + gamma_m (s_best - s_a))  (a != best),   p(best) = 1 - sum of the others,

with ``gamma_m = c_gamma sqrt(A / E(n_{m-1}))`` for the oracle's squared-error rate ``E(n)``:
``sqrt(ln(n) ln(1/delta_f)/n) + (sigma/n)^(2/3)`` for Algorithm 5 (JDP; ``sigma = 0`` for the
non-private oracle).  The first epoch plays ``f_hat = 0`` (uniform).  Joint DP by the billboard
lemma: each user's data enter one release (their epoch's output-perturbed estimate).

References
----------
Foster & Rakhlin (2020), "Beyond UCB: optimal and efficient contextual bandits with regression
oracles", ICML (SquareCB, inverse-gap weighting); Simchi-Levi & Xu (2020) (FALCON epochs);
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Section 6.2.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from privbandits.algorithms.audit import ReleaseCase
from privbandits.algorithms.calibration import NON_PRIVATE_CALIBRATION, Calibration
from privbandits.algorithms.chen.calibration import SquareCBConstants
from privbandits.algorithms.chen.privacy import PRIVACY_CONSTRAINTS, GaussianPrivacy
from privbandits.algorithms.chen.schedule import EpochCurator
from privbandits.algorithms.chen.squarecb_kernel import build_squarecb_kernel, igw_choose_rows
from privbandits.algorithms.registry import register
from privbandits.core.params import Int, Optional, Positive, Real
from privbandits.core.spec import EnvSpec
from privbandits.regression import ImproperBatchSGD
from privbandits.regression.releases import noise_multiplier

__all__ = [
    "SQUARECB_CONSTRAINTS",
    "SquareCB",
    "SquareCBJDP",
    "igw_probabilities",
    "igw_sample",
    "squarecb_epoch_ends",
]

#: Constraints of the parameters every SquareCB variant shares.
SQUARECB_CONSTRAINTS = {
    "c_gamma": Positive,
    "m0": Int(1, 30),
    "failure_prob": Optional(Real(0.0, 1.0, low_open=True, high_open=True)),
}


def igw_probabilities(scores: np.ndarray, gamma: float) -> np.ndarray:
    """Inverse-gap weighting over the actions of ``scores`` (A,), ties to the lowest index."""
    A = scores.shape[0]
    best = int(np.argmax(scores))
    p = 1.0 / (A + gamma * (scores[best] - scores))
    p[best] = 0.0
    p[best] = 1.0 - p.sum()
    return p


def igw_sample(scores: np.ndarray, gamma: float, u: float) -> int:
    """The action of :func:`igw_probabilities` at the uniform draw ``u`` in [0, 1) (inverse CDF)."""
    cdf = np.cumsum(igw_probabilities(scores, gamma))
    return min(int(np.searchsorted(cdf, u * cdf[-1], side="right")), scores.size - 1)


def squarecb_epoch_ends(T: int, m0: int) -> np.ndarray:
    """``tau_m = min(T, 2^(m + m0))``, ``m = 1, 2, ...`` until ``T``."""
    ends = [min(T, 2 ** (1 + m0))]
    while ends[-1] < T:
        ends.append(min(T, 2 * ends[-1]))
    return np.array(ends, dtype=np.int64)


@register
class SquareCB(EpochCurator):
    """SquareCB with the non-private improper batched SGD oracle (noiseless Algorithm 5).

    Parameters
    ----------
    c_gamma : float
        Learning-rate constant of ``gamma_m``.
    m0 : int
        First epoch length ``2^(m0 + 1)``.
    failure_prob : float, optional
        ``delta_f`` in the rate ``E(n)`` (default ``1/T``).
    """

    name = "squarecb"
    trust_model: ClassVar[str] = "none"
    #: The oracles are improper (Chen et al. 2025, Prop. 6.1): the estimate may leave the unit ball.
    improper_estimate: ClassVar[bool] = True
    paper = "Foster & Rakhlin 2020 (SquareCB); oracle of Chen et al. 2025, Alg. 5 without noise"
    constraints = SQUARECB_CONSTRAINTS
    test_params = ({"m0": 4}, {"m0": 3, "c_gamma": 0.5})

    def __init__(
        self, c_gamma: float = 1.0, m0: int = 9, failure_prob: float | None = None
    ) -> None:
        pass

    def oracle(self) -> ImproperBatchSGD:
        return ImproperBatchSGD(math.inf)

    def rate(self, n: int, T: int) -> float:
        """The oracle's squared-error rate ``E(n)``."""
        fp = (1.0 / max(T, 2)) if self.failure_prob is None else self.failure_prob
        sigma = self.oracle().sigma
        return math.sqrt(math.log(max(n, 2)) * math.log(1.0 / fp) / n) + (sigma / n) ** (2.0 / 3.0)

    def _resolved(self, spec: EnvSpec) -> SquareCBConstants:
        ends = squarecb_epoch_ends(spec.horizon, self.m0)
        return SquareCBConstants(
            epoch_ends=tuple(int(e) for e in ends),
            sigma=self.oracle().sigma,
            c_gamma=self.c_gamma,
        )

    def calibrate(self, spec: EnvSpec) -> Calibration:
        return Calibration(NON_PRIVATE_CALIBRATION.guarantee, constants=self._resolved(spec))

    def reset(self, spec: Any, replications: int, streams: Any) -> None:
        super().reset(spec, replications, streams)
        self._start_epochs(squarecb_epoch_ends(spec.horizon, self.m0), spec.d)
        self.theta = np.zeros((self.R, spec.d))
        self.gamma = 0.0
        self.orc = self.oracle()
        #: The same round as compiled steps, for the compiled driver only
        #: (:mod:`privbandits.algorithms.chen.squarecb_kernel`); the numpy steps serve every other path.
        self.compiled_kernel = build_squarecb_kernel(
            self.orc, self.ends, self.gamma_for, spec.d, self.R, spec.K
        )

    def gamma_for(self, n: int) -> float:
        """The IGW rate ``gamma = c_gamma sqrt(A / E(n))`` after an epoch of ``n`` users."""
        return self.c_gamma * math.sqrt(self.spec.K / self.rate(n, self.spec.horizon))

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        out = np.empty(self.R, dtype=np.int64)
        u = np.asarray(self.streams.policy.random(self.R), dtype=float)
        igw_choose_rows(
            np.ascontiguousarray(contexts, dtype=float),
            self.theta,
            np.full(self.R, float(self.gamma)),
            u,
            out,
        )
        return out

    def _end_epoch(self, n: int) -> None:
        """Fit the oracle on the epoch's data of every replication; set the next epoch's rate."""
        for r in range(self.R):
            est = self.orc.fit(self.X[r, :n], self.y[r, :n], self.streams.server)
            self._check_release(est.guarantee)
            self.theta[r] = est.theta
        self.gamma = self.gamma_for(n)

    def estimate(self) -> np.ndarray:
        k = self.compiled_kernel
        if k.state[5].any():  # the compiled driver advanced this run
            return k.estimate()  # type: ignore[return-value]
        return self.theta.copy()


@register
class SquareCBJDP(GaussianPrivacy, SquareCB):
    """SquareCB on ``JDP_Improper_BatchSGD`` (Chen et al. 2025, Algorithm 5): joint DP, dimension-free.

    Parameters
    ----------
    epsilon, delta, gaussian
        As for :class:`~privbandits.algorithms.chen.privacy.GaussianPrivacy`.
    c_gamma, m0, failure_prob
        As for :class:`SquareCB`.
    """

    name = "squarecb-jdp"
    trust_model: ClassVar[str] = "joint"
    paper = "Chen, Li, Rakhlin & Simchi-Levi 2025, Sec. 6.2: SquareCB + Alg. 5 (JDP)"
    constraints = {**SQUARECB_CONSTRAINTS, **PRIVACY_CONSTRAINTS}
    release_note = (
        "each user in one output-perturbed estimate, disjoint epochs; actions by the "
        "billboard lemma"
    )

    @classmethod
    def audit_cases(cls) -> tuple[ReleaseCase, ...]:
        """The per-epoch oracle's output perturbation (Algorithm 5)."""
        from privbandits.algorithms.chen.audit import squarecb_jdp_release_spec

        return (ReleaseCase("squarecb-jdp-release", squarecb_jdp_release_spec),)

    test_params = ({"m0": 4}, {"m0": 3, "epsilon": 0.5, "gaussian": "classic"})

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        c_gamma: float = 1.0,
        m0: int = 9,
        failure_prob: float | None = None,
        gaussian: str = "analytic",
    ) -> None:
        noise_multiplier(epsilon, delta, gaussian)

    def oracle(self) -> ImproperBatchSGD:
        return ImproperBatchSGD(self.epsilon, self.delta, calibration=self.gaussian)
