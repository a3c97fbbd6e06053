"""JDP-GLM ("Private-GLM"): Sarmasarkar (2026), Algorithm 2 -- a jointly differentially private,
rarely switching generalized linear bandit for adversarial contexts.

A trusted curator runs the RS-GLinCB skeleton (Sawarni et al. 2024) on privatized statistics:

* **Criterion I (exploration)**: if ``max_{x in X_t} ||x||^2_{V^{-1}} >= thr`` play the arm of
  largest ``||x||_{V^{-1}}``; its leaf ``x x^T`` goes into the V tree (zero into the H tree).
* **Criterion II (directional growth)**: when ``H_t`` is not below ``2 H_tau`` in the PSD order
  (``eigmax(H_t - 2 H_tau) > tol``) and fewer than ``count2_cutoff`` calls were made, switch:
  ``tau <- t``, ``H_tau <- H_t`` and refit ``theta_tau`` by DPPGD on the non-exploration data over
  ``Theta_II = {||theta - theta_o||_V <= gamma sqrt(kappa)}``.
* otherwise eliminate arms with the exploration estimate ``theta_o``
  (``UCB_o(x) >= max_z LCB_o(z)``, radius ``gamma sqrt(kappa) ||x||_{V^{-1}}``) and play
  ``argmax <x, theta_tau> + beta ||x||_{H_tau^{-1}}``; the leaf
  ``min(mu'(<x_t, theta_o>)/e, w_max) x_t x_t^T`` goes into the H tree.

``V = lam_V I + prefix_V`` and ``H_t = lam_H I + prefix_H`` are the releases of two binary-tree
Gaussian mechanisms (eigenvalue-floored before inversion: post-processing).

Privacy (strict accounting).  The paper's proof has two gaps: one user's change can move its round
between the exploration set ``T_o`` and the rest (touching both trees and both optimizer
families), and the literal control flow (``theta_o`` refit at round i iff i is an exploration round;
Criterion II evaluated only on non-exploration rounds) reveals a bit of user i's context set to
later users.  This implementation therefore runs the strict control flow: Criterion II is
evaluated at the start of every round from released matrices only, ``theta_o`` is refit on the
public schedule ``t = 2^k`` on the exploration data so far, and the optimizer is the strict DPPGD
(public iteration count and scaling, noise on the summed clipped gradient;
:func:`~privbandits.algorithms.sarmasarkar.optim.dppgd`).  The accountant
(:func:`jdp_glm_accounting`) composes, in zCDP, the two trees (replacement sensitivities
``sqrt(2)`` and ``sqrt(2) w_max``) and the two optimizer families, taking the worst of a change
inside ``T_o``, a change outside it, and a membership flip; the Criterion-I and Criterion-II
indicators are post-processing of the releases.  The reported guarantee is that accountant's
statement about the noise actually added, in both modes.

References
----------
Sarmasarkar (2026), "Shuffle and Joint Differential Privacy for Generalized Linear Contextual
Bandits", Algorithm 2, Lemmas 6.1, J.4-J.7, U.4, Appendix J.3.  Sawarni, Das, Barman & Sinha (2024),
"Generalized Linear Bandits with Limited Adaptivity" (RS-GLinCB).  Kearns et al. (2014) and
Shariff & Sheffet (2018) (joint differential privacy, billboard lemma).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms._shared.linalg import eliminate_and_score, quadratic_forms
from privbandits.algorithms.audit import AuditCase, ReleaseCase
from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import CuratorKernel, argmax_ties, pinned
from privbandits.algorithms.registry import register
from privbandits.algorithms.sarmasarkar import authors_code
from privbandits.algorithms.sarmasarkar.authors_code import AuthorsCodeRun
from privbandits.algorithms.sarmasarkar.constants import (
    JDPConstants,
    exact_tree_nodes,
    jdp_glm_constants,
    resolve_kappas,
    worst_change,
)
from privbandits.algorithms.sarmasarkar.optim import (
    dppgd,
    dppgd_sigma,
    floor_pd_inverse,
    max_eig_diff,
)
from privbandits.algorithms.sarmasarkar.tree import tree_insert, tree_prefix
from privbandits.core.errors import NotResetError, ValidationError
from privbandits.core.links import link_dmu
from privbandits.core.params import Choice, Delta, Epsilon, Int, Optional, Positive
from privbandits.core.spec import EnvSpec
from privbandits.privacy.accounting import ZCDP, gaussian_zcdp, to_guarantee
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.ledger import Composed, Event, Gaussian, SelfComposed
from privbandits.privacy.samplers import clip_l2, clip_scalar

__all__ = ["JDPGLM", "JDPGLMConstants", "jdp_glm_accounting", "jdp_glm_ledger", "resolve_kappas"]

# indices into the kernel state tuple
(
    _XS,
    _YS,
    _MEM,
    _AV,
    _NV,
    _AH,
    _NH,
    _V,
    _VINV,
    _H,
    _HTMP,
    _HTAU,
    _HTAU_INV,
    _TH_O,
    _TH_T,
    _N2,
    _EXPL,
    _STATS,
    _W,
    _LEAF,
    _X,
    _SCORES,
    _U,
    _EV,
) = range(24)
#: columns of the per-replication diagnostics ``stats``
STATS_COLUMNS: tuple[str, ...] = ("explore_rounds", "switches", "floor_active", "theta_o_refreshes")


@nb.njit(cache=True)
def _iterations(
    n_pub: int, rho: float, d: int, zeta_opt: float, max_iters: int
) -> int:  # pragma: no cover
    """Public DPPGD iteration count ``clamp(ceil((n^2 rho + log(1/zeta_opt))/d), 1, max_iters)`` (Lemma U.4)."""
    raw = math.ceil((float(n_pub) ** 2 * rho + math.log(1.0 / zeta_opt)) / d)
    return int(min(max(raw, 1.0), float(max_iters)))


@nb.njit(cache=True)
def _select(params, state, r, t, X, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Criterion I, else elimination with ``theta_o`` and the optimistic choice with ``H_tau`` (Alg. 2 lines 4-15)."""
    thr, gamma, beta, sqrt_kappa = params[7], params[8], params[9], params[10]
    V_inv, Ht_inv, th_o, th_t = (
        state[_VINV][r],
        state[_HTAU_INV][r],
        state[_TH_O][r],
        state[_TH_T][r],
    )
    scores = state[_SCORES][r]
    K, d = X.shape
    qmax = quadratic_forms(V_inv, X, scores)
    if qmax >= thr:  # Criterion I: explore along the least-explored direction
        state[_EXPL][r] = 1
        return argmax_ties(scores, rng)
    state[_EXPL][r] = 0
    eliminate_and_score(X, th_o, gamma * sqrt_kappa, th_t, Ht_inv, beta, scores)  # eqs. (14)-(16)
    return argmax_ties(scores, rng)


