"""AdaP-UCB and AdaP-KLUCB: private optimism with per-arm doubling episodes (Azize & Basu 2022,
Algorithm 1, eq. 7).

Play each arm once (each first reward released as ``r + Lap(1/eps)``); then for episodes
``l = 1, 2, ...``: at ``t_l = t + 1`` pick ``A_l = argmax_a I_a^eps(t_l - 1, alpha)`` and play it
until its pull count doubles; at the end of the episode release its private mean over the
episode's ``len`` rewards only,

    mu_tilde_A = (sum of the episode's rewards) / len + Lap(1 / (eps len)).

Indices, with ``len_a`` the length of arm ``a``'s last released episode (``N_a / 2`` after the
first one, 1 after the initial pull):

    AdaP-UCB    I_a = mu_tilde_a + sqrt(alpha ln(2 t_l) / (2 len_a)) + alpha ln(t_l) / (eps len_a)
    AdaP-KLUCB  I_a = max{ q in [0, 1] : d(mu_breve_a, q) <= alpha ln(t_l) / len_a },
                mu_breve_a = clip_[0,1](mu_tilde_a + alpha ln(t_l) / (eps len_a)),

``d`` the Bernoulli KL divergence (bisection on ``[mu_breve, 1]``, 50 halvings).  Eq. (7) is kept
as printed in the available text (``ln(2 t_l)`` inside the root, ``ln t_l`` elsewhere).  Each
private mean uses its own episode's rewards in ``[0, 1]`` (sensitivity ``1/len``), episodes are
disjoint (Lemma 1, parallel composition; Theorem 6): the run is ``eps``-DP.  An episode cut by the
horizon releases nothing.  Rewards are clipped to the declared range and mapped to ``[0, 1]``;
ties go to the lowest arm index.

References
----------
Azize & Basu (2022), "When Privacy Meets Partial Information: A Refined Analysis of Differentially
Private Bandits", NeurIPS, Algorithm 1, eq. (7), Lemma 1, Theorems 6-8 (the text available is the
anonymous submission).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms.audit import ReleaseCase
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import CuratorKernel
from privbandits.algorithms.mab.calibration import AdaPConstants
from privbandits.algorithms.mab.private import ArmCurator, argmax_first, unit_reward
from privbandits.algorithms.registry import register
from privbandits.core.params import Epsilon, Real
from privbandits.core.spec import EnvSpec
from privbandits.privacy.accounting import PureDP, compose_parallel, to_guarantee
from privbandits.privacy.calibration import laplace_epsilon
from privbandits.privacy.ledger import Laplace, SelfComposed
from privbandits.privacy.samplers import laplace_draw

__all__ = ["AdaPKLUCB", "AdaPUCB", "adap_ucb_index", "bernoulli_kl", "kl_ucb_index"]

#: Bisection steps of the KL-UCB index.
KL_ITERATIONS = 50
# state layout: (N, mu_tilde, length, scores, episode); episode[r] = (arm, target N, sum, pulls)
_ARM, _TARGET, _SUM, _PULLS = 0, 1, 2, 3


@nb.njit(cache=True)
def adap_ucb_index(
    mu: float, length: float, t_l: float, epsilon: float, alpha: float
) -> float:  # pragma: no cover - compiled
    """Eq. (7): ``mu + sqrt(alpha ln(2 t_l) / (2 len)) + alpha ln(t_l) / (eps len)``."""
    return (
        mu
        + math.sqrt(alpha * math.log(2.0 * t_l) / (2.0 * length))
        + alpha * math.log(t_l) / (epsilon * length)
    )


@nb.njit(cache=True)
def bernoulli_kl(p: float, q: float) -> float:  # pragma: no cover - compiled
    """``d(p, q) = p ln(p/q) + (1-p) ln((1-p)/(1-q))`` with ``0 ln 0 = 0``."""
    out = 0.0
    if p > 0.0:
        out += p * math.log(p / q) if q > 0.0 else np.inf
    if p < 1.0:
        out += (1.0 - p) * math.log((1.0 - p) / (1.0 - q)) if q < 1.0 else np.inf
    return out


@nb.njit(cache=True)
def kl_ucb_index(
    mu: float, length: float, t_l: float, epsilon: float, alpha: float
) -> float:  # pragma: no cover - compiled
    """AdaP-KLUCB index: ``max{q in [mu_breve, 1] : d(mu_breve, q) <= alpha ln(t_l) / len}``."""
    p = min(max(mu + alpha * math.log(t_l) / (epsilon * length), 0.0), 1.0)
    level = alpha * math.log(t_l) / length
    if p >= 1.0:
        return 1.0
    lo, hi = p, 1.0
    for _ in range(KL_ITERATIONS):
        mid = 0.5 * (lo + hi)
        if bernoulli_kl(p, mid) <= level:
            lo = mid
        else:
            hi = mid
    return lo


@nb.njit(cache=True)
def _index(kl, mu, length, t_l, epsilon, alpha):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """The AdaP-KLUCB index when ``kl`` is set, else the AdaP-UCB index."""
    if kl:
        return kl_ucb_index(mu, length, t_l, epsilon, alpha)
    return adap_ucb_index(mu, length, t_l, epsilon, alpha)


@nb.njit(cache=True)
def _start_episode(params, state, r, t_l):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Lines 4-5: ``A_l = argmax_a I_a(t_l - 1)`` (lowest index on ties); play it until ``N_A`` doubles."""
    epsilon, alpha, kl = params[0], params[1], params[4] > 0.0
    N, mu, length, scores, ep = state
    for a in range(N.shape[1]):
        scores[r, a] = _index(kl, mu[r, a], length[r, a], t_l, epsilon, alpha)
    A = argmax_first(scores[r], N[r])
    ep[r, _ARM] = A
    ep[r, _TARGET] = 2.0 * N[r, A]
    ep[r, _SUM] = 0.0
    ep[r, _PULLS] = 0.0


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Line 1: each arm once; then the arm of the current episode."""
    N = state[0]
    for a in range(N.shape[1]):
        if N[r, a] == 0.0:
            return a
    return int(state[4][r, _ARM])


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Record the reward; at the end of an episode release its private mean and start the next."""
    epsilon, lo, hi = params[0], params[2], params[3]
    N, mu, length, scores, ep = state
    K = N.shape[1]
    x = unit_reward(y, lo, hi)
    if N[r, a] == 0.0:  # initial pull: an episode of length 1
        N[r, a] = 1.0
        mu[r, a] = x + laplace_draw(rng, 1.0 / epsilon)
        length[r, a] = 1.0
        for k in range(K):
            if N[r, k] == 0.0:
                return
    elif a != int(ep[r, _ARM]):  # not the episode's arm (no honest driver does this): reward unused
        N[r, a] += 1.0
        return
    else:
        N[r, a] += 1.0
        ep[r, _SUM] += x
        ep[r, _PULLS] += 1.0
        if N[r, a] < ep[r, _TARGET]:
            return
        n_ep = ep[r, _PULLS]
        mu[r, a] = ep[r, _SUM] / n_ep + laplace_draw(rng, 1.0 / (epsilon * n_ep))
        length[r, a] = n_ep
    _start_episode(params, state, r, max(t + 2.0, 1.0))  # t_l: the 1-based index of the next round


