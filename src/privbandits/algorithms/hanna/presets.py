"""Calibration presets and parameter constraints of Hanna et al. (2022) (presets on the Hanna et al. 2022 documentation page).

=====================  ==========================================  ===========================================
switch                 ``strict`` (library default)                ``paper`` (reproduction only)
=====================  ==========================================  ===========================================
``paper_sensitivity``  False: Laplace sensitivity ``r_hi - r_lo``  True: sensitivity 1 (rewards still clipped)
``width_mode``         ``"rigorous"`` (width modes on the Hanna et al. 2022 documentation page, right column)     ``"paper"`` (width modes on the Hanna et al. 2022 documentation page, left column)
``shuffle_bound``      ``"fmt-valid"``: Algorithm E0 (Hanna et al. 2022, eq. 10, correction Hanna22-14)    ``"paper"``: literal ``f^{-1}_{n,delta}(eps)``
=====================  ==========================================  ===========================================

Each switch can be overridden individually (``None`` keeps the preset's value); the resolved
switches are part of every calibration (``resolved_params``) and of the guarantee's notes.  A
preset other than ``strict``, or switches whose accounted guarantee is weaker than the request,
make :meth:`~privbandits.algorithms.base.Algorithm.reset` emit a
:class:`~privbandits.algorithms.calibration.CalibrationWarning` naming the accounted guarantee.

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022); the documentation's Hanna et al. 2022 page (sensitivity, presets,
3.9, 4.6.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from privbandits.algorithms.hanna.elimination import CORE_SETS
from privbandits.core.errors import ValidationError
from privbandits.core.params import Bool, Choice, Constraint, Optional, Positive, Real
from privbandits.privacy.laplace_shuffle import SHUFFLE_BOUNDS

__all__ = [
    "ELIMINATION_CONSTRAINTS",
    "PRESETS",
    "SHUFFLE_BOUNDS",
    "SWITCH_CONSTRAINTS",
    "WIDTH_MODES",
    "CoreSet",
    "Switches",
    "core_set_name",
    "resolve_switches",
]

#: Confidence-width modes (width modes on the Hanna et al. 2022 documentation page).
WIDTH_MODES: tuple[str, ...] = ("paper", "rigorous")
#: The two presets (presets on the Hanna et al. 2022 documentation page).
PRESETS: dict[str, dict[str, Any]] = {
    "strict": {"paper_sensitivity": False, "width_mode": "rigorous", "shuffle_bound": "fmt-valid"},
    "paper": {"paper_sensitivity": True, "width_mode": "paper", "shuffle_bound": "paper"},
}


def core_set_name(value: bool | str) -> str:
    """The core-set construction of a ``core_set`` parameter: ``True`` -> ``"greedy"`` (G-optimal
    core set), ``False`` -> ``"nocore-fw"`` (the "no core set" ablation, Hanna et al. 2022, correction Hanna22-26), or the
    name itself (one of :data:`CORE_SETS`)."""
    if isinstance(value, bool):
        return "greedy" if value else "nocore-fw"
    return value


class CoreSet(Constraint):
    """``True``, ``False`` or one of :data:`CORE_SETS` (kept as given; see :func:`core_set_name`)."""

    def check(self, name: str, value: Any) -> bool | str:
        if isinstance(value, bool) or (isinstance(value, str) and value in CORE_SETS):
            return value
        raise ValidationError(f"{name} must be True, False or one of {CORE_SETS}, got {value!r}")

    def describe(self) -> str:
        return "True, False or one of " + ", ".join(map(repr, CORE_SETS))


#: Constraints of the elimination skeleton shared by every algorithm of the family.
ELIMINATION_CONSTRAINTS: dict[str, Constraint] = {
    "preset": Choice(*PRESETS),
    "width_mode": Optional(Choice(*WIDTH_MODES)),
    "core_set": CoreSet(),
    "design_factor": Real(1.0, None),
    "sigma": Positive,
    "fail_prob": Optional(Real(0.0, 1.0, low_open=True, high_open=True)),
}
#: Constraints of the privacy switches (central / local use the first, shuffle all three).
SWITCH_CONSTRAINTS: dict[str, Constraint] = {
    "paper_sensitivity": Optional(Bool()),
    "shuffle_bound": Optional(Choice(*SHUFFLE_BOUNDS)),
}


@dataclass(frozen=True)
class Switches:
    """Resolved calibration switches of one algorithm instance.

    Attributes
    ----------
    preset : {"strict", "paper"}
        The preset the switches started from.
    paper_sensitivity : bool
        Laplace scales use sensitivity 1 instead of ``r_hi - r_lo`` (only ``2 eps`` for
        ``[-1, 1]`` rewards; the accountant reports that).
    width_mode : {"paper", "rigorous"}
        Confidence widths (width modes on the Hanna et al. 2022 documentation page).
    shuffle_bound : {"fmt-valid", "paper"}
        Local budget ``eps0^(i)`` of the shuffle model (Hanna et al. 2022, eq. 10, correction Hanna22-14).
    """

    preset: str
    paper_sensitivity: bool
    width_mode: str
    shuffle_bound: str

    def sensitivity(self, r_lo: float, r_hi: float) -> float:
        """Sensitivity used for the Laplace scales: 1 (paper) or ``r_hi - r_lo`` (Hanna et al. 2022, eq. 12, correction Hanna22-1)."""
        return 1.0 if self.paper_sensitivity else float(r_hi - r_lo)

    @property
    def certified(self) -> bool:
        """True when neither the sensitivity nor the shuffle bound is the paper's uncertified one."""
        return not self.paper_sensitivity and self.shuffle_bound == "fmt-valid"

    def describe(self, shuffle: bool = True) -> str:
        """One line for result metadata, e.g. ``preset=strict (sensitivity=range, width_mode=...)``."""
        parts = [
            f"sensitivity={'1 [paper]' if self.paper_sensitivity else 'r_hi - r_lo'}",
            f"width_mode={self.width_mode}",
        ]
        if shuffle:
            parts.append(f"shuffle_bound={self.shuffle_bound}")
        return f"preset={self.preset} ({', '.join(parts)})"

    def as_dict(self, shuffle: bool = True) -> dict[str, Any]:
        """The switches as resolved parameters (``shuffle_bound`` only for the shuffle model)."""
        out: dict[str, Any] = {
            "preset": self.preset,
            "paper_sensitivity": self.paper_sensitivity,
            "width_mode": self.width_mode,
        }
        if shuffle:
            out["shuffle_bound"] = self.shuffle_bound
        return out


def resolve_switches(
    preset: str = "strict",
    paper_sensitivity: bool | None = None,
    width_mode: str | None = None,
    shuffle_bound: str | None = None,
) -> Switches:
    """The preset's switches with individual overrides (presets on the Hanna et al. 2022 documentation page).

    Parameters
    ----------
    preset : {"strict", "paper"}
        Starting point.
    paper_sensitivity, width_mode, shuffle_bound : optional
        Overrides; ``None`` keeps the preset's value.  The values are validated by the
        algorithms' constraints.
    """
    if preset not in PRESETS:
        raise ValidationError(f"preset must be one of {tuple(PRESETS)}, got {preset!r}")
    base = PRESETS[preset]
    return Switches(
        preset=preset,
        paper_sensitivity=bool(
            base["paper_sensitivity"] if paper_sensitivity is None else paper_sensitivity
        ),
        width_mode=str(base["width_mode"] if width_mode is None else width_mode),
        shuffle_bound=str(base["shuffle_bound"] if shuffle_bound is None else shuffle_bound),
    )
