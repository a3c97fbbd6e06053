"""Algorithm 4 of Chen et al. (2025) for every replication of a round, in one compiled loop.

The same computation as :func:`privbandits.algorithms.chen.planning.planning_support` followed by
the uniform draw over the support (the reference numpy form, kept for reading and for the tests
that compare the two): for each replication, the actions that survive every released estimate's
test ``UCB_a >= max_a' LCB_a'`` (Eq. 8), a ``C``-approximate barycentric spanner of the survivors
(Awerbuch & Kleinberg 2004, as :func:`privbandits.algorithms.chen.spanner.barycentric_spanner`),
and one ``policy`` uniform per replication, drawn in replication order as the numpy form draws it.

The released estimates are packed per replication: ``theta (R, J, d)``, ``U (R, J, d, d)``,
``scale (R, J)`` and the number released so far ``n_boards (R,)``.

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Section 5, Algorithm 4 and Eq. (8);
Awerbuch & Kleinberg (2004), Proposition 2.4.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from privbandits.algorithms._shared.linalg import cholesky_lower
from privbandits.algorithms.kernel import pinned
from privbandits.core.links import link_mu

__all__ = [
    "SPANNER_TOL",
    "board_memory",
    "plan_one",
    "plan_workspace",
    "select_planned",
    "spanner_indices",
    "spanner_indices_lapack",
]

#: Relative singular-value tolerance of the spanner's numerical rank (as ``barycentric_spanner``).
SPANNER_TOL = 1e-9
#: Relative margin below which two maximized values (or a coefficient and ``C``) count as tied.
NEAR = 1e-9


@nb.njit(cache=True, inline="always")
def _lu(A: np.ndarray, piv: np.ndarray) -> None:  # pragma: no cover - compiled
    """In-place LU factorization with partial pivoting of the square ``A`` (row swaps in ``piv``)."""
    n = A.shape[0]
    for k in range(n):
        p = k
        big = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > big:
                big, p = abs(A[i, k]), i
        piv[k] = p
        if p != k:
            for j in range(n):
                A[k, j], A[p, j] = A[p, j], A[k, j]
        if A[k, k] != 0.0:
            for i in range(k + 1, n):
                A[i, k] /= A[k, k]
                f = A[i, k]
                for j in range(k + 1, n):
                    A[i, j] -= f * A[k, j]


@nb.njit(cache=True, inline="always")
def _lu_solve(LU: np.ndarray, piv: np.ndarray, b: np.ndarray) -> None:  # pragma: no cover
    """Solve ``A x = b`` in place from :func:`_lu`'s factors."""
    n = LU.shape[0]
    for k in range(n):
        p = piv[k]
        if p != k:
            b[k], b[p] = b[p], b[k]
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= LU[i, j] * b[j]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= LU[i, j] * b[j]
        b[i] = s / LU[i, i]


@nb.njit(cache=True, inline="always")
def _distinct(idx: np.ndarray, r: int, out: np.ndarray) -> int:  # pragma: no cover - compiled
    """The distinct values of the sorted ``idx[:r]`` into ``out``; returns their number."""
    n = 0
    for k in range(r):
        if n == 0 or idx[k] != out[n - 1]:
            out[n] = idx[k]
            n += 1
    return n


#: Scratch arrays of one planning step (views of :func:`plan_workspace`'s two buffers).
W_F, W_B, W_KEEP, W_BUF, W_S, W_FS, W_QB, W_GRAM, W_V, W_SV, W_ORDER, W_G, W_X, W_LU = range(14)
W_PIV, W_Z, W_IDX, W_H = range(14, 18)


