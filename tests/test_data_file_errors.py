"""Real data files that explain themselves: delimiters, column typos, huge values, empty columns,
and errors that name the TOML key that fixes them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from privbandits.core.errors import ValidationError
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.envs.datasets.supervised import load_file
from privbandits.envs.datasets.tabular import DataFormatError, numeric_columns, read_table

ROWS = ["1.0,2.0,a", "0.5,1.5,b", "2.0,0.1,a", "0.3,0.3,b"]


def _csv(tmp_path: Path, text: str, name: str = "d.csv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_the_delimiter_is_detected_from_the_header(tmp_path: Path, sep: str) -> None:
    body = "\n".join(r.replace(",", sep) for r in ["f1,f2,segment", *ROWS])
    data = load_file(str(_csv(tmp_path, body)), label="segment")
    assert data.X.shape == (4, 2)


def test_an_explicit_delimiter_and_a_glued_header_hint(tmp_path: Path) -> None:
    body = "\n".join(r.replace(",", ";") for r in ["f1,f2,segment", *ROWS])
    p = _csv(tmp_path, body)
    assert read_table(p, delimiter=";").columns == ("f1", "f2", "segment")
    with pytest.raises(DataFormatError, match='set delimiter = ";"'):
        read_table(p, delimiter=",").require(["segment"], "label column")
    with pytest.raises(ValidationError, match="single character"):
        read_table(p, delimiter=";;")


def test_a_wrong_case_or_misspelt_column_gets_a_suggestion(tmp_path: Path) -> None:
    p = _csv(tmp_path, "\n".join(["f1,f2,Segment", *ROWS]))
    with pytest.raises(DataFormatError, match="'segment': did you mean 'Segment'"):
        load_file(str(p), label="segment")
    with pytest.raises(DataFormatError, match="'Segmnt': did you mean 'Segment'"):
        load_file(str(p), label="Segmnt")


def test_huge_values_are_refused_naming_the_column(tmp_path: Path) -> None:
    p = _csv(tmp_path, "f1,f2,segment\n1e308,2,a\n0.5,1.5,b\n2,0.1,a\n")
    with pytest.raises(
        DataFormatError, match=r"column 'f1', data row 1 \(line 2\): value '1e308' is beyond"
    ):
        load_file(str(p), label="segment")
    ok = _csv(tmp_path, "f1,f2,segment\n1e149,2,a\n0.5,1.5,b\n", "ok.csv")
    table = read_table(ok)
    X, _ = numeric_columns(table, ["f1", "f2"])
    assert X[0, 0] == 1e149 and np.isfinite(X).all()


def test_na_drop_names_only_the_empty_column(tmp_path: Path) -> None:
    p = _csv(tmp_path, "f1,f2,f3,segment\n1,,2,a\n0.5,,1,b\n2,,3,a\n")
    with pytest.raises(DataFormatError) as err:
        load_file(str(p), label="segment", na="drop")
    msg = str(err.value)
    assert "column 'f2' is empty" in msg and "'f1'" not in msg and "'f3'" not in msg


def test_a_setting_mismatch_names_the_toml_key_that_fixes_it() -> None:
    import privbandits as pb

    alg = pb.make("linucb")
    with pytest.raises(ValidationError, match='encoding = "shared"'):
        alg.reset(EnvSpec(d=2, K=3, setting="multi"), 1, make_streams(0))


def test_a_contextual_environment_for_hanna_names_kind_finite() -> None:
    import privbandits as pb

    alg = pb.make("hanna-local", epsilon=1.0)
    with pytest.raises(ValidationError, match='kind = "finite"'):
        alg.reset(EnvSpec(d=2, K=3), 1, make_streams(0))
