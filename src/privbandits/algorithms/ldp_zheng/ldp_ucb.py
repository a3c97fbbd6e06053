"""LDP-UCB: locally private LinUCB (Zheng, Cai, Huang, Li & Wang 2020, Algorithm 5).

Round ``t`` (Zheng et al. 2020, Algorithm 5, with the corrections Zheng20-2 and -6)::

    server -> user t : theta_tilde_{t-1},  M = (V_{t-1} + c_{t-1} I)^{-1},  beta_{t-1}
    user t           : x_t = argmax_x  x^T theta_tilde + beta sqrt(x^T M x)
                       send (x_t x_t^T + B_t,  y_t x_t + xi_t)       B_t = sym_gauss(sigma), xi_t ~ N(0, sigma^2 I)
    server           : V_t = V_{t-1} + x_t x_t^T + B_t;  u_t = u_{t-1} + y_t x_t + xi_t
                       theta_tilde_t = (V_t + c_t I)^{-1} u_t

The server never sees ``x_t``, ``y_t`` or the arm: only the noisy pair.  In the multi-parameter
setting the user maps its shared context to block one-hot features ``e_a kron X`` in dimension
``D = K d`` and noises the full ``D``-dimensional statistics (Han et al. 2021's joint model), so the
message also hides the arm.

Calibration presets (:meth:`LDPUCB.calibrate`):

=================  ==============================  ==========================  ============================
quantity           ``strict`` (default)            ``paper``                   ``authors_code``
=================  ==============================  ==========================  ============================
data bounds        ``||x|| <= C_B``, ``y`` in the  ``||x|| <= 1``, ``|y| <= 2``  han2021: as paper; zheng2020:
                   EnvSpec's reward range          (Zheng's linear model)      ``||x|| <= 1``, ``|y| <= 1``
noise std          one Gaussian mechanism on the   ``6 sqrt(2 ln(2.5/delta))    han2021: as paper; zheng2020:
                   message, analytic calibration   / eps`` (two parts at        ``4 sqrt(ln(1.25/delta))/eps``
                   at its exact joint sensitivity  ``(eps_i, delta/2)``)
initial Gram sum   0                               0                           han2021: ``I`` (single);
                                                                               zheng2020: 0, round-1 ``c = 0.1``
bonus              ``beta_{t-1} ||x||_M``          same                        zheng2020: ``beta_t x^T M x``
=================  ==============================  ==========================  ============================
"""

from __future__ import annotations

import math
from typing import ClassVar

import numba as nb

from privbandits.algorithms._shared.linalg import feature_block, feature_single
from privbandits.algorithms.audit import AuditCase, ClientPathCase
from privbandits.algorithms.calibration import Calibration
from privbandits.algorithms.kernel import LocalKernel
from privbandits.algorithms.ldp_zheng.base import ZhengAlgorithm
from privbandits.algorithms.ldp_zheng.calibration import (
    LAPLACE_NOTE,
    REFERENCE_CODES,
    LDPUCBConstants,
    classic_sigma,
    outer_vector_sensitivity,
    tight_sigma,
)
from privbandits.algorithms.ldp_zheng.constants import BETA_CODES
from privbandits.algorithms.ldp_zheng.ridge import (
    add_message_noise,
    new_ridge_state,
    ridge_receive,
    ridge_space,
)
from privbandits.algorithms.registry import register
from privbandits.core.params import Choice, Optional
from privbandits.core.spec import EnvSpec
from privbandits.privacy.samplers import (
    clip_l2,
    clip_scalar,
)

__all__ = ["LDPUCB"]

_SQRT2 = math.sqrt(2.0)