@nb.njit(cache=True)
def plan_workspace(K: int, d: int):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Scratch of :func:`plan_one` for up to ``K`` actions in dimension ``d``: one float and one
    integer buffer (allocated once per kernel, so that the round allocates nothing; two arrays, so
    that passing them costs little)."""
    return np.empty(2 * K + 3 * K * d + 5 * d * d + 2 * d), np.empty(3 * K + 3 * d, dtype=np.int64)


@nb.njit(cache=True, inline="always")
def _views(ws, K: int, d: int):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """The scratch arrays of one planning step for ``K`` actions, as views of ``ws`` (indexed by the
    ``W_*`` constants)."""
    fb, ib = ws
    if fb.shape[0] < 2 * K + 3 * K * d + 5 * d * d + 2 * d or ib.shape[0] < 3 * K + 3 * d:
        raise ValueError("plan_one: the workspace is smaller than the context")
    o = 2 * K + 3 * K * d
    fK = fb[: 2 * K].reshape((2, K))  # f, b
    KD = fb[2 * K : o].reshape((3, K, d))  # Fs, G, H
    DD = fb[o : o + 5 * d * d].reshape((5, d, d))  # Qb, S, V, Xi, LU
    o += 5 * d * d
    sv = fb[o : o + d]
    z = fb[o + d : o + 2 * d]
    keep = ib[0:K]
    buf = ib[K : 2 * K]
    Si = ib[2 * K : 3 * K]
    order = ib[3 * K : 3 * K + d]
    piv = ib[3 * K + d : 3 * K + 2 * d]
    idx = ib[3 * K + 2 * d : 3 * K + 3 * d]
    f, b, Fs, G, H = fK[0], fK[1], KD[0], KD[1], KD[2]
    Qb, S, V, Xi, LU = DD[0], DD[1], DD[2], DD[3], DD[4]
    return (f, b, keep, buf, Si, Fs, Qb, S, V, sv, order, G, Xi, LU, piv, z, idx, H)


@nb.njit(cache=True, inline="always")
def _row_basis(F: np.ndarray, m: int, tol: float, ws) -> int:  # type: ignore[no-untyped-def]  # pragma: no cover
    """The right singular vectors of ``F[:m]`` (m, d) of the singular values above ``tol`` times
    the largest, in decreasing order, in the first ``r`` columns of ``ws[W_QB]`` (d, d); returns
    ``r`` (0 when ``F[:m] = 0``).

    Cyclic Jacobi on the Gram matrix ``F^T F`` (its eigenvectors are the right singular vectors,
    the basis of ``np.linalg.svd`` up to signs, which the spanner does not depend on); each
    singular value is measured as ``||F v||`` (accurate for the small ones, so an exactly
    rank-deficient ``F`` has rank below ``d``).
    """
    d = F.shape[1]
    Qb, S, V, sv, order = ws[W_QB], ws[W_GRAM], ws[W_V], ws[W_SV], ws[W_ORDER]
    for i in range(d):
        for j in range(i, d):
            acc = 0.0
            for k in range(m):
                acc += F[k, i] * F[k, j]
            S[i, j] = acc
            S[j, i] = acc
    for i in range(d):
        for j in range(d):
            V[i, j] = 0.0
        V[i, i] = 1.0
    scale = 0.0
    for i in range(d):
        scale += S[i, i]
    if not scale > 0.0:
        return 0
    for _ in range(60):
        rotated = False
        for p in range(d - 1):
            for q in range(p + 1, d):
                apq = S[p, q]
                if abs(apq) <= 1e-15 * math.sqrt(abs(S[p, p] * S[q, q])) or abs(apq) < 1e-300:
                    continue
                rotated = True
                tau = (S[q, q] - S[p, p]) / (2.0 * apq)
                t = (1.0 if tau >= 0.0 else -1.0) / (abs(tau) + math.sqrt(1.0 + tau * tau))
                c = 1.0 / math.sqrt(1.0 + t * t)
                sn = t * c
                for k in range(d):  # S := J^T S J, rows and columns p, q (symmetric)
                    if k != p and k != q:
                        skp, skq = S[k, p], S[k, q]
                        a1 = c * skp - sn * skq
                        a2 = sn * skp + c * skq
                        S[k, p] = a1
                        S[p, k] = a1
                        S[k, q] = a2
                        S[q, k] = a2
                S[p, p] -= t * apq
                S[q, q] += t * apq
                S[p, q] = 0.0
                S[q, p] = 0.0
                for k in range(d):  # V := V J
                    vkp, vkq = V[k, p], V[k, q]
                    V[k, p] = c * vkp - sn * vkq
                    V[k, q] = sn * vkp + c * vkq
        if not rotated:
            break
    for c2 in range(d):
        sq = 0.0
        for k in range(m):
            z = 0.0
            for i in range(d):
                z += F[k, i] * V[i, c2]
            sq += z * z
        sv[c2] = math.sqrt(sq)
    for c2 in range(d):  # decreasing singular values, ties in column order (a stable sort)
        k = c2
        while k > 0 and sv[order[k - 1]] < sv[c2]:
            order[k] = order[k - 1]
            k -= 1
        order[k] = c2
    top = sv[order[0]]
    if not top > 0.0:
        return 0
    r = 0
    for c2 in range(d):
        if sv[order[c2]] > tol * top:
            for i in range(d):
                Qb[i, r] = V[i, order[c2]]
            r += 1
    return r


#: Smallest certified ratio ``lambda_min / lambda_max`` of ``F^T F`` (a singular-value ratio of
#: 1e-4) for which :func:`_surely_full_rank` answers without the singular values: far above the
#: rank tolerance's ``1e-18``, and far enough from 1 / rounding that the Cholesky factor is accurate.
FULL_RANK_RATIO = 1e-8


@nb.njit(cache=True, inline="always")
def _surely_full_rank(
    F: np.ndarray, m: int, S: np.ndarray, L: np.ndarray, z: np.ndarray
) -> bool:  # pragma: no cover - compiled
    """True when the rows ``F[:m]`` certainly have full column rank ``d`` at the spanner's rank
    tolerance (False: not decided here, the singular values decide); ``S``, ``L`` ``(d, d)`` and
    ``z`` ``(d,)`` are scratch (passed as arrays: read through the workspace tuple the step
    measured several times slower).  ``||L^{-1}||_F^2 = tr(S^{-1})`` by forward substitution only
    (:func:`~privbandits.algorithms._shared.linalg.cholesky_solve` would also back-substitute).

    With ``S = F^T F = L L^T`` (Cholesky), ``lambda_max(S) <= tr S`` and ``lambda_min(S) = 1 /
    ||S^{-1}||_2 >= 1 / ||L^{-1}||_F^2``; the rank is ``d`` when the ratio of the two bounds exceeds
    :data:`FULL_RANK_RATIO`, i.e. ``sigma_min / sigma_max > 1e-4``, far above ``SPANNER_TOL``.
    """
    d = F.shape[1]
    trace = 0.0
    for i in range(d):
        for j in range(i + 1):
            acc = 0.0
            for k in range(m):
                acc += F[k, i] * F[k, j]
            S[i, j] = acc
        trace += S[i, i]
    if not (trace > 0.0 and cholesky_lower(S, L)):
        return False
    inv_sq = 0.0  # ||L^{-1}||_F^2, column by column of the inverse (forward substitution)
    for c in range(d):
        for i in range(d):
            if i < c:
                z[i] = 0.0
                continue
            acc = 1.0 if i == c else 0.0
            for k in range(c, i):
                acc -= L[i, k] * z[k]
            z[i] = acc / L[i, i]
            inv_sq += z[i] * z[i]
    return 1.0 / (inv_sq * trace) > FULL_RANK_RATIO


@nb.njit(cache=True, inline="always")
def _spanner_fast(F: np.ndarray, m: int, C: float, tol: float, ws, out: np.ndarray) -> int:  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`spanner_indices` of the rows ``F[:m]`` without LAPACK calls or allocations (scratch:
    the workspace ``ws`` of :func:`plan_workspace`), or -1 when rounding could decide the result
    (rank-deficient rows, a near tie in a maximization, a coefficient within rounding of ``C``).

    The construction of :func:`~privbandits.algorithms.chen.spanner.barycentric_spanner` (phase 1:
    maximize the determinant column by column; phase 2: swap while a coefficient exceeds ``C``),
    in the standard coordinates when the rows span ``R^d`` (certified by :func:`_surely_full_rank`
    without singular values, or by :func:`_row_basis`) and in those of the leading right singular
    vectors otherwise, with small hand-written factorizations instead of LAPACK calls (this runs
    for every user of every round).
    """
    d = F.shape[1]
    Qb = ws[W_QB]
    G, Xi, LU, piv, z, idx = ws[W_G], ws[W_X], ws[W_LU], ws[W_PIV], ws[W_Z], ws[W_IDX]
    if m >= d and _surely_full_rank(F, m, ws[W_GRAM], LU, z):
        r = d
    else:
        r = _row_basis(F, m, tol, ws)
        if r <= 0 or r < min(m, d):
            return -1  # zero or rank-deficient rows: the exact construction decides
    if r == d:  # span(F) = R^d: the standard basis is an orthonormal basis of it
        for k in range(m):
            for c in range(d):
                G[k, c] = F[k, c]
    else:
        for k in range(m):  # coordinates in span(F)
            for c in range(r):
                s = 0.0
                for i in range(d):
                    s += F[k, i] * Qb[i, c]
                G[k, c] = s
    H = ws[W_H]
    for k in range(m):
        for c in range(r):
            H[k, c] = G[k, c]
    for i in range(r):  # phase 1: det(X with column i := g) = det(X) (X^{-1} g)_i
        # X = [g_idx[0], .., g_idx[i-1], e_i, .., e_{r-1}], so (X^{-1} g)_i is coordinate i of g
        # once the chosen rows are eliminated from its leading coordinates (the Schur complement,
        # kept in H by one step of Gaussian elimination per chosen row)
        best, second, j = -1.0, -1.0, 0
        for k in range(m):
            v = abs(H[k, i])
            if v > best:
                best, second, j = v, best, k
            elif v > second:
                second = v
        if second >= best * (1.0 - NEAR):
            return -1  # a near tie: rounding would decide it
        idx[i] = j
        inv = 1.0 / H[j, i]
        for k in range(m):
            if k != j:
                fk = H[k, i] * inv
                for c in range(i + 1, r):
                    H[k, c] -= fk * H[j, c]
        for c in range(i + 1, r):
            H[j, c] = 0.0
    LUr = LU[:r, :r]
    pivr = piv[:r]
    for _ in range(
        int(100 * r * math.log(r + 1)) + 100
    ):  # phase 2: swap while a coefficient exceeds C
        for a in range(r):  # X^{-1}, then coef = X^{-1} G^T
            for c in range(r):
                LU[a, c] = G[idx[c], a]
        _lu(LUr, pivr)
        for c in range(r):
            z[c] = 1.0 / LU[c, c]
        for c in range(r):  # column c of X^{-1}: solve X x = e_c
            for a in range(r):
                Xi[a, c] = 0.0
            Xi[c, c] = 1.0
        for k in range(r):  # the row swaps of the factorization, on the identity's rows
            p = piv[k]
            if p != k:
                for c in range(r):
                    Xi[k, c], Xi[p, c] = Xi[p, c], Xi[k, c]
        for c in range(r):
            for a in range(r):
                acc = Xi[a, c]
                for b in range(a):
                    acc -= LU[a, b] * Xi[b, c]
                Xi[a, c] = acc
            for a in range(r - 1, -1, -1):
                acc = Xi[a, c]
                for b in range(a + 1, r):
                    acc -= LU[a, b] * Xi[b, c]
                Xi[a, c] = acc * z[a]
        best, second, ii, jj = -1.0, -1.0, 0, 0
        for a in range(r):  # first largest |coefficient| in row-major order
            for k in range(m):
                v = 0.0
                for c in range(r):
                    v += Xi[a, c] * G[k, c]
                v = abs(v)
                if v > best:
                    best, second, ii, jj = v, best, a, k
                elif v > second:
                    second = v
        if abs(best - C) <= NEAR * C:
            return -1
        if best <= C:
            break
        if second >= best * (1.0 - NEAR):
            return -1
        idx[ii] = jj
    for a in range(1, r):  # sort the r indices (insertion sort)
        v = idx[a]
        k = a
        while k > 0 and idx[k - 1] > v:
            idx[k] = idx[k - 1]
            k -= 1
        idx[k] = v
    return _distinct(idx, r, out)


