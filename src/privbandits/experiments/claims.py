"""A paper's claims about final regret, checked against the measurements with a stated test.

A claim is data in the experiment configuration (``[[claims]]``, or the shorthand
``[report] claimed_order``) and is checked in every *cell* (combination of grid values, e.g. each
epsilon) separately; a series without a grid parameter (a non-private baseline) takes part in
every cell.  The kinds:

============  ===================================================================================
kind          claim
============  ===================================================================================
``order``     ``items = [a, b, c]``: regret(a) < regret(b) < regret(c) (lowest first)
``tiers``     ``items = [a, b]``, ``above = [c]``: every one of a, b below every one of ``above``
``within``    ``items = [a, b]``, ``percent = 10``: mean regret of a within 10 % of that of b
``monotone``  ``items = [a]``, ``param = "epsilon"``, ``direction = "decreasing"``: a's regret
              falls as the parameter grows (each adjacent pair of values checked)
``stable``    ``items = [a]``, ``param = "theta_norm"``, ``percent = 25``: a's regret changes by
              less than 25 % between adjacent values of the parameter (each pair as ``within``)
``slope``     ``items = [a]``, ``exponent = 0.5``, ``tolerance = 0.15``: the slope of a's log
              cumulative regret against log t over ``t in [T/10, T]`` lies within ``exponent +-
              tolerance`` (``direction = "at_most"``: at most ``exponent + tolerance``); with
              ``param = "T"``: the slope of a's log final regret against log T across the separate
              horizons of an experiment with ``horizons`` (any numeric parameter may be named)
============  ===================================================================================

A ``slope`` claim is tested on the per-replication slopes (one least-squares fit per run, by
:func:`~privbandits.experiments.slopes.loglog_slope`; with ``param``, run ``i`` is the ``i``-th
replication of the same seed at every value of the parameter): agree when the two-sided
``1 - level`` Student interval of their mean lies inside the claimed range, disagree when it lies
entirely outside, inconclusive otherwise.

``where = { epsilon = 1.0 }`` restricts a claim to the cells with those values.

Every comparison of two series ``better`` and ``worse`` uses the difference of final regrets
``D = worse - better``.  When both series pooled the same seeds and replications they saw the same
problem instances and reward draws (common random numbers), and the test is *paired*:
``t = mean(D_i) / (sd(D_i) / sqrt(n))`` over replications ``i`` with ``n - 1`` degrees of freedom;
otherwise it is Welch's unpaired ``t = (mean_w - mean_b) / sqrt(se_b^2 + se_w^2)`` with the
Welch-Satterthwaite degrees of freedom.  The verdict at one-sided level ``level`` (default 0.05:
``t* = 2.92`` at 2 degrees of freedom, 2.13 at 4, 1.83 at 9) is *agree* if ``t >= t*``, *disagree*
if ``t <= -t*`` and *inconclusive* otherwise (two identical series are inconclusive, never a
disagreement).  A comparison of a series with fewer than :data:`MIN_RUNS` runs has no verdict but
*too few runs* (a Student test on two or three runs has almost no power and a normal approximation
would be anti-conservative).  A claim is agreed in a cell when every comparison agrees, disagreed
when one disagrees, *too few runs* when a comparison lacks runs and none disagrees, inconclusive
otherwise.  ``within`` uses the two-sided ``1 - level`` Student interval of ``D / mean_b``: agree
when it lies inside ``[-p, p]``, disagree when it lies entirely outside.  Nothing is tuned: the
numbers are what they are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from privbandits.experiments.slopes import loglog_slopes
from privbandits.experiments.summary import TUNED_SUFFIX, Series, fmt_num, format_values

__all__ = [
    "CLAIM_KINDS",
    "MIN_RUNS",
    "VERDICTS",
    "Claim",
    "ClaimResult",
    "Comparison",
    "combine_verdicts",
    "compare",
    "evaluate_claims",
    "param_slopes",
    "replication_slopes",
    "t_critical",
    "verdict_counts",
    "verdict_line",
]

CLAIM_KINDS: tuple[str, ...] = ("order", "tiers", "within", "monotone", "stable", "slope")
VERDICTS: tuple[str, ...] = ("agree", "disagree", "inconclusive", "too few runs", "incomplete")
#: Fewest runs (replications x seeds) of each series of a comparison for it to get a verdict.
MIN_RUNS = 5


@dataclass(frozen=True)
class Claim:
    """One claim of a paper (see the module docstring for the kinds).

    Attributes
    ----------
    kind : {"order", "tiers", "within", "monotone", "stable"}
    items : tuple of str
        Series labels (or algorithm names): the chain of ``order``, the lower tier of ``tiers``,
        ``(a, b)`` of ``within``, the one series of ``monotone`` and ``stable``.
    above : tuple of str
        The upper tier of ``tiers``.
    param, direction : str
        ``monotone``: the parameter and ``"decreasing"`` / ``"increasing"`` (``stable``: the
        parameter; ``slope``: the parameter the final regret is fitted against, None: t within
        each run, and ``"near"`` / ``"at_most"``).
    percent : float
        ``within`` and ``stable``: the tolerance in percent.
    where : dict
        Only the cells with these grid values.
    text : str
        The claim in the paper's words (for the report).
    """

    kind: str
    items: tuple[str, ...]
    above: tuple[str, ...] = ()
    param: str | None = None
    direction: str = "decreasing"
    percent: float | None = None
    where: Mapping[str, Any] = field(default_factory=dict)
    text: str = ""
    exponent: float | None = None
    tolerance: float | None = None

    def describe(self) -> str:
        """The claim as one line of plain text."""
        if self.kind == "order":
            core = " < ".join(self.items)
        elif self.kind == "tiers":
            core = f"{{{', '.join(self.items)}}} < {{{', '.join(self.above)}}}"
        elif self.kind == "within":
            core = f"{self.items[0]} within {self.percent:g} % of {self.items[1]}"
        elif self.kind == "stable":
            core = f"{self.items[0]} stable within {self.percent:g} % across {self.param}"
        elif self.kind == "slope":
            hi = (self.exponent or 0.0) + (self.tolerance or 0.0)
            what = (
                f"log-log slope of {self.items[0]}'s final regret against {self.param}"
                if self.param
                else f"log-log regret slope of {self.items[0]}"
            )
            core = (
                f"{what} at most {hi:g}"
                if self.direction == "at_most"
                else f"{what} within {self.exponent:g} ± {self.tolerance:g}"
            )
        else:
            core = f"{self.items[0]} {self.direction} in {self.param}"
        if self.where:
            core += f" (at {format_values(dict(self.where))})"
        return core


#: Relative size of the rounding error of a cumulative regret: differences and standard errors below
#: it are zero (equal trajectories, or a difference that is the same in every replication).
ROUNDING = 1e-9


@dataclass(frozen=True)
class Comparison:
    """``better < worse`` in final mean regret, tested with Student's t (paired when possible).

    ``df`` is the degrees of freedom of the test, ``level`` its one-sided level and ``runs`` the
    smaller number of runs of the two series.
    """

    better: str
    worse: str
    mean_better: float
    mean_worse: float
    se_diff: float
    paired: bool
    df: float
    level: float = 0.05
    tol: float = 0.0
    runs: int = MIN_RUNS

    @property
    def diff(self) -> float:
        return self.mean_worse - self.mean_better

    @property
    def t(self) -> float:
        """The test statistic; differences and standard errors within ``tol`` (rounding of the
        regret sums) count as zero, so a difference that is the same in every replication gives
        ``+-inf``, not a huge finite number."""
        if abs(self.diff) <= self.tol:
            return 0.0
        if self.se_diff > self.tol:
            return self.diff / self.se_diff
        return math.copysign(math.inf, self.diff)

    @property
    def t_crit(self) -> float:
        """The one-sided critical value of Student's t at ``level`` with ``df`` degrees of freedom."""
        return t_critical(self.level, self.df)

    @property
    def verdict(self) -> str:
        if self.runs < MIN_RUNS:
            return "too few runs"
        t = self.t
        return "agree" if t >= self.t_crit else "disagree" if t <= -self.t_crit else "inconclusive"

    def __str__(self) -> str:
        test = "paired" if self.paired else "Welch"
        return (
            f"{self.better} ({fmt_num(self.mean_better)}) < {self.worse} ({fmt_num(self.mean_worse)}): "
            f"{self.verdict}, {test} t = {self.t:.2f} (df = {self.df:.3g}, t* = {self.t_crit:.2f}"
            f"{'' if self.runs >= MIN_RUNS else f'; {self.runs} runs, a verdict needs {MIN_RUNS}'})"
        )


