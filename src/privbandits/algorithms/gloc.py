"""GLOC with Online Newton Step (Jun, Bhargava, Nowak & Willett 2017), batched over replications.

GLOC ("Generalized Linear Online-to-confidence-set Conversion") turns an online learner for the
GLM loss ``l_t(theta) = m(x_t^T theta) - y_t x_t^T theta`` into a confidence ellipsoid: the
learner's predictions ``z_s = x_s^T theta_s`` are regressed on ``x_s`` by ridge regression,

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

The arm is ``argmax_x x^T theta_hat_{t-1} + sqrt(beta_{t-1}) ||x||_{V_{t-1}^{-1}}`` (``mu`` is
increasing, so the UCB works on the linear score).  Everything is incremental (Sherman-Morrison),
so the cost per round does not grow with ``t``.

References
----------
Jun, Bhargava, Nowak & Willett (2017), "Scalable Generalized Linear Bandits: Online Computation and
Hashing", NeurIPS: Algorithm 1 (GLOC), Theorem 1 (confidence set), ONS-GLM and Theorem 3 (its
data-dependent regret bound).  Hazan, Agarwal & Kale (2007), "Logarithmic regret algorithms for
online convex optimization" (Online Newton Step).
"""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.base import Curator
from privbandits.algorithms.ldp_zheng.features import FeatureMap, argmax_ties
from privbandits.algorithms.linalg import sherman_morrison_update
from privbandits.algorithms.registry import register
from privbandits.core.errors import ValidationError
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_delta, check_nonnegative, check_positive

__all__ = ["GLOC", "gloc_alpha", "gloc_beta", "mahalanobis_ball_projection", "ons_regret_increment"]


def gloc_alpha(B: np.ndarray, kappa: float, R: float, delta: float) -> np.ndarray:
    """``alpha(B)`` of Jun et al. (2017), Theorem 1.

    ``1 + 4B/kappa + (8 R^2/kappa^2) ln((2/delta) sqrt(1 + 2B/kappa + 4 R^4/(kappa^4 delta^2)))``.
    """
    B = np.asarray(B, dtype=float)
    inner = 1.0 + 2.0 * B / kappa + 4.0 * R**4 / (kappa**4 * delta**2)
    return 1.0 + 4.0 * B / kappa + 8.0 * R**2 / kappa**2 * np.log(2.0 / delta * np.sqrt(inner))


def gloc_beta(
    B: np.ndarray, kappa: float, R: float, delta: float, lam: float, S: float, z_sq: np.ndarray, theta_hat: np.ndarray,
    xz: np.ndarray,
) -> np.ndarray:
    """Squared radius ``beta_t = alpha(B_t) + lam S^2 - (||z||^2 - theta_hat^T X^T z)`` (Theorem 1).

    Parameters
    ----------
    B : ndarray (R,)
        Online learner's regret bound ``B_t``.
    z_sq : ndarray (R,)
        ``||z||^2 = sum_s z_s^2``.
    theta_hat : ndarray (R, D)
        Ridge estimate ``V_t^{-1} X^T z``.
    xz : ndarray (R, D)
        ``X^T z = sum_s z_s x_s``.
    """
    resid = z_sq - np.einsum("rd,rd->r", theta_hat, xz)
    return gloc_alpha(B, kappa, R, delta) + lam * S * S - resid


def ons_regret_increment(g: np.ndarray, q_after: np.ndarray, kappa: float) -> np.ndarray:
    """``g_t^2 ||x_t||^2_{A_t^{-1}} / (2 kappa)``: one term of ONS-GLM's regret bound (Theorem 3)."""
    return g * g * q_after / (2.0 * kappa)


def mahalanobis_ball_projection(
    A: np.ndarray, theta: np.ndarray, radius: float, *, tol: float = 1e-12, max_iter: int = 100
) -> np.ndarray:
    """``argmin_{||w|| <= radius} (w - theta)^T A (w - theta)`` for every replication.

    Rows already inside the ball are returned unchanged.  For the others the minimizer is
    ``w(nu) = (A + nu I)^{-1} A theta`` with the multiplier ``nu > 0`` solving ``||w(nu)|| =
    radius``; in the eigenbasis of ``A`` this is a trust-region secular equation, solved by
    Newton's method on ``1/radius - 1/||w(nu)||`` from ``nu = 0``, which converges monotonically
    (More & Sorensen 1983).

    Parameters
    ----------
    A : ndarray (R, D, D)
        Symmetric positive definite matrices.
    theta : ndarray (R, D)
        Points to project.
    radius : float
        Ball radius ``S > 0``.
    """
    out = np.array(theta, dtype=float, copy=True)
    norms = np.sqrt(np.einsum("rd,rd->r", out, out))
    idx = np.flatnonzero(norms > radius)
    if idx.size == 0:
        return out
    lam, Q = np.linalg.eigh(A[idx])
    c = lam * np.einsum("rde,rd->re", Q, out[idx])  # A theta in the eigenbasis
    nu = np.zeros(idx.size)
    for _ in range(max_iter):
        w = c / (lam + nu[:, None])
        nw = np.sqrt(np.einsum("rd,rd->r", w, w))
        if np.all(np.abs(nw - radius) <= tol * radius):
            break
        dnw = -np.einsum("rd,rd->r", w * w, 1.0 / (lam + nu[:, None])) / nw  # d||w|| / d nu
        # Newton step on phi(nu) = 1/radius - 1/||w||, phi' = dnw / ||w||^2
        nu = np.maximum(nu - (1.0 / radius - 1.0 / nw) * nw * nw / dnw, 0.0)
    w = c / (lam + nu[:, None])
    w *= (radius / np.sqrt(np.einsum("rd,rd->r", w, w)))[:, None]  # remove the last rounding error
    out[idx] = np.einsum("rde,re->rd", Q, w)
    return out


