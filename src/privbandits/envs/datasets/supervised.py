"""Classification data sets (features and a class label) for the supervised-to-bandit environment.

Sources: scikit-learn's bundled data sets (no network), scikit-learn's fetchers (downloaded on
first use, cached under ``data_home``), and any CSV or Parquet file with a named label column.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.core.errors import MissingDataError, ValidationError
from privbandits.envs.datasets.registry import register
from privbandits.envs.datasets.tabular import DataFormatError, numeric_columns, read_table

__all__ = ["SupervisedData", "fetch_sklearn", "load_file", "load_sklearn", "policy_benchmarks"]


def policy_benchmarks(
    Z: np.ndarray, y: np.ndarray, reward_matrix: np.ndarray
) -> tuple[float, int, float]:
    """Rewards of the best fixed policies on the data (the comparators a bandit algorithm can reach).

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        Contexts.
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
    Rw = reward_matrix[y]  # (n, K)
    arm_means = Rw.mean(axis=0)
    best_arm = int(np.argmax(arm_means))
    A = np.hstack([Z, np.ones((Z.shape[0], 1))])
    coef, *_ = np.linalg.lstsq(A, Rw, rcond=None)
    pick = np.argmax(A @ coef, axis=1)
    linear = float(Rw[np.arange(len(y)), pick].mean())
    return float(arm_means[best_arm]), best_arm, linear


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

    def standardized(self) -> np.ndarray:
        """Features centred and scaled to unit variance (constant columns only centred)."""
        sd = self.X.std(axis=0)
        return (self.X - self.X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)

    def describe(self) -> dict[str, Any]:
        """n, d, K, class balance, the best fixed policies' rewards (0/1 reward), source and licence."""
        counts = self.class_counts()
        best_arm, arm, linear = policy_benchmarks(self.standardized(), self.y, np.eye(self.K))
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
) -> SupervisedData:
    """A classification data set from a CSV or Parquet file.

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
    """
    if not isinstance(label, str) or not label:
        raise ValidationError(f"label must name the class column of {path!r}, got {label!r}")
    table = read_table(path, fmt=fmt, delimiter=delimiter)
    table.require([label], "label column")
    if features is None:
        feats = [c for c in table.columns if c != label]
    else:
        if isinstance(features, str) or not all(isinstance(f, str) for f in features):
            raise ValidationError(f"features must be a list of column names, got {features!r}")
        feats = list(features)
        if label in feats:
            raise ValidationError(f"features must not contain the label column {label!r}")
    if not feats:
        raise DataFormatError(f"{table.path!r} has no feature column besides the label {label!r}")
    X, kept = numeric_columns(table, feats, na=na, also_required=[label])
    y, classes = _label_indices(table.path, label, table.data[label][kept])
    from pathlib import Path

    return SupervisedData(
        name or Path(path).name,
        X,
        y,
        tuple(feats),
        classes,
        f"user file {table.path}",
        "as given by the file's owner",
        n_dropped=table.n_rows - len(kept),
        na=na,
        path=table.path,
        extra={"label": label},
    )


def _register_all() -> None:
    for key, (_, source, summary) in _BUNDLED.items():
        register(
            key,
            _bundled_loader(key),
            kind="supervised",
            source=source,
            licence=_UCI,
            summary=summary,
        )
    for key, (_, source, summary) in _FETCHED.items():
        register(
            key,
            _fetched_loader(key),
            kind="supervised",
            source=source,
            licence=_UCI,
            summary=summary,
            availability="network",
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
