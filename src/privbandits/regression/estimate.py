"""What a regression estimator returns: a parameter, predictions and per-point confidence widths."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.core.validation import check_finite_array
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.regression.links import LinkConstants
from privbandits.regression.matrices import row_norms
from privbandits.regression.releases import Ledger

__all__ = ["RegressionEstimate"]


@dataclass(frozen=True)
class RegressionEstimate:
    """A fitted (private) regression: ``f_hat(phi) = clip(nu(<phi, theta>), -1, 1)`` with widths.

    The confidence width at ``phi`` is ``b_hat(phi) = min(2, width_scale * ||width_matrix phi||)``
    (the L1-regression oracle of Chen et al. 2025, Definition 6): for the re-weighted estimators
    ``width_matrix = U`` and ``width_scale = c_b L_nu e_bar`` (Theorem 4.4); for ridge-type
    estimators ``width_matrix = H^{-1/2}`` and ``width_scale = beta``; ``width_scale = inf`` means
    only the trivial width 2 is known (always valid since ``|f*| <= 1``).

    Attributes
    ----------
    theta : ndarray, shape (d,)
        Estimated parameter.
    link : LinkConstants
        Link and its derivative bounds on ``[-1, 1]``.
    width_matrix : ndarray or None, shape (d, d)
    width_scale : float
    guarantee : PrivacyGuarantee
        The accountant's guarantee of the releases actually made.
    ledger : Ledger or None
        The releases and the sample usage of the fit.
    resolved : dict
        Every constant the fit used (noise multiplier, lambda, batch sizes, e_bar, ...).
    n_clipped : int
        Samples clipped into the declared bounds before fitting.
    """

    theta: np.ndarray
    link: LinkConstants
    width_matrix: np.ndarray | None
    width_scale: float
    guarantee: PrivacyGuarantee
    ledger: Ledger | None = None
    resolved: dict[str, Any] = field(default_factory=dict)
    n_clipped: int = 0

    def _features(self, F: object) -> np.ndarray:
        Fa = check_finite_array("F", F)
        if Fa.shape[-1] != self.theta.shape[0]:
            raise ValueError(
                f"F must have {self.theta.shape[0]} columns (the dimension d), got shape {Fa.shape}"
            )
        return Fa

    def predict(self, F: object) -> np.ndarray:
        """``clip(nu(F theta), -1, 1)`` row by row (any leading shape, last axis d)."""
        Fa = self._features(F)
        return np.clip(self.link.nu(Fa @ self.theta), -1.0, 1.0)

    def width(self, F: object) -> np.ndarray:
        """Per-point confidence widths ``min(2, width_scale ||width_matrix phi||)``."""
        Fa = self._features(F)
        if self.width_matrix is None or math.isinf(self.width_scale):
            return np.full(Fa.shape[:-1], 2.0)
        return np.minimum(2.0, self.width_scale * row_norms(Fa, self.width_matrix))
