"""LDP-GLOC: locally private GLOC for generalized linear bandits (Zheng et al. 2020, Algorithm 3).

Round ``t`` (spec ``zheng2020-ldp-bandits.md`` section 4.4.3)::

    server -> user t : theta_tilde_{t-1}, M = (V_{t-1} + c_{t-1} I)^{-1}, beta_{t-1}, theta_hat_t
    user t           : x_t = argmax_x <theta_tilde, x> + beta ||x||_M
                       z_t = x_t^T theta_hat_t                          (relabel, |z_t| <= 1)
                       grad = (g(x_t^T theta_hat_t) - y_t) x_t          (clipped to norm C, A7)
                       send (x_t x_t^T + B_t,  z_t x_t + xi_t,  grad + r_t)
    server           : V_t += x_t x_t^T + B_t;  u_t += z_t x_t + xi_t
                       theta_tilde_t = (V_t + c_t I)^{-1} u_t
                       theta_hat_{t+1} = Proj_W(theta_hat_t - zeta (grad + r_t))   # noisy OGD

Non-private GLOC (Jun et al. 2017) uses Online Newton Step as the online learner; LDP-GLOC uses
noisy projected online gradient descent because a gradient can be privatized per user.
"""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.base import Client, LocalAlgorithm
from privbandits.algorithms.ldp_zheng.budget import message_guarantee
from privbandits.algorithms.ldp_zheng.constants import (
    RadiusTable,
    beta_gloc,
    beta_gloc_conservative,
)
from privbandits.algorithms.ldp_zheng.features import (
    FeatureMap,
    argmax_ties,
    check_flag,
    require_reset,
)
from privbandits.algorithms.ldp_zheng.presets import (
    MECHANISMS,
    PRESETS,
    GLOCCalibration,
    gloc_calibration,
)
from privbandits.algorithms.ldp_zheng.randomizer import (
    SymmetricNoise,
    VectorNoise,
    clip_interval,
    clip_norm,
)
from privbandits.algorithms.ldp_zheng.server import NoisyRidgeServer
from privbandits.algorithms.registry import register
from privbandits.core.links import Link
from privbandits.core.messages import PrivatizedMessage, PublicState
from privbandits.core.rng import Streams
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_in_range,
    check_int,
    check_positive,
)
from privbandits.privacy.guarantee import PrivacyGuarantee

__all__ = ["LDPGLOC", "GLOCClient", "GLOCServer", "project_ball", "project_blocks"]


def project_ball(theta: np.ndarray, radius: float) -> np.ndarray:
    """Euclidean projection of rows of ``theta`` (R, D) onto the ball of ``radius`` (``Pi_W``)."""
    n = np.sqrt(np.einsum("rd,rd->r", theta, theta))
    return theta * np.minimum(1.0, radius / np.maximum(n, 1e-300))[:, None]


