"""The public plan of ShuffleGLM (Sarmasarkar 2026, Algorithm 1): batch schedule, constants, calibration.

Everything here is a function of public quantities only (``T``, ``d``, the link, the bounds and the
privacy target), so every role (clients, shuffler, server) may hold the same
:class:`ShufflePlan`.

* Batch schedule, eqs. (6)-(7): ``alpha = T^(1/(2(1 - 2^(-M+1))))`` (main text, so that
  ``B_M = T``), ``B_2 = alpha``, ``B_k = alpha sqrt(B_(k-1))``; the warm-up length ``B_1`` of eq. (6)
  contains ``e^(3S) sqrt(kappa) gamma^2`` and exceeds any simulated horizon, so the practical
  warm-up is ``clamp(ceil((d^2 alpha)^(2/3)), 10 d, floor(T/4))``.  Batches are consecutive blocks
  of rounds truncated at ``T``.
* Practical constants: the shuffle matrix sums of every batch are calibrated at
  ``rho = rho_for(eps/2, delta/2)`` and each batch's ``P_GD`` (Algorithm 7) at the same total,
  split evenly over ``T_it = clamp(ceil((n^2 rho + log(1/zeta))/d), 1, max_iters)`` rounds;
  ``lambda = 1 + B_noise``, ``lambda_max = lambda + B_noise``, ``lambda_min = 1`` with
  ``B_noise = sigma_out (2 sqrt(d) + 2 sqrt(log(2M/zeta)))``; ``gamma`` of eq. (26) with the
  constant 24 replaced by 1 and the optimisation-error term dropped.
* Accounting (:func:`batch_rho`): per user of batch ``k``, the zCDP level of the noise actually
  drawn, ``Delta_2^2 / (2 sigma^2)`` for the matrix sum plus the same for every ``P_GD`` round,
  with ``sigma`` the std of the aggregate binomial noise of the ``b`` actually used (the binomial
  treated as a Gaussian of that variance: an approximation, flagged in the guarantee).  Batches
  hold disjoint users (parallel composition: the maximum over batches).

References
----------
Sarmasarkar (2026), "Shuffle and joint differential privacy for generalized linear contextual
bandits", arXiv 2602.00417, Section 5, eqs. (6)-(7), (20)-(26), Algorithm 1, Appendix T (Lemmas
T.1-T.2, Algorithm 7); Cheu, Joseph, Mao & Peng (2022).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.algorithms.sarmasarkar.constants import rho_for
from privbandits.core.links import Link
from privbandits.core.validation import check_int, check_positive
from privbandits.privacy.cheu import SumParams, calibrated_params

__all__ = [
    "ShufflePlan",
    "batch_exponent",
    "batch_lengths",
    "batch_rho",
    "default_n_batches",
    "pgd_iterations",
    "practical_warmup",
    "shuffle_plan",
]


def default_n_batches(T: int) -> int:
    """``M = max(2, ceil(log2 log2 T))`` (practical default; Lemma F.8 needs ``M <= log log T``)."""
    T = check_int("T", T, 1)
    if T < 4:
        return 2
    return max(2, math.ceil(math.log2(math.log2(T))))


def batch_exponent(T: int, M: int) -> float:
    """``alpha = T^(1 / (2 (1 - 2^(-M+1))))`` (Sarmasarkar 2026, after eq. 7)."""
    T = check_int("T", T, 1)
    M = check_int("M", M, 2)
    return float(T) ** (1.0 / (2.0 * (1.0 - 2.0 ** (-M + 1))))


def practical_warmup(T: int, M: int, d: int) -> int:
    """``B_1 = clamp(ceil((d^2 alpha)^(2/3)), 10 d, floor(T/4))``, at least 1 (eq. 6 without its
    ``sqrt(kappa) e^(3S) gamma^2 / S`` factor)."""
    alpha = batch_exponent(T, M)
    raw = math.ceil((d * d * alpha) ** (2.0 / 3.0))
    return max(1, min(max(raw, 10 * d), T // 4))


def batch_lengths(T: int, M: int, B1: int) -> list[int]:
    """Lengths of the consecutive batches ``B_1 .. B_M`` truncated at ``T`` (eqs. 6-7).

    ``B_2 = alpha`` and ``B_k = alpha sqrt(B_(k-1))`` (unrounded recursion; each length rounded
    to ``max(1, round(B_k))``); the run stops at round ``T`` (the last batch is truncated, empty
    batches are dropped).
    """
    T = check_int("T", T, 1)
    B1 = check_int("B1", B1, 1)
    alpha = batch_exponent(T, M)
    raw = [float(B1), alpha]
    while len(raw) < M:
        raw.append(alpha * math.sqrt(raw[-1]))
    out: list[int] = []
    used = 0
    for b in raw:
        n = min(max(1, round(b)), T - used)
        if n <= 0:
            break
        out.append(n)
        used += n
    if used < T:  # B_M = T up to rounding: the last batch runs to the horizon
        out[-1] += T - used
    return out


def pgd_iterations(n: int, rho: float, d: int, zeta: float, max_iters: int) -> int:
    """``T_it = clamp(ceil((n^2 rho + log(1/zeta)) / d), 1, max_iters)`` (zCDP-optimal count, Lemma U.4)."""
    return int(min(max(1, math.ceil((n * n * rho + math.log(1.0 / zeta)) / d)), max_iters))


@dataclass(frozen=True)
class ShufflePlan:
    """Public calibration of one ShuffleGLM run (practical mode, Sarmasarkar 2026, Algorithm 1).

    Attributes
    ----------
    lengths : list of int
        Batch lengths ``B_1 .. B_M`` (truncated at ``T``).
    ends : list of int
        Cumulative ends ``tau_k`` (1-based last round of each batch).
    matrix : list of SumParams
        The ``R2`` calibration of each batch (``Delta = C_B^2`` in the warm-up, ``C_B^2 / kappa*``
        after it).
    vector : list of SumParams or None
        The per-round ``R1`` calibration of each batch's ``P_GD`` (None: no ``P_GD``, the last
        batch, whose estimate is never used for a decision).
    T_it : list of int
        ``P_GD`` rounds per batch (0 for the last batch).
    eta : list of float
        ``P_GD`` step ``D / (L sqrt(T_it))``.
    L : list of float
        Gradient clip ``(r_hi - r_lo) C_B + lambda_max S / n`` per batch.
    lam, lam_max, lam_min, gamma, kappa, kappa_star, B_noise : float
        Constants of eqs. (20)-(26) (practical values).
    S, C_B, R : float
        ``theta`` bound, context bound, reward bound ``r_hi``.
    r_lo, r_hi : float
        Reward range (user-side clipping).
    design_factor : float
        G-optimal design stopping factor (``2``: the paper's ``2d`` relaxation).
    """

    T: int
    d: int
    M: int
    lengths: list[int]
    ends: list[int]
    matrix: list[SumParams]
    vector: list[SumParams | None]
    T_it: list[int]
    eta: list[float]
    L: list[float]
    lam: float
    lam_max: float
    lam_min: float
    gamma: float
    kappa: float
    kappa_star: float
    B_noise: float
    S: float
    C_B: float
    R: float
    r_lo: float
    r_hi: float
    rho_target: float
    design_factor: float = 2.0
    resolved: dict[str, Any] = field(default_factory=dict)

    @property
    def n_batches(self) -> int:
        """Number of (non-empty) batches."""
        return len(self.lengths)

    def width_coefficients(self) -> list[float]:
        """Confidence-width factor of policy ``j``: ``gamma sqrt(kappa)`` (``V``), ``gamma`` (``H_j``).

        The analysis-consistent widths of Lemma F.9 (the paper's eqs. 12-13 print ``gamma sqrt(kappa)``
        for every ``j``).
        """
        return [self.gamma * math.sqrt(self.kappa)] + [self.gamma] * max(0, self.n_batches - 1)


def batch_rho(plan: ShufflePlan, k: int) -> float:
    """zCDP level (Gaussian approximation of the binomial noise) of one user of batch ``k``.

    ``Delta_2^2 / (2 sigma_bin^2)`` of the matrix sum plus ``T_it`` times that of one ``P_GD``
    round, with ``sigma_bin = (Delta / g) sqrt(n b p (1 - p))`` from the ``b`` actually used.
    """
    m = plan.matrix[k]
    rho = m.sensitivity**2 / (2.0 * m.binomial_noise_std**2)
    v = plan.vector[k]
    if v is not None:
        rho += plan.T_it[k] * v.sensitivity**2 / (2.0 * v.binomial_noise_std**2)
    return rho


def shuffle_plan(*, T: int, d: int, epsilon: float, delta: float, link: Link, S: float, C_B: float,
                 reward_range: tuple[float, float], M: int | None = None, zeta: float = 0.02,
                 max_iters: int = 500, design_factor: float = 2.0, gamma: float | None = None) -> ShufflePlan:
    """The practical plan of Algorithm 1 on a problem (see the module docstring for the formulas).

    ``gamma`` overrides the confidence radius of eq. (26) (a hyperparameter, as in the paper's
    Remark B.1); it changes only the policy, never the noise or the guarantee.
    """
    T = check_int("T", T, 1)
    d = check_int("d", d, 1)
    S = check_positive("S", S)
    C_B = check_positive("C_B", C_B)
    M = default_n_batches(T) if M is None else check_int("n_batches", M, 2)
    lengths = batch_lengths(T, M, practical_warmup(T, M, d))
    ends = [sum(lengths[: i + 1]) for i in range(len(lengths))]
    r_lo, r_hi = (float(v) for v in reward_range)
    kappa_star = 1.0 / float(link.dmu(np.array(0.0)))  # 1 / sup mu'
    kappa = 1.0 / link.kappa(S * C_B)  # 1 / inf_{|z| <= S C_B} mu'
    rho = rho_for(epsilon / 2.0, delta / 2.0)
    matrix = []
    for k, n in enumerate(lengths):
        Delta = C_B**2 if k == 0 else C_B**2 / kappa_star
        matrix.append(calibrated_params(n, d, Delta, delta=delta / 2.0, rho=rho, kind="matrix", psd_inputs=True,
                                        conversion="bs"))
    sigma_out = max(p.noise_std_bound for p in matrix)
    B_noise = sigma_out * (2.0 * math.sqrt(d) + 2.0 * math.sqrt(math.log(2.0 * M / zeta)))
    lam = 1.0 + B_noise
    lam_max, lam_min = lam + B_noise, 1.0
    logT = math.log(max(T, 2))
    gamma_26 = r_hi * S * math.sqrt(logT + d) + r_hi * (logT + d) / math.sqrt(lam_min) + 2.0 * S * math.sqrt(lam_max)
    gamma = gamma_26 if gamma is None else check_positive("gamma", gamma)
    vector: list[SumParams | None] = []
    T_it, eta, L = [], [], []
    for k, n in enumerate(lengths):
        Lk = (r_hi - r_lo) * C_B + lam_max * S / n
        L.append(Lk)
        if k == len(lengths) - 1:  # the last batch's estimate is never used for a decision
            vector.append(None)
            T_it.append(0)
            eta.append(0.0)
            continue
        it = pgd_iterations(n, rho, d, zeta, max_iters)
        T_it.append(it)
        eta.append(2.0 * S / (Lk * math.sqrt(it)))
        vector.append(calibrated_params(n, d, Lk, delta=delta / 2.0, rho=rho / it, kind="vector",
                                        conversion="bs"))
    resolved: dict[str, Any] = {
        "n_batches": len(lengths), "batch_lengths": lengths, "alpha": batch_exponent(T, M),
        "rho_per_part": rho, "lambda": lam, "lambda_max": lam_max, "lambda_min": lam_min, "gamma": gamma, "gamma_eq26": gamma_26,
        "kappa": kappa, "kappa_star": kappa_star, "B_noise": B_noise, "sigma_out": sigma_out,
        "matrix_b": [p.b for p in matrix], "matrix_g": [p.g for p in matrix],
        "matrix_noise_std": [p.binomial_noise_std for p in matrix],
        "pgd_iterations": T_it, "pgd_step": eta, "pgd_clip": L,
        "pgd_b": [None if v is None else v.b for v in vector], "zeta": zeta, "design_factor": design_factor,
        "widths": "analysis-consistent (gamma sqrt(kappa) for V, gamma for H_j)"}
    return ShufflePlan(T=T, d=d, M=M, lengths=lengths, ends=ends, matrix=matrix, vector=vector, T_it=T_it,
                       eta=eta, L=L, lam=lam, lam_max=lam_max, lam_min=lam_min, gamma=gamma, kappa=kappa,
                       kappa_star=kappa_star, B_noise=B_noise, S=S, C_B=C_B, R=r_hi, r_lo=r_lo, r_hi=r_hi,
                       rho_target=rho, design_factor=design_factor, resolved=resolved)
