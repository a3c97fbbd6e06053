"""What an audit needs and what it returns: :class:`AuditSpec` and :class:`AuditResult`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

__all__ = ["AuditResult", "AuditSpec", "StatisticSampler"]

#: One-dimensional statistic sampler: ``sample(side, n, rng)`` draws ``n`` outputs of the mechanism
#: on ``D`` (side 0) or ``D'`` (side 1) and returns their statistics, shape ``(n,)``.
StatisticSampler = Callable[[int, int, np.random.Generator], np.ndarray]


@dataclass(frozen=True)
class AuditSpec:
    """Everything needed to audit one mechanism at one parameter point.

    Attributes
    ----------
    name : str
        Registry name (with a ``[noise xf]`` suffix for an under-noised variant).
    claimed_epsilon, claimed_delta : float
        The guarantee the (calibrated) mechanism reports, computed by the accountant from its noise.
    sample : StatisticSampler
        ``sample(side, n, rng)``: ``n`` statistics of fresh outputs on ``D`` (side 0) or ``D'``
        (side 1), drawn from the library's own sampling code.
    neighbours : str
        The neighbouring pair ``(D, D')``.
    statistic : str
        The one-dimensional statistic ``T`` the test thresholds.
    n_samples : int
        Default number of outputs per neighbouring input (half train, half held out).
    notes : str
        Parameter point, calibration and caveats.
    noise_factor : float
        Noise scale relative to the calibrated one (1 = as calibrated).
    """

    name: str
    claimed_epsilon: float
    claimed_delta: float
    sample: StatisticSampler
    neighbours: str
    statistic: str
    n_samples: int
    notes: str = ""
    noise_factor: float = 1.0


@dataclass(frozen=True)
class AuditResult:
    """Outcome of one audit.

    Attributes
    ----------
    mechanism : str
        Audited mechanism (registry name, ``[noise xf]`` for an under-noised variant).
    claimed_epsilon, claimed_delta : float
        The claimed guarantee.
    audited_epsilon_lb : float
        Lower bound on the true epsilon (at ``claimed_delta``) holding with probability
        ``1 - alpha`` (95% by default).
    n_samples : int
        Outputs drawn per neighbouring input (half to choose the test, half to evaluate it).
    passed : bool
        ``audited_epsilon_lb <= claimed_epsilon``: no violation detected.
    notes : str
        Neighbouring pair, statistic, chosen test, error-rate bounds, parameter point.
    max_certifiable : float
        The test's power: the largest lower bound this audit could certify with its sample size
        (a perfectly separating test: no false positive, no false negative on the held-out half).
        A violation is detectable only if the true epsilon's lower bound can exceed the claim, so
        ``max_certifiable <= claimed_epsilon`` means the audit cannot detect any violation.
    """

    mechanism: str
    claimed_epsilon: float
    claimed_delta: float
    audited_epsilon_lb: float
    n_samples: int
    passed: bool
    notes: str = ""
    max_certifiable: float = float("nan")

    def row(self) -> dict[str, Any]:
        """The result as a flat dict (one table row; the free-text notes last)."""
        row = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "notes"}
        return {**row, "notes": self.notes}

    def __str__(self) -> str:
        claim = f"claimed ({self.claimed_epsilon:.4g}, {self.claimed_delta:.3g})"
        power = f"N={self.n_samples}; this test can certify at most {self.max_certifiable:.4g}"
        audited = f"audited epsilon >= {self.audited_epsilon_lb:.4g} ({power})"
        return f"{self.mechanism}: {claim}, {audited} -> {'PASS' if self.passed else 'VIOLATION'}"
