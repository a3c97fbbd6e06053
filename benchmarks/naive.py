"""Straightforward per-replication, per-round numpy loops of the per-round algorithms.

This is the baseline of the issue-8 target ">= 100x a straightforward numpy loop of the same
algorithm": each algorithm is written the way public research code is written (the authors'
repositories of Han et al. 2021 and Zheng et al. 2020 are of this kind) -- one replication at a
time, a Python ``for t in range(T)`` loop, a handful of numpy calls per round, ``np.linalg.inv`` /
``np.linalg.solve`` of the ``d x d`` matrices every round, noise drawn with numpy every round.
No library code runs inside the loops.

The loops compute the *same algorithm with the same constants* as the library: the constants
(noise scales, clipping norms, radii, step sizes, regularizer schedules) are read from the
library algorithm's ``calibrate(spec).resolved`` by :func:`library_constants`, so both do the same
work.  The environment is the benchmark's: contexts i.i.d. uniform on the unit sphere (``K``
arms in ``R^d`` each round), ``theta*`` uniform on the unit sphere, identity link, Gaussian reward
noise of standard deviation 0.1.  The random streams differ from the library's (a naive loop
draws round by round with its own generator), so trajectories agree in law, not path by path;
:func:`run_naive` returns the final regret of each replication for that comparison.

Usage (a quick look; the benchmark is ``bench_algorithms.py``)::

    python benchmarks/naive.py --algorithm ldp-sgd --d 2 --K 10 --horizon 2000 --replications 2

References
----------
Abbasi-Yadkori, Pal & Szepesvari (2011), Algorithm 1 (OFUL).  Han, Liang, Wang & Zhang (2021),
Algorithm 1 with the OLS pair (eq. 3.3-3.4) and the SGD pair (eq. 3.5-3.6, Lemma 2.2).  Zheng,
Cai, Huang, Li & Wang (2020), Algorithms 5 (LDP-UCB) and 3 (LDP-GLOC).  Jun, Bhargava, Nowak &
Willett (2017), Algorithm 1 (GLOC with ONS-GLM).  Specs: /work/shared/specs/han2021-ldp-glb.md
sections 2.4-3.4, zheng2020-ldp-bandits.md sections 4.3-4.4.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["NAIVE", "NOISE_SCALE", "library_constants", "run_naive"]

#: Standard deviation of the Gaussian reward noise of the benchmark environment.
NOISE_SCALE = 0.1

Consts = dict[str, Any]
Loop = Callable[[np.random.Generator, int, int, int, Consts], float]


# -- the environment, drawn round by round -------------------------------------------------------


def _theta_star(rng: np.random.Generator, d: int) -> np.ndarray:
    th = rng.standard_normal(d)
    return th / np.linalg.norm(th)


def _contexts(rng: np.random.Generator, K: int, d: int) -> np.ndarray:
    X = rng.standard_normal((K, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _pull(rng: np.random.Generator, means: np.ndarray, a: int) -> tuple[float, float]:
    """(reward, pseudo-regret) of arm ``a``."""
    return means[a] + NOISE_SCALE * rng.standard_normal(), means.max() - means[a]


def _sym_gauss(rng: np.random.Generator, d: int, s: float) -> np.ndarray:
    """Symmetric Gaussian matrix: i.i.d. N(0, s^2) on and above the diagonal, mirrored (the
    official code's ``triu(B); B += B.T - diag(diag(B))``)."""
    W = np.triu(rng.normal(0.0, s, (d, d)))
    return W + W.T - np.diag(np.diag(W))


def _clip(v: np.ndarray, bound: float) -> np.ndarray:
    n = np.linalg.norm(v)
    return v * (bound / n) if n > bound else v


def _argmax(scores: np.ndarray) -> int:
    """``np.argmax`` (first index on ties) as research code writes it.  Ties occur only when the
    scores are all equal (a zero estimate); the arms' contexts are i.i.d., so the first index is
    as good as a uniformly random one in law (the library breaks ties at random)."""
    return int(np.argmax(scores))


# -- the algorithms --------------------------------------------------------------------------------


def uniform(rng: np.random.Generator, T: int, d: int, K: int, c: Consts) -> float:
    """Uniform random arm every round."""
    theta = _theta_star(rng, d)
    regret = 0.0
    for _ in range(T):
        means = _contexts(rng, K, d) @ theta
        a = int(rng.integers(K))
        _, reg = _pull(rng, means, a)
        regret += reg
    return regret


def linucb(rng: np.random.Generator, T: int, d: int, K: int, c: Consts) -> float:
    """OFUL (Abbasi-Yadkori et al. 2011, Algorithm 1), ``V^{-1}`` by ``np.linalg.inv`` each
    round."""
    theta = _theta_star(rng, d)
    lam, delta, alpha, sigma, S = c["lam"], c["delta"], c["alpha"], c["sigma"], c["S"]
    V = lam * np.eye(d)
    b = np.zeros(d)
    logdet = 0.0  # log det V_t - log det (lam I)
    regret = 0.0
    for _ in range(T):
        X = _contexts(rng, K, d)
        V_inv = np.linalg.inv(V)
        theta_hat = V_inv @ b
        beta = sigma * np.sqrt(2.0 * np.log(1.0 / delta) + logdet) + np.sqrt(lam) * S
        width = np.sqrt(np.einsum("kd,de,ke->k", X, V_inv, X))
        a = _argmax(X @ theta_hat + alpha * beta * width)
        y, reg = _pull(rng, X @ theta, a)
        regret += reg
        x = X[a]
        logdet += np.log1p(x @ V_inv @ x)
        V += np.outer(x, x)
        b += y * x
    return regret


def greedy_ols(rng: np.random.Generator, T: int, d: int, K: int, c: Consts) -> float:
    """Greedy ridge regression: ``theta = solve(sum x x^T + lam I, sum r x)`` every round."""
    theta = _theta_star(rng, d)
    lam = c["lam"]
    S_M = np.zeros((d, d))
    S_u = np.zeros(d)
    theta_hat = np.zeros(d)
    regret = 0.0
    for _ in range(T):
        X = _contexts(rng, K, d)
        a = _argmax(X @ theta_hat)
        y, reg = _pull(rng, X @ theta, a)
        regret += reg
        x = X[a]
        S_M += np.outer(x, x)
        S_u += y * x
        theta_hat = np.linalg.solve(S_M + lam * np.eye(d), S_u)
    return regret


def greedy_sgd(rng: np.random.Generator, T: int, d: int, K: int, c: Consts) -> float:
    """Greedy online SGD on the GLM loss: ``theta <- theta - eta0/(n + t0) (x^T theta - r) x``."""
    theta = _theta_star(rng, d)
    eta0, t0 = c["eta0"], c["t0"]
    theta_hat = np.zeros(d)
    regret = 0.0
    for t in range(T):
        X = _contexts(rng, K, d)
        a = _argmax(X @ theta_hat)
        y, reg = _pull(rng, X @ theta, a)
        regret += reg
        x = X[a]
        theta_hat = theta_hat - eta0 / (t + 1 + t0) * (x @ theta_hat - y) * x
    return regret


def _ball_projection(A: np.ndarray, theta: np.ndarray, radius: float) -> np.ndarray:
    """``argmin_{||w|| <= radius} (w - theta)^T A (w - theta)``: eigendecomposition of ``A`` and
    Newton's method on the secular equation (as the library's ONS projection)."""
    if np.linalg.norm(theta) <= radius:
        return theta
    lam, Q = np.linalg.eigh(A)
    cvec = lam * (Q.T @ theta)
    nu = 0.0
    for _ in range(100):
        w = cvec / (lam + nu)
        nw = np.linalg.norm(w)
        if abs(nw - radius) <= 1e-12 * radius:
            break
        dnw = -np.sum(w * w / (lam + nu)) / nw
        nu = max(nu - (1.0 / radius - 1.0 / nw) * nw * nw / dnw, 0.0)
    w = cvec / (lam + nu)
    return Q @ (w * (radius / np.linalg.norm(w)))


def gloc(rng: np.random.Generator, T: int, d: int, K: int, c: Consts) -> float:
    """GLOC with ONS-GLM (Jun et al. 2017, Algorithm 1, Theorems 1 and 3), identity link."""
    theta = _theta_star(rng, d)
    lam, delta, eps, alpha = c["lam"], c["delta"], c["ons_eps"], c["alpha"]
    kappa, Rn, S = c["kappa"], c["sigma"], c["S"]
    V = lam * np.eye(d)
    xz = np.zeros(d)
    z_sq = 0.0
    A = eps * np.eye(d)
    theta_ons = np.zeros(d)
    B = 2.0 * kappa * S * S * eps
    regret = 0.0
    for _ in range(T):
        X = _contexts(rng, K, d)
        V_inv = np.linalg.inv(V)
        theta_hat = V_inv @ xz
        inner = 1.0 + 2.0 * B / kappa + 4.0 * Rn**4 / (kappa**4 * delta**2)
        alpha_B = (
            1.0 + 4.0 * B / kappa + 8.0 * Rn**2 / kappa**2 * np.log(2.0 / delta * np.sqrt(inner))
        )
        beta = alpha_B + lam * S * S - (z_sq - theta_hat @ xz)
        width = np.sqrt(np.maximum(np.einsum("kd,de,ke->k", X, V_inv, X), 0.0))
        a = _argmax(X @ theta_hat + alpha * np.sqrt(max(beta, 0.0)) * width)
        y, reg = _pull(rng, X @ theta, a)
        regret += reg
        x = X[a]
        z = x @ theta_ons
        g = z - y  # mu(z) - y, identity link
        A += np.outer(x, x)
        A_inv = np.linalg.inv(A)
        B += g * g * (x @ A_inv @ x) / (2.0 * kappa)
        theta_ons = _ball_projection(A, theta_ons - (g / kappa) * (A_inv @ x), S)
        V += np.outer(x, x)
        xz += z * x
        z_sq += z * z
    return regret


def _l2_ball(
    rng: np.random.Generator, g: np.ndarray, eps: float, R: float, radius: float
) -> np.ndarray:
    """The l2-ball mechanism Psi_{eps,R} (Duchi et al. 2018; spec han2021 section 2.5), exact
    sampler: clip, flip with probability 1/2 - ||g||/(2R), pick the hemisphere with probability
    e^eps/(1+e^eps), uniform direction on it."""
    d = g.shape[0]
    n = np.linalg.norm(g)
    if n > R:
        g, n = g * (R / n), R
    U = rng.standard_normal(d)
    U /= np.linalg.norm(U)
    if n < 1e-300:
        return radius * U
    v = g / n if rng.random() < 0.5 + n / (2.0 * R) else -g / n
    same_side = rng.random() < np.exp(eps) / (1.0 + np.exp(eps))
    if (U @ v > 0) != same_side:
        U = -U
    return radius * U


def ldp_sgd(rng: np.random.Generator, T: int, d: int, K: int, c: Consts) -> float:
    """Han et al. (2021) Algorithm 1 with the SGD pair: greedy on the public ``theta``; the user
    sends ``Psi_{eps,R}(clip_R((x^T theta - r) x))``; ``theta <- theta - eta0/(n + t0) Z``."""
    theta = _theta_star(rng, d)
    eps, R, radius, eta0, t0 = c["epsilon"], c["grad_bound"], c["radius"], c["eta0"], c["t0"]
    C_B, lo, hi = c["context_bound"], c["reward_lo"], c["reward_hi"]
    theta_hat = np.zeros(d)
    regret = 0.0
    for t in range(T):
        X = _contexts(rng, K, d)
        a = _argmax(X @ theta_hat)
        y, reg = _pull(rng, X @ theta, a)
        regret += reg
        x = _clip(X[a], C_B)
        y = min(max(y, lo), hi)
        g = _clip((x @ theta_hat - y) * x, R)
        Z = _l2_ball(rng, g, eps, R, radius)
        theta_hat = theta_hat - eta0 / (t + 1 + t0) * Z
    return regret


def ldp_ols(rng: np.random.Generator, T: int, d: int, K: int, c: Consts) -> float:
    """Han et al. (2021) Algorithm 1 with the OLS pair: the user sends ``(x x^T + W, r x + xi)``;
    the server solves ``(S_M + s_t I) theta = S_u`` every round (``s_t = c_shift sqrt(t +
    offset)``)."""
    theta = _theta_star(rng, d)
    s_W, s_u, c_shift, offset = c["s_W"], c["s_u"], c["c_shift"], c["offset"]
    C_B, lo, hi = c["context_bound"], c["reward_lo"], c["reward_hi"]
    S_M = np.zeros((d, d))
    S_u = np.zeros(d)
    theta_hat = np.zeros(d)
    regret = 0.0
    for t in range(T):
        X = _contexts(rng, K, d)
        a = _argmax(X @ theta_hat)
        y, reg = _pull(rng, X @ theta, a)
        regret += reg
        x = _clip(X[a], C_B)
        y = min(max(y, lo), hi)
        S_M += np.outer(x, x) + _sym_gauss(rng, d, s_W)
        S_u += y * x + rng.normal(0.0, s_u, d)
        A = S_M + c_shift * math.sqrt(t + 1 + offset) * np.eye(d)
        try:
            theta_hat = np.linalg.solve(A, S_u)
        except np.linalg.LinAlgError:
            theta_hat = np.linalg.lstsq(A, S_u, rcond=None)[0]
    return regret


def _noisy_ridge_inverse(V: np.ndarray, c_t: float, ups: float) -> np.ndarray:
    """``(V + c_t I)^{-1}``; shifted by ``|lambda_min| + Upsilon`` when the Cholesky factorization
    fails (not positive definite, spec zheng2020 section 4.3.2)."""
    A = V + c_t * np.eye(V.shape[0])
    try:
        np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        A = A + (abs(np.linalg.eigvalsh(A)[0]) + ups) * np.eye(V.shape[0])
    return np.linalg.inv(A)


def ldp_ucb(rng: np.random.Generator, T: int, d: int, K: int, c: Consts) -> float:
    """Zheng et al. (2020) Algorithm 5: LinUCB on the sums of ``(x x^T + B, y x + xi)``,
    regularized once by ``c_t = c_factor Upsilon_t``; ``beta_t`` of spec section 4.3.1."""
    theta = _theta_star(rng, d)
    Ups, c_t, beta_t = c["upsilon"], c["c_t"], c["beta_t"]
    s_V, s_u = c["sigma_V"], c["sigma_u"]
    C_B, lo, hi = c["context_bound"], c["reward_lo"], c["reward_hi"]
    V = np.zeros((d, d))
    u = np.zeros(d)
    M = _noisy_ridge_inverse(V, c["c_first"], Ups(1))
    theta_tilde = np.zeros(d)
    beta = beta_t(1)
    regret = 0.0
    for t in range(1, T + 1):
        X = _contexts(rng, K, d)
        width = np.sqrt(np.maximum(np.einsum("kd,de,ke->k", X, M, X), 0.0))
        a = _argmax(X @ theta_tilde + beta * width)
        y, reg = _pull(rng, X @ theta, a)
        regret += reg
        x = _clip(X[a], C_B)
        y = min(max(y, lo), hi)
        V += np.outer(x, x) + _sym_gauss(rng, d, s_V)
        u += y * x + rng.normal(0.0, s_u, d)
        M = _noisy_ridge_inverse(V, c_t(t), Ups(t))
        theta_tilde = M @ u
        beta = beta_t(t)
    return regret


def ldp_gloc(rng: np.random.Generator, T: int, d: int, K: int, c: Consts) -> float:
    """Zheng et al. (2020) Algorithm 3: the user sends ``(x x^T + B, z x + xi, clip_C(grad) +
    r)`` with ``z = x^T theta_hat`` (clipped to the declared bound); the server regresses ``z``
    on ``x`` (noisy ridge, as LDP-UCB) and takes a projected OGD step
    ``theta_hat <- Proj_W(theta_hat - zeta (grad + r))``."""
    theta = _theta_star(rng, d)
    Ups, c_t, beta_t = c["upsilon"], c["c_t"], c["beta_t"]
    s_V, s_u, s_g, zeta, W = c["sigma_V"], c["sigma_u"], c["sigma_g"], c["zeta"], c["W"]
    C, z_bound = c["grad_clip"], c["z_bound"]
    C_B, lo, hi = c["context_bound"], c["reward_lo"], c["reward_hi"]
    V = np.zeros((d, d))
    u = np.zeros(d)
    M = _noisy_ridge_inverse(V, c["c_first"], Ups(1))
    theta_tilde = np.zeros(d)
    theta_hat = np.zeros(d)
    beta = beta_t(1)
    regret = 0.0
    for t in range(1, T + 1):
        X = _contexts(rng, K, d)
        width = np.sqrt(np.maximum(np.einsum("kd,de,ke->k", X, M, X), 0.0))
        a = _argmax(X @ theta_tilde + beta * width)
        y, reg = _pull(rng, X @ theta, a)
        regret += reg
        x = _clip(X[a], C_B)
        y = min(max(y, lo), hi)
        z = min(max(x @ theta_hat, -z_bound), z_bound)  # the relabel x^T theta_hat
        grad = _clip((z - y) * x, C)  # (mu(z) - y) x, identity link
        V += np.outer(x, x) + _sym_gauss(rng, d, s_V)
        u += z * x + rng.normal(0.0, s_u, d)
        g_noisy = grad + rng.normal(0.0, s_g, d)
        M = _noisy_ridge_inverse(V, c_t(t), Ups(t))
        theta_tilde = M @ u
        theta_hat = _clip(theta_hat - zeta * g_noisy, W)
        beta = beta_t(t)
    return regret


#: Naive loop of each algorithm, by registry name.
NAIVE: dict[str, Loop] = {
    "uniform": uniform,
    "linucb": linucb,
    "greedy-ols": greedy_ols,
    "greedy-sgd": greedy_sgd,
    "gloc": gloc,
    "ldp-sgd": ldp_sgd,
    "ldp-ols": ldp_ols,
    "ldp-ucb": ldp_ucb,
    "ldp-gloc": ldp_gloc,
}


# -- constants from the library's calibration ----------------------------------------------------


def _spec(d: int, K: int, T: int) -> Any:
    import privbandits as pb

    env = pb.SyntheticEnv(d=d, K=K, contexts="sphere", noise="gaussian", noise_scale=NOISE_SCALE)
    return env.spec(T)


def library_constants(
    name: str, d: int, K: int, T: int, params: dict[str, Any] | None = None
) -> Consts:
    """The naive loop's constants, read from the library algorithm's calibration on the benchmark
    problem (so the naive loop and the library do the same work).

    Raises ``KeyError`` when the library's resolved constants do not name what the loop needs
    (a library change the loop has to follow).
    """
    import privbandits as pb

    spec = _spec(d, K, T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg = pb.make(name, **(params or {}))
        cal = alg.calibrate(spec)
    res, p = dict(cal.resolved), alg.get_params()
    base: Consts = {
        "context_bound": spec.context_bound,
        "reward_lo": spec.reward_range[0],
        "reward_hi": spec.reward_range[1],
    }
    return base | _CONSTANTS[name](p, res, spec)


def _require(name: str, res: Consts, **expected: Any) -> None:
    """The naive loop implements the default variant only: check the resolved switches."""
    bad = {k: (res.get(k), v) for k, v in expected.items() if res.get(k) != v}
    if bad:
        raise KeyError(f"{name}: the naive loop implements {expected}, the library resolved {bad}")


def _c_uniform(p: Consts, res: Consts, spec: Any) -> Consts:
    return {}


def _c_linucb(p: Consts, res: Consts, spec: Any) -> Consts:
    return {
        "lam": p["lam"],
        "delta": p["delta"],
        "alpha": p["alpha"],
        "sigma": res["sigma"],
        "S": res["S"],
    }


def _c_greedy_ols(p: Consts, res: Consts, spec: Any) -> Consts:
    return {"lam": p["lam"]}


def _c_greedy_sgd(p: Consts, res: Consts, spec: Any) -> Consts:
    _require("greedy-sgd", p, step_schedule="inv_t", init="zero", ridge=0.0, project_radius=None)
    return {"eta0": p["eta0"], "t0": p["t0"]}


def _c_gloc(p: Consts, res: Consts, spec: Any) -> Consts:
    return {
        "lam": p["lam"],
        "delta": p["delta"],
        "ons_eps": p["ons_eps"],
        "alpha": p["alpha"],
        "kappa": res["kappa"],
        "sigma": res["sigma"],
        "S": res["S"],
    }


def _c_ldp_sgd(p: Consts, res: Consts, spec: Any) -> Consts:
    from privbandits.privacy.mechanisms import l2_ball_radius

    _require("ldp-sgd", res, step_schedule="inv_t", init="zero", ridge=0.0, project_radius=None)
    eps, R = res["epsilon_slot"], res["grad_bound"]
    return {
        "epsilon": eps,
        "grad_bound": R,
        "radius": l2_ball_radius(eps, spec.d, R),
        "eta0": res["eta0"],
        "t0": res["t0"],
    }


def _c_ldp_ols(p: Consts, res: Consts, spec: Any) -> Consts:
    return {
        "s_W": res["s_W"],
        "s_u": res["s_u"],
        "c_shift": res["c_shift"],
        "offset": res["shift_offset"],
    }


def _zheng(p: Consts, res: Consts) -> Consts:
    """The noisy-ridge schedules of LDP-UCB / LDP-GLOC (spec zheng2020 sections 4.3.1, 4.4.2):
    ``Upsilon_s = sigma sqrt(s) (4 sqrt(D) + 2 ln(2T/alpha))``, ``c_s = c_factor Upsilon_s``."""
    _require("ldp-ucb/ldp-gloc", res, mechanism="gaussian")
    sigma, D, T, alpha, c_factor = res["sigma"], res["D"], res["T"], p["alpha"], res["c_factor"]
    log_term = 4.0 * math.sqrt(D) + 2.0 * math.log(2.0 * T / alpha)

    def ups(s: int) -> float:
        return sigma * math.sqrt(s) * log_term

    def c_t(s: int) -> float:
        return c_factor * ups(s)

    return {
        "upsilon": ups,
        "c_t": c_t,
        "c_first": c_t(1),
        "sigma_V": res["scale_V"],
        "sigma_u": res["scale_u"],
        "context_bound": res["context_bound"],
        "reward_lo": res["reward_lo"],
        "reward_hi": res["reward_hi"],
    }


def _c_ldp_ucb(p: Consts, res: Consts, spec: Any) -> Consts:
    _require(
        "ldp-ucb",
        res,
        V0=0.0,
        c_first=None,
        bonus="sqrt",
        beta_index="previous",
        beta_formula="paper",
    )
    out = _zheng(p, res)
    sigma, D, lnT, kappa, ups = (
        res["sigma"],
        res["D"],
        math.log(res["T"]),
        res["beta_scale"],
        out["upsilon"],
    )

    def beta_t(s: int) -> float:
        U = ups(s)
        return kappa * (
            2.0 * sigma * math.sqrt(D * lnT)
            + (math.sqrt(3.0 * U) + sigma * math.sqrt(D * s / U)) * D * lnT
        )

    return out | {"beta_t": beta_t}


def _c_ldp_gloc(p: Consts, res: Consts, spec: Any) -> Consts:
    _require("ldp-gloc", res, beta_formula="order", project=True, init="zero")
    out = _zheng(p, res)
    D, kappa, sigma_g, mu = res["D"], res["beta_scale"], res["grad_sigma"], res["link_min_slope"]

    def beta_t(s: int) -> float:
        return kappa * math.sqrt(sigma_g / mu * math.sqrt(D * s))

    return out | {
        "beta_t": beta_t,
        "sigma_g": res["scale_g"],
        "grad_clip": res["grad_clip"],
        "z_bound": res["z_bound"],
        "zeta": res["zeta"],
        "W": res["theta_radius"],
    }


_CONSTANTS: dict[str, Callable[[Consts, Consts, Any], Consts]] = {
    "uniform": _c_uniform,
    "linucb": _c_linucb,
    "greedy-ols": _c_greedy_ols,
    "greedy-sgd": _c_greedy_sgd,
    "gloc": _c_gloc,
    "ldp-sgd": _c_ldp_sgd,
    "ldp-ols": _c_ldp_ols,
    "ldp-ucb": _c_ldp_ucb,
    "ldp-gloc": _c_ldp_gloc,
}


def run_naive(
    name: str,
    d: int,
    K: int,
    T: int,
    R: int,
    seed: int = 0,
    consts: Consts | None = None,
    params: dict[str, Any] | None = None,
) -> tuple[np.ndarray, float, float]:
    """Run the naive loop of ``name`` for ``R`` replications, one after the other.

    Returns
    -------
    regret : ndarray of shape (R,)
        Final cumulative pseudo-regret of each replication.
    wall, cpu : float
        Wall-clock and CPU seconds of the loops (constants are resolved before the clocks start).
    """
    c = library_constants(name, d, K, T, params) if consts is None else consts
    loop = NAIVE[name]
    out = np.empty(R)
    w0, c0 = time.perf_counter(), time.process_time()
    for r in range(R):
        out[r] = loop(np.random.default_rng([seed, r]), T, d, K, c)
    return out, time.perf_counter() - w0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algorithm", default="linucb", choices=sorted(NAIVE))
    ap.add_argument("--d", type=int, default=2)
    ap.add_argument("--K", type=int, default=10)
    ap.add_argument("--horizon", type=int, default=2000)
    ap.add_argument("--replications", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    reg, sec, _ = run_naive(a.algorithm, a.d, a.K, a.horizon, a.replications, a.seed)
    rr = a.horizon * a.replications
    print(
        f"{a.algorithm}: {rr / sec:,.0f} replication-rounds/s ({sec:.2f} s); final regret "
        f"{reg.mean():.2f} +- {reg.std(ddof=1) / np.sqrt(reg.size) if reg.size > 1 else 0.0:.2f}"
    )


if __name__ == "__main__":
    main()
