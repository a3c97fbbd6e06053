"""Shuffle vector / matrix summation of Cheu, Joseph, Mao & Peng (2022).

The protocols ``(R1, S1, A1)`` (vectors) and ``(R2, S2, A2)`` (symmetric matrices) as used by
Sarmasarkar (2026), Appendix T, split into the roles of the shuffle model (the documentation's
Concepts: trust models) and batched over the replication axis ``R``:

* client randomizer (:func:`local_randomizer`, :func:`randomize_users`): each user biases every
  coordinate by ``Delta`` and sends, per coordinate label, a multiset of ``ceil(2 g) + b`` bits
  with ``x_hat + gamma2`` ones (randomized rounding plus binomial noise, drawn by the compiled
  sampler :func:`~privbandits.privacy.samplers.binomial_bits`);
* shuffler (:func:`shuffle`): releases the multiset of *all* users' labelled bits, never a
  per-user message;
* analyzer (:func:`analyze`): counts the ones per label and de-biases.

The message-level path (:func:`randomize_users` -> :func:`shuffle` -> :func:`analyze`) is the
reference; :func:`aggregate_sum` draws the analyzer's output directly and is exact in
distribution.

References
----------
Cheu, Joseph, Mao & Peng (2022), "Shuffle private stochastic convex optimization", ICLR.
Sarmasarkar (2026), arXiv 2602.00417v2, Appendix T (Algorithms 4-6, eq. 122, Lemmas T.1-T.2).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from privbandits.core.errors import DataBoundError, TrustBoundaryError, ValidationError
from privbandits.core.messages import (
    PrivatizedMessage,
    ShuffledBatch,
    check_origin,
    shuffle_messages,
)
from privbandits.core.validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_finite_array,
    check_in_range,
    check_int,
    check_positive,
)
from privbandits.privacy import binomial_accounting
from privbandits.privacy.accounting import (
    ZCDP,
    ApproxDP,
    gaussian_zcdp,
    sigma_for_zcdp,
    to_guarantee,
    zcdp_for_approx_dp,
)
from privbandits.privacy.binomial_accounting import shift_budget
from privbandits.privacy.calibration import Bracket, calibrate_noise
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.privacy.randomizers import (
    binomial_bit_counts,
    bits_from_counts,
    randomized_rounding,
)

__all__ = [
    "CHEU_CONSTANT",
    "CHEU_MAX_EPSILON",
    "ShuffleSumResult",
    "SumParams",
    "aggregate_release",
    "aggregate_sum",
    "analyze",
    "analyzer_variance",
    "calibrated_params",
    "encode_matrices",
    "encode_rank_one",
    "encode_vectors",
    "local_randomizer",
    "randomize_users",
    "release_from_rounded",
    "shuffle",
    "shuffle_matrix_sum",
    "shuffle_vector_sum",
    "theorem_epsilon",
    "theory_params",
    "upper_to_symmetric",
]

#: Largest epsilon covered by Lemmas T.1 / T.2 (Cheu et al. 2022).
CHEU_MAX_EPSILON: float = 15.0
#: The constant of eq. (122); Lemma T.1 is proved for this value.
CHEU_CONSTANT: float = 24e4

#: The bit probability ``p`` of eq. (122).
_BIT_PROBABILITY = 0.25

_KINDS = ("vector", "matrix")
_CONVERSIONS = ("bs", "cks")
_NORM_POLICIES = ("clip", "reject")


@dataclass(frozen=True)
class SumParams:
    """Parameters of one call of the shuffle summation protocol (all public).

    Build with :func:`theory_params` (eq. 122) or :func:`calibrated_params` (Appendix T,
    "practical calibrated mode").

    Attributes
    ----------
    kind : {"vector", "matrix"}
        ``R1/A1`` (labels ``k = 1..d``) or ``R2/A2`` (labels ``(i, j)``, ``i <= j``).
    n : int
        Number of users of the call.
    d : int
        Feature dimension (vector length, or the side of the matrices).
    n_labels : int
        Number of summed coordinates: ``d`` (vector) or ``d (d + 1) / 2`` (matrix, upper triangle).
    d_formula : int
        The dimension plugged into ``g`` and the log of eq. (122): ``d`` (paper, literal) or
        ``d (d + 1) / 2`` for matrices with ``matrix_dim="summed"`` (the dimension of the summed vector, which Lemma T.1 needs).
    Delta : float
        Input norm bound and bias: ``||v||_2 <= Delta`` (vectors), ``||X||_F <= Delta`` (matrices).
    g : float
        Precision ``max(2 sqrt(n), d_formula, 4)`` (real-valued, Appendix T).
    b : int
        Binomial noise bits per label and user.
    p : float
        Bit probability of the binomial noise (1/4).
    epsilon, delta : float
        Target of the call (``epsilon`` is nan when the call was calibrated from ``rho``).
    mode : {"theory", "calibrated"}
        How ``b`` was chosen.
    sensitivity : float
        l2 replacement sensitivity of the vector of summed coordinates, used by the
        calibrated-mode accounting (``2 Delta``; ``sqrt(2) Delta`` for PSD matrices).
    psd_inputs : bool
        Whether matrix inputs are declared (and checked) positive semidefinite.
    conversion : {"bs", "cks"}
        zCDP -> (epsilon, delta) conversion used by the calibrated mode.
    """

    kind: str
    n: int
    d: int
    n_labels: int
    d_formula: int
    Delta: float
    g: float
    b: int
    p: float
    epsilon: float
    delta: float
    mode: str
    sensitivity: float
    psd_inputs: bool = False
    conversion: str = "bs"

    @property
    def bits_per_label(self) -> int:
        """Bits each user sends per label: ``ceil(2 g) + b`` (not ``g + b`` as printed: the biased input ranges over ``[0, 2 Delta]``)."""
        return math.ceil(2.0 * self.g) + self.b

    @property
    def messages_per_user(self) -> int:
        """Bits each user sends in total: ``n_labels * (ceil(2 g) + b)``."""
        return self.n_labels * self.bits_per_label

    @property
    def mechanism(self) -> str:
        """Name carried by the protocol's messages."""
        return f"cheu-{self.kind}-sum"

    @property
    def binomial_noise_std(self) -> float:
        """Std of the binomial part of the per-coordinate error: ``(Delta/g) sqrt(n b p (1-p))``."""
        return self.Delta / self.g * math.sqrt(self.n * self.b * self.p * (1.0 - self.p))

    @property
    def noise_std_bound(self) -> float:
        """Upper bound ``(Delta/g) sqrt(n/4 + n b p (1-p))`` on the per-coordinate error std."""
        return (
            self.Delta
            / self.g
            * math.sqrt(self.n / 4.0 + self.n * self.b * self.p * (1.0 - self.p))
        )

    def theorem_epsilon(self) -> float:
        """epsilon that Lemma T.1 certifies for the ``b`` actually used (see :func:`theorem_epsilon`).

        Lemma T.1's dimension is that of the summed vector, ``n_labels`` (``d (d + 1) / 2`` for
        matrices), whatever dimension chose ``b``; with the paper's literal
        ``d`` the certified epsilon of a matrix call is therefore slightly above its target.
        """
        return theorem_epsilon(self.g, self.b, self.n, self.n_labels, self.delta)

    def theorem_applies(self) -> bool:
        """Whether Lemma T.1 covers this call.

        Needs eq. (122)'s ``g`` (at ``n_labels``) and ``p``, a certified epsilon <= 15 and
        ``delta < 1/2``.
        """
        return (
            self.g == _precision(self.n, self.n_labels)
            and self.p == _BIT_PROBABILITY
            and self.theorem_epsilon() <= CHEU_MAX_EPSILON
            and self.delta < 0.5
        )

    def guarantee(self) -> PrivacyGuarantee:
        """Per-call shuffle-DP guarantee of the protocol, computed from the parameters actually used.

        * If Lemma T.1 applies (:meth:`theorem_applies`: eq. (122)'s ``g`` and ``p`` for the
          summed dimension, certified epsilon at most 15, ``delta < 1/2``):
          ``(theorem_epsilon, delta)``-shuffle DP (Cheu et al. 2022; Lemma T.2 for matrices is
          Lemma T.1 on the ``d (d + 1) / 2`` upper-triangular coordinates).
        * Otherwise (in practice: calibrated mode): epsilon at ``delta`` computed from the
          binomial pmf (:meth:`binomial_epsilon`, an upper bound over every shift of the released
          counts one user can cause, rounding included; no approximation).
        * Only if that computation is intractable (:meth:`binomial_tractable`; very large ``n b``)
          is the binomial noise treated as Gaussian with the same variance,
          ``rho = sensitivity^2 / (2 binomial_noise_std^2)``-zCDP converted at ``delta``: a
          heuristic, returned with ``approximate=True`` (printed as ``~(epsilon, delta)-DP``).

        One call, replacement of one user's input; calls compose (basic, advanced or zCDP).
        """
        eps_thm = self.theorem_epsilon()
        if self.theorem_applies():
            g = ApproxDP(eps_thm, self.delta)
            notes = (
                f"Cheu et al. (2022) / Sarmasarkar (2026) Lemma T.{1 if self.kind == 'vector' else 2}: "
                f"{self.kind} summation, n={self.n}, g={self.g:.6g}, b={self.b}, p={self.p}, "
                f"Delta={self.Delta:g} (eq. 122 solved for epsilon at the b used); mode={self.mode}"
            )
            return to_guarantee(g, model="shuffle", unit="user", notes=notes)
        sigma = self.binomial_noise_std
        if sigma == 0.0:
            return PrivacyGuarantee(
                model="none",
                epsilon=math.inf,
                delta=0.0,
                unit="user",
                notes=f"{self.kind} summation with b = 0: no privacy noise",
            )
        rho = gaussian_zcdp(sigma, self.sensitivity)
        gauss = to_guarantee(
            rho, model="shuffle", unit="user", delta=self.delta, method=self.conversion
        )
        common = (
            f"{self.kind} summation, n={self.n}, g={self.g:.6g}, b={self.b}, p={self.p}, "
            f"Delta={self.Delta:g}, l2 sensitivity {self.sensitivity:.6g}; Lemma "
            f"T.{1 if self.kind == 'vector' else 2} would certify only epsilon={eps_thm:.4g} (and only for "
            "epsilon <= 15 with eq. 122's g)"
        )
        if self.binomial_tractable():
            eps_bin = self.binomial_epsilon()
            if not math.isfinite(eps_bin):
                return PrivacyGuarantee(
                    model="none",
                    epsilon=math.inf,
                    delta=self.delta,
                    unit="user",
                    notes="the binomial tail alone exceeds delta: no (epsilon, delta) claim; "
                    + common,
                )
            notes = (
                f"{self.mode} mode, computed from the binomial pmf (privbandits.privacy.binomial_accounting: "
                "worst reachable shift of Bin(nb, p) per label, rounding included; an upper bound, no "
                f"Gaussian approximation); the Gaussian approximation would give epsilon={gauss.epsilon:.4g}; "
                + common
            )
            return to_guarantee(
                ApproxDP(eps_bin, self.delta), model="shuffle", unit="user", notes=notes
            )
        notes = (
            f"{self.mode} mode, APPROXIMATE (binomial bound intractable at nb={self.n * self.b}): Bin(nb, p) "
            f"noise treated as Gaussian with std {sigma:.6g} (rho={_rho_value(rho):.6g}, {self.conversion} "
            "conversion); " + common
        )
        return dataclasses.replace(
            to_guarantee(
                rho,
                model="shuffle",
                unit="user",
                notes=notes,
                delta=self.delta,
                method=self.conversion,
            ),
            approximate=True,
        )

    def binomial_tractable(self) -> bool:
        """Whether :meth:`binomial_epsilon` is cheap enough (central window times shifts below 5e7)."""
        _, s_max = shift_budget(self.g, self.Delta, self.sensitivity)
        width = (
            2.0
            * binomial_accounting.Z_WINDOW
            * math.sqrt(self.n * self.b * self.p * (1.0 - self.p))
            + 1.0
        )
        return width * (2 * s_max + 1) <= 5e7

    def binomial_epsilon(self, delta: float | None = None) -> float:
        """epsilon at ``delta`` (default: the call's) from the binomial pmf
        (:func:`~privbandits.privacy.binomial_accounting.binomial_sum_epsilon`): an upper bound for
        one call under replacement of one user's input, without the Gaussian approximation."""
        return binomial_accounting.binomial_sum_epsilon(
            self.n * self.b,
            self.p,
            self.n_labels,
            self.g,
            self.Delta,
            self.sensitivity,
            self.delta if delta is None else delta,
        )


