"""What a bandit-convex-optimization algorithm reads from the problem, its random directions, and
what its device accepts.

In the local model the query points are chosen by an untrusted server (the documentation's
Concepts: trust models, threat model): :func:`query_points_field` declares the points a device
accepts (finite, inside the decision set, one row per query point), and :func:`check_losses` the
shape of the user's own losses, before either reaches compiled code.
"""

from __future__ import annotations

import numpy as np

from privbandits.core.convex import ConvexSpec, Domain
from privbandits.core.errors import DataBoundError, ValidationError
from privbandits.core.public_space import PublicField
from privbandits.core.spec import EnvSpec
from privbandits.envs.contexts import unit_sphere

__all__ = [
    "DOMAIN_RTOL",
    "check_loss_parameters",
    "check_losses",
    "check_points",
    "convex_spec",
    "directions",
    "query_points_field",
]

#: Relative slack of the domain check (float rounding puts a feasible point at ``size (1 + 2e-16)``).
DOMAIN_RTOL = 1e-9


def convex_spec(name: str, spec: EnvSpec) -> ConvexSpec:
    """``spec`` as a :class:`ConvexSpec`, or a clear error naming the algorithm."""
    if not isinstance(spec, ConvexSpec):
        raise ValidationError(
            f"{name} is a bandit-convex-optimization algorithm (continuous actions): it runs on a "
            f"loss environment (ConvexLossEnv, config kind 'convex'), got a {type(spec).__name__} "
            "problem"
        )
    return spec


def directions(rng: np.random.Generator, R: int, d: int) -> np.ndarray:
    """``u_t``: one uniform unit vector per replication, ``(R, d)`` (``z / ||z||``, ``z ~ N(0, I)``)."""
    return unit_sphere(rng, (R,), d)


def query_points_field(domain: Domain, k: int, name: str = "points") -> PublicField:
    """The public field of ``k`` query points per user, ``(R, k, d)``, each in the decision set.

    A ball of radius ``s`` bounds the l2 norm of every point, a box ``[-s, s]^d`` every entry (up to
    the relative :data:`DOMAIN_RTOL`); the values must be finite.  Nothing else is assumed of the
    points: in particular the gap between two query points may be anything the domain allows,
    zero included, and the device's clip and noise follow it.
    """
    if domain.kind == "ball":
        return PublicField(name, ("R", k, "d"), norm=domain.size)
    s = domain.size * (1.0 + DOMAIN_RTOL)
    return PublicField(name, ("R", k, "d"), low=-s, high=s)


def _real(name: str, what: str, value: object) -> np.ndarray:
    v = np.asarray(value)
    if v.dtype.kind not in "fiu":
        raise ValidationError(f"{name}: {what} must be real numbers, got dtype {v.dtype}")
    return v


def check_loss_parameters(name: str, contexts: object, R: int | None, p: int = 0) -> np.ndarray:
    """The users' loss parameters (the "contexts" of a loss environment) as a contiguous float64
    ``(R, p)`` array: they stay on the device (or with a trusted curator) and are never read by the
    algorithms, but a malformed array is refused like any other input.  ``p`` is the problem's
    declared width (:attr:`~privbandits.core.convex.ConvexSpec.param_dim`; 0: any ``p >= 1``).

    Raises
    ------
    ValidationError
        Wrong shape or dtype.
    DataBoundError
        NaN or infinite values.
    """
    X = _real(name, "the users' loss parameters", contexts)
    width_ok = X.ndim == 2 and (X.shape[1] == p if p > 0 else X.shape[1] >= 1)
    if not width_ok or (R is not None and X.shape[0] != R):
        want = f"({'R' if R is None else R}, {p if p > 0 else 'p >= 1'})"
        raise ValidationError(
            f"{name}: the users' loss parameters must have shape {want}, got shape {X.shape}"
        )
    X = np.ascontiguousarray(X, dtype=np.float64)
    if not np.isfinite(X).all():
        raise DataBoundError(f"{name}: the users' loss parameters contain NaN or infinite values")
    return X


def check_points(name: str, points: object, R: int, k: int, domain: Domain) -> np.ndarray:
    """Query points ``(R, k, d)`` a user played (or a curator is told were played) as a contiguous
    float64 array of finite points of the decision set.

    Raises
    ------
    ValidationError
        Wrong shape or dtype, non-finite values, a point outside the decision set.
    """
    P = _real(name, "the query points", points)
    if P.shape != (R, k, domain.d):
        raise ValidationError(
            f"{name}: the query points must have shape (R={R}, {k}, d={domain.d}), got shape "
            f"{P.shape}"
        )
    P = np.ascontiguousarray(P, dtype=np.float64)
    if not np.isfinite(P).all():
        raise ValidationError(f"{name}: the query points contain NaN or infinite values")
    if not np.all(domain.contains(P, rtol=DOMAIN_RTOL)):
        raise ValidationError(
            f"{name}: a query point lies outside the decision set ({domain.kind} of size "
            f"{domain.size:g})"
        )
    return P


def check_losses(name: str, losses: object, R: int | None, k: int) -> np.ndarray:
    """The user's own losses at its ``k`` query points as a contiguous float64 ``(R, k)`` array.

    ``R = None`` takes the number of users from ``losses``.

    Raises
    ------
    ValidationError
        Wrong shape or dtype (naming what is expected).
    DataBoundError
        NaN or infinite losses.
    """
    v = _real(name, "a user's losses", losses)
    n = v.shape[0] if v.ndim >= 1 else -1
    if v.ndim != 2 or v.shape[1] != k or (R is not None and n != R):
        want = f"({'R' if R is None else R}, {k})"
        raise ValidationError(
            f"{name}: the losses at the {k} query point(s) must have shape {want}: one row per "
            f"user, one loss per point; got shape {v.shape}"
        )
    v = np.ascontiguousarray(v, dtype=np.float64)
    if not np.isfinite(v).all():
        raise DataBoundError(
            f"{name}: a user's losses at the query points must be finite "
            f"({int(v.size - np.count_nonzero(np.isfinite(v)))} NaN or infinite values)"
        )
    return v
