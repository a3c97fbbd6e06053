"""The shuffler process of a shuffle-model deployment (``privbandits serve-shuffler``).

:mod:`.app` (the FastAPI application and its forwarder), :mod:`.store` (the durable queue,
quarantine and dead letters in SQLite), :mod:`.permutation` (uniform permutations) and
:mod:`.cli` (the command).  The names of :mod:`.app` are importable from this package.
"""

# the public names of .app, re-exported (its __all__ is the one list of them)
from privbandits.service.shuffler.app import Forwarder as Forwarder
from privbandits.service.shuffler.app import ShufflerSettings as ShufflerSettings
from privbandits.service.shuffler.app import __all__ as __all__
from privbandits.service.shuffler.app import create_shuffler_app as create_shuffler_app
from privbandits.service.shuffler.app import protocol_batch_size as protocol_batch_size
from privbandits.service.shuffler.app import report_budget as report_budget
