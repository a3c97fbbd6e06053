"""Figure, tables and ``report.md`` of a regression study (:mod:`privbandits.experiments.regression_study`).

Every table entry is the mean over the seeds of a cell: held-out L1 error ``E|<phi, theta_hat -
theta*>|``, L2 error ``E<phi, theta_hat - theta*>^2``, and the fraction of seeds whose widths
covered ``f*`` at every held-out point.  The summary names, per cell, the private estimator with
the lowest L1 error, and counts the cells where re-weighting (either lambda shape) is that estimator.
The study's ``[[claims]]`` are checked with a verdict in every cell they apply to
(:mod:`privbandits.experiments.regression_claims`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from privbandits.experiments.claims import ClaimResult, verdict_line
from privbandits.experiments.plots import _save
from privbandits.experiments.regression_claims import (
    describe,
    evaluate_regression_claims,
    verdict_note,
)

__all__ = [
    "LEVEL",
    "cell_means",
    "claims_section",
    "regression_figure",
    "render_regression_report",
    "reweighting_summary",
    "write_regression_report",
]

#: Estimators that are not private (left out of "best private").
NON_PRIVATE = frozenset({"least-squares"})
#: The re-weighted estimators (Chen et al. 2025, Algorithm 2) among the experiment's estimators.
REWEIGHTED = ("reweighted", "reweighted-bernstein")
_LINESTYLES = ("-", "--", ":", "-.")
#: One-sided level of the claims' tests.
LEVEL = 0.05


def _key(row: dict[str, Any], keys: Sequence[str]) -> tuple[Any, ...]:
    return tuple(row[k] for k in keys)


def cell_means(
    rows: Sequence[dict[str, Any]], metric: str
) -> dict[tuple[Any, ...], dict[str, float]]:
    """``{(block, n, d, epsilon, c, p0): {estimator: mean of metric over seeds}}`` in first-seen order."""
    acc: dict[tuple[Any, ...], dict[str, list[float]]] = {}
    for r in rows:
        acc.setdefault(_key(r, ("block", "n", "d", "epsilon", "c", "p0")), {}).setdefault(
            r["estimator"], []
        ).append(float(r[metric]))
    return {k: {e: float(np.mean(v)) for e, v in by.items()} for k, by in acc.items()}


def _seeds_text(study: Any, rows: Sequence[dict[str, Any]]) -> str:
    """``"x 10 seeds"`` (the seeds per cell found in ``rows``, by block when they differ)."""
    per_block: dict[str, int] = {}
    for r in rows:
        per_block[r["block"]] = max(per_block.get(r["block"], 0), int(r["seed"]) + 1)
    counts = sorted(set(per_block.values()))
    if len(counts) <= 1:
        return f"x {counts[0] if counts else 0} seeds"
    common = max(counts, key=lambda c: sum(v == c for v in per_block.values()))
    own = [f"{v} in block {b}" for b, v in per_block.items() if v != common]
    return f"x {common} seeds ({', '.join(own)})"


def reweighting_summary(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Key findings: where re-weighting has the lowest L1 error among the private estimators, and its best
    ratio to the best other private estimator."""
    means = cell_means(rows, "l1")
    wins, best_ratio, where = 0, math.inf, None
    counts: dict[str, int] = {}
    for key, by in means.items():
        private = {e: v for e, v in by.items() if e not in NON_PRIVATE}
        if not private:
            continue
        best = min(private, key=private.__getitem__)
        counts[best] = counts.get(best, 0) + 1
        rw = [private[e] for e in REWEIGHTED if e in private]
        others = [v for e, v in private.items() if e not in REWEIGHTED]
        if rw and others:
            ratio = min(rw) / min(others)
            if ratio < best_ratio:
                best_ratio, where = ratio, key
        wins += best in REWEIGHTED
    total = sum(counts.values())
    lines = [
        f"re-weighting has the lowest L1 error among the private estimators in {wins} of {total} cells",
        "lowest private L1 error per cell: "
        + ", ".join(f"{e} {c}" for e, c in sorted(counts.items(), key=lambda kv: -kv[1])),
    ]
    if where is not None:
        lines.append(
            f"best ratio of re-weighting to the best other private estimator: {best_ratio:.3f} "
            f"({_describe(where)})"
        )
    return lines


