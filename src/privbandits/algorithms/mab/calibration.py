"""Typed calibrations of the private K-armed bandits (DP-UCB, DP-SE, AdaP-UCB / AdaP-KLUCB).

Each algorithm's ``calibrate`` returns one of these frozen records (fields named as the papers
name them) inside its :class:`~privbandits.algorithms.calibration.Calibration`; the kernels read
the attributes.

References
----------
Mishra & Thakurta (2015), Algorithm 1 (DP-UCB); Sajed & Sheffet (2019), DP-SE; Azize & Basu
(2022), Algorithm 1 (AdaP-UCB, AdaP-KLUCB).
"""

from __future__ import annotations

from dataclasses import dataclass

from privbandits.algorithms.calibration import Constants

__all__ = [
    "AdaPConstants",
    "DPSEConstants",
    "DPUCBConstants",
    "EliminationConstants",
    "Exp3Constants",
    "SubGaussianConstants",
    "TsallisConstants",
]


@dataclass(frozen=True)
class DPUCBConstants(Constants):
    """DP-UCB: per-tree level ``epsilon_0``, tree ``levels`` (nodes per leaf), the node Laplace
    scale, the confidence relaxation ``Gamma``, ``gamma`` and the per-arm budget rule."""

    epsilon_0: float
    levels: int
    node_scale: float
    Gamma: float
    gamma: float
    per_arm_budget: str


@dataclass(frozen=True)
class DPSEConstants(Constants):
    """DP-SE: failure probability ``beta``, first epoch length ``R_1`` and its Laplace scale."""

    beta: float
    R_1: float
    laplace_scale_1: float


@dataclass(frozen=True)
class AdaPConstants(Constants):
    """AdaP-UCB / AdaP-KLUCB: exploration ``alpha`` and the Laplace scale of a one-sample episode."""

    alpha: float
    laplace_scale_per_sample: float


@dataclass(frozen=True)
class Exp3Constants(Constants):
    """EXP3: learning rate ``eta``, loss offset and range (losses ``(hi - r) / width``), horizon."""

    eta: float
    loss_offset: float
    loss_range: float
    T: int


@dataclass(frozen=True)
class TsallisConstants(Constants):
    """Tsallis-INF: the loss normalization and the learning-rate scale."""

    loss_offset: float
    loss_range: float
    eta_scale: float


@dataclass(frozen=True)
class SubGaussianConstants(Constants):
    """UCB1: the sub-Gaussian scale of the rewards."""

    scale: float


@dataclass(frozen=True)
class EliminationConstants(Constants):
    """Successive elimination: the sub-Gaussian scale and the confidence exponent ``alpha``."""

    scale: float
    alpha: float
