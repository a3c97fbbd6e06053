"""Audits of the private K-armed curators' releases (``privbandits audit dp-se | adap-ucb | ...``).

Each release is audited through the curator's own compiled update (clipping and mapping of the
reward to ``[0, 1]``, the release's Laplace draw), fed a fixed sequence of arms (the arms are
post-processing of earlier releases, so fixing them is one adaptive choice of the adversary).
Neighbouring inputs differ in the first user's reward only: ``y+ = r_hi + 10 (r_hi - r_lo)``
against ``y- = r_lo - 10 (r_hi - r_lo)``, clipped by the curator to the ends of the range (unit
rewards 1 and 0: the accounted sensitivity of one reward); every other user's reward is ``r_lo``.

* DP-SE (Sajed & Sheffet 2019): the private mean ``mu_tilde`` of arm 1 released at the end of the
  first epoch (``R_1`` pulls per arm, round robin), sensitivity ``1/R_1``, noise ``Lap(1/(eps R_1))``.
* AdaP-UCB / AdaP-KLUCB (Azize & Basu 2022, Algorithm 1): the release ``r + Lap(1/eps)`` of arm 1's
  initial pull (an episode of length 1).
* DP-UCB (Mishra & Thakurta 2015, Algorithm 1) with ``per_arm_budget="full"``: arm 1 pulled at
  both rounds of a horizon ``T = 2``; its counter's releases after rounds 1 and 2 (the private
  prefix sums, the nodes ``[1]`` and ``[1, 2]`` of its tree, both holding the first reward with
  noise ``Lap(2/eps)`` each); the statistic is their minimum (for two independent Laplace
  observations shifted by the same amount, ``P(min > t)`` has likelihood ratio ``e^eps`` beyond
  both means, so a threshold test on it can reach the claim).  The paper's ``per_arm_budget=
  "split"`` runs every counter at ``eps/K`` and claims ``eps`` by basic composition over the ``K``
  counters, while one reward enters one counter: its claim is loose by the factor ``K`` and no
  audit of one reward can reach it.

``under_noised=f`` builds the algorithm at ``epsilon / f`` (``f`` times the calibrated Laplace
scales) with the claim unchanged.

References
----------
Sajed & Sheffet (2019), ICML; Azize & Basu (2022), NeurIPS, Algorithm 1; Mishra & Thakurta
(2015), UAI, Algorithm 1; Jagielski, Ullman & Oprea (2020).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.algorithms.mab.calibration import DPSEConstants
from privbandits.algorithms.registry import get
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.audit.catalog import factor_of, variant_name, variant_note
from privbandits.privacy.audit.spec import AuditSpec

__all__ = ["adap_release_spec", "audit_spec_of", "dp_se_release_spec", "dp_ucb_release_spec"]

#: epsilon of the audited curators.
AUDIT_EPSILON = 1.0
#: ``beta`` of the audited DP-SE (the largest round value: the shortest first epoch).
DPSE_BETA = 0.5


def audit_spec_of(K: int, horizon: int) -> EnvSpec:
    """The small public problem: ``K`` arms (contexts the unit vectors), rewards in ``[0, 1]``."""
    return EnvSpec(
        d=K,
        K=K,
        horizon=horizon,
        context_bound=1.0,
        reward_range=(0.0, 1.0),
        theta_bound=1.0,
        fixed_actions=True,
    )


def _extreme_rewards(spec: EnvSpec) -> tuple[float, float]:
    lo, hi = (float(v) for v in spec.reward_range)
    return hi + 10.0 * (hi - lo), lo - 10.0 * (hi - lo)


def _run(
    name: str,
    params: dict[str, Any],
    spec: EnvSpec,
    arms: Sequence[int],
    side: int,
    m: int,
    rng: np.random.Generator,
    read: Callable[[Curator, int], None],
    warm: int = 0,
) -> None:
    """Reset ``name(**params)`` on ``spec`` with ``m`` replications and feed it the arms ``arms``
    (first reward ``y+`` on side 0, ``y-`` on side 1, then ``r_lo``); ``read(alg, t)`` after each
    round.  The first ``warm`` rounds (which must release nothing, so draw nothing: the state they
    leave is the same in every replication) run on one replication whose state is then copied to
    the ``m``."""

    def fresh(n: int) -> Curator:
        alg = get(name)(**params)
        assert isinstance(alg, Curator)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)
            alg.reset(spec, n, make_streams(int(rng.integers(2**62))))
        return alg

    def feed(alg: Curator, n: int, rounds: range) -> None:
        X = np.broadcast_to(np.eye(spec.K), (n, spec.K, spec.d))
        y_hi, y_lo = _extreme_rewards(spec)
        first = np.full(n, y_lo if side else y_hi)
        rest = np.full(n, float(spec.reward_range[0]))
        for t in rounds:
            alg.update(t, X, np.full(n, arms[t], dtype=np.int64), first if t == 0 else rest)
            if n == m:
                read(alg, t)

    alg = fresh(m)
    if warm:
        one = fresh(1)
        feed(one, 1, range(warm))
        assert alg.kernel is not None and one.kernel is not None
        for full, row in zip(alg.kernel.state, one.kernel.state):
            full[:] = row[0]
    feed(alg, m, range(warm, len(arms)))


def _spec(
    case: str,
    f: float,
    claim: Any,
    sample: Callable[[int, int, np.random.Generator], np.ndarray],
    neighbours: str,
    statistic: str,
    what: str,
    n_samples: int,
) -> AuditSpec:
    eps = AUDIT_EPSILON / f
    return AuditSpec(
        name=variant_name(case, f),
        claimed_epsilon=float(claim.epsilon),
        claimed_delta=float(claim.delta),
        sample=sample,
        neighbours=neighbours,
        statistic=statistic,
        n_samples=n_samples,
        notes="; ".join(
            p
            for p in (
                f"{what}; the claim is its accounted guarantee {claim}",
                variant_note(f, "requested epsilon", f"the algorithm built at epsilon={eps:g}"),
            )
            if p
        ),
        noise_factor=f,
    )


_NEIGHBOURS = (
    "the first reward differs: y = {hi:g} vs y = {lo:g} (clipped to the ends of [0, 1]: unit "
    "rewards 1 vs 0, the accounted sensitivity); every other reward 0"
)


def dp_se_release_spec(under_noised: float | None = None) -> AuditSpec:
    """DP-SE's private mean of arm 1 released at the end of the first epoch (K = 2, eps = 1)."""
    f = factor_of(under_noised)
    K, nominal = 2, {"epsilon": AUDIT_EPSILON, "beta": DPSE_BETA}
    probe = get("dp-se")(**nominal)
    R_1 = int(probe.calibrate(audit_spec_of(K, 2 * K)).typed(DPSEConstants).R_1)
    spec = audit_spec_of(K, K * R_1)
    claim = probe.guarantee_for(spec)
    arms = [t % K for t in range(K * R_1)]  # the round robin of the first epoch
    params = {"epsilon": AUDIT_EPSILON / f, "beta": DPSE_BETA}

    def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty(m)

        def read(alg: Curator, t: int) -> None:
            assert alg.kernel is not None and t == len(arms) - 1
            assert np.all(alg.kernel.state[4][:, 2] == 1.0)  # epoch 1 released
            out[:] = alg.kernel.state[3][:, 0] * R_1  # mu_tilde of arm 1, times R_1

        # the epoch's first K R_1 - 1 rounds release nothing (no draw): run once, then copied
        _run("dp-se", params, spec, arms, side, m, rng, read, warm=len(arms) - 1)
        return out

    hi, lo = _extreme_rewards(spec)
    return _spec(
        "dp-se-release",
        f,
        claim,
        sample,
        f"the first epoch, R_1 = {R_1} pulls of each of K = {K} arms (round robin); "
        + _NEIGHBOURS.format(hi=hi, lo=lo),
        "R_1 mu_tilde_1: arm 1's released private mean at the end of epoch 1, scaled by R_1",
        f"dp-se at epsilon={AUDIT_EPSILON:g}, beta={DPSE_BETA:g} on K={K} arms, horizon {K * R_1}",
        200_000,
    )


