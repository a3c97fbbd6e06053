"""Dimension-free private linear regression: Algorithms 5 and 6 of Chen et al. (2025), Section 6.

Both are improper square-loss oracles (``theta_hat`` may leave the unit ball) whose prediction error
``||theta_hat - theta*||_Sigma^2 = E<phi, theta_hat - theta*>^2`` does not grow with ``d`` when
``tr Sigma <= 1``: isotropic noise of norm ``~ sqrt(d)`` only enters through ``||noise||_Sigma``.

* ``JDP_Improper_BatchSGD`` (Algorithm 5): one pass of batched projected gradient descent on the
  square loss ``(<phi, theta> - y)^2`` over ``K`` disjoint batches of ``N = floor(n/K)``, then
  output perturbation ``theta_K + N(0, (sigma s)^2 I)``.  Replacing one sample moves its batch
  gradient by at most ``8/N`` (per-sample gradients ``2(<phi, theta> - y) phi`` have norm <= 4) and
  every later projected step is non-expansive (the batch loss is convex and 2-smooth, ``eta <= 1``),
  so ``s = 8 eta / N``.  Default ``K = max(1, min(ceil(sqrt n), ceil((n^2 / (128 sigma^2))^{1/3})))``.
* ``LDP_Improper_BatchSGD`` (Algorithm 6): no projection; user ``i`` of batch ``k`` sends
  ``2(clip(<phi_i, theta_{k-1}>, -1, 1) - y_i) phi_i + N(0, (8 sigma)^2 I)`` (the "careful
  clipping" of the paper read as prediction clipping: the exact gradient of a convex 2-smooth
  surrogate with the same minimizer; sensitivity 8).  ``eta K = (n / (128 sigma^2))^{1/3}``.
  The iterate is the untrusted server's in the local model; the user clips its own response into
  ``[-1, 1]`` and the gradient to norm 4 (:func:`improper_sgd_gradients`), so the sensitivity
  holds for every iterate it is sent.

Neither has a finite-sample per-point width: the estimates report the trivial width 2.

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Section 6.1, Algorithms 5 and 6,
Theorem 6.2.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privbandits.core.validation import (
    check_choice,
    check_in_range,
    check_int,
)
from privbandits.privacy.guarantee import NON_PRIVATE
from privbandits.regression.base import GaussianOracle, as_generator
from privbandits.regression.data import prepare
from privbandits.regression.estimate import RegressionEstimate
from privbandits.regression.links import link_constants
from privbandits.regression.matrices import clip_rows
from privbandits.regression.releases import Ledger, Release, privatize_vector

__all__ = [
    "SQ_GRADIENT_NORM",
    "SQ_GRADIENT_SENSITIVITY",
    "ImproperBatchSGD",
    "improper_sgd_gradients",
    "improper_sgd_messages",
    "improper_sgd_pass",
]

_IDENTITY = link_constants("identity")
#: Largest l2 norm of one square-loss gradient ``2(clip(<phi, theta>) - y) phi`` (``|.| <= 2``, ``||phi|| <= 1``).
SQ_GRADIENT_NORM = 4.0
#: Replace-one sensitivity of one square-loss gradient (``2 SQ_GRADIENT_NORM``).
SQ_GRADIENT_SENSITIVITY = 2.0 * SQ_GRADIENT_NORM


def improper_sgd_pass(X: np.ndarray, y: np.ndarray, K: int, eta: float) -> np.ndarray:
    """Algorithm 5, lines 1-4: the noiseless batched projected gradient pass, returns ``theta_K``."""
    N = X.shape[0] // K
    theta = np.zeros(X.shape[1])
    for k in range(K):
        Xb, yb = X[k * N : (k + 1) * N], y[k * N : (k + 1) * N]
        g = 2.0 * Xb.T @ (Xb @ theta - yb) / N
        theta = theta - eta * g
        nt = float(np.linalg.norm(theta))
        if nt > 1.0:
            theta /= nt
    return theta


def improper_sgd_gradients(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Algorithm 6, line 3, before noise: the users' gradients ``2(clip(<phi, theta>) - clip(y)) phi``.

    The prediction and the response are clipped into ``[-1, 1]`` and the gradient to l2 norm
    :data:`SQ_GRADIENT_NORM` (never active for ``||phi|| <= 1``, up to rounding): whatever iterate
    ``theta`` the server sends, two users' gradients are at most :data:`SQ_GRADIENT_SENSITIVITY`
    apart.  ``theta`` is the broadcast iterate ``(d,)``, or one iterate per user ``(n, d)``.
    """
    pred = X @ theta if np.ndim(theta) == 1 else np.einsum("ij,ij->i", X, theta)
    g = 2.0 * (np.clip(pred, -1.0, 1.0) - np.clip(y, -1.0, 1.0))[..., None] * X
    return clip_rows(g, SQ_GRADIENT_NORM)


