"""What the private regression oracles share: the privacy level, the bound policy, the Gaussian
calibration and the noise generator, validated in one place."""

from __future__ import annotations

import numpy as np

from privbandits.core.validation import check_choice, check_delta, check_epsilon
from privbandits.privacy.calibration import CALIBRATIONS
from privbandits.regression.data import BOUND_POLICIES
from privbandits.regression.releases import noise_multiplier

__all__ = ["GaussianOracle", "PrivateOracle", "as_generator"]


def as_generator(rng: np.random.Generator | int | None) -> np.random.Generator:
    """``rng`` itself if it is a generator, else a new generator seeded with it."""
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


class PrivateOracle:
    """Base of the private regression oracles.

    Parameters
    ----------
    epsilon, delta : float
        Privacy level (``epsilon = inf``: the non-private twin on the same code path).
    on_bound : {"clip", "reject"}
        Policy for covariates of norm > 1 and responses outside ``[-1, 1]``.
    """

    def __init__(self, epsilon: float, delta: float, on_bound: str) -> None:
        self.epsilon = check_epsilon(epsilon, allow_inf=True)
        self.delta = check_delta(delta)
        self.on_bound = check_choice("on_bound", on_bound, BOUND_POLICIES)


class GaussianOracle(PrivateOracle):
    """A :class:`PrivateOracle` whose releases are Gaussian mechanisms of one noise multiplier.

    Parameters
    ----------
    epsilon, delta, on_bound
        As for :class:`PrivateOracle`.
    calibration : {"analytic", "classic"}
        Gaussian calibration of ``sigma``, the noise standard deviation per unit of L2 sensitivity
        (:func:`~privbandits.regression.releases.noise_multiplier`).
    """

    def __init__(self, epsilon: float, delta: float, calibration: str, on_bound: str) -> None:
        super().__init__(epsilon, delta, on_bound)
        self.calibration = check_choice("calibration", calibration, CALIBRATIONS)
        self.sigma = noise_multiplier(self.epsilon, self.delta, self.calibration)
