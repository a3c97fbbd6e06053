"""Validation of experiment files against :mod:`privbandits.experiments.schema`.

Every table and key is checked; unknown keys are rejected with the closest allowed one; the allowed
keys, their defaults and constraints come from the schema's declarations.  An error is a
:class:`ConfigKeyError` naming its key path (``algorithms[1].params.delta``) and carrying the path,
the value and the allowed values as data.  Algorithm parameters are validated once, by the
algorithm's own declared constraints when each variant is constructed (and reset on the
environment); the error's :attr:`~privbandits.core.errors.ParameterError.key` maps it back to the
file.  Privacy parameters in grids and ``[env]`` (keys ``epsilon``, ``delta`` and keys ending in
``_epsilon`` / ``_delta``) are checked wherever they appear.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import itertools
import re
import tomllib
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from privbandits.algorithms import available
from privbandits.algorithms.base import Algorithm
from privbandits.algorithms.registry import import_modules
from privbandits.core.errors import (
    ConfigError,
    MissingDataError,
    ParameterError,
    PrivbanditsError,
)
from privbandits.core.params import Choice
from privbandits.core.rng import make_streams
from privbandits.core.validation import check_choice
from privbandits.experiments.claims import Claim
from privbandits.experiments.overrides import Overrides, show_value
from privbandits.experiments.paper_numbers import REFERENCE_KINDS, PaperNumber, PaperTable
from privbandits.experiments.schema import (
    CLAIM_KEYS,
    FIGURE_KEYS,
    HORIZON_PARAM,
    NAME_RE,
    PRIVACY_CONSTRAINTS,
    AlgorithmEntry,
    ExperimentConfig,
    FigureSpec,
    MissingConfigDataError,
    PlotConfig,
    ReportConfig,
    env_variants,
    table_keys,
)
from privbandits.experiments.schema import (
    key as schema_key,
)
from privbandits.experiments.units import ENV_KINDS, build_env

__all__ = ["ConfigKeyError", "load_config", "parse_config"]

_NAME_RE = NAME_RE
_GOT_RE = re.compile(r", got [^,]*$")
_NOT_A_LABEL = "not a label or name of any [[algorithms]] entry"


class ConfigKeyError(ConfigError, ParameterError):
    """A key of an experiment file has a bad value.

    ``key`` is the key path in the file (``algorithms[1].params.delta``), ``value`` the value found
    and ``allowed`` the allowed values in words (``""`` when the reason is not a range).
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (_config_key_error, (str(self), self.key, self.value, self.allowed))


