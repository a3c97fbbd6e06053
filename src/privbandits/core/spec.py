"""The public problem description an algorithm receives (never the true parameter)."""

from __future__ import annotations

from dataclasses import dataclass

from privbandits.core.errors import ValidationError
from privbandits.core.links import IDENTITY, Link
from privbandits.core.validation import check_choice, check_int, check_positive

__all__ = ["SETTINGS", "EnvSpec"]

SETTINGS: tuple[str, ...] = ("single", "multi")


@dataclass(frozen=True)
class EnvSpec:
    """Public description of a problem, handed to an algorithm at :meth:`Algorithm.reset`.

    It holds only what a deployment would know in advance: never the true parameter.

    Attributes
    ----------
    d : int
        Feature dimension.
    K : int
        Number of arms per round.
    setting : {"single", "multi"}
        Single-parameter (contexts ``(R, K, d)``, shared theta*) or multi-parameter (contexts
        ``(R, d)``, one theta* per arm).
    horizon : int
        Number of rounds T (number of users).
    link : Link
        Reward model ``E[r | x] = mu(x @ theta*)``.
    context_bound : float
        ``C_B``: every feature vector has l2 norm at most this.
    reward_bound : float
        ``c_r``: rewards are clipped to ``[-c_r, c_r]`` before privatization (``[0, c_r]`` for
        Bernoulli / Poisson rewards, see ``reward_range``).
    reward_range : tuple of float
        Interval ``[r_lo, r_hi]`` user-side clipping maps rewards into.
    theta_bound : float
        Bound on ``||theta*||_2`` (``S`` in OFUL).
    noise_scale : float
        Sub-Gaussian parameter of the reward noise (``R`` in OFUL, ``sigma_noise`` in Han et al.).
    fixed_actions : bool
        True when the action set is the same every round (non-contextual linear bandit).
    """

    d: int
    K: int
    setting: str = "single"
    horizon: int = 1
    link: Link = IDENTITY
    context_bound: float = 1.0
    reward_bound: float = 1.0
    reward_range: tuple[float, float] = (-1.0, 1.0)
    theta_bound: float = 1.0
    noise_scale: float = 0.1
    fixed_actions: bool = False

    def __post_init__(self) -> None:
        check_int("d", self.d, 1)
        check_int("K", self.K, 1)
        check_choice("setting", self.setting, SETTINGS)
        check_int("horizon", self.horizon, 1)
        check_positive("context_bound", self.context_bound)
        check_positive("reward_bound", self.reward_bound)
        check_positive("theta_bound", self.theta_bound)
        lo, hi = self.reward_range
        if not lo < hi:
            raise ValidationError(f"reward_range must satisfy lo < hi, got {self.reward_range}")
