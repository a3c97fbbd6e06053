"""Linear-algebra helpers shared by the algorithms.

* numpy helpers batched over a leading replication axis ``R`` (:func:`chosen`, :func:`quad_form`,
  :func:`sherman_morrison_update`, :func:`batched_solve`, :func:`solve_2x2`, :func:`spd_inverse`);
* compiled per-replication helpers for kernels (one row of the state at a time, no allocation):
  Cholesky factor / solve / inverse, Sherman-Morrison, Euclidean and Mahalanobis ball
  projections, the block one-hot features ``e_a kron X`` of the multi-parameter setting, and the
  optimistic (UCB) argmax over arms with random tie breaking.

The compiled helpers are ``inline="always"``: kernels call them on row views (``A[r]``), and a
view passed to a non-inlined function costs two atomic reference-count operations per array,
which at ``d = 2`` is more than the arithmetic.  :func:`feature` dispatches on ``X.ndim`` by a
branch and cannot be inlined (the branch is resolved when the caller is compiled); kernels
branch on ``X.ndim`` themselves and call the inlined single/block forms.  :func:`ucb_argmax`
serves both shapes inlined: its per-arm score is an overload chosen on the type of ``X``.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
from numba.extending import overload

from privbandits.core.links import link_mu

__all__ = [
    "add_outer",
    "batched_solve",
    "cholesky_lower",
    "cholesky_solve",
    "chosen",
    "dot",
    "eliminate_and_score",
    "feature",
    "feature_block",
    "feature_single",
    "mahalanobis_ball_projection_row",
    "mat_vec",
    "min_eigenvalue",
    "project_ball",
    "project_blocks",
    "quad_form",
    "quadratic_forms",
    "sherman_morrison_row",
    "sherman_morrison_update",
    "solve_2x2",
    "spd_inverse",
    "spd_inverse_into",
    "ucb_argmax",
    "ucb_argmax_block",
    "ucb_argmax_single",
]


def chosen(contexts: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Feature vectors of the chosen arms: ``(R, K, d), (R,) -> (R, d)``."""
    return contexts[np.arange(contexts.shape[0]), actions]


