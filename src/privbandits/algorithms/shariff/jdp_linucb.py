"""Joint-DP LinUCB: "Linear UCB with Changing Perturbations" (Shariff & Sheffet 2018, Algorithm 1).

A trusted curator keeps the Gram matrix of the rows ``z_t = (x_t, y_t)`` (action and reward),
``M_t = sum_{s < t} z_s z_s^T``, and releases it only through the binary-tree (continual release)
mechanism with additive matrix noise ``N_t``: ``V_t = (M_t + N_t)[:d, :d]`` (the Gram matrix plus
the regularizer ``H_t``) and ``u~_t = (M_t + N_t)[:d, d]`` (the reward vector plus ``h_t``).  Each
round it plays

    x_t = argmax_{x in D_t} <theta~_t, x> + beta_t ||x||_{V_t^{-1}},   theta~_t = V_t^{-1} u~_t,

with the radius of Proposition 2 for the bounds ``(rho_min, rho_max, gamma)`` of the noise.  Two
noise laws: Gaussian node noise ``(Z' + Z'^T)/sqrt(2)``, shifted once by ``+2 Upsilon I``; or
Wishart node noise ``W_{d+1}(L~^2 I, k)`` (always PSD), optionally shifted once by ``-c I``.
The sequence ``(V_t, u~_t)`` is ``(epsilon, delta)``-DP in the rows, so the actions are
``(epsilon, delta)``-joint DP (the billboard argument).

The released prefix holds exactly ``m = 1 + ceil(log2 n)`` node draws at every round: the
``popcount(t)`` nodes of the binary decomposition plus ``m - popcount(t)`` fresh padding draws
(post-processing, no privacy cost), so ``N_t`` has the ``m``-term law the bounds assume
(``tree="binary_padded"``; ``tree="binary"`` keeps only the nodes, Gaussian noise only).

References
----------
Shariff & Sheffet (2018), "Differentially Private Contextual Linear Bandits", NeurIPS,
Algorithm 1, Proposition 2, Theorem 5, sections 4.2-4.4.  Sheffet (2015), Theorem 4.1.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms.audit import AuditCase, ReleaseCase
from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import CuratorKernel
from privbandits.algorithms.registry import register
from privbandits.algorithms.sarmasarkar.tree import tree_insert, tree_prefix
from privbandits.algorithms.shariff.constants import (
    JDPConstants,
    Regularizer,
    gaussian_accounting,
    gaussian_ledger,
    gaussian_regularizer,
    gaussian_sigma_paper,
    gaussian_sigma_strict,
    levels,
    wishart_accounting,
    wishart_dof_authors,
    wishart_dof_paper,
    wishart_dof_strict,
    wishart_ledger,
    wishart_regularizer,
)
from privbandits.core.errors import ValidationError
from privbandits.core.params import Choice, Delta, Epsilon, NonNegative, Optional, Positive
from privbandits.core.spec import EnvSpec
from privbandits.privacy.accounting import to_guarantee
from privbandits.privacy.samplers import add_symmetric_gaussian, clip_l2, clip_scalar

__all__ = ["JDPLinUCB", "add_wishart", "release_prefix"]

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_SQRT2 = math.sqrt(2.0)

# state indices
_ALPHA, _NOISY, _NODE, _VINV, _THETA, _LOGDET, _STATS, _P, _W, _LEAF, _Z, _SCORES = range(12)
#: columns of the per-replication diagnostics
STATS_COLUMNS: tuple[str, ...] = ("floor_active", "rows_clipped")


@nb.njit(cache=True)
def add_wishart(
    rng: np.random.Generator, scale2: float, dof: float, P: np.ndarray, A: np.ndarray
) -> None:  # pragma: no cover - compiled
    """``P += W`` with ``W ~ W_p(scale2 I, dof)`` by the Bartlett decomposition.

    ``W = scale2 A A^T``, ``A`` lower triangular with ``A_ii = sqrt(chi2(dof - i))`` and
    ``A_ij ~ N(0, 1)`` below the diagonal (drawn row by row); ``A`` is ``(p, p)`` scratch.
    """
    p = P.shape[0]
    for i in range(p):
        for j in range(p):
            A[i, j] = 0.0
        for j in range(i):
            A[i, j] = rng.standard_normal()
        A[i, i] = math.sqrt(rng.chisquare(dof - i))
    for i in range(p):
        for j in range(i + 1):
            s = 0.0
            for c in range(j + 1):
                s += A[i, c] * A[j, c]
            P[i, j] += scale2 * s
            if j != i:
                P[j, i] += scale2 * s


@nb.njit(cache=True)
def _add_nodes(params, rng, count, P, W):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``P +=`` the sum of ``count`` i.i.d. node noises, drawn as one draw of the summed law."""
    kind, sigma_tree, k, Lt2 = params[0], params[1], params[2], params[3]
    if count <= 0:
        return
    p = P.shape[0]
    if kind == 0:
        for i in range(p):
            for j in range(p):
                W[i, j] = 0.0
        add_symmetric_gaussian(rng, sigma_tree * math.sqrt(count), W)
        for i in range(p):
            for j in range(p):
                P[i, j] += W[i, j] if i == j else W[i, j] * _INV_SQRT2
    else:
        add_wishart(rng, Lt2, count * k, P, W)