def t_critical(level: float, df: float) -> float:
    """One-sided critical value ``t_{1 - level}(df)`` (the normal one for infinite ``df``)."""
    if not math.isfinite(df):
        return float(stats.norm.ppf(1 - level))
    return float(stats.t.ppf(1 - level, max(df, 1.0)))


def _welch_df(a: Series, b: Series) -> float:
    """Welch-Satterthwaite degrees of freedom of ``mean_a - mean_b``."""
    va, vb = a.final_se**2, b.final_se**2
    na, nb = a.final.size, b.final.size
    num = (va + vb) ** 2
    den = (va * va / (na - 1) if na > 1 else 0.0) + (vb * vb / (nb - 1) if nb > 1 else 0.0)
    return num / den if den > 0 else float(max(na + nb - 2, 1))


def compare(better: Series, worse: Series, level: float = 0.05) -> Comparison:
    """Test the claim ``final regret of better < final regret of worse``.

    Paired over replications when both series pooled the same seeds with the same number of
    replications (the same instances and draws), Welch's unpaired test otherwise.
    """
    a, b = better.final, worse.final
    paired = better.seeds == worse.seeds and a.shape == b.shape and a.size > 1
    if paired:
        d = b - a
        se = float(d.std(ddof=1) / math.sqrt(d.size))
        df = float(d.size - 1)
    else:
        se = math.hypot(better.final_se, worse.final_se)
        df = _welch_df(better, worse)
    # floating-point rounding of the cumulative regret (sums of up to ~1e7 terms)
    tol = ROUNDING * max(abs(better.final_mean), abs(worse.final_mean), 1.0)
    return Comparison(
        better.name,
        worse.name,
        better.final_mean,
        worse.final_mean,
        se,
        paired,
        df,
        level,
        tol,
        runs=int(min(a.size, b.size)),
    )


