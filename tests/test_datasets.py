"""Real data sets: the registry, file loading and validation, bundled and downloadable data."""

from __future__ import annotations

import urllib.error
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privbandits.core.errors import MissingDataError, UnknownNameError, ValidationError
from privbandits.envs.datasets import (
    DataFormatError,
    SupervisedData,
    fetch_sklearn,
    get,
    load_file,
    load_sklearn,
    names,
    numeric_columns,
    read_table,
    register,
)
from privbandits.envs.datasets.supervised import policy_benchmarks

pytest.importorskip("sklearn")

# (n, p, K) of scikit-learn's bundled data sets
BUNDLED = {
    "digits": (1797, 64, 10),
    "wine": (178, 13, 3),
    "breast_cancer": (569, 30, 2),
    "iris": (150, 4, 3),
}


# -- registry ------------------------------------------------------------------------------------


def test_registry_lists_bundled_downloadable_and_file_sources() -> None:
    assert set(BUNDLED) | {"covtype", "letter", "file"} <= set(names())
    assert names("supervised") == sorted(names("supervised"))
    assert get("covtype").availability == "network"
    assert get("file").availability == "path"
    assert all(get(n).availability == "bundled" for n in BUNDLED)


def test_registry_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown data set 'wne' \(did you mean 'wine'\?\)"):
        get("wne")


def test_registry_rejects_a_second_loader_under_a_taken_name_and_bad_names() -> None:
    entry = get("wine")
    assert (
        register(
            "wine", entry.loader, kind="supervised", source="s", licence="l", summary="x"
        ).loader
        is entry.loader
    )
    with pytest.raises(ValidationError, match="registered twice"):
        register("wine", lambda: None, kind="supervised", source="s", licence="l", summary="x")  # type: ignore[arg-type,return-value]
    with pytest.raises(ValidationError, match="data set name"):
        register("bad name!", entry.loader, kind="supervised", source="s", licence="l", summary="x")
    with pytest.raises(ValidationError, match="availability"):
        register(
            "x-new",
            entry.loader,
            kind="supervised",
            source="s",
            licence="l",
            summary="x",
            availability="ftp",
        )


def test_registry_load_names_unknown_and_missing_options() -> None:
    with pytest.raises(
        ValidationError, match=r"'wine'.*unexpected keyword argument 'path'.*accepted: none"
    ):
        get("wine").load(path="x.csv")
    with pytest.raises(ValidationError, match=r"'file'.*missing a required argument: 'label'"):
        get("file").load(path="x.csv")


# -- bundled data --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_data_sets_load_and_describe(name: str) -> None:
    data = get(name).load()
    n, p, K = BUNDLED[name]
    assert isinstance(data, SupervisedData)
    assert (data.n, data.p, data.K) == (n, p, K)
    desc = data.describe()
    assert (desc["n"], desc["d"], desc["K"]) == (n, p, K)
    counts = np.bincount(data.y, minlength=K)
    assert desc["class_counts"] == counts.tolist() and sum(desc["class_counts"]) == n
    assert desc["class_balance"] == pytest.approx(counts.min() / counts.max())
    assert desc["best_arm_reward"] == pytest.approx(counts.max() / n)
    assert desc["best_arm"] == data.class_names[int(np.argmax(counts))]
    # a linear classifier on standardized features beats always playing the most frequent class
    assert desc["best_arm_reward"] < desc["linear_policy_reward"] <= 1.0
    assert desc["n_dropped"] == 0 and desc["licence"].startswith("CC BY 4.0") and desc["source"]


def test_bundled_class_names_come_from_the_target_names() -> None:
    assert load_sklearn("iris").class_names == ("setosa", "versicolor", "virginica")
    assert load_sklearn("digits").class_names == tuple(str(i) for i in range(10))
    with pytest.raises(ValidationError, match="bundled data set must be one of"):
        load_sklearn("mnist")


