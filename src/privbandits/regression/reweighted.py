"""Private re-weighted regression: Algorithm 7 (batched projected GD) and Algorithms 2 / 8.

``JDP_L1_Regression`` (Algorithm 2) learns the normalization ``(U, lambda)`` on the first half of
the data (:mod:`~privbandits.regression.normalization`, Algorithm 1), then minimizes the
re-weighted loss in ``w = U^{-1} theta`` coordinates

    L_U(w) = E[ l_nu(<U phi, w>, y) / ||U phi|| ] + (L_nu lambda / 2) w^T U w,
    grad L_U(w) = E[ (U phi / ||U phi||) (nu(<U phi, w>) - y) ] + L_nu lambda U w,

by ``M`` steps of batched projected gradient descent on disjoint batches of the second half
(Algorithm 7), each batch gradient released with Gaussian noise.  Every per-sample gradient has
norm ``|nu(.) - y| <= 2`` on the states of the descent (``||U w|| <= 1``, ``||phi|| <= 1``), so the
replace-one sensitivity of a batch mean of size ``B`` is ``4 / B``.  The per-sample gradient clips
the prediction ``<U phi, w>`` into the link's domain ``[-1, 1]``, the response into ``[-1, 1]`` and
the gradient to norm 2, so the bound holds for *every* ``(U, w)``: in the local model both are
chosen by the untrusted server, and the identity link's ``nu(z) = z`` is unbounded.  It returns ``theta_hat = U w_hat`` and the per-point width
``c_b L_nu e_bar ||U phi||`` with ``e_bar = 4 kappa lambda + eps`` (Theorem 4.4).
``LDP_L1_Regression`` (Algorithm 8) is the same with every user randomizing its own ``X_i`` or
``g_i`` (sensitivities ``sqrt(2)||U_k||`` and 4), the server publishing ``U_k`` or ``(U, w_m)``
before each batch reports.

Reconstruction choices (the algorithm boxes and Appendix C are missing from the source text):

* the regularizer is ``(L_nu lambda / 2) w^T U w`` (the only form consistent with the printed
  gradient ``lambda L_nu U w``); ``reg_coef="mu"`` uses ``mu lambda`` instead (bias ``2 lambda``);
* ``lambda = c_lambda eps_N`` with ``eps_N = sqrt(ln(dK/delta_f)/N) + ln(dK/delta_f)/N +
  sigma (sqrt(d) + sqrt(2 ln(K/delta_f))) / N`` (``/ sqrt(N)`` in the local model) and
  ``c_lambda = 1`` (JDP) / 2 (LDP); ``lam_shape="bernstein"`` drops the ``sqrt(ln/N)`` term and
  uses ``16 ln(dK/delta_f)/N``;
* ``eta = 1 / (2 L_nu)``, last iterate, Euclidean projection in ``w`` onto ``{||U w|| <= 1}``,
  ``M = min(n_2, ceil(4 kappa ln n))`` steps;
* the explicit deviation bound ``eps = 2 (1 + lambda) rho^M + (2/mu) [4 sqrt(2 ln(4M/delta_f)/B)
  + (4 sigma / B)(sqrt(d) + sqrt(2 ln(4M/delta_f)))]`` with ``rho = 1 - 1/(4 kappa)``
  (``4 sigma / sqrt(B)`` in the local model), from a vector Hoeffding bound, a Gaussian norm bound
  and a union bound over the ``M`` steps;
* the extraction's ``||w_dagger - w*|| <= 4 lambda`` misses ``kappa``; ``4 kappa lambda`` is used;
* Algorithm 1's sensitivity is ``sqrt(2)||U_k||/N`` (tighter than the paper's ``2||U_k||/N``),
  and noise is calibrated by the exact (analytic) Gaussian mechanism by default
  (``calibration="classic"`` uses the paper's ``sqrt(2 ln(1.25/delta))/epsilon``).

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), "Near-optimal private learning in linear contextual bandits",
arXiv:2502.13115v1, Section 4: Lemma 4.1, Theorem 4.4 (Algorithm 2), Theorem 4.5 (Algorithm 8),
Appendix C.4 (Algorithm 7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.links import Link
from privbandits.core.validation import (
    check_choice,
    check_in_range,
    check_int,
    check_positive,
)
from privbandits.privacy.guarantee import NON_PRIVATE, PrivacyGuarantee
from privbandits.regression.base import GaussianOracle, as_generator
from privbandits.regression.data import prepare
from privbandits.regression.estimate import RegressionEstimate
from privbandits.regression.links import LinkConstants, link_constants
from privbandits.regression.matrices import EllipsoidProjector, clip_rows, row_norms
from privbandits.regression.normalization import learn_normalization
from privbandits.regression.releases import Ledger, Release, privatize_vector

__all__ = [
    "GRADIENT_NORM",
    "GRADIENT_SENSITIVITY",
    "ReweightedRegression",
    "deviation_bound",
    "gradient_messages",
    "gradient_release",
    "normalization_level",
    "reweighted_gd",
    "reweighted_gradient",
]

#: Largest l2 norm of one user's re-weighted gradient (``|nu(z) - y| <= 2`` on ``[-1, 1]``).
GRADIENT_NORM = 2.0
#: Replace-one L2 sensitivity of one user's re-weighted gradient (``||g_i|| <= 2``).
GRADIENT_SENSITIVITY = 2.0 * GRADIENT_NORM


def reweighted_gradient(
    U: np.ndarray, w: np.ndarray, Phi: np.ndarray, y: np.ndarray, link: LinkConstants
) -> np.ndarray:
    """Per-sample gradients ``g_i = (U phi_i / ||U phi_i||)(nu(clip(<U phi_i, w>)) - clip(y_i))``.

    Chen et al. (2025), Algorithm 7, line 5 (the gradient of ``L_U``; Algorithm 8 in the local
    model).  The prediction ``<U phi_i, w>`` is clipped into ``[-1, 1]``, the domain of ``nu``
    (Assumption 1), the response into ``[-1, 1]``, and the result to l2 norm
    :data:`GRADIENT_NORM`: on the iterates of the projected descent (``||U w|| <= 1``) the two
    first clips never act, and whatever ``(U, w)`` an untrusted server sends, ``||g_i|| <= 2``,
    the bound behind the sensitivity :data:`GRADIENT_SENSITIVITY` of the accounting.

    Parameters
    ----------
    U : ndarray
        ``(d, d)``, or one matrix per sample ``(n, d, d)`` (then ``w`` is ``(n, d)``).
    w : ndarray
        ``(d,)`` or ``(n, d)``.
    Phi : ndarray
        Covariates ``(..., n, d)``.
    y : ndarray
        Responses ``(..., n)``.
    link : LinkConstants

    Returns
    -------
    ndarray
        ``(..., n, d)``.
    """
    U, w = np.asarray(U, dtype=float), np.asarray(w, dtype=float)
    V = Phi @ U if U.ndim == 2 else np.einsum("...i,...ij->...j", Phi, U)
    nrm = row_norms(V)
    inv = np.divide(1.0, nrm, out=np.zeros_like(nrm), where=nrm > 0.0)
    z = V @ w if w.ndim == 1 else np.einsum("...j,...j->...", V, w)
    resid = link.nu(np.clip(z, -1.0, 1.0)) - np.clip(y, -1.0, 1.0)
    return clip_rows(V * (inv * resid)[..., None], GRADIENT_NORM)


def gradient_messages(
    U: np.ndarray,
    w: np.ndarray,
    Phi: np.ndarray,
    y: np.ndarray,
    link: LinkConstants,
    sigma: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """The users' local messages of the LDP gradient phase: ``Priv_4(g_i)`` each (Algorithm 8)."""
    return privatize_vector(
        reweighted_gradient(U, w, Phi, y, link), sigma * GRADIENT_SENSITIVITY, rng
    )


