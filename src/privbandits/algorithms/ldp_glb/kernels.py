"""Compiled per-round steps of LDP-OLS and LDP-SGD (Han et al. 2021, Algorithms 1 and 2).

The steps of a :class:`~privbandits.algorithms.kernel.LocalKernel`: the user's ``choose``,
``encode`` and ``randomize`` (they read the public state and the user's own data; ``randomize``
is ``encode`` followed by the noise, or for SGD the l2-ball mechanism on the same clipped
gradient) and the server's ``update`` (it reads the message only).  What the device declares
about its message (public-state space, noise, sensitivity) is in :mod:`.device`.

State (replication axis first; ``K_est = 1`` in the single-parameter setting, ``K`` otherwise):

* public ``(theta,)`` (single) or ``(theta, theta_warm)`` (multi), ``theta (R, K_est, d)``: the
  broadcast estimates ``theta_{t-1}``; ``theta_warm (R, K, d)``: the estimates frozen at the end
  of the warm-up (zeros before), used only for elimination;
* server, OLS: ``(S_M (R, K_est, d, d), S_u (R, K_est, d), A (R, d, d + 2))`` (``A``: solver
  scratch); SGD: ``(counts (R, K_est), S_M, S_u, A)`` (the OLS arrays only hold data with the OLS
  warm-up of the authors' code, correction Han21-25 in the documentation).

Messages (flat vectors, :class:`~privbandits.algorithms.kernel.MessageLayout`):

* OLS: ``M (d, d), u (d)`` (single) or ``M (K, d, d), u (K, d)`` (multi: one slot per arm; in
  the warm-up only the public arm's slot is filled, the others are zero);
* SGD: ``z (d)`` (single) or ``z (K, d)`` (multi), preceded by ``M (K, d, d), u (K, d)`` with the
  OLS warm-up.

``SGDParams.work`` is the user's working memory for the gradient (``d``, or ``dK`` for the joint
update): a per-call allocation costs more than the rest of the SGD client step, and the kernel
contract has no client-side scratch slot.  Its contents are meaningless between calls and no
server step reads it.

Round ``t`` is 0-based: the message of round ``t`` is the ``(t + 1)``-th, so the OLS shift is
``c_shift sqrt(t + 1 + offset)`` and the single-parameter SGD step ``eta0 / (t + 1 + t0)``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from privbandits.algorithms.ldp_glb.estimators import ols_accumulate, ols_solve, sgd_step, step_size
from privbandits.algorithms.ldp_glb.policy import choose_multi, choose_single, warmup_arm
from privbandits.algorithms.ldp_glb.randomizers import (
    ols_noise_into,
    ols_statistic,
    sgd_gradient,
    sgd_randomize,
)
from privbandits.privacy.samplers import l2_ball

__all__ = [
    "OLS_STEPS",
    "SGD_STEPS",
    "OLSParams",
    "SGDParams",
    "choose_multi",
    "choose_single",
    "randomize_ols_multi",
    "randomize_ols_single",
    "randomize_sgd_multi",
    "randomize_sgd_single",
    "update_ols_multi",
    "update_ols_single",
    "update_sgd_multi",
    "update_sgd_single",
]


class OLSParams(NamedTuple):
    """Resolved constants of an LDP-OLS kernel (from :meth:`LDPOLS.calibrate`)."""

    K: int
    d: int
    n_warmup: int  # K s0 (0 in the single-parameter setting)
    s0: int
    blocks: bool  # warm-up order "blocks" (else round-robin)
    h: float  # elimination threshold (inf = none)
    link: int
    C_B: float
    r_lo: float
    r_hi: float
    s_W: float  # std of W (main phase / Algorithm 1)
    s_u: float  # std of xi
    s_W_warm: float  # stds of the warm-up slot
    s_u_warm: float
    c_shift: float  # shift_scale * c_tilde
    offset: float  # shift(t) = c_shift sqrt(t + 1 + offset)
    bound: float  # the published estimates' norm bound (ESTIMATE_BOUND)


class SGDParams(NamedTuple):
    """Resolved constants of an LDP-SGD kernel (from :meth:`LDPSGD.calibrate`)."""

    K: int
    d: int
    n_warmup: int
    s0: int
    blocks: bool
    h: float
    link: int
    C_B: float
    r_lo: float
    r_hi: float
    R: float  # gradient clipping norm
    epsilon: float  # level of each l2-ball slot (main phase / Algorithm 1)
    radius: float  # its output norm
    epsilon_warm: float  # level and radius of the warm-up slot
    radius_warm: float
    joint: bool  # one l2-ball in dimension dK instead of K slots
    epsilon_joint: float  # its level (the run's epsilon) and radius
    radius_joint: float
    mean_joint: float  # E[Psi(G)] = mean_joint G: radius_joint over the unbiased radius in dK
    ols_warmup: bool  # the authors' OLS warm-up
    s_W_warm: float
    s_u_warm: float
    c_shift_warm: float
    offset_warm: float
    eta0: float
    t0: float
    inv_sqrt: bool
    ridge: float
    rho: float  # projection radius (ESTIMATE_BOUND = none)
    rho_ols: float  # norm bound of the OLS warm-up's estimates (ESTIMATE_BOUND)
    work: (
        np.ndarray
    )  # user-side scratch (gradient), never read by the server; see the module docstring


# -- message fields: offsets of slot k in the flat message ----------------------------------------
@nb.njit(cache=True, inline="always")
def _m0(d, k):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Offset of slot ``k`` of the ``M`` field (first field, ``K`` slots of ``d x d``)."""
    return k * d * d


