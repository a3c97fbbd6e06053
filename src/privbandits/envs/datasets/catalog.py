"""Rows of the ``privbandits datasets`` tables (plain strings; the command line renders them)."""

from __future__ import annotations

from typing import Any

from privbandits.core.errors import ValidationError
from privbandits.envs.datasets.registry import get, names

__all__ = ["FIELD_NOTES", "LIST_COLUMNS", "describe_rows", "list_rows"]

#: Columns of :func:`list_rows`.
LIST_COLUMNS = ("name", "kind", "availability", "summary", "source", "licence")


#: What the less obvious fields of a description mean (shown beside their values).
FIELD_NOTES = {
    "class_balance": "smallest class count / largest; 1 = balanced",
    "best_arm_reward": "mean reward of always playing the best single class",
    "linear_policy_reward": "mean reward of the greedy policy of the least-squares fit of the "
    "rewards on the standardized features: what a linear bandit can reach",
    "n_dropped": "rows dropped for missing values",
}


def list_rows(kind: str | None = None) -> list[tuple[str, ...]]:
    """One row per registered data set (nothing is loaded or downloaded)."""
    rows: list[tuple[str, ...]] = []
    for name in names(kind):
        e = get(name)
        rows.append((e.name, e.kind, e.availability, e.summary, e.source, e.licence))
    return rows


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        shown = ", ".join(_fmt(v) for v in value[:30])
        return shown + (f", ... ({len(value)} in all)" if len(value) > 30 else "")
    return str(value)


def describe_rows(name: str, **options: Any) -> list[tuple[str, str]]:
    """``(field, value)`` rows of the loaded data set's ``describe()``.

    ``options`` go to the loader (e.g. ``path``, ``label``, ``na`` for ``file``, ``data_home`` for
    downloadable data sets); options a loader does not take are an error naming them.
    """
    entry = get(name)
    opts = {k: v for k, v in options.items() if v is not None}
    data = entry.load(**opts)
    desc = data.describe()
    if not isinstance(desc, dict):
        raise ValidationError(
            f"data set {name!r}: describe() must return a dict, got {type(desc).__name__}"
        )
    rows = [
        ("registry name", entry.name),
        ("kind", entry.kind),
        ("availability", entry.availability),
    ]
    rows += [
        (str(k), _fmt(v) + (f" ({FIELD_NOTES[k]})" if k in FIELD_NOTES else ""))
        for k, v in desc.items()
    ]
    return rows