def gradient_release(
    U: np.ndarray,
    w: np.ndarray,
    Phi: np.ndarray,
    y: np.ndarray,
    link: LinkConstants,
    sigma: float,
    rng: np.random.Generator,
    mode: str = "jdp",
) -> tuple[np.ndarray, float, float]:
    """The noisy batch gradient of one step of Algorithm 7, as the server receives it.

    ``mode="jdp"``: ``Priv_{4/B}`` of the batch mean; ``mode="ldp"``: the mean of the users' messages
    :func:`gradient_messages`.  Returns the released vector, the replace-one sensitivity (of the
    mean, or of one message) and the noise std.  ``Phi`` (and ``y``) may carry a leading axis of
    independent batches (one release each, in order).
    """
    if mode == "jdp":
        sens = GRADIENT_SENSITIVITY / Phi.shape[-2]
        g = privatize_vector(
            reweighted_gradient(U, w, Phi, y, link).mean(axis=-2), sigma * sens, rng
        )
        return g, sens, sigma * sens
    g = gradient_messages(U, w, Phi, y, link, sigma, rng).mean(axis=-2)
    return g, GRADIENT_SENSITIVITY, sigma * GRADIENT_SENSITIVITY


def reweighted_gd(
    U: np.ndarray,
    lam: float,
    batches: list[tuple[np.ndarray, np.ndarray]],
    link: LinkConstants,
    sigma: float,
    rng: np.random.Generator,
    *,
    mode: str = "jdp",
    reg_coef: str = "L_nu",
    ledger: Ledger | None = None,
    batch_indices: list[np.ndarray] | None = None,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Private batched projected gradient descent on ``L_U`` (Algorithm 7; local twin of Algorithm 8).

    Returns the last iterate ``w_M`` and all iterates.
    """
    check_choice("mode", mode, ("jdp", "ldp"))
    check_choice("reg_coef", reg_coef, ("L_nu", "mu"))
    d = U.shape[0]
    eta = 1.0 / (2.0 * link.L_nu)
    c_reg = (link.L_nu if reg_coef == "L_nu" else link.mu) * lam
    project = EllipsoidProjector(U)
    w = np.zeros(d)
    iterates = [w]
    for m, (Phi, y) in enumerate(batches):
        g, sens, std = gradient_release(U, w, Phi, y, link, sigma, rng, mode)
        if ledger is not None and batch_indices is not None:
            ledger.record(
                Release(f"gradient batch {m}", batch_indices[m], sens, std, mode == "ldp")
            )
        w = project(w - eta * (g + c_reg * (U @ w)))
        iterates.append(w)
    return w, iterates


def normalization_level(
    N: int,
    d: int,
    K: int,
    failure_prob: float,
    sigma: float,
    mode: str = "jdp",
    shape: str = "paper",
) -> float:
    """``eps_N`` of Proposition 4.3 (reconstructed; see the module docstring)."""
    L = math.log(d * K / failure_prob)
    noise = sigma * (math.sqrt(d) + math.sqrt(2.0 * math.log(K / failure_prob)))
    noise /= N if mode == "jdp" else math.sqrt(N)
    if shape == "bernstein":
        return 16.0 * L / N + noise
    return math.sqrt(L / N) + L / N + noise


def deviation_bound(
    lam: float,
    M: int,
    B: int,
    d: int,
    failure_prob: float,
    sigma: float,
    link: LinkConstants,
    mode: str = "jdp",
) -> float:
    """``eps``: a high-probability bound on ``||w_M - w_dagger||`` (Theorem 4.4, reconstructed)."""
    rho = 1.0 - 1.0 / (4.0 * link.kappa)
    L = math.log(4.0 * M / failure_prob)
    noise = 4.0 * sigma * (math.sqrt(d) + math.sqrt(2.0 * L))
    noise /= B if mode == "jdp" else math.sqrt(B)
    return 2.0 * (1.0 + lam) * rho**M + (2.0 / link.mu) * (4.0 * math.sqrt(2.0 * L / B) + noise)


@dataclass(frozen=True)
class _Plan:
    n1: int
    N: int
    n2: int
    M: int
    B: int


class ReweightedRegression(GaussianOracle):
    """Private re-weighted GLM regression with per-point confidence widths (Algorithms 2 and 8).

    Parameters
    ----------
    epsilon : float
        Privacy level ``alpha`` (``inf``: the non-private twin on the same code path).
    delta : float
        Privacy ``beta`` in (0, 1).
    mode : {"jdp", "ldp"}
        Central (Algorithm 2, guarantee of the released estimate) or local (Algorithm 8: every
        sample is randomized by its owner).
    link : str
        ``nu``: "identity", "logistic" or "probit" (must map ``[-1, 1]`` into ``[-1, 1]``).
    failure_prob : float
        Utility failure probability ``delta`` of the confidence widths.
    K : int
        Spectral iterations of Algorithm 1.
    c_lam : float, optional
        ``lambda = c_lam eps_N`` (default 1 for JDP, 2 for LDP).
    lam_shape : {"paper", "bernstein"}
        Form of ``eps_N``.
    c_b : float
        Width multiplier: ``b_hat = min(2, c_b L_nu e_bar ||U phi||)``; 1 is the theory-valid width.
    split : float
        Fraction of the samples for Algorithm 1 (the rest for Algorithm 7).
    reg_coef : {"L_nu", "mu"}
        Regularizer coefficient ``L_nu lambda`` (paper) or ``mu lambda``.
    calibration : {"analytic", "classic"}
        Gaussian calibration (exact Balle-Wang, or the paper's ``sqrt(2 ln(1.25/delta))/epsilon``).
    on_bound : {"clip", "reject"}
        Policy for covariates of norm > 1 and responses outside ``[-1, 1]``.

    References
    ----------
    Chen, Li, Rakhlin & Simchi-Levi (2025), arXiv:2502.13115v1, Algorithms 1, 2, 7 and 8,
    Theorems 4.4 and 4.5.
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        mode: str = "jdp",
        link: str | Link = "identity",
        failure_prob: float = 0.05,
        K: int = 5,
        c_lam: float | None = None,
        lam_shape: str = "paper",
        c_b: float = 1.0,
        split: float = 0.5,
        reg_coef: str = "L_nu",
        calibration: str = "analytic",
        on_bound: str = "clip",
    ) -> None:
        super().__init__(epsilon, delta, calibration, on_bound)
        self.mode = check_choice("mode", mode, ("jdp", "ldp"))
        self.link = link_constants(link)
        self.failure_prob = check_in_range(
            "failure_prob", failure_prob, 0.0, 1.0, low_inclusive=False, high_inclusive=False
        )
        self.K = check_int("K", K, 1, 64)
        self.c_lam = (
            (1.0 if self.mode == "jdp" else 2.0)
            if c_lam is None
            else check_positive("c_lam", c_lam)
        )
        self.lam_shape = check_choice("lam_shape", lam_shape, ("paper", "bernstein"))
        self.c_b = check_positive("c_b", c_b)
        self.split = check_in_range(
            "split", split, 0.0, 1.0, low_inclusive=False, high_inclusive=False
        )
        self.reg_coef = check_choice("reg_coef", reg_coef, ("L_nu", "mu"))

    @property
    def model(self) -> str:
        return "central" if self.mode == "jdp" else "local"

    def plan(self, n: int) -> _Plan:
        """Sample split: ``n_1 = floor(split n)`` for Algorithm 1 in ``K`` batches of ``N``, the rest in
        ``M = min(n_2, ceil(4 kappa ln max(n, 3)))`` batches of ``B`` for Algorithm 7."""
        n1 = math.floor(self.split * n)
        N = n1 // self.K
        n2 = n - n1
        M = max(1, min(n2, math.ceil(4.0 * self.link.kappa * math.log(max(n, 3)))))
        B = n2 // M
        return _Plan(n1, N, n2, M, B)

    def lam(self, n: int, d: int) -> float:
        """``lambda = c_lam eps_N`` for ``n`` samples in dimension ``d``."""
        p = self.plan(n)
        return self.c_lam * normalization_level(
            max(p.N, 1), d, self.K, self.failure_prob, self.sigma, self.mode, self.lam_shape
        )

    def e_bar(self, n: int, d: int) -> float:
        """``e_bar = 4 kappa lambda + eps`` (``4 lambda + eps`` with ``reg_coef="mu"``); data-independent."""
        p = self.plan(n)
        lam = self.lam(n, d)
        bias = (4.0 * self.link.kappa if self.reg_coef == "L_nu" else 4.0) * lam
        return bias + deviation_bound(
            lam, p.M, max(p.B, 1), d, self.failure_prob, self.sigma, self.link, self.mode
        )

    def _guarantee(self, ledger: Ledger) -> PrivacyGuarantee:
        if self.sigma == 0.0:
            return NON_PRIVATE
        return ledger.guarantee(
            self.delta,
            self.model,
            f"re-weighted regression ({self.mode}), {self.calibration} Gaussian calibration",
        )

    def fit(
        self, X: object, y: object, rng: np.random.Generator | int | None = None
    ) -> RegressionEstimate:
        """Fit on ``(X, y)``: rows of ``X`` are covariates ``phi_i``, ``y`` the responses.

        Samples are used in the given order (the data must be exchangeable, e.g. i.i.d.); returns
        the trivial estimate (``f_hat = clip(nu(0))``, width 2) if ``n`` is too small for one
        sample per batch.
        """
        data = prepare(X, y, self.on_bound)
        gen = as_generator(rng)
        n, d = data.X.shape
        p = self.plan(n)
        ledger = Ledger(n)
        resolved: dict[str, Any] = {
            "sigma": self.sigma,
            "mode": self.mode,
            "n1": p.n1,
            "N": p.N,
            "n2": p.n2,
            "M": p.M,
            "B": p.B,
            "K": self.K,
            "c_b": self.c_b,
            "L_nu": self.link.L_nu,
            "mu": self.link.mu,
            "calibration": self.calibration,
        }
        if p.N < 1 or p.B < 1:
            resolved["trivial"] = True
            return RegressionEstimate(
                np.zeros(d),
                self.link,
                None,
                math.inf,
                self._guarantee(ledger),
                ledger,
                resolved,
                data.n_clipped_x + data.n_clipped_y,
            )
        lam = self.lam(n, d)
        idx1 = [np.arange(k * p.N, (k + 1) * p.N) for k in range(self.K)]
        norm = learn_normalization(
            [data.X[i] for i in idx1],
            lam,
            self.sigma,
            gen,
            mode=self.mode,
            ledger=ledger,
            batch_indices=idx1,
        )
        U = norm.U
        idx2 = [np.arange(p.n1 + m * p.B, p.n1 + (m + 1) * p.B) for m in range(p.M)]
        w, _ = reweighted_gd(
            U,
            lam,
            [(data.X[i], data.y[i]) for i in idx2],
            self.link,
            self.sigma,
            gen,
            mode=self.mode,
            reg_coef=self.reg_coef,
            ledger=ledger,
            batch_indices=idx2,
        )
        e_bar = self.e_bar(n, d)
        resolved.update(
            lam=lam,
            e_bar=e_bar,
            eps=e_bar - (4.0 * self.link.kappa if self.reg_coef == "L_nu" else 4.0) * lam,
            norm_U=float(np.linalg.norm(U, 2)),
            trivial=False,
        )
        if not np.all(np.isfinite(U)):
            raise ValidationError("the normalization matrix is not finite; increase c_lam")
        return RegressionEstimate(
            U @ w,
            self.link,
            U,
            self.c_b * self.link.L_nu * e_bar,
            self._guarantee(ledger),
            ledger,
            resolved,
            data.n_clipped_x + data.n_clipped_y,
        )