@nb.njit(cache=True)
def spanner_indices_lapack(
    F: np.ndarray, C: float, tol: float, out: np.ndarray
) -> int:  # pragma: no cover - compiled
    """Sorted distinct indices of a ``C``-approximate barycentric spanner of the rows of ``F`` into
    ``out``; returns their number (one index, 0, when ``F = 0``): the construction of
    :func:`~privbandits.algorithms.chen.spanner.barycentric_spanner` with numba's LAPACK calls
    (the exact fallback of :func:`spanner_indices`)."""
    m = F.shape[0]
    _, s, vt = np.linalg.svd(F, full_matrices=False)
    if s.size == 0 or s[0] <= 0.0:
        out[0] = 0
        return 1
    r = 0
    for v in s:
        if v > tol * s[0]:
            r += 1
    # coordinates in span(F): m x r (the standard basis when span(F) = R^d)
    G = F.copy() if r == F.shape[1] else F @ np.ascontiguousarray(vt[:r].T)
    X = np.eye(r)
    idx = np.zeros(r, dtype=np.int64)
    for i in range(r):  # phase 1: det(X with column i := g) = det(X) (X^{-1} g)_i
        row = np.linalg.inv(X)[i].copy()
        best, j = -1.0, 0
        for k in range(m):
            v = abs(np.dot(G[k], row))
            if v > best:
                best, j = v, k
        X[:, i] = G[j]
        idx[i] = j
    GT = np.ascontiguousarray(G.T)
    for _ in range(
        int(100 * r * math.log(r + 1)) + 100
    ):  # phase 2: swap while a coefficient exceeds C
        coef = np.linalg.solve(X, GT)  # r x m
        flat = np.argmax(np.abs(coef))
        ii, jj = flat // m, flat % m
        if abs(coef[ii, jj]) <= C:
            break
        X[:, ii] = G[jj]
        idx[ii] = jj
    idx.sort()
    return _distinct(idx, r, out)


