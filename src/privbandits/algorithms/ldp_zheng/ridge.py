"""Compiled steps shared by LDP-UCB and LDP-GLOC: the optimistic choice and the noisy ridge server.

Server side (Zheng et al. 2020, Alg. 5 server update and Alg. 3 lines 10-11).  After ``n``
messages the server holds the raw noisy sums ``V_n = sum_s (x_s x_s^T + B_s)`` (plus ``V0 I``) and
``u_n = sum_s (v_s x_s + xi_s)`` and publishes

* ``M = (V_n + c_n I)^{-1}`` (corrections Zheng20-2 and Zheng20-6: the regularizer is added once, with the
  current ``c``, never accumulated; ``c_0 = c_first`` when given, else ``c_1``);
* ``theta = M u_n`` (``theta_tilde_n``);
* ``beta``: the radius the next user multiplies the bonus by, ``beta_{max(n, 1)}`` (``previous``
  index convention, A6) or ``beta_{n + 1}`` (``current``, Zheng et al.'s demo code).

``A = V_n + c_n I`` is kept in place (the diagonal moves from ``c_{n-1}`` to ``c_n``).  The noisy
Gram matrix is not a rank-one update of the previous one (``B_s`` is a full symmetric matrix), so
``M`` is recomputed every round by a Cholesky factorization (``O(D^3)``; closed form at ``D = 2``).  ``A`` is positive
definite only with high probability; when the factorization fails the inverse of
``A + (|lambda_min(A)| + Upsilon_n) I`` is published instead and counted (Zheng et al. 2020, Algorithm 5).
Every helper is inlined, so a step makes no call with array arguments (no reference counting).
The published ``theta`` and ``M`` stay finite and within
:data:`~privbandits.algorithms.kernel.ESTIMATE_BOUND` (an inverse with a larger entry, i.e. ``A``
numerically singular, takes the shifted path; ``theta`` is projected onto the ball), the space
the devices accept (:func:`ridge_space`).

User side: ``x = argmax_x x^T theta + beta ||x||_M`` (Alg. 5; Alg. 3 line 7), the squared bonus
``beta x^T M x`` in Zheng et al.'s demo code.

Parameter tuples (built by the algorithms from their calibration)::

    choice = (K, squared_bonus)
    ridge  = (sigma, D, T, alpha, c_factor, c_first, beta_code, beta_scale, grad_sigma, mu,
              beta_current)

``c_first <= 0`` means "use ``c_1``"; ``beta_code`` is one of
:data:`~privbandits.algorithms.ldp_zheng.constants.BETA_CODES`.  State: public ``(theta, M,
beta, ...)``, server ``(A, u, n, c, n_shifted, L, W)`` (``L``, ``W``: Cholesky scratch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba as nb
import numpy as np

from privbandits.algorithms._shared.linalg import (
    mat_vec,
    min_eigenvalue,
    project_ball,
    spd_inverse_into,
    ucb_argmax_block,
    ucb_argmax_single,
)
from privbandits.algorithms.kernel import (
    ESTIMATE_BOUND,
    DeviceNoiseFn,
    LocalKernel,
    MessageLayout,
    mirrored_scale,
)
from privbandits.algorithms.ldp_zheng.constants import beta as beta_formula
from privbandits.algorithms.ldp_zheng.constants import regularizer, upsilon
from privbandits.core.links import LINK_IDENTITY
from privbandits.core.public_space import PublicField, PublicSpace
from privbandits.privacy.device import DeviceNoise
from privbandits.privacy.samplers import (
    add_gaussian,
    add_laplace,
    add_symmetric_gaussian,
    add_symmetric_laplace,
)

__all__ = [
    "add_message_noise",
    "additive_noise",
    "choose",
    "new_ridge_state",
    "ridge_kernel",
    "ridge_receive",
    "ridge_refresh",
    "ridge_regularizer",
    "ridge_space",
]


@nb.njit(cache=True)
def add_message_noise(rng, laplace, scale_V, V, scale_u, u):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """The user's noise on the two ridge parts, in draw order: symmetric ``B`` on the Gram part
    ``V`` (upper triangle row by row, mirrored), then ``xi`` on the vector part ``u``; Laplace
    (scales) or Gaussian (stds)."""
    if laplace:
        add_symmetric_laplace(rng, scale_V, V)
        add_laplace(rng, scale_u, u)
    else:
        add_symmetric_gaussian(rng, scale_V, V)
        add_gaussian(rng, scale_u, u)


def ridge_space(*extra: PublicField) -> PublicSpace:
    """The public state the user's choice reads: ``theta`` (``(R, D)``, norm at most
    :data:`~privbandits.algorithms.kernel.ESTIMATE_BOUND`), ``M`` (``(R, D, D)``, symmetric, entries
    within the same bound; the choice clamps a negative ``x^T M x`` at 0, so no eigenvalue floor is
    needed) and ``beta`` (``(R,)``, non-negative), then ``extra`` fields.  ``D`` is ``d``, or
    ``K d`` in the multi-parameter setting (the symbol ``"D"`` of
    :func:`~privbandits.core.public_space.dims_of`)."""
    return PublicSpace(
        (
            PublicField("theta", ("R", "D"), norm=ESTIMATE_BOUND),
            PublicField(
                "M", ("R", "D", "D"), low=-ESTIMATE_BOUND, high=ESTIMATE_BOUND, symmetric=True
            ),
            PublicField("beta", ("R",), low=0.0, high=ESTIMATE_BOUND),
            *extra,
        )
    )


def ridge_kernel(
    steps: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]],
    params: tuple[Any, ...],
    public: tuple[np.ndarray, ...],
    server: tuple[Any, ...],
    names: tuple[str, ...],
    layout: MessageLayout,
    **device: Any,
) -> LocalKernel:
    """The local kernel of a noisy ridge server: the users choose by :func:`choose` and run the
    family's ``steps = (encode, randomize, update)``; ``device`` holds the rest of the kernel's
    declarations (``estimate``, ``public_space``, ``noise``, ``sensitivity``)."""
    encode, randomize, update = steps
    return LocalKernel(
        choose,
        randomize,
        update,
        params,
        public,
        server,
        names,
        layout,
        encode=encode,
        **device,
    )


def additive_noise(D: int, units: tuple[float, ...], laplace: bool) -> DeviceNoiseFn:
    """The noise of a message ``[V (D*D), v_1 (D), ...]``: the symmetric ``V`` with noise of scale
    ``units[0]`` drawn on and above the diagonal and mirrored, each vector ``v_i`` with i.i.d.
    noise of scale ``units[i]`` (Gaussian stds, or Laplace scales ``b``), the same for every user.

    The whitening scale of a mirrored entry follows the accountant's norm (l2 Gaussian, l1
    Laplace; :func:`~privbandits.algorithms.kernel.mirrored_scale`); the variance of every entry is
    that of its draw (``sigma^2``, ``2 b^2``).
    """
    norm, f = ("l1", 2.0) if laplace else ("l2", 1.0)
    scale = np.concatenate([mirrored_scale(D, units[0], norm)] + [np.full(D, u) for u in units[1:]])
    var = np.concatenate(
        [np.full(D * D, f * units[0] ** 2)] + [np.full(D, f * u * u) for u in units[1:]]
    )
    kind = "laplace" if laplace else "gaussian"

    def noise(t: int, a: np.ndarray, encoded: np.ndarray | None) -> DeviceNoise:
        R = a.shape[0]
        return DeviceNoise(kind, np.tile(scale, (R, 1)), np.tile(var, (R, 1)))

    return noise


@nb.njit(cache=True)
def choose(params, public, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """User side: ``argmax_x x^T theta + beta ||x||_M`` from the public state (ties at random)."""
    K, squared = params[0]
    theta, M, beta = public[0], public[1], public[2]
    if X.ndim == 1:  # block one-hot features of the shared context (resolved at compile time)
        return ucb_argmax_block(X, K, theta[r], M[r], beta[r], LINK_IDENTITY, squared, rng)
    return ucb_argmax_single(X, theta[r], M[r], beta[r], LINK_IDENTITY, squared, rng)


@nb.njit(cache=True, inline="always")
def ridge_regularizer(ridge, n):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``c_n`` added to the noisy Gram sum after ``n`` messages."""
    sigma, D, T, alpha, c_factor, c_first = (
        ridge[0],
        ridge[1],
        ridge[2],
        ridge[3],
        ridge[4],
        ridge[5],
    )
    if n == 0 and c_first > 0.0:
        return c_first
    return regularizer(max(n, 1.0), sigma, D, T, alpha, c_factor)


