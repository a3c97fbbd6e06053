"""Core building blocks: links, seed streams, typed messages, validation, errors."""

from privbandits.core.errors import (
    ConfigError,
    DataBoundError,
    NotResetError,
    PrivacyError,
    PrivbanditsError,
    ResultsStoreError,
    TrustBoundaryError,
    UnknownNameError,
    ValidationError,
)
from privbandits.core.links import LINKS, Link, get_link
from privbandits.core.rng import Streams, make_streams

__all__ = [
    "LINKS",
    "ConfigError",
    "DataBoundError",
    "Link",
    "NotResetError",
    "PrivacyError",
    "PrivbanditsError",
    "ResultsStoreError",
    "Streams",
    "TrustBoundaryError",
    "UnknownNameError",
    "ValidationError",
    "get_link",
    "make_streams",
]