def _rho_value(rho: ZCDP | float) -> float:
    return float(rho.rho if isinstance(rho, ZCDP) else rho)  # ZCDP object or bare float


def _labels(kind: str, d: int) -> int:
    return d if kind == "vector" else d * (d + 1) // 2


def _dims(kind: str, n: int, d: int, matrix_dim: str) -> tuple[str, int, int, int, str]:
    kind = check_choice("kind", kind, _KINDS)
    n = check_int("n", n, 1)
    d = check_int("d", d, 1)
    matrix_dim = check_choice("matrix_dim", matrix_dim, ("literal", "summed"))
    n_labels = _labels(kind, d)
    d_formula = n_labels if (kind == "matrix" and matrix_dim == "summed") else d
    return kind, n, d, d_formula, matrix_dim


def _precision(n: int, d_formula: int) -> float:
    """``g = max(2 sqrt(n), d, 4)`` of eq. (122)."""
    return max(2.0 * math.sqrt(n), float(d_formula), 4.0)


def _log_term(d_formula: int, delta: float) -> float:
    """``log(4 (d^2 + 1) / delta)`` of eq. (122)."""
    return math.log(4.0 * (d_formula**2 + 1) / delta)


def theorem_epsilon(g: float, b: int, n: int, d_formula: int, delta: float) -> float:
    """The epsilon for which eq. (122) yields exactly this ``b``: ``g log(4(d^2+1)/delta) sqrt(24e4/(b n))``.

    Lemma T.1 (Cheu et al. 2022) states the protocol with ``b = 24e4 g^2 log^2(4(d^2+1)/delta) /
    (epsilon^2 n)`` is (epsilon, delta)-shuffle DP for ``0 < epsilon <= 15``; solving for epsilon at
    the (integer) ``b`` actually used gives the epsilon the theorem certifies.  ``inf`` when b = 0.
    """
    b = check_int("b", b, 0)
    n = check_int("n", n, 1)
    if b == 0:
        return math.inf
    return (
        check_positive("g", g)
        * _log_term(check_int("d_formula", d_formula, 1), check_delta(delta))
        * math.sqrt(CHEU_CONSTANT / (b * n))
    )


