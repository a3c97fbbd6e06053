"""Markdown report of a run: configuration, final-regret table, guarantees, claims check."""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from privbandits.algorithms import get
from privbandits.core.errors import UnknownNameError
from privbandits.experiments.claims import MIN_RUNS, ClaimResult, verdict_line
from privbandits.experiments.config import ExperimentConfig
from privbandits.experiments.learning import learning_checks, render_learning
from privbandits.experiments.paper_numbers import Row, render_long, render_table
from privbandits.experiments.runner import RunReport
from privbandits.experiments.summary import Series, fmt_num

__all__ = ["regret_table_rows", "render_report", "write_report"]


def _summary(checks: Sequence[ClaimResult]) -> str:
    """The verdict line, split into the claims as published and their repetition on tuned series
    (:func:`~privbandits.experiments.tuning.tuned_config`) when there are both."""
    from privbandits.experiments.tuning import TUNED_SUFFIX

    def tuned(c: ClaimResult) -> bool:
        return any(i.endswith(TUNED_SUFFIX) for i in (*c.claim.items, *c.claim.above))

    published = [c for c in checks if not tuned(c)]
    retuned = [c for c in checks if tuned(c)]
    if not (published and retuned):
        return verdict_line(checks)
    return f"as published: {verdict_line(published)}; tuned: {verdict_line(retuned)}"


def regret_table_rows(series: Sequence[Series]) -> list[dict[str, str]]:
    """One row per series: name, trust model, guarantee, final regret mean +/- std, n, wall time."""
    return [
        {
            "algorithm": s.name,
            "trust model": s.trust_model,
            "preset": _preset(s),
            "guarantee": _guarantee_cell(s),
            "final regret": f"{fmt_num(s.final_mean)} ± {fmt_num(s.final_std, 3)}",
            "n": str(s.n),
            "wall time (s)": f"{s.wall_time:.1f}",
        }
        for s in series
    ]


def _guarantee_cell(s: Series) -> str:
    """The accounted guarantee without the trust model's assumptions (listed once below the table)."""
    g = s.guarantee
    if not g.is_private:
        return "non-private"
    d = "" if g.delta == 0 else f", delta={g.delta:.3g}"
    local = "" if g.local_epsilon is None else f"; reports {g.local_epsilon:.4g}-LDP"
    return f"{'~' if g.approximate else ''}({g.epsilon:.4g}{d})-DP [{g.model}, per {g.unit}{local}]"


def _assumption_lines(series: Sequence[Series]) -> list[str]:
    models = dict.fromkeys(
        s.guarantee.model for s in series if s.guarantee.is_private and s.guarantee.assumptions
    )
    return [
        f"- **{m}**: {next(s.guarantee.assumptions for s in series if s.guarantee.model == m)}"
        for m in models
    ]


def _version() -> str:
    """The installed library version (imported lazily: the package imports this module)."""
    from privbandits import __version__

    return __version__


def _preset(s: Series) -> str:
    """The series' calibration preset, or "-" for algorithms without presets."""
    try:
        takes = "preset" in inspect.signature(get(s.algorithm).__init__).parameters
    except UnknownNameError:  # stored by an algorithm that is no longer registered
        takes = True
    return s.preset if takes else "-"


