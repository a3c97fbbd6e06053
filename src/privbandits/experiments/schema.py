"""The experiment schema, declared once: every key of a bandit experiment's TOML file.

Each :class:`Key` carries its table, its default, its constraint and its documentation.  The
validator (:mod:`privbandits.experiments.validation`) reads the allowed keys, the defaults and the
constraints from here, the command-line overrides (:mod:`privbandits.experiments.overrides` and the
``run`` / ``sweep`` / ``reproduce`` options) take their option names, help texts and checks from the
keys that declare ``cli`` flags, and the documentation's TOML reference is rendered from the same
declarations, so a key cannot be documented without being validated or the reverse.

Constraints are the declarative rules of :mod:`privbandits.core.params`; a few TOML-specific ones
(booleans spelled ``true``/``false``, names usable as file names) are defined below.  Keys whose value
is a table or an array of tables (``env``, ``algorithms``, ``checkpoints = { ... }``, ...) have the
constraint :data:`STRUCTURE`: the validator checks them section by section.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from privbandits.algorithms.calibration import PRESETS
from privbandits.core.errors import ConfigError, MissingDataError, ParameterError
from privbandits.core.params import Choice, Constraint, Int, Real
from privbandits.engine import ENGINES
from privbandits.experiments.claims import CLAIM_KINDS, Claim
from privbandits.experiments.paper_numbers import REFERENCE_KINDS, PaperNumber, PaperTable
from privbandits.experiments.units import WorkUnit

__all__ = [
    "CALIBRATION_PRESETS",
    "CONFIG_KINDS",
    "HORIZON_PARAM",
    "SCHEMA",
    "AlgorithmEntry",
    "ExperimentConfig",
    "FigureSpec",
    "Key",
    "PlotConfig",
    "ReportConfig",
    "cli_keys",
    "key",
    "table_keys",
]

#: The calibration presets (declared once, :data:`privbandits.algorithms.calibration.PRESETS`).
CALIBRATION_PRESETS: tuple[str, ...] = PRESETS

#: What a configuration file describes: a bandit experiment or a regression study
#: (:mod:`privbandits.experiments.regression_study`).
CONFIG_KINDS: tuple[str, ...] = ("bandit", "regression")
FIGURE_KINDS: tuple[str, ...] = ("regret_vs_t", "final_vs_param")
#: The parameter name of the horizon of an experiment with ``horizons`` (in every unit's grid).
HORIZON_PARAM = "T"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
#: Keys checked as privacy parameters wherever they appear (grids, ``[env]``).
PRIVACY_CONSTRAINTS: dict[str, Constraint] = {
    "epsilon": Real(0.0, None, low_open=True),
    "delta": Real(0.0, 1.0, low_open=True, high_open=True),
}


class MissingConfigDataError(ConfigError, MissingDataError):
    """The configuration is valid but its environment's data set is not where it says."""


