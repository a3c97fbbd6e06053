"""(Regularized) maximum-likelihood estimation for generalized linear models, compiled per replication.

The estimator solves, independently in every replication ``r``,

.. math::

    \\hat\\theta = \\arg\\min_\\theta \\; \\sum_i w_i \\big( m(x_i^\\top\\theta) - y_i\\, x_i^\\top\\theta \\big)
                 + \\tfrac{\\lambda}{2} \\lVert \\theta \\rVert^2 ,

where ``m`` is the antiderivative of the inverse link ``mu`` (:mod:`privbandits.core.links`; its
compiled form is :func:`link_m`).  Its stationarity condition
``sum_i w_i (y_i - mu(x_i' theta)) x_i = lambda theta`` is the (ridge regularized) likelihood
equation of Filippi et al. (2010), eq. (3); for the canonical links (identity, logistic, Poisson)
it is the exact GLM maximum-likelihood estimator, for the probit link the quasi-likelihood
estimator with the same estimating equation.  The objective is convex because ``m'' = mu' >= 0``.

The solver (:func:`newton_mle_row`, the one implementation, called by GLM-UCB's compiled kernel
and by the numpy front end :func:`fit_glm_mle`) is damped Newton (iteratively reweighted least
squares) with a backtracking (Armijo) step; it stops as soon as the half Newton decrement
``g^T H^{-1} g / 2`` (an affine-invariant bound on the suboptimality in the objective) is below
``tol``, so a warm-started refit costs one Hessian solve when the previous estimate is still
optimal.

Data can be given per observation (features with an optional weights mask, e.g. a padded history
with zero weights past the current length) or aggregated: repeated feature vectors are handled
exactly by weights (for a fixed action set, ``weights = n_a`` pulls and ``y = s_a / n_a`` mean
reward of arm ``a`` give the same objective as the raw data).  For the identity link the
estimator depends on the data only through ``X^T W X`` and ``X^T W y``; :func:`ridge_from_stats`
solves it from those running sufficient statistics.

References
----------
Filippi, Cappe, Garivier & Szepesvari (2010), "Parametric Bandits: The Generalized Linear Case",
NeurIPS, Section 2 (maximum-likelihood equation (3)).
McCullagh & Nelder (1989), *Generalized Linear Models*, Section 2.5 (IRLS).
Boyd & Vandenberghe (2004), *Convex Optimization*, Section 9.5 (Newton decrement, backtracking).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from privbandits.algorithms._shared.linalg import cholesky_lower, cholesky_solve
from privbandits.algorithms.kernel import pinned
from privbandits.core.errors import ValidationError
from privbandits.core.links import (
    LINK_IDENTITY,
    LINK_LOGISTIC,
    LINK_PROBIT,
    POISSON_Z_MAX,
    Link,
    get_link,
    link_dmu,
    link_mu,
)
from privbandits.core.validation import (
    check_finite_array,
    check_int,
    check_nonnegative,
    check_positive,
)

__all__ = [
    "GLMFit",
    "fit_glm_mle",
    "glm_gradient_hessian",
    "glm_objective",
    "link_m",
    "newton_mle_row",
    "ridge_from_stats",
]

#: Armijo sufficient-decrease constant and the maximal number of step halvings per Newton step.
ARMIJO_C = 1e-4
MAX_HALVINGS = 40
#: Relative objective resolution below which a stalled line search counts as converged.
RESOLUTION = 1e4 * np.finfo(float).eps
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@nb.njit(cache=True)
def link_m(code: int, z: float) -> float:  # pragma: no cover - compiled
    """Antiderivative ``m`` of the link's ``mu`` (``m' = mu``), compiled; same conventions as
    :attr:`privbandits.core.links.Link.m`.

    identity ``z^2/2``; logistic ``log(1 + e^z)``; Poisson ``exp(min(z, 50))``; probit
    ``z Phi(z) + phi(z)``, for ``z < -5`` written as ``phi(z) c R`` with the Mills ratio
    ``R = Phi(z)/phi(z) = 1/(x + c)``, ``x = -z``, ``c = 1/(x + 2/(x + 3/(x + ...)))`` (a
    continued fraction), which avoids the cancellation of ``1 - x R``.
    """
    if code == LINK_IDENTITY:
        return 0.5 * z * z
    if code == LINK_LOGISTIC:
        return max(z, 0.0) + math.log1p(math.exp(-abs(z)))
    if code == LINK_PROBIT:
        phi = math.exp(-0.5 * z * z) * _INV_SQRT_2PI
        if z >= -5.0:
            return z * 0.5 * math.erfc(-z / math.sqrt(2.0)) + phi
        x = -z
        tail = 0.0
        for k in range(80, 1, -1):
            tail = k / (x + tail)
        c = 1.0 / (x + tail)
        return phi * c / (x + c)
    return math.exp(min(z, POISSON_Z_MAX))


@nb.njit(cache=True)
def _objective(theta, X, y, w, n, code, lam):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    f = 0.0
    for i in range(n):
        if w[i] == 0.0:
            continue
        z = 0.0
        for j in range(theta.shape[0]):
            z += X[i, j] * theta[j]
        f += w[i] * (link_m(code, z) - y[i] * z)
    s = 0.0
    for j in range(theta.shape[0]):
        s += theta[j] * theta[j]
    return f + 0.5 * lam * s


@nb.njit(cache=True)
def _gradient_hessian(theta, X, y, w, n, code, lam, grad, H):  # type: ignore[no-untyped-def]  # pragma: no cover
    d = theta.shape[0]
    for j in range(d):
        grad[j] = lam * theta[j]
        for k in range(d):
            H[j, k] = 0.0
        H[j, j] = lam
    for i in range(n):
        if w[i] == 0.0:
            continue
        z = 0.0
        for j in range(d):
            z += X[i, j] * theta[j]
        resid = w[i] * (link_mu(code, z) - y[i])
        curv = w[i] * link_dmu(code, z)
        for j in range(d):
            grad[j] += resid * X[i, j]
            for k in range(j + 1):
                H[j, k] += curv * X[i, j] * X[i, k]
    for j in range(d):
        for k in range(j):
            H[k, j] = H[j, k]


@pinned
def _lstsq_direction(H, grad, p):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``p`` = the least-squares solution of ``H p = grad`` (LAPACK allocates: pinned to numba's
    runtime, so that allocation-free steps calling the solver compile without it)."""
    p[:] = np.linalg.lstsq(H, grad)[0]


