"""The deployment, split by process (DESIGN.md section 1).

* :mod:`.server` -- ``privbandits serve``: the algorithm's server role (or a trusted curator) over
  HTTP, its database, the dashboard;
* :mod:`.shuffler` -- ``privbandits serve-shuffler``: the shuffle model's trusted shuffler;
* :mod:`.device` -- the SDK a user's device runs, and simulated devices.

Shared by the three: :mod:`.config` (the served configuration and the problem it describes),
:mod:`.auth` (tokens: the one reader of bearer tokens, rate limits, the one report-budget rule),
:mod:`.reports` (the report format), :mod:`.codec` (arrays to and from JSON, strict request
fields), :mod:`.ranges` (output ranges of randomizers), :mod:`.sealing` (reports sealed to the
server's key), :mod:`.tls`, :mod:`.tools_cli` (``make-tokens``) and :mod:`.cli` (the commands).
No module of one process imports another process's modules, and nothing here imports the command
line above it.  Importing this package imports no web framework.
"""
