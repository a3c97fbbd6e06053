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
from dataclasses import dataclass
from typing import ClassVar

from privbandits.algorithms.calibration import PRESETS, Constants
from privbandits.core.errors import ValidationError
from privbandits.privacy.accounting import ApproxDP, PureDP, to_guarantee
from privbandits.privacy.calibration import gaussian_epsilon, gaussian_sigma_analytic
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.ledger import Composed, Event, Gaussian, Laplace, SelfComposed
from privbandits.privacy.ranges import Z_TAIL, OutputRange

__all__ = [
    "GAUSSIAN_CALIBRATIONS",
    "LAPLACE_NOTE",
    "MECHANISMS",
    "PRESETS",
    "REFERENCE_CODES",
    "LDPGLOCConstants",
    "LDPUCBConstants",
    "ZhengConstants",
    "classic_sigma",
    "gaussian_message_guarantee",
    "joint_sensitivity",
    "laplace_message_guarantee",
    "outer_vector_sensitivity",
    "tight_sigma",
]

MECHANISMS: tuple[str, ...] = ("gaussian", "laplace")
#: Gaussian calibrations: ``analytic`` (Balle & Wang 2018, exact) or ``classic`` (the papers'
#: ``Delta sqrt(2 ln(1.25/delta)) / eps``).
GAUSSIAN_CALIBRATIONS: tuple[str, ...] = ("classic", "analytic")
#: Public reference code an ``authors_code`` LDP-UCB run imitates: Han et al.'s re-implementation
#: (github.com/liangzp/LDP-Bandit, the baseline of the Han et al. 2021 figures) or Zheng et al.'s
#: own demo (github.com/MIFA-Lab/LDPbandit2020, ``src/linucb.py``).
REFERENCE_CODES: tuple[str, ...] = ("han2021", "zheng2020")
#: The guarantee's note on the Laplace mechanism (both algorithms).
LAPLACE_NOTE = (
    "Laplace variant (Zheng et al. 2020, correction Zheng20-17); radii reuse the Gaussian formulas "
    "with the Laplace std"
)


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
    parts: tuple[tuple[str, float, float], ...],
    delta: float,
    what: str,
    *,
    rounds: int,
    calibration: str = "analytic",
) -> PrivacyGuarantee:
    """Local per-user guarantee of a message whose parts ``(name, Delta_i, sigma_i)`` are released
    together: one Gaussian mechanism of sensitivity ``mu`` (:func:`joint_sensitivity`) at unit noise.

    The ledger holds the message as one Gaussian event (at its common std and the parts' joint
    sensitivity when every part has the same std, else divided by the stds), sent once by each
    of the ``rounds`` users: disjoint composition, the guarantee is one message's.

    Parameters
    ----------
    parts : tuple of (str, float, float)
        ``(name, l2 sensitivity, noise std)`` of each part.
    delta : float
        The reported delta.
    what : str
        The calibration in words (preset, rule), the head of the notes.
    rounds : int
        Rounds of the run (one user each).
    calibration : {"analytic", "classic", "given"}
        How the stds were chosen (the ledger's record).
    """
    mu = joint_sensitivity(tuple((s, sig) for _, s, sig in parts))
    eps = gaussian_epsilon(1.0, delta, mu)
    names = ", ".join(n for n, _, _ in parts)
    stds = {sig for _, _, sig in parts}
    if len(stds) == 1:
        sigma = stds.pop()
        joint = math.sqrt(math.fsum(s * s for _, s, _ in parts))
        message = Gaussian(sigma, joint, f"the message [{names}]", calibration)
    else:
        detail = ", ".join(f"{n}: sensitivity {s:.6g} / std {sig:.6g}" for n, s, sig in parts)
        message = Gaussian(1.0, mu, f"the message [{detail}] divided by its stds", calibration)
    ledger = SelfComposed(message, int(rounds), "disjoint", f"{what}; one message per user")
    return to_guarantee(ApproxDP(eps, delta), "local", "user", ledger=ledger)


def laplace_message_guarantee(
    parts: tuple[tuple[str, float, float], ...], what: str, *, rounds: int
) -> PrivacyGuarantee:
    """Pure guarantee of Laplace-noised parts ``(name, L1 sensitivity, scale)``: ``sum_i Delta_i / b_i``
    (basic composition, Dwork & Roth 2014, Thm 3.16), one message per user of the ``rounds``."""
    eps = math.fsum(s / b for _, s, b in parts)
    laplace: tuple[Event, ...] = tuple(Laplace(b, sens, n) for n, sens, b in parts)
    message: Event = laplace[0] if len(laplace) == 1 else Composed(laplace, "basic", "the message")
    ledger = SelfComposed(message, int(rounds), "disjoint", f"{what}; one message per user")
    return to_guarantee(PureDP(eps), "local", "user", ledger=ledger)


