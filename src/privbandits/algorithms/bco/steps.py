"""The compiled rounds of the bandit-convex-optimization algorithms (the compiled driver's steps,
:mod:`privbandits.algorithms.convex_kernel`).

* FKM (Flaxman, Kalai & McMahan 2005; :mod:`privbandits.algorithms.bco.fkm`): play
  ``y + rho u``, step ``y <- Pi_{(1 - xi) X}(y - eta (d / rho) m u)``.
* Algorithm 4 of Zheng et al. (2020) (:mod:`privbandits.algorithms.bco.two_point`): play
  ``x +- rho u``, step ``x <- Pi_{(1 - xi) X}(x - eta_t (d / (2 rho)) D u)``.
* LDP-TwoPoint (Zheng et al. 2020, Algorithm 2; :mod:`privbandits.algorithms.bco.ldp_two_point`):
  Algorithm 4 on the device's privatized differences (the device's math:
  :mod:`privbandits.algorithms.bco.privatizer`).

LDP-OnePoint over FKM calls FKM's steps (:mod:`privbandits.algorithms.ldp_onepoint.steps`).

Each replication's direction ``u`` is drawn as :func:`~privbandits.algorithms.bco.problem.directions`
draws it (``d`` standard normals, normalized), and every arithmetic step is written in the order of
the numpy roles, so both drivers give the same trajectory.  Nothing here allocates
(``allocates = False``).

Parameter tuples (built by :func:`fkm_params` and :func:`two_point_params`): FKM ``(d, rho, xi, eta,
box, size)``; Algorithm 4 ``(d, rho, xi, eta, mu, eta_scale, box, size)`` with ``mu = 0`` for the
constant step ``eta``.
"""

from __future__ import annotations

import math
from typing import Any

import numba as nb
import numpy as np

from privbandits.algorithms.bco.privatizer import difference_noise, encode_difference, query_gap
from privbandits.core.convex import Domain

__all__ = [
    "draw_direction",
    "fkm_params",
    "fkm_propose",
    "fkm_query",
    "fkm_step",
    "fkm_update",
    "gradient_step",
    "ldp_two_point_publish",
    "ldp_two_point_randomize",
    "ldp_two_point_update",
    "perturbed_points",
    "project_row",
    "two_point_params",
    "two_point_propose",
    "two_point_update",
]


def _domain(domain: Domain) -> tuple[bool, float]:
    return domain.kind == "box", float(domain.size)


def fkm_params(d: int, rho: float, xi: float, eta: float, domain: Domain) -> tuple[Any, ...]:
    """FKM's parameter tuple."""
    return (float(d), float(rho), float(xi), float(eta), *_domain(domain))


def two_point_params(d: int, consts: Any, domain: Domain) -> tuple[Any, ...]:
    """Algorithm 4's parameter tuple from its resolved constants
    (:class:`~privbandits.algorithms.bco.two_point.TwoPointConstants`)."""
    eta = 0.0 if consts.eta is None else float(consts.eta)
    mu = 0.0 if consts.mu is None else float(consts.mu)
    rest = (float(consts.eta_scale), *_domain(domain))
    return (float(d), float(consts.rho), float(consts.xi), eta, mu, *rest)


@nb.njit(cache=True)
def draw_direction(rng: np.random.Generator, u: np.ndarray) -> None:  # pragma: no cover - compiled
    """``u = z / ||z||``, ``z ~ N(0, I_d)``: one uniform unit vector, drawn as
    :func:`~privbandits.envs.contexts.unit_sphere` draws each row."""
    s = 0.0
    for j in range(u.shape[0]):
        v = rng.standard_normal()
        u[j] = v
        s += v * v
    c = 1.0 / math.sqrt(s) if s > 0.0 else 0.0
    for j in range(u.shape[0]):
        u[j] = u[j] * c


@nb.njit(cache=True)
def project_row(x: np.ndarray, box: bool, s: float) -> None:  # pragma: no cover - compiled
    """``x <- Pi(x)`` onto the box ``[-s, s]^d`` or the ball of radius ``s``
    (:meth:`~privbandits.core.convex.Domain.project`)."""
    if box:
        for j in range(x.shape[0]):
            x[j] = min(max(x[j], -s), s)
        return
    n = 0.0
    for j in range(x.shape[0]):
        n += x[j] * x[j]
    f = min(1.0, s / max(math.sqrt(n), 1e-300))
    for j in range(x.shape[0]):
        x[j] = x[j] * f


