"""GLOC with Online Newton Step (Jun, Bhargava, Nowak & Willett 2017), compiled per-round steps.

GLOC ("Generalized Linear Online-to-confidence-set Conversion") turns an online learner for the
GLM loss ``l_t(theta) = m(x_t^T theta) - y_t x_t^T theta`` into a confidence ellipsoid: the
learner's predictions ``z_s = x_s^T theta_s`` (the *relabelling*, :func:`relabel`) are regressed on
``x_s`` by ridge regression,

.. math::

    \\hat\\theta_t = V_t^{-1} \\sum_{s \\le t} z_s x_s, \\qquad V_t = \\lambda I + \\sum_{s\\le t} x_s x_s^\\top,

and ``theta*`` lies in ``{theta : ||theta - theta_hat_t||^2_{V_t} <= beta_t}`` with probability
``1 - delta`` for all ``t``, where (Theorem 1)

.. math::

    \\beta_t = \\alpha(B_t) + \\lambda S^2 - \\big(\\lVert z\\rVert^2 - \\hat\\theta_t^\\top X_t^\\top z\\big),
    \\quad \\alpha(B) = 1 + \\tfrac{4}{\\kappa} B
    + \\tfrac{8 R^2}{\\kappa^2} \\ln\\!\\Big(\\tfrac{2}{\\delta}\\sqrt{1 + \\tfrac{2}{\\kappa} B
    + \\tfrac{4 R^4}{\\kappa^4 \\delta^2}}\\Big),

``B_t`` being a bound on the online learner's regret.  The online learner is ONS-GLM (Online
Newton Step on the GLM loss): ``A_t = eps I + sum_s x_s x_s^T``,
``theta'_{t+1} = theta_t - (g_t / kappa) A_t^{-1} x_t`` with ``g_t = mu(x_t^T theta_t) - y_t``,
then the projection onto ``{||theta|| <= S}`` in the ``A_t`` norm; its data-dependent regret bound
(Theorem 3) is

.. math::

    B_t = 2 \\kappa S^2 \\epsilon + \\frac{1}{2\\kappa} \\sum_{s \\le t} g_s^2 \\lVert x_s\\rVert^2_{A_s^{-1}} .

The arm is ``argmax_x x^T theta_hat_{t-1} + alpha sqrt(beta_{t-1}) ||x||_{V_{t-1}^{-1}}`` (``mu`` is
increasing, so the UCB works on the linear score;
:func:`~privbandits.algorithms._shared.linalg.ucb_argmax`, shared with LDP-UCB and LDP-GLOC).  Everything
is incremental (Sherman-Morrison), so the cost per round does not grow with ``t``.  In the
multi-parameter setting the model runs on block one-hot features ``e_a kron X`` (``D = K d``).

LDP-GLOC (:mod:`privbandits.algorithms.ldp_zheng.ldp_gloc`) is the locally private version of the
same conversion: it shares :func:`relabel` and the optimistic choice, privatizes the ridge
statistics, and replaces ONS by noisy projected gradient descent.

References
----------
Jun, Bhargava, Nowak & Willett (2017), "Scalable Generalized Linear Bandits: Online Computation and
Hashing", NeurIPS: Algorithm 1 (GLOC), Theorem 1 (confidence set), ONS-GLM and Theorem 3 (its
data-dependent regret bound).  Hazan, Agarwal & Kale (2007), "Logarithmic regret algorithms for
online convex optimization" (Online Newton Step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms._shared.linalg import (
    add_outer,
    dot,
    feature_block,
    feature_single,
    mahalanobis_ball_projection_row,
    mat_vec,
    sherman_morrison_row,
    ucb_argmax_block,
    ucb_argmax_single,
)
from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import Calibration, Constants
from privbandits.algorithms.kernel import CuratorKernel
from privbandits.algorithms.registry import register
from privbandits.algorithms.sarmasarkar import authors_code
from privbandits.algorithms.sarmasarkar.authors_code import AuthorsCodeRun
from privbandits.core.errors import NotResetError, ValidationError
from privbandits.core.links import LINK_IDENTITY, link_mu
from privbandits.core.params import Choice, Delta, NonNegative, Optional, Positive
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = ["GLOC", "gloc_alpha", "gloc_beta", "mahalanobis_ball_projection", "relabel"]


@nb.njit(cache=True, inline="always")
def relabel(x: np.ndarray, theta_online: np.ndarray) -> float:  # pragma: no cover - compiled
    """GLOC's relabelling ``z_t = x_t^T theta_t`` with the online learner's iterate (Alg. 1 line 6)."""
    return dot(x, theta_online)


@nb.njit(cache=True)
def gloc_alpha(
    B: float, kappa: float, R: float, delta: float
) -> float:  # pragma: no cover - compiled
    """``alpha(B)`` of Jun et al. (2017), Theorem 1.

    ``1 + 4B/kappa + (8 R^2/kappa^2) ln((2/delta) sqrt(1 + 2B/kappa + 4 R^4/(kappa^4 delta^2)))``.
    """
    inner = 1.0 + 2.0 * B / kappa + 4.0 * R**4 / (kappa**4 * delta**2)
    return 1.0 + 4.0 * B / kappa + 8.0 * R**2 / kappa**2 * math.log(2.0 / delta * math.sqrt(inner))


@nb.njit(cache=True, inline="always")
def gloc_beta(
    B: float,
    kappa: float,
    R: float,
    delta: float,
    lam: float,
    S: float,
    z_sq: float,
    theta_hat: np.ndarray,
    xz: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """Squared radius ``beta_t = alpha(B_t) + lam S^2 - (||z||^2 - theta_hat^T X^T z)`` (Theorem 1).

    ``B`` is the online learner's regret bound, ``z_sq = sum_s z_s^2``, ``theta_hat`` the ridge
    estimate ``V_t^{-1} X^T z`` and ``xz = X^T z = sum_s z_s x_s``.
    """
    return gloc_alpha(B, kappa, R, delta) + lam * S * S - (z_sq - dot(theta_hat, xz))


def mahalanobis_ball_projection(A: np.ndarray, theta: np.ndarray, radius: float) -> np.ndarray:
    """``argmin_{||w|| <= radius} (w - theta)^T A (w - theta)`` for every replication (numpy front end
    of :func:`~privbandits.algorithms._shared.linalg.mahalanobis_ball_projection_row`).

    Parameters
    ----------
    A : ndarray (R, D, D)
        Symmetric positive definite matrices.
    theta : ndarray (R, D)
        Points to project.
    radius : float
        Ball radius ``S > 0``.
    """
    A = np.ascontiguousarray(A, dtype=float)
    theta = np.ascontiguousarray(theta, dtype=float)
    R, D = theta.shape
    out = np.empty((R, D))
    L = np.empty((D, D))
    c, tmp = np.empty(D), np.empty(D)
    for r in range(R):
        mahalanobis_ball_projection_row(A[r], theta[r], float(radius), out[r], L, c, tmp)
    return out


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``argmax_x x^T theta_hat_{t-1} + alpha sqrt(beta_{t-1}) ||x||_{V_{t-1}^{-1}}`` (Alg. 1 line 3)."""
    K, alpha = params[0], params[3]
    V_inv, theta_hat, beta = state[0], state[3], state[8]
    radius = alpha * math.sqrt(max(beta[r], 0.0))
    if X.ndim == 1:  # multi-parameter setting: block one-hot features (resolved at compile time)
        return ucb_argmax_block(X, K, theta_hat[r], V_inv[r], radius, LINK_IDENTITY, False, rng)
    return ucb_argmax_single(X, theta_hat[r], V_inv[r], radius, LINK_IDENTITY, False, rng)


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Relabel with the ONS prediction, feed the loss to ONS, refit the ridge (Alg. 1 lines 5-8)."""
    K, lam, delta, alpha, kappa, R_noise, S, link_code = params
    V_inv, xz, z_sq, theta_hat, A, A_inv, theta_ons, B, beta, xs, Vx, w, c, tmp, L = state
    x = xs[r]
    if X.ndim == 1:  # multi-parameter setting: e_a kron X (resolved at compile time)
        feature_block(X, a, x)
    else:
        feature_single(X, a, x)
    z = relabel(x, theta_ons[r])  # z_t = x_t^T theta_t
    # ONS-GLM step on l_t(theta) = m(x^T theta) - y x^T theta at theta_t
    g = link_mu(link_code, z) - y
    q = sherman_morrison_row(A_inv[r], x, Vx[r])  # A_t^{-1}; ||x||^2_{A_t^{-1}} = q / (1 + q)
    add_outer(A[r], x, 1.0)
    B[r] += g * g * (q / (1.0 + q)) / (2.0 * kappa)  # Theorem 3
    mat_vec(A_inv[r], x, Vx[r])
    for i in range(x.shape[0]):
        w[r, i] = theta_ons[r, i] - (g / kappa) * Vx[r, i]
    mahalanobis_ball_projection_row(A[r], w[r], S, theta_ons[r], L[r], c[r], tmp[r])
    # ridge regression of z on x: the centre of the confidence set
    sherman_morrison_row(V_inv[r], x, Vx[r])
    for i in range(x.shape[0]):
        xz[r, i] += z * x[i]
    z_sq[r] += z * z
    mat_vec(V_inv[r], xz[r], theta_hat[r])
    beta[r] = gloc_beta(B[r], kappa, R_noise, delta, lam, S, z_sq[r], theta_hat[r], xz[r])


@dataclass(frozen=True)
class GLOCConstants(Constants):
    """GLOC: feature dimension ``D``, parameter bound ``S``, ``kappa`` and the noise scale."""

    D: int
    S: float
    kappa: float
    sigma: float


@register
class GLOC(AuthorsCodeRun, Curator):
    """GLOC with ONS-GLM (Jun et al. 2017, Algorithm 1): a non-private GLM bandit, any increasing link.

    Parameters
    ----------
    lam : float
        Ridge parameter ``lambda > 0`` of the online-to-confidence-set conversion.
    delta : float
        Confidence level of Theorem 1, in (0, 1).
    ons_eps : float
        ``epsilon > 0`` of ONS-GLM: ``A_0 = epsilon I``.
    alpha : float
        Multiplier on ``sqrt(beta_t)`` (1 = theory; smaller values are the usual practical
        tuning, as for LinUCB).
    kappa : float, optional
        Strong-convexity constant ``kappa = inf mu'`` of the loss on ``[-C_B S, C_B S]``
        (default: computed from the link).
    sigma : float, optional
        Sub-Gaussian parameter ``R`` of the reward noise (default: the environment's
        ``noise_scale``).
    S : float, optional
        Bound on ``||theta*||`` and radius of ONS's domain (default: the environment's
        ``theta_bound``; ``sqrt(K)`` times it for the stacked parameter in the multi setting).
    preset : {"strict", "paper", "authors_code"}
        ``strict`` and ``paper`` (the paper gives no constants): Algorithm 1 as above;
        ``authors_code``: GLOC as the public code of Sarmasarkar (2026) runs it (lambda = d, the ONS
        step normalized onto the sphere of radius S, the index ``mu(<theta_ons, x>) + radius
        ||x||_{V^-1}``; :class:`~privbandits.algorithms.sarmasarkar.authors_code.AuthorsGLOC`).

    References
    ----------
    Jun, Bhargava, Nowak & Willett (2017), NeurIPS, Algorithm 1 (GLOC), Theorem 1, ONS-GLM and
    Theorem 3.
    """

    name = "gloc"
    settings = ("single", "multi")
    links = ("*",)
    paper = "Jun et al. 2017"
    constraints: ClassVar = {
        "lam": Positive,
        "delta": Delta,
        "ons_eps": Positive,
        "alpha": NonNegative,
        "kappa": Optional(Positive),
        "sigma": Optional(NonNegative),
        "S": Optional(Positive),
        "preset": Choice("strict", "paper", "authors_code"),
    }
    test_params: ClassVar = (
        {},
        {"alpha": 0.3, "lam": 2.0, "ons_eps": 0.5, "kappa": 0.1, "sigma": 0.5, "S": 2.0},
    )

    def __init__(
        self,
        lam: float = 1.0,
        delta: float = 0.01,
        ons_eps: float = 1.0,
        alpha: float = 1.0,
        kappa: float | None = None,
        sigma: float | None = None,
        S: float | None = None,
        preset: str = "strict",
    ) -> None:
        pass

    def _calibrate(self, spec: EnvSpec) -> Calibration:
        """Resolve ``S``, ``kappa`` and the noise parameter ``R`` on ``spec`` (non-private)."""
        block = spec.setting == "multi"
        # with block features built here (plain multi setting) the stacked parameter has norm <= sqrt(K) S_arm,
        # the bound SyntheticEnv(features="block") announces for the same problem
        S = spec.theta_bound * (math.sqrt(spec.K) if block else 1.0) if self.S is None else self.S
        kappa = spec.link.kappa(spec.context_bound * S) if self.kappa is None else self.kappa
        if kappa <= 0.0:
            raise ValidationError(
                f"link {spec.link.name!r} has inf mu' = 0 on the domain; pass kappa > 0"
            )
        sigma = spec.noise_scale if self.sigma is None else self.sigma
        D = spec.K * spec.d if block else spec.d
        return Calibration(NON_PRIVATE, constants=GLOCConstants(D, S, kappa, sigma))

    _authors_run = authors_code.gloc_runner

    def _build_kernel(self) -> CuratorKernel:
        c, R, spec = self.calibration.typed(GLOCConstants), self.R, self.spec
        D, S, kappa = int(c.D), float(c.S), float(c.kappa)
        eye = np.eye(D)
        V_inv = np.broadcast_to(
            eye / self.lam, (R, D, D)
        ).copy()  # ridge regression of the ONS predictions
        theta_hat = np.zeros((R, D))
        A = np.broadcast_to(eye * self.ons_eps, (R, D, D)).copy()  # ONS-GLM
        A_inv = np.broadcast_to(eye / self.ons_eps, (R, D, D)).copy()
        theta_ons = np.zeros((R, D))
        B = np.full(R, 2.0 * kappa * S**2 * self.ons_eps)
        xz, z_sq = np.zeros((R, D)), np.zeros(R)
        beta = np.array(
            [
                gloc_beta(
                    B[r],
                    kappa,
                    float(c.sigma),
                    self.delta,
                    self.lam,
                    S,
                    0.0,
                    theta_hat[r],
                    xz[r],
                )
                for r in range(R)
            ]
        )
        scratch = (
            np.zeros((R, D)),
            np.zeros((R, D)),
            np.zeros((R, D)),
            np.zeros((R, D)),
            np.zeros((R, D)),
            np.zeros((R, D, D)),
        )
        state = (V_inv, xz, z_sq, theta_hat, A, A_inv, theta_ons, B, beta) + scratch
        params = (
            spec.K,
            self.lam,
            self.delta,
            self.alpha,
            kappa,
            float(c.sigma),
            S,
            spec.link.code,
        )
        block = spec.setting == "multi"
        K, d = spec.K, spec.d
        return CuratorKernel(
            _select,
            _update,
            params,
            state,
            estimate=lambda: theta_hat.reshape(R, K, d) if block else theta_hat,
            allocates=False,
        )

    def ons_estimate(self) -> np.ndarray:
        """ONS-GLM's iterate ``theta_{t+1}``: ``(R, d)``, or ``(R, K, d)`` (multi)."""
        theta_ons = self._state()[6]
        spec = self.spec
        return (
            theta_ons.reshape(self.R, spec.K, spec.d)
            if spec.setting == "multi"
            else theta_ons.copy()
        )

    @property
    def beta(self) -> np.ndarray:
        """Current squared radius ``beta_t`` per replication (after :meth:`reset`)."""
        return self._state()[8].copy()

    def _state(self) -> tuple[np.ndarray, ...]:
        if not isinstance(self.kernel, CuratorKernel):
            raise NotResetError(f"{self.name}: call reset(...) or simulate(...) first")
        return self.kernel.state
