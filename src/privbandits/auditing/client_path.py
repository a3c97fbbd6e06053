"""The client code path of one case: the users' messages, the pilot's test statistic, the audit spec.

See :mod:`privbandits.auditing` for the procedure.
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.algorithms.audit import ClientPathCase, UserData
from privbandits.algorithms.base import LocalAlgorithm
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.core.convex import ConvexSpec
from privbandits.core.errors import ValidationError
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.engine import protocol
from privbandits.privacy.audit import AuditSpec
from privbandits.privacy.audit.catalog import factor_of, variant_name

#: Entropy of the pilot streams (independent of every audit seed's streams).
PILOT_ENTROPY = 0x5EED_0F_A0D17


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
