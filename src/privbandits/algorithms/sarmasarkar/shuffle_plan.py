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
  ``rho`` (preset ``paper``: ``rho_for(eps/2, delta/2)``, the paper's halves; preset ``strict``,
  :func:`strict_plan`: raised until the accounted epsilon lies in ``[0.9 eps, eps]``) and each batch's ``P_GD`` (Algorithm 7) at the same total,
  split evenly over ``T_it = clamp(ceil((n^2 rho + log(1/zeta))/d), 1, max_iters)`` rounds;
  ``lambda = 1 + B_noise``, ``lambda_max = lambda + B_noise``, ``lambda_min = 1`` with
  ``B_noise = sigma_out (2 sqrt(d) + 2 sqrt(log(2M/zeta)))``; ``gamma`` of eq. (26) with the
  constant 24 replaced by 1 and the optimisation-error term dropped.
* Theory constants (``mode="theory"``, :func:`theory_constants`): the paper's literal formulas,
  ``sigma~ = 8 R log(d^2/delta) / (kappa* eps)`` (the constant eq. (23) implies for eq. 22),
  ``nu = (R S^2 / eps) sqrt(d log^3(T d / delta))`` (eq. 22 with constant 1),
  ``lambda`` of eq. (20), ``lambda_max / lambda_min`` of eq. (23), ``gamma`` of eq. (26) (constant
  24, with the ``sqrt(4 R S nu)`` term), the warm-up ``B_1 = (sqrt(kappa) e^(3S) d^2 gamma^2 alpha /
  S)^(2/3)`` of eq. (6) (when ``B_1 >= T`` the whole run is warm-up), the summations of eq. (122)
  at ``(eps/2, delta/2)`` and ``P_GD`` as Algorithm 7 writes it: ``T_it = floor(eps'^2 n^2 / (d
  log^3(n d / delta')))`` (capped at ``max_iters``), ``eps_it = eps' / (2 sqrt(2 T_it log(1/delta')))``
  (lowered by :func:`~privbandits.privacy.calibration.calibrate_noise` when the advanced composition with slack ``delta' / (T_it + 1)`` would exceed
  ``eps'``), ``delta_it = delta' / (T_it + 1)``, per-round eq. (122) at ``(eps_it, delta_it)``, clip
  ``L = R S + S + S lambda_max / n`` and step ``2S / (R S sqrt(T_it))``.
* Accounting (:func:`plan_guarantee`), always from the noise actually drawn.  Practical mode:
  per user of batch ``k``, the matrix sum and the ``T_it`` ``P_GD`` rounds composed by the Renyi
  route from the binomial pmf
  (:mod:`~privbandits.algorithms.sarmasarkar.binomial_composition`: windowed Renyi sums of every
  call on one grid of orders, tails added, one conversion; rigorous).  Theory mode: Lemma T.2 /
  T.1 solved for epsilon at the ``b`` used (:meth:`~privbandits.privacy.cheu.SumParams.guarantee`), the ``P_GD``
  rounds composed with advanced composition, plus the matrix sum (basic composition).  Batches
  hold disjoint users (parallel composition: the maximum over batches).

References
----------
Sarmasarkar (2026), "Shuffle and joint differential privacy for generalized linear contextual
bandits", arXiv 2602.00417, Section 5, eqs. (6)-(7), (20)-(26), Algorithm 1, Appendix T (Lemmas
T.1-T.2, Algorithm 7); Cheu, Joseph, Mao & Peng (2022).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.algorithms.calibration import Constants
from privbandits.algorithms.sarmasarkar.binomial_composition import composed_epsilon
from privbandits.algorithms.sarmasarkar.constants import rho_for
from privbandits.core.errors import ValidationError
from privbandits.core.links import Link
from privbandits.core.validation import check_choice, check_int, check_positive
from privbandits.privacy.accounting import (
    ApproxDP,
    compose_advanced,
    compose_basic,
    to_guarantee,
    zcdp_for_approx_dp,
)
from privbandits.privacy.calibration import Bracket, calibrate_noise
from privbandits.privacy.cheu import CHEU_MAX_EPSILON, SumParams, calibrated_params, theory_params
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.ledger import Accounted, BinomialSum, Composed, Event, SelfComposed

__all__ = [
    "ShuffleGLMConstants",
    "ShufflePlan",
    "batch_calls",
    "batch_exponent",
    "batch_lengths",
    "batch_rho",
    "default_n_batches",
    "pgd_iterations",
    "pgd_theory_rounds",
    "plan_guarantee",
    "plan_ledger",
    "practical_warmup",
    "shuffle_plan",
    "strict_plan",
    "sum_event",
    "theory_constants",
]

MODES = ("practical", "theory")


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


def theory_constants(
    *,
    T: int,
    d: int,
    M: int,
    epsilon: float,
    delta: float,
    R: float,
    S: float,
    kappa: float,
    kappa_star: float,
) -> dict[str, float]:
    """The literal constants of Section 5 / Appendix E.1 (theory mode).

    Returns ``sigma_tilde`` (eq. 22 with the constant 8 of eq. 23), ``nu`` (eq. 22, constant 1),
    ``lambda`` (eq. 20), ``lambda_max`` and ``lambda_min`` (eq. 23), ``gamma`` (eq. 26) and the
    unrounded warm-up length ``B_1`` (eq. 6).
    """
    logT = math.log(max(T, 2))
    sigma = 8.0 * R * math.log(max(d * d, 1) / delta) / (kappa_star * epsilon)
    nu = R * S * S / epsilon * math.sqrt(d * math.log(T * d / delta) ** 3)
    lam = 20.0 * d * R * logT + sigma * (
        2.0 * math.sqrt(math.log(2.0 * d * M * T / delta)) + 4.0 * math.sqrt(d)
    )
    spread = sigma * (4.0 * math.sqrt(d) + 2.0 * math.sqrt(math.log(2.0 * M * T / delta)))
    lam_max, lam_min = lam + spread, lam - spread
    gamma = (
        24.0 * R * S * math.sqrt(logT + d)
        + R * (logT + d) / math.sqrt(lam_min)
        + 2.0 * S * math.sqrt(lam_max)
        + math.sqrt(4.0 * R * S * nu)
    )
    B1 = (
        math.sqrt(kappa) * math.exp(3.0 * S) * d * d * gamma * gamma * batch_exponent(T, M) / S
    ) ** (2.0 / 3.0)
    return {
        "sigma_tilde": sigma,
        "nu": nu,
        "lambda": lam,
        "lambda_max": lam_max,
        "lambda_min": lam_min,
        "gamma": gamma,
        "B1": B1,
    }


def pgd_theory_rounds(
    n: int, d: int, epsilon: float, delta: float, max_iters: int
) -> tuple[int, float, float, float]:
    """``P_GD`` of Algorithm 7 at ``(epsilon, delta)``: ``(T_it, eps_it, delta_it, delta_slack)``.

    ``T_it = clamp(floor(eps^2 n^2 / (d log^3(n d / delta))), 1, max_iters)``,
    ``eps_it = eps / (2 sqrt(2 T_it log(1/delta)))``, ``delta_it = delta_slack = delta / (T_it + 1)``.
    Algorithm 7's ``eps_it`` uses ``log(1/delta)`` where the advanced composition needs
    ``log(1/delta_slack)``; when the composed epsilon exceeds ``epsilon``, ``eps_it`` is lowered
    to the largest value whose composition is at most ``epsilon``
    (:func:`~privbandits.privacy.calibration.calibrate_noise`).
    """
    T_it = int(
        min(max(1, math.floor(epsilon**2 * n * n / (d * math.log(n * d / delta) ** 3))), max_iters)
    )
    delta_it = delta / (T_it + 1)
    eps_it = epsilon / (2.0 * math.sqrt(2.0 * T_it * math.log(1.0 / delta)))

    def composed(e: float) -> float:
        return math.sqrt(2.0 * T_it * math.log(1.0 / delta_it)) * e + T_it * e * math.expm1(e)

    if composed(eps_it) > epsilon:
        eps_it = calibrate_noise(composed, epsilon, Bracket(0.0, eps_it), decreasing=False)
    return T_it, eps_it, delta_it, delta_it


@dataclass(frozen=True)
class ShuffleGLMConstants(Constants):
    """ShuffleGLM's typed calibration (Sarmasarkar 2026, Algorithm 1): the public constants of a
    plan (:class:`ShufflePlan`), stored with every result.

    Batch schedule (``n_batches``, ``batch_lengths``, ``alpha`` of eq. 7); the zCDP level each
    part is calibrated at (``rho_per_part``); ``lam`` (``lambda``, stored under that name),
    ``lambda_max``, ``lambda_min``, ``gamma`` (in use) and ``gamma_eq26`` (eq. 26), ``kappa``,
    ``kappa_star``, ``B_noise`` and ``sigma_out`` (eq. 23); per batch the matrix summations'
    ``b``, ``g`` and binomial noise std and the ``P_GD`` rounds, steps, clips and ``b``;
    theory mode only: ``sigma_tilde``, ``nu``, ``B1_eq6``, ``warmup_only``, ``pgd_eps_it``,
    ``pgd_slack``; after accounting: ``delta`` and ``epsilon_by_batch``.  Fields that do not
    apply (None) are left out of :meth:`as_dict`.
    """

    mode: str
    n_batches: int
    batch_lengths: tuple[int, ...]
    alpha: float
    rho_per_part: float
    lam: float
    lambda_max: float
    lambda_min: float
    gamma: float
    gamma_eq26: float
    kappa: float
    kappa_star: float
    B_noise: float
    sigma_out: float
    matrix_b: tuple[int, ...]
    matrix_g: tuple[float, ...]
    matrix_noise_std: tuple[float, ...]
    pgd_iterations: tuple[int, ...]
    pgd_step: tuple[float, ...]
    pgd_clip: tuple[float, ...]
    pgd_b: tuple[int | None, ...]
    zeta: float
    design_factor: float
    widths: str = "analysis-consistent (gamma sqrt(kappa) for V, gamma for H_j)"
    sigma_tilde: float | None = None
    nu: float | None = None
    B1_eq6: float | None = None
    warmup_only: bool | None = None
    pgd_eps_it: tuple[float, ...] | None = None
    pgd_slack: tuple[float, ...] | None = None
    delta: float | None = None
    epsilon_by_batch: tuple[float, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in super().as_dict().items():
            if v is None:
                continue
            out["lambda" if k == "lam" else k] = v
        return out


@dataclass(frozen=True)
class ShufflePlan:
    """Public calibration of one ShuffleGLM run (Sarmasarkar 2026, Algorithm 1).

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
    mode : {"practical", "theory"}
        Which constants (module docstring).
    pgd_slack : list of float
        Theory mode: the advanced-composition slack ``delta'`` of each batch's ``P_GD`` (0 otherwise).
    constants : ShuffleGLMConstants or None
        The plan's constants as the typed calibration records them.
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
    mode: str = "practical"
    pgd_slack: list[float] = field(default_factory=list)
    constants: ShuffleGLMConstants | None = None

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


def batch_calls(plan: ShufflePlan, k: int) -> list[tuple[SumParams, int]]:
    """The summation calls one user of batch ``k`` takes part in: ``(matrix, 1)`` and ``(P_GD round, T_it)``."""
    calls: list[tuple[SumParams, int]] = [(plan.matrix[k], 1)]
    v = plan.vector[k]
    if v is not None and plan.T_it[k] > 0:
        calls.append((v, plan.T_it[k]))
    return calls


def sum_event(params: SumParams, what: str) -> BinomialSum:
    """One Cheu et al. summation call of the plan as a ledger event (its binomial noise)."""
    return BinomialSum(
        n=params.n,
        b=params.b,
        p=params.p,
        g=params.g,
        Delta=params.Delta,
        labels=params.n_labels,
        sensitivity=params.sensitivity,
        what=what,
    )


#: How the practical mode composes one batch's calls (the ledger's words).
RENYI_ROUTE = (
    "Renyi route from the binomial pmf: windowed Renyi sums of every call on one grid of "
    "orders, window tails added, one conversion"
)


def plan_ledger(plan: ShufflePlan, eps_by_batch: list[float], deltas: list[float]) -> Event:
    """The ledger of a plan's guarantee: per batch (disjoint users) the statement of the
    library's accountant on that batch's calls (the matrix summation and the ``T_it`` ``P_GD``
    rounds, each a :class:`~privbandits.privacy.ledger.BinomialSum` with the noise the users add).
    """
    batches: list[Event] = []
    for k in range(plan.n_batches):
        calls: list[Event] = [sum_event(plan.matrix[k], "the batch's matrix x x^T (R2)")]
        v = plan.vector[k]
        if v is not None and plan.T_it[k] > 0:
            rule = "rdp" if plan.mode == "practical" else "advanced"
            calls.append(
                SelfComposed(
                    sum_event(v, "one P_GD round's clipped gradients (R1)"),
                    plan.T_it[k],
                    rule,
                    what="P_GD rounds (Algorithm 7)",
                )
            )
        how = (
            RENYI_ROUTE
            if plan.mode == "practical"
            else "Lemma T.2 (matrix) + the P_GD rounds of Lemma T.1 under advanced composition, "
            "basic composition"
        )
        batches.append(
            Accounted(
                f"batch {k + 1} ({plan.lengths[k]} users)",
                eps_by_batch[k],
                deltas[k],
                how,
                tuple(calls),
            )
        )
    return Composed(tuple(batches), "disjoint", what="ShuffleGLM: batches of disjoint users")


def plan_guarantee(plan: ShufflePlan, delta: float) -> tuple[PrivacyGuarantee, list[float]]:
    """The run's guarantee from the noise the plan injects, and the per-batch epsilon (or rho).

    Practical mode: per batch, the matrix sum and the ``T_it`` ``P_GD`` rounds composed by
    :func:`~privbandits.algorithms.sarmasarkar.binomial_composition.composed_epsilon` (the
    binomial pmf, Renyi route: rigorous); the list holds the per-batch epsilon.
    Theory mode: per batch, the matrix sum's guarantee (Lemma T.2 at the ``b`` used) composed
    (basic) with the ``T_it``-fold advanced composition (slack ``plan.pgd_slack[k]``) of the
    ``P_GD`` rounds' guarantees (Lemma T.1 at the ``b`` used); the maximum over the disjoint
    batches.  A call outside Lemma T.1 is accounted by :meth:`SumParams.guarantee` (binomial pmf,
    or the flagged Gaussian approximation when that is intractable); the list holds the per-batch
    epsilon.
    """
    if plan.mode == "practical":
        eps_k = [composed_epsilon(batch_calls(plan, k), delta) for k in range(plan.n_batches)]
        notes = (
            f"Sarmasarkar (2026) Alg. 1, practical constants: per batch the Cheu et al. matrix sum and "
            f"{plan.T_it} P_GD rounds, composed by the Renyi route from the binomial pmf (windowed Renyi "
            "sums of every call summed on one grid of orders, window tails added, one conversion; an upper "
            "bound, no Gaussian approximation); epsilon by batch "
            f"{[round(e, 6) for e in eps_k]}, batches disjoint (max)"
        )
        if not all(math.isfinite(e) for e in eps_k):
            return PrivacyGuarantee(
                model="none", epsilon=math.inf, delta=delta, unit="user", notes=notes
            ), eps_k
        ledger = plan_ledger(plan, eps_k, [delta] * plan.n_batches)
        g = to_guarantee(ApproxDP(max(eps_k), delta), "shuffle", "user", notes, ledger=ledger)
        return g, eps_k
    parts: list[tuple[float, float]] = []  # (epsilon, delta) per batch; inf: no finite epsilon
    approximate = False
    for k in range(plan.n_batches):
        gm = plan.matrix[k].guarantee()
        v = plan.vector[k]
        gv = None if v is None else v.guarantee()
        if not gm.is_private or (gv is not None and not gv.is_private):
            parts.append((math.inf, 0.0))
            continue
        approximate |= gm.approximate
        pieces = [ApproxDP(gm.epsilon, gm.delta)]
        if gv is not None:
            approximate |= gv.approximate
            pieces.append(
                compose_advanced(ApproxDP(gv.epsilon, gv.delta), plan.T_it[k], plan.pgd_slack[k])
            )
        c = compose_basic(pieces)
        parts.append((c.epsilon, c.delta))
    eps_by_batch = [e for e, _ in parts]
    if not all(math.isfinite(e) for e in eps_by_batch):
        return PrivacyGuarantee(
            model="none",
            epsilon=math.inf,
            delta=0.0,
            unit="user",
            notes="theory constants: some summation call has no finite epsilon",
        ), eps_by_batch
    notes = (
        f"Sarmasarkar (2026) Alg. 1, theory constants: per batch Lemma T.2 (matrix sum, eq. 122 at the b "
        f"used) + {plan.T_it} P_GD rounds of Lemma T.1 under advanced composition (Algorithm 7); epsilon by "
        f"batch {[round(e, 6) for e in eps_by_batch]}, batches disjoint (max); a call outside Lemma T.1 "
        "is accounted from the binomial pmf"
        + (
            "; some call is accounted by the Gaussian approximation (APPROXIMATE)"
            if approximate
            else ""
        )
    )
    ledger = plan_ledger(plan, eps_by_batch, [d for _, d in parts])
    g = to_guarantee(
        ApproxDP(max(eps_by_batch), max(d for _, d in parts)),
        "shuffle",
        "user",
        notes,
        ledger=ledger,
    )
    return dataclasses.replace(g, approximate=approximate), eps_by_batch


def shuffle_plan(
    *,
    T: int,
    d: int,
    epsilon: float,
    delta: float,
    link: Link,
    S: float,
    C_B: float,
    reward_range: tuple[float, float],
    M: int | None = None,
    zeta: float = 0.02,
    max_iters: int = 500,
    design_factor: float = 2.0,
    gamma: float | None = None,
    mode: str = "practical",
    warmup: int | None = None,
    rho_part: float | None = None,
) -> ShufflePlan:
    """The plan of Algorithm 1 on a problem (see the module docstring for the formulas of each mode).

    ``gamma`` overrides the confidence radius of eq. (26) (a hyperparameter, as in the paper's
    Remark B.1); it changes only the policy, never the noise or the guarantee.  ``warmup``
    overrides the warm-up length ``B_1`` (default: the mode's formula); the calibration and the
    guarantee follow the resulting batch sizes.  ``rho_part`` (practical mode) overrides the zCDP
    level each of the two parts (matrix sums, ``P_GD``) is calibrated at (default: the paper's
    halves ``rho_for(eps/2, delta/2)``; :func:`strict_plan` raises it until the accounted
    guarantee meets the request tightly).
    """
    T = check_int("T", T, 1)
    d = check_int("d", d, 1)
    S = check_positive("S", S)
    C_B = check_positive("C_B", C_B)
    mode = check_choice("mode", mode, MODES)
    M = default_n_batches(T) if M is None else check_int("n_batches", M, 2)
    r_lo, r_hi = (float(v) for v in reward_range)
    kappa_star = 1.0 / float(link.dmu(np.array(0.0)))  # 1 / sup mu'
    kappa = 1.0 / link.kappa(S * C_B)  # 1 / inf_{|z| <= S C_B} mu'
    logT = math.log(max(T, 2))
    if mode == "theory":
        if epsilon / 2.0 > CHEU_MAX_EPSILON:
            raise ValidationError(
                f"epsilon={epsilon:g}: theory mode runs the Cheu et al. summation at epsilon/2, "
                f"which Lemma T.2 covers up to {CHEU_MAX_EPSILON:g}; use epsilon <= "
                f"{2 * CHEU_MAX_EPSILON:g} or mode='practical'"
            )
        th = theory_constants(
            T=T,
            d=d,
            M=M,
            epsilon=epsilon,
            delta=delta,
            R=r_hi,
            S=S,
            kappa=kappa,
            kappa_star=kappa_star,
        )
        B1 = max(1, min(T, round(th["B1"]))) if warmup is None else check_int("warmup", warmup, 1)
    else:
        B1 = practical_warmup(T, M, d) if warmup is None else check_int("warmup", warmup, 1)
    lengths = batch_lengths(T, M, B1) if B1 < T else [T]  # B_1 >= T: the whole run is warm-up
    ends = [sum(lengths[: i + 1]) for i in range(len(lengths))]
    rho = rho_for(epsilon / 2.0, delta / 2.0) if rho_part is None else float(rho_part)
    matrix = []
    for k, n in enumerate(lengths):
        Delta = C_B**2 if k == 0 else C_B**2 / kappa_star
        if mode == "theory":
            matrix.append(
                theory_params(
                    n, d, epsilon / 2.0, delta / 2.0, Delta, kind="matrix", psd_inputs=True
                )
            )
        else:
            matrix.append(
                calibrated_params(
                    n,
                    d,
                    Delta,
                    delta=delta / 2.0,
                    rho=rho,
                    kind="matrix",
                    psd_inputs=True,
                    conversion="bs",
                )
            )
    sigma_out = max(p.noise_std_bound for p in matrix)
    if mode == "theory":
        B_noise = (
            th["lambda_max"] - th["lambda"]
        )  # eq. (23)'s high-probability bound on the noise norm
        lam, lam_max, lam_min, gamma_26 = (
            th["lambda"],
            th["lambda_max"],
            th["lambda_min"],
            th["gamma"],
        )
    else:
        B_noise = sigma_out * (2.0 * math.sqrt(d) + 2.0 * math.sqrt(math.log(2.0 * M / zeta)))
        lam = 1.0 + B_noise
        lam_max, lam_min = lam + B_noise, 1.0
        gamma_26 = (
            r_hi * S * math.sqrt(logT + d)
            + r_hi * (logT + d) / math.sqrt(lam_min)
            + 2.0 * S * math.sqrt(lam_max)
        )
    gamma = gamma_26 if gamma is None else check_positive("gamma", gamma)
    vector: list[SumParams | None] = []
    T_it, eta, L, slack, eps_it = [], [], [], [], []
    for k, n in enumerate(lengths):
        if mode == "theory":
            Lk = (
                r_hi * S + S + S * lam_max / n
            )  # E.4's Lipschitz bound (the tight one is R + lambda_max S / n)
        else:
            Lk = (r_hi - r_lo) * C_B + lam_max * S / n
        L.append(Lk)
        if k == len(lengths) - 1:  # the last batch's estimate is never used for a decision
            vector.append(None)
            T_it.append(0)
            eta.append(0.0)
            slack.append(0.0)
            continue
        if mode == "theory":
            it, e_it, d_it, sl = pgd_theory_rounds(n, d, epsilon / 2.0, delta / 2.0, max_iters)
            eta.append(
                2.0 * S / (r_hi * S * math.sqrt(it))
            )  # main text: eta = 2S / (R S sqrt(T_it))
            vector.append(theory_params(n, d, e_it, d_it, Lk, kind="vector"))
            slack.append(sl)
            eps_it.append(e_it)
        else:
            it = pgd_iterations(n, rho, d, zeta, max_iters)
            eta.append(2.0 * S / (Lk * math.sqrt(it)))
            vector.append(
                calibrated_params(
                    n, d, Lk, delta=delta / 2.0, rho=rho / it, kind="vector", conversion="bs"
                )
            )
            slack.append(0.0)
        T_it.append(it)
    theory = mode == "theory"
    constants = ShuffleGLMConstants(
        mode=mode,
        n_batches=len(lengths),
        batch_lengths=tuple(lengths),
        alpha=batch_exponent(T, M),
        rho_per_part=rho,
        lam=lam,
        lambda_max=lam_max,
        lambda_min=lam_min,
        gamma=gamma,
        gamma_eq26=gamma_26,
        kappa=kappa,
        kappa_star=kappa_star,
        B_noise=B_noise,
        sigma_out=sigma_out,
        matrix_b=tuple(p.b for p in matrix),
        matrix_g=tuple(p.g for p in matrix),
        matrix_noise_std=tuple(p.binomial_noise_std for p in matrix),
        pgd_iterations=tuple(T_it),
        pgd_step=tuple(eta),
        pgd_clip=tuple(L),
        pgd_b=tuple(None if v is None else v.b for v in vector),
        zeta=zeta,
        design_factor=design_factor,
        sigma_tilde=th["sigma_tilde"] if theory else None,
        nu=th["nu"] if theory else None,
        B1_eq6=th["B1"] if theory else None,
        warmup_only=len(lengths) == 1 if theory else None,
        pgd_eps_it=tuple(eps_it) if theory else None,
        pgd_slack=tuple(slack) if theory else None,
    )
    return ShufflePlan(
        T=T,
        d=d,
        M=M,
        lengths=lengths,
        ends=ends,
        matrix=matrix,
        vector=vector,
        T_it=T_it,
        eta=eta,
        L=L,
        lam=lam,
        lam_max=lam_max,
        lam_min=lam_min,
        gamma=gamma,
        kappa=kappa,
        kappa_star=kappa_star,
        B_noise=B_noise,
        S=S,
        C_B=C_B,
        R=r_hi,
        r_lo=r_lo,
        r_hi=r_hi,
        rho_target=rho,
        design_factor=design_factor,
        mode=mode,
        pgd_slack=slack,
        constants=constants,
    )


#: Accounted epsilon the strict calibration aims at, as a fraction of the request (inside [0.9, 1]).
STRICT_TARGET: float = 0.96


def _strict_key(kw: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted((k, getattr(v, "name", v)) for k, v in kw.items()))


_STRICT_CACHE: dict[tuple[Any, ...], ShufflePlan] = {}


def strict_plan(**kw: Any) -> ShufflePlan:
    """The practical plan whose accounted epsilon (:func:`plan_guarantee`) lies in ``[0.9 eps, eps]``.

    Takes the keyword arguments of :func:`shuffle_plan` (practical mode).  Both parts are
    calibrated at a common ``rho_part = c rho_CKS(eps, delta) / 2``; ``c`` is adjusted by secant
    steps on ``log eps(c)`` against ``log c`` until the rigorous composed epsilon lies in
    ``[0.9 eps, eps]`` (aiming at :data:`STRICT_TARGET`); the plan with the largest accounted
    epsilon not above the request is kept.  Memoized on the arguments (a public function of
    public inputs).
    """
    key = _strict_key(kw)
    if key in _STRICT_CACHE:
        return _STRICT_CACHE[key]
    eps, delta = float(kw["epsilon"]), float(kw["delta"])
    base = 0.5 * zcdp_for_approx_dp(eps, delta, method="cks").rho
    target = STRICT_TARGET * eps

    def accounted(c: float) -> tuple[ShufflePlan, float]:
        plan = shuffle_plan(**kw, rho_part=base * c)
        return plan, max(plan_guarantee(plan, delta)[1])

    best: tuple[ShufflePlan, float] | None = None
    pts: list[tuple[float, float]] = []
    c = 1.0
    for _ in range(10):
        plan, e = accounted(c)
        if e <= eps and (best is None or e > best[1]):
            best = (plan, e)
        if 0.9 * eps <= e <= eps:
            break
        pts.append((math.log(c), math.log(e) if math.isfinite(e) and e > 0 else math.inf))
        if (
            len(pts) >= 2
            and all(math.isfinite(y) for _, y in pts[-2:])
            and pts[-1][1] != pts[-2][1]
        ):
            (x0, y0), (x1, y1) = pts[-2], pts[-1]
            slope = min(max((y1 - y0) / (x1 - x0), 0.3), 3.0)
        else:
            slope = 0.5
        if not math.isfinite(pts[-1][1]):
            c *= 0.5
        else:
            c *= math.exp((math.log(target) - pts[-1][1]) / slope)
    if best is None:
        raise ValidationError(
            f"no practical calibration of ShuffleGLM meets epsilon={eps:g}, delta={delta:g}"
        )
    _STRICT_CACHE[key] = best[0]
    return best[0]
