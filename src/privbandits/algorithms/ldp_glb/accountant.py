"""Privacy accounting of Algorithms 1 and 2 from the noise actually added (spec 2.4, 2.6, 2.7).

* One OLS message ``(x x^T + W, r x + xi)``: two Gaussian mechanisms on the same user's data,
  each accounted exactly (Balle & Wang 2018) by
  :func:`~privbandits.privacy.mechanisms.gaussian_epsilon`
  at its true l2 sensitivity (``sqrt(2) C_B^2`` for the upper triangle of ``x x^T``,
  ``2 c_r C_B`` for ``r x``), with the message's delta split equally; basic composition.
* One SGD message: pure epsilon of the l2-ball mechanism with the radius used,
  :func:`~privbandits.privacy.mechanisms.l2_ball_epsilon`.
* Algorithm 2, main phase: two users' inputs differ in at most two of the K slots (the pulled
  arms), the other slots are identically distributed ``psi(0, 0)``: basic composition of two
  slot guarantees (Props 4.1-4.2).  Warm-up rounds release one slot.  Each user takes part in
  one round, whose phase is public: the run's guarantee is the parallel composition (max) of the
  phases.  Every round is a different user, so there is no composition across rounds.
"""

from __future__ import annotations

from privbandits.algorithms.ldp_glb.presets import OLSCalibration
from privbandits.core.errors import ValidationError
from privbandits.privacy.accounting import ApproxDP, PureDP, compose_basic, compose_parallel
from privbandits.privacy.mechanisms import gaussian_epsilon, l2_ball_epsilon

__all__ = ["l2_ball_guarantee", "ols_message_guarantee", "phases_guarantee", "two_slot_guarantee"]


def ols_message_guarantee(cal: OLSCalibration, delta: float) -> ApproxDP:
    """``(eps, delta)`` of one OLS message with total ``delta`` split equally over ``W`` and ``xi``.

    Parameters
    ----------
    cal : OLSCalibration
        The noise scales and sensitivities used.
    delta : float
        Delta allotted to this message (the two parts get ``delta/2`` each).
    """
    d_M = d_u = delta / 2.0
    parts = [
        ApproxDP(gaussian_epsilon(cal.s_W, d_M, cal.sens_M), d_M),
        ApproxDP(gaussian_epsilon(cal.s_u, d_u, cal.sens_u), d_u),
    ]
    return compose_basic(parts)  # type: ignore[return-value]


def l2_ball_guarantee(radius: float, d: int, bound: float, epsilon: float) -> PureDP:
    """Pure epsilon of the l2-ball mechanism with output ``radius`` for inputs of norm <= ``bound``.

    ``epsilon`` is the level the mechanism was run at; it is used only when the radius cannot be
    inverted in floating point (``tanh(eps/2)`` rounds to 1 for eps >~ 37, where the radius equals
    its eps -> infinity limit and the mechanism's side probability ``e^eps/(1+e^eps)`` carries the
    level).
    """
    try:
        return PureDP(l2_ball_epsilon(radius, d, bound))
    except ValidationError:
        return PureDP(epsilon)


def two_slot_guarantee(slot: PureDP | ApproxDP) -> PureDP | ApproxDP:
    """Main phase of Algorithm 2: neighbouring users differ in at most two slots (Props 4.1-4.2)."""
    return compose_basic([slot, slot])


def phases_guarantee(*phases: PureDP | ApproxDP) -> PureDP | ApproxDP:
    """A user takes part in one round of a public phase: the worst phase (parallel composition)."""
    return compose_parallel(list(phases))
