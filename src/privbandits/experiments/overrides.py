"""Command-line overrides of an experiment file (``--horizon``, ``--grid``, ``--quick``, ...).

The options that override a key of the file take their flags, help texts and checks from the key's
declaration in :mod:`privbandits.experiments.schema` (:func:`option_flags`, :func:`option_help`),
so the command line, the validator and the reference page agree.
"""

from __future__ import annotations

import inspect
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from privbandits.core.errors import ConfigError, ParameterError
from privbandits.experiments.schema import key
from privbandits.experiments.units import ENV_KINDS

__all__ = ["Overrides", "option_flags", "option_help", "parse_grid_option", "show_value"]

#: Override field -> the schema key it overrides.
_OVERRIDDEN = {
    "horizon": "horizon",
    "replications": "replications",
    "seeds": "seeds",
    "preset": "preset",
    "engine": "engine",
}


def option_flags(name: str) -> tuple[str, ...]:
    """The command-line flags of the top-level key ``name`` (e.g. ``("--horizon", "-T")``)."""
    return key("", name).cli


def option_help(name: str) -> str:
    """The help text of the command-line option overriding the top-level key ``name``."""
    return key("", name).cli_help


def show_value(value: Any) -> str:
    """``value`` as TOML spells it (for messages naming a key and its value)."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value)


_GOT_RE = re.compile(r", got [^,]*$")


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
        """Validate the command-line values with their keys' constraints, so that an error names
        the option, not the file."""
        for attr, name in _OVERRIDDEN.items():
            value = getattr(self, attr)
            if value is None:
                continue
            decl = key("", name)
            option = decl.cli[0]
            for v in value if attr == "seeds" else [value]:
                try:
                    decl.constraint.check("seed" if attr == "seeds" else name, v)
                except ParameterError as exc:
                    raise ConfigError(
                        f"command line: {option} {show_value(v)}: {_GOT_RE.sub('', str(exc))}"
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
                for a, b in (("horizon", "horizons"), ("horizons", "horizon")):
                    if a in quick:  # [quick] horizon(s) replaces the file's horizon(s)
                        out.pop(b, None)
        for name in ("horizon", "replications", "engine"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.horizon is not None and "horizons" in out:  # one horizon of a file's horizons
            out["horizons"] = [out.pop("horizon")]
        if self.seeds is not None:
            out["seeds"] = list(self.seeds)
        if self.data is not None:
            out["env"] = _with_data(out.get("env", {}), self.data)
        if self.preset is not None:
            # the default of every entry; an entry that names its own preset (e.g. the "(paper)"
            # rows run beside the default ones) keeps it, so its label stays true
            out["preset"] = self.preset
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


def parse_grid_option(items: Sequence[str]) -> dict[str, list[Any]]:
    """Parse ``--grid key=v1,v2,...`` options; values are read as TOML (numbers, strings, booleans)."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, sep, rhs = item.partition("=")
        name = name.strip()
        if not sep or not name or not rhs.strip():
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
        grid[name] = values
    return grid
