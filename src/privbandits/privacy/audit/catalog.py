"""The privacy layer's audit catalog: every mechanism and protocol at a stated parameter point.

Each entry is a factory ``factory(under_noised=None) -> AuditSpec`` whose sampler draws outputs
with the library's own code path (the mechanism objects and protocols, which draw their noise
through the compiled samplers of :mod:`privbandits.privacy.samplers`).  ``under_noised=f``
returns the variant with ``f`` times the calibrated noise scale and the unchanged claim, which
the audit must flag for ``f = 0.5``.  The algorithms' client code paths are audited by
:mod:`privbandits.auditing` (above the algorithms in the layering).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from privbandits.core.validation import check_positive
from privbandits.privacy import randomizers
from privbandits.privacy.accounting import PureDP
from privbandits.privacy.audit.spec import AuditSpec, StatisticSampler
from privbandits.privacy.calibration import laplace_epsilon, laplace_scale
from privbandits.privacy.cheu import (
    calibrated_params,
    shuffle_matrix_sum,
    shuffle_vector_sum,
    theory_params,
)
from privbandits.privacy.laplace_shuffle import laplace_randomizer, laplace_shuffle_params
from privbandits.privacy.mechanisms import (
    GaussianMechanism,
    L2BallMechanism,
    LaplaceMechanism,
    SymmetricGaussianMechanism,
)
from privbandits.privacy.noise import sample_symmetric_laplace
from privbandits.privacy.sensitivity import outer_product_l1_sensitivity
from privbandits.privacy.tree import TreeAggregator, max_nodes_per_leaf

__all__ = [
    "AUDITABLE",
    "factor_of",
    "laplace_shuffle",
    "variant_name",
    "variant_note",
]


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def factor_of(under_noised: float | None) -> float:
    """Noise factor of a variant: 1 (as calibrated) or the given positive multiplier."""
    return 1.0 if under_noised is None else check_positive("under_noised", under_noised)


def variant_name(name: str, f: float) -> str:
    return name if f == 1.0 else f"{name}[noise x{f:g}]"


def variant_note(f: float, what: str = "noise scale", extra: str = "") -> str:
    if f == 1.0:
        return ""
    more = f" ({extra})" if extra else ""
    return f"variant: {what} x{f:g} of the calibrated value{more}, claimed guarantee unchanged"


def _projection_sampler(mech: Any, pair: tuple[np.ndarray, np.ndarray]) -> StatisticSampler:
    """Statistic sampler of a mechanism object: outputs projected on the unit vector along ``D' - D``."""
    x0, x1 = (np.asarray(x, dtype=float) for x in pair)
    u = (x1 - x0).reshape(-1)
    u = u / np.linalg.norm(u)

    def sample(side: int, n: int, rng: np.random.Generator) -> np.ndarray:
        x = x1 if side else x0
        out = np.asarray(mech.sample(np.broadcast_to(x, (n,) + x.shape), rng), dtype=float)
        return out.reshape(n, -1) @ u

    return sample


def _claim(name: str, f: float, guarantee: Any) -> dict[str, Any]:
    """The fields of an :class:`AuditSpec` that name it (``name`` with the variant suffix of the
    noise factor ``f``) and state its claim (the calibrated ``guarantee``)."""
    return {
        "name": variant_name(name, f),
        "claimed_epsilon": float(guarantee.epsilon),
        "claimed_delta": float(guarantee.delta),
        "noise_factor": f,
    }


def _corner(shape: tuple[int, ...], value: float) -> np.ndarray:
    """Zeros of ``shape`` but ``value`` at the first entry (``value e_1`` or ``value E_11``)."""
    x = np.zeros(shape)
    x[(0,) * len(shape)] = value
    return x


def _named(doc: str, build: Callable[[float], AuditSpec]) -> Callable[..., AuditSpec]:
    """The catalog factory ``factory(under_noised=None)`` of ``build(noise factor)``, described by ``doc``."""

    def factory(under_noised: float | None = None) -> AuditSpec:
        return build(factor_of(under_noised))

    factory.__doc__ = doc
    return factory


_TEXT = str | Callable[[Any], str]