def quad_form(M: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``x^T M x`` for every arm: ``(R, d, d), (R, K, d) -> (R, K)``."""
    return np.einsum("rkd,rkd->rk", X @ M, X)  # much faster than a three-operand einsum


def sherman_morrison_update(V_inv: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(V + x x^T)^{-1}`` from ``V^{-1}`` (R, d, d) and ``x`` (R, d), plus ``x^T V^{-1} x``.

    Returns
    -------
    V_inv_new : ndarray (R, d, d)
    q : ndarray (R,)
        ``x^T V^{-1} x`` before the update (used for ``log det`` via the determinant lemma).
    """
    Vx = np.einsum("rde,re->rd", V_inv, x)
    q = np.einsum("rd,rd->r", x, Vx)
    V_inv_new = V_inv - np.einsum("rd,re->rde", Vx, Vx) / (1.0 + q)[:, None, None]
    return V_inv_new, q


def batched_solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``A x = b`` for each replication; falls back to least squares if ``A`` is singular."""
    try:
        return np.linalg.solve(A, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return np.stack([np.linalg.lstsq(a, v, rcond=None)[0] for a, v in zip(A, b)])


def solve_2x2(A: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """Closed-form batched solve of ``A x = b`` for ``2 x 2`` systems (Cramer's rule).

    About five times faster than a batched LAPACK call at this size, with the same accuracy on
    well-conditioned systems.  Returns None when some system is singular or ill-conditioned
    (``|det| <= 1e-12 * ||A||_F^2``), so the caller can fall back to a pivoted solver.
    """
    a, b_, c, e = A[..., 0, 0], A[..., 0, 1], A[..., 1, 0], A[..., 1, 1]
    det = a * e - b_ * c
    scale = a * a + b_ * b_ + c * c + e * e
    if not np.all(np.abs(det) > 1e-12 * scale):
        return None
    u0, u1 = b[..., 0], b[..., 1]
    out = np.empty(b.shape)
    out[..., 0] = (e * u0 - b_ * u1) / det
    out[..., 1] = (a * u1 - c * u0) / det
    return out


def spd_inverse(A: np.ndarray) -> np.ndarray | None:
    """Inverse of a batch of symmetric matrices, or None if any is not positive definite.

    ``2 x 2``: closed form with the exact PD test ``a > 0, det > 0`` (several times faster than
    Cholesky + LAPACK inverse at this size); otherwise a Cholesky test and ``numpy.linalg.inv``.
    """
    if A.shape[-1] == 2:
        a, b, e = A[..., 0, 0], A[..., 0, 1], A[..., 1, 1]
        det = a * e - b * b
        if not (np.all(a > 0.0) and np.all(det > 1e-300)):
            return None
        out = np.empty(A.shape)
        out[..., 0, 0] = e / det
        out[..., 1, 1] = a / det
        out[..., 0, 1] = out[..., 1, 0] = -b / det
        return out
    try:
        np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return None
    return np.linalg.inv(A)


# ------------------------------------------------------------------------------------------------
# compiled per-replication helpers (used inside kernels; one row of the state at a time)
# ------------------------------------------------------------------------------------------------
@nb.njit(cache=True, inline="always")
def cholesky_lower(
    A: np.ndarray, L: np.ndarray, shift: float = 0.0
) -> bool:  # pragma: no cover - compiled
    """Cholesky factor ``A - shift I = L L^T`` into the lower triangle of ``L``; False if not PD.

    Only the lower triangle of ``A`` is read and only the lower triangle of ``L`` is written
    (``L`` may be ``A``: row ``i`` of the factor only reads rows ``<= i``).
    """
    D = A.shape[0]
    for j in range(D):
        s = A[j, j] - shift
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        ljj = math.sqrt(s)
        L[j, j] = ljj
        for i in range(j + 1, D):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / ljj
    return True


@nb.njit(cache=True, inline="always")
def min_eigenvalue(A: np.ndarray, L: np.ndarray) -> float:  # pragma: no cover - compiled
    """A lower bound on ``lambda_min(A)`` of a symmetric ``A``, tight to floating-point resolution.

    Bisection on ``mu`` with the Cholesky test of ``A - mu I`` (PD iff ``mu < lambda_min``),
    started from Gershgorin's interval; no allocation (``L`` is ``(D, D)`` scratch).
    """
    D = A.shape[0]
    lo = math.inf
    hi = math.inf
    for i in range(D):
        off = 0.0
        for j in range(D):
            if j != i:
                off += abs(A[i, j])
        lo = min(lo, A[i, i] - off)
        hi = min(hi, A[i, i])
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if cholesky_lower(A, L, mid):
            lo = mid
        else:
            hi = mid
    return lo


@nb.njit(cache=True, inline="always")
def cholesky_solve(L: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """``out = (L L^T)^{-1} b`` by forward and back substitution (``out`` may be ``b``)."""
    D = L.shape[0]
    for i in range(D):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * out[k]
        out[i] = s / L[i, i]
    for i in range(D - 1, -1, -1):
        s = out[i]
        for k in range(i + 1, D):
            s -= L[k, i] * out[k]
        out[i] = s / L[i, i]


@nb.njit(cache=True, inline="always")
def spd_inverse_into(
    A: np.ndarray, M: np.ndarray, L: np.ndarray, W: np.ndarray
) -> bool:  # pragma: no cover
    """``M = A^{-1}`` for a symmetric positive definite ``A`` via Cholesky; False if not PD.

    ``L`` and ``W`` are ``(D, D)`` scratch: ``A = L L^T``, ``W = L^{-1}``, ``M = W^T W`` (closed
    form for ``D = 2``); ``W`` may be ``A`` (it is written after ``A`` is factored).  ``M`` is
    left untouched when ``A`` is not positive definite.
    """
    D = A.shape[0]
    if D == 2:  # closed form; a 2 x 2 symmetric matrix is PD iff a > 0 and det > 0
        a, b, c = A[0, 0], A[1, 0], A[1, 1]
        det = a * c - b * b
        if not (a > 0.0 and det > 0.0):
            return False
        inv = 1.0 / det
        M[0, 0] = c * inv
        M[1, 1] = a * inv
        M[0, 1] = M[1, 0] = -b * inv
        return True
    if not cholesky_lower(A, L):
        return False
    for j in range(D):
        W[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, D):
            s = 0.0
            for k in range(j, i):
                s -= L[i, k] * W[k, j]
            W[i, j] = s / L[i, i]
    for i in range(D):
        for j in range(i, D):
            s = 0.0
            for k in range(j, D):
                s += W[k, i] * W[k, j]
            M[i, j] = s
            M[j, i] = s
    return True


@nb.njit(cache=True, inline="always")
def mat_vec(M: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out = M v`` (``out`` must not alias ``v``)."""
    for i in range(M.shape[0]):
        s = 0.0
        for j in range(M.shape[1]):
            s += M[i, j] * v[j]
        out[i] = s


@nb.njit(cache=True, inline="always")
def dot(a: np.ndarray, b: np.ndarray) -> float:  # pragma: no cover - compiled
    """``a^T b`` of two vectors."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@nb.njit(cache=True, inline="always")
def sherman_morrison_row(
    V_inv: np.ndarray, x: np.ndarray, Vx: np.ndarray
) -> float:  # pragma: no cover
    """``V_inv <- (V + x x^T)^{-1}`` in place; returns ``q = x^T V^{-1} x`` (before the update).

    ``Vx`` is ``(D,)`` scratch.  After the update ``||x||^2_{(V + x x^T)^{-1}} = q / (1 + q)``.
    """
    D = x.shape[0]
    q = 0.0
    for i in range(D):
        s = 0.0
        for j in range(D):
            s += V_inv[i, j] * x[j]
        Vx[i] = s
        q += x[i] * s
    c = 1.0 / (1.0 + q)
    for i in range(D):
        for j in range(D):
            V_inv[i, j] -= c * Vx[i] * Vx[j]
    return q


@nb.njit(cache=True, inline="always")
def add_outer(A: np.ndarray, x: np.ndarray, scale: float) -> None:  # pragma: no cover - compiled
    """``A += scale * x x^T`` in place."""
    D = x.shape[0]
    for i in range(D):
        for j in range(D):
            A[i, j] += scale * x[i] * x[j]


@nb.njit(cache=True, inline="always")
def project_ball(v: np.ndarray, radius: float) -> None:  # pragma: no cover - compiled
    """Euclidean projection of ``v`` onto the ball of ``radius`` (in place): ``v min(1, radius/||v||)``."""
    s = 0.0
    for i in range(v.shape[0]):
        s += v[i] * v[i]
    if s > radius * radius:
        c = radius / math.sqrt(s)
        for i in range(v.shape[0]):
            v[i] *= c


@nb.njit(cache=True, inline="always")
def project_blocks(v: np.ndarray, radius: float, K: int) -> None:  # pragma: no cover - compiled
    """Projection of ``v`` (``K d``) onto the product of ``K`` balls of ``radius``, one per block."""
    d = v.shape[0] // K
    for k in range(K):
        project_ball(v[k * d : (k + 1) * d], radius)


@nb.njit(cache=True, inline="always")
def mahalanobis_ball_projection_row(
    A: np.ndarray,
    theta: np.ndarray,
    radius: float,
    out: np.ndarray,
    L: np.ndarray,
    c: np.ndarray,
    tmp: np.ndarray,
    tol: float = 1e-12,
    max_iter: int = 100,
) -> int:  # pragma: no cover
    """``out = argmin_{||w|| <= radius} (w - theta)^T A (w - theta)`` for one SPD ``A``.

    Inside the ball ``out = theta``.  Outside, the minimizer is ``w(nu) = (A + nu I)^{-1} A theta``
    with ``nu > 0`` solving ``||w(nu)|| = radius`` (a trust-region secular equation); Newton's
    method on ``phi(nu) = 1/radius - 1/||w(nu)||`` from ``nu = 0`` converges monotonically
    (More & Sorensen 1983).  Each step factors ``A + nu I`` (``L``) and uses
    ``d w / d nu = -(A + nu I)^{-1} w``.  ``L`` (D, D), ``c`` and ``tmp`` (D,) are scratch
    (``out`` must not alias ``theta``).  Returns the number of Newton steps (0 inside the ball).
    """
    D = theta.shape[0]
    n2 = 0.0
    for i in range(D):
        out[i] = theta[i]
        n2 += theta[i] * theta[i]
    if n2 <= radius * radius:
        return 0
    mat_vec(A, theta, c)  # A theta
    nu = 0.0
    steps = 0
    done = False
    while not done and steps < max_iter:
        steps += 1
        for i in range(D):
            for j in range(i + 1):
                L[i, j] = A[i, j]
            L[i, i] += nu
        cholesky_lower(L, L)  # in place: row i of L only reads rows <= i
        cholesky_solve(L, c, out)  # w(nu)
        nw = math.sqrt(dot(out, out))
        done = abs(nw - radius) <= tol * radius
        if not done:
            cholesky_solve(L, out, tmp)  # (A + nu I)^{-1} w
            dnw = -dot(out, tmp) / nw  # d||w|| / d nu
            # Newton step on phi(nu) = 1/radius - 1/||w||, phi' = dnw / ||w||^2
            nu = max(nu - (1.0 / radius - 1.0 / nw) * nw * nw / dnw, 0.0)
    nw = math.sqrt(dot(out, out))
    for i in range(D):
        out[i] *= radius / nw  # remove the last rounding error
    return steps


# -- block one-hot features (multi-parameter setting) and optimistic choice ----------------------
@nb.njit(cache=True, inline="always")
def feature_single(X: np.ndarray, a: int, x: np.ndarray) -> None:  # pragma: no cover - compiled
    """``x = X[a]``: the feature of arm ``a`` in the single-parameter setting."""
    for i in range(x.shape[0]):
        x[i] = X[a, i]


@nb.njit(cache=True, inline="always")
def feature_block(X: np.ndarray, a: int, x: np.ndarray) -> None:  # pragma: no cover - compiled
    """``x = e_a kron X``: the block one-hot feature of arm ``a`` (shared context ``X`` (d,))."""
    d = X.shape[0]
    for i in range(x.shape[0]):
        x[i] = 0.0
    for i in range(d):
        x[a * d + i] = X[i]


@nb.njit(cache=True, inline="always")
def _arm_dot(X: np.ndarray, k: int, theta: np.ndarray) -> float:  # pragma: no cover - compiled
    """``X[k]^T theta`` for contexts ``X`` (K, d)."""
    z = 0.0
    for j in range(X.shape[1]):
        z += X[k, j] * theta[j]
    return z


@nb.njit(cache=True, inline="always")
def _arm_quad(X: np.ndarray, k: int, M: np.ndarray) -> float:  # pragma: no cover - compiled
    """``X[k]^T M X[k]`` for contexts ``X`` (K, d) (not clipped at 0)."""
    d = X.shape[1]
    q = 0.0
    for i in range(d):
        s = 0.0
        for j in range(d):
            s += M[i, j] * X[k, j]
        q += X[k, i] * s
    return q


def _arm_lin_quad(
    X: np.ndarray, k: int, theta: np.ndarray, M: np.ndarray
) -> tuple[float, float]:  # pragma: no cover - replaced by the overload below in compiled code
    """``(x_k^T theta, x_k^T M x_k)`` for arm ``k`` (``x_k = X[k]``, or ``e_k kron X`` if ``X`` is 1-D)."""
    raise NotImplementedError("compiled code only")


@overload(_arm_lin_quad, inline="always")
def _arm_lin_quad_impl(X, k, theta, M):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    # Chosen on the type of ``X`` when the caller is compiled (a branch on ``X.ndim`` in a plain
    # inlined function would be typed on both sides).
    if X.ndim == 1:

        def block(X, k, theta, M):  # type: ignore[no-untyped-def]
            d = X.shape[0]
            o = k * d
            lin = 0.0
            quad = 0.0
            for i in range(d):
                lin += X[i] * theta[o + i]
                s = 0.0
                for j in range(d):
                    s += M[o + i, o + j] * X[j]
                quad += X[i] * s
            return lin, quad

        return block

    def single(X, k, theta, M):  # type: ignore[no-untyped-def]
        d = X.shape[1]
        lin = 0.0
        quad = 0.0
        for i in range(d):  # one pass: ~10% faster than _arm_dot and _arm_quad in turn
            lin += X[k, i] * theta[i]
            s = 0.0
            for j in range(d):
                s += M[i, j] * X[k, j]
            quad += X[k, i] * s
        return lin, quad

    return single


@nb.njit(cache=True, inline="always")
def ucb_argmax(
    X: np.ndarray,
    K: int,
    theta: np.ndarray,
    M: np.ndarray,
    radius: float,
    link_code: int,
    squared: bool,
    rng: np.random.Generator,
) -> int:  # pragma: no cover - compiled
    """``argmax_a mu(x_a^T theta) + radius ||x_a||_M`` (``radius x_a^T M x_a`` if ``squared``).

    ``X`` is ``(K, d)`` (single-parameter setting, ``x_a = X[a]``) or ``(d,)`` (multi-parameter:
    ``x_a = e_a kron X``, so only the diagonal block ``a`` of ``M`` enters).  Exact ties are broken
    uniformly at random exactly as :func:`~privbandits.algorithms.kernel.argmax_ties` does (one
    uniform draw only when the maximum is attained more than once); the scores are recomputed
    in a second sweep instead of stored, so no scratch array is needed.
    """
    best = -math.inf
    n = 0
    arg = 0
    pick = -1
    for sweep in range(2):  # the second sweep only to break an exact tie
        for k in range(K):
            lin, quad = _arm_lin_quad(X, k, theta, M)
            quad = max(quad, 0.0)
            score = link_mu(link_code, lin) + radius * (quad if squared else math.sqrt(quad))
            if sweep == 0:
                if score > best or n == 0:
                    best, n, arg = score, 1, k
                elif score == best:
                    n += 1
            elif score == best:
                if pick == 0:
                    return k
                pick -= 1
        if n == 1:
            return arg
        pick = int(rng.random() * n)
    return arg


@nb.njit(cache=True, inline="always")
def ucb_argmax_single(X, theta, M, radius, link_code, squared, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`ucb_argmax` for contexts ``X`` (K, d): ``x_a = X[a]`` (its arguments but ``K``)."""
    return ucb_argmax(X, X.shape[0], theta, M, radius, link_code, squared, rng)


#: :func:`ucb_argmax` for a shared context ``X`` (d,): ``x_a = e_a kron X`` (block ``a`` of ``M``).
ucb_argmax_block = ucb_argmax


@nb.njit(cache=True)
def feature(X: np.ndarray, a: int, x: np.ndarray) -> None:  # pragma: no cover - compiled
    """The model feature of arm ``a``: ``X[a]`` (``X`` (K, d)) or ``e_a kron X`` (``X`` (d,))."""
    if X.ndim == 1:  # resolved at compile time
        feature_block(X, a, x)
    else:
        feature_single(X, a, x)


@nb.njit(cache=True)
def quadratic_forms(
    M: np.ndarray, X: np.ndarray, out: np.ndarray
) -> float:  # pragma: no cover - compiled
    """``out[k] = X[k]^T M X[k]`` for every row of ``X`` (K, d); returns the largest (at least -1).

    The exploration test of Criterion I (Sarmasarkar 2026, Alg. 2; Sawarni et al. 2024): the
    widest direction ``max_k ||x_k||^2_{V^-1}`` of the current arms.
    """
    qmax = -1.0
    for k in range(X.shape[0]):
        q = _arm_quad(X, k, M)
        out[k] = q
        qmax = max(qmax, q)
    return qmax


@nb.njit(cache=True)
def eliminate_and_score(
    X: np.ndarray,
    theta_e: np.ndarray,
    radius: float,
    theta_u: np.ndarray,
    M_inv: np.ndarray,
    beta: float,
    scores: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Elimination with one estimate, then the optimistic score with another, in place of ``scores``.

    On entry ``scores[k] = ||x_k||^2_{V^-1}`` (from :func:`quadratic_forms`).  Arms with
    ``<x_k, theta_e> + radius ||x_k||_{V^-1} < max_j (<x_j, theta_e> - radius ||x_j||_{V^-1})`` get
    ``-inf``; the others ``<x_k, theta_u> + beta ||x_k||_{M_inv}``.  The step after Criterion I in
    Sarmasarkar (2026), Algorithm 2, lines 14-15 (eqs. 14-16), and in RS-GLinUCB (Sawarni et al.
    2024), with ``radius = gamma sqrt(kappa)``.
    """
    K = X.shape[0]
    max_lcb = -np.inf
    for k in range(K):
        z = _arm_dot(X, k, theta_e)
        max_lcb = max(max_lcb, z - radius * math.sqrt(max(scores[k], 0.0)))
    for k in range(K):
        z = _arm_dot(X, k, theta_e)
        if z + radius * math.sqrt(max(scores[k], 0.0)) < max_lcb:  # eliminated
            scores[k] = -np.inf
            continue
        u, q = _arm_lin_quad(X, k, theta_u, M_inv)
        scores[k] = u + beta * math.sqrt(max(q, 0.0))
