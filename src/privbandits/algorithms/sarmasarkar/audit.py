"""Audit of the JDP-GLM curator's noisy-gradient release (the strict DPPGD step, clipping included).

:func:`gradient_release_spec` audits the compiled function every DPPGD step of JDP-GLM calls,
:func:`~privbandits.algorithms.sarmasarkar.optim.noisy_gradient_sum`, with the noise scale of
:func:`~privbandits.algorithms.sarmasarkar.optim.dppgd_sigma` at one step (``T_it = 1``) and a
per-call budget whose Canonne-Kamath-Steinke conversion is ``(1, 1e-5)``.  The neighbouring pair is
one data point far outside the declared bounds (``x = 3 e_1``, reward ``-5`` vs ``+5``), so the
audited path must clip the per-sample gradient to norm ``R = 1``: the two released sums then differ
by exactly the sensitivity ``2 R``.  ``under_noised=f`` scales the noise std by ``f`` with the claim
unchanged, which the audit must flag for ``f = 0.5``.

References
----------
Sarmasarkar (2026), Algorithm 2 and Lemma U.4; Jagielski, Ullman & Oprea (2020) (auditing by
hypothesis tests).
"""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.sarmasarkar.optim import dppgd_sigma, noisy_gradient_sum
from privbandits.core.links import LINK_PROBIT
from privbandits.privacy.accounting import ZCDP, to_guarantee, zcdp_for_approx_dp
from privbandits.privacy.audit.catalog import factor_of, variant_name, variant_note
from privbandits.privacy.audit.spec import AuditSpec

__all__ = ["gradient_release_spec"]


def gradient_release_spec(under_noised: float | None = None) -> AuditSpec:
    """JDP-GLM's DPPGD step (noisy clipped gradient sum), T_it = 1, eps = 1, delta = 1e-5 (CKS)."""
    f = factor_of(under_noised)
    eps, delta, R = 1.0, 1e-5, 1.0
    rho = zcdp_for_approx_dp(eps, delta, "cks").rho
    sigma = dppgd_sigma(R, 1, rho) * f
    claim = to_guarantee(ZCDP(rho), "joint", delta=delta)
    d = 2
    theta = np.zeros(d)
    X = np.array([[3.0, 0.0], [0.2, 0.4]])
    rewards = (np.array([-5.0, 1.0]), np.array([5.0, 1.0]))
    member = np.ones(2, dtype=np.int8)

    def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty(m)
        g, x = np.empty(d), np.empty(d)
        for k in range(m):
            noisy_gradient_sum(
                X, rewards[side], member, 1, 2, theta, LINK_PROBIT, R, sigma, rng, g, x
            )
            out[k] = g[0]
        return out

    return AuditSpec(
        name=variant_name("jdp-glm-gradient", f),
        claimed_epsilon=float(claim.epsilon),
        claimed_delta=float(claim.delta),
        sample=sample,
        neighbours="two data points, the first differs: (3 e_1, reward -5) vs (3 e_1, reward +5); the raw "
        "gradients 16.5 e_1 and -13.5 e_1 are clipped to +e_1 and -e_1 (distance 2R = the sensitivity)",
        statistic="first coordinate of the noisy gradient sum (the exact log-likelihood-ratio direction)",
        n_samples=200_000,
        notes="; ".join(
            p
            for p in (
                f"strict DPPGD step of JDP-GLM at rho={rho:.6g} (T_it = 1), sigma_sum = 2R sqrt(T_it/(2 rho)) = "
                f"{dppgd_sigma(R, 1, rho):.6g}, probit link, theta = 0",
                variant_note(f, "noise std"),
            )
            if p
        ),
        noise_factor=f,
    )
