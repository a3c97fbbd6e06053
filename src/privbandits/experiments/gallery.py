"""Every reproduction from one command, and the gallery page that shows them.

:func:`reproduce_all` runs every shipped preset (or a chosen subset) through the pipeline into
``<out>/<paper>/<figure>/`` (preset ``han2021-fig5.1-single`` -> ``han2021/fig5.1-single``) and :func:`write_gallery` writes ``<out>/README.md``: for each preset its title,
its first figure, the verdict line of its claim checks, its paper-number ratios and a link to its
report.  ``privbandits reproduce --all [--quick] --out DIR`` does both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from privbandits.core.errors import MissingDataError
from privbandits.experiments.claims import verdict_counts, verdict_line
from privbandits.experiments.config import Overrides
from privbandits.experiments.learning import learning_checks
from privbandits.experiments.paper_numbers import format_ranges, ratio_ranges
from privbandits.experiments.pipeline import Outcome, run_reproduction
from privbandits.experiments.presets import available_presets, load_reproduction
from privbandits.experiments.regression_study import RegressionOutcome

__all__ = ["GalleryEntry", "entry_of", "preset_dir", "reproduce_all", "write_gallery"]

#: Presets that are not paper reproductions (left out of ``--all``).
NOT_REPRODUCTIONS: frozenset[str] = frozenset({"demo"})


@dataclass(frozen=True)
class GalleryEntry:
    """One reproduction in the gallery."""

    name: str
    title: str
    directory: str
    figures: tuple[str, ...]
    verdicts: dict[str, int]
    verdict: str
    #: ``kind -> (min, max, count)`` of ours / reference by who reported the reference.
    ratios: dict[str, tuple[float, float, int]]
    horizon: int
    runs: int
    wall_time: float  # simulation time of all its series (as stored with the results)
    size: str = ""  # problem size shown instead of T (a regression study has no horizon)
    not_comparable: int = 0  # reference numbers at another horizon than the run
    no_learning: tuple[str, ...] = ()  # series whose regret is within noise of uniform play
    #: verdict line of the claims repeated on tuned series ("" when nothing was tuned); ``verdict``
    #: is then the as-published one
    tuned_verdict: str = ""


def preset_dir(name: str) -> str:
    """Output directory of preset ``name`` under the gallery root: ``<paper>/<figure>``."""
    paper, sep, rest = name.partition("-")
    return f"{paper}/{rest}" if sep and rest else name


def _entry(name: str, outcome: Outcome | RegressionOutcome, out: Path) -> GalleryEntry:
    if isinstance(outcome, RegressionOutcome):
        study = outcome.config
        figs = tuple(p.relative_to(out).as_posix() for p in outcome.figures if p.suffix == ".png")
        return GalleryEntry(
            name=name,
            title=study.report.title or name,
            directory=preset_dir(name),
            figures=figs,
            verdicts={},
            verdict=outcome.summary[0],
            ratios={},
            horizon=0,
            runs=study.replications,
            wall_time=outcome.wall_time,
            size=study.size,
        )
    cfg = outcome.config
    figures = tuple(p.relative_to(out).as_posix() for p in outcome.figures if p.suffix == ".png")
    tuned = [c for c in outcome.checks if _is_tuned(c.claim)]
    published = [c for c in outcome.checks if not _is_tuned(c.claim)]
    return GalleryEntry(
        name=name,
        title=cfg.report.title or name,
        directory=preset_dir(name),
        figures=figures,
        verdicts=verdict_counts(published),
        verdict=verdict_line(published),
        tuned_verdict=verdict_line(tuned) if tuned else "",
        ratios=ratio_ranges(outcome.paper_rows),
        horizon=cfg.horizon,
        runs=cfg.replications * len(cfg.seeds),
        wall_time=sum(s.wall_time for s in outcome.series),
        size=", ".join(f"{h:g}" for h in cfg.horizons),  # separate horizons: all of them
        not_comparable=sum(1 for r in outcome.paper_rows if not r.comparable),
        no_learning=tuple(
            c.series
            for c in learning_checks(outcome.series, cfg.report.level)
            if c.verdict == "no learning detected"
        ),
    )


def _is_tuned(claim: Any) -> bool:
    """A claim repeated on tuned series (:func:`~privbandits.experiments.tuning.tuned_config`)."""
    from privbandits.experiments.tuning import TUNED_SUFFIX

    return any(i.endswith(TUNED_SUFFIX) for i in (*claim.items, *claim.above))


def entry_of(name: str, outcome: Outcome | RegressionOutcome, out: str | Path) -> GalleryEntry:
    """The gallery entry of one finished reproduction written under ``out``."""
    return _entry(name, outcome, Path(out))


def reproduce_all(
    out: str | Path,
    db: str | Path,
    *,
    names: Sequence[str] | None = None,
    quick: bool = False,
    overrides: Overrides | None = None,
    workers: int | None = None,
    scheduler: Any = None,
    quiet: bool = False,
    dpi: int | None = None,
    on_done: Callable[[str, Outcome | RegressionOutcome], None] | None = None,
) -> list[GalleryEntry]:
    """Run presets ``names`` (default: every reproduction preset) into ``out/<paper>/<figure>/``.

    Results go to the database ``db`` (an interrupted run resumes there).  ``on_done`` is called
    after each preset with its outcome.
    """
    out = Path(out)
    chosen = (
        list(names) if names else [n for n in available_presets() if n not in NOT_REPRODUCTIONS]
    )
    base = overrides or Overrides()
    entries = []
    for name in chosen:
        try:
            cfg = load_reproduction(
                name,
                Overrides(
                    quick=quick,
                    horizon=base.horizon,
                    replications=base.replications,
                    seeds=base.seeds,
                    preset=base.preset,
                    engine=base.engine,
                ),
            )
        except (
            MissingDataError
        ) as exc:  # a data set the user supplies (not bundled): listed as skipped
            entries.append(
                GalleryEntry(
                    name=name,
                    title=name,
                    directory=preset_dir(name),
                    figures=(),
                    verdicts={},
                    verdict=f"not run: {exc}",
                    ratios={},
                    horizon=0,
                    runs=0,
                    wall_time=0.0,
                )
            )
            continue
        outcome = run_reproduction(
            cfg,
            db,
            out / preset_dir(name),
            workers=workers,
            scheduler=scheduler,
            quiet=quiet,
            dpi=dpi,
        )
        entries.append(_entry(name, outcome, out))
        if on_done is not None:
            on_done(name, outcome)
    return entries


def write_gallery(
    entries: Sequence[GalleryEntry],
    out: str | Path,
    *,
    quick: bool = False,
    command: str | None = None,
) -> Path:
    """Write ``out/README.md``: one section per reproduction with its figure, verdicts and report link."""
    from privbandits import __version__

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    default = f"privbandits reproduce --all{' --quick' if quick else ''} --out {out.as_posix()}"
    mode = (
        " (quick mode: short horizons, few replications — a smoke run, not the paper's settings)"
        if quick
        else ""
    )
    lines = [
        "# Reproductions",
        "",
        f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by privbandits {__version__} with "
        f"`{command or default}`{mode}.",
        "",
        "Each section shows our figure, the verdicts of the paper's claims checked on our numbers "
        "(one-sided Student t-tests, paired over common random numbers where possible; *inconclusive* = "
        "within noise; *too few runs* = fewer runs than a verdict needs) and, where reference numbers "
        "exist, the range of ours / reference by who reported the reference: *paper* (printed in the "
        "paper), *authors' code*, *prototype* (an independent implementation, not the paper) or "
        "*theory*; references at another horizon than the run are not compared.  The report of each "
        "reproduction has the full configuration, the accounted privacy guarantees, every comparison "
        "and our notes where we disagree with the paper.",
        "",
        "| reproduction | T (or n) | runs | claims | ours / reference, by source | simulation time (sum over units) |",
        "|---|---:|---:|---|---|---:|",
    ]
    for e in entries:
        if not e.runs:
            lines.append(f"| {e.name} | - | - | {e.verdict} | - | - |")
            continue
        ratios = format_ranges(e.ratios, e.not_comparable)
        verdict = (
            f"as published: {e.verdict}; tuned: {e.tuned_verdict}" if e.tuned_verdict else e.verdict
        ) + (f"; **no learning detected: {len(e.no_learning)} series**" if e.no_learning else "")
        lines.append(
            f"| [{e.name}]({e.directory}/report.md) | {e.size or f'{e.horizon:g}'} | {e.runs} | {verdict} | "
            f"{ratios} | {e.wall_time:.0f} s |"
        )
    lines.append("")
    for e in entries:
        if not e.runs:
            continue
        lines += [
            f"## {e.title}",
            "",
            f"`privbandits reproduce {e.name}{' --quick' if quick else ''}` — "
            f"{e.verdict}"
            + (f" (as published); tuned: {e.tuned_verdict}" if e.tuned_verdict else "")
            + f". [Report]({e.directory}/report.md)",
            "",
        ]
        if e.no_learning:
            lines += [
                f"No learning detected (final regret within noise of `uniform` on the same seeds): "
                f"{', '.join(e.no_learning)}.",
                "",
            ]
        lines += [f"![{e.name}]({fig})" for fig in e.figures] + [""]
    notes = sorted(p.relative_to(out).as_posix() for p in out.glob("*/README.md"))
    if notes:
        lines += [
            "## Per-paper notes",
            "",
            "Discussion of each paper's reproductions (differences from the paper and why, runs made "
            "outside this page's command):",
            "",
        ]
        lines += [f"- [{Path(n).parent.as_posix()}]({n})" for n in notes] + [""]
    path = out / "README.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
