"""Link constants of the re-weighted GLM loss on the domain ``[-1, 1]`` (Chen et al. 2025, Assumption 1).

The estimators need a link ``nu : [-1, 1] -> [-1, 1]`` with ``0 < mu <= nu' <= L_nu`` on
``[-1, 1]`` (``kappa = L_nu / mu``); identity, logistic and probit qualify.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.links import Link, get_link

__all__ = ["LinkConstants", "link_constants"]


@dataclass(frozen=True)
class LinkConstants:
    """A link with its derivative bounds on ``[-1, 1]``: ``mu <= nu' <= L_nu``, ``kappa = L_nu / mu``."""

    link: Link
    L_nu: float
    mu: float

    @property
    def kappa(self) -> float:
        return self.L_nu / self.mu

    def nu(self, z: np.ndarray) -> np.ndarray:
        out: np.ndarray = self.link.mu(np.asarray(z, dtype=float))
        return out


def link_constants(link: str | Link) -> LinkConstants:
    """Constants of ``link`` on ``[-1, 1]``; raises if it leaves ``[-1, 1]`` there (Poisson)."""
    lk = get_link(link)
    grid = np.linspace(-1.0, 1.0, 2001)
    vals = lk.mu(grid)
    if np.max(np.abs(vals)) > 1.0 + 1e-12:
        raise ValidationError(
            f"link must map [-1, 1] into [-1, 1] (Chen et al. 2025, Assumption 1); "
            f"{lk.name!r} reaches {np.max(np.abs(vals)):.4g}"
        )
    return LinkConstants(lk, L_nu=lk.lipschitz(1.0), mu=lk.kappa(1.0))
