"""DP-UCB: private UCB with one tree-based counter per arm (Mishra & Thakurta 2015, Algorithm 1).

A trusted learner keeps, for every arm ``a``, a binary-tree counter over the rewards of that arm
(one leaf per pull, horizon ``T`` leaves) and reads the arm's total reward ``r_a(t)`` only through
the counter's private prefix sum.  After one pull of every arm it plays

    a_t = argmax_a  r_a(t) / n_a + sqrt(2 ln t / n_a) + Gamma / n_a,
    Gamma = k ln^2 T ln(k T ln T / gamma) / eps          ("confidence relaxation", line 7),

where Lemma 5 bounds every counter's error by ``Gamma`` with probability ``1 - gamma``.  Each
counter runs at ``eps_0 = eps / k`` with node noise ``Lap(h / eps_0)``, ``h = bit_length(T)`` the
number of nodes a leaf enters; the ``k`` counters compose to ``eps`` (basic composition, the
paper's argument).  ``per_arm_budget="full"`` runs every counter at ``eps``: a reward enters the
counter of the arm it was drawn for only, so the counters compose in parallel (this library's
argument, labelled so in the guarantee; it is the budget of a public Python port).

Rewards are clipped to the declared range and mapped to ``[0, 1]`` before they enter a counter.
Ties of the index go to the lowest arm index.

References
----------
Mishra & Thakurta (2015), "(Nearly) Optimal Differentially Private Stochastic Multi-Arm Bandits",
UAI, Algorithm 1, Lemma 5, Theorem 4.  Chan, Shi & Song (2011), "Private and continual release of
statistics".  Azize & Basu (2022), section 5 (``gamma = 0.1`` in their experiments).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms.audit import ReleaseCase
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import CuratorKernel
from privbandits.algorithms.mab.calibration import DPUCBConstants
from privbandits.algorithms.mab.private import (
    ArmCurator,
    argmax_first,
    laplace_tree_insert,
    tree_prefix_sum,
    unit_reward,
)
from privbandits.algorithms.registry import register
from privbandits.core.params import Choice, Epsilon, Real
from privbandits.core.spec import EnvSpec
from privbandits.privacy.accounting import PureDP, compose_basic, compose_parallel, to_guarantee
from privbandits.privacy.calibration import laplace_epsilon
from privbandits.privacy.ledger import Laplace, SelfComposed
from privbandits.privacy.tree import max_nodes_per_leaf

__all__ = ["DPUCB", "confidence_relaxation"]


def confidence_relaxation(k: int, T: int, epsilon: float, gamma: float) -> float:
    """``Gamma = k ln^2 T ln(k T ln T / gamma) / eps`` (Mishra & Thakurta 2015, Algorithm 1, line 7;
    natural logarithms)."""
    lnT = math.log(T)
    return k * lnT * lnT * math.log(k * T * lnT / gamma) / epsilon


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Lines 2-3: each arm once (in index order); lines 8-9: the largest private index (lowest arm
    on ties)."""
    gamma_relax = params[1]
    n, alpha, noisy, scores = state
    K = n.shape[1]
    for a in range(K):
        if n[r, a] == 0.0:
            return a
    log_t = math.log(max(t + 1.0, 1.0))
    for a in range(K):
        na = n[r, a]
        scores[r, a] = (
            tree_prefix_sum(noisy[r, a], int(na)) / na
            + math.sqrt(2.0 * log_t / na)
            + gamma_relax / na
        )
    return argmax_first(scores[r], n[r])


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Line 10: insert the (clipped, [0, 1]) reward into the arm's tree with node noise ``Lap(h/eps_0)``."""
    scale, _g, lo, hi = params
    n, alpha, noisy, scores = state
    n[r, a] += 1.0
    laplace_tree_insert(alpha[r, a], noisy[r, a], int(n[r, a]), unit_reward(y, lo, hi), scale, rng)


