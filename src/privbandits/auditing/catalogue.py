"""The catalogue of client-path audits: one case per local and shuffle algorithm, and everything
``privbandits audit`` audits (:data:`AUDITABLE`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privbandits.algorithms import available
from privbandits.algorithms.chen.ldp import GRADIENT as CHEN_GRADIENT_SLOT
from privbandits.algorithms.chen.squarecb_ldp import GRADIENT as SQUARECB_GRADIENT_SLOT
from privbandits.algorithms.chowdhury.vec_audit import shuffle_linucb_vec_spec
from privbandits.algorithms.sarmasarkar.audit import gradient_release_spec
from privbandits.algorithms.sarmasarkar.shuffle_audit import AUDIT_EPSILON, shuffle_glm_matrix_spec
from privbandits.algorithms.shariff.audit import tree_release_spec
from privbandits.auditing.cases import (
    ClientPathCase,
    UserData,
    _extremes,
    _same_on_every_arm,
    gaussian_shuffle_local_claim,
    reward_pairs,
    shuffle_local_claim,
)
from privbandits.auditing.client_path import client_path_spec
from privbandits.core.errors import UnknownNameError
from privbandits.core.spec import EnvSpec
from privbandits.envs import ConvexLossEnv, FiniteActionEnv, MultiArmedEnv, SyntheticEnv
from privbandits.privacy.audit import AUDITABLE as MECHANISMS
from privbandits.privacy.audit import AuditResult, AuditSpec, audit_spec
from privbandits.regression.audit import REGRESSION_AUDITS

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
    "client:shuffle-linucb-vec": ClientPathCase(
        "shuffle-linucb-vec",
        {"epsilon": 1.0},
        _synthetic,
        protocol=shuffle_linucb_vec_spec,
        description="Shuffle LinUCB, vector summation (Chowdhury & Zhou 2022): the first batch's "
        "Cheu et al. summation of (x x^T, y x) through client, shuffler and server, at the batch's "
        "shuffle claim (one message has no local claim)",
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
    "jdp-linucb-tree": tree_release_spec,
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
