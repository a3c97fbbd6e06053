"""LDP-UCB: locally private LinUCB (Zheng, Cai, Huang, Li & Wang 2020, Algorithm 5).

Round ``t`` (spec ``zheng2020-ldp-bandits.md`` section 4.3.2)::

    server -> user t : theta_tilde_{t-1},  M = (V_{t-1} + c_{t-1} I)^{-1},  beta_{t-1}
    user t           : x_t = argmax_x  x^T theta_tilde + beta sqrt(x^T M x)
                       send (x_t x_t^T + B_t,  y_t x_t + xi_t)       B_t = sym_gauss(sigma), xi_t ~ N(0, sigma^2 I)
    server           : V_t = V_{t-1} + x_t x_t^T + B_t;  u_t = u_{t-1} + y_t x_t + xi_t
                       theta_tilde_t = (V_t + c_t I)^{-1} u_t

The server never sees ``x_t``, ``y_t`` or the arm: only the noisy pair.  In the multi-parameter
setting the client maps its shared context to block one-hot features ``e_a kron X`` in dimension
``K d`` and noises the full ``K d`` statistics (Han et al. 2021's joint model), so the message
also hides the arm.
"""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.base import Client, LocalAlgorithm
from privbandits.algorithms.ldp_zheng.budget import message_guarantee
from privbandits.algorithms.ldp_zheng.constants import RadiusTable, beta_ucb_paper, beta_ucb_ss
from privbandits.algorithms.ldp_zheng.features import (
    FeatureMap,
    argmax_ties,
    check_flag,
    require_reset,
)
from privbandits.algorithms.ldp_zheng.presets import (
    MECHANISMS,
    PRESETS,
    REFERENCE_CODES,
    UCBCalibration,
    ucb_calibration,
)
from privbandits.algorithms.ldp_zheng.randomizer import (
    SymmetricNoise,
    VectorNoise,
    clip_interval,
    clip_norm,
)
from privbandits.algorithms.ldp_zheng.server import NoisyRidgeServer
from privbandits.algorithms.registry import register
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

__all__ = ["LDPUCB", "UCBClient"]