@nb.njit(cache=True, inline="always")
def _spanner_rows(F: np.ndarray, m: int, C: float, tol: float, ws, out: np.ndarray) -> int:  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`spanner_indices` of the rows ``F[:m]`` with the scratch of ``ws``: the fast
    construction, or the LAPACK one when rounding could decide it."""
    n = _spanner_fast(F, m, C, tol, ws, out)
    if n < 0:
        n = _spanner_lapack_rows(F, m, C, tol, out)
    return n


@pinned
def _spanner_lapack_rows(
    F: np.ndarray, m: int, C: float, tol: float, out: np.ndarray
) -> int:  # pragma: no cover - compiled
    """:func:`spanner_indices_lapack` of the rows ``F[:m]``, pinned to numba's runtime (LAPACK
    allocates; it returns an integer), so that the planning step compiles without it."""
    return spanner_indices_lapack(np.ascontiguousarray(F[:m]), C, tol, out)


@nb.njit(cache=True)
def spanner_indices(
    F: np.ndarray, C: float, tol: float, out: np.ndarray
) -> int:  # pragma: no cover - compiled
    """Sorted distinct indices of a ``C``-approximate barycentric spanner of the rows of ``F`` into
    ``out``; returns their number (one index, 0, when ``F = 0``).

    The fast construction (:func:`_spanner_fast`: full-rank rows, every maximization decided by a
    margin far above rounding) gives the indices of
    :func:`~privbandits.algorithms.chen.spanner.barycentric_spanner`; any other case runs the
    LAPACK construction (:func:`spanner_indices_lapack`), so the choice never hangs on rounding
    differences between the two.
    """
    m, d = F.shape
    ws = _views(plan_workspace(m, d), m, d)
    return _spanner_rows(F, m, C, tol, ws, out)


#: Relative margin by which every width must exceed 1 for :func:`plan_one` to skip an estimate.
INERT_MARGIN = 1e-9


def board_memory(R: int, J: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The planning step's memory of the billboards of ``R`` replications (``J`` estimates each):
    the ``U`` and width scale each bound was computed from (NaN: none yet) and the lower bound on
    ``scale sigma_min(U)`` (:func:`plan_one` with ``remember``)."""
    return np.full((R, J, d, d), np.nan), np.full((R, J), np.nan), np.zeros((R, J))