def _md_table(rows: Sequence[dict[str, str]]) -> list[str]:
    if not rows:
        return ["(no results)"]
    cols = list(rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    out += ["| " + " | ".join(r[c].replace("|", "\\|") for c in cols) + " |" for r in rows]
    return out


def reduced_banner(config: ExperimentConfig) -> list[str]:
    """The banner of a quick run or a run at another horizon than the experiment declares."""
    if not config.reduced:
        return []
    runs = config.replications * len(config.seeds)
    what = "Quick run" if config.quick else "Reduced run"
    return [
        f"> **{what}: {config.horizon_text('g')}, {runs} runs per series** (the experiment declares "
        f"{config.horizon_text('g', declared=True)}).  A smoke test of the pipeline, not the experiment's settings: "
        "reference numbers measured at another horizon are shown but not compared, and verdicts with "
        f"fewer than {MIN_RUNS} runs per series are *too few runs*.",
        "",
    ]


def render_report(
    config: ExperimentConfig,
    series: Sequence[Series],
    figures: Sequence[Path] = (),
    checks: Sequence[ClaimResult] = (),
    run: RunReport | None = None,
    paper_rows: Sequence[Row] = (),
) -> str:
    """The report as markdown text."""
    rep = config.report
    title = rep.title or f"Experiment {config.name}"
    lines = [f"# {title}", ""]
    if rep.source:
        lines += [f"Source: {rep.source}", ""]
    if config.description:
        lines += [config.description.strip(), ""]
    n_seeds = len(config.seeds)
    lines += reduced_banner(config)
    lines += [
        f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by privbandits {_version()}.",
        f"Horizon {config.horizon_text()}, {config.replications} replications x {n_seeds} seed(s) "
        f"= {config.replications * n_seeds} runs per series; environment: "
        + ", ".join(f"{k}={v}" for k, v in config.env.items())
        + "".join(f"; {k} in {{{', '.join(map(str, vs))}}}" for k, vs in config.env_grid.items())
        + ".",
        *data_lines(run),
        "",
        "## Final cumulative regret",
        "",
        "Mean ± sample standard deviation over all replications of all seeds at t = T. The guarantee is the "
        "one each algorithm's accountant computed from the noise it actually added (the weakest over seeds).",
        "",
        *_md_table(regret_table_rows(series)),
        "",
        *(
            ["Trust assumptions of the guarantees above:", "", *_assumption_lines(series)]
            if _assumption_lines(series)
            else []
        ),
        "",
    ]
    if run is not None:
        lines += [
            f"This invocation ran {run.executed} work unit(s) and reused {run.skipped} already stored "
            f"(wall time {run.wall_time:.1f} s); the wall-time column is the simulation time of each series.",
            "",
        ]
    if rep.slopes:
        from privbandits.experiments.slopes import slope_rows

        lines += [
            "## Growth of regret with T",
            "",
            "Least-squares slope of log mean cumulative regret against log t over the checkpoints t in "
            "[T/10, T], beside the exponent a of the theory's O~(T^a) bound.  For algorithms tuned for the "
            "horizon T this is the growth of the regret curve of the run tuned for T.",
            "",
            *_md_table(slope_rows(series, rep.slopes)),
            "",
        ]
    if figures:
        lines += (
            ["## Figures", ""]
            + [
                f"![{p.stem}]({p.name})" if p.suffix == ".png" else f"- [{p.name}]({p.name})"
                for p in figures
            ]
            + [""]
        )
    if paper_rows:
        lines += [
            "## Reported numbers beside ours",
            "",
            "Each reference number for this experiment, who reported it (*paper*: printed in the paper; "
            "*authors' code*: the authors' public code run by us; *prototype*: an independent prototype "
            "implementation, not the paper; *theory*: a theoretical value), our measurement of the same "
            "quantity (mean ± standard error over all runs) and the ratio ours / reference.  A reference "
            "measured at another horizon than this run is not compared.",
            "",
            *render_long(paper_rows),
            "",
        ]
        for table in config.tables:
            lines += [
                f"### {table.title or 'Table'} ({table.metric}: ours / reference (ratio))",
                "",
                *render_table(table, paper_rows),
                "",
            ]
    lines += render_learning(learning_checks(series, rep.level))
    if checks or rep.claims:
        lines += ["## The paper's claims", ""]
        if rep.claims:
            lines += [rep.claims.strip(), ""]
        if checks:
            z = f"{100 * rep.level:g} %"
            lines += [
                f"Verdicts: each comparison is a one-sided Student t-test at level {z} (paired over "
                "replications when both series ran on the same seeds, i.e. the same instances and draws; "
                "Welch otherwise), with its degrees of freedom shown; *inconclusive* means the difference "
                f"is within noise at that level; *too few runs* means a series has fewer than {MIN_RUNS} runs. "
                f"Summary: {_summary(checks)}.",
                "",
            ]
            current = None
            for chk in checks:
                if chk.claim is not current:
                    current = chk.claim
                    text = f" — {chk.claim.text}" if chk.claim.text else ""
                    lines.append(f"**Claim: {chk.claim.describe()}**{text}")
                    lines.append("")
                lines.append(f"- **{chk.cell_name}**: {chk.verdict}")
                lines += [f"  - {line}" for line in chk.lines()]
            lines.append("")
    if rep.notes:
        lines += ["## Notes", "", rep.notes.strip(), ""]
    lines += [
        "## Configuration",
        "",
        "```json",
        json.dumps(config.raw, indent=2, sort_keys=False, default=str),
        "```",
        "",
    ]
    return "\n".join(lines)


def data_lines(run: RunReport | None) -> list[str]:
    """What the data-backed environments dropped or clipped (never silently): one line per distinct
    account in the stored environment descriptions (``n_dropped`` rows with missing values,
    ``n_clipped_rows`` contexts projected onto the norm bound)."""
    if run is None:
        return []
    seen: dict[str, None] = {}
    for r in run.results:
        env = r.env or {}
        data: dict[str, Any] = env["data"] if isinstance(env.get("data"), dict) else {}
        dropped = env.get("n_dropped", data.get("n_dropped"))
        parts = []
        if dropped is not None:
            parts.append(f"{dropped} row(s) with missing values dropped from the data")
        if env.get("n_clipped_rows"):
            parts.append(f"{env['n_clipped_rows']} context row(s) clipped to the norm bound")
        if parts:
            name = env.get("dataset") or env.get("path") or data.get("name") or data.get("path")
            seen[(f"Data ({name}): " if name else "Data: ") + "; ".join(parts) + "."] = None
    return list(seen)


def write_report(
    path: str | Path,
    config: ExperimentConfig,
    series: Sequence[Series],
    figures: Sequence[Path] = (),
    checks: Sequence[ClaimResult] = (),
    run: RunReport | None = None,
    paper_rows: Sequence[Row] = (),
) -> Path:
    """Write :func:`render_report` to ``path`` (parents created) and return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        render_report(config, series, figures, checks, run, paper_rows), encoding="utf-8"
    )
    return out