@register
class GLOC(Curator):
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

    References
    ----------
    Jun, Bhargava, Nowak & Willett (2017), NeurIPS, Algorithm 1 (GLOC), Theorem 1, ONS-GLM and
    Theorem 3.
    """

    name = "gloc"
    settings = ("single", "multi")
    links = ("*",)
    paper = "Jun et al. 2017"

    def __init__(
        self,
        lam: float = 1.0,
        delta: float = 0.01,
        ons_eps: float = 1.0,
        alpha: float = 1.0,
        kappa: float | None = None,
        sigma: float | None = None,
        S: float | None = None,
    ) -> None:
        super().__init__(lam=lam, delta=delta, ons_eps=ons_eps, alpha=alpha, kappa=kappa, sigma=sigma, S=S)
        self.lam = check_positive("lam", lam)
        self.delta = check_delta(delta)
        self.ons_eps = check_positive("ons_eps", ons_eps)
        self.alpha = check_nonnegative("alpha", alpha)
        self.kappa = None if kappa is None else check_positive("kappa", kappa)
        self.sigma = None if sigma is None else check_nonnegative("sigma", sigma)
        self.S = None if S is None else check_positive("S", S)

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        self.features = F = FeatureMap(spec)
        R, D = self.R, F.D
        # with block features built here (plain multi setting) the stacked parameter has norm <= sqrt(K) S_arm,
        # the bound SyntheticEnv(features="block") announces for the same problem
        scale = np.sqrt(spec.K) if F.block else 1.0
        self._S = spec.theta_bound * scale if self.S is None else self.S
        self._kappa = spec.link.kappa(spec.context_bound * self._S) if self.kappa is None else self.kappa
        if self._kappa <= 0.0:
            raise ValidationError(f"link {spec.link.name!r} has inf mu' = 0 on the domain; pass kappa > 0")
        self._R = spec.noise_scale if self.sigma is None else self.sigma
        self.link = spec.link
        eye = np.eye(D)
        # ridge regression of the ONS predictions (the confidence set)
        self.V_inv = np.broadcast_to(eye / self.lam, (R, D, D)).copy()
        self.xz = np.zeros((R, D))
        self.z_sq = np.zeros(R)
        self.theta_hat = np.zeros((R, D))
        # ONS-GLM (the online learner)
        self.A = np.broadcast_to(eye * self.ons_eps, (R, D, D)).copy()
        self.A_inv = np.broadcast_to(eye / self.ons_eps, (R, D, D)).copy()
        self.theta_ons = np.zeros((R, D))
        self.B = np.full(R, 2.0 * self._kappa * self._S**2 * self.ons_eps)
        self.beta = self._beta()

    def _beta(self) -> np.ndarray:
        return gloc_beta(self.B, self._kappa, self._R, self.delta, self.lam, self._S, self.z_sq,
                         self.theta_hat, self.xz)

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        """``argmax_x x^T theta_hat_{t-1} + alpha sqrt(beta_{t-1}) ||x||_{V_{t-1}^{-1}}`` (Alg. 1 line 3)."""
        F = self.features
        width = np.sqrt(np.maximum(F.quad_scores(self.V_inv, contexts), 0.0))
        radius = self.alpha * np.sqrt(np.maximum(self.beta, 0.0))
        scores = F.linear_scores(self.theta_hat, contexts) + radius[:, None] * width
        return argmax_ties(scores, self.streams.policy)

    def update(self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        """Relabel with the ONS prediction, feed the loss to ONS, refit the ridge (Alg. 1 lines 5-8)."""
        x = self.features.chosen(contexts, actions)
        y = np.asarray(rewards, dtype=float)
        z = np.einsum("rd,rd->r", x, self.theta_ons)  # z_t = x_t^T theta_t
        # ONS-GLM step on l_t(theta) = m(x^T theta) - y x^T theta at theta_t
        g = self.link.mu(z) - y
        self.A_inv, q = sherman_morrison_update(self.A_inv, x)
        self.A += x[:, :, None] * x[:, None, :]
        self.B += ons_regret_increment(g, q / (1.0 + q), self._kappa)  # ||x||^2_{A_t^{-1}} = q/(1+q)
        step = np.einsum("rde,re->rd", self.A_inv, x) * (g / self._kappa)[:, None]
        self.theta_ons = mahalanobis_ball_projection(self.A, self.theta_ons - step, self._S)
        # ridge regression of z on x: the centre of the confidence set
        self.V_inv, _ = sherman_morrison_update(self.V_inv, x)
        self.xz += z[:, None] * x
        self.z_sq += z * z
        self.theta_hat = np.einsum("rde,re->rd", self.V_inv, self.xz)
        self.beta = self._beta()

    def estimate(self) -> np.ndarray:
        """``theta_hat_t`` (centre of the confidence set): ``(R, d)``, or ``(R, K, d)`` (multi)."""
        return self.features.to_parameter_shape(self.theta_hat)

    def ons_estimate(self) -> np.ndarray:
        """ONS-GLM's iterate ``theta_{t+1}``: ``(R, d)``, or ``(R, K, d)`` (multi)."""
        return self.features.to_parameter_shape(self.theta_ons)
