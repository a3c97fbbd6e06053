"""Server-side estimators phi of Han et al. (2021): private OLS (eq. 3.3-3.4) and SGD (eq. 3.5-3.6).

The same code runs the non-private twins in :mod:`privbandits.algorithms.greedy`: there it is fed
raw statistics (``x x^T``, ``r x``, the raw gradient) instead of privatized ones.  Arrays carry
arbitrary leading axes ``lead`` (``(R,)`` in the single-parameter setting, ``(R, K)`` with one
estimator per arm in the multi-parameter setting).

References
----------
Han, Liang, Wang, Zhang (2021), "Generalized Linear Bandits with Local Differential Privacy",
NeurIPS, section 3.1 (eq. 3.3-3.4, OLS) and section 3.2 (eq. 3.5-3.6, SGD).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privbandits.algorithms.linalg import solve_2x2
from privbandits.core.links import Link
from privbandits.core.validation import check_choice, check_nonnegative, check_positive

__all__ = [
    "STEP_SCHEDULES",
    "OLSEstimator",
    "SGDEstimator",
    "glm_gradient",
    "ols_statistics",
    "solve_shifted",
    "step_size",
    "vecdot",
]

STEP_SCHEDULES: tuple[str, ...] = ("inv_t", "inv_sqrt_t")


def _einsum_vecdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("...d,...d->...", a, b)


#: Dot product over the last axis with broadcasting (``numpy.vecdot`` on numpy >= 2).
vecdot = getattr(np, "vecdot", _einsum_vecdot)


def solve_shifted(S_M: np.ndarray, S_u: np.ndarray, shift: float | np.ndarray) -> np.ndarray:
    """Solve ``(S_M + shift I) theta = S_u`` for every leading index (eq. 3.4).

    One batched LAPACK call (``numpy.linalg.solve``; a closed form for ``d = 1``).  Systems that
    are exactly singular (possible with ``shift = 0`` before enough data) fall back to the
    minimum-norm least-squares solution.

    Parameters
    ----------
    S_M : ndarray (..., d, d)
    S_u : ndarray (..., d)
    shift : float or ndarray broadcastable to ``S_M.shape[:-2]``

    Returns
    -------
    ndarray (..., d)
    """
    d = S_u.shape[-1]
    if d == 1:
        den = S_M[..., 0, 0] + shift
        ok = den != 0.0
        return np.where(ok, S_u[..., 0] / np.where(ok, den, 1.0), 0.0)[..., None]
    if np.ndim(shift):
        A = S_M + np.asarray(shift, dtype=float)[..., None, None] * np.eye(d)
    else:
        A = S_M + float(shift) * np.eye(d)
    if d == 2:  # the papers' experiments: a closed form is several times faster than LAPACK
        x = solve_2x2(A, S_u)
        if x is not None:
            return x
    try:
        return np.linalg.solve(A, S_u[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return np.einsum("...de,...e->...d", np.linalg.pinv(A), S_u)


def ols_statistics(x: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The statistics ``(x x^T, r x)`` that the OLS randomizer privatizes (eq. 3.3), batched."""
    return x[..., :, None] * x[..., None, :], r[..., None] * x


def glm_gradient(x: np.ndarray, r: np.ndarray, theta: np.ndarray, link: Link) -> np.ndarray:
    """Stochastic gradient of the GLM negative log-likelihood ``(mu(x^T theta) - r) x`` (eq. 3.5).

    ``x`` and ``theta`` have shape ``(..., d)``, ``r`` shape ``(...)``.
    """
    z = vecdot(x, theta)
    mu = z if link.name == "identity" else link.mu(z)
    return (mu - r)[..., None] * x


def step_size(
    n: np.ndarray | float, eta0: float, t0: float, schedule: str, m: float = 1.0
) -> np.ndarray:
    """SGD step ``eta0 m / (n + t0)`` ("inv_t") or ``eta0 m / sqrt(n + t0)`` ("inv_sqrt_t").

    ``n`` counts the updates including the current one (spec 3.3 and 3.5: the authors' code uses
    ``5 / (t + 1)`` single-parameter and ``5 K / (t + 1)`` after the multi-parameter warm-up).
    """
    if isinstance(n, np.ndarray):
        n = n.astype(float)
    if schedule == "inv_t":
        return eta0 * m / (n + t0)
    return eta0 * m / np.sqrt(n + t0)


class OLSEstimator:
    """Private (or plain) OLS with a diagonal shift: ``theta = (S_M + s I)^{-1} S_u`` (eq. 3.4).

    ``S_M`` and ``S_u`` accumulate the received ``M`` and ``u`` (eq. 3.3); the shift ``s`` is set
    by the caller at each :meth:`solve` (``c_tilde sqrt(t)`` for LDP-OLS, a constant ridge for the
    non-private twin).

    Parameters
    ----------
    lead : tuple of int
        Leading shape (``(R,)`` or ``(R, K)``).
    d : int
        Dimension.
    """

    def __init__(self, lead: tuple[int, ...], d: int) -> None:
        self.S_M = np.zeros(lead + (d, d))
        self.S_u = np.zeros(lead + (d,))
        self.theta = np.zeros(lead + (d,))

    def add(self, M: np.ndarray, u: np.ndarray, index: Any = None) -> None:
        """Accumulate statistics: everywhere, or at ``S[index]`` (e.g. one arm's slot)."""
        if index is None:
            self.S_M += M
            self.S_u += u
        else:
            self.S_M[index] += M
            self.S_u[index] += u

    def solve(self, shift: float | np.ndarray) -> np.ndarray:
        """Recompute and return ``theta`` with the given shift (eq. 3.4)."""
        self.theta = solve_shifted(self.S_M, self.S_u, shift)
        return self.theta


class SGDEstimator:
    """Online (private) SGD on the GLM loss: ``theta <- theta - eta Z`` (eq. 3.6).

    Optional ridge (``theta <- theta - eta lambda theta``, used by the authors' code for GLM links)
    and projection onto the ball ``||theta|| <= rho`` (spec 3.3 lines 6-7, both off by default).

    Parameters
    ----------
    theta0 : ndarray (..., d)
        Initial iterate (copied).
    ridge : float
        ``lambda >= 0``.
    project_radius : float or None
        ``rho > 0`` or None (no projection).
    """

    def __init__(
        self, theta0: np.ndarray, ridge: float = 0.0, project_radius: float | None = None
    ) -> None:
        self.theta = np.array(theta0, dtype=float, copy=True)
        self.ridge = check_nonnegative("ridge", ridge)
        self.project_radius = (
            None if project_radius is None else check_positive("project_radius", project_radius)
        )

    def step(self, Z: np.ndarray, eta: np.ndarray | float, index: Any = None) -> np.ndarray:
        """One update with direction ``Z`` and step ``eta`` (broadcast over the leading axes)."""
        if isinstance(eta, np.ndarray) and eta.ndim:
            eta = eta[..., None]
        th = self.theta if index is None else self.theta[index]
        th = th - eta * Z
        if self.ridge:
            th = th - (eta * self.ridge) * th
        if self.project_radius is not None:
            n = np.sqrt(vecdot(th, th))
            th = th * np.minimum(1.0, self.project_radius / np.maximum(n, 1e-300))[..., None]
        if index is None:
            self.theta = th
        else:
            self.theta[index] = th
        return self.theta


def check_step_schedule(schedule: str) -> str:
    """Validate a step-size schedule name."""
    return check_choice("step_schedule", schedule, STEP_SCHEDULES)
