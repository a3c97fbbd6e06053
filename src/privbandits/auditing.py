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
"""

from __future__ import annotations

import dataclasses
import math
import warnings
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.algorithms import available, get, make
from privbandits.algorithms.base import Algorithm, LocalAlgorithm
from privbandits.algorithms.calibration import BatchLocalLevels, CalibrationWarning
from privbandits.algorithms.chen.ldp import GRADIENT as CHEN_GRADIENT_SLOT
from privbandits.algorithms.chen.squarecb_ldp import GRADIENT as SQUARECB_GRADIENT_SLOT
from privbandits.algorithms.sarmasarkar.audit import gradient_release_spec
from privbandits.algorithms.sarmasarkar.shuffle_audit import AUDIT_EPSILON, shuffle_glm_matrix_spec
from privbandits.core.convex import ConvexSpec
from privbandits.core.errors import UnknownNameError, ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.public_space import PublicStateError, dims_of
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.engine import protocol
from privbandits.envs import ConvexLossEnv, FiniteActionEnv, MultiArmedEnv, SyntheticEnv
from privbandits.privacy.audit import AUDITABLE as MECHANISMS
from privbandits.privacy.audit import AuditResult, AuditSpec, audit_spec
from privbandits.privacy.audit.catalog import factor_of, variant_name
from privbandits.privacy.device import whitened_distance
from privbandits.privacy.inputs import check_device_inputs
from privbandits.regression.audit import REGRESSION_AUDITS

__all__ = [
    "AUDITABLE",
    "CLIENT_PATHS",
    "AdversarialAudit",
    "AdversarialServer",
    "Claim",
    "ClientPathCase",
    "UserData",
    "WorstCase",
    "accounted_claim",
    "adversarial_audit",
    "adversarial_names",
    "audit_mechanism",
    "client_messages",
    "client_path_spec",
    "extreme_pairs",
    "local_algorithms",
    "near_parallel_pairs",
    "pilot_projection",
    "reward_pairs",
    "run_adversarial",
    "run_all",
    "shuffle_local_claim",
    "worst_public_state",
]

#: Entropy of the pilot streams (independent of every audit seed's streams).
PILOT_ENTROPY = 0x5EED_0F_A0D17


# ============================================================================================
# what a case is made of
# ============================================================================================
@dataclass(frozen=True)
class UserData:
    """One user's own data for one round: the contexts it sees and its reward.

    Attributes
    ----------
    contexts : ndarray
        ``(K, d)`` (single-parameter setting) or ``(d,)`` (multi-parameter setting); on a loss
        environment the user's loss parameters ``(p,)``.
    reward : float or ndarray
        The user's reward (may lie outside the declared range: the client must clip it); on a loss
        environment the user's losses at the round's query points, ``(k,)``.
    label : str
        Short description, e.g. ``x = e_1, r = 21``.
    action : int, optional
        The arm the user plays (part of the user's own data: neighbouring users may play different
        arms); None lets the device choose from the public state.
    """

    contexts: np.ndarray
    reward: float | np.ndarray
    label: str
    action: int | None = None


@dataclass(frozen=True)
class Claim:
    """The privacy claim an audit tests: ``(epsilon, delta)`` and where it comes from."""

    epsilon: float
    delta: float
    source: str


def accounted_claim(alg: Algorithm, public: PublicState) -> Claim:
    """The algorithm's accounted guarantee ``alg.guarantee`` (local model: one message per user)."""
    g = alg.guarantee
    return Claim(float(g.epsilon), float(g.delta), f"alg.guarantee = {g}")


def shuffle_local_claim(alg: Algorithm, public: PublicState) -> Claim:
    """Local level of one report of a shuffle algorithm, from its calibration.

    Reads the typed calibration's ``batch_sizes`` (the ranges ``(lo, hi)`` of batch sizes the run
    can produce) and ``eps0`` (``(eps0(lo), eps0(hi))`` per range, the calibrated local budgets;
    :class:`~privbandits.algorithms.calibration.BatchLocalLevels`) and claims the largest ``eps0``
    of the range holding the audited user's public batch size ``public["n"]`` (pure DP,
    ``delta = 0``).
    """
    levels = alg.calibration.constants
    if not isinstance(levels, BatchLocalLevels):
        raise ValidationError(
            f"{alg.name}: the calibration must declare 'batch_sizes' and 'eps0' "
            "(the local budget per batch size, BatchLocalLevels) for the client-path audit"
        )
    ranges, eps0 = levels.batch_sizes, levels.eps0
    n = np.asarray(public["n"], dtype=np.int64)
    n0 = int(n.reshape(-1)[0])
    for (lo, hi), levels in zip(ranges, eps0):
        if lo <= n0 <= hi:
            return Claim(
                float(max(levels)),
                0.0,
                f"local level eps0 of one report in a batch of n={n0} users (calibration, "
                f"batch sizes {lo}..{hi}); the central guarantee {alg.guarantee} adds "
                "amplification",
            )
    raise ValidationError(
        f"{alg.name}: batch size n={n0} of the audited user is in no calibrated range {ranges}"
    )


def gaussian_shuffle_local_claim(alg: Algorithm, public: PublicState) -> Claim:
    """Local level ``(eps0, delta0)`` of one report of a shuffle algorithm whose randomizer is a
    Gaussian mechanism (``resolved["eps0"]``, ``resolved["delta0"]``), before amplification."""
    resolved = alg.calibration.resolved
    eps0 = float(max(max(v) for v in resolved["eps0"]))
    delta0 = float(resolved["delta0"])
    return Claim(
        eps0,
        delta0,
        f"local level ({eps0:.6g}, {delta0:.3g}) of one report (calibration); the shuffle "
        f"guarantee {alg.guarantee} adds amplification",
    )


def _extremes(spec: EnvSpec) -> tuple[float, float]:
    lo, hi = (float(v) for v in spec.reward_range)
    return hi + 10.0 * (hi - lo), lo - 10.0 * (hi - lo)


def _same_on_every_arm(spec: EnvSpec, x: np.ndarray) -> np.ndarray:
    return x.copy() if spec.setting == "multi" else np.tile(x, (spec.K, 1))


def extreme_pairs(spec: EnvSpec) -> list[tuple[UserData, UserData]]:
    """Candidate worst-case pairs: contexts on the norm bound, rewards outside the declared range.

    With ``B`` the context bound, ``y+ = r_hi + 10 (r_hi - r_lo)`` and ``y- = r_lo - 10 (r_hi -
    r_lo)``: every pair of distinct users among ``{B e_1, -B e_1, B e_2} x {y+, y-}`` (``B e_2``
    when ``d >= 2``); every arm shows the user's context.
    """
    B = float(spec.context_bound)
    y_hi, y_lo = _extremes(spec)
    d = spec.d

    def user(k: int, sign: float, y: float) -> UserData:
        x = np.zeros(d)
        x[k] = sign * B
        name = f"{'-' if sign < 0 else ''}{B:g} e_{k + 1}"
        return UserData(_same_on_every_arm(spec, x), y, f"x = {name}, r = {y:g}")

    directions = [(0, 1.0), (0, -1.0)] + ([(1, 1.0)] if d >= 2 else [])
    users = [user(k, sign, y) for k, sign in directions for y in (y_hi, y_lo)]
    return [(a, b) for i, a in enumerate(users) for b in users[i + 1 :]]


