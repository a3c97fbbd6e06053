"""Calibration presets of Hanna et al. (2022): the three switches of spec section 2.6.

=====================  ==========================================  ===========================================
switch                 ``strict`` (library default)                ``paper`` (reproduction only; warns)
=====================  ==========================================  ===========================================
``paper_sensitivity``  False: Laplace sensitivity ``r_hi - r_lo``  True: sensitivity 1 (rewards still clipped)
``width_mode``         ``"rigorous"`` (spec 4.6, right column)     ``"paper"`` (spec 4.6, left column)
``shuffle_bound``      ``"fmt-valid"``: Algorithm E0 (spec 3.9)    ``"paper"``: literal ``f^{-1}_{n,delta}(eps)``
=====================  ==========================================  ===========================================

Each switch can be overridden individually; the other two keep the preset's values.  The
resolved switches are part of every result (they are written into the guarantee's notes).

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022); spec ``hanna2022-dp-linear-bandits.md`` sections 2.5, 2.6,
3.9, 4.6.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_choice

__all__ = ["PRESETS", "SHUFFLE_BOUNDS", "WIDTH_MODES", "Switches", "resolve_switches"]

#: Confidence-width modes (spec section 4.6).
WIDTH_MODES: tuple[str, ...] = ("paper", "rigorous")
#: Local-budget rules of the shuffle model (spec section 3.9).
SHUFFLE_BOUNDS: tuple[str, ...] = ("fmt-valid", "paper")
#: The two presets of spec section 2.6.
PRESETS: dict[str, dict[str, object]] = {
    "strict": {"paper_sensitivity": False, "width_mode": "rigorous", "shuffle_bound": "fmt-valid"},
    "paper": {"paper_sensitivity": True, "width_mode": "paper", "shuffle_bound": "paper"},
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
        Confidence widths (spec section 4.6).
    shuffle_bound : {"fmt-valid", "paper"}
        Local budget ``eps0^(i)`` of the shuffle model (spec section 3.9).
    """

    preset: str
    paper_sensitivity: bool
    width_mode: str
    shuffle_bound: str

    def sensitivity(self, r_lo: float, r_hi: float) -> float:
        """Sensitivity used for the Laplace scales: 1 (paper) or ``r_hi - r_lo`` (spec 2.5)."""
        return 1.0 if self.paper_sensitivity else float(r_hi - r_lo)

    @property
    def certified(self) -> bool:
        """True when neither the sensitivity nor the shuffle bound is the paper's uncertified one."""
        return not self.paper_sensitivity and self.shuffle_bound == "fmt-valid"

    def describe(self, shuffle: bool = True) -> str:
        """One line for result metadata, e.g. ``preset=strict (sensitivity=range, width_mode=...)``."""
        parts = [f"sensitivity={'1 [paper]' if self.paper_sensitivity else 'r_hi - r_lo'}",
                 f"width_mode={self.width_mode}"]
        if shuffle:
            parts.append(f"shuffle_bound={self.shuffle_bound}")
        return f"preset={self.preset} ({', '.join(parts)})"

    def as_dict(self) -> dict[str, object]:
        return {"preset": self.preset, "paper_sensitivity": self.paper_sensitivity,
                "width_mode": self.width_mode, "shuffle_bound": self.shuffle_bound}


def resolve_switches(
    preset: str = "strict",
    paper_sensitivity: bool | None = None,
    width_mode: str | None = None,
    shuffle_bound: str | None = None,
    *,
    warn: bool = True,
    shuffle: bool = True,
) -> Switches:
    """The preset's switches with individual overrides (spec section 2.6).

    Parameters
    ----------
    preset : {"strict", "paper"}
        Starting point.
    paper_sensitivity, width_mode, shuffle_bound : optional
        Overrides; ``None`` keeps the preset's value.
    warn : bool
        Emit a ``UserWarning`` when a switch that weakens the stated guarantee is on (paper
        sensitivity or the literal shuffle inverse) or the widths are the paper's unproven ones.
    shuffle : bool
        Whether the shuffle switch matters (False for the central and local models).
    """
    preset = check_choice("preset", preset, tuple(PRESETS))
    base = PRESETS[preset]
    if paper_sensitivity is None:
        ps = bool(base["paper_sensitivity"])
    elif isinstance(paper_sensitivity, bool):
        ps = paper_sensitivity
    else:
        raise ValidationError(f"paper_sensitivity must be True, False or None, got {paper_sensitivity!r}")
    wm = check_choice("width_mode", base["width_mode"] if width_mode is None else width_mode, WIDTH_MODES)
    sb = check_choice("shuffle_bound", base["shuffle_bound"] if shuffle_bound is None else shuffle_bound,
                      SHUFFLE_BOUNDS)
    sw = Switches(preset=preset, paper_sensitivity=ps, width_mode=wm, shuffle_bound=sb)
    if warn:
        issues = []
        if ps:
            issues.append("sensitivity 1 gives only 2 eps for rewards in [-1, 1] (spec 2.5)")
        if wm == "paper":
            issues.append("the paper's widths are not proven bounds (spec 3.10)")
        if sb == "paper" and shuffle:
            issues.append("the literal shuffle inverse can overclaim (spec 3.9)")
        if issues:
            warnings.warn(f"Hanna et al. calibration {sw.describe(shuffle)}: reproduction settings -- "
                          + "; ".join(issues) + "; the reported guarantee is the accountant's",
                          UserWarning, stacklevel=3)
    return sw
