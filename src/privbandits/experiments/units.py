"""Work units: the smallest independent piece of an experiment, and how one is executed.

A work unit is one (algorithm x resolved parameters x environment x seed x horizon x
replications) simulation.  Its identity is the sha256 of the canonical JSON of its full
configuration (plus :data:`SCHEMA_VERSION`), so the results store can tell finished units from
missing ones and a rerun skips what is done (the documentation's Concepts: the results store and resuming).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from privbandits.algorithms import make
from privbandits.algorithms.registry import import_modules
from privbandits.core.errors import UnknownNameError
from privbandits.envs import (
    ConvexLossEnv,
    FiniteActionEnv,
    MovieLensEnv,
    MultiArmedEnv,
    SyntheticEnv,
)
from privbandits.envs.base import Environment
from privbandits.envs.datasets import SupervisedEnv
from privbandits.envs.datasets.autoloan import AutoLoanEnv
from privbandits.envs.datasets.choice import ChoiceEnv, ChoicePricingEnv
from privbandits.envs.datasets.choice_offer import ChoiceOfferEnv
from privbandits.simulate import SimulationResult, make_checkpoints, simulate

__all__ = ["ENV_KINDS", "SCHEMA_VERSION", "WorkUnit", "build_env", "canonical_json", "execute_unit"]

#: Version of the unit-configuration schema hashed into every key.  Bump it when the meaning of
#: a stored configuration changes, so old rows are never mistaken for new ones.
SCHEMA_VERSION = 2

#: Environment kinds a configuration's ``[env] kind`` may name.
ENV_KINDS: dict[str, type[Environment]] = {
    "synthetic": SyntheticEnv,
    "finite": FiniteActionEnv,
    "k-armed": MultiArmedEnv,
    "convex": ConvexLossEnv,
    "movielens": MovieLensEnv,
    "supervised": SupervisedEnv,
    "choice": ChoiceEnv,
    "choice-pricing": ChoicePricingEnv,
    "choice-offer": ChoiceOfferEnv,
    "auto-loan": AutoLoanEnv,
}


def canonical_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, no whitespace, non-finite floats as strings)."""
    return json.dumps(_finite(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return repr(obj)
    if isinstance(obj, Mapping):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def build_env(env: Mapping[str, Any]) -> Environment:
    """Construct the environment described by ``{"kind": ..., **constructor_args}``."""
    args = dict(env)
    kind = args.pop("kind", "synthetic")
    if kind not in ENV_KINDS:
        raise UnknownNameError(f"env kind must be one of {sorted(ENV_KINDS)}; got {kind!r}")
    for key in ("reward_range", "prices", "price_grid"):
        if isinstance(args.get(key), list):
            args[key] = tuple(args[key])
    return ENV_KINDS[kind](**args)


@dataclass(frozen=True)
class WorkUnit:
    """One simulation of an experiment.

    Attributes
    ----------
    experiment : str
        Name of the experiment the unit belongs to.
    label : str
        Display label of the algorithm entry (curves and tables are grouped by it).
    algorithm : str
        Registry name.
    params : dict
        Full constructor arguments (fixed params, grid values and calibration preset).
    grid : dict
        The subset of ``params`` that comes from a grid (used for facets and series names).
    env : dict
        ``{"kind": ..., **constructor_args}``.
    seed, horizon, replications : int
        Root seed, number of rounds T and number of batched replications R.
    checkpoints : dict
        ``{"log": n, "every": k or None}`` (see :func:`~privbandits.simulate.make_checkpoints`).
    engine : str
        The driver :func:`~privbandits.simulate.simulate` uses ("auto" by default).
    """

    experiment: str
    label: str
    algorithm: str
    params: dict[str, Any]
    env: dict[str, Any]
    seed: int
    horizon: int
    replications: int
    checkpoints: dict[str, Any]
    grid: dict[str, Any] = field(default_factory=dict)
    engine: str = "auto"
    #: Modules imported before the algorithm is built (``--import`` / ``import = [...]``), in every
    #: process that runs the unit.
    imports: tuple[str, ...] = ()

    def config(self) -> dict[str, Any]:
        """The full configuration that identifies the unit (hashed into :meth:`key`)."""
        cfg = {
            "schema": SCHEMA_VERSION,
            "experiment": self.experiment,
            "label": self.label,
            "algorithm": self.algorithm,
            "params": self.params,
            "grid": self.grid,
            "env": self.env,
            "seed": self.seed,
            "horizon": self.horizon,
            "replications": self.replications,
            "checkpoints": self.checkpoints,
            "engine": self.engine,
        }
        if self.imports:  # only when used, so that the keys of earlier results stay valid
            cfg["imports"] = list(self.imports)
        return cfg

    def key(self) -> str:
        """sha256 hex digest of the canonical JSON of :meth:`config`."""
        return hashlib.sha256(canonical_json(self.config()).encode("utf-8")).hexdigest()

    def describe(self) -> str:
        """Short human-readable name, e.g. ``"LinUCB epsilon=1 seed=0"``."""
        extra = " ".join(f"{k}={v}" for k, v in self.grid.items())
        return " ".join(s for s in (self.label, extra, f"seed={self.seed}") if s)

    def checkpoint_rounds(self) -> list[int]:
        """The 1-based rounds at which cumulative quantities are recorded."""
        ckpt = make_checkpoints(
            self.horizon,
            log_points=self.checkpoints.get("log", 50),
            every=self.checkpoints.get("every"),
        )
        return [int(t) for t in ckpt]


def execute_unit(unit: WorkUnit, progress: Callable[[int], None] | None = None) -> SimulationResult:
    """Build the environment and the algorithm of ``unit`` and run :func:`simulate`.

    Pure in the unit: the same unit gives bit-identical arrays on every call and in every process
    (all randomness comes from ``SeedSequence(unit.seed)``).
    """
    import_modules(unit.imports)
    env = build_env(unit.env)
    alg = make(unit.algorithm, **unit.params)
    return simulate(
        alg,
        env,
        horizon=unit.horizon,
        replications=unit.replications,
        seed=unit.seed,
        checkpoints=unit.checkpoint_rounds(),
        progress=progress,
        engine=unit.engine,
    )
