"""A paper's reported numbers beside ours: matching, ratios and tables.

A preset records every number the paper prints for the reproduced experiment::

    [[paper_numbers]]
    algorithm = "LDP-OLS"             # label (or registry name) of an [[algorithms]] entry
    where = { epsilon = 1.0 }         # grid / parameter / environment values of the cell
    metric = "final_regret"           # see METRICS; other metrics are shown without our value
    value = 8.5e3
    kind = "paper"                    # who reported it: see REFERENCE_KINDS
    source = "Table 2, p. 9"          # where the number is printed
    horizon = 1e6                     # T the number was measured at (default: the preset's horizon)

and optionally tables that arrange them (``[[tables]]``: ``title``, ``metric``, ``columns`` = the
key whose values are the columns, ``rows`` = the labels in order).  Every number is shown with our
measurement of the same metric and the ratio ours / reference, labelled by the reference's kind:
only numbers the paper prints are called "paper"; an independent prototype's, the authors' public
code's or a theoretical value is named as such.  A number measured at another horizon than the run
(a ``--quick`` run, ``--horizon``) is shown but not compared ("not comparable").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from privbandits.experiments.summary import Series, axis_name, fmt_num, format_values

__all__ = [
    "METRICS",
    "REFERENCE_KINDS",
    "PaperNumber",
    "PaperTable",
    "Row",
    "match_numbers",
    "render_long",
    "render_table",
]

#: Metrics we can measure from a series.
METRICS: dict[str, Callable[[Series], float]] = {
    "final_regret": lambda s: s.final_mean,
    "final_regret_std": lambda s: s.final_std,
    "final_regret_se": lambda s: s.final_se,
}


#: Who reported a reference number: the paper itself, the authors' public code, an independent
#: prototype implementation, or a theoretical value.
REFERENCE_KINDS: tuple[str, ...] = ("paper", "authors' code", "prototype", "theory")


@dataclass(frozen=True)
class PaperNumber:
    """One reference number: printed in the paper or reported by another named source (``kind``).

    ``horizon`` is the T the number was measured at (None: any, e.g. a property of the instance).
    """

    algorithm: str
    metric: str
    value: float
    where: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""
    kind: str = "paper"
    horizon: int | None = None


@dataclass(frozen=True)
class PaperTable:
    """A table of paper numbers: rows = series labels, columns = values of ``columns``."""

    title: str = ""
    metric: str = "final_regret"
    columns: str | None = None
    rows: tuple[str, ...] = ()


@dataclass(frozen=True)
class Row:
    """A paper number with our measurement of the same quantity (``ours`` None if not measured)."""

    number: PaperNumber
    ours: float | None
    ours_se: float | None
    n: int
    #: The horizon of our run (None: not a horizon-dependent comparison).
    run_horizon: int | None = None

    @property
    def comparable(self) -> bool:
        """Whether the reference was measured at our run's horizon."""
        h = self.number.horizon
        return h is None or self.run_horizon is None or h == self.run_horizon

    @property
    def ratio(self) -> float | None:
        if self.ours is None or self.number.value == 0 or not self.comparable:
            return None
        return self.ours / self.number.value


def _value(s: Series, key: str, env: Mapping[str, Any]) -> Any:
    v = s.value(key)
    return env.get(key) if v is None else v


def match_numbers(
    numbers: Sequence[PaperNumber],
    series: Sequence[Series],
    env: Mapping[str, Any] | None = None,
    extra_metrics: Mapping[str, Callable[[Series], float]] | None = None,
    horizon: int | None = None,
) -> list[Row]:
    """Pair each paper number with the one series of its algorithm and cell (None if none or several).

    ``extra_metrics`` adds metrics beyond :data:`METRICS` (e.g. properties of the environment);
    ``horizon`` is our run's T (references at another T get no ratio).
    """
    env = env or {}
    metrics = {**METRICS, **(extra_metrics or {})}
    rows = []
    for num in numbers:
        cands = [
            s
            for s in series
            if (s.label == num.algorithm or s.algorithm == num.algorithm)
            and all(_value(s, k, env) == v for k, v in num.where.items())
        ]
        metric = metrics.get(num.metric)
        if extra_metrics and num.metric in extra_metrics and cands:
            cands = cands[:1]  # a property of the problem instance: any series of the cell will do
        if len(cands) == 1 and metric is not None:
            s = cands[0]
            se = s.final_se if num.metric == "final_regret" else None
            at_t = None if extra_metrics and num.metric in extra_metrics else horizon
            rows.append(Row(num, metric(s), se, s.n, at_t))
        else:
            rows.append(Row(num, None, None, cands[0].n if len(cands) == 1 else 0, horizon))
    return rows