@nb.njit(cache=True)
def _newton_direction(H, grad, p, L):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``p = H^{-1} grad`` (Cholesky); least squares where ``H`` is singular (``lam = 0``)."""
    if cholesky_lower(H, L):
        cholesky_solve(L, grad, p)
    else:
        _lstsq_direction(H, grad, p)


@nb.njit(cache=True)
def newton_mle_row(X, y, w, n, code, lam, theta, n_iter, tol, grad, H, L, p, new):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Damped Newton for one replication's regularized GLM likelihood (in place on ``theta``).

    Parameters
    ----------
    X : ndarray (N, d), y, w : ndarray (N,)
        Observations; only the first ``n`` rows are used (rows with ``w = 0`` are skipped).
    code : int
        Link code (:attr:`Link.code`).
    lam : float
        Ridge parameter ``>= 0``.
    theta : ndarray (d,)
        Warm start; overwritten with the estimate.
    n_iter : int
        Maximal number of Newton steps.
    tol : float
        Convergence threshold on the half Newton decrement.
    grad, p, new : ndarray (d,); H, L : ndarray (d, d)
        Scratch; on return ``H`` is the Hessian at ``theta``.

    Returns
    -------
    (converged, steps, decrement) : (bool, int, float)
    """
    steps = 0
    dec = np.inf
    d = theta.shape[0]
    _gradient_hessian(theta, X, y, w, n, code, lam, grad, H)
    while True:
        _newton_direction(H, grad, p, L)
        lam2 = 0.0
        for j in range(d):
            lam2 += grad[j] * p[j]
        dec = 0.5 * max(lam2, 0.0)
        if not dec > tol or steps >= n_iter:
            break
        f0 = _objective(theta, X, y, w, n, code, lam)
        step = 1.0
        accepted = False
        for _ in range(MAX_HALVINGS):
            for j in range(d):
                new[j] = theta[j] - step * p[j]
            f1 = _objective(new, X, y, w, n, code, lam)
            if math.isfinite(f1) and f1 <= f0 - ARMIJO_C * step * lam2:
                accepted = True
                break
            step *= 0.5
        steps += 1
        if not accepted:
            # no Armijo step exists: the iterate is optimal to floating-point resolution of the
            # objective; stop there (converged when the decrement is at that level)
            if dec <= RESOLUTION * (1.0 + abs(f0)):
                dec = 0.0
            break
        for j in range(d):
            theta[j] = new[j]
        _gradient_hessian(theta, X, y, w, n, code, lam, grad, H)
    return dec <= tol, steps, dec