def project_blocks(theta: np.ndarray, radius: float, K: int) -> np.ndarray:
    """Euclidean projection of ``theta`` (R, K d) onto the product of ``K`` balls of ``radius``, one per arm block."""
    R, D = theta.shape
    blocks = theta.reshape(R, K, D // K)
    n = np.sqrt(np.einsum("rkd,rkd->rk", blocks, blocks))
    return (blocks * np.minimum(1.0, radius / np.maximum(n, 1e-300))[:, :, None]).reshape(R, D)


class GLOCClient(Client):
    """User side of LDP-GLOC: UCB choice, relabelling with the online iterate, three noisy parts.

    Parameters
    ----------
    features : FeatureMap
        Maps the user's contexts to model features.
    calibration : GLOCCalibration
        Clipping bounds and noise scales.
    link : Link
        The GLM link ``g``.
    clip : bool
        Clip the reported ``x``, ``y`` and ``z`` to the calibrated bounds (the gradient clipping
        is ``calibration.grad_clip``).
    mechanism_name : str
        Name recorded on every message.
    """

    def __init__(
        self, features: FeatureMap, calibration: GLOCCalibration, link: Link, clip: bool, mechanism_name: str
    ) -> None:
        self.features = features
        self.cal = calibration
        self.link = link
        self.clip = clip
        self.mechanism_name = mechanism_name
        self.noise_V = SymmetricNoise(features.D, calibration.scale_V, calibration.mechanism)
        self.noise_u = VectorNoise(calibration.scale_u, calibration.mechanism)
        self.noise_g = VectorNoise(calibration.scale_g, calibration.mechanism)

    def choose(self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``argmax_a <theta_tilde, x_a> + beta ||x_a||_M`` (Alg. 3 line 7; ties at random)."""
        F = self.features
        width = np.sqrt(np.maximum(F.quad_scores(public["M"], contexts), 0.0))
        scores = F.linear_scores(public["theta"], contexts) + public["beta"] * width
        return argmax_ties(scores, rng)

    def randomize(
        self,
        t: int,
        public: PublicState,
        contexts: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        rng: np.random.Generator,
    ) -> PrivatizedMessage:
        """Send ``(x x^T + B, z x + xi, grad + r)`` (Alg. 3 lines 8-9)."""
        cal = self.cal
        x = self.features.chosen(contexts, actions)
        y = np.asarray(rewards, dtype=float)
        if self.clip:
            x = clip_norm(x, cal.context_bound)
            y = clip_interval(y, *cal.reward_interval)
        theta_hat = public["theta_hat"]
        a = np.einsum("rd,rd->r", x, theta_hat)
        # the user clips z itself rather than trusting the broadcast theta_hat to lie in W
        z = clip_interval(a, -cal.z_bound, cal.z_bound) if self.clip else a
        # with a projected iterate |a| <= z_bound, so z = a for an honest server; using the clipped z keeps
        # an unclipped gradient bounded even for a broadcast theta_hat outside W
        grad = (self.link.mu(z if cal.project else a) - y)[:, None] * x
        if cal.grad_clip is not None:
            grad = clip_norm(grad, cal.grad_clip)
        R, D = x.shape
        V = x[:, :, None] * x[:, None, :] + self.noise_V.sample(rng, R)
        u = z[:, None] * x + self.noise_u.sample(rng, (R, D))
        g = grad + self.noise_g.sample(rng, (R, D))
        return PrivatizedMessage({"V": V, "u": u, "g": g}, mechanism=self.mechanism_name)


class GLOCServer(NoisyRidgeServer):
    """LDP-GLOC server: the noisy ridge part of LDP-UCB plus the noisy online gradient descent.

    Parameters
    ----------
    theta_hat0 : ndarray of shape (R, D)
        Initial online-learner iterate ``theta_hat_1`` (0 in the paper).
    zeta : float
        OGD step size.
    radius : float or None
        Radius of ``W`` for the projection (None: no projection, Han et al.'s code).
    blocks : int or None
        With ``K`` given, ``W`` is the product of ``K`` balls of ``radius`` (one per arm block).
    theta0 : ndarray of shape (R, D), optional
        ``theta_tilde_0`` before the first message (0 in the paper).
    **kwargs
        Passed to :class:`NoisyRidgeServer`.
    """

    def __init__(
        self,
        *args: object,
        theta_hat0: np.ndarray,
        zeta: float,
        radius: float | None,
        blocks: int | None = None,
        theta0: np.ndarray | None = None,
        **kwargs: object,
    ) -> None:
        self.theta_hat = np.array(theta_hat0, dtype=float)
        self.zeta = zeta
        self.radius = radius
        self.blocks = blocks
        self._theta0 = theta0
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def _message_shapes(self) -> dict[str, tuple[int, ...]]:
        shapes = super()._message_shapes()
        shapes["g"] = (self.R, self.D)
        return shapes

    def _absorb(self, message: PrivatizedMessage) -> None:
        step = self.theta_hat - self.zeta * message.payload["g"]
        if self.radius is None:
            self.theta_hat = step
        elif self.blocks is None:
            self.theta_hat = project_ball(step, self.radius)
        else:
            self.theta_hat = project_blocks(step, self.radius, self.blocks)

    def _refresh(self) -> None:
        super()._refresh()
        if self.n == 0 and self._theta0 is not None:
            self.theta = np.array(self._theta0, dtype=float)
            self._public = PublicState(self._public_arrays())

    def _public_arrays(self) -> dict[str, np.ndarray]:
        arrays = super()._public_arrays()
        arrays["theta_hat"] = self.theta_hat
        return arrays

    def online_estimate(self) -> np.ndarray:
        """The online learner's iterate ``theta_hat`` (R, D)."""
        return self.theta_hat


@register
class LDPGLOC(LocalAlgorithm):
    """LDP-GLOC (Zheng et al. 2020, Algorithm 3): GLOC with a noisy-OGD online learner, any GLM link.

    Parameters
    ----------
    epsilon : float
        Per-user ``epsilon > 0``; each of the three message parts gets ``epsilon/3``.
    delta : float
        Per-user ``delta`` in (0, 1); ``delta/3`` per part.
    alpha : float
        Failure probability in ``Upsilon_t``.
    preset : {"strict", "paper", "authors_code"}
        Calibration preset (see :mod:`privbandits.algorithms.ldp_zheng.presets`).
    mechanism : {"gaussian", "laplace"}
        Gaussian (the paper) or the ``epsilon``-LDP Laplace variant (spec section 3.3).
    gaussian_calibration : {"classic", "analytic"}
        Classic formula (default) or the exact analytic Gaussian mechanism.
    beta_formula : {"order", "conservative"}
        ``beta_t = sqrt((C sigma/mu) sqrt(D t))`` (the paper's order with constant 1, spec
        section 4.4.2 [CHOICE]) or the spec's conservative variant.
    beta_scale : float
        Multiplier ``kappa`` on ``beta_t``.
    c_factor : float
        ``c_t = c_factor * Upsilon_t`` (paper: 2).
    zeta : float, "default" or "paper", optional
        OGD step; None: preset default (``strict``: ``2/(C sqrt(1 + D sigma^2) sqrt(T))``;
        ``paper``/``authors_code``: ``1/sqrt(T)``).
    theta_radius : float, optional
        Radius of ``W`` (paper: the unit ball; default: the environment's ``theta_bound``, 1 for
        the usual single-parameter instance).  In the multi setting ``W`` is the product of one
        ball of this radius per arm [CHOICE] (see :mod:`~privbandits.algorithms.ldp_zheng.presets`).
    link_bound : float, optional
        ``C = sup |g|`` on ``[-1, 1]`` (default: computed from the link).
    link_min_slope : float, optional
        ``mu = inf g'`` on ``[-1, 1]`` (default: computed from the link).
    grad_bound : float, optional
        Gradient clipping norm (default ``C``; 1 in ``authors_code``).
    clip : bool
        User-side clipping of ``x``, ``y`` and ``z`` (spec section 4.0 [CHOICE]).
    clip_grad : bool, optional
        Gradient clipping (spec section 8 A7); None: preset default.
    horizon : int, optional
        ``T`` in the constants (default: the run's horizon).

    References
    ----------
    Zheng, Cai, Huang, Li & Wang (2020), NeurIPS, Algorithm 3 and Theorems 9-10; Jun, Bhargava,
    Nowak & Willett (2017), "Scalable Generalized Linear Bandits: Online Computation and
    Hashing", NeurIPS (the GLOC framework).
    """

    name = "ldp-gloc"
    settings = ("single", "multi")
    links = ("*",)
    paper = "Zheng et al. 2020 (Alg. 3)"

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 0.01,
        alpha: float = 0.1,
        preset: str = "strict",
        mechanism: str = "gaussian",
        gaussian_calibration: str = "classic",
        beta_formula: str = "order",
        beta_scale: float = 1.0,
        c_factor: float = 2.0,
        zeta: float | str | None = None,
        theta_radius: float | None = None,
        link_bound: float | None = None,
        link_min_slope: float | None = None,
        grad_bound: float | None = None,
        clip: bool = True,
        clip_grad: bool | None = None,
        horizon: int | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, alpha=alpha, preset=preset, mechanism=mechanism,
                         gaussian_calibration=gaussian_calibration, beta_formula=beta_formula,
                         beta_scale=beta_scale, c_factor=c_factor, zeta=zeta, theta_radius=theta_radius,
                         link_bound=link_bound, link_min_slope=link_min_slope, grad_bound=grad_bound,
                         clip=clip, clip_grad=clip_grad, horizon=horizon)
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.alpha = check_in_range("alpha", alpha, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
        self.preset = check_choice("preset", preset, PRESETS)
        self.mechanism = check_choice("mechanism", mechanism, MECHANISMS)
        self.gaussian_calibration = check_choice("gaussian_calibration", gaussian_calibration, ("classic", "analytic"))
        self.beta_formula = check_choice("beta_formula", beta_formula, ("order", "conservative"))
        self.beta_scale = check_positive("beta_scale", beta_scale)
        self.c_factor = check_positive("c_factor", c_factor)
        if zeta is None or isinstance(zeta, str):
            self.zeta = None if zeta is None else check_choice("zeta", zeta, ("default", "paper"))
        else:
            self.zeta = check_positive("zeta", zeta)
        self.theta_radius = None if theta_radius is None else check_positive("theta_radius", theta_radius)
        self.link_bound = None if link_bound is None else check_positive("link_bound", link_bound)
        self.link_min_slope = None if link_min_slope is None else check_positive("link_min_slope", link_min_slope)
        self.grad_bound = None if grad_bound is None else check_positive("grad_bound", grad_bound)
        self.clip = check_flag("clip", clip)
        self.clip_grad = None if clip_grad is None else check_flag("clip_grad", clip_grad)
        self.horizon = None if horizon is None else check_int("horizon", horizon, 2)

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        self.features = F = FeatureMap(spec)
        T = self.horizon if self.horizon is not None else max(spec.horizon, 2)
        self.T = T
        cal = gloc_calibration(spec, F.D, T, self.epsilon, self.delta, self.preset, self.mechanism,
                               self.gaussian_calibration, self.theta_radius, self.link_bound,
                               self.link_min_slope, self.grad_bound, self.clip_grad, self.zeta, F.block)
        self.calibration = cal
        D, alpha, scale = F.D, self.alpha, self.beta_scale
        if self.beta_formula == "order":
            beta = RadiusTable(lambda s: scale * beta_gloc(s, cal.grad_sigma, cal.link_min_slope, D))
        else:
            beta = RadiusTable(lambda s: scale * beta_gloc_conservative(s, cal.sigma, cal.grad_sigma,
                                                                        cal.link_min_slope, D, T, alpha))
        R = self.R
        if cal.init == "random":
            u = streams.server.standard_normal((2, R, D))
            u /= np.linalg.norm(u, axis=-1, keepdims=True)
            theta_hat0, theta0 = u[0], u[1]
        else:
            theta_hat0, theta0 = np.zeros((R, D)), None
        mech = f"ldp-gloc/{cal.mechanism}"
        self.server = GLOCServer(R, D, mech, cal.sigma, T, alpha, self.c_factor, beta,
                                 theta_hat0=theta_hat0, zeta=cal.zeta,
                                 radius=cal.theta_radius if cal.project else None,
                                 blocks=F.K if cal.blockwise else None, theta0=theta0)
        self.client = GLOCClient(F, cal, spec.link, self.clip, mech)
        notes = cal.notes if self.clip else cal.notes + "; clip=False: conditional on data within the declared bounds"
        self._guarantee = message_guarantee(cal.parts, notes)

    @property
    def sigma(self) -> float:
        """Standard deviation of the ``x x^T`` and ``z x`` noise (after :meth:`reset`)."""
        return self.calibration.sigma

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """Per-user local guarantee from the noise actually added (available after :meth:`reset`)."""
        return require_reset(self, "_guarantee")

    def estimate(self) -> np.ndarray:
        """``theta_tilde_t`` (the UCB centre): ``(R, d)``, or ``(R, K, d)`` in the multi setting."""
        return self.features.to_parameter_shape(self.server.estimate())

    def online_estimate(self) -> np.ndarray:
        """The noisy-OGD iterate ``theta_hat``: ``(R, d)``, or ``(R, K, d)`` in the multi setting."""
        return self.features.to_parameter_shape(self.server.online_estimate())
