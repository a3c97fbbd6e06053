"""The stated expectations of a regression study, checked on its rows with a stated test.

A regression study (:mod:`privbandits.experiments.regression_study`) declares its expectations as
``[[claims]]`` tables, validated by the declarations of the ``claims`` table of the experiment
schema (:data:`privbandits.experiments.schema.REGRESSION_CLAIM_KEYS`).  Each claim is checked in
every *cell* (block and problem parameters) it applies to; ``where = { block = "two-point" }``
restricts it to the cells with those values.  The kinds:

============  ===================================================================================
kind          claim
============  ===================================================================================
``coverage``  ``items = ["reweighted"]``, ``percent = 95``: the confidence widths of each estimator
              cover ``f*`` at every held-out point in at least 95 % of the fits (seeds) of a cell
``monotone``  ``items = ["reweighted"]``, ``param = "n"``, ``direction = "decreasing"``: the mean
              held-out L1 error falls as ``param`` grows (each adjacent pair of values checked)
============  ===================================================================================

``coverage`` tests the guarantee as the paper states it: with probability at least ``1 - delta`` (the
failure probability of the widths) they are valid *at every point at once* (Chen, Li, Rakhlin &
Simchi-Levi 2025, Definition 6).  One fit is one Bernoulli trial, "covered at every held-out point";
the ``S`` seeds of a cell are independent fits.  With ``k`` of them covered, the exact one-sided
binomial test at level ``level`` agrees when ``P(Bin(S, p) >= k) <= level`` (the rate is above ``p
= percent / 100``), disagrees when ``P(Bin(S, p) <= k) <= level`` and is inconclusive otherwise.
The held-out points of one fit are *not* independent trials (they share the estimate), so they
do not enter the variance: a pooled per-point binomial would call a 95 % rate confirmed from three
lucky fits.  Fewer than ``ln(level) / ln(p)`` seeds (59 at 95 %, level 0.05) cannot agree even when
every fit covered, and give *too few runs* unless the test already disagrees.

``monotone`` compares the mean L1 errors at adjacent values of ``param`` with one-sided Student t
tests (:class:`~privbandits.experiments.claims.Comparison`, degrees of freedom shown): paired over
seeds when ``param`` leaves the data's random stream unchanged (``epsilon``, ``c``, ``p0``: seed
``s`` draws the same uniforms and normals at every value), Welch's unpaired test otherwise (``n``
and ``d`` seed the stream).  The verdict words and the rule combining the comparisons of a cell
are those of the bandit claims (:mod:`privbandits.experiments.claims`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from privbandits.experiments.claims import (
    MIN_RUNS,
    Claim,
    ClaimResult,
    Comparison,
    combine_verdicts,
    t_critical,
)
from privbandits.experiments.summary import format_values

__all__ = [
    "CELL_KEYS",
    "PAIRED_PARAMS",
    "coverage_seeds_needed",
    "coverage_verdict",
    "describe",
    "evaluate_regression_claims",
    "monotone_comparison",
    "verdict_note",
]

#: The keys of a row that name its cell.
CELL_KEYS: tuple[str, ...] = ("block", "n", "d", "epsilon", "c", "p0")
#: Parameters whose values share the data's random stream at a seed (paired comparisons).
PAIRED_PARAMS = frozenset({"epsilon", "c", "p0"})


def describe(claim: Claim) -> str:
    """A regression claim as one line of plain text."""
    items = ", ".join(claim.items)
    if claim.kind == "coverage":
        core = (
            f"the widths of {items} cover f* at every held-out point in at least "
            f"{claim.percent:g} % of the fits"
        )
    else:
        moves = "falls" if claim.direction == "decreasing" else "rises"
        core = f"the L1 error of {items} {moves} as {claim.param} grows"
    if claim.where:
        core += f" (at {format_values(dict(claim.where))})"
    return core


def coverage_seeds_needed(percent: float, level: float = 0.05) -> int:
    """Fewest fits for which "every one covered" rejects a coverage rate below ``percent`` % at
    ``level`` (59 at 95 % and level 0.05)."""
    p = percent / 100.0
    return max(1, math.ceil(math.log(level) / math.log(p) - 1e-12))


def coverage_verdict(
    covered: int, fits: int, percent: float, level: float = 0.05
) -> tuple[str, str]:
    """Verdict and detail of "at least ``percent`` % of the fits covered everywhere" from ``covered``
    of ``fits`` (exact one-sided binomial tests, see the module docstring)."""
    p = percent / 100.0
    p_above = float(stats.binom.sf(covered - 1, fits, p))  # P(Bin >= covered)
    p_below = float(stats.binom.cdf(covered, fits, p))  # P(Bin <= covered)
    need = coverage_seeds_needed(percent, level)
    if p_below <= level:
        verdict = "disagree"
    elif p_above <= level:
        verdict = "agree"
    elif fits < need:
        verdict = "too few runs"
    else:
        verdict = "inconclusive"
    se = math.sqrt(p * (1 - p) / fits)
    detail = (
        f"{covered}/{fits} fits covered every held-out point (rate {covered / fits:.3f}, binomial "
        f"sd of the rate at {p:g}: {se:.3f}); exact binomial P(>= {covered}) = {p_above:.3g}, "
        f"P(<= {covered}) = {p_below:.3g} at rate {p:g}: {verdict}"
    )
    if verdict == "too few runs":
        detail += f" ({fits} fits; a verdict needs {need} at level {level:g})"
    return verdict, detail


def monotone_comparison(
    better: tuple[str, Mapping[int, float]],
    worse: tuple[str, Mapping[int, float]],
    paired: bool,
    level: float = 0.05,
) -> Comparison:
    """One-sided Student t test of "mean of ``better`` < mean of ``worse``" from ``(name, {seed:
    value})`` pairs: paired over the common seeds (``S - 1`` degrees of freedom) or Welch's test."""
    (b_name, b_vals), (w_name, w_vals) = better, worse
    b = np.array([b_vals[s] for s in sorted(b_vals)], dtype=float)
    w = np.array([w_vals[s] for s in sorted(w_vals)], dtype=float)
    common = sorted(set(b_vals) & set(w_vals))
    paired = paired and len(common) == len(b_vals) == len(w_vals) and len(common) > 1
    if paired:
        d = np.array([w_vals[s] - b_vals[s] for s in common])
        se = float(d.std(ddof=1) / math.sqrt(d.size))
        df = float(d.size - 1)
    else:
        vb = float(b.var(ddof=1)) / b.size if b.size > 1 else 0.0
        vw = float(w.var(ddof=1)) / w.size if w.size > 1 else 0.0
        se = math.sqrt(vb + vw)
        den = (vb * vb / (b.size - 1) if b.size > 1 else 0.0) + (
            vw * vw / (w.size - 1) if w.size > 1 else 0.0
        )
        df = (vb + vw) ** 2 / den if den > 0 else float(max(b.size + w.size - 2, 1))
    mb, mw = float(b.mean()), float(w.mean())
    return Comparison(
        b_name,
        w_name,
        mb,
        mw,
        se,
        paired,
        df,
        level,
        tol=1e-12 * max(abs(mb), abs(mw)),
        runs=int(min(b.size, w.size)),
    )


