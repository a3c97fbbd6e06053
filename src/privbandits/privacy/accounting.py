"""Privacy accounting: guarantee objects, composition, zCDP conversions and budget splits.

Accounting is done with explicit, immutable objects (dp-accounting / OpenDP style):

* :class:`PureDP` ``(epsilon)``, :class:`ApproxDP` ``(epsilon, delta)``, :class:`ZCDP` ``(rho)``;
* functions that compose them (:func:`compose_basic`, :func:`compose_advanced`,
  :func:`compose_parallel`, :func:`compose_zcdp`) and convert between them
  (:func:`pure_to_zcdp`, :func:`gaussian_zcdp`, :func:`zcdp_to_approx_dp`,
  :func:`zcdp_for_approx_dp`);
* the budget splits the algorithms use (:func:`split_budget`) and the bridge to the statement an
  algorithm reports, :func:`to_guarantee` -> :class:`~privbandits.privacy.guarantee.PrivacyGuarantee`.

References
----------
Dwork & Roth (2014), "The Algorithmic Foundations of Differential Privacy", Thm 3.16 (basic
composition) and Thm 3.20 (advanced composition, Dwork, Rothblum & Vadhan 2010).
Bun & Steinke (2016), "Concentrated Differential Privacy: Simplifications, Extensions, and Lower
Bounds", Prop 1.3 (zCDP -> DP), Prop 1.4 (pure DP -> zCDP), Prop 1.6 (Gaussian), Lemma 2.3
(composition).
Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for Differential Privacy", Prop 12 /
Cor 13 (tighter zCDP -> DP conversion; also dp-accounting's ``rdp.compute_epsilon``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from privbandits.core.errors import PrivacyError, ValidationError
from privbandits.core.validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_in_range,
    check_int,
    check_nonnegative,
    check_positive,
)
from privbandits.privacy.calibration import Bracket, calibrate_noise
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.ledger import Event

__all__ = [
    "CONVERSIONS",
    "ZCDP",
    "ApproxDP",
    "DPGuarantee",
    "PureDP",
    "compose_advanced",
    "compose_basic",
    "compose_parallel",
    "compose_zcdp",
    "gaussian_zcdp",
    "pure_to_zcdp",
    "sigma_for_zcdp",
    "split_budget",
    "to_guarantee",
    "zcdp_for_approx_dp",
    "zcdp_to_approx_dp",
]

#: zCDP -> (epsilon, delta) conversions understood by :func:`zcdp_to_approx_dp`.
CONVERSIONS: tuple[str, ...] = ("cks", "bs")


# --------------------------------------------------------------------------------------------
# guarantee objects
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PureDP:
    """Pure ``epsilon``-DP (``delta = 0``).

    Parameters
    ----------
    epsilon : float
        Privacy loss, a finite real number >= 0 (0 = perfect privacy, e.g. zero sensitivity).
    """

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_in_range("epsilon", self.epsilon, 0.0, None))

    @property
    def delta(self) -> float:
        """Always 0: a pure guarantee read as an ``(epsilon, 0)`` statement."""
        return 0.0

    def __str__(self) -> str:
        return f"{self.epsilon:.6g}-DP"


@dataclass(frozen=True)
class ApproxDP:
    """Approximate ``(epsilon, delta)``-DP.

    Parameters
    ----------
    epsilon : float
        Privacy loss, a finite real number >= 0.
    delta : float
        Failure probability in [0, 1).
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_in_range("epsilon", self.epsilon, 0.0, None))
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=True))

    def __str__(self) -> str:
        return f"({self.epsilon:.6g}, {self.delta:.3g})-DP"


@dataclass(frozen=True)
class ZCDP:
    """``rho``-zero-concentrated DP (Bun & Steinke 2016, Def 1.1).

    Parameters
    ----------
    rho : float
        A finite real number >= 0: ``D_alpha(M(x) || M(x')) <= rho * alpha`` for all alpha > 1.
    """

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", check_in_range("rho", self.rho, 0.0, None))

    def __str__(self) -> str:
        return f"{self.rho:.6g}-zCDP"


