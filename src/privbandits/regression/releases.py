"""Gaussian releases of the private regression estimators, their usage ledger and their accounting.

Every noisy statistic an estimator releases is recorded as a :class:`Release` (which samples it
read, its replace-one L2 sensitivity, the standard deviation of the Gaussian noise actually
added).  The :class:`Ledger` checks that no sample feeds two releases and reports the guarantee the
accountant computes from those numbers: each release is a Gaussian mechanism whose exact epsilon
at ``delta`` is :func:`~privbandits.privacy.calibration.gaussian_epsilon` (Balle & Wang 2018,
Thm 8); releases on disjoint samples compose in parallel (McSherry 2009, Thm 4), releases on the
same samples compose by the zCDP of the Gaussian mechanism (Bun & Steinke 2016) converted to
``(epsilon, delta)``.

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Definition 2 (the Gaussian channel
``Priv`` and ``SymPriv``) and Lemma 4.2 (parallel composition over disjoint batches).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from privbandits.core.errors import PrivacyError, ValidationError
from privbandits.core.validation import check_choice, check_delta, check_in_range
from privbandits.privacy.accounting import (
    ApproxDP,
    compose_parallel,
    gaussian_zcdp,
    zcdp_to_approx_dp,
)
from privbandits.privacy.calibration import (
    CALIBRATIONS,
    gaussian_epsilon,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
)
from privbandits.privacy.guarantee import NON_PRIVATE, PrivacyGuarantee
from privbandits.privacy.ledger import Composed, Event, Gaussian, SelfComposed
from privbandits.privacy.samplers import (
    add_gaussian,
    add_symmetric_gaussian,
    add_symmetric_gaussian_rows,
)

__all__ = [
    "Ledger",
    "Release",
    "noise_multiplier",
    "privatize_symmetric",
    "privatize_symmetric_rows",
    "privatize_vector",
]


def noise_multiplier(epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """``sigma_{alpha,beta}``: Gaussian standard deviation per unit of L2 sensitivity.

    ``calibration="classic"`` is the paper's ``sqrt(2 ln(1.25/delta)) / epsilon`` (Chen et al. 2025,
    Definition 2; proven only for ``epsilon < 1``, so larger epsilon raises); ``"analytic"`` is the
    smallest multiplier that is exactly ``(epsilon, delta)``-DP (Balle & Wang 2018), valid for every
    epsilon.  ``epsilon = inf`` gives 0: the non-private twin on the same code path.
    """
    check_choice("calibration", calibration, CALIBRATIONS)
    eps = check_in_range("epsilon", epsilon, 0.0, None, low_inclusive=False, allow_inf=True)
    dlt = check_delta(delta)
    if math.isinf(eps):
        return 0.0
    if calibration == "classic":
        if eps >= 1.0:
            raise ValidationError(
                f"epsilon must lie in (0, 1) for the classic Gaussian calibration, got {eps:g}; "
                "use calibration='analytic' for epsilon >= 1"
            )
        return gaussian_sigma_classic(eps, dlt)
    return gaussian_sigma_analytic(eps, dlt)


def privatize_vector(v: np.ndarray, std: float, rng: np.random.Generator) -> np.ndarray:
    """``Priv``: a copy of ``v`` plus i.i.d. ``N(0, std^2)`` per entry (compiled sampler)."""
    out = np.array(v, dtype=float, copy=True)
    if std > 0.0:
        add_gaussian(rng, float(std), out)
    return out


def privatize_symmetric(M: np.ndarray, std: float, rng: np.random.Generator) -> np.ndarray:
    """``SymPriv``: a copy of ``M`` plus a symmetric ``N(0, std^2)`` matrix (compiled sampler)."""
    out = np.array(M, dtype=float, copy=True)
    if std > 0.0:
        add_symmetric_gaussian(rng, float(std), out)
    return out


def privatize_symmetric_rows(M: np.ndarray, std: float, rng: np.random.Generator) -> np.ndarray:
    """:func:`privatize_symmetric` on each matrix of ``M`` (shape ``(n, d, d)``), one user after another."""
    out = np.array(M, dtype=float, copy=True)
    if std > 0.0:
        add_symmetric_gaussian_rows(rng, float(std), out)
    return out


@dataclass(frozen=True)
class Release:
    """One noisy release: a Gaussian mechanism on the samples ``indices``.

    Attributes
    ----------
    name : str
        What was released (e.g. ``"normalization batch 2"``).
    indices : ndarray of int
        The samples it read.
    sensitivity : float
        Replace-one L2 sensitivity of the released statistic (before noise).
    std : float
        Standard deviation of the Gaussian noise added to every coordinate.
    per_user : bool
        Local model: every sample is randomized on its own (sensitivity and std are per message).
    """

    name: str
    indices: np.ndarray
    sensitivity: float
    std: float
    per_user: bool = False

    def epsilon(self, delta: float) -> float:
        """Exact epsilon of this release at ``delta`` (inf without noise)."""
        if self.sensitivity == 0.0:
            return 0.0
        if self.std == 0.0:
            return math.inf
        return gaussian_epsilon(self.std, delta, self.sensitivity)


@dataclass
class Ledger:
    """The releases of one fit and which sample fed which release (Chen et al. 2025, Lemma 4.2).

    ``usage[i]`` is the index of the release that read sample ``i``, or -1 if it was unused.
    """

    n: int
    releases: list[Release] = field(default_factory=list)
    usage: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.usage = np.full(self.n, -1, dtype=np.int64)

    def record(self, release: Release, *, exclusive: bool = True) -> None:
        """Add a release; with ``exclusive`` the samples must not have fed an earlier release."""
        idx = np.asarray(release.indices, dtype=np.int64)
        if exclusive and np.any(self.usage[idx] >= 0):
            raise PrivacyError(f"{release.name}: samples already used by an earlier release")
        self.usage[idx] = len(self.releases)
        self.releases.append(release)

    def guarantee(self, delta: float, model: str, notes: str = "") -> PrivacyGuarantee:
        """The accounted guarantee of all releases.

        Releases on pairwise disjoint samples compose in parallel: ``max`` of their exact Gaussian
        epsilons at ``delta``.  Releases that share samples (the two statistics of sufficient
        statistics perturbation, the steps of full-batch DP-GD) are composed by zCDP first
        (:meth:`shared_guarantee`).
        """
        dlt = check_delta(delta)
        if not self.releases:
            return PrivacyGuarantee(
                model=model, epsilon=0.0, delta=0.0, notes=notes or "no release"
            )
        eps = [r.epsilon(dlt) for r in self.releases]
        if any(math.isinf(e) for e in eps):
            return NON_PRIVATE
        g = compose_parallel([ApproxDP(e, dlt) for e in eps])
        how = f"{len(self.releases)} Gaussian releases on disjoint samples, exact epsilon each, parallel composition"
        return PrivacyGuarantee(
            model=model,
            epsilon=g.epsilon,
            delta=g.delta,
            notes=f"{notes}; {how}" if notes else how,
            ledger=self._events("disjoint", notes),
        )

    def shared_guarantee(self, delta: float, model: str, notes: str = "") -> PrivacyGuarantee:
        """Guarantee of releases that all read the same samples: zCDP composition, CKS conversion."""
        dlt = check_delta(delta)
        if any(r.std == 0.0 and r.sensitivity > 0.0 for r in self.releases):
            return NON_PRIVATE
        rho = math.fsum(
            gaussian_zcdp(r.std, r.sensitivity).rho for r in self.releases if r.sensitivity > 0.0
        )
        eps = zcdp_to_approx_dp(rho, dlt) if rho > 0.0 else 0.0
        how = (
            f"{len(self.releases)} Gaussian releases on the same samples, {rho:.6g}-zCDP composed and "
            "converted (Canonne, Kamath & Steinke 2020)"
        )
        return PrivacyGuarantee(
            model=model,
            epsilon=eps,
            delta=dlt,
            notes=f"{notes}; {how}" if notes else how,
            rho=rho,
            ledger=self._events("zcdp", notes),
        )

    def _events(self, rule: str, what: str) -> Composed:
        """The releases as a privacy ledger (:mod:`privbandits.privacy.ledger`); identical
        releases are grouped into one self-composed event."""
        counts: dict[tuple[str, float, float], int] = {}
        for r in self.releases:
            key = (r.name, float(r.std), float(r.sensitivity))
            counts[key] = counts.get(key, 0) + 1
        events: list[Event] = []
        for (name, std, sens), n in counts.items():
            g = Gaussian(std, sens, name, "given")
            events.append(g if n == 1 else SelfComposed(g, n, rule))
        return Composed(tuple(events), rule, what)