@nb.njit(cache=True)
def _width_floor(U: np.ndarray, j: int, scale: float) -> float:  # pragma: no cover - compiled
    """A lower bound on ``scale ||U[j]^T x|| / ||x||`` over every ``x != 0``: ``scale
    sigma_min(U[j])`` less the singular values' rounding error (``8 d eps sigma_max``); 0 for a
    non-finite ``U[j]`` or ``scale``."""
    d = U.shape[1]
    if not (math.isfinite(scale) and scale > 0.0):
        return 0.0
    A = np.empty((d, d))
    for i in range(d):
        for c in range(d):
            if not math.isfinite(U[j, i, c]):
                return 0.0
            A[i, c] = U[j, i, c]
    s = np.linalg.svd(A)[1]
    return max(0.0, scale * (s[d - 1] - 8.0 * d * 2.220446049250313e-16 * s[0]))


@nb.njit(cache=True)
def _first_changed(U, scale, start, n_boards, seen_U, seen_scale):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The first estimate from ``start`` whose ``U`` or scale differs from the remembered one, or -1."""
    d = U.shape[1]
    for j in range(start, n_boards):
        if seen_scale[j] != scale[j]:
            return j
        for i in range(d):
            for c in range(d):
                if seen_U[j, i, c] != U[j, i, c]:
                    return j
    return -1


@pinned
def _refresh_floors(U, scale, n_boards, seen_U, seen_scale, floor):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Recompute :func:`_width_floor` of every released estimate whose ``U`` or scale changed since
    it was last computed (``seen_U``, ``seen_scale``, ``floor``: one replication's rows of
    :func:`board_memory`).  A function of its own, apart from the planning loop: the rare
    recomputation's LAPACK call would otherwise slow every check of the loop; pinned to numba's
    runtime (LAPACK allocates; it returns nothing), so that the planning step compiles without it."""
    j = _first_changed(U, scale, 0, n_boards, seen_U, seen_scale)
    while j >= 0:
        seen_U[j] = U[j]
        seen_scale[j] = scale[j]
        floor[j] = _width_floor(U, j, scale[j])
        j = _first_changed(U, scale, j + 1, n_boards, seen_U, seen_scale)