@dataclass(frozen=True)
class ZhengConstants(Constants):
    """What LDP-UCB and LDP-GLOC resolve alike (Zheng et al. 2020, Algorithms 3 and 5).

    Attributes
    ----------
    D, T : int
        Feature dimension the model runs in (``d``, or ``K d`` with block one-hot features) and
        the horizon ``T`` of the constants.
    context_bound, reward_lo, reward_hi : float
        The bounds the user clips to (``||x|| <= C_B``, ``y`` in ``[reward_lo, reward_hi]``).
    mechanism, gaussian_calibration : str
        ``gaussian`` / ``laplace`` and the Gaussian calibration rule.
    sensitivity : float
        Exact joint l2 sensitivity of ``(ut(x x^T), v x)`` (:func:`outer_vector_sensitivity`).
    scale_V, scale_u : float
        Noise std (Laplace: scale) of ``B`` and ``xi``.
    sigma : float
        The ``sigma`` of ``Upsilon_t`` and ``beta_t``.
    c_factor, beta_formula, beta_scale
        ``c_t = c_factor Upsilon_t``, the radius formula and its multiplier ``kappa``.
    clip : bool
        User-side clipping of ``x`` and ``y`` (not stored: a parameter).
    """

    D: int
    T: int
    context_bound: float
    reward_lo: float
    reward_hi: float
    mechanism: str
    gaussian_calibration: str
    sensitivity: float
    scale_V: float
    scale_u: float
    sigma: float
    c_factor: float
    beta_formula: str
    beta_scale: float
    clip: bool

    hidden: ClassVar[tuple[str, ...]] = ("clip",)

    def vector_bound(self) -> float:
        """Largest ``|v x_i|`` of the vector part before the noise."""
        raise NotImplementedError

    def output_ranges(
        self, context_bound: float, reward_range: tuple[float, float]
    ) -> dict[str, OutputRange]:
        """Gaussian with clipping: ``V = x x^T + B`` is symmetric with ``|V_ij| <= C_B^2 +
        z scale_V`` and ``|u_i| <= |v| C_B + z scale_u`` (``z`` =
        :data:`~privbandits.privacy.ranges.Z_TAIL` stds).  Laplace noise or ``clip=False``:
        not declared."""
        if self.mechanism != "gaussian" or not self.clip:
            return {}
        C2 = self.context_bound * self.context_bound
        return {
            "V": OutputRange("abs", C2 + Z_TAIL * self.scale_V, symmetric=True),
            "u": OutputRange("abs", self.vector_bound() + Z_TAIL * self.scale_u),
        }


@dataclass(frozen=True)
class LDPUCBConstants(ZhengConstants):
    """LDP-UCB (Zheng et al. 2020, Algorithm 5): besides :class:`ZhengConstants`, the reward bound
    ``Y``, the noise split, the initial Gram sum ``V0``, the bonus form, the index of ``beta`` and
    the first round's regularizer ``c_first`` (None: ``c_1``)."""

    reward_bound: float
    noise_split: str
    V0: float
    bonus: str
    beta_index: str
    c_first: float | None

    def vector_bound(self) -> float:
        return self.reward_bound * self.context_bound


@dataclass(frozen=True)
class LDPGLOCConstants(ZhengConstants):
    """LDP-GLOC (Zheng et al. 2020, Algorithm 3): besides :class:`ZhengConstants`, the set ``W``
    (radius ``S_W``, per-arm balls when ``blockwise``), the relabel bound ``z_bound = C_B S_W``,
    the link constants ``C`` and ``mu``, the gradient clip (None: not clipped) and the accounted
    gradient bound, the gradient noise, the step ``zeta``, whether ``W`` is projected on and the
    initial iterates."""

    theta_radius: float
    blockwise: bool
    z_bound: float
    link_bound: float
    link_min_slope: float
    grad_clip: float | None
    grad_bound: float
    scale_g: float
    grad_sigma: float
    zeta: float
    project: bool
    init: str

    def vector_bound(self) -> float:
        return self.z_bound * self.context_bound

    def output_ranges(
        self, context_bound: float, reward_range: tuple[float, float]
    ) -> dict[str, OutputRange]:
        """As :meth:`ZhengConstants.output_ranges`, and with gradient clipping ``|g_i| <=
        grad_clip + z scale_g`` (the gradient is clipped whatever ``clip`` says)."""
        out = super().output_ranges(context_bound, reward_range)
        if self.mechanism == "gaussian" and self.grad_clip is not None:
            out["g"] = OutputRange("abs", self.grad_clip + Z_TAIL * self.scale_g)
        return out