@nb.njit(cache=True, inline="always")
def _u0(K, d, k):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Offset of slot ``k`` of the ``u`` field (after the ``K`` slots of ``M``)."""
    return K * d * d + k * d


@nb.njit(cache=True, inline="always")
def _zero(msg, start, n):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    for i in range(start, start + n):
        msg[i] = 0.0


@nb.njit(cache=True, inline="always")
def _freeze(theta, theta_warm, r):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Algorithm 2, line 7: ``Theta_warm = theta`` at the end of the warm-up."""
    for k in range(theta.shape[1]):
        for i in range(theta.shape[2]):
            theta_warm[r, k, i] = theta[r, k, i]


@nb.njit(cache=True, inline="always")
def _bound_estimate(theta, r, k, bound):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Project ``theta[r, k]`` onto the ball of radius ``bound`` (a non-finite entry becomes 0):
    the published estimate stays in the declared public-state space even when a noisy, nearly
    singular OLS system gives a wild solution (post-processing)."""
    d = theta.shape[2]
    s = 0.0
    for i in range(d):
        v = theta[r, k, i]
        if not math.isfinite(v):
            theta[r, k, i] = 0.0
            v = 0.0
        s += v * v
    if s > bound * bound:
        c = bound / math.sqrt(s)
        for i in range(d):
            theta[r, k, i] *= c


# -- LDP-OLS -------------------------------------------------------------------------------------
@nb.njit(cache=True)
def encode_ols_single(p, public, r, t, X, a, y, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 1, line 6 before the noise: ``(x x^T, r x)`` of the clipped pulled feature and reward."""
    ols_statistic(p, X[a], y, out, 0, p.d * p.d)