def test_standardized_features_have_zero_mean_and_unit_variance() -> None:
    Z = load_sklearn("digits").standardized()
    assert np.allclose(Z.mean(axis=0), 0.0, atol=1e-12)
    sd = Z.std(axis=0)
    assert np.all((np.abs(sd - 1) < 1e-9) | (sd == 0))  # digits has constant (all-zero) pixels


def test_policy_benchmarks_on_a_separable_problem() -> None:
    Z = np.array([[-1.0], [-0.5], [0.5], [1.0], [2.0]])
    y = np.array([0, 0, 1, 1, 1])
    best, arm, linear = policy_benchmarks(Z, y, np.eye(2))
    assert (best, arm, linear) == (pytest.approx(0.6), 1, 1.0)
    # a reward matrix that pays 0.5 for arm 0 whatever the label: the best fixed arm changes
    best, arm, _ = policy_benchmarks(Z, y, np.array([[0.5, 0.0], [0.5, 0.4]]))
    assert (best, arm) == (pytest.approx(0.5), 0)


# -- downloadable data (network simulated) ---------------------------------------------------------


def test_fetcher_offline_gives_a_clear_missing_data_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sklearn.datasets as skd

    def offline(**kwargs: object) -> None:
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(skd, "fetch_covtype", offline)
    with pytest.raises(
        MissingDataError,
        match=r"'covtype' is not in the scikit-learn cache .*could not be "
        r"downloaded \(URLError.*data_home",
    ):
        fetch_sklearn("covtype", data_home=str(tmp_path))
    with pytest.raises(MissingDataError, match="covtype"):
        get("covtype").load(data_home=str(tmp_path))


def test_fetcher_builds_the_data_set_from_scikit_learns_bunch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sklearn.datasets as skd
    from sklearn.utils import Bunch

    rng = np.random.default_rng(0)
    bunch = Bunch(
        data=rng.standard_normal((40, 5)), target=rng.integers(1, 8, 40)
    )  # covtype labels are 1..7
    seen: dict[str, object] = {}

    def fake(**kwargs: object) -> Bunch:
        seen.update(kwargs)
        return bunch

    monkeypatch.setattr(skd, "fetch_covtype", fake)
    data = fetch_sklearn("covtype", data_home="/somewhere")
    assert seen == {"data_home": "/somewhere"}
    assert data.n == 40 and data.p == 5
    assert data.class_names == tuple(str(v) for v in np.unique(bunch.target))
    assert np.array_equal(np.array(data.class_names, dtype=int)[data.y], bunch.target)
    with pytest.raises(ValidationError, match="downloadable data set must be one of"):
        fetch_sklearn("imagenet")


# -- files: good ---------------------------------------------------------------------------------


def _write(tmp_path: Path, text: str, name: str = "d.csv") -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_csv_with_string_labels_and_a_feature_subset(tmp_path: Path) -> None:
    path = _write(tmp_path, "a,b,kind,c\n1,2,cat,3\n4,5.5,dog,6\n7,8,cat,9e0\n")
    data = load_file(path, "kind")
    assert data.feature_names == ("a", "b", "c") and data.class_names == ("cat", "dog")
    assert np.array_equal(data.X, [[1, 2, 3], [4, 5.5, 6], [7, 8, 9]]) and data.y.tolist() == [
        0,
        1,
        0,
    ]
    sub = load_file(path, "kind", features=["c", "a"])
    assert sub.feature_names == ("c", "a") and np.array_equal(sub.X[:, 0], [3, 6, 9])
    assert data.describe()["path"] == path and data.describe()["label"] == "kind"


def test_numeric_labels_are_ordered_numerically(tmp_path: Path) -> None:
    path = _write(tmp_path, "x,y\n0.1,10\n0.2,2\n0.3,10\n0.4,1\n")
    data = load_file(path, "y")
    assert data.class_names == ("1", "2", "10") and data.y.tolist() == [2, 1, 2, 0]


def test_tsv_and_blank_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, "x\ty\n\n1\ta\n2\tb\n\n", "d.tsv")
    data = load_file(path, "y")
    assert data.n == 2 and data.X[:, 0].tolist() == [1.0, 2.0]


