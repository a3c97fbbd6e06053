"""Compiled round of ``chen-ldp`` (Chen et al. 2025, Algorithm 3 on Algorithm 8) for the compiled driver.

The same round as the numpy roles of :mod:`privbandits.algorithms.chen.ldp`
(:class:`~privbandits.algorithms.chen.ldp.ChenLDPClient`, :class:`~privbandits.algorithms.chen.ldp.ChenLDPServer`),
written as the steps of a :class:`~privbandits.algorithms.kernel.LocalKernel` so that the compiled
driver runs it in one loop over rounds and replications:

* ``choose``: Algorithm 4 on the public billboard (:func:`~privbandits.algorithms.chen.planning_kernel.plan_one`,
  the compiled planning step the numpy client calls too; one ``policy`` uniform per user);
* ``encode``: the message before noise, every clip of the device applied: ``X = U phi phi^T U /
  ||U phi||`` clipped to Frobenius norm ``||U||`` in a normalization slot, ``g = (U phi / ||U
  phi||)(nu(clip(<U phi, w>)) - clip(y))`` clipped to norm 2 in a gradient slot, zeros otherwise;
* ``randomize``: ``encode`` plus ``SymPriv`` at std ``sigma sqrt(2) ||U||`` on ``X`` (upper triangle
  row by row, mirrored) or ``Priv`` at std ``4 sigma`` on ``g``, drawn from the ``client`` stream in
  the numpy client's order;
* ``update``: the untrusted server's schedule (batch sums, the spectral step of Algorithm 1 after
  each normalization batch, the projected gradient step of Algorithm 7 after each gradient batch,
  the release at the end of an epoch), from the message only.

The epoch schedule (start, end, plan, ``lambda``, width scale) depends on the horizon only; it is
computed once in Python (:func:`epoch_table`) with the numpy server's arithmetic.  The linear
algebra runs through numba's LAPACK bindings, the numpy roles through numpy's: the two agree to
rounding (the engine comparison tests check ``atol = 1e-9`` on the trajectories).

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Section 5 (Algorithms 3, 4), Section 4.1
(Algorithm 1), Appendix C.4-C.5 (Algorithms 7, 8).
"""

from __future__ import annotations

import math
from typing import Any

import numba as nb
import numpy as np

from privbandits.algorithms.chen.planning_kernel import (
    SPANNER_TOL,
    board_memory,
    plan_one,
    plan_workspace,
)
from privbandits.algorithms.kernel import LocalKernel, MessageLayout, pinned
from privbandits.core.links import link_mu
from privbandits.privacy.samplers import add_gaussian, add_symmetric_gaussian
from privbandits.regression.reweighted import (
    GRADIENT_NORM,
    GRADIENT_SENSITIVITY,
    ReweightedRegression,
)

__all__ = [
    "BOARDS",
    "billboard_arrays",
    "build_ldp_kernel",
    "epoch_table",
    "kernel_params",
    "latest_estimates",
    "plan_select",
]

#: Slot codes of the public schedule (as :mod:`privbandits.algorithms.chen.ldp`).
IDLE, NORMALIZE, GRADIENT = 0, 1, 2
#: Columns of the epoch table.
E_START, E_END, E_FIT, E_N, E_N1, E_M, E_B, E_LAM, E_CREG, E_SCALE = range(10)
SQRT2 = math.sqrt(2.0)


def epoch_table(reg: ReweightedRegression, ends: np.ndarray, min_fit: int, d: int) -> np.ndarray:
    """One row per epoch: start, end, fit (0/1), ``N``, ``n_1``, ``M``, ``B``, ``lambda``, the
    regularizer coefficient ``c lambda`` and the released width scale ``c_b L_nu e_bar``, computed
    as :class:`~privbandits.algorithms.chen.ldp.ChenLDPServer` computes them."""
    rows = []
    start = 0
    for end in ends:
        n = int(end - start)
        pl = reg.plan(n)
        fit = n >= min_fit and pl.N >= 1 and pl.B >= 1
        lam = reg.lam(n, d) if fit else 0.0
        c_reg = (reg.link.L_nu if reg.reg_coef == "L_nu" else reg.link.mu) * lam
        scale = reg.c_b * reg.link.L_nu * reg.e_bar(n, d) if fit else 0.0
        rows.append([start, end, float(fit), pl.N, pl.n1, pl.M, pl.B, lam, c_reg, scale])
        start = int(end)
    return np.array(rows, dtype=float)


