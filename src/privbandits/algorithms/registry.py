"""Registry mapping algorithm names to classes (factories).

Algorithms of other packages join it in every process (command line, worker processes, Dask
workers) in two ways:

* an installed package declares an entry point in the group :data:`ENTRY_POINT_GROUP`
  (``[project.entry-points."privbandits.algorithms"] my-alg = "mypkg.algs:MyAlgorithm"``): the
  registry loads every such entry point the first time a name is looked up;
* ``--import MODULE`` on the command line or ``import = ["mypkg.algs"]`` in an experiment file
  imports modules whose classes register themselves with :func:`register`
  (:func:`import_modules`); the experiment runner imports them again in each worker.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import Any, TypeVar

from privbandits.algorithms.base import Algorithm
from privbandits.core.errors import UnknownNameError, ValidationError

__all__ = [
    "ENTRY_POINT_GROUP",
    "available",
    "get",
    "import_modules",
    "load_plugins",
    "make",
    "register",
]

#: Entry-point group through which installed packages register algorithms.
ENTRY_POINT_GROUP = "privbandits.algorithms"

_REGISTRY: dict[str, type[Algorithm]] = {}
_PLUGINS_LOADED: list[bool] = [False]
A = TypeVar("A", bound=type[Algorithm])


def load_plugins() -> None:
    """Load every entry point of :data:`ENTRY_POINT_GROUP` once per process.

    An entry point may name an :class:`Algorithm` subclass (registered here) or a module whose
    classes register themselves.  A plugin that fails to load raises a clear error naming it.
    """
    if _PLUGINS_LOADED[0]:
        return
    _PLUGINS_LOADED[0] = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
        except Exception as exc:  # a broken plugin must say which one
            raise ValidationError(
                f"the algorithm plugin {ep.name!r} ({ep.value}, entry point group "
                f"{ENTRY_POINT_GROUP!r}) failed to load: {type(exc).__name__}: {exc}"
            ) from exc
        if isinstance(obj, type) and issubclass(obj, Algorithm) and obj.name not in _REGISTRY:
            register(obj)


def import_modules(modules: Iterable[str]) -> None:
    """Import ``modules`` (``--import`` / ``import = [...]``) so their algorithms register themselves."""
    for mod in modules:
        if not isinstance(mod, str) or not mod.strip():
            raise ValidationError(
                f"import: expected a module name such as 'mypkg.algorithms', got {mod!r}"
            )
        try:
            importlib.import_module(mod.strip())
        except ImportError as exc:
            raise ValidationError(
                f"import: cannot import module {mod!r} ({exc}); it must be importable from "
                "this Python (installed, or on PYTHONPATH in every worker)"
            ) from None


def register(cls: A) -> A:
    """Class decorator: register an :class:`Algorithm` under its ``name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"algorithm name {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def get(name: str) -> type[Algorithm]:
    """The class registered under ``name`` (exact, else the one name equal ignoring case)."""
    load_plugins()
    if name in _REGISTRY:
        return _REGISTRY[name]
    folded = [n for n in _REGISTRY if isinstance(name, str) and n.casefold() == name.casefold()]
    if len(folded) == 1:
        return _REGISTRY[folded[0]]
    lower = {n.lower(): n for n in _REGISTRY}
    close = [lower[c] for c in difflib.get_close_matches(str(name).lower(), sorted(lower), n=1)]
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownNameError(
        f"unknown algorithm {name!r}{hint}; available: {', '.join(sorted(_REGISTRY))}"
    )


def make(name: str, **params: Any) -> Algorithm:
    """Construct the algorithm ``name`` with hyper-parameters ``params`` (validated)."""
    cls = get(name)
    try:
        return cls(**params)
    except TypeError as exc:
        raise ValidationError(f"bad parameters for algorithm {name!r}: {exc}") from None


def available() -> dict[str, type[Algorithm]]:
    """All registered algorithms, by name."""
    load_plugins()
    return dict(sorted(_REGISTRY.items()))