@register
class AdaPUCB(ArmCurator):
    """AdaP-UCB (Azize & Basu 2022, Algorithm 1 with the index of eq. 7): pure eps-DP, central.

    Parameters
    ----------
    epsilon : float
        Privacy budget of the whole run (pure DP, trusted learner).
    alpha : float
        Exploration exponent ``alpha > 3`` (3.1 as in the paper's experiments, section 5).

    References
    ----------
    Azize & Basu (2022), NeurIPS, Algorithm 1, eq. (7), Theorems 6-7.
    """

    name = "adap-ucb"
    trust_model = "central"
    twin = "ucb1"
    links = ("*",)
    paper = "Azize & Basu 2022 (Alg. 1)"
    index_name = "AdaP-UCB"
    constraints: ClassVar = {"epsilon": Epsilon, "alpha": Real(3.0, None, low_open=True)}
    test_params: ClassVar = ({"epsilon": 1.0}, {"epsilon": 0.5, "alpha": 4.0})
    test_envs: ClassVar = ("finite",)
    _kl: ClassVar[float] = 0.0

    @classmethod
    def audit_cases(cls) -> tuple[ReleaseCase, ...]:
        """The private mean released at the end of an episode (here the initial pull)."""
        from privbandits.algorithms.mab.audit import adap_release_spec

        return (ReleaseCase("adap-ucb-release", adap_release_spec("adap-ucb")),)

    def __init__(self, epsilon: float = 1.0, alpha: float = 3.1) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """The accounted guarantee of the episode releases (the Laplace scale of a 1-sample episode)."""
        release = PureDP(
            laplace_epsilon(1.0 / self.epsilon, 1.0)
        )  # len = 1; eps does not depend on len
        total = compose_parallel([release])
        notes = (
            f"{self.index_name} (Azize & Basu 2022, Alg. 1): per episode the mean of its len rewards clipped "
            f"to [{spec.reward_range[0]:g}, {spec.reward_range[1]:g}] and mapped to [0, 1], plus "
            f"Lap(1/(eps len)) -> {release.epsilon:.6g}-DP each; episodes hold disjoint rewards "
            "(Lemma 1, parallel composition); neighbouring: one reward changed"
        )
        ledger = SelfComposed(
            Laplace(1.0 / self.epsilon, 1.0, "an episode mean of one reward in [0, 1]"),
            spec.K,
            "disjoint",
            what="episodes hold disjoint rewards (every episode's release has the same epsilon)",
        )
        return Calibration(
            to_guarantee(total, "central", "user", notes, ledger=ledger),
            preset="strict",
            requested=(self.epsilon, 0.0),
            constants=AdaPConstants(self.alpha, 1.0 / self.epsilon),
        )

    def build_kernel(self) -> CuratorKernel:
        R, K = self.R, self.spec.K
        lo, hi = (float(v) for v in self.spec.reward_range)
        ep = np.zeros((R, 4))
        state = (np.zeros((R, K)), np.zeros((R, K)), np.ones((R, K)), np.zeros((R, K)), ep)
        params = (float(self.epsilon), float(self.alpha), lo, hi, self._kl)
        return CuratorKernel(_select, _update, params, state, allocates=False)

    def private_means(self) -> np.ndarray:
        """The last released private means ``mu_tilde`` (rewards in ``[0, 1]``), ``(R, K)``."""
        assert self.kernel is not None
        return self.kernel.state[1].copy()

    def episode_lengths(self) -> np.ndarray:
        """Lengths of every arm's last released episode, ``(R, K)``."""
        assert self.kernel is not None
        return self.kernel.state[2].copy()


@register
class AdaPKLUCB(AdaPUCB):
    """AdaP-KLUCB (Azize & Basu 2022, Algorithm 1 with the KL index of section 4): pure eps-DP, central.

    Parameters
    ----------
    epsilon : float
        The run's pure-DP budget (as for :class:`AdaPUCB`, whose constructor this class inherits).
    alpha : float
        Exploration exponent ``alpha > 3``.

    References
    ----------
    Azize & Basu (2022), NeurIPS, Algorithm 1, section 4, Theorem 8.
    """

    name = "adap-klucb"
    paper = "Azize & Basu 2022 (Alg. 1, KL)"
    index_name = "AdaP-KLUCB"
    _kl: ClassVar[float] = 1.0

    @classmethod
    def audit_cases(cls) -> tuple[ReleaseCase, ...]:
        """The private mean released at the end of an episode (here the initial pull)."""
        from privbandits.algorithms.mab.audit import adap_release_spec

        return (ReleaseCase("adap-klucb-release", adap_release_spec("adap-klucb")),)