@nb.njit(cache=True)
def _encode(params, public, r, t, X, a, y, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """User side before the noise: ``(x x^T, y x)`` of the user's own clipped ``(x, y)``.

    ``out`` is the flat message ``[V (D*D), u (D)]``; the ``u`` field holds ``x`` until it is
    scaled by ``y``.  Nothing the server sends enters the message.
    """
    D, C_B, y_lo, y_hi, clip = params[1][0], params[1][1], params[1][2], params[1][3], params[1][4]
    V = out[: D * D].reshape((D, D))
    u = out[D * D : D * D + D]
    if X.ndim == 1:  # multi-parameter setting: e_a kron X (resolved at compile time)
        feature_block(X, a, u)
    else:
        feature_single(X, a, u)
    if clip:
        clip_l2(u, C_B)
        y = clip_scalar(y, y_lo, y_hi)
    for i in range(D):
        for j in range(D):
            V[i, j] = u[i] * u[j]
    for i in range(D):
        u[i] *= y


@nb.njit(cache=True)
def _randomize(params, public, r, t, X, a, y, rng, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """User side: send ``(x x^T + B, y x + xi)`` (:func:`_encode`, then the noise).

    Noise draw order: ``B`` (upper triangle row by row, mirrored), then ``xi``.
    """
    D, scale_V, scale_u, laplace = params[1][0], params[1][5], params[1][6], params[1][7]
    _encode(params, public, r, t, X, a, y, out)
    V = out[: D * D].reshape((D, D))
    u = out[D * D : D * D + D]
    add_message_noise(rng, laplace, scale_V, V, scale_u, u)


@nb.njit(cache=True)
def _update(params, public, server, r, t, msg):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Server side: add the privatized statistics and republish ``theta``, ``M``, ``beta``."""
    theta, M, beta = public
    ridge_receive(params[2], theta, M, beta, server, r, msg)


@register
class LDPUCB(ZhengAlgorithm):
    """LDP-UCB (Zheng et al. 2020, Algorithm 5): LinUCB on Gaussian-noised sufficient statistics.

    Parameters
    ----------
    epsilon : float
        Per-user privacy parameter ``epsilon > 0``.
    delta : float
        Per-user ``delta`` in (0, 1) (ignored by the Laplace variant, which is pure).
    alpha : float
        Failure probability in ``Upsilon_t`` and ``beta_t`` (official code: 0.1).
    preset : {"strict", "paper", "authors_code"}
        Calibration preset (module docstring).
    mechanism : {"gaussian", "laplace"}
        Gaussian ``(epsilon, delta)``-LDP (the paper) or the ``epsilon``-LDP Laplace variant
        (Zheng et al. 2020, correction Zheng20-17).
    noise_split : {"split", "joint"}, optional
        ``"joint"``: the message is one Gaussian mechanism at ``(eps, delta)``; ``"split"``: two
        mechanisms at ``(eps_i, delta/2)``, ``eps_i`` in proportion to the parts' sensitivities
        (the paper's ``ln(2.5/delta)`` form), correction Zheng20-4.  Default: ``"joint"`` under
        ``strict``, ``"split"`` otherwise.
    gaussian_calibration : {"classic", "analytic"}, optional
        ``"analytic"``: the exact analytic Gaussian mechanism (Balle & Wang 2018; with
        ``"joint"`` at the message's exact joint sensitivity, the tight strict calibration);
        ``"classic"``: ``Delta sqrt(2 ln(1.25/delta)) / eps`` with the papers' sensitivity bounds.
        Default: ``"analytic"`` under ``strict``, ``"classic"`` otherwise.
    beta_formula : {"paper", "ss"}
        The paper's radius or the Shariff-Sheffet-style one (Zheng et al. 2020, Algorithm 5).
    beta_scale : float
        Multiplier ``kappa`` on ``beta_t`` (1 = theory).
    c_factor : float
        ``c_t = c_factor * Upsilon_t`` (paper: 2).
    clip : bool
        User-side clipping of the reported ``x`` and ``y`` (a library choice); without
        it the guarantee is conditional on the data lying within the declared bounds.
    reference_code : {"han2021", "zheng2020"}
        Which public code ``preset="authors_code"`` imitates.
    horizon : int, optional
        ``T`` in the constants (default: the run's horizon).

    References
    ----------
    Zheng, Cai, Huang, Li & Wang (2020), "Locally Differentially Private (Contextual) Bandits
    Learning", NeurIPS, Algorithm 5 (appendix D) and Theorems 7-8; constants as reconstructed in
    correction Zheng20-4.  Han, Liang, Wang & Zhang (2021), section 5 (as a baseline).
    Balle & Wang (2018), "Improving the Gaussian Mechanism for Differential Privacy", ICML.
    """

    name = "ldp-ucb"
    twin = "linucb"
    links = ("identity",)
    paper = "Zheng et al. 2020 (Alg. 5)"
    label = "LDP-UCB (Zheng et al. 2020, Alg. 5)"
    constraints: ClassVar = {
        "noise_split": Optional(Choice("split", "joint")),
        "beta_formula": Choice("paper", "ss"),
        "reference_code": Choice(*REFERENCE_CODES),
    }
    noise_split: str | None
    reference_code: str

    # clip=False is left out: its guarantee is conditional on rewards in the declared range, which
    # the conformance suite's adversarial users are not by design (tests/algorithms cover it)
    test_params: ClassVar = (
        {},
        {"preset": "paper", "beta_formula": "ss"},
        {"preset": "authors_code"},
        {"preset": "authors_code", "reference_code": "zheng2020"},
        {"mechanism": "laplace"},
        {"noise_split": "split", "gaussian_calibration": "analytic", "beta_scale": 0.1},
    )

    @classmethod
    def audit_cases(cls) -> tuple[AuditCase, ...]:
        """The client path with the Gaussian and with the Laplace mechanism (pure epsilon-LDP)."""
        text = "LDP-UCB client (Zheng et al. 2020, Alg. 1): noisy x x^T and x y"
        laplace = "LDP-UCB client with the Laplace mechanism (Zheng et al. 2020, pure epsilon-LDP)"
        return (
            ClientPathCase(cls, n_pilot=10_000, description=text),
            ClientPathCase(
                cls,
                {"epsilon": 1.0, "mechanism": "laplace"},
                n_samples=200_000,
                n_pilot=10_000,
                variant="laplace",
                description=laplace,
            ),
        )

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 0.01,
        alpha: float = 0.1,
        preset: str = "strict",
        mechanism: str = "gaussian",
        noise_split: str | None = None,
        gaussian_calibration: str | None = None,
        beta_formula: str = "paper",
        beta_scale: float = 1.0,
        c_factor: float = 2.0,
        clip: bool = True,
        reference_code: str = "han2021",
        horizon: int | None = None,
    ) -> None:
        self._check_mechanism()

    # -- calibration -------------------------------------------------------------------------
    def calibrate(self, spec: EnvSpec) -> Calibration:
        """Noise scales, clipping bounds, conventions and the guarantee of the noise added.

        ``strict``: the pair ``(ut(x x^T), y x)`` is one Gaussian mechanism with the exact joint
        sensitivity :func:`~privbandits.algorithms.ldp_zheng.calibration.outer_vector_sensitivity`
        of the EnvSpec's bounds, calibrated by the analytic Gaussian: the accounted epsilon is the
        request.  The other presets use the formulas of the paper / public code; their guarantee
        is accounted from the noise they add (the same joint view, always at least as tight as
        composing the parts).
        """
        eps, delta, preset = self.epsilon, self.delta, self.preset
        _, D, T = self._problem(spec)
        block = spec.setting == "multi"
        notes: list[str] = []
        V0, bonus, beta_index, c_first = 0.0, "sqrt", "previous", None
        if preset == "strict":
            C_B = spec.context_bound
            lo, hi = map(float, spec.reward_range)
        elif preset == "paper" or self.reference_code == "han2021":
            C_B, lo, hi = 1.0, -2.0, 2.0
        else:  # authors_code, Zheng et al.'s demo: rewards normalized to [-1, 1]
            C_B, lo, hi = 1.0, -1.0, 1.0
        Y = max(abs(lo), abs(hi))
        split = self.noise_split or ("joint" if preset == "strict" else "split")
        calib = self._calibration_rule()
        loose_V, loose_u = 2.0 * C_B * C_B, 2.0 * Y * C_B  # the papers' sensitivity bounds
        tight_V, tight_u = _SQRT2 * C_B * C_B, 2.0 * Y * C_B  # each part alone
        joint = outer_vector_sensitivity(C_B, lo, hi)  # the pair, exactly
        rule = calib
        if self.mechanism == "laplace":
            # Zheng et al. 2020, correction Zheng20-17: L1 sensitivities, budget split so both parts share one scale
            l1_V, l1_u = (D + 1) * C_B * C_B, 2.0 * Y * C_B * math.sqrt(D)
            b = (l1_V + l1_u) / eps
            scale_V = scale_u = b
            sigma = _SQRT2 * b
            notes.append(LAPLACE_NOTE)
            parts: tuple[tuple[str, float, float], ...] = (("x x^T", l1_V, b), ("y x", l1_u, b))
        else:
            if preset == "authors_code" and self.reference_code == "zheng2020":
                # official demo: 4 sqrt(ln(1.25/delta))/eps (README: 4 sqrt(2 ln(1.25/delta))/eps),
                # one Gaussian mechanism on the message (the official README's form, correction Zheng20-4)
                sigma = 4.0 * math.sqrt(math.log(1.25 / delta)) / eps
                bonus, beta_index, c_first, rule = "squared", "current", 0.1, "given"
                notes.append(
                    "reference code zheng2020 (demo noise, squared bonus, beta_t, round-1 c = 0.1)"
                )
            elif split == "joint":
                if calib == "analytic":
                    sigma = tight_sigma(eps, delta, joint)
                else:  # README form: one classic Gaussian mechanism with sensitivity 2 + 2Y
                    sigma = (loose_V + loose_u) * math.sqrt(2.0 * math.log(1.25 / delta)) / eps
            else:  # two parts at (eps_i, delta/2), eps_i in proportion to the sensitivities
                sigma = classic_sigma((loose_V, loose_u), eps, delta / 2.0, calib)
            if preset == "authors_code" and self.reference_code == "han2021":
                V0 = 1.0 if not block else 0.0
                notes.append("reference code han2021 (Gram sum starts at I in the single setting)")
            scale_V = scale_u = sigma
            notes.append(
                f"noise: {split}/{calib}; parts alone: x x^T {tight_V:.6g}, y x {tight_u:.6g}"
            )
            parts = (("x x^T, y x", joint, sigma),)
        return self._calibrated(
            LDPUCBConstants,
            parts,
            notes,
            rule,
            (D, T, C_B, lo, hi),
            sensitivity=joint,
            scale_V=scale_V,
            scale_u=scale_u,
            sigma=sigma,
            reward_bound=Y,
            noise_split=split,
            V0=V0,
            bonus=bonus,
            beta_index=beta_index,
            c_first=c_first,
        )

    # -- kernel --------------------------------------------------------------------------------
    def build_kernel(self) -> LocalKernel:
        c, spec, R = self.calibration.typed(LDPUCBConstants), self.spec, self.R
        code = BETA_CODES["ucb-paper" if self.beta_formula == "paper" else "ucb-ss"]
        choice = (spec.K, c.bonus == "squared")
        client = (*self._client_head(c), c.mechanism == "laplace")
        ridge = self._ridge_params(c, code, c_first=c.c_first, current=c.beta_index == "current")
        public, server = new_ridge_state(ridge, R, c.D, float(c.V0))
        # the message does not depend on the public state
        return self._kernel(
            c,
            (_encode, _randomize, _update),
            (choice, client, ridge),
            public,
            server,
            ("theta", "M", "beta"),
            (("V", (c.D, c.D)), ("u", (c.D,))),
            (float(c.scale_V), float(c.scale_u)),
            c.sensitivity / c.scale_V,
            ridge_space(),
        )
