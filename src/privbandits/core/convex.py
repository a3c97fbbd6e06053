"""Bandit convex optimization: the decision set and the public problem description.

The context-free setting of Zheng, Cai, Huang, Li & Wang (2020), sections 3.1-3.2: the server picks
points ``x_t`` of a bounded convex set ``X`` with ``r B subset X subset R B`` (``B`` the unit
ball), user ``t`` holds a convex loss ``f_t`` and observes ``f_t`` at the queried point(s).
:class:`Domain` ships two such sets with closed-form projections (Euclidean ball and centred box);
:class:`ConvexSpec` extends :class:`~privbandits.core.spec.EnvSpec` with what a
bandit-convex-optimization algorithm may know in advance (domain, Lipschitz constant, loss range,
strong-convexity modulus).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_choice, check_positive

__all__ = ["DOMAINS", "ConvexSpec", "Domain"]

#: Decision sets with a closed-form projection.
DOMAINS: tuple[str, ...] = ("ball", "box")


@dataclass(frozen=True)
class Domain:
    """A centred convex decision set in ``R^d``: the ball of radius ``size`` or the box
    ``[-size, size]^d``.

    Attributes
    ----------
    kind : {"ball", "box"}
    size : float
        Radius of the ball, half-width of the box.
    d : int
        Dimension.
    """

    kind: str
    size: float
    d: int

    def __post_init__(self) -> None:
        check_choice("domain", self.kind, DOMAINS)
        check_positive("domain_size", self.size)

    @property
    def inner_radius(self) -> float:
        """``r``: the largest centred ball inside the set."""
        return self.size

    @property
    def outer_radius(self) -> float:
        """``R``: the smallest centred ball containing the set."""
        return self.size if self.kind == "ball" else self.size * math.sqrt(self.d)

    @property
    def diameter(self) -> float:
        """``D = 2R``."""
        return 2.0 * self.outer_radius

    def project(self, x: np.ndarray, shrink: float = 0.0) -> np.ndarray:
        """Euclidean projection of the points ``x`` (..., d) onto ``(1 - shrink) X``.

        For a centred set, ``Pi_{(1-xi)X}(x) = (1 - xi) Pi_X(x / (1 - xi))``, which for the ball and
        the box is the projection onto the ball of radius / box of half-width ``(1 - xi) size``.
        """
        if not 0.0 <= shrink <= 1.0:
            raise ValidationError(f"shrink must lie in [0, 1], got {shrink}")
        s = (1.0 - shrink) * self.size
        x = np.asarray(x, dtype=float)
        if self.kind == "box":
            return np.clip(x, -s, s)
        norm = np.sqrt(np.einsum("...d,...d->...", x, x))[..., None]
        return x * np.minimum(1.0, s / np.maximum(norm, 1e-300))

    def contains(self, x: np.ndarray, shrink: float = 0.0, rtol: float = 1e-9) -> np.ndarray:
        """Whether each point of ``x`` (..., d) lies in ``(1 - shrink) X`` (up to ``rtol``)."""
        s = (1.0 - shrink) * self.size * (1.0 + rtol)
        x = np.asarray(x, dtype=float)
        if self.kind == "box":
            return np.all(np.abs(x) <= s, axis=-1)
        return np.sqrt(np.einsum("...d,...d->...", x, x)) <= s


@dataclass(frozen=True)
class ConvexSpec(EnvSpec):
    """Public description of a bandit-convex-optimization problem.

    ``K`` is the number of points queried per round that the environment accepts (1 or 2);
    ``reward_range`` is the negated loss range (the recorded reward is minus the loss).

    Attributes
    ----------
    domain : Domain
        The decision set ``X``.
    lipschitz : float
        ``G``: every ``f_t`` is ``G``-Lipschitz on ``X``.
    loss_range : tuple of float
        ``[lo, hi]`` containing every loss value on ``X``.
    sc_modulus : float
        ``mu``: every ``f_t`` is ``mu``-strongly convex (0 = only convex).
    param_dim : int
        ``p``: width of the users' loss parameters (the round's "contexts", ``(R, p)``), which a
        device checks without reading them (0 = not declared).
    """

    domain: Domain = Domain("ball", 1.0, 1)
    lipschitz: float = 1.0
    loss_range: tuple[float, float] = (0.0, 1.0)
    sc_modulus: float = 0.0
    param_dim: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("lipschitz", self.lipschitz)
        lo, hi = self.loss_range
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValidationError(
                f"loss_range must be a finite interval lo < hi, got {self.loss_range}"
            )
        if self.domain.d != self.d:
            raise ValidationError(f"domain dimension {self.domain.d} differs from d={self.d}")
        if self.sc_modulus < 0:
            raise ValidationError(f"sc_modulus must be >= 0, got {self.sc_modulus}")
        if self.param_dim < 0:
            raise ValidationError(f"param_dim must be >= 0, got {self.param_dim}")
