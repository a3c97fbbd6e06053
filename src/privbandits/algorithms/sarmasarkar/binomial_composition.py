"""Composition of the binomial summation calls of ShuffleGLM (Sarmasarkar 2026, Algorithm 1) by the Renyi route.

One user of batch ``k`` takes part in that batch's matrix summation and in every ``P_GD`` round
(Algorithm 7) of the batch; each call releases ``Y = (user's rounded count) + Bin(N, p) +
(others' counts)`` per label.  The per-call bound of
:mod:`privbandits.privacy.binomial_accounting` extends to the adaptive composition of the calls:

* Release the changed user's roundings as well (more output: only weaker privacy).  Given the
  history and the rounding, call ``j`` shifts ``Bin(N_j, p)^{L_j}`` by an integer vector ``s_j``
  from the coupled shift set ``F_j`` (the others' counts have the same conditional law in both
  worlds and are dropped as post-processing).
* For the central box ``C = C_1 x ... x C_m`` of the centred binomial values and any order
  ``alpha > 1``: ``delta(eps) <= P(C^c) + c_alpha e^{(1 - alpha) eps} int_C P^alpha Q^{1 - alpha}``
  with ``c_alpha = (alpha - 1)^(alpha - 1) / alpha^alpha``.  Integrating from the last call back,
  the windowed sum factorizes: ``int_C P^alpha Q^{1 - alpha} <= prod_j max_{s in F_j}
  prod_k A_alpha^{(j)}(s_k)`` (the per-call maximum is over every history, so adaptivity costs
  nothing); a union bound gives ``P(C^c) <= sum_j tail_j(alpha)``.
* So the per-call terms ``log max_s prod_k A_alpha(s_k)`` (the windowed Renyi sums) are summed on
  one common grid of orders, the tails are added, and the result is converted once:
  ``eps(delta) = min_alpha [sum_j log M_j(alpha) + log c_alpha - log(delta - sum_j tail_j(alpha))]
  / (alpha - 1)``.

Every step is an upper bound (no Gaussian approximation of the binomial); the grid of orders only
affects tightness.

References
----------
Sarmasarkar (2026), Algorithm 1, Algorithm 7, Appendix T; Cheu, Joseph, Mao & Peng (2022);
Mironov (2017) (Renyi differential privacy, adaptive composition); Canonne, Kamath & Steinke (2020)
(the conversion constant ``c_alpha``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from privbandits.core.validation import check_delta
from privbandits.privacy import binomial_accounting as ba
from privbandits.privacy.cheu import SumParams

__all__ = ["ORDERS", "call_terms", "composed_delta", "composed_epsilon"]

#: The common grid of Renyi orders ``alpha`` (any grid gives a valid bound; this one spans the
#: optima from a single call at small epsilon to hundreds of composed calls at epsilon = 20).
ORDERS: np.ndarray = 1.0 + np.geomspace(2e-3, 200.0, 40)


@functools.lru_cache(maxsize=512)
def _terms(
    N: int, p: float, L: int, g: float, Delta: float, sensitivity: float
) -> tuple[np.ndarray, np.ndarray]:
    budget, s_max = ba.shift_budget(g, Delta, sensitivity)
    log_a, tails = ba._log_sums(N, p, s_max, ORDERS)
    log_prod = ba._max_product(log_a, s_max, budget, L)
    return log_prod, L * tails


def call_terms(params: SumParams) -> tuple[np.ndarray, np.ndarray]:
    """``(log M(alpha), tail(alpha))`` of one summation call on :data:`ORDERS`.

    ``M(alpha)`` bounds the windowed Renyi sum ``max_{s in F} prod_k sum_{y in C_k} P_s(y)^alpha
    P_0(y)^(1 - alpha)`` of the call (``+inf`` where it underflows: that order is then unused) and
    ``tail(alpha)`` the probability, under the shifted law, of leaving the window.
    """
    return _terms(
        params.n * params.b,
        params.p,
        params.n_labels,
        params.g,
        params.Delta,
        params.sensitivity,
    )


def _composed(calls: Sequence[tuple[SumParams, int]]) -> tuple[np.ndarray, np.ndarray]:
    log_m = np.zeros(ORDERS.size)
    tails = np.zeros(ORDERS.size)
    for params, count in calls:
        if count <= 0:
            continue
        lm, tl = call_terms(params)
        log_m = log_m + count * lm
        tails = tails + count * tl
    log_c = (ORDERS - 1.0) * np.log(ORDERS - 1.0) - ORDERS * np.log(ORDERS)
    return log_m + log_c, tails


def composed_epsilon(calls: Sequence[tuple[SumParams, int]], delta: float) -> float:
    """epsilon at ``delta`` of the adaptive composition of ``calls`` (pairs ``(params, repetitions)``).

    ``inf`` when at every order the window tails alone exceed ``delta``.
    """
    dlt = check_delta(delta)
    log_terms, tails = _composed(calls)
    ok = (tails < dlt) & np.isfinite(log_terms)
    if not np.any(ok):
        return math.inf
    eps = (log_terms[ok] - np.log(dlt - tails[ok])) / (ORDERS[ok] - 1.0)
    return float(max(0.0, np.min(eps)))


def composed_delta(calls: Sequence[tuple[SumParams, int]], epsilon: float) -> float:
    """delta at ``epsilon`` of the adaptive composition of ``calls`` (the same bound, read the other way)."""
    log_terms, tails = _composed(calls)
    with np.errstate(over="ignore", invalid="ignore"):
        vals = tails + np.exp(log_terms + (1.0 - ORDERS) * float(epsilon))
    vals = np.where(np.isfinite(vals), vals, np.inf)
    return float(min(1.0, np.min(vals)))
