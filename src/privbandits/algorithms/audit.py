"""How an algorithm declares its empirical privacy audits (``privbandits audit``).

Every private algorithm declares its audits beside itself, as it declares ``test_params``: the
classmethod :meth:`~privbandits.algorithms.base.Algorithm.audit_cases` returns its cases, each
either

* a :class:`ClientPathCase` (``client:<algorithm>[-<variant>]``): the algorithm's client code path at
  a stated parameter point, with the small problem it is reset on, the candidate neighbouring users,
  the claim and, where local DP must hold against an untrusted server, the public state the audit
  broadcasts; every local and shuffle algorithm declares at least one; or
* a :class:`ReleaseCase`: a central algorithm's noisy release audited through its own code.

This module is the vocabulary of those declarations (users, claims, candidate pairs, small
problems); :mod:`privbandits.auditing` collects the cases of every registered algorithm and runs
them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.algorithms.base import Algorithm, LocalAlgorithm
from privbandits.algorithms.calibration import (
    BatchLocalLevels,
    GaussianBatchLocalLevels,
)
from privbandits.algorithms.registry import get, make
from privbandits.core.errors import ValidationError
from privbandits.core.messages import PublicState
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.envs import ConvexLossEnv, FiniteActionEnv, MultiArmedEnv, SyntheticEnv
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


def extremes(spec: EnvSpec) -> tuple[float, float]:
    """``(y+, y-) = (r_hi + 10 (r_hi - r_lo), r_lo - 10 (r_hi - r_lo))``: rewards far outside the
    declared range, which the client must clip."""
    lo, hi = (float(v) for v in spec.reward_range)
    return hi + 10.0 * (hi - lo), lo - 10.0 * (hi - lo)


def same_on_every_arm(spec: EnvSpec, x: np.ndarray) -> np.ndarray:
    """The contexts of a user who sees ``x`` on every arm (the chosen arm does not matter)."""
    return x.copy() if spec.setting == "multi" else np.tile(x, (spec.K, 1))


def extreme_pairs(spec: EnvSpec) -> list[tuple[UserData, UserData]]:
    """Candidate worst-case pairs: contexts on the norm bound, rewards outside the declared range.

    With ``B`` the context bound, ``y+ = r_hi + 10 (r_hi - r_lo)`` and ``y- = r_lo - 10 (r_hi -
    r_lo)``: every pair of distinct users among ``{B e_1, -B e_1, B e_2} x {y+, y-}`` (``B e_2``
    when ``d >= 2``); every arm shows the user's context.
    """
    B = float(spec.context_bound)
    y_hi, y_lo = extremes(spec)
    d = spec.d

    def user(k: int, sign: float, y: float) -> UserData:
        x = np.zeros(d)
        x[k] = sign * B
        name = f"{'-' if sign < 0 else ''}{B:g} e_{k + 1}"
        return UserData(same_on_every_arm(spec, x), y, f"x = {name}, r = {y:g}")

    directions = [(0, 1.0), (0, -1.0)] + ([(1, 1.0)] if d >= 2 else [])
    users = [user(k, sign, y) for k, sign in directions for y in (y_hi, y_lo)]
    return [(a, b) for i, a in enumerate(users) for b in users[i + 1 :]]


def reward_pairs(actions: np.ndarray) -> Callable[[EnvSpec], list[tuple[UserData, UserData]]]:
    """Pairs for a fixed action set: the user sees ``actions``; rewards ``y+`` against ``y-``."""
    A = np.asarray(actions, dtype=float)

    def pairs(spec: EnvSpec) -> list[tuple[UserData, UserData]]:
        y_hi, y_lo = extremes(spec)
        what = f"the public {A.shape[0]} actions"
        return [
            (UserData(A, y_hi, f"{what}, r = {y_hi:g}"), UserData(A, y_lo, f"{what}, r = {y_lo:g}"))
        ]

    return pairs


def arm_pairs(K: int) -> Callable[[EnvSpec], list[tuple[UserData, UserData]]]:
    """:func:`reward_pairs` of a ``K``-armed problem (the arms as the unit vectors of ``R^K``)."""
    return reward_pairs(np.eye(K))


#: A fixed action set of 4 unit vectors in R^2 (the fixed-action entries' public actions).
UNIT_ACTIONS = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.6, 0.8]])


def synthetic_env() -> SyntheticEnv:
    """A small linear problem: ``d = 2``, ``K = 3``."""
    return SyntheticEnv(d=2, K=3)


def finite_env() -> FiniteActionEnv:
    """The fixed action set :data:`UNIT_ACTIONS` in R^2."""
    return FiniteActionEnv(d=2, K=4, actions=UNIT_ACTIONS)


def k_armed_env() -> MultiArmedEnv:
    """Three Bernoulli arms with means 0.2, 0.5, 0.8."""
    return MultiArmedEnv(K=3, means=[0.2, 0.5, 0.8], noise="bernoulli")


def convex_env() -> ConvexLossEnv:
    """A quadratic loss on a 2-dimensional domain."""
    return ConvexLossEnv(d=2, loss="quadratic")


@dataclass(frozen=True)
class ClientPathCase:
    """One algorithm's client code path at a stated parameter point.

    Attributes
    ----------
    algorithm : str or callable
        Registry name, or a factory ``factory(**params) -> Algorithm`` (e.g. a class).
    params : mapping
        Constructor arguments; must include ``epsilon`` (the variant divides it by the factor).
        Default ``{"epsilon": 1.0}``.
    env : callable
        ``env() -> Environment``: the small problem whose :class:`EnvSpec` the algorithm is
        reset on (default :func:`synthetic_env`).
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
    variant : str
        Suffix of the catalogue name when an algorithm declares several cases
        (``client:ldp-ucb-laplace``); empty for its main case.
    """

    algorithm: str | Callable[..., Algorithm]
    params: Mapping[str, Any] = field(default_factory=lambda: {"epsilon": 1.0})
    env: Callable[[], Any] = synthetic_env
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
    variant: str = ""

    @property
    def label(self) -> str:
        """The algorithm's registry name (or the factory's name)."""
        a = self.algorithm
        if isinstance(a, str):
            return a
        return str(getattr(a, "name", "") or getattr(a, "__name__", "algorithm"))

    @property
    def name(self) -> str:
        """Catalogue name: ``client:<algorithm>`` or ``client:<algorithm>-<variant>``."""
        return f"client:{self.label}" + (f"-{self.variant}" if self.variant else "")

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


@dataclass(frozen=True)
class ReleaseCase:
    """A central algorithm's noisy release, audited through the algorithm's own code.

    Attributes
    ----------
    name : str
        Catalogue name (``privbandits audit NAME``), e.g. ``jdp-linucb-tree``.
    spec : callable
        ``spec(under_noised=None) -> AuditSpec``; its docstring's first line is the catalogue's
        description.
    """

    name: str
    spec: Callable[..., AuditSpec]


#: What :meth:`~privbandits.algorithms.base.Algorithm.audit_cases` returns.
AuditCase = ClientPathCase | ReleaseCase


# ============================================================================================
# small problems and worst-case users the declarations share
# ============================================================================================
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


def diagonal_point(spec: EnvSpec) -> np.ndarray:
    """``S (e_1 + e_2) / sqrt(2)`` (``S`` the parameter bound): at this iterate the gradients
    ``(mu(x^T theta) - y) x`` of the users ``B e_1`` and ``B e_2`` with ``y`` below the range both
    reach norm ``1 + 1/sqrt(2)`` (``S = C_B = c_r = 1``), in orthogonal directions."""
    theta = np.zeros(spec.d)
    theta[: min(2, spec.d)] = spec.theta_bound / math.sqrt(min(2, spec.d))
    return theta


def axis_point(spec: EnvSpec) -> np.ndarray:
    """``S e_1``: as an estimate ``theta_hat``, the statistic ``z x = (x^T theta_hat) x`` differs
    between the users ``B e_1`` and ``B e_2``, as their ``x x^T`` and gradients do."""
    theta = np.zeros(spec.d)
    theta[0] = spec.theta_bound
    return theta


#: Half-angle ``a`` of the two users of :func:`near_parallel_pairs`: their clipped gradients are
#: ``cos(a)`` times the accounted sensitivity apart (``1 - 5e-7``).
NEAR_PARALLEL_ANGLE = 1e-3
#: The two users' predictions ``+-P`` under the weight :func:`steep_direction`: far outside
#: ``[-1, 1]`` (an unclipped identity-link gradient is ``P + 1``).
STEEP_PREDICTION = 100.0


def near_parallel_pairs(spec: EnvSpec) -> list[tuple[UserData, UserData]]:
    """Users ``u = B (cos a, sin a)`` with ``y-`` and ``v = B (cos a, -sin a)`` with ``y+`` (``a = 1e-3``),
    every arm showing the user's context.  Under a server weight ``P e_2 / (B sin a)``
    (:func:`steep_direction`: predictions ``+-P`` clipped to ``+-1``) their clipped gradients are
    ``c u`` and ``-c v``, ``2 c cos a`` apart: the accounted sensitivity ``2 c`` (8 for the square
    loss, ``c = 4``; 4 for the re-weighted loss, ``c = 2``) to ``5e-7``, its supremum over the
    untrusted server's weights (no weight attains it)."""
    B = float(spec.context_bound)
    y_hi, y_lo = extremes(spec)
    u = np.zeros(spec.d)
    u[:2] = B * math.cos(NEAR_PARALLEL_ANGLE), B * math.sin(NEAR_PARALLEL_ANGLE)
    v = u.copy()
    v[1] = -v[1]
    return [
        (
            UserData(same_on_every_arm(spec, u), y_lo, f"x = u, r = {y_lo:g}"),
            UserData(same_on_every_arm(spec, v), y_hi, f"x = v, r = {y_hi:g}"),
        )
    ]