def _matches(row: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    return all(row.get(k) == v for k, v in where.items())


def _cell(row: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    return {k: row[k] for k in keys if row.get(k) is not None}


def _coverage(claim: Claim, rows: Sequence[Mapping[str, Any]], level: float) -> list[ClaimResult]:
    cells: dict[tuple[Any, ...], dict[str, dict[int, bool]]] = {}
    for r in rows:
        if _matches(r, claim.where) and r["estimator"] in claim.items:
            key = tuple(r[k] for k in CELL_KEYS)
            cells.setdefault(key, {}).setdefault(r["estimator"], {})[int(r["seed"])] = bool(
                r["all_covered"]
            )
    out = []
    for key, by in cells.items():
        cell = _cell(dict(zip(CELL_KEYS, key)), CELL_KEYS)
        verdicts, details = [], []
        for item in claim.items:
            if item not in by:
                continue
            v, d = coverage_verdict(
                sum(by[item].values()), len(by[item]), float(claim.percent or 0.0), level
            )
            verdicts.append(v)
            details.append(f"{item}: {d}")
        missing = tuple(i for i in claim.items if i not in by)
        out.append(
            ClaimResult(
                claim, cell, combine_verdicts(verdicts), detail="\n".join(details), missing=missing
            )
        )
    return out


def _monotone(claim: Claim, rows: Sequence[Mapping[str, Any]], level: float) -> list[ClaimResult]:
    param = claim.param or ""
    item = claim.items[0]
    rest = tuple(k for k in CELL_KEYS if k != param)
    groups: dict[tuple[Any, ...], dict[Any, dict[int, float]]] = {}
    for r in rows:
        if _matches(r, claim.where) and r["estimator"] == item and r.get(param) is not None:
            key = tuple(r[k] for k in rest)
            groups.setdefault(key, {}).setdefault(r[param], {})[int(r["seed"])] = float(r["l1"])
    out = []
    for key, by_value in groups.items():
        if len(by_value) < 2:
            continue
        values = sorted(by_value)
        paired = param in PAIRED_PARAMS
        comps = []
        for lo, hi in zip(values, values[1:]):
            at_lo = (f"{item} at {param} = {lo:g}", by_value[lo])
            at_hi = (f"{item} at {param} = {hi:g}", by_value[hi])
            if claim.direction == "decreasing":  # larger value -> lower error
                comps.append(monotone_comparison(at_hi, at_lo, paired, level))
            else:
                comps.append(monotone_comparison(at_lo, at_hi, paired, level))
        cell = _cell(dict(zip(rest, key)), rest)
        out.append(
            ClaimResult(claim, cell, combine_verdicts([c.verdict for c in comps]), tuple(comps))
        )
    return out


def evaluate_regression_claims(
    claims: Sequence[Claim], rows: Sequence[Mapping[str, Any]], level: float = 0.05
) -> list[ClaimResult]:
    """Check every claim in every cell of ``rows`` it applies to.

    Parameters
    ----------
    claims : sequence of Claim
        Of kinds ``coverage`` and ``monotone`` (see the module docstring).
    rows : sequence of dict
        One per (cell, estimator, seed), from
        :func:`~privbandits.experiments.regression_experiment.seed_rows`.
    level : float
        One-sided level of each test.

    Returns
    -------
    list of ClaimResult
        In claim order, then cell order; a claim that matches no cell gives one *incomplete* result.
    """
    out: list[ClaimResult] = []
    for claim in claims:
        found = (
            _coverage(claim, rows, level)
            if claim.kind == "coverage"
            else _monotone(claim, rows, level)
        )
        out += found or [ClaimResult(claim, dict(claim.where), "incomplete", missing=claim.items)]
    return out


def verdict_note(level: float) -> str:
    """How the verdicts of a regression report are reached (one paragraph)."""
    need = coverage_seeds_needed(95.0, level)
    return (
        f"Verdicts at one-sided level {100 * level:g} %.  *coverage*: each fit (seed) is one trial, "
        "covered at every held-out point or not (the widths' guarantee holds at every point at once "
        "with probability 1 - delta); exact binomial test of the rate over the seeds of the cell "
        "(the held-out points of one fit share its estimate and are not independent trials); "
        f"*too few runs* when no outcome could agree (at 95 %: fewer than {need} seeds).  "
        "*monotone*: one-sided Student t test of each adjacent pair of values, paired over seeds when "
        "the parameter leaves the data's random stream unchanged (epsilon, c, p0), Welch otherwise "
        f"(n, d), degrees of freedom shown; *too few runs* below {MIN_RUNS} seeds.  *inconclusive*: "
        f"within noise at that level (one-sided t* = {t_critical(level, 9):.2f} at 9 degrees of "
        "freedom)."
    )
