"""Compiled rounds of SquareCB (``squarecb``, ``squarecb-jdp``, ``squarecb-ldp``) for the compiled driver.

The same rounds as the numpy roles of :mod:`privbandits.algorithms.chen.squarecb` and
:mod:`privbandits.algorithms.chen.squarecb_ldp`, written as the steps of a
:class:`~privbandits.algorithms.kernel.CuratorKernel` (trusted curator: ``squarecb``,
``squarecb-jdp``) or a :class:`~privbandits.algorithms.kernel.LocalKernel` (``squarecb-ldp``):

* ``select`` / ``choose``: inverse-gap weighting on ``clip(<phi(x, a), theta_hat>, -1, 1)`` at one
  ``policy`` uniform (:func:`igw_choose`, the step the numpy roles call too);
* curator ``update``: store the chosen feature and the clipped reward; at the end of an epoch fit
  Algorithm 5 on the epoch's data (the noiseless batched projected pass, then output perturbation
  ``N(0, (8 eta sigma / N)^2 I)`` from the ``server`` stream in the numpy oracle's order) and set
  the epoch's IGW rate;
* local ``encode`` / ``randomize``: the clipped gradient ``2 (clip(<phi, theta_sgd>) - clip(y)) phi``
  (norm 4) in a gradient slot, plus ``N(0, (8 sigma)^2 I)`` (Algorithm 6, line 3);
* local ``update``: the untrusted server's batch sums and step ``theta_k = theta_{k-1} - eta
  mean(g)``, the release ``(theta_hat, gamma)`` at the end of an epoch, from the message only.

The epoch schedules (start, end, ``K``, ``eta``, ``N``, noise std, next ``gamma``) depend on the
horizon only; they are computed once in Python with the numpy roles' arithmetic.

References
----------
Foster & Rakhlin (2020), ICML (SquareCB, inverse-gap weighting); Simchi-Levi & Xu (2020) (FALCON
epochs); Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Section 6 (Algorithms 5, 6).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba as nb
import numpy as np

from privbandits.algorithms.kernel import CuratorKernel, LocalKernel, MessageLayout
from privbandits.privacy.samplers import CLIP_RTOL, add_gaussian
from privbandits.regression import ImproperBatchSGD
from privbandits.regression.dimfree import SQ_GRADIENT_NORM, SQ_GRADIENT_SENSITIVITY

__all__ = [
    "build_squarecb_kernel",
    "build_squarecb_ldp_kernel",
    "curator_table",
    "igw_choose",
    "igw_select",
    "ldp_table",
]

#: Slot codes of the local schedule (as :mod:`privbandits.algorithms.chen.squarecb_ldp`).
IDLE, GRADIENT = 0, 2
#: Columns of the epoch tables.
S_START, S_END, S_K, S_ETA, S_N, S_STD, S_GAMMA = range(7)


def curator_table(
    orc: ImproperBatchSGD, ends: np.ndarray, gamma_of: Callable[[int], float]
) -> np.ndarray:
    """One row per epoch of a curator SquareCB: start, end, ``K``, ``eta``, ``N``, the output
    perturbation's std ``sigma 8 eta / N`` and the IGW rate ``gamma`` set at the epoch's end."""
    rows, start = [], 0
    for end in ends:
        n = int(end - start)
        K, eta = orc.steps(n)
        N = n // K
        std = orc.sigma * SQ_GRADIENT_SENSITIVITY * eta / N if orc.sigma > 0.0 else 0.0
        rows.append([start, end, K, eta, N, std, gamma_of(n)])
        start = int(end)
    return np.array(rows, dtype=float)


def ldp_table(
    orc: ImproperBatchSGD, ends: np.ndarray, gamma_of: Callable[[int], float]
) -> np.ndarray:
    """One row per epoch of ``squarecb-ldp``: start, end, ``K``, ``eta``, ``N``, the message std
    ``8 sigma`` and the IGW rate ``gamma`` released at the epoch's end."""
    rows, start = [], 0
    for end in ends:
        n = int(end - start)
        K, eta = orc.steps(n)
        rows.append([start, end, K, eta, n // K, orc.sigma * SQ_GRADIENT_SENSITIVITY, gamma_of(n)])
        start = int(end)
    return np.array(rows, dtype=float)


# -- inverse-gap weighting ------------------------------------------------------------------------
@nb.njit(cache=True)
def igw_choose(
    X: np.ndarray, theta: np.ndarray, gamma: float, u: float, s: np.ndarray, p: np.ndarray
) -> int:  # pragma: no cover - compiled
    """The action of inverse-gap weighting on the scores ``clip(X theta, -1, 1)`` at the uniform
    ``u`` (inverse CDF; ties to the lowest index), as
    :func:`~privbandits.algorithms.chen.squarecb.igw_sample`; ``s``, ``p``: scratch of at least
    ``A`` entries (the scores, the probabilities), so that the step allocates nothing."""
    A, d = X.shape
    best = 0
    for a in range(A):
        z = 0.0
        for i in range(d):
            z += X[a, i] * theta[i]
        s[a] = min(max(z, -1.0), 1.0)
        if s[a] > s[best]:
            best = a
    rest = 0.0
    for a in range(A):
        if a != best:
            p[a] = 1.0 / (A + gamma * (s[best] - s[a]))
            rest += p[a]
    p[best] = 1.0 - rest
    total = 0.0
    for a in range(A):
        total += p[a]
    target = u * total
    c = 0.0
    for a in range(A):
        c += p[a]
        if c > target:
            return a
    return A - 1


@nb.njit(cache=True)
def igw_choose_rows(
    X: np.ndarray, theta: np.ndarray, gamma: np.ndarray, u: np.ndarray, out: np.ndarray
) -> None:  # pragma: no cover - compiled
    """:func:`igw_choose` for every replication ``r`` (``X (R, A, d)``, ``theta (R, d)``)."""
    A = X.shape[1]
    s, p = np.empty(A), np.empty(A)
    for r in range(out.shape[0]):
        out[r] = igw_choose(X[r], theta[r], gamma[r], u[r], s, p)


@nb.njit(cache=True)
def _unit_row(phi: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``phi`` scaled to norm 1 when its norm exceeds ``1 + CLIP_RTOL`` (the oracle's bound policy)."""
    sq = 0.0
    for i in range(phi.shape[0]):
        sq += phi[i] * phi[i]
    nrm = math.sqrt(sq)
    if nrm > 1.0 + CLIP_RTOL:
        for i in range(phi.shape[0]):
            out[i] = phi[i] / nrm
    else:
        for i in range(phi.shape[0]):
            out[i] = phi[i]


@nb.njit(cache=True)
def igw_select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    """IGW on replication ``r``'s estimate and rate (``state[2]``, ``state[3]``: the curator's
    current ones, or the released ``(theta_hat, gamma)`` of the local public state; one
    ``policy`` uniform; ``params[1]``: the scratch ``(R, 2, A)`` of :func:`igw_choose`)."""
    theta, gamma, scratch = state[2], state[3], params[1]
    u = rng.random()
    return igw_choose(X, theta[r], gamma[r], u, scratch[r, 0], scratch[r, 1])


# -- trusted curator: squarecb, squarecb-jdp ------------------------------------------------------
@nb.njit(cache=True)
def curator_update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Store the round's data; at the end of an epoch fit Algorithm 5 on the epoch's data."""
    table = params[0]
    Xb, yb, theta, gamma, epoch, rounds, grad = state
    e = epoch[r]
    row = table[e]
    i = t - int(row[S_START])
    _unit_row(X[a], Xb[r, i])
    yb[r, i] = min(max(y, -1.0), 1.0)
    rounds[r] += 1
    if t + 1 != int(row[S_END]):
        return
    K, eta, N = int(row[S_K]), row[S_ETA], int(row[S_N])
    d = Xb.shape[2]
    th, g = theta[r], grad[r]  # the fit runs in place: theta[r] is read by the next select only
    th[:] = 0.0
    for k in range(K):  # Algorithm 5, lines 1-4
        g[:] = 0.0
        for j in range(k * N, (k + 1) * N):
            res = -yb[r, j]
            for c in range(d):
                res += Xb[r, j, c] * th[c]
            for c in range(d):
                g[c] += Xb[r, j, c] * res
        sq = 0.0
        for c in range(d):
            th[c] -= eta * (2.0 * g[c] / N)
            sq += th[c] * th[c]
        nt = math.sqrt(sq)
        if nt > 1.0:
            for c in range(d):
                th[c] /= nt
    if row[S_STD] > 0.0:  # output perturbation
        add_gaussian(rng, row[S_STD], th)
    gamma[r] = row[S_GAMMA]
    epoch[r] = e + 1


def build_squarecb_kernel(
    orc: ImproperBatchSGD,
    ends: np.ndarray,
    gamma_of: Callable[[int], float],
    d: int,
    R: int,
    A: int,
) -> CuratorKernel:
    """A fresh :class:`~privbandits.algorithms.kernel.CuratorKernel` of ``squarecb`` /
    ``squarecb-jdp`` for ``R`` replications and ``A`` actions (state: the epoch's features and
    rewards, the estimate, the IGW rate, the epoch, rounds seen, the fit's gradient scratch;
    params: the epoch table, the IGW scratch).  The steps allocate nothing."""
    table = curator_table(orc, ends, gamma_of)
    nmax = int(np.max(np.diff(ends, prepend=0)))
    state = (
        np.zeros((R, nmax, d)),
        np.zeros((R, nmax)),
        np.zeros((R, d)),
        np.zeros(R),
        np.zeros(R, dtype=np.int64),
        np.zeros(R, dtype=np.int64),
        np.zeros((R, d)),
    )
    theta = state[2]
    params = (table, np.zeros((R, 2, A)))
    return CuratorKernel(
        igw_select,
        curator_update,
        params,
        state,
        estimate=lambda: theta.copy(),
        allocates=False,
    )


# -- local model: squarecb-ldp ------------------------------------------------------------------
@nb.njit(cache=True)
def ldp_encode(params, public, r, t, X, a, y, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The clipped gradient ``2 (clip(<phi, theta_sgd>) - clip(y)) phi`` (norm 4) in a gradient
    slot, the constant zero otherwise."""
    slot, theta = public[0][r], public[1][r]
    out[:] = 0.0
    if slot != GRADIENT:
        return
    phi = X[a]
    d = phi.shape[0]
    z = 0.0
    for i in range(d):
        z += phi[i] * theta[i]
    resid = 2.0 * (min(max(z, -1.0), 1.0) - min(max(y, -1.0), 1.0))
    m = 0.0
    for i in range(d):
        out[i] = resid * phi[i]
        m = max(m, abs(out[i]))
    unit = m if m > 0.0 else 1.0
    sq = 0.0
    for i in range(d):
        q = out[i] / unit
        sq += q * q
    nrm = m * math.sqrt(sq)
    if nrm > SQ_GRADIENT_NORM:
        c = SQ_GRADIENT_NORM / nrm
        for i in range(d):
            out[i] *= c


@nb.njit(cache=True)
def ldp_randomize(params, public, r, t, X, a, y, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`ldp_encode` plus ``N(0, (8 sigma)^2 I)`` in a gradient slot (client stream, the
    numpy client's order: ``d`` standard normals per user)."""
    ldp_encode(params, public, r, t, X, a, y, out)
    if public[0][r] == GRADIENT:
        s = params[2]
        for i in range(out.shape[0]):  # add_gaussian's draw and arithmetic on a zero vector
            z = 0.0
            z += 1.0 * rng.standard_normal()
            out[i] += s * z


@nb.njit(cache=True)
def ldp_update(params, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The untrusted server's step on replication ``r``'s message of round ``t`` (its own schedule)."""
    table = params[0]
    slot_a, theta_sgd, theta_hat, gamma = public
    epoch, acc, rounds = server
    e = epoch[r]
    row = table[e]
    start = int(row[S_START])
    K, eta, N = int(row[S_K]), row[S_ETA], int(row[S_N])
    d = acc.shape[1]
    if t - start < K * N:
        for i in range(d):
            acc[r, i] += msg[i]
        if (t - start + 1) % N == 0:  # end of batch k: Algorithm 6, line 4
            for i in range(d):
                theta_sgd[r, i] = theta_sgd[r, i] - eta * (acc[r, i] / N)
            acc[r] = 0.0
    rounds[r] += 1
    if t + 1 == int(row[S_END]):
        for i in range(d):
            theta_hat[r, i] = theta_sgd[r, i]
        gamma[r] = row[S_GAMMA]
        epoch[r] = e + 1
        theta_sgd[r] = 0.0
        acc[r] = 0.0
    e = epoch[r]
    slot_a[r] = IDLE
    if e < table.shape[0]:
        nxt = table[e]
        if t + 1 - int(nxt[S_START]) < int(nxt[S_K]) * int(nxt[S_N]):
            slot_a[r] = GRADIENT


def build_squarecb_ldp_kernel(
    orc: ImproperBatchSGD,
    ends: np.ndarray,
    gamma_of: Callable[[int], float],
    d: int,
    R: int,
    A: int,
) -> LocalKernel:
    """A fresh :class:`~privbandits.algorithms.kernel.LocalKernel` of ``squarecb-ldp`` for ``R``
    replications and ``A`` actions (params: the epoch table, the IGW scratch, the message std;
    public: slot, ``theta_sgd``, ``theta_hat``, ``gamma``; server: epoch, batch sums, rounds
    received).  The steps allocate nothing."""
    table = ldp_table(orc, ends, gamma_of)
    std = float(orc.sigma * SQ_GRADIENT_SENSITIVITY)
    params: tuple[Any, ...] = (table, np.zeros((R, 2, A)), std)
    first = GRADIENT if int(table[0, S_K]) * int(table[0, S_N]) > 0 else IDLE
    public = (
        np.full(R, first, dtype=np.int64),
        np.zeros((R, d)),
        np.zeros((R, d)),
        np.zeros(R),
    )
    server = (np.zeros(R, dtype=np.int64), np.zeros((R, d)), np.zeros(R, dtype=np.int64))
    theta_hat = public[2]
    return LocalKernel(
        choose=igw_select,
        randomize=ldp_randomize,
        update=ldp_update,
        params=params,
        public=public,
        server=server,
        public_names=("slot", "theta_sgd", "theta_hat", "gamma"),
        message=MessageLayout("squarecb-ldp-gaussian", (("g", (d,)),)),
        estimate=lambda: theta_hat.copy(),
        encode=ldp_encode,
        allocates=False,
    )
