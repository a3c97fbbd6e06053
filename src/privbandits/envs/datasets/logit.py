"""Maximum-likelihood logistic regression and its fit statistics: the ground truth of the
data-backed GLM environments.

The environments fit ``P(y = 1 | z) = sigma(z^T theta)`` on real data once and then treat the fit
as the population model that generates Bernoulli rewards (Han et al. 2021, Appendix F).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from privbandits.core.errors import ValidationError

__all__ = ["LogitFit", "choice_accuracy", "fit_logistic"]


@dataclass(frozen=True)
class LogitFit:
    """A fitted logistic model and its quality.

    Attributes
    ----------
    theta : ndarray of shape (d,)
        Coefficients (no separate intercept: a constant feature plays that role).
    loglik : float
        Log-likelihood of the fit, ``sum_i y_i log p_i + (1 - y_i) log(1 - p_i)``.
    null_loglik : float
        Log-likelihood of the constant model ``p_i = mean(y)``.
    n : int
        Number of observations.
    C : float
        Inverse L2 strength (``inf``: plain maximum likelihood).
    converged : bool
        Whether the optimizer met its gradient tolerance.
    """

    theta: np.ndarray
    loglik: float
    null_loglik: float
    n: int
    C: float
    converged: bool

    @property
    def mcfadden_r2(self) -> float:
        """McFadden's pseudo-R^2, ``1 - loglik / null_loglik``."""
        return 1.0 - self.loglik / self.null_loglik

    def describe(self) -> dict[str, Any]:
        """JSON-serializable summary."""
        return {
            "loglik": round(self.loglik, 4),
            "null_loglik": round(self.null_loglik, 4),
            "mcfadden_r2": round(self.mcfadden_r2, 6),
            "n": self.n,
            "C": self.C if np.isfinite(self.C) else "inf",
            "converged": self.converged,
            "theta": [round(float(v), 6) for v in self.theta],
        }


def _loss(theta: np.ndarray, Z: np.ndarray, y: np.ndarray, lam: float) -> tuple[float, np.ndarray]:
    s = Z @ theta
    # -loglik = sum log(1 + e^s) - y s, computed stably
    nll = float(np.sum(np.logaddexp(0.0, s) - y * s)) + 0.5 * lam * float(theta @ theta)
    grad = Z.T @ (special.expit(s) - y) + lam * theta
    return nll, grad


def fit_logistic(Z: np.ndarray, y: np.ndarray, C: float = float("inf")) -> LogitFit:
    """Fit ``P(y = 1 | z) = sigma(z^T theta)`` by (L2-penalized) maximum likelihood.

    Minimizes ``||theta||^2 / 2 + C sum_i logloss_i`` (scikit-learn's ``LogisticRegression``
    objective with ``fit_intercept=False``), or the plain negative log-likelihood when ``C`` is
    infinite, by Newton's method with step halving (the objective is convex; a few iterations reach
    the gradient tolerance ``1e-9 n``).

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        Features (include a constant column for an intercept).
    y : ndarray of shape (n,)
        Binary labels in {0, 1}.
    C : float
        Inverse regularization strength (> 0; ``inf`` for none).

    Returns
    -------
    LogitFit
    """
    Z = np.asarray(Z, dtype=float)
    y = np.asarray(y, dtype=float)
    if Z.ndim != 2 or y.shape != (Z.shape[0],) or Z.shape[0] == 0:
        raise ValidationError(
            f"fit_logistic: Z must be (n, d) and y (n,) with n >= 1, got {Z.shape} and {y.shape}"
        )
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValidationError("fit_logistic: labels y must be 0 or 1")
    if not (C > 0):
        raise ValidationError(f"fit_logistic: C must be > 0 (inf for no penalty), got {C}")
    if not np.isfinite(Z).all():
        raise ValidationError("fit_logistic: features Z contain NaN or infinite values")
    lam = 0.0 if np.isinf(C) else 1.0 / C
    theta, converged = _newton(Z, y, lam)
    s = Z @ theta
    loglik = -float(np.sum(np.logaddexp(0.0, s) - y * s))
    ybar = float(y.mean())
    null = (
        0.0
        if ybar in (0.0, 1.0)
        else float(len(y) * (ybar * np.log(ybar) + (1 - ybar) * np.log1p(-ybar)))
    )
    return LogitFit(
        theta=theta, loglik=loglik, null_loglik=null, n=len(y), C=float(C), converged=converged
    )


def _newton(
    Z: np.ndarray, y: np.ndarray, lam: float, max_iter: int = 100
) -> tuple[np.ndarray, bool]:
    """Minimize :func:`_loss` by damped Newton steps; returns the point and whether it converged."""
    n, d = Z.shape
    theta = np.zeros(d)
    f, g = _loss(theta, Z, y, lam)
    tol = 1e-9 * max(n, 1)
    for _ in range(max_iter):
        if np.abs(g).max() <= tol:
            return theta, True
        p = special.expit(Z @ theta)
        H = (Z * (p * (1.0 - p))[:, None]).T @ Z + (lam + 1e-12) * np.eye(d)
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(H, g, rcond=None)[0]
        t = 1.0
        while t > 1e-10:
            f_new, g_new = _loss(theta - t * step, Z, y, lam)
            if f_new <= f:
                break
            t *= 0.5
        else:
            return theta, False
        theta = theta - t * step
        f, g = f_new, g_new
    return theta, bool(np.abs(g).max() <= tol)


def choice_accuracy(probs: np.ndarray, choice: np.ndarray) -> tuple[float, float]:
    """Share of choices the model predicts (arm of highest probability) and the share of the
    majority alternative (the accuracy of always predicting the most frequent choice).

    Parameters
    ----------
    probs : ndarray of shape (n, K)
        Model probability of every alternative.
    choice : ndarray of int, shape (n,)
        Index of the chosen alternative.
    """
    acc = float(np.mean(np.argmax(probs, axis=1) == choice))
    majority = float(np.bincount(choice, minlength=probs.shape[1]).max() / len(choice))
    return acc, majority
