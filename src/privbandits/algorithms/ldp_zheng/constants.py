"""Closed-form constants of LDP-UCB (Algorithm 5) and LDP-GLOC (Algorithm 3) of Zheng et al. (2020).

Each constant is written once, as a compiled scalar function of the round index ``s >= 1`` that
the server kernel evaluates every round; :func:`table` evaluates one on an array of indices (for
tests and tables).  ``D`` is the feature dimension the algorithm runs in (``d``, or ``K d`` with
block one-hot features in the multi-parameter setting).

=====================  =====================================================================
``upsilon``            ``Upsilon_s = sigma sqrt(s) (4 sqrt(D) + 2 ln(2T/alpha))``
``regularizer``        ``c_s = c_factor Upsilon_s`` (paper: ``c_factor = 2``)
``beta`` (code 0)      LDP-UCB, paper: ``2 sigma sqrt(D ln T) + (sqrt(3 Upsilon_s)
                       + sigma sqrt(D s / Upsilon_s)) D ln T``
``beta`` (code 1)      LDP-UCB, Shariff-Sheffet style (``beta_formula="ss"``)
``beta`` (code 2)      LDP-GLOC, order only: ``sqrt((sigma_g / mu) sqrt(D s))``
``beta`` (code 3)      LDP-GLOC, conservative: ``sqrt((sigma_g/mu) sqrt(D s) ln(T/alpha))
                       + sqrt(3 Upsilon_s) + sigma sqrt(D s / Upsilon_s)``
=====================  =====================================================================

References
----------
Zheng, Cai, Huang, Li & Wang (2020), "Locally Differentially Private (Contextual) Bandits
Learning", NeurIPS: Algorithm 3 (lines 2-3) and Algorithm 5 (appendix D); constants as
reconstructed as on the documentation's Zheng et al. 2020 page (corrections Zheng20-4, -5, -8)
(from the authors' code and Han et al. 2021).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numba as nb
import numpy as np

from privbandits.core.validation import check_int

__all__ = [
    "BETA_CODES",
    "beta",
    "regularizer",
    "table",
    "upsilon",
    "zeta_default",
    "zeta_paper",
]

#: Radius formulas by name (the ``code`` argument of :func:`beta`).
BETA_CODES: dict[str, int] = {"ucb-paper": 0, "ucb-ss": 1, "gloc-order": 2, "gloc-conservative": 3}


@nb.njit(cache=True)
def upsilon(
    s: float, sigma: float, D: int, T: int, alpha: float
) -> float:  # pragma: no cover - compiled
    """``Upsilon_s = sigma sqrt(s) (4 sqrt(D) + 2 ln(2T / alpha))`` (Alg. 3 line 3 / Alg. 5).

    A high-probability bound on the operator norm of the accumulated noise ``sum_{r<=s} B_r``
    (defaults on the Zheng et al. 2020 documentation page).
    """
    return sigma * math.sqrt(s) * (4.0 * math.sqrt(D) + 2.0 * math.log(2.0 * T / alpha))


@nb.njit(cache=True)
def regularizer(
    s: float, sigma: float, D: int, T: int, alpha: float, factor: float
) -> float:  # pragma: no cover
    """``c_s = factor * Upsilon_s`` (paper: ``factor = 2``), added once to the noisy Gram sum."""
    return factor * upsilon(s, sigma, D, T, alpha)


@nb.njit(cache=True)
def beta(
    code: int, s: float, sigma: float, grad_sigma: float, mu: float, D: int, T: int, alpha: float
) -> float:  # pragma: no cover - compiled
    """Confidence radius ``beta_s`` of formula ``code`` (see :data:`BETA_CODES`).

    ``sigma`` is the noise std of the Gram and vector parts, ``grad_sigma`` that of the gradient
    (LDP-GLOC, ``C sigma`` in Alg. 3) and ``mu = inf g'`` (LDP-GLOC).
    """
    if code == 2:
        return math.sqrt(grad_sigma / mu * math.sqrt(D * s))
    ups = upsilon(s, sigma, D, T, alpha)
    if code == 0:
        lnT = math.log(T)
        return (
            2.0 * sigma * math.sqrt(D * lnT)
            + (math.sqrt(3.0 * ups) + sigma * math.sqrt(D * s / ups)) * D * lnT
        )
    if code == 1:
        first = math.sqrt(2.0 * math.log(2.0 / alpha) + D * math.log(3.0 + s / (D * ups)))
        last = (
            sigma
            * math.sqrt(s)
            * (math.sqrt(D) + math.sqrt(2.0 * math.log(2.0 * T / alpha)))
            / math.sqrt(ups)
        )
        return first + math.sqrt(3.0 * ups) + last
    first = math.sqrt(grad_sigma / mu * math.sqrt(D * s) * math.log(T / alpha))
    return first + math.sqrt(3.0 * ups) + sigma * math.sqrt(D * s / ups)


def table(fn: Callable[..., float], s: np.ndarray | float, *args: float) -> np.ndarray:
    """``fn(s_i, *args)`` for every index in ``s`` (an array of the same shape)."""
    arr = np.asarray(s, dtype=float)
    return np.array([fn(float(v), *args) for v in arr.ravel()]).reshape(arr.shape)


def zeta_default(
    T: int, grad_bound: float, grad_sigma: float, D: int, radius: float = 1.0
) -> float:
    """OGD step ``diam(W) / (RMS noisy-gradient norm * sqrt(T))`` (defaults on the Zheng et al. 2020 documentation page).

    With ``W`` the ball of ``radius`` 1, gradient bound ``C`` and gradient noise ``C sigma`` this
    is ``2 / (C sqrt(1 + D sigma^2) sqrt(T))``.
    """
    T = check_int("T", T, 1)
    rms = math.sqrt(grad_bound**2 + D * grad_sigma**2)
    return 2.0 * radius / (rms * math.sqrt(T))


def zeta_paper(T: int) -> float:
    """OGD step ``1 / sqrt(T)`` (``zeta="paper"``; also the value in Han et al.'s code)."""
    return 1.0 / math.sqrt(check_int("T", T, 1))