@dataclass(frozen=True)
class _Projected:
    """A mechanism object audited on one neighbouring pair, its outputs projected on ``D' - D``.

    ``mechanism()`` is the calibrated mechanism ``m`` (with ``guarantee``, ``sample`` and
    ``under_noised``); ``pair``, ``pair_text`` and ``notes`` are read off it.
    """

    name: str
    doc: str
    mechanism: Callable[[], Any]
    pair: Callable[[Any], tuple[np.ndarray, np.ndarray]]
    pair_text: _TEXT
    n_samples: int
    notes: _TEXT
    noise_extra: str = ""

    def spec(self, f: float) -> AuditSpec:
        """The audit spec with the noise factor ``f`` (the claim is the calibrated mechanism's)."""
        nominal = self.mechanism()
        text = {
            k: v(nominal) if callable(v) else v
            for k, v in (("pair", self.pair_text), ("notes", self.notes))
        }
        return AuditSpec(
            **_claim(self.name, f, nominal.guarantee),
            sample=_projection_sampler(
                nominal if f == 1.0 else nominal.under_noised(f), self.pair(nominal)
            ),
            neighbours=text["pair"],
            statistic="projection of the output on the unit vector along D' - D (a monotone "
            "function of the exact log-likelihood ratio)",
            n_samples=self.n_samples,
            notes=_join(text["notes"], variant_note(f, "noise scale", self.noise_extra)),
        )