@dataclass(frozen=True)
class ClaimResult:
    """A claim checked in one cell."""

    claim: Claim
    cell: dict[str, Any]
    verdict: str
    comparisons: tuple[Comparison, ...] = ()
    missing: tuple[str, ...] = ()
    detail: str = ""

    @property
    def agree(self) -> bool:
        return self.verdict == "agree"

    @property
    def cell_name(self) -> str:
        return format_values(self.cell) if self.cell else "all runs"

    def lines(self) -> list[str]:
        """The comparisons behind the verdict, one per line."""
        out = [str(c) for c in self.comparisons]
        if self.detail:
            out += self.detail.split("\n")
        if self.missing:
            out.append(f"not measured in this cell: {', '.join(self.missing)}")
        return out


def _matches(s: Series, item: str) -> bool:
    """A claim item names a series by its label or by its algorithm; a tuned series
    (:func:`~privbandits.experiments.tuning.tuned_config`) only by its label, so a claim on an
    algorithm entry as published never picks up its tuned twin."""
    if s.label == item:
        return True
    return s.algorithm == item and not s.label.endswith(TUNED_SUFFIX)


def combine_verdicts(verdicts: Sequence[str]) -> str:
    """One cell's verdict from its comparisons': any disagreement wins, then too few runs; agree
    only when every comparison agrees; no comparison at all is incomplete."""
    if not verdicts:
        return "incomplete"
    if "disagree" in verdicts:
        return "disagree"
    if "too few runs" in verdicts:
        return "too few runs"
    return "agree" if all(v == "agree" for v in verdicts) else "inconclusive"


def _cells(
    involved: Sequence[Series], exclude: Sequence[str], where: Mapping[str, Any]
) -> list[dict[str, Any]]:
    keys = sorted({k for s in involved for k in s.grid} - set(exclude))
    cells: list[dict[str, Any]] = []
    for s in involved:
        if all(k in s.grid for k in keys):
            cell = {k: s.grid[k] for k in keys}
            if cell not in cells and all(cell.get(k, v) == v for k, v in where.items()):
                cells.append(cell)
    return cells or ([{}] if not keys else [])


def _in_cell(s: Series, cell: Mapping[str, Any]) -> bool:
    return all(s.grid.get(k, v) == v for k, v in cell.items())


def _pick(involved: Sequence[Series], item: str, cell: Mapping[str, Any]) -> Series | None:
    cands = [s for s in involved if _matches(s, item) and _in_cell(s, cell)]
    return cands[0] if len(cands) == 1 else None


