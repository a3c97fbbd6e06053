"""Declarative parameter constraints (one place, one argument order, scikit-learn style).

An algorithm declares its hyper-parameters once, as its constructor signature, and their allowed
values once, in the class attribute ``constraints`` (a mapping name -> :class:`Constraint`).
:class:`~privbandits.algorithms.base.Algorithm` validates the bound arguments against the
constraints before the constructor body runs and stores each as an attribute of the same name;
``get_params`` reads the signature back.  Every error names the parameter, the value and the
allowed range.

Example::

    constraints = {
        "epsilon": Real(0, None, low_open=True),
        "preset": Choice("strict", "paper"),
        "grad_bound": Optional(Real(0, None, low_open=True)),
    }
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from privbandits.core.errors import ParameterError
from privbandits.core.validation import check_choice, check_in_range, check_int

__all__ = [
    "Any_",
    "Bool",
    "Choice",
    "Constraint",
    "Delta",
    "Epsilon",
    "Int",
    "NonNegative",
    "Optional",
    "Positive",
    "Real",
    "validate_params",
]


class Constraint:
    """A rule a parameter value must satisfy; :meth:`check` returns the normalized value."""

    def check(self, name: str, value: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class Real(Constraint):
    """A real number in an interval (``None`` = unbounded); returns ``float``."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    allow_inf: bool = False

    def check(self, name: str, value: Any) -> float:
        return check_in_range(
            name,
            value,
            self.low,
            self.high,
            low_inclusive=not self.low_open,
            high_inclusive=not self.high_open,
            allow_inf=self.allow_inf,
        )

    def describe(self) -> str:
        lb = "(-inf" if self.low is None else ("(" if self.low_open else "[") + f"{self.low:g}"
        hb = "inf)" if self.high is None else f"{self.high:g}" + (")" if self.high_open else "]")
        return f"real in {lb}, {hb}"


@dataclass(frozen=True)
class Int(Constraint):
    """An integer in ``[low, high]``; integral floats such as ``1e6`` are accepted."""

    low: int | None = None
    high: int | None = None

    def check(self, name: str, value: Any) -> int:
        return check_int(name, value, self.low, self.high)

    def describe(self) -> str:
        return f"integer in [{'-inf' if self.low is None else self.low}, {'inf' if self.high is None else self.high}]"


class Choice(Constraint):
    """One of a fixed set of strings."""

    def __init__(self, *options: str) -> None:
        self.options = tuple(options)

    def check(self, name: str, value: Any) -> str:
        return check_choice(name, value, self.options)

    def describe(self) -> str:
        return "one of " + ", ".join(map(repr, self.options))

    def __repr__(self) -> str:
        return f"Choice{self.options!r}"


class Bool(Constraint):
    """True or False (numpy booleans accepted; 0/1 rejected)."""

    def check(self, name: str, value: Any) -> bool:
        if not isinstance(value, (bool, np.bool_)):
            raise ParameterError(
                f"{name} must be True or False, got {value!r}",
                key=name,
                value=value,
                allowed="True or False",
            )
        return bool(value)

    def describe(self) -> str:
        return "True or False"


@dataclass(frozen=True)
class Optional(Constraint):
    """``None`` (resolved later, e.g. by the calibration preset) or a value of ``inner``."""

    inner: Constraint

    def check(self, name: str, value: Any) -> Any:
        return None if value is None else self.inner.check(name, value)

    def describe(self) -> str:
        return f"None or {self.inner.describe()}"


class Any_(Constraint):
    """No constraint (the constructor body validates it, e.g. an array)."""

    def check(self, name: str, value: Any) -> Any:
        return value

    def describe(self) -> str:
        return "any value (checked by the algorithm)"


#: Privacy level epsilon in (0, inf).
Epsilon = Real(0.0, None, low_open=True)
#: Privacy level delta in (0, 1).
Delta = Real(0.0, 1.0, low_open=True, high_open=True)
#: A real number in (0, inf).
Positive = Real(0.0, None, low_open=True)
#: A real number in [0, inf).
NonNegative = Real(0.0, None)


def validate_params(
    owner: str, constraints: Mapping[str, Constraint], values: Mapping[str, Any]
) -> dict[str, Any]:
    """Validate ``values`` against ``constraints``; return the normalized values.

    Parameters without a declared constraint are passed through unchanged (the conformance suite
    checks that every registered algorithm declares all of its parameters).
    """
    out: dict[str, Any] = {}
    for name, value in values.items():
        rule = constraints.get(name)
        out[name] = value if rule is None else rule.check(name, value)
    return out
