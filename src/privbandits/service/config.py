"""The configuration of a deployed server: one algorithm of an experiment TOML plus ``[service]``.

``privbandits serve CONFIG.toml`` reads an ordinary experiment file (the ``[env]`` table describes
the public problem: dimension, arms, bounds, link; ``horizon`` is the number of users the privacy
accounting covers) restricted to **one** ``[[algorithms]]`` entry with **one** parameter variant
and **one** seed, and an optional ``[service]`` table:

====================  =========  ===================================================================
key                   default    meaning
====================  =========  ===================================================================
``seed``              seeds[0]   root seed of the server's own streams (server noise, policy)
``max_staleness``     100        a report may be bound to a model at most this many versions old
``max_body_bytes``    1048576    larger request bodies are refused (413)
``rate``              50.0       per-token request rate (requests/s, token bucket)
``burst``             100        per-token burst size of the token bucket
``device_epsilon``    accounted  privacy budget of one device (client token); each accepted report
                      epsilon    spends the accounted per-report epsilon (basic composition)
``min_batch``         1          shuffle model: smallest batch ``POST /v1/batches`` accepts
``simulation``        false      a simulated deployment: ``POST /v1/simulation/rewards`` is enabled
``anonymous_rate``    5.0        requests/s per client IP address without a valid token (token bucket)
``anonymous_burst``   50         burst of that bucket
``shuffler_url``      none       shuffle model: the shuffler's URL (its queue on ``GET /v1/status``)
====================  =========  ===================================================================
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privbandits.algorithms import make
from privbandits.algorithms.base import Algorithm
from privbandits.core.errors import ConfigError
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.core.validation import check_known_keys
from privbandits.envs.base import Environment
from privbandits.experiments.config import parse_config
from privbandits.experiments.units import build_env

__all__ = [
    "SERVICE_KEYS",
    "ServiceConfig",
    "build_problem",
    "load_service_config",
    "parse_service_config",
]

#: ``[service]`` keys with their defaults (None: derived, see the module docstring).
SERVICE_KEYS: dict[str, Any] = {
    "seed": None,
    "max_staleness": 100,
    "max_body_bytes": 1 << 20,
    "rate": 50.0,
    "burst": 100,
    "device_epsilon": None,
    "min_batch": 1,
    "simulation": False,
    "anonymous_rate": 5.0,
    "anonymous_burst": 50,
    "shuffler_url": None,
}


@dataclass(frozen=True)
class ServiceConfig:
    """A validated service configuration.

    Attributes
    ----------
    algorithm : str
        Registry name of the served algorithm.
    params : dict
        Its constructor arguments.
    env : dict
        The ``[env]`` table (the public problem description is read from it).
    horizon : int
        Number of users T the accounting covers; reports beyond it are refused.
    seed : int
        Root seed of the server's streams.
    max_staleness, max_body_bytes, burst, min_batch : int
        See the module docstring.
    rate : float
        Per-token requests per second.
    device_epsilon : float or None
        Per-device privacy budget (None: one report's accounted epsilon, i.e. one report per device).
    simulation : bool
        A simulated deployment: ``POST /v1/simulation/rewards`` is enabled (off otherwise).
    anonymous_rate, anonymous_burst : float, int
        Token bucket per client IP address for requests without a valid token.
    shuffler_url : str or None
        Shuffle model: the shuffler's base URL; ``GET /v1/status`` then includes its queue.
    source : str
        Where the configuration came from (for messages).
    """

    algorithm: str
    params: dict[str, Any]
    env: dict[str, Any]
    horizon: int
    seed: int = 0
    max_staleness: int = 100
    max_body_bytes: int = 1 << 20
    rate: float = 50.0
    burst: int = 100
    device_epsilon: float | None = None
    min_batch: int = 1
    simulation: bool = False
    anonymous_rate: float = 5.0
    anonymous_burst: int = 50
    shuffler_url: str | None = None
    source: str = "<config>"
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The configuration as stored beside the database (compared on restart)."""
        return {
            "algorithm": self.algorithm,
            "params": self.params,
            "env": self.env,
            "horizon": self.horizon,
            "seed": self.seed,
        }


def _int(source: str, key: str, value: Any, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise ConfigError(f"{source}: service.{key} must be an integer >= {lo}, got {value!r}")
    return int(value)


def _float(source: str, key: str, value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{source}: service.{key} must be a finite number > 0, got {value!r}")
    return float(value)


def _url(source: str, key: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigError(f"{source}: service.{key} must be an http(s) URL, got {value!r}")
    return value.rstrip("/")


def _bool(source: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{source}: service.{key} must be true or false, got {value!r}")
    return value


def parse_service_config(raw: dict[str, Any], source: str = "<config>") -> ServiceConfig:
    """Validate a parsed TOML mapping (see the module docstring)."""
    raw = dict(raw)
    service = raw.pop("service", {})
    if not isinstance(service, dict):
        raise ConfigError(f"{source}: [service] must be a table, got {service!r}")
    check_known_keys(service, SERVICE_KEYS, source, section="[service]")
    exp = parse_config(raw, source=source)
    if len(exp.algorithms) != 1:
        raise ConfigError(
            f"{source}: a served configuration has exactly one [[algorithms]] entry, got "
            f"{len(exp.algorithms)} ({', '.join(e.label for e in exp.algorithms)})"
        )
    entry = exp.algorithms[0]
    if len(entry.variants) != 1:
        raise ConfigError(
            f"{source}: algorithms[0] ({entry.name}) expands to {len(entry.variants)} parameter "
            "variants through [grid]; a server runs one: set each parameter in params"
        )
    if str(exp.env.get("kind", "synthetic")) == "convex":
        raise ConfigError(
            f"{source}: env.kind = 'convex' (continuous actions) cannot be served; "
            "serve a contextual (finite-action) problem"
        )
    seed = service.get("seed", exp.seeds[0])
    if "seed" not in service and len(exp.seeds) != 1:
        raise ConfigError(
            f"{source}: seeds lists {len(exp.seeds)} seeds; a server uses one: set service.seed"
        )
    dev = service.get("device_epsilon")
    return ServiceConfig(
        algorithm=entry.name,
        params=dict(entry.variants[0][0]),
        env=dict(exp.env),
        horizon=exp.horizon,
        seed=_int(source, "seed", seed, 0),
        max_staleness=_int(source, "max_staleness", service.get("max_staleness", 100), 0),
        max_body_bytes=_int(source, "max_body_bytes", service.get("max_body_bytes", 1 << 20), 256),
        rate=_float(source, "rate", service.get("rate", 50.0)),
        burst=_int(source, "burst", service.get("burst", 100), 1),
        device_epsilon=None if dev is None else _float(source, "device_epsilon", dev),
        min_batch=_int(source, "min_batch", service.get("min_batch", 1), 1),
        simulation=_bool(source, "simulation", service.get("simulation", False)),
        anonymous_rate=_float(source, "anonymous_rate", service.get("anonymous_rate", 5.0)),
        anonymous_burst=_int(source, "anonymous_burst", service.get("anonymous_burst", 50), 1),
        shuffler_url=_url(source, "shuffler_url", service.get("shuffler_url")),
        source=source,
        raw=raw,
    )


def load_service_config(path: str | Path) -> ServiceConfig:
    """Read and validate a served configuration file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {str(p)!r}: {exc.strerror or exc}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p.name}: invalid TOML: {exc}") from None
    raw.setdefault(
        "name", p.stem if p.stem.replace("-", "").replace("_", "").isalnum() else "service"
    )
    return parse_service_config(raw, source=p.name)


def build_problem(config: ServiceConfig, seed: int) -> tuple[Algorithm, Environment, EnvSpec]:
    """The algorithm reset on the configured problem with one replication and ``seed``'s streams.

    The environment is reset with the same streams (it draws from its own streams only), so its
    public description and, for fixed action sets, the public action catalogue are the ones
    ``simulate`` would use with that seed.
    """
    alg = make(config.algorithm, **config.params)
    streams = make_streams(seed)
    env = build_env(config.env)
    spec = env.reset(1, streams, config.horizon)
    alg.reset(spec, 1, streams)
    return alg, env, spec
