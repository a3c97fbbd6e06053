"""The loss families of :class:`~privbandits.envs.convex.ConvexLossEnv`, compiled: one user's loss
and the expected loss at one point.

Zheng, Cai, Huang, Li & Wang (2020), sections 3.1-3.2 (the losses of the E1 validation; the
families are defined in :mod:`privbandits.envs.convex`).  The environment's vectorized
:meth:`~privbandits.envs.convex.ConvexLossEnv.loss_values` and
:meth:`~privbandits.envs.convex.ConvexLossEnv.expected_loss` and the compiled loss-environment
loop (:mod:`privbandits.algorithms._shared.loops`) both call :func:`loss_at` and
:func:`expected_at`: the one implementation of each loss, so the two drivers see the same values.

Every function takes the family as an integer code (:data:`FAMILY_CODES`) and the outer radius
``Rx`` of the decision set.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

__all__ = [
    "FAMILY_CODES",
    "LINEAR",
    "LOGISTIC",
    "QUADRATIC",
    "expected_at",
    "expected_rows",
    "loss_at",
    "loss_rows",
]

QUADRATIC, LINEAR, LOGISTIC = 0, 1, 2
#: The integer code of each loss family.
FAMILY_CODES: dict[str, int] = {"quadratic": QUADRATIC, "linear": LINEAR, "logistic": LOGISTIC}


@nb.njit(cache=True, inline="always")
def _log1p_exp_neg(m: float) -> float:  # pragma: no cover - compiled
    """``ln(1 + exp(-m))`` without overflow (numpy's ``logaddexp(0, -m)``)."""
    if m >= 0.0:
        return math.log1p(math.exp(-m))
    return -m + math.log1p(math.exp(m))


@nb.njit(cache=True)
def loss_at(kind: int, Rx: float, param: np.ndarray, x: np.ndarray) -> float:  # pragma: no cover
    """``f(x)`` of the user whose loss parameters are ``param`` (``(p,)``) at the point ``x``
    (``(d,)``): quadratic ``||x - a||^2 / (4 Rx^2)``, linear ``(1 + c^T x / Rx) / 2``, logistic
    ``ln(1 + exp(-y z^T x / Rx))`` with ``param = (z, y)``."""
    d = x.shape[0]
    if kind == QUADRATIC:
        s = 0.0
        for j in range(d):
            z = x[j] - param[j]
            s += z * z
        return s / (4.0 * Rx * Rx)
    s = 0.0
    for j in range(d):
        s += x[j] * param[j]
    if kind == LINEAR:
        return 0.5 * (1.0 + s / Rx)
    return _log1p_exp_neg(float(param[d] * s / Rx))


@nb.njit(cache=True)
def expected_at(
    kind: int, Rx: float, center: np.ndarray, pool: np.ndarray, x: np.ndarray
) -> float:  # pragma: no cover - compiled
    """``F(x) = E f_t(x)`` up to a constant of the instance (which cancels in the regret), at
    ``x`` (``(d,)``): the loss at the mean parameter ``center`` (``(d,)``; quadratic, linear) or
    the mean logistic loss over the labelled ``pool`` (``(n, d + 1)``)."""
    if kind != LOGISTIC:
        return loss_at(kind, Rx, center, x)
    n = pool.shape[0]
    s = 0.0
    for i in range(n):
        s += loss_at(kind, Rx, pool[i], x)
    return s / n


@nb.njit(cache=True)
def loss_rows(
    kind: int, Rx: float, params: np.ndarray, points: np.ndarray, out: np.ndarray
) -> None:  # pragma: no cover - compiled
    """``out[r, i] = f_r(points[r, i])`` for loss parameters ``params`` (R, p) and points (R, k, d)."""
    for r in range(points.shape[0]):
        for i in range(points.shape[1]):
            out[r, i] = loss_at(kind, Rx, params[r], points[r, i])


@nb.njit(cache=True)
def expected_rows(
    kind: int,
    Rx: float,
    center: np.ndarray,
    pool: np.ndarray,
    points: np.ndarray,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """``out[r, i] = F_r(points[r, i])`` for the instances' ``center`` (R, d) and ``pool``
    (R, n, d + 1)."""
    for r in range(points.shape[0]):
        for i in range(points.shape[1]):
            out[r, i] = expected_at(kind, Rx, center[r], pool[r], points[r, i])
