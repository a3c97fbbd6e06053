"""LDP-GLOC: locally private GLOC for generalized linear bandits (Zheng et al. 2020, Algorithm 3).

Round ``t`` (Zheng et al. 2020, Algorithm 3, with the corrections Zheng20-2, -6 and -7)::

    server -> user t : theta_tilde_{t-1}, M = (V_{t-1} + c_{t-1} I)^{-1}, beta_{t-1}, theta_hat_t
    user t           : x_t = argmax_x <theta_tilde, x> + beta ||x||_M
                       z_t = x_t^T theta_hat_t                          (relabel, |z_t| <= C_B S_W)
                       grad = (g(x_t^T theta_hat_t) - y_t) x_t          (clipped to norm C, A7)
                       send (x_t x_t^T + B_t,  z_t x_t + xi_t,  grad + r_t)
    server           : V_t += x_t x_t^T + B_t;  u_t += z_t x_t + xi_t
                       theta_tilde_t = (V_t + c_t I)^{-1} u_t
                       theta_hat_{t+1} = Proj_W(theta_hat_t - zeta (grad + r_t))   # noisy OGD

The relabelling ``z_t = x_t^T theta_hat_t`` and the ridge regression of ``z`` on ``x`` are the GLOC
conversion of Jun et al. (2017) (:mod:`privbandits.algorithms.glm.gloc` is the non-private original,
and shares the optimistic choice and the relabelling, :func:`~privbandits.algorithms.glm.gloc.relabel`);
the online learner differs: non-private GLOC runs Online Newton Step, LDP-GLOC noisy projected
online gradient descent, because one user's gradient can be privatized on its own.

Calibration presets (:meth:`LDPGLOC.calibrate`):

=====================  ==============================  ==========================  ===========================
quantity               ``strict`` (default)            ``paper``                   ``authors_code`` (Han et al.)
=====================  ==============================  ==========================  ===========================
noise of ``xx^T, zx``  one Gaussian mechanism on the   ``sigma = 6 sqrt(2 ln(3.75/  ``6 sqrt(2 ln(2.5/delta))/eps``
and gradient           message (analytic, exact joint  delta))/eps``, gradient     (3.75 only in ``Upsilon_t``,
                       sensitivity), gradient std       ``C sigma`` (three parts    ``beta_t``); gradient
                       ``rho sigma``                    at ``(eps/3, delta/3)``)    ``sigma`` (``2 sigma`` multi)
gradient clipping      to norm ``C`` (A7)              none (as printed)           to norm 1
step zeta              ``2 S_W / (sqrt(C^2 + D         ``1/sqrt(T)``               ``1/sqrt(T)``
                       sigma_g^2) sqrt(T))``
W (projection)         ball of radius ``theta_bound``  unit ball                   none (``z`` clipped to
                       (per-arm balls, multi setting)  (per-arm, multi setting)    [-1, 1] instead)
``beta_t``             ``sqrt((sigma_g/mu) sqrt(Dt))``  same                       ``sqrt((sigma/mu) sqrt(Dt))``
initial iterates       0                               0                           random unit vectors
=====================  ==============================  ==========================  ===========================

``rho = 2 C / (C_B (C_B + z_bound))`` keeps the paper's ratio of the gradient noise to the other
parts' (``rho = C`` when ``C_B = 1`` and ``W`` is the unit ball).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numba as nb
import numpy as np

from privbandits.algorithms._shared.linalg import (
    feature_block,
    feature_single,
    project_ball,
    project_blocks,
)
from privbandits.algorithms.audit import AuditCase, ClientPathCase, axis_point, public_state
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.glm.gloc import relabel
from privbandits.algorithms.kernel import ESTIMATE_BOUND, LocalKernel
from privbandits.algorithms.ldp_zheng.base import ZhengAlgorithm
from privbandits.algorithms.ldp_zheng.calibration import (
    LAPLACE_NOTE,
    LDPGLOCConstants,
    classic_sigma,
    outer_vector_sensitivity,
    tight_sigma,
)
from privbandits.algorithms.ldp_zheng.constants import BETA_CODES, zeta_default, zeta_paper
from privbandits.algorithms.ldp_zheng.ridge import (
    add_message_noise,
    new_ridge_state,
    ridge_receive,
    ridge_space,
)
from privbandits.algorithms.registry import register
from privbandits.core.errors import ValidationError
from privbandits.core.links import Link, link_mu
from privbandits.core.params import Any_, Bool, Choice, Optional, Positive
from privbandits.core.public_space import PublicField
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_choice, check_positive
from privbandits.privacy.samplers import (
    add_gaussian,
    add_laplace,
    clip_l2,
    clip_scalar,
)

__all__ = ["LDPGLOC", "link_range"]

_SQRT2 = math.sqrt(2.0)


def link_range(link: Link, bound: float) -> tuple[float, float, float, float]:
    """``(sup |g|, inf g', inf g, sup g)`` of an increasing link on ``[-bound, bound]``."""
    lo, hi = float(link.mu(np.array(-bound))), float(link.mu(np.array(bound)))
    return max(abs(lo), abs(hi)), link.kappa(bound), lo, hi


@nb.njit(cache=True)
def _encode(params, public, r, t, X, a, y, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """User side before the noise (Alg. 3 lines 8-9): ``(x x^T, z x, grad)``.

    ``out`` is the flat message ``[V (D*D), u (D), g (D)]``; the ``g`` field holds ``x`` until it
    becomes the gradient.  The server chooses ``theta_hat``, so the device bounds what it reads
    from it itself, whatever ``clip`` says (``clip`` concerns the user's own data): the relabel
    ``z = x^T theta_hat`` is clipped to ``[-z_bound, z_bound]`` (the honest iterate lies in ``W``,
    where ``|z| <= z_bound`` already), and with gradient clipping the residual is clipped so that
    ``||grad|| <= grad_clip`` (equivalently to clipping the gradient; it also holds for a residual
    that overflows or is NaN).
    """
    (
        D,
        C_B,
        y_lo,
        y_hi,
        clip,
        scale_V,
        scale_u,
        scale_g,
        laplace,
        z_bound,
        link_code,
        grad_clip,
        grad_at_z,
    ) = params[1]
    V = out[: D * D].reshape((D, D))
    u = out[D * D : D * D + D]
    g = out[D * D + D : D * D + 2 * D]
    if X.ndim == 1:  # multi-parameter setting: e_a kron X (resolved at compile time)
        feature_block(X, a, g)
    else:
        feature_single(X, a, g)
    if clip:
        clip_l2(g, C_B)
        y = clip_scalar(y, y_lo, y_hi)
    pred = relabel(g, public[3][r])  # x^T theta_hat
    z = _clip_nan(pred, z_bound)
    resid = link_mu(link_code, z if grad_at_z else pred) - y
    if grad_clip > 0.0:
        s = 0.0
        for i in range(D):
            s += g[i] * g[i]
        if s > 0.0:
            resid = _clip_nan(resid, grad_clip / math.sqrt(s))
    for i in range(D):  # the whole of x x^T before g becomes the gradient (below the diagonal too)
        for j in range(D):
            V[i, j] = g[i] * g[j]
    for i in range(D):
        u[i] = z * g[i]
        g[i] *= resid
    if grad_clip > 0.0:
        clip_l2(g, grad_clip)


@nb.njit(cache=True, inline="always")
def _clip_nan(v, bound):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """``v`` clipped into ``[-bound, bound]``; a NaN becomes ``bound``."""
    if not v <= bound:
        return bound
    if v < -bound:
        return -bound
    return v


@nb.njit(cache=True)
def _randomize(params, public, r, t, X, a, y, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """User side (Alg. 3 lines 8-9): send ``(x x^T + B, z x + xi, grad + r)`` (:func:`_encode`, then
    the noise).  Noise draw order: ``B``, ``xi``, ``r``."""
    D, scale_V, scale_u, scale_g, laplace = (
        params[1][0],
        params[1][5],
        params[1][6],
        params[1][7],
        params[1][8],
    )
    _encode(params, public, r, t, X, a, y, out)
    V = out[: D * D].reshape((D, D))
    u = out[D * D : D * D + D]
    g = out[D * D + D : D * D + 2 * D]
    add_message_noise(rng, laplace, scale_V, V, scale_u, u)
    if laplace:
        add_laplace(rng, scale_g, g)
    else:
        add_gaussian(rng, scale_g, g)


@nb.njit(cache=True)
def _update(params, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Server side (Alg. 3 lines 10-11): noisy ridge update, then one noisy projected OGD step."""
    D = params[1][0]
    zeta, radius, blocks = params[3]
    theta, M, beta, theta_hat = public
    ridge_receive(params[2], theta, M, beta, server, r, msg)
    for i in range(D):  # msg[D*D + D:] is the noisy gradient
        theta_hat[r, i] -= zeta * msg[D * D + D + i]
    if radius > 0.0:
        if blocks > 0:
            project_blocks(theta_hat[r], radius, blocks)
        else:
            project_ball(theta_hat[r], radius)


class _Zeta(Any_):
    """``None``, ``"default"``, ``"paper"`` or a positive step size."""

    def check(self, name: str, value: object) -> object:
        if value is None:
            return None
        if isinstance(value, str):
            return check_choice(name, value, ("default", "paper"))
        return check_positive(name, value)

    def describe(self) -> str:
        return "None, 'default', 'paper' or a positive real"


@register
class LDPGLOC(ZhengAlgorithm):
    """LDP-GLOC (Zheng et al. 2020, Algorithm 3): GLOC with a noisy-OGD online learner, any GLM link.

    Parameters
    ----------
    epsilon : float
        Per-user ``epsilon > 0``.
    delta : float
        Per-user ``delta`` in (0, 1).
    alpha : float
        Failure probability in ``Upsilon_t``.
    preset : {"strict", "paper", "authors_code"}
        Calibration preset (module docstring).
    mechanism : {"gaussian", "laplace"}
        Gaussian (the paper) or the ``epsilon``-LDP Laplace variant (Zheng et al. 2020, correction Zheng20-17).
    gaussian_calibration : {"classic", "analytic"}, optional
        ``"analytic"``: the message is one Gaussian mechanism calibrated exactly (Balle & Wang
        2018) at its joint sensitivity; ``"classic"``: the paper's three parts at
        ``(eps/3, delta/3)`` with ``sqrt(2 ln(1.25/delta_i))``.  Default: ``"analytic"`` under
        ``strict``, ``"classic"`` otherwise.
    beta_formula : {"order", "conservative"}
        ``beta_t = sqrt((C sigma/mu) sqrt(D t))`` (the paper's order with constant 1, defaults on the Zheng et al. 2020 documentation page) or a conservative variant.
    beta_scale : float
        Multiplier ``kappa`` on ``beta_t``.
    c_factor : float
        ``c_t = c_factor * Upsilon_t`` (paper: 2).
    zeta : float, "default" or "paper", optional
        OGD step; None: preset default (``strict``: ``2 S_W / (sqrt(C^2 + D sigma_g^2) sqrt(T))``;
        ``paper``/``authors_code``: ``1/sqrt(T)``).
    theta_radius : float, optional
        Radius ``S_W`` of ``W`` (paper: the unit ball; default: the environment's ``theta_bound``).
        In the multi setting ``W`` is the product of one ball of this radius per arm (a library choice): it
        contains ``vec(theta*_1..theta*_K)`` and keeps ``|z_t| <= C_B S_W``.
    link_bound : float, optional
        ``C = sup |g|`` on ``[-C_B S_W, C_B S_W]`` (default: computed from the link).
    link_min_slope : float, optional
        ``mu = inf g'`` on the same interval (default: computed from the link).
    grad_bound : float, optional
        Gradient clipping norm (default ``C``; 1 in ``authors_code``).
    clip : bool
        User-side clipping of ``x``, ``y`` and ``z`` (a library choice).
    clip_grad : bool, optional
        Gradient clipping (correction Zheng20-7); None: preset default.
    horizon : int, optional
        ``T`` in the constants (default: the run's horizon).

    References
    ----------
    Zheng, Cai, Huang, Li & Wang (2020), NeurIPS, Algorithm 3 and Theorems 9-10; Jun, Bhargava,
    Nowak & Willett (2017), "Scalable Generalized Linear Bandits: Online Computation and
    Hashing", NeurIPS (the GLOC framework); Balle & Wang (2018), ICML (analytic Gaussian).
    """

    name = "ldp-gloc"
    twin = "gloc"
    links = ("*",)
    paper = "Zheng et al. 2020 (Alg. 3)"
    label = "LDP-GLOC (Zheng et al. 2020, Alg. 3)"
    constraints: ClassVar = {
        "beta_formula": Choice("order", "conservative"),
        "zeta": _Zeta(),
        "theta_radius": Optional(Positive),
        "link_bound": Optional(Positive),
        "link_min_slope": Optional(Positive),
        "grad_bound": Optional(Positive),
        "clip_grad": Optional(Bool()),
    }
    zeta: float | str | None
    theta_radius: float | None
    link_bound: float | None
    link_min_slope: float | None
    grad_bound: float | None
    clip_grad: bool | None
    test_params: ClassVar = (
        {},
        {"preset": "paper", "beta_formula": "conservative", "zeta": "default"},
        {"preset": "authors_code"},
        {"mechanism": "laplace", "zeta": 0.05},
        {"gaussian_calibration": "classic", "clip_grad": False, "theta_radius": 2.0},
    )

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The client path, the server's estimate broadcast along the first axis."""
        text = "LDP-GLOC client (Zheng et al. 2020, Alg. 3): noisy x x^T, z x and gradient"
        public = public_state(theta_hat=axis_point)
        return (ClientPathCase(cls, n_pilot=10_000, public=public, description=text),)

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 0.01,
        alpha: float = 0.1,
        preset: str = "strict",
        mechanism: str = "gaussian",
        gaussian_calibration: str | None = None,
        beta_formula: str = "order",
        beta_scale: float = 1.0,
        c_factor: float = 2.0,
        zeta: float | str | None = None,
        theta_radius: float | None = None,
        link_bound: float | None = None,
        link_min_slope: float | None = None,
        grad_bound: float | None = None,
        clip: bool = True,
        clip_grad: bool | None = None,
        horizon: int | None = None,
    ) -> None:
        if preset == "authors_code" and clip_grad is not None and not clip_grad:
            raise ValidationError(
                "preset='authors_code' does not project the online iterate, so an unclipped "
                "gradient has no finite sensitivity; clip_grad must be True (or None)"
            )
        self._check_mechanism()

    # -- calibration -------------------------------------------------------------------------
    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Noise scales, clipping bounds, step size, conventions and the guarantee of the noise added.

        ``strict``: ``(ut(x x^T), z x, grad)`` is one Gaussian mechanism, noise std ``sigma`` on the
        first two parts and ``sigma_g = rho sigma`` on the gradient, with
        ``sigma = analytic(eps, delta, sqrt(J^2 + (2 G / rho)^2))`` where ``J`` is the exact joint
        sensitivity of the first two parts (``z`` in ``[-z_bound, z_bound]``) and ``2 G`` that of
        the clipped gradient: the accounted epsilon is the request.
        """
        eps, delta, preset = self.epsilon, self.delta, self.preset
        block, D, T = self._problem(spec)
        notes: list[str] = []
        lo, hi = map(float, spec.reward_range)
        if preset == "strict":
            C_B = spec.context_bound
            S_W = spec.theta_bound if self.theta_radius is None else self.theta_radius
        elif preset == "paper":
            C_B, S_W = 1.0, 1.0 if self.theta_radius is None else self.theta_radius
        else:
            C_B, S_W = 1.0, 1.0
        z_bound = C_B * S_W
        W_radius = S_W * math.sqrt(spec.K) if block else S_W  # half the diameter of W
        sup_g, inf_dg, g_lo, g_hi = link_range(spec.link, z_bound)
        C = sup_g if self.link_bound is None else self.link_bound
        mu = inf_dg if self.link_min_slope is None else self.link_min_slope
        if mu <= 0.0:
            raise ValidationError(
                f"the link's minimal slope on [-{z_bound:g}, {z_bound:g}] must be > 0, got "
                f"{mu:g}; pass link_min_slope explicitly"
            )
        J = outer_vector_sensitivity(C_B, -z_bound, z_bound)  # (ut(x x^T), z x)
        calib = self._calibration_rule()
        if preset == "authors_code":
            G = 1.0 if self.grad_bound is None else self.grad_bound
            grad_clip: float | None = G
            G_acc = G
            sigma_code = 6.0 * math.sqrt(2.0 * math.log(2.5 / delta)) / eps
            sigma = grad_sigma = (
                6.0 * math.sqrt(2.0 * math.log(3.75 / delta)) / eps
            )  # in Upsilon, beta
            scale_V = scale_u = sigma_code
            scale_g = (2.0 if block else 1.0) * sigma_code
            zeta = self._zeta("paper", T, G, grad_sigma, D, W_radius)
            project, init = False, "random"
            notes.append(
                "Han et al. code: noise 6 sqrt(2 ln(2.5/delta))/eps on every part, 3.75 form in "
                "Upsilon/beta, C dropped from beta, zeta = 1/sqrt(T), random unit init, no "
                "projection (z clipped to [-1, 1] and the gradient to norm 1 so that a guarantee exists)"
            )
        else:
            G = C if self.grad_bound is None else self.grad_bound
            do_clip = (preset == "strict") if self.clip_grad is None else self.clip_grad
            grad_clip = G if do_clip else None
            # data bound of ||(g(z) - y) x|| when the gradient is not clipped
            G_acc = G if do_clip else max(abs(g_hi - lo), abs(hi - g_lo)) * C_B
            if G_acc > G * (1.0 + 1e-12):
                notes.append(
                    f"gradient not clipped: its norm bound {G_acc:.4g} exceeds the calibrated {G:.4g} "
                    "(correction Zheng20-7), so epsilon exceeds the target"
                )
            project, init = True, "zero"
            if self.mechanism == "laplace":
                l1_V, l1_u, l1_g = (
                    (D + 1) * C_B * C_B,
                    2.0 * z_bound * C_B * math.sqrt(D),
                    2.0 * G * math.sqrt(D),
                )
                scale_V = scale_u = (l1_V + l1_u) / (2.0 * eps / 3.0)
                scale_g = l1_g / (eps / 3.0)
                sigma, grad_sigma = _SQRT2 * scale_V, _SQRT2 * scale_g
                notes.append(LAPLACE_NOTE)
            elif calib == "analytic":
                rho = 2.0 * G / (C_B * (C_B + z_bound))
                sigma = tight_sigma(eps, delta, math.hypot(J, 2.0 * G / rho))
                grad_sigma = rho * sigma
                scale_V = scale_u = sigma
                scale_g = grad_sigma
            else:  # the paper: three parts at (eps/3, delta/3)
                sigma = classic_sigma(
                    (2.0 * C_B * C_B, 2.0 * C_B * z_bound), 2.0 * eps / 3.0, delta / 3.0
                )
                grad_sigma = classic_sigma((2.0 * G,), eps / 3.0, delta / 3.0)
                scale_V = scale_u = sigma
                scale_g = grad_sigma
            zeta = self._zeta(
                "default" if preset == "strict" else "paper", T, G, grad_sigma, D, W_radius
            )
        if self.mechanism == "laplace":
            parts: tuple[tuple[str, float, float], ...] = (
                ("x x^T", (D + 1) * C_B * C_B, scale_V),
                ("z x", 2.0 * z_bound * C_B * math.sqrt(D), scale_u),
                ("gradient", 2.0 * G_acc * math.sqrt(D), scale_g),
            )
        else:
            notes.append(f"noise: {calib}")
            parts = (("x x^T, z x", J, scale_V), ("gradient", 2.0 * G_acc, scale_g))
        rule = "given" if preset == "authors_code" else calib
        return self._calibrated(
            LDPGLOCConstants,
            parts,
            notes,
            rule,
            (D, T, C_B, lo, hi),
            sensitivity=J,
            scale_V=scale_V,
            scale_u=scale_u,
            sigma=sigma,
            theta_radius=S_W,
            blockwise=block,
            z_bound=z_bound,
            link_bound=C,
            link_min_slope=mu,
            grad_clip=grad_clip,
            grad_bound=G_acc,
            scale_g=scale_g,
            grad_sigma=grad_sigma,
            zeta=zeta,
            project=project,
            init=init,
        )

    def _zeta(
        self, default: str, T: int, G: float, grad_sigma: float, D: int, W_radius: float
    ) -> float:
        rule = default if self.zeta is None else self.zeta
        if rule == "default":
            return zeta_default(T, G, grad_sigma, D, W_radius)
        if rule == "paper":
            return zeta_paper(T)
        return float(rule)  # type: ignore[arg-type]

    # -- kernel --------------------------------------------------------------------------------
    def build_kernel(self) -> LocalKernel:
        c, spec, R = self.calibration.typed(LDPGLOCConstants), self.spec, self.R
        D, K = c.D, spec.K
        code = BETA_CODES["gloc-order" if self.beta_formula == "order" else "gloc-conservative"]
        choice = (K, False)
        client = (
            *self._client_head(c),
            float(c.scale_g),
            c.mechanism == "laplace",
            float(c.z_bound),
            spec.link.code,
            -1.0 if c.grad_clip is None else float(c.grad_clip),
            bool(c.project),
        )
        ridge = self._ridge_params(c, code, grad_sigma=c.grad_sigma, mu=c.link_min_slope)
        block = spec.setting == "multi"
        # without the projection onto W (authors_code) the iterate is kept within ESTIMATE_BOUND
        # (post-processing), the space the devices accept
        ogd = (
            float(c.zeta),
            float(c.theta_radius) if c.project else ESTIMATE_BOUND,
            K if block and c.project else 0,
        )
        (theta, M, beta), server = new_ridge_state(ridge, R, D, 0.0)
        theta_hat = np.zeros((R, D))
        if (
            c.init == "random"
        ):  # Han et al.'s code: random unit vectors for theta_hat_1 and theta_tilde_0
            v = self.streams.server.standard_normal((2, R, D))
            v /= np.linalg.norm(v, axis=-1, keepdims=True)
            theta_hat[:] = v[0]
            theta[:] = v[1]
        # the device's contract: theta_hat in W (the product of per-arm balls in the multi setting)
        # when the server projects, else within ESTIMATE_BOUND; the accountant's parameter is the
        # sum of L1 sensitivities over scales (Laplace) or the joint l2 sensitivity over the stds
        W = (
            float(c.theta_radius) * (math.sqrt(K) if block else 1.0)
            if c.project
            else ESTIMATE_BOUND
        )
        return self._kernel(
            c,
            (_encode, _randomize, _update),
            (choice, client, ridge, ogd),
            (theta, M, beta, theta_hat),
            server,
            ("theta", "M", "beta", "theta_hat"),
            (("V", (D, D)), ("u", (D,)), ("g", (D,))),
            (float(c.scale_V), float(c.scale_u), float(c.scale_g)),
            math.hypot(c.sensitivity / c.scale_V, 2.0 * c.grad_bound / c.scale_g),
            ridge_space(PublicField("theta_hat", ("R", "D"), norm=W)),
        )

    def online_estimate(self) -> np.ndarray:
        """The noisy-OGD iterate ``theta_hat``: ``(R, d)``, or ``(R, K, d)`` in the multi setting."""
        theta_hat = self._local_kernel().public[3]
        spec = self.spec
        return (
            theta_hat.reshape(self.R, spec.K, spec.d)
            if spec.setting == "multi"
            else theta_hat.copy()
        )
