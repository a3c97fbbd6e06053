"""The compiled rounds of LDP-OnePoint (Zheng et al. 2020, Algorithm 1), the device's math from
:mod:`privbandits.algorithms.ldp_onepoint.privatizer`:

* around FKM on a loss environment (Corollary 4's black box): FKM's compiled steps
  (:mod:`privbandits.algorithms.bco.steps`) on the device's privatized losses (the compiled
  driver's steps of :mod:`privbandits.algorithms.convex_kernel`);
* around a non-private curator with a compiled kernel on arms: :func:`onepoint_value`, the device
  step of a :class:`~privbandits.algorithms.kernel.ProposalKernel`.
"""

from __future__ import annotations

import numba as nb

from privbandits.algorithms.bco.steps import fkm_query, fkm_step
from privbandits.algorithms.ldp_onepoint.privatizer import add_value_noise, encode_values

__all__ = [
    "onepoint_fkm_publish",
    "onepoint_fkm_randomize",
    "onepoint_fkm_update",
    "onepoint_value",
]


# params = (FKM params, lo, hi, clip, scale, laplace)
@nb.njit(cache=True)
def onepoint_fkm_publish(params, public, server, r, t, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The black box's query point of replication ``r`` (``server = (y, u)``, FKM's state)."""
    fkm_query(params[0], server[0][r], server[1][r], rng, public[0][r])


@nb.njit(cache=True)
def onepoint_fkm_randomize(params, public, r, t, losses, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The device: its loss clipped into ``[lo, hi]`` plus noise of a fixed scale."""
    _, lo, hi, clip, scale, laplace = params
    encode_values(losses, lo, hi, clip, out)
    add_value_noise(rng, scale, laplace, out)


@nb.njit(cache=True)
def onepoint_fkm_update(params, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover
    """FKM's step with the privatized loss."""
    fkm_step(params[0], server[0][r], server[1][r], msg[0])


@nb.njit(cache=True)
def onepoint_value(params, y, rng, msg):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The device of a user with reward ``y``: ``msg[0] = clip(y, lo, hi) + Z``
    (``params = (lo, hi, clip, scale, laplace)``)."""
    lo, hi, clip, scale, laplace = params
    msg[0] = y
    encode_values(msg, lo, hi, clip, msg)
    add_value_noise(rng, scale, laplace, msg)