#: A statement in the epsilon/delta family (what :func:`compose_basic` accepts).
DPGuarantee = PureDP | ApproxDP


def _as_dp(name: str, g: object) -> DPGuarantee:
    if isinstance(g, (PureDP, ApproxDP)):
        return g
    if isinstance(g, ZCDP):
        raise ValidationError(
            f"{name} is a ZCDP guarantee; compose it with compose_zcdp or convert it first with "
            "zcdp_to_approx_dp(rho, delta)"
        )
    raise ValidationError(f"{name} must be a PureDP or ApproxDP guarantee, got {g!r}")


def _check_total_delta(delta: float, what: str) -> float:
    if delta >= 1.0:
        raise PrivacyError(
            f"{what} gives delta = {delta:g} >= 1, which is no privacy statement; "
            "use smaller deltas or fewer compositions"
        )
    return delta


# --------------------------------------------------------------------------------------------
# composition
# --------------------------------------------------------------------------------------------
def compose_basic(guarantees: Sequence[DPGuarantee]) -> DPGuarantee:
    """Basic (sequential) composition: ``(sum eps_i, sum delta_i)``.

    Parameters
    ----------
    guarantees : sequence of PureDP or ApproxDP
        Guarantees of mechanisms run on the same data.

    Returns
    -------
    PureDP or ApproxDP
        :class:`PureDP` when every input is a :class:`PureDP` (``PureDP(0)`` for an empty
        sequence), otherwise :class:`ApproxDP`.

    Raises
    ------
    PrivacyError
        If the summed delta reaches 1.

    References
    ----------
    Dwork & Roth (2014), Thm 3.16; Han et al. (2021), Lemma 2.4.
    """
    gs = [_as_dp(f"guarantees[{i}]", g) for i, g in enumerate(guarantees)]
    eps = math.fsum(g.epsilon for g in gs)
    if all(isinstance(g, PureDP) for g in gs):
        return PureDP(eps)
    delta = _check_total_delta(math.fsum(g.delta for g in gs), "basic composition")
    return ApproxDP(eps, delta)


def compose_parallel(guarantees: Sequence[DPGuarantee]) -> DPGuarantee:
    """Parallel composition over disjoint users: ``(max eps_i, max delta_i)``.

    Each mechanism sees a disjoint part of the data (e.g. the batches of Hanna et al. 2022,
    Algorithm 3, or the rounds of a local algorithm where each user is seen once), so a
    neighbouring dataset changes the input of one mechanism only.

    References
    ----------
    McSherry (2009), "Privacy Integrated Queries", Thm 4; Hanna et al. (2022), Appendix C.
    """
    gs = [_as_dp(f"guarantees[{i}]", g) for i, g in enumerate(guarantees)]
    if not gs:
        return PureDP(0.0)
    eps = max(g.epsilon for g in gs)
    if all(isinstance(g, PureDP) for g in gs):
        return PureDP(eps)
    return ApproxDP(eps, max(g.delta for g in gs))


def compose_advanced(g: DPGuarantee, k: int, delta_prime: float) -> ApproxDP:
    """Advanced composition of ``k`` runs of an ``(eps, delta)``-DP mechanism.

    ``eps' = sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1)``, ``delta_total = k delta + delta'``
    (Dwork, Rothblum & Vadhan 2010; Dwork & Roth 2014, Thm 3.20).

    When basic composition ``(k eps, k delta)`` has the smaller epsilon it is returned instead:
    it then dominates (smaller epsilon *and* smaller delta), so the result is never worse than
    :func:`compose_basic`.

    Parameters
    ----------
    g : PureDP or ApproxDP
        Guarantee of one run.
    k : int
        Number of (adaptive) runs, >= 1.
    delta_prime : float
        Slack ``delta'`` in (0, 1).
    """
    g = _as_dp("g", g)
    k = check_int("k", k, 1)
    dp = check_delta(delta_prime, "delta_prime")
    eps = g.epsilon
    eps_adv = math.sqrt(2.0 * k * math.log(1.0 / dp)) * eps + k * eps * math.expm1(eps)
    if k * eps <= eps_adv:
        return ApproxDP(k * eps, _check_total_delta(k * g.delta, "advanced composition"))
    return ApproxDP(eps_adv, _check_total_delta(k * g.delta + dp, "advanced composition"))


