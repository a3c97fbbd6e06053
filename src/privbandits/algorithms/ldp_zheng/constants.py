"""Closed-form constants of LDP-UCB (Algorithm 5) and LDP-GLOC (Algorithm 3) of Zheng et al. (2020).

Pure functions of the public quantities ``(t, sigma, D, T, alpha, ...)``; every one is vectorized
over ``t`` so that tests can tabulate them.  ``D`` is the feature dimension the algorithm runs in
(``d``, or ``K d`` with block one-hot features in the multi-parameter setting).

References
----------
Zheng, Cai, Huang, Li & Wang (2020), "Locally Differentially Private (Contextual) Bandits
Learning", NeurIPS: Algorithm 3 (line 2-3: ``sigma``, ``Upsilon_t``, ``c_t``, ``beta_t``, ``zeta``)
and Algorithm 5 (appendix D; constants reconstructed in the project spec
``zheng2020-ldp-bandits.md`` sections 4.3.1 and 4.4.2 from the authors' code and Han et al. 2021).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from privbandits.core.validation import check_delta, check_epsilon, check_int, check_positive
from privbandits.privacy.mechanisms import gaussian_sigma_analytic

__all__ = [
    "RadiusTable",
    "beta_gloc",
    "beta_gloc_conservative",
    "beta_ucb_paper",
    "beta_ucb_ss",
    "common_gaussian_sigma",
    "common_laplace_scale",
    "regularizer",
    "upsilon",
    "zeta_default",
    "zeta_paper",
]


class RadiusTable:
    """A function of the round index ``s >= 1``, tabulated in chunks (O(1) amortized per round).

    Rounds advance one index at a time, so the table keeps only the chunk of ``chunk``
    consecutive indices containing the last request (bounded memory for any horizon).

    Parameters
    ----------
    fn : callable
        Vectorized ``fn(s_array) -> values``.
    chunk : int
        Number of indices evaluated at once.
    """

    def __init__(self, fn: Callable[[np.ndarray], np.ndarray], chunk: int = 1 << 14) -> None:
        self.fn = fn
        self.chunk = chunk
        self._k = -1
        self._values = np.empty(0)

    def __call__(self, s: int) -> float:
        k, i = divmod(int(s) - 1, self.chunk)
        if k != self._k:
            start = k * self.chunk + 1
            self._values = np.asarray(self.fn(np.arange(start, start + self.chunk, dtype=float)), dtype=float)
            self._k = k
        return float(self._values[i])


def upsilon(t: np.ndarray | float, sigma: float, D: int, T: int, alpha: float) -> np.ndarray:
    """``Upsilon_t = sigma sqrt(t) (4 sqrt(D) + 2 ln(2T / alpha))`` (Alg. 3 line 3 / Alg. 5).

    A high-probability bound on the operator norm of the accumulated noise matrix
    ``sum_{s<=t} B_s`` (spec section 4.3.1).
    """
    t = np.asarray(t, dtype=float)
    return sigma * np.sqrt(t) * (4.0 * math.sqrt(D) + 2.0 * math.log(2.0 * T / alpha))


def regularizer(t: np.ndarray | float, sigma: float, D: int, T: int, alpha: float, factor: float = 2.0) -> np.ndarray:
    """``c_t = factor * Upsilon_t`` (paper: ``factor = 2``), added once to the noisy Gram sum."""
    return factor * upsilon(t, sigma, D, T, alpha)


def beta_ucb_paper(t: np.ndarray | float, sigma: float, D: int, T: int, alpha: float) -> np.ndarray:
    """LDP-UCB radius ``2 sigma sqrt(D ln T) + (sqrt(3 Upsilon_t) + sigma sqrt(D t / Upsilon_t)) D ln T``.

    Zheng et al. (2020), Algorithm 5 (spec section 4.3.1; identical in the authors' code and in
    Han et al.'s re-implementation).
    """
    t = np.asarray(t, dtype=float)
    ups = upsilon(t, sigma, D, T, alpha)
    lnT = math.log(T)
    return 2.0 * sigma * math.sqrt(D * lnT) + (np.sqrt(3.0 * ups) + sigma * np.sqrt(D * t / ups)) * D * lnT


def beta_ucb_ss(t: np.ndarray | float, sigma: float, D: int, T: int, alpha: float) -> np.ndarray:
    """Shariff-Sheffet-style radius built from the same pieces (spec section 4.3.2, ``beta_formula="ss"``).

    ``sqrt(2 ln(2/alpha) + D ln(3 + t/(D Upsilon_t))) + sqrt(3 Upsilon_t)
    + sigma sqrt(t) (sqrt(D) + sqrt(2 ln(2T/alpha))) / sqrt(Upsilon_t)``.
    """
    t = np.asarray(t, dtype=float)
    ups = upsilon(t, sigma, D, T, alpha)
    first = np.sqrt(2.0 * math.log(2.0 / alpha) + D * np.log(3.0 + t / (D * ups)))
    last = sigma * np.sqrt(t) * (math.sqrt(D) + math.sqrt(2.0 * math.log(2.0 * T / alpha))) / np.sqrt(ups)
    return first + np.sqrt(3.0 * ups) + last


def beta_gloc(t: np.ndarray | float, grad_sigma: float, link_min_slope: float, D: int) -> np.ndarray:
    """LDP-GLOC radius ``beta_t = sqrt((C sigma / mu) sqrt(D t))`` (Alg. 3 line 3, order only).

    ``grad_sigma`` is the standard deviation of the gradient noise (``C sigma`` in Alg. 3);
    spec section 4.4.2 [CHOICE] with ``kappa = 1`` (apply ``beta_scale`` outside).
    """
    t = np.asarray(t, dtype=float)
    return np.sqrt(grad_sigma / link_min_slope * np.sqrt(D * t))


def beta_gloc_conservative(
    t: np.ndarray | float, sigma: float, grad_sigma: float, link_min_slope: float, D: int, T: int, alpha: float
) -> np.ndarray:
    """Conservative LDP-GLOC radius of spec section 4.4.2.

    ``sqrt((C sigma/mu) sqrt(D t) ln(T/alpha)) + sqrt(3 Upsilon_t) + sigma sqrt(D t / Upsilon_t)``.
    """
    t = np.asarray(t, dtype=float)
    ups = upsilon(t, sigma, D, T, alpha)
    first = np.sqrt(grad_sigma / link_min_slope * np.sqrt(D * t) * math.log(T / alpha))
    return first + np.sqrt(3.0 * ups) + sigma * np.sqrt(D * t / ups)


def zeta_default(T: int, grad_bound: float, grad_sigma: float, D: int, radius: float = 1.0) -> float:
    """OGD step ``diam(W) / (RMS noisy-gradient norm * sqrt(T))`` (spec section 4.4.2 [CHOICE]).

    With ``W`` the ball of radius 1, gradient bound ``C`` and gradient noise ``C sigma`` this is
    ``2 / (C sqrt(1 + D sigma^2) sqrt(T))``.
    """
    T = check_int("T", T, 1)
    rms = math.sqrt(grad_bound**2 + D * grad_sigma**2)
    return 2.0 * radius / (rms * math.sqrt(T))


def zeta_paper(T: int) -> float:
    """OGD step ``1 / sqrt(T)`` (``zeta="paper"``; also the value in Han et al.'s code)."""
    return 1.0 / math.sqrt(check_int("T", T, 1))


def common_gaussian_sigma(
    sensitivities: tuple[float, ...],
    epsilon: float,
    delta_part: float,
    calibration: str = "classic",
) -> float:
    """One Gaussian std that makes every part ``i`` an ``(eps_i, delta_part)`` mechanism, ``sum eps_i = epsilon``.

    With the classic calibration the budget is split in proportion to the parts' L2
    sensitivities, ``eps_i = epsilon Delta_i / sum_j Delta_j``, which equalizes the noise:
    ``sigma = (sum_i Delta_i) sqrt(2 ln(1.25/delta_part)) / epsilon``.  For LDP-UCB
    (``Delta = (2, 2Y)``, ``delta_part = delta/2``) this is the general form
    ``2 (1 + Y) sqrt(2 ln(2.5/delta)) / epsilon`` of spec section 4.3.1 (``6 ...`` for ``Y = 2``).
    With ``calibration="analytic"`` each part gets the exact (Balle & Wang 2018) std for its
    ``(eps_i, delta_part)`` and the largest is returned.
    """
    eps = check_epsilon(epsilon)
    dp = check_delta(delta_part, "delta_part")
    sens = tuple(check_positive("sensitivity", s) for s in sensitivities)
    total = sum(sens)
    if calibration == "classic":
        return total * math.sqrt(2.0 * math.log(1.25 / dp)) / eps
    if calibration == "analytic":
        return max(gaussian_sigma_analytic(eps * s / total, dp, s) for s in sens)
    from privbandits.core.errors import ValidationError

    raise ValidationError(f"gaussian_calibration must be 'classic' or 'analytic', got {calibration!r}")


def common_laplace_scale(l1_sensitivities: tuple[float, ...], epsilon: float) -> float:
    """One Laplace scale making part ``i`` ``eps_i``-DP with ``sum eps_i = epsilon``: ``b = sum Delta_1 / epsilon``.

    Spec section 3.3 [CHOICE] (``b = Delta_1 / eps_i`` per part) with the budget split in
    proportion to the L1 sensitivities, so all parts share one noise level.
    """
    eps = check_epsilon(epsilon)
    return sum(check_positive("sensitivity", s) for s in l1_sensitivities) / eps
