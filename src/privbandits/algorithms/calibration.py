"""What a private algorithm resolves before it runs: noise, clipping, budget split, guarantee.

Every private algorithm implements ``calibrate(spec) -> Calibration`` (the documentation's Concepts: engines): a pure
function of its parameters and the public problem description.  ``guarantee`` and
``resolved_params`` of every algorithm come from it, so the reported privacy statement is always
the accountant's statement about the noise the run actually adds, and the results store saves
the resolved constants beside each result.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

from privbandits.privacy.guarantee import NON_PRIVATE, PrivacyGuarantee

__all__ = ["NON_PRIVATE_CALIBRATION", "Calibration", "CalibrationWarning", "warn_if_not_strict"]


class CalibrationWarning(UserWarning):
    """A calibration is selected that is not provably private at the requested level, or is not
    the default ``strict`` one (the warning names the accounted guarantee)."""


@dataclass(frozen=True)
class Calibration:
    """The resolved privacy configuration of one algorithm on one problem.

    Attributes
    ----------
    guarantee : PrivacyGuarantee
        The accountant's guarantee for the noise the algorithm adds (per user).
    resolved : dict
        Every constant the run uses after resolving presets and defaults on the problem: noise
        scales, clip norms, budget split, step sizes, radii.  JSON-serializable values.
    preset : str
        Calibration preset (``"strict"``, ``"paper"``, ``"authors_code"``; ``"none"`` for
        non-private algorithms).
    requested : tuple of float or None
        The requested ``(epsilon, delta)`` (None for non-private algorithms).
    """

    guarantee: PrivacyGuarantee
    resolved: dict[str, Any] = field(default_factory=dict)
    preset: str = "none"
    requested: tuple[float, float] | None = None

    @property
    def meets_request(self) -> bool:
        """Whether the accounted guarantee is at least as strong as the request."""
        if self.requested is None:
            return True
        eps, delta = self.requested
        g = self.guarantee
        return g.epsilon <= eps * (1.0 + 1e-9) and g.delta <= delta * (1.0 + 1e-9)

    def as_dict(self) -> dict[str, Any]:
        """JSON-serializable summary (stored with every result)."""
        g = self.guarantee
        return {
            "preset": self.preset,
            "requested": None if self.requested is None else list(self.requested),
            "epsilon": None if math.isinf(g.epsilon) else g.epsilon,
            "delta": g.delta,
            "model": g.model,
            "resolved": dict(self.resolved),
        }


NON_PRIVATE_CALIBRATION = Calibration(NON_PRIVATE)


def warn_if_not_strict(name: str, cal: Calibration, stacklevel: int = 3) -> None:
    """Emit a :class:`CalibrationWarning` when ``cal`` is not the default provable calibration.

    Warns when the preset is not ``strict`` (``paper``, ``authors_code``) or when the accounted
    guarantee is weaker than the request; the message names the accounted guarantee.
    """
    if cal.requested is None:
        return
    reasons = []
    if cal.preset not in ("strict", "none"):
        reasons.append(f"preset={cal.preset!r} is not the default provable calibration")
    if not cal.meets_request:
        eps, delta = cal.requested
        reasons.append(
            f"the accounted guarantee is weaker than the request (epsilon={eps:g}, delta={delta:g})"
        )
    if reasons:
        warnings.warn(
            f"{name}: {'; '.join(reasons)}; accounted guarantee: {cal.guarantee}",
            CalibrationWarning,
            stacklevel=stacklevel,
        )
