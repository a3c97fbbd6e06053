"""Audit of shuffle LinUCB with the vector summation through the algorithm's own roles.

A user of ``shuffle-linucb-vec`` sends one message of the Cheu et al. vector summation, whose
guarantee is a *shuffle* guarantee (one user's counts carry a small binomial noise and no local
claim).  The audit runs the protocol the claim is about, through the code a deployment runs: the
device's ``choose`` and ``randomize`` of every user of the first batch (input checks, the joint
statistic, its clips, the compiled binomial sampler), the shuffler's release (the per-label
histogram of all users' bits, :func:`privbandits.privacy.cheu.shuffle`) and the server's analysis
(:func:`privbandits.privacy.cheu.analyze`) into the released statistics ``G`` and ``u``.  The
claim is the algorithm's accounted guarantee (the batch's epsilon from the binomial pmf).

Neighbouring batches: ``n = 4`` users; the first holds ``x = (cos 105 deg, sin 105 deg)`` against
``x' = (cos 345 deg, sin 345 deg)`` (unit contexts at 120 degrees, every arm shows the context, so
the choice does not matter), both with the reward ``y = 10`` outside the declared range
``[-1, 1]`` (the device clips it to 1: a missing clip would show); the others hold ``x = 0,
y = 0`` (their randomized rounding is then deterministic: no noise to hide in).  Their joint
statistics are ``3 / sqrt(2) = 2.1213`` apart, the largest distance two users reach at ``d = 2``
(a grid search over the angles and the rewards ``+-1``), against the accounted sensitivity
``sqrt(2 C^4 + 4 C^2 Y^2) = sqrt(6)`` (a bound).  The claim is therefore the one the algorithm's
accountant (the binomial pmf, :meth:`privbandits.privacy.cheu.SumParams.binomial_epsilon`) makes
for the batch at this pair's distance, at most the algorithm's own guarantee; the statistic is
the log-likelihood-ratio direction of the released labels (independent, equal binomial noise),
``sum_k (w_k - w'_k) o_k`` over ``o = (G_11, G_12, G_22, u_1, u_2)``.  ``under_noised=f``
constructs the algorithm at ``epsilon / f`` and keeps the claim.

References
----------
Chowdhury & Zhou (2022); Cheu, Joseph, Mao & Peng (2022); Jagielski, Ullman & Oprea (2020).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from privbandits.algorithms.base import Algorithm
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.algorithms.chowdhury.constants import VecConstants
from privbandits.algorithms.registry import get
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.audit.catalog import factor_of, variant_name, variant_note
from privbandits.privacy.audit.spec import AuditSpec

__all__ = ["AUDIT_EPSILON", "AUDIT_SPEC", "shuffle_linucb_vec_spec"]

#: epsilon and delta of the audited algorithm.
AUDIT_EPSILON = 1.0
AUDIT_DELTA = 1e-5
#: Users per batch of the audit.
AUDIT_BATCH = 4
#: The small public problem of the audit: d = 2, two arms, two batches of 4 users.
AUDIT_SPEC = EnvSpec(
    d=2,
    K=2,
    horizon=2 * AUDIT_BATCH,
    context_bound=1.0,
    reward_range=(-1.0, 1.0),
    theta_bound=1.0,
)


#: The audited pair's contexts (unit vectors at 105 and 345 degrees) and reward (clipped to 1).
PAIR_ANGLES = (math.radians(105.0), math.radians(345.0))
PAIR_REWARD = 10.0


def _joint(x: np.ndarray, y: float) -> np.ndarray:
    iu = np.triu_indices(x.shape[0])
    return np.concatenate([np.outer(x, x)[iu], x * min(max(y, -1.0), 1.0)])


def _algorithm(epsilon: float) -> Algorithm:
    """The registered class (looked up: the class declares this audit, so it is not imported)."""
    return get("shuffle-linucb-vec")(epsilon=epsilon, delta=AUDIT_DELTA, batch_size=AUDIT_BATCH)


def shuffle_linucb_vec_spec(under_noised: float | None = None) -> AuditSpec:
    """``shuffle-linucb-vec``'s first batch (message path) at epsilon = 1, delta = 1e-5, n = 4."""
    f = factor_of(under_noised)
    spec = AUDIT_SPEC
    nominal = _algorithm(AUDIT_EPSILON)
    alg_claim = nominal.guarantee_for(spec)
    consts = nominal.calibrate(spec).typed(VecConstants)
    eps = AUDIT_EPSILON / f
    n = AUDIT_BATCH
    xs = [np.array([math.cos(a), math.sin(a)]) for a in PAIR_ANGLES]
    diff = _joint(xs[0], PAIR_REWARD) - _joint(xs[1], PAIR_REWARD)
    dist = float(np.linalg.norm(diff))
    at_pair = dataclasses.replace(consts.sums[0], sensitivity=dist)
    claim_eps = at_pair.binomial_epsilon(AUDIT_DELTA)

    def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
        alg = _algorithm(eps)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)
            alg.reset(spec, m, make_streams(int(rng.integers(2**62))))
        public = alg.shuffler.assign(0, alg.server.public_state())
        for u in range(n):
            x, y = (xs[side], PAIR_REWARD) if u == 0 else (np.zeros(spec.d), 0.0)
            X = np.ascontiguousarray(np.broadcast_to(x, (m, spec.K, spec.d)))
            a = alg.client.choose(u, public, X, rng)
            msg = alg.client.randomize(u, public, X, a, np.full(m, y), rng)
            alg.shuffler.collect(u, msg)
        alg.server.receive_batch(n - 1, alg.shuffler.release(n - 1))
        G, v = alg.kernel.server[0], alg.kernel.server[1]  # type: ignore[union-attr]
        o = np.stack([G[:, 0, 0], G[:, 0, 1], G[:, 1, 1], v[:, 0], v[:, 1]], axis=1)
        return o @ diff

    return AuditSpec(
        name=variant_name("client:shuffle-linucb-vec", f),
        claimed_epsilon=float(claim_eps),
        claimed_delta=AUDIT_DELTA,
        sample=sample,
        neighbours=f"first batch of n={n} users, user 1 holds x at 105 vs 345 degrees (every arm), "
        f"y = {PAIR_REWARD:g} (clipped to 1); the others x = 0, y = 0",
        statistic="sum_k (w_k - w'_k) o_k over the released (G_11, G_12, G_22, u_1, u_2) (client "
        "choose/randomize -> shuffler release -> server analysis)",
        n_samples=2_000_000,
        notes="; ".join(
            p
            for p in (
                f"shuffle-linucb-vec at epsilon={AUDIT_EPSILON:g}, delta={AUDIT_DELTA:g} on d=2, "
                f"T={spec.horizon}, B={n}: {consts.n_labels} labels, g={consts.g[0]:.4g}, "
                f"b={consts.b[0]}, Delta={consts.Delta:.4g} (binomial noise std "
                f"{consts.sums[0].binomial_noise_std:.4g}); the claim is the batch's epsilon from the "
                f"binomial pmf at this pair's distance {dist:.6g} (the algorithm's own guarantee "
                f"{alg_claim} is at the accounted sensitivity {consts.sums[0].sensitivity:.6g}); "
                "no local claim exists for one user's message",
                variant_note(f, "requested epsilon", f"the algorithm built at epsilon={eps:g}"),
            )
            if p
        ),
        noise_factor=f,
    )