def _ratio(r: Row) -> str:
    if not r.comparable:
        return f"not comparable (reference at T = {r.number.horizon:g}, this run T = {r.run_horizon:g})"
    return "n/a" if r.ratio is None else f"{r.ratio:.2f}"


def ratio_ranges(rows: Sequence[Row]) -> dict[str, tuple[float, float, int]]:
    """``kind -> (min, max, count)`` of the comparable ratios ours / reference, by reference kind."""
    out: dict[str, tuple[float, float, int]] = {}
    for kind in REFERENCE_KINDS:
        vals = [r.ratio for r in rows if r.number.kind == kind and r.ratio is not None]
        if vals:
            out[kind] = (min(vals), max(vals), len(vals))
    return out


def format_ranges(ranges: Mapping[str, tuple[float, float, int]], not_comparable: int = 0) -> str:
    """``"paper 0.78 .. 0.93 (18); prototype 0.74 .. 1.06 (35)"`` (``-`` when empty)."""
    parts = [f"{k} {lo:.2f} .. {hi:.2f} ({n})" for k, (lo, hi, n) in ranges.items()]
    if not_comparable:
        parts.append(f"{not_comparable} not comparable (other T)")
    return "; ".join(parts) or "-"


def _ours(r: Row) -> str:
    if r.ours is None:
        return "not measured"
    return fmt_num(r.ours) + (f" ± {fmt_num(r.ours_se, 2)}" if r.ours_se is not None else "")


def render_long(rows: Sequence[Row]) -> list[str]:
    """Markdown lines: one row per paper number (ours ± standard error, the paper's, ratio, source)."""
    if not rows:
        return []
    out = [
        "| algorithm | cell | metric | ours (± s.e.) | reference | reported by | ours / reference | source |",
        "|---|---|---|---:|---:|---|---:|---|",
    ]
    for r in rows:
        n = r.number
        at = f" (T = {n.horizon:g})" if n.horizon is not None else ""
        out.append(
            f"| {n.algorithm} | {format_values(dict(n.where)) or '-'} | {n.metric} | {_ours(r)} | "
            f"{fmt_num(n.value)}{at} | {n.kind} | {_ratio(r)} | {n.source or '-'} |"
        )
    return out


def render_table(table: PaperTable, rows: Sequence[Row]) -> list[str]:
    """Markdown lines of ``table``: each cell ``ours / reference (ratio)``."""
    mine = [
        r
        for r in rows
        if r.number.metric == table.metric and (not table.rows or r.number.algorithm in table.rows)
    ]
    if not mine:
        return ["(no paper numbers for this table)"]
    labels = list(table.rows) or list(dict.fromkeys(r.number.algorithm for r in mine))

    def rest(r: Row) -> tuple[tuple[str, Any], ...]:  # the cell's values other than the column's
        return tuple((k, v) for k, v in r.number.where.items() if k != table.columns)

    # one row per label and per combination of the other cell values (e.g. Private-GLM at each epsilon)
    row_keys = [
        (label, extra)
        for label in labels
        for extra in dict.fromkeys(rest(r) for r in mine if r.number.algorithm == label)
    ]
    if table.columns is None:
        cols: list[Any] = [None]
        row_keys = [(label, ()) for label in labels]
    else:  # numbers without the column key (e.g. a non-private baseline) get a column of their own
        cols = list(dict.fromkeys(r.number.where.get(table.columns) for r in mine))
    col = axis_name(table.columns or "")
    head = ["algorithm"] + [
        ("ours / reference (ratio)" if table.columns is None else "-")
        if c is None
        else (f"{col}={c:g}" if isinstance(c, float) else f"{col}={c}")
        for c in cols
    ]
    out = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * len(cols)]
    for label, extra in row_keys:
        cells = []
        for c in cols:
            hits = [
                r
                for r in mine
                if r.number.algorithm == label
                and (
                    table.columns is None
                    or (r.number.where.get(table.columns) == c and rest(r) == extra)
                )
            ]
            if not hits:
                cells.append("-")
                continue
            r = hits[0]
            ours = "n/a" if r.ours is None else fmt_num(r.ours)
            ratio = _ratio(r) if r.comparable else "not comparable"
            cells.append(f"{ours} / {fmt_num(r.number.value)} ({ratio})")
        name = f"{label} ({format_values(dict(extra))})" if extra else label
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out