@nb.njit(cache=True)
def randomize_ols_single(p, public, r, t, X, a, y, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 1, line 6: ``(M, u) = psi^OLS(x_{t,a_t}, r_t) = (x x^T + W, r x + xi)``."""
    encode_ols_single(p, public, r, t, X, a, y, out)
    ols_noise_into(rng, p.s_W, p.s_u, out, 0, p.d * p.d, p.d)


@nb.njit(cache=True)
def update_ols_single(p, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 1, line 7 with OLS_UPDATE (Han et al. 2021, eq. 3.3-3.4): accumulate, solve with the shift."""
    theta = public[0]
    S_M, S_u, A = server
    ols_accumulate(S_M, S_u, r, 0, msg, 0, p.d * p.d)
    ols_solve(S_M, S_u, theta, A, r, 0, p.c_shift * math.sqrt(t + 1.0 + p.offset))
    _bound_estimate(theta, r, 0, p.bound)


@nb.njit(cache=True)
def encode_ols_multi(p, public, r, t, X, a, y, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 2, lines 5 and 13-14 before the noise: the clipped statistics ``(x x^T, r x)`` in
    the pulled arm's slot, zero in every other slot (the synthetic input ``(0, 0)``)."""
    K, d = p.K, p.d
    for k in range(K):
        m0, u0 = _m0(d, k), _u0(K, d, k)
        if k == a:
            ols_statistic(p, X, y, out, m0, u0)
        else:
            _zero(out, m0, d * d)
            _zero(out, u0, d)


@nb.njit(cache=True)
def randomize_ols_multi(p, public, r, t, X, a, y, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 2, line 5 (warm-up: only the public arm's slot carries a message) or lines 13-14:
    ``psi(X_t, r_t)`` in the pulled arm's slot, the synthetic ``psi(0, 0) = (W, xi)`` in every other
    slot, noised in arm order."""
    K, d = p.K, p.d
    encode_ols_multi(p, public, r, t, X, a, y, out)
    if t < p.n_warmup:
        ols_noise_into(rng, p.s_W_warm, p.s_u_warm, out, _m0(d, a), _u0(K, d, a), d)
    else:
        for k in range(K):
            ols_noise_into(rng, p.s_W, p.s_u, out, _m0(d, k), _u0(K, d, k), d)


@nb.njit(cache=True)
def update_ols_multi(p, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 2, line 6 (warm-up: the public arm's statistics) or line 15 (every arm's slot);
    every arm is re-solved with the shift of the global round (correction Han21-27 in the documentation); line 7 freezes."""
    theta, theta_warm = public[0], public[1]
    S_M, S_u, A = server
    K, d = p.K, p.d
    if t < p.n_warmup:
        arm = warmup_arm(t, K, p.s0, p.blocks)
        ols_accumulate(S_M, S_u, r, arm, msg, _m0(d, arm), _u0(K, d, arm))
    else:
        for k in range(K):
            ols_accumulate(S_M, S_u, r, k, msg, _m0(d, k), _u0(K, d, k))
    shift = p.c_shift * math.sqrt(t + 1.0 + p.offset)
    for k in range(K):
        ols_solve(S_M, S_u, theta, A, r, k, shift)
        _bound_estimate(theta, r, k, p.bound)
    if t + 1 == p.n_warmup:
        _freeze(theta, theta_warm, r)


# -- LDP-SGD -------------------------------------------------------------------------------------
@nb.njit(cache=True)
def encode_sgd_single(p, public, r, t, X, a, y, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 1, line 6 before the noise: the clipped gradient ``(mu(x^T theta_{t-1}) - r) x``,
    the mean of the l2-ball output."""
    sgd_gradient(p, X[a], y, public[0], r, 0, out)


@nb.njit(cache=True)
def randomize_sgd_single(p, public, r, t, X, a, y, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 1, line 6: ``z = Psi_{eps,R}((mu(x^T theta_{t-1}) - r) x)``, ``x = x_{t,a_t}``."""
    sgd_randomize(rng, p, X[a], y, public[0], r, 0, p.epsilon, p.radius, p.work, out)


@nb.njit(cache=True)
def update_sgd_single(p, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 1, line 7 with SGD_UPDATE: ``theta_t = theta_{t-1} - eta_t z``."""
    eta = step_size(t + 1.0, p.eta0, p.t0, p.inv_sqrt, 1.0)
    sgd_step(public[0], r, 0, msg, 0, eta, p.ridge, p.rho)


@nb.njit(cache=True)
def encode_sgd_multi(p, public, r, t, X, a, y, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 2 with the SGD pair before the noise: the mean of :func:`randomize_sgd_multi`.

    Warm-up: the public arm's slot holds its clipped gradient (or, with the OLS warm-up, its OLS
    statistics); main phase: the pulled arm's slot holds its clipped gradient and every other slot
    0 (the mean of the synthetic ``Psi(0)``), or (``joint``) ``mean_joint (e_{a_t} kron g)``.
    """
    K, d = p.K, p.d
    z0 = _u0(K, d, K) if p.ols_warmup else 0
    _zero(out, 0, out.shape[0])
    if t < p.n_warmup and p.ols_warmup:
        ols_statistic(p, X, y, out, _m0(d, a), _u0(K, d, a))
        return
    g = out[z0 + a * d : z0 + (a + 1) * d]
    sgd_gradient(p, X, y, public[0], r, a, g)
    if t >= p.n_warmup and p.joint:
        for i in range(d):
            g[i] *= p.mean_joint


@nb.njit(cache=True)
def randomize_sgd_multi(p, public, r, t, X, a, y, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 2 with the SGD pair (and the authors' variants, Han et al. 2021, Props. 4.1-4.2, corrections Han21-5 and Han21-25).

    Warm-up (line 5): the public arm's slot only: ``Psi_{eps_warm,R}`` of its gradient, or the
    OLS message with the OLS warm-up.  Main phase (lines 13-14): per-arm slots, ``psi(X_t, r_t;
    theta_a)`` for the pulled arm and ``psi(0, 0; theta_i) = Psi(0)`` for the others, in arm
    order; or (``joint``) one l2-ball in dimension ``dK`` of the block gradient ``e_{a_t} kron g``.
    """
    K, d = p.K, p.d
    theta = public[0]
    z0 = _u0(K, d, K) if p.ols_warmup else 0  # offset of the z field
    _zero(out, 0, out.shape[0])  # unused slots and fields are zero
    g = p.work[:d]
    if t < p.n_warmup:
        if p.ols_warmup:
            ols_statistic(p, X, y, out, _m0(d, a), _u0(K, d, a))
            ols_noise_into(rng, p.s_W_warm, p.s_u_warm, out, _m0(d, a), _u0(K, d, a), d)
        else:
            z = out[z0 + a * d : z0 + (a + 1) * d]
            sgd_randomize(rng, p, X, y, theta, r, a, p.epsilon_warm, p.radius_warm, g, z)
    elif p.joint:
        G = p.work
        _zero(G, 0, K * d)
        sgd_gradient(p, X, y, theta, r, a, G[a * d : (a + 1) * d])
        l2_ball(rng, G, p.epsilon_joint, p.R, p.radius_joint, out[z0 : z0 + K * d])
    else:
        for k in range(K):
            z = out[z0 + k * d : z0 + (k + 1) * d]
            if k == a:
                sgd_randomize(rng, p, X, y, theta, r, k, p.epsilon, p.radius, g, z)
            else:  # synthetic update: psi(0, 0; theta_k) = Psi((mu(0) - 0) 0) = Psi(0)
                _zero(g, 0, d)
                l2_ball(rng, g, p.epsilon, p.R, p.radius, z)


@nb.njit(cache=True)
def update_sgd_multi(p, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 2, line 6 (warm-up: the public arm only; step ``eta0 / (n_a + t0)``) or line 15
    (every arm, step ``eta0 K / (n_i + t0)``, Han et al. 2021, Algorithm 2); line 7 freezes ``Theta_warm``.  With the
    OLS warm-up every arm is re-solved each warm-up round and SGD starts from those estimates."""
    theta, theta_warm = public[0], public[1]
    counts, S_M, S_u, A = server
    K, d = p.K, p.d
    z0 = _u0(K, d, K) if p.ols_warmup else 0
    if t < p.n_warmup:
        arm = warmup_arm(t, K, p.s0, p.blocks)
        counts[r, arm] += 1.0
        if p.ols_warmup:
            ols_accumulate(S_M, S_u, r, arm, msg, _m0(d, arm), _u0(K, d, arm))
            shift = p.c_shift_warm * math.sqrt(t + 1.0 + p.offset_warm)
            for k in range(K):
                ols_solve(S_M, S_u, theta, A, r, k, shift)
                _bound_estimate(theta, r, k, p.rho_ols)
        else:
            eta = step_size(counts[r, arm], p.eta0, p.t0, p.inv_sqrt, 1.0)
            sgd_step(theta, r, arm, msg, z0 + arm * d, eta, p.ridge, p.rho)
    else:
        for k in range(K):
            counts[r, k] += 1.0
            eta = step_size(counts[r, k], p.eta0, p.t0, p.inv_sqrt, float(K))
            sgd_step(theta, r, k, msg, z0 + k * d, eta, p.ridge, p.rho)
    if t + 1 == p.n_warmup:
        _freeze(theta, theta_warm, r)


#: Each estimator's steps per setting, ``(encode, randomize, update)``: the user's message before
#: noise, the randomizer and the server's update (the choice is the shared greedy of
#: :mod:`.policy`).
OLS_STEPS = {
    "single": (encode_ols_single, randomize_ols_single, update_ols_single),
    "multi": (encode_ols_multi, randomize_ols_multi, update_ols_multi),
}
SGD_STEPS = {
    "single": (encode_sgd_single, randomize_sgd_single, update_sgd_single),
    "multi": (encode_sgd_multi, randomize_sgd_multi, update_sgd_multi),
}
