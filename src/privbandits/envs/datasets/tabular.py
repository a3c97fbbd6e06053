"""Reading and validating tabular data files (CSV and Parquet) for dataset environments.

Every loader of a user-supplied file goes through this module, so all of them report problems the
same way: a :class:`DataFormatError` naming the file, the column and the (1-based) data row, never
a bare traceback; and no row is dropped silently (:func:`numeric_columns` drops rows with missing
values only under ``na="drop"`` and returns how many it dropped, for the dataset's ``describe()``).

Workflow::

    table = read_table("loans.csv")                     # Table: header + string/number cells
    table.require(["price", "term", "accepted"])        # missing columns -> DataFormatError
    X, kept = numeric_columns(table, ["price", "term"], na="drop")
    y = table.column("accepted")[kept]
"""

from __future__ import annotations

import csv
import difflib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from privbandits.core.errors import MissingDataError, ValidationError
from privbandits.core.validation import check_choice

__all__ = [
    "MISSING_TOKENS",
    "NA_POLICIES",
    "DataFormatError",
    "Table",
    "numeric_columns",
    "read_table",
]

#: Cell values read as missing (case-insensitive, surrounding blanks ignored).
MISSING_TOKENS = frozenset({"", "na", "nan", "n/a", "null", "none"})
#: How rows with a missing value are handled: ``error`` (default) or ``drop`` (counted).
NA_POLICIES = ("error", "drop")

_SUFFIXES = {".csv": "csv", ".txt": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet"}


class DataFormatError(ValidationError):
    """A data file is unreadable or does not have the expected schema or values."""


@dataclass(frozen=True)
class Table:
    """Columns of a data file, all of the same length.

    Attributes
    ----------
    path : str
        The file (used in every error message).
    columns : tuple of str
        Column names, in file order.
    data : dict
        ``name -> ndarray`` of length :attr:`n_rows`: ``object`` arrays of stripped strings for
        CSV (``None`` for a missing cell), numpy/object arrays for Parquet (``None``/NaN for nulls).
    """

    path: str
    columns: tuple[str, ...]
    data: dict[str, np.ndarray]
    lines: tuple[int, ...] | None = None

    def row_name(self, i: int) -> str:
        """How messages name data row ``i`` (0-based): ``data row i+1``, with its line of a CSV file
        (blank lines are skipped, so the two can differ)."""
        if self.lines is None:
            return f"data row {i + 1}"
        return f"data row {i + 1} (line {self.lines[i]})"

    @property
    def n_rows(self) -> int:
        """Number of data rows (the header not counted)."""
        return len(next(iter(self.data.values()))) if self.data else 0

    def require(self, names: Sequence[str], what: str = "column") -> None:
        """Raise :class:`DataFormatError` naming every one of ``names`` the file lacks, with the
        column it most likely meant (other case, a typo) and a delimiter hint when the header looks
        like one column holding the whole row."""
        missing = [n for n in names if n not in self.data]
        if missing:
            hints = []
            for m in missing:
                same_case = [c for c in self.columns if c.casefold() == m.casefold()]
                close = same_case or difflib.get_close_matches(m, self.columns, n=1, cutoff=0.75)
                if close:
                    hints.append(f"{m!r}: did you mean {close[0]!r}?")
            hint = f" ({'; '.join(hints)})" if hints else ""
            glued = [d for d in (";", "\t", "|") if len(self.columns) == 1 and d in self.columns[0]]
            if glued:
                shown = "\\t" if glued[0] == "\t" else glued[0]
                hint += (
                    f"; the header is one column holding {glued[0]!r}-separated names: the file is not "
                    f'comma-separated, set delimiter = "{shown}"'
                )
            raise DataFormatError(
                f"{self.path!r}: missing {what}{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(m) for m in missing)}{hint}; the file has columns "
                f"{', '.join(repr(c) for c in self.columns)}"
            )

    def column(self, name: str) -> np.ndarray:
        """The raw cells of column ``name``."""
        self.require([name])
        return self.data[name]


def read_table(path: str | Path, *, fmt: str | None = None, delimiter: str | None = None) -> Table:
    """Read a CSV (comma, or tab for ``.tsv``) or Parquet file into a :class:`Table`.

    Parameters
    ----------
    path : str or Path
        The file.
    fmt : {"csv", "tsv", "parquet"}, optional
        Format (default: from the suffix; CSV for unknown suffixes).
    delimiter : str, optional
        Field separator of a text file (default: detected from the header line: ``,`` unless the
        header has none and holds ``;``, a tab or ``|``).

    Raises
    ------
    MissingDataError
        The file does not exist.
    DataFormatError
        Empty file, no data rows, blank or duplicate column names, rows with the wrong number of
        fields, an unreadable Parquet file, or ``pyarrow`` missing for a Parquet file.
    """
    p = Path(path)
    if not p.is_file():
        raise MissingDataError(f"data file {str(p)!r} does not exist (or is not a file)")
    kind = fmt if fmt is not None else _SUFFIXES.get(p.suffix.lower(), "csv")
    check_choice("fmt", kind, ("csv", "tsv", "parquet"))
    if p.stat().st_size == 0:
        raise DataFormatError(
            f"{str(p)!r} is empty (0 bytes); expected a header row and at least one data row"
        )
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1):
        raise ValidationError(
            f"delimiter must be a single character such as ',' ';' or '\\t', got {delimiter!r}"
        )
    if kind == "parquet":
        table = _read_parquet(p)
    else:
        table = _read_csv(p, delimiter or ("\t" if kind == "tsv" else _detect_delimiter(p)))
    if table.n_rows == 0:
        raise DataFormatError(
            f"{str(p)!r} has a header ({', '.join(table.columns)}) but no data rows"
        )
    return table


