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

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from privbandits.algorithms.calibration import Constants
from privbandits.privacy.amplification import (
    closed_form_epsilon,
    closed_form_inverse,
    max_local_epsilon,
)
from privbandits.privacy.calibration import gaussian_epsilon, gaussian_sigma_analytic
from privbandits.privacy.cheu import SumParams, calibrated_params, theory_params
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.ledger import Accounted, Composed, Event

__all__ = [
    "AmpCalibration",
    "AmpConstants",
    "VecConstants",
    "amplified_guarantee",
    "authors_sigma",
    "batch_sizes",
    "calibrate_amplified",
    "joint_labels",
    "joint_norm_bound",
    "joint_sensitivity",
    "radius",
    "theory_batch_size",
    "vec_sum_params",
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


def _renamed(out: dict[str, Any]) -> dict[str, Any]:
    """The stored record names the ridge ``lambda`` (a Python keyword, ``lam`` as a field)."""
    return {("lambda" if k == "lam" else k): v for k, v in out.items()}


@dataclass(frozen=True)
class AmpConstants(Constants):
    """Typed calibration of shuffle LinUCB with the amplified Gaussian randomizer.

    ``sigma`` is the per-user std on every entry of the message, ``eps0`` / ``delta0`` the local
    level of one message (per range ``batch_sizes`` of batch sizes: its two ends), ``sensitivity``
    the joint l2 sensitivity of ``(ut(x x^T), y x)``, ``Gamma = sigma sqrt(T d)``,
    ``lam = 2 Gamma`` and ``beta`` the radius (the authors' formula times ``beta_scale``).
    Satisfies :class:`~privbandits.algorithms.calibration.GaussianBatchLocalLevels`.
    """

    batch_size: int
    batch_sizes: tuple[tuple[int, int], ...]
    sigma: float
    eps0: tuple[tuple[float, float], ...]
    delta0: float
    sensitivity: float
    Gamma: float
    lam: float
    beta: float
    S: float
    context_bound: float
    reward_lo: float
    reward_hi: float

    def as_dict(self) -> dict[str, Any]:
        return _renamed(super().as_dict())


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


# --------------------------------------------------------------------------------------------
# vector-summation instantiation (the Cheu et al. protocol on the joint statistic)
# --------------------------------------------------------------------------------------------
def joint_labels(d: int) -> int:
    """Coordinates of the joint statistic ``w = (ut(x x^T), y x)``: ``d (d + 1) / 2 + d``."""
    return d * (d + 1) // 2 + d


def joint_norm_bound(context_bound: float, reward_lo: float, reward_hi: float) -> float:
    """``Delta = sqrt(C^4 + C^2 Y^2)``, ``Y = max(|r_lo|, |r_hi|)``: a bound on ``||w||_2``.

    ``||ut(x x^T)||_2^2 = sum_{i <= j} x_i^2 x_j^2 <= ||x||^4`` and ``||y x||_2 <= C Y``.
    """
    Y = max(abs(reward_lo), abs(reward_hi))
    C = context_bound
    return math.sqrt(C**4 + (C * Y) ** 2)


def joint_sensitivity(context_bound: float, reward_lo: float, reward_hi: float) -> float:
    """l2 replacement sensitivity of the joint statistic: ``sqrt(2 C^4 + 4 C^2 Y^2)``.

    ``||w - w'||^2 = ||g - g'||^2 + ||y x - y' x'||^2`` with ``g = ut(x x^T)``; ``<g, g'> =
    ((x.x')^2 + sum_i x_i^2 x_i'^2) / 2 >= 0``, so ``||g - g'||^2 <= ||x||^4 + ||x'||^4 <= 2 C^4``,
    and ``||y x - y' x'|| <= 2 C Y``.  Below the generic ``2 Delta = 2 sqrt(C^4 + C^2 Y^2)``.
    """
    Y = max(abs(reward_lo), abs(reward_hi))
    C = context_bound
    return math.sqrt(2.0 * C**4 + 4.0 * (C * Y) ** 2)


def vec_sum_params(
    n: int, d: int, epsilon: float, delta: float, Delta: float, mode: str, sensitivity: float
) -> SumParams:
    """The Cheu et al. vector summation of one batch of ``n`` users on the joint statistic
    (``sensitivity``: :func:`joint_sensitivity`, used by the binomial-pmf accountant).

    ``mode="calibrated"``: the smallest ``b`` (within 0.5 %) whose epsilon, computed from the
    binomial pmf (:meth:`privbandits.privacy.cheu.SumParams.binomial_epsilon`), is at most
    ``epsilon`` at ``delta``, searched below and above the Gaussian-matched ``b`` of
    :func:`privbandits.privacy.cheu.calibrated_params`; ``mode="theory"``: eq. (122) with the
    dimension of the summed vector (Lemma T.1).
    """
    return _vec_sum_params(
        int(n), int(d), float(epsilon), float(delta), float(Delta), mode, float(sensitivity)
    )


@functools.lru_cache(maxsize=256)
def _vec_sum_params(
    n: int, d: int, epsilon: float, delta: float, Delta: float, mode: str, sensitivity: float
) -> SumParams:
    L = joint_labels(d)
    if mode == "theory":
        return theory_params(n, L, epsilon, delta, Delta, kind="vector")
    start = dataclasses.replace(
        calibrated_params(n, L, Delta, delta=delta, epsilon=epsilon, kind="vector"),
        sensitivity=min(sensitivity, 2.0 * Delta),
    )
    if not start.binomial_tractable():
        return start

    def meets(b: int) -> bool:
        return dataclasses.replace(start, b=b).binomial_epsilon() <= epsilon

    hi = start.b  # meets the target (calibrated_params raised it until it did)
    if not meets(hi):
        return start
    lo = 0  # b = 0 adds no noise
    while hi - lo > max(1, hi // 200):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if mid > 0 and meets(mid) else (mid, hi)
    return dataclasses.replace(start, b=hi)


@dataclass(frozen=True)
class VecConstants(Constants):
    """Typed calibration of shuffle LinUCB with the vector-summation protocol.

    ``sums[0]`` is the protocol of a regular batch of ``batch_sizes[0][0]`` users, ``sums[1]`` that
    of the last batch (``batch_sizes[0][1]`` users, the remainder included); ``g``, ``b`` repeat
    their precision and noise bits.  ``noise_std`` is the largest per-coordinate std of a batch's
    binomial noise after de-biasing, ``Gamma = noise_std sqrt(d T / B)`` (the accumulated noise
    over the ``T / B`` batches, times ``sqrt(d)``, as the authors' code scales it) and
    ``lam = 2 Gamma``.
    """

    batch_size: int
    batch_sizes: tuple[tuple[int, int], ...]
    mode: str
    Delta: float
    n_labels: int
    g: tuple[float, float]
    b: tuple[int, int]
    p: float
    noise_std: float
    Gamma: float
    lam: float
    beta: float
    S: float
    context_bound: float
    reward_lo: float
    reward_hi: float
    sums: tuple[SumParams, SumParams]

    hidden: ClassVar[tuple[str, ...]] = ("sums",)

    def as_dict(self) -> dict[str, Any]:
        return _renamed(super().as_dict())

    def batch_guarantees(self) -> tuple[PrivacyGuarantee, PrivacyGuarantee]:
        """Shuffle guarantee of a regular and of the last batch (from the ``b`` actually used)."""
        return self.sums[0].guarantee(), self.sums[1].guarantee()

    def ledger(self) -> Event:
        """Each batch size's summation as accounted, composed over disjoint users."""
        parts = []
        for n, s, g in zip(
            (self.batch_sizes[0][0], self.batch_sizes[0][1]), self.sums, self.batch_guarantees()
        ):
            parts.append(
                Accounted(
                    "cheu-vector-sum",
                    float(g.epsilon),
                    float(g.delta),
                    f"n={n}, {s.n_labels} labels, g={s.g:.6g}, b={s.b}, p={s.p}, "
                    f"Delta={s.Delta:.6g}, {s.mode} mode",
                )
            )
        unique = parts[:1] if self.sums[0] == self.sums[1] else parts
        return Composed(tuple(unique), "disjoint", "batches of different users")