def _within(a: Series, b: Series, percent: float, level: float) -> tuple[str, str]:
    """Verdict and detail line of "mean regret of a within ``percent`` % of that of b": the two-sided
    ``1 - level`` Student interval of ``(a - b) / mean_b`` inside ``[-p, p]`` (agree) or outside it
    (disagree)."""
    comp = compare(b, a, level)  # diff = mean_a - mean_b
    p = percent / 100.0
    scale = abs(b.final_mean)
    if scale == 0:
        return "inconclusive", f"{a.name} / {b.name}: reference mean is 0"
    rel = comp.diff / scale
    hw = t_critical(level / 2, comp.df) * comp.se_diff / scale
    if comp.runs < MIN_RUNS:
        verdict = "too few runs"
    elif abs(rel) + hw <= p:
        verdict = "agree"
    elif abs(rel) - hw > p:
        verdict = "disagree"
    else:
        verdict = "inconclusive"
    detail = (
        f"{a.name} / {b.name} - 1 = {100 * rel:+.1f} % "
        f"({100 * (1 - level):g} % CI {100 * (rel - hw):+.1f} % .. {100 * (rel + hw):+.1f} %, "
        f"df = {comp.df:.3g}), claimed within ±{100 * p:g} %: {verdict}"
    )
    return verdict, detail


def replication_slopes(s: Series, start: float = 0.1) -> np.ndarray:
    """Least-squares slope of log cumulative regret on log t over ``t >= start * T``, one per run."""
    return loglog_slopes(s.checkpoints, s.regret, start)


def param_slopes(members: Sequence[Series], param: str) -> np.ndarray:
    """Least-squares slope of log final regret on log ``param`` across ``members`` (series that
    differ in ``param`` only, e.g. the separate horizons ``T``), one per run: run ``i`` is the
    ``i``-th replication of the same seed in every member.

    Raises
    ------
    ValueError
        If the members did not run the same seeds and replications.
    """
    first = members[0]
    if any(m.seeds != first.seeds or m.n != first.n for m in members):
        raise ValueError("the series ran different seeds or replications")
    x = np.asarray([float(m.value(param)) for m in members])
    finals = np.column_stack([m.final for m in members])  # (runs, values of param)
    return loglog_slopes(x, finals, start=0.0)


def _slope(s: Series, claim: Claim, level: float) -> tuple[str, str]:
    """Verdict and detail line of a ``slope`` claim on series ``s`` (over t within its runs)."""
    return _slope_verdict(s.name, replication_slopes(s), claim, level)


def _slope_over(members: Sequence[Series], claim: Claim, level: float) -> tuple[str, str]:
    """Verdict and detail line of a ``slope`` claim across ``members`` (over ``claim.param``)."""
    param = claim.param or ""
    first = members[0]
    rest = {k: v for k, v in first.grid.items() if k != param}
    name = f"{first.label} ({format_values(rest)})" if rest else first.label
    values = [m.value(param) for m in members]
    try:
        slopes = param_slopes(members, param)
    except ValueError as exc:
        return "incomplete", f"{name}: {exc}; no per-run slope across {param}"
    what = f"final regret against {param} = {', '.join(f'{v:g}' for v in values)}"
    return _slope_verdict(name, slopes, claim, level, what)


def _slope_verdict(
    name: str, slopes: np.ndarray, claim: Claim, level: float, what: str = ""
) -> tuple[str, str]:
    """Verdict and detail line of a ``slope`` claim from per-run slopes (Student interval)."""
    slopes = slopes[np.isfinite(slopes)]
    lo_claim = (
        -math.inf
        if claim.direction == "at_most"
        else (claim.exponent or 0.0) - (claim.tolerance or 0.0)
    )
    hi_claim = (claim.exponent or 0.0) + (claim.tolerance or 0.0)
    if slopes.size < MIN_RUNS:
        return (
            "too few runs",
            f"{name}: {slopes.size} runs with a slope, a verdict needs {MIN_RUNS}",
        )
    m = float(slopes.mean())
    hw = t_critical(level / 2, slopes.size - 1) * float(slopes.std(ddof=1)) / math.sqrt(slopes.size)
    if lo_claim <= m - hw and m + hw <= hi_claim:
        verdict = "agree"
    elif m + hw < lo_claim or m - hw > hi_claim:
        verdict = "disagree"
    else:
        verdict = "inconclusive"
    rng = f"<= {hi_claim:g}" if claim.direction == "at_most" else f"in [{lo_claim:g}, {hi_claim:g}]"
    of = f" of {what}" if what else ""
    return verdict, (
        f"{name}: slope{of} {m:.3f} ({100 * (1 - level):g} % CI {m - hw:.3f} .. {m + hw:.3f}, "
        f"{slopes.size} runs), claimed {rng}: {verdict}"
    )


def _members(
    involved: Sequence[Series], item: str, param: str, cell: Mapping[str, Any]
) -> list[Series]:
    """The series of ``item`` in ``cell`` that have a value of ``param``, by that value."""
    return sorted(
        (
            s
            for s in involved
            if _matches(s, item) and _in_cell(s, cell) and s.value(param) is not None
        ),
        key=lambda s: s.value(param),
    )