class UCBClient(Client):
    """User side of LDP-UCB: optimistic choice from the public state, then the Gaussian randomizer.

    Parameters
    ----------
    features : FeatureMap
        Maps the user's contexts to model features.
    calibration : UCBCalibration
        Clipping bounds and noise scales.
    clip : bool
        Clip the reported ``x`` and ``y`` to the calibrated bounds.
    mechanism_name : str
        Name recorded on every message.
    """

    def __init__(self, features: FeatureMap, calibration: UCBCalibration, clip: bool, mechanism_name: str) -> None:
        self.features = features
        self.cal = calibration
        self.clip = clip
        self.mechanism_name = mechanism_name
        self.noise_V = SymmetricNoise(features.D, calibration.scale_V, calibration.mechanism)
        self.noise_u = VectorNoise(calibration.scale_u, calibration.mechanism)

    def choose(self, t: int, public: PublicState, contexts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``argmax_a x_a^T theta + beta ||x_a||_M`` (ties uniformly at random)."""
        F = self.features
        q = np.maximum(F.quad_scores(public["M"], contexts), 0.0)
        bonus = q if self.cal.bonus == "squared" else np.sqrt(q)
        scores = F.linear_scores(public["theta"], contexts) + public["beta"] * bonus
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
        """Send ``(x x^T + B, y x + xi)`` for the user's own clipped ``(x, y)``."""
        x = self.features.chosen(contexts, actions)
        y = np.asarray(rewards, dtype=float)
        if self.clip:
            x = clip_norm(x, self.cal.context_bound)
            y = clip_interval(y, *self.cal.reward_interval)
        R, D = x.shape
        V = x[:, :, None] * x[:, None, :] + self.noise_V.sample(rng, R)
        u = y[:, None] * x + self.noise_u.sample(rng, (R, D))
        return PrivatizedMessage({"V": V, "u": u}, mechanism=self.mechanism_name)


@register
class LDPUCB(LocalAlgorithm):
    """LDP-UCB (Zheng et al. 2020, Algorithm 5): LinUCB on Gaussian-noised sufficient statistics.

    Parameters
    ----------
    epsilon : float
        Per-user privacy parameter ``epsilon > 0``.
    delta : float
        Per-user ``delta`` in (0, 1) (ignored by the Laplace variant, which is pure).
    alpha : float
        Failure probability in ``Upsilon_t`` and ``beta_t`` (official code: 0.1).
    preset : {"strict", "paper", "authors_code"}
        Calibration preset (see :mod:`privbandits.algorithms.ldp_zheng.presets`).
    mechanism : {"gaussian", "laplace"}
        Gaussian ``(epsilon, delta)``-LDP (the paper) or the ``epsilon``-LDP Laplace variant
        (spec section 3.3 [CHOICE]).
    noise_split : {"split", "joint"}
        Two Gaussian mechanisms at ``(eps_i, delta/2)`` (default, the ``ln(2.5/delta)`` form) or one
        at ``(eps, delta)`` on the whole message (the official README's form), spec section 8 A4.
    gaussian_calibration : {"classic", "analytic"}
        Classic ``sqrt(2 ln(1.25/delta))`` formula (default) or the exact analytic Gaussian
        mechanism (Balle & Wang 2018), a non-default extension (spec section 3.2).
    beta_formula : {"paper", "ss"}
        The paper's radius or the Shariff-Sheffet-style one (spec section 4.3.2).
    beta_scale : float
        Multiplier ``kappa`` on ``beta_t`` (1 = theory).
    c_factor : float
        ``c_t = c_factor * Upsilon_t`` (paper: 2).
    clip : bool
        User-side clipping of the reported ``x`` and ``y`` (spec section 4.0 [CHOICE]).
    reference_code : {"han2021", "zheng2020"}
        Which public code ``preset="authors_code"`` imitates.
    horizon : int, optional
        ``T`` in the constants (default: the run's horizon).

    References
    ----------
    Zheng, Cai, Huang, Li & Wang (2020), "Locally Differentially Private (Contextual) Bandits
    Learning", NeurIPS, Algorithm 5 (appendix D) and Theorems 7-8; constants as reconstructed in
    the project spec, section 4.3.  Han, Liang, Wang & Zhang (2021), section 5 (as a baseline).
    """

    name = "ldp-ucb"
    settings = ("single", "multi")
    links = ("identity",)
    paper = "Zheng et al. 2020 (Alg. 5)"

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 0.01,
        alpha: float = 0.1,
        preset: str = "strict",
        mechanism: str = "gaussian",
        noise_split: str = "split",
        gaussian_calibration: str = "classic",
        beta_formula: str = "paper",
        beta_scale: float = 1.0,
        c_factor: float = 2.0,
        clip: bool = True,
        reference_code: str = "han2021",
        horizon: int | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, delta=delta, alpha=alpha, preset=preset, mechanism=mechanism,
                         noise_split=noise_split, gaussian_calibration=gaussian_calibration,
                         beta_formula=beta_formula, beta_scale=beta_scale, c_factor=c_factor, clip=clip,
                         reference_code=reference_code, horizon=horizon)
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.alpha = check_in_range("alpha", alpha, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
        self.preset = check_choice("preset", preset, PRESETS)
        self.mechanism = check_choice("mechanism", mechanism, MECHANISMS)
        self.noise_split = check_choice("noise_split", noise_split, ("split", "joint"))
        self.gaussian_calibration = check_choice("gaussian_calibration", gaussian_calibration, ("classic", "analytic"))
        self.beta_formula = check_choice("beta_formula", beta_formula, ("paper", "ss"))
        self.beta_scale = check_positive("beta_scale", beta_scale)
        self.c_factor = check_positive("c_factor", c_factor)
        self.clip = check_flag("clip", clip)
        self.reference_code = check_choice("reference_code", reference_code, REFERENCE_CODES)
        self.horizon = None if horizon is None else check_int("horizon", horizon, 2)

    def reset(self, spec: EnvSpec, replications: int, streams: Streams) -> None:
        super().reset(spec, replications, streams)
        self.features = F = FeatureMap(spec)
        T = self.horizon if self.horizon is not None else max(spec.horizon, 2)
        self.T = T
        cal = ucb_calibration(spec, F.D, self.epsilon, self.delta, self.preset, self.mechanism,
                              self.noise_split, self.gaussian_calibration, self.reference_code)
        self.calibration = cal
        beta_fn = beta_ucb_paper if self.beta_formula == "paper" else beta_ucb_ss
        sigma, D, alpha, scale = cal.sigma, F.D, self.alpha, self.beta_scale

        beta = RadiusTable(lambda s: scale * beta_fn(s, sigma, D, T, alpha))

        mech = f"ldp-ucb/{cal.mechanism}"
        self.server = NoisyRidgeServer(self.R, D, mech, sigma, T, alpha, self.c_factor, beta, cal.V0,
                                       cal.beta_index, cal.c_first)
        self.client = UCBClient(F, cal, self.clip, mech)
        notes = cal.notes if self.clip else cal.notes + "; clip=False: conditional on data within the declared bounds"
        self._guarantee = message_guarantee(cal.parts, notes)

    @property
    def sigma(self) -> float:
        """Noise standard deviation used (after :meth:`reset`)."""
        return self.calibration.sigma

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """Per-user local guarantee from the noise actually added (available after :meth:`reset`)."""
        return require_reset(self, "_guarantee")

    def estimate(self) -> np.ndarray:
        """``theta_tilde_t``: ``(R, d)``, or ``(R, K, d)`` in the multi setting."""
        return self.features.to_parameter_shape(self.server.estimate())
