"""Compiled GLM optimizers and matrix utilities of the rarely-switching GLM bandits.

* :func:`dppgd` -- the Gaussian noisy full-batch projected gradient descent of Sarmasarkar
  (2026), Lemma U.4 (the "DP-SGD optimizer" of Algorithm 2), in its strict form: the number of
  iterations and the ``1/n`` scaling come from public quantities, and the noise
  ``N(0, sigma_sum^2 I)`` is added to the *summed* clipped data gradient, so replacing one data
  point moves each noisy sum by at most ``2 R`` and moving a point between the two data families
  by at most ``R``: each call is ``rho``-zCDP with ``sigma_sum = 2 R sqrt(T_it / (2 rho))``.
* :func:`newton_mle` -- the (non-private) constrained maximum-likelihood estimate by projected
  Newton steps, for RS-GLinUCB (Sawarni et al. 2024).
* :func:`project_ellipsoid` -- Euclidean projection onto ``{theta : ||theta - c||_V <= r}``.
* :func:`floor_pd_inverse` -- eigenvalue floor of a released symmetric matrix and its inverse
  (post-processing of a noisy release).

The loss is the paper's GLM log-loss ``l(theta, x, r) = m(<x, theta>) - r <x, theta>``, whose
gradient is ``(mu(<x, theta>) - r) x`` (Sarmasarkar 2026, section 4; for the probit link this is
the quasi-likelihood with score ``(Phi(z) - r) x``).

References
----------
Sarmasarkar (2026), "Shuffle and Joint Differential Privacy for Generalized Linear Contextual
Bandits", Algorithm 2 and Lemma U.4.  Bun & Steinke (2016) (zCDP of the Gaussian mechanism).
Sawarni, Das, Barman & Sinha (2024), "Generalized Linear Bandits with Limited Adaptivity".
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from privbandits.algorithms.kernel import pinned
from privbandits.core.links import link_dmu, link_mu
from privbandits.privacy.samplers import add_gaussian, clip_l2

__all__ = [
    "dppgd",
    "dppgd_iterations",
    "dppgd_sigma",
    "floor_pd_inverse",
    "max_eig_diff",
    "newton_mle",
    "noisy_gradient_sum",
    "project_ellipsoid",
]


def dppgd_iterations(n_pub: int, rho: float, d: int, zeta_opt: float, max_iters: int) -> int:
    """``T_it = clamp(ceil((n^2 rho + log(1/zeta_opt)) / d), 1, max_iters)`` (Lemma U.4) at public ``n``."""
    raw = math.ceil((float(n_pub) ** 2 * rho + math.log(1.0 / zeta_opt)) / d)
    return int(min(max(raw, 1), max_iters))


@nb.njit(cache=True)
def dppgd_sigma(R: float, T_it: int, rho: float) -> float:  # pragma: no cover - compiled
    """Noise std on the summed gradient: ``sigma_sum = 2 R sqrt(T_it / (2 rho))`` (rho-zCDP over ``T_it`` steps)."""
    return 2.0 * R * math.sqrt(T_it / (2.0 * rho))


@nb.njit(cache=True)
def residual_sums(
    Xs: np.ndarray,
    ys: np.ndarray,
    member: np.ndarray,
    family: int,
    n: int,
    theta: np.ndarray,
    link_code: int,
    R: float,
    hessian: bool,
    g: np.ndarray,
    Hs: np.ndarray,
    x: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """The residual loop shared by the DPPGD step and the Newton refit (accumulates in place).

    ``g += sum_{i < n, member_i = family} clip_R((mu(<x_i, theta>) - y_i) x_i)`` (no clipping when
    ``R`` is infinite) and, if ``hessian``, ``Hs += sum mu'(<x_i, theta>) x_i x_i^T``.  ``x`` is
    scratch of length ``d``.
    """
    d = theta.shape[0]
    for i in range(n):
        if member[i] != family:
            continue
        z = 0.0
        for j in range(d):
            z += Xs[i, j] * theta[j]
        res = link_mu(link_code, z) - ys[i]
        for j in range(d):
            x[j] = res * Xs[i, j]
        if R < math.inf:
            clip_l2(x, R)
        for j in range(d):
            g[j] += x[j]
        if hessian:
            h = link_dmu(link_code, z)
            for j in range(d):
                for k in range(d):
                    Hs[j, k] += h * Xs[i, j] * Xs[i, k]


@nb.njit(cache=True)
def noisy_gradient_sum(
    Xs: np.ndarray,
    ys: np.ndarray,
    member: np.ndarray,
    family: int,
    n: int,
    theta: np.ndarray,
    link_code: int,
    R: float,
    sigma_sum: float,
    rng: np.random.Generator,
    g: np.ndarray,
    x: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """``g = sum_{i < n, member_i = family} clip_R((mu(<x_i, theta>) - y_i) x_i) + N(0, sigma_sum^2 I)``.

    One step of the strict DPPGD release (noise drawn by the compiled Gaussian sampler).
    ``x`` is scratch of length ``d``.
    """
    for j in range(theta.shape[0]):
        g[j] = 0.0
    residual_sums(Xs, ys, member, family, n, theta, link_code, R, False, g, g[:0].reshape(0, 0), x)
    if sigma_sum > 0.0:
        add_gaussian(rng, sigma_sum, g)


@nb.njit(cache=True)
def project_ellipsoid(
    y: np.ndarray,
    c: np.ndarray,
    U: np.ndarray,
    v: np.ndarray,
    radius: float,
    out: np.ndarray,
    w: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Euclidean projection of ``y`` onto ``{theta : (theta - c)^T V (theta - c) <= radius^2}``.

    ``V = U diag(v) U^T`` (eigendecomposition, ``v > 0``).  With ``w = U^T (y - c)``: inside,
    ``out = y``; outside, ``out = c + U z`` with ``z_i = w_i / (1 + nu v_i)`` and ``nu > 0``
    solving ``sum_i v_i w_i^2 / (1 + nu v_i)^2 = radius^2`` (decreasing in ``nu``; bisection).
    ``w`` is scratch (``d``); ``out`` must not alias ``y``.
    """
    d = y.shape[0]
    q = 0.0
    for i in range(d):
        s = 0.0
        for j in range(d):
            s += U[j, i] * (y[j] - c[j])
        w[i] = s
        q += v[i] * s * s
    r2 = radius * radius
    if q <= r2:
        for i in range(d):
            out[i] = y[i]
        return
    lo, hi = 0.0, 1.0
    while True:
        f = 0.0
        for i in range(d):
            f += v[i] * w[i] * w[i] / (1.0 + hi * v[i]) ** 2
        if f <= r2:
            break
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        f = 0.0
        for i in range(d):
            f += v[i] * w[i] * w[i] / (1.0 + mid * v[i]) ** 2
        if f > r2:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    for j in range(d):
        s = 0.0
        for i in range(d):
            s += U[j, i] * w[i] / (1.0 + hi * v[i])
        out[j] = c[j] + s


