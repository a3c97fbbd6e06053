"""Synthetic stochastic contextual environments (single- and multi-parameter, any link)."""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.features import block_features
from privbandits.core.links import LINK_IDENTITY, Link
from privbandits.core.validation import check_choice, check_finite_array, check_positive
from privbandits.envs.base import CHUNK_FLOATS, MAX_CHUNK_ROUNDS, Environment
from privbandits.envs.contexts import CONTEXT_DISTRIBUTIONS, sample_contexts, unit_sphere

__all__ = ["SingleThetaEnv", "SyntheticEnv", "draw_theta"]


@nb.njit(cache=True)
def _scores(X: np.ndarray, theta: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """``z[b, r, k] = X[b, r, k] @ theta[r, k]``, an arm axis of length 1 standing for every arm:
    single setting ``X`` (B, R, K, d) with ``theta`` (R, 1, d) (``X[b, r, k] @ theta[r]``), multi
    setting ``X`` (B, R, 1, d) with ``theta`` (R, K, d) (``X[b, r] @ theta[r, k]``)."""
    B, R, KX, d = X.shape
    KT = theta.shape[1]
    K = max(KX, KT)
    z = np.empty((B, R, K))
    for b in range(B):
        for r in range(R):
            for k in range(K):
                kx = k if KX > 1 else 0
                kt = k if KT > 1 else 0
                s = 0.0
                for j in range(d):
                    s += X[b, r, kx, j] * theta[r, kt, j]
                z[b, r, k] = s
    return z


def draw_theta(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    d: int,
    theta: Any = "sphere",
    norm: float = 1.0,
) -> np.ndarray:
    """Draw or broadcast the true parameter(s).

    ``theta="sphere"``: uniform on the sphere of radius ``norm``; ``"ball"``: uniform in the ball;
    an array of shape ``(d,)`` (or ``(K, d)`` in the multi setting) is used as given in every
    replication.
    """
    if isinstance(theta, str):
        check_choice("theta", theta, ("sphere", "ball"))
        u = unit_sphere(rng, shape, d)
        if theta == "ball":
            u = u * rng.random(shape + (1,)) ** (1.0 / d)
        return norm * u
    arr = check_finite_array("theta", theta)
    want = shape[1:] + (d,)
    if arr.shape != want:
        raise ValidationError(f"theta must have shape {want}, got {arr.shape}")
    return np.broadcast_to(arr, shape + (d,)).copy()


class SingleThetaEnv(Environment):
    """An environment with one true parameter ``theta*`` in R^d per replication, given or drawn
    by :func:`draw_theta` from the ``theta`` and ``theta_norm`` it was constructed with (the
    fixed action sets and the context sequences)."""

    theta: Any
    theta_norm: float
    _theta: np.ndarray

    def _set_theta(self, theta: Any, theta_norm: float) -> None:
        """Keep the ``theta`` and ``theta_norm`` arguments (``theta_norm`` checked positive)."""
        self.theta = theta
        self.theta_norm = check_positive("theta_norm", theta_norm)

    def _draw_theta(self, rng: np.random.Generator) -> None:
        """Draw (or broadcast) this instance's ``theta*``, shape ``(R, d)``, from ``rng``."""
        self._theta = draw_theta(rng, (self.R,), self.d, self.theta, self.theta_norm)

    @property
    def theta_star(self) -> np.ndarray:
        return self._theta


class SyntheticEnv(Environment):
    """Synthetic contextual bandit with i.i.d. contexts drawn every round.

    Parameters
    ----------
    d : int
        Context dimension.
    K : int
        Number of arms.
    setting : {"single", "multi"}
        ``single``: each arm gets its own context ``x_{t,a}`` (drawn i.i.d.), one shared
        ``theta*``; mean reward ``mu(x_{t,a} @ theta*)``.  ``multi``: one shared context ``X_t``,
        one ``theta*_a`` per arm; mean reward ``mu(X_t @ theta*_a)``.
    contexts : {"sphere", "ball", "gaussian", "gaussian_normalized"}
        Context distribution (see :func:`~privbandits.envs.contexts.sample_contexts`).
    link : str or Link
        Reward link (identity, logistic, probit, poisson).
    noise : {"gaussian", "bounded", "bernoulli", "poisson", "none"}
        Reward model (see :class:`~privbandits.envs.noise.RewardNoise`).
    noise_scale : float
        Scale of additive noise.
    theta : {"sphere", "ball"} or array
        True parameter, drawn per replication from the instance stream or given.
    theta_norm : float
        Radius for drawn parameters.
    context_bound : float
        ``C_B``.
    context_cov : array of shape (d, d), optional
        Covariance of the Gaussian context families.
    features : {"shared", "block"}
        Multi setting only: ``block`` presents the problem as a single-parameter one with
        block one-hot features ``e_a kron X_t`` in dimension ``K d`` and parameter
        ``vec(theta*_1..theta*_K)`` (the construction of Zheng et al. 2020 for LinUCB-type
        algorithms).
    reward_range : tuple, optional
        Clipping interval announced to algorithms (default from the noise kind).
    """

    def __init__(
        self,
        d: int,
        K: int,
        setting: str = "single",
        contexts: str = "sphere",
        link: str | Link = "identity",
        noise: str = "gaussian",
        noise_scale: float = 0.1,
        theta: Any = "sphere",
        theta_norm: float = 1.0,
        context_bound: float = 1.0,
        context_cov: Any = None,
        features: str = "shared",
        reward_range: tuple[float, float] | None = None,
    ) -> None:
        super().__init__(d, K, link, noise, noise_scale, context_bound, reward_range)
        self._setting = check_choice("setting", setting, ("single", "multi"))
        self.contexts = check_choice("contexts", contexts, CONTEXT_DISTRIBUTIONS)
        self.theta = theta
        self.theta_norm = check_positive("theta_norm", theta_norm)
        self.features = check_choice("features", features, ("shared", "block"))
        if self.features == "block" and self._setting != "multi":
            raise ValidationError("features='block' applies to setting='multi' only")
        self.cov_sqrt = None
        if context_cov is not None:
            cov = check_finite_array("context_cov", context_cov, ndim=2)
            if cov.shape != (d, d):
                raise ValidationError(f"context_cov must have shape ({d}, {d}), got {cov.shape}")
            try:
                self.cov_sqrt = np.linalg.cholesky(cov)
            except np.linalg.LinAlgError:
                raise ValidationError("context_cov must be symmetric positive definite") from None

    # public description -------------------------------------------------------------------
    @property
    def setting(self) -> str:  # type: ignore[override]
        return "single" if self.features == "block" else self._setting

    @property
    def d_features(self) -> int:  # type: ignore[override]
        return self.K * self.d if self.features == "block" else self.d

    @property
    def theta_bound(self) -> float:  # type: ignore[override]
        return self.theta_norm * (np.sqrt(self.K) if self.features == "block" else 1.0)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        theta = self.theta if isinstance(self.theta, str) else np.asarray(self.theta).tolist()
        out.update(
            setting=self._setting,
            contexts=self.contexts,
            theta=theta,
            theta_norm=self.theta_norm,
            features=self.features,
        )
        return out

    # protocol ------------------------------------------------------------------------------
    @property
    def theta_star(self) -> np.ndarray:
        if self.features == "block":
            return self._theta.reshape(self.R, self.K * self.d)
        return self._theta

    def _reset(self) -> None:
        shape = (self.R,) if self._setting == "single" else (self.R, self.K)
        self._theta = draw_theta(self.streams.instance, shape, self.d, self.theta, self.theta_norm)

    def chunk_rounds(self) -> int:
        per_round = self.R * (self.K if self._setting == "single" else 1) * self.d
        return int(max(1, min(MAX_CHUNK_ROUNDS, CHUNK_FLOATS // per_round)))

    def _draw_chunk(self, B: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        rng = self.streams.contexts
        if self._setting == "single":
            X, nclip = sample_contexts(
                rng, (B, self.R, self.K), self.d, self.contexts, self.context_bound, self.cov_sqrt
            )
            z = _scores(X, self._theta[:, None, :])
        else:
            X, nclip = sample_contexts(
                rng, (B, self.R), self.d, self.contexts, self.context_bound, self.cov_sqrt
            )
            z = _scores(X[:, :, None, :], self._theta)
        means = z if self.link.code == LINK_IDENTITY else self.link.mu(z)
        self.noise.check_means(means)
        self.n_clipped += nclip
        V = self.noise.draw_variates(self.streams.rewards, (B, self.R))
        if self.features == "block":
            X = block_features(X, self.K)
        return X, means, V, means.max(axis=-1)
