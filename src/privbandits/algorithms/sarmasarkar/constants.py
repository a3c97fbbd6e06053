"""Constants of Sarmasarkar (2026), Algorithm 2 (JDP-GLM): ``theory`` (the paper's formulas) and ``practical``.

``theory`` evaluates the paper's literal expressions (section 6 and Appendix J: lambda of eq. (50),
beta (51), gamma (52), the Criterion-I threshold ``1/(gamma^2 kappa R^2)``, the tree noise of
Appendix J.3 and the optimizer budget ``eps^2 / (144 log(8/delta))`` per family) with the unnamed
constant ``C`` of (51)-(52) as a parameter; these values are astronomically conservative at any
simulation size.  ``practical`` calibrates the same mechanisms exactly (zCDP, the exact inverse
``rho_for(eps, delta) = (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2`` of the Bun-Steinke
conversion) and takes the hyper-parameters the paper leaves open (Remark B.1) from the reference
implementation of RS-GLinUCB (Sawarni et al. 2024).

In both modes the reported guarantee is computed by :func:`jdp_glm_accounting` from the noise the
resolved constants add, never assumed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privbandits.algorithms.calibration import Constants
from privbandits.core.errors import ValidationError
from privbandits.core.links import Link
from privbandits.core.spec import EnvSpec
from privbandits.privacy.accounting import zcdp_for_approx_dp
from privbandits.privacy.tree import max_nodes_per_leaf, tree_levels

__all__ = [
    "JDPConstants",
    "count2_cutoff_practical",
    "count2_cutoff_theory",
    "exact_tree_nodes",
    "jdp_glm_constants",
    "lambda_practical",
    "lambda_theory",
    "n_public_refreshes",
    "resolve_kappas",
    "rho_for",
    "theory_tree_sigma",
    "w_max_for",
    "worst_change",
]


def rho_for(epsilon: float, delta: float) -> float:
    """``(sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2``: the largest rho whose Bun-Steinke conversion is ``(eps, delta)``."""
    return zcdp_for_approx_dp(epsilon, delta, method="bs").rho


def worst_change(cases: dict[str, float]) -> tuple[str, float]:
    """The form of one user's change with the largest zCDP cost and that cost (the JDP
    statement is the worst form's; the first named form wins a tie)."""
    worst = max(cases, key=lambda k: cases[k])
    return worst, cases[worst]


def w_max_for(link: Link, kappa_star: float) -> float:
    """Clip of the H-tree leaf weight: ``min(1/kappa*, sup mu' / e)`` (a deterministic sensitivity)."""
    sup_dmu = float(link.dmu(np.array(0.0)))
    return min(1.0 / kappa_star, sup_dmu / math.e)


def lambda_theory(
    d: int, T: int, epsilon: float, delta: float, zeta: float, kappa_star: float
) -> float:
    """Eq. (50): ``(5/4) d Lambda_T + 100 sqrt(d) Lambda_delta log T (sqrt(Lambda_T) + sqrt(d)) / (eps kappa*)``."""
    LT, Ld = math.log(T / zeta), math.log(1.0 / delta)
    return 1.25 * d * LT + 100.0 * math.sqrt(d) * Ld * math.log(T) * (
        math.sqrt(LT) + math.sqrt(d)
    ) / (epsilon * kappa_star)


def lambda_practical(sigma: float, m: int, d: int, T: int, zeta: float, lam0: float) -> float:
    """``lam0 + sigma sqrt(m) (2 sqrt(d) + sqrt(2 ln(8T/zeta)))``: a high-probability bound on the prefix noise norm."""
    return lam0 + sigma * math.sqrt(m) * (
        2.0 * math.sqrt(d) + math.sqrt(2.0 * math.log(8.0 * T / zeta))
    )


def theory_tree_sigma(m: int, epsilon: float, delta: float, kappa_star: float) -> float:
    """Appendix J.3: ``sigma_noise^2 = 72 m log^2(32/delta) / (kappa*^2 eps^2)``."""
    return math.sqrt(72.0 * m * math.log(32.0 / delta) ** 2 / (kappa_star**2 * epsilon**2))


def count2_cutoff_theory(d: int, T: int, R: float) -> int:
    """Cap on the Criterion-II optimizer calls: ``4 d log2(1 + T R^3 / d)`` (Lemma P.4's factor d restored)."""
    return math.ceil(4.0 * d * math.log2(1.0 + T * R**3 / d))


def count2_cutoff_practical(d: int, T: int, w_max: float, lam_min_H: float) -> int:
    """``ceil(1 + d log(1 + T w_max / (d lam_min)) / log(11/8))`` (Lemma P.4 with the clipped weights)."""
    return math.ceil(1.0 + d * math.log(1.0 + T * w_max / (d * lam_min_H)) / math.log(11.0 / 8.0))


def n_public_refreshes(T: int) -> int:
    """Number of rounds ``t = 2^k`` (``k >= 1``, ``t <= T``) at which the exploration estimate is refreshed."""
    return max(T.bit_length() - 1, 0)


@dataclass(frozen=True)
class JDPConstants(Constants):
    """The constants of Algorithm 2 resolved on a problem (JSON-serializable through :meth:`as_dict`).

    Noise: ``sigma_V`` and ``sigma_H`` per tree node (``m`` levels), the optimizer families'
    zCDP budget per call ``rho_o_call`` / ``rho_tau_call``; regularizers ``lam_V``, ``lam_H`` (trees),
    ``lam_reg_o``, ``lam_reg_tau`` (DPPGD), ``lam_min_V``; the Criterion-I threshold ``thr``, the
    radii ``gamma`` and ``beta``, the leaf-weight clip ``w_max``, the Criterion-II cutoff
    ``count2_cutoff`` and the public refits ``n_refresh``.
    """

    mode: str
    kappa: float
    kappa_star: float
    w_max: float
    m: int
    sigma_V: float
    sigma_H: float
    lam_V: float
    lam_H: float
    lam_reg_o: float
    lam_reg_tau: float
    lam_min_V: float
    thr: float
    gamma: float
    beta: float
    count2_cutoff: int
    n_refresh: int
    rho_o_call: float
    rho_tau_call: float
    zeta_opt_o: float
    zeta_opt_tau: float
    component_epsilon: float
    component_delta: float


def jdp_glm_constants(
    *,
    d: int,
    T: int,
    epsilon: float,
    delta: float,
    zeta: float,
    link: Link,
    R: float,
    S: float,
    kappa: float,
    kappa_star: float,
    mode: str,
    split: str,
    c_thr: float,
    lam0: float,
    C: float,
) -> JDPConstants:
    """Resolve the constants of Algorithm 2 (see the module docstring).

    Practical: each component gets ``(eps/3, delta/3)`` (``split="thirds"``, the paper's split;
    ``"halves"``: ``(eps/2, delta/2)`` for trees and optimizers, since the switching indicators are
    post-processing of the V tree); ``split="zcdp"`` instead gives trees and optimizers
    ``rho/2`` each of the ``rho`` whose Canonne-Kamath-Steinke conversion is ``(eps, delta)`` (the
    composition then spends the whole budget);
    trees ``rho_tree = rho_for(eps_c, delta_c)`` with ``rho_node = rho_tree/m`` and the replacement
    sensitivities ``sqrt(2)`` (V) and ``sqrt(2) w_max`` (H); optimizer families ``rho_for(eps_c,
    delta_c)`` each, split over the public refresh schedule (exploration estimate) and the
    Criterion-II cutoff.
    """
    m = tree_levels(T)
    w_max = w_max_for(link, kappa_star)
    LT, Ld = math.log(T / zeta), math.log(1.0 / delta)
    n_refresh = n_public_refreshes(T)
    if mode == "theory":
        parts = 3
        lam = lambda_theory(d, T, epsilon, delta, zeta, kappa_star)
        lam_max = (4.0 * math.sqrt(d) + 2.0) / (4.0 * math.sqrt(d) + 1.0) * lam
        lam_min = 4.0 * math.sqrt(d) / (4.0 * math.sqrt(d) + 1.0) * lam
        gamma = C * (
            R**2 * S * math.sqrt(d * LT)
            + R**2
            * S
            * d**0.25
            * math.sqrt(LT)
            * (d + LT) ** 0.25
            * math.sqrt(Ld)
            / math.sqrt(epsilon * kappa_star)
            + R**4 * S**4 * d * math.sqrt(kappa) * LT * math.sqrt(Ld) / epsilon
        )
        beta = C * (
            R * math.sqrt(d * LT)
            + R
            * S
            * d**0.25
            * math.sqrt(LT)
            * math.sqrt(Ld)
            * (d + LT) ** 0.25
            / math.sqrt(epsilon * min(kappa_star, 1.0))
        )
        thr = 1.0 / (gamma**2 * kappa * R**2)
        sigma = theory_tree_sigma(m, epsilon, delta, kappa_star)
        sigma_V = sigma_H = sigma
        count2 = count2_cutoff_theory(d, T, R)
        rho_family = epsilon**2 / (144.0 * math.log(8.0 / delta))
        lam_V = lam_H = lam
        lam_reg_o = lam_reg_tau = lam_max
        lam_min_V = lam_min
        zeta_o = zeta_t = 1.0 / float(T) ** 6
    else:
        parts = {"thirds": 3, "halves": 2, "zcdp": 1}[split]
        if split == "zcdp":
            rho_c = 0.5 * zcdp_for_approx_dp(epsilon, delta, method="cks").rho
        else:
            rho_c = rho_for(epsilon / parts, delta / parts)
        rho_node = rho_c / m
        sigma_V = math.sqrt(2.0) / math.sqrt(2.0 * rho_node)
        sigma_H = math.sqrt(2.0) * w_max / math.sqrt(2.0 * rho_node)
        lam_V = lambda_practical(sigma_V, m, d, T, zeta, lam0)
        lam_H = lambda_practical(sigma_H, m, d, T, zeta, lam0)
        lam_reg_o, lam_reg_tau = 2.0 * lam_V - lam0, 2.0 * lam_H - lam0
        lam_min_V = lam0
        thr = 1.0 / (c_thr * kappa * R**4 * S**2 * d)
        gamma = R * S * math.sqrt(d * LT)
        beta = 4.0 * math.sqrt(d * LT)
        count2 = count2_cutoff_practical(d, T, w_max, lam0)
        rho_family = rho_c
        zeta_o = zeta / (8.0 * max(n_refresh, 1))
        zeta_t = zeta / (8.0 * count2)
    return JDPConstants(
        mode=mode,
        kappa=kappa,
        kappa_star=kappa_star,
        w_max=w_max,
        m=m,
        sigma_V=sigma_V,
        sigma_H=sigma_H,
        lam_V=lam_V,
        lam_H=lam_H,
        lam_reg_o=lam_reg_o,
        lam_reg_tau=lam_reg_tau,
        lam_min_V=lam_min_V,
        thr=thr,
        gamma=gamma,
        beta=beta,
        count2_cutoff=count2,
        n_refresh=n_refresh,
        rho_o_call=rho_family / max(n_refresh, 1),
        rho_tau_call=rho_family / count2,
        zeta_opt_o=zeta_o,
        zeta_opt_tau=zeta_t,
        component_epsilon=epsilon / parts,
        component_delta=delta / parts,
    )


def exact_tree_nodes(T: int) -> int:
    """Completed nodes a leaf can enter within ``T`` rounds (``bit_length(T)``), used by the accountant."""
    return max_nodes_per_leaf(T)


def resolve_kappas(
    spec: EnvSpec, S: float, kappa: float | None, kappa_star: float | None
) -> tuple[float, float]:
    """``kappa`` (upper bound, default ``1/min_{|z| <= S} mu'``) and ``kappa*`` (lower bound, default ``1/sup mu'``)."""
    link = spec.link
    if kappa is None:
        k_inf = link.kappa(spec.context_bound * S)
        if k_inf <= 0.0:
            raise ValidationError(f"link {link.name!r} has inf mu' = 0 on |z| <= {S:g}; pass kappa")
        kappa = 1.0 / k_inf
    if kappa_star is None:
        kappa_star = 1.0 / float(link.dmu(np.array(0.0)))
    return float(kappa), float(kappa_star)
