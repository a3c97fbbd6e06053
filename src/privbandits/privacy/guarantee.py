"""The privacy statement every algorithm and mechanism carries (the documentation's Concepts: trust models)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from privbandits.core.validation import check_choice, check_in_range
from privbandits.privacy.ledger import Event

__all__ = ["NON_PRIVATE", "TRUST_MODELS", "PrivacyGuarantee"]

#: Trust models in the order of the documentation's Concepts: trust models, plus "none" for non-private baselines.
TRUST_MODELS: tuple[str, ...] = ("none", "local", "shuffle", "joint", "central")


@dataclass(frozen=True)
class PrivacyGuarantee:
    """A differential-privacy statement, computed by the accountant from the noise actually added.

    Parameters
    ----------
    model : {"none", "local", "shuffle", "joint", "central"}
        Trust model in which the guarantee holds.
    epsilon : float
        Privacy loss; ``inf`` for non-private algorithms.
    delta : float
        Failure probability in [0, 1); 0 for pure DP.
    unit : str
        What neighbouring datasets differ in ("user" = one round's user).
    notes : str
        Calibration preset, composition used, caveats (for example classic Gaussian used at
        epsilon >= 1).
    rho : float or None
        zCDP parameter when the guarantee was derived from zCDP accounting.
    local_epsilon : float or None
        Shuffle model: the (largest) local level ``eps0`` of each report before amplification,
        i.e. what a user is guaranteed if the shuffler is not trusted.
    ledger : Event or None
        The tree of privacy events the accountant composed
        (:mod:`privbandits.privacy.ledger`); the notes are rendered from it when none are given.
    approximate : bool
        True when ``(epsilon, delta)`` rests on an approximation rather than a proof (e.g. the
        Gaussian approximation of binomial noise in the calibrated Cheu et al. summation,
        :meth:`privbandits.privacy.cheu.SumParams.guarantee`); printed as ``~(epsilon, delta)``.
    """

    model: str
    epsilon: float
    delta: float = 0.0
    unit: str = "user"
    notes: str = ""
    rho: float | None = field(default=None)
    approximate: bool = False
    local_epsilon: float | None = None
    ledger: Event | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_choice("model", self.model, TRUST_MODELS)
        if not self.notes and self.ledger is not None:
            object.__setattr__(self, "notes", self.ledger.summary())
        check_in_range("epsilon", self.epsilon, 0.0, None, allow_inf=True)
        check_in_range("delta", self.delta, 0.0, 1.0, high_inclusive=False)

    @property
    def assumptions(self) -> str:
        """What the trust model assumes, in words (shown by ``str``)."""
        return ASSUMPTIONS.get(self.model, "")

    def short(self) -> str:
        """Compact form for legends and narrow tables, e.g. ``"ε=0.998, δ=0.01"``."""
        if not self.is_private:
            return "non-private"
        approx = "~" if self.approximate else ""
        d = "" if self.delta == 0 else f", δ={self.delta:.3g}"
        return f"{approx}ε={self.epsilon:.3g}{d}"

    @property
    def is_private(self) -> bool:
        """False for the non-private baselines (epsilon = inf)."""
        return self.model != "none" and math.isfinite(self.epsilon)

    def __str__(self) -> str:
        if not self.is_private:
            return "non-private"
        d = "" if self.delta == 0 else f", delta={self.delta:.3g}"
        approx = "~" if self.approximate else ""
        extra = f"; {self.assumptions}" if self.model in ("shuffle", "joint") else ""
        if self.local_epsilon is not None:
            extra += f"; each report is {self.local_epsilon:.4g}-LDP without the shuffler"
        return f"{approx}({self.epsilon:.4g}{d})-DP [{self.model}, per {self.unit}{extra}]"


#: What each trust model assumes (``PrivacyGuarantee.assumptions``).
ASSUMPTIONS: dict[str, str] = {
    "local": "no trusted party: each user randomizes its own data before sending it",
    "shuffle": "assumes a trusted shuffler: the server sees each batch's reports in random order and "
    "not which user played which action",
    "joint": "assumes a trusted curator: holds against everything other users see",
    "central": "assumes a trusted curator: holds for what the curator releases",
}


NON_PRIVATE = PrivacyGuarantee(
    model="none", epsilon=math.inf, delta=0.0, notes="non-private baseline"
)
