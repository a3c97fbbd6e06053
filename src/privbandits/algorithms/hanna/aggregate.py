"""Exact aggregate release of a batch of per-user Laplace reports (Algorithms 2-3 fast path).

In the local and shuffle models every user of a batch sends ``clip(r) + Lap(s)``; the server's
per-action statistic is the sum of the ``n_ia`` reports for action ``a``.  Since
``Lap(s) = Exp(s) - Exp(s)``, the sum of ``n`` i.i.d. ``Lap(s)`` draws is exactly
``Gamma(n, s) - Gamma(n, s)``, so the released sums are drawn per action instead of per user
(the documentation's Concepts: engines).  The per-user message path (:mod:`~privbandits.algorithms.hanna.local`,
:mod:`~privbandits.algorithms.hanna.shuffle`) is the reference; a test compares the two.

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithms 2-3.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from privbandits.algorithms.hanna.elimination import BatchPlan

__all__ = ["AggregateLaplaceSums", "laplace_sum_noise"]


def laplace_sum_noise(
    rng: np.random.Generator, counts: np.ndarray, scale: np.ndarray
) -> np.ndarray:
    """Sum of ``counts[j, k]`` i.i.d. ``Lap(scale[j])`` draws for every entry (0 where the count is 0).

    Parameters
    ----------
    rng : Generator
        Client noise stream.
    counts : ndarray of int, shape (n, K)
    scale : ndarray of shape (n,)
        Laplace scale of the reports of each row (the batch's ``Delta / eps0^(i)``).
    """
    c = np.asarray(counts, dtype=float)
    s = np.broadcast_to(np.asarray(scale, dtype=float)[:, None], c.shape)
    pos = c > 0
    out = np.zeros(c.shape)
    out[pos] = rng.gamma(c[pos], s[pos]) - rng.gamma(c[pos], s[pos])
    return out


@dataclass
class AggregateLaplaceSums:
    """Collector of the aggregate path: released sums = clipped reward sums + summed user noise.

    Parameters
    ----------
    scale : callable
        ``plan -> s`` (n,), the Laplace scale the users of each batch apply (from the calibration).
    clip : (r_lo, r_hi)
        Reward range every user clips to before adding noise; the aggregate driver draws the sums
        of the clipped rewards.
    """

    scale: Callable[[BatchPlan], np.ndarray]
    clip: tuple[float, float]
    n_batches: int = field(default=0)

    def collect(self, plan: BatchPlan, sums: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``r_hat_ia = sum_k clip(r_ia^(k)) + sum_k Lap(s)`` on the core set, 0 elsewhere."""
        noise = laplace_sum_noise(rng, plan.counts, self.scale(plan))
        self.n_batches += len(plan)
        return np.where(plan.counts > 0, np.asarray(sums, dtype=float) + noise, 0.0)