def _describe(key: tuple[Any, ...]) -> str:
    block, n, d, eps, c, p0 = key
    extra = f", p0 = {p0:g}" if p0 is not None else f", c = {c:g}"
    return f"{block}: n = {n}, d = {d}, epsilon = {eps:g}{extra}"


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def _table(
    rows: Sequence[dict[str, Any]], metric: str, estimators: Sequence[str], *, best: bool
) -> list[str]:
    means = cell_means(rows, metric)
    cols = ["block", "n", "d", "epsilon", "c", "p0"]
    head = cols + list(estimators) + (["best private"] if best else [])
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, by in means.items():
        cells = ["" if v is None else (f"{v:g}" if isinstance(v, float) else str(v)) for v in key]
        vals = [_fmt(by[e]) if e in by else "" for e in estimators]
        if best:
            private = {e: by[e] for e in estimators if e in by and e not in NON_PRIVATE}
            vals.append(min(private, key=private.__getitem__) if private else "")
        out.append("| " + " | ".join(cells + vals) + " |")
    return out


def regression_figure(study: Any, rows: Sequence[dict[str, Any]]) -> Figure:
    """One panel per block: mean L1 error against the block's ``x`` (log-log), a colour per estimator and
    a line style per ``facet`` value."""
    blocks = study.blocks
    ncols = min(3, len(blocks))
    nrows = math.ceil(len(blocks) / ncols)
    fig = Figure(figsize=(4.6 * ncols, 3.6 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    colors = {e: f"C{j}" for j, e in enumerate(study.estimators)}
    handles: dict[str, Any] = {}
    for ax, block in zip(axes.ravel(), blocks):
        mine = [r for r in rows if r["block"] == block.name]
        facets = sorted({r[block.facet] for r in mine}) if block.facet else [None]
        for j, fv in enumerate(facets):
            for est in study.estimators:
                pts: dict[float, list[float]] = {}
                for r in mine:
                    if r["estimator"] == est and (fv is None or r[block.facet] == fv):
                        pts.setdefault(float(r[block.x]), []).append(float(r["l1"]))
                if not pts:
                    continue
                xs = sorted(pts)
                (line,) = ax.plot(
                    xs,
                    [np.mean(pts[x]) for x in xs],
                    marker="o",
                    ms=3,
                    color=colors[est],
                    ls=_LINESTYLES[j % len(_LINESTYLES)],
                    label=est,
                )
                handles.setdefault(est, line)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(block.x)
        ax.set_ylabel("L1 error")
        styles = (
            ", ".join(
                f"'{_LINESTYLES[j % len(_LINESTYLES)]}' {block.facet} = {fv:g}"
                for j, fv in enumerate(facets)
            )
            if block.facet
            else ""
        )
        fixed = {
            k: v
            for k, v in block.cells[0].items()
            if k not in ("block", block.x, block.facet) and v is not None
        }
        ax.set_title(
            f"{block.name}\n" + ", ".join(f"{k} = {v:g}" for k, v in fixed.items()),
            fontsize="small",
        )
        if styles:
            ax.text(0.02, 0.02, styles, transform=ax.transAxes, fontsize="x-small", va="bottom")
    for ax in axes.ravel()[len(blocks) :]:
        ax.set_visible(False)
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="outside lower center",
        ncols=min(5, max(1, len(handles))),
        fontsize="small",
    )
    fig.suptitle(
        f"{study.report.title or study.name}\nmean over {_seeds_text(study, rows)[2:]} per cell, "
        f"{study.n_test:,} held-out covariates",
        fontsize="medium",
    )
    return fig


def claims_section(study: Any, checks: Sequence[ClaimResult]) -> list[str]:
    """The ``## Claims`` section: the study's framing text, then every claim with its verdict in each
    cell and the tests behind it."""
    lines = ["## Claims", ""]
    if study.report.claims.strip():
        lines += [" ".join(study.report.claims.split()), ""]
    if not checks:
        return lines
    lines += [f"{verdict_note(LEVEL)}  Summary: {verdict_line(checks)}.", ""]
    current = None
    for chk in checks:
        if chk.claim is not current:
            if current is not None:
                lines.append("")
            current = chk.claim
            text = f" — {' '.join(chk.claim.text.split())}" if chk.claim.text else ""
            lines += [f"**Claim: {describe(chk.claim)}**{text}", ""]
        lines.append(f"- **{chk.cell_name}**: {chk.verdict}")
        lines += [f"  - {line}" for line in chk.lines()]
    return lines + [""]


def _timing(elapsed: float, fit_time: float | None, reused: int, units: int) -> str:
    """The header's account of the time: the fits' own time as stored, and how many units this
    invocation ran (a rerun reuses the stored rows and writes the report in seconds)."""
    if fit_time is None:
        return f"{elapsed:.0f} s"
    ran = units - reused
    if reused == 0:
        how = f"all {units} units run by this invocation ({elapsed:.0f} s wall)"
    elif ran == 0:
        how = f"every unit's rows reused from the results store (this invocation: {elapsed:.0f} s)"
    else:
        how = (
            f"{ran} units run by this invocation ({elapsed:.0f} s wall), {reused} reused from the "
            "results store"
        )
    return f"fitting time {fit_time:,.0f} s summed over the units, {how}"


def render_regression_report(
    study: Any,
    rows: Sequence[dict[str, Any]],
    figures: Sequence[Path],
    out_dir: Path,
    summary: Sequence[str],
    elapsed: float,
    checks: Sequence[ClaimResult] = (),
    fit_time: float | None = None,
    reused: int = 0,
) -> str:
    """The markdown of ``report.md``.

    ``elapsed`` is this invocation's wall time, ``fit_time`` the stored fitting time of every unit
    (None: unknown) and ``reused`` how many units came from the results store.
    """
    from privbandits import __version__

    est = list(study.estimators)
    quick = " --quick" if study.quick else ""
    units = len(
        {(r["block"], r["n"], r["d"], r["epsilon"], r["c"], r["p0"], r["seed"]) for r in rows}
    )
    lines = [
        f"# {study.report.title or study.name}",
        "",
        f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by privbandits {__version__} "
        f"(`privbandits reproduce {study.name}{quick}`); {study.n_cells} cells "
        f"{_seeds_text(study, rows)}, {study.n_test:,} held-out covariates per fit; "
        f"{_timing(elapsed, fit_time, reused, units)}.",
        "",
    ]
    if study.report.source:
        lines += [f"Source: {study.report.source}", ""]
    if study.description.strip():
        lines += [" ".join(study.description.split()), ""]
    lines += ["## Summary", ""] + [f"- {s}" for s in summary]
    if checks:
        lines.append(f"- {verdict_line(checks)} (below)")
    lines.append("")
    if checks or study.report.claims.strip():
        lines += claims_section(study, checks)
    lines += [
        f"![{p.stem}]({p.relative_to(out_dir).as_posix()})" for p in figures if p.suffix == ".png"
    ] + [""]
    lines += (
        ["## Mean L1 error `E|<phi, theta_hat - theta*>|`", ""]
        + _table(rows, "l1", est, best=True)
        + [""]
    )
    lines += ["## Mean squared error `E<phi, theta_hat - theta*>^2`", ""] + _table(
        rows, "l2", est, best=True
    )
    lines += [
        "",
        "## Fraction of seeds whose widths covered `f*` at every held-out point",
        "",
        "(an estimator without a finite-sample width reports the trivial width 2)",
        "",
    ]
    lines += _table(rows, "all_covered", est, best=False) + [""]
    lines += ["## Mean width", ""] + _table(rows, "mean_width", est, best=False) + [""]
    eps = [float(r["epsilon_accounted"]) for r in rows if r["estimator"] not in NON_PRIVATE]
    over = [
        r
        for r in rows
        if r["estimator"] not in NON_PRIVATE
        and float(r["epsilon_accounted"]) > float(r["epsilon"]) * (1 + 1e-9)
    ]
    lines += [
        "## Privacy",
        "",
        f"Every private fit's guarantee was recomputed by the accountant from its releases: {len(eps)} fits, "
        f"{len(over)} above the requested epsilon.",
        "",
    ]
    if study.report.notes.strip():
        lines += ["## Notes", "", " ".join(study.report.notes.split()), ""]
    return "\n".join(lines)


def write_regression_report(
    study: Any,
    rows: Sequence[dict[str, Any]],
    out_dir: Path,
    *,
    formats: Sequence[str] = ("png", "pdf"),
    dpi: int = 150,
    elapsed: float = 0.0,
    fit_time: float | None = None,
    reused: int = 0,
) -> tuple[list[Path], Path, list[str]]:
    """Write ``l1-error.<fmt>`` and ``report.md`` into ``out_dir``; returns (figures, report, summary)
    (the summary ends with the claims' verdict line when the study declares claims)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = _save(regression_figure(study, rows), out_dir / "l1-error", formats, dpi)
    summary = reweighting_summary(rows)
    checks = evaluate_regression_claims(getattr(study, "claims", ()), rows, LEVEL)
    path = out_dir / "report.md"
    path.write_text(
        render_regression_report(
            study, rows, figures, out_dir, summary, elapsed, checks, fit_time, reused
        ),
        encoding="utf-8",
    )
    if checks:
        summary = [*summary, verdict_line(checks)]
    return figures, path, summary
