"""Input validation helpers used at every edge of the library (scikit-learn style).

Each helper returns the validated (possibly converted) value or raises a
:class:`~privbandits.core.errors.ValidationError` whose message names the parameter, the value
received and the allowed range.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import numpy as np

from privbandits.core.errors import ConfigError, DataBoundError, ParameterError, ValidationError

__all__ = [
    "check_choice",
    "check_delta",
    "check_epsilon",
    "check_finite_array",
    "check_in_range",
    "check_int",
    "check_known_keys",
    "check_nonnegative",
    "check_norm_bound",
    "check_positive",
    "check_probability",
    "check_shape",
]


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _not_a(name: str, value: Any, kind: str) -> ParameterError:
    """The error for a ``value`` of the wrong type (``kind``: "a real number", "an integer")."""
    return ParameterError(
        f"{name} must be {kind}, got {value!r} of type {type(value).__name__}",
        key=name,
        value=value,
        allowed=kind,
    )


def _real(name: str, value: Any) -> float:
    if not _is_real(value):
        raise _not_a(name, value, "a real number")
    x = float(value)
    if math.isnan(x):
        raise ParameterError(
            f"{name} must be a real number, got NaN", key=name, value=value, allowed="a real number"
        )
    return x


def check_in_range(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
    allow_inf: bool = False,
) -> float:
    """Validate a real number against an interval and return it as ``float``.

    Parameters
    ----------
    name : str
        Parameter name used in the error message.
    value : float
        The value to check.
    low, high : float or None
        Interval ends (None = unbounded).
    low_inclusive, high_inclusive : bool
        Whether the ends belong to the interval.
    allow_inf : bool
        Whether ``+inf`` is accepted (for example epsilon = inf means "no privacy").
    """
    x = _real(name, value)
    if math.isinf(x) and not (allow_inf and x > 0):
        raise ParameterError(f"{name} must be finite, got {x}", key=name, value=value)
    lo_ok = low is None or (x >= low if low_inclusive else x > low)
    hi_ok = high is None or (x <= high if high_inclusive else x < high)
    if not (lo_ok and hi_ok):
        lb = "(-inf" if low is None else ("[" if low_inclusive else "(") + f"{low:g}"
        hb = "inf)" if high is None else f"{high:g}" + ("]" if high_inclusive else ")")
        raise ParameterError(
            f"{name} must lie in {lb}, {hb}, got {x:g}",
            key=name,
            value=value,
            allowed=f"{lb}, {hb}",
        )
    return x


def check_epsilon(value: Any, name: str = "epsilon", *, allow_inf: bool = False) -> float:
    """Privacy parameter epsilon: a real number in (0, inf)."""
    return check_in_range(name, value, 0.0, None, low_inclusive=False, allow_inf=allow_inf)


def check_delta(value: Any, name: str = "delta", *, allow_zero: bool = False) -> float:
    """Privacy parameter delta: a real number in (0, 1) (or [0, 1) with ``allow_zero``)."""
    return check_in_range(name, value, 0.0, 1.0, low_inclusive=allow_zero, high_inclusive=False)


def check_positive(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """A real number in (0, inf)."""
    return check_in_range(name, value, 0.0, None, low_inclusive=False, allow_inf=allow_inf)


def check_nonnegative(name: str, value: Any) -> float:
    """A real number in [0, inf)."""
    return check_in_range(name, value, 0.0, None)


def check_probability(name: str, value: Any) -> float:
    """A probability in [0, 1]."""
    return check_in_range(name, value, 0.0, 1.0)


def check_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """An integer in [low, high] (bools are rejected; integral floats such as 1e6 are accepted)."""
    if isinstance(value, bool):
        raise ParameterError(
            f"{name} must be an integer, got {value!r}", key=name, value=value, allowed="an integer"
        )
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if not isinstance(value, (int, np.integer)):
        raise _not_a(name, value, "an integer")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        lb = "-inf" if low is None else str(low)
        hb = "inf" if high is None else str(high)
        raise ParameterError(
            f"{name} must be an integer in [{lb}, {hb}], got {v}",
            key=name,
            value=value,
            allowed=f"[{lb}, {hb}]",
        )
    return v


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """A string from a fixed set of choices."""
    options = tuple(choices)
    if value not in options:
        raise ParameterError(
            f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}",
            key=name,
            value=value,
            allowed=", ".join(map(repr, options)),
        )
    return str(value)


def check_known_keys(
    table: Iterable[str], allowed: Collection[str], where: str, *, section: str = ""
) -> None:
    """Refuse a configuration table with keys outside ``allowed``.

    Raises
    ------
    ConfigError
        ``"{where}: unknown key(s) [in {section}:] a, b; allowed: ..."``, the unknown keys sorted.
    """
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        inside = f" in {section}:" if section else ""
        raise ConfigError(
            f"{where}: unknown key(s){inside} {', '.join(unknown)}; allowed: {', '.join(allowed)}"
        )


def check_finite_array(
    name: str, value: Any, *, ndim: int | None = None, dtype: Any = float
) -> np.ndarray:
    """Convert to an ndarray and reject NaN or infinite entries and wrong dimensionality."""
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be a numeric array: {exc}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValidationError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValidationError(
            f"{name} contains {bad} NaN or infinite entries; all entries must be finite"
        )
    return arr


def check_shape(name: str, arr: np.ndarray, shape: Sequence[int | None]) -> np.ndarray:
    """Check ``arr.shape`` against ``shape`` (None = any size along that axis)."""
    if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise ValidationError(f"{name} must have shape {want}, got {arr.shape}")
    return arr


def check_norm_bound(
    name: str, arr: np.ndarray, bound: float, *, axis: int = -1, rtol: float = 1e-9
) -> None:
    """Reject vectors whose l2 norm along ``axis`` exceeds ``bound`` (privacy calibration relies on it)."""
    norms = np.linalg.norm(arr, axis=axis)
    worst = float(np.max(norms)) if norms.size else 0.0
    if worst > bound * (1.0 + rtol):
        raise DataBoundError(
            f"{name} has l2 norm up to {worst:.6g}, above the declared bound {bound:g}; "
            "rescale the data, raise the bound, or choose the explicit clipping policy"
        )
