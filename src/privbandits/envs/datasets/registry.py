"""Registry of named real data sets.

A data set is registered once, under a name, with a loader and where it comes from::

    register("wine", load_wine, kind="supervised", source="UCI Wine (scikit-learn bundled)",
             licence="CC BY 4.0", summary="178 wines, 13 chemical features, 3 cultivars")
    data = get("wine").load()          # an object with describe() -> dict
    names()                             # every registered name, sorted

A loader takes keyword options (e.g. ``path``, ``na``) and returns an object with a
``describe()`` method giving at least ``n`` and ``K``; it raises a
:class:`~privbandits.core.errors.MissingDataError` when the data is not available (no network, no
file) and a :class:`~privbandits.envs.datasets.tabular.DataFormatError` when it is malformed.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from privbandits.core.errors import UnknownNameError, ValidationError
from privbandits.core.validation import check_choice

__all__ = ["AVAILABILITY", "Dataset", "DatasetEntry", "get", "names", "register"]

#: How a registered data set is obtained: shipped with a dependency, downloaded, or from a user path.
AVAILABILITY = ("bundled", "network", "path")


class Dataset(Protocol):
    """What a loader returns: anything that describes itself."""

    def describe(self) -> dict[str, Any]:
        """JSON-serializable summary (n, d, K, class balance, best fixed policy, source, licence)."""
        ...


@dataclass(frozen=True)
class DatasetEntry:
    """A registered data set.

    Attributes
    ----------
    name : str
        Registry name.
    loader : callable
        ``loader(**options) -> Dataset``.
    kind : str
        What it is used for, e.g. ``"supervised"`` (classification data for the
        supervised-to-bandit environment) or ``"choice"`` (discrete-choice data).
    source : str
        Where the data comes from (citation or URL).
    licence : str
        Its licence.
    summary : str
        One line shown by ``privbandits datasets list``.
    availability : {"bundled", "network", "path"}
        Shipped with a dependency, downloaded on first use, or read from a user-supplied path.
    """

    name: str
    loader: Callable[..., Dataset]
    kind: str
    source: str
    licence: str
    summary: str
    availability: str = "bundled"

    def load(self, **options: Any) -> Dataset:
        """Call the loader; options it does not take (or required ones missing) are a
        :class:`ValidationError` naming them and the accepted ones."""
        sig = inspect.signature(self.loader)
        try:
            sig.bind(**options)
        except TypeError as exc:
            accepted = [
                n
                for n, p in sig.parameters.items()
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            ]
            raise ValidationError(
                f"data set {self.name!r}: {exc} (options given: {sorted(options) or 'none'}; "
                f"accepted: {', '.join(accepted) or 'none'})"
            ) from None
        return self.loader(**options)


_REGISTRY: dict[str, DatasetEntry] = {}


def register(
    name: str,
    loader: Callable[..., Dataset],
    *,
    kind: str,
    source: str,
    licence: str,
    summary: str,
    availability: str = "bundled",
) -> DatasetEntry:
    """Register ``loader`` under ``name`` (names are unique; re-registering the same loader is a no-op).

    Returns
    -------
    DatasetEntry
    """
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "_-." for c in name):
        raise ValidationError(
            f"data set name must be a non-empty string of letters, digits and _ - ., got {name!r}"
        )
    check_choice("availability", availability, AVAILABILITY)
    entry = DatasetEntry(name, loader, kind, source, licence, summary, availability)
    old = _REGISTRY.get(name)
    if old is not None and old.loader is not loader:
        raise ValidationError(
            f"data set name {name!r} registered twice (by {old.loader!r} and {loader!r})"
        )
    _REGISTRY[name] = entry
    return entry


def get(name: str) -> DatasetEntry:
    """The entry registered under ``name``."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), sorted(_REGISTRY), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownNameError(
            f"unknown data set {name!r}{hint}; registered: {', '.join(sorted(_REGISTRY))}"
        ) from None


def names(kind: str | None = None) -> list[str]:
    """Registered names (of one ``kind`` when given), sorted."""
    return sorted(n for n, e in _REGISTRY.items() if kind is None or e.kind == kind)