def theory_params(
    n: int,
    d: int,
    epsilon: float,
    delta: float,
    Delta: float,
    *,
    kind: str = "vector",
    matrix_dim: str = "literal",
    constant: float = CHEU_CONSTANT,
    psd_inputs: bool = False,
) -> SumParams:
    """Parameters of eq. (122) for one call at ``(epsilon, delta)`` with ``n`` users.

    ``g = max(2 sqrt(n), d, 4)``, ``p = 1/4``,
    ``b = ceil(constant g^2 log^2(4 (d^2 + 1) / delta) / (epsilon^2 n))`` (Sarmasarkar 2026, eq. 122;
    Appendix T).  Lemmas T.1/T.2 need ``0 < epsilon <= 15`` and ``0 < delta < 1/2``.

    Parameters
    ----------
    n : int
        Number of users of this call.
    d : int
        Feature dimension.
    epsilon, delta : float
        Privacy target of this call.
    Delta : float
        Input norm bound and bias.
    kind : {"vector", "matrix"}
        Vector (R1) or symmetric-matrix (R2) summation.
    matrix_dim : {"literal", "summed"}
        Which dimension enters eq. (122) for matrices: the paper's feature dimension ``d``
        (default) or the number of summed coordinates ``d (d + 1) / 2`` (the dimension of the summed vector, which Lemma T.1 needs).
    constant : float
        Multiplier of eq. (122) (24e4).  A smaller value (as in the Chowdhury & Zhou script) is
        allowed; the guarantee is then recomputed from the resulting ``b`` (see
        :meth:`SumParams.guarantee`), never assumed.
    psd_inputs : bool
        Matrix inputs are positive semidefinite (checked by :func:`encode_matrices`); only the
        calibrated-mode accounting uses it.
    """
    kind, n, d, d_formula, _ = _dims(kind, n, d, matrix_dim)
    eps = check_in_range("epsilon", epsilon, 0.0, CHEU_MAX_EPSILON, low_inclusive=False)
    dlt = check_in_range("delta", delta, 0.0, 0.5, low_inclusive=False, high_inclusive=False)
    Delta = check_positive("Delta", Delta)
    constant = check_positive("constant", constant)
    g = _precision(n, d_formula)
    b = math.ceil(constant * g**2 * _log_term(d_formula, dlt) ** 2 / (eps**2 * n))
    return _sum_params(kind, n, d, d_formula, Delta, g, b, eps, dlt, "theory", psd_inputs)


def _sensitivity(kind: str, Delta: float, psd_inputs: bool) -> float:
    """l2 replacement sensitivity of the summed coordinates (calibrated mode).

    Vectors with ``||v|| <= Delta``: ``2 Delta``.  Symmetric matrices with ``||X||_F <= Delta``: the
    upper-triangle vector of a difference has norm ``<= ||X - X'||_F <= 2 Delta``, and
    ``<= sqrt(2) Delta`` when both are PSD (``<X, X'> >= 0``).
    """
    if kind == "matrix" and psd_inputs:
        return math.sqrt(2.0) * Delta
    return 2.0 * Delta


def _sum_params(
    kind: str,
    n: int,
    d: int,
    d_formula: int,
    Delta: float,
    g: float,
    b: int,
    epsilon: float,
    delta: float,
    mode: str,
    psd_inputs: bool,
    conversion: str = "bs",
) -> SumParams:
    """The :class:`SumParams` of one call with ``p = 1/4`` (eq. 122) and the fields that follow from
    ``kind``: the number of summed coordinates, the sensitivity and the PSD flag (matrices only)."""
    return SumParams(
        kind=kind,
        n=n,
        d=d,
        n_labels=_labels(kind, d),
        d_formula=d_formula,
        Delta=Delta,
        g=g,
        b=b,
        p=_BIT_PROBABILITY,
        epsilon=epsilon,
        delta=delta,
        mode=mode,
        sensitivity=_sensitivity(kind, Delta, psd_inputs),
        psd_inputs=bool(psd_inputs and kind == "matrix"),
        conversion=conversion,
    )


