"""Privacy calibration of LDP-UCB and LDP-GLOC: sensitivities, noise scales, accounting.

One user's message is a tuple of Gaussian-noised parts (``x x^T + B``, ``v x + xi`` and, for
LDP-GLOC, ``grad + r``).  Released together they are **one** Gaussian mechanism on the
concatenated statistic with per-part noise stds ``sigma_i``: its privacy curve is that of a unit
Gaussian mechanism with sensitivity ``mu = sqrt(sum_i (Delta_i / sigma_i)^2)`` (more precisely:
the sup over pairs of users of ``||(f_i(u) - f_i(u')) / sigma_i||``, which :func:`joint_sensitivity`
bounds).  ``strict`` calibrates this joint mechanism with the analytic Gaussian (Balle & Wang
2018), so the accounted epsilon equals the request; the papers' classic formulas (a
``(eps_i, delta_i)`` budget per part with ``sqrt(2 ln(1.25/delta_i))``) stay available as options.
The guarantee is always accounted from the noise actually added, with the joint view.

Sensitivity of ``(ut(x x^T), v x)`` for ``||x|| <= C_B`` and ``v`` in ``[lo, hi]`` (``ut`` = upper
triangle with the diagonal, which is what the symmetric noise covers): with ``p = x^T x'``,

``||ut(x x^T - x' x'^T)||^2 + ||v x - v' x'||^2 <= ||x||^4 + ||x'||^4 - 2 p^2 + v^2 ||x||^2
+ v'^2 ||x'||^2 - 2 v v' p``,

increasing in the norms for fixed feasible ``p`` and concave in ``p``, so the supremum is at
``||x|| = ||x'|| = C_B``, ``p = clip(-v v'/2, -C_B^2, C_B^2)`` and ``v, v'`` at the ends of the
interval (the bound is convex in each of them).  For ``D >= 2`` it is attained (``x +- x'`` along
``e_1 +- e_2`` makes ``x x^T - x' x'^T`` diagonal, so the upper triangle keeps its whole norm).
The papers use the looser ``sqrt(2^2 + (2Y)^2)`` or ``2 + 2Y`` (``C_B = 1``).
"""

from __future__ import annotations

import math

from privbandits.algorithms.calibration import PRESETS
from privbandits.core.errors import ValidationError
from privbandits.privacy.calibration import gaussian_epsilon, gaussian_sigma_analytic
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.ledger import Composed, Gaussian, Laplace

__all__ = [
    "MECHANISMS",
    "PRESETS",
    "REFERENCE_CODES",
    "classic_sigma",
    "gaussian_message_guarantee",
    "joint_sensitivity",
    "laplace_message_guarantee",
    "outer_vector_sensitivity",
    "tight_sigma",
]

MECHANISMS: tuple[str, ...] = ("gaussian", "laplace")
#: Public reference code an ``authors_code`` LDP-UCB run imitates: Han et al.'s re-implementation
#: (github.com/liangzp/LDP-Bandit, the baseline of the Han et al. 2021 figures) or Zheng et al.'s
#: own demo (github.com/MIFA-Lab/LDPbandit2020, ``src/linucb.py``).
REFERENCE_CODES: tuple[str, ...] = ("han2021", "zheng2020")


def outer_vector_sensitivity(C_B: float, lo: float, hi: float) -> float:
    """Exact l2 sensitivity of ``(ut(x x^T), v x)`` over ``||x|| <= C_B``, ``v`` in ``[lo, hi]``.

    See the module docstring (attained for ``D >= 2``; an upper bound for ``D = 1``).
    """
    C2 = C_B * C_B
    worst = 0.0
    for v in (lo, hi):
        for w in (lo, hi):
            p = min(max(-v * w / 2.0, -C2), C2)
            worst = max(worst, 2.0 * C2 * C2 - 2.0 * p * p + C2 * (v * v + w * w) - 2.0 * v * w * p)
    return math.sqrt(worst)


