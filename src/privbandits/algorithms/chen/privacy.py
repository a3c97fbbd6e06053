"""The privacy parameters shared by the private algorithms of Chen et al. (2025) and their guarantee.

Every private algorithm of the family (``chen-jdp``, ``chen-ldp``, ``squarecb-jdp``,
``squarecb-ldp``) takes the same three parameters:

epsilon, delta : float
    Privacy level ``(alpha, beta)`` of every user's single release (joint model: the one
    estimate the user's epoch feeds; local model: the user's one message).
gaussian : {"analytic", "classic"}
    Calibration of the Gaussian noise multiplier ``sigma``: the exact (analytic) Gaussian mechanism
    of Balle & Wang (2018), valid for every epsilon, or the paper's ``sqrt(2 ln(1.25/delta))/epsilon``
    (Definition 2; epsilon < 1 only).

Each user's data enter one Gaussian release at noise multiplier ``sigma`` per unit of sensitivity
(disjoint epochs and batches), so the guarantee is the exact Gaussian epsilon of ``sigma`` at
``delta``.

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Definition 2 and Lemma 4.2; Balle & Wang
(2018), "Improving the Gaussian mechanism for differential privacy", ICML.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from privbandits.algorithms.base import Algorithm
from privbandits.algorithms.calibration import Calibration
from privbandits.core.params import Choice, Constraint, Delta, Epsilon
from privbandits.core.spec import EnvSpec
from privbandits.privacy.calibration import gaussian_epsilon
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.ledger import Gaussian
from privbandits.regression.releases import noise_multiplier

__all__ = ["PRIVACY_CONSTRAINTS", "GaussianPrivacy", "gaussian_guarantee"]

#: Constraints of ``epsilon``, ``delta`` and ``gaussian`` (see the module docstring).
PRIVACY_CONSTRAINTS: dict[str, Constraint] = {
    "epsilon": Epsilon,
    "delta": Delta,
    "gaussian": Choice("analytic", "classic"),
}


def gaussian_guarantee(
    model: str, epsilon: float, delta: float, gaussian: str, how: str
) -> PrivacyGuarantee:
    """The accounted guarantee of one Gaussian release per user at the multiplier of ``(epsilon, delta)``.

    Parameters
    ----------
    model : {"joint", "local"}
    epsilon, delta, gaussian
        As in the module docstring.
    how : str
        What each user's release is (for the guarantee's notes).
    """
    sigma = noise_multiplier(epsilon, delta, gaussian)
    return PrivacyGuarantee(
        model=model,
        epsilon=gaussian_epsilon(sigma, delta),
        delta=delta,
        ledger=Gaussian(sigma, 1.0, how, gaussian),
    )


class GaussianPrivacy(Algorithm):
    """The privacy side of every private algorithm of the family: the parameters ``epsilon``,
    ``delta``, ``gaussian`` and the strict calibration of one Gaussian release per user.

    A subclass names what each user's release is (:attr:`release_note`) and resolves its constants
    (``_resolved``); the local ``squarecb-ldp`` accounts its message itself
    (:meth:`release_guarantee`).

    Attributes
    ----------
    epsilon, delta : float
        Privacy level ``(alpha, beta)`` of every user's single release (joint model: the one
        estimate the user's epoch feeds; local model: the user's one message).
    gaussian : {"analytic", "classic"}
        The Gaussian calibration (``"analytic"``, or the paper's ``"classic"`` for epsilon < 1), as
        in the module docstring.
    """

    epsilon: float
    delta: float
    gaussian: str
    #: What each user's one Gaussian release is (the guarantee's notes).
    release_note: ClassVar[str] = ""
    #: The constants a run on a problem resolves (a method of every subclass).
    _resolved: Callable[[EnvSpec], Any]

    def release_guarantee(self) -> PrivacyGuarantee:
        """The accounted guarantee of every user's one release (:func:`gaussian_guarantee`)."""
        return gaussian_guarantee(
            self.trust_model, self.epsilon, self.delta, self.gaussian, self.release_note
        )

    def calibrate(self, spec: EnvSpec) -> Calibration:
        return Calibration(
            self.release_guarantee(),
            preset="strict",
            requested=(self.epsilon, self.delta),
            constants=self._resolved(spec),
        )
