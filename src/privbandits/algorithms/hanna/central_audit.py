"""Audit of the Hanna et al. central curator's release (``privbandits audit hanna-central``).

Algorithm 1 of Hanna et al. (2022) releases, at the end of every batch, the clipped per-action
reward sums of the batch plus ``Lap(Delta / eps)`` on each core action (step 7).
:func:`central_release_spec` audits the first batch's release through the curator's own code: its
batch schedule (:meth:`select`), its reward clipping and accumulation (:meth:`update`) and its
collector (the Laplace draws); the release is observed as the collector returns it.

Neighbouring inputs: the batch's first user's reward is ``y+ = r_hi + 10 (r_hi - r_lo)`` against
``y- = r_lo - 10 (r_hi - r_lo)``, clipped by the curator to ``r_hi`` and ``r_lo`` (the accounted
L1 sensitivity ``Delta = r_hi - r_lo`` of the released vector, all of it on the action that user
played); every other reward is ``r_lo``.  The statistic is the released sum of the first user's
action minus the other users' known contribution: ``Delta 1{D} + Lap(Delta / eps)``, whose
threshold tests reach ``eps``.  ``under_noised=f`` builds the algorithm at ``epsilon / f`` with
the claim unchanged.

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), Algorithm 1, Lemma 3; Jagielski, Ullman & Oprea (2020).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from privbandits.algorithms.audit import finite_env
from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.algorithms.registry import get
from privbandits.core.rng import make_streams
from privbandits.privacy.audit.catalog import factor_of, variant_name, variant_note
from privbandits.privacy.audit.spec import AuditSpec

__all__ = ["central_release_spec"]

#: epsilon of the audited curator and the horizon of its small problem.
AUDIT_EPSILON = 1.0
AUDIT_HORIZON = 2000


class _Released(Exception):
    """Raised once every replication's first release is observed (the run stops there)."""


def central_release_spec(under_noised: float | None = None) -> AuditSpec:
    """Hanna et al. central curator's first batch release (Laplace sums), eps = 1, 4 fixed actions."""
    f = factor_of(under_noised)
    env = finite_env()
    spec = env.reset(1, make_streams(0), AUDIT_HORIZON)
    claim = get("hanna-central")(epsilon=AUDIT_EPSILON).guarantee_for(spec)
    lo, hi = (float(v) for v in spec.reward_range)
    y_hi, y_lo = hi + 10.0 * (hi - lo), lo - 10.0 * (hi - lo)
    A = np.asarray(env.actions, dtype=float)

    def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
        alg = get("hanna-central")(epsilon=AUDIT_EPSILON / f)
        assert isinstance(alg, Curator)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)
            alg.reset(spec, m, make_streams(int(rng.integers(2**62))))
        X = np.broadcast_to(A, (m, spec.K, spec.d))
        out = np.full(m, np.nan)
        first = alg.select(0, X)
        collect = alg.collector.collect  # type: ignore[attr-defined]

        def observed(plan: Any, sums: np.ndarray, rng: np.random.Generator) -> np.ndarray:
            r_hat = collect(plan, sums, rng)
            rows = np.asarray(plan.rows)
            fresh = rows[np.isnan(out[rows])]
            if fresh.size:  # the first batch's release of these replications
                k = np.isnan(out[rows])
                a0 = first[fresh]
                n0 = np.asarray(plan.counts)[k, a0]
                out[fresh] = r_hat[k, a0] - lo * (n0 - 1)
            if not np.isnan(out).any():
                raise _Released  # the next batch's planning is not needed
            return r_hat

        alg.collector.collect = observed  # type: ignore[attr-defined]
        rest = np.full(m, lo)
        try:
            alg.update(0, X, first, np.full(m, y_lo if side else y_hi))
            for t in range(1, AUDIT_HORIZON):
                alg.update(t, X, alg.select(t, X), rest)
        except _Released:
            return out
        raise AssertionError("the first batch did not end within the horizon")

    return AuditSpec(
        name=variant_name("hanna-central-release", f),
        claimed_epsilon=float(claim.epsilon),
        claimed_delta=float(claim.delta),
        sample=sample,
        neighbours=f"the first batch's first reward differs: y = {y_hi:g} vs y = {y_lo:g} "
        f"(clipped to {hi:g} and {lo:g}: the L1 sensitivity r_hi - r_lo of the released sums, all "
        f"on that user's action); every other reward {lo:g}",
        statistic="the released noisy sum of the first user's action minus the other users' "
        "rewards of that action (known: r_lo each)",
        n_samples=50_000,
        notes="; ".join(
            p
            for p in (
                f"hanna-central (strict) at epsilon={AUDIT_EPSILON:g} on the 4 fixed actions of "
                f"d=2, horizon {AUDIT_HORIZON}; the claim is its accounted guarantee {claim}",
                variant_note(
                    f, "requested epsilon", f"the algorithm built at epsilon={AUDIT_EPSILON / f:g}"
                ),
            )
            if p
        ),
        noise_factor=f,
    )