def joint_sensitivity(parts: tuple[tuple[float, float], ...]) -> float:
    """``mu = sqrt(sum_i (Delta_i / sigma_i)^2)`` for ``parts = ((Delta_i, sigma_i), ...)``.

    The sensitivity of the whole message in units of unit-variance noise (an upper bound when
    the parts' worst cases are not attained by the same pair of users).
    """
    return math.sqrt(math.fsum((s / sig) ** 2 for s, sig in parts))


#: Relative margin on the analytic std: the accountant's own root search then reports an epsilon
#: at or below the request (instead of within its ~1e-12 tolerance above it).
TIGHT_MARGIN = 1e-9


def tight_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest noise std (up to a relative ``1e-9``) making a Gaussian mechanism of ``sensitivity``
    ``(epsilon, delta)``-DP: the analytic Gaussian mechanism (Balle & Wang 2018, Thm 8; any
    epsilon)."""
    return gaussian_sigma_analytic(epsilon, delta, sensitivity) * (1.0 + TIGHT_MARGIN)


def classic_sigma(
    sensitivities: tuple[float, ...],
    epsilon: float,
    delta_part: float,
    calibration: str = "classic",
) -> float:
    """One std making every part ``i`` an ``(eps_i, delta_part)`` mechanism with ``sum eps_i = epsilon``.

    The budget is split in proportion to the parts' l2 sensitivities, ``eps_i = epsilon Delta_i /
    sum_j Delta_j``, which equalizes the noise: ``sigma = (sum_i Delta_i) sqrt(2 ln(1.25/delta_part))
    / epsilon`` (the papers' formula: for LDP-UCB, ``Delta = (2, 2Y)`` and ``delta_part = delta/2``
    give ``2 (1 + Y) sqrt(2 ln(2.5/delta)) / epsilon``, defaults on the Zheng et al. 2020 documentation page).  With
    ``calibration="analytic"`` each part gets the exact std for its ``(eps_i, delta_part)`` and the
    largest is returned.
    """
    total = sum(sensitivities)
    if calibration == "classic":
        return total * math.sqrt(2.0 * math.log(1.25 / delta_part)) / epsilon
    if calibration == "analytic":
        return max(
            gaussian_sigma_analytic(epsilon * s / total, delta_part, s) for s in sensitivities
        )
    raise ValidationError(f"calibration must be 'classic' or 'analytic', got {calibration!r}")


def gaussian_message_guarantee(
    parts: tuple[tuple[str, float, float], ...], delta: float, notes: str
) -> PrivacyGuarantee:
    """Local per-user guarantee of a message whose parts ``(name, Delta_i, sigma_i)`` are released
    together: one Gaussian mechanism of sensitivity ``mu`` (:func:`joint_sensitivity`) at unit noise.
    """
    mu = joint_sensitivity(tuple((s, sig) for _, s, sig in parts))
    eps = gaussian_epsilon(1.0, delta, mu)
    detail = ", ".join(f"{n}: sensitivity {s:.6g} / std {sig:.6g}" for n, s, sig in parts)
    return PrivacyGuarantee(
        model="local",
        epsilon=eps,
        delta=delta,
        unit="user",
        notes=f"{notes}; one Gaussian mechanism on the message [{detail}], "
        f"joint sensitivity {mu:.6g} at unit noise (Balle & Wang 2018)",
        ledger=Gaussian(1.0, mu, f"the message [{detail}] in noise units"),
    )


def laplace_message_guarantee(
    parts: tuple[tuple[str, float, float], ...], notes: str
) -> PrivacyGuarantee:
    """Pure guarantee of Laplace-noised parts ``(name, L1 sensitivity, scale)``: ``sum_i Delta_i / b_i``
    (basic composition, Dwork & Roth 2014, Thm 3.16)."""
    eps = math.fsum(s / b for _, s, b in parts)
    detail = ", ".join(f"{n}: L1 sensitivity {s:.6g} / scale {b:.6g}" for n, s, b in parts)
    return PrivacyGuarantee(
        model="local",
        epsilon=eps,
        delta=0.0,
        unit="user",
        notes=f"{notes}; Laplace parts [{detail}], basic composition",
        ledger=Composed(tuple(Laplace(b, sens, n) for n, sens, b in parts), "basic", notes),
    )
