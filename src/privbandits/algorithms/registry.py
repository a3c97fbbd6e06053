"""Registry mapping algorithm names to classes (factories)."""

from __future__ import annotations

import difflib
from typing import Any, TypeVar

from privbandits.algorithms.base import Algorithm
from privbandits.core.errors import UnknownNameError, ValidationError

__all__ = ["available", "get", "make", "register"]

_REGISTRY: dict[str, type[Algorithm]] = {}
A = TypeVar("A", bound=type[Algorithm])


def register(cls: A) -> A:
    """Class decorator: register an :class:`Algorithm` under its ``name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"algorithm name {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def get(name: str) -> type[Algorithm]:
    """The class registered under ``name``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(str(name), sorted(_REGISTRY), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownNameError(f"unknown algorithm {name!r}{hint}; available: {', '.join(sorted(_REGISTRY))}") from None


def make(name: str, **params: Any) -> Algorithm:
    """Construct the algorithm ``name`` with hyper-parameters ``params`` (validated)."""
    cls = get(name)
    try:
        return cls(**params)
    except TypeError as exc:
        raise ValidationError(f"bad parameters for algorithm {name!r}: {exc}") from None


def available() -> dict[str, type[Algorithm]]:
    """All registered algorithms, by name."""
    return dict(sorted(_REGISTRY.items()))
