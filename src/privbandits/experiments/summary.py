"""Group stored units into series (one curve per algorithm entry and parameter setting).

A *series* pools every replication of every seed of one (label, grid values, horizon) triple:
``regret`` is the stack of the units' ``(R, n)`` arrays along the replication axis.  Means and
standard deviations of a series are taken over all those replications (sample std, ``ddof=1``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.experiments.store import StoredResult
from privbandits.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "AXIS_NAMES",
    "TUNED_SUFFIX",
    "Series",
    "axis_name",
    "build_series",
    "fmt_num",
    "format_values",
]


def fmt_num(x: float, digits: int = 4) -> str:
    """Plain notation for regrets: ``digits`` significant digits, no exponent in [10^digits, 1e7)."""
    return f"{x:.0f}" if 10**digits <= abs(x) < 1e7 else f"{x:.{digits}g}"


#: How a parameter is named on a figure where the papers use a symbol for it (the TOML keeps the
#: descriptive name): ``theta_norm`` is the papers' S, the norm bound of theta* (S = ||theta*||).
AXIS_NAMES: dict[str, str] = {"theta_norm": "S"}


def axis_name(param: str) -> str:
    """A parameter's name in panel titles and axis labels (:data:`AXIS_NAMES`, else itself)."""
    return AXIS_NAMES.get(param, param)


def format_values(values: dict[str, Any]) -> str:
    """``{"epsilon": 1.0, "alpha": 0.1}`` -> ``"epsilon=1, alpha=0.1"``."""
    return ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items()
    )


#: Label suffix of a tuned series (:func:`~privbandits.experiments.tuning.tuned_config`).
TUNED_SUFFIX = " (tuned)"


@dataclass
class Series:
    """All replications of one curve."""

    label: str
    algorithm: str
    grid: dict[str, Any]
    params: dict[str, Any]
    horizon: int
    trust_model: str
    preset: str
    guarantee: PrivacyGuarantee
    seeds: tuple[int, ...]
    checkpoints: np.ndarray
    regret: np.ndarray  # (n_replications_total, n_checkpoints)
    wall_time: float

    @property
    def name(self) -> str:
        """Label plus grid values, e.g. ``"LDP-OLS (epsilon=1)"``."""
        return f"{self.label} ({format_values(self.grid)})" if self.grid else self.label

    @property
    def n(self) -> int:
        return int(self.regret.shape[0])

    @property
    def final(self) -> np.ndarray:
        return self.regret[:, -1]

    @property
    def final_mean(self) -> float:
        return float(self.final.mean())

    @property
    def final_std(self) -> float:
        return float(self.final.std(ddof=1)) if self.n > 1 else 0.0

    @property
    def final_se(self) -> float:
        return self.final_std / math.sqrt(self.n)

    def value(self, key: str) -> Any:
        """The series' value of parameter ``key`` (grid first, then fixed params), or None."""
        return self.grid[key] if key in self.grid else self.params.get(key)

    def curve(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and sample std of the cumulative regret at every checkpoint."""
        std = self.regret.std(axis=0, ddof=1) if self.n > 1 else np.zeros(self.regret.shape[1])
        return self.regret.mean(axis=0), std


def _worst(gs: Sequence[PrivacyGuarantee]) -> PrivacyGuarantee:
    """The weakest guarantee of a series (largest epsilon, then delta)."""
    return max(gs, key=lambda g: (g.epsilon, g.delta))


def build_series(results: Sequence[StoredResult]) -> list[Series]:
    """Pool stored units into series, in order of first appearance."""
    groups: dict[tuple[Any, ...], list[StoredResult]] = {}
    for r in results:
        key = (r.label, tuple(sorted((k, repr(v)) for k, v in r.grid.items())), r.horizon)
        groups.setdefault(key, []).append(r)
    out = []
    for members in groups.values():
        first = members[0]
        ck = np.asarray(first.checkpoints)
        for m in members[1:]:
            if not np.array_equal(np.asarray(m.checkpoints), ck):
                raise ValidationError(
                    f"units of series {first.label!r} (horizon {first.horizon}) were recorded at different "
                    "checkpoints; select one run (e.g. with --horizon) or rerun with consistent checkpoints"
                )
        members = sorted(members, key=lambda m: m.seed)
        out.append(
            Series(
                label=first.label,
                algorithm=first.algorithm,
                grid=dict(first.grid),
                params=dict(first.params),
                horizon=first.horizon,
                trust_model=first.trust_model,
                preset=first.preset,
                guarantee=_worst([m.guarantee for m in members]),
                seeds=tuple(m.seed for m in members),
                checkpoints=ck,
                regret=np.concatenate([m.regret for m in members], axis=0),
                wall_time=float(sum(m.wall_time for m in members)),
            )
        )
    return out
