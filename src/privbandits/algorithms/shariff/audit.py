"""Audit of the JDP LinUCB curator's tree release (the released ``(V_t, u~_t)`` sequence).

The actions of JDP LinUCB are joint DP because the statistics the curator releases, the noisy
prefix sums of the rows' outer products ``z z^T`` (``z = (x, y)``), are ``(epsilon, delta)``-DP in
the rows (the billboard argument, Shariff & Sheffet 2018, section 3).  :func:`tree_release_spec`
audits that release through the curator's own compiled update (row clipping, leaf insertion, the
binary tree's node noise): a horizon of ``T = 2`` rows, so that the first row enters
``h = bit_length(2) = 2`` nodes and both releases after it are observed.

Neighbouring inputs: the first row is ``x = e_1`` against ``x = -e_1``, both with the reward
``10`` outside the declared range ``[-1, 1]`` (clipped to 1 by the curator); the second row is
``x = 0, y = 0`` in both.  The clipped rows ``(1, 0, 1)`` and ``(-1, 0, 1)`` are orthogonal with
norm ``L~ = sqrt(2)``, so their outer products differ by the largest Frobenius distance
``sqrt(2) L~^2`` the accountant allows, all of it in the entry ``(1, d + 1)``: the first
coordinate of the released ``u~``.  ``tree="binary"`` (no padding draws, which only add noise)
makes the two releases two independent Gaussian observations of that entry with equal variance,
so their sum is the log-likelihood-ratio statistic and the audit can reach the claim.
``under_noised=f`` builds the algorithm at ``epsilon / f`` with the claim unchanged.

References
----------
Shariff & Sheffet (2018), Algorithm 1 and section 4.4; Jagielski, Ullman & Oprea (2020).
"""

from __future__ import annotations

import warnings

import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.algorithms.registry import get
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.audit.catalog import factor_of, variant_name, variant_note
from privbandits.privacy.audit.spec import AuditSpec

__all__ = ["AUDIT_SPEC", "tree_release_spec"]

#: epsilon and delta of the audited curator.
AUDIT_EPSILON = 1.0
AUDIT_DELTA = 1e-5
#: The small public problem: d = 2, two arms, T = 2 rows.
AUDIT_SPEC = EnvSpec(
    d=2, K=2, horizon=2, context_bound=1.0, reward_range=(-1.0, 1.0), theta_bound=1.0
)


def _algorithm(epsilon: float) -> Curator:
    """The registered class (looked up: the class declares this audit, so it is not imported)."""
    alg = get("jdp-linucb")(epsilon=epsilon, delta=AUDIT_DELTA, tree="binary")
    assert isinstance(alg, Curator)
    return alg


def tree_release_spec(under_noised: float | None = None) -> AuditSpec:
    """JDP LinUCB's Gaussian tree release over T = 2 rows at epsilon = 1, delta = 1e-5."""
    f = factor_of(under_noised)
    spec = AUDIT_SPEC
    claim = _algorithm(AUDIT_EPSILON).guarantee_for(spec)
    eps = AUDIT_EPSILON / f

    def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
        alg = _algorithm(eps)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)
            alg.reset(spec, m, make_streams(int(rng.integers(2**62))))
        a = np.zeros(m, dtype=np.int64)
        X = np.zeros((m, spec.K, spec.d))
        X[:, :, 0] = 1.0 if side == 0 else -1.0
        alg.update(0, X, a, np.full(m, 10.0))
        assert alg.kernel is not None
        P = alg.kernel.state[7]  # the released prefix M + N (before the shift)
        out = P[:, 0, spec.d].copy()
        alg.update(1, np.zeros((m, spec.K, spec.d)), a, np.zeros(m))
        return out + P[:, 0, spec.d]

    return AuditSpec(
        name=variant_name("jdp-linucb-tree", f),
        claimed_epsilon=float(claim.epsilon),
        claimed_delta=float(claim.delta),
        sample=sample,
        neighbours="T = 2 rows, the first differs: (x = e_1, y = 10) vs (x = -e_1, y = 10) (y clipped to 1: "
        "orthogonal rows of norm sqrt(2), outer products sqrt(2) L~^2 apart); the second row is 0",
        statistic="u~_1 of the release after row 1 plus u~_1 of the release after row 2 (the row's two "
        "tree nodes; the log-likelihood-ratio direction)",
        n_samples=400_000,
        notes="; ".join(
            p
            for p in (
                f"jdp-linucb (Gaussian node noise, tree='binary') at epsilon={AUDIT_EPSILON:g}, "
                f"delta={AUDIT_DELTA:g} on d=2, T=2; the claim is its accounted guarantee {claim}",
                variant_note(f, "requested epsilon", f"the algorithm built at epsilon={eps:g}"),
            )
            if p
        ),
        noise_factor=f,
    )