# -- linear algebra (as privbandits.regression.matrices) ----------------------------------------
@nb.njit(cache=True)
def _psd_apply(S: np.ndarray, kind: int) -> np.ndarray:  # pragma: no cover - compiled
    """``Q diag(f(e)) Q^T`` of the symmetric part of ``S``; ``f`` = max(e, 0) (kind 0), 1/sqrt(e)
    (kind 1), sqrt(max(e, 0)) (kind 2); symmetrized."""
    S2 = 0.5 * (S + S.T)
    e, Q = np.linalg.eigh(S2)
    fe = np.empty_like(e)
    for i in range(e.shape[0]):
        if kind == 0:
            fe[i] = max(e[i], 0.0)
        elif kind == 1:
            fe[i] = 1.0 / math.sqrt(e[i])
        else:
            fe[i] = math.sqrt(max(e[i], 0.0))
    out = (Q * fe) @ Q.T
    return 0.5 * (out + out.T)


@nb.njit(cache=True)
def spectral_step_nb(U: np.ndarray, M: np.ndarray, lam: float) -> np.ndarray:  # pragma: no cover
    """Algorithm 1, lines 7-9: ``Sigma = psd(M) + lambda U``, ``U' = sym(Sigma^{-1/2} U)``."""
    Sigma = _psd_apply(M, 0) + lam * U
    A = _psd_apply(Sigma, 1) @ U
    return _psd_apply(A.T @ A, 2)


@nb.njit(cache=True)
def ellipsoid_point(
    v: np.ndarray, u2: np.ndarray, Q: np.ndarray, out: np.ndarray
) -> None:  # pragma: no cover - compiled
    """Euclidean projection of ``v`` onto ``{w : ||U w|| <= 1}`` into ``out``, with ``U = Q diag(u)
    Q^T`` and ``u2 = u^2`` (the bisection of :class:`~privbandits.regression.matrices.EllipsoidProjector`)."""
    c = Q.T @ v
    uc2 = u2 * c * c
    if np.sum(uc2) <= 1.0:
        out[:] = v
        return
    lo, hi = 0.0, 1.0
    while np.sum(uc2 / (1.0 + hi * u2) ** 2) > 1.0:
        lo, hi = hi, 2.0 * hi
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if np.sum(uc2 / (1.0 + mid * u2) ** 2) > 1.0:
            lo = mid
        else:
            hi = mid
    out[:] = Q @ (c / (1.0 + hi * u2))


@pinned
def _opnorm(U: np.ndarray) -> float:  # pragma: no cover - compiled
    """Spectral norm (largest singular value) of ``U`` (LAPACK allocates: pinned to numba's
    runtime, so that the allocation-free steps calling it compile without it)."""
    s = np.linalg.svd(U)[1]
    return float(s[0]) if s.shape[0] else 0.0


