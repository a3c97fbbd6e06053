"""RS-GLinUCB (Sawarni, Das, Barman & Sinha 2024): the rarely switching GLM bandit, non-private.

The non-private skeleton of JDP-GLM (:mod:`privbandits.algorithms.sarmasarkar.jdp_glm`) and the
strongest non-private baseline of Sarmasarkar (2026), Table 2.  Every round:

* **Switching criterion I** (warm-up): if ``max_{x in X_t} ||x||^2_{V^{-1}} >= thr``, play the arm
  of largest ``||x||_{V^{-1}}``, add ``x x^T`` to ``V`` and refit the warm-up estimate
  ``theta_w`` (regularized MLE on the warm-up rounds over ``||theta|| <= S``).
* **Switching criterion II**: if ``det H_t > c det H_tau`` (``c = switch_factor``), set
  ``tau = t``, ``H_tau = H_t`` and refit ``theta_tau`` (regularized MLE on the other rounds over
  ``{||theta - theta_w||_V <= gamma sqrt(kappa)}``).
* eliminate arms with ``theta_w`` (``UCB_w(x) >= max_z LCB_w(z)``, radius
  ``gamma sqrt(kappa) ||x||_{V^{-1}}``), play ``argmax <x, theta_tau> + beta ||x||_{H_tau^{-1}}``
  and add ``mu'(<x_t, theta_w>)/e x_t x_t^T`` to ``H``.

Practical constants (as in the authors' reference implementation): ``lambda = 0.5``,
``gamma = R S sqrt(d log(T/delta))``, ``beta = 4 sqrt(d log(T/delta))``,
``thr = 1/(c_thr kappa R^4 S^2 d)`` with ``c_thr = 0.01``.  The MLE is solved by projected Newton
steps (:func:`~privbandits.algorithms.sarmasarkar.optim.newton_mle`).

References
----------
Sawarni, Das, Barman & Sinha (2024), "Generalized Linear Bandits with Limited Adaptivity",
NeurIPS, Algorithm 2 (RS-GLinCB).  Sarmasarkar (2026), section 8 (baseline of Table 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms._shared.linalg import eliminate_and_score, quadratic_forms
from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import Calibration, Constants
from privbandits.algorithms.kernel import CuratorKernel, argmax_ties, pinned
from privbandits.algorithms.registry import register
from privbandits.algorithms.sarmasarkar import authors_code
from privbandits.algorithms.sarmasarkar.authors_code import AuthorsCodeRun
from privbandits.algorithms.sarmasarkar.jdp_glm import resolve_kappas
from privbandits.algorithms.sarmasarkar.optim import newton_mle
from privbandits.core.links import link_dmu
from privbandits.core.params import Choice, Delta, Int, Optional, Positive, Real
from privbandits.core.spec import EnvSpec
from privbandits.privacy.guarantee import NON_PRIVATE

__all__ = ["RSGLinUCB"]

_XS, _YS, _MEM, _V, _VINV, _H, _HTAU, _HTAU_INV, _TH_W, _TH_T, _EXPL, _SCORES, _LOGDET, _STATS = (
    range(14)
)


# Criterion II's log-determinant and switch and the warm-up refit allocate (numpy's linear
# algebra, the Newton solver's scratch): they are pinned to numba's runtime and return no array, so that the
# per-round steps compile without it (CuratorKernel.allocates).
@pinned
def _logdet(H: np.ndarray) -> float:  # pragma: no cover - compiled
    """``log |det H|`` (LAPACK's LU of a copy of ``H``)."""
    sign, logdet = np.linalg.slogdet(H)
    return logdet


@pinned
def _switch(state, r, t, V, H, th_w, th_t, link_code, lam, S, radius, newton_iters):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Criterion II's switch: ``H_tau = H_t``, its inverse, and the refit of ``theta_tau`` on the
    non-warm-up rounds over ``{||theta - theta_w||_V <= radius}``."""
    state[_HTAU][r][:, :] = H
    state[_HTAU_INV][r][:, :] = np.linalg.inv(H)
    vals, vecs = np.linalg.eigh(0.5 * (V + V.T))
    th_t[:] = th_w
    newton_mle(
        state[_XS][r],
        state[_YS][r],
        state[_MEM][r],
        0,
        t,
        link_code,
        lam,
        False,
        S,
        th_w.copy(),
        vecs,
        vals,
        radius,
        th_t,
        newton_iters,
    )


@pinned
def _warmup_refit(state, r, t, V, link_code, lam, S, newton_iters):  # type: ignore[no-untyped-def]  # pragma: no cover
    """A warm-up round's ``V^{-1}`` and the refit of ``theta_w`` over ``ball(S)``."""
    d = V.shape[0]
    state[_VINV][r][:, :] = np.linalg.inv(V)
    dummy = np.zeros(d)
    newton_mle(
        state[_XS][r],
        state[_YS][r],
        state[_MEM][r],
        1,
        t + 1,
        link_code,
        lam,
        True,
        S,
        dummy,
        np.eye(d),
        np.ones(d),
        0.0,
        state[_TH_W][r],
        newton_iters,
    )


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Criterion I, Criterion II (with the refit of ``theta_tau``), elimination and the optimistic choice."""
    link_code, lam, thr, gamma, beta, sqrt_kappa, S, factor, newton_iters = params
    V, V_inv = state[_V][r], state[_VINV][r]
    scores = state[_SCORES][r]
    K, d = X.shape
    qmax = quadratic_forms(V_inv, X, scores)
    if qmax >= thr:
        state[_EXPL][r] = 1
        return argmax_ties(scores, rng)
    state[_EXPL][r] = 0
    H, th_w, th_t = state[_H][r], state[_TH_W][r], state[_TH_T][r]
    logdet = _logdet(H)
    if logdet > state[_LOGDET][r] + math.log(factor):  # Criterion II: det H_t > factor det H_tau
        state[_LOGDET][r] = logdet
        _switch(state, r, t, V, H, th_w, th_t, link_code, lam, S, gamma * sqrt_kappa, newton_iters)
        state[_STATS][r, 1] += 1.0
    eliminate_and_score(X, th_w, gamma * sqrt_kappa, th_t, state[_HTAU_INV][r], beta, scores)
    return argmax_ties(scores, rng)


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Store the data point; warm-up rounds update ``V`` and refit ``theta_w``, the others update ``H``."""
    link_code, lam, S, newton_iters = params[0], params[1], params[6], params[8]
    d = X.shape[1]
    explore = state[_EXPL][r] == 1
    for j in range(d):
        state[_XS][r, t, j] = X[a, j]
    state[_YS][r, t] = y
    state[_MEM][r, t] = 1 if explore else 0
    x = X[a]
    if explore:
        V = state[_V][r]
        for i in range(d):
            for j in range(d):
                V[i, j] += x[i] * x[j]
        _warmup_refit(state, r, t, V, link_code, lam, S, newton_iters)
        state[_STATS][r, 0] += 1.0
    else:
        z = 0.0
        for j in range(d):
            z += x[j] * state[_TH_W][r, j]
        w = link_dmu(link_code, z) / math.e
        H = state[_H][r]
        for i in range(d):
            for j in range(d):
                H[i, j] += w * x[i] * x[j]


@dataclass(frozen=True)
class RSGLinUCBConstants(Constants):
    """RS-GLinUCB: parameter bound ``S``, ``kappa``, reward bound ``R``, the radii ``gamma`` and
    ``beta`` and the switching threshold ``thr``."""

    S: float
    kappa: float
    R: float
    gamma: float
    beta: float
    thr: float


@register
class RSGLinUCB(AuthorsCodeRun, Curator):
    """RS-GLinUCB (Sawarni et al. 2024, Algorithm 2): non-private rarely switching GLM bandit.

    Parameters
    ----------
    lam : float
        Regularizer of ``V``, ``H`` and the MLEs.
    delta : float
        Confidence level in ``gamma`` and ``beta``.
    c_thr : float
        Constant of the warm-up threshold ``thr = 1/(c_thr kappa R^4 S^2 d)``.
    switch_factor : float
        Determinant growth factor of Criterion II (> 1).
    kappa : float, optional
        Upper bound on ``1/mu'`` over the arms (default ``1/min_{|z| <= S} mu'``).
    S : float, optional
        Bound on ``||theta*||`` (default: the environment's ``theta_bound``).
    newton_iters : int
        Maximum projected Newton steps per MLE.
    preset : {"strict", "paper", "authors_code"}
        ``strict`` and ``paper`` (no constants printed): as above; ``authors_code``: RS-GLinUCB as
        the public code of Sarmasarkar (2026) runs it
        (:class:`~privbandits.algorithms.sarmasarkar.authors_code.AuthorsRSGLinUCB`).

    References
    ----------
    Sawarni, Das, Barman & Sinha (2024), NeurIPS, Algorithm 2.
    """

    name = "rs-glinucb"
    settings = ("single",)
    links = ("logistic", "probit")
    paper = "Sawarni et al. 2024"
    constraints: ClassVar = {
        "lam": Positive,
        "delta": Delta,
        "c_thr": Positive,
        "switch_factor": Real(1.0, None, low_open=True),
        "kappa": Optional(Positive),
        "S": Optional(Positive),
        "newton_iters": Int(1, 1000),
        "preset": Choice("strict", "paper", "authors_code"),
    }
    test_params: ClassVar = (
        {},
        {"lam": 2.0, "c_thr": 0.001, "switch_factor": 1.5, "S": 1.5, "newton_iters": 5},
        {"preset": "authors_code"},
    )

    def __init__(
        self,
        lam: float = 0.5,
        delta: float = 0.02,
        c_thr: float = 0.01,
        switch_factor: float = 2.0,
        kappa: float | None = None,
        S: float | None = None,
        newton_iters: int = 30,
        preset: str = "strict",
    ) -> None:
        pass

    def _calibrate(self, spec: EnvSpec) -> Calibration:
        """Resolve ``S``, ``kappa``, ``gamma``, ``beta`` and ``thr`` on ``spec`` (non-private)."""
        S = spec.theta_bound if self.S is None else self.S
        kappa, _ = resolve_kappas(spec, S, self.kappa, None)
        R = max(1.0, float(spec.reward_range[1]))
        L = math.log(spec.horizon / self.delta)
        constants = RSGLinUCBConstants(
            S,
            kappa,
            R,
            R * S * math.sqrt(spec.d * L),
            4.0 * math.sqrt(spec.d * L),
            1.0 / (self.c_thr * kappa * R**4 * S**2 * spec.d),
        )
        return Calibration(NON_PRIVATE, constants=constants)

    _authors_run = authors_code.rs_glinucb_runner

    def _build_kernel(self) -> CuratorKernel:
        c, R, spec = self.calibration.typed(RSGLinUCBConstants), self.R, self.spec
        d, T = spec.d, spec.horizon
        eye = np.eye(d)
        lam = self.lam
        state = (
            np.zeros((R, T, d)),
            np.zeros((R, T)),
            np.zeros((R, T), dtype=np.int8),
            np.broadcast_to(eye * lam, (R, d, d)).copy(),
            np.broadcast_to(eye / lam, (R, d, d)).copy(),
            np.broadcast_to(eye * lam, (R, d, d)).copy(),
            np.zeros((R, d, d)),
            np.zeros((R, d, d)),
            np.zeros((R, d)),
            np.zeros((R, d)),
            np.zeros(R, dtype=np.int64),
            np.zeros((R, spec.K)),
            np.full(R, -np.inf),
            np.zeros((R, 2)),
        )
        params = (
            spec.link.code,
            lam,
            float(c.thr),
            float(c.gamma),
            float(c.beta),
            math.sqrt(float(c.kappa)),
            float(c.S),
            self.switch_factor,
            int(self.newton_iters),
        )
        theta_t = state[_TH_T]
        return CuratorKernel(
            _select, _update, params, state, estimate=lambda: theta_t.copy(), allocates=False
        )

    def diagnostics(self) -> dict[str, np.ndarray]:
        """Per-replication counts of warm-up rounds and Criterion-II switches."""
        if self.preset == "authors_code":
            return self._authors.diagnostics()
        k = self.kernel
        assert isinstance(k, CuratorKernel)
        st = k.state[_STATS]
        return {"explore_rounds": st[:, 0].copy(), "switches": st[:, 1].copy()}