# ------------------------------------------------------------------------------------------
# TOML-specific constraints
# ------------------------------------------------------------------------------------------
class TomlBool(Constraint):
    """``true`` or ``false`` (spelled as in TOML)."""

    def check(self, name: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ParameterError(
                f"{name} must be true or false", key=name, value=value, allowed="true or false"
            )
        return value

    def describe(self) -> str:
        return "boolean"


@dataclass(frozen=True)
class Text(Constraint):
    """A string (``nonempty``: at least one character; ``pattern``: a file-name-safe name)."""

    nonempty: bool = False
    pattern: re.Pattern[str] | None = None

    def check(self, name: str, value: Any) -> str:
        if not isinstance(value, str) or (self.nonempty and not value):
            what = "a non-empty string" if self.nonempty else "a string"
            raise ParameterError(f"{name} must be {what}", key=name, value=value, allowed=what)
        if self.pattern is not None and not self.pattern.match(value):
            raise ParameterError(
                f"{name} may contain only letters, digits, '_', '.' and '-'",
                key=name,
                value=value,
                allowed="letters, digits, '_', '.' and '-'",
            )
        return value

    def describe(self) -> str:
        return "string"


class Band(Constraint):
    """``"ci95"``, ``"se"`` or a number of standard deviations >= 0."""

    def check(self, name: str, value: Any) -> float | str:
        if isinstance(value, str):
            return Choice("se", "ci95").check(name, value)
        return Real(0.0, None).check(name, value)

    def describe(self) -> str:
        return '"ci95" | "se" | number >= 0'


class Structure(Constraint):
    """A table or an array of tables, checked by the validator's section code."""

    def check(self, name: str, value: Any) -> Any:
        return value

    def describe(self) -> str:
        return "table"


STRUCTURE = Structure()
_REQUIRED = object()


@dataclass(frozen=True)
class Key:
    """One key of the experiment schema.

    Parameters
    ----------
    table : str
        The table it belongs to (``""`` = the top level, ``"plot"``, ``"figures"``, ...).
    name : str
        The key.
    type : str
        Its type in words (the reference page's "type" column).
    doc : str
        What it means (the reference page's "meaning" column).
    constraint : Constraint
        The rule its value must satisfy (:data:`STRUCTURE` for tables checked section by section).
    default : object
        The value when the key is absent (``_REQUIRED``: the key must be given).
    default_doc : str
        The default in words, when it is not a literal (e.g. "the file's stem").
    cli : tuple of str
        Command-line flags that override the key (``run``, ``sweep``, ``reproduce``).
    cli_help : str
        Help text of those flags.
    """

    table: str
    name: str
    type: str
    doc: str
    constraint: Constraint = STRUCTURE
    default: Any = None
    default_doc: str = ""
    cli: tuple[str, ...] = ()
    cli_help: str = ""

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    @property
    def path(self) -> str:
        return f"{self.table}.{self.name}" if self.table else self.name

    def shown_default(self) -> str:
        """The default as the reference page shows it."""
        if self.default_doc:
            return self.default_doc
        if self.required:
            return "required"
        return toml_value(self.default)


def toml_value(value: Any) -> str:
    """``value`` spelled as in a TOML file (``none`` for an absent value)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{}"
            if not value
            else "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
        )
    return repr(value)


_PRESETS_TYPE = " | ".join(f'"{p}"' for p in CALIBRATION_PRESETS)
_ENGINES_TYPE = " | ".join(f'"{e}"' for e in ENGINES)
_LABELS = Structure()  # lists of algorithm labels: checked against the [[algorithms]] entries

#: Every key of a bandit experiment file, by table, in the order of the reference page.
SCHEMA: tuple[Key, ...] = (
    # -- top level ---------------------------------------------------------------------------
    Key(
        "",
        "kind",
        '"bandit" | "regression"',
        "What the file describes: a bandit experiment (this page's schema) or a regression-error "
        'study (`kind = "regression"`, its own schema below; run by `privbandits reproduce`).',
        Choice(*CONFIG_KINDS),
        "bandit",
    ),
    Key(
        "",
        "name",
        "string",
        "Experiment name: the key results are stored and plotted under (letters, digits, `_ . -`).",
        Text(nonempty=True, pattern=NAME_RE),
        None,
        "the file's stem",
    ),
    Key("", "description", "string", "Free text, copied into `report.md`.", Text(), ""),
    Key(
        "",
        "import",
        "list of module names",
        "Modules imported before the algorithm names are checked, in this process and in every "
        'worker (your own algorithms: `import = ["mypkg.algorithms"]`; same as `--import`).',
        STRUCTURE,
        [],
        "[]",
    ),
    Key(
        "",
        "horizon",
        "integer >= 1",
        "Number of rounds T of every run (`1e4` is accepted for 10000); required unless "
        "`horizons` is given instead.",
        Int(1),
        _REQUIRED,
        cli=("--horizon", "-T"),
        cli_help="Override the horizon T (of a file with several horizons: run that one).",
    ),
    Key(
        "",
        "horizons",
        "list of integers >= 1",
        "Several horizons instead of `horizon`: a separate set of runs for each T (an algorithm "
        "whose schedule or calibration depends on T is run for that T, not read off a longer "
        "run).  The horizon is then a parameter `T` of every series, for `[[figures]] x`, "
        "`[[claims]] param` and `where`.  `--horizon` runs one horizon of the list.",
        Int(1),  # the constraint of each element
        None,
        "none (one horizon, `horizon`)",
    ),
    Key(
        "",
        "replications",
        "integer >= 1",
        "Replications R of each work unit, simulated together as one batch.",
        Int(1),
        10,
        cli=("--replications", "-R"),
        cli_help="Override replications.",
    ),
    Key(
        "",
        "seeds",
        "list of integers >= 0",
        "Root seeds; each seed is one work unit per algorithm variant.  The same seed gives every "
        "algorithm the same contexts and rewards (common random numbers).",
        Int(0),  # the constraint of each element
        [0],
        "[0]",
        cli=("--seed",),
        cli_help="Run a single root seed instead of the config's.",
    ),
    Key(
        "",
        "checkpoints",
        "integer in [0, 10000] or table",
        "Rounds at which cumulative regret is recorded: that many log-spaced points (T is "
        "always included), or a table `{ log = 50, every = 1000 }`.",
        Int(0, 10_000),
        50,
    ),
    Key(
        "",
        "preset",
        _PRESETS_TYPE,
        "Calibration preset for every algorithm that takes one and whose entry names none "
        "(see Concepts: calibration presets); algorithms without presets ignore it.",
        Choice(*CALIBRATION_PRESETS),
        None,
        "each algorithm's own (strict)",
        cli=("--preset",),
        cli_help="Calibration preset for every algorithm that has one (an entry that names "
        "its own keeps it): "
        + ", ".join(CALIBRATION_PRESETS[:-1])
        + f" or {CALIBRATION_PRESETS[-1]}.",
    ),
    Key(
        "",
        "engine",
        _ENGINES_TYPE,
        "Driver of every simulation (see Concepts: engines).",
        Choice(*ENGINES),
        "auto",
        cli=("--engine",),
        cli_help="Driver: auto (default: the fastest available), reference, compiled or aggregate.",
    ),
    Key(
        "",
        "env",
        "table",
        "The environment: `kind` and its constructor arguments (below).",
        STRUCTURE,
        {},
        "required",
    ),
    Key(
        "",
        "grid",
        "table of lists",
        "Global grid: the cartesian product of its lists is applied to every algorithm that takes "
        "the key (keys no algorithm takes are an error).",
        STRUCTURE,
        {},
    ),
    Key(
        "",
        "algorithms",
        "array of tables `[[algorithms]]`",
        "The algorithms to run, one `[[algorithms]]` entry each (double brackets).",
        STRUCTURE,
        _REQUIRED,
    ),
    Key(
        "",
        "quick",
        "table",
        "Overrides applied by `--quick` (a short run of the same experiment).",
        STRUCTURE,
        {},
    ),
    Key("", "plot", "table", "Figure options of `privbandits run` / `reproduce`.", STRUCTURE, {}),
    Key(
        "", "report", "table", "The paper's claims a reproduction is compared with.", STRUCTURE, {}
    ),
    Key(
        "",
        "figures",
        "array of tables `[[figures]]`",
        "The figures of the report, one `[[figures]]` entry each.",
        STRUCTURE,
        [],
        "one regret-vs-t figure from `[plot]`",
    ),
    Key(
        "",
        "claims",
        "array of tables `[[claims]]`",
        "The paper's claims, checked on our numbers in every grid cell.",
        STRUCTURE,
        [],
    ),
    Key(
        "",
        "paper_numbers",
        "array of tables `[[paper_numbers]]`",
        "Numbers the paper (or another named source) reports, shown beside ours with the ratio.",
        STRUCTURE,
        [],
    ),
    Key(
        "",
        "tables",
        "array of tables `[[tables]]`",
        "Tables that arrange the reported numbers.",
        STRUCTURE,
        [],
    ),
    # -- checkpoints = { ... } ------------------------------------------------------------------
    Key(
        "checkpoints",
        "log",
        "integer in [0, 10000]",
        "Number of log-spaced checkpoints.",
        Int(0, 10_000),
        50,
    ),
    Key(
        "checkpoints", "every", "integer >= 1", "Also record every this many rounds.", Int(1), None
    ),
    # -- [[algorithms]] -------------------------------------------------------------------------
    Key(
        "algorithms",
        "name",
        "string",
        "A registered algorithm (`privbandits list`).",
        Text(nonempty=True),
        _REQUIRED,
    ),
    Key(
        "algorithms",
        "label",
        "string",
        "Name of the entry in tables, legends and the results store; unique across entries "
        "(needed when the same algorithm appears twice).",
        Text(nonempty=True),
        None,
        "the name",
    ),
    Key(
        "algorithms",
        "params",
        "table",
        "Constructor arguments fixed for this entry, e.g. `{ epsilon = 1.0, delta = 0.01 }`.",
        STRUCTURE,
        {},
    ),
    Key(
        "algorithms",
        "grid",
        "table of lists",
        "Per-entry grid: the cartesian product of its lists; a key here replaces the global "
        "grid's key for this entry.  A key may not be in both `params` and `grid`.",
        STRUCTURE,
        {},
    ),
    Key(
        "algorithms",
        "preset",
        _PRESETS_TYPE,
        "Calibration preset of this entry (only for algorithms that take one).",
        Choice(*CALIBRATION_PRESETS),
        None,
        "the top-level preset",
    ),
    # -- [quick] --------------------------------------------------------------------------------
    Key("quick", "horizon", "integer >= 1", "Horizon under `--quick`.", Int(1), None, "unchanged"),
    Key(
        "quick",
        "horizons",
        "list of integers >= 1",
        "Horizons under `--quick` (a file with `horizons`).",
        Int(1),
        None,
        "unchanged",
    ),
    Key(
        "quick",
        "replications",
        "integer >= 1",
        "Replications under `--quick`.",
        Int(1),
        None,
        "unchanged",
    ),
    Key(
        "quick",
        "seeds",
        "list of integers >= 0",
        "Seeds under `--quick`.",
        Int(0),
        None,
        "unchanged",
    ),
    Key(
        "quick",
        "checkpoints",
        "integer or table",
        "Checkpoints under `--quick`.",
        Int(0, 10_000),
        None,
        "unchanged",
    ),
    # -- [plot] ---------------------------------------------------------------------------------
    Key(
        "plot",
        "facet",
        "string",
        'One panel per value of this grid parameter (e.g. `"epsilon"`).',
        Text(nonempty=True),
        None,
    ),
    Key(
        "plot",
        "band",
        '"ci95" | "se" | number >= 0',
        "The shaded band around each mean curve: 95 % interval of the mean, one standard error, or "
        "that many standard deviations across replications (papers' figures often use 0.5).",
        Band(),
        "ci95",
    ),
    Key("plot", "logx", "boolean", "Logarithmic t axis.", TomlBool(), False),
    Key("plot", "logy", "boolean", "Logarithmic regret axis.", TomlBool(), False),
    Key(
        "plot",
        "dpi",
        "integer in [20, 1200]",
        "Resolution of the PNG figures (`--dpi` overrides it).",
        Int(20, 1200),
        150,
    ),
    # -- [report] -------------------------------------------------------------------------------
    Key("report", "title", "string", "Title of `report.md`.", Text(), ""),
    Key("report", "source", "string", "Where the claims come from (paper, figure).", Text(), ""),
    Key(
        "report",
        "claimed_order",
        "list of strings",
        "Labels (or names) in the paper's order of final regret, lowest first; "
        "`privbandits reproduce` checks the measured order against it.",
        _LABELS,
        [],
    ),
    Key(
        "report",
        "claims",
        "string",
        "The paper's claims in words, copied into `report.md`.",
        Text(),
        "",
    ),
    Key(
        "report",
        "notes",
        "string",
        "Our remarks (e.g. why a number differs from the paper's), copied into `report.md`.",
        Text(),
        "",
    ),
    Key(
        "report",
        "level",
        "number in (0, 0.5)",
        "One-sided significance level of every claim comparison (agree / disagree / inconclusive).",
        Real(0.0, 0.5, low_open=True, high_open=True),
        0.05,
    ),
    Key(
        "report",
        "slopes",
        "table of label = exponent",
        "Theoretical regret exponents (R(T) = O~(T^a)) shown beside the measured log-log slopes.",
        Real(0.0, 1.0),  # the constraint of each exponent
        {},
    ),
    # -- [[figures]] ----------------------------------------------------------------------------
    Key(
        "figures",
        "kind",
        '"regret_vs_t" | "final_vs_param"',
        "Cumulative regret against t (one panel per `facet` value), or final regret against a "
        "parameter `x` with error bars.",
        Choice(*FIGURE_KINDS),
        "regret_vs_t",
    ),
    Key(
        "figures",
        "name",
        "string",
        "File stem of the PNG and PDF.",
        Text(nonempty=True, pattern=NAME_RE),
        None,
        '"regret" / "final-regret"',
    ),
    Key(
        "figures",
        "title",
        "string",
        "Figure title (d, K, T and the number of runs are added).",
        Text(),
        "",
        "the report title",
    ),
    Key(
        "figures",
        "facet",
        "string",
        "regret_vs_t: one panel per value of this parameter.",
        Text(nonempty=True),
        None,
    ),
    Key(
        "figures",
        "band",
        '"ci95" | "se" | number >= 0',
        "regret_vs_t: the band: 95 % interval of the mean, one standard error, or that many "
        "standard deviations across replications.",
        Band(),
        "ci95",
    ),
    Key(
        "figures",
        "x",
        "string",
        "final_vs_param: the parameter on the x axis.",
        Text(nonempty=True),
        None,
        "required (final_vs_param)",
    ),
    Key(
        "figures",
        "series",
        "list of labels",
        "final_vs_param: the series drawn as lines.",
        _LABELS,
        None,
        "every label with several x values",
    ),
    Key(
        "figures",
        "baselines",
        "list of labels",
        "final_vs_param: series drawn as horizontal reference lines (e.g. non-private).",
        _LABELS,
        [],
    ),
    Key(
        "figures",
        "errorbars",
        '"se" | "ci95"',
        "final_vs_param: error bars of the means.",
        Choice("se", "ci95"),
        "se",
    ),
    Key("figures", "logx", "boolean", "Logarithmic x axis.", TomlBool(), False),
    Key("figures", "logy", "boolean", "Logarithmic y axis.", TomlBool(), False),
    # -- [[claims]] -----------------------------------------------------------------------------
    Key(
        "claims",
        "kind",
        " | ".join(f'"{k}"' for k in CLAIM_KINDS),
        "order: items ascend in final regret; tiers: every item below every `above`; within: "
        "items[0] within `percent` % of items[1]; monotone: items[0] falls (or rises) with `param`; "
        "stable: items[0] changes by less than `percent` % between adjacent values of `param`; "
        "slope: the log-log slope of items[0]'s regret over t in [T/10, T] (with `param`: of its "
        "final regret against that parameter, e.g. `T`) is near `exponent` (or at most `exponent` "
        "+ `tolerance`).",
        Choice(*CLAIM_KINDS),
        _REQUIRED,
    ),
    Key(
        "claims",
        "items",
        "list of labels",
        "The series the claim is about (see `kind`).",
        _LABELS,
        _REQUIRED,
    ),
    Key(
        "claims",
        "above",
        "list of labels",
        "tiers: the upper tier.",
        _LABELS,
        None,
        "required (tiers)",
    ),
    Key(
        "claims",
        "percent",
        "number > 0",
        "within, stable: the tolerance in percent.",
        Real(0.0, None, low_open=True),
        None,
        "required (within, stable)",
    ),
    Key(
        "claims",
        "param",
        "string",
        "monotone, stable: the parameter; slope: the parameter whose values are the x of the fit "
        '(`"T"`: final regret across the separate horizons of `horizons`) instead of t.',
        Text(nonempty=True),
        None,
        "required (monotone, stable); slope: t within each run",
    ),
    Key(
        "claims",
        "direction",
        '"decreasing" | "increasing" | "near" | "at_most"',
        "monotone: the direction; slope: near the exponent or at most exponent + tolerance.",
        Choice("decreasing", "increasing", "near", "at_most"),
        None,
        '"decreasing" / "near"',
    ),
    Key(
        "claims",
        "exponent",
        "number in [0, 1]",
        "slope: the theory's exponent a of O~(T^a).",
        Real(0.0, 1.0),
        None,
        "required (slope)",
    ),
    Key(
        "claims",
        "tolerance",
        "number in [0, 1]",
        "slope: the allowed deviation from the exponent.",
        Real(0.0, 1.0),
        None,
        "required (slope)",
    ),
    Key(
        "claims",
        "where",
        "table",
        "Only the grid cells with these values, e.g. `{ epsilon = 1.0 }`.",
        STRUCTURE,
        {},
    ),
    Key("claims", "text", "string", "The claim in the paper's words.", Text(), ""),
    # -- [[paper_numbers]] ----------------------------------------------------------------------
    Key(
        "paper_numbers", "algorithm", "label", "The series the number is about.", _LABELS, _REQUIRED
    ),
    Key(
        "paper_numbers",
        "where",
        "table",
        "Grid, parameter or environment values of the cell.",
        STRUCTURE,
        {},
    ),
    Key(
        "paper_numbers",
        "metric",
        "string",
        "final_regret, final_regret_std or final_regret_se (others are shown without ours).",
        Text(nonempty=True),
        "final_regret",
    ),
    Key(
        "paper_numbers", "value", "number", "The reported number.", Real(allow_inf=False), _REQUIRED
    ),
    Key(
        "paper_numbers",
        "source",
        "string",
        'Where it is printed (e.g. `"Table 2, p. 9"`).',
        Text(),
        "",
    ),
    Key(
        "paper_numbers",
        "kind",
        "string",
        "Who reported the number: `paper`, `authors' code`, `prototype` or `theory`; only "
        "`paper` numbers are called the paper's.",
        Choice(*REFERENCE_KINDS),
        _REQUIRED,
    ),
    Key(
        "paper_numbers",
        "horizon",
        "integer",
        "The T the number was measured at; a run at another T shows it as not comparable.",
        Int(1),
        None,
        "the file's `horizon`",
    ),
    # -- [[tables]] -----------------------------------------------------------------------------
    Key("tables", "title", "string", "Table heading.", Text(), ""),
    Key(
        "tables",
        "metric",
        "string",
        "Which reported numbers the table shows.",
        Text(nonempty=True),
        "final_regret",
    ),
    Key(
        "tables",
        "columns",
        "string",
        "The key whose values are the columns (e.g. epsilon).",
        Text(nonempty=True),
        None,
    ),
    Key(
        "tables", "rows", "list of labels", "Row order.", _LABELS, None, "every label with numbers"
    ),
)

_BY_PATH: dict[tuple[str, str], Key] = {(k.table, k.name): k for k in SCHEMA}
#: Keys of each claim kind (a subset of the ``claims`` table).
CLAIM_KEYS: dict[str, tuple[str, ...]] = {
    "order": ("kind", "items", "where", "text"),
    "tiers": ("kind", "items", "above", "where", "text"),
    "within": ("kind", "items", "percent", "where", "text"),
    "monotone": ("kind", "items", "param", "direction", "where", "text"),
    "stable": ("kind", "items", "param", "percent", "where", "text"),
    "slope": ("kind", "items", "exponent", "tolerance", "direction", "param", "where", "text"),
}
#: Keys of each figure kind (a subset of the ``figures`` table).
FIGURE_KEYS: dict[str, tuple[str, ...]] = {
    "regret_vs_t": ("kind", "name", "title", "facet", "band", "logx", "logy"),
    "final_vs_param": (
        "kind",
        "name",
        "title",
        "x",
        "series",
        "baselines",
        "errorbars",
        "logx",
        "logy",
    ),
}


def table_keys(table: str) -> tuple[str, ...]:
    """The keys of ``table`` (``""`` = the top level), in declaration order."""
    return tuple(k.name for k in SCHEMA if k.table == table)


def tables() -> tuple[str, ...]:
    """The tables of the schema, in declaration order."""
    return tuple(dict.fromkeys(k.table for k in SCHEMA))


def key(table: str, name: str) -> Key:
    """The declaration of ``table.name``."""
    return _BY_PATH[(table, name)]


def cli_keys() -> tuple[Key, ...]:
    """The keys with command-line override flags."""
    return tuple(k for k in SCHEMA if k.cli)


assert set(itertools.chain(*CLAIM_KEYS.values())) == set(table_keys("claims"))
assert set(itertools.chain(*FIGURE_KEYS.values())) == set(table_keys("figures"))
#: Claim kinds of a regression study (``kind = "regression"``, its ``[[claims]]``): ``coverage``:
#: the widths of each of ``items`` covered ``f*`` at every held-out point in at least ``percent`` %
#: of the seeds; ``monotone``: the mean L1 error of ``items[0]`` falls (or rises) with ``param``.
#: Their keys are those of the ``claims`` table, validated by the same declarations.
REGRESSION_CLAIM_KEYS: dict[str, tuple[str, ...]] = {
    "coverage": ("kind", "items", "percent", "where", "text"),
    "monotone": ("kind", "items", "param", "direction", "where", "text"),
}
assert set(itertools.chain(*REGRESSION_CLAIM_KEYS.values())) <= set(table_keys("claims"))

# backwards-compatible key tuples (read by the regression study and the service)
TOP_KEYS = table_keys("")
ALGO_KEYS = table_keys("algorithms")
QUICK_KEYS = table_keys("quick")
CHECKPOINT_KEYS = table_keys("checkpoints")
PLOT_KEYS = table_keys("plot")
REPORT_KEYS = table_keys("report")
PAPER_NUMBER_KEYS = table_keys("paper_numbers")
TABLE_KEYS = table_keys("tables")


# ------------------------------------------------------------------------------------------
# result objects
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AlgorithmEntry:
    """One ``[[algorithms]]`` entry with its expanded parameter variants."""

    name: str
    label: str
    variants: tuple[tuple[dict[str, Any], dict[str, Any]], ...]  # (full params, grid values)


@dataclass(frozen=True)
class PlotConfig:
    """``[plot]``: facet parameter, band multiplier and axis scales."""

    facet: str | None = key("plot", "facet").default
    band: float | str = key("plot", "band").default
    logx: bool = key("plot", "logx").default
    logy: bool = key("plot", "logy").default
    dpi: int = key("plot", "dpi").default


@dataclass(frozen=True)
class FigureSpec:
    """One ``[[figures]]`` entry."""

    kind: str = "regret_vs_t"
    name: str = "regret"
    title: str = ""
    facet: str | None = None
    band: float | str = "ci95"
    x: str | None = None
    series: tuple[str, ...] = ()
    baselines: tuple[str, ...] = ()
    errorbars: str = "se"
    logx: bool = False
    logy: bool = False


@dataclass(frozen=True)
class ReportConfig:
    """``[report]``: the paper's claims a reproduction is compared with."""

    title: str = ""
    source: str = ""
    claimed_order: tuple[str, ...] = ()
    claims: str = ""
    notes: str = ""
    level: float = key("report", "level").default
    #: Theoretical regret exponents by algorithm label (``R(T) = O~(T^a)``), reported beside the
    #: measured log-log slopes.
    slopes: dict[str, float] = field(default_factory=dict)


def env_variants(
    env: Mapping[str, Any], env_grid: Mapping[str, Sequence[Any]]
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(environment, its grid values)`` for every combination of the values of ``env_grid``, in
    order (``[(env, {})]`` without a grid)."""
    keys = list(env_grid)
    out = []
    for combo in itertools.product(*(env_grid[k] for k in keys)):
        values = dict(zip(keys, combo))
        out.append(({**env, **values}, values))
    return out


@dataclass(frozen=True)
class ExperimentConfig:
    """A validated experiment; :meth:`units` expands it into work units."""

    name: str
    description: str
    horizon: int
    replications: int
    seeds: tuple[int, ...]
    checkpoints: dict[str, Any]
    env: dict[str, Any]
    algorithms: tuple[AlgorithmEntry, ...]
    plot: PlotConfig = field(default_factory=PlotConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    source: str = "<config>"
    raw: dict[str, Any] = field(default_factory=dict)
    engine: str = "auto"
    figures: tuple[FigureSpec, ...] = ()
    claims: tuple[Claim, ...] = ()
    paper_numbers: tuple[PaperNumber, ...] = ()
    tables: tuple[PaperTable, ...] = ()
    #: ``[env] grid``: environment arguments with several values (every algorithm runs on each).
    env_grid: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: The horizon the file declares (before ``--quick`` / ``--horizon``); reference numbers are at it.
    declared_horizon: int | None = None
    #: Run with the file's ``[quick]`` overrides (a smoke run, not the experiment's settings).
    quick: bool = False
    #: Modules imported for their algorithms (``import = [...]`` and ``--import``), in every worker.
    imports: tuple[str, ...] = ()
    #: What the command-line overrides changed (``Overrides.tag``): the run's own output directory.
    run_tag: str = ""
    #: ``horizons``: the separate horizons, each a value of the parameter ``T`` of every series
    #: (empty: the one ``horizon``, which is then their largest).
    horizons: tuple[int, ...] = ()
    #: The horizons the file declares (before ``--quick`` / ``--horizon``).
    declared_horizons: tuple[int, ...] = ()

    @property
    def reduced(self) -> bool:
        """A quick run or one at another horizon than the file declares."""
        return (
            self.quick
            or (self.declared_horizon is not None and self.horizon != self.declared_horizon)
            or self.horizons != self.declared_horizons
        )

    def horizon_text(self, fmt: str = "", declared: bool = False) -> str:
        """``"T = 100000"``, or ``"T in {1000, 3000} (separate runs)"`` with ``horizons``, each
        number formatted with ``fmt``; ``declared``: the file's horizon(s)."""
        many = self.declared_horizons if declared else self.horizons
        if many:
            return f"T in {{{', '.join(f'{h:{fmt}}' for h in many)}}} (separate runs)"
        one = self.declared_horizon if declared and self.declared_horizon else self.horizon
        return f"T = {one:{fmt}}"

    def run_horizons(self) -> tuple[int, ...]:
        """The horizons of the work units: ``horizons``, or the one ``horizon``."""
        return self.horizons or (self.horizon,)

    def env_variants(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """``(environment, its grid values)`` for every combination of ``[env] grid`` (one without it)."""
        return env_variants(self.env, self.env_grid)

    def units(self) -> list[WorkUnit]:
        """All work units: horizons x algorithm entries x variants x environment variants x seeds,
        in a deterministic order.  With ``horizons`` each unit's grid also holds its horizon as
        ``T`` (so that series, claims and figures treat it as a parameter)."""
        return [
            WorkUnit(
                experiment=self.name,
                label=entry.label,
                algorithm=entry.name,
                params=params,
                grid={**env_values, **grid, **({HORIZON_PARAM: horizon} if self.horizons else {})},
                env=env,
                seed=seed,
                horizon=horizon,
                replications=self.replications,
                checkpoints=dict(self.checkpoints),
                engine=self.engine,
                imports=self.imports,
            )
            for horizon in self.run_horizons()
            for entry in self.algorithms
            for params, grid in entry.variants
            for env, env_values in self.env_variants()
            for seed in self.seeds
        ]

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(e.label for e in self.algorithms)
