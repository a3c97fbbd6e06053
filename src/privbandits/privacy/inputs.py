"""Checks of a user's own data before it enters a local randomizer.

The privacy guarantee of every randomizer relies on the declared bounds: a context above the
bound (or a NaN / infinite value, which would turn the whole message into NaN) is rejected with
a clear error instead of being privatized.  Rewards are clipped into the declared reward range by
the randomizers themselves (their recorded policy), so only finiteness is required of them.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from privbandits.core.errors import DataBoundError, ValidationError
from privbandits.core.spec import EnvSpec

__all__ = ["check_client_inputs", "check_device_inputs", "context_shape"]

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
    if X.ndim >= 1 and _all_within(
        X.reshape(-1, X.shape[-1]), y, (context_bound * (1.0 + NORM_RTOL)) ** 2
    ):
        return
    if not np.isfinite(rewards).all():
        bad = int(rewards.size - np.count_nonzero(np.isfinite(rewards)))
        raise DataBoundError(
            f"rewards contain {bad} NaN or infinite values; a local randomizer "
            "needs finite rewards (they are clipped to the declared reward range)"
        )
    if not np.isfinite(contexts).all():
        bad = int(contexts.size - np.count_nonzero(np.isfinite(contexts)))
        raise DataBoundError(
            f"contexts contain {bad} NaN or infinite entries; a local randomizer "
            "needs finite contexts"
        )
    sq = np.einsum("...d,...d->...", contexts, contexts)
    worst = float(sq.max()) if sq.size else 0.0
    if worst > (context_bound * (1.0 + NORM_RTOL)) ** 2:
        raise DataBoundError(
            f"a context has l2 norm {np.sqrt(worst):.6g}, above the declared context_bound={context_bound:g}; "
            "the privacy calibration relies on the bound: rescale the data or declare a larger bound"
        )


@nb.njit(cache=True)
def _all_within(
    X: np.ndarray, y: np.ndarray, bound_sq: float
) -> bool:  # pragma: no cover - compiled
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


def context_shape(spec: EnvSpec, R: int) -> tuple[int, ...]:
    """The shape of a round's contexts: ``(R, K, d)`` single-parameter, ``(R, d)`` multi-parameter."""
    return (R, spec.K, spec.d) if spec.setting == "single" else (R, spec.d)


def _real(values: np.ndarray, name: str) -> np.ndarray:
    """``values`` if its dtype holds real numbers (float, int; not bool), else a clear error."""
    if values.dtype.kind not in "fiu" or values.dtype.kind == "b":
        raise ValidationError(f"{name} must be real numbers, got dtype {values.dtype}")
    return values


def _one_per_user(values: Any, name: str, R: int, what: str) -> np.ndarray:
    """``values`` as an array of shape ``(R,)`` (one ``what`` per user), else a clear error."""
    arr = np.asarray(values)
    if arr.shape != (R,):
        raise ValidationError(
            f"{name} have shape {arr.shape}, expected ({R},): one {what} per user"
        )
    return arr


def check_device_inputs(
    spec: EnvSpec,
    contexts: object,
    actions: object = None,
    rewards: object = None,
    *,
    bound: bool = True,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """A device's own inputs as the arrays compiled code may read, or a clear error.

    The memory-safe boundary (the documentation's Concepts: trust models): the shapes are checked
    against the problem (contexts ``(R, K, d)`` single-parameter or ``(R, d)`` multi-parameter,
    ``R`` actions in ``[0, K)``, ``R`` rewards), the dtypes are converted to contiguous float64 /
    int64 only when the values are exact (no silent truncation of a float action), and the values
    are finite with contexts within ``spec.context_bound`` (``bound=False``: finite only, for a
    choice that stays on the device).  Nothing that fails a check reaches a
    compiled step, so no read or write past an array can end up in a report.

    Returns
    -------
    contexts, actions, rewards : ndarray
        Contiguous float64 / int64 / float64 arrays (``None`` where not given).

    Raises
    ------
    ValidationError
        Wrong shape, dtype or index, naming the argument, the value and what is allowed.
    DataBoundError
        Non-finite values or a context above the declared bound.
    """
    X = _real(np.asarray(contexts), "contexts")
    if X.ndim == 0:
        raise ValidationError(
            "contexts must be an array with the users on the first axis, got a scalar"
        )
    R = X.shape[0]
    want = context_shape(spec, R)
    if X.shape != want:
        names = "(R, K, d)" if spec.setting == "single" else "(R, d)"
        raise ValidationError(
            f"contexts have shape {X.shape}; the {spec.setting}-parameter problem needs {names} = {want} "
            f"(K={spec.K} arms, d={spec.d} features)"
        )
    X = np.ascontiguousarray(X, dtype=np.float64)
    a: np.ndarray | None = None
    if actions is not None:
        a_raw = _one_per_user(actions, "actions", R, "arm")
        if a_raw.dtype.kind not in "iu":
            exact = (
                a_raw.dtype.kind == "f"
                and np.all(np.isfinite(a_raw))
                and np.all(a_raw == np.round(a_raw))
            )
            if not exact:
                raise ValidationError(
                    f"actions must be integer arm indices, got dtype {a_raw.dtype}"
                )
        a = np.ascontiguousarray(a_raw, dtype=np.int64)
        if R and (a.min() < 0 or a.max() >= spec.K):
            bad = int(a.min()) if a.min() < 0 else int(a.max())
            raise ValidationError(
                f"action {bad} is not an arm index in [0, {spec.K - 1}] (K={spec.K})"
            )
    y: np.ndarray | None = None
    if rewards is not None:
        y_raw = _real(_one_per_user(rewards, "rewards", R, "reward"), "rewards")
        y = np.ascontiguousarray(y_raw, dtype=np.float64)
    check_client_inputs(X, np.zeros(0) if y is None else y, spec.context_bound if bound else np.inf)
    return X, a, y
