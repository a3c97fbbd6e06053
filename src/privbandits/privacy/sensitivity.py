"""Sensitivities and noise magnitudes the papers derive (outer products, sums of Laplace noise).

References
----------
Han et al. (2021), Prop 3.1 (correction Han21-4); Zheng et al. (2020) (correction Zheng20-17);
Hanna et al. (2022), Lemma 4 (corrected: see the documentation's Hanna et al. 2022 page).
"""

from __future__ import annotations

import math

from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_int, check_nonnegative, check_positive

__all__ = ["laplace_sum_deviation", "outer_product_l1_sensitivity", "outer_product_sensitivity"]


def outer_product_sensitivity(bound: float = 1.0, *, tight: bool = False) -> float:
    """L2 sensitivity of the upper triangle (diagonal included) of ``x x^T`` for ``||x|| <= bound``.

    ``||x x^T - x' x'^T||_F^2 = ||x||^4 + ||x'||^4 - 2 (x^T x')^2 <= 2 bound^4``, so the tight value
    is ``sqrt(2) bound^2`` (orthogonal x, x' of norm ``bound``; the upper-triangle vector has the
    same maximum).  The default is the looser ``2 bound^2`` that the papers use (Han et al. 2021,
    Prop 3.1, strict preset; Zheng et al. 2020, ``||v(x) - v(x')|| <= 2``).
    """
    B = check_positive("bound", bound)
    return (math.sqrt(2.0) if tight else 2.0) * B * B


def outer_product_l1_sensitivity(d: int, bound: float = 1.0) -> float:
    """L1 sensitivity of the upper triangle of ``x x^T`` for ``||x||_2 <= bound`` (Zheng et al. 2020, correction Zheng20-17).

    ``sum_{i<=j} |x_i x_j| <= (||x||_1^2 + ||x||_2^2) / 2 <= (d + 1) bound^2 / 2``, hence
    ``Delta_1 = (d + 1) bound^2``.
    """
    d = check_int("d", d, 1)
    B = check_positive("bound", bound)
    return (d + 1) * B * B


def laplace_sum_deviation(scale: float, sum_sq: float, max_abs: float, ell: float) -> float:
    """Threshold ``t`` with ``P(sum_j l_j z_j >= t) <= e^{-ell}`` for i.i.d. ``z_j ~ Lap(scale)``.

    Corrected Lemma 4 of Hanna et al. (2022) (the documentation's Hanna et al. 2022 page): with ``S = sum_j l_j^2`` and
    ``c = max_j |l_j|``, ``t = scale (sqrt(8 S ell) + sqrt(2) c ell)``.  (The paper's own lemma
    uses a too-small Laplace MGF constant and is numerically violated.)

    Parameters
    ----------
    scale : float
        Laplace scale ``s`` (std ``sqrt(2) s``).
    sum_sq : float
        ``S = sum_j l_j^2`` >= 0.
    max_abs : float
        ``c = max_j |l_j|`` >= 0 (``c^2 <= S``).
    ell : float
        Log of the inverse failure probability, > 0.
    """
    s = check_nonnegative("scale", scale)
    S = check_nonnegative("sum_sq", sum_sq)
    c = check_nonnegative("max_abs", max_abs)
    L = check_positive("ell", ell)
    if c * c > S * (1.0 + 1e-12):
        raise ValidationError(f"max_abs^2 = {c * c:g} cannot exceed sum_sq = {S:g}")
    return s * (math.sqrt(8.0 * S * L) + math.sqrt(2.0) * c * L)
