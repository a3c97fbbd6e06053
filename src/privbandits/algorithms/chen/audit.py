"""Audits of the Chen et al. joint-DP curators' releases (``privbandits audit chen-jdp | squarecb-jdp``).

Both curators release, at the end of every epoch, an estimate fitted on that epoch's users only;
every user enters one Gaussian release of the fit (parallel composition), so the accounted
guarantee is the Gaussian epsilon of the estimator's noise multiplier ``sigma`` at ``delta``.
The audits run the estimators' own release functions (the regression audits of
:mod:`privbandits.regression.audit`) at the noise multiplier of the algorithm's own estimator and
against the algorithm's accounted claim:

* ``chen-jdp`` (Algorithm 3 on ``JDP_L1_Regression``, Algorithm 2): the normalization release of
  Algorithm 1 on a batch whose last covariate is ``e_1`` vs ``5 e_2`` (clipped to ``e_2``), which
  moves the statistic by exactly the declared sensitivity;
* ``squarecb-jdp`` (SquareCB on ``JDP_Improper_BatchSGD``, Algorithm 5): the output-perturbed pass;
  no neighbouring pair attains its declared sensitivity ``8 eta / N`` (the farthest found reaches
  about half), so its half-noise twin is not detectable and the twin it flags has a quarter of the
  noise (:data:`~privbandits.regression.audit.FLAGGED_FACTOR`).

``under_noised=f`` runs the release with ``f`` times the calibrated noise multiplier and the
unchanged claim.

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Algorithms 1, 2, 3 and 5.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from privbandits.algorithms.registry import get
from privbandits.core.spec import EnvSpec
from privbandits.privacy.audit.spec import AuditSpec
from privbandits.regression import audit as regression_audit
from privbandits.regression.releases import noise_multiplier

__all__ = ["chen_jdp_release_spec", "squarecb_jdp_release_spec"]

#: The small public problem the algorithms are calibrated on (their claim does not depend on it).
AUDIT_SPEC = EnvSpec(
    d=2, K=2, horizon=4096, context_bound=1.0, reward_range=(-1.0, 1.0), theta_bound=1.0
)


def _case(
    algorithm: str,
    release: Callable[..., AuditSpec],
    sigma_of: Callable[[object], float],
    what: str,
) -> Callable[..., AuditSpec]:
    eps, delta = regression_audit.EPSILON, regression_audit.DELTA

    def factory(under_noised: float | None = None) -> AuditSpec:
        alg = get(algorithm)(epsilon=eps, delta=delta)
        claim = alg.guarantee_for(AUDIT_SPEC)
        sigma = float(sigma_of(alg))
        # the release below runs at noise_multiplier(eps, delta): the algorithm's own multiplier
        if not math.isclose(sigma, noise_multiplier(eps, delta), rel_tol=1e-12):
            raise AssertionError(f"{algorithm}: noise multiplier {sigma} is not the audited one")
        base = release(under_noised)
        suffix = base.name[len(base.name.split("[")[0]) :]
        return dataclasses.replace(
            base,
            name=f"{algorithm}-release{suffix}",
            claimed_epsilon=float(claim.epsilon),
            claimed_delta=float(claim.delta),
            notes="; ".join(
                p
                for p in (
                    f"{what} of {algorithm} at epsilon={eps:g}, delta={delta:g} (noise multiplier "
                    f"{sigma:.6g} of its estimator); the claim is its accounted guarantee {claim}",
                    base.notes,
                )
                if p
            ),
        )

    factory.__doc__ = f"{algorithm}: {what} at its own noise multiplier (eps = {eps:g})."
    factory.__name__ = f"{algorithm.replace('-', '_')}_release_spec"
    return factory


#: Chen JDP's normalization release (Algorithm 1 inside Algorithm 2).
chen_jdp_release_spec = _case(
    "chen-jdp",
    regression_audit.reweighted_normalization_spec,
    lambda alg: alg.regressor(AUDIT_SPEC).sigma,  # type: ignore[attr-defined]
    "the normalization release (Algorithm 1 inside Algorithm 2)",
)
#: SquareCB-JDP's output-perturbed oracle pass (Algorithm 5).
squarecb_jdp_release_spec = _case(
    "squarecb-jdp",
    regression_audit.improper_sgd_spec,
    lambda alg: alg.oracle().sigma,  # type: ignore[attr-defined]
    "the output-perturbed batched SGD pass (Algorithm 5)",
)