@nb.njit(cache=True)
def _device_opnorm(seen, norm, r, U):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``||U||`` as the device of replication ``r`` computes it, remembered with the matrix it was
    computed from (the device's own memory ``seen``, ``norm``: ``params[10]``, ``params[11]``; the
    server changes ``U`` a few times an epoch; any other matrix is measured afresh).  Takes the two
    arrays rather than ``params`` (measured faster in the compiled round)."""
    same = True
    d = U.shape[0]
    for i in range(d):
        for j in range(d):
            if seen[r, i, j] != U[i, j]:
                same = False
    if not same:
        for i in range(d):
            for j in range(d):
                seen[r, i, j] = U[i, j]
        norm[r] = _opnorm(U)
    return norm[r]


@nb.njit(cache=True)
def _clip_norm(v: np.ndarray, bound: float) -> None:  # pragma: no cover - compiled
    """``v`` scaled into the l2 ball of radius ``bound`` in place, the norm taken in units of the
    largest entry (as :func:`~privbandits.regression.matrices.clip_rows`)."""
    m = 0.0
    for i in range(v.shape[0]):
        m = max(m, abs(v[i]))
    unit = m if m > 0.0 else 1.0
    sq = 0.0
    for i in range(v.shape[0]):
        z = v[i] / unit
        sq += z * z
    norm = m * math.sqrt(sq)
    if norm > bound:
        c = bound / norm
        for i in range(v.shape[0]):
            v[i] *= c


@nb.njit(cache=True)
def _row_times(x: np.ndarray, U: np.ndarray, V: np.ndarray) -> float:  # pragma: no cover
    """``V = U^T x`` in place (``x U`` for the row ``x``); returns ``||V||``."""
    d = U.shape[0]
    sq = 0.0
    for c in range(d):
        v = 0.0
        for j in range(d):
            v += x[j] * U[j, c]
        V[c] = v
        sq += v * v
    return math.sqrt(sq)


# -- the billboard and the kernels' shared layout ------------------------------------------------
#: ``params`` of both Algorithm 3 kernels start with: the link code, the spanner constant ``C``,
#: ``sigma``, the number ``K`` of normalization batches, the step ``eta = 1 / (2 L_nu)``, the epoch
#: table, the planning step's scratch and its memory of the billboard (:func:`board_memory`, three
#: arrays, kept flat in ``params``: nested, the round measured slower); their ``state`` / ``public``
#: hold the billboard at :data:`BOARDS` (the number posted, ``theta``, ``U``, the width scale).
BOARDS = slice(3, 7)


def kernel_params(
    reg: ReweightedRegression,
    table: np.ndarray,
    spanner_C: float,
    n_actions: int,
    d: int,
    R: int,
) -> tuple[Any, ...]:
    """The leading ``params`` of an Algorithm 3 kernel for ``R`` replications (see :data:`BOARDS`)."""
    return (
        int(reg.link.link.code),
        float(spanner_C),
        float(reg.sigma),
        int(reg.K),
        1.0 / (2.0 * reg.link.L_nu),
        table,
        plan_workspace(int(n_actions), d),
        *board_memory(R, table.shape[0], d),
    )


def billboard_arrays(R: int, J: int, d: int) -> tuple[np.ndarray, ...]:
    """An empty billboard of ``J`` estimates for ``R`` replications: the number posted, ``theta``,
    ``U`` and the width scale."""
    return (
        np.zeros(R, dtype=np.int64),
        np.zeros((R, J, d)),
        np.zeros((R, J, d, d)),
        np.zeros((R, J)),
    )


def latest_estimates(n_boards: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """The last posted ``theta`` of every replication (zero before the first), ``(R, d)``."""
    R, _, d = theta.shape
    out = np.zeros((R, d))
    posted = n_boards > 0
    out[posted] = theta[np.flatnonzero(posted), n_boards[posted] - 1]
    return out


@nb.njit(cache=True)
def plan_select(params, boards, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Algorithm 4 on replication ``r``'s billboard (one ``policy`` uniform): the curator's
    ``select`` of ``chen-jdp`` / ``chen-elim`` and the device's ``choose`` of ``chen-ldp``."""
    code, C = params[0], params[1]
    memory = (params[7], params[8], params[9])
    n_boards, theta, bU, scale = boards[3], boards[4], boards[5], boards[6]
    return plan_one(
        X,
        theta[r],
        bU[r],
        scale[r],
        n_boards[r],
        code,
        C,
        SPANNER_TOL,
        rng,
        params[6],
        memory,
        r,
        True,
    )