def improper_sgd_messages(
    theta: np.ndarray, X: np.ndarray, y: np.ndarray, sigma: float, rng: np.random.Generator
) -> np.ndarray:
    """Algorithm 6, line 3: the users' messages ``2(clip(<phi, theta>) - y) phi + N(0, (8 sigma)^2 I)``
    (:func:`improper_sgd_gradients` plus the Gaussian noise).

    ``theta`` is the broadcast iterate ``(d,)``, or one iterate per user ``(n, d)``.
    """
    return privatize_vector(
        improper_sgd_gradients(theta, X, y), sigma * SQ_GRADIENT_SENSITIVITY, rng
    )


class ImproperBatchSGD(GaussianOracle):
    """``JDP_Improper_BatchSGD`` (``mode="jdp"``, Algorithm 5) / ``LDP_Improper_BatchSGD`` (``"ldp"``, Alg. 6).

    Parameters
    ----------
    epsilon, delta : float
        Privacy level (``epsilon = inf``: the noiseless pass, the non-private oracle).
    mode : {"jdp", "ldp"}
    K : int, optional
        Number of batches (default: the rate-optimal choice of the module docstring).
    eta : float
        Step size in (0, 1].
    calibration : {"analytic", "classic"}
    on_bound : {"clip", "reject"}
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        mode: str = "jdp",
        K: int | None = None,
        eta: float = 1.0,
        calibration: str = "analytic",
        on_bound: str = "clip",
    ) -> None:
        super().__init__(epsilon, delta, calibration, on_bound)
        self.mode = check_choice("mode", mode, ("jdp", "ldp"))
        self.K = None if K is None else check_int("K", K, 1)
        self.eta = check_in_range("eta", eta, 0.0, 1.0, low_inclusive=False)

    def steps(self, n: int) -> tuple[int, float]:
        """``(K, eta)`` for ``n`` samples."""
        if self.K is not None:
            return min(self.K, n), self.eta
        s2 = max(self.sigma**2, 1e-300)
        if self.mode == "jdp":
            K = max(
                1, min(math.ceil(math.sqrt(n)), math.ceil((n * n / (128.0 * s2)) ** (1.0 / 3.0)))
            )
            return min(K, n), self.eta
        r = (n / (128.0 * s2)) ** (1.0 / 3.0) if self.sigma > 0 else math.sqrt(n)
        if r < 1.0:
            return 1, r
        return min(n, math.ceil(r)), self.eta

    def fit(
        self, X: object, y: object, rng: np.random.Generator | int | None = None
    ) -> RegressionEstimate:
        data = prepare(X, y, self.on_bound)
        gen = as_generator(rng)
        n, d = data.X.shape
        K, eta = self.steps(n)
        N = n // K
        ledger = Ledger(n)
        resolved: dict[str, Any] = {
            "sigma": self.sigma,
            "K": K,
            "eta": eta,
            "N": N,
            "mode": self.mode,
        }
        if self.mode == "jdp":
            s = SQ_GRADIENT_SENSITIVITY * eta / N
            theta = privatize_vector(improper_sgd_pass(data.X, data.y, K, eta), self.sigma * s, gen)
            ledger.record(Release("output perturbation", np.arange(K * N), s, self.sigma * s))
            model = "central"
        else:
            theta = np.zeros(d)
            for k in range(K):
                sl = slice(k * N, (k + 1) * N)
                msgs = improper_sgd_messages(theta, data.X[sl], data.y[sl], self.sigma, gen)
                ledger.record(
                    Release(
                        f"gradient batch {k}",
                        np.arange(k * N, (k + 1) * N),
                        SQ_GRADIENT_SENSITIVITY,
                        self.sigma * SQ_GRADIENT_SENSITIVITY,
                        True,
                    )
                )
                theta = theta - eta * msgs.mean(axis=0)
            model = "local"
        g = (
            NON_PRIVATE
            if self.sigma == 0.0
            else ledger.guarantee(self.delta, model, f"improper batch SGD ({self.mode})")
        )
        return RegressionEstimate(
            theta,
            _IDENTITY,
            None,
            math.inf,
            g,
            ledger,
            resolved,
            data.n_clipped_x + data.n_clipped_y,
        )