def test_parquet_round_trip(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = tmp_path / "d.parquet"
    pq.write_table(pa.table({"x1": [1.0, 2.0, 3.0], "x2": [1, 0, 1], "label": ["b", "a", "b"]}), p)
    data = load_file(str(p), "label")
    assert (
        data.feature_names == ("x1", "x2")
        and data.class_names == ("a", "b")
        and data.y.tolist() == [1, 0, 1]
    )
    assert np.array_equal(data.X, [[1, 1], [2, 0], [3, 1]])


def test_drop_na_counts_and_reports_dropped_rows(tmp_path: Path) -> None:
    path = _write(tmp_path, "x,z,y\n1,2,a\n,3,b\n4,NaN,a\n5,6,\n7,8,b\n")
    data = load_file(path, "y", na="drop")
    assert data.n == 2 and data.n_dropped == 3 and data.X.tolist() == [[1, 2], [7, 8]]
    desc = data.describe()
    assert desc["n_dropped"] == 3 and desc["na"] == "drop" and desc["n"] == 2


def test_parquet_nulls_are_missing_values(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = tmp_path / "d.parquet"
    pq.write_table(pa.table({"x": [1.0, None, float("nan"), 4.0], "y": [0, 1, 0, 1]}), p)
    with pytest.raises(DataFormatError, match=r"column 'x', data row 2: missing value \(2 rows"):
        load_file(str(p), "y")
    assert load_file(str(p), "y", na="drop").n_dropped == 2


# -- files: bad (every error names the file, and the column and row where there is one) ---------


@pytest.mark.parametrize(
    ("text", "label", "pattern"),
    [
        ("x,y\n", "y", r"has a header \(x, y\) but no data rows"),
        ("\n\n  \n", "y", "holds only blank lines"),
        ("x,x,y\n1,2,a\n", "y", "column name 'x' appears more than once"),
        ("x,,y\n1,2,a\n", "y", "column 2 of the header has no name"),
        (
            "x,y\n1,a\n2,b,3\n",
            "y",
            r"data row 2 \(line 3\) has 3 fields, the header has 2 \(x, y\)",
        ),
        ("x,z\n1,2\n", "y", r"missing label column 'y'; the file has columns 'x', 'z'"),
        ("x,y\n1,a\nabc,b\n", "y", r"column 'x', data row 2 \(line 3\): 'abc' is not a number"),
        (
            "x,y\n1,a\n2,b\n-inf,a\n",
            "y",
            r"column 'x', data row 3 \(line 4\): value '-inf' is infinite",
        ),
        (
            "x,y\n1,a\n,b\nNA,a\n",
            "y",
            r"column 'x', data row 2 \(line 3\): missing value \(2 rows have missing values\).*na = \"drop\"",
        ),
        ("x,y\n1,a\n2,\n", "y", r"column 'y', data row 2 \(line 3\): missing value"),
        ("x,y\n1,a\n2,a\n", "y", r"label column 'y' has a single value \('a'\)"),
        ("y\na\nb\n", "y", "no feature column besides the label 'y'"),
    ],
)
def test_bad_csv_files(tmp_path: Path, text: str, label: str, pattern: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(DataFormatError, match=pattern) as info:
        load_file(path, label)
    assert repr(path) in str(info.value)


def test_missing_feature_columns_are_all_named(tmp_path: Path) -> None:
    path = _write(tmp_path, "x,y\n1,a\n2,b\n")
    with pytest.raises(
        DataFormatError, match=r"missing columns 'u', 'v'; the file has columns 'x', 'y'"
    ):
        load_file(path, "y", features=["x", "u", "v"])
    with pytest.raises(ValidationError, match="must not contain the label column"):
        load_file(path, "y", features=["x", "y"])
    with pytest.raises(ValidationError, match="features must be a list of column names"):
        load_file(path, "y", features="x")  # type: ignore[arg-type]


def test_empty_absent_binary_and_unreadable_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    with pytest.raises(DataFormatError, match=r"empty.csv' is empty \(0 bytes\)"):
        load_file(str(empty), "y")
    with pytest.raises(MissingDataError, match="nope.csv' does not exist"):
        load_file(str(tmp_path / "nope.csv"), "y")
    binary = tmp_path / "b.csv"
    binary.write_bytes(b"x,y\n\xff\xfe\x00\x01,a\n")
    with pytest.raises(DataFormatError, match="is not UTF-8 text"):
        load_file(str(binary), "y")
    broken = tmp_path / "b.parquet"
    broken.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(DataFormatError, match=r"b.parquet' is not a readable Parquet file"):
        load_file(str(broken), "y")
    with pytest.raises(ValidationError, match="na must be one of"):
        load_file(_write(tmp_path, "x,y\n1,a\n2,b\n"), "y", na="ignore")
    with pytest.raises(ValidationError, match="label must name the class column"):
        load_file(_write(tmp_path, "x,y\n1,a\n2,b\n"), "")


def test_parquet_string_feature_is_non_numeric(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = tmp_path / "d.parquet"
    pq.write_table(pa.table({"x": ["1", "2", "three"], "y": [0, 1, 0]}), p)
    with pytest.raises(
        DataFormatError, match=r"column 'x', data row 3( \(line \d+\))?: 'three' is not a number"
    ):
        load_file(str(p), "y")


def test_parquet_without_pyarrow_says_which_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    real = builtins.__import__

    def no_pyarrow(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("pyarrow"):
            raise ImportError("No module named 'pyarrow'")
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    p = tmp_path / "d.parquet"
    p.write_bytes(b"PAR1")
    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(
        DataFormatError, match=r"needs pyarrow \(pip install 'privbandits\[parquet\]'\)"
    ):
        read_table(p)


def test_numeric_columns_keeps_row_indices(tmp_path: Path) -> None:
    table = read_table(_write(tmp_path, "a,b,c\n1,2,x\n,3,y\n4,5,z\n"))
    X, kept = numeric_columns(table, ["a", "b"], na="drop")
    assert kept.tolist() == [0, 2] and X.tolist() == [[1, 2], [4, 5]]
    assert table.column("c")[kept].tolist() == ["x", "z"]
    with pytest.raises(DataFormatError, match="column 'a' is empty"):
        numeric_columns(read_table(_write(tmp_path, "a,b\n,1\n", "e.csv")), ["a"], na="drop")
    with pytest.raises(DataFormatError, match="every one of the 2 data rows has a missing value"):
        numeric_columns(
            read_table(_write(tmp_path, "a,b\n,1\n2,\n", "f.csv")), ["a", "b"], na="drop"
        )


@settings(max_examples=30, deadline=None)
@given(
    values=st.lists(
        st.lists(st.floats(-1e150, 1e150, allow_nan=False, width=64), min_size=2, max_size=2),
        min_size=2,
        max_size=15,
    ),
    labels=st.lists(st.sampled_from(["a", "b", "c d"]), min_size=15, max_size=15),
)
def test_csv_round_trip_keeps_every_value(
    tmp_path_factory: pytest.TempPathFactory, values: list[list[float]], labels: list[str]
) -> None:
    labels = labels[: len(values)]
    if len(set(labels)) < 2:
        labels[0] = "a" if labels[1] != "a" else "b"
    path = tmp_path_factory.mktemp("rt") / "d.csv"
    path.write_text(
        "u,v,y\n" + "".join(f"{a!r},{b!r},{lab}\n" for (a, b), lab in zip(values, labels))
    )
    data = load_file(str(path), "y")
    assert np.array_equal(data.X, np.array(values))  # repr round-trips floats exactly
    assert [data.class_names[i] for i in data.y] == labels and data.n_dropped == 0


def test_blank_lines_do_not_shift_the_reported_line(tmp_path: Path) -> None:
    f = tmp_path / "gaps.csv"
    f.write_text("x,y\n1,a\n\n\n2,b\nabc,c\n")
    with pytest.raises(
        DataFormatError, match=r"column 'x', data row 3 \(line 6\): 'abc' is not a number"
    ):
        numeric_columns(read_table(f), ["x"])
