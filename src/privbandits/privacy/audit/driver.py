"""The audit driver: draw statistics under both inputs, choose a test, evaluate it on held-out draws.

For a mechanism ``M`` and neighbouring inputs ``(D, D')``, ``(epsilon, delta)``-DP means that for
every set ``S`` of outputs ``P(M(D) in S) <= e^eps P(M(D') in S) + delta`` and the same with ``D``
and ``D'`` swapped.  A threshold test on a one-dimensional statistic ``T`` of the output turns this
into a bound on its error rates (:mod:`~privbandits.privacy.audit.statistics`): with ``FPR = P_b(T in S)`` (the null ``b`` rejected) and
``FNR = 1 - P_a(T in S)``,

    epsilon >= ln((1 - delta - FNR) / FPR)                                   (1)

for both orders ``(a, b) = (D', D), (D, D')``, both sides ``S = {T > t}, {T <= t}``.  The auditor

1. draws ``N`` outputs of the mechanism under each of ``D`` and ``D'`` (batched, in chunks, from
   streams spawned from one seed) and reduces each to ``T`` (the projection on the difference
   direction, or the exact log-likelihood ratio where it is known);
2. on the first half of the draws (training) picks the test (threshold ``t``, side, order) that
   maximizes (1) with Clopper-Pearson upper bounds in place of the rates;
3. on the held-out half computes one-sided Clopper-Pearson upper bounds ``FPR_u`` and ``FNR_u``,
   each at level ``alpha / 2``, and reports ``eps_lb = max(0, ln((1 - delta - FNR_u) / FPR_u))``.

Only one test is evaluated on the held-out half, so with probability at least ``1 - alpha`` both
bounds hold and ``eps_lb`` is below the mechanism's true epsilon (at that delta): an audited lower
bound above the claimed epsilon is evidence, at confidence ``1 - alpha``, that the claim is false.
A lower bound at or below the claim is not a proof of privacy; it says the test found no violation.

References
----------
Jagielski, Ullman & Oprea (2020), "Auditing differentially private machine learning: how private
is private SGD?", NeurIPS (threshold tests with Clopper-Pearson bounds);
Ding, Wang, Wang, Zhang & Kifer (2018), "Detecting violations of differential privacy", CCS;
Kairouz, Oh & Viswanath (2015), "The composition theorem for differential privacy", ICML
(hypothesis-testing characterization of (epsilon, delta)-DP, eq. (1));
Clopper & Pearson (1934), Biometrika (exact binomial confidence intervals).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from privbandits.core.errors import UnknownNameError, ValidationError
from privbandits.core.validation import check_finite_array, check_in_range, check_int
from privbandits.privacy.audit.catalog import AUDITABLE
from privbandits.privacy.audit.spec import AuditResult, AuditSpec
from privbandits.privacy.audit.statistics import (
    epsilon_lower_bound,
    evaluate_threshold_test,
    select_threshold_test,
)

__all__ = ["DEFAULT_CHUNK", "audit", "audit_mechanism", "audit_spec", "run_all"]

#: Default number of outputs per neighbouring input drawn in one batch (bounds memory).
DEFAULT_CHUNK = 1 << 18


def _draw(spec: AuditSpec, side: int, n: int, rng: np.random.Generator, chunk: int) -> np.ndarray:
    out = []
    left = n
    while left > 0:
        m = min(chunk, left)
        t = np.asarray(spec.sample(side, m, rng), dtype=float).reshape(-1)
        if t.size != m:
            raise ValidationError(
                f"the sampler of {spec.name!r} returned {t.size} statistics, expected {m}"
            )
        out.append(t)
        left -= m
    return check_finite_array("statistics", np.concatenate(out))


def audit_spec(
    spec: AuditSpec,
    *,
    n_samples: int | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    chunk: int = DEFAULT_CHUNK,
    selection_alpha: float | None = None,
) -> AuditResult:
    """Run the audit described by ``spec`` (see the module docstring for the method).

    Parameters
    ----------
    spec : AuditSpec
    n_samples : int, optional
        Outputs per neighbouring input (default ``spec.n_samples``), at least 20.
    alpha : float
        1 - confidence of the lower bound (0.05 = 95%).
    seed : int
        Seed of the two sampling streams, one per input: ``SeedSequence(seed, spawn_key=(crc32(name),))``
        spawned twice (``name`` without the variant suffix).
    chunk : int
        Largest number of outputs drawn in one batch.
    selection_alpha : float, optional
        Clopper-Pearson level of the training objective that picks the test (default
        ``alpha / 100``).  A stricter penalty than the held-out one steers the choice away from far
        tails where the training estimate is inflated by chance (winner's curse) and the held-out
        estimate is noisy; it does not affect validity, which rests on the held-out half only.
    """
    N = check_int("n_samples", spec.n_samples if n_samples is None else n_samples, 20)
    a = check_in_range("alpha", alpha, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    seed = check_int("seed", seed, 0)
    chunk = check_int("chunk", chunk, 1)
    # streams keyed by (seed, base name): independent across mechanisms, common to a mechanism and its
    # under-noised variants
    key = zlib.crc32(spec.name.split("[")[0].encode())
    rng0, rng1 = (
        np.random.Generator(np.random.PCG64(s))
        for s in np.random.SeedSequence(seed, spawn_key=(key,)).spawn(2)
    )
    t0 = _draw(spec, 0, N, rng0, chunk)
    t1 = _draw(spec, 1, N, rng1, chunk)
    h = N // 2
    sel = (
        a / 100.0
        if selection_alpha is None
        else check_in_range(
            "selection_alpha", selection_alpha, 0.0, 1.0, low_inclusive=False, high_inclusive=False
        )
    )
    test, _ = select_threshold_test(t0[:h], t1[:h], spec.claimed_delta, sel)
    ev = evaluate_threshold_test(test, t0[h:], t1[h:], spec.claimed_delta, a)
    lb = ev["eps_lb"]
    outcome = (
        f"test ({h} train / {N - h} held out per input): {test.describe()}, "
        f"FPR={ev['fpr']:.4g} (<= {ev['fpr_upper']:.4g}), FNR={ev['fnr']:.4g} "
        f"(<= {ev['fnr_upper']:.4g}), plug-in eps={ev['eps_hat']:.4g}, confidence {1 - a:g}"
    )
    notes = _join(f"pair: {spec.neighbours}", f"statistic: {spec.statistic}", outcome, spec.notes)
    return AuditResult(
        mechanism=spec.name,
        claimed_epsilon=float(spec.claimed_epsilon),
        claimed_delta=float(spec.claimed_delta),
        audited_epsilon_lb=lb,
        n_samples=N,
        passed=bool(lb <= spec.claimed_epsilon),
        notes=notes,
        max_certifiable=float(epsilon_lower_bound(0, N - h, 0, N - h, spec.claimed_delta, a)),
    )


def audit(
    mechanism_factory: Any,
    neighbours: tuple[Any, Any],
    *,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
    claimed_epsilon: float | None = None,
    claimed_delta: float | None = None,
    n_samples: int = 200_000,
    alpha: float = 0.05,
    seed: int = 0,
    name: str | None = None,
    chunk: int = DEFAULT_CHUNK,
) -> AuditResult:
    """Audit any mechanism on one neighbouring pair.

    Parameters
    ----------
    mechanism_factory : mechanism object or callable
        Either an object with ``sample(value, rng)`` that is batched over leading axes (the
        mechanisms of :mod:`privbandits.privacy.mechanisms`; its ``guarantee`` supplies the claim),
        or a callable ``release(values, rng)`` mapping a batch ``values`` of shape ``(n,) + shape``
        to ``n`` outputs (leading axis ``n``).
    neighbours : (D, D')
        The two neighbouring inputs (arrays of equal shape).
    statistic : callable, optional
        Maps a batch of outputs (leading axis ``n``) to ``n`` reals.  Default: the projection of the
        flattened output on the unit vector along ``D' - D`` (the likelihood-ratio direction of any
        additive mechanism with spherical or product noise).
    claimed_epsilon, claimed_delta : float, optional
        The claim to test; default ``mechanism_factory.guarantee`` (epsilon and delta).
    n_samples, alpha, seed, chunk
        As in :func:`audit_spec`.
    name : str, optional
        Name reported in the result.

    Returns
    -------
    AuditResult
    """
    if not (isinstance(neighbours, (tuple, list)) and len(neighbours) == 2):
        raise ValidationError(f"neighbours must be a pair (D, D'), got {type(neighbours).__name__}")
    x0 = check_finite_array("neighbours[0]", neighbours[0])
    x1 = check_finite_array("neighbours[1]", neighbours[1])
    if x0.shape != x1.shape:
        raise ValidationError(f"neighbours must have equal shapes, got {x0.shape} and {x1.shape}")
    if hasattr(mechanism_factory, "sample"):
        release = mechanism_factory.sample
    elif callable(mechanism_factory):
        release = mechanism_factory
    else:
        raise ValidationError(
            "mechanism_factory must have a sample(value, rng) method or be callable, got "
            f"{type(mechanism_factory).__name__}"
        )
    if claimed_epsilon is None or claimed_delta is None:
        g = getattr(mechanism_factory, "guarantee", None)
        if g is None:
            raise ValidationError(
                "give claimed_epsilon and claimed_delta, or a mechanism with a .guarantee"
            )
        claimed_epsilon = g.epsilon if claimed_epsilon is None else claimed_epsilon
        claimed_delta = g.delta if claimed_delta is None else claimed_delta
    eps_c = check_in_range("claimed_epsilon", claimed_epsilon, 0.0, None, allow_inf=True)
    dlt_c = check_in_range("claimed_delta", claimed_delta, 0.0, 1.0, high_inclusive=False)
    user_statistic = statistic is not None
    if statistic is None:
        diff = (x1 - x0).reshape(-1)
        norm = float(np.linalg.norm(diff))
        if norm == 0.0:
            raise ValidationError("the neighbouring inputs are equal; give distinct D and D'")
        u = diff / norm

        def statistic(out: np.ndarray) -> np.ndarray:
            out = np.asarray(out, dtype=float)
            return out.reshape(out.shape[0], -1) @ u

    stat = statistic
    inputs = (x0, x1)

    def sample(side: int, n: int, rng: np.random.Generator) -> np.ndarray:
        batch = np.broadcast_to(inputs[side], (n,) + x0.shape).copy()
        return stat(release(batch, rng))

    label = name or str(
        getattr(mechanism_factory, "name", getattr(mechanism_factory, "__name__", "mechanism"))
    )
    spec = AuditSpec(
        name=label,
        claimed_epsilon=eps_c,
        claimed_delta=dlt_c,
        sample=sample,
        neighbours=f"D={_fmt(x0)}, D'={_fmt(x1)}",
        statistic="user-supplied" if user_statistic else "projection on D' - D",
        n_samples=n_samples,
    )
    return audit_spec(spec, alpha=alpha, seed=seed, chunk=chunk)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _fmt(x: np.ndarray) -> str:
    return np.array2string(np.asarray(x), precision=4, separator=", ", threshold=12)


def audit_mechanism(
    name: str,
    under_noised: float | None = None,
    n_samples: int | None = None,
    seed: int = 0,
    *,
    alpha: float = 0.05,
    catalog: Mapping[str, Callable[..., AuditSpec]] | None = None,
) -> AuditResult:
    """Audit a registered mechanism (``privbandits audit NAME``).

    Parameters
    ----------
    name : str
        Key of ``catalog``.
    under_noised : float, optional
        Audit the variant with this multiple of the calibrated noise scale (0.5 = half the noise)
        against the unchanged claim.
    n_samples : int, optional
        Outputs per neighbouring input (default: the mechanism's own, chosen so that the calibrated
        mechanism passes and the half-noise variant is flagged).
    seed : int
        Seed of the sampling streams.
    alpha : float
        1 - confidence.
    catalog : mapping, optional
        ``name -> factory(under_noised=None) -> AuditSpec``; default the privacy layer's
        :data:`~privbandits.privacy.audit.catalog.AUDITABLE` (:mod:`privbandits.auditing` adds the
        algorithms' client code paths).
    """
    cat = AUDITABLE if catalog is None else catalog
    if name not in cat:
        raise UnknownNameError(f"unknown mechanism {name!r}; auditable: {', '.join(cat)}")
    return audit_spec(cat[name](under_noised), n_samples=n_samples, alpha=alpha, seed=seed)


def run_all(
    under_noised: float | None = None,
    n_samples: int | None = None,
    seed: int = 0,
    *,
    alpha: float = 0.05,
    names: Sequence[str] | None = None,
    catalog: Mapping[str, Callable[..., AuditSpec]] | None = None,
) -> list[AuditResult]:
    """Audit every entry of ``catalog`` (or ``names``), in catalog order (``privbandits audit --all``)."""
    cat = AUDITABLE if catalog is None else catalog
    return [
        audit_mechanism(nm, under_noised, n_samples, seed, alpha=alpha, catalog=cat)
        for nm in (names or list(cat))
    ]