@nb.njit(cache=True, inline="always")
def _within(M, bound):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Every entry of ``M`` finite and within ``[-bound, bound]``."""
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if not abs(M[i, j]) <= bound:
                return False
    return True


@nb.njit(cache=True, inline="always")
def ridge_refresh(ridge, theta, M, beta, server, r):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Publish ``M = A^{-1}``, ``theta = M u`` and ``beta`` of replication ``r``."""
    sigma, D, T, alpha = ridge[0], ridge[1], ridge[2], ridge[3]
    beta_code, beta_scale, grad_sigma, mu, beta_current = (
        ridge[6],
        ridge[7],
        ridge[8],
        ridge[9],
        ridge[10],
    )
    A, u, n, c, n_shifted, L, W = server
    if not (spd_inverse_into(A[r], M[r], L[r], W[r]) and _within(M[r], ESTIMATE_BOUND)):
        # not positive definite (probability <= alpha), or numerically singular: invert
        # A + (|lambda_min| + Upsilon_n) I
        shift = abs(min_eigenvalue(A[r], L[r])) + upsilon(max(n[r], 1.0), sigma, D, T, alpha)
        for i in range(D):
            for j in range(D):
                W[r, i, j] = A[r, i, j]
            W[r, i, i] += shift
        spd_inverse_into(W[r], M[r], L[r], W[r])
        n_shifted[r] += 1
    mat_vec(M[r], u[r], theta[r])
    project_ball(theta[r], ESTIMATE_BOUND)
    s = n[r] + 1.0 if beta_current else max(n[r], 1.0)
    beta[r] = beta_scale * beta_formula(beta_code, s, sigma, grad_sigma, mu, D, T, alpha)