def _detect_delimiter(p: Path) -> str:
    """``,`` unless the first non-blank line has no comma and one of ``;``, tab, ``|`` (in that order)."""
    try:
        with p.open(encoding="utf-8", newline="") as fh:
            first = next((line for line in fh if line.strip()), "")
    except (UnicodeDecodeError, OSError):
        return ","  # the reader reports the problem with its own message
    if "," in first:
        return ","
    return next((d for d in (";", "\t", "|") if d in first), ",")


def _check_header(path: str, header: Sequence[str]) -> tuple[str, ...]:
    names = tuple(str(h).strip() for h in header)
    for j, name in enumerate(names, 1):
        if not name:
            raise DataFormatError(f"{path!r}: column {j} of the header has no name")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DataFormatError(
                f"{path!r}: column name {name!r} appears more than once in the header"
            )
        seen.add(name)
    return names


def _read_csv(p: Path, delimiter: str) -> Table:
    path = str(p)
    try:
        with p.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh, delimiter=delimiter)
            rows, lines = [], []
            for r in reader:
                rows.append(r)
                lines.append(reader.line_num)  # the file line the row ends on (1-based)
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            f"{path!r} is not UTF-8 text (byte {exc.start}); is it a binary file? "
            f"(Parquet files need the suffix .parquet)"
        ) from None
    except csv.Error as exc:
        raise DataFormatError(f"{path!r} is not valid CSV: {exc}") from None
    except OSError as exc:  # permissions, I/O errors
        raise DataFormatError(f"{path!r} cannot be read: {exc}") from None
    keep = [k for k, r in enumerate(rows) if any(c.strip() for c in r)]  # blank lines carry no data
    rows, lines = [rows[k] for k in keep], [lines[k] for k in keep]
    if not rows:
        raise DataFormatError(
            f"{path!r} holds only blank lines; expected a header row and data rows"
        )
    header = _check_header(path, rows[0])
    H = len(header)
    for i, row in enumerate(rows[1:], 1):
        if len(row) != H:
            raise DataFormatError(
                f"{path!r}: data row {i} (line {lines[i]}) has {len(row)} fields, the header "
                f"has {H} ({', '.join(header)})"
            )
    cells = np.empty((len(rows) - 1, H), dtype=object)
    for i, row in enumerate(rows[1:]):
        for j, c in enumerate(row):
            s = c.strip()
            cells[i, j] = None if s.lower() in MISSING_TOKENS else s
    return Table(
        path, header, {name: cells[:, j] for j, name in enumerate(header)}, tuple(lines[1:])
    )


