"""TOML experiment configurations, validated completely before any work starts.

Schema (every table and key is checked; unknown keys are rejected with the closest allowed one; the
documentation's TOML reference is generated from this module's key lists)::

    kind = "bandit"                # bandit (this schema) | regression (experiments.regression_study)
    name = "my-sweep"              # default: the file's stem; letters, digits, ``_ . -``
    description = "free text"
    horizon = 20000                # T >= 1 (1e4 is accepted)
    replications = 10              # R >= 1, batched in one simulation
    seeds = [0, 1]                 # root seeds >= 0, one work unit per seed
    checkpoints = 50               # log-spaced points, or { log = 50, every = 1000 }
    preset = "strict"              # strict | paper | authors_code, for algorithms that take it
    engine = "auto"                # auto | reference | compiled | aggregate (simulate's driver)

    [env]
    kind = "synthetic"             # synthetic | finite | k-armed | convex | movielens | supervised | choice
                                   # | choice-pricing | choice-offer | auto-loan, then the environment's
                                   # constructor args
    d = 5
    K = 10
    grid = { theta_norm = [2.0, 3.0] }  # environment variants: every algorithm runs on each; the
                                   # values join the series' grid (cells, facets, claims, tables)

    [grid]                         # cartesian product, applied to every algorithm accepting the key
    epsilon = [1.0, 5.0]

    [[algorithms]]
    name = "linucb"                # a registered algorithm
    label = "LinUCB"               # default: the name; unique across entries
    params = { lam = 1.0 }         # constructor arguments
    grid = { alpha = [0.1, 1.0] }  # per-algorithm grid (overrides the global grid's key)
    preset = "paper"

    [quick]                        # overrides applied by ``--quick``
    horizon = 2000
    replications = 3

    [plot]
    facet = "epsilon"              # one panel per value of this parameter
    band = "ci95"                  # shaded band: "ci95" (95 % interval of the mean, default), "se",
                                   # or a number x std across all replications of all seeds
    logx = false
    logy = false

    [report]                       # used by ``privbandits reproduce``
    title = "..."
    source = "Paper, Figure 1"
    claimed_order = ["ldp-sgd", "ldp-ols"]   # shorthand for one [[claims]] entry of kind "order"
    claims = "free text"           # the paper's claims in its words
    notes = "free text"            # our remarks (e.g. why numbers differ from the paper)
    level = 0.05                   # one-sided significance level of the claim checks
    slopes = { ldp-sgd = 0.5 }     # theoretical regret exponents by label, beside measured slopes

    [[figures]]                    # default: one regret_vs_t figure from [plot]
    kind = "final_vs_param"        # regret_vs_t | final_vs_param
    name = "final-regret-vs-epsilon"   # file stem
    x = "epsilon"                  # final_vs_param: the parameter on the x axis
    series = ["central"]           # final_vs_param: labels drawn as lines
    baselines = ["non-private"]    # final_vs_param: labels drawn as horizontal reference lines
    errorbars = "se"               # se | ci95
    logx = true

    [[claims]]                     # see privbandits.experiments.claims
    kind = "order"                 # order | tiers | within | monotone | stable
    items = ["a", "b"]
    where = { epsilon = 1.0 }      # only these cells

    [[paper_numbers]]              # see privbandits.experiments.paper_numbers
    algorithm = "a"
    where = { epsilon = 1.0 }
    metric = "final_regret"
    value = 1234.0
    kind = "paper"                 # paper | authors' code | prototype | theory (who reported it)
    source = "Table 2, p. 9"
    horizon = 5000                 # T of the number (default: this file's horizon)

    [[tables]]                     # paper numbers arranged as a table
    title = "Table 2"
    metric = "final_regret"
    columns = "epsilon"

Privacy parameters (keys ``epsilon``, ``delta`` and keys ending in ``_epsilon`` / ``_delta``)
are checked centrally wherever they appear, and every algorithm variant is constructed and reset
on the environment once, so errors name their key path (``algorithms[1].params.delta``).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import itertools
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privbandits.algorithms import available
from privbandits.algorithms.base import Algorithm
from privbandits.algorithms.registry import import_modules
from privbandits.core.errors import ConfigError, MissingDataError, PrivbanditsError
from privbandits.core.rng import make_streams
from privbandits.core.validation import check_choice, check_in_range, check_int
from privbandits.engine import ENGINES
from privbandits.experiments.claims import CLAIM_KINDS, Claim
from privbandits.experiments.paper_numbers import REFERENCE_KINDS, PaperNumber, PaperTable
from privbandits.experiments.units import ENV_KINDS, WorkUnit, build_env

__all__ = [
    "CALIBRATION_PRESETS",
    "CONFIG_KINDS",
    "AlgorithmEntry",
    "ExperimentConfig",
    "FigureSpec",
    "Overrides",
    "PlotConfig",
    "ReportConfig",
    "load_config",
    "parse_config",
    "parse_grid_option",
]

CALIBRATION_PRESETS: tuple[str, ...] = ("strict", "paper", "authors_code")

#: What a configuration file describes: a bandit experiment (this module) or a regression study
#: (:mod:`privbandits.experiments.regression_study`).
CONFIG_KINDS: tuple[str, ...] = ("bandit", "regression")
TOP_KEYS = (
    "kind",
    "name",
    "description",
    "import",
    "horizon",
    "replications",
    "seeds",
    "checkpoints",
    "preset",
    "engine",
    "env",
    "grid",
    "algorithms",
    "quick",
    "plot",
    "report",
    "figures",
    "claims",
    "paper_numbers",
    "tables",
)
ALGO_KEYS = ("name", "label", "params", "grid", "preset")
QUICK_KEYS = ("horizon", "replications", "seeds", "checkpoints")
CHECKPOINT_KEYS = ("log", "every")
PLOT_KEYS = ("facet", "band", "logx", "logy", "dpi")
REPORT_KEYS = ("title", "source", "claimed_order", "claims", "notes", "level", "slopes")
FIGURE_KINDS = ("regret_vs_t", "final_vs_param")
FIGURE_KEYS = {
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
CLAIM_KEYS = {
    "order": ("kind", "items", "where", "text"),
    "tiers": ("kind", "items", "above", "where", "text"),
    "within": ("kind", "items", "percent", "where", "text"),
    "monotone": ("kind", "items", "param", "direction", "where", "text"),
    "stable": ("kind", "items", "param", "percent", "where", "text"),
    "slope": ("kind", "items", "exponent", "tolerance", "direction", "where", "text"),
}
PAPER_NUMBER_KEYS = ("algorithm", "where", "metric", "value", "source", "kind", "horizon")
TABLE_KEYS = ("title", "metric", "columns", "rows")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_GOT_RE = re.compile(r", got [^,]*$")


class MissingConfigDataError(ConfigError, MissingDataError):
    """The configuration is valid but its environment's data set is not where it says."""


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

    facet: str | None = None
    band: float | str = "ci95"
    logx: bool = False
    logy: bool = False
    dpi: int = 150