def reward_pairs(actions: np.ndarray) -> Callable[[EnvSpec], list[tuple[UserData, UserData]]]:
    """Pairs for a fixed action set: the user sees ``actions``; rewards ``y+`` against ``y-``."""
    A = np.asarray(actions, dtype=float)

    def pairs(spec: EnvSpec) -> list[tuple[UserData, UserData]]:
        y_hi, y_lo = _extremes(spec)
        what = f"the public {A.shape[0]} actions"
        return [
            (UserData(A, y_hi, f"{what}, r = {y_hi:g}"), UserData(A, y_lo, f"{what}, r = {y_lo:g}"))
        ]

    return pairs


@dataclass(frozen=True)
class ClientPathCase:
    """One algorithm's client code path at a stated parameter point.

    Attributes
    ----------
    algorithm : str or callable
        Registry name, or a factory ``factory(**params) -> Algorithm`` (e.g. a class).
    params : mapping
        Constructor arguments; must include ``epsilon`` (the variant divides it by the factor).
    env : callable
        ``env() -> Environment``: the small problem whose :class:`EnvSpec` the algorithm is
        reset on.
    horizon : int
        Horizon of that problem.
    claim : callable
        ``claim(alg, public) -> Claim`` on the nominal algorithm after reset.
    pairs : callable
        ``pairs(spec) -> [(D, D'), ...]``: candidate neighbouring user inputs.
    n_samples : int
        Messages per neighbouring input (half to choose the test, half to evaluate it).
    n_pilot : int
        Messages per input and candidate pair drawn by the pilot.
    batch : int
        Users per reset of the algorithm (bounds memory of the per-replication state).
    public : callable, optional
        ``public(spec) -> {field: value}``: public-state fields the audit sets before the user
        randomizes (each value broadcast over the users).  Local DP must hold whatever the
        (untrusted) server broadcasts, so the audit may pick the broadcast that makes the users'
        messages most distinguishable (e.g. the iterate ``theta`` entering a gradient).
    description : str
        One line for ``privbandits audit --list``.
    protocol : callable, optional
        ``protocol(under_noised) -> AuditSpec``: for a shuffle algorithm whose single message has
        no local claim, the audit of the protocol its shuffle claim is about, run through the
        algorithm's own roles (replaces the per-message audit).
    """

    algorithm: str | Callable[..., Algorithm]
    params: Mapping[str, Any]
    env: Callable[[], Any]
    horizon: int = 1000
    claim: Callable[[Algorithm, PublicState], Claim] = accounted_claim
    pairs: Callable[[EnvSpec], Sequence[tuple[UserData, UserData]]] = extreme_pairs
    n_samples: int = 500_000
    n_pilot: int = 20_000
    batch: int = 1 << 16
    public: Callable[[EnvSpec], Mapping[str, Any]] | None = None
    description: str = ""
    notes: str = field(default="")
    protocol: Callable[[float | None], AuditSpec] | None = None

    @property
    def label(self) -> str:
        a = self.algorithm
        if isinstance(a, str):
            return a
        return str(getattr(a, "name", "") or getattr(a, "__name__", "algorithm"))

    def build(self, params: Mapping[str, Any]) -> LocalAlgorithm:
        """A fresh algorithm with ``params``."""
        a = self.algorithm
        cls = get(a) if isinstance(a, str) else a
        if isinstance(cls, type) and not issubclass(cls, LocalAlgorithm):
            raise ValidationError(
                f"{self.label} is not a local or shuffle algorithm: it has no client code path"
            )
        alg = make(a, **params) if isinstance(a, str) else a(**params)
        if not isinstance(alg, LocalAlgorithm):
            raise ValidationError(
                f"{self.label} is not a local or shuffle algorithm: it has no client code path"
            )
        return alg

    def spec(self) -> EnvSpec:
        """The public problem description of :attr:`env` at :attr:`horizon`."""
        return self.env().reset(1, make_streams(0), self.horizon)


# ============================================================================================
# the client code path
# ============================================================================================
def _override(public: PublicState, values: Mapping[str, Any]) -> PublicState:
    """``public`` with the fields of ``values`` replaced (broadcast over the leading user axis)."""
    fields = dict(public)
    for key, value in values.items():
        if key not in fields:
            raise ValidationError(
                f"the public state has no field {key!r}; fields: {', '.join(fields)}"
            )
        old = np.asarray(fields[key])
        new = np.broadcast_to(np.asarray(value, dtype=old.dtype), old.shape)
        fields[key] = np.ascontiguousarray(new)
    return PublicState(fields)


def _flatten(msg: PrivatizedMessage, m: int) -> np.ndarray:
    if not isinstance(msg, PrivatizedMessage):
        raise ValidationError(
            f"client.randomize must return a PrivatizedMessage, got {type(msg).__name__}"
        )
    parts = [np.asarray(msg.payload[k], dtype=float).reshape(m, -1) for k in sorted(msg.payload)]
    return np.concatenate(parts, axis=1)


