"""Confidence widths ``gamma_i`` of the private models of Hanna et al. (2022) (width modes on the Hanna et al. 2022 documentation page).

Common quantities of batch ``i`` (all public): ``ell_i = ln(4 |A_i| T^2)``, ``q^i`` (the batch's
target size), ``G_i = g_i / q^i`` (``g_i`` the design's achieved G-criterion, so
``max_{a in A_i} ||a||^2_{V_i^{-1}} <= G_i``), ``n_min = min_a n_ia``, ``|C_i|``, ``n_i``, and
``s`` the Laplace scale actually used (``Delta / eps``, ``Delta / eps0`` or ``Delta / eps0^(i)``).

==========  ==========================================================  =====================================================
model       ``paper`` (Alg. 1 step 5 / Alg. 2 step 12 / Alg. 3)         ``rigorous`` (Hanna et al. 2022, corrected Lemma 4)
==========  ==========================================================  =====================================================
none        ``sqrt(4 d ell/q^i)``                                       ``sqrt(2 G ell)``
central     ``sqrt(4 d ell/q^i) + (2 |C_i| d + 2 d ell) s / q^i``       ``sqrt(2 G ell) + s (sqrt(8 S ell) + sqrt(2) c ell)``,
                                                                        ``S = min(|C_i| G^2, G / n_min)``, ``c = min(G, sqrt S)``
local       ``sqrt(4 d ell/q^i) + (2 d / q^i) s sqrt(n_i ell)``         ``sqrt(2 G ell) + s (sqrt(8 G ell) + sqrt(2) c ell)``,
                                                                        ``c = min(G, sqrt G)``
shuffle     local formula with ``s = s_i``                              local formula with ``s = s_i``
==========  ==========================================================  =====================================================

``d`` is the ambient dimension in the paper column (as the paper writes it, Hanna et al. 2022, correction Hanna22-11).  The
"no core set" ablation with a uniform design (``core_set="nocore-uniform"``, Hanna et al. 2022, correction Hanna22-26) has
the paper-mode central width ``sqrt(2 g ell / q^i) + (g / q^i) s (|A_i| + ell)``.  The sub-Gaussian
part is multiplied by the noise's sub-Gaussian parameter ``sigma`` (1 under Assumption 1).

Every coefficient bound used in the rigorous column is a valid upper bound: ``c`` is the largest
coefficient of a Laplace term in ``<a, theta_hat_i - theta_bar_i>``, bounded both by ``G_i``
(Cauchy-Schwarz) and by the square root of the sum of squared coefficients ``S``; the two-sided,
``|A_i|``-fold union bound of both error sources fails with probability ``<= 1/T^2`` per batch.

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Lemmas 3-5; corrected Lemma 4, correction Hanna22-26 and width
modes in the documentation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privbandits.algorithms.hanna.elimination import BatchPlan, confidence_log
from privbandits.core.spec import EnvSpec

__all__ = [
    "CentralWidth",
    "LocalWidth",
    "NonPrivateWidth",
    "central_width_paper",
    "central_width_rigorous",
    "local_width_paper",
    "local_width_rigorous",
    "nocore_uniform_width_paper",
]

ScaleFn = Callable[[BatchPlan], np.ndarray]


# ------------------------------------------------------------------------------------------------
# pure formulas (vectorized over batches)
# ------------------------------------------------------------------------------------------------
def central_width_paper(
    d: int,
    ell: np.ndarray,
    qi: np.ndarray,
    core_size: np.ndarray,
    s: np.ndarray,
    sigma: float = 1.0,
) -> np.ndarray:
    """Alg. 1 step 5 / Lemma 3 with ``|C_i|`` for ``B d``: ``sqrt(4 d ell/q^i) + (2|C_i| d + 2 d ell) s/q^i``."""
    return sigma * np.sqrt(4.0 * d * ell / qi) + (2.0 * core_size * d + 2.0 * d * ell) * s / qi


def nocore_uniform_width_paper(
    g: np.ndarray,
    ell: np.ndarray,
    qi: np.ndarray,
    n_active: np.ndarray,
    s: np.ndarray,
    sigma: float = 1.0,
) -> np.ndarray:
    """Uniform-design ablation (Hanna et al. 2022, correction Hanna22-26): ``sqrt(2 g ell / q^i) + (g / q^i) s (|A_i| + ell)``."""
    return sigma * np.sqrt(2.0 * g * ell / qi) + (g / qi) * s * (n_active + ell)


def central_width_rigorous(
    G: np.ndarray,
    ell: np.ndarray,
    core_size: np.ndarray,
    n_min: np.ndarray,
    s: np.ndarray,
    sigma: float = 1.0,
) -> np.ndarray:
    """``sqrt(2 G ell) + s (sqrt(8 S ell) + sqrt(2) c ell)`` with ``S = min(|C| G^2, G / n_min)``."""
    S = np.minimum(core_size * G**2, G / n_min)
    c = np.minimum(G, np.sqrt(S))
    return sigma * np.sqrt(2.0 * G * ell) + s * (np.sqrt(8.0 * S * ell) + math.sqrt(2.0) * c * ell)


def local_width_paper(
    d: int, ell: np.ndarray, qi: np.ndarray, n: np.ndarray, s: np.ndarray, sigma: float = 1.0
) -> np.ndarray:
    """Alg. 2 step 12 / Lemma 5: ``sqrt(4 d ell/q^i) + (2 d / q^i) s sqrt(n_i ell)``."""
    return sigma * np.sqrt(4.0 * d * ell / qi) + (2.0 * d / qi) * s * np.sqrt(n * ell)


def local_width_rigorous(
    G: np.ndarray, ell: np.ndarray, s: np.ndarray, sigma: float = 1.0
) -> np.ndarray:
    """``sqrt(2 G ell) + s (sqrt(8 G ell) + sqrt(2) c ell)``, ``c = min(G, sqrt G)`` (``n_i`` terms, ``S <= G``)."""
    c = np.minimum(G, np.sqrt(G))
    return sigma * np.sqrt(2.0 * G * ell) + s * (np.sqrt(8.0 * G * ell) + math.sqrt(2.0) * c * ell)


# ------------------------------------------------------------------------------------------------
# WidthFunction strategies (step 9 of the skeleton)
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NonPrivateWidth:
    """Width of NP-batched (width modes on the Hanna et al. 2022 documentation page, row "none").

    ``paper``: ``sigma sqrt(4 d ell_i / q^i)`` (``d`` the ambient dimension, as in the paper);
    ``rigorous``: ``sigma sqrt(2 G_i ell_i)`` with ``G_i = g_i / q^i`` (sub-Gaussian tail of
    ``<a, theta_hat - theta*>``, variance proxy ``||a||^2_{V_i^{-1}} <= G_i``).
    ``sigma`` is the sub-Gaussian parameter of the reward noise (1 in the paper's Assumption 1).
    """

    width_mode: str = "rigorous"
    sigma: float = 1.0
    fail_prob: float | None = None

    def __call__(self, plan: BatchPlan, spec: EnvSpec, L: int) -> np.ndarray:
        ell = confidence_log(plan.n_active, spec.horizon, L, self.fail_prob)
        if self.width_mode == "paper":
            return self.sigma * np.sqrt(4.0 * spec.d * ell / plan.scale)
        return self.sigma * np.sqrt(2.0 * (plan.g / plan.scale) * ell)


class _NoisyWidth:
    """What the widths of the private batches share: ``(ell_i, s_i, q^i)`` of a batch plan."""

    scale: ScaleFn
    fail_prob: float | None

    def _inputs(
        self, plan: BatchPlan, spec: EnvSpec, L: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The confidence log ``ell_i``, the noise scale ``s_i`` (broadcast to its shape) and ``q^i``."""
        ell = confidence_log(plan.n_active, spec.horizon, L, self.fail_prob)
        s = np.broadcast_to(np.asarray(self.scale(plan), dtype=float), ell.shape)
        return ell, s, plan.scale


@dataclass(frozen=True)
class CentralWidth(_NoisyWidth):
    """``gamma_i`` of Algorithm 1 (central model); ``scale`` gives the Laplace scale per batch.

    Parameters
    ----------
    scale : callable
        ``plan -> s`` (n,), the scale of the noise actually added to each per-action sum.
    width_mode : {"paper", "rigorous"}
    core_set : {"greedy", "nocore-fw", "nocore-uniform"}
        Selects the uniform-design paper width for ``"nocore-uniform"``.
    sigma : float
        Sub-Gaussian parameter of the reward noise.
    fail_prob : float, optional
        ``ell_i = ln(4 |A_i| L / fail_prob)`` instead of ``ln(4 |A_i| T^2)``.
    """

    scale: ScaleFn
    width_mode: str = "rigorous"
    core_set: str = "greedy"
    sigma: float = 1.0
    fail_prob: float | None = None

    def __call__(self, plan: BatchPlan, spec: EnvSpec, L: int) -> np.ndarray:
        ell, s, qi = self._inputs(plan, spec, L)
        if self.width_mode == "paper":
            if self.core_set == "nocore-uniform":
                return nocore_uniform_width_paper(plan.g, ell, qi, plan.n_active, s, self.sigma)
            return central_width_paper(spec.d, ell, qi, plan.core_size, s, self.sigma)
        return central_width_rigorous(
            plan.g / qi, ell, plan.core_size, plan.n_min.astype(float), s, self.sigma
        )


@dataclass(frozen=True)
class LocalWidth(_NoisyWidth):
    """``gamma_i`` of Algorithms 2 and 3 (one Laplace report per user; ``scale`` per batch).

    For the shuffle model the scale depends on the batch: ``s_i = Delta / eps0^(i)`` with
    ``eps0^(i)`` a function of the public ``n_i``.
    """

    scale: ScaleFn
    width_mode: str = "rigorous"
    sigma: float = 1.0
    fail_prob: float | None = None

    def __call__(self, plan: BatchPlan, spec: EnvSpec, L: int) -> np.ndarray:
        ell, s, qi = self._inputs(plan, spec, L)
        if self.width_mode == "paper":
            return local_width_paper(spec.d, ell, qi, plan.n_total.astype(float), s, self.sigma)
        return local_width_rigorous(plan.g / qi, ell, s, self.sigma)
