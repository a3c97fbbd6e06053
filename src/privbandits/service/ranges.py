"""The output range of a local randomizer: what a genuine report can look like.

A report outside its mechanism's output set cannot have come from the randomizer (it is a
malformed or malicious report), and the server's estimate would absorb it unbounded, so the
service refuses it.  Each mechanism declares its set (:meth:`privbandits.algorithms.base.
Algorithm.output_ranges`, from the family's typed calibration); for example:

* the l2-ball mechanism (Han et al. 2021, section 3.2; Duchi, Jordan & Wainwright 2018): every
  vector has l2 norm equal to the mechanism's radius (at most the largest radius of the run);
* the OLS Gaussian randomizer (Han et al. 2021, eq. 3.3): ``M = x x^T + W`` is symmetric with
  ``|M_ij| <= C_B^2 + z s_W`` and ``|u_i| <= c_r C_B + z s_u`` where ``z = 12`` standard deviations
  (a genuine report exceeds the bound with probability below ``1e-30`` per entry);
* any other mechanism: finite values of the declared shape (its range is not declared: listed as
  such in ``GET /v1/model``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from privbandits.privacy.ranges import Z_TAIL, OutputRange
from privbandits.service.codec import FieldError

__all__ = ["Z_TAIL", "RangeRule", "output_rules"]

_RTOL = 1e-9


@dataclass(frozen=True)
class RangeRule:
    """One field's output set: ``kind`` is ``"l2"`` (per vector along the last axis), ``"abs"``
    (per entry) ; ``symmetric`` asks the last two axes to form symmetric matrices."""

    kind: str
    bound: float
    symmetric: bool = False

    def check(self, field: str, value: np.ndarray) -> None:
        """Raise :class:`FieldError` (naming ``field``) when ``value`` is outside the set."""
        limit = self.bound * (1.0 + _RTOL)
        if self.kind == "l2":
            norms = (
                np.sqrt((value.reshape(-1, value.shape[-1]) ** 2).sum(axis=1))
                if value.size
                else np.zeros(0)
            )
            worst = float(norms.max()) if norms.size else 0.0
            if worst > limit:
                raise FieldError(
                    field,
                    f"l2 norm {worst:.6g} is above the mechanism's output radius {self.bound:.6g}",
                )
        else:
            worst = float(np.abs(value).max()) if value.size else 0.0
            if worst > limit:
                raise FieldError(
                    field,
                    f"entry of absolute value {worst:.6g} is outside the mechanism's output "
                    f"range [-{self.bound:.6g}, {self.bound:.6g}]",
                )
        if (
            self.symmetric
            and value.ndim >= 2
            and not np.array_equal(value, np.swapaxes(value, -1, -2))
        ):
            raise FieldError(
                field, "must be a symmetric matrix (the mechanism's noise is symmetric)"
            )

    def describe(self) -> dict[str, Any]:
        """JSON description for ``GET /v1/model``."""
        return {"kind": self.kind, "bound": self.bound, "symmetric": self.symmetric}


def output_rules(ranges: Mapping[str, OutputRange]) -> dict[str, RangeRule]:
    """Range rules by field name for the output sets a mechanism declares (empty: not declared).

    Parameters
    ----------
    ranges : mapping
        ``field -> OutputRange``, as :meth:`privbandits.algorithms.base.Algorithm.output_ranges`
        returns them.
    """
    return {name: RangeRule(r.kind, r.bound, r.symmetric) for name, r in ranges.items()}
