"""Calibration of shuffle LinUCB with a Gaussian randomizer amplified by shuffling (Chowdhury & Zhou 2022).

Each user's message ``(x x^T + B, y x + xi)`` is one Gaussian mechanism on the pair
``(ut(x x^T), y x)`` (an ``(eps_0, delta_0)``-DP local randomizer, analytic Gaussian).  Shuffling the
``n`` messages of a batch is ``(eps, delta_a + (e^eps + 1)(1 + e^{-eps_0}/2) n delta_0)``-DP with
``eps`` the closed form of Feldman, McMillan & Talwar (2021), Theorem 3.1 at ``(eps_0, n, delta_a)``
(their Theorem 3.8, approximate-DP local randomizers; valid for ``eps_0 <= ln(n / (16 ln(2/delta_a)))``).
Users are unique and every batch holds different users, so the batches compose in parallel: the
run's guarantee is the worst batch's.

References
----------
Chowdhury & Zhou (2022), "Shuffle Private Linear Contextual Bandits", ICML (the batched framework
and its amplification instantiation); the authors' code ``github.com/sayakrc/Differentially-Private-Bandits``
(``LinBanditPrivate.py``).  Feldman, McMillan & Talwar (2021), "Hiding Among the Clones", FOCS,
Theorems 3.1 and 3.8.  Balle & Wang (2018), analytic Gaussian mechanism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from privbandits.privacy.amplification import (
    closed_form_epsilon,
    closed_form_inverse,
    max_local_epsilon,
)
from privbandits.privacy.calibration import gaussian_epsilon, gaussian_sigma_analytic

__all__ = [
    "AmpCalibration",
    "amplified_guarantee",
    "authors_sigma",
    "batch_sizes",
    "calibrate_amplified",
    "radius",
    "theory_batch_size",
]


def theory_batch_size(T: int) -> int:
    """``B = ceil(T^{3/5})``, the batch size that balances the regret terms to ``T^{3/5}``."""
    return max(1, math.ceil(T**0.6))


def batch_sizes(T: int, B: int) -> tuple[int, int]:
    """Smallest and largest batch of a run of ``T`` users in batches of ``B`` (the remainder joins
    the last full batch, so no batch is smaller than ``min(B, T)``)."""
    if T <= B:
        return T, T
    return B, B + T % B


@dataclass(frozen=True)
class AmpCalibration:
    """Resolved noise of the amplified Gaussian randomizer and its accounting."""

    sigma: float  # per-user Gaussian std on every entry of the message
    eps0: float  # local level of one message
    delta0: float
    epsilon: float  # accounted (shuffle, or local when no amplification applies)
    delta: float
    amplified: bool


def amplified_guarantee(
    sigma: float, sens: float, n_min: int, n_max: int, delta_a: float, delta0: float
) -> tuple[float, float, float] | None:
    """``(eps, delta, eps_0)`` of a batch of ``n_min..n_max`` shuffled Gaussian messages with std
    ``sigma`` at sensitivity ``sens`` (FMT21 Thm 3.8), or None when the theorem does not apply."""
    eps0 = gaussian_epsilon(sigma, delta0, sens)
    if not 0.0 < eps0 <= max_local_epsilon(n_min, delta_a):
        return None
    eps = closed_form_epsilon(eps0, n_min, delta_a)
    dlt = delta_a + (math.exp(eps) + 1.0) * (1.0 + math.exp(-eps0) / 2.0) * n_max * delta0
    return eps, dlt, eps0


def calibrate_amplified(
    epsilon: float, delta: float, sens: float, n_min: int, n_max: int
) -> AmpCalibration:
    """Smallest per-user std certified at ``(epsilon, delta)``: by amplification when FMT21 covers
    the batch (``delta/2`` for the shuffle bound, ``delta/2`` for the ``n delta_0`` term), else the
    local Gaussian mechanism at ``(epsilon, delta)`` (no amplification credit)."""
    sig_local = gaussian_sigma_analytic(epsilon, delta, sens)
    local = AmpCalibration(sig_local, epsilon, delta, epsilon, delta, False)
    delta_a = delta / 2.0
    cap = max_local_epsilon(n_min, delta_a)
    if cap <= 0.0:
        return local
    eps0 = min(closed_form_inverse(epsilon, delta_a, n_min), cap)
    if eps0 <= epsilon:
        return local
    delta0 = delta_a / (n_max * (math.exp(epsilon) + 1.0) * 1.5)
    sig = gaussian_sigma_analytic(eps0, delta0, sens)
    if sig >= sig_local:
        return local
    acc = amplified_guarantee(sig, sens, n_min, n_max, delta_a, delta0)
    while acc is not None and acc[0] > epsilon:  # root-finding tolerance: never above the request
        sig *= 1.0 + 1e-10
        acc = amplified_guarantee(sig, sens, n_min, n_max, delta_a, delta0)
    if acc is None:
        return local
    eps, dlt, e0 = acc
    return AmpCalibration(sig, e0, delta0, eps, dlt, True)


def authors_sigma(epsilon: float, delta: float, B: int) -> float:
    """The authors' code: ``sigma_A = sqrt(ln(2.5 B / delta)) / (eps sqrt(B))`` (no sensitivity factor)."""
    return math.sqrt(math.log(2.5 * B / delta)) / (epsilon * math.sqrt(B))


def radius(Gamma: float, S: float, R: float, d: int, T: int, L: float) -> float:
    """``beta = sqrt(Gamma) S + R sqrt(d ln((1 + T L^2 / Gamma) / alpha))``, ``alpha = 1/T`` (the
    authors' code, computed once at ``t = T``)."""
    return math.sqrt(Gamma) * S + R * math.sqrt(d * math.log((1.0 + T * L * L / Gamma) * T))
