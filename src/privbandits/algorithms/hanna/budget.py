"""Per-batch local budgets of Algorithm 3 (Hanna et al. 2022) and their accounting.

In the shuffle model the users of batch ``i`` report ``clip(r) + Lap(Delta / eps0^(i))`` where
``eps0^(i) = E0(eps, delta, n_i)`` depends only on public quantities (Hanna et al. 2022, eq. 10, correction Hanna22-14; the
literal inverse ``f^{-1}_{n_i,delta}(eps)`` under ``shuffle_bound="paper"``).  The batch sizes
``n_i`` a run can produce are known in advance from the problem
(:func:`~privbandits.algorithms.hanna.elimination.batch_size_ranges`), so the calibration
accounts every one of them: a batch of ``n`` users is
``amplified_guarantee(eps_l(n), n, delta)`` (FMT21 with its validity condition enforced, or the
reports' own ``eps_l``-DP), ``eps_l = (r_hi - r_lo) / s`` the LDP level of the noise actually
added, and batches hold disjoint users, so the run is their parallel composition (Hanna et al.
2022, Appendix C).  The shuffler refuses to release a batch whose size is outside the calibrated
ranges (only a batch cut by the horizon has one, and it is never released).

Default ``delta``.  The whole run is one ``(eps, delta)``-DP mechanism on the data of its ``T``
users, and the usual requirement is ``delta << 1/#users``: the default is
``delta = 1 / T^2`` (:func:`default_delta`), so ``delta * T = 1/T`` and ``delta * n_i <= 1/T`` for
every batch.  (``delta = 1/T``, the choice for the experiments of Hanna et al. 2022, section 6, gives ``delta * n_i`` up to about
0.25-0.7 for the last batches, ``n_i ~ q^L``; it stays available by passing ``delta``.)

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithm 3, eq. (10), Appendix C; Feldman, McMillan &
Talwar (2021), Theorems 3.1-3.2; Hanna et al. 2022, Algorithm 3, corrections Hanna22-14 and Hanna22-28 (the ``delta`` caution).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import numpy as np

from privbandits.algorithms.hanna.elimination import BatchPlan
from privbandits.algorithms.hanna.presets import Switches
from privbandits.core.errors import ValidationError
from privbandits.privacy.accounting import ApproxDP, PureDP, compose_parallel
from privbandits.privacy.amplification import amplified_guarantee
from privbandits.privacy.laplace_shuffle import LaplaceShuffleParams, laplace_shuffle_params

__all__ = ["ShuffleBudget", "default_delta"]


def default_delta(T: int) -> float:
    """The default central ``delta`` of Algorithm 3 for horizon ``T``: ``1 / max(T, 2)^2``."""
    return 1.0 / float(max(int(T), 2)) ** 2


@functools.lru_cache(maxsize=8192)
def _params(
    epsilon: float,
    delta: float,
    n: int,
    r_lo: float,
    r_hi: float,
    shuffle_bound: str,
    bound: str,
    paper_sensitivity: bool,
) -> LaplaceShuffleParams:
    with warnings.catch_warnings():  # the calibration warns once, with the accounted guarantee
        warnings.simplefilter("ignore", UserWarning)
        return laplace_shuffle_params(
            epsilon,
            delta,
            n,
            r_lo,
            r_hi,
            shuffle_bound=shuffle_bound,
            bound=bound,
            paper_sensitivity=paper_sensitivity,
        )


@functools.lru_cache(maxsize=8192)
def _batch_guarantee(eps_l: float, n: int, delta: float, bound: str) -> PureDP | ApproxDP:
    return amplified_guarantee(eps_l, n, delta, bound)


@dataclass(frozen=True)
class ShuffleBudget:
    """Public per-batch calibration of Algorithm 3: ``n_i -> (eps0^(i), s_i)`` and its accounting.

    Parameters
    ----------
    epsilon, delta : float
        Central target of every batch.
    r_lo, r_hi : float
        Reward range.
    switches : Switches
        ``paper_sensitivity`` and ``shuffle_bound`` are used.
    bound : {"closed", "numerical"}
        Amplification bound of E0 and of the accountant.
    ranges : tuple of (lo, hi)
        The batch sizes the run can produce, per batch (inclusive).
    """

    epsilon: float
    delta: float
    r_lo: float
    r_hi: float
    switches: Switches
    bound: str
    ranges: tuple[tuple[int, int], ...]

    @property
    def sizes(self) -> tuple[int, ...]:
        """Every calibrated batch size, increasing."""
        return tuple(sorted({n for lo, hi in self.ranges for n in range(lo, hi + 1)}))

    @property
    def n_max(self) -> int:
        """The largest calibrated batch size (0 when no batch can complete)."""
        return max((hi for _, hi in self.ranges), default=0)

    def params(self, n: int) -> LaplaceShuffleParams:
        """Parameters of a batch of ``n`` users (``eps0^(i)`` depends only on the public ``n_i``)."""
        sw = self.switches
        return _params(
            self.epsilon,
            self.delta,
            int(n),
            self.r_lo,
            self.r_hi,
            sw.shuffle_bound,
            self.bound,
            sw.paper_sensitivity,
        )

    def scales(self, n: np.ndarray) -> np.ndarray:
        """Laplace scale ``s_i = Delta / eps0^(i)`` for each batch size in ``n`` (what users add;
        a batch cut by the horizon has a size outside :attr:`ranges` and is never released)."""
        n = np.asarray(n, dtype=np.int64)
        return np.array([self.params(int(k)).scale for k in n.ravel()], dtype=float).reshape(
            n.shape
        )

    def check_released(self, n: np.ndarray) -> None:
        """Refuse to release a batch whose size the calibration does not account."""
        for k in np.ravel(n):
            if not any(lo <= int(k) <= hi for lo, hi in self.ranges):
                raise ValidationError(
                    f"batch size n={int(k)} is outside the calibrated batch sizes "
                    f"{list(self.ranges)}; its privacy is not accounted"
                )

    def scale_for(self, plan: BatchPlan) -> np.ndarray:
        """Laplace scale of each row of a completed (released) batch, from its public ``n_i``."""
        self.check_released(plan.n_total)
        return self.scales(plan.n_total)

    def batch_guarantee(self, n: int) -> PureDP | ApproxDP:
        """Central guarantee of a batch of ``n`` users from the noise actually added."""
        p = self.params(n)
        return _batch_guarantee(p.local_epsilon(), p.n, self.delta, self.bound)

    def accounted(self) -> PureDP | ApproxDP:
        """Parallel composition over every calibrated batch size (``PureDP(0)`` if none can complete)."""
        return compose_parallel([self.batch_guarantee(n) for n in self.sizes])
