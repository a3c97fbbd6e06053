"""TOML experiment configurations, validated completely before any work starts.

The configuration layer has three parts:

- :mod:`privbandits.experiments.schema`: every key declared once (table, default, constraint,
  documentation, command-line flags) and the validated result objects;
- :mod:`privbandits.experiments.validation`: the validator reading those declarations
  (:func:`load_config`, :func:`parse_config`);
- :mod:`privbandits.experiments.overrides`: the command-line overrides (:class:`Overrides`,
  :func:`parse_grid_option`).

This module re-exports their public names.  A commented example of a file is on the documentation's
"Configuration files" page; every key is on the generated TOML reference page.
"""

from __future__ import annotations

from privbandits.experiments.overrides import Overrides, parse_grid_option
from privbandits.experiments.schema import (
    ALGO_KEYS,
    CALIBRATION_PRESETS,
    CHECKPOINT_KEYS,
    CLAIM_KEYS,
    CONFIG_KINDS,
    FIGURE_KEYS,
    FIGURE_KINDS,
    PAPER_NUMBER_KEYS,
    PLOT_KEYS,
    QUICK_KEYS,
    REPORT_KEYS,
    TABLE_KEYS,
    TOP_KEYS,
    AlgorithmEntry,
    ExperimentConfig,
    FigureSpec,
    MissingConfigDataError,
    PlotConfig,
    ReportConfig,
    env_variants,
)
from privbandits.experiments.validation import (
    _NAME_RE,
    ConfigKeyError,
    _suggest,
    _Validator,
    load_config,
    parse_config,
)

__all__ = [
    "ALGO_KEYS",
    "CALIBRATION_PRESETS",
    "CHECKPOINT_KEYS",
    "CLAIM_KEYS",
    "CONFIG_KINDS",
    "FIGURE_KEYS",
    "FIGURE_KINDS",
    "PAPER_NUMBER_KEYS",
    "PLOT_KEYS",
    "QUICK_KEYS",
    "REPORT_KEYS",
    "TABLE_KEYS",
    "TOP_KEYS",
    "_NAME_RE",
    "AlgorithmEntry",
    "ConfigKeyError",
    "ExperimentConfig",
    "FigureSpec",
    "MissingConfigDataError",
    "Overrides",
    "PlotConfig",
    "ReportConfig",
    "_Validator",
    "_suggest",
    "env_variants",
    "load_config",
    "parse_config",
    "parse_grid_option",
]