@dataclass(frozen=True)
class FigureSpec:
    """One ``[[figures]]`` entry (see the module docstring)."""

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
    level: float = 0.05
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
    #: What the command-line overrides changed (:meth:`Overrides.tag`): the run's own output directory.
    run_tag: str = ""

    @property
    def reduced(self) -> bool:
        """A quick run or one at another horizon than the file declares."""
        return self.quick or (
            self.declared_horizon is not None and self.horizon != self.declared_horizon
        )

    def env_variants(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """``(environment, its grid values)`` for every combination of ``[env] grid`` (one without it)."""
        return env_variants(self.env, self.env_grid)

    def units(self) -> list[WorkUnit]:
        """All work units: algorithm entries x variants x environment variants x seeds, in a
        deterministic order."""
        return [
            WorkUnit(
                experiment=self.name,
                label=entry.label,
                algorithm=entry.name,
                params=params,
                grid={**env_values, **grid},
                env=env,
                seed=seed,
                horizon=self.horizon,
                replications=self.replications,
                checkpoints=dict(self.checkpoints),
                engine=self.engine,
                imports=self.imports,
            )
            for entry in self.algorithms
            for params, grid in entry.variants
            for env, env_values in self.env_variants()
            for seed in self.seeds
        ]

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(e.label for e in self.algorithms)


@dataclass(frozen=True)
class Overrides:
    """Command-line overrides, applied to the raw TOML before validation."""

    quick: bool = False
    horizon: int | None = None
    replications: int | None = None
    seeds: Sequence[int] | None = None
    preset: str | None = None
    grid: Mapping[str, list[Any]] | None = None
    engine: str | None = None
    data: str | None = None
    imports: Sequence[str] = ()

    def tag(self) -> str:
        """A directory-safe name of what these overrides change (``""`` when nothing), so that a
        sweep or a reduced run writes its report beside, never over, the plain run's."""
        parts = [f"{k}={','.join(map(str, v))}" for k, v in sorted((self.grid or {}).items())]
        parts += [
            p
            for p, on in (
                ("quick", self.quick),
                (f"T={self.horizon}", self.horizon is not None),
                (f"R={self.replications}", self.replications is not None),
                (f"seed={','.join(map(str, self.seeds or ()))}", self.seeds is not None),
                (f"preset={self.preset}", self.preset is not None),
                (f"engine={self.engine}", self.engine is not None),
            )
            if on
        ]
        return re.sub(r"[^A-Za-z0-9=,._+-]", "_", "_".join(parts))

    def check(self) -> None:
        """Validate the command-line values themselves, so that an error names the option, not the file."""
        checks: list[tuple[str, Any, Callable[[Any], Any]]] = [
            ("--horizon", self.horizon, lambda v: check_int("horizon", v, 1)),
            ("--replications", self.replications, lambda v: check_int("replications", v, 1)),
            ("--preset", self.preset, _check_preset),
            ("--engine", self.engine, lambda v: check_choice("engine", v, ENGINES)),
        ]
        checks += [("--seed", s, lambda v: check_int("seed", v, 0)) for s in (self.seeds or ())]
        for option, value, fn in checks:
            if value is None:
                continue
            try:
                fn(value)
            except PrivbanditsError as exc:
                raise ConfigError(
                    f"command line: {option} {_show(value)}: {_GOT_RE.sub('', str(exc))}"
                ) from None

    def apply(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The raw configuration with these overrides applied (``--grid KEY`` replaces every value of KEY:
        the top-level grid's, each entry's ``grid`` and ``params``)."""
        self.check()
        out = dict(raw)
        if self.quick:
            quick = out.get("quick", {})
            if isinstance(quick, dict):
                out.update(quick)
        for key, value in (("horizon", self.horizon), ("replications", self.replications)):
            if value is not None:
                out[key] = value
        if self.seeds is not None:
            out["seeds"] = list(self.seeds)
        if self.engine is not None:
            out["engine"] = self.engine
        if self.data is not None:
            out["env"] = _with_data(out.get("env", {}), self.data)
        if self.preset is not None:
            out["preset"] = self.preset
            out["algorithms"] = [
                {k: v for k, v in a.items() if k != "preset"} if isinstance(a, dict) else a
                for a in out.get("algorithms", [])
            ]
        if self.grid:
            grid = dict(out.get("grid", {})) if isinstance(out.get("grid", {}), dict) else {}
            grid.update(self.grid)
            out["grid"] = grid
            if isinstance(out.get("algorithms"), list):
                out["algorithms"] = [_without_keys(a, self.grid) for a in out["algorithms"]]
        return out


def _with_data(env: Any, data: str) -> dict[str, Any]:
    """``[env]`` reading its data from ``data`` (``--data PATH``): sets the environment's ``path``."""
    env = dict(env) if isinstance(env, dict) else {}
    kind = env.get("kind", "synthetic")
    cls = ENV_KINDS.get(kind)
    if cls is None or "path" not in inspect.signature(cls).parameters:
        readers = sorted(
            k for k, c in ENV_KINDS.items() if "path" in inspect.signature(c).parameters
        )
        raise ConfigError(
            f"command line: --data {data!r}: the environment kind {kind!r} reads no data file "
            f"(--data applies to the kinds {', '.join(readers)})"
        )
    env["path"] = str(data)
    return env


def _without_keys(entry: Any, keys: Mapping[str, Any]) -> Any:
    """An ``[[algorithms]]`` entry with ``keys`` removed from its ``params`` and ``grid`` tables."""
    if not isinstance(entry, dict):
        return entry
    out = dict(entry)
    for section in ("params", "grid"):
        table = out.get(section)
        if isinstance(table, dict) and any(k in table for k in keys):
            out[section] = {k: v for k, v in table.items() if k not in keys}
    return out


# ------------------------------------------------------------------------------------------
# entry points
# ------------------------------------------------------------------------------------------
def load_config(path: str | Path, overrides: Overrides | None = None) -> ExperimentConfig:
    """Read and validate a TOML experiment file (see the module docstring for the schema)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {str(p)!r} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {str(p)!r}: {exc.strerror}") from None
    return parse_config(text, source=p.name, default_name=p.stem, overrides=overrides)


def parse_config(
    text: str | Mapping[str, Any],
    source: str = "<config>",
    default_name: str = "experiment",
    overrides: Overrides | None = None,
) -> ExperimentConfig:
    """Validate a configuration given as TOML text or as an already parsed mapping."""
    if isinstance(text, str):
        try:
            raw: dict[str, Any] = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{source}: invalid TOML: {exc}") from None
    else:
        raw = dict(text)
    declared = raw.get("horizon")
    imports = _imports(
        source, raw.get("import", []), overrides.imports if overrides is not None else ()
    )
    if overrides is not None:
        raw = overrides.apply(raw)
    cfg = _Validator(source).config(
        raw, default_name, declared_horizon=declared if isinstance(declared, int) else None
    )
    if overrides is not None and overrides.quick:
        cfg = dataclasses.replace(cfg, quick=True)
    if imports:
        cfg = dataclasses.replace(cfg, imports=imports)
    if overrides is not None and overrides.tag():
        cfg = dataclasses.replace(cfg, run_tag=overrides.tag())
    return cfg


def _imports(source: str, listed: Any, extra: Sequence[str]) -> tuple[str, ...]:
    """Import the experiment's ``import = [...]`` modules and the ``--import`` ones (before the
    algorithm names are checked); returns them for the work units."""
    if isinstance(listed, str) or not isinstance(listed, list):
        raise ConfigError(
            f"{source}: import = {listed!r}: must be a list of module names, e.g. "
            'import = ["mypkg.algorithms"]'
        )
    mods = tuple(dict.fromkeys([*listed, *extra]))
    try:
        import_modules(mods)
    except PrivbanditsError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    return mods


def parse_grid_option(items: Sequence[str]) -> dict[str, list[Any]]:
    """Parse ``--grid key=v1,v2,...`` options; values are read as TOML (numbers, strings, booleans)."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, sep, rhs = item.partition("=")
        key = key.strip()
        if not sep or not key or not rhs.strip():
            raise ConfigError(
                f"--grid {item!r}: expected KEY=V1,V2,... (for example epsilon=0.5,1,2)"
            )
        values = []
        for tok in rhs.split(","):
            tok = tok.strip()
            try:
                values.append(tomllib.loads(f"v = {tok}")["v"])
            except tomllib.TOMLDecodeError:
                values.append(tok)
        grid[key] = values
    return grid


# ------------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------------
def _show(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value)


def _accepted(cls: type[Algorithm]) -> tuple[set[str], bool]:
    """Named constructor parameters of ``cls`` and whether it also takes arbitrary keywords."""
    if cls.__init__ is Algorithm.__init__:
        return set(), False
    sig = inspect.signature(cls.__init__)
    named = {
        n
        for n, p in sig.parameters.items()
        if n != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    return named, any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())


def _privacy_kind(key: str) -> str | None:
    for kind in ("epsilon", "delta"):
        if key == kind or key.endswith("_" + kind):
            return kind
    return None


class _Validator:
    def __init__(self, source: str) -> None:
        self.source = source

    # -- error helpers ----------------------------------------------------------------------
    def fail(self, path: str, value: Any, reason: str) -> ConfigError:
        return ConfigError(f"{self.source}: {path} = {_show(value)}: {reason}")

    def check(self, path: str, value: Any, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except PrivbanditsError as exc:
            raise self.fail(path, value, _GOT_RE.sub("", str(exc))) from None

    def keys(
        self, table: Any, allowed: Sequence[str], where: str, what: str = "key"
    ) -> dict[str, Any]:
        if not isinstance(table, dict):
            raise self.fail(where, table, "must be a table")
        for key in table:
            if key not in allowed:
                raise ConfigError(
                    f"{self.source}: unknown {what} '{key}' in {where}{_suggest(key, allowed)}; "
                    f"allowed: {', '.join(sorted(allowed)) or '(none)'}"
                )
        return table

    def string(self, path: str, value: Any, pattern: re.Pattern[str] | None = None) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(path, value, "must be a non-empty string")
        if pattern is not None and not pattern.match(value):
            raise self.fail(path, value, "may contain only letters, digits, '_', '.' and '-'")
        return value

    def boolean(self, path: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, value, "must be true or false")
        return value

    def privacy(self, path: str, key: str, value: Any) -> None:
        kind = _privacy_kind(key)
        if kind == "epsilon":
            self.check(
                path, value, lambda: check_in_range(key, value, 0.0, None, low_inclusive=False)
            )
        elif kind == "delta":
            self.check(
                path,
                value,
                lambda: check_in_range(
                    key, value, 0.0, 1.0, low_inclusive=False, high_inclusive=False
                ),
            )

    def grid(self, path: str, table: Any) -> dict[str, list[Any]]:
        if not isinstance(table, dict):
            raise self.fail(path, table, "must be a table of lists, e.g. { epsilon = [1.0, 5.0] }")
        out = {}
        for key, values in table.items():
            kp = f"{path}.{key}"
            if not isinstance(values, list) or not values:
                raise self.fail(kp, values, "must be a non-empty list of values")
            for i, v in enumerate(values):
                if isinstance(v, (dict, list)):
                    raise self.fail(
                        f"{kp}[{i}]", v, "grid values must be numbers, strings or booleans"
                    )
                self.privacy(f"{kp}[{i}]", key, v)
            if len({repr(v) for v in values}) != len(values):
                raise self.fail(kp, values, "contains duplicate values")
            out[key] = values
        return out

    # -- sections ---------------------------------------------------------------------------
    def checkpoints(self, value: Any) -> dict[str, Any]:
        if isinstance(value, dict):
            self.keys(value, CHECKPOINT_KEYS, "checkpoints")
            log = self.check(
                "checkpoints.log",
                value.get("log", 50),
                lambda: check_int("log", value.get("log", 50), 0, 10_000),
            )
            every = value.get("every")
            if every is not None:
                every = self.check("checkpoints.every", every, lambda: check_int("every", every, 1))
            return {"log": log, "every": every}
        log = self.check("checkpoints", value, lambda: check_int("checkpoints", value, 0, 10_000))
        return {"log": log, "every": None}

    def env(self, table: Any) -> dict[str, Any]:
        if not isinstance(table, dict):
            raise self.fail("env", table, "must be a table")
        table = dict(table)
        kind = table.get("kind", "synthetic")
        if kind not in ENV_KINDS:
            raise self.fail(
                "env.kind",
                kind,
                f"unknown environment kind{_suggest(kind, ENV_KINDS)}; "
                f"allowed: {', '.join(ENV_KINDS)}",
            )
        self.keys(table, ("kind", "grid", *_env_args(ENV_KINDS[kind])), f'[env] (kind = "{kind}")')
        gridded = table.get("grid", {}) if isinstance(table.get("grid", {}), dict) else {}
        missing = [
            k
            for k in _env_args(ENV_KINDS[kind], required=True)
            if k not in table and k not in gridded
        ]
        if missing:
            raise ConfigError(
                f'{self.source}: [env] (kind = "{kind}") needs '
                f"{' and '.join(repr(k) for k in missing)}, e.g. [env] with d = 5 and K = 10"
            )
        for key, value in table.items():
            if key != "grid":
                self.privacy(f"env.{key}", key, value)
        table["kind"] = kind
        return table

    def env_grid(self, env: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
        """Pop and check ``[env] grid``: constructor arguments of the environment with lists of values."""
        grid = env.pop("grid", {})
        if not isinstance(grid, dict):
            raise self.fail(
                "env.grid",
                grid,
                "must be a table of lists, e.g. grid = { theta_norm = [2.0, 3.0] }",
            )
        out: dict[str, tuple[Any, ...]] = {}
        args = _env_args(ENV_KINDS[env["kind"]])
        for key, values in grid.items():
            if key not in args:
                raise self.fail(
                    f"env.grid.{key}",
                    values,
                    f"not an argument of the environment kind {env['kind']!r}{_suggest(key, args)}",
                )
            if key in env:
                raise self.fail(
                    f"env.grid.{key}", values, f"'{key}' is also set in [env]; give it in one place"
                )
            if not isinstance(values, list) or not values:
                raise self.fail(f"env.grid.{key}", values, "must be a non-empty list of values")
            if len({repr(v) for v in values}) != len(values):
                raise self.fail(f"env.grid.{key}", values, "contains duplicate values")
            for v in values:
                self.privacy(f"env.grid.{key}", key, v)
            out[key] = tuple(values)
        return out

    def algorithm(
        self,
        i: int,
        entry: Any,
        global_grid: dict[str, list[Any]],
        preset: str | None,
        env: dict[str, Any],
        horizon: int,
    ) -> AlgorithmEntry:
        where = f"algorithms[{i}]"
        self.keys(entry, ALGO_KEYS, where)
        if "name" not in entry:
            raise ConfigError(
                f"{self.source}: {where} needs a 'name' (one of {', '.join(available())})"
            )
        name = entry["name"]
        registry = available()
        if name not in registry:
            raise self.fail(
                f"{where}.name",
                name,
                f"unknown algorithm{_suggest(name, registry)}; available: {', '.join(registry)}",
            )
        cls = registry[name]
        named, var_kw = _accepted(cls)
        allowed = sorted(named - {"preset"})
        label = self.string(f"{where}.label", entry.get("label", name))
        params = entry.get("params", {})
        if not isinstance(params, dict):
            raise self.fail(f"{where}.params", params, "must be a table")
        if "preset" in params:
            raise ConfigError(
                f"{self.source}: {where}.params.preset: set the calibration preset with "
                f"{where}.preset (or the top-level preset)"
            )
        if not var_kw:
            self.keys(params, allowed, f"{where}.params (algorithm '{name}')", "parameter")
        for key, value in params.items():
            self.privacy(f"{where}.params.{key}", key, value)
        own_grid = self.grid(f"{where}.grid", entry.get("grid", {}))
        if not var_kw:
            self.keys(own_grid, allowed, f"{where}.grid (algorithm '{name}')", "parameter")
        for key in own_grid:
            if key in params:
                raise ConfigError(
                    f"{self.source}: {where}: '{key}' is set both in params and in grid"
                )
        grid = {
            k: v
            for k, v in global_grid.items()
            if k in named and k not in params and k not in own_grid
        }
        grid.update(own_grid)
        own_preset = entry.get("preset")
        if own_preset is not None:
            self.check(f"{where}.preset", own_preset, lambda: _check_preset(own_preset))
            if "preset" not in named:
                raise self.fail(
                    f"{where}.preset",
                    own_preset,
                    f"algorithm '{name}' has no calibration presets (it takes no 'preset' argument)",
                )
        eff_preset = own_preset if own_preset is not None else preset
        variants = []
        for combo in itertools.product(*grid.values()):
            values = dict(zip(grid, combo))
            full = {**params, **values}
            if eff_preset is not None and "preset" in named:
                full["preset"] = eff_preset
            self.instantiate(where, name, full, params, own_grid, env, horizon)
            variants.append((full, values))
        return AlgorithmEntry(name=name, label=label, variants=tuple(variants))

    def instantiate(
        self,
        where: str,
        name: str,
        full: dict[str, Any],
        params: dict[str, Any],
        own_grid: dict[str, Any],
        env: dict[str, Any],
        horizon: int,
    ) -> None:
        """Construct the variant and reset it on the environment's public spec (R = 1)."""
        from privbandits.algorithms import make

        try:
            alg = make(name, **full)
            env_obj = build_env(env)
            spec = env_obj.reset(1, make_streams(0), horizon)
            alg.reset(spec, 1, make_streams(0))
        except PrivbanditsError as exc:
            msg = str(exc)
            key = msg.split(" ", 1)[0]
            if key in params:
                raise self.fail(
                    f"{where}.params.{key}", params[key], _GOT_RE.sub("", msg)
                ) from None
            if key in own_grid:
                raise self.fail(f"{where}.grid.{key}", full[key], _GOT_RE.sub("", msg)) from None
            shown = ", ".join(f"{k}={_show(v)}" for k, v in full.items())
            raise ConfigError(f"{self.source}: {where} ({name}({shown})): {msg}") from None

    def plot(self, table: Any) -> PlotConfig:
        self.keys(table, PLOT_KEYS, "[plot]")
        facet = table.get("facet")
        if facet is not None:
            self.string("plot.facet", facet)
        band = self.band("plot.band", table.get("band", "ci95"))
        dpi = table.get("dpi", 150)
        dpi = self.check("plot.dpi", dpi, lambda: check_int("dpi", dpi, 20, 1200))
        return PlotConfig(
            facet=facet,
            band=band,
            logx=self.boolean("plot.logx", table.get("logx", False)),
            logy=self.boolean("plot.logy", table.get("logy", False)),
            dpi=dpi,
        )

    def report(self, table: Any, algorithms: Sequence[AlgorithmEntry]) -> ReportConfig:
        self.keys(table, REPORT_KEYS, "[report]")
        order = table.get("claimed_order", [])
        if not isinstance(order, list):
            raise self.fail("report.claimed_order", order, "must be a list of algorithm labels")
        known = {e.label for e in algorithms} | {e.name for e in algorithms}
        for j, item in enumerate(order):
            if item not in known:
                raise self.fail(
                    f"report.claimed_order[{j}]",
                    item,
                    f"not a label or name of any [[algorithms]] entry{_suggest(item, known)}",
                )
        texts = {}
        for key in ("title", "source", "claims", "notes"):
            value = table.get(key, "")
            if not isinstance(value, str):
                raise self.fail(f"report.{key}", value, "must be a string")
            texts[key] = value
        level = table.get("level", 0.05)
        level = self.check(
            "report.level",
            level,
            lambda: check_in_range(
                "level", level, 0.0, 0.5, low_inclusive=False, high_inclusive=False
            ),
        )
        slopes = table.get("slopes", {})
        if not isinstance(slopes, dict):
            raise self.fail(
                "report.slopes", slopes, "must be a table of algorithm label = exponent"
            )
        for key, value in slopes.items():
            if key not in known:
                raise self.fail(
                    f"report.slopes.{key}",
                    key,
                    f"not a label or name of any [[algorithms]] entry{_suggest(key, known)}",
                )
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0 <= value <= 1
            ):
                raise self.fail(f"report.slopes.{key}", value, "must be a number in [0, 1]")
        return ReportConfig(
            claimed_order=tuple(order),
            level=level,
            slopes={k: float(v) for k, v in slopes.items()},
            **texts,
        )

    def band(self, path: str, value: Any) -> float | str:
        if isinstance(value, str):
            return self.check(
                path, value, functools.partial(check_choice, "band", value, ("se", "ci95"))
            )
        return self.check(path, value, functools.partial(check_in_range, "band", value, 0.0, None))

    def labels(
        self, path: str, value: Any, known: set[str], *, min_len: int = 1
    ) -> tuple[str, ...]:
        if (
            not isinstance(value, list)
            or len(value) < min_len
            or not all(isinstance(v, str) for v in value)
        ):
            raise self.fail(path, value, f"must be a list of at least {min_len} algorithm label(s)")
        for j, item in enumerate(value):
            if item not in known:
                raise self.fail(
                    f"{path}[{j}]",
                    item,
                    f"not a label or name of any [[algorithms]] entry{_suggest(item, known)}",
                )
        return tuple(value)

    def where(self, path: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, value, "must be a table of values, e.g. { epsilon = 1.0 }")
        for key, v in value.items():
            if isinstance(v, (dict, list)):
                raise self.fail(f"{path}.{key}", v, "must be a number, string or boolean")
        return dict(value)

    def entries(self, raw: dict[str, Any], key: str) -> list[dict[str, Any]]:
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.fail(
                key, value, f"must be an array of tables: write each entry as [[{key}]]"
            )
        return value

    def figures(self, raw: dict[str, Any], known: set[str]) -> tuple[FigureSpec, ...]:
        out = []
        for i, entry in enumerate(self.entries(raw, "figures")):
            where = f"figures[{i}]"
            kind = entry.get("kind", "regret_vs_t")
            if kind not in FIGURE_KINDS:
                raise self.fail(
                    f"{where}.kind",
                    kind,
                    f"unknown figure kind{_suggest(kind, FIGURE_KINDS)}; "
                    f"allowed: {', '.join(FIGURE_KINDS)}",
                )
            self.keys(entry, FIGURE_KEYS[kind], f'{where} (kind = "{kind}")')
            name = self.string(
                f"{where}.name",
                entry.get("name", "regret" if kind == "regret_vs_t" else "final-regret"),
                _NAME_RE,
            )
            title = entry.get("title", "")
            if not isinstance(title, str):
                raise self.fail(f"{where}.title", title, "must be a string")
            common = {
                "kind": kind,
                "name": name,
                "title": title,
                "logx": self.boolean(f"{where}.logx", entry.get("logx", False)),
                "logy": self.boolean(f"{where}.logy", entry.get("logy", False)),
            }
            if kind == "regret_vs_t":
                facet = entry.get("facet")
                if facet is not None:
                    self.string(f"{where}.facet", facet)
                band = self.band(f"{where}.band", entry.get("band", "ci95"))
                out.append(FigureSpec(facet=facet, band=band, **common))
                continue
            if "x" not in entry:
                raise ConfigError(
                    f"{self.source}: {where} (final_vs_param) needs 'x', the parameter on the x axis"
                )
            errorbars = entry.get("errorbars", "se")
            self.check(
                f"{where}.errorbars",
                errorbars,
                functools.partial(check_choice, "errorbars", errorbars, ("se", "ci95")),
            )
            out.append(
                FigureSpec(
                    x=self.string(f"{where}.x", entry["x"]),
                    series=self.labels(f"{where}.series", entry["series"], known)
                    if "series" in entry
                    else (),
                    baselines=self.labels(
                        f"{where}.baselines", entry.get("baselines", []), known, min_len=0
                    ),
                    errorbars=errorbars,
                    **common,
                )
            )
        names = [f.name for f in out]
        if len(set(names)) != len(names):
            raise self.fail("figures", names, "figure names must be distinct (they are file names)")
        return tuple(out)

    def claims(
        self, raw: dict[str, Any], known: set[str], order: tuple[str, ...]
    ) -> tuple[Claim, ...]:
        out = [Claim(kind="order", items=order)] if len(order) >= 2 else []
        for i, entry in enumerate(self.entries(raw, "claims")):
            where = f"claims[{i}]"
            kind = entry.get("kind")
            if kind not in CLAIM_KINDS:
                raise self.fail(
                    f"{where}.kind",
                    kind,
                    f"unknown claim kind{_suggest(kind, CLAIM_KINDS)}; "
                    f"allowed: {', '.join(CLAIM_KINDS)}",
                )
            self.keys(entry, CLAIM_KEYS[kind], f'{where} (kind = "{kind}")')
            need = {"order": 2, "tiers": 1, "within": 2, "monotone": 1, "stable": 1, "slope": 1}[
                kind
            ]
            if "items" not in entry:
                raise ConfigError(f"{self.source}: {where} needs 'items' (algorithm labels)")
            items = self.labels(f"{where}.items", entry["items"], known, min_len=need)
            if kind in ("within", "monotone", "stable", "slope") and len(items) != need:
                raise self.fail(
                    f"{where}.items", list(items), f"a '{kind}' claim takes exactly {need} label(s)"
                )
            text = entry.get("text", "")
            if not isinstance(text, str):
                raise self.fail(f"{where}.text", text, "must be a string")
            extra: dict[str, Any] = {}
            if kind == "tiers":
                if "above" not in entry:
                    raise ConfigError(
                        f"{self.source}: {where} (tiers) needs 'above', the labels of the upper tier"
                    )
                extra["above"] = self.labels(f"{where}.above", entry["above"], known)
            if kind in ("within", "stable"):
                pct = entry.get("percent")
                extra["percent"] = self.check(
                    f"{where}.percent",
                    pct,
                    lambda: check_in_range("percent", pct, 0.0, None, low_inclusive=False),
                )
            if kind in ("monotone", "stable"):
                extra["param"] = self.string(f"{where}.param", entry.get("param"))
            if kind == "monotone":
                direction = entry.get("direction", "decreasing")
                extra["direction"] = self.check(
                    f"{where}.direction",
                    direction,
                    lambda: check_choice("direction", direction, ("decreasing", "increasing")),
                )
            if kind == "slope":
                for key in ("exponent", "tolerance"):
                    if key not in entry:
                        raise ConfigError(f"{self.source}: {where} (slope) needs '{key}'")
                exp_, tol = entry["exponent"], entry["tolerance"]
                extra["exponent"] = self.check(
                    f"{where}.exponent", exp_, lambda: check_in_range("exponent", exp_, 0.0, 1.0)
                )
                extra["tolerance"] = self.check(
                    f"{where}.tolerance", tol, lambda: check_in_range("tolerance", tol, 0.0, 1.0)
                )
                direction = entry.get("direction", "near")
                extra["direction"] = self.check(
                    f"{where}.direction",
                    direction,
                    lambda: check_choice("direction", direction, ("near", "at_most")),
                )
            out.append(
                Claim(
                    kind=kind,
                    items=items,
                    where=self.where(f"{where}.where", entry.get("where", {})),
                    text=text,
                    **extra,
                )
            )
        return tuple(out)

    def paper_numbers(
        self, raw: dict[str, Any], known: set[str], declared_horizon: int | None = None
    ) -> tuple[PaperNumber, ...]:
        out = []
        for i, entry in enumerate(self.entries(raw, "paper_numbers")):
            where = f"paper_numbers[{i}]"
            self.keys(entry, PAPER_NUMBER_KEYS, where)
            for key in ("algorithm", "value"):
                if key not in entry:
                    raise ConfigError(f"{self.source}: {where} needs '{key}'")
            alg = entry["algorithm"]
            if alg not in known:
                raise self.fail(
                    f"{where}.algorithm",
                    alg,
                    f"not a label or name of any [[algorithms]] entry{_suggest(alg, known)}",
                )
            value = entry["value"]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self.fail(f"{where}.value", value, "must be a number")
            metric = self.string(f"{where}.metric", entry.get("metric", "final_regret"))
            source = entry.get("source", "")
            if not isinstance(source, str):
                raise self.fail(f"{where}.source", source, "must be a string")
            if "kind" not in entry:
                raise ConfigError(
                    f"{self.source}: {where} needs 'kind', who reported the number: one of "
                    f"{', '.join(repr(k) for k in REFERENCE_KINDS)}"
                )
            kind = entry["kind"]
            self.check(f"{where}.kind", kind, lambda: check_choice("kind", kind, REFERENCE_KINDS))
            ref_t = entry.get("horizon", declared_horizon)
            if ref_t is not None:
                ref_t = self.check(
                    f"{where}.horizon", ref_t, lambda: check_int("horizon", ref_t, 1)
                )
            out.append(
                PaperNumber(
                    algorithm=alg,
                    metric=metric,
                    value=float(value),
                    where=self.where(f"{where}.where", entry.get("where", {})),
                    source=source,
                    kind=kind,
                    horizon=ref_t,
                )
            )
        return tuple(out)

    def tables(self, raw: dict[str, Any], known: set[str]) -> tuple[PaperTable, ...]:
        out = []
        for i, entry in enumerate(self.entries(raw, "tables")):
            where = f"tables[{i}]"
            self.keys(entry, TABLE_KEYS, where)
            title = entry.get("title", "")
            if not isinstance(title, str):
                raise self.fail(f"{where}.title", title, "must be a string")
            columns = entry.get("columns")
            if columns is not None:
                self.string(f"{where}.columns", columns)
            rows = self.labels(f"{where}.rows", entry["rows"], known) if "rows" in entry else ()
            out.append(
                PaperTable(
                    title=title,
                    metric=self.string(f"{where}.metric", entry.get("metric", "final_regret")),
                    columns=columns,
                    rows=rows,
                )
            )
        return tuple(out)

    # -- whole file -------------------------------------------------------------------------
    def config(
        self, raw: dict[str, Any], default_name: str, declared_horizon: int | None = None
    ) -> ExperimentConfig:
        kind = raw.get("kind", "bandit")
        self.check("kind", kind, lambda: check_choice("kind", kind, CONFIG_KINDS))
        if kind != "bandit":
            raise self.fail(
                "kind",
                kind,
                "a regression study is not a bandit experiment: run it with "
                "`privbandits reproduce NAME` (privbandits.experiments.load_reproduction)",
            )
        self.keys(raw, TOP_KEYS, "the top level")
        name = self.string("name", raw.get("name", default_name), _NAME_RE)
        description = raw.get("description", "")
        if not isinstance(description, str):
            raise self.fail("description", description, "must be a string")
        if "horizon" not in raw:
            raise ConfigError(
                f"{self.source}: missing required key 'horizon' (number of rounds T >= 1)"
            )
        horizon = self.check(
            "horizon", raw["horizon"], lambda: check_int("horizon", raw["horizon"], 1)
        )
        reps = raw.get("replications", 10)
        replications = self.check("replications", reps, lambda: check_int("replications", reps, 1))
        seeds = raw.get("seeds", [0])
        if not isinstance(seeds, list) or not seeds:
            raise self.fail(
                "seeds", seeds, "must be a non-empty list of integers >= 0, e.g. [0, 1, 2]"
            )
        seeds = [
            self.check(f"seeds[{j}]", s, lambda s=s: check_int("seed", s, 0))
            for j, s in enumerate(seeds)
        ]  # type: ignore[misc]
        if len(set(seeds)) != len(seeds):
            raise self.fail("seeds", seeds, "contains duplicate seeds")
        checkpoints = self.checkpoints(raw.get("checkpoints", 50))
        preset = raw.get("preset")
        if preset is not None:
            self.check("preset", preset, lambda: _check_preset(preset))
        engine = raw.get("engine", "auto")
        self.check("engine", engine, lambda: check_choice("engine", engine, ENGINES))
        quick = self.keys(raw.get("quick", {}), QUICK_KEYS, "[quick]")
        if quick:  # validate the quick overrides even when they are not applied
            probe = {
                k: v for k, v in raw.items() if k not in ("env", "algorithms", "grid", "quick")
            }
            probe.update(quick)
            _Validator(f"{self.source} [quick]").scalars(probe)
        env = self.env(raw.get("env", {}))
        env_grid = self.env_grid(env)
        variants = env_variants(env, env_grid)
        for variant, _ in variants:
            try:
                env_obj = build_env(variant)
                env_obj.reset(1, make_streams(0), 1)
                env_obj.next_round()
            except MissingDataError as exc:
                raise MissingConfigDataError(f"{self.source}: env: {exc}") from None
            except PrivbanditsError as exc:
                msg = str(exc)
                key = msg.split(" ", 1)[0]
                path = (
                    f"env.grid.{key}" if key in env_grid else f"env.{key}" if key in env else "env"
                )
                raise self.fail(path, variant.get(key, variant), _GOT_RE.sub("", msg)) from None
        global_grid = self.grid("grid", raw.get("grid", {}))
        entries = raw.get("algorithms")
        if isinstance(entries, dict):
            raise ConfigError(
                f"{self.source}: 'algorithms' is a single table ([algorithms]); write each "
                f"algorithm as an entry of the array of tables [[algorithms]] (double brackets), "
                f'e.g. [[algorithms]] then name = "linucb" on the next line'
            )
        if not isinstance(entries, list) or not entries:
            raise ConfigError(
                f"{self.source}: at least one [[algorithms]] entry is required "
                f"(available: {', '.join(available())})"
            )
        probe_env = variants[0][0]  # algorithms are checked on the first environment variant
        algorithms = [
            self.algorithm(i, e, global_grid, preset, probe_env, horizon)
            for i, e in enumerate(entries)
        ]
        seen: dict[str, int] = {}
        for i, entry in enumerate(algorithms):
            if entry.label in seen:
                raise self.fail(
                    f"algorithms[{i}].label",
                    entry.label,
                    f"already used by algorithms[{seen[entry.label]}]; give each entry a distinct label",
                )
            seen[entry.label] = i
        for key in global_grid:
            if not any(key in _accepted(available()[e.name])[0] for e in algorithms):
                raise self.fail(
                    f"grid.{key}",
                    global_grid[key],
                    f"no algorithm of this experiment accepts '{key}'",
                )
        plot = self.plot(raw.get("plot", {}))
        report = self.report(raw.get("report", {}), algorithms)
        known = {e.label for e in algorithms} | {e.name for e in algorithms}
        return ExperimentConfig(
            name=name,
            description=description,
            horizon=horizon,
            replications=replications,
            seeds=tuple(seeds),
            checkpoints=checkpoints,
            env=env,
            algorithms=tuple(algorithms),
            plot=plot,
            report=report,
            source=self.source,
            raw=raw,
            engine=engine,
            figures=self.figures(raw, known),
            claims=self.claims(raw, known, report.claimed_order),
            paper_numbers=self.paper_numbers(raw, known, declared_horizon or horizon),
            tables=self.tables(raw, known),
            env_grid=env_grid,
            declared_horizon=declared_horizon or horizon,
        )

    def scalars(self, raw: dict[str, Any]) -> None:
        """Check horizon / replications / seeds / checkpoints only (used for ``[quick]``)."""
        for key in ("horizon", "replications"):
            if key in raw:
                self.check(key, raw[key], lambda key=key: check_int(key, raw[key], 1))  # type: ignore[misc]
        seeds = raw.get("seeds", [0])
        if not isinstance(seeds, list) or not seeds:
            raise self.fail("seeds", seeds, "must be a non-empty list of integers >= 0")
        for j, s in enumerate(seeds):
            self.check(f"seeds[{j}]", s, lambda s=s: check_int("seed", s, 0))  # type: ignore[misc]
        self.checkpoints(raw.get("checkpoints", 50))


def _suggest(value: Any, options: Any) -> str:
    close = difflib.get_close_matches(str(value), sorted(options), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _env_args(cls: type, required: bool = False) -> list[str]:
    sig = inspect.signature(cls)
    return [
        n
        for n, p in sig.parameters.items()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and (not required or p.default is p.empty)
    ]


def _check_preset(value: Any) -> str:
    return check_choice("preset", value, CALIBRATION_PRESETS)