def adap_release_spec(name: str) -> Callable[..., AuditSpec]:
    """The audit of AdaP-UCB's or AdaP-KLUCB's (registry ``name``) initial-pull release."""

    def factory(under_noised: float | None = None) -> AuditSpec:
        f = factor_of(under_noised)
        K = 2
        spec = audit_spec_of(K, K)
        claim = get(name)(epsilon=AUDIT_EPSILON).guarantee_for(spec)
        params = {"epsilon": AUDIT_EPSILON / f}

        def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
            out = np.empty(m)

            def read(alg: Curator, t: int) -> None:
                assert alg.kernel is not None
                out[:] = alg.kernel.state[1][:, 0]  # mu_tilde of arm 1

            _run(name, params, spec, [0], side, m, rng, read)
            return out

        hi, lo = _extreme_rewards(spec)
        return _spec(
            f"{name}-release",
            f,
            claim,
            sample,
            f"arm 1's initial pull (an episode of length 1) on K = {K} arms; "
            + _NEIGHBOURS.format(hi=hi, lo=lo),
            "mu_tilde_1: the private mean released after arm 1's initial pull",
            f"{name} at epsilon={AUDIT_EPSILON:g} on K={K} arms",
            200_000,
        )

    factory.__doc__ = (
        f"{name}'s release r + Lap(1/eps) of arm 1's initial pull (K = 2, eps = {AUDIT_EPSILON:g})."
    )
    factory.__name__ = f"{name.replace('-', '_')}_release_spec"
    return factory


def dp_ucb_release_spec(under_noised: float | None = None) -> AuditSpec:
    """DP-UCB's (per_arm_budget='full') tree counter of arm 1 released after rounds 1 and 2 (eps = 1)."""
    f = factor_of(under_noised)
    K = 2
    spec = audit_spec_of(K, 2)
    claim = get("dp-ucb")(epsilon=AUDIT_EPSILON, per_arm_budget="full").guarantee_for(spec)
    params = {"epsilon": AUDIT_EPSILON / f, "per_arm_budget": "full"}

    def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
        first = np.empty(m)
        out = np.empty(m)

        def read(alg: Curator, t: int) -> None:
            assert alg.kernel is not None
            noisy = alg.kernel.state[2]  # (m, K, h): the noisy nodes; prefix sum s = 1 -> node 0,
            if t == 0:  # s = 2 -> node 1
                first[:] = noisy[:, 0, 0]
            else:
                np.minimum(first, noisy[:, 0, 1], out=out)

        _run("dp-ucb", params, spec, [0, 0], side, m, rng, read)
        return out

    hi, lo = _extreme_rewards(spec)
    return _spec(
        "dp-ucb-tree",
        f,
        claim,
        sample,
        f"T = 2 rewards of arm 1 (K = {K}); " + _NEIGHBOURS.format(hi=hi, lo=lo),
        "min(r_1(1), r_1(2)): the smaller of arm 1's private prefix sums released after rounds 1 "
        "and 2 (tree nodes [1] and [1, 2])",
        f"dp-ucb (per_arm_budget='full') at epsilon={AUDIT_EPSILON:g} on K={K} arms, T=2",
        200_000,
    )