def client_messages(
    case: ClientPathCase,
    params: Mapping[str, Any],
    spec: EnvSpec,
    user: UserData,
    m: int,
    rng: np.random.Generator,
    t: int = 0,
) -> np.ndarray:
    """Messages of ``m`` users holding ``user``, through the algorithm's own client code path.

    The algorithm is reset on ``spec`` with ``R = m`` replications (one user each) and streams
    seeded from ``rng``; then ``client.choose`` and ``client.randomize`` run on the user's own
    contexts and reward with ``rng`` as the user's stream.  Returns the flattened payloads
    ``(m, p)`` (fields in sorted key order).
    """
    alg = case.build(params)
    if not isinstance(alg, LocalAlgorithm):
        raise ValidationError(
            f"{case.label} is not a local or shuffle algorithm: it has no client code path"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        alg.reset(spec, m, make_streams(int(rng.integers(2**62))))
    X = np.ascontiguousarray(np.broadcast_to(user.contexts, (m, *user.contexts.shape)), dtype=float)
    protocol.start(alg, X)
    public = protocol.broadcast(alg, t)
    if case.public is not None:
        public = _override(public, case.public(spec))
    y = np.ascontiguousarray(
        np.broadcast_to(np.asarray(user.reward, dtype=float), (m, *np.shape(user.reward)))
    )
    if isinstance(spec, ConvexSpec):
        # continuous actions (the query points of the public state): the device validates the
        # public state and its randomizer checks the points and losses it is handed
        state = protocol.device_public(alg.client, spec, public, m)
        points = alg.client.choose(t, state, X, rng)
        msg = protocol.check_message(alg.client.randomize(t, state, X, points, y, rng))
    else:
        if user.action is None:
            actions = protocol.device_choose(alg.client, spec, t, public, X, rng)
        else:
            actions = np.full(m, int(user.action), dtype=np.int64)
        msg = protocol.device_randomize(alg.client, spec, t, public, X, actions, y, rng)
    return _flatten(msg, m)


def _draw(
    case: ClientPathCase,
    params: Mapping[str, Any],
    spec: EnvSpec,
    user: UserData,
    n: int,
    rng: np.random.Generator,
) -> np.ndarray:
    out, left = [], n
    while left > 0:
        m = min(case.batch, left)
        out.append(client_messages(case, params, spec, user, m, rng))
        left -= m
    return np.concatenate(out, axis=0)


@dataclass(frozen=True)
class Projection:
    """The test statistic chosen by the pilot and how far apart the pair's messages are.

    ``T(X) = X @ weights + sum_j (|X_j - mu0_j| - |X_j - mu1_j|) / b_j`` over the Laplace
    coordinates ``j`` (:func:`pilot_projection`).
    """

    weights: np.ndarray
    score: float
    description: str
    laplace: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    mu0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    mu1: np.ndarray = field(default_factory=lambda: np.zeros(0))
    b: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """Statistics of the messages ``X`` (rows), rounded to 1e-9.

        The rounding keeps the floating-point rounding of the computation out of the test: the
        Laplace terms are constant on both tails, and without it the audit would threshold inside
        those atoms on the last bits of ``T``, which depend on the low-order bits of the message
        (the floating-point side channel of Mironov 2012), not on the mechanism's mathematics.
        """
        t = X @ self.weights
        if self.laplace.size:
            Z = X[:, self.laplace]
            t = t + ((np.abs(Z - self.mu0) - np.abs(Z - self.mu1)) / self.b).sum(axis=1)
        return np.round(t, 9)


#: Excess kurtosis above which a coordinate's noise is read as Laplace (3) rather than Gaussian (0).
LAPLACE_KURTOSIS = 1.5


def pilot_projection(X0: np.ndarray, X1: np.ndarray, *, z: float = 4.0) -> Projection:
    """Test statistic from pilot messages ``X0`` (under ``D``) and ``X1`` (under ``D'``).

    Coordinates whose mean difference exceeds ``z`` standard errors enter the statistic with their
    log-likelihood ratio: ``(mean1_j - mean0_j) (x_j - .) / v_j`` (linear, exact for Gaussian noise;
    ``v_j`` the pooled per-coordinate variance) or, when the coordinate's noise has excess
    kurtosis above :data:`LAPLACE_KURTOSIS`, ``(|x_j - mean0_j| - |x_j - mean1_j|) / b_j`` with
    ``b_j = sqrt(v_j / 2)`` (exact for Laplace noise).  Duplicated coordinates (equal on every pilot
    row, e.g. the mirrored half of a symmetric matrix) are counted once.  ``score = sum_j (mean1_j
    - mean0_j)^2 / v_j`` over those coordinates (the squared distance between the pair's messages
    in noise units).  A coordinate that is constant within each input but differs between them is
    a deterministic leak: the statistic is that coordinate alone and the score is infinite.
    """
    X0 = np.asarray(X0, dtype=float)
    X1 = np.asarray(X1, dtype=float)
    n0, n1 = X0.shape[0], X1.shape[0]
    p = X0.shape[1]
    _, first = np.unique(np.vstack([X0, X1]).T, axis=0, return_index=True)
    keep = np.zeros(p, dtype=bool)
    keep[first] = True
    m0, m1 = X0.mean(axis=0), X1.mean(axis=0)
    diff = m1 - m0
    v = 0.5 * (X0.var(axis=0, ddof=1) + X1.var(axis=0, ddof=1))
    const = v <= 0.0
    leak = keep & const & (diff != 0.0)
    w = np.zeros(p)
    if leak.any():
        j = int(np.flatnonzero(leak)[0])
        w[j] = math.copysign(1.0, diff[j])
        return Projection(
            w, math.inf, f"coordinate {j} is deterministic and differs between the inputs"
        )
    safe_v = np.where(const, 1.0, v)
    se = np.sqrt(safe_v * (1.0 / n0 + 1.0 / n1))
    sig = keep & ~const & (np.abs(diff) > z * se)
    if not sig.any():  # nothing detectable: use every coordinate
        sig = keep & ~const
        w[sig] = diff[sig] / safe_v[sig]
        return Projection(w, 0.0, "no coordinate differs detectably; all coordinates weighted")
    C = np.vstack([X0 - m0, X1 - m1])
    m2 = np.where(
        const, 1.0, (C**2).mean(axis=0)
    )  # constant coordinates (e.g. an unused field) are 0
    kurt = (C**4).mean(axis=0) / m2**2 - 3.0
    lap = sig & (kurt > LAPLACE_KURTOSIS)
    lin = sig & ~lap
    w[lin] = diff[lin] / safe_v[lin]
    idx = np.flatnonzero(lap)
    score = float(np.sum(diff[sig] ** 2 / safe_v[sig]))
    text = (
        f"{int(sig.sum())} of {p} message coordinates used: {int(lin.sum())} with the Gaussian, "
        f"{idx.size} with the Laplace log-likelihood ratio"
    )
    return Projection(w, score, text, idx, m0[idx], m1[idx], np.sqrt(safe_v[idx] / 2.0))


# ============================================================================================
# the audit spec of a case
# ============================================================================================
def client_path_spec(
    case: ClientPathCase, under_noised: float | None = None, *, name: str | None = None
) -> AuditSpec:
    """The :class:`~privbandits.privacy.audit.AuditSpec` of ``case`` or of its under-noised variant.

    Parameters
    ----------
    case : ClientPathCase
    under_noised : float, optional
        ``f``: audit the algorithm constructed at ``epsilon / f`` against the claim at ``epsilon``.
    name : str, optional
        Base name (default ``client:<algorithm>``).
    """
    if case.protocol is not None:
        return case.protocol(under_noised)
    return _client_path_spec(case, factor_of(under_noised), name or f"client:{case.label}")


def _client_path_spec(case: ClientPathCase, f: float, base: str) -> AuditSpec:
    """:func:`client_path_spec` with the noise factor ``f`` and the base name resolved."""
    if "epsilon" not in case.params:
        raise ValidationError(
            f"{base}: the case parameters must give epsilon (the variant scales it)"
        )
    spec = case.spec()
    candidates = list(case.pairs(spec))
    if not candidates:
        raise ValidationError(f"{base}: no candidate neighbouring pair")
    nominal = case.build(case.params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalibrationWarning)
        nominal.reset(spec, 1, make_streams(0))
    protocol.start(nominal, np.asarray(candidates[0][0].contexts, dtype=float)[None])
    public = protocol.broadcast(nominal, 0)
    if case.public is not None:
        public = _override(public, case.public(spec))
    claim = case.claim(nominal, public)
    params = dict(case.params)
    if f != 1.0:
        params["epsilon"] = float(case.params["epsilon"]) / f
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)
            variant_guarantee = case.build(params).guarantee_for(spec)
    key = zlib.crc32(base.encode())
    pilot_seq = np.random.SeedSequence(PILOT_ENTROPY, spawn_key=(key,))
    pilot_rng = np.random.Generator(np.random.PCG64(pilot_seq))
    best: tuple[float, int, Projection] | None = None
    for i, (d0, d1) in enumerate(candidates):
        X0 = _draw(case, params, spec, d0, case.n_pilot, pilot_rng)
        X1 = _draw(case, params, spec, d1, case.n_pilot, pilot_rng)
        proj = pilot_projection(X0, X1)
        if best is None or proj.score > best[0]:
            best = (proj.score, i, proj)
    assert best is not None
    _, i_best, proj = best  # the pair whose messages are farthest apart
    pair = candidates[i_best]

    def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
        return proj(_draw(case, params, spec, pair[side], m, rng))

    users = list(dict.fromkeys(u.label for pr in candidates for u in pr))
    pair_text = f"{len(candidates)} pair(s) among the users ({'), ('.join(users)})"
    variant = ""
    if f != 1.0:
        variant = (
            f"variant: the same client path constructed at epsilon={params['epsilon']:g} "
            f"(requested epsilon x{1 / f:g}; its own accounted guarantee "
            f"{variant_guarantee}), claim unchanged"
        )
    warned = "; ".join(str(c.message) for c in caught)
    problem = (
        f"{case.label} with {dict(case.params)} on d={spec.d}, K={spec.K}, "
        f"horizon={spec.horizon}, context bound {spec.context_bound:g}, reward range "
        f"{tuple(spec.reward_range)}"
    )
    pilot = (
        f"candidates: {pair_text}; the pilot ({case.n_pilot} messages per input and pair) "
        f"chose the pair above (distance score {proj.score:.4g}; {proj.description})"
    )
    warned_text = f"calibration warnings: {warned}" if warned else ""
    broadcast = ""
    if case.public is not None:
        shown = {
            k: np.round(np.asarray(v, dtype=float), 4).tolist()
            for k, v in case.public(spec).items()
        }
        broadcast = f"public state set by the audit (the untrusted server's broadcast): {shown}"
    parts = (problem, f"claim: {claim.source}", broadcast, pilot, case.notes, warned_text, variant)
    notes = "; ".join(p for p in parts if p)
    d0, d1 = pair
    return AuditSpec(
        name=variant_name(base, f),
        claimed_epsilon=claim.epsilon,
        claimed_delta=claim.delta,
        sample=sample,
        neighbours=f"one user of round 0: ({d0.label}) vs ({d1.label}), rewards outside the "
        "declared range",
        statistic="the log-likelihood ratio of the user's PrivatizedMessage payload (every field, "
        "flattened) for independent Gaussian or Laplace coordinates with the means and "
        "variances the pilot estimated",
        n_samples=case.n_samples,
        notes=notes,
        noise_factor=f,
    )


