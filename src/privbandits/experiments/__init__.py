"""Experiments: TOML configs, the sweep runner (local processes or Dask), the SQLite results store,
plots, reports and paper presets.

Typical use::

    from privbandits.experiments import ResultsStore, load_config, run_experiment
    config = load_config("sweep.toml")
    with ResultsStore("privbandits-results/results.db") as store:
        report = run_experiment(config, store, workers=2)

Names are imported lazily (worker processes and the CLI only load what they use; matplotlib is
imported only when plotting).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Claim": "claims",
    "ClaimResult": "claims",
    "evaluate_claims": "claims",
    "PaperNumber": "paper_numbers",
    "match_numbers": "paper_numbers",
    "reproduce_all": "gallery",
    "write_gallery": "gallery",
    "ExperimentConfig": "config",
    "Overrides": "config",
    "load_config": "config",
    "parse_config": "config",
    "export_results": "export",
    "Outcome": "pipeline",
    "run_pipeline": "pipeline",
    "run_reproduction": "pipeline",
    "plot_final_vs_param": "plots",
    "plot_regret": "plots",
    "regret_figure": "plots",
    "available_presets": "presets",
    "load_preset": "presets",
    "load_reproduction": "presets",
    "RegressionOutcome": "regression_study",
    "RegressionStudy": "regression_study",
    "run_regression_study": "regression_study",
    "write_report": "report",
    "RunReport": "runner",
    "run_experiment": "runner",
    "run_units": "runner",
    "DEFAULT_DB": "store",
    "ResultsStore": "store",
    "StoredResult": "store",
    "Series": "summary",
    "build_series": "summary",
    "WorkUnit": "units",
    "execute_unit": "units",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module = importlib.import_module(f"privbandits.experiments.{_EXPORTS[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'privbandits.experiments' has no attribute {name!r}")
