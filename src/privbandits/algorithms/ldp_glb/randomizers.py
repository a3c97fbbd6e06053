"""User-side local randomizers psi of Han et al. (2021): OLS (eq. 3.3) and SGD (eq. 3.5).

Compiled, one user at a time; ``p`` is the kernel's parameter tuple (its fields ``C_B``,
``r_lo``, ``r_hi``, ``link`` and ``R`` are the declared bounds, link and clipping norm).  Each
randomizer clips the user's own data to the declared bounds
(deterministic preprocessing, Han et al. 2021, norm bounds of section 2, correction Han21-3), computes the statistic the server's estimator
consumes, and adds the privacy noise through :mod:`privbandits.privacy.samplers` (the samplers the
privacy audit checks): ``add_symmetric_gaussian`` + ``add_gaussian`` for OLS, ``l2_ball`` (which
clips the gradient to norm ``R``) for SGD.

References
----------
Han, Liang, Wang, Zhang (2021), section 3.1 (OLS mechanism, Prop. 3.1), section 3.2 and Lemma 2.2
(l2-ball mechanism of Duchi, Jordan & Wainwright 2018, Prop. 3.2).
"""

from __future__ import annotations

import math

import numba as nb

from privbandits.core.links import link_mu
from privbandits.privacy.samplers import (
    add_gaussian,
    add_symmetric_gaussian,
    clip_l2,
    clip_scalar,
    l2_ball,
)

__all__ = ["ols_noise_into", "ols_statistic", "sgd_gradient", "sgd_randomize"]


@nb.njit(cache=True, inline="always")
def ols_statistic(p, x, y, msg, m0, u0):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """The statistic of eq. (3.3) of the clipped data, written into the flat message ``msg``:
    ``M = x x^T`` (row-major at ``m0``) and ``u = y x`` (at ``u0``), with ``x`` clipped to norm
    ``p.C_B`` and ``y`` to ``[p.r_lo, p.r_hi]`` (Han et al. 2021, norm bounds of section 2).  ``x`` is not modified."""
    d = x.shape[0]
    u = msg[u0 : u0 + d]
    for i in range(d):
        u[i] = x[i]
    clip_l2(u, p.C_B)
    y = clip_scalar(y, p.r_lo, p.r_hi)
    for i in range(d):
        for j in range(d):
            msg[m0 + i * d + j] = u[i] * u[j]
    for i in range(d):
        u[i] *= y


@nb.njit(cache=True, inline="always")
def ols_noise_into(rng, s_W, s_u, msg, m0, u0, d):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``psi^OLS``'s noise on the message fields at ``m0`` (``M``, ``d x d``) and ``u0`` (``u``):
    ``M += W`` (symmetric, i.i.d. ``N(0, s_W^2)`` on and above the diagonal), then ``u += xi``,
    ``xi ~ N(0, s_u^2 I)`` (eq. 3.3).  Draw order: ``W`` row by row, then ``xi``."""
    add_symmetric_gaussian(rng, s_W, msg[m0 : m0 + d * d].reshape((d, d)))
    add_gaussian(rng, s_u, msg[u0 : u0 + d])


@nb.njit(cache=True, inline="always")
def sgd_gradient(p, x, y, theta, r, k, g):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Lines 1-2 of SGD_PRIVATIZE (Han et al. 2021, eq. 3.5-3.6): clip ``x`` to norm ``p.C_B`` and ``y`` to
    ``[p.r_lo, p.r_hi]``, then ``g = (mu(x^T theta[r, k]) - y) x`` with the residual clipped so that
    ``||g|| <= p.R`` (line 3's clip, applied on the residual).  ``x`` is not modified.

    The server chooses ``theta``: the residual ``mu(x^T theta) - y`` is unbounded over the public
    states (the identity link), may overflow (the Poisson link) or be NaN, so the device bounds it
    itself, ``|c| <= R / ||x||`` (a NaN becomes the bound): the gradient it privatizes has norm at
    most ``R`` whatever the server sends, which is the sensitivity the l2-ball mechanism accounts.
    """
    d = x.shape[0]
    s = 0.0
    for i in range(d):
        g[i] = x[i]
    clip_l2(g, p.C_B)
    for i in range(d):
        s += g[i] * g[i]
    y = clip_scalar(y, p.r_lo, p.r_hi)
    if s == 0.0:
        for i in range(d):
            g[i] = 0.0
        return
    z = 0.0
    for i in range(d):
        z += g[i] * theta[r, k, i]
    c = link_mu(p.link, z) - y
    cmax = p.R / math.sqrt(s)
    if not c <= cmax:  # also a NaN residual
        c = cmax
    elif c < -cmax:
        c = -cmax
    for i in range(d):
        g[i] *= c


@nb.njit(cache=True, inline="always")
def sgd_randomize(rng, p, x, y, theta, r, k, epsilon, radius, g, z):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``z = psi^SGD(x, y; theta[r, k]) = Psi_{eps,R}((mu(x^T theta) - y) x)`` (eq. 3.5, Han et al. 2021, eq. 3.5-3.6).

    The gradient of :func:`sgd_gradient` (into the scratch ``g``), privatized by the l2-ball
    mechanism at level ``epsilon`` (lines 3-4: it clips ``g`` to norm ``p.R``; the output has norm
    ``radius``).
    """
    sgd_gradient(p, x, y, theta, r, k, g)
    l2_ball(rng, g, epsilon, p.R, radius, z)