def steep_direction(spec: EnvSpec) -> np.ndarray:
    """``P e_2 / (B sin a)``: ``<u, .> = P`` and ``<v, .> = -P`` for the users of
    :func:`near_parallel_pairs` (an improper weight or iterate the untrusted server may send)."""
    theta = np.zeros(spec.d)
    theta[1] = STEEP_PREDICTION / (float(spec.context_bound) * math.sin(NEAR_PARALLEL_ANGLE))
    return theta


def public_state(**fields: Any) -> Callable[[EnvSpec], dict[str, Any]]:
    """A ``public`` of :class:`ClientPathCase`: each field a value or a function of the spec.

    ``public_state(theta=diagonal_point)`` broadcasts ``theta = diagonal_point(spec)``.
    """

    def public(spec: EnvSpec) -> dict[str, Any]:
        return {k: v(spec) if callable(v) else v for k, v in fields.items()}

    return public


# ============================================================================================
# cases several algorithms declare alike
# ============================================================================================
def fixed_action_case(cls: type[Algorithm], description: str, **fields: Any) -> ClientPathCase:
    """The client path on the fixed actions :data:`UNIT_ACTIONS` (horizon 2000), rewards ``y+``
    against ``y-`` (:func:`reward_pairs`); ``fields`` set the other attributes (e.g. ``claim``)."""
    return ClientPathCase(
        cls,
        env=finite_env,
        horizon=2000,
        pairs=reward_pairs(UNIT_ACTIONS),
        n_samples=60_000,
        n_pilot=4_000,
        batch=1 << 14,
        description=description,
        **fields,
    )