def compose_zcdp(guarantees: Sequence[ZCDP]) -> ZCDP:
    """zCDP composition: ``rho = sum rho_i`` (Bun & Steinke 2016, Lemma 2.3)."""
    rhos = []
    for i, g in enumerate(guarantees):
        if not isinstance(g, ZCDP):
            raise ValidationError(
                f"guarantees[{i}] must be a ZCDP guarantee, got {g!r}; "
                "convert pure DP with pure_to_zcdp(epsilon)"
            )
        rhos.append(g.rho)
    return ZCDP(math.fsum(rhos))


# --------------------------------------------------------------------------------------------
# zCDP of mechanisms and conversions
# --------------------------------------------------------------------------------------------
def gaussian_zcdp(sigma: float, sensitivity: float = 1.0) -> ZCDP:
    """zCDP of ``N(0, sigma^2)`` noise at L2 ``sensitivity``: ``rho = Delta^2 / (2 sigma^2)``.

    Bun & Steinke (2016), Prop 1.6.
    """
    sig = check_positive("sigma", sigma)
    s = check_nonnegative("sensitivity", sensitivity)
    return ZCDP(s * s / (2.0 * sig * sig))


def pure_to_zcdp(epsilon: float) -> ZCDP:
    """An ``epsilon``-DP mechanism is ``epsilon^2 / 2``-zCDP (Bun & Steinke 2016, Prop 1.4)."""
    eps = check_in_range("epsilon", epsilon, 0.0, None)
    return ZCDP(0.5 * eps * eps)


def sigma_for_zcdp(rho: float, sensitivity: float = 1.0) -> float:
    """Gaussian std giving ``rho``-zCDP at L2 ``sensitivity``: ``sigma = Delta / sqrt(2 rho)``."""
    r = check_positive("rho", rho)
    return check_nonnegative("sensitivity", sensitivity) / math.sqrt(2.0 * r)


def _cks_epsilon_at(alpha: np.ndarray, rho: float, log_delta: float) -> np.ndarray:
    """CKS (2020) Prop 12 with the zCDP Renyi curve ``D_alpha = rho alpha``.

    ``eps(alpha) = alpha rho + ln(1 - 1/alpha) - (ln delta + ln alpha) / (alpha - 1)``.
    """
    return alpha * rho + np.log1p(-1.0 / alpha) - (log_delta + np.log(alpha)) / (alpha - 1.0)


