"""Export stored results in long format (one row per replication and checkpoint) to CSV or Parquet.

Columns: ``experiment, key, algorithm, label, preset, trust_model, guarantee_epsilon,
guarantee_delta, trust_assumption, calibration, param_<name>... , seed, replication, t, regret, reward,
estimation_error``.  ``trust_assumption`` states what the trust model assumes; ``calibration``
is the JSON of the resolved calibration (noise scales, clip norms, budget split) the accounted
guarantee was computed from.
``replication`` counts the R batched replications of one unit (0..R-1); ``(seed, replication)``
identifies a run.  ``guarantee_epsilon`` is empty (CSV) or null (Parquet) for non-private
baselines.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from privbandits.core.errors import PrivbanditsError, ValidationError
from privbandits.experiments.store import ResultsStore, StoredResult

__all__ = ["EXPORT_FORMATS", "export_results", "long_columns", "long_rows"]

EXPORT_FORMATS: tuple[str, ...] = ("csv", "parquet")
_LEAD = (
    "experiment",
    "key",
    "algorithm",
    "label",
    "preset",
    "trust_model",
    "guarantee_epsilon",
    "guarantee_delta",
    "trust_assumption",
    "calibration",
)
_TAIL = ("seed", "replication", "t", "regret", "reward", "estimation_error")


def long_columns(results: Sequence[StoredResult]) -> list[str]:
    """Column names for ``results`` (parameter columns are the union over all units, sorted)."""
    params = sorted({k for r in results for k in r.params})
    return [*_LEAD, *(f"param_{k}" for k in params), *_TAIL]


def long_rows(result: StoredResult, columns: Sequence[str]) -> Iterator[list[Any]]:
    """Rows of one stored unit, in ``columns`` order."""
    eps = result.guarantee.epsilon
    lead = [
        result.experiment,
        result.key,
        result.algorithm,
        result.label,
        result.preset,
        result.trust_model,
        None if math.isinf(eps) else eps,
        result.guarantee.delta,
        result.guarantee.assumptions,
        json.dumps(result.resolved_params, sort_keys=True, default=str),
    ]
    n_params = len(columns) - len(_LEAD) - len(_TAIL)
    params = [
        result.params.get(c[len("param_") :]) for c in columns[len(_LEAD) : len(_LEAD) + n_params]
    ]
    params = [v if v is None or isinstance(v, (int, float, str, bool)) else str(v) for v in params]
    err = result.estimation_error
    for i in range(result.regret.shape[0]):
        for j, t in enumerate(result.checkpoints):
            e = None if err is None or math.isnan(err[i, j]) else float(err[i, j])
            yield [
                *lead,
                *params,
                result.seed,
                i,
                int(t),
                float(result.regret[i, j]),
                float(result.reward[i, j]),
                e,
            ]


def export_results(
    store: ResultsStore, path: str | Path, fmt: str = "csv", experiment: str | None = None
) -> tuple[Path, int]:
    """Write the stored results (of one experiment, or all) to ``path``; returns (path, rows)."""
    if fmt not in EXPORT_FORMATS:
        raise ValidationError(f"format must be one of {', '.join(EXPORT_FORMATS)}; got {fmt!r}")
    results = store.load(experiment=experiment)
    if not results:
        which = f"experiment {experiment!r}" if experiment else "the database"
        names = ", ".join(e[0] for e in store.experiments()) or "none"
        raise ValidationError(
            f"no results for {which} in {str(store.path)!r} (experiments: {names})"
        )
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    columns = long_columns(results)
    if fmt == "csv":
        n = 0
        with out.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(columns)
            for r in results:
                for row in long_rows(r, columns):
                    writer.writerow(["" if v is None else v for v in row])
                    n += 1
        return out, n
    return out, _write_parquet(out, results, columns)


def _write_parquet(out: Path, results: Sequence[StoredResult], columns: list[str]) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise PrivbanditsError(
            "Parquet export needs pyarrow: pip install privbandits[parquet]"
        ) from None
    data: dict[str, list[Any]] = {c: [] for c in columns}
    for r in results:
        for row in long_rows(r, columns):
            for c, v in zip(columns, row):
                data[c].append(v)
    table = pa.table({c: _column(pa, v) for c, v in data.items()})
    pq.write_table(table, out)
    return table.num_rows


def _column(pa: Any, values: list[Any]) -> Any:
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed types in one parameter column
        return pa.array([None if v is None else str(v) for v in values])