@nb.njit(cache=True, inline="always")
def plan_one(
    F: np.ndarray,
    theta: np.ndarray,
    U: np.ndarray,
    scale: np.ndarray,
    n_boards: int,
    code: int,
    C: float,
    tol: float,
    rng: np.random.Generator,
    work,  # type: ignore[no-untyped-def]
    memory,  # type: ignore[no-untyped-def]
    r: int,
    remember: bool,
) -> int:  # pragma: no cover - compiled
    """One replication's round of Algorithm 4: an action uniform over the ``C``-spanner of the
    actions of ``F`` (K, d) that survive the first ``n_boards`` released estimates ``theta (J, d)``,
    ``U (J, d, d)``, ``scale (J,)`` (one ``policy`` uniform; ``work``: the scratch of
    :func:`plan_workspace` for at least ``K`` actions, so that the step allocates nothing).

    With ``remember``, an estimate certified to eliminate nothing at this context (every width above
    1, by the remembered bound :func:`_width_floor` on ``scale sigma_min(U)`` and the smallest
    feature norm) is skipped (``memory``: :func:`board_memory`, row ``r``), which gives the same
    survivors: the Eq. (8) test is then only evaluated for estimates that can remove an action.
    """
    K, d = F.shape
    ws = _views(work, K, d)
    f, b, keep, buf, S, Fs = ws[W_F], ws[W_B], ws[W_KEEP], ws[W_BUF], ws[W_S], ws[W_FS]
    keep[:] = True
    floor = memory[2][r if remember else 0]
    min_norm = 0.0
    if remember and n_boards > 0:
        _refresh_floors(U, scale, n_boards, memory[0][r], memory[1][r], floor)
        min_norm = np.inf
        for a in range(K):
            sq = 0.0
            for i in range(d):
                sq += F[a, i] * F[a, i]
            min_norm = min(min_norm, math.sqrt(sq))
    for j in range(n_boards):  # an estimate that would leave no action is skipped (as surviving)
        if remember and floor[j] * min_norm >= 1.0 + INERT_MARGIN:
            # certainly inert: every width b_a = min(2, scale ||U^T phi_a||) exceeds 1, so f_a + b_a
            # > 0 > max_a' (f_a' - b_a') for means f in [-1, 1], and Eq. (8) keeps every action
            continue
        lcb = -np.inf
        for a in range(K):
            z = 0.0
            for i in range(d):
                z += F[a, i] * theta[j, i]
            f[a] = min(1.0, max(-1.0, link_mu(code, z)))
            sq = 0.0
            for c in range(d):
                v = 0.0
                for i in range(d):
                    v += F[a, i] * U[j, i, c]
                sq += v * v
            b[a] = min(2.0, scale[j] * math.sqrt(sq))
            lcb = max(lcb, f[a] - b[a])
        left = 0
        for a in range(K):
            if keep[a] and f[a] + b[a] >= lcb:
                left += 1
        if left > 0:
            for a in range(K):
                if f[a] + b[a] < lcb:
                    keep[a] = False
    m = 0
    for a in range(K):
        if keep[a]:
            S[m] = a
            for i in range(d):
                Fs[m, i] = F[a, i]
            m += 1
    n = _spanner_rows(Fs, m, C, tol, ws, buf)
    k = min(int(rng.random() * n), n - 1)
    return int(S[buf[k]])


@nb.njit(cache=True)
def select_planned(
    contexts: np.ndarray,
    theta: np.ndarray,
    U: np.ndarray,
    scale: np.ndarray,
    n_boards: np.ndarray,
    code: int,
    C: float,
    tol: float,
    rng: np.random.Generator,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """One round of Algorithm 4 in every replication: ``out[r]`` uniform over the ``C``-spanner of
    the actions of ``contexts[r]`` (K, d) that survive the ``n_boards[r]`` released estimates
    (:func:`plan_one` per replication, in replication order)."""
    R, K, d = contexts.shape
    ws = plan_workspace(K, d)
    memory = (np.empty((1, 1, d, d)), np.empty((1, 1)), np.empty((1, 1)))  # unused: remember=False
    for r in range(R):
        out[r] = plan_one(
            contexts[r],
            theta[r],
            U[r],
            scale[r],
            n_boards[r],
            code,
            C,
            tol,
            rng,
            ws,
            memory,
            r,
            False,
        )
