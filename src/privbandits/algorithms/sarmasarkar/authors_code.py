"""The ``authors_code`` calibration of Private-GLM (JDP-GLM): the authors' public implementation.

Sarmasarkar (2026), Algorithm 2 ("Private-GLM"), as the authors' public code runs it
(github.com/Sahasrajit123/Shuffle_joint_dp_generalized_linear_contextual_bandits,
``glmbanditexp/algorithms/private_rs_glinucb.py``, ``utils/binary_tree.py``, ``utils/utils.py``, read
at commit d9c93e1).  This module re-implements that behaviour from its description; it does not
reuse the code.  It differs from the library's ``strict`` / ``paper`` JDP-GLM in:

* **one lambda for both trees**: ``lam = 2 log(4/delta) log(4T/zeta)^2 / (eps kappa*) +
  0.75 d log(4T/zeta) / R^2``;
* **tree noise**: one symmetrized Gaussian matrix ``(Z + Z^T)/2``, ``Z_ij ~ N(0, s^2)``, per node,
  reused by every query, ``s = C / sqrt(2 rho_node)``, ``rho_node = rho(eps/3, delta/3) / m``,
  ``m = ceil(log2 T) + 1`` and ``rho(eps, delta) = (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2``;
  ``C = 1`` for the V tree and ``C = 1/kappa*`` for the H tree; every query adds ``lam I`` and
  floors the eigenvalues at ``1e-12``;
* **warm-up (Criterion I)**: an arm with ``||x||^2_{V^{-1}} > 1/(0.01 kappa R^4 S^2 d)`` makes the
  round a warm-up round: the arm of largest ``||x||_{V^{-1}}`` is played, its V leaf is
  ``x x^T / (1 + ||x||^2_{V^{-1}})``, and ``theta_w`` is refit after each of the first
  ``max(1, int(d R^2 kappa gamma^2 log T / 20000))`` warm-up rounds (later warm-up points are
  dropped); warm-up points also join the data of ``theta_tau``;
* **switching (Criterion II)**, tested only on non-warm-up rounds: when
  ``lambda_max(H_tau^{-1/2} H_t H_tau^{-1/2}) > 1 + 5/(8 sqrt d) + 0.05`` and fewer than
  ``max(1, int(3 log2(lam_max/lam_min + T/(kappa*^2 lam_min d))))`` switches were made
  (``lam_max/min = lam +- 1.5 log(4/delta) log(4T/zeta)^2/(eps kappa*)``), ``H_tau <- H_t`` and
  ``theta_tau`` is refit on the non-warm-up data; no forced switch at round 1;
* **choice**: arms eliminated with ``theta_w`` and the radius ``gamma sqrt(kappa) ||x||_{V^{-1}}``,
  then ``argmax <x, (theta_w + theta_tau)/2> + beta ||x||_{H_tau^{-1}}``, ``gamma = R S sqrt(d
  log(T/zeta))``, ``beta = 4 sqrt(d log(T/zeta))``; the H leaf is ``mu'(<x, theta_w>) x x^T / e``;
* **optimiser**: DP-SGD with per-example clipping at 0.2, batch ``min(2048, n)`` without
  replacement (drop-last), step ``10/sqrt(t)``, ridge ``1e-5``, the average of the post-burn-in
  epoch iterates (burn-in 10 epochs, rescaled with the epochs), starting epochs 15 / 25 / 50 / 75 / 100
  by the per-call epsilon, then the code's utility-guided epoch search; the noise multiplier is the
  smallest that meets the per-call ``(eps0, delta0)`` under Renyi accounting of the Gaussian
  (orders 1.25 .. 512, the improved RDP conversion), ``(eps0, delta0)`` from ``(eps/3, delta/3)``
  split naively over the cutoff (``<= 10`` calls) or by advanced composition.

Remaining differences from the authors' code (named so a comparison can cite them): the code
calibrates the DP-SGD noise with amplification by subsampling without replacement when
``n > 2048`` (a smaller multiplier); here the multiplier is the one without amplification (more
noise on those calls).  The code's utility-guided epoch search ranks candidates whose scores are
equal in exact arithmetic at ``q = 1`` (ties broken by floating-point residue of a root search);
here the tie goes to the most epochs (the code's tie-break).  A switch before any data point
(impossible in the code's runs) keeps ``theta_tau``.

Privacy (our accountant, from the noise actually added).  zCDP: a tree node's symmetrized noise
has whitened distance ``||D||_F / s`` for a symmetric change ``D``, so each of the ``m`` nodes that
hold a leaf costs ``Delta^2 / (2 s^2)`` with ``Delta = sqrt 2`` (V, leaves PSD of norm <= 1) and
``sqrt 2 sup mu' / e`` (H); a DP-SGD call costs ``2 E / sigma^2`` (the noise on the summed clipped
gradients is ``sigma C`` while replacing one point moves that sum by ``2 C``, in at most one batch
per epoch, ``E`` epochs; no amplification is claimed) -- at most ``2 / sigma_1^2`` with ``sigma_1``
the one-step multiplier of the call's budget.  A warm-up point is in both optimiser families.  The
guarantee is the worst of a change inside the warm-up, outside it and a membership flip, converted
with Canonne-Kamath-Steinke.  Not covered by any noise, and so excluded from the statement (the
calibration warns): the round of a switch (tested only on non-warm-up rounds, a function of that
round's own contexts) and the data-dependent size ``n`` of each DP-SGD call.  The code's own nominal
``(eps, delta)`` overstates its privacy for the same reasons and for the factor 2 above.

References
----------
Sarmasarkar (2026), "Shuffle and Joint Differential Privacy for Generalized Linear Contextual
Bandits", Algorithm 2 and section 8.  Sawarni, Das, Barman & Sinha (2024) (RS-GLinCB).  Abadi et al.
(2016) (DP-SGD).  Mironov (2017) and Balle et al. (2020) (Renyi accounting and its conversion).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import brentq

from privbandits.algorithms.calibration import Calibration, Constants
from privbandits.algorithms.sarmasarkar.constants import resolve_kappas, worst_change
from privbandits.core.errors import ValidationError
from privbandits.core.spec import EnvSpec
from privbandits.privacy.accounting import ZCDP, to_guarantee
from privbandits.privacy.guarantee import NON_PRIVATE, PrivacyGuarantee

if TYPE_CHECKING:
    from privbandits.algorithms.kernel import CuratorKernel

__all__ = [
    "AUTHORS_BATCH",
    "AUTHORS_CLIP",
    "AUTHORS_LR0",
    "AuthorsCodeRun",
    "AuthorsConstants",
    "AuthorsGLMUCB",
    "AuthorsGLOC",
    "AuthorsPrivateGLM",
    "AuthorsRSGLinUCB",
    "BaselineConstants",
    "authors_accounting",
    "authors_calibration",
    "authors_constants",
    "authors_runner",
    "baseline_calibration",
    "clip_rows",
    "dp_sgd_plan",
    "gaussian_multiplier",
    "glm_ucb_runner",
    "gloc_runner",
    "per_step_budget",
    "rdp_epsilon",
    "rs_glinucb_runner",
    "start_epochs",
    "tree_sigma",
]

#: DP-SGD constants of the authors' code: per-example clip norm, step ``lr0/sqrt(t)``, batch cap,
#: ridge, burn-in epochs.
AUTHORS_CLIP = 0.2
AUTHORS_LR0 = 10.0
AUTHORS_BATCH = 2048
AUTHORS_RIDGE = 1e-5
AUTHORS_BURN_IN = 10


def tree_sigma(epsilon: float, delta: float, T: int, C: float) -> float:
    """Per-node noise ``C / sqrt(2 rho/m)``, ``rho = (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2``,
    ``m = ceil(log2 T) + 1`` (the code's binary tree)."""
    a = math.sqrt(math.log(1.0 / delta))
    rho = (math.sqrt(a * a + epsilon) - a) ** 2
    m = math.ceil(math.log2(T)) + 1
    return C / math.sqrt(2.0 * rho / m)


def per_step_budget(
    eps_total: float, delta_total: float, k: int, switch_k: int = 10
) -> tuple[float, float]:
    """Per-call ``(eps0, delta0)``: naive ``(eps/k, delta/k)`` for ``k <= switch_k``, else advanced
    composition ``sqrt(2 k log(2/delta)) e0 + k e0 (e^e0 - 1) = eps``, ``delta0 = delta/(2k)``."""
    if k <= switch_k:
        return eps_total / k, delta_total / k
    A = math.sqrt(2.0 * k * math.log(2.0 / delta_total))

    def f(e0: float) -> float:
        return A * e0 + k * e0 * math.expm1(e0) - eps_total

    hi = max(1.0, eps_total / A)
    while f(hi) < 0.0 and hi <= 50.0:
        hi *= 2.0
    return float(brentq(f, 0.0, hi, xtol=1e-12)), delta_total / (2.0 * k)


def start_epochs(eps0: float) -> int:
    """The code's starting DP-SGD epochs by the per-call epsilon."""
    for bound, epochs in ((0.1, 15), (0.3, 25), (1.0, 50), (2.0, 75)):
        if eps0 <= bound:
            return epochs
    return 100


def _orders(eps: float) -> np.ndarray:
    tail = [64.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0]
    if eps < 0.3:
        tail += [768.0, 1024.0]
    return np.unique(np.concatenate([[1.25, 1.5, 1.75], np.arange(2.0, 64.0), tail]))


def rdp_epsilon(z: float, steps: int, delta: float, orders: np.ndarray) -> float:
    """Epsilon of ``steps`` Gaussian steps of noise multiplier ``z`` (RDP ``steps a/(2 z^2)``),
    converted at ``delta`` by the improved conversion ``r + log(1 - 1/a) - log(delta a)/(a - 1)``."""
    r = steps * orders / (2.0 * z * z)
    eps = r + np.log1p(-1.0 / orders) - np.log(delta * orders) / (orders - 1.0)
    eps = np.where(delta**2 + np.expm1(-r) > 0.0, 0.0, eps)
    return float(max(0.0, eps.min()))


def gaussian_multiplier(eps0: float, delta0: float) -> float:
    """The one-step multiplier ``sigma_1`` meeting ``(eps0, delta0)``; ``k`` steps need ``sigma_1 sqrt(k)``."""
    orders = _orders(eps0)
    return float(brentq(lambda z: rdp_epsilon(z, 1, delta0, orders) - eps0, 1e-5, 4e7, xtol=1e-10))


def dp_sgd_plan(n: int, eps0: float, d: int, sigma1: float) -> tuple[int, int, int, float]:
    """``(epochs, burn_in, batch, multiplier)`` of one DP-SGD call on ``n`` points (the code's search).

    Starting epochs by ``eps0``; the candidates ``start * f`` for the factors the code picks by the
    noise scale ``sigma C / b``; the utility score ``steps / noise_scale^2`` ties at ``q = 1`` and the
    tie goes to the most epochs (the code's tie-break); the multiplier is the one without
    amplification, ``sigma_1 sqrt(steps)``.
    """
    E0 = start_epochs(eps0)
    b = min(AUTHORS_BATCH, n)
    spe = max(1, n // b)
    scale = sigma1 * math.sqrt(E0 * spe) * AUTHORS_CLIP / b
    min_adapt = max(2, math.ceil(math.log(d + 1)))
    factors: tuple[float, ...]
    if scale > 8.0:
        factors, lo = (0.1, 0.25, 0.5, 1.0, 1.5), min_adapt
    elif scale > 5.0:
        factors, lo = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5), min_adapt
    else:
        factors, lo = (0.5, 0.75, 1.0, 1.25, 1.5), max(5, min_adapt)
    E = max({max(lo, round(E0 * f)) for f in factors} | {E0})
    burn = AUTHORS_BURN_IN if E == E0 else max(1, round(AUTHORS_BURN_IN * E / E0))
    return E, burn, b, sigma1 * math.sqrt(E * spe)


@dataclass(frozen=True)
class AuthorsConstants:
    """Every constant of Private-GLM as the authors' code resolves it on one problem."""

    d: int
    T: int
    epsilon: float
    delta: float
    zeta: float
    kappa: float
    kappa_star: float
    R: float
    S: float
    lam: float
    lam_max: float
    lam_min: float
    gamma: float
    beta: float
    thr: float
    switch_factor: float
    count1_cutoff: int
    count2_cutoff: int
    tree_nodes: int
    sigma_V: float
    sigma_H: float
    eps_w: float
    delta_w: float
    eps_tau: float
    delta_tau: float
    sigma1_w: float
    sigma1_tau: float
    sup_dmu: float
    clip: float = AUTHORS_CLIP
    lr0: float = AUTHORS_LR0
    batch: int = AUTHORS_BATCH
    ridge: float = AUTHORS_RIDGE

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def authors_constants(
    *,
    d: int,
    T: int,
    epsilon: float,
    delta: float,
    zeta: float,
    kappa: float,
    kappa_star: float,
    R: float,
    S: float,
    sup_dmu: float,
) -> AuthorsConstants:
    """The code's constants (``private_rs_glinucb.py``) on a problem of dimension ``d``, horizon ``T``."""
    if T < 2:
        raise ValidationError("authors_code needs a horizon T >= 2")
    L4 = math.log(4.0 * T / zeta)
    A = math.log(4.0 / delta) * L4**2 / (epsilon * kappa_star)
    lam = 2.0 * A + 0.75 * d * L4 / R**2
    lam_max, lam_min = lam + 1.5 * A, lam - 1.5 * A
    gamma = R * S * math.sqrt(d * math.log(T / zeta))
    beta = 4.0 * math.sqrt(d * math.log(T / zeta))
    count1 = max(1, int(d * R**2 * kappa * gamma**2 * math.log(T) / 20000.0))
    count2 = max(1, int(3.0 * math.log2(lam_max / lam_min + T / (kappa_star**2 * lam_min * d))))
    eps_w, delta_w = per_step_budget(epsilon / 3.0, delta / 3.0, count1)
    eps_tau, delta_tau = per_step_budget(epsilon / 3.0, delta / 3.0, count2)
    return AuthorsConstants(
        d=d,
        T=T,
        epsilon=epsilon,
        delta=delta,
        zeta=zeta,
        kappa=kappa,
        kappa_star=kappa_star,
        R=R,
        S=S,
        lam=lam,
        lam_max=lam_max,
        lam_min=lam_min,
        gamma=gamma,
        beta=beta,
        thr=1.0 / (0.01 * kappa * R**4 * S**2 * d),
        switch_factor=1.0 + 5.0 / (8.0 * math.sqrt(d)) + 0.05,
        count1_cutoff=count1,
        count2_cutoff=count2,
        tree_nodes=math.ceil(math.log2(T)) + 1,
        sigma_V=tree_sigma(epsilon / 3.0, delta / 3.0, T, 1.0),
        sigma_H=tree_sigma(epsilon / 3.0, delta / 3.0, T, 1.0 / kappa_star),
        eps_w=eps_w,
        delta_w=delta_w,
        eps_tau=eps_tau,
        delta_tau=delta_tau,
        sigma1_w=gaussian_multiplier(eps_w, delta_w),
        sigma1_tau=gaussian_multiplier(eps_tau, delta_tau),
        sup_dmu=sup_dmu,
    )


def authors_accounting(c: AuthorsConstants) -> tuple[PrivacyGuarantee, dict[str, float]]:
    """Our accountant's ``(epsilon, delta)``-JDP statement for the noise the code's calibration adds.

    zCDP: V tree ``m (sqrt 2)^2 / (2 sigma_V^2)``, H tree ``m (sqrt 2 sup mu'/e)^2 / (2 sigma_H^2)``;
    a DP-SGD call ``2 / sigma_1^2`` (replace-one moves the summed clipped gradients by ``2 C`` against
    noise ``sigma C``; one batch per epoch; no amplification), ``count1`` calls for ``theta_w`` and
    ``count2`` for ``theta_tau``.  Worst of: inside the warm-up (V tree and both families: a warm-up
    point is also in ``theta_tau``'s data), outside (H tree, ``theta_tau``), a membership flip (each
    leaf moves by at most its norm: half the replace cost of each tree, both families).
    """
    m = c.tree_nodes
    h = c.sup_dmu / math.e
    rho_V = m * 2.0 / (2.0 * c.sigma_V**2)
    rho_H = float(m * 2.0 * h * h / (2.0 * c.sigma_H**2))
    rho_w = c.count1_cutoff * 2.0 / c.sigma1_w**2
    rho_tau = c.count2_cutoff * 2.0 / c.sigma1_tau**2
    cases = {
        "inside the warm-up": rho_V + rho_w + rho_tau,
        "outside the warm-up": rho_H + rho_tau,
        "membership flip": 0.5 * (rho_V + rho_H) + rho_w + rho_tau,
    }
    worst, rho = worst_change(cases)
    notes = (
        f"JDP-GLM (authors_code: the authors' public code), accounted from the noise added; zCDP: "
        f"V tree {rho_V:.6g}, H tree {rho_H:.6g}, theta_w family {rho_w:.6g} (<= {c.count1_cutoff} "
        f"DP-SGD calls), theta_tau family {rho_tau:.6g} (<= {c.count2_cutoff}); worst change: {worst}; "
        "not covered by noise and excluded: the round of a switch (tested only on non-warm-up rounds) "
        "and the data-dependent size of each DP-SGD call"
    )
    g = to_guarantee(
        ZCDP(rho), model="joint", unit="user", notes=notes, delta=c.delta, method="cks"
    )
    parts = {"rho_V": rho_V, "rho_H": rho_H, "rho_w": rho_w, "rho_tau": rho_tau, "rho_total": rho}
    return g, parts


def clip_rows(g: np.ndarray, clip: float) -> np.ndarray:
    """Each row (one example's gradient) scaled to l2 norm at most ``clip`` (DP-SGD's clipping)."""
    nrm = np.linalg.norm(g, axis=1)
    return g * np.minimum(1.0, clip / np.maximum(nrm, 1e-300))[:, None]


class _Tree:
    """Prefix sums of d x d leaves with one fixed symmetrized Gaussian matrix per dyadic node."""

    def __init__(self, d: int, sigma: float, lam: float, rng: np.random.Generator) -> None:
        self.d, self.sigma, self.lam, self.rng = d, sigma, lam, rng
        self.count = 0
        self.total = np.zeros((d, d))
        self.noise: dict[tuple[int, int], np.ndarray] = {}

    def _node(self, level: int, index: int) -> np.ndarray:
        key = (level, index)
        z = self.noise.get(key)
        if z is None:
            g = self.rng.normal(0.0, self.sigma, size=(self.d, self.d))
            z = self.noise[key] = 0.5 * (g + g.T)
        return z

    def insert(self, leaf: np.ndarray | None) -> np.ndarray:
        """Add a leaf (None = zero) and return the released prefix: sum + cover noise + lam I, floored."""
        self.count += 1
        if leaf is not None:
            self.total += leaf
        out = self.total.copy()
        c = self.count
        for level in range(c.bit_length() - 1, -1, -1):
            if c >> level & 1:
                out += self._node(level, c >> level)
        out += self.lam * np.eye(self.d)
        out = 0.5 * (out + out.T)
        vals, vecs = np.linalg.eigh(out)
        return (vecs * np.maximum(vals, 1e-12)) @ vecs.T


def _not_below(A: np.ndarray, B: np.ndarray, factor: float) -> bool:
    """Whether ``lambda_max(B^{-1/2} A B^{-1/2}) > factor + 1e-8`` (``A`` not below ``factor B``)."""
    scale = max(1.0, float(np.abs(A).sum(1).max()), float(np.abs(B).sum(1).max()))
    As, Bs = A / scale, B / scale
    As, Bs = 0.5 * (As + As.T), 0.5 * (Bs + Bs.T)
    d = A.shape[0]
    jit = 1e-12 * max(1.0, float(np.trace(Bs)) / d)
    try:
        L = np.linalg.cholesky(Bs + jit * np.eye(d))
    except np.linalg.LinAlgError:
        return True
    Y = np.linalg.solve(L, As + jit * np.eye(d))
    M = np.linalg.solve(L, Y.T).T
    return float(np.linalg.eigvalsh(0.5 * (M + M.T))[-1]) > factor + 1e-8


class _Replication:
    """The code's Private-GLM state for one replication."""

    def __init__(self, c: AuthorsConstants, mu: Any, dmu: Any, rng: np.random.Generator) -> None:
        d = c.d
        self.c, self.mu, self.dmu, self.rng = c, mu, dmu, rng
        self.tree_V = _Tree(d, c.sigma_V, c.lam, rng)
        self.tree_H = _Tree(d, c.sigma_H, c.lam, rng)
        self.V = c.lam * np.eye(d)
        self.H = c.lam * np.eye(d)
        self.H_tau = c.lam * np.eye(d)
        self.theta_w = np.zeros(d)
        self.theta_tau = np.zeros(d)
        self.Xw: list[np.ndarray] = []
        self.Yw: list[float] = []
        self.Xn: list[np.ndarray] = []
        self.Yn: list[float] = []
        self.n1 = self.n2 = 0
        self.warm = False
        self.stats = np.zeros(4)  # warm-up rounds, switches, theta_w refits, theta_tau refits

    def select(self, X: np.ndarray) -> int:
        c = self.c
        Vinv = np.linalg.inv(self.V)
        q = np.einsum("kd,de,ke->k", X, Vinv, X)
        over = q > c.thr
        self.warm = bool(over.any())
        if self.warm:
            a = int(np.argmax(np.where(over, q, -np.inf)))
            x = X[a]
            self.V = self.tree_V.insert(np.outer(x, x) / (1.0 + q[a]))
            self.H = self.tree_H.insert(None)
            self.stats[0] += 1
            return a
        self.V = self.tree_V.insert(None)
        Vinv = np.linalg.inv(self.V)
        if self.n2 < c.count2_cutoff and _not_below(self.H, self.H_tau, c.switch_factor):
            self.H_tau = self.H
            if self.Xn:
                self.theta_tau = self._fit(
                    np.array(self.Xn), np.array(self.Yn), c.eps_tau, c.sigma1_tau
                )
                self.stats[3] += 1
            self.n2 += 1
            self.stats[1] += 1
        Hinv = np.linalg.inv(self.H_tau)
        width = c.gamma * math.sqrt(c.kappa) * np.sqrt(np.einsum("kd,de,ke->k", X, Vinv, X))
        mid = X @ self.theta_w
        alive = mid + width >= (mid - width).max()
        centre = 0.5 * (self.theta_w + self.theta_tau)
        ucb = X @ centre + c.beta * np.sqrt(np.einsum("kd,de,ke->k", X, Hinv, X))
        return int(np.argmax(np.where(alive, ucb, -np.inf)))

    def update(self, x: np.ndarray, y: float) -> None:
        c = self.c
        if self.warm and self.n1 < c.count1_cutoff:
            self.Xw.append(x)
            self.Yw.append(y)
            self.Xn.append(x)
            self.Yn.append(y)
            self.n1 += 1
            self.theta_w = self._fit(np.array(self.Xw), np.array(self.Yw), c.eps_w, c.sigma1_w)
            self.stats[2] += 1
        elif not self.warm:
            self.Xn.append(x)
            self.Yn.append(y)
            w = float(self.dmu(np.array(x @ self.theta_w))) / math.e
            self.H = self.tree_H.insert(w * np.outer(x, x))

    def _fit(self, X: np.ndarray, Y: np.ndarray, eps0: float, sigma1: float) -> np.ndarray:
        """The code's DP-SGD from ``(theta_w + theta_tau)/2`` (post-burn-in epoch average)."""
        c, rng = self.c, self.rng
        n, d = X.shape
        E, burn, b, z = dp_sgd_plan(n, eps0, d, sigma1)
        theta = 0.5 * (self.theta_w + self.theta_tau)
        spe = max(1, n // b)
        idx = np.arange(n)
        avg, k, step = np.zeros(d), 0, 0
        for epoch in range(E):
            rng.shuffle(idx)
            for s in range(spe):
                step += 1
                B = idx[s * b : (s + 1) * b]
                Xb = X[B]
                g = clip_rows(Xb * (self.mu(Xb @ theta) - Y[B])[:, None], c.clip)
                gbar = g.mean(0) + 2.0 * c.ridge * theta + rng.normal(0.0, z * c.clip / b, size=d)
                theta = theta - c.lr0 / math.sqrt(step) * gbar
            if epoch >= burn:
                avg += theta
                k += 1
        return theta if k == 0 else avg / k


class AuthorsPrivateGLM:
    """Private-GLM as the authors' code runs it, for ``R`` replications (numpy; reference driver)."""

    def __init__(self, c: AuthorsConstants, spec: EnvSpec, R: int, rng: np.random.Generator):
        link = spec.link
        self.c, self.R = c, R
        self.reps = [_Replication(c, link.mu, link.dmu, rng) for _ in range(R)]

    def select(self, contexts: np.ndarray) -> np.ndarray:
        out = np.empty(self.R, dtype=np.int64)
        for r, rep in enumerate(self.reps):
            X = np.asarray(contexts[r], dtype=float)
            nrm = np.linalg.norm(X, axis=1, keepdims=True)
            out[r] = rep.select(X / np.maximum(nrm, 1.0))
        return out

    def update(self, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        for r, rep in enumerate(self.reps):
            x = np.asarray(contexts[r, int(actions[r])], dtype=float)
            x = x / max(1.0, float(np.linalg.norm(x)))
            rep.update(x, float(rewards[r]))

    def estimate(self) -> np.ndarray:
        return np.array([0.5 * (rep.theta_w + rep.theta_tau) for rep in self.reps])

    def diagnostics(self) -> dict[str, np.ndarray]:
        st = np.array([rep.stats for rep in self.reps])
        names = ("explore_rounds", "switches", "theta_o_refreshes", "theta_tau_refits")
        return {name: st[:, i].copy() for i, name in enumerate(names)}


def authors_calibration(alg: Any, spec: EnvSpec) -> Calibration:
    """JDP-GLM's ``authors_code`` calibration on ``spec``: the code's constants and our accountant's
    guarantee for the noise they add (``alg`` a :class:`~privbandits.algorithms.sarmasarkar.jdp_glm.JDPGLM`).

    ``kappa`` and ``kappa*`` default to ``1/min_{|z| <= S} mu'`` and ``1/sup mu'`` (the code reads the
    instance's values from the realized arms; on the Table 2 instances they agree to 2 %).
    """
    if alg.mode != "practical" or alg.split is not None:
        raise ValidationError(
            "preset='authors_code' fixes the mode and the split (leave both unset)"
        )
    S = spec.theta_bound if alg.S is None else alg.S
    kappa, kappa_star = resolve_kappas(spec, S, alg.kappa, alg.kappa_star)
    R = max(1.0, float(spec.reward_range[1]))
    c = authors_constants(
        d=spec.d,
        T=spec.horizon,
        epsilon=alg.epsilon,
        delta=alg.delta,
        zeta=alg.delta if alg.zeta is None else alg.zeta,
        kappa=kappa,
        kappa_star=kappa_star,
        R=R,
        S=S,
        sup_dmu=float(spec.link.dmu(np.array(0.0))),
    )
    g, parts = authors_accounting(c)
    resolved = c.as_dict()
    resolved.update(parts)
    return Calibration(g, resolved, preset="authors_code", requested=(alg.epsilon, alg.delta))


def authors_runner(alg: Any) -> AuthorsPrivateGLM:
    """The numpy run of the ``authors_code`` preset for ``alg`` after its calibration."""
    res = dict(alg.calibration.resolved)
    c = AuthorsConstants(**{k: res[k] for k in AuthorsConstants.__dataclass_fields__})
    return AuthorsPrivateGLM(c, alg.spec, alg.R, alg.streams.server)


# -- the baselines of the authors' code (Table 2 and Figure 1) ---------------------------------
def _argmax_first(v: np.ndarray) -> int:
    """``np.argmax``: the first maximizer (the code's choice among ties)."""
    return int(np.argmax(v))


class AuthorsGLOC:
    """GLOC (Jun et al. 2017) as the authors' code runs it (``glmbanditexp/algorithms/glm/gloc.py``).

    ``lambda = d``; the ONS step ``theta <- theta - V^{-1} g / k`` with ``k = 1/kappa`` is
    *normalized* onto the sphere of radius ``S`` (``theta = S u/||u||``); the index is
    ``mu(<theta, x>) + radius ||x||_{V^{-1}}`` on the ONS iterate, with ``radius^2 = 1 + (4/k) B +
    8 (L^2/k)^2 log(2 sqrt(1 + 2B/k + 4 (L^2/k)^4/delta^2)/delta)``, ``B`` starting at
    ``2 k S^2 lambda`` and growing by ``(1/(2k)) ||g||^2_{V^{-1}}``, ``L = sup mu'``.
    """

    def __init__(self, spec: EnvSpec, R: int, kappa: float, S: float, delta: float) -> None:
        d = spec.d
        self.link, self.R, self.S, self.delta = spec.link, R, S, delta
        self.k = 1.0 / kappa
        self.L = float(spec.link.dmu(np.array(0.0)))
        self.lam = float(d)
        self.Vinv = np.broadcast_to(np.eye(d) / self.lam, (R, d, d)).copy()
        self.theta = np.zeros((R, d))
        self.B = np.full(R, 2.0 * self.k * S**2 * self.lam)

    def radius(self, r: int) -> float:
        k, B, L2, dl = self.k, self.B[r], self.L**2, self.delta
        inner = 2.0 * math.sqrt(1.0 + 2.0 * B / k + 4.0 * (L2 / k) ** 4 / dl**2) / dl
        return math.sqrt(1.0 + 4.0 / k * B + 8.0 * (L2 / k) ** 2 * math.log(inner))

    def select(self, contexts: np.ndarray) -> np.ndarray:
        out = np.empty(self.R, dtype=np.int64)
        for r in range(self.R):
            X = contexts[r]
            w = np.sqrt(np.einsum("kd,de,ke->k", X, self.Vinv[r], X))
            out[r] = _argmax_first(self.link.mu(X @ self.theta[r]) + self.radius(r) * w)
        return out

    def update(self, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        for r in range(self.R):
            x = np.asarray(contexts[r, int(actions[r])], dtype=float)
            Vi = self.Vinv[r]
            Vx = Vi @ x
            Vi -= np.outer(Vx, Vx) / (1.0 + x @ Vx)
            g = (float(self.link.mu(np.array(x @ self.theta[r]))) - float(rewards[r])) * x
            self.B[r] += 0.5 / self.k * float(g @ Vi @ g)
            u = self.theta[r] - Vi @ g / self.k
            nu = float(np.linalg.norm(u))
            self.theta[r] = self.S * u / nu if nu > 0.0 else u

    def estimate(self) -> np.ndarray:
        return self.theta.copy()


class AuthorsGLMUCB:
    """GLM-UCB (Filippi et al. 2010) as the authors' code runs it (``glmbanditexp/algorithms/glm/glm_ucb.py``).

    ``lambda = d`` in ``V = lambda I + sum x x^T``; the estimate is the minimizer of the negative
    log-likelihood plus ``lambda ||theta||^2`` by L-BFGS with the code's gradient ``X^T (mu - y) +
    2 lambda theta`` for both links (warm-started, refit every round), started from a standard
    normal draw -- here the root of that gradient by damped Newton (the point L-BFGS stops at when it
    meets its gradient tolerance; for probit the gradient is not the objective's, as in the code); the index ``mu(<theta, x>) + c ||x||_{V^{-1}}`` with ``c = 2 L
    sqrt(3 + 2 log(1 + 2/lambda)) R kappa sqrt(2 d log(2 d T/delta))``, times ``sqrt(log t)`` for
    the probit link only, ``L = sup mu'``.
    """

    def __init__(
        self, spec: EnvSpec, R: int, kappa: float, delta: float, rng: np.random.Generator
    ) -> None:
        d, T = spec.d, spec.horizon
        self.link, self.R, self.d = spec.link, R, d
        self.lam = float(d)
        L = float(spec.link.dmu(np.array(0.0)))
        r_max = float(spec.reward_range[1] - spec.reward_range[0])
        const = math.sqrt(3.0 + 2.0 * math.log(1.0 + 2.0 / self.lam))
        self.c = (
            2.0 * L * const * r_max * kappa * math.sqrt(2.0 * d * math.log(2.0 * d * T / delta))
        )
        self.log_t = spec.link.name == "probit"
        self.Vinv = np.broadcast_to(np.eye(d) / self.lam, (R, d, d)).copy()
        self.theta = rng.normal(0.0, 1.0, size=(R, d))
        self.X = np.zeros((R, T, d))
        self.Y = np.zeros((R, T))
        self.n = 0

    def select(self, contexts: np.ndarray) -> np.ndarray:
        t = self.n + 1
        c = self.c * (math.sqrt(math.log(t)) if self.log_t else 1.0)
        out = np.empty(self.R, dtype=np.int64)
        for r in range(self.R):
            X = contexts[r]
            w = np.sqrt(np.einsum("kd,de,ke->k", X, self.Vinv[r], X))
            out[r] = _argmax_first(self.link.mu(X @ self.theta[r]) + c * w)
        return out

    def _nll(self, th: np.ndarray, X: np.ndarray, Y: np.ndarray) -> tuple[float, np.ndarray]:
        z = X @ th
        p = np.clip(self.link.mu(z), 1e-12, 1.0 - 1e-12)
        f = -float(np.sum(Y * np.log(p) + (1.0 - Y) * np.log(1.0 - p))) + self.lam * float(th @ th)
        # the code's "gradient" for both links: X^T (mu - y) + 2 lambda theta (the score of the
        # canonical link; for probit it is not the objective's gradient, as in the code)
        return f, X.T @ (p - Y) + 2.0 * self.lam * th

    def update(self, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        n = self.n
        for r in range(self.R):
            x = np.asarray(contexts[r, int(actions[r])], dtype=float)
            Vi = self.Vinv[r]
            Vx = Vi @ x
            Vi -= np.outer(Vx, Vx) / (1.0 + x @ Vx)
            self.X[r, n] = x
            self.Y[r, n] = float(rewards[r])
            self.theta[r] = self._score_root(self.X[r, : n + 1], self.Y[r, : n + 1], self.theta[r])
        self.n = n + 1

    def _score_root(self, X: np.ndarray, Y: np.ndarray, th: np.ndarray) -> np.ndarray:
        """The root of the code's gradient ``X^T (mu(X theta) - y) + 2 lambda theta`` (damped Newton,
        warm-started): the point the code's L-BFGS call stops at when it meets its gradient tolerance."""
        eye = 2.0 * self.lam * np.eye(self.d)
        for _ in range(50):
            z = X @ th
            g = X.T @ (self.link.mu(z) - Y) + 2.0 * self.lam * th
            if float(np.abs(g).max()) <= 1e-8:
                break
            Hm = (X * self.link.dmu(z)[:, None]).T @ X + eye
            step = np.linalg.solve(Hm, g)
            nrm = float(np.linalg.norm(step))
            th = th - (step if nrm <= 1.0 else step / nrm)
        return th

    def estimate(self) -> np.ndarray:
        return self.theta.copy()


class AuthorsCodeRun:
    """Mixin of a curator whose ``authors_code`` preset is a numpy run: calibrate, build_kernel,
    select, update and estimate go to that run under the preset and to the curator's own path
    otherwise.  Listed before ``Curator``.

    The curator implements ``_calibrate`` and ``_build_kernel`` (its own path) and names the
    preset's run ``_authors_run`` (a function of the algorithm; it becomes ``self._authors``, and
    ``build_kernel`` then returns no kernel) and, if not :func:`baseline_calibration`, its
    calibration ``_authors_calibration``.
    """

    preset: str
    _authors: Any

    def _authors_calibration(self, spec: EnvSpec) -> Calibration:
        return baseline_calibration(self, spec)

    def _authors_run(self) -> Any:
        raise NotImplementedError

    def _calibrate(self, spec: EnvSpec) -> Calibration:
        raise NotImplementedError

    def _build_kernel(self) -> CuratorKernel:
        raise NotImplementedError

    def calibrate(self, spec: EnvSpec) -> Calibration:
        """The ``authors_code`` calibration under that preset, else the curator's own."""
        if self.preset == "authors_code":
            return self._authors_calibration(spec)
        return self._calibrate(spec)

    def build_kernel(self) -> CuratorKernel | None:
        """The curator's compiled kernel, or none under ``authors_code`` (the reference driver
        runs the numpy run)."""
        if self.preset == "authors_code":
            self._authors = self._authors_run()
            return None
        return self._build_kernel()

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        if self.preset == "authors_code":
            return self._authors.select(contexts)  # type: ignore[no-any-return]
        return super().select(t, contexts)  # type: ignore[misc, no-any-return]

    def update(
        self, t: int, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        if self.preset == "authors_code":
            self._authors.update(contexts, actions, rewards)
            return
        super().update(t, contexts, actions, rewards)  # type: ignore[misc]

    def estimate(self) -> np.ndarray | None:
        if self.preset == "authors_code":
            return self._authors.estimate()  # type: ignore[no-any-return]
        return super().estimate()  # type: ignore[misc, no-any-return]


@dataclass(frozen=True)
class BaselineConstants(Constants):
    """The ``authors_code`` constants of the baselines GLOC, GLM-UCB and RS-GLinUCB (stored keys
    ``kappa``, ``S``, ``delta``, ``lam``, ``sup_dmu``)."""

    kappa: float
    S: float
    delta: float
    lam: float
    sup_dmu: float


def baseline_calibration(alg: Any, spec: EnvSpec) -> Calibration:
    """The ``authors_code`` calibration of the baselines GLOC, GLM-UCB and RS-GLinUCB on ``spec``.

    ``kappa = 1/min_{|z| <= C_B S} mu'`` (the code reads the instance's value from the realized arms;
    the two agree to 2 % on the Table 2 instances), ``lambda = d``, ``delta`` the algorithm's.  The
    code has the logistic and probit links; another link runs the same formulas with its ``mu``.
    """
    if spec.setting != "single":
        raise ValidationError("preset='authors_code' runs the single-parameter setting only")
    params = alg.get_params()
    S = spec.theta_bound if params.get("S") is None else float(params["S"])
    # GLOC's kappa is inf mu' (Jun et al.), RS-GLinUCB's 1/inf mu'
    given = params.get("kappa")
    if given is None:
        kappa = 1.0 / spec.link.kappa(spec.context_bound * S)
    else:
        kappa = float(given) if alg.name == "rs-glinucb" else 1.0 / float(given)
    c = BaselineConstants(
        kappa=kappa,
        S=float(S),
        delta=float(alg.delta),
        lam=float(spec.d),
        sup_dmu=float(spec.link.dmu(np.array(0.0))),
    )
    return Calibration(NON_PRIVATE, preset="authors_code", constants=c)


def gloc_runner(alg: Any) -> AuthorsGLOC:
    """The numpy run of GLOC's ``authors_code`` preset after its calibration."""
    c = alg.calibration.typed(BaselineConstants)
    return AuthorsGLOC(alg.spec, alg.R, c.kappa, c.S, c.delta)


def glm_ucb_runner(alg: Any) -> AuthorsGLMUCB:
    """The numpy run of GLM-UCB's ``authors_code`` preset after its calibration."""
    c = alg.calibration.typed(BaselineConstants)
    return AuthorsGLMUCB(alg.spec, alg.R, c.kappa, c.delta, alg.streams.server)


class AuthorsRSGLinUCB:
    """RS-GLinUCB (Sawarni et al. 2024) as the authors' code runs it (``algorithms/glm/rs_glinucb.py``).

    ``lambda = 0.5`` for ``V`` and ``H``; warm-up when ``||x||^2_{V^{-1}} > 1/(0.01 kappa R^4 S^2 d)``
    (the arm of largest norm, ``V += x x^T/(1 + ||x||^2_{V^{-1}})``, ``theta_w`` refit on the warm-up
    data from ``(theta_w + theta_tau)/2`` after every warm-up round, the point also joins
    ``theta_tau``'s data); otherwise a switch when ``log det H_t >= log 2 + log det H_tau`` (refit of
    ``theta_tau`` on the non-warm-up data), elimination with ``theta_w`` and the radius ``gamma
    sqrt(kappa) ||x||_{V^{-1}}``, the choice ``argmax <x, (theta_w + theta_tau)/2> + beta
    ||x||_{H_tau^{-1}}`` and ``H_t += mu'(<x, theta_w>) x x^T / e``; ``gamma = R S sqrt(d log(T/delta))``,
    ``beta = 4 sqrt(d log(T/delta))``.  The fits are the root of the code's gradient with ridge
    ``1e-5`` (:meth:`AuthorsGLMUCB._score_root`; the code calls L-BFGS on it).
    """

    def __init__(self, spec: EnvSpec, R: int, kappa: float, S: float, delta: float) -> None:
        d, T = spec.d, spec.horizon
        self.link, self.R, self.d, self.kappa = spec.link, R, d, kappa
        self.lam = 0.5
        Rr = 1.0
        self.gamma = Rr * S * math.sqrt(d * math.log(T / delta))
        self.beta = 4.0 * math.sqrt(d * math.log(T / delta))
        self.thr = 1.0 / (0.01 * kappa * Rr**4 * S**2 * d)
        eye = self.lam * np.eye(d)
        self.V = [eye.copy() for _ in range(R)]
        self.H = [eye.copy() for _ in range(R)]
        self.H_tau = [eye.copy() for _ in range(R)]
        self.theta_w = np.zeros((R, d))
        self.theta_tau = np.zeros((R, d))
        self.Xw: list[list[np.ndarray]] = [[] for _ in range(R)]
        self.Yw: list[list[float]] = [[] for _ in range(R)]
        self.Xn: list[list[np.ndarray]] = [[] for _ in range(R)]
        self.Yn: list[list[float]] = [[] for _ in range(R)]
        self.warm = np.zeros(R, dtype=bool)
        self.stats = np.zeros((R, 2))  # warm-up rounds, switches
        self.fit = AuthorsGLMUCB.__new__(AuthorsGLMUCB)
        self.fit.link, self.fit.d, self.fit.lam = spec.link, d, 1e-5

    def select(self, contexts: np.ndarray) -> np.ndarray:
        out = np.empty(self.R, dtype=np.int64)
        for r in range(self.R):
            X = np.asarray(contexts[r], dtype=float)
            q = np.einsum("kd,de,ke->k", X, np.linalg.inv(self.V[r]), X)
            over = q > self.thr
            self.warm[r] = bool(over.any())
            if self.warm[r]:
                a = int(np.argmax(np.where(over, q, -np.inf)))
                self.V[r] = self.V[r] + np.outer(X[a], X[a]) / (1.0 + q[a])
                self.stats[r, 0] += 1
                out[r] = a
                continue
            Vinv = np.linalg.inv(self.V[r])
            if (
                np.linalg.slogdet(self.H[r])[1]
                >= math.log(2.0) + np.linalg.slogdet(self.H_tau[r])[1]
            ):
                self.H_tau[r] = self.H[r].copy()
                self.stats[r, 1] += 1
                if self.Xn[r]:
                    self.theta_tau[r] = self.fit._score_root(
                        np.array(self.Xn[r]), np.array(self.Yn[r]), self.theta_tau[r]
                    )
            Hinv = np.linalg.inv(self.H_tau[r])
            width = (
                self.gamma * math.sqrt(self.kappa) * np.sqrt(np.einsum("kd,de,ke->k", X, Vinv, X))
            )
            mid = X @ self.theta_w[r]
            alive = mid + width >= (mid - width).max()
            centre = 0.5 * (self.theta_w[r] + self.theta_tau[r])
            ucb = X @ centre + self.beta * np.sqrt(np.einsum("kd,de,ke->k", X, Hinv, X))
            out[r] = int(np.argmax(np.where(alive, ucb, -np.inf)))
        return out

    def update(self, contexts: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        for r in range(self.R):
            x = np.asarray(contexts[r, int(actions[r])], dtype=float)
            y = float(rewards[r])
            self.Xn[r].append(x)
            self.Yn[r].append(y)
            if self.warm[r]:
                self.Xw[r].append(x)
                self.Yw[r].append(y)
                start = 0.5 * (self.theta_w[r] + self.theta_tau[r])
                self.theta_w[r] = self.fit._score_root(
                    np.array(self.Xw[r]), np.array(self.Yw[r]), start
                )
            else:
                w = float(self.link.dmu(np.array(x @ self.theta_w[r]))) / math.e
                self.H[r] = self.H[r] + w * np.outer(x, x)

    def estimate(self) -> np.ndarray:
        return 0.5 * (self.theta_w + self.theta_tau)

    def diagnostics(self) -> dict[str, np.ndarray]:
        return {"explore_rounds": self.stats[:, 0].copy(), "switches": self.stats[:, 1].copy()}


def rs_glinucb_runner(alg: Any) -> AuthorsRSGLinUCB:
    """The numpy run of RS-GLinUCB's ``authors_code`` preset after its calibration."""
    c = alg.calibration.typed(BaselineConstants)
    return AuthorsRSGLinUCB(alg.spec, alg.R, c.kappa, c.S, c.delta)