# ============================================================================================
# the catalog of client paths
# ============================================================================================
#: Action set of the fixed-action (Hanna et al.) entries: 4 unit vectors in R^2.
HANNA_ACTIONS = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.6, 0.8]])


def _synthetic() -> SyntheticEnv:
    return SyntheticEnv(d=2, K=3)


def _finite() -> FiniteActionEnv:
    return FiniteActionEnv(d=2, K=4, actions=HANNA_ACTIONS)


def _k_armed() -> MultiArmedEnv:
    return MultiArmedEnv(K=3, means=[0.2, 0.5, 0.8], noise="bernoulli")


def _convex() -> ConvexLossEnv:
    return ConvexLossEnv(d=2, loss="quadratic")


def two_point_pairs(spec: EnvSpec) -> list[tuple[UserData, UserData]]:
    """Users whose loss differences at the two query points are far outside ``+-2 rho G`` in opposite
    directions (``f(x_1) - f(x_2) = +-10``), so the client's clipping is exercised; the loss
    parameters are the centre of the domain."""
    ctx = np.zeros(spec.d)
    return [
        (
            UserData(ctx, np.array([5.0, -5.0]), "f(x_1) - f(x_2) = 10"),
            UserData(ctx, np.array([-5.0, 5.0]), "f(x_1) - f(x_2) = -10"),
        )
    ]


def _diagonal_iterate(spec: EnvSpec) -> dict[str, np.ndarray]:
    """``theta = S (e_1 + e_2) / sqrt(2)``: gradients ``(mu(x^T theta) - y) x`` of the users
    ``B e_1`` and ``B e_2`` with ``y`` below the range both reach norm ``1 + 1/sqrt(2)``
    (``S = C_B = c_r = 1``), in orthogonal directions."""
    theta = np.zeros(spec.d)
    theta[: min(2, spec.d)] = spec.theta_bound / math.sqrt(min(2, spec.d))
    return {"theta": theta}


def _axis_estimate(spec: EnvSpec) -> dict[str, np.ndarray]:
    """``theta_hat = S e_1``: the statistic ``z x = (x^T theta_hat) x`` differs between the users
    ``B e_1`` and ``B e_2``, as their ``x x^T`` and gradients do."""
    theta = np.zeros(spec.d)
    theta[0] = spec.theta_bound
    return {"theta_hat": theta}


#: Half-angle ``a`` of the two users of :func:`near_parallel_pairs`: their clipped gradients are
#: ``cos(a)`` times the accounted sensitivity apart (``1 - 5e-7``).
_SQ_ANGLE = 1e-3
#: The two users' predictions ``+-P`` under the server's weight of :func:`_steep_iterate` and
#: :func:`_steep_weight`: far outside ``[-1, 1]`` (an unclipped identity-link gradient is ``P + 1``).
_STEEP_PREDICTION = 100.0


def near_parallel_pairs(spec: EnvSpec) -> list[tuple[UserData, UserData]]:
    """Users ``u = B (cos a, sin a)`` with ``y-`` and ``v = B (cos a, -sin a)`` with ``y+`` (``a = 1e-3``),
    every arm showing the user's context.  Under a server weight ``P e_2 / (B sin a)`` (predictions
    ``+-P`` clipped to ``+-1``, :func:`_steep_iterate`, :func:`_steep_weight`) their clipped
    gradients are ``c u`` and ``-c v``, ``2 c cos a`` apart: the accounted sensitivity ``2 c`` (8 for
    the square loss, ``c = 4``; 4 for the re-weighted loss, ``c = 2``) to ``5e-7``, its supremum over
    the untrusted server's weights (no weight attains it)."""
    B = float(spec.context_bound)
    y_hi, y_lo = _extremes(spec)
    u = np.zeros(spec.d)
    u[:2] = B * math.cos(_SQ_ANGLE), B * math.sin(_SQ_ANGLE)
    v = u.copy()
    v[1] = -v[1]
    return [
        (
            UserData(_same_on_every_arm(spec, u), y_lo, f"x = u, r = {y_lo:g}"),
            UserData(_same_on_every_arm(spec, v), y_hi, f"x = v, r = {y_hi:g}"),
        )
    ]


def _steep_direction(spec: EnvSpec) -> np.ndarray:
    """``P e_2 / (B sin a)``: ``<u, .> = P`` and ``<v, .> = -P`` for the users of :func:`near_parallel_pairs`."""
    theta = np.zeros(spec.d)
    theta[1] = _STEEP_PREDICTION / (float(spec.context_bound) * math.sin(_SQ_ANGLE))
    return theta


def _steep_iterate(spec: EnvSpec) -> dict[str, Any]:
    """A gradient slot with the (improper) iterate ``theta = P e_2 / (B sin a)``: both users'
    predictions clipped."""
    return {"slot": SQUARECB_GRADIENT_SLOT, "theta_sgd": _steep_direction(spec)}


def _steep_weight(spec: EnvSpec) -> dict[str, Any]:
    """A gradient slot with ``U = I`` and the weight ``w = P e_2 / (B sin a)`` (far outside the
    descent's ellipsoid ``||U w|| <= 1``): both users' predictions ``<U phi, w> = +-P`` clipped."""
    return {"slot": CHEN_GRADIENT_SLOT, "U": np.eye(spec.d), "w": _steep_direction(spec)}


