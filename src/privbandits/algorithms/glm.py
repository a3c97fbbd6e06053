"""Batched (regularized) maximum-likelihood estimation for generalized linear models.

The estimator solves, independently in every replication ``r``,

.. math::

    \\hat\\theta = \\arg\\min_\\theta \\; \\sum_i w_i \\big( m(x_i^\\top\\theta) - y_i\\, x_i^\\top\\theta \\big)
                 + \\tfrac{\\lambda}{2} \\lVert \\theta \\rVert^2 ,

where ``m`` is the antiderivative of the inverse link ``mu`` (:mod:`privbandits.core.links`).  Its
stationarity condition ``sum_i w_i (y_i - mu(x_i' theta)) x_i = lambda theta`` is the (ridge
regularized) likelihood equation of Filippi et al. (2010), eq. (3); for the canonical links
(identity, logistic, Poisson) it is the exact GLM maximum-likelihood estimator, for the probit link
it is the quasi-likelihood estimator with the same estimating equation.  The objective is convex
because ``m'' = mu' >= 0``.

The solver is damped Newton (iteratively reweighted least squares) batched over the replication
axis: ``(R, d, d)`` Hessians are solved together, every replication gets its own backtracking
(Armijo) step size, and a replication stops as soon as its Newton decrement
``g^T H^{-1} g / 2`` (an affine-invariant bound on the suboptimality in the objective) is below
``tol``.  Converged replications are frozen, so warm-started refits cost one Hessian solve when
the previous estimate is still optimal.

Data can be given per observation (``(R, n, d)`` features with an optional weights mask, e.g. a
padded history with zero weights past the current length) or aggregated: repeated feature vectors
are handled exactly by weights (for a fixed action set, ``weights = n_a`` pulls and
``y = s_a / n_a`` mean reward of arm ``a`` give the same objective as the raw data).  For the
identity link the estimator depends on the data only through ``X^T W X`` and ``X^T W y``;
:func:`ridge_from_stats` solves it from those running sufficient statistics.

References
----------
Filippi, Cappe, Garivier & Szepesvari (2010), "Parametric Bandits: The Generalized Linear Case",
NeurIPS, Section 2 (maximum-likelihood equation (3)).
McCullagh & Nelder (1989), *Generalized Linear Models*, Section 2.5 (IRLS).
Boyd & Vandenberghe (2004), *Convex Optimization*, Section 9.5 (Newton decrement, backtracking).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.links import Link, get_link
from privbandits.core.validation import (
    check_finite_array,
    check_int,
    check_nonnegative,
    check_positive,
)

__all__ = ["GLMFit", "fit_glm_mle", "glm_gradient_hessian", "glm_objective", "ridge_from_stats"]

#: Armijo sufficient-decrease constant and the maximal number of step halvings per Newton step.
_ARMIJO_C = 1e-4
_MAX_HALVINGS = 40
#: Relative objective resolution below which a stalled line search counts as converged.
_RESOLUTION = 1e4 * np.finfo(float).eps


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
    return X, y, w


def glm_objective(
    theta: np.ndarray, X: np.ndarray, y: np.ndarray, w: np.ndarray, link: Link, lam: float
) -> np.ndarray:
    """Regularized negative log-likelihood ``sum_i w_i (m(z_i) - y_i z_i) + lam/2 |theta|^2`` (R,)."""
    z = np.einsum("rnd,rd->rn", X, theta)
    return np.einsum("rn,rn->r", w, link.m(z) - y * z) + 0.5 * lam * np.einsum("rd,rd->r", theta, theta)


def glm_gradient_hessian(
    theta: np.ndarray, X: np.ndarray, y: np.ndarray, w: np.ndarray, link: Link, lam: float
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient (R, d) and Hessian (R, d, d) of :func:`glm_objective` at ``theta``."""
    z = np.einsum("rnd,rd->rn", X, theta)
    resid = w * (link.mu(z) - y)
    grad = np.einsum("rn,rnd->rd", resid, X) + lam * theta
    curv = w * link.dmu(z)
    H = np.einsum("rn,rnd,rne->rde", curv, X, X)
    d = X.shape[-1]
    H[:, np.arange(d), np.arange(d)] += lam
    return grad, H


def _newton_direction(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Solve ``H p = g`` per replication; least squares where ``H`` is singular (lam = 0)."""
    try:
        return np.linalg.solve(H, g[..., None])[..., 0]
    except np.linalg.LinAlgError:
        out = np.empty_like(g)
        for k in range(H.shape[0]):
            out[k] = np.linalg.lstsq(H[k], g[k], rcond=None)[0]
        return out


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
    """Regularized GLM maximum-likelihood estimate by damped Newton, batched over replications.

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
    R, _, d = X.shape
    if theta0 is None:
        theta = np.zeros((R, d))
    else:
        theta = check_finite_array("theta0", theta0).astype(float, copy=True)
        if theta.shape == (d,):
            theta = np.broadcast_to(theta, (R, d)).copy()
        if theta.shape != (R, d):
            raise ValidationError(f"theta0 must have shape ({R}, {d}), got {theta.shape}")

    active = np.ones(R, dtype=bool)
    steps = np.zeros(R, dtype=int)
    dec = np.full(R, np.inf)
    grad, H = glm_gradient_hessian(theta, X, y, w, lk, lam)
    for _ in range(n_iter + 1):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        p = _newton_direction(H[idx], grad[idx])
        lam2 = np.einsum("rd,rd->r", grad[idx], p)
        dec[idx] = 0.5 * np.maximum(lam2, 0.0)
        done = ~(dec[idx] > tol) | (steps[idx] >= n_iter)
        active[idx[done]] = False
        idx, p, lam2 = idx[~done], p[~done], lam2[~done]
        if idx.size == 0:
            break
        Xi, yi, wi = X[idx], y[idx], w[idx]
        f0 = glm_objective(theta[idx], Xi, yi, wi, lk, lam)
        step = np.ones(idx.size)
        pending = np.ones(idx.size, dtype=bool)
        new = theta[idx] - p
        for _h in range(_MAX_HALVINGS):
            f1 = glm_objective(new, Xi, yi, wi, lk, lam)
            ok = np.isfinite(f1) & (f1 <= f0 - _ARMIJO_C * step * lam2)
            pending &= ~ok
            if not pending.any():
                break
            step = np.where(pending, 0.5 * step, step)
            new = np.where(pending[:, None], theta[idx] - step[:, None] * p, new)
        # a step that never satisfied Armijo (round-off at the optimum) is not taken
        new = np.where(pending[:, None], theta[idx], new)
        theta[idx] = new
        steps[idx] += 1
        # no Armijo step exists: the iterate is optimal to floating-point resolution of the
        # objective; stop there and count it as converged when the decrement is at that level
        stuck = pending
        active[idx[stuck]] = False
        at_resolution = stuck & (dec[idx] <= _RESOLUTION * (1.0 + np.abs(f0)))
        dec[idx[at_resolution]] = 0.0
        g_new, H_new = glm_gradient_hessian(theta[idx], Xi, yi, wi, lk, lam)
        grad[idx], H[idx] = g_new, H_new
    converged = dec <= tol
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
        raise ValidationError(f"gram (R, d, d) and xy (R, d) do not match: {gram.shape}, {xy.shape}")
    return _newton_direction(gram + lam * np.eye(d), xy)