def _config_key_error(message: str, key: str, value: Any, allowed: str) -> ConfigKeyError:
    return ConfigKeyError(message, key=key, value=value, allowed=allowed)


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
    declared_list = _Validator(source).horizons(raw)
    imports = _imports(
        source, raw.get("import", []), overrides.imports if overrides is not None else ()
    )
    if overrides is not None:
        raw = overrides.apply(raw)
    cfg = _Validator(source).config(
        raw,
        default_name,
        declared_horizon=declared if isinstance(declared, int) else None,
        declared_horizons=declared_list,
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
    if not isinstance(listed, list) or not all(isinstance(m, str) and m for m in listed):
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


# ------------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------------
def _accepted(cls: type[Algorithm]) -> tuple[set[str], bool]:
    """Named constructor parameters of ``cls`` (:meth:`Algorithm.param_names`) and whether it also
    takes arbitrary keywords."""
    sig = getattr(cls, "_signature", None)
    var_kw = sig is not None and any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    named = {
        n
        for n in cls.param_names()
        if sig is None
        or sig.parameters[n].kind
        not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    }
    return named, var_kw


def _privacy_kind(key: str) -> str | None:
    for kind in ("epsilon", "delta"):
        if key == kind or key.endswith("_" + kind):
            return kind
    return None


class _Validator:
    def __init__(self, source: str) -> None:
        self.source = source

    # -- error helpers ----------------------------------------------------------------------
    def fail(self, path: str, value: Any, reason: str, allowed: str = "") -> ConfigKeyError:
        return ConfigKeyError(
            f"{self.source}: {path} = {show_value(value)}: {reason}",
            key=path,
            value=value,
            allowed=allowed,
        )

    def check(self, path: str, value: Any, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except ParameterError as exc:
            raise self.fail(path, value, _GOT_RE.sub("", str(exc)), exc.allowed) from None
        except PrivbanditsError as exc:
            raise self.fail(path, value, _GOT_RE.sub("", str(exc))) from None

    def value(
        self, table: str, name: str, mapping: Mapping[str, Any], path: str | None = None
    ) -> Any:
        """``mapping[name]`` (or the schema's default) checked with the declared constraint of
        ``table.name``; ``path`` is the key path errors name (default: ``table.name``)."""
        decl = schema_key(table, name)
        path = path or decl.path
        if name not in mapping:
            if decl.required:
                raise ConfigError(f"{self.source}: {path} is required")
            return decl.default
        v = mapping[name]
        if v is None:
            return None
        try:
            return decl.constraint.check(name, v)
        except ParameterError as exc:
            reason = _GOT_RE.sub("", str(exc))
            if isinstance(decl.constraint, Choice):
                reason += _suggest(v, decl.constraint.options)
            raise self.fail(path, v, reason, exc.allowed) from None

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

    def string(self, path: str, value: Any, pattern: Any = None) -> str:
        """A non-empty string (matching ``pattern`` if given); used by the regression studies."""
        if not isinstance(value, str) or not value:
            raise self.fail(path, value, "must be a non-empty string")
        if pattern is not None and not pattern.match(value):
            raise self.fail(path, value, "may contain only letters, digits, '_', '.' and '-'")
        return value

    def member(
        self,
        path: str,
        value: Any,
        name: Any,
        options: Collection[Any],
        reason: str,
        listing: str = "",
    ) -> None:
        """Fail at ``path`` (showing ``value``) unless ``name`` is one of ``options``: ``reason``, a
        close match if there is one, then ``listing``."""
        if name not in options:
            raise self.fail(path, value, f"{reason}{_suggest(name, options)}{listing}")

    def distinct(
        self,
        path: str,
        values: Any,
        check: Callable[[Any], Any],
        need: str = "values",
        what: str = "values",
    ) -> list[Any]:
        """A non-empty list of ``need`` without repeats, each item replaced by ``check(item)``
        (errors name ``path[j]``); used for ``horizons``, ``seeds`` and the regression studies."""
        if not isinstance(values, list) or not values:
            raise self.fail(path, values, f"must be a non-empty list of {need}")
        out = [
            self.check(f"{path}[{j}]", item, functools.partial(check, item))
            for j, item in enumerate(values)
        ]
        if len(set(out)) != len(out):
            raise self.fail(path, values, f"contains duplicate {what}")
        return out

    def privacy(self, path: str, name: str, value: Any) -> None:
        kind = _privacy_kind(name)
        if kind is not None:
            rule = PRIVACY_CONSTRAINTS[kind]
            self.check(path, value, lambda: rule.check(name, value))

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
            self.keys(value, table_keys("checkpoints"), "checkpoints")
            return {
                "log": self.value("checkpoints", "log", value),
                "every": self.value("checkpoints", "every", value),
            }
        log = self.value("", "checkpoints", {"checkpoints": value})
        return {"log": log, "every": None}

    def env(self, table: Any) -> dict[str, Any]:
        if not isinstance(table, dict):
            raise self.fail("env", table, "must be a table")
        table = dict(table)
        kind = table.get("kind", "synthetic")
        self.member(
            "env.kind",
            kind,
            kind,
            ENV_KINDS,
            "unknown environment kind",
            f"; allowed: {', '.join(ENV_KINDS)}",
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
            self.member(
                f"env.grid.{key}",
                values,
                key,
                args,
                f"not an argument of the environment kind {env['kind']!r}",
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
        self.keys(entry, table_keys("algorithms"), where)
        if "name" not in entry:
            raise ConfigError(
                f"{self.source}: {where} needs a 'name' (one of {', '.join(available())})"
            )
        name = self.value("algorithms", "name", entry, f"{where}.name")
        registry = available()
        self.member(
            f"{where}.name",
            name,
            name,
            registry,
            "unknown algorithm",
            f"; available: {', '.join(registry)}",
        )
        cls = registry[name]
        named, var_kw = _accepted(cls)
        allowed = sorted(named - {"preset"})
        label = self.value("algorithms", "label", {"label": name, **entry}, f"{where}.label")
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
        # the values of params are validated once, by the algorithm's constraints (instantiate)
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
        own_preset = self.value("algorithms", "preset", entry, f"{where}.preset")
        if own_preset is not None and "preset" not in named:
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
            self.instantiate(where, name, full, params, own_grid, global_grid, env, horizon)
            variants.append((full, values))
        return AlgorithmEntry(name=name, label=label, variants=tuple(variants))

    def instantiate(
        self,
        where: str,
        name: str,
        full: dict[str, Any],
        params: dict[str, Any],
        own_grid: dict[str, Any],
        global_grid: dict[str, Any],
        env: dict[str, Any],
        horizon: int,
    ) -> None:
        """Construct the variant (which validates its parameters against the algorithm's declared
        constraints) and reset it on the environment's public spec (R = 1)."""
        from privbandits.algorithms import make

        try:
            alg = make(name, **full)
            env_obj = build_env(env)
            spec = env_obj.reset(1, make_streams(0), horizon)
            alg.reset(spec, 1, make_streams(0))
        except ParameterError as exc:
            reason = _GOT_RE.sub("", str(exc))
            origin = (
                f"{where}.params.{exc.key}"
                if exc.key in params
                else f"{where}.grid.{exc.key}"
                if exc.key in own_grid
                else f"grid.{exc.key}"
                if exc.key in global_grid
                else None
            )
            if origin is not None and exc.key in full:
                raise self.fail(origin, full[exc.key], reason, exc.allowed) from None
            raise self._variant_error(where, name, full, exc) from None
        except PrivbanditsError as exc:
            raise self._variant_error(where, name, full, exc) from None

    def _variant_error(
        self, where: str, name: str, full: dict[str, Any], exc: Exception
    ) -> ConfigError:
        shown = ", ".join(f"{k}={show_value(v)}" for k, v in full.items())
        return ConfigError(f"{self.source}: {where} ({name}({shown})): {exc}")

    def plot(self, table: Any) -> PlotConfig:
        self.keys(table, table_keys("plot"), "[plot]")
        return PlotConfig(**{name: self.value("plot", name, table) for name in table_keys("plot")})

    def report(self, table: Any, algorithms: Sequence[AlgorithmEntry]) -> ReportConfig:
        self.keys(table, table_keys("report"), "[report]")
        known = {e.label for e in algorithms} | {e.name for e in algorithms}
        order = self.labels(
            "report.claimed_order", table.get("claimed_order", []), known, min_len=0
        )
        texts = {
            name: self.value("report", name, table)
            for name in ("title", "source", "claims", "notes")
        }
        level = self.value("report", "level", table)
        slopes = table.get("slopes", {})
        if not isinstance(slopes, dict):
            raise self.fail(
                "report.slopes", slopes, "must be a table of algorithm label = exponent"
            )
        for key, value in slopes.items():
            self.member(f"report.slopes.{key}", key, key, known, _NOT_A_LABEL)
            self.value("report", "slopes", {"slopes": value}, f"report.slopes.{key}")
        return ReportConfig(
            claimed_order=tuple(order),
            level=level,
            slopes={k: float(v) for k, v in slopes.items()},
            **texts,
        )

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
            self.member(f"{path}[{j}]", item, item, known, _NOT_A_LABEL)
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
            kind = self.value("figures", "kind", entry, f"{where}.kind")
            self.keys(entry, FIGURE_KEYS[kind], f'{where} (kind = "{kind}")')
            entry = {"name": "regret" if kind == "regret_vs_t" else "final-regret", **entry}
            common = {
                name: self.value("figures", name, entry, f"{where}.{name}")
                for name in ("kind", "name", "title", "logx", "logy")
            }
            if kind == "regret_vs_t":
                out.append(
                    FigureSpec(
                        facet=self.value("figures", "facet", entry, f"{where}.facet"),
                        band=self.value("figures", "band", entry, f"{where}.band"),
                        **common,
                    )
                )
                continue
            if "x" not in entry:
                raise ConfigError(
                    f"{self.source}: {where} (final_vs_param) needs 'x', the parameter on the x axis"
                )
            out.append(
                FigureSpec(
                    x=self.value("figures", "x", entry, f"{where}.x"),
                    series=self.labels(f"{where}.series", entry["series"], known)
                    if "series" in entry
                    else (),
                    baselines=self.labels(
                        f"{where}.baselines", entry.get("baselines", []), known, min_len=0
                    ),
                    errorbars=self.value("figures", "errorbars", entry, f"{where}.errorbars"),
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
            kind = self.claim_kind(entry, where, CLAIM_KEYS)
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
            text = self.value("claims", "text", entry, f"{where}.text")
            extra: dict[str, Any] = {}
            if kind == "tiers":
                if "above" not in entry:
                    raise ConfigError(
                        f"{self.source}: {where} (tiers) needs 'above', the labels of the upper tier"
                    )
                extra["above"] = self.labels(f"{where}.above", entry["above"], known)
            if kind in ("within", "stable"):
                extra["percent"] = self.needed("claims", "percent", entry, where, kind)
            if kind in ("monotone", "stable"):
                extra["param"] = self.needed("claims", "param", entry, where, kind)
            if kind in ("monotone", "slope"):
                allowed = (
                    ("decreasing", "increasing") if kind == "monotone" else ("near", "at_most")
                )
                direction = entry.get("direction", allowed[0])
                extra["direction"] = self.check(
                    f"{where}.direction",
                    direction,
                    lambda: check_choice("direction", direction, allowed),
                )
            if kind == "slope":
                for name in ("exponent", "tolerance"):
                    extra[name] = self.needed("claims", name, entry, where, kind)
                extra["param"] = self.value("claims", "param", entry, f"{where}.param")
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

    def claim_kind(
        self, entry: dict[str, Any], where: str, kinds: Mapping[str, Sequence[str]], what: str = ""
    ) -> str:
        """The ``kind`` of a ``[[claims]]`` entry, one of ``kinds`` (kind -> its keys), and the
        entry's keys checked against that kind's; ``what`` qualifies the kind in errors."""
        kind = entry.get("kind")
        if not isinstance(kind, str) or kind not in kinds:
            raise self.fail(
                f"{where}.kind",
                kind,
                f"unknown {what}claim kind{_suggest(kind, kinds)}; allowed: {', '.join(kinds)}",
            )
        self.keys(entry, kinds[kind], f'{where} (kind = "{kind}")')
        return kind

    def needed(self, table: str, name: str, entry: Mapping[str, Any], where: str, kind: str) -> Any:
        """A key ``kind`` entries need (the schema's default is only documentation)."""
        if name not in entry:
            raise ConfigError(
                f"{self.source}: {where}.{name} is required: a '{kind}' claim needs '{name}'"
            )
        return self.value(table, name, entry, f"{where}.{name}")

    def paper_numbers(
        self, raw: dict[str, Any], known: set[str], declared_horizon: int | None = None
    ) -> tuple[PaperNumber, ...]:
        out = []
        for i, entry in enumerate(self.entries(raw, "paper_numbers")):
            where = f"paper_numbers[{i}]"
            self.keys(entry, table_keys("paper_numbers"), where)
            for name in ("algorithm", "value"):
                if name not in entry:
                    raise ConfigError(f"{self.source}: {where} needs '{name}'")
            alg = entry["algorithm"]
            if not isinstance(alg, str) or alg not in known:
                raise self.fail(
                    f"{where}.algorithm",
                    alg,
                    f"{_NOT_A_LABEL}{_suggest(alg, known)}",
                )
            value = entry["value"]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self.fail(f"{where}.value", value, "must be a number")
            if "kind" not in entry:
                raise ConfigError(
                    f"{self.source}: {where} needs 'kind', who reported the number: one of "
                    f"{', '.join(repr(k) for k in REFERENCE_KINDS)}"
                )
            ref_t = self.value("paper_numbers", "horizon", entry, f"{where}.horizon")
            out.append(
                PaperNumber(
                    algorithm=alg,
                    metric=self.value("paper_numbers", "metric", entry, f"{where}.metric"),
                    value=float(value),
                    where=self.where(f"{where}.where", entry.get("where", {})),
                    source=self.value("paper_numbers", "source", entry, f"{where}.source"),
                    kind=self.value("paper_numbers", "kind", entry, f"{where}.kind"),
                    horizon=declared_horizon if ref_t is None else ref_t,
                )
            )
        return tuple(out)

    def tables(self, raw: dict[str, Any], known: set[str]) -> tuple[PaperTable, ...]:
        out = []
        for i, entry in enumerate(self.entries(raw, "tables")):
            where = f"tables[{i}]"
            self.keys(entry, table_keys("tables"), where)
            rows = self.labels(f"{where}.rows", entry["rows"], known) if "rows" in entry else ()
            out.append(
                PaperTable(
                    title=self.value("tables", "title", entry, f"{where}.title"),
                    metric=self.value("tables", "metric", entry, f"{where}.metric"),
                    columns=self.value("tables", "columns", entry, f"{where}.columns"),
                    rows=rows,
                )
            )
        return tuple(out)

    # -- whole file -------------------------------------------------------------------------
    def config(
        self,
        raw: dict[str, Any],
        default_name: str,
        declared_horizon: int | None = None,
        declared_horizons: tuple[int, ...] = (),
    ) -> ExperimentConfig:
        kind = self.value("", "kind", raw)
        if kind != "bandit":
            raise self.fail(
                "kind",
                kind,
                "a regression study is not a bandit experiment: run it with "
                "`privbandits reproduce NAME` (privbandits.experiments.load_reproduction)",
            )
        self.keys(raw, table_keys(""), "the top level")
        name = self.value("", "name", {"name": default_name, **raw})
        description = self.value("", "description", raw)
        if "horizon" not in raw and "horizons" not in raw:
            raise ConfigError(
                f"{self.source}: missing required key 'horizon' (number of rounds T >= 1; "
                "or 'horizons', a list of them)"
            )
        horizon, replications, seeds, checkpoints = self.scalars(raw)
        horizons = self.horizons(raw)
        if horizons:
            horizon = max(horizons)
            declared_horizon = max(declared_horizons) if declared_horizons else None
        preset = self.value("", "preset", raw)
        engine = self.value("", "engine", raw)
        quick = self.keys(raw.get("quick", {}), table_keys("quick"), "[quick]")
        if quick:  # validate the quick overrides even when they are not applied
            probe = {
                k: v for k, v in raw.items() if k not in ("env", "algorithms", "grid", "quick")
            }
            probe.update(quick)
            for a, b in (("horizon", "horizons"), ("horizons", "horizon")):
                if a in quick:  # [quick] horizon(s) replaces the file's horizon(s)
                    probe.pop(b, None)
            _Validator(f"{self.source} [quick]").scalars(probe)
            _Validator(f"{self.source} [quick]").horizons(probe)
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
            except ParameterError as exc:
                name = exc.key
                path = (
                    f"env.grid.{name}"
                    if name in env_grid
                    else f"env.{name}"
                    if name in env
                    else "env"
                )
                value = variant.get(name, variant)
                raise self.fail(path, value, _GOT_RE.sub("", str(exc)), exc.allowed) from None
            except PrivbanditsError as exc:
                raise self.fail("env", variant, _GOT_RE.sub("", str(exc))) from None
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
        if horizons:  # the horizon is the parameter T of every series
            grids: dict[str, Any] = {"env.grid": env_grid, "grid": global_grid}
            grids.update(
                {
                    f"algorithms[{i}].grid": e.get("grid", {})
                    for i, e in enumerate(entries)
                    if isinstance(e, dict)
                }
            )
            for gpath, gkeys in grids.items():
                if isinstance(gkeys, dict) and HORIZON_PARAM in gkeys:
                    raise self.fail(
                        f"{gpath}.{HORIZON_PARAM}",
                        gkeys[HORIZON_PARAM],
                        f"'{HORIZON_PARAM}' is the horizon of an experiment with horizons",
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
        for gkey in global_grid:  # not `name`: that is the experiment's name
            if not any(gkey in _accepted(available()[e.name])[0] for e in algorithms):
                raise self.fail(
                    f"grid.{gkey}",
                    global_grid[gkey],
                    f"no algorithm of this experiment accepts '{gkey}'",
                )
        plot = self.plot(raw.get("plot", {}))
        report = self.report(raw.get("report", {}), algorithms)
        known = {e.label for e in algorithms} | {e.name for e in algorithms}
        return ExperimentConfig(
            name=name,
            description=description,
            horizon=horizon,
            replications=replications,
            seeds=seeds,
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
            horizons=horizons,
            declared_horizons=declared_horizons,
        )

    def horizons(self, raw: Mapping[str, Any]) -> tuple[int, ...]:
        """``horizons``: distinct integers >= 1 (empty when the file gives one ``horizon``)."""
        if "horizons" not in raw:
            return ()
        if "horizon" in raw:
            raise self.fail(
                "horizons", raw["horizons"], "give either horizon or horizons, not both"
            )
        rule = schema_key("", "horizons").constraint
        return tuple(
            self.distinct(
                "horizons",
                raw["horizons"],
                functools.partial(rule.check, "horizon"),
                "integers >= 1, e.g. [1000, 10000]",
                "horizons",
            )
        )

    def scalars(self, raw: dict[str, Any]) -> tuple[Any, Any, tuple[int, ...], dict[str, Any]]:
        """horizon, replications, seeds and checkpoints (also the ``[quick]`` overrides)."""
        horizon = self.value("", "horizon", raw) if "horizon" in raw else None
        replications = self.value("", "replications", raw)
        rule = schema_key("", "seeds").constraint
        checked = tuple(
            self.distinct(
                "seeds",
                raw.get("seeds", schema_key("", "seeds").default),
                functools.partial(rule.check, "seed"),
                "integers >= 0, e.g. [0, 1, 2]",
                "seeds",
            )
        )
        checkpoints = self.checkpoints(
            raw.get("checkpoints", schema_key("", "checkpoints").default)
        )
        return horizon, replications, checked, checkpoints


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