@dataclass(frozen=True)
class _RandomizedResponse:
    """Binary randomized response as a mechanism object (audit adapter over the randomizer functions).

    ``noise_factor`` is read as the temperature ``1/epsilon``, as for :class:`L2BallMechanism` (whose
    hemisphere choice is randomized response): the sampler keeps the bit with probability
    ``e^{eps/f} / (1 + e^{eps/f})``.
    """

    epsilon: float
    noise_factor: float = 1.0

    @property
    def guarantee(self) -> Any:
        return PureDP(
            randomizers.randomized_response_epsilon(
                randomizers.randomized_response_keep_probability(self.epsilon)
            )
        )

    def under_noised(self, factor: float) -> _RandomizedResponse:
        return _RandomizedResponse(
            self.epsilon, self.noise_factor * check_positive("factor", factor)
        )

    def sample(self, value: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return randomizers.randomized_response(
            np.asarray(value, dtype=np.uint8), self.epsilon / self.noise_factor, rng
        )


@dataclass(frozen=True)
class _SymmetricLaplace:
    """Symmetric-matrix Laplace mechanism ``M + W`` (Zheng et al. 2020, correction Zheng20-17) as a
    mechanism object: ``W`` symmetric with i.i.d. ``Lap(b)`` on and above the diagonal, drawn by
    :func:`~privbandits.privacy.samplers.add_symmetric_laplace`, ``b = Delta_1 / epsilon`` at the L1
    sensitivity ``Delta_1`` of the upper triangle (audit adapter over the sampler)."""

    sensitivity: float
    epsilon: float
    d: int
    noise_factor: float = 1.0

    @property
    def scale(self) -> float:
        return self.noise_factor * laplace_scale(self.epsilon, self.sensitivity)

    @property
    def guarantee(self) -> Any:
        return PureDP(
            laplace_epsilon(laplace_scale(self.epsilon, self.sensitivity), self.sensitivity)
        )

    def under_noised(self, factor: float) -> _SymmetricLaplace:
        return dataclasses.replace(
            self, noise_factor=self.noise_factor * check_positive("factor", factor)
        )

    def sample(self, value: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        M = np.asarray(value, dtype=float)
        return M + sample_symmetric_laplace(rng, M.shape[:-2], self.d, self.scale)


#: The distance of the Gaussian entries' pair.
_L2_PAIR = "x = 0 vs x' = Delta_2 e_1 in R^3 (distance = the L2 sensitivity 1)"

#: The mechanism objects of the privacy layer, each at a stated parameter point.
_PROJECTED = (
    _Projected(
        "gaussian-classic",
        "Gaussian mechanism, classic calibration (Dwork & Roth Thm A.1), eps=0.9, delta=1e-5, d=3.",
        lambda: GaussianMechanism(sensitivity=1.0, epsilon=0.9, delta=1e-5, calibration="classic"),
        lambda m: m.neighbouring_pair(3),
        _L2_PAIR,
        500_000,
        lambda m: (
            f"requested (0.9, 1e-05) (inside Thm A.1's epsilon < 1), sigma={m.sigma:.6g}; "
            "the claim is the exact (Balle & Wang) epsilon of that noise"
        ),
    ),
    _Projected(
        "gaussian-analytic",
        "Analytic Gaussian mechanism (Balle & Wang 2018), eps=1, delta=1e-5, d=3.",
        lambda: GaussianMechanism(sensitivity=1.0, epsilon=1.0, delta=1e-5, calibration="analytic"),
        lambda m: m.neighbouring_pair(3),
        _L2_PAIR,
        500_000,
        lambda m: f"sigma={m.sigma:.6g}",
    ),
    _Projected(
        "symmetric-gaussian",
        "Symmetric-matrix Gaussian mechanism for x x^T, ||x|| <= 1 (Han et al. 2021), eps=0.9, "
        "delta=1e-5, d=2.",
        lambda: SymmetricGaussianMechanism.for_outer_product(1.0, 0.9, 1e-5, 2),
        lambda m: m.neighbouring_pair(),
        lambda m: (
            "M = 0 vs M' = Delta E_11 (2x2; upper-triangle distance = the sensitivity "
            f"{m.sensitivity:g})"
        ),
        500_000,
        lambda m: (
            f"classic calibration at L2 sensitivity {m.sensitivity:g} (outer products of "
            f"norm-1 vectors), sigma={m.sigma:.6g}"
        ),
    ),
    _Projected(
        "laplace",
        "Laplace mechanism on a reward in [-1, 1] (L1 sensitivity 2), eps=1.",
        lambda: LaplaceMechanism.for_range(-1.0, 1.0, 1.0),
        lambda m: (np.array(-1.0), np.array(1.0)),
        "r = -1 vs r' = +1 (the two ends of the reward range)",
        100_000,
        lambda m: f"scale={m.scale:.6g}",
    ),
    _Projected(
        "laplace-vector",
        "Vector Laplace mechanism in R^4 at L1 sensitivity 2, eps=1.",
        lambda: LaplaceMechanism(sensitivity=2.0, epsilon=1.0),
        lambda m: m.neighbouring_pair(4),
        "x = 0 vs x' = Delta_1 e_1 in R^4 (the whole L1 sensitivity on one coordinate)",
        100_000,
        lambda m: f"scale={m.scale:.6g} per coordinate",
    ),
    _Projected(
        "l2-ball",
        "l2-ball mechanism (Duchi et al. 2018; Han et al. 2021), eps=1, d=5, bound 1.",
        lambda: L2BallMechanism(epsilon=1.0, d=5, bound=1.0),
        lambda m: m.neighbouring_pair(),
        "x = R e_1 vs x' = -R e_1 (opposite ends of the input ball, R = 1)",
        100_000,
        lambda m: f"radius={m.radius:.6g}; the log-likelihood ratio is +-eps by the sign of z_1",
        "the temperature 1/epsilon, as in L2BallMechanism: the sampler runs at epsilon/factor",
    ),
    _Projected(
        "randomized-response",
        "Binary randomized response (Warner 1965), eps=1.",
        lambda: _RandomizedResponse(1.0),
        lambda m: (np.array(0.0), np.array(1.0)),
        "bit 0 vs bit 1",
        100_000,
        "privbandits.privacy.randomizers.randomized_response, keep probability e^eps / (1 + e^eps)",
        "the temperature 1/epsilon: the bit is kept w.p. e^(eps/f) / (1 + e^(eps/f))",
    ),
    _Projected(
        "symmetric-laplace",
        "Symmetric-matrix Laplace mechanism for x x^T, ||x|| <= 1 (Zheng et al. 2020), eps=1, d=2.",
        lambda: _SymmetricLaplace(outer_product_l1_sensitivity(2, 1.0), 1.0, 2),
        lambda m: (np.zeros((2, 2)), _corner((2, 2), m.sensitivity)),
        lambda m: (
            "M = 0 vs M' = Delta_1 E_11 (2x2; the whole L1 sensitivity "
            f"{m.sensitivity:g} of the upper triangle on one entry)"
        ),
        100_000,
        lambda m: f"scale={m.scale:.6g} per upper-triangle entry, mirrored",
    ),
)


# --------------------------------------------------------------------------------------------
# shuffle protocols
# --------------------------------------------------------------------------------------------
def _cheu_spec(kind: str, f: float) -> AuditSpec:
    n, d, Delta, eps, delta, conversion = 4, 2, 1.0, 1.0, 1e-5, "cks"
    nominal = calibrated_params(
        n, d, Delta, delta=delta, epsilon=eps, kind=kind, conversion=conversion
    )
    theory = theory_params(n, d, eps, delta, Delta, kind=kind)
    b = max(1, round(nominal.b * f * f)) if f != 1.0 else nominal.b
    params = dataclasses.replace(nominal, b=b)
    g = nominal.guarantee()
    shape = (d,) if kind == "vector" else (d, d)
    extreme = _corner(shape, Delta)  # Delta e_1 or Delta E_11

    def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
        client, shuffler = rng.spawn(2)
        data = np.zeros((m, n) + shape)
        data[:, 0] = extreme if side == 0 else -extreme
        run = shuffle_vector_sum if kind == "vector" else shuffle_matrix_sum
        est = run(data, params, client, shuffler, path="messages").estimate
        return est.reshape(m, -1)[:, 0]

    what = (
        "v_1 = Delta e_1 vs v_1' = -Delta e_1"
        if kind == "vector"
        else "X_1 = Delta E_11 vs X_1' = -Delta E_11"
    )
    return AuditSpec(
        **_claim(f"cheu-{kind}-sum", f, g),
        sample=sample,
        neighbours=f"n={n} users, user 1 differs: {what} (Delta={Delta:g}); the others send 0 (their "
        "randomized rounding is then deterministic: no noise to hide in)",
        statistic="analyzer output of coordinate (1) / entry (1,1) after the message path: a sufficient "
        "statistic of the shuffler's release (the other labels have the same law under both "
        "inputs)",
        n_samples=500_000,
        notes=_join(
            f"Cheu et al. (2022) {kind} summation, calibrated mode at (eps={eps:g}, delta={delta:g}) with the "
            f"{conversion.upper()} zCDP conversion, d={d}, g={nominal.g:g}, b={nominal.b}, p={nominal.p} "
            f"(binomial noise std {nominal.binomial_noise_std:.4g}; b raised from the Gaussian match until the "
            "binomial computation meets the target); the claim is that noise's epsilon computed from the "
            "binomial pmf (privbandits.privacy.binomial_accounting, no Gaussian approximation).  Message "
            "path: every user's randomize_users message -> cheu.shuffle (the multiset of all users' "
            "labelled bits) -> analyze.  Theory mode (eq. 122, Lemma T.1) would use "
            f"b={theory.b} (noise std {theory.binomial_noise_std:.4g}): even its half-noise variant is far "
            "inside epsilon=1 and could not be flagged, so the audit uses the calibrated mode",
            variant_note(f, "binomial noise std", f"b={b}"),
        ),
    )


def laplace_shuffle(under_noised: float | None = None) -> AuditSpec:
    """Single-message Laplace shuffle protocol (Hanna et al. 2022, Alg. 3), amplified, n=200, eps=1, delta=1e-3."""
    f = factor_of(under_noised)
    n, eps, delta = 200, 1.0, 1e-3
    nominal = laplace_shuffle_params(eps, delta, n, -1.0, 1.0, bound="numerical")
    closed = laplace_shuffle_params(eps, delta, n, -1.0, 1.0, bound="closed")
    params = nominal if f == 1.0 else dataclasses.replace(nominal, scale=nominal.scale * f)
    g = nominal.guarantee()
    lo, hi, b = params.r_lo, params.r_hi, params.scale
    e_loc = (hi - lo) / b

    slots = np.zeros((1, n), dtype=np.int64)  # one action: every client of the batch reports

    def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
        rewards = np.full((m, n), lo)
        if side == 0:
            rewards[:, 0] = hi
        slots_m = np.ascontiguousarray(np.broadcast_to(slots, (m, n)))
        y = np.asarray(laplace_randomizer(rewards, slots_m, params, rng)["reward_hat"])
        # exact LLR of the shuffled multiset {y_j}: log mean_j exp(l(y_j)) with
        # l(y) = log Lap(y; hi, b) / Lap(y; lo, b) = clip((2y - lo - hi) / b, -eps_l, eps_l); a symmetric
        # function of the reports, so the shuffler's uniform permutation does not change its law
        ell = np.clip((2.0 * y - lo - hi) / b, -e_loc, e_loc)
        return np.log(np.exp(ell).sum(axis=1))

    return AuditSpec(
        **_claim("laplace-shuffle", f, g),
        sample=sample,
        neighbours=f"n={n} clients, one action; client 1 has reward +1 vs -1, every other client -1 "
        "(the others are clones of the second input: the worst case for amplification)",
        statistic="exact log-likelihood ratio of the shuffled multiset of reports, "
        "log sum_j Lap(y_j; +1, b) / Lap(y_j; -1, b) (up to a constant)",
        n_samples=30_000,
        notes=_join(
            "Hanna et al. (2022) Alg. 3: reports drawn by the clients' laplace_randomizer (the statistic is "
            f"symmetric, so the shuffler's permutation is immaterial), eps0={nominal.eps0:.4g} from the "
            f"numerical amplification bound (FMT21 Thm 3.2), scale={nominal.scale:.6g}.  The closed-form "
            f"bound (Thm 3.1) is looser (here it allows only eps0={closed.eps0:.4g}); where it amplifies, even "
            "its half-noise variant stays inside its claim (documentation: Privacy audit)",
            variant_note(f, "Laplace scale", f"local epsilon {nominal.eps0 / f:.4g}"),
        ),
    )


# --------------------------------------------------------------------------------------------
# continual release
# --------------------------------------------------------------------------------------------
def _tree_spec(kind: str, f: float) -> AuditSpec:
    T, d, B, eps, delta, conversion = 4, 2, 1.0, 1.0, 1e-5, "cks"
    nominal = TreeAggregator.calibrated(
        T,
        d,
        leaf_bound=B,
        rng=np.random.default_rng(0),
        delta=delta,
        epsilon=eps,
        kind=kind,
        conversion=conversion,
    )
    g = nominal.guarantee(delta, method=conversion)
    sigma = nominal.sigma * f
    shape = (d,) if kind == "vector" else (d, d)
    leaf = _corner(shape, B)
    powers = {
        1 << k for k in range(max_nodes_per_leaf(T))
    }  # nodes holding leaf 1 complete at t = 2^k

    def sample(side: int, m: int, rng: np.random.Generator) -> np.ndarray:
        tree = TreeAggregator(T, d, sigma=sigma, leaf_bound=B, rng=rng, replications=m, kind=kind)
        stat = np.zeros(m)
        zero = np.zeros((m,) + shape)
        for t in range(1, T + 1):
            tree.add(
                np.broadcast_to(leaf if side == 0 else -leaf, (m,) + shape) if t == 1 else zero
            )
            if t in powers:  # node [1, 2^k] = prefix(2^k) - prefix(0)
                stat += tree.prefix_sum().reshape(m, -1)[:, 0]
        return stat

    what = "B e_1 vs -B e_1" if kind == "vector" else "B E_11 vs -B E_11"
    return AuditSpec(
        **_claim(f"tree-{kind}", f, g),
        sample=sample,
        neighbours=f"stream of T={T} leaves, leaf 1 changed: {what} (B={B:g}, distance = the sensitivity "
        f"{nominal.sensitivity:g}); the other leaves are 0",
        statistic=f"sum over the {len(powers)} released nodes containing leaf 1 of entry (1) / (1,1), read off "
        "the prefix sums (node [1, 2^k] = prefix(2^k)): the exact log-likelihood-ratio direction",
        n_samples=500_000,
        notes=_join(
            f"binary-tree {kind} prefix sums, calibrated to (eps={eps:g}, delta={delta:g}) via zCDP with the "
            f"{conversion.upper()} conversion, sigma={nominal.sigma:.6g}",
            variant_note(f, "node noise std"),
        ),
    )


#: Every auditable mechanism: name -> ``factory(under_noised=None) -> AuditSpec``.
AUDITABLE: dict[str, Callable[..., AuditSpec]] = {
    **{e.name: _named(e.doc, e.spec) for e in _PROJECTED},
    "cheu-vector-sum": _named(
        "Shuffle vector summation of Cheu et al. (2022), calibrated (CKS), n=4, d=2, eps=1, "
        "delta=1e-5.",
        functools.partial(_cheu_spec, "vector"),
    ),
    "cheu-matrix-sum": _named(
        "Shuffle symmetric-matrix summation of Cheu et al. (2022), calibrated (CKS), n=4, d=2, "
        "eps=1, delta=1e-5.",
        functools.partial(_cheu_spec, "matrix"),
    ),
    "laplace-shuffle": laplace_shuffle,
    "tree-vector": _named(
        "Binary-tree Gaussian prefix sums of vectors (Chan et al. 2011), T=4, d=2, eps=1, "
        "delta=1e-5 (CKS).",
        functools.partial(_tree_spec, "vector"),
    ),
    "tree-matrix": _named(
        "Binary-tree Gaussian prefix sums of symmetric matrices, T=4, d=2, eps=1, delta=1e-5 (CKS).",
        functools.partial(_tree_spec, "matrix"),
    ),
}
