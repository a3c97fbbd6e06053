"""Arrays cross the wire bit for bit; client fields are read strictly."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from privbandits.service.codec import FieldError, decode_array, encode_array, parse_array

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


@given(hnp.arrays(np.float64, shapes, elements=st.floats(allow_nan=True, allow_infinity=True)))
def test_float_arrays_roundtrip_exactly_through_strict_json(a: np.ndarray) -> None:
    text = json.dumps(encode_array(a), allow_nan=False)  # strict JSON: non-finite values as strings
    b = decode_array(json.loads(text))
    assert b.shape == a.shape and b.dtype == a.dtype
    nan = np.isnan(a)
    assert np.array_equal(nan, np.isnan(b))
    assert np.array_equal(
        a[~nan].view(np.uint64), b[~nan].view(np.uint64)
    )  # bit for bit (also -0.0)


@given(hnp.arrays(np.int64, shapes, elements=st.integers(-(2**62), 2**62)))
def test_integer_arrays_roundtrip(a: np.ndarray) -> None:
    b = decode_array(json.loads(json.dumps(encode_array(a))))
    assert b.dtype == np.int64 and np.array_equal(a, b)


@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=1, max_dims=2, max_side=4),
        elements=st.floats(allow_nan=False, allow_infinity=False),
    )
)
def test_parse_array_accepts_exactly_finite_numbers_of_the_shape(a: np.ndarray) -> None:
    got = parse_array("f", json.loads(json.dumps(a.tolist())), a.shape)
    assert np.array_equal(got, a)
    with pytest.raises(FieldError, match="has shape"):
        parse_array("f", a.tolist(), a.shape + (1,))


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ([1.0, "2"], "numbers"),
        ([[1.0], [2.0, 3.0]], "ragged"),
        (None, "numbers"),
        ({"a": 1}, "numbers"),
        ([1.0, float("nan")], "NaN or infinite"),
        ([10**400, 1.0], "numbers"),
    ],
)
def test_parse_array_names_what_is_wrong(value: object, fragment: str) -> None:
    with pytest.raises(FieldError) as exc:
        parse_array("report.z", value, (2,))
    assert exc.value.field == "report.z" and fragment in exc.value.message
