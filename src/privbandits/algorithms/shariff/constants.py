"""Constants and accounting of joint-DP LinUCB (Shariff & Sheffet 2018, sections 4.2-4.4).

Pure functions of the public problem: the number of tree levels ``m``, the node noise of the
Gaussian and the Wishart mechanisms, the regularizer bounds ``(rho_min, rho_max, gamma)`` each
mechanism guarantees with probability ``1 - alpha/(2n)`` per round, the shift added once to the
released Gram matrix, and the privacy accounting of the noise actually added.

Notation of the paper: ``n`` horizon, ``d`` action dimension, ``L~ = sqrt(L^2 + B~^2)`` the bound on
a row ``z_t = (x_t, y_t)`` (action and reward), ``m = 1 + ceil(log2 n)`` tree levels.

References
----------
Shariff & Sheffet (2018), "Differentially Private Contextual Linear Bandits", NeurIPS:
Algorithm 1, Proposition 2 (confidence radius), section 4.2 (tree mechanism), section 4.3
(Wishart noise), section 4.4 (Gaussian noise); the authors' code
``github.com/roshanshariff/PrivateBandits.jl`` (``src/DifferentialPrivacy.jl``).
Sheffet (2015), "Private approximations of the 2nd-moment matrix using existing techniques in
linear regression", Theorem 4.1 (Wishart mechanism).  Balle & Wang (2018), analytic Gaussian.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from privbandits.algorithms.calibration import Constants
from privbandits.core.errors import PrivacyError, ValidationError
from privbandits.privacy.accounting import ApproxDP, compose_advanced
from privbandits.privacy.calibration import gaussian_epsilon, gaussian_sigma_analytic
from privbandits.privacy.ledger import Accounted, Event, Gaussian, SelfComposed
from privbandits.privacy.tree import max_nodes_per_leaf, tree_levels

__all__ = [
    "JDPConstants",
    "Regularizer",
    "gaussian_accounting",
    "gaussian_ledger",
    "gaussian_regularizer",
    "gaussian_sigma_paper",
    "gaussian_sigma_strict",
    "levels",
    "wishart_accounting",
    "wishart_dof_authors",
    "wishart_dof_paper",
    "wishart_dof_strict",
    "wishart_ledger",
    "wishart_regularizer",
]


def levels(n: int) -> int:
    """``m = 1 + ceil(log2 n)`` noise terms in every released prefix (section 4.2)."""
    return tree_levels(n)


@dataclass(frozen=True)
class Regularizer:
    """Bounds of the regularizer ``H_t`` and of ``h_t`` (Shariff & Sheffet 2018, section 4.1).

    With probability ``>= 1 - alpha/(2n)`` per round: ``||H_t|| <= rho_max``,
    ``lambda_min(H_t) >= rho_min`` and ``||h_t||_{H_t^{-1}} <= gamma``.  ``shift`` is added once
    to the released Gram block (``+2 Upsilon I`` for Gaussian noise, ``-c I`` for shifted Wishart).
    """

    rho_min: float
    rho_max: float
    gamma: float
    shift: float


# ----------------------------------------------------------------------------------------------
# Gaussian noise (section 4.4)
# ----------------------------------------------------------------------------------------------
def gaussian_sigma_paper(m: int, L_tilde: float, epsilon: float, delta: float) -> float:
    """``sigma_noise = 4 sqrt(m) L~^2 ln(4/delta) / epsilon`` (section 4.4; also the authors' code)."""
    return 4.0 * math.sqrt(m) * L_tilde**2 * math.log(4.0 / delta) / epsilon


def gaussian_sigma_strict(T: int, L_tilde: float, epsilon: float, delta: float) -> float:
    """Smallest node ``sigma_noise`` whose whole release is ``(epsilon, delta)``-DP (analytic Gaussian).

    Node noise ``(Z' + Z'^T)/sqrt(2)``, ``Z'`` i.i.d. ``N(0, sigma^2)``: off-diagonal variance
    ``sigma^2``, diagonal ``2 sigma^2``.  Replacing a row changes a node by ``Delta = z z^T -
    z' z'^T`` with ``||Delta||_F^2 <= 2 L~^4``; whitened, one node moves by at most ``L~^2/sigma``.
    A row enters ``h = bit_length(T)`` nodes with independent noise, so the adaptive release is a
    Gaussian mechanism of sensitivity ``sqrt(h) L~^2`` at unit noise ``sigma``.
    """
    h = max_nodes_per_leaf(T)
    return gaussian_sigma_analytic(epsilon, delta, math.sqrt(h) * L_tilde**2)


def gaussian_accounting(T: int, L_tilde: float, sigma: float, delta: float) -> ApproxDP:
    """``(epsilon, delta)`` of the Gaussian tree with node ``sigma_noise = sigma`` (exact, analytic)."""
    h = max_nodes_per_leaf(T)
    return ApproxDP(gaussian_epsilon(sigma, delta, math.sqrt(h) * L_tilde**2), delta)


def gaussian_regularizer(
    m: int, d: int, n: int, sigma: float, alpha: float, *, form: str = "paper"
) -> Regularizer:
    """``(rho_min, rho_max, gamma)`` and the shift ``2 Upsilon`` of the shifted Gaussian mechanism.

    ``paper`` (section 4.4, per-round failure ``alpha/(2n)``):
    ``Upsilon = sigma sqrt(2m) (4 sqrt(d) + 2 ln(2n/alpha))``, ``rho_min = Upsilon``,
    ``rho_max = 3 Upsilon``, ``gamma = sqrt(m/Upsilon) sigma (sqrt(d) + sqrt(2 ln(2n/alpha)))``.
    ``authors_code``: ``alpha' = alpha / nextpow2(n)`` per round, ``Upsilon = sigma sqrt(2m)
    (sqrt(16 d) - 2 ln alpha')``, ``gamma = sqrt(m) sigma (sqrt(d) + sqrt(-2 ln alpha'))/sqrt(Upsilon)``.
    """
    if form == "authors_code":
        a1 = alpha / (1 << (n - 1).bit_length())
        ups = sigma * math.sqrt(2.0 * m) * (math.sqrt(16.0 * d) - 2.0 * math.log(a1))
        gamma = math.sqrt(m) * sigma * (math.sqrt(d) + math.sqrt(-2.0 * math.log(a1)))
        return Regularizer(ups, 3.0 * ups, gamma / math.sqrt(ups), 2.0 * ups)
    lg = math.log(2.0 * n / alpha)
    ups = sigma * math.sqrt(2.0 * m) * (4.0 * math.sqrt(d) + 2.0 * lg)
    gamma = math.sqrt(m / ups) * sigma * (math.sqrt(d) + math.sqrt(2.0 * lg))
    return Regularizer(ups, 3.0 * ups, gamma, 2.0 * ups)


# ----------------------------------------------------------------------------------------------
# Wishart noise (section 4.3)
# ----------------------------------------------------------------------------------------------
def wishart_dof_paper(m: int, d: int, epsilon: float, delta: float) -> int:
    """``k = d + 1 + ceil(224 m ln(8m/delta) ln(2/delta) / epsilon^2)`` (section 4.3)."""
    return (
        d
        + 1
        + math.ceil(224.0 * m * math.log(8.0 * m / delta) * math.log(2.0 / delta) / epsilon**2)
    )


def wishart_dof_authors(m: int, d: int, epsilon: float, delta: float) -> int:
    """The authors' code: per node ``eps' = eps / sqrt(8 m ln((m+1)/delta))``, ``delta' = delta/(m+1)``,
    ``k = (d+1) + floor(28 ln(4/delta') / eps'^2)``."""
    e1 = epsilon / math.sqrt(8.0 * m * math.log((m + 1) / delta))
    d1 = delta / (m + 1)
    return d + 1 + math.floor(28.0 * math.log(4.0 / d1) / e1**2)


def _wishart_node_epsilon(k: int, p: int, delta0: float) -> float:
    """Per-node ``eps_0`` certified by Sheffet (2015) Thm 4.1 for ``k`` degrees of freedom in dimension
    ``p``: the inverse of ``k >= p + 28 ln(4/delta_0)/eps_0^2``."""
    if k <= p:
        return math.inf
    return math.sqrt(28.0 * math.log(4.0 / delta0) / (k - p))


def wishart_accounting(T: int, d: int, k: int, delta: float) -> ApproxDP:
    """``(epsilon, delta)`` of the Wishart tree with ``k`` degrees of freedom per node.

    Each node is ``(eps_0, delta_0)``-DP by Sheffet (2015) Thm 4.1 with ``delta_0 = delta/(2h)``
    (``eps_0`` from ``k``, valid for ``eps_0 < 1`` and ``delta_0 < 1/e``); a row enters
    ``h = bit_length(T)`` nodes, composed by advanced composition with ``delta' = delta/2``
    (section 4.2).  Raises :class:`PrivacyError` when the theorem's conditions fail.
    """
    h = max_nodes_per_leaf(T)
    delta0 = delta / (2.0 * h)
    eps0 = _wishart_node_epsilon(k, d + 1, delta0)
    if not eps0 < 1.0 or not delta0 < 1.0 / math.e:
        raise PrivacyError(
            f"Wishart mechanism: k={k} degrees of freedom give a per-node eps_0={eps0:.4g}; "
            "Sheffet (2015) Thm 4.1 needs eps_0 < 1 (raise epsilon's k, lower the horizon or use "
            "noise='gaussian')"
        )
    return compose_advanced(ApproxDP(eps0, delta0), h, delta / 2.0)


def wishart_dof_strict(T: int, d: int, epsilon: float, delta: float) -> int:
    """Smallest ``k`` whose :func:`wishart_accounting` is ``(epsilon, delta)``-DP (integer search)."""

    def ok(k: int) -> bool:
        try:
            g = wishart_accounting(T, d, k, delta)
        except PrivacyError:
            return False
        return g.epsilon <= epsilon and g.delta <= delta * (1.0 + 1e-12)

    hi = d + 2
    while not ok(hi):
        hi *= 2
        if hi > 1 << 62:
            raise ValidationError(
                f"no Wishart degrees of freedom meet epsilon={epsilon}, delta={delta}"
            )
    lo = d + 1  # never ok
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def wishart_regularizer(
    m: int,
    d: int,
    n: int,
    k: int,
    L_tilde: float,
    alpha: float,
    *,
    shifted: bool,
    form: str = "paper",
) -> Regularizer:
    """``(rho_min, rho_max, gamma)`` and shift of the (shifted) Wishart mechanism (section 4.3).

    ``D = sqrt(d) + sqrt(2 ln(8n/alpha))``; unshifted: ``rho_min = L~^2 (sqrt(mk) - D)^2``,
    ``rho_max = L~^2 (sqrt(mk) + D)^2``, ``gamma = L~ (sqrt(d) + sqrt(2 ln(2n/alpha)))``.  Shifted
    by ``-c I`` with ``c = rho_min^unsh - 4 L~^2 sqrt(mk) D``: ``rho_min = 4 L~^2 sqrt(mk) D``,
    ``rho_max = 8 L~^2 sqrt(mk) D``, ``gamma = L~ sqrt(sqrt(mk) (sqrt(d) + sqrt(2 ln(2n/alpha))))``
    (the authors' code: ``gamma^unsh sqrt(rho_min^unsh / rho_min)``).
    ``authors_code``: ``alpha' = alpha/nextpow2(n)``, ``D = sqrt(d) + sqrt(2 ln(4/alpha'))``,
    ``gamma^unsh = L~ (sqrt(d) + sqrt(2 ln(1/alpha')))``.
    """
    L2 = L_tilde**2
    smk = math.sqrt(m * k)
    if form == "authors_code":
        a1 = alpha / (1 << (n - 1).bit_length())
        D = math.sqrt(d) + math.sqrt(2.0 * math.log(4.0 / a1))
        g0 = L_tilde * (math.sqrt(d) + math.sqrt(2.0 * math.log(1.0 / a1)))
    else:
        D = math.sqrt(d) + math.sqrt(2.0 * math.log(8.0 * n / alpha))
        g0 = L_tilde * (math.sqrt(d) + math.sqrt(2.0 * math.log(2.0 * n / alpha)))
    if not smk > D:
        raise ValidationError(
            f"Wishart bounds need sqrt(m k) > D (Sheffet 2015, Lemma A.3); got sqrt(mk)={smk:.4g}, D={D:.4g}"
        )
    lo_u, hi_u = L2 * (smk - D) ** 2, L2 * (smk + D) ** 2
    if not shifted:
        return Regularizer(lo_u, hi_u, g0, 0.0)
    lo = 4.0 * L2 * smk * D
    if form == "authors_code":
        gamma = g0 * math.sqrt(lo_u / lo)
    else:
        gamma = L_tilde * math.sqrt(
            smk * (math.sqrt(d) + math.sqrt(2.0 * math.log(2.0 * n / alpha)))
        )
    return Regularizer(lo, 2.0 * lo, gamma, -(lo_u - lo))


# ----------------------------------------------------------------------------------------------
# typed calibration and ledger
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JDPConstants(Constants):
    """Typed calibration of JDP LinUCB (Shariff & Sheffet 2018).

    ``m`` noise terms per release, ``L_tilde`` the row bound, ``alpha`` the radius's failure
    probability, the regularizer bounds ``(rho_min, rho_max, gamma)`` and the ``shift``; ``sigma``
    the reward noise's sub-Gaussian parameter, ``S`` the bound on ``||theta*||``; the radius
    ``beta_t = sigma sqrt(max(kappa + ln det V_t, 0)) + xi`` (data form; the closed form adds
    ``d ln(rho_max/rho_min + t L^2/(d rho_min))`` to ``kappa`` instead); node noise
    ``sigma_noise`` (Gaussian, 0 for Wishart) or ``k`` degrees of freedom (Wishart, 0 for
    Gaussian).
    """

    noise: str
    m: int
    L_tilde: float
    alpha: float
    rho_min: float
    rho_max: float
    gamma: float
    shift: float
    sigma: float
    S: float
    kappa: float
    xi: float
    sigma_noise: float = 0.0
    k: int = 0


def gaussian_ledger(T: int, L_tilde: float, sigma: float) -> Event:
    """A row enters ``h = bit_length(T)`` nodes with independent node noise: one Gaussian mechanism
    of std ``sigma`` (whitened) at sensitivity ``sqrt(h) L~^2`` (:func:`gaussian_accounting`)."""
    h = max_nodes_per_leaf(T)
    return Gaussian(
        sigma,
        math.sqrt(h) * L_tilde**2,
        f"the {h} tree nodes holding one row (x, y) (Gaussian composition)",
    )


def wishart_ledger(T: int, d: int, k: int, delta: float) -> Event:
    """Each of the ``h`` nodes holding a row is ``(eps_0, delta/(2h))``-DP (Sheffet 2015, Thm 4.1),
    composed by advanced composition (:func:`wishart_accounting`)."""
    h = max_nodes_per_leaf(T)
    delta0 = delta / (2.0 * h)
    eps0 = _wishart_node_epsilon(k, d + 1, delta0)
    node = Accounted(
        "wishart",
        eps0,
        delta0,
        f"W_(d+1)(L~^2 I, k={k}) on the Gram matrix, Sheffet (2015) Thm 4.1",
    )
    return SelfComposed(node, h, "advanced", "the tree nodes holding one row (x, y)")
