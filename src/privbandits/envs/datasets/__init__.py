"""Real data sets: a registry of named data sets, file loading and validation, and the
supervised-to-bandit environment, the choice-data and auto-loan logistic environments.

``register(name, loader, ...)``, ``get(name)`` and ``names()`` manage the registry; the
:mod:`~privbandits.envs.datasets.tabular` module reads and validates CSV / Parquet files for every
loader; :class:`SupervisedEnv` plays a classification data set as a contextual bandit.
"""

from privbandits.envs.datasets.autoloan import AutoLoanEnv
from privbandits.envs.datasets.bandit import SupervisedEnv
from privbandits.envs.datasets.choice import ChoiceEnv, ChoicePricingEnv
from privbandits.envs.datasets.choice_offer import ChoiceOfferEnv
from privbandits.envs.datasets.registry import Dataset, DatasetEntry, get, names, register
from privbandits.envs.datasets.supervised import (
    SupervisedData,
    fetch_sklearn,
    load_file,
    load_sklearn,
)
from privbandits.envs.datasets.tabular import DataFormatError, Table, numeric_columns, read_table

__all__ = [
    "AutoLoanEnv",
    "ChoiceEnv",
    "ChoiceOfferEnv",
    "ChoicePricingEnv",
    "DataFormatError",
    "Dataset",
    "DatasetEntry",
    "SupervisedData",
    "SupervisedEnv",
    "Table",
    "fetch_sklearn",
    "get",
    "load_file",
    "load_sklearn",
    "names",
    "numeric_columns",
    "read_table",
    "register",
]
