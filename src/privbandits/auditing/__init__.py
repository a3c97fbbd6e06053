"""Audit the code that runs: the client code path of every local and shuffle algorithm.

The privacy layer's catalog (:data:`privbandits.privacy.audit.AUDITABLE`) audits the mechanisms and
protocols of :mod:`privbandits.privacy`; this module audits the algorithms themselves, through the
exact user-side code a deployment runs (the documentation's Concepts: trust models):

1. construct the registered algorithm (``make("ldp-sgd", epsilon=1.0)``) and reset it on a small
   problem (``SyntheticEnv(...).reset(...)`` gives the public
   :class:`~privbandits.core.spec.EnvSpec`);
2. for one user of round ``t = 0``, through the one round protocol
   (:mod:`privbandits.engine.protocol`): ``start`` (a batched elimination algorithm installs its
   engine on the public action catalogue), ``broadcast`` (the server's public state, through the
   shuffler's ``assign`` in the shuffle model), then on the device ``device_choose`` and
   ``device_randomize`` on the user's own data -- the public state validated against the declared
   space, input checks, clipping and the compiled randomizer included -- and flatten the
   :class:`~privbandits.core.messages.PrivatizedMessage` payload into a vector;
3. do this for ``N`` users holding ``D`` and ``N`` users holding ``D'`` (a neighbouring pair of
   user inputs) and audit the messages with :func:`privbandits.privacy.audit.audit_spec`.

The claim is the algorithm's accounted guarantee ``alg.guarantee`` (local model); for a shuffle
algorithm, whose central guarantee rests on amplification by the shuffler, it is the local
randomizer's own level from the calibration (what one report must satisfy on its own).

Neighbouring pairs.  Each entry lists worst-case candidate pairs: contexts at the declared norm
bound (opposite or orthogonal unit vectors, the same vector on every arm so the chosen arm does
not matter) and rewards *outside* the declared reward range (``r_hi + 10 (r_hi - r_lo)`` and
``r_lo - 10 (r_hi - r_lo)``), so the clipping of the code path is exercised.  A pilot sample
(its own stream, independent of the audited draws) picks the pair whose messages are farthest
apart and the test statistic: the log-likelihood ratio of the message for independent
coordinates with the pilot's means and variances -- linear, ``(mu' - mu) / v``, for Gaussian-like
coordinates (and the l2-ball's output), ``(|x - mu| - |x - mu'|) / b`` for Laplace ones (excess
kurtosis above 1.5) -- over the coordinates whose mean difference exceeds 4 standard errors,
duplicated coordinates such as the mirrored half of a symmetric matrix counted once.

Adversarial server (``privbandits audit --adversarial``).  The server is untrusted (the
documentation's Concepts: threat model): :class:`AdversarialServer` searches the public-state space
a device declares -- the honest broadcast, random and extreme members, then a hill climb over the
state, the users' contexts within the norm bound and their rewards -- for the largest whitened
distance of two neighbouring users' encoded messages (``Client.encode`` / ``noise`` /
``sensitivity``, :mod:`privbandits.privacy.device`), and :func:`adversarial_audit` runs the audit
above at that state with that pair, against the claim and against its half-noise twin.

Under-noised variant.  ``under_noised=f`` audits the same client path of the same algorithm
constructed at the requested ``epsilon / f`` (so ``f = 0.5`` requests twice the epsilon: exactly
half the Laplace scale and the l2-ball temperature ``1/epsilon``, about half the Gaussian std)
against the unchanged claim of the algorithm at ``epsilon``.  The variant uses only the public
constructor, so it needs no hook in the algorithm.

References
----------
Jagielski, Ullman & Oprea (2020), "Auditing differentially private machine learning: how private
is private SGD?", NeurIPS; Ding et al. (2018), "Detecting violations of differential privacy", CCS;
Mironov (2012), "On significance of the least significant bits for differential privacy", CCS (the
floating-point side channel the statistic's rounding keeps out of the test).

Layout.  Each algorithm declares its audit cases beside it (``audit_cases()``, the vocabulary in
:mod:`privbandits.algorithms.audit`: what a case is made of, the users, the claim, the candidate
pairs); this package is the machinery: :mod:`~privbandits.auditing.client_path` runs a case's client
code path and builds its audit spec; :mod:`~privbandits.auditing.adversarial` is the adversarial
server; :mod:`~privbandits.auditing.catalogue` collects the cases of every registered algorithm
(:data:`CLIENT_PATHS`, :data:`RELEASES`) and lists everything ``privbandits audit`` audits
(:data:`AUDITABLE`).
"""

from privbandits.algorithms.audit import (
    UNIT_ACTIONS,
    Claim,
    ClientPathCase,
    ReleaseCase,
    UserData,
    accounted_claim,
    extreme_pairs,
    gaussian_shuffle_local_claim,
    near_parallel_pairs,
    reward_pairs,
    shuffle_local_claim,
    two_point_pairs,
)
from privbandits.auditing.adversarial import (
    SENSITIVITY_RTOL,
    AdversarialAudit,
    AdversarialServer,
    WorstCase,
    adversarial_audit,
    adversarial_names,
    run_adversarial,
    worst_public_state,
)
from privbandits.auditing.catalogue import (
    AUDITABLE,
    CLIENT_PATHS,
    RELEASES,
    audit_mechanism,
    cases_of,
    collect,
    declared_cases,
    local_algorithms,
    resolve,
    run_all,
    undeclared,
)
from privbandits.auditing.client_path import (
    LAPLACE_KURTOSIS,
    PILOT_ENTROPY,
    Projection,
    client_messages,
    client_path_spec,
    pilot_projection,
)

__all__ = [
    "AUDITABLE",
    "CLIENT_PATHS",
    "HANNA_ACTIONS",
    "LAPLACE_KURTOSIS",
    "PILOT_ENTROPY",
    "RELEASES",
    "SENSITIVITY_RTOL",
    "AdversarialAudit",
    "AdversarialServer",
    "Claim",
    "ClientPathCase",
    "Projection",
    "ReleaseCase",
    "UserData",
    "WorstCase",
    "accounted_claim",
    "adversarial_audit",
    "adversarial_names",
    "audit_mechanism",
    "cases_of",
    "client_messages",
    "client_path_spec",
    "collect",
    "declared_cases",
    "extreme_pairs",
    "gaussian_shuffle_local_claim",
    "local_algorithms",
    "near_parallel_pairs",
    "pilot_projection",
    "resolve",
    "reward_pairs",
    "run_adversarial",
    "run_all",
    "shuffle_local_claim",
    "two_point_pairs",
    "undeclared",
    "worst_public_state",
]

#: The fixed action set of the Hanna et al. entries (:data:`privbandits.algorithms.audit.UNIT_ACTIONS`).
HANNA_ACTIONS = UNIT_ACTIONS