def _read_parquet(p: Path) -> Table:
    path = str(p)
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataFormatError(
            f"{path!r}: reading Parquet files needs pyarrow (pip install 'privbandits[parquet]')"
        ) from None
    try:
        t = pq.read_table(p)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ... for damaged files
        raise DataFormatError(f"{path!r} is not a readable Parquet file: {exc}") from None
    header = _check_header(path, t.column_names)
    data: dict[str, np.ndarray] = {}
    for name in header:
        col = t.column(name).to_pylist()
        data[name] = np.array(col, dtype=object)
    return Table(path, header, data)


def _to_float(cell: object) -> float | None:
    """``float`` of a cell, ``nan`` for a missing one, ``None`` when it is not a number."""
    if cell is None:
        return math.nan
    if isinstance(cell, bool):
        return float(cell)
    if isinstance(cell, (int, float, np.integer, np.floating)):
        return float(cell)
    if isinstance(cell, str):
        try:
            return float(cell)
        except ValueError:
            return None
    return None


#: Largest magnitude of a numeric cell: beyond it squares overflow float64 (1e154 squared is 1e308),
#: so norms, standardization and clipping would turn the column into infinities or zeros.
MAX_ABS_VALUE = 1e150


def numeric_columns(
    table: Table, names: Sequence[str], *, na: str = "error", also_required: Sequence[str] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """The ``(n_kept, len(names))`` float matrix of columns ``names`` and the kept row indices.

    Parameters
    ----------
    table : Table
        From :func:`read_table`.
    names : sequence of str
        Numeric columns.
    na : {"error", "drop"}
        A missing cell (empty, NA, NaN, null) in ``names`` or ``also_required`` is an error
        naming the file, column and row (``error``), or drops its row (``drop``; the count is
        ``table.n_rows - len(kept)``).
    also_required : sequence of str
        Further columns (e.g. a label of any type) whose missing cells are handled the same way.

    Raises
    ------
    DataFormatError
        A missing column, a non-numeric or infinite value (naming file, column, row and value), a
        missing value under ``na="error"``, or no row left after dropping.
    """
    check_choice("na", na, NA_POLICIES)
    table.require(list(names) + [c for c in also_required if c not in names])
    n = table.n_rows
    out = np.empty((n, len(names)))
    missing = np.zeros(n, dtype=bool)
    for j, name in enumerate(names):
        for i, cell in enumerate(table.data[name]):
            v = _to_float(cell)
            if v is None:
                raise DataFormatError(
                    f"{table.path!r}: column {name!r}, {table.row_name(i)}: {cell!r} is not a number"
                )
            if math.isinf(v):
                raise DataFormatError(
                    f"{table.path!r}: column {name!r}, {table.row_name(i)}: value {cell!r} is infinite"
                )
            if abs(v) > MAX_ABS_VALUE:
                raise DataFormatError(
                    f"{table.path!r}: column {name!r}, {table.row_name(i)}: value {cell!r} is beyond +-{MAX_ABS_VALUE:g}; "
                    "squares and norms of such values overflow to infinity (the feature would be lost): rescale "
                    "the column or drop it"
                )
            out[i, j] = v
        missing |= np.isnan(out[:, j])
    for name in also_required:
        missing |= np.array([_is_missing(c) for c in table.data[name]], dtype=bool)
    if missing.any() and na == "error":
        i = int(np.argmax(missing))
        cols = [c for c in (*names, *also_required) if _is_missing(table.data[c][i])]
        raise DataFormatError(
            f"{table.path!r}: column {cols[0]!r}, {table.row_name(i)}: missing value "
            f"({int(missing.sum())} rows have missing values); clean the file or pass "
            f'na = "drop" to drop those rows (the count is reported)'
        )
    kept = np.flatnonzero(~missing)
    if kept.size == 0:
        every = (*names, *also_required)
        empty = [c for c in every if all(_is_missing(x) for x in table.data[c])]
        which = (
            f"column{'s' if len(empty) > 1 else ''} {', '.join(repr(c) for c in empty)} "
            f"{'are' if len(empty) > 1 else 'is'} empty (every value missing): leave "
            f"{'them' if len(empty) > 1 else 'it'} out of the features"
            if empty
            else f"every one of the {n} data rows has a missing value in some of "
            f"{', '.join(repr(c) for c in every)}"
        )
        raise DataFormatError(
            f"{table.path!r}: {which}; no row is left after dropping rows with missing values"
        )
    return out[kept], kept


def _is_missing(cell: object) -> bool:
    v = _to_float(cell)
    return v is not None and math.isnan(v)