@nb.njit(cache=True)
def release_prefix(params, state, r, n, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """The release after ``n`` rows: ``V = (M + N)[:d, :d] + shift I``, ``u~ = (M + N)[:d, d]``,
    ``theta~ = V^{-1} u~`` and ``ln det V`` (eigenvalues floored, post-processing)."""
    kind, m, padded, shift, floor = params[0], params[4], params[5], params[6], params[7]
    P, W = state[_P][r], state[_W][r]
    tree_prefix(state[_NOISY][r], n, P)
    pc = 0
    for j in range(m):
        if (n >> j) & 1:
            pc += 1
            if kind == 1:
                P += state[_NODE][r, j]
    if padded:
        _add_nodes(params, rng, m - pc, P, W)
    p = P.shape[0]
    d = p - 1
    V = np.empty((d, d))
    for i in range(d):
        for j in range(d):
            V[i, j] = 0.5 * (P[i, j] + P[j, i])
        V[i, i] += shift
    vals, vecs = np.linalg.eigh(V)
    logdet = 0.0
    active = False
    for i in range(d):
        if vals[i] < floor:
            vals[i] = floor
            active = True
        logdet += math.log(vals[i])
    V_inv, theta = state[_VINV][r], state[_THETA][r]
    for i in range(d):
        for j in range(d):
            s = 0.0
            for c in range(d):
                s += vecs[i, c] * vecs[j, c] / vals[c]
            V_inv[i, j] = s
    for i in range(d):
        s = 0.0
        for j in range(d):
            s += V_inv[i, j] * P[j, d]
        theta[i] = s
    state[_LOGDET][r] = logdet
    if active:
        state[_STATS][r, 0] += 1.0


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Algorithm 1, line 6: the optimistic action with radius ``beta_t`` (Proposition 2), lowest index on ties."""
    sig, kappa, xi, closed, rho_min, rho_max, L = (
        params[11],
        params[12],
        params[13],
        params[14],
        params[15],
        params[16],
        params[8],
    )
    radius = params[17]
    K, d = X.shape
    if closed:
        inner = kappa + d * math.log(rho_max / rho_min + t * L * L / (d * rho_min))
    else:
        inner = kappa + state[_LOGDET][r]
    beta = sig * math.sqrt(max(inner, 0.0)) + xi
    V_inv, theta, scores = state[_VINV][r], state[_THETA][r], state[_SCORES][r]
    best, arg = -np.inf, 0
    for a in range(K):
        mean, quad = 0.0, 0.0
        for i in range(d):
            mean += X[a, i] * theta[i]
            vi = 0.0
            for j in range(d):
                vi += V_inv[i, j] * X[a, j]
            quad += X[a, i] * vi
        s = mean + radius * beta * math.sqrt(max(quad, 0.0))
        scores[a] = s
        if s > best:
            best, arg = s, a
    return arg


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Insert the row ``z_t = (x_t, y_t)`` (clipped) as leaf ``t + 1`` and release the next prefix."""
    kind, sigma_tree, k, Lt2 = params[0], params[1], params[2], params[3]
    L, yb = params[8], params[9]
    z, leaf = state[_Z][r], state[_LEAF][r]
    p = z.shape[0]
    d = p - 1
    for i in range(d):
        z[i] = X[a, i]
    xpart = z[:d]
    clipped = clip_l2(xpart, L)
    yc = clip_scalar(y, -yb, yb)
    if clipped or yc != y:
        state[_STATS][r, 1] += 1.0
    z[d] = yc
    for i in range(p):
        for j in range(p):
            leaf[i, j] = z[i] * z[j]
    n = t + 1
    tree_insert(
        state[_ALPHA][r],
        state[_NOISY][r],
        n,
        leaf,
        sigma_tree if kind == 0 else 0.0,
        rng,
        state[_W][r],
    )
    if kind == 1:
        i = 0
        while not (n >> i) & 1:
            i += 1
        node = state[_NODE][r, i]
        node[:, :] = 0.0
        add_wishart(rng, Lt2, k, node, state[_W][r])
    release_prefix(params, state, r, n, rng)


@register
class JDPLinUCB(Curator):
    """Joint-DP LinUCB with tree-aggregated Gaussian or Wishart noise (Shariff & Sheffet 2018, Algorithm 1).

    Parameters
    ----------
    epsilon, delta : float
        Privacy budget of the released ``(V_t, u~_t)`` sequence (and so of the actions, joint DP).
    noise : {"gaussian", "wishart"}
        Node noise law: symmetric Gaussian ``(Z' + Z'^T)/sqrt(2)`` (section 4.4) or Wishart
        ``W_{d+1}(L~^2 I, k)`` (section 4.3).
    shift : {"shifted", "unshifted"}
        Wishart only: shift the released Gram block down by ``c I`` (post-processing, section
        4.3).  Gaussian noise is always shifted up by ``2 Upsilon I``.
    preset : {"strict", "paper", "authors_code"}
        ``strict``: the smallest Gaussian ``sigma_noise`` the analytic Gaussian mechanism certifies
        for the tree (or the smallest Wishart ``k`` advanced composition certifies), the paper's
        bounds for it; ``paper``: the printed ``sigma_noise`` / ``k`` and bounds; ``authors_code``:
        the constants of the authors' Julia code (per-round failure ``alpha/nextpow2(n)``,
        ``alpha = 1/(2n)``).  The reported guarantee is always accounted from the noise used.
    tree : {"binary_padded", "binary"}
        ``binary_padded`` pads every release to exactly ``m`` node draws (fresh, post-processing);
        ``binary`` releases the ``popcount(t)`` nodes only (Gaussian noise only).
    beta : {"data", "closed"}
        Proposition 2's radius: data-dependent (``ln det V_t``, the authors' code) or closed form.
    alpha : float, optional
        Failure probability of the confidence radius (default ``1/n``; ``1/(2n)`` with
        ``authors_code``).
    sigma : float, optional
        Sub-Gaussian parameter of the reward noise (default: the environment's).
    radius : float
        Multiplier on ``beta_t`` (1 = theory; exploration constant, post-processing).

    References
    ----------
    Shariff & Sheffet (2018), NeurIPS, Algorithm 1, Proposition 2, sections 4.2-4.4.
    """

    name = "jdp-linucb"
    trust_model = "joint"
    twin = "linucb"
    settings = ("single",)
    links = ("identity",)
    paper = "Shariff & Sheffet 2018 (Alg. 1)"
    constraints: ClassVar = {
        "epsilon": Epsilon,
        "delta": Delta,
        "noise": Choice("gaussian", "wishart"),
        "shift": Choice("shifted", "unshifted"),
        "preset": Choice("strict", "paper", "authors_code"),
        "tree": Choice("binary_padded", "binary"),
        "beta": Choice("data", "closed"),
        "alpha": Optional(Delta),
        "sigma": Optional(NonNegative),
        "radius": Positive,
    }
    test_params: ClassVar = (
        {"epsilon": 1.0},
        {"epsilon": 2.0, "noise": "wishart", "beta": "closed"},
        {"epsilon": 1.0, "noise": "wishart", "shift": "unshifted", "radius": 0.3},
    )

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The tree release of the curator's compiled update."""
        from privbandits.algorithms.shariff.audit import tree_release_spec

        return (ReleaseCase("jdp-linucb-tree", tree_release_spec),)

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 0.1,
        noise: str = "gaussian",
        shift: str = "shifted",
        preset: str = "strict",
        tree: str = "binary_padded",
        beta: str = "data",
        alpha: float | None = None,
        sigma: float | None = None,
        radius: float = 1.0,
    ) -> None:
        pass

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Node noise (``sigma_noise`` or ``k``), the bounds ``(rho_min, rho_max, gamma)``, the shift,
        the radius constants and the guarantee accounted from the noise used."""
        n, d = spec.horizon, spec.d
        if self.tree == "binary" and self.noise == "wishart":
            raise ValidationError(
                "tree='binary' releases popcount(t) Wishart draws, for which the Wishart bounds do "
                "not hold (section 4.2); use tree='binary_padded' with noise='wishart'"
            )
        m = levels(n)
        L = spec.context_bound
        yb = float(max(abs(spec.reward_range[0]), abs(spec.reward_range[1])))
        Lt = math.sqrt(L * L + yb * yb)
        form = "authors_code" if self.preset == "authors_code" else "paper"
        alpha = self.alpha
        if alpha is None:
            alpha = 1.0 / (2.0 * n) if self.preset == "authors_code" else 1.0 / max(n, 2)
        eps, dlt = self.epsilon, self.delta
        reg: Regularizer
        if self.noise == "gaussian":
            if self.preset == "strict":
                sig_noise = gaussian_sigma_strict(n, Lt, eps, dlt)
            else:
                sig_noise = gaussian_sigma_paper(m, Lt, eps, dlt)
            reg = gaussian_regularizer(m, d, n, sig_noise, alpha, form=form)
            acc = gaussian_accounting(n, Lt, sig_noise, dlt)
            k = 0
            how = (
                f"Gaussian node noise (Z'+Z'^T)/sqrt(2), sigma_noise={sig_noise:.6g}; a row enters "
                f"bit_length(n) nodes, whitened sensitivity sqrt(2) L~^2 / sqrt(2) per node; analytic "
                "Gaussian mechanism of the composed release (exact)"
            )
            noise_res: dict[str, Any] = {"sigma_noise": sig_noise}
            ledger = gaussian_ledger(n, Lt, sig_noise)
        else:
            if self.preset == "strict":
                k = wishart_dof_strict(n, d, eps, dlt)
            elif self.preset == "paper":
                k = wishart_dof_paper(m, d, eps, dlt)
            else:
                k = wishart_dof_authors(m, d, eps, dlt)
            reg = wishart_regularizer(
                m, d, n, k, Lt, alpha, shifted=self.shift == "shifted", form=form
            )
            acc = wishart_accounting(n, d, k, dlt)
            how = (
                f"Wishart node noise W_(d+1)(L~^2 I, k={k}); per node Sheffet (2015) Thm 4.1, "
                "advanced composition over bit_length(n) nodes (delta' = delta/2)"
            )
            noise_res = {"k": k}
            ledger = wishart_ledger(n, d, k, dlt)
        sig_sub = spec.noise_scale if self.sigma is None else self.sigma
        S = spec.theta_bound
        kappa = 2.0 * math.log(
            2.0 / alpha
        )  # closed form: plus d ln(rho_max/rho_min + t L^2/(d rho_min))
        if self.beta == "data":
            kappa -= d * math.log(reg.rho_min)  # data form: plus ln det V_t
        xi = S * math.sqrt(reg.rho_max) + reg.gamma
        notes = (
            f"JDP LinUCB (Shariff & Sheffet 2018, Alg. 1), {self.preset} calibration: "
            f"binary tree over rows (x, y) clipped to ||x|| <= {L:g}, |y| <= {yb:g} (L~={Lt:.6g}), "
            f"{m} noise terms per release ({self.tree}); {how}; actions joint DP (billboard)"
        )
        guarantee = to_guarantee(acc, "joint", "user", notes, ledger=ledger)
        c = JDPConstants(
            noise=self.noise,
            m=m,
            L_tilde=Lt,
            alpha=alpha,
            rho_min=reg.rho_min,
            rho_max=reg.rho_max,
            gamma=reg.gamma,
            shift=reg.shift,
            sigma=sig_sub,
            S=S,
            kappa=kappa,
            xi=xi,
            **noise_res,
        )
        return Calibration(guarantee, preset=self.preset, requested=(eps, dlt), constants=c)

    @property
    def constants(self) -> JDPConstants:
        """The typed calibration of the run."""
        return self.calibration.typed(JDPConstants)

    def _params(self) -> tuple[Any, ...]:
        c, spec = self.constants, self.spec
        yb = float(max(abs(spec.reward_range[0]), abs(spec.reward_range[1])))
        gauss = self.noise == "gaussian"
        return (
            0 if gauss else 1,
            _SQRT2 * c.sigma_noise if gauss else 0.0,
            float(c.k),
            c.L_tilde**2,
            int(c.m),
            self.tree == "binary_padded",
            c.shift,
            1e-6,
            float(spec.context_bound),
            yb,
            0.0,
            c.sigma,
            c.kappa,
            c.xi,
            self.beta == "closed",
            c.rho_min,
            c.rho_max,
            float(self.radius),
        )

    def build_kernel(self) -> CuratorKernel:
        R, d, K = self.R, self.spec.d, self.spec.K
        p = d + 1
        m = self.constants.m
        state = (
            np.zeros((R, m, p, p)),
            np.zeros((R, m, p, p)),
            np.zeros((R, m, p, p)),
            np.zeros((R, d, d)),
            np.zeros((R, d)),
            np.zeros(R),
            np.zeros((R, len(STATS_COLUMNS))),
            np.zeros((R, p, p)),
            np.zeros((R, p, p)),
            np.zeros((R, p, p)),
            np.zeros((R, p)),
            np.zeros((R, K)),
        )
        params = self._params()
        for r in range(R):  # the release of round 1: noise (and shift) only
            release_prefix(params, state, r, 0, self.streams.server)
        theta = state[_THETA]
        return CuratorKernel(
            _select, _update, params, state, estimate=lambda: theta.copy(), allocates=False
        )

    def diagnostics(self) -> dict[str, np.ndarray]:
        """Per replication: rounds whose released ``V_t`` needed the eigenvalue floor, rows clipped."""
        assert self.kernel is not None
        st = self.kernel.state[_STATS]
        return {name: st[:, i].copy() for i, name in enumerate(STATS_COLUMNS)}

    def released(self) -> dict[str, np.ndarray]:
        """The statistics released to the next user: ``V_t^{-1}``, ``theta~_t``, ``ln det V_t``."""
        assert self.kernel is not None
        st = self.kernel.state
        return {"V_inv": st[_VINV].copy(), "theta": st[_THETA].copy(), "logdet": st[_LOGDET].copy()}