@nb.njit(cache=True)
def _refit(state, r, family, n, fit, bound, scale, ball, S, c, U, ev, radius, init, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """One strict DPPGD fit (:func:`~.optim.dppgd`) on the stored data of ``family`` (1: the
    exploration rounds, onto ``Theta_I = ball(S)``; 0: the others, onto the ellipsoid ``Theta_II``
    around ``c``) from ``init`` into ``out``.

    ``fit = (link, R, lam_reg, rho, zeta, max_iters)``: ``T_it`` iterations from the public ``n``
    at level ``rho``, step ``eta = scale / (L sqrt(T_it))`` with ``L = R + lam_reg bound / n``
    (Sarmasarkar 2026, Lemma U.4: ``scale`` is twice the diameter bound of the domain, ``bound``
    the largest norm in it).
    """
    link_code, Rb, lam_reg, rho, zeta, max_iters = fit
    T_it = _iterations(n, rho, out.shape[0], zeta, max_iters)
    sigma = dppgd_sigma(Rb, T_it, rho)
    L = Rb + lam_reg * bound / n
    eta = scale / (L * math.sqrt(T_it))
    X, y, member = state[_XS][r], state[_YS][r], state[_MEM][r]
    dppgd(
        X,
        y,
        member,
        family,
        n,
        link_code,
        Rb,
        lam_reg,
        float(n),
        T_it,
        sigma,
        eta,
        ball,
        S,
        c,
        U,
        ev,
        radius,
        init,
        rng,
        out,
    )


# The optimizer's refits allocate (DPPGD's scratch, numpy's linear algebra): they run on the
# public schedule and at the capped Criterion-II switches, pinned to numba's runtime and
# returning no array, so that the per-round steps compile without it (CuratorKernel.allocates).
@pinned
def _refresh_theta_o(state, r, n, fit, S, U, ev, rng, th_o):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The public-schedule refit of ``theta_o`` on the exploration data over ``Theta_I = ball(S)``."""
    zero = np.zeros(th_o.shape[0])
    _refit(state, r, 1, n, fit, S, 2.0 * S, True, S, zero, U, ev, 0.0, zero, rng, th_o)


@pinned
def _switch(state, r, n, V, H, Htmp, Ht, th_o, U, ev, fit, rad, S, rng):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Criterion II's switch: ``H_tau = H_t`` and its (floored) inverse ``Htmp``, ``V``'s
    eigendecomposition for ``Theta_II`` and the refit of ``theta_tau`` over ``Theta_II``."""
    Ht[:, :] = H
    state[_HTAU_INV][r][:, :] = Htmp
    vals, vecs = np.linalg.eigh(0.5 * (V + V.T))
    ev[:] = vals
    U[:, :] = vecs
    vmin = vals[0]
    onrm = math.sqrt(np.sum(th_o * th_o))
    bound = onrm + rad / math.sqrt(vmin)
    scale = 2.0 * rad / math.sqrt(vmin)
    th_t = state[_TH_T][r]
    _refit(
        state,
        r,
        0,
        n,
        fit,
        bound,
        scale,
        False,
        S,
        th_o,
        U,
        ev,
        rad,
        th_o.copy(),
        rng,
        th_t,
    )


@nb.njit(cache=True)
def _prepare(params, state, r, n, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Releases for round ``n + 1`` after ``n`` leaves: ``V``, ``H_t``, the public ``theta_o`` refit, Criterion II."""
    (
        link_code,
        T,
        lam_V,
        lam_H,
        lam_reg_o,
        lam_reg_tau,
        _lam_min_V,
        _thr,
        gamma,
        _beta,
        sqrt_kappa,
        S,
        Rb,
        _sV,
        _sH,
        _w_max,
        count2,
        rho_o,
        rho_tau,
        zeta_o,
        zeta_tau,
        max_iters,
        floor,
    ) = params
    V, V_inv, H, Htmp = state[_V][r], state[_VINV][r], state[_H][r], state[_HTMP][r]
    stats = state[_STATS][r]
    d = V.shape[0]
    tree_prefix(state[_NV][r], n, V)
    tree_prefix(state[_NH][r], n, H)
    for i in range(d):
        V[i, i] += lam_V
        H[i, i] += lam_H
    active = floor_pd_inverse(V, floor, V_inv)
    active = floor_pd_inverse(H, floor, Htmp) or active
    if active:
        stats[2] += 1.0
    s = n + 1
    th_o = state[_TH_O][r]
    U, ev = state[_U][r], state[_EV][r]
    if (
        s & (s - 1) == 0
    ):  # public schedule t = 2^k: refit theta_o on the exploration data (Theta_I = ball(S))
        fit = (link_code, Rb, lam_reg_o, rho_o, zeta_o, max_iters)
        _refresh_theta_o(state, r, n, fit, S, U, ev, rng, th_o)
        stats[3] += 1.0
    Ht = state[_HTAU][r]
    if state[_N2][r] < count2:
        nrm = 0.0
        for i in range(d):
            for j in range(d):
                nrm += 4.0 * Ht[i, j] * Ht[i, j]
        if max_eig_diff(H, Ht, 2.0) > 1e-10 * math.sqrt(nrm):  # Criterion II: H_t not below 2 H_tau
            rad = gamma * sqrt_kappa
            fit = (link_code, Rb, lam_reg_tau, rho_tau, zeta_tau, max_iters)
            _switch(state, r, n, V, H, Htmp, Ht, th_o, U, ev, fit, rad, S, rng)
            state[_N2][r] += 1
            stats[1] += 1.0


@nb.njit(cache=True)
def _update(params, state, r, t, X, a, y, rng):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Store the data point, insert the two tree leaves (Alg. 2 lines 7 and 16), prepare the next round."""
    T, Rb, sigma_V, sigma_H, w_max = params[1], params[12], params[13], params[14], params[15]
    x, leaf, W = state[_X][r], state[_LEAF][r], state[_W][r]
    d = x.shape[0]
    for j in range(d):
        x[j] = X[a, j]
    clip_l2(x, 1.0)  # leaves of Frobenius norm <= 1: the sensitivity the trees are calibrated for
    explore = state[_EXPL][r] == 1
    for j in range(d):
        state[_XS][r, t, j] = x[j]
    state[_YS][r, t] = clip_scalar(y, 0.0, Rb)
    state[_MEM][r, t] = 1 if explore else 0
    for i in range(d):
        for j in range(d):
            leaf[i, j] = x[i] * x[j] if explore else 0.0
    tree_insert(state[_AV][r], state[_NV][r], t + 1, leaf, sigma_V, rng, W)
    w = 0.0
    if not explore:
        z = 0.0
        for j in range(d):
            z += x[j] * state[_TH_O][r, j]
        w = min(link_dmu(params[0], z) / math.e, w_max)
    for i in range(d):
        for j in range(d):
            leaf[i, j] = w * x[i] * x[j]
    tree_insert(state[_AH][r], state[_NH][r], t + 1, leaf, sigma_H, rng, W)
    if explore:
        state[_STATS][r, 0] += 1.0
    if t + 1 < T:
        _prepare(params, state, r, t + 1, rng)


def jdp_glm_ledger(c: JDPConstants, T: int, R: float) -> Event:
    """The events JDP-GLM's accountant composes (:func:`jdp_glm_accounting`), as a ledger.

    The worst of three forms of one user's change, each a zCDP composition of Gaussian releases:
    the V tree (``bit_length(T)`` nodes of std ``sigma_V`` per leaf, replacement sensitivity
    ``sqrt 2``), the H tree (``sigma_H``, ``sqrt(2) w_max``), the ``n_refresh`` public refits of
    ``theta_o`` and the at most ``count2_cutoff`` refits of ``theta_tau``.  A refit runs ``T_it``
    DPPGD steps of std ``2 R sqrt(T_it / (2 rho_call))`` on a gradient sum of sensitivity ``2 R``
    (:func:`~privbandits.algorithms.sarmasarkar.optim.dppgd_sigma`): whatever the public ``T_it``,
    that is one Gaussian of std ``2 R / sqrt(2 rho_call)`` (Gaussian releases compose exactly),
    which is the refit's leaf.  A membership flip moves a tree leaf by at most its norm (``1``
    and ``w_max``: ``1 / sqrt 2`` of the replacement sensitivity) and a gradient sum by one
    clipped gradient (``R``: half of it).
    """
    nodes = exact_tree_nodes(T)
    s2 = math.sqrt(2.0)
    sig_o, sig_tau = dppgd_sigma(R, 1, c.rho_o_call), dppgd_sigma(R, 1, c.rho_tau_call)
    refit = "T_it DPPGD steps of std 2R sqrt(T_it/(2 rho)), as one Gaussian"

    def tree(name: str, sigma: float, sens: float, leaf: str) -> Event:
        node = Gaussian(sigma, sens, f"a {name}-tree node (leaf {leaf})", "zcdp")
        return SelfComposed(node, nodes, "zcdp", what=f"{name} tree: the nodes one leaf enters")

    def family(name: str, sigma: float, sens: float, count: int, which: str) -> Event:
        call = Gaussian(sigma, sens, f"one {name} refit: {refit}", "zcdp")
        return SelfComposed(call, count, "zcdp", what=f"{name} refits ({which})")

    def case(what: str, f_tree: float, f_fit: float, inside: bool, outside: bool) -> Event:
        parts: list[Event] = []
        if inside:
            parts.append(tree("V", c.sigma_V, f_tree * s2, "x x^T, ||x|| <= 1"))
        if outside:
            parts.append(tree("H", c.sigma_H, f_tree * s2 * c.w_max, "w x x^T, w <= w_max"))
        if inside:
            parts.append(family("theta_o", sig_o, f_fit * 2.0 * R, c.n_refresh, "public t = 2^k"))
        if outside:
            parts.append(
                family("theta_tau", sig_tau, f_fit * 2.0 * R, c.count2_cutoff, "Criterion-II cap")
            )
        return Composed(tuple(parts), "zcdp", what)

    return Composed(
        (
            case("a change inside T_o", 1.0, 1.0, True, False),
            case("a change outside T_o", 1.0, 1.0, False, True),
            case("a membership flip", 1.0 / s2, 0.5, True, True),
        ),
        "worst",
        what="JDP-GLM, one user's change",
    )


def jdp_glm_accounting(
    c: JDPConstants, T: int, delta: float, R: float, *, extra_notes: str = ""
) -> tuple[PrivacyGuarantee, dict[str, float]]:
    """The accounted ``(epsilon, delta)``-JDP guarantee of JDP-GLM from the noise its constants add.

    zCDP per component: V tree ``rho_V = n_nodes (sqrt 2)^2/(2 sigma_V^2)``, H tree
    ``rho_H = n_nodes (sqrt 2 w_max)^2/(2 sigma_H^2)`` (``n_nodes = bit_length(T)``), optimizer
    families ``rho_o = n_refresh rho_o_call`` and ``rho_tau = count2_cutoff rho_tau_call`` (each call
    is ``rho_call``-zCDP by construction of ``sigma_sum``).  A change inside ``T_o`` costs
    ``rho_V + rho_o``, outside ``rho_H + rho_tau``, a membership flip
    ``(rho_V + rho_H)/2 + (rho_o + rho_tau)/4`` (each affected release moves by half its
    sensitivity); the guarantee is the worst of the three, converted with Canonne-Kamath-Steinke.
    The guarantee carries these events (:func:`jdp_glm_ledger`).
    """
    nodes = exact_tree_nodes(T)
    rho_V = nodes * gaussian_zcdp(c.sigma_V, math.sqrt(2.0)).rho
    rho_H = nodes * gaussian_zcdp(c.sigma_H, math.sqrt(2.0) * c.w_max).rho
    rho_o = c.n_refresh * c.rho_o_call
    rho_tau = c.count2_cutoff * c.rho_tau_call
    cases = {
        "inside T_o": rho_V + rho_o,
        "outside T_o": rho_H + rho_tau,
        "membership flip": 0.5 * (rho_V + rho_H) + 0.25 * (rho_o + rho_tau),
    }
    worst, rho = worst_change(cases)
    notes = (
        f"JDP-GLM ({c.mode} constants), strict control flow; zCDP: V tree {rho_V:.6g}, H tree {rho_H:.6g}, "
        f"theta_o family {rho_o:.6g} ({c.n_refresh} public refits), theta_tau family {rho_tau:.6g} "
        f"(<= {c.count2_cutoff} calls); worst neighbouring change: {worst}; Criterion I/II indicators are "
        f"post-processing"
    )
    if extra_notes:
        notes = f"{notes}; {extra_notes}"
    g = to_guarantee(
        ZCDP(rho),
        model="joint",
        unit="user",
        notes=notes,
        delta=delta,
        method="cks",
        ledger=jdp_glm_ledger(c, T, R),
    )
    parts = {"rho_V": rho_V, "rho_H": rho_H, "rho_o": rho_o, "rho_tau": rho_tau, "rho_total": rho}
    return g, parts


@dataclass(frozen=True)
class JDPGLMConstants(JDPConstants):
    """JDP-GLM's typed calibration: the constants of Algorithm 2 (:class:`JDPConstants`), the
    accountant's zCDP parts (``rho_V``, ``rho_H``, the families ``rho_o`` and ``rho_tau``, the
    worst case ``rho_total``), the bounds ``S`` and ``R`` and the budget ``split`` in use."""

    rho_V: float
    rho_H: float
    rho_o: float
    rho_tau: float
    rho_total: float
    S: float
    R: float
    split: str


@register
class JDPGLM(AuthorsCodeRun, Curator):
    """JDP-GLM / Private-GLM (Sarmasarkar 2026, Algorithm 2): joint-DP GLM bandit, logistic or probit link.

    Parameters
    ----------
    epsilon, delta : float
        Requested ``(epsilon, delta)``-joint DP (per user = per round).
    zeta : float, optional
        Failure probability of the regret analysis (``Lambda_T = log(T/zeta)``); default ``delta``.
    mode : {"practical", "theory"}
        ``practical``: exact zCDP calibration and the reference hyper-parameters (lambda from the
        realized tree noise, ``gamma = R S sqrt(d log(T/zeta))``, ``beta = 4 sqrt(d log(T/zeta))``,
        ``thr = 1/(c_thr kappa R^4 S^2 d)``).  ``theory``: the paper's eqs. (50)-(52), tree noise of
        Appendix J.3, optimizer budget ``eps^2/(144 log(8/delta))`` per family.
    split : {"thirds", "halves", "zcdp"}, optional
        Practical mode budget split: ``thirds`` = the paper's ``(eps/3, delta/3)`` for trees,
        switching indicators and optimizers; ``halves`` = ``(eps/2, delta/2)`` for trees and
        optimizers (the indicators are post-processing of the V tree); ``zcdp`` = half each of the
        zCDP budget whose conversion is ``(eps, delta)`` (spends the whole budget: the accounted
        epsilon equals the request).  Default: the preset's.
    preset : {"strict", "paper", "authors_code"}
        ``strict``: split ``zcdp`` (accounted epsilon within 1 % of the request);
        ``paper``: the paper's ``thirds`` (accounted 17-40 % of the request at epsilon 1-20).
    kappa, kappa_star : float, optional
        Upper bound on ``kappa = max 1/mu'`` and lower bound on ``kappa* = 1/max mu'`` (defaults
        ``1/min_{|z| <= S} mu'`` and ``1/sup mu'``).
    S : float, optional
        Bound on ``||theta*||`` (default: the environment's ``theta_bound``).
    c_thr : float
        Constant of the practical Criterion-I threshold.
    lam0 : float
        Practical regularizer floor ``lambda_0``.
    C : float
        The unnamed constant of eqs. (51)-(52) (theory mode).
    max_iters : int
        Cap on the DPPGD iterations per call.

    References
    ----------
    Sarmasarkar (2026), Algorithm 2; Sawarni et al. (2024) (RS-GLinCB).
    """

    name = "jdp-glm"
    trust_model = "joint"
    settings = ("single",)
    links = ("logistic", "probit")
    paper = "Sarmasarkar 2026"
    constraints: ClassVar = {
        "epsilon": Epsilon,
        "delta": Delta,
        "zeta": Optional(Delta),
        "mode": Choice("practical", "theory"),
        "split": Optional(Choice("thirds", "halves", "zcdp")),
        "preset": Choice("strict", "paper", "authors_code"),
        "kappa": Optional(Positive),
        "kappa_star": Optional(Positive),
        "S": Optional(Positive),
        "c_thr": Positive,
        "lam0": Positive,
        "C": Positive,
        "max_iters": Int(1, 100_000),
    }
    test_params: ClassVar = (
        {"epsilon": 4.0, "max_iters": 30},
        {"epsilon": 2.0, "delta": 0.05, "mode": "theory", "max_iters": 10, "S": 1.5},
        {"epsilon": 8.0, "split": "zcdp", "c_thr": 6.0, "max_iters": 20},
        {"epsilon": 4.0, "preset": "paper", "max_iters": 20},
        {"epsilon": 6.0, "preset": "authors_code"},
    )

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The noisy gradient release of every DPPGD step."""
        from privbandits.algorithms.sarmasarkar.audit import gradient_release_spec

        return (ReleaseCase("jdp-glm-gradient", gradient_release_spec),)

    def __init__(
        self,
        epsilon: float = 4.0,
        delta: float = 0.02,
        zeta: float | None = None,
        mode: str = "practical",
        split: str | None = None,
        preset: str = "strict",
        kappa: float | None = None,
        kappa_star: float | None = None,
        S: float | None = None,
        c_thr: float = 0.01,
        lam0: float = 1.0,
        C: float = 1.0,
        max_iters: int = 1000,
    ) -> None:
        pass

    @property
    def resolved_split(self) -> str:
        """The budget split in use: ``split`` if given, else ``zcdp`` (strict) or ``thirds`` (paper, theory)."""
        if self.split is not None:
            return str(self.split)
        return "zcdp" if self.preset == "strict" and self.mode == "practical" else "thirds"

    def constants(self, spec: EnvSpec) -> JDPConstants:
        """The resolved constants of Algorithm 2 on problem ``spec``."""
        S = spec.theta_bound if self.S is None else self.S
        kappa, kappa_star = resolve_kappas(spec, S, self.kappa, self.kappa_star)
        R = max(1.0, float(spec.reward_range[1]))
        split = self.resolved_split
        if split != "thirds" and self.mode == "theory":
            raise ValidationError(
                f"split={self.split!r} applies to mode='practical' only (theory keeps the "
                "paper's three-way split 'thirds')"
            )
        return jdp_glm_constants(
            d=spec.d,
            T=spec.horizon,
            epsilon=self.epsilon,
            delta=self.delta,
            zeta=self.delta if self.zeta is None else self.zeta,
            link=spec.link,
            R=R,
            S=S,
            kappa=kappa,
            kappa_star=kappa_star,
            mode=self.mode,
            split=split,
            c_thr=self.c_thr,
            lam0=self.lam0,
            C=self.C,
        )

    _authors_calibration = authors_code.authors_calibration
    _authors_run = authors_code.authors_runner

    def _calibrate(self, spec: EnvSpec) -> Calibration:
        """Constants and the accounted guarantee (strict accounting) on ``spec``."""
        c = self.constants(spec)
        R = max(1.0, float(spec.reward_range[1]))
        g, parts = jdp_glm_accounting(c, spec.horizon, self.delta, R)
        fields: dict[str, Any] = {**c.__dict__, **parts}
        typed = JDPGLMConstants(
            **fields,
            S=spec.theta_bound if self.S is None else self.S,
            R=R,
            split=self.resolved_split,
        )
        return Calibration(
            g, preset=self.preset, requested=(self.epsilon, self.delta), constants=typed
        )

    def _build_kernel(self) -> CuratorKernel:
        c, R, spec = self.calibration.typed(JDPGLMConstants), self.R, self.spec
        d, T = spec.d, spec.horizon
        m = int(c.m)
        eye = np.eye(d)
        V = np.broadcast_to(eye * c.lam_V, (R, d, d)).copy()
        H = np.broadcast_to(eye * c.lam_H, (R, d, d)).copy()
        state = (
            np.zeros((R, T, d)),
            np.zeros((R, T)),
            np.zeros((R, T), dtype=np.int8),
            np.zeros((R, m, d, d)),
            np.zeros((R, m, d, d)),
            np.zeros((R, m, d, d)),
            np.zeros((R, m, d, d)),
            V,
            np.broadcast_to(eye / c.lam_V, (R, d, d)).copy(),
            H,
            np.zeros((R, d, d)),
            H.copy(),  # H_tau: round 1 switches (H_tau = 0 before it) with no data: theta_tau = theta_o = 0
            np.broadcast_to(eye / c.lam_H, (R, d, d)).copy(),
            np.zeros((R, d)),
            np.zeros((R, d)),
            np.ones(R, dtype=np.int64),
            np.zeros(R, dtype=np.int64),
            np.zeros((R, len(STATS_COLUMNS))),
            np.zeros((R, d, d)),
            np.zeros((R, d, d)),
            np.zeros((R, d)),
            np.zeros((R, spec.K)),
            np.broadcast_to(eye, (R, d, d)).copy(),
            np.ones((R, d)),
        )
        state[_STATS][:, 1] = 1.0
        params = (
            spec.link.code,
            T,
            float(c.lam_V),
            float(c.lam_H),
            float(c.lam_reg_o),
            float(c.lam_reg_tau),
            float(c.lam_min_V),
            float(c.thr),
            float(c.gamma),
            float(c.beta),
            math.sqrt(float(c.kappa)),
            float(c.S),
            float(c.R),
            float(c.sigma_V),
            float(c.sigma_H),
            float(c.w_max),
            int(c.count2_cutoff),
            float(c.rho_o_call),
            float(c.rho_tau_call),
            float(c.zeta_opt_o),
            float(c.zeta_opt_tau),
            int(self.max_iters),
            1e-6,
        )
        theta_t = state[_TH_T]
        return CuratorKernel(
            _select, _update, params, state, estimate=lambda: theta_t.copy(), allocates=False
        )

    # -- diagnostics -------------------------------------------------------------------------
    def diagnostics(self) -> dict[str, np.ndarray]:
        """Per-replication counts: exploration rounds ``|T_o|``, Criterion-II switches, rounds with the
        eigenvalue floor active, ``theta_o`` refits."""
        if self.preset == "authors_code":
            return self._authors.diagnostics()
        st = self._state()[_STATS]
        return {name: st[:, i].copy() for i, name in enumerate(STATS_COLUMNS)}

    def released(self) -> dict[str, np.ndarray]:
        """The statistics currently released to the next user: ``V``, ``H_t``, ``H_tau``, ``theta_o``, ``theta_tau``."""
        s = self._state()
        return {
            "V": s[_V].copy(),
            "H": s[_H].copy(),
            "H_tau": s[_HTAU].copy(),
            "theta_o": s[_TH_O].copy(),
            "theta_tau": s[_TH_T].copy(),
        }

    def _state(self) -> tuple[np.ndarray, ...]:
        if not isinstance(self.kernel, CuratorKernel):
            raise NotResetError(f"{self.name}: call reset(...) or simulate(...) first")
        return self.kernel.state
