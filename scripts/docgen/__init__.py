"""Reference pages of the documentation site, generated from the code at build time.

Each function returns markdown text; the site's build hook (``scripts/docs_hooks.py``) writes it
into the site, so the reference can never drift from the code.  This package serves only the
documentation build and is not part of the installed ``privbandits`` package:

- :func:`~docgen.toml_reference.render_toml_reference`: every key of the experiment
  TOML format (from the experiment schema, the environments' and algorithms' signatures);
- :func:`~docgen.cli_reference.render_cli_reference`: every command and option of
  the ``privbandits`` command line (from the typer application);
- :mod:`~docgen.algorithm_reference`: the registered algorithms grouped by family,
  with their parameters, defaults and allowed values;
- :func:`~docgen.api_reference.api_modules`: the public modules documented by the
  API reference.
"""

from docgen.algorithm_reference import (
    family_of,
    list_families,
    render_algorithm_table,
    render_family_page,
    render_parameters,
)
from docgen.api_reference import api_modules
from docgen.cli_reference import cli_commands, render_cli_reference
from docgen.toml_reference import render_toml_reference, toml_keys

__all__ = [
    "api_modules",
    "cli_commands",
    "family_of",
    "list_families",
    "render_algorithm_table",
    "render_cli_reference",
    "render_family_page",
    "render_parameters",
    "render_toml_reference",
    "toml_keys",
]
