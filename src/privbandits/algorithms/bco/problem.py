"""What a bandit-convex-optimization algorithm reads from the problem, its random directions, and
what its device accepts.

In the local model the query points are chosen by an untrusted server (the documentation's
Concepts: trust models, threat model): :func:`query_points_field` declares the points a device
accepts (finite, inside the decision set, one row per query point), and :func:`check_losses` the
shape of the user's own losses, before either reaches compiled code.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from privbandits.core.convex import ConvexSpec, Domain
from privbandits.core.errors import DataBoundError, ValidationError
from privbandits.core.public_space import PublicField
from privbandits.core.spec import EnvSpec
from privbandits.envs.contexts import unit_sphere

__all__ = ["DOMAIN_RTOL", "check_losses", "convex_spec", "directions", "query_points_field", "users_of"]

#: Relative slack of the domain check (float rounding puts a feasible point at ``size (1 + 2e-16)``).
DOMAIN_RTOL = 1e-9


def convex_spec(name: str, spec: EnvSpec) -> ConvexSpec:
    """``spec`` as a :class:`ConvexSpec`, or a clear error naming the algorithm."""
    if not isinstance(spec, ConvexSpec):
        raise ValidationError(f"{name} is a bandit-convex-optimization algorithm (continuous actions): it runs on a "
                              f"loss environment (ConvexLossEnv, config kind 'convex'), got a {type(spec).__name__} "
                              "problem")
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


def users_of(contexts: object, public: object, key: str) -> int:
    """The number of users ``R`` a device serves: the leading length of its own ``contexts`` (the
    loss parameters on a loss environment), else of the broadcast field ``key`` (validation of the
    public state then checks the rest of its shape)."""
    own = np.asarray(contexts) if contexts is not None else None
    if own is not None and own.ndim >= 1:
        return int(own.shape[0])
    field = public.get(key) if isinstance(public, Mapping) else None
    arr = np.asarray(field) if field is not None else None
    return int(arr.shape[0]) if arr is not None and arr.ndim >= 1 else 0


def check_losses(name: str, losses: object, R: int | None, k: int) -> np.ndarray:
    """The user's own losses at its ``k`` query points as a contiguous float64 ``(R, k)`` array.

    ``(R,)`` is accepted for ``k = 1``.  ``R = None`` takes the number of users from ``losses``.

    Raises
    ------
    ValidationError
        Wrong shape or dtype (naming what is expected).
    DataBoundError
        NaN or infinite losses.
    """
    v = np.asarray(losses)
    if v.dtype.kind not in "fiu" or v.dtype.kind == "b":
        raise ValidationError(f"{name}: a user's losses must be real numbers, got dtype {v.dtype}")
    if k == 1 and v.ndim == 1:
        v = v[:, None]
    n = v.shape[0] if v.ndim >= 1 else -1
    if v.ndim != 2 or v.shape[1] != k or (R is not None and n != R):
        want = f"({'R' if R is None else R}, {k})"
        raise ValidationError(f"{name}: the losses at the {k} query point(s) must have shape {want}: one row per "
                              f"user, one loss per point; got shape {v.shape}")
    v = np.ascontiguousarray(v, dtype=np.float64)
    if not np.isfinite(v).all():
        raise DataBoundError(f"{name}: a user's losses at the query points must be finite "
                             f"({int(v.size - np.count_nonzero(np.isfinite(v)))} NaN or infinite values)")
    return v
