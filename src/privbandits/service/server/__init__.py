"""The server process of a deployment (``privbandits serve``).

:mod:`.model` (the algorithm's server role, one report or batch at a time), :mod:`.store`
(SQLite / PostgreSQL), :mod:`.service` (validation, idempotency, budgets, quarantine,
persistence), :mod:`.app` (the FastAPI application), :mod:`.dashboard` (``GET /``) and
:mod:`.cli` (the command).  Importing this package imports no web framework.
"""
