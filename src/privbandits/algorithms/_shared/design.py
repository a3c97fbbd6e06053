"""G-optimal experimental design on a finite action set, with a small core set.

For a finite set ``X = {x_1..x_n}`` spanning ``R^m`` and a distribution ``pi`` on it, let
``V(pi) = sum_a pi(a) x_a x_a^T`` and ``g(pi) = max_a x_a^T V(pi)^{-1} x_a``.  The
Kiefer-Wolfowitz theorem says ``min_pi g(pi) = m`` and that G-optimal and D-optimal
(``max log det V``) designs coincide.  This module computes a design with
``g(pi) <= factor * m`` (``factor = 2`` by default) whose support (the *core set*) is small:

1. **Working subspace** (Hanna et al. 2022, correction Hanna22-11): an orthonormal basis ``U`` of
   ``span(X)`` from the SVD (rank tolerance ``1e-9 * max(1, sigma_max)``); the design runs on the
   coordinates ``X U`` in dimension ``m = rank(X)``.
2. **Greedy spanning initialisation** (pivoted Gram-Schmidt): ``m`` rows, uniform weights.
3. **Fedorov-Wynn / Frank-Wolfe steps** on ``log det V`` with the exact line-search step
   ``nu = (G/m - 1)/(G - 1)`` toward the row with the largest ``x^T V^{-1} x = G``, until
   ``G <= factor * m``.
4. **Pruning**: weights below ``1e-12`` are dropped (undone if ``g`` would exceed the target), then
   a Caratheodory reduction brings the support to at most ``m (m + 1) / 2`` points without
   increasing ``g`` (the bound of Lattimore & Szepesvari 2020, Theorem 21.1).

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), "Differentially Private Stochastic Linear Bandits:
(Almost) for Free", Lemma 2, with corrections Hanna22-10 and Hanna22-11 (documentation)
(Algorithm D).
Kiefer & Wolfowitz (1960), "The equivalence of two extremum problems".
Lattimore & Szepesvari (2020), *Bandit Algorithms*, Chapter 21 (Theorem 21.1, Note 21.2 on
Frank-Wolfe).
Todd (2016), *Minimum-Volume Ellipsoids*, Chapter 3 (Fedorov-Wynn step size).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from privbandits.core.errors import ValidationError
from privbandits.core.validation import check_choice, check_finite_array, check_in_range, check_int

__all__ = [
    "Design",
    "design_g",
    "fedorov_wynn_step",
    "g_optimal_design",
    "greedy_spanning_subset",
    "working_subspace",
]

#: Relative rank tolerance of the working subspace (Hanna et al. 2022, correction Hanna22-11).
RANK_TOL = 1e-9
#: Squared residual norm below which greedy initialisation stops (design Algorithm D, step 1).
GREEDY_TOL = 1e-10
#: Weights below this are pruned (design Algorithm D, step 3).
PRUNE_TOL = 1e-12


@dataclass(frozen=True)
class Design:
    """A design on the rows of an ``(n, d)`` action matrix.

    Attributes
    ----------
    pi : ndarray of shape (n,)
        Probability vector over the rows (zero outside the support).
    support : ndarray of int
        Indices of the core set ``C = {a : pi(a) > 0}``, increasing.
    g : float
        Achieved ``max_a x_a^T V(pi)^{-1} x_a`` (in the working subspace; 0 when ``m = 0``).
    m : int
        Dimension of the working subspace ``span(X)``.
    basis : ndarray of shape (d, m)
        Orthonormal basis ``U`` of ``span(X)``; coordinates are ``X @ basis``.
    n_iter : int
        Frank-Wolfe iterations performed.
    converged : bool
        Whether ``g <= factor * m`` was reached.
    """

    pi: np.ndarray
    support: np.ndarray
    g: float
    m: int
    basis: np.ndarray
    n_iter: int
    converged: bool


def working_subspace(X: np.ndarray) -> np.ndarray:
    """Orthonormal basis ``U`` (d, m) of ``span`` of the rows of ``X`` (n, d), via the SVD.

    Singular values below ``1e-9 * max(1, sigma_max)`` count as zero (Hanna et al. 2022, correction Hanna22-11, step 1).
    """
    X = np.asarray(X, dtype=float)
    d = X.shape[1]
    if X.shape[0] == 0:
        return np.zeros((d, 0))
    _, s, Vt = np.linalg.svd(X, full_matrices=False)
    smax = float(s[0]) if s.size else 0.0
    m = int(np.sum(s > RANK_TOL * max(1.0, smax)))
    return Vt[:m].T.copy()


def greedy_spanning_subset(X: np.ndarray) -> np.ndarray:
    """Pivoted Gram-Schmidt: up to ``m`` row indices whose rows span ``span(X)``.

    Repeatedly picks the row with the largest residual norm (ties to the smallest index), stops
    when that squared norm is ``<= 1e-10`` (design Algorithm D, step 1).
    """
    Rm = np.array(X, dtype=float, copy=True)
    _n, m = Rm.shape
    chosen: list[int] = []
    for _ in range(m):
        sq = np.einsum("ij,ij->i", Rm, Rm)
        j = int(np.argmax(sq))
        if sq[j] <= GREEDY_TOL:
            break
        chosen.append(j)
        u = Rm[j] / np.sqrt(sq[j])
        Rm -= np.outer(Rm @ u, u)
    return np.array(chosen, dtype=int)


def design_g(Y: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """``x_a^T V(pi)^{-1} x_a`` for every row of ``Y`` (n, m), by a Cholesky solve.

    Raises ``numpy.linalg.LinAlgError`` when ``V(pi)`` is singular.
    """
    supp = np.flatnonzero(pi > 0)
    Ys = Y[supp]
    V = (Ys * pi[supp, None]).T @ Ys
    L = np.linalg.cholesky(V)  # raises LinAlgError unless V is positive definite
    Z = (
        Y @ np.linalg.inv(L).T
    )  # rows L^{-1} x_a; m is small, so the explicit m x m inverse is cheap
    return np.einsum("ij,ij->i", Z, Z)


def fedorov_wynn_step(pi: np.ndarray, j: int, G: float, m: int) -> None:
    """One Frank-Wolfe step of the design toward row ``j`` with the exact line search (in place).

    ``pi <- (1 - nu) pi + nu e_j``, ``nu = (G/m - 1)/(G - 1)`` (``1/2`` when ``G`` is not finite),
    where ``G = y_j^T V(pi)^{-1} y_j`` and ``m`` is the dimension (Todd 2016, Chapter 3).  Plain
    numpy here; :mod:`.design_draws` compiles the same function for its loop.
    """
    nu = (G / m - 1.0) / (G - 1.0) if np.isfinite(G) else 0.5
    pi *= 1.0 - nu
    pi[j] += nu


def _safe_g(Y: np.ndarray, pi: np.ndarray) -> np.ndarray:
    try:
        return design_g(Y, pi)
    except np.linalg.LinAlgError:
        return np.full(Y.shape[0], np.inf)


def _caratheodory_reduce(Y: np.ndarray, pi: np.ndarray, max_support: int) -> np.ndarray:
    """Shrink the support to ``<= max_support`` points without decreasing ``V(pi)`` in PSD order.

    While the support exceeds ``D = m (m + 1) / 2``, the matrices ``x_a x_a^T`` on it are linearly
    dependent: a null vector ``u`` of ``w -> sum_a w_a x_a x_a^T`` (sign chosen so that
    ``sum u <= 0``) moves the weights to ``w + s u`` with one weight hitting zero, ``V`` unchanged
    and total mass ``<= 1``.  Renormalising then multiplies ``V`` by ``>= 1``, so ``g`` can only
    decrease.
    """
    w = pi.copy()
    m = Y.shape[1]
    iu = np.triu_indices(m)
    while True:
        supp_all = np.flatnonzero(w > 0)
        if supp_all.size <= max_support:
            break
        supp = supp_all[: max_support + 1]  # D + 1 points are always linearly dependent
        Ys = Y[supp]
        M = (Ys[:, :, None] * Ys[:, None, :])[:, iu[0], iu[1]].T  # (D, |supp|)
        _, _, Vt = np.linalg.svd(M, full_matrices=True)
        u = Vt[-1]
        if u.sum() > 0:
            u = -u
        neg = u < -1e-15 * np.abs(u).max()
        ratios = w[supp][neg] / -u[neg]
        k = int(np.argmin(ratios))
        s = ratios[k]
        new = w[supp] + s * u
        new[np.flatnonzero(neg)[k]] = 0.0
        new[new < PRUNE_TOL * new.max()] = 0.0
        w[supp] = new
    return w / w.sum()


def g_optimal_design(
    X: np.ndarray,
    factor: float = 2.0,
    init: str = "greedy",
    prune: bool = True,
    max_iter: int = 10_000,
) -> Design:
    """Approximate G-optimal design with a small core set ("Algorithm D": Frank-Wolfe from a greedy spanning set, exact line search).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The finite action set (rows).  Need not span ``R^d``: the design runs in ``span(X)``.
    factor : float
        Stop when ``max_a ||x_a||^2_{V(pi)^{-1}} <= factor * m`` (``factor >= 1``; the
        Kiefer-Wolfowitz optimum is ``m``).
    init : {"greedy", "uniform"}
        ``greedy``: uniform on a pivoted Gram-Schmidt spanning subset (small core set).
        ``uniform``: uniform on all rows (the "no core set" ablation; use with ``prune=False``).
    prune : bool
        Drop weights below ``1e-12`` and reduce the support to ``<= m (m + 1) / 2`` points
        (Caratheodory); neither step increases ``g``.
    max_iter : int
        Maximal number of Frank-Wolfe iterations; a warning is emitted if the target is missed.

    Returns
    -------
    Design

    References
    ----------
    Hanna et al. (2022), Lemma 2 and correction Hanna22-10 (Algorithm D); Lattimore & Szepesvari
    (2020), Chapter 21.
    """
    X = check_finite_array("X", X, ndim=2)
    n, _d = X.shape
    if n == 0:
        raise ValidationError("X must contain at least one action, got an empty array")
    factor = check_in_range("factor", factor, 1.0, None)
    init = check_choice("init", init, ("greedy", "uniform"))
    max_iter = check_int("max_iter", max_iter, 0)

    U = working_subspace(X)
    m = U.shape[1]
    if (
        m == 0
    ):  # every action is the zero vector: all rewards are equal (Hanna et al. 2022, correction Hanna22-11)
        pi = np.zeros(n)
        pi[0] = 1.0
        return Design(pi, np.array([0]), 0.0, 0, U, 0, True)
    Y = X @ U

    pi = np.zeros(n)
    if init == "greedy":
        S = greedy_spanning_subset(Y)
        pi[S] = 1.0 / S.size
    else:
        pi[:] = 1.0 / n

    target = factor * m + 1e-12
    k = 0
    g = _safe_g(Y, pi)
    while True:
        j = int(np.argmax(g))
        G = float(g[j])
        if G <= target or k >= max_iter:
            break
        fedorov_wynn_step(pi, j, G, m)
        k += 1
        g = _safe_g(Y, pi)

    if prune:
        small = (pi > 0) & (pi < PRUNE_TOL)
        if small.any():
            trial = np.where(small, 0.0, pi)
            trial /= trial.sum()
            g_trial = _safe_g(Y, trial)
            if g_trial.max() <= max(target, g.max()):
                pi, g = trial, g_trial
        max_support = m * (m + 1) // 2
        if np.count_nonzero(pi) > max_support:
            pi = _caratheodory_reduce(Y, pi, max_support)
            g = _safe_g(Y, pi)

    G = float(g.max())
    converged = G <= target
    if not converged:
        warnings.warn(
            f"g_optimal_design reached max_iter={max_iter} with g={G:.6g} > factor*m={factor * m:g}; "
            "widths that assume g <= 2d are unsupported (widths using the achieved g stay valid)",
            stacklevel=2,
        )
    support = np.flatnonzero(pi > 0)
    pi = np.where(pi > 0, pi, 0.0)
    pi /= pi.sum()
    return Design(pi=pi, support=support, g=G, m=m, basis=U, n_iter=k, converged=converged)
