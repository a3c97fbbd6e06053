"""The shuffler process of a shuffle-model deployment (``privbandits serve-shuffler``).

:mod:`.app` (the FastAPI application and its forwarder), :mod:`.store` (the durable queue,
quarantine and dead letters in SQLite), :mod:`.permutation` (uniform permutations) and
:mod:`.cli` (the command).  The names of :mod:`.app` are importable from this package.
"""

from privbandits.service.shuffler.app import (
    Forwarder,
    ShufflerSettings,
    create_shuffler_app,
    protocol_batch_size,
    report_budget,
)

__all__ = [
    "Forwarder",
    "ShufflerSettings",
    "create_shuffler_app",
    "protocol_batch_size",
    "report_budget",
]