#: Client-path audits of every local and shuffle algorithm, by catalog name.
CLIENT_PATHS: dict[str, ClientPathCase] = {
    "client:ldp-sgd": ClientPathCase(
        "ldp-sgd",
        {"epsilon": 1.0},
        _synthetic,
        n_samples=300_000,
        n_pilot=10_000,
        public=_diagonal_iterate,
        description="LDP-SGD client (Han et al. 2021, Alg. 2): gradient through the l2-ball "
        "mechanism",
    ),
    "client:ldp-ols": ClientPathCase(
        "ldp-ols",
        {"epsilon": 1.0},
        _synthetic,
        n_pilot=10_000,
        description="LDP-OLS client (Han et al. 2021, Alg. 1): Gaussian x x^T and x y",
    ),
    "client:ldp-ucb": ClientPathCase(
        "ldp-ucb",
        {"epsilon": 1.0},
        _synthetic,
        n_pilot=10_000,
        description="LDP-UCB client (Zheng et al. 2020, Alg. 1): noisy x x^T and x y",
    ),
    "client:shuffle-linucb": ClientPathCase(
        "shuffle-linucb",
        {"epsilon": 1.0},
        _synthetic,
        claim=gaussian_shuffle_local_claim,
        n_pilot=10_000,
        description="Shuffle LinUCB client (Chowdhury & Zhou 2022): Gaussian x x^T and x y at the "
        "local level of one report",
    ),
    "client:ldp-ucb-laplace": ClientPathCase(
        "ldp-ucb",
        {"epsilon": 1.0, "mechanism": "laplace"},
        _synthetic,
        n_samples=200_000,
        n_pilot=10_000,
        description="LDP-UCB client with the Laplace mechanism (Zheng et al. 2020, pure epsilon-LDP)",
    ),
    "client:ldp-gloc": ClientPathCase(
        "ldp-gloc",
        {"epsilon": 1.0},
        _synthetic,
        n_pilot=10_000,
        public=_axis_estimate,
        description="LDP-GLOC client (Zheng et al. 2020, Alg. 3): noisy x x^T, z x and gradient",
    ),
    "client:hanna-local": ClientPathCase(
        "hanna-local",
        {"epsilon": 1.0},
        _finite,
        horizon=2000,
        pairs=reward_pairs(HANNA_ACTIONS),
        n_samples=60_000,
        n_pilot=4_000,
        batch=1 << 14,
        description="Hanna et al. (2022) Alg. 2 client: clip(r) + Laplace",
    ),
    "client:chen-ldp": ClientPathCase(
        "chen-ldp",
        {"epsilon": 1.0},
        _synthetic,
        n_samples=200_000,
        n_pilot=5_000,
        batch=1 << 15,
        pairs=near_parallel_pairs,
        public=_steep_weight,
        description="Chen et al. (2025) Alg. 8 client, gradient slot at an adversarial weight: clipped "
        "re-weighted gradient + Gaussian",
    ),
    "client:squarecb-ldp": ClientPathCase(
        "squarecb-ldp",
        {"epsilon": 1.0},
        _synthetic,
        n_samples=200_000,
        n_pilot=5_000,
        batch=1 << 15,
        pairs=near_parallel_pairs,
        public=_steep_iterate,
        description="SquareCB + Chen et al. (2025) Alg. 6 client: clipped square-loss gradient + Gaussian",
    ),
    "client:hanna-shuffle": ClientPathCase(
        "hanna-shuffle",
        {"epsilon": 1.0},
        _finite,
        horizon=2000,
        pairs=reward_pairs(HANNA_ACTIONS),
        claim=shuffle_local_claim,
        n_samples=60_000,
        n_pilot=4_000,
        batch=1 << 14,
        description="Hanna et al. (2022) Alg. 3 client: clip(r) + Laplace at the local level eps0",
    ),
    "client:ldp-onepoint": ClientPathCase(
        "ldp-onepoint",
        {"epsilon": 1.0},
        _k_armed,
        pairs=reward_pairs(np.eye(3)),
        n_samples=200_000,
        n_pilot=10_000,
        batch=1 << 14,
        description="LDP-OnePoint client (Zheng et al. 2020, Alg. 1): clip(r) + Gaussian",
    ),
    "client:ldp-onepoint-laplace": ClientPathCase(
        "ldp-onepoint",
        {"epsilon": 1.0, "mechanism": "laplace"},
        _k_armed,
        pairs=reward_pairs(np.eye(3)),
        n_samples=200_000,
        n_pilot=10_000,
        batch=1 << 14,
        description="LDP-OnePoint client with the Laplace mechanism (Zheng et al. 2020, pure epsilon-LDP)",
    ),
    "client:ldp-twopoint": ClientPathCase(
        "ldp-twopoint",
        {"epsilon": 1.0},
        _convex,
        pairs=two_point_pairs,
        n_samples=200_000,
        n_pilot=10_000,
        batch=1 << 14,
        description="LDP-TwoPoint client (Zheng et al. 2020, Alg. 2): clip(f(x_1) - f(x_2)) + n^T (x_1 - x_2)",
    ),
    "client:ldp-twopoint-laplace": ClientPathCase(
        "ldp-twopoint",
        {"epsilon": 1.0, "mechanism": "laplace"},
        _convex,
        pairs=two_point_pairs,
        n_samples=200_000,
        n_pilot=10_000,
        batch=1 << 14,
        description="LDP-TwoPoint client with the Laplace mechanism (pure epsilon-LDP)",
    ),
    "client:shuffle-glm": ClientPathCase(
        "shuffle-glm",
        {"epsilon": AUDIT_EPSILON},
        _synthetic,
        protocol=shuffle_glm_matrix_spec,
        description="ShuffleGLM (Sarmasarkar 2026, Alg. 1): warm-up x x^T summation through client, shuffler "
        "and server, at the summation's shuffle claim (one message has no local claim)",
    ),
}


def _client_factory(name: str, case: ClientPathCase) -> Callable[..., AuditSpec]:
    def factory(under_noised: float | None = None) -> AuditSpec:
        return client_path_spec(case, under_noised, name=name)

    factory.__doc__ = case.description or f"client code path of {case.label}"
    factory.__name__ = name.replace(":", "_").replace("-", "_")
    return factory


#: Everything ``privbandits audit`` audits: the privacy layer's mechanisms and protocols, then the
#: algorithms' client code paths.
AUDITABLE: dict[str, Callable[..., AuditSpec]] = {
    **MECHANISMS,
    **REGRESSION_AUDITS,
    **{name: _client_factory(name, case) for name, case in CLIENT_PATHS.items()},
    "jdp-glm-gradient": gradient_release_spec,
}


def audit_mechanism(
    name: str,
    under_noised: float | None = None,
    n_samples: int | None = None,
    seed: int = 0,
    *,
    alpha: float = 0.05,
) -> AuditResult:
    """Audit one entry of :data:`AUDITABLE` (``privbandits audit NAME``).

    Parameters
    ----------
    name : str
        A mechanism of the privacy layer or ``client:<algorithm>``.
    under_noised : float, optional
        Audit the variant with this multiple of the calibrated noise (see the module docstring for
        the client paths) against the unchanged claim.
    n_samples : int, optional
        Outputs per neighbouring input (default: the entry's own).
    seed : int
        Seed of the sampling streams.
    alpha : float
        1 - confidence of the lower bound.
    """
    if name not in AUDITABLE:
        raise UnknownNameError(f"unknown mechanism {name!r}; auditable: {', '.join(AUDITABLE)}")
    return audit_spec(AUDITABLE[name](under_noised), n_samples=n_samples, alpha=alpha, seed=seed)


def run_all(
    under_noised: float | None = None,
    n_samples: int | None = None,
    seed: int = 0,
    *,
    alpha: float = 0.05,
    names: Sequence[str] | None = None,
) -> list[AuditResult]:
    """Audit every entry of :data:`AUDITABLE` (or ``names``) in catalog order
    (``privbandits audit --all``)."""
    return [
        audit_mechanism(nm, under_noised, n_samples, seed, alpha=alpha)
        for nm in (names or list(AUDITABLE))
    ]


def local_algorithms() -> list[str]:
    """Registered algorithms in the local or shuffle model (each must have a client-path entry)."""
    return [n for n, cls in available().items() if cls.trust_model in ("local", "shuffle")]


# ============================================================================================
# the adversarial server: the public state that pulls two neighbouring users' messages apart
# ============================================================================================
#: Relative slack of the sensitivity comparison (float rounding of the encoded messages).
SENSITIVITY_RTOL = 1e-9