def _cks_epsilon(rho: float, delta: float) -> float:
    if rho == 0.0:
        return 0.0
    # total variation <= sqrt(1 - e^{-KL}) (Bretagnolle-Huber) and KL <= rho: (0, delta)-DP
    if delta * delta + math.expm1(-rho) >= 0.0:
        return 0.0
    log_delta = math.log(delta)

    def g(u: float) -> float:  # alpha = 1 + e^u: unconstrained search variable
        return float(_cks_epsilon_at(np.array([1.0 + math.exp(u)]), rho, log_delta)[0])

    u = np.linspace(-20.0, 40.0, 1201)
    vals = _cks_epsilon_at(1.0 + np.exp(u), rho, log_delta)
    i = int(np.nanargmin(vals))
    lo, hi = u[max(i - 1, 0)], u[min(i + 1, u.size - 1)]
    res = optimize.minimize_scalar(g, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
    best = min(float(vals[i]), float(res.fun)) if res.success else float(vals[i])
    return max(0.0, best)


def zcdp_to_approx_dp(rho: float, delta: float, method: str = "cks") -> float:
    """Smallest epsilon such that ``rho``-zCDP implies ``(epsilon, delta)``-DP.

    Parameters
    ----------
    rho : float
        zCDP parameter >= 0 (a :class:`ZCDP` object is accepted too).
    delta : float
        Target delta in (0, 1).
    method : {"cks", "bs"}
        ``"bs"``: Bun & Steinke (2016), Prop 1.3, ``eps = rho + 2 sqrt(rho ln(1/delta))``.
        ``"cks"`` (default, tighter): Canonne, Kamath & Steinke (2020), Prop 12 / Cor 13,
        ``eps = inf_{alpha > 1} alpha rho + ln(1 - 1/alpha) - ln(alpha delta) / (alpha - 1)``,
        minimized numerically (any alpha gives a valid epsilon, so the numerical optimum is a
        valid statement); 0 when ``delta >= sqrt(1 - e^{-rho})`` (total-variation bound).

    Returns
    -------
    float
        epsilon >= 0.
    """
    if isinstance(rho, ZCDP):
        rho = rho.rho
    r = check_in_range("rho", rho, 0.0, None)
    dlt = check_delta(delta)
    method = check_choice("method", method, CONVERSIONS)
    if method == "bs":
        return r + 2.0 * math.sqrt(r * math.log(1.0 / dlt))
    return _cks_epsilon(r, dlt)


def zcdp_for_approx_dp(epsilon: float, delta: float, method: str = "cks") -> ZCDP:
    """Largest ``rho`` whose zCDP implies ``(epsilon, delta)``-DP (inverse of :func:`zcdp_to_approx_dp`).

    ``"bs"`` has the closed form ``rho = (sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))^2``;
    ``"cks"`` is found by root search (the conversion is increasing in rho) and rounded down so
    that ``zcdp_to_approx_dp(rho, delta, "cks") <= epsilon`` always holds.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    method = check_choice("method", method, CONVERSIONS)
    L = math.log(1.0 / dlt)
    rho_bs = eps * eps / (math.sqrt(L + eps) + math.sqrt(L)) ** 2  # = (sqrt(L+eps) - sqrt(L))^2
    while rho_bs + 2.0 * math.sqrt(rho_bs * L) > eps:  # round down: never optimistic
        rho_bs *= 1.0 - 1e-15
    if method == "bs":
        return ZCDP(rho_bs)
    # cks <= bs pointwise, so rho_bs meets the target; grow the bracket until it does not
    lo = rho_bs
    hi = max(2.0 * lo, 1e-300)
    while _cks_epsilon(hi, dlt) <= eps:
        lo, hi = hi, 2.0 * hi
    root = calibrate_noise(
        lambda r: _cks_epsilon(r, dlt),
        eps,
        Bracket(lo, hi),
        decreasing=False,
        xtol=1e-300,
        rtol=1e-14,
        rel=1e-13,
    )
    return ZCDP(max(root, lo))


# --------------------------------------------------------------------------------------------
# budget splits and reporting
# --------------------------------------------------------------------------------------------
def _weights(name: str, parts: int | Sequence[float]) -> np.ndarray:
    if isinstance(parts, (int, np.integer)) and not isinstance(parts, bool):
        k = check_int(name, parts, 1)
        return np.full(k, 1.0 / k)
    try:
        w = np.asarray(parts, dtype=float)
    except (TypeError, ValueError):
        raise ValidationError(
            f"{name} must be a positive integer or a sequence of positive weights, got {parts!r}"
        ) from None
    if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValidationError(
            f"{name} must be a positive integer or a non-empty sequence of finite "
            f"positive weights, got {parts!r}"
        )
    return w / w.sum()


def _split(total: float, w: np.ndarray) -> list[float]:
    shares = [total * float(x) for x in w]
    excess = math.fsum(shares) - total
    if excess > 0:  # rounding: make the parts compose back to at most the total
        j = int(np.argmax(shares))
        shares[j] = max(0.0, shares[j] - excess)
        while math.fsum(shares) > total and shares[j] > 0:  # the subtraction itself may round up
            shares[j] = math.nextafter(shares[j], 0.0)
    return shares


def split_budget(
    epsilon: float,
    delta: float,
    parts: int | Sequence[float],
    *,
    delta_weights: Sequence[float] | None = None,
) -> list[ApproxDP]:
    """Split an ``(epsilon, delta)`` budget into parts whose basic composition is the total.

    Parameters
    ----------
    epsilon : float
        Total epsilon > 0.
    delta : float
        Total delta in [0, 1).
    parts : int or sequence of float
        Number of equal parts, or positive weights (normalized to sum to 1) used for epsilon and,
        unless ``delta_weights`` is given, for delta.
    delta_weights : sequence of float, optional
        Separate weights for delta (same length as ``parts``), e.g. Zheng et al. (2020), Alg. 5:
        ``split_budget(eps, delta, [1, 2], delta_weights=[1, 1])`` gives
        ``(eps/3, delta/2), (2 eps/3, delta/2)``.

    Returns
    -------
    list of ApproxDP
        The parts; ``compose_basic(parts)`` is at most ``(epsilon, delta)`` (rounding is absorbed
        by the largest part).

    Examples
    --------
    Han et al. (2021), §2.4: the OLS pair ``(M_t, u_t)`` at ``(eps/2, delta/2)`` each is
    ``split_budget(eps, delta, 2)``; in the multi-parameter setting (§2.6) each part runs at
    ``(eps/4, delta/4)``: ``split_budget(eps, delta, 4)``.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=True)
    w = _weights("parts", parts)
    v = w if delta_weights is None else _weights("delta_weights", delta_weights)
    if v.size != w.size:
        raise ValidationError(
            f"delta_weights must have the same length as parts ({w.size}), got {v.size}"
        )
    return [ApproxDP(e, d) for e, d in zip(_split(eps, w), _split(dlt, v))]