def near_parallel_case(
    cls: type[Algorithm], public: Callable[[EnvSpec], Mapping[str, Any]], description: str
) -> ClientPathCase:
    """The client path of a clipped-gradient device at the server state ``public``, with the users
    of :func:`near_parallel_pairs` (their clipped gradients at the accounted sensitivity)."""
    return ClientPathCase(
        cls,
        n_samples=200_000,
        n_pilot=5_000,
        batch=1 << 15,
        pairs=near_parallel_pairs,
        public=public,
        description=description,
    )


def mechanism_cases(
    cls: type[Algorithm],
    env: Callable[[], Any],
    pairs: Callable[[EnvSpec], Sequence[tuple[UserData, UserData]]],
    gaussian: str,
    laplace: str,
) -> tuple[ClientPathCase, ClientPathCase]:
    """The client path with the default (Gaussian) mechanism and, as the variant ``laplace``, with
    ``mechanism="laplace"`` (pure epsilon-LDP); ``gaussian`` and ``laplace`` describe the two."""
    case = ClientPathCase(
        cls,
        env=env,
        pairs=pairs,
        n_samples=200_000,
        n_pilot=10_000,
        batch=1 << 14,
        description=gaussian,
    )
    params = {**case.params, "mechanism": "laplace"}
    return case, dataclasses.replace(case, params=params, description=laplace, variant="laplace")
