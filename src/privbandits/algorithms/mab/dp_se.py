"""DP-SE: differentially private successive elimination (Sajed & Sheffet 2019).

Epoch ``e = 1, 2, ...`` on the surviving set ``S`` (all ``K`` arms at first), with
``Delta_e = 2^-e``:

    R_e = floor( max{ 32 ln(8|S|e^2/beta) / Delta_e^2,  8 ln(4|S|e^2/beta) / (eps Delta_e) } ) + 1
    pull every arm of S R_e times (round robin); mu_hat_a = mean of THIS epoch's R_e rewards
    mu_tilde_a = mu_hat_a + Lap(1 / (eps R_e))              (independent per arm)
    h_e = sqrt( ln(8|S|e^2/beta) / (2 R_e) ),   c_e = ln(4|S|e^2/beta) / (R_e eps)
    S <- { a in S : max_{b in S} mu_tilde_b - mu_tilde_a <= 2 h_e + 2 c_e }

and the surviving arm is played once one is left; ``beta = 1/T`` by default.  A mean of ``R_e``
rewards in ``[0, 1]`` has sensitivity ``1/R_e``, so each release is ``eps``-DP; every reward enters
one (epoch, arm) mean only (parallel composition), so the run is ``eps``-DP; the actions are
post-processing.  An epoch cut by the horizon releases nothing.

Rewards are clipped to the declared range and mapped to ``[0, 1]`` first.  Ties: the surviving
arm of lowest index with the fewest pulls this epoch is pulled next; an arm at exactly the
threshold is kept.

References
----------
Sajed & Sheffet (2019), "An Optimal Private Stochastic-MAB Algorithm Based on an Optimal Private
Stopping Rule", ICML (constants as in the public implementations of Azize et al.'s DP best-arm
identification and Chowdhury & Zhou's distributed-DP bandits, which agree).  Azize & Basu (2022),
section 5 (``beta = 1/T``).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms.audit import ReleaseCase
from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import CuratorKernel
from privbandits.algorithms.mab.calibration import DPSEConstants
from privbandits.algorithms.mab.private import unit_reward
from privbandits.algorithms.mab.successive_elimination import round_robin_arm
from privbandits.algorithms.registry import register
from privbandits.core.params import Epsilon, Optional, Real
from privbandits.core.spec import EnvSpec
from privbandits.privacy.accounting import PureDP, compose_parallel, to_guarantee
from privbandits.privacy.calibration import laplace_epsilon
from privbandits.privacy.ledger import Laplace, SelfComposed
from privbandits.privacy.samplers import laplace_draw

__all__ = ["DPSE", "epoch_length", "epoch_threshold"]


@nb.njit(cache=True)
def epoch_length(
    n_arms: float, e: float, epsilon: float, beta: float
) -> float:  # pragma: no cover - compiled
    """Pulls per surviving arm in epoch ``e``: ``floor(max{32 ln(8|S|e^2/beta)/Delta_e^2,
    8 ln(4|S|e^2/beta)/(eps Delta_e)}) + 1`` with ``Delta_e = 2^-e``."""
    delta_e = 2.0 ** (-e)
    stat = 32.0 * math.log(8.0 * n_arms * e * e / beta) / (delta_e * delta_e)
    priv = 8.0 * math.log(4.0 * n_arms * e * e / beta) / (epsilon * delta_e)
    return math.floor(max(stat, priv)) + 1.0


@nb.njit(cache=True)
def epoch_threshold(
    n_arms: float, e: float, R_e: float, epsilon: float, beta: float
) -> float:  # pragma: no cover - compiled
    """Elimination threshold ``2 h_e + 2 c_e``, ``h_e = sqrt(ln(8|S|e^2/beta)/(2 R_e))``,
    ``c_e = ln(4|S|e^2/beta)/(R_e eps)``."""
    h = math.sqrt(math.log(8.0 * n_arms * e * e / beta) / (2.0 * R_e))
    c = math.log(4.0 * n_arms * e * e / beta) / (R_e * epsilon)
    return 2.0 * h + 2.0 * c


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Round robin over the surviving arms: the one with the fewest pulls this epoch (lowest index)."""
    n, S, active, mu_tilde, info = state
    return round_robin_arm(n, active, r)


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Record the reward; at the end of an epoch release the private means and eliminate."""
    epsilon, beta, lo, hi = params
    n, S, active, mu_tilde, info = state
    K = n.shape[1]
    e, R_e = info[r, 0], info[r, 1]
    n[r, a] += 1.0
    S[r, a] += unit_reward(y, lo, hi)
    alive = 0
    for k in range(K):
        if active[r, k] > 0.0:
            alive += 1
            if n[r, k] < R_e:
                return  # one surviving arm left, or the epoch is not complete
    if alive <= 1:
        return
    scale = 1.0 / (epsilon * R_e)
    top = -np.inf
    for k in range(K):  # independent Lap(1/(eps R_e)) per surviving arm, in arm order
        if active[r, k] > 0.0:
            mu_tilde[r, k] = S[r, k] / R_e + laplace_draw(rng, scale)
            top = max(top, mu_tilde[r, k])
    thr = epoch_threshold(float(alive), e, R_e, epsilon, beta)
    survivors = 0
    for k in range(K):
        if active[r, k] > 0.0 and top - mu_tilde[r, k] > thr:
            active[r, k] = 0.0
        if active[r, k] > 0.0:
            survivors += 1
        n[r, k] = 0.0
        S[r, k] = 0.0
    info[r, 0] = e + 1.0
    info[r, 1] = epoch_length(float(survivors), e + 1.0, epsilon, beta) if survivors > 1 else np.inf
    info[r, 2] += 1.0  # releases of this replication (epochs completed)


@register
class DPSE(Curator):
    """DP-SE, private successive elimination (Sajed & Sheffet 2019): pure eps-DP, central.

    Parameters
    ----------
    epsilon : float
        Privacy budget of the whole run (pure DP, trusted learner).
    beta : float, optional
        Confidence ``beta`` of the epoch lengths and thresholds (default ``1/T``, as in Azize &
        Basu 2022, section 5).

    References
    ----------
    Sajed & Sheffet (2019), ICML; Azize & Basu (2022), section 5.
    """

    name = "dp-se"
    trust_model = "central"
    twin = "successive-elimination"
    links = ("*",)
    paper = "Sajed & Sheffet 2019"
    constraints: ClassVar = {
        "epsilon": Epsilon,
        "beta": Optional(Real(0.0, 1.0, low_open=True, high_open=True)),
    }
    test_params: ClassVar = ({"epsilon": 1.0}, {"epsilon": 5.0, "beta": 0.5})
    test_envs: ClassVar = ("finite",)

    @classmethod
    def audit_cases(cls) -> tuple[ReleaseCase, ...]:
        """The private arm means released at the end of an epoch (Laplace, sensitivity 1/R_e)."""
        from privbandits.algorithms.mab.audit import dp_se_release_spec

        return (ReleaseCase("dp-se-release", dp_se_release_spec),)

    def __init__(self, epsilon: float = 1.0, beta: float | None = None) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """``beta``, the first epoch length, and the accounted guarantee of the epoch releases."""
        K, T = spec.K, spec.horizon
        beta = self.beta if self.beta is not None else 1.0 / max(T, 2)
        R_1 = float(epoch_length(float(K), 1.0, self.epsilon, beta))
        # one release: a mean of R_e rewards in [0, 1] (sensitivity 1/R_e) plus Lap(1/(eps R_e));
        # its epsilon does not depend on R_e, shown at R_1
        release = PureDP(laplace_epsilon(1.0 / (self.epsilon * R_1), 1.0 / R_1))
        total = compose_parallel([release])
        notes = (
            f"DP-SE (Sajed & Sheffet 2019): per (epoch, arm) the mean of that epoch's R_e rewards clipped "
            f"to [{spec.reward_range[0]:g}, {spec.reward_range[1]:g}] and mapped to [0, 1], plus "
            f"Lap(1/(eps R_e)) -> {release.epsilon:.6g}-DP each; disjoint rewards (parallel composition); "
            "neighbouring: one reward changed"
        )
        scale_1 = 1.0 / (self.epsilon * R_1)
        ledger = SelfComposed(
            Laplace(scale_1, 1.0 / R_1, "an (epoch, arm) mean of R_1 rewards in [0, 1]"),
            K,
            "disjoint",
            what="releases on disjoint rewards (every epoch's has the same epsilon)",
        )
        return Calibration(
            to_guarantee(total, "central", "user", notes, ledger=ledger),
            preset="strict",
            requested=(self.epsilon, 0.0),
            constants=DPSEConstants(beta, R_1, scale_1),
        )

    def build_kernel(self) -> CuratorKernel:
        R, K = self.R, self.spec.K
        c = self.calibration.typed(DPSEConstants)
        lo, hi = (float(v) for v in self.spec.reward_range)
        info = np.zeros((R, 3))
        info[:, 0] = 1.0
        info[:, 1] = c.R_1
        state = (np.zeros((R, K)), np.zeros((R, K)), np.ones((R, K)), np.zeros((R, K)), info)
        return CuratorKernel(
            _select, _update, (float(self.epsilon), c.beta, lo, hi), state, allocates=False
        )

    def surviving(self) -> np.ndarray:
        """Which arms are still in the race, ``(R, K)`` boolean."""
        assert self.kernel is not None
        return self.kernel.state[2] > 0.0

    def private_means(self) -> np.ndarray:
        """The last released private means ``mu_tilde`` (rewards in ``[0, 1]``), ``(R, K)``."""
        assert self.kernel is not None
        return self.kernel.state[3].copy()

    def epochs_completed(self) -> np.ndarray:
        """Number of completed (released) epochs per replication, ``(R,)``."""
        assert self.kernel is not None
        return self.kernel.state[4][:, 2].copy()
