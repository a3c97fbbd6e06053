"""Checks of a user's own data before it enters a local randomizer.

The privacy guarantee of every randomizer relies on the declared bounds: a context above the
bound (or a NaN / infinite value, which would turn the whole message into NaN) is rejected with
a clear error instead of being privatized.  Rewards are clipped into the declared reward range by
the randomizers themselves (their recorded policy), so only finiteness is required of them.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from privbandits.core.errors import DataBoundError

__all__ = ["check_client_inputs"]

#: Relative slack for norms at the bound (float rounding puts unit vectors at 1 + 2e-16).
NORM_RTOL = 1e-9


def check_client_inputs(contexts: np.ndarray, rewards: np.ndarray, context_bound: float) -> None:
    """Reject non-finite contexts or rewards and contexts of l2 norm above ``context_bound``.

    Parameters
    ----------
    contexts : ndarray
        The users' contexts, feature vectors along the last axis.
    rewards : ndarray
        The users' rewards.
    context_bound : float
        ``C_B`` of the problem.

    Raises
    ------
    DataBoundError
        Naming what was wrong and the declared bound.
    """
    X = np.ascontiguousarray(contexts, dtype=float)
    y = np.ascontiguousarray(rewards, dtype=float).reshape(-1)
    if X.ndim >= 1 and _all_within(X.reshape(-1, X.shape[-1]), y, (context_bound * (1.0 + NORM_RTOL)) ** 2):
        return
    if not np.isfinite(rewards).all():
        bad = int(rewards.size - np.count_nonzero(np.isfinite(rewards)))
        raise DataBoundError(f"rewards contain {bad} NaN or infinite values; a local randomizer "
                             "needs finite rewards (they are clipped to the declared reward range)")
    if not np.isfinite(contexts).all():
        bad = int(contexts.size - np.count_nonzero(np.isfinite(contexts)))
        raise DataBoundError(f"contexts contain {bad} NaN or infinite entries; a local randomizer "
                             "needs finite contexts")
    sq = np.einsum("...d,...d->...", contexts, contexts)
    worst = float(sq.max()) if sq.size else 0.0
    if worst > (context_bound * (1.0 + NORM_RTOL)) ** 2:
        raise DataBoundError(
            f"a context has l2 norm {np.sqrt(worst):.6g}, above the declared context_bound={context_bound:g}; "
            "the privacy calibration relies on the bound: rescale the data or declare a larger bound")


@nb.njit(cache=True)
def _all_within(X: np.ndarray, y: np.ndarray, bound_sq: float) -> bool:  # pragma: no cover - compiled
    """One compiled pass: every reward finite and every row of ``X`` finite with squared norm
    at most ``bound_sq`` (the common case; the Python checks above name what failed otherwise)."""
    for i in range(y.shape[0]):
        if not np.isfinite(y[i]):
            return False
    for i in range(X.shape[0]):
        sq = 0.0
        for j in range(X.shape[1]):
            v = X[i, j]
            if not np.isfinite(v):
                return False
            sq += v * v
        if sq > bound_sq:
            return False
    return True
