"""Paper presets: experiment configurations shipped in ``experiments/presets/NAME.toml``.

A preset is an ordinary experiment configuration (see :mod:`privbandits.experiments.config`)
plus, usually, ``[quick]`` overrides for a short run and a ``[report]`` section with the paper's
claims that ``privbandits reproduce NAME`` compares the measurements with.  A preset with
``kind = "regression"`` is a regression-error study instead
(:mod:`privbandits.experiments.regression_study`); :func:`load_reproduction` loads either kind.
"""

from __future__ import annotations

import difflib
import tomllib
from importlib import resources
from importlib.resources.abc import Traversable

from privbandits.core.errors import ConfigError, UnknownNameError
from privbandits.experiments.config import ExperimentConfig, Overrides, parse_config
from privbandits.experiments.regression_study import RegressionStudy, parse_regression_study

__all__ = ["available_presets", "load_preset", "load_reproduction", "preset_text"]


def _dir() -> Traversable:
    return resources.files("privbandits.experiments").joinpath("presets")


def _files() -> dict[str, Traversable]:
    return {f.name[:-5]: f for f in _dir().iterdir() if f.name.endswith(".toml") and f.is_file()}


def available_presets() -> dict[str, str]:
    """Preset names with a one-line description (the report title, else the description)."""
    out = {}
    for name, f in sorted(_files().items()):
        try:
            raw = tomllib.loads(f.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError:
            out[name] = "(invalid TOML)"
            continue
        text = raw.get("report", {}).get("title") or raw.get("description", "")
        out[name] = " ".join(str(text).split())
    return out


def preset_text(name: str) -> str:
    """The TOML text of preset ``name``."""
    files = _files()
    if name not in files:
        close = difflib.get_close_matches(name, sorted(files), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise UnknownNameError(
            f"unknown preset {name!r}{hint}; available: {', '.join(sorted(files)) or 'none'}"
        )
    return files[name].read_text(encoding="utf-8")


def load_preset(name: str, overrides: Overrides | None = None) -> ExperimentConfig:
    """Validate preset ``name`` (with ``--quick`` and other command-line overrides)."""
    return parse_config(
        preset_text(name), source=f"presets/{name}.toml", default_name=name, overrides=overrides
    )


def load_reproduction(
    name: str, overrides: Overrides | None = None
) -> ExperimentConfig | RegressionStudy:
    """Validate preset ``name`` of either kind: a bandit experiment or a regression study (``kind = "regression"``)."""
    text = preset_text(name)
    source = f"presets/{name}.toml"
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: invalid TOML: {exc}") from None
    if raw.get("kind") == "regression":
        return parse_regression_study(raw, source=source, default_name=name, overrides=overrides)
    return parse_config(raw, source=source, default_name=name, overrides=overrides)
