"""Classification data sets (features and a class label) for the supervised-to-bandit environment.

Sources: scikit-learn's bundled data sets (no network), scikit-learn's fetchers (downloaded on
first use, cached under ``data_home``), and any CSV or Parquet file with a named label column.
"""

from __future__ import annotations

import csv
import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privbandits.core.errors import MissingDataError, ValidationError
from privbandits.core.validation import check_choice
from privbandits.envs.datasets import filecache
from privbandits.envs.datasets.registry import register
from privbandits.envs.datasets.tabular import (
    _SUFFIXES,
    MAX_ABS_VALUE,
    MISSING_TOKENS,
    NA_POLICIES,
    DataFormatError,
    _detect_delimiter,
    numeric_columns,
    read_table,
)

__all__ = ["SupervisedData", "fetch_sklearn", "load_file", "load_sklearn", "policy_benchmarks"]


#: Rows handled at a time by the streaming passes over a data set.
CHUNK_ROWS = 1 << 16


def _chunks(n: int) -> list[slice]:
    return [slice(i, min(i + CHUNK_ROWS, n)) for i in range(0, n, CHUNK_ROWS)]


def least_squares(Z: Any, R: Callable[[slice], np.ndarray], intercept: bool) -> np.ndarray:
    """Minimum-norm least-squares coefficients of targets ``R`` on the rows of ``Z`` (and a
    constant column when ``intercept``), ``(d [+ 1], K)``, from the normal equations accumulated
    over chunks of rows (memory: a few chunks and a ``(d + 1)^2`` matrix).

    ``Z`` needs ``shape`` and row slicing; ``R(rows)`` gives the targets of a slice of rows.
    """
    n, d = Z.shape
    G = np.zeros((d + intercept, d + intercept))
    B: np.ndarray | None = None
    for c in _chunks(n):
        A = _design(Z[c], intercept)
        Rc = R(c)
        # einsum, not BLAS: a multi-threaded BLAS on small products is many times slower on a
        # busy machine, and the result must not depend on the thread count
        G += np.einsum("ij,ik->jk", A, A)
        AtR = np.einsum("ij,ik->jk", A, Rc)
        B = AtR if B is None else B + AtR
    assert B is not None
    coef, *_ = np.linalg.lstsq(G, B, rcond=None)
    return np.asarray(coef)


def _design(Zc: np.ndarray, intercept: bool) -> np.ndarray:
    Zc = np.asarray(Zc, dtype=float)
    return np.hstack([Zc, np.ones((Zc.shape[0], 1))]) if intercept else Zc


def policy_benchmarks(Z: Any, y: np.ndarray, reward_matrix: np.ndarray) -> tuple[float, int, float]:
    """Rewards of the best fixed policies on the data (the comparators a bandit algorithm can reach).

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        Contexts (or anything with ``shape`` whose row slices are arrays; read in chunks).
    y : ndarray of int, shape (n,)
        Class indices.
    reward_matrix : ndarray of shape (K, K)
        ``reward_matrix[label, arm]``.

    Returns
    -------
    best_arm_reward : float
        Mean reward of the best single arm, ``max_a mean_i reward_matrix[y_i, a]``.
    best_arm : int
        That arm.
    linear_reward : float
        Mean reward of the greedy policy of the least-squares fit of every arm's reward on
        ``[Z, 1]`` (``argmax_a`` of the fitted values): the policy a linear bandit's estimates
        converge to.  It is a lower bound on the best linear policy's reward (maximizing the
        reward over linear policies exactly is NP-hard).
    """
    n = len(y)
    arm_means = np.bincount(y, minlength=reward_matrix.shape[0]) @ reward_matrix / n
    best_arm = int(np.argmax(arm_means))
    coef = least_squares(Z, lambda c: reward_matrix[y[c]], intercept=True)
    total = 0.0
    for c in _chunks(n):
        pick = np.argmax(np.einsum("ij,jk->ik", _design(Z[c], True), coef), axis=1)
        total += float(reward_matrix[y[c], pick].sum())
    return float(arm_means[best_arm]), best_arm, total / n


