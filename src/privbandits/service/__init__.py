"""The deployment: a served model over HTTP (``privbandits serve``), its database and security.

Modules: :mod:`.config` (the served configuration), :mod:`.model` (the algorithm's server role,
one report at a time), :mod:`.store` (SQLite / PostgreSQL), :mod:`.auth` (tokens, rate limits,
report budgets), :mod:`.sealing` (reports sealed to the server's key), :mod:`.service` (validation,
idempotency, persistence), :mod:`.app` (the FastAPI application), :mod:`.cli` (the command).  The
device side is :mod:`privbandits.client`.  Importing this package imports no web framework.
"""