def to_guarantee(
    g: PureDP | ApproxDP | ZCDP,
    model: str,
    unit: str = "user",
    notes: str = "",
    *,
    delta: float | None = None,
    method: str = "cks",
    local_epsilon: float | None = None,
    ledger: Event | None = None,
) -> PrivacyGuarantee:
    """Convert an accounting object into the :class:`PrivacyGuarantee` an algorithm reports.

    Parameters
    ----------
    g : PureDP, ApproxDP or ZCDP
        The accounted guarantee.
    model : {"local", "shuffle", "joint", "central"}
        Trust model in which it holds.
    unit : str
        Neighbouring relation ("user" = one round's user).
    notes : str
        Calibration preset, composition used, caveats.
    delta : float, optional
        Required for :class:`ZCDP`: the delta of the reported ``(epsilon, delta)`` statement.
    method : {"cks", "bs"}
        zCDP conversion (see :func:`zcdp_to_approx_dp`).
    local_epsilon : float, optional
        Shuffle model: the local level of each report (see :class:`PrivacyGuarantee`).
    ledger : Event, optional
        The events composed (:mod:`privbandits.privacy.ledger`).
    """
    if isinstance(g, ZCDP):
        if delta is None:
            raise ValidationError(
                "to_guarantee needs delta=... to report a ZCDP guarantee as (epsilon, delta)"
            )
        eps = zcdp_to_approx_dp(g.rho, delta, method)
        how = f"{g.rho:.6g}-zCDP converted with {method.upper()}"
        return PrivacyGuarantee(
            model=model,
            epsilon=eps,
            delta=float(delta),
            unit=unit,
            notes=f"{notes}; {how}" if notes else how,
            rho=g.rho,
            local_epsilon=local_epsilon,
            ledger=ledger,
        )
    if delta is not None:
        raise ValidationError(
            "delta=... is only used for ZCDP guarantees; "
            f"{type(g).__name__} already carries its delta"
        )
    g = _as_dp("g", g)
    return PrivacyGuarantee(
        model=model,
        epsilon=g.epsilon,
        delta=g.delta,
        unit=unit,
        notes=notes,
        local_epsilon=local_epsilon,
        ledger=ledger,
    )