@nb.njit(cache=True, inline="always")
def ridge_receive(ridge, theta, M, beta, server, r, msg):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``V += x x^T + B``, ``u += v x + xi`` from the flat message ``[V (D*D), u (D), ...]``, move
    the regularizer to ``c_n`` and republish."""
    A, u, n, c, n_shifted, L, W = server
    D = u.shape[1]
    for i in range(D):
        for j in range(D):
            A[r, i, j] += msg[i * D + j]
        u[r, i] += msg[D * D + i]
    n[r] += 1.0
    c_new = ridge_regularizer(ridge, n[r])
    for i in range(D):
        A[r, i, i] += c_new - c[r]
    c[r] = c_new
    ridge_refresh(ridge, theta, M, beta, server, r)


def new_ridge_state(
    ridge: tuple, R: int, D: int, V0: float
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """Fresh public ``(theta, M, beta)`` and server state before any message (``V_0 = V0 I``)."""
    c0 = ridge_regularizer(ridge, 0.0)
    A = np.broadcast_to((V0 + c0) * np.eye(D), (R, D, D)).copy()
    server = (
        A,
        np.zeros((R, D)),
        np.zeros(R),
        np.full(R, c0),
        np.zeros(R, dtype=np.int64),
        np.zeros((R, D, D)),
        np.zeros((R, D, D)),
    )
    public = (np.zeros((R, D)), np.zeros((R, D, D)), np.zeros(R))
    for r in range(R):
        ridge_refresh(ridge, *public, server, r)
    return public, server
