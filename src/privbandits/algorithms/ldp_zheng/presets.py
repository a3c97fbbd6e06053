"""Calibration presets of LDP-UCB and LDP-GLOC (DESIGN section 2: strict / paper / authors_code).

Where the presets differ (spec ``zheng2020-ldp-bandits.md`` sections 4.3-4.4, 6.2, 6.3, 8 and spec
``han2021-ldp-glb.md`` section 4):

LDP-UCB (Algorithm 5)

=====================  ==============================  ===========================  =====================================
quantity               ``strict`` (default)            ``paper``                    ``authors_code``
=====================  ==============================  ===========================  =====================================
data bounds            ``||x|| <= C_B``, ``|y| <= c_r``  ``||x|| <= 1``, ``|y| <= 2``   han2021: as paper; zheng2020:
                       from the EnvSpec                (Zheng's linear model)       ``||x|| <= 1``, ``|y| <= 1``
noise std sigma        ``2 C_B (C_B + c_r)             ``6 sqrt(2 ln(2.5/delta))     han2021: as paper;
                       sqrt(2 ln(2.5/delta)) / eps``    / eps``                      zheng2020: ``4 sqrt(ln(1.25/delta))/eps``
initial Gram sum       0                               0                            han2021: ``I_D`` (single setting);
                                                                                    zheng2020: 0, round-1 ``c = 0.1``
bonus                  ``beta_{t-1} ||x||_{M}``        same                         zheng2020: ``beta_t x^T M x``
=====================  ==============================  ===========================  =====================================

LDP-GLOC (Algorithm 3)

=====================  ==============================  ===========================  =====================================
quantity               ``strict`` (default)            ``paper``                    ``authors_code`` (Han et al. code)
=====================  ==============================  ===========================  =====================================
noise of ``xx^T, zx``  ``sigma = 6 sqrt(2 ln(3.75/    same with ``C_B = 1``         ``6 sqrt(2 ln(2.5/delta))/eps`` (3.75
                       delta))/eps`` (``C_B = 1``)                                  only in ``Upsilon_t``, ``beta_t``)
gradient noise         ``C sigma``, gradient clipped   ``C sigma``, no clipping     ``sigma`` (2.5 form; ``2 sigma`` in the
                       to norm ``C`` (A7)              (as printed)                 multi setting), clipped to norm 1
step zeta              ``2/(C sqrt(1+D sigma^2)        ``1/sqrt(T)``                ``1/sqrt(T)``
                       sqrt(T))``
W (projection)         ball of radius ``theta_bound``  unit ball                    none (``z`` clipped to [-1, 1] instead)
                       (per-arm balls, multi setting)  (per-arm, multi setting)
``beta_t``             ``sqrt((C sigma/mu) sqrt(Dt))``  same                        ``sqrt((sigma/mu) sqrt(Dt))``
initial iterates       0                               0                            random unit vectors
=====================  ==============================  ===========================  =====================================

With ``C_B = 1`` and ``||theta*|| <= 1`` the ``strict`` noise equals the paper's; ``strict`` generalizes
the sensitivities to ``C_B``, ``c_r`` and the radius of ``W`` (the budget is split so that the
``x x^T`` and ``z x`` / ``y x`` parts share one noise level, as in the paper).

In every preset the user clips what it reports to the bounds the noise is calibrated for (spec
section 4.0 [CHOICE]; ``clip=False`` turns it off and makes the reported guarantee conditional on
the declared bounds).  The reported guarantee is always computed from the noise actually added
(:mod:`.budget`), with the tight sensitivity ``sqrt(2) C_B^2`` of the upper triangle of ``x x^T``
(the calibration formulas use the bound ``2 C_B^2``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from privbandits.algorithms.ldp_zheng.budget import NoisePart
from privbandits.algorithms.ldp_zheng.constants import (
    common_gaussian_sigma,
    common_laplace_scale,
    zeta_default,
    zeta_paper,
)
from privbandits.core.errors import ValidationError
from privbandits.core.links import Link
from privbandits.core.spec import EnvSpec
from privbandits.privacy.mechanisms import gaussian_sigma_analytic

__all__ = [
    "MECHANISMS",
    "PRESETS",
    "REFERENCE_CODES",
    "GLOCCalibration",
    "UCBCalibration",
    "gloc_calibration",
    "link_range",
    "ucb_calibration",
]

PRESETS: tuple[str, ...] = ("strict", "paper", "authors_code")
MECHANISMS: tuple[str, ...] = ("gaussian", "laplace")
#: Public reference code an ``authors_code`` LDP-UCB run imitates: Han et al.'s re-implementation
#: (github.com/liangzp/LDP-Bandit, the baseline of the Han et al. 2021 figures) or Zheng et al.'s
#: own demo (github.com/MIFA-Lab/LDPbandit2020, ``src/linucb.py``).
REFERENCE_CODES: tuple[str, ...] = ("han2021", "zheng2020")

_SQRT2 = math.sqrt(2.0)


@dataclass(frozen=True)
class UCBCalibration:
    """Everything LDP-UCB's client and server need that depends on the preset.

    Attributes
    ----------
    context_bound, reward_interval, reward_bound
        Clipping bounds of the reported ``x`` (norm), ``y`` (interval) and ``Y = max |y|``.
    scale_V, scale_u
        Per-entry scale (Gaussian std or Laplace scale) of ``B_t`` and ``xi_t``.
    sigma
        Noise standard deviation entering ``Upsilon_t``, ``c_t`` and ``beta_t``.
    V0
        The server's noisy Gram sum starts at ``V0 * I``.
    bonus
        ``"sqrt"``: ``beta ||x||_M``; ``"squared"``: ``beta x^T M x`` (Zheng et al.'s demo code).
    beta_index
        ``"previous"``: round ``t`` uses ``beta_{max(t-1,1)}`` (spec section 8 A6);
        ``"current"``: ``beta_t``.
    c_first
        Regularizer of round 1 when given (Zheng et al.'s demo: 0.1); otherwise ``c_1``.
    parts
        The message parts for the accountant.
    """

    preset: str
    mechanism: str
    context_bound: float
    reward_interval: tuple[float, float]
    reward_bound: float
    scale_V: float
    scale_u: float
    sigma: float
    V0: float
    bonus: str
    beta_index: str
    c_first: float | None
    parts: tuple[NoisePart, ...]
    notes: str


@dataclass(frozen=True)
class GLOCCalibration:
    """Everything LDP-GLOC's client and server need that depends on the preset.

    Attributes
    ----------
    context_bound, reward_interval
        Clipping bounds of the reported ``x`` (norm) and ``y``.
    theta_radius
        Radius of ``W`` (the online learner's domain; the unit ball in the paper).  With block
        features built by the client (multi setting) ``W`` is the product of one ball of this
        radius per arm [CHOICE]: it contains ``vec(theta*_1..theta*_K)`` and keeps ``|z_t|`` at
        ``C_B * theta_radius``, so the paper's calibration is unchanged.
    blockwise
        Whether ``W`` is that product of per-arm balls.
    z_bound
        ``|z_t| = |x_t^T theta_hat_t| <= C_B * theta_radius`` (enforced by clipping when the
        iterate is not projected).
    link_bound, link_min_slope
        ``C = sup |g|`` and ``mu = inf g'`` on ``[-z_bound, z_bound]``.
    grad_clip
        Norm the reported gradient is clipped to (None: not clipped).
    grad_bound
        The gradient-norm bound the accountant uses (``grad_clip``, or the data bound when the
        gradient is not clipped).
    scale_V, scale_u, scale_g
        Per-entry noise scales of ``B_t``, ``xi_t`` and ``r_t``.
    sigma, grad_sigma
        Standard deviations entering ``Upsilon_t``/``c_t`` and ``beta_t`` (``C sigma``).
    zeta
        Step size of the noisy online gradient descent.
    project
        Whether the iterate is projected onto ``W``.
    init
        ``"zero"`` or ``"random"`` (random unit vectors, Han et al.'s code).
    """

    preset: str
    mechanism: str
    context_bound: float
    reward_interval: tuple[float, float]
    theta_radius: float
    blockwise: bool
    z_bound: float
    link_bound: float
    link_min_slope: float
    grad_clip: float | None
    grad_bound: float
    scale_V: float
    scale_u: float
    scale_g: float
    sigma: float
    grad_sigma: float
    zeta: float
    project: bool
    init: str
    parts: tuple[NoisePart, ...]
    notes: str


def link_range(link: Link, bound: float) -> tuple[float, float, float]:
    """``(sup |g|, inf g', inf g, sup g)`` of an increasing link on ``[-bound, bound]``."""
    lo, hi = float(link.mu(-bound)), float(link.mu(bound))
    return max(abs(lo), abs(hi)), link.kappa(bound), lo, hi


def _classic_sigma_at_epsilon_ge_1_note(per_part_eps: tuple[float, ...], calibration: str) -> str:
    if calibration == "classic" and max(per_part_eps) >= 1.0:
        return ("classic Gaussian calibration used at per-part epsilon >= 1 (Dwork-Roth Thm A.1 needs < 1); "
                "the epsilon reported is the exact one of the noise added")
    return ""


# ------------------------------------------------------------------------------------------------
# LDP-UCB
# ------------------------------------------------------------------------------------------------
def ucb_calibration(
    spec: EnvSpec,
    D: int,
    epsilon: float,
    delta: float,
    preset: str,
    mechanism: str,
    noise_split: str,
    gaussian_calibration: str,
    reference_code: str,
) -> UCBCalibration:
    """Noise scales, clipping bounds and conventions of LDP-UCB for a preset.

    Parameters
    ----------
    spec : EnvSpec
        Public problem description (``context_bound`` and ``reward_range`` are used by ``strict``).
    D : int
        Dimension of the features the algorithm runs on.
    epsilon, delta : float
        Per-user privacy target.
    preset : {"strict", "paper", "authors_code"}
    mechanism : {"gaussian", "laplace"}
    noise_split : {"split", "joint"}
        ``split``: ``x x^T`` and ``y x`` are two Gaussian mechanisms at ``(eps_i, delta/2)`` with
        ``eps_i`` in proportion to their sensitivities (``eps/3``, ``2 eps/3`` for ``Y = 2``);
        ``joint``: one Gaussian mechanism on the pair at ``(eps, delta)`` (spec section 8 A4).
    gaussian_calibration : {"classic", "analytic"}
    reference_code : {"han2021", "zheng2020"}
        Only for ``preset="authors_code"``.
    """
    notes = [f"LDP-UCB (Zheng et al. 2020, Alg. 5), preset={preset}"]
    V0, bonus, beta_index, c_first = 0.0, "sqrt", "previous", None
    if preset == "strict":
        CB = spec.context_bound
        lo, hi = map(float, spec.reward_range)
    elif preset == "paper" or reference_code == "han2021":
        CB, lo, hi = 1.0, -2.0, 2.0
    else:  # authors_code, zheng2020 demo: rewards normalized to [-1, 1]
        CB, lo, hi = 1.0, -1.0, 1.0
    Y = max(abs(lo), abs(hi))
    sens_V, sens_u = 2.0 * CB * CB, 2.0 * Y * CB  # calibration bounds (paper)
    tight_V = _SQRT2 * CB * CB  # sensitivity of the upper triangle of x x^T
    if preset == "authors_code":
        if mechanism != "gaussian":
            raise ValidationError("preset='authors_code' uses Gaussian noise; mechanism must be 'gaussian'")
        notes.append(f"reference code {reference_code}")
        if reference_code == "zheng2020":
            # official demo: sigma = 4 sqrt(ln(1.25/delta))/eps (README: 4 sqrt(2 ln(1.25/delta))/eps),
            # one Gaussian mechanism on the whole message (spec section 6.2, 8 A4)
            sigma = 4.0 * math.sqrt(math.log(1.25 / delta)) / epsilon
            parts = (NoisePart("(x x^T, y x)", "gaussian", sigma, math.hypot(tight_V, sens_u), delta),)
            bonus, beta_index, c_first = "squared", "current", 0.1
            return UCBCalibration(preset, mechanism, CB, (lo, hi), Y, sigma, sigma, sigma, V0, bonus,
                                  beta_index, c_first, parts, "; ".join(notes))
        V0 = 1.0 if spec.setting == "single" else 0.0
    if mechanism == "laplace":
        l1_V, l1_u = (D + 1) * CB * CB, 2.0 * Y * CB * math.sqrt(D)
        b = common_laplace_scale((l1_V, l1_u), epsilon)
        parts = (NoisePart("x x^T", "laplace", b, l1_V), NoisePart("y x", "laplace", b, l1_u))
        notes.append("Laplace variant (spec section 3.3); radii reuse the Gaussian formulas with the Laplace std")
        return UCBCalibration(preset, mechanism, CB, (lo, hi), Y, b, b, _SQRT2 * b, V0, bonus, beta_index,
                              c_first, parts, "; ".join(notes))
    if noise_split == "split":
        sigma = common_gaussian_sigma((sens_V, sens_u), epsilon, delta / 2.0, gaussian_calibration)
        parts = (NoisePart("x x^T", "gaussian", sigma, tight_V, delta / 2.0),
                 NoisePart("y x", "gaussian", sigma, sens_u, delta / 2.0))
        per_part = (epsilon * sens_V / (sens_V + sens_u), epsilon * sens_u / (sens_V + sens_u))
    else:
        if gaussian_calibration == "classic":
            sigma = (sens_V + sens_u) * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
        else:
            sigma = gaussian_sigma_analytic(epsilon, delta, sens_V + sens_u)
        parts = (NoisePart("(x x^T, y x)", "gaussian", sigma, math.hypot(tight_V, sens_u), delta),)
        per_part = (epsilon,)
    note = _classic_sigma_at_epsilon_ge_1_note(per_part, gaussian_calibration)
    if note:
        notes.append(note)
    return UCBCalibration(preset, mechanism, CB, (lo, hi), Y, sigma, sigma, sigma, V0, bonus, beta_index,
                          c_first, parts, "; ".join(notes))


# ------------------------------------------------------------------------------------------------
# LDP-GLOC
# ------------------------------------------------------------------------------------------------
def gloc_calibration(
    spec: EnvSpec,
    D: int,
    T: int,
    epsilon: float,
    delta: float,
    preset: str,
    mechanism: str,
    gaussian_calibration: str,
    theta_radius: float | None,
    link_bound: float | None,
    link_min_slope: float | None,
    grad_bound: float | None,
    clip_grad: bool | None,
    zeta: float | str | None,
    block: bool,
) -> GLOCCalibration:
    """Noise scales, clipping bounds, step size and conventions of LDP-GLOC for a preset.

    Parameters
    ----------
    spec : EnvSpec
        Public problem description (link, ``context_bound``, ``reward_range``).
    D, T : int
        Feature dimension of the model and horizon.
    epsilon, delta : float
        Per-user privacy target; each of the three parts gets ``(eps/3, delta/3)``.
    preset, mechanism, gaussian_calibration : str
        See :mod:`privbandits.algorithms.ldp_zheng.presets`.
    theta_radius : float or None
        Radius of ``W`` (per arm with client-built block features); None: the EnvSpec's
        ``theta_bound`` in ``strict`` (so that ``W`` contains ``theta*``), 1 in ``paper``.
    link_bound, link_min_slope : float or None
        ``C`` and ``mu``; None computes them from the link on ``[-z_bound, z_bound]``.
    grad_bound : float or None
        Gradient clipping norm (None: ``C``, Alg. 3's noise ``C sigma`` then exactly matches).
    clip_grad : bool or None
        None: preset default (on in ``strict``, off in ``paper`` as printed, on at norm 1 in
        ``authors_code``).
    zeta : float, "default", "paper" or None
        OGD step; None: preset default.
    block : bool
        Whether the model runs on block features built by the client (multi setting).
    """
    notes = [f"LDP-GLOC (Zheng et al. 2020, Alg. 3), preset={preset}"]
    lo, hi = map(float, spec.reward_range)
    if preset == "strict":
        CB, S_W = spec.context_bound, spec.theta_bound if theta_radius is None else theta_radius
    elif preset == "paper":
        CB, S_W = 1.0, 1.0 if theta_radius is None else theta_radius
    else:
        CB, S_W = 1.0, 1.0
    Zb = CB * S_W
    # half the diameter of W: one ball, or the product of K per-arm balls
    W_radius = S_W * math.sqrt(spec.K) if block else S_W
    sup_g, inf_dg, g_lo, g_hi = link_range(spec.link, Zb)
    C = sup_g if link_bound is None else link_bound
    mu = inf_dg if link_min_slope is None else link_min_slope
    if mu <= 0.0:
        raise ValidationError(f"the link's minimal slope on [-{Zb:g}, {Zb:g}] must be > 0, got {mu:g}; "
                              "pass link_min_slope explicitly")
    # data bound of ||(g(z) - y) x|| when the gradient is not clipped
    grad_data_bound = max(abs(g_hi - lo), abs(hi - g_lo)) * CB

    if preset == "authors_code":
        if mechanism != "gaussian":
            raise ValidationError("preset='authors_code' uses Gaussian noise; mechanism must be 'gaussian'")
        G = 1.0 if grad_bound is None else grad_bound
        if clip_grad is not None and not clip_grad:
            raise ValidationError("preset='authors_code' does not project the online iterate, so an unclipped "
                                  "gradient has no finite sensitivity; clip_grad must be True (or None)")
        grad_clip = G
        sigma_code = 6.0 * math.sqrt(2.0 * math.log(2.5 / delta)) / epsilon
        sigma_srv = 6.0 * math.sqrt(2.0 * math.log(3.75 / delta)) / epsilon
        scale_g = (2.0 if block else 1.0) * sigma_code
        G_acc = G
        parts = (NoisePart("x x^T", "gaussian", sigma_code, _SQRT2, delta / 3.0),
                 NoisePart("z x", "gaussian", sigma_code, 2.0 * Zb, delta / 3.0),
                 NoisePart("gradient", "gaussian", scale_g, 2.0 * G_acc, delta / 3.0))
        step = _zeta(zeta, "paper", T, G, sigma_srv, D, W_radius)
        notes.append("Han et al. code: mechanism noise 6 sqrt(2 ln(2.5/delta))/eps for all parts, "
                     "3.75 form in Upsilon/beta, C dropped from beta, zeta = 1/sqrt(T), random unit init, "
                     "no projection (z clipped to [-1, 1] and gradient to norm 1 so that a guarantee exists)")
        return GLOCCalibration(preset, mechanism, CB, (lo, hi), S_W, block, Zb, C, mu, grad_clip, G_acc,
                               sigma_code, sigma_code, scale_g, sigma_srv, sigma_srv, step, False, "random",
                               parts, "; ".join(notes))

    G = C if grad_bound is None else grad_bound
    do_clip = (preset == "strict") if clip_grad is None else bool(clip_grad)
    grad_clip = G if do_clip else None
    G_acc = G if do_clip else grad_data_bound
    if not do_clip and G_acc > G * (1.0 + 1e-12):
        notes.append(f"gradient not clipped: its norm bound {G_acc:.4g} exceeds the calibrated {G:.4g} "
                     "(spec section 8 A7), so epsilon exceeds the target")
    sens_V, sens_u = 2.0 * CB * CB, 2.0 * CB * Zb
    if mechanism == "laplace":
        l1_V, l1_u, l1_g = (D + 1) * CB * CB, 2.0 * Zb * CB * math.sqrt(D), 2.0 * G * math.sqrt(D)
        b = common_laplace_scale((l1_V, l1_u), 2.0 * epsilon / 3.0)
        b_g = common_laplace_scale((l1_g,), epsilon / 3.0)
        l1_g_acc = 2.0 * G_acc * math.sqrt(D)
        parts = (NoisePart("x x^T", "laplace", b, l1_V), NoisePart("z x", "laplace", b, l1_u),
                 NoisePart("gradient", "laplace", b_g, l1_g_acc))
        sigma, grad_sigma, scale_V, scale_g = _SQRT2 * b, _SQRT2 * b_g, b, b_g
        notes.append("Laplace variant (spec section 3.3); radii reuse the Gaussian formulas with the Laplace std")
    else:
        sigma = common_gaussian_sigma((sens_V, sens_u), 2.0 * epsilon / 3.0, delta / 3.0, gaussian_calibration)
        grad_sigma = common_gaussian_sigma((2.0 * G,), epsilon / 3.0, delta / 3.0, gaussian_calibration)
        scale_V, scale_g = sigma, grad_sigma
        parts = (NoisePart("x x^T", "gaussian", sigma, _SQRT2 * CB * CB, delta / 3.0),
                 NoisePart("z x", "gaussian", sigma, sens_u, delta / 3.0),
                 NoisePart("gradient", "gaussian", grad_sigma, 2.0 * G_acc, delta / 3.0))
        note = _classic_sigma_at_epsilon_ge_1_note((epsilon / 3.0,), gaussian_calibration)
        if note:
            notes.append(note)
    step = _zeta(zeta, "default" if preset == "strict" else "paper", T, G, grad_sigma, D, W_radius)
    return GLOCCalibration(preset, mechanism, CB, (lo, hi), S_W, block, Zb, C, mu, grad_clip, G_acc, scale_V, scale_V,
                           scale_g, sigma, grad_sigma, step, True, "zero", parts, "; ".join(notes))


def _zeta(zeta: float | str | None, default: str, T: int, G: float, grad_sigma: float, D: int, S_W: float) -> float:
    rule = default if zeta is None else zeta
    if rule == "default":
        return zeta_default(T, G, grad_sigma, D, S_W)
    if rule == "paper":
        return zeta_paper(T)
    return float(rule)