@register
class DPUCB(ArmCurator):
    """DP-UCB with tree-based counters (Mishra & Thakurta 2015, Algorithm 1): pure eps-DP, central.

    Parameters
    ----------
    epsilon : float
        Privacy budget of the whole run (pure DP, trusted learner).
    gamma : float
        Failure probability ``gamma`` of the confidence relaxation ``Gamma`` (0.1 as in Azize &
        Basu 2022, section 5).
    per_arm_budget : {"split", "full"}
        ``split``: every arm's counter at ``eps / k`` (the paper); ``full``: every counter at
        ``eps`` (parallel composition across arms; this library's argument).

    References
    ----------
    Mishra & Thakurta (2015), UAI, Algorithm 1, Lemma 5, Theorem 4.
    """

    name = "dp-ucb"
    trust_model = "central"
    twin = "ucb1"
    links = ("*",)
    paper = "Mishra & Thakurta 2015 (Alg. 1)"
    constraints: ClassVar = {
        "epsilon": Epsilon,
        "gamma": Real(0.0, 1.0, low_open=True, high_open=True),
        "per_arm_budget": Choice("split", "full"),
    }
    test_params: ClassVar = (
        {"epsilon": 1.0},
        {"epsilon": 0.5, "gamma": 0.5, "per_arm_budget": "full"},
    )
    test_envs: ClassVar = ("finite",)

    @classmethod
    def audit_cases(cls) -> tuple[ReleaseCase, ...]:
        """The private prefix sums of an arm's tree counter (per_arm_budget='full')."""
        from privbandits.algorithms.mab.audit import dp_ucb_release_spec

        return (ReleaseCase("dp-ucb-tree", dp_ucb_release_spec),)

    def __init__(
        self, epsilon: float = 1.0, gamma: float = 0.1, per_arm_budget: str = "split"
    ) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Node scale ``h / eps_0``, ``Gamma``, and the accounted guarantee of the ``k`` counters."""
        K, T = spec.K, spec.horizon
        h = max_nodes_per_leaf(T)
        eps0 = self.epsilon / K if self.per_arm_budget == "split" else self.epsilon
        scale = h / eps0
        node = PureDP(laplace_epsilon(scale, 1.0))  # one node, a [0, 1] leaf
        tree = compose_basic([node] * h)  # a leaf enters h nodes
        if self.per_arm_budget == "split":
            total = compose_basic([tree] * K)
            how = f"{K} trees composed (basic composition, Mishra & Thakurta 2015)"
        else:
            total = compose_parallel([tree] * K)
            how = (
                f"{K} trees composed in parallel (each reward enters the tree of its own arm only; "
                "this library's argument, not the paper's)"
            )
        gamma_relax = confidence_relaxation(K, max(T, 2), self.epsilon, self.gamma)
        notes = (
            f"DP-UCB (Mishra & Thakurta 2015, Alg. 1): per-arm binary-tree counters over rewards clipped "
            f"to [{spec.reward_range[0]:g}, {spec.reward_range[1]:g}] and mapped to [0, 1], {h} nodes per "
            f"leaf, node noise Lap({scale:.6g}) -> {tree.epsilon:.6g}-DP per tree; {how}; "
            "neighbouring: one reward changed"
        )
        constants = DPUCBConstants(eps0, h, scale, gamma_relax, self.gamma, self.per_arm_budget)
        # a leaf enters h nodes of its arm's tree; the K trees by the per-arm rule
        tree_events = SelfComposed(Laplace(scale, 1.0, "a tree node (reward in [0, 1])"), h)
        rule = "basic" if self.per_arm_budget == "split" else "disjoint"
        ledger = SelfComposed(tree_events, K, rule, what="the K arms' counters")
        return Calibration(
            to_guarantee(total, "central", "user", notes, ledger=ledger),
            preset="strict",
            requested=(self.epsilon, 0.0),
            constants=constants,
        )

    def build_kernel(self) -> CuratorKernel:
        R, K = self.R, self.spec.K
        c = self.calibration.typed(DPUCBConstants)
        h = c.levels
        lo, hi = (float(v) for v in self.spec.reward_range)
        state = (np.zeros((R, K)), np.zeros((R, K, h)), np.zeros((R, K, h)), np.zeros((R, K)))
        params = (c.node_scale, c.Gamma, lo, hi)
        return CuratorKernel(_select, _update, params, state, allocates=False)

    def private_sums(self) -> np.ndarray:
        """The counters' current private prefix sums ``r_a(t)`` (rewards in ``[0, 1]``), ``(R, K)``."""
        assert self.kernel is not None
        n, _alpha, noisy, _s = self.kernel.state
        out = np.zeros(n.shape)
        for r in range(n.shape[0]):
            for a in range(n.shape[1]):
                out[r, a] = tree_prefix_sum(noisy[r, a], int(n[r, a]))
        return out
