"""Output sets of local randomizers: what a genuine report can look like.

Each mechanism declares the set its reports lie in (through its family's typed calibration,
:meth:`privbandits.algorithms.calibration.Constants.output_ranges`); the service refuses a report
outside it (:mod:`privbandits.service.ranges`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OUTPUT_RANGE_KINDS", "Z_TAIL", "OutputRange"]

#: ``l2``: per vector along the last axis; ``abs``: per entry.
OUTPUT_RANGE_KINDS: tuple[str, ...] = ("l2", "abs")

#: Standard deviations of the Gaussian tail bound of Gaussian-mechanism outputs (a genuine report
#: exceeds it with probability below ``1e-30`` per entry).
Z_TAIL = 12.0


@dataclass(frozen=True)
class OutputRange:
    """One report field's output set: ``kind`` is ``"l2"`` (per vector along the last axis) or
    ``"abs"`` (per entry) with ``bound``; ``symmetric`` asks the last two axes to form
    symmetric matrices."""

    kind: str
    bound: float
    symmetric: bool = False
