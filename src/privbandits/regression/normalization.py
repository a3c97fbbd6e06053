"""Algorithm 1 of Chen et al. (2025): privately learning the normalization matrix ``U``.

For a covariate law ``p`` and ``lambda > 0`` the normalization matrix solves (approximately)

    Sigma_lambda(U) := E_p[ U phi phi^T U / ||U phi|| ] + lambda U = I                   (Eq. 1)

(``1/2 I <= Sigma_lambda(U) <= 2 I`` is Eq. 2).  ``JDP_Learning_Normalization`` runs the
square-root spectral iteration ``U_{k+1} = sym(Sigma_k^{-1/2} U_k) = (U_k Sigma_k^{-1} U_k)^{1/2}``
from ``U_0 = I`` with ``Sigma_k`` replaced by a noisy average over a fresh batch of covariates.

Reconstruction choices (the algorithm box is missing from the source text):

* ``sym(A) = (A^T A)^{1/2}`` (the right polar factor): the only reading for which the stated
  eigenvalue sandwich ``lambda_min(Sigma_k)^{1/2} <= lambda_min(Sigma_{k+1}) <=
  lambda_max(Sigma_{k+1}) <= lambda_max(Sigma_k)^{1/2}`` holds.
* Sensitivity of the batch average ``M_k = (1/N) sum_i X_i``, ``X_i = U phi_i phi_i^T U / ||U phi_i||``:
  each ``X_i`` is PSD of Frobenius norm ``||U phi_i|| <= ||U||``, so replacing one sample moves
  ``M_k`` by at most ``sqrt(2) ||U_k|| / N`` in Frobenius norm (``<X, X'> >= 0`` for PSD matrices);
  the paper's ``2 ||U_k|| / N`` is a looser bound.  The upper triangle released by ``SymPriv`` has
  L2 norm at most the Frobenius norm.
* The noisy average is projected onto the PSD cone before ``lambda U_k`` is added (post-processing;
  keeps ``Sigma_k >= lambda U_k`` invertible and ``||U_k|| <= 1/lambda``).
* Local model (Algorithm 8, first phase): every user of batch ``k`` releases its own ``X_i`` through
  ``SymPriv`` with sensitivity ``sqrt(2) ||U_k||``; the server averages the messages.  ``U_k`` is
  then the untrusted server's: the user clips its own ``X_i`` to Frobenius norm ``||U_k||``
  (:func:`normalization_encode`; never active for a feature in the unit ball, up to rounding), so
  the sensitivity holds whatever matrix it is sent.

References
----------
Chen, Li, Rakhlin & Simchi-Levi (2025), "Near-optimal private learning in linear contextual bandits",
arXiv:2502.13115v1, Section 4.1, Eqs. (1)-(2), (5)-(6), Algorithm 1, Lemma 4.2 and Proposition 4.3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from privbandits.core.validation import check_choice, check_positive
from privbandits.regression.matrices import clip_rows, psd_apply, psd_project, row_norms, sym_polar
from privbandits.regression.releases import (
    Ledger,
    Release,
    privatize_symmetric,
    privatize_symmetric_rows,
)

__all__ = [
    "NormalizationResult",
    "learn_normalization",
    "normalization_encode",
    "normalization_messages",
    "normalization_moment",
    "normalization_release",
    "normalization_sensitivity",
    "normalized_outer",
    "population_sigma",
    "spectral_step",
]

SQRT2 = math.sqrt(2.0)


def normalized_outer(U: np.ndarray, Phi: np.ndarray) -> np.ndarray:
    """``X_i = U phi_i phi_i^T U / ||U phi_i||`` for every row (0 where ``U phi_i = 0``), shape (n, d, d)."""
    V = Phi @ U
    nrm = row_norms(V)
    scale = np.divide(1.0, nrm, out=np.zeros_like(nrm), where=nrm > 0.0)
    out: np.ndarray = np.einsum("ni,nj->nij", V * scale[:, None], V)
    return out


def normalization_moment(U: np.ndarray, Phi: np.ndarray) -> np.ndarray:
    """The batch average ``M = (1/N) sum_i U phi_i phi_i^T U / ||U phi_i||`` (Algorithm 1, line 4).

    ``Phi`` is ``(N, d)``, or ``(R, N, d)`` for ``R`` batches at once (result ``(R, d, d)``).
    """
    V = Phi @ U
    nrm = row_norms(V)
    w = np.divide(1.0, nrm, out=np.zeros_like(nrm), where=nrm > 0.0)
    out: np.ndarray = np.einsum("...ni,...nj->...ij", V * w[..., None], V) / Phi.shape[-2]
    return 0.5 * (out + np.swapaxes(out, -1, -2))


def population_sigma(
    U: np.ndarray, Phi: np.ndarray, lam: float, weights: np.ndarray | None = None
) -> np.ndarray:
    """``Sigma_lambda(U)`` of Eq. (1) for the empirical (or weighted discrete) law of the rows of ``Phi``."""
    V = Phi @ U
    nrm = row_norms(V)
    w = np.divide(1.0, nrm, out=np.zeros_like(nrm), where=nrm > 0.0)
    p = (
        np.full(Phi.shape[0], 1.0 / Phi.shape[0])
        if weights is None
        else np.asarray(weights, dtype=float)
    )
    S: np.ndarray = (V * (w * p)[:, None]).T @ V + lam * U
    return 0.5 * (S + S.T)


def normalization_sensitivity(U: np.ndarray, N: int) -> float:
    """Replace-one Frobenius sensitivity ``sqrt(2) ||U||_op / N`` of :func:`normalization_moment`."""
    return SQRT2 * float(np.linalg.norm(U, 2)) / N


def spectral_step(U: np.ndarray, M: np.ndarray, lam: float) -> np.ndarray:
    """One square-root step: ``Sigma = psd_project(M) + lambda U``, ``U' = sym(Sigma^{-1/2} U)``.

    Chen et al. (2025), Algorithm 1, lines 7-9 (Eq. 6).
    """
    Sigma = psd_project(M) + lam * U
    Sigma_inv_half = psd_apply(Sigma, lambda e: 1.0 / np.sqrt(e))
    return sym_polar(Sigma_inv_half @ U)


def normalization_encode(U: np.ndarray, Phi: np.ndarray) -> np.ndarray:
    """A user's pre-noise message of the LDP normalization phase: ``X_i = U phi_i phi_i^T U / ||U phi_i||``,
    clipped to Frobenius norm ``||U||_op`` (Chen et al. 2025, Algorithm 8, first phase).

    ``||X_i||_F = ||U phi_i|| <= ||U||_op`` for ``||phi_i|| <= 1``, and two such PSD rank-one
    matrices are at most ``sqrt(2) ||U||_op`` apart: the clip only removes rounding, and keeps the
    sensitivity ``sqrt(2) ||U||_op`` of ``SymPriv`` for every matrix ``U`` an untrusted server sends.

    Parameters
    ----------
    U : ndarray
        ``(d, d)`` for every row, or one matrix per row ``(n, d, d)``.
    Phi : ndarray
        ``(n, d)``.

    Returns
    -------
    ndarray
        ``(n, d, d)``.
    """
    U = np.asarray(U, dtype=float)
    n, d = Phi.shape
    if U.ndim == 2:
        V = Phi @ U
        s = np.full(n, float(np.linalg.norm(U, 2)))
    else:
        V = np.einsum("ni,nij->nj", Phi, U)
        s = np.linalg.norm(U, 2, axis=(1, 2)) if n else np.zeros(0)
    nrm = row_norms(V)
    inv = np.divide(1.0, nrm, out=np.zeros_like(nrm), where=nrm > 0.0)
    X = np.einsum("ni,nj->nij", V * inv[:, None], V)
    out: np.ndarray = clip_rows(X.reshape(n, d * d), s).reshape(n, d, d)
    return out


def normalization_messages(
    U: np.ndarray, Phi: np.ndarray, sigma: float, rng: np.random.Generator
) -> np.ndarray:
    """The users' local messages of the LDP normalization phase: ``SymPriv_{sqrt(2)||U||}(X_i)`` each.

    ``Phi`` is ``(N, d)`` or ``(R, N, d)``; the result has one ``(d, d)`` message per row.

    This is the user-side code path (one message per row of ``Phi``, encoded by
    :func:`normalization_encode`); ``sigma`` is the noise multiplier ``sigma_{alpha,beta}``.
    """
    X = normalization_encode(U, Phi.reshape(-1, Phi.shape[-1])).reshape(
        Phi.shape[:-1] + (Phi.shape[-1],) * 2
    )
    flat = privatize_symmetric_rows(
        X.reshape((-1,) + X.shape[-2:]), sigma * SQRT2 * float(np.linalg.norm(U, 2)), rng
    )
    return flat.reshape(X.shape)


def normalization_release(
    U: np.ndarray, Phi: np.ndarray, sigma: float, rng: np.random.Generator, mode: str = "jdp"
) -> tuple[np.ndarray, float, float]:
    """The noisy batch average of one spectral step, as the server receives it.

    ``mode="jdp"``: ``SymPriv_Delta(M)`` with ``Delta = sqrt(2)||U||/N`` (Algorithm 1, lines 3-6);
    ``mode="ldp"``: the mean of the users' messages :func:`normalization_messages`.  Returns the
    released matrix, the replace-one sensitivity (of the average, or of one message) and the noise std.
    ``Phi`` may carry a leading axis of independent batches (one release each, in order).
    """
    if mode == "jdp":
        Delta = normalization_sensitivity(U, Phi.shape[-2])
        M = normalization_moment(U, Phi)
        noisy = (
            privatize_symmetric(M, sigma * Delta, rng)
            if M.ndim == 2
            else privatize_symmetric_rows(M, sigma * Delta, rng)
        )
        return noisy, Delta, sigma * Delta
    sens = SQRT2 * float(np.linalg.norm(U, 2))
    return normalization_messages(U, Phi, sigma, rng).mean(axis=-3), sens, sigma * sens


@dataclass
class NormalizationResult:
    """Output of Algorithm 1: ``U = U_K`` with the iterates and the noisy Sigma estimates."""

    U: np.ndarray
    lam: float
    iterates: list[np.ndarray] = field(default_factory=list)
    sigma_hats: list[np.ndarray] = field(default_factory=list)


def learn_normalization(
    batches: list[np.ndarray],
    lam: float,
    sigma: float,
    rng: np.random.Generator,
    *,
    mode: str = "jdp",
    ledger: Ledger | None = None,
    batch_indices: list[np.ndarray] | None = None,
) -> NormalizationResult:
    """``JDP_Learning_Normalization`` (Algorithm 1) and its local twin (Algorithm 8, first phase).

    Parameters
    ----------
    batches : list of ndarray, each (N, d)
        Disjoint covariate batches, rows in the unit ball; one spectral step per batch.
    lam : float
        Regularization ``lambda > 0``.
    sigma : float
        Noise multiplier ``sigma_{alpha,beta}`` (0: the exact non-private iteration).
    rng : Generator
        Source of the privacy noise.
    mode : {"jdp", "ldp"}
        Central average with ``SymPriv_{sqrt(2)||U_k||/N}`` or per-user messages.
    ledger, batch_indices
        Where to record the releases (sample indices of each batch).

    Returns
    -------
    NormalizationResult
    """
    check_choice("mode", mode, ("jdp", "ldp"))
    lam = check_positive("lam", lam)
    d = batches[0].shape[1]
    U = np.eye(d)
    res = NormalizationResult(U=U, lam=lam, iterates=[U])
    for k, Phi in enumerate(batches):
        M, sens, std = normalization_release(U, Phi, sigma, rng, mode)
        if ledger is not None and batch_indices is not None:
            ledger.record(
                Release(f"normalization batch {k}", batch_indices[k], sens, std, mode == "ldp")
            )
        res.sigma_hats.append(psd_project(M) + lam * U)
        U = spectral_step(U, M, lam)
        res.iterates.append(U)
    res.U = U
    return res