@dataclass(frozen=True)
class WorstCase:
    """The most distinguishing public state and neighbouring pair an adversarial search found.

    Attributes
    ----------
    algorithm : str
        The audited device.
    public : dict of str to ndarray
        One user's public state (per-user fields with a leading axis of length 1), a member of the
        device's declared public-state space.
    pair : tuple of UserData
        The neighbouring users (own contexts, arm and reward) at that state.
    reached : float
        ``whitened_distance(encode(D), encode(D'), noise.scale, sensitivity.norm)`` there.
    bound : float
        The device's accounted bound ``sensitivity().bound``.
    norm : str
        The norm of the sensitivity.
    evaluated : int
        Number of (public state, pair) points the search evaluated.
    """

    algorithm: str
    public: dict[str, np.ndarray]
    pair: tuple[UserData, UserData]
    reached: float
    bound: float
    norm: str
    evaluated: int

    @property
    def holds(self) -> bool:
        """The accounted sensitivity holds at every point evaluated."""
        return bool(self.reached <= self.bound * (1.0 + SENSITIVITY_RTOL))

    def summary(self) -> str:
        """One line describing the public state (small arrays in full, large ones by range)."""
        return "; ".join(f"{k} = {_describe_array(v)}" for k, v in self.public.items()) or "(empty)"


def _describe_array(v: np.ndarray) -> str:
    a = np.asarray(v)
    if a.size <= 6:
        return str(
            np.round(a.astype(float), 4)
            .reshape(a.shape[1:] if a.ndim and a.shape[0] == 1 else a.shape)
            .tolist()
        )
    text = f"shape {a.shape[1:] if a.shape[0] == 1 else a.shape}, entries in [{a.min():.4g}, {a.max():.4g}]"
    if a.ndim >= 2 and a.dtype.kind == "f":
        text += (
            f", largest row norm {float(np.sqrt(np.max(np.einsum('...i,...i->...', a, a)))):.4g}"
        )
    return text


class _Points:
    """A batch of ``n`` (public state, neighbouring pair) points, one per replication row."""

    def __init__(
        self,
        public: dict[str, np.ndarray],
        X0: np.ndarray,
        a0: np.ndarray,
        y0: np.ndarray,
        X1: np.ndarray,
        a1: np.ndarray,
        y1: np.ndarray,
    ) -> None:
        self.public, self.X0, self.a0, self.y0, self.X1, self.a1, self.y1 = (
            public,
            X0,
            a0,
            y0,
            X1,
            a1,
            y1,
        )

    def row(self, j: int, per_user: set[str]) -> _Points:
        pub = {k: (v[j : j + 1] if k in per_user else v) for k, v in self.public.items()}
        return _Points(
            pub,
            self.X0[j : j + 1],
            self.a0[j : j + 1],
            self.y0[j : j + 1],
            self.X1[j : j + 1],
            self.a1[j : j + 1],
            self.y1[j : j + 1],
        )

    def tile(self, n: int, per_user: set[str]) -> _Points:
        def rep(v: np.ndarray) -> np.ndarray:
            return np.repeat(v, n, axis=0)

        pub = {k: (rep(v) if k in per_user else v.copy()) for k, v in self.public.items()}
        return _Points(
            pub, rep(self.X0), rep(self.a0), rep(self.y0), rep(self.X1), rep(self.a1), rep(self.y1)
        )


