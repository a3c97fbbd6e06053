"""Input checks and the explicit clipping policy of the private regression estimators.

The privacy calibration of every estimator assumes covariates in the unit ball and responses in
``[-1, 1]`` (Chen et al. 2025, Section 1.3).  Data outside these bounds are clipped (covariates
scaled to norm 1, responses clipped into ``[-1, 1]``) before any statistic is computed, and the
number of clipped samples is recorded; ``on_bound="reject"`` raises instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privbandits.core.errors import DataBoundError, ValidationError
from privbandits.core.validation import check_choice, check_finite_array
from privbandits.privacy.samplers import CLIP_RTOL

__all__ = ["BOUND_POLICIES", "Prepared", "prepare"]

#: What to do with data outside the declared bounds.
BOUND_POLICIES: tuple[str, ...] = ("clip", "reject")


@dataclass(frozen=True)
class Prepared:
    """Checked data: ``X`` (n, d) rows of norm <= 1, ``y`` (n,) in [-1, 1], and what was clipped."""

    X: np.ndarray
    y: np.ndarray
    n_clipped_x: int
    n_clipped_y: int


def prepare(X: object, y: object, on_bound: str = "clip") -> Prepared:
    """Validate ``(X, y)`` and apply the bound policy (see the module docstring)."""
    check_choice("on_bound", on_bound, BOUND_POLICIES)
    Xa = check_finite_array("X", X, ndim=2)
    ya = check_finite_array("y", y, ndim=1)
    if Xa.shape[0] != ya.shape[0]:
        raise ValidationError(
            f"X has {Xa.shape[0]} rows but y has {ya.shape[0]} entries; they must match"
        )
    if Xa.shape[0] == 0 or Xa.shape[1] == 0:
        raise ValidationError(f"X must have at least one row and one column, got shape {Xa.shape}")
    norms = np.sqrt(np.einsum("ij,ij->i", Xa, Xa))
    over_x = norms > 1.0 + CLIP_RTOL
    over_y = np.abs(ya) > 1.0
    if on_bound == "reject" and (over_x.any() or over_y.any()):
        raise DataBoundError(
            f"{int(over_x.sum())} rows of X have norm above 1 (largest {norms.max():.6g}) and "
            f"{int(over_y.sum())} entries of y lie outside [-1, 1]; rescale the data or use "
            "on_bound='clip'"
        )
    Xc = Xa.astype(float, copy=True)
    if over_x.any():
        Xc[over_x] /= norms[over_x, None]
    yc = np.clip(ya.astype(float), -1.0, 1.0)
    return Prepared(Xc, yc, int(over_x.sum()), int(over_y.sum()))