@nb.njit(cache=True)
def perturbed_points(x, u, rho, rng, points):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Draw the direction ``u`` and write ``x + rho u`` into ``points[0]`` (and ``x - rho u`` into
    ``points[1]`` when ``points`` has two rows): the query points of FKM and of Algorithm 4."""
    draw_direction(rng, u)
    two = points.shape[0] == 2
    for j in range(x.shape[0]):
        points[0, j] = x[j] + rho * u[j]
        if two:
            points[1, j] = x[j] - rho * u[j]


@nb.njit(cache=True)
def gradient_step(x, u, eta, c, box, s):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``x <- Pi(x - eta (c u))`` onto the box or ball of size ``s`` (``c u``: the one- or two-point
    gradient estimate)."""
    for j in range(x.shape[0]):
        x[j] = x[j] - eta * (c * u[j])
    project_row(x, box, s)


# -- FKM ---------------------------------------------------------------------------------------
@nb.njit(cache=True)
def fkm_query(params, y, u, rng, points):  # type: ignore[no-untyped-def]  # pragma: no cover
    """FKM's query point of one replication: draw ``u``, write ``y + rho u`` into ``points[0]``."""
    perturbed_points(y, u, params[1], rng, points)


@nb.njit(cache=True)
def fkm_step(params, y, u, m):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """FKM's step of one replication with the (possibly privatized) loss ``m``."""
    d, rho, xi, eta, box, size = params
    gradient_step(y, u, eta, (d / rho) * m, box, (1.0 - xi) * size)


@nb.njit(cache=True)
def fkm_propose(params, state, r, t, rng, points):  # type: ignore[no-untyped-def]  # pragma: no cover
    """FKM's query point ``y + rho u`` (``state = (y, u)``, each ``(R, d)``)."""
    fkm_query(params, state[0][r], state[1][r], rng, points)


@nb.njit(cache=True)
def fkm_update(params, state, r, t, points, losses, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    """FKM's step with the loss ``losses[0]`` observed at the query point."""
    fkm_step(params, state[0][r], state[1][r], losses[0])


# -- Algorithm 4 -------------------------------------------------------------------------------
@nb.njit(cache=True)
def _two_point_query(params, x, u, rng, points):  # type: ignore[no-untyped-def]  # pragma: no cover
    perturbed_points(x, u, params[1], rng, points)


@nb.njit(cache=True)
def _two_point_step(params, x, u, t, D):  # type: ignore[no-untyped-def]  # pragma: no cover
    d, rho, xi, eta, mu, eta_scale, box, size = params
    if mu > 0.0:
        eta = eta_scale / (mu * (t + 1))
    gradient_step(x, u, eta, (d / (2.0 * rho)) * D, box, (1.0 - xi) * size)


@nb.njit(cache=True)
def two_point_propose(params, state, r, t, rng, points):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 4's query points ``x +- rho u`` (``state = (x, u)``, each ``(R, d)``)."""
    _two_point_query(params, state[0][r], state[1][r], rng, points)


@nb.njit(cache=True)
def two_point_update(params, state, r, t, points, losses, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 4's step with the difference of the two observed losses."""
    _two_point_step(params, state[0][r], state[1][r], t, losses[0] - losses[1])


# -- LDP-TwoPoint ------------------------------------------------------------------------------
# params = (two-point params, clip_per_gap, clip, scale_per_gap, laplace, noise work (d,))
@nb.njit(cache=True)
def ldp_two_point_publish(params, public, server, r, t, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The server's query points of replication ``r`` (``server = (x, u)``)."""
    _two_point_query(params[0], server[0][r], server[1][r], rng, public[0][r])


@nb.njit(cache=True)
def ldp_two_point_randomize(params, public, r, t, losses, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The device: its loss difference clipped to ``G ||x_1 - x_2||`` plus noise scaled by the gap."""
    _, c, clip, s, laplace, noise = params
    points = public[0][r]
    g = query_gap(points)
    out[0] = encode_difference(losses[0], losses[1], g, c, clip)
    out[0] += difference_noise(rng, points, g, s, laplace, noise)


@nb.njit(cache=True)
def ldp_two_point_update(params, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 4's step with the privatized difference."""
    _two_point_step(params[0], server[0][r], server[1][r], t, msg[0])