class _Standardized:
    """The standardized features of a data set, computed chunk by chunk when sliced."""

    def __init__(self, X: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> None:
        self.X, self.mean, self.sd = X, mean, sd
        self.shape = X.shape

    def __getitem__(self, rows: slice) -> np.ndarray:
        return (self.X[rows] - self.mean) / self.sd


@dataclass(frozen=True)
class SupervisedData:
    """A classification data set, validated: finite features, at least two classes.

    Attributes
    ----------
    name : str
        Data set name.
    X : ndarray of shape (n, p)
        Raw features (finite).
    y : ndarray of int, shape (n,)
        Class index of every row, in ``0..K-1``.
    feature_names, class_names : tuple of str
        Column names and the label value of every class index.
    source, licence : str
        Provenance.
    n_dropped : int
        Rows dropped for missing values (``na = "drop"``); 0 otherwise.
    na : str
        The missing-value policy the data was loaded with.
    path : str or None
        The file, for file data sets.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    class_names: tuple[str, ...]
    source: str
    licence: str
    n_dropped: int = 0
    na: str = "error"
    path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        X, y = np.asarray(self.X, float), np.asarray(self.y)
        if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
            raise ValidationError(
                f"data set {self.name!r}: features must be an (n >= 2, p >= 1) matrix, got shape {X.shape}"
            )
        if not np.isfinite(X).all():
            i, j = np.argwhere(~np.isfinite(X))[0]
            raise ValidationError(
                f"data set {self.name!r}: feature {self.feature_names[j]!r} of row {i + 1} is {X[i, j]}"
            )
        if y.shape != (X.shape[0],) or not np.issubdtype(y.dtype, np.integer):
            raise ValidationError(
                f"data set {self.name!r}: labels must be {X.shape[0]} class indices, got {y.shape} {y.dtype}"
            )
        K = len(self.class_names)
        if K < 2:
            raise ValidationError(
                f"data set {self.name!r}: needs at least 2 classes, found {K} ({list(self.class_names)})"
            )
        if y.min() < 0 or y.max() >= K:
            raise ValidationError(
                f"data set {self.name!r}: class indices must lie in [0, {K}), got [{y.min()}, {y.max()}]"
            )
        if len(self.feature_names) != X.shape[1]:
            raise ValidationError(
                f"data set {self.name!r}: {len(self.feature_names)} feature names for {X.shape[1]} columns"
            )
        X.setflags(write=False)
        y.setflags(write=False)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])

    @property
    def p(self) -> int:
        """Number of raw features."""
        return int(self.X.shape[1])

    @property
    def K(self) -> int:
        """Number of classes (arms)."""
        return len(self.class_names)

    def class_counts(self) -> np.ndarray:
        """Rows per class, ``(K,)``."""
        return np.bincount(self.y, minlength=self.K)

    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of every feature (1 for a constant one), computed in chunks
        of rows (no copy of the features)."""
        cached = self.__dict__.get("_moments")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        mean = np.zeros(self.p)
        for c in _chunks(self.n):
            mean += self.X[c].sum(axis=0)
        mean /= self.n
        ss = np.zeros(self.p)
        for c in _chunks(self.n):
            ss += ((self.X[c] - mean) ** 2).sum(axis=0)
        sd = np.sqrt(ss / self.n)
        out = (mean, np.where(sd > 0, sd, 1.0))
        object.__setattr__(self, "_moments", out)
        return out

    def standardized(self, out: np.ndarray | None = None) -> np.ndarray:
        """Features centred and scaled to unit variance (constant columns only centred), written
        chunk by chunk into ``out`` (default a new array) and returned."""
        lazy = _Standardized(self.X, *self.moments())
        if out is None:
            out = np.empty(self.X.shape)
        for c in _chunks(self.n):
            out[c] = lazy[c]
        return out

    def describe(self) -> dict[str, Any]:
        """n, d, K, class balance, the best fixed policies' rewards (0/1 reward), source and licence."""
        counts = self.class_counts()
        lazy = _Standardized(self.X, *self.moments())
        best_arm, arm, linear = policy_benchmarks(lazy, self.y, np.eye(self.K))
        out: dict[str, Any] = {
            "name": self.name,
            "n": self.n,
            "d": self.p,
            "K": self.K,
            "classes": list(self.class_names),
            "class_counts": counts.tolist(),
            "class_balance": float(counts.min() / counts.max()),
            "best_arm_reward": best_arm,
            "best_arm": self.class_names[arm],
            "linear_policy_reward": linear,
            "na": self.na,
            "n_dropped": self.n_dropped,
            "source": self.source,
            "licence": self.licence,
        }
        if self.path is not None:
            out["path"] = self.path
        out.update(self.extra)
        return out


# -- scikit-learn's bundled data sets ------------------------------------------------------------

_UCI = "CC BY 4.0 (UCI Machine Learning Repository)"
_BUNDLED: dict[str, tuple[str, str, str]] = {
    "digits": (
        "load_digits",
        "UCI Optical Recognition of Handwritten Digits (test part), as bundled with scikit-learn",
        "1797 8x8 images of handwritten digits, 64 pixel features, 10 classes",
    ),
    "wine": (
        "load_wine",
        "UCI Wine (Forina et al.), as bundled with scikit-learn",
        "178 wines, 13 chemical features, 3 cultivars",
    ),
    "breast_cancer": (
        "load_breast_cancer",
        "UCI Breast Cancer Wisconsin (Diagnostic), as bundled with scikit-learn",
        "569 tumours, 30 cell-nucleus features, malignant or benign",
    ),
    "iris": (
        "load_iris",
        "Fisher's Iris (UCI), as bundled with scikit-learn",
        "150 flowers, 4 features, 3 species",
    ),
}


def _sklearn_datasets() -> Any:
    try:
        import sklearn.datasets as skd
    except ImportError:
        raise MissingDataError(
            "the scikit-learn data sets need scikit-learn (pip install 'privbandits[data]')"
        ) from None
    return skd


def _from_bunch(name: str, bunch: Any, source: str, licence: str) -> SupervisedData:
    X = np.asarray(bunch.data, float)
    raw = np.asarray(bunch.target)
    values, y = np.unique(raw, return_inverse=True)
    tn = getattr(bunch, "target_names", None)
    if (
        tn is not None
        and len(tn) == len(values)
        and np.issubdtype(values.dtype, np.integer)
        and np.array_equal(values, np.arange(len(values)))
    ):
        classes = tuple(str(t) for t in tn)
    else:
        classes = tuple(str(v) for v in values)
    fnames = getattr(bunch, "feature_names", None)
    features = (
        tuple(str(f) for f in fnames)
        if fnames is not None
        else tuple(f"x{j}" for j in range(X.shape[1]))
    )
    return SupervisedData(name, X, y.astype(np.int64), features, classes, source, licence)


def load_sklearn(name: str) -> SupervisedData:
    """One of scikit-learn's bundled classification data sets (no network).

    Parameters
    ----------
    name : {"digits", "wine", "breast_cancer", "iris"}
    """
    if name not in _BUNDLED:
        raise ValidationError(f"bundled data set must be one of {sorted(_BUNDLED)}, got {name!r}")
    fn, source, _ = _BUNDLED[name]
    return _from_bunch(name, getattr(_sklearn_datasets(), fn)(), source, _UCI)


# -- scikit-learn's fetchers (network on first use) ----------------------------------------------

_FETCHED: dict[str, tuple[Callable[[Any, str | None], Any], str, str]] = {
    "covtype": (
        lambda skd, home: skd.fetch_covtype(data_home=home),
        "UCI Covertype (Blackard & Dean), via sklearn.datasets.fetch_covtype",
        "581012 forest cells, 54 cartographic features, 7 cover types (download ~11 MB)",
    ),
    "letter": (
        lambda skd, home: skd.fetch_openml(
            "letter", version=1, as_frame=False, parser="liac-arff", data_home=home
        ),
        "UCI Letter Recognition (Frey & Slate), via sklearn.datasets.fetch_openml('letter')",
        "20000 letter images, 16 features, 26 classes (download ~700 kB)",
    ),
}


def fetch_sklearn(name: str, data_home: str | None = None) -> SupervisedData:
    """A data set scikit-learn downloads on first use and caches under ``data_home``.

    Raises
    ------
    MissingDataError
        The download failed (no network): the message says how to obtain the data offline.
    """
    if name not in _FETCHED:
        raise ValidationError(
            f"downloadable data set must be one of {sorted(_FETCHED)}, got {name!r}"
        )
    fetch, source, _ = _FETCHED[name]
    skd = _sklearn_datasets()
    try:
        bunch = fetch(skd, data_home)
    except OSError as exc:  # URLError, HTTPError, socket timeouts, DNS failures
        home = data_home or skd.get_data_home()
        raise MissingDataError(
            f"data set {name!r} is not in the scikit-learn cache ({home!r}) and could not be downloaded "
            f"({type(exc).__name__}: {exc}); connect to the network once (it is cached afterwards), pass "
            f"data_home = the directory of a cached copy, or export the data to CSV and use path = ... with "
            f"label = ..."
        ) from None
    return _from_bunch(name, bunch, source, _UCI)


# -- user files ----------------------------------------------------------------------------------


def _label_indices(path: str, label: str, cells: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """Class indices and names of a label column (numeric labels sorted numerically)."""
    text = np.array([str(c).strip() for c in cells], dtype=object)
    try:
        num = np.array([float(t) for t in text])
        uniq, inv = np.unique(num, return_inverse=True)
        names = tuple(f"{u:g}" for u in uniq)
    except ValueError:
        uniq, inv = np.unique(text.astype(str), return_inverse=True)
        names = tuple(str(u) for u in uniq)
    if len(names) < 2:
        raise DataFormatError(
            f"{path!r}: label column {label!r} has a single value ({names[0]!r}); a "
            f"classification data set needs at least 2 classes"
        )
    return inv.astype(np.int64), names


def load_file(
    path: str,
    label: str,
    features: Sequence[str] | None = None,
    na: str = "error",
    fmt: str | None = None,
    name: str | None = None,
    delimiter: str | None = None,
    *,
    cache: bool = True,
) -> SupervisedData:
    """A classification data set from a CSV or Parquet file, parsed once and cached.

    Parameters
    ----------
    path : str
        The file (``.csv``/``.tsv``/``.parquet``; see :func:`~privbandits.envs.datasets.tabular.read_table`).
    label : str
        Column holding the class (any values: strings or numbers).
    features : list of str, optional
        Numeric feature columns (default: every other column).
    na : {"error", "drop"}
        Missing values are an error naming file, column and row, or drop their rows (counted in
        ``n_dropped`` and shown by ``describe()``).
    fmt : {"csv", "tsv", "parquet"}, optional
        Override the format guessed from the suffix.
    name : str, optional
        Name of the data set (default: the file name).
    delimiter : str, optional
        Field separator of a text file (default: detected, see
        :func:`~privbandits.envs.datasets.tabular.read_table`).
    cache : bool
        Keep the parsed arrays in the data cache (:mod:`~privbandits.envs.datasets.filecache`)
        and open them memory-mapped on later loads of the unchanged file (in this or any other
        process); False parses the file every time and keeps the arrays in memory.

    Notes
    -----
    A clean CSV file (no missing, non-numeric or out-of-range value) is read in chunks by
    pandas' C reader when pandas is installed, so the parse holds one chunk in memory besides the
    cached arrays; any other file (or without pandas) goes through the exact reader of
    :mod:`~privbandits.envs.datasets.tabular`, whose errors name the file, column and row.
    """
    if not isinstance(label, str) or not label:
        raise ValidationError(f"label must name the class column of {path!r}, got {label!r}")
    if features is not None:
        if isinstance(features, str) or not all(isinstance(f, str) for f in features):
            raise ValidationError(f"features must be a list of column names, got {features!r}")
        if label in features:
            raise ValidationError(f"features must not contain the label column {label!r}")
    check_choice("na", na, NA_POLICIES)
    shown = name or Path(path).name
    options: dict[str, Any] = {
        "label": label,
        "features": None if features is None else list(features),
        "na": na,
        "fmt": fmt,
        "delimiter": delimiter,
    }
    if cache:
        try:
            filecache.cache_root()
        except OSError:  # no writable directory at all: parse and keep in memory
            cache = False
    if not cache or not Path(path).is_file():  # a missing file: read_table's error
        with tempfile.TemporaryDirectory(prefix="privbandits-parse-") as tmp:
            meta = _parse_to(Path(tmp), str(path), **options)
            X, y = np.load(Path(tmp) / "X.npy"), np.load(Path(tmp) / "y.npy")
        return _file_data(shown, str(path), na, X, y, meta, validate=True)
    key = filecache.entry_key("table", {**filecache.file_fingerprint(path), **options})
    found = filecache.lookup(key)
    if found is None:
        found = filecache.store(key, lambda d: _parse_to(d, str(path), **options))
    d, meta = found
    X = np.load(d / "X.npy", mmap_mode="r")
    y = np.load(d / "y.npy", mmap_mode="r")
    data = _file_data(shown, str(path), na, X, y, meta, validate=False)
    object.__setattr__(data, "_cache_key", key)  # SupervisedEnv keys its contexts by it
    return data


def _file_data(
    name: str,
    path: str,
    na: str,
    X: np.ndarray,
    y: np.ndarray,
    meta: dict[str, Any],
    *,
    validate: bool,
) -> SupervisedData:
    fields = dict(
        name=name,
        X=X,
        y=y,
        feature_names=tuple(meta["feature_names"]),
        class_names=tuple(meta["class_names"]),
        source=f"user file {path}",
        licence="as given by the file's owner",
        n_dropped=int(meta["n_dropped"]),
        na=na,
        path=path,
        extra={"label": meta["label"]},
    )
    if validate:
        return SupervisedData(**fields)  # type: ignore[arg-type]
    # arrays the parser validated before caching them: not scanned again (a worker process opens
    # them memory-mapped without touching their pages)
    data = object.__new__(SupervisedData)
    for key, value in fields.items():
        object.__setattr__(data, key, value)
    return data


def _parse_to(
    directory: Path,
    path: str,
    *,
    label: str,
    features: list[str] | None,
    na: str,
    fmt: str | None,
    delimiter: str | None,
) -> dict[str, Any]:
    """Parse ``path`` into ``directory/X.npy`` (float64, rows x features) and ``y.npy`` (int64
    class indices); return the metadata (column and class names, dropped rows)."""
    p = Path(path)
    size = p.stat().st_size if p.is_file() else 0
    filecache.status(f"parsing {p.name} ({size / 1e6:.0f} MB)")
    meta = _fast_parse(directory, p, label, features, fmt, delimiter)
    if meta is not None:
        return meta
    (directory / "X.raw").unlink(missing_ok=True)  # what an abandoned fast parse wrote
    table = read_table(path, fmt=fmt, delimiter=delimiter)
    table.require([label], "label column")
    feats = [c for c in table.columns if c != label] if features is None else list(features)
    if not feats:
        raise DataFormatError(f"{table.path!r} has no feature column besides the label {label!r}")
    X, kept = numeric_columns(table, feats, na=na, also_required=[label])
    y, classes = _label_indices(table.path, label, table.data[label][kept])
    np.save(directory / "X.npy", np.ascontiguousarray(X))
    np.save(directory / "y.npy", y)
    return {
        "feature_names": feats,
        "class_names": list(classes),
        "n_dropped": table.n_rows - len(kept),
        "label": label,
    }


#: Rows per chunk of the pandas reader.
_CHUNK_ROWS = 100_000


def _fast_parse(
    directory: Path,
    p: Path,
    label: str,
    features: list[str] | None,
    fmt: str | None,
    delimiter: str | None,
) -> dict[str, Any] | None:
    """Read a clean CSV file in chunks with pandas' C reader (exact float parsing), writing the
    feature rows straight to ``X.npy``; None (nothing written) when pandas is missing or the file
    is anything but clean, so that the exact reader parses it and reports its problem."""
    kind = fmt if fmt is not None else _SUFFIXES.get(p.suffix.lower(), "csv")
    if kind not in ("csv", "tsv") or (delimiter is not None and len(delimiter) != 1):
        return None
    try:
        import pandas as pd
    except ImportError:
        return None
    sep = delimiter or ("\t" if kind == "tsv" else _detect_delimiter(p))
    try:
        with p.open(encoding="utf-8-sig", newline="") as fh:
            raw_header = next(r for r in csv.reader(fh, delimiter=sep) if any(c.strip() for c in r))
    except (OSError, UnicodeDecodeError, csv.Error, StopIteration):
        return None
    header = [c.strip() for c in raw_header]
    if any(not c for c in header) or len(set(header)) != len(header) or label not in header:
        return None
    feats = [c for c in header if c != label] if features is None else list(features)
    if not feats or any(f not in header for f in feats):
        return None
    raw_name = dict(zip(header, raw_header))
    raw_feats, raw_label = [raw_name[f] for f in feats], raw_name[label]
    na_tokens = sorted({v for t in MISSING_TOKENS for v in (t, t.upper(), t.title())})
    precise = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    raw_path, n, codes, seen = directory / "X.raw", 0, [], {}  # type: ignore[var-annotated]
    try:
        with warnings.catch_warnings(), raw_path.open("wb") as raw:
            # a row with too few fields is read with missing cells (then the exact reader
            # reports it), too many is a ParserError, a short header a ParserWarning
            warnings.simplefilter("error", pd.errors.ParserWarning)
            reader = pd.read_csv(
                p,
                sep=sep,
                header=0,
                index_col=False,
                # every column read (usecols would ignore surplus fields instead of failing)
                dtype={**dict.fromkeys(raw_header, str), **dict.fromkeys(raw_feats, "float64")},
                keep_default_na=False,
                na_values=na_tokens,
                encoding="utf-8-sig",
                chunksize=_CHUNK_ROWS,
                engine="c",
                **precise,
            )
            with reader:
                for chunk in reader:
                    X = np.ascontiguousarray(chunk[raw_feats].to_numpy(np.float64))
                    if X.size and not (np.abs(X) <= MAX_ABS_VALUE).all():  # NaN, inf, huge
                        return None
                    lab = chunk[raw_label]
                    if lab.isna().any():
                        return None
                    uniq, inv = np.unique(lab.to_numpy(str), return_inverse=True)
                    ids = np.array([seen.setdefault(str(u), len(seen)) for u in uniq], np.int64)
                    codes.append(ids[inv])
                    raw.write(X.tobytes())
                    n += len(chunk)
                    filecache.status(f"parsing {p.name}: {n:,} rows")
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError, Warning):
        return None
    if n == 0:
        return None
    provisional = np.asarray([s.strip() for s in seen], dtype=np.object_)
    try:
        final, classes = _label_indices(str(p), label, provisional)
    except DataFormatError:
        return None
    with (directory / "X.npy").open("wb") as out, raw_path.open("rb") as src:
        header_dict = {"descr": "<f8", "fortran_order": False, "shape": (n, len(feats))}
        np.lib.format.write_array_header_1_0(out, header_dict)
        shutil.copyfileobj(src, out, 1 << 24)
    raw_path.unlink()
    np.save(directory / "y.npy", final[np.concatenate(codes)].astype(np.int64))
    return {
        "feature_names": feats,
        "class_names": list(classes),
        "n_dropped": 0,
        "label": label,
    }


def _register_all() -> None:
    for table, loader, availability in (
        (_BUNDLED, _bundled_loader, "bundled"),
        (_FETCHED, _fetched_loader, "network"),
    ):
        for key, (_, source, summary) in table.items():
            register(
                key,
                loader(key),
                kind="supervised",
                source=source,
                licence=_UCI,
                summary=summary,
                availability=availability,
            )
    register(
        "file",
        load_file,
        kind="supervised",
        source="a CSV or Parquet file (path = ..., label = ...)",
        licence="the file's",
        summary="any classification table: numeric features and a label column",
        availability="path",
    )


def _bundled_loader(key: str) -> Callable[[], SupervisedData]:
    def load() -> SupervisedData:
        return load_sklearn(key)

    load.__doc__ = f"scikit-learn's bundled {key!r} data set."
    return load


def _fetched_loader(key: str) -> Callable[..., SupervisedData]:
    def load(data_home: str | None = None) -> SupervisedData:
        return fetch_sklearn(key, data_home)

    load.__doc__ = f"scikit-learn's downloadable {key!r} data set."
    return load


_register_all()
