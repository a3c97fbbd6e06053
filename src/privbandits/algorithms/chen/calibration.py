"""Typed calibrations of the Chen et al. (2025) family (the constants each run resolves).

Every algorithm of the family adds Gaussian noise at one noise multiplier ``sigma`` per unit of
sensitivity (0 for the non-private twins) and runs on a public, horizon-only epoch schedule; the
dataclasses below hold those constants, named as the paper and the estimators name them, and are
stored with every result (:meth:`~privbandits.algorithms.calibration.Constants.as_dict`: the keys
of ``Calibration.resolved``).

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Sections 4-6 (Algorithms 2, 3, 5, 6, 8).
"""

from __future__ import annotations

from dataclasses import dataclass

from privbandits.algorithms.calibration import Constants

__all__ = ["ChenConstants", "SquareCBConstants", "SquareCBLDPConstants"]


@dataclass(frozen=True)
class ChenConstants(Constants):
    """Algorithm 3 on re-weighted regression (``chen-elim``, ``chen-jdp``, ``chen-ldp``): the noise
    multiplier ``sigma``, the doubling epochs' ends ``T_1 < ... < T_J = T``, the per-epoch failure
    probability ``delta_f / J``, the width multiplier ``c_b``, ``lambda = c_lam eps_N`` and the
    link's constants ``L_nu``, ``mu``."""

    sigma: float
    epoch_ends: tuple[int, ...]
    failure_prob_per_epoch: float
    c_b: float
    c_lam: float
    L_nu: float
    mu: float


@dataclass(frozen=True)
class SquareCBConstants(Constants):
    """SquareCB on Algorithm 5 (``squarecb``, ``squarecb-jdp``): the epochs ``tau_m``, the oracle's
    noise multiplier ``sigma`` and the learning-rate constant ``c_gamma``."""

    epoch_ends: tuple[int, ...]
    sigma: float
    c_gamma: float


@dataclass(frozen=True)
class SquareCBLDPConstants(Constants):
    """SquareCB on Algorithm 6 (``squarecb-ldp``): as :class:`SquareCBConstants`, plus each epoch's
    number of batches ``K`` and step size ``eta`` of the server's descent."""

    epoch_ends: tuple[int, ...]
    sigma: float
    c_gamma: float
    K: tuple[int, ...]
    eta: tuple[float, ...]
