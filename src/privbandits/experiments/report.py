"""Markdown report of a run: configuration, final-regret table, guarantees, claims check."""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from privbandits.algorithms import get
from privbandits.core.errors import UnknownNameError
from privbandits.experiments.claims import OrderCheck
from privbandits.experiments.config import ExperimentConfig
from privbandits.experiments.runner import RunReport
from privbandits.experiments.summary import Series, fmt_num

__all__ = ["regret_table_rows", "render_report", "write_report"]


def regret_table_rows(series: Sequence[Series]) -> list[dict[str, str]]:
    """One row per series: name, trust model, guarantee, final regret mean +/- std, n, wall time."""
    return [{
        "algorithm": s.name,
        "trust model": s.trust_model,
        "preset": _preset(s),
        "guarantee": str(s.guarantee) if s.guarantee.is_private else "non-private",
        "final regret": f"{fmt_num(s.final_mean)} ± {fmt_num(s.final_std, 3)}",
        "n": str(s.n),
        "wall time (s)": f"{s.wall_time:.1f}",
    } for s in series]


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


def render_report(config: ExperimentConfig, series: Sequence[Series], figures: Sequence[Path] = (),
                  checks: Sequence[OrderCheck] = (), run: RunReport | None = None) -> str:
    """The report as markdown text."""
    rep = config.report
    title = rep.title or f"Experiment {config.name}"
    lines = [f"# {title}", ""]
    if rep.source:
        lines += [f"Source: {rep.source}", ""]
    if config.description:
        lines += [config.description.strip(), ""]
    n_seeds = len(config.seeds)
    lines += [
        f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by privbandits.",
        f"Horizon T = {config.horizon}, {config.replications} replications x {n_seeds} seed(s) "
        f"= {config.replications * n_seeds} runs per series; environment: "
        + ", ".join(f"{k}={v}" for k, v in config.env.items()) + ".",
        "",
        "## Final cumulative regret",
        "",
        "Mean ± sample standard deviation over all replications of all seeds at t = T. The guarantee is the "
        "one each algorithm's accountant computed from the noise it actually added (the weakest over seeds).",
        "",
        *_md_table(regret_table_rows(series)),
        "",
    ]
    if run is not None:
        lines += [f"This invocation ran {run.executed} work unit(s) and reused {run.skipped} already stored "
                  f"(wall time {run.wall_time:.1f} s); the wall-time column is the simulation time of each series.",
                  ""]
    if rep.slopes:
        from privbandits.experiments.slopes import slope_rows

        lines += ["## Growth of regret with T", "",
                  "Least-squares slope of log mean cumulative regret against log t over the checkpoints t in "
                  "[T/10, T], beside the exponent a of the theory's O~(T^a) bound.  For algorithms tuned for the "
                  "horizon T this is the growth of the regret curve of the run tuned for T.", "",
                  *_md_table(slope_rows(series, rep.slopes)), ""]
    if figures:
        lines += ["## Figures", ""] + [f"![regret]({p.name})" if p.suffix == ".png" else f"- [{p.name}]({p.name})"
                                       for p in figures] + [""]
    if rep.claimed_order or rep.claims:
        lines += ["## The paper's claims", ""]
        if rep.claims:
            lines += [rep.claims.strip(), ""]
        if rep.claimed_order:
            lines += [f"Claimed ordering of final regret (lowest first): {' < '.join(rep.claimed_order)}.", ""]
            for chk in checks:
                verdict = "agree" if chk.agree else ("incomplete" if chk.missing else "DISAGREE")
                lines.append(f"- **{chk.cell_name}**: {verdict}")
                lines += [f"  - {p}" for p in chk.pairs]
                if chk.missing:
                    lines.append(f"  - not measured in this cell: {', '.join(chk.missing)}")
            lines.append("")
    lines += ["## Configuration", "", "```json", json.dumps(config.raw, indent=2, sort_keys=False, default=str),
              "```", ""]
    return "\n".join(lines)


def write_report(path: str | Path, config: ExperimentConfig, series: Sequence[Series],
                 figures: Sequence[Path] = (), checks: Sequence[OrderCheck] = (),
                 run: RunReport | None = None) -> Path:
    """Write :func:`render_report` to ``path`` (parents created) and return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(config, series, figures, checks, run), encoding="utf-8")
    return out
