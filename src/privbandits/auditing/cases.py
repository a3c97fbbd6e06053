"""What a client-path audit case is made of: the users, the claim, the candidate pairs, the case.

See :mod:`privbandits.auditing` for the audit these cases describe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.algorithms import get, make
from privbandits.algorithms.base import Algorithm, LocalAlgorithm
from privbandits.algorithms.calibration import (
    BatchLocalLevels,
    GaussianBatchLocalLevels,
)
from privbandits.core.errors import ValidationError
from privbandits.core.messages import PublicState
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.privacy.audit import AuditSpec


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
    Gaussian mechanism, before amplification.

    Reads the typed calibration's ``eps0`` (per range of batch sizes) and ``delta0``
    (:class:`~privbandits.algorithms.calibration.GaussianBatchLocalLevels`) and claims the largest
    ``eps0`` with ``delta0``.
    """
    levels = alg.calibration.constants
    if not isinstance(levels, GaussianBatchLocalLevels):
        raise ValidationError(
            f"{alg.name}: the calibration must declare 'batch_sizes', 'eps0' and 'delta0' (the "
            "Gaussian local level of one report, GaussianBatchLocalLevels) for the client-path audit"
        )
    eps0_ranges, delta0 = levels.eps0, float(levels.delta0)
    eps0 = float(max(max(v) for v in eps0_ranges))
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
