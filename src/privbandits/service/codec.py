"""Arrays to and from JSON, exactly.

Public state travels as ``{"dtype": "float64", "shape": [...], "data": [...]}`` with the float
values written by ``repr`` (so they read back bit for bit) and non-finite values as the strings
``"inf"``, ``"-inf"`` and ``"nan"`` (JSON has no literal for them).  Reports travel as plain
nested lists of numbers: :func:`parse_array` is the strict reader of a client's field.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np

__all__ = [
    "FieldError",
    "canonical",
    "decode_array",
    "encode_array",
    "parse_array",
    "reject_unknown",
    "sha256_json",
]

_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class FieldError(ValueError):
    """A request field is invalid: ``field`` names it, the message says why; ``status`` is the HTTP code."""

    def __init__(self, field: str, message: str, status: int = 422) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.status = status


def reject_unknown(obj: dict[str, Any], allowed: tuple[str, ...], where: str = "") -> None:
    """Refuse a request object with a field outside ``allowed`` (a request is never read in part:
    a field the service would ignore, such as ``"epsilon"`` or raw ``"contexts"`` beside a report,
    is an error naming the field).

    Raises
    ------
    FieldError
        422 naming the first unknown field (``where`` + its name) and listing the allowed ones.
    """
    extra = sorted(str(k) for k in obj if k not in allowed)
    if extra:
        more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
        name = (
            extra[0][:100].encode("utf-8", "backslashreplace").decode("utf-8")
        )  # printable, even a lone surrogate
        raise FieldError(
            f"{where}{name}",
            f"unknown field{more}; this object holds only {', '.join(allowed) or 'no field'}",
        )


def _encode_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, list):
        return [_encode_value(x) for x in v]
    return v


def encode_array(a: np.ndarray) -> dict[str, Any]:
    """``{"dtype", "shape", "data"}`` of ``a`` (bit-exact for float64, int64 and bool)."""
    arr = np.asarray(a)
    if arr.dtype.kind == "f":
        arr = arr.astype(np.float64, copy=False)
        data = arr.tolist()
        if not np.isfinite(arr).all():
            data = _encode_value(data)
    elif arr.dtype.kind in "iu":
        arr = arr.astype(np.int64, copy=False)
        data = arr.tolist()
    elif arr.dtype.kind == "b":
        data = arr.tolist()
    else:
        raise TypeError(f"cannot encode arrays of dtype {arr.dtype}")
    return {"dtype": str(arr.dtype), "shape": list(arr.shape), "data": data}


def _decode_value(v: Any) -> Any:
    if isinstance(v, str):
        return _NONFINITE[v]
    if isinstance(v, list):
        return [_decode_value(x) for x in v]
    return v


def decode_array(obj: dict[str, Any]) -> np.ndarray:
    """Inverse of :func:`encode_array`."""
    dtype = np.dtype(obj["dtype"])
    data = obj["data"]
    if dtype.kind == "f":
        data = _decode_value(data)
    return np.array(data, dtype=dtype).reshape(tuple(obj["shape"]))


def parse_array(field: str, value: Any, shape: tuple[int, ...], kind: str = "f") -> np.ndarray:
    """A client's field as an array of ``shape``: numbers only, finite, the right shape.

    ``kind`` is ``"f"`` (real numbers; integers are accepted) or ``"i"`` (integers only).

    Raises
    ------
    FieldError
        Naming the field, what was wrong and what is expected.
    """
    want = list(shape)
    try:
        arr = np.array(value)
    except (ValueError, TypeError):
        raise FieldError(
            field, f"must be a nested list of numbers of shape {want} (ragged or malformed)"
        ) from None
    if arr.dtype.kind not in "iuf":
        got = (
            "a string"
            if arr.dtype.kind == "U"
            else "booleans"
            if arr.dtype.kind == "b"
            else "non-numbers"
        )
        raise FieldError(field, f"must hold numbers (shape {want}), got {got}")
    if arr.shape != tuple(shape):
        raise FieldError(field, f"has shape {list(arr.shape)}, expected {want}")
    if kind == "i":
        if arr.dtype.kind == "f":
            raise FieldError(field, "must hold integers, got real numbers")
        return arr.astype(np.int64)
    out = arr.astype(np.float64)
    if not np.isfinite(out).all():
        bad = int(out.size - np.count_nonzero(np.isfinite(out)))
        raise FieldError(field, f"contains {bad} NaN or infinite value(s); reports must be finite")
    return out


def canonical(obj: Any, allow_nan: bool = False) -> str:
    """Deterministic compact JSON (sorted keys) of ``obj``."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=allow_nan)


def sha256_json(obj: Any) -> str:
    """Hex sha256 of :func:`canonical` of ``obj``."""
    return hashlib.sha256(canonical(obj).encode()).hexdigest()
