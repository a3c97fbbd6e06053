"""The public modules the API reference documents (one page each)."""

from __future__ import annotations

import pkgutil

__all__ = ["api_modules"]

#: Packages left out of the API reference (documentation tooling).
EXCLUDED: tuple[str, ...] = ("docgen",)


def api_modules() -> list[str]:
    """Dotted names of every public module and package of :mod:`privbandits`, sorted.

    Private modules (a name component starting with ``_``) and :data:`EXCLUDED` are left out.
    """
    import privbandits

    names = ["privbandits"]
    for info in pkgutil.walk_packages(privbandits.__path__, prefix="privbandits."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts):
            continue
        if any(info.name == e or info.name.startswith(e + ".") for e in EXCLUDED):
            continue
        names.append(info.name)
    return sorted(names)