@nb.njit(cache=True)
def _project(
    theta: np.ndarray,
    region: tuple[bool, float, np.ndarray, np.ndarray, np.ndarray, float],
    out: np.ndarray,
    w: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Projection onto ``Theta_I = ball(S)`` (``ball``) or ``Theta_II`` (V-ellipsoid around ``c``), into ``out``.

    ``region = (ball, S, c, U, v, radius)``, the constraint arguments of :func:`dppgd` and
    :func:`newton_mle`.
    """
    ball, S, c, U, v, radius = region
    if ball:
        s = 0.0
        for i in range(theta.shape[0]):
            s += theta[i] * theta[i]
        f = 1.0 if s <= S * S else S / math.sqrt(s)
        for i in range(theta.shape[0]):
            out[i] = theta[i] * f
    else:
        project_ellipsoid(theta, c, U, v, radius, out, w)


@nb.njit(cache=True)
def dppgd(
    Xs: np.ndarray,
    ys: np.ndarray,
    member: np.ndarray,
    family: int,
    n: int,
    link_code: int,
    R: float,
    lam_reg: float,
    n_pub: float,
    T_it: int,
    sigma_sum: float,
    eta: float,
    ball: bool,
    S: float,
    c: np.ndarray,
    U: np.ndarray,
    v: np.ndarray,
    radius: float,
    theta_init: np.ndarray,
    rng: np.random.Generator,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Strict DPPGD (Sarmasarkar 2026, Lemma U.4; strict variant with public ``T_it`` and ``n_pub``).

    Minimizes ``(1/n_pub) [sum_{i in family} l(theta, x_i, y_i) + (lam_reg/2) ||theta||^2]`` over
    ``Theta`` by ``theta_{k+1} = Pi(theta_k - eta (g_k + lam_reg theta_k) / n_pub)`` with ``g_k``
    the noisy clipped gradient sum (:func:`noisy_gradient_sum`), from ``theta_0 = theta_init``;
    returns the average of ``theta_0 .. theta_{T_it - 1}`` in ``out``.  Rows ``i < n`` of ``Xs``,
    ``ys`` with ``member[i] == family`` are the data.  ``Theta`` is ``ball(S)`` (``ball``) or the
    ellipsoid ``{||theta - c||_V <= radius}`` with ``V = U diag(v) U^T``.
    """
    d = theta_init.shape[0]
    region = (ball, S, c, U, v, radius)
    theta = theta_init.copy()
    g = np.empty(d)
    x = np.empty(d)
    step = np.empty(d)
    w = np.empty(d)
    for j in range(d):
        out[j] = 0.0
    for _ in range(T_it):
        for j in range(d):
            out[j] += theta[j] / T_it
        noisy_gradient_sum(Xs, ys, member, family, n, theta, link_code, R, sigma_sum, rng, g, x)
        for j in range(d):
            step[j] = theta[j] - eta * (g[j] + lam_reg * theta[j]) / n_pub
        _project(step, region, theta, w)


@nb.njit(cache=True)
def newton_mle(
    Xs: np.ndarray,
    ys: np.ndarray,
    member: np.ndarray,
    family: int,
    n: int,
    link_code: int,
    lam_reg: float,
    ball: bool,
    S: float,
    c: np.ndarray,
    U: np.ndarray,
    v: np.ndarray,
    radius: float,
    theta: np.ndarray,
    iters: int,
) -> None:  # pragma: no cover - compiled
    """Regularized GLM maximum likelihood on one data family by projected Newton steps (in place).

    ``theta <- Pi(theta - Hess^{-1} grad)`` for ``L(theta) = sum_{i in family} l(theta, x_i, y_i)
    + (lam_reg/2) ||theta||^2``, ``Hess = sum mu'(<x_i, theta>) x_i x_i^T + lam_reg I``, stopping
    when the step is below ``1e-10`` or after ``iters`` steps.  When the constraint is inactive at
    the optimum this is the exact regularized MLE.
    """
    d = theta.shape[0]
    region = (ball, S, c, U, v, radius)
    g = np.empty(d)
    Hs = np.empty((d, d))
    tmp = np.empty(d)
    w = np.empty(d)
    for _ in range(iters):
        for j in range(d):
            g[j] = lam_reg * theta[j]
            for k in range(d):
                Hs[j, k] = lam_reg if j == k else 0.0
        residual_sums(Xs, ys, member, family, n, theta, link_code, math.inf, True, g, Hs, tmp)
        delta = np.linalg.solve(Hs, g)
        move = 0.0
        for j in range(d):
            tmp[j] = theta[j] - delta[j]
            move += delta[j] * delta[j]
        _project(tmp, region, theta, w)
        if move < 1e-20:
            break


@pinned
def floor_pd_inverse(
    A: np.ndarray, floor: float, out_inv: np.ndarray
) -> bool:  # pragma: no cover - compiled
    """``A <- U max(Lambda, floor) U^T`` in place and ``out_inv = A^{-1}``; returns whether the floor was active.

    Pure post-processing of a released symmetric matrix (Sarmasarkar 2026, noisy matrices may be
    indefinite when the regularizer is below the noise level).  LAPACK allocates: pinned to
    numba's runtime (and returning no array), so that allocation-free steps calling it compile
    without it (:mod:`privbandits.algorithms._shared.loops`).
    """
    d = A.shape[0]
    S = 0.5 * (A + A.T)
    vals, vecs = np.linalg.eigh(S)
    active = False
    for i in range(d):
        if vals[i] < floor:
            vals[i] = floor
            active = True
    for i in range(d):
        for j in range(d):
            s, si = 0.0, 0.0
            for k in range(d):
                s += vecs[i, k] * vals[k] * vecs[j, k]
                si += vecs[i, k] * vecs[j, k] / vals[k]
            A[i, j] = s
            out_inv[i, j] = si
    return active


@pinned
def max_eig_diff(
    A: np.ndarray, B: np.ndarray, factor: float
) -> float:  # pragma: no cover - compiled
    """``eigmax(A - factor B)`` (largest eigenvalue of the symmetrized difference; pinned to
    numba's runtime like :func:`floor_pd_inverse`)."""
    D = A - factor * B
    return np.linalg.eigvalsh(0.5 * (D + D.T))[-1]