# -- the user's side ------------------------------------------------------------------------
@nb.njit(cache=True)
def encode(params, public, r, t, X, a, y, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The clipped fields ``X`` (flattened, ``d^2``) and ``g`` (``d``) of the user of replication ``r``."""
    code = params[0]
    slot, U, w = public[0][r], public[1][r], public[2][r]
    d = U.shape[0]
    out[:] = 0.0
    if slot == IDLE:
        return
    # ``V = U^T x`` is kept in the field the slot leaves at zero (reset after): no allocation
    V = out[d * d :] if slot == NORMALIZE else out[:d]
    nrm = _row_times(X[a], U, V)
    inv = 1.0 / nrm if nrm > 0.0 else 0.0
    if slot == NORMALIZE:
        M = out[: d * d]
        for i in range(d):
            for j in range(d):
                M[i * d + j] = (V[i] * inv) * V[j]
        V[:] = 0.0
        _clip_norm(M, _device_opnorm(params[10], params[11], r, U))
    else:
        z = 0.0
        for j in range(d):
            z += V[j] * w[j]
        resid = link_mu(code, min(max(z, -1.0), 1.0)) - min(max(y, -1.0), 1.0)
        g = out[d * d :]
        for j in range(d):
            g[j] = V[j] * (inv * resid)
        V[:] = 0.0
        _clip_norm(g, GRADIENT_NORM)


@nb.njit(cache=True)
def randomize(params, public, r, t, X, a, y, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`encode` plus the slot's Gaussian noise (client stream, the numpy client's order)."""
    sigma = params[2]
    encode(params, public, r, t, X, a, y, out)
    slot, U = public[0][r], public[1][r]
    d = U.shape[0]
    if slot == NORMALIZE:  # SymPriv: the shared sampler, in the numpy client's order
        s = sigma * SQRT2 * _device_opnorm(params[10], params[11], r, U)
        add_symmetric_gaussian(rng, s, out[: d * d].reshape((d, d)))
    elif slot == GRADIENT:  # Priv
        add_gaussian(rng, sigma * GRADIENT_SENSITIVITY, out[d * d :])


# -- the server's side ----------------------------------------------------------------------
@nb.njit(cache=True)
def _slot_at(table: np.ndarray, Kn: int, e: int, t: int) -> int:  # pragma: no cover - compiled
    """The slot of round ``t`` in epoch ``e`` (IDLE past the last epoch)."""
    if e >= table.shape[0] or table[e, E_FIT] == 0.0:
        return IDLE
    p = t - int(table[e, E_START])
    N, n1, M, B = int(table[e, E_N]), int(table[e, E_N1]), int(table[e, E_M]), int(table[e, E_B])
    if p < Kn * N:
        return NORMALIZE
    if n1 <= p < n1 + M * B:
        return GRADIENT
    return IDLE


# The server's batch ends allocate (numpy's linear algebra); they are pinned to numba's runtime
# and return nothing, so that the per-round steps compile without it (LocalKernel.allocates).
@pinned
def _normalization_step(U, accX, r, N, lam, last, u2, Q):  # type: ignore[no-untyped-def]  # pragma: no cover
    """End of a normalization batch (Algorithm 1, lines 7-9): ``U`` in place from the batch sum
    ``accX[r]``; after the last batch, ``U``'s eigenvalues squared and eigenvectors (``u2[r]``,
    ``Q[r]``) for the projections of Algorithm 7."""
    U[:, :] = spectral_step_nb(U.copy(), accX[r] / N, lam)
    accX[r] = 0.0
    if last:
        u, q = np.linalg.eigh(0.5 * (U + U.T))
        u2[r] = u * u
        Q[r] = q


@pinned
def _gradient_step(U, w, accg, r, B, c_reg, eta, u2, Q):  # type: ignore[no-untyped-def]  # pragma: no cover
    """End of a gradient batch (Algorithm 7, lines 6-7): the projected step of ``w`` in place."""
    G = accg[r] / B + c_reg * (U @ w)
    ellipsoid_point(w - eta * G, u2[r], Q[r], w)
    accg[r] = 0.0


@pinned
def _release(U, w, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The released estimate ``U w`` into ``out``."""
    out[:] = U @ w


@nb.njit(cache=True)
def update(params, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The untrusted server's step on replication ``r``'s message of round ``t``."""
    Kn, eta, table = params[3], params[4], params[5]
    slot_a, U_a, w_a = public[0], public[1], public[2]
    n_boards, b_theta, b_U, b_scale = public[3], public[4], public[5], public[6]
    epoch, accX, accg, u2, Q, rounds = server
    d = U_a.shape[1]
    e = epoch[r]
    row = table[e]
    p = t - int(row[E_START])
    slot = slot_a[r]
    U, w = U_a[r], w_a[r]
    if slot == NORMALIZE:
        N = int(row[E_N])
        for i in range(d):
            for j in range(d):
                accX[r, i, j] += msg[i * d + j]
        if (p + 1) % N == 0:  # end of normalization batch k: Algorithm 1, lines 7-9
            _normalization_step(U, accX, r, N, row[E_LAM], p + 1 == Kn * N, u2, Q)
    elif slot == GRADIENT:
        n1, B = int(row[E_N1]), int(row[E_B])
        for j in range(d):
            accg[r, j] += msg[d * d + j]
        if (p + 1 - n1) % B == 0:  # end of gradient batch m: Algorithm 7, lines 6-7
            _gradient_step(U, w, accg, r, B, row[E_CREG], eta, u2, Q)
    rounds[r] += 1
    if t + 1 == int(row[E_END]):
        if row[E_FIT] != 0.0:
            j = n_boards[r]
            _release(U, w, b_theta[r, j])
            for i in range(d):
                for c in range(d):
                    b_U[r, j, i, c] = U[i, c]
            b_scale[r, j] = row[E_SCALE]
            n_boards[r] += 1
        epoch[r] = e + 1
        if e + 1 < table.shape[0]:
            U[:, :] = 0.0
            for i in range(d):
                U[i, i] = 1.0
            w[:] = 0.0
            accX[r] = 0.0
            accg[r] = 0.0
    slot_a[r] = _slot_at(table, Kn, epoch[r], t + 1)


def build_ldp_kernel(
    reg: ReweightedRegression,
    ends: np.ndarray,
    min_fit: int,
    d: int,
    R: int,
    spanner_C: float,
    n_actions: int,
) -> LocalKernel:
    """A fresh :class:`~privbandits.algorithms.kernel.LocalKernel` of ``chen-ldp`` for ``R``
    replications (public: slot, ``U``, ``w`` and the billboard; server: epoch, batch sums, the
    projector's eigen-decomposition, rounds received; ``n_actions``: the number of actions, the
    size of the planning step's scratch)."""
    table = epoch_table(reg, ends, min_fit, d)
    params = (
        *kernel_params(reg, table, spanner_C, n_actions, d, R),
        np.full((R, d, d), np.nan),
        np.zeros(R),
    )
    slot = np.full(R, _slot_at(table, int(reg.K), 0, 0), dtype=np.int64)
    public = (
        slot,
        np.broadcast_to(np.eye(d), (R, d, d)).copy(),
        np.zeros((R, d)),
        *billboard_arrays(R, len(ends), d),
    )
    server = (
        np.zeros(R, dtype=np.int64),
        np.zeros((R, d, d)),
        np.zeros((R, d)),
        np.ones((R, d)),
        np.broadcast_to(np.eye(d), (R, d, d)).copy(),
        np.zeros(R, dtype=np.int64),
    )

    return LocalKernel(
        choose=plan_select,
        randomize=randomize,
        update=update,
        params=params,
        public=public,
        server=server,
        public_names=("slot", "U", "w", "n_boards", "board_theta", "board_U", "board_scale"),
        message=MessageLayout("chen-ldp-gaussian", (("X", (d, d)), ("g", (d,)))),
        estimate=lambda: latest_estimates(public[3], public[4]),
        encode=encode,
        allocates=False,
    )