class AdversarialServer:
    """Search a device's declared public-state space for the state that maximizes the whitened
    distance of two neighbouring users' encoded messages (the device's own sensitivity).

    The device contract (:class:`privbandits.algorithms.base.Client`: ``public_space``, ``encode``,
    ``noise``, ``sensitivity``) is read on a fresh reset of ``alg`` with ``n`` users, one point
    (public state, neighbouring pair) per user: the honest broadcast, random and extreme members
    of the space (:meth:`privbandits.core.public_space.PublicSpace.draw`), then a hill climb from
    the best point found (perturb the public state, the users' contexts within the norm bound and
    their rewards; keep what increases the distance).  The users' arms are the device's own choice
    (``Client.choose``) with the same policy randomness for both users of a pair.

    Parameters
    ----------
    alg : LocalAlgorithm
        A constructed local or shuffle algorithm (reset here).
    spec : EnvSpec
        The problem.
    pairs : sequence of (UserData, UserData), optional
        Seed pairs (default :func:`extreme_pairs`); random users on the norm bound with rewards
        outside the declared range are added.
    n : int
        Points per batch.
    seed : int
        Seed of the search.
    t : int
        The round the users take part in.
    """

    def __init__(
        self,
        alg: Algorithm,
        spec: EnvSpec,
        pairs: Sequence[tuple[UserData, UserData]] | None = None,
        *,
        n: int = 64,
        seed: int = 0,
        t: int = 0,
    ) -> None:
        if not isinstance(alg, LocalAlgorithm):
            raise ValidationError(
                f"{getattr(alg, 'name', type(alg).__name__)} is not a local or shuffle "
                "algorithm: it has no device"
            )
        self.alg, self.spec, self.n, self.t = alg, spec, int(n), int(t)
        self.rng = np.random.default_rng(
            np.random.SeedSequence(PILOT_ENTROPY, spawn_key=(seed, 0xAD5))
        )
        self.convex = isinstance(spec, ConvexSpec)
        self.pairs = (
            list(pairs) if pairs is not None else ([] if self.convex else extreme_pairs(spec))
        )
        if self.convex and not self.pairs:
            raise ValidationError(
                "a loss environment needs seed pairs (the users' loss parameters and losses)"
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)
            alg.reset(spec, self.n, make_streams(seed))
        self.client = alg.client
        space = self.client.public_space()
        if space is None:
            raise NotImplementedError(
                f"{type(self.client).__name__} does not declare its public-state space "
                "(Client.public_space): what an adversarial server may send is unbounded"
            )
        self.space = space
        self.sens = self.client.sensitivity()
        self.dims = dims_of(spec, self.n)
        self.per_user = {f.name for f in space.fields if f.shape and f.shape[0] == "R"}
        self.evaluated = 0
        first = self.pairs[0][0] if self.pairs else self._random_user()
        X = np.ascontiguousarray(
            np.broadcast_to(first.contexts, (self.n, *np.shape(first.contexts))), dtype=float
        )
        protocol.start(alg, X)
        self.honest = {k: np.array(v) for k, v in protocol.broadcast(alg, self.t).items()}

    # -- distances ------------------------------------------------------------------------------
    def distances(self, pts: _Points) -> np.ndarray:
        """Whitened distances ``(n,)`` of the encoded messages of each row's pair; ``-inf`` for a
        row whose public state the device refuses (a check beyond the declared space)."""
        try:
            return self._distances(pts, self.dims)
        except PublicStateError:
            if pts.X0.shape[0] == 1:
                return np.array([-np.inf])
        out = np.empty(pts.X0.shape[0])
        one = dims_of(self.spec, 1)
        for j in range(out.size):  # row by row: only the refused states drop out
            row = pts.row(j, self.per_user)
            try:
                out[j] = self._distances(row, one)[0]
            except PublicStateError:
                out[j] = -np.inf
                continue
            pts.a0[j], pts.a1[j] = row.a0[0], row.a1[0]
        return out

    def _distances(self, pts: _Points, dims: Mapping[str, int]) -> np.ndarray:
        state = self.space.validate(pts.public, dims)
        # the arms are the device's own choice from the public state and the user's contexts, with
        # the same policy randomness for both users (a coupling: DP of the mixture over it follows)
        policy_seed = int(self.rng.integers(2**62))
        enc, scales = [], []
        for side, (X, y) in enumerate(((pts.X0, pts.y0), (pts.X1, pts.y1))):
            act = np.asarray(
                self.client.choose(self.t, state, X, np.random.default_rng(policy_seed))
            )
            if not self.convex:
                X, act, y = check_device_inputs(self.spec, X, act, y)  # type: ignore[assignment]
                (pts.a0 if side == 0 else pts.a1)[:] = act
            e = np.asarray(self.client.encode(self.t, state, X, act, y), dtype=float)
            if e.ndim != 2 or e.shape[0] != X.shape[0]:
                raise ValidationError(
                    f"{type(self.client).__name__}.encode returned shape {e.shape}; expected "
                    f"({X.shape[0]}, m): one flattened message per user"
                )
            noise = self.client.noise(self.t, state, X, act)
            enc.append(e)
            scales.append(np.broadcast_to(np.asarray(noise.scale, dtype=float), e.shape))
        self.evaluated += pts.X0.shape[0]
        norm = self.sens.norm
        # the larger of the two whitenings: noise that depended on the user would be caught here
        return np.maximum(
            whitened_distance(enc[0], enc[1], scales[0], norm),
            whitened_distance(enc[0], enc[1], scales[1], norm),
        )

    # -- candidate points -----------------------------------------------------------------------
    def _random_user(self) -> UserData:
        spec, rng = self.spec, self.rng
        B = float(spec.context_bound)
        shape = (spec.d,) if spec.setting == "multi" else (spec.K, spec.d)
        x = rng.standard_normal(shape)
        if rng.random() < 0.5 and len(shape) == 2:
            x[:] = x[0]
        x *= B / np.linalg.norm(x, axis=-1, keepdims=True)
        y_hi, y_lo = _extremes(spec)
        return UserData(x, float(rng.choice([y_hi, y_lo])), "random")

    def _users(self) -> _Points:
        """One pair per row: the seed pairs (arms drawn at random) and random users on the bound."""
        n = self.n
        rows = []
        for j in range(n):
            if self.pairs and (j % 2 == 0 or self.convex):
                d0, d1 = self.pairs[(j // 2) % len(self.pairs)]
            else:
                d0, d1 = self._random_user(), self._random_user()
            rows.append((d0, d1))
        X0 = np.stack([np.asarray(r[0].contexts, dtype=float) for r in rows])
        X1 = np.stack([np.asarray(r[1].contexts, dtype=float) for r in rows])
        y0 = np.stack([np.asarray(r[0].reward, dtype=float) for r in rows])
        y1 = np.stack([np.asarray(r[1].reward, dtype=float) for r in rows])
        return _Points({}, X0, np.zeros(n, dtype=np.int64), y0, X1, np.zeros(n, dtype=np.int64), y1)

    def _with(self, public: Mapping[str, Any]) -> _Points:
        pts = self._users()
        pts.public = {k: np.array(v) for k, v in public.items()}
        return pts

    # -- the search -----------------------------------------------------------------------------
    def search(self, rounds: int = 2, climb: int = 25) -> WorstCase:
        """Random and extreme states (``rounds`` batches of each), then ``climb`` hill-climb steps."""
        candidates = []
        names = set(self.space.names)
        if set(self.honest) == names:
            candidates.append(self._with(self.honest))
        for _ in range(rounds):
            for extreme in (False, True):
                candidates.append(self._with(self.space.draw(self.dims, self.rng, extreme)))
        best_val, best = -np.inf, None
        for pts in candidates:
            dist = self.distances(pts)
            j = int(np.argmax(dist))
            if dist[j] > best_val or best is None:
                best_val, best = float(dist[j]), pts.row(j, self.per_user)
        assert best is not None
        if best_val == -np.inf:
            raise ValidationError(
                f"{type(self.client).__name__} refused every public state drawn from the "
                "space it declares (PublicStateError): declare the space it accepts"
            )
        step = 0.3
        for _ in range(climb):
            if not math.isfinite(best_val):
                break
            props = self._perturb(best.tile(self.n, self.per_user), step)
            dist = self.distances(props)
            j = int(np.argmax(dist))
            if dist[j] > best_val * (1.0 + 1e-12):
                best_val, best = float(dist[j]), props.row(j, self.per_user)
                step = min(step * 1.5, 1.0)
            else:
                step *= 0.6
        return WorstCase(
            getattr(self.alg, "name", "") or type(self.alg).__name__,
            dict(best.public),
            self._pair(best),
            best_val,
            float(self.sens.bound),
            self.sens.norm,
            self.evaluated,
        )

    def _pair(self, p: _Points) -> tuple[UserData, UserData]:
        out = []
        for X, a, y in ((p.X0, p.a0, p.y0), (p.X1, p.a1, p.y1)):
            x, r = X[0].copy(), y[0].copy() if np.ndim(y[0]) else float(y[0])
            norm = float(np.max(np.linalg.norm(np.atleast_2d(x), axis=-1)))
            label = (
                f"contexts of norm {norm:.4g}"
                + ("" if self.convex else f", arm {int(a[0])}")
                + f", reward {np.round(r, 4).tolist() if np.ndim(r) else round(float(r), 4)}"
            )
            # the arm the device chose at this state (with the pair's shared policy randomness): the
            # audit conditions on it, as the accounting covers every (x, a, r) of a user
            out.append(UserData(x, r, label, None if self.convex else int(a[0])))
        return out[0], out[1]

    def _perturb(self, p: _Points, step: float) -> _Points:
        rng, n = self.rng, self.n
        pub = {}
        for f in self.space.fields:
            v = np.array(p.public[f.name])
            pub[f.name] = _perturb_field(f, v, step, rng, f.name in self.per_user)
        B = float(self.spec.context_bound)
        X0, X1 = p.X0.copy(), p.X1.copy()
        y0, y1 = p.y0.copy(), p.y1.copy()
        if not self.convex:
            for X in (X0, X1):
                X += step * B * rng.standard_normal(X.shape)
                nrm = np.linalg.norm(X, axis=-1, keepdims=True)
                X *= np.minimum(1.0, B * (1 - 1e-12) / np.maximum(nrm, 1e-300))
        y_hi, y_lo = _extremes(self.spec)
        for y in (y0, y1):
            if self.convex:
                y += step * (np.abs(y) + 1.0) * rng.standard_normal(y.shape)
            else:
                flip = rng.random(n) < 0.15
                y[flip] = rng.choice(
                    np.array([y_hi, y_lo, *self.spec.reward_range, 0.0]), size=int(flip.sum())
                )
        return _Points(pub, X0, p.a0.copy(), y0, X1, p.a1.copy(), y1)


def _perturb_field(
    f: Any, v: np.ndarray, step: float, rng: np.random.Generator, per_user: bool
) -> np.ndarray:
    """A random move of a public field that stays in its declared range (projected back)."""
    if f.values is not None:
        flip = rng.random(v.shape) < 0.2 * min(step * 3, 1.0)
        out = v.copy()
        out[flip] = rng.choice(np.asarray(f.values, dtype=np.int64), size=int(flip.sum()))
        return out
    lo = -1e6 if f.low is None else f.low
    hi = 1e6 if f.high is None else f.high
    if f.kind == "i":
        w = max(1.0, step * (hi - lo) / 2) if math.isfinite(hi - lo) else 1.0
        return np.clip(
            np.round(v + w * rng.standard_normal(v.shape)), math.ceil(lo), math.floor(hi)
        ).astype(np.int64)
    width = (hi - lo) / 2 if (f.low is not None and f.high is not None) else (f.norm or 1.0)
    x = v + step * (np.abs(v) + width) * rng.standard_normal(v.shape)
    if f.psd_floor is not None:
        x = (x + np.swapaxes(x, -1, -2)) / 2
        w_, Q = np.linalg.eigh(x)
        w_ = np.clip(w_, f.psd_floor, min(hi, 1e6))
        x = np.einsum("...ij,...j,...kj->...ik", Q, w_, Q)
        return np.ascontiguousarray((x + np.swapaxes(x, -1, -2)) / 2)
    x = np.clip(x, lo, hi)
    if f.symmetric:
        x = (x + np.swapaxes(x, -1, -2)) / 2
    if f.norm is not None:
        nrm = np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]
        x = x * np.minimum(1.0, f.norm * (1 - 1e-12) / np.maximum(nrm, 1e-300))
    return np.ascontiguousarray(x, dtype=float)


def worst_public_state(
    alg: Algorithm,
    spec: EnvSpec,
    pairs: Sequence[tuple[UserData, UserData]] | None = None,
    *,
    n: int = 64,
    rounds: int = 2,
    climb: int = 25,
    seed: int = 0,
) -> WorstCase:
    """The public state (and neighbouring pair) maximizing a device's encoded distance.

    See :class:`AdversarialServer`.  Raises ``NotImplementedError`` when the device does not
    implement its contract (``encode`` / ``noise`` / ``sensitivity``).
    """
    return AdversarialServer(alg, spec, pairs, n=n, seed=seed).search(rounds, climb)


@dataclass(frozen=True)
class AdversarialAudit:
    """One row of ``privbandits audit --adversarial``.

    Attributes
    ----------
    name : str
        Client-path entry (``client:<algorithm>``).
    worst_state : str
        Summary of the worst public state found.
    reached : float
        Sensitivity reached there (whitened distance of the neighbours' encoded messages).
    accounted : float
        The device's accounted sensitivity.
    claimed_epsilon : float
        The claim audited.
    audited_epsilon_lb : float
        Audited lower bound at that state (must not exceed the claim).
    twin_epsilon_lb : float
        Audited lower bound of the half-noise twin (must exceed the claim).
    twin_flagged : bool
        The twin's audit detected the violation.
    passed : bool
        Sensitivity held, the audit passed and the twin was flagged.
    notes : str
        The search, the pair, both audits' notes, or why the device could not be audited.
    """

    name: str
    worst_state: str
    reached: float
    accounted: float
    claimed_epsilon: float
    audited_epsilon_lb: float
    twin_epsilon_lb: float
    twin_flagged: bool
    passed: bool
    notes: str = ""


def _failed(name: str, why: str) -> AdversarialAudit:
    nan = float("nan")
    return AdversarialAudit(name, "-", nan, nan, nan, nan, nan, False, False, why)


def adversarial_audit(
    name: str | ClientPathCase,
    n_samples: int | None = None,
    seed: int = 0,
    *,
    alpha: float = 0.05,
    twin: float = 0.5,
    search: Mapping[str, int] | None = None,
) -> AdversarialAudit:
    """Audit one client path at the worst public state an adversarial server can send.

    1. :func:`worst_public_state` searches the device's declared space (and the neighbouring
       users) for the largest whitened distance of the encoded messages;
    2. the client-path audit (:func:`client_path_spec`) runs at that state, with that pair, against
       the claim, and against its under-noised twin (the algorithm constructed at
       ``epsilon / twin``), which must be flagged: an audit that cannot fail is no evidence.

    A device that does not implement its contract (``public_space``, ``encode``, ``noise``,
    ``sensitivity``) fails with a note saying which method is missing.

    Parameters
    ----------
    name : str or ClientPathCase
        An entry of :data:`CLIENT_PATHS` (or its algorithm name), or a case of one's own.
    n_samples : int, optional
        Messages per neighbouring input of both audits (default: the case's own).
    seed : int
        Seed of the search and of the audits' sampling streams.
    alpha : float
        1 - confidence of the audited lower bounds.
    twin : float
        Noise factor of the twin (0.5: half the noise).
    search : mapping, optional
        Budget of the search (:func:`worst_public_state` keywords ``n``, ``rounds``, ``climb``).
    """
    if isinstance(name, ClientPathCase):
        case, name = name, f"client:{name.label}"
    else:
        if name not in CLIENT_PATHS:
            name = f"client:{name}"
        if name not in CLIENT_PATHS:
            raise UnknownNameError(
                f"no client path {name!r}; client paths: {', '.join(CLIENT_PATHS)}"
            )
        case = CLIENT_PATHS[name]
    try:
        alg = case.build(case.params)
        spec = _search_spec(case, alg)
        worst = worst_public_state(
            alg, spec, list(case.pairs(spec)), seed=seed, **dict(search or {})
        )
    except NotImplementedError as exc:
        return _failed(name, f"the device does not implement its contract: {exc}")
    except (ValidationError, PublicStateError) as exc:
        return _failed(name, f"the adversarial search could not run: {type(exc).__name__}: {exc}")
    held = worst.holds
    head = (
        f"adversarial search over the declared public-state space ({worst.evaluated} points): reached "
        f"{worst.reached:.6g} of the accounted {worst.norm} sensitivity {worst.bound:.6g} "
        f"({'holds' if held else 'EXCEEDED'}) with ({worst.pair[0].label}) vs ({worst.pair[1].label})"
    )
    if case.protocol is not None:
        ok = audit_spec(case.protocol(None), n_samples=n_samples, alpha=alpha, seed=seed)
        half = audit_spec(case.protocol(twin), n_samples=n_samples, alpha=alpha, seed=seed)
        head += "; the audited release is the protocol's (its claim does not depend on the public state)"
    else:
        public = {k: np.array(v) for k, v in worst.public.items()}
        adv = dataclasses.replace(
            case, public=lambda _spec: public, pairs=lambda _spec: [worst.pair]
        )
        ok = audit_spec(
            client_path_spec(adv, name=name), n_samples=n_samples, alpha=alpha, seed=seed
        )
        half = audit_spec(
            client_path_spec(adv, twin, name=name), n_samples=n_samples, alpha=alpha, seed=seed
        )
    flagged = not half.passed
    notes = f"{head}; audit: {ok.notes}; twin (noise x{twin:g}): {half.notes}"
    return AdversarialAudit(
        name,
        worst.summary(),
        worst.reached,
        worst.bound,
        ok.claimed_epsilon,
        ok.audited_epsilon_lb,
        half.audited_epsilon_lb,
        flagged,
        bool(held and ok.passed and flagged),
        notes,
    )


def _search_spec(case: ClientPathCase, alg: Algorithm) -> EnvSpec:
    """The case's problem, or (a protocol-level case, whose problem is the protocol's) a small
    synthetic problem with a link the algorithm supports."""
    spec = case.spec()
    links = type(alg).links
    if "*" in links or spec.link.name in links:
        return spec
    noise = {"logistic": "bernoulli", "probit": "bernoulli", "poisson": "poisson"}.get(
        links[0], "gaussian"
    )
    return SyntheticEnv(d=2, K=3, link=links[0], noise=noise).reset(
        1, make_streams(0), case.horizon
    )


def adversarial_names(algorithm: str | None = None) -> list[str]:
    """Client-path entries of ``algorithm`` (an algorithm name or ``client:`` entry; None: every one)."""
    if algorithm is None:
        return list(CLIENT_PATHS)
    if algorithm in CLIENT_PATHS:
        return [algorithm]
    names = [k for k, c in CLIENT_PATHS.items() if c.label == algorithm]
    if not names:
        raise UnknownNameError(
            f"no client path of {algorithm!r}; local and shuffle algorithms: "
            f"{', '.join(dict.fromkeys(c.label for c in CLIENT_PATHS.values()))}"
        )
    return names


def run_adversarial(
    algorithm: str | None = None,
    n_samples: int | None = None,
    seed: int = 0,
    *,
    alpha: float = 0.05,
) -> list[AdversarialAudit]:
    """``privbandits audit ALGORITHM --adversarial`` (``algorithm=None``: ``--all``)."""
    return [
        adversarial_audit(nm, n_samples, seed, alpha=alpha) for nm in adversarial_names(algorithm)
    ]