def calibrated_params(
    n: int,
    d: int,
    Delta: float,
    *,
    delta: float,
    epsilon: float | None = None,
    rho: float | None = None,
    kind: str = "vector",
    matrix_dim: str = "literal",
    psd_inputs: bool = False,
    conversion: str = "bs",
) -> SumParams:
    """Practical calibrated mode: ``b`` from a Gaussian-equivalent noise level, checked on the binomial.

    ``rho = zcdp_for_approx_dp(epsilon, delta)`` (or the given ``rho``),
    ``sigma_G = sigma_for_zcdp(rho, Delta_2)`` with ``Delta_2 = 2 Delta`` (vectors, general
    matrices) or ``sqrt(2) Delta`` (PSD matrices), and
    ``b = ceil(sigma_G^2 g^2 / (Delta^2 n p (1 - p)))`` so that the aggregate binomial noise
    ``(Delta/g)(Bin(n b, p) - n b p)`` has variance at least ``sigma_G^2``.  ``g`` and ``p`` as in
    eq. (122).  The guarantee (:meth:`SumParams.guarantee`) is then computed from the binomial
    pmf; with an ``epsilon`` target, ``b`` is raised (if needed) until that computation meets it
    (the Gaussian match can fall short for small ``g``, where the rounding slack is large).

    Parameters
    ----------
    n, d, Delta, kind, matrix_dim, psd_inputs
        As in :func:`theory_params`.
    delta : float
        delta of the (epsilon, delta) statement.
    epsilon : float, optional
        Target epsilon (exactly one of ``epsilon`` and ``rho`` must be given).
    rho : float, optional
        Target zCDP level of this call (e.g. a per-round share of a zCDP budget, as in Sarmasarkar 2026, Algorithm 7).
    conversion : {"bs", "cks"}
        zCDP <-> (epsilon, delta) conversion: Bun & Steinke (2016) or
        Canonne, Kamath & Steinke (2020).
    """
    kind, n, d, d_formula, _ = _dims(kind, n, d, matrix_dim)
    Delta = check_positive("Delta", Delta)
    dlt = check_delta(delta)
    conversion = check_choice("conversion", conversion, _CONVERSIONS)
    if (epsilon is None) == (rho is None):
        raise ValidationError(
            "give exactly one of epsilon and rho to calibrated_params, got "
            f"epsilon={epsilon!r}, rho={rho!r}"
        )
    if rho is None:
        eps = check_epsilon(epsilon)
        rho_v = _rho_value(zcdp_for_approx_dp(eps, dlt, method=conversion))
    else:
        eps = math.nan
        rho_v = check_positive("rho", rho)
    sigma_G = sigma_for_zcdp(rho_v, _sensitivity(kind, Delta, psd_inputs))
    g = _precision(n, d_formula)
    p = _BIT_PROBABILITY
    b = math.ceil(sigma_G**2 * g**2 / (Delta**2 * n * p * (1.0 - p)))
    out = _sum_params(
        kind, n, d, d_formula, Delta, g, b, eps, dlt, "calibrated", psd_inputs, conversion
    )
    if rho is None and out.binomial_tractable() and out.binomial_epsilon() > eps:
        out = _raise_b_to_target(out, eps)
    return out


#: Headroom of :func:`_raise_b_to_target` above the smallest ``b`` meeting the target: a
#: ``1 / B_HEADROOM`` fraction, ``b = b_min - 1 + max(1, (b_min - 1) // B_HEADROOM)``.
B_HEADROOM = 200