def _check_cell(
    claim: Claim, involved: Sequence[Series], cell: dict[str, Any], level: float
) -> ClaimResult:
    if claim.kind == "slope" and claim.param:
        members = _members(involved, claim.items[0], claim.param, cell)
        if len(members) < 2:
            return ClaimResult(claim, cell, "incomplete", missing=(claim.items[0],))
        verdict, detail = _slope_over(members, claim, level)
        return ClaimResult(claim, cell, verdict, (), detail=detail)
    if claim.kind == "slope":
        s = _pick(involved, claim.items[0], cell)
        if s is None:
            return ClaimResult(claim, cell, "incomplete", missing=(claim.items[0],))
        verdict, detail = _slope(s, claim, level)
        return ClaimResult(claim, cell, verdict, (), detail=detail)
    if claim.kind in ("monotone", "stable"):
        members = _members(involved, claim.items[0], claim.param or "", cell)
        if len(members) < 2:
            return ClaimResult(claim, cell, "incomplete", missing=(claim.items[0],))
        if claim.kind == "stable":
            checked = [
                _within(hi, lo, float(claim.percent or 0.0), level)
                for lo, hi in zip(members, members[1:])
            ]
            return ClaimResult(
                claim,
                cell,
                combine_verdicts([v for v, _ in checked]),
                (),
                detail="\n".join(d for _, d in checked),
            )
        if claim.direction == "decreasing":  # larger parameter value -> lower regret
            comps = tuple(compare(hi, lo, level) for lo, hi in zip(members, members[1:]))
        else:
            comps = tuple(compare(lo, hi, level) for lo, hi in zip(members, members[1:]))
        return ClaimResult(claim, cell, combine_verdicts([c.verdict for c in comps]), comps)
    names = claim.items + claim.above
    picked = {n: _pick(involved, n, cell) for n in names}
    missing = tuple(n for n, s in picked.items() if s is None)
    if missing:
        return ClaimResult(claim, cell, "incomplete", missing=missing)
    sel: dict[str, Series] = {n: s for n, s in picked.items() if s is not None}
    if claim.kind == "order":
        comps = tuple(compare(sel[a], sel[b], level) for a, b in zip(claim.items, claim.items[1:]))
        return ClaimResult(claim, cell, combine_verdicts([c.verdict for c in comps]), comps)
    if claim.kind == "tiers":
        comps = tuple(compare(sel[a], sel[b], level) for a in claim.items for b in claim.above)
        return ClaimResult(claim, cell, combine_verdicts([c.verdict for c in comps]), comps)
    # within: D = a - b relative to mean_b, two-sided interval
    verdict, detail = _within(
        sel[claim.items[0]], sel[claim.items[1]], float(claim.percent or 0.0), level
    )
    return ClaimResult(claim, cell, verdict, (), detail=detail)


def evaluate_claims(
    claims: Sequence[Claim], series: Sequence[Series], level: float = 0.05
) -> list[ClaimResult]:
    """Check every claim in every cell of ``series``.

    Parameters
    ----------
    claims : sequence of Claim
    series : sequence of Series
        From :func:`~privbandits.experiments.summary.build_series`.
    level : float
        One-sided significance level of each comparison (``within``: two-sided).

    Returns
    -------
    list of ClaimResult
        In claim order, then cell order.
    """
    out: list[ClaimResult] = []
    for claim in claims:
        names = claim.items + claim.above
        involved = [s for s in series if any(_matches(s, n) for n in names)]
        exclude = (
            [claim.param] if claim.kind in ("monotone", "stable", "slope") and claim.param else []
        )
        cells = _cells(involved, exclude, claim.where)
        if not cells:
            out.append(ClaimResult(claim, dict(claim.where), "incomplete", missing=names))
        out += [_check_cell(claim, involved, cell, level) for cell in cells]
    return out


def verdict_counts(results: Sequence[ClaimResult]) -> dict[str, int]:
    """How many cell checks ended in each verdict."""
    counts = dict.fromkeys(VERDICTS, 0)
    for r in results:
        counts[r.verdict] += 1
    return counts


def verdict_line(results: Sequence[ClaimResult]) -> str:
    """One line summing up the checks, e.g. ``"claims: 5 agree, 1 disagree, 2 inconclusive"``."""
    if not results:
        return "no claims checked"
    counts = verdict_counts(results)
    return "claims: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n)