# -- numpy front end -----------------------------------------------------------------------------
@dataclass(frozen=True)
class GLMFit:
    """Result of :func:`fit_glm_mle` (arrays carry the replication axis first).

    Attributes
    ----------
    theta : ndarray of shape (R, d)
        The (regularized) maximum-likelihood estimate.
    converged : ndarray of bool, shape (R,)
        Whether the Newton decrement reached ``tol`` within ``n_iter`` steps.
    n_iter : ndarray of int, shape (R,)
        Newton steps taken per replication.
    decrement : ndarray of shape (R,)
        Final half Newton decrement ``g^T H^{-1} g / 2`` (upper bound on the objective gap for
        quadratic objectives, an estimate of it otherwise).
    hessian : ndarray of shape (R, d, d)
        Hessian of the objective at ``theta``: ``sum_i w_i mu'(x_i' theta) x_i x_i^T + lam I``.
    """

    theta: np.ndarray
    converged: np.ndarray
    n_iter: np.ndarray
    decrement: np.ndarray
    hessian: np.ndarray


def _prepare(
    X: np.ndarray, y: np.ndarray, weights: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X = check_finite_array("X", X)
    if X.ndim == 2:
        X = X[None]
    if X.ndim != 3:
        raise ValidationError(f"X must have shape (R, n, d) or (n, d), got {X.shape}")
    R, n, _ = X.shape
    y = check_finite_array("y", y)
    if y.ndim == 1 and R == 1 and y.shape[0] == n:
        y = y[None]
    if y.shape != (R, n):
        raise ValidationError(f"y must have shape ({R}, {n}) to match X {X.shape}, got {y.shape}")
    if weights is None:
        w = np.ones((R, n))
    else:
        w = check_finite_array("weights", weights)
        if w.ndim == 1 and w.shape[0] == n:
            w = np.broadcast_to(w, (R, n))
        if w.shape != (R, n):
            raise ValidationError(f"weights must have shape ({R}, {n}) or ({n},), got {w.shape}")
        if w.size and w.min() < 0:
            raise ValidationError(f"weights must be non-negative, got minimum {w.min():g}")
    as_c = np.ascontiguousarray
    return as_c(X, dtype=float), as_c(y, dtype=float), as_c(w, dtype=float)


def glm_objective(
    theta: np.ndarray, X: np.ndarray, y: np.ndarray, w: np.ndarray, link: Link, lam: float
) -> np.ndarray:
    """Regularized negative log-likelihood ``sum_i w_i (m(z_i) - y_i z_i) + lam/2 |theta|^2`` (R,)."""
    theta, X, y, w = (np.ascontiguousarray(a, dtype=float) for a in (theta, X, y, w))
    code, n = get_link(link).code, X.shape[1]
    return np.array(
        [_objective(theta[r], X[r], y[r], w[r], n, code, float(lam)) for r in range(X.shape[0])]
    )


def glm_gradient_hessian(
    theta: np.ndarray, X: np.ndarray, y: np.ndarray, w: np.ndarray, link: Link, lam: float
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient (R, d) and Hessian (R, d, d) of :func:`glm_objective` at ``theta``."""
    theta, X, y, w = (np.ascontiguousarray(a, dtype=float) for a in (theta, X, y, w))
    R, n, d = X.shape
    code = get_link(link).code
    grad, H = np.empty((R, d)), np.empty((R, d, d))
    for r in range(R):
        _gradient_hessian(theta[r], X[r], y[r], w[r], n, code, float(lam), grad[r], H[r])
    return grad, H


def fit_glm_mle(
    X: np.ndarray,
    y: np.ndarray,
    link: str | Link,
    lam: float = 1.0,
    theta0: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    n_iter: int = 50,
    tol: float = 1e-10,
) -> GLMFit:
    """Regularized GLM maximum-likelihood estimate by damped Newton, for every replication.

    Parameters
    ----------
    X : ndarray of shape (R, n, d) or (n, d)
        Features of the observations (a padded history is fine: give padding zero weight).
    y : ndarray of shape (R, n) or (n,)
        Responses (rewards).  With aggregated data, the mean response of each distinct row.
    link : str or Link
        Inverse link (identity, logistic, probit, poisson).
    lam : float
        Ridge parameter ``lambda >= 0``.  With ``lam = 0`` the estimate may not exist (e.g.
        separable logistic data); the iteration then stops at ``n_iter`` with
        ``converged = False``.
    theta0 : ndarray of shape (R, d), optional
        Warm start (default zeros).
    weights : ndarray of shape (R, n) or (n,), optional
        Non-negative observation weights (counts for aggregated rows, 0/1 for a validity mask).
    n_iter : int
        Maximal number of Newton steps.
    tol : float
        Convergence threshold on the half Newton decrement ``g^T H^{-1} g / 2``.

    Returns
    -------
    GLMFit

    References
    ----------
    Filippi et al. (2010), eq. (3); Boyd & Vandenberghe (2004), Algorithm 9.5 (Newton's method
    with backtracking line search).
    """
    lk = get_link(link)
    lam = check_nonnegative("lam", lam)
    n_iter = check_int("n_iter", n_iter, 1)
    tol = check_positive("tol", tol)
    X, y, w = _prepare(X, y, weights)
    R, n, d = X.shape
    if theta0 is None:
        theta = np.zeros((R, d))
    else:
        theta = check_finite_array("theta0", theta0).astype(float, copy=True)
        if theta.shape == (d,):
            theta = np.broadcast_to(theta, (R, d)).copy()
        if theta.shape != (R, d):
            raise ValidationError(f"theta0 must have shape ({R}, {d}), got {theta.shape}")
    theta = np.ascontiguousarray(theta)
    converged = np.zeros(R, dtype=bool)
    steps = np.zeros(R, dtype=int)
    dec = np.zeros(R)
    H = np.empty((R, d, d))
    grad, p, new, L = np.empty(d), np.empty(d), np.empty(d), np.empty((d, d))
    for r in range(R):
        converged[r], steps[r], dec[r] = newton_mle_row(
            X[r], y[r], w[r], n, lk.code, lam, theta[r], n_iter, tol, grad, H[r], L, p, new
        )
    return GLMFit(theta=theta, converged=converged, n_iter=steps, decrement=dec, hessian=H)


def ridge_from_stats(gram: np.ndarray, xy: np.ndarray, lam: float) -> np.ndarray:
    """Identity-link MLE from running sufficient statistics: ``(X^T W X + lam I)^{-1} X^T W y``.

    Parameters
    ----------
    gram : ndarray of shape (R, d, d)
        ``sum_i w_i x_i x_i^T``.
    xy : ndarray of shape (R, d)
        ``sum_i w_i y_i x_i``.
    lam : float
        Ridge parameter ``>= 0`` (with 0 a singular Gram matrix falls back to least squares).

    Returns
    -------
    ndarray of shape (R, d)
    """
    lam = check_nonnegative("lam", lam)
    gram = check_finite_array("gram", gram, ndim=3)
    xy = check_finite_array("xy", xy, ndim=2)
    d = gram.shape[-1]
    if gram.shape[-2] != d or xy.shape != gram.shape[:1] + (d,):
        raise ValidationError(
            f"gram (R, d, d) and xy (R, d) do not match: {gram.shape}, {xy.shape}"
        )
    A = gram + lam * np.eye(d)
    try:
        return np.linalg.solve(A, xy[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return np.stack([np.linalg.lstsq(a, v, rcond=None)[0] for a, v in zip(A, xy)])