def _raise_b_to_target(params: SumParams, epsilon: float) -> SumParams:
    """A ``b >= params.b`` whose binomial-pmf epsilon (:meth:`SumParams.binomial_epsilon`) meets ``epsilon``.

    The Gaussian-matched ``b`` can fall short when the rounding slack is large relative to the
    shift (small ``g``); the epsilon of the bound decreases in ``b``.  The smallest such ``b``,
    ``b_min``, is found by :func:`~privbandits.privacy.calibration.calibrate_noise` on the
    step function ``u -> epsilon(ceil(u))`` (each integer evaluated once); the result keeps a
    headroom of 0.5 % (:data:`B_HEADROOM`): ``b = b_min - 1 + max(1, (b_min - 1) // 200)``, the largest
    bit count a bisection to within 0.5 % of ``b_min`` can return (so never fewer bits than it).
    """
    cache: dict[int, float] = {}

    def eps_at(u: float) -> float:
        if u > 2.0**40:
            raise ValidationError(
                f"no b meets epsilon={epsilon:g} for n={params.n}, g={params.g:g}"
            )
        b = math.ceil(u)
        if b not in cache:
            cache[b] = dataclasses.replace(params, b=b).binomial_epsilon()
        return cache[b]

    # the epsilon scales roughly as 1/sqrt(b): start the bracket there
    lo = params.b
    hi = max(lo + 1, math.ceil(lo * (eps_at(lo) / epsilon) ** 2 * 1.02))
    u = calibrate_noise(eps_at, epsilon, Bracket(float(lo), float(hi), factor=2.0))
    b_min = math.ceil(u)
    b = b_min - 1 + max(1, (b_min - 1) // B_HEADROOM)
    if eps_at(b) > epsilon:  # the bound is monotone in b: never taken
        b = b_min
    return dataclasses.replace(params, b=b)


# --------------------------------------------------------------------------------------------
# encoding: norm policy, bias by Delta (client side, before randomizing)
# --------------------------------------------------------------------------------------------
def _norm_scale(
    norms: np.ndarray, Delta: float, policy: str, what: str
) -> tuple[np.ndarray | None, int]:
    """The factors that bring the ``norms`` above Delta down to Delta (None if none is above) and
    how many are above; under ``policy = "reject"`` any such norm raises (``what``: "x reaches")."""
    over = norms > Delta
    n_over = int(over.sum())
    if not n_over:
        return None, 0
    if policy == "reject":
        raise DataBoundError(
            f"{what} {float(norms.max()):.6g}, above Delta={Delta:g}; rescale the data, "
            "raise Delta, or use norm_policy='clip'"
        )
    return np.where(over, Delta / np.where(over, norms, 1.0), 1.0), n_over


def _project_rows(
    a: np.ndarray, norms: np.ndarray, Delta: float, policy: str, name: str, what: str
) -> tuple[np.ndarray, int]:
    factor, n_over = _norm_scale(norms, Delta, policy, f"{name} has {what} up to")
    if factor is not None:
        a = a * factor.reshape(factor.shape + (1,) * (a.ndim - factor.ndim))
    return a, n_over


def encode_vectors(
    v: np.ndarray, Delta: float, *, norm_policy: str = "clip"
) -> tuple[np.ndarray, int]:
    """Client-side encoding of ``R1``: project onto the l2 ball of radius Delta, add the bias Delta.

    Parameters
    ----------
    v : ndarray of shape (..., d)
        Input vectors (e.g. ``(R, n, d)``).
    Delta : float
        Norm bound.
    norm_policy : {"clip", "reject"}
        Vectors with ``||v||_2 > Delta`` are rescaled onto the sphere of radius Delta and counted
        (coordinate clipping alone would not meet the privacy condition), or rejected.

    Returns
    -------
    w : ndarray of shape (..., d)
        ``v + Delta``, in ``[0, 2 Delta]``.
    n_clipped : int
    """
    Delta = check_positive("Delta", Delta)
    policy = check_choice("norm_policy", norm_policy, _NORM_POLICIES)
    v = check_finite_array("v", v)
    if v.ndim < 1:
        raise ValidationError(f"v must have at least one dimension (..., d), got shape {v.shape}")
    v, n_clipped = _project_rows(v, np.linalg.norm(v, axis=-1), Delta, policy, "v", "l2 norm")
    return np.clip(v + Delta, 0.0, 2.0 * Delta), n_clipped


def encode_matrices(
    X: np.ndarray,
    Delta: float,
    *,
    norm_policy: str = "clip",
    psd_inputs: bool = False,
    atol: float = 1e-10,
) -> tuple[np.ndarray, int]:
    """Client-side encoding of ``R2``: Frobenius projection, upper triangle, bias Delta.

    Parameters
    ----------
    X : ndarray of shape (..., d, d)
        Symmetric input matrices.
    Delta : float
        Frobenius norm bound (the privacy condition is on the l2 norm of the
        summed entries, for which ``||X||_F <= Delta`` suffices; the paper's operator norm does not).
    norm_policy : {"clip", "reject"}
        Matrices with ``||X||_F > Delta`` are rescaled (and counted) or rejected.
    psd_inputs : bool
        Check that every input is positive semidefinite (needed when the parameters use the PSD
        sensitivity ``sqrt(2) Delta``).
    atol : float
        Tolerance (relative to ``max(1, Delta)``) for the symmetry and PSD checks.

    Returns
    -------
    w : ndarray of shape (..., d (d + 1) / 2)
        Upper-triangular entries ``X_ij + Delta``, ``i <= j``, row-major (``numpy.triu_indices``).
    n_clipped : int
    """
    Delta = check_positive("Delta", Delta)
    policy = check_choice("norm_policy", norm_policy, _NORM_POLICIES)
    X = check_finite_array("X", X)
    if X.ndim < 2 or X.shape[-1] != X.shape[-2]:
        raise ValidationError(f"X must have shape (..., d, d), got {X.shape}")
    tol = atol * max(1.0, Delta)
    asym = float(np.max(np.abs(X - np.swapaxes(X, -1, -2)))) if X.size else 0.0
    if asym > tol:
        raise ValidationError(f"X must be symmetric; max |X - X^T| = {asym:.3g} exceeds {tol:.3g}")
    if psd_inputs and X.size:
        lam_min = float(np.min(np.linalg.eigvalsh(X)))
        if lam_min < -tol:
            raise DataBoundError(
                f"X must be positive semidefinite (psd_inputs=True); smallest eigenvalue "
                f"{lam_min:.3g}"
            )
    X, n_clipped = _project_rows(
        X, np.linalg.norm(X, axis=(-2, -1)), Delta, policy, "X", "Frobenius norm"
    )
    iu = np.triu_indices(X.shape[-1])
    return np.clip(X[..., iu[0], iu[1]] + Delta, 0.0, 2.0 * Delta), n_clipped


def encode_rank_one(
    x: np.ndarray,
    weight: np.ndarray | float = 1.0,
    Delta: float = 1.0,
    *,
    norm_policy: str = "clip",
) -> tuple[np.ndarray, int]:
    """Encode the rank-one PSD inputs ``w x x^T`` of both Sarmasarkar algorithms without forming them twice.

    ``||w x x^T||_F = w ||x||^2``; inputs above Delta are rescaled (or rejected) as in
    :func:`encode_matrices`.  PSD by construction (``w >= 0`` is checked), so the PSD
    sensitivity ``sqrt(2) Delta`` applies.

    Parameters
    ----------
    x : ndarray of shape (..., d)
    weight : float or ndarray of shape (...)
        Nonnegative weights ``w``.
    Delta : float
    norm_policy : {"clip", "reject"}

    Returns
    -------
    w : ndarray of shape (..., d (d + 1) / 2), n_clipped : int
    """
    Delta = check_positive("Delta", Delta)
    policy = check_choice("norm_policy", norm_policy, _NORM_POLICIES)
    x = check_finite_array("x", x)
    if x.ndim < 1:
        raise ValidationError(f"x must have shape (..., d), got {x.shape}")
    wt = check_finite_array(
        "weight", np.broadcast_to(np.asarray(weight, dtype=float), x.shape[:-1])
    )
    if wt.size and float(wt.min()) < 0.0:
        raise ValidationError(
            f"weight must be nonnegative (PSD inputs), got minimum {float(wt.min()):g}"
        )
    fro = wt * np.einsum("...d,...d->...", x, x)
    scale, n_clipped = _norm_scale(fro, Delta, policy, "w ||x||^2 reaches")
    if scale is not None:
        wt = wt * scale
    iu = np.triu_indices(x.shape[-1])
    upper = wt[..., None] * x[..., iu[0]] * x[..., iu[1]]
    return np.clip(upper + Delta, 0.0, 2.0 * Delta), n_clipped


def upper_to_symmetric(o: np.ndarray, d: int) -> np.ndarray:
    """Mirror upper-triangular values ``(..., d (d + 1) / 2)`` into symmetric ``(..., d, d)`` matrices (A2)."""
    d = check_int("d", d, 1)
    o = np.asarray(o)
    if o.shape[-1] != d * (d + 1) // 2:
        raise ValidationError(
            f"o must have last axis d(d+1)/2 = {d * (d + 1) // 2}, got shape {o.shape}"
        )
    iu = np.triu_indices(d)
    out = np.zeros(o.shape[:-1] + (d, d), dtype=o.dtype)
    out[..., iu[0], iu[1]] = o
    out[..., iu[1], iu[0]] = o
    return out


# --------------------------------------------------------------------------------------------
# roles: client randomizer, shuffler, analyzer (the reference message-level path)
# --------------------------------------------------------------------------------------------
def _check_w(w: np.ndarray, params: SumParams, lead: int) -> np.ndarray:
    w = check_finite_array("w", w)
    if w.ndim != lead + 1 or w.shape[-1] != params.n_labels:
        axes = "(R, n_labels)" if lead == 1 else "(R, n, n_labels)"
        raise ValidationError(
            f"w must have shape {axes} with n_labels={params.n_labels}, got {w.shape}"
        )
    return w


def _check_users(w: np.ndarray, params: SumParams) -> np.ndarray:
    """:func:`_check_w` for ``(R, n, n_labels)`` with the ``n`` users of ``params``."""
    w = _check_w(w, params, 2)
    if w.shape[1] != params.n:
        raise ValidationError(
            f"w has {w.shape[1]} users but the parameters were set for n={params.n}"
        )
    return w


def local_randomizer(
    w: np.ndarray, params: SumParams, rng: np.random.Generator, *, materialize_bits: bool = False
) -> PrivatizedMessage:
    """One user's randomizer ``R1`` / ``R2`` (Algorithm 4) applied to its encoded coordinates.

    Parameters
    ----------
    w : ndarray of shape (R, n_labels)
        The user's biased coordinates from :func:`encode_vectors` / :func:`encode_matrices` /
        :func:`encode_rank_one` (one user per replication).
    params : SumParams
    rng : Generator
        Client noise stream.
    materialize_bits : bool
        If True the message is the literal labelled multiset: payload ``label_multi`` and
        ``bit_multi`` of shape ``(R, n_labels * (ceil(2g) + b))`` (only for small ``b``).
        Otherwise each label's multiset is sent as its number of ones, payload ``count`` of shape
        ``(R, n_labels)`` -- the same multiset, encoded compactly.  Either way the shuffler
        (:func:`shuffle`) forwards only the union of all users' multisets to the analyzer.
    """
    w = _check_w(w, params, 1)
    counts = binomial_bit_counts(w, params.g, params.b, params.p, params.Delta, rng)
    if not materialize_bits:
        return PrivatizedMessage(payload={"count": counts}, mechanism=params.mechanism)
    return PrivatizedMessage(payload=_bit_payload(counts, params), mechanism=params.mechanism)


def _bit_payload(counts: np.ndarray, params: SumParams) -> dict[str, np.ndarray]:
    nb = params.bits_per_label
    if params.messages_per_user > 50_000_000:
        raise ValidationError(
            f"materialize_bits would create {params.messages_per_user} bits per user; "
            "use the count encoding (materialize_bits=False) for large b"
        )
    bits = bits_from_counts(counts, nb)  # (..., n_labels, nb)
    labels = np.broadcast_to(np.arange(params.n_labels, dtype=np.int32)[:, None], bits.shape)
    lead = counts.shape[:-1]
    return {"label_multi": labels.reshape(lead + (-1,)), "bit_multi": bits.reshape(lead + (-1,))}


def randomize_users(
    w: np.ndarray, params: SumParams, rng: np.random.Generator, *, materialize_bits: bool = False
) -> list[PrivatizedMessage]:
    """Run :func:`local_randomizer` for each of the ``n`` users of ``w`` (shape ``(R, n, n_labels)``).

    The randomness is drawn for all users at once (vectorized) and split into one
    :class:`PrivatizedMessage` per user; each message depends only on its own user's row.
    """
    w = _check_users(w, params)
    counts = binomial_bit_counts(w, params.g, params.b, params.p, params.Delta, rng)
    out = []
    for u in range(params.n):
        payload = (
            _bit_payload(counts[:, u], params) if materialize_bits else {"count": counts[:, u]}
        )
        out.append(PrivatizedMessage(payload=payload, mechanism=params.mechanism))
    return out


def shuffle(messages: Sequence[PrivatizedMessage], rng: np.random.Generator) -> ShuffledBatch:
    """Shuffler ``S1`` / ``S2`` (Algorithm 5): the multiset of all users' labelled bits.

    In the protocol every labelled bit is a separate message and the shuffler permutes all bits of
    all users together, so the analyzer sees a multiset of ``(label, bit)`` pairs and nothing that
    groups the bits by user.

    * Materialized bits (payload ``label_multi`` / ``bit_multi``): exactly that, by
      :func:`privbandits.core.messages.shuffle_messages` (every bit a message; independent uniform
      permutation per replication from the shuffler's generator).
    * Count encoding (payload ``count``, one count of ones per label and user): the shuffler
      releases the histogram of the multiset, ``ones`` and ``bits`` of shape ``(R, n_labels)``
      (the numbers of one-bits and of all bits carrying each label, summed over users).  A
      uniformly permuted sequence of bits carries exactly the information of its histogram (given
      the histogram its order is uniform, independent of the inputs), so this is the same release
      as the permuted bits; no randomness is needed.  Permuting the users' count vectors as whole
      messages would instead hand the analyzer every user's own noisy counts.

    Raises
    ------
    TrustBoundaryError
        If an element is not a :class:`PrivatizedMessage`, the batch mixes randomizers or
        encodings, or the count vectors disagree in shape.
    """
    if not messages:
        raise TrustBoundaryError("cannot shuffle an empty batch")
    if not all(isinstance(m, PrivatizedMessage) for m in messages):
        bad = next(m for m in messages if not isinstance(m, PrivatizedMessage))
        raise TrustBoundaryError(
            f"the shuffler only accepts PrivatizedMessage, got {type(bad).__name__}"
        )
    if "count" not in messages[0].payload:
        return shuffle_messages(messages, rng)
    mech = messages[0].mechanism
    if any(m.mechanism != mech or set(m.payload) != {"count"} for m in messages):
        raise TrustBoundaryError("a shuffled batch must come from a single randomizer and encoding")
    counts = [np.asarray(m["count"]) for m in messages]
    if len({c.shape for c in counts}) != 1 or counts[0].ndim != 2:
        raise TrustBoundaryError(
            "every count message must have shape (R, n_labels); got "
            f"{sorted({c.shape for c in counts})}"
        )
    ones = np.asarray(np.sum(counts, axis=0, dtype=np.int64))
    return ShuffledBatch(
        payload=_frozen_payload({"ones": ones}), mechanism=mech, n_users=len(messages)
    )


def _frozen_payload(arrays: dict[str, np.ndarray]) -> MappingProxyType[str, np.ndarray]:
    for a in arrays.values():
        a.setflags(write=False)
    return MappingProxyType(arrays)


def analyze(batch: ShuffledBatch, params: SumParams) -> np.ndarray:
    """Analyzer ``A1`` / ``A2`` (Algorithm 6) on a shuffled batch.

    For each label, ``z = (Delta/g) (sum of its bits - p b n)`` and ``o = z - n Delta``
    (re-centering; the paper's ``B`` is the number of users).  Accepts the two
    releases of :func:`shuffle`: the permuted labelled bits, or their histogram (``ones`` per
    label; every label carries ``n (ceil(2 g) + b)`` bits).

    Returns
    -------
    ndarray of shape (R, n_labels)
        Unbiased estimates of the sums of the users' (projected) coordinates; mirror matrix
        outputs with :func:`upper_to_symmetric`.

    Raises
    ------
    TrustBoundaryError
        For anything but a :class:`ShuffledBatch` of this protocol, and for a batch of per-user
        count vectors (the analyzer must not see a user's bits grouped together).
    """
    check_origin(batch, ShuffledBatch, params.mechanism, "the analyzer")
    if batch.n_users != params.n:
        raise ValidationError(
            f"batch has {batch.n_users} users but the parameters were set for n={params.n}"
        )
    if "count" in batch.payload:
        raise TrustBoundaryError(
            "the batch holds per-user count vectors: the shuffler must release the "
            "multiset of all users' bits (cheu.shuffle), not permute whole users"
        )
    if "ones" in batch.payload:
        ones = np.asarray(batch["ones"], dtype=np.int64)
        if ones.ndim != 2 or ones.shape[1] != params.n_labels:
            raise ValidationError(
                f"ones must have shape (R, n_labels={params.n_labels}), got {ones.shape}"
            )
        if ones.size and (
            int(ones.min()) < 0 or int(ones.max()) > params.n * params.bits_per_label
        ):
            raise ValidationError(
                "each label carries n (ceil(2g) + b) bits; the batch is malformed"
            )
    else:
        labels = np.asarray(batch["label_multi"], dtype=np.int64)
        bits = np.asarray(batch["bit_multi"], dtype=np.int64)
        R = labels.shape[0]
        flat = (np.arange(R)[:, None] * params.n_labels + labels).ravel()
        ones = np.bincount(flat, weights=bits.ravel(), minlength=R * params.n_labels).reshape(
            R, params.n_labels
        )
        sizes = np.bincount(flat, minlength=R * params.n_labels)
        if np.any(sizes != params.n * params.bits_per_label):
            raise ValidationError(
                "each label must carry n (ceil(2g) + b) bits; the batch is malformed"
            )
        ones = np.rint(ones).astype(np.int64)
    return _debias(ones, params)


def _debias(ones: np.ndarray, params: SumParams) -> np.ndarray:
    z = params.Delta / params.g * (ones - params.p * params.b * params.n)
    return z - params.n * params.Delta


def aggregate_sum(w: np.ndarray, params: SumParams, rng: np.random.Generator) -> np.ndarray:
    """Fast path: draw the analyzer's output directly, exact in distribution.

    The analyzer depends on the messages only through the number of ones per label,
    ``sum_u x_hat_u + sum_u gamma2_u``.  The rounding part is drawn per user (a Poisson-binomial
    sum) and the binomial part as one ``Binomial(n b, p)`` per label, which is the law of a sum of
    ``n`` independent ``Binomial(b, p)`` (exact in distribution); both through
    the compiled samplers of the message path.

    Parameters
    ----------
    w : ndarray of shape (R, n, n_labels)
        Encoded coordinates of all users.
    params : SumParams
    rng : Generator
        Client noise stream.

    Returns
    -------
    ndarray of shape (R, n_labels), distributed as ``analyze(shuffle(randomize_users(w)))``.
    """
    w = _check_users(w, params)
    if w.size and (float(w.min()) < 0.0 or float(w.max()) > 2.0 * params.Delta * (1.0 + 1e-12)):
        raise ValidationError(f"w must lie in [0, 2 Delta] = [0, {2 * params.Delta:g}]")
    u = np.clip(w * (params.g / params.Delta), 0.0, 2.0 * params.g)
    x_hat = randomized_rounding(u, rng).sum(axis=1)
    R = w.shape[0]
    # Bin(n b, p) per label is the randomizer R* at a zero input with n b noise bits (its rounding
    # of 0 is 0): the same compiled sampler as the message path
    gamma2 = binomial_bit_counts(
        np.zeros((R, params.n_labels)), params.g, params.n * params.b, params.p, params.Delta, rng
    )
    return _debias(x_hat + gamma2, params)


def aggregate_release(w: np.ndarray, params: SumParams, rng: np.random.Generator) -> ShuffledBatch:
    """The shuffler's release drawn directly: the per-label histogram of ones, exact in distribution.

    As :func:`aggregate_sum` (rounding per user, one ``Binomial(n b, p)`` per label, the compiled
    samplers of the message path) but returning what :func:`shuffle` releases for the count
    encoding, so the analyzer (:func:`analyze`) runs unchanged.

    Parameters
    ----------
    w : ndarray of shape (R, n, n_labels)
    params : SumParams
    rng : Generator
        Client noise stream.
    """
    w = _check_users(w, params)
    u = np.clip(w * (params.g / params.Delta), 0.0, 2.0 * params.g)
    return release_from_rounded(randomized_rounding(u, rng).sum(axis=1), params, rng)


def release_from_rounded(
    x_hat: np.ndarray, params: SumParams, rng: np.random.Generator
) -> ShuffledBatch:
    """The second half of :func:`aggregate_release`: the users' rounded coordinates summed over
    users (``x_hat``, shape ``(R, n_labels)``) plus one ``Binomial(n b, p)`` per label.

    For callers that draw the rounding of all users in a compiled loop (in the order of
    :func:`aggregate_release`: replication, user, label).
    """
    x_hat = np.asarray(x_hat)
    if x_hat.ndim != 2 or x_hat.shape[1] != params.n_labels:
        raise ValidationError(
            f"x_hat must have shape (R, n_labels={params.n_labels}), got {x_hat.shape}"
        )
    gamma2 = binomial_bit_counts(
        np.zeros((x_hat.shape[0], params.n_labels)),
        params.g,
        params.n * params.b,
        params.p,
        params.Delta,
        rng,
    )
    ones = np.rint(x_hat + gamma2).astype(np.int64)
    return ShuffledBatch(
        payload=_frozen_payload({"ones": ones}), mechanism=params.mechanism, n_users=params.n
    )


def analyzer_variance(w: np.ndarray, params: SumParams) -> np.ndarray:
    """Exact per-coordinate variance of the analyzer's error given the encoded inputs.

    ``o - sum_u v_u = (Delta/g) [sum_u (x_hat_u - w_u g/Delta) + (Bin(n b, p) - n b p)]``, a sum of
    independent zero-mean terms, so ``Var = (Delta/g)^2 (sum_u q_u (1 - q_u) + n b p (1 - p))`` with
    ``q_u = frac(w_u g / Delta)`` (Appendix T).  Coordinates are independent.

    Parameters
    ----------
    w : ndarray of shape (R, n, n_labels)

    Returns
    -------
    ndarray of shape (R, n_labels)
    """
    w = _check_w(w, params, 2)
    u = w * (params.g / params.Delta)
    q = u - np.floor(u)
    return (params.Delta / params.g) ** 2 * (
        (q * (1.0 - q)).sum(axis=1) + params.n * params.b * params.p * (1.0 - params.p)
    )


@dataclass(frozen=True)
class ShuffleSumResult:
    """Output of one protocol call.

    Attributes
    ----------
    estimate : ndarray
        ``(R, d)`` for vectors, ``(R, d, d)`` (exactly symmetric) for matrices.
    n_clipped : int
        Number of user inputs rescaled onto the Delta ball by the clients.
    params : SumParams
    """

    estimate: np.ndarray
    n_clipped: int
    params: SumParams

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """Per-call guarantee from :meth:`SumParams.guarantee`."""
        return self.params.guarantee()


def _check_inputs(name: str, x: np.ndarray, params: SumParams, kind: str) -> np.ndarray:
    """``x`` as a finite array of shape ``(R, n, d)`` (vectors) or ``(R, n, d, d)`` (matrices), for
    ``params`` of that ``kind``."""
    if params.kind != kind:
        raise ValidationError(
            f"params are for kind={params.kind!r}; use theory_params(..., kind={kind!r})"
        )
    dims = (params.d,) if kind == "vector" else (params.d, params.d)
    x = check_finite_array(name, x, ndim=2 + len(dims))
    if x.shape[1:] != (params.n, *dims):
        shape = ", ".join([f"n={params.n}", *(f"d={k}" for k in dims)])
        raise ValidationError(f"{name} must have shape (R, {shape}), got {x.shape}")
    return x


def _run(
    w: np.ndarray,
    params: SumParams,
    client_rng: np.random.Generator,
    shuffler_rng: np.random.Generator,
    path: str,
    materialize_bits: bool,
) -> np.ndarray:
    path = check_choice("path", path, ("messages", "aggregate"))
    if path == "aggregate":
        return aggregate_sum(w, params, client_rng)
    messages = randomize_users(w, params, client_rng, materialize_bits=materialize_bits)
    return analyze(shuffle(messages, shuffler_rng), params)


def shuffle_vector_sum(
    v: np.ndarray,
    params: SumParams,
    client_rng: np.random.Generator,
    shuffler_rng: np.random.Generator,
    *,
    path: str = "messages",
    materialize_bits: bool = False,
    norm_policy: str = "clip",
) -> ShuffleSumResult:
    """The vector protocol ``A1 o S1 o R1`` on ``v`` of shape ``(R, n, d)``.

    ``path="messages"`` runs the roles (reference); ``path="aggregate"`` uses
    :func:`aggregate_sum` (exact in distribution).
    """
    v = _check_inputs("v", v, params, "vector")
    w, n_clipped = encode_vectors(v, params.Delta, norm_policy=norm_policy)
    return ShuffleSumResult(
        _run(w, params, client_rng, shuffler_rng, path, materialize_bits), n_clipped, params
    )


def shuffle_matrix_sum(
    X: np.ndarray,
    params: SumParams,
    client_rng: np.random.Generator,
    shuffler_rng: np.random.Generator,
    *,
    path: str = "messages",
    materialize_bits: bool = False,
    norm_policy: str = "clip",
) -> ShuffleSumResult:
    """The matrix protocol ``A2 o S2 o R2`` on symmetric ``X`` of shape ``(R, n, d, d)``.

    Only the upper triangle is randomized and sent (the lower triangle is determined by it); the analyzer's output is
    mirrored, so the estimate is exactly symmetric.
    """
    X = _check_inputs("X", X, params, "matrix")
    w, n_clipped = encode_matrices(
        X, params.Delta, norm_policy=norm_policy, psd_inputs=params.psd_inputs
    )
    o = _run(w, params, client_rng, shuffler_rng, path, materialize_bits)
    return ShuffleSumResult(upper_to_symmetric(o, params.d), n_clipped, params)
