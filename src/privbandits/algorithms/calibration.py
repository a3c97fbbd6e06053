"""What a private algorithm resolves before it runs: noise, clipping, budget split, guarantee.

Every private algorithm implements ``calibrate(spec) -> Calibration`` (the documentation's Concepts: engines): a pure
function of its parameters and the public problem description.  ``guarantee`` and
``resolved_params`` of every algorithm come from it, so the reported privacy statement is always
the accountant's statement about the noise the run actually adds, and the results store saves
the resolved constants beside each result.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from privbandits.core.errors import ValidationError
from privbandits.privacy.guarantee import NON_PRIVATE, PrivacyGuarantee
from privbandits.privacy.ranges import OutputRange

__all__ = [
    "NON_PRIVATE_CALIBRATION",
    "PRESETS",
    "BatchLocalLevels",
    "Calibration",
    "CalibrationWarning",
    "Constants",
    "GaussianBatchLocalLevels",
    "warn_if_not_strict",
]

#: The calibration presets (the documentation's Concepts: calibration presets): ``strict`` is
#: provably private at the requested level, ``paper`` the paper's formulas as printed,
#: ``authors_code`` the public reference code's constants.
PRESETS: tuple[str, ...] = ("strict", "paper", "authors_code")

C = TypeVar("C", bound="Constants")


@dataclass(frozen=True)
class Constants:
    """Base of every family's typed calibration: the constants a run uses after resolving
    presets and defaults on the problem (noise scales, clip norms, budget split, radii).

    A family subclasses it as a frozen dataclass whose fields are named as its paper's
    specification names them; kernels, the service and the auditor read the attributes.  A
    subclass whose reports have a bounded output set declares it in :meth:`output_ranges`.
    """

    #: Fields kept out of :meth:`as_dict` (not constants of the run, e.g. nested objects).
    hidden: ClassVar[tuple[str, ...]] = ()

    def as_dict(self) -> dict[str, Any]:
        """The constants as a JSON-serialisable dict (stored with every result)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name in self.hidden:
                continue
            v = getattr(self, f.name)
            if isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return out

    def output_ranges(
        self, context_bound: float, reward_range: tuple[float, float]
    ) -> dict[str, OutputRange]:
        """Each report field's output set (empty: the range is not declared)."""
        return {}


class CalibrationWarning(UserWarning):
    """A calibration is selected that is not provably private at the requested level, or is not
    the default ``strict`` one (the warning names the accounted guarantee)."""


@runtime_checkable
class BatchLocalLevels(Protocol):
    """Typed calibration of a shuffle algorithm whose local level depends on the public batch
    size: per range ``batch_sizes[i] = (lo, hi)`` of sizes the run can produce, ``eps0[i]`` the
    local levels at its ends (read by the client-path audit)."""

    @property
    def batch_sizes(self) -> tuple[tuple[int, int], ...]: ...

    @property
    def eps0(self) -> tuple[tuple[float, float], ...]: ...


@runtime_checkable
class GaussianBatchLocalLevels(BatchLocalLevels, Protocol):
    """:class:`BatchLocalLevels` of a shuffle algorithm whose local randomizer is a Gaussian
    mechanism: ``delta0`` is the local ``delta`` of one report beside its ``eps0`` (read by the
    client-path audit)."""

    @property
    def delta0(self) -> float: ...


@dataclass(frozen=True)
class Calibration:
    """The resolved privacy configuration of one algorithm on one problem.

    Attributes
    ----------
    guarantee : PrivacyGuarantee
        The accountant's guarantee for the noise the algorithm adds (per user).
    resolved : mapping
        Every constant the run uses as a JSON-serializable dict; derived from ``constants`` when
        the family has a typed calibration (the compatibility path of the families that have
        none yet).
    preset : str
        Calibration preset (``"strict"``, ``"paper"``, ``"authors_code"``; ``"none"`` for
        non-private algorithms).
    requested : tuple of float or None
        The requested ``(epsilon, delta)`` (None for non-private algorithms).
    constants : Constants or None
        The family's typed calibration (read with :meth:`typed`).
    """

    guarantee: PrivacyGuarantee
    resolved: dict[str, Any] = field(default_factory=dict)
    preset: str = "none"
    requested: tuple[float, float] | None = None
    constants: Constants | None = None

    def __post_init__(self) -> None:
        if self.constants is not None and not self.resolved:
            object.__setattr__(self, "resolved", self.constants.as_dict())

    def typed(self, cls: type[C]) -> C:
        """The family's typed constants, checked to be a ``cls``."""
        if not isinstance(self.constants, cls):
            raise ValidationError(
                f"the calibration holds {type(self.constants).__name__} constants, "
                f"not {cls.__name__}"
            )
        return self.constants

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
        out = {
            "preset": self.preset,
            "requested": None if self.requested is None else list(self.requested),
            "epsilon": None if math.isinf(g.epsilon) else g.epsilon,
            "delta": g.delta,
            "model": g.model,
            "resolved": dict(self.resolved),
        }
        if g.ledger is not None:
            out["ledger"] = g.ledger.to_dict()
        return out


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
