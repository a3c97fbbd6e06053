"""uvicorn's TLS options, shared by ``privbandits serve`` and ``privbandits serve-shuffler``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["tls_options"]


def tls_options(keyfile: Path | None, certfile: Path | None) -> dict[str, Any]:
    """uvicorn's TLS keyword arguments for the given files (none: plain HTTP)."""
    out: dict[str, Any] = {}
    if keyfile is not None:
        out["ssl_keyfile"] = str(keyfile)
    if certfile is not None:
        out["ssl_certfile"] = str(certfile)
    return out
