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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from privbandits.algorithms import make
from privbandits.algorithms.registry import import_modules
from privbandits.core.errors import UnknownNameError
from privbandits.engine.fused import simulate_fused
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
from privbandits.experiments.costs import makespan, split_by_cost, unit_cost
from privbandits.simulate import SimulationResult, make_checkpoints, simulate

__all__ = [
    "ENV_KINDS",
    "SCHEMA_VERSION",
    "WorkUnit",
    "build_env",
    "canonical_json",
    "execute_group",
    "execute_unit",
    "fused_groups",
    "unit_cost",
]

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


def prepare_data(units: Sequence[WorkUnit]) -> None:
    """Parse the data files of ``units`` in this process, once per distinct environment, so that
    worker processes open the cached arrays (:mod:`~privbandits.envs.datasets.filecache`)
    instead of reading the files; a no-op for environments without a ``path`` or already cached."""
    seen: set[str] = set()
    for unit in units:
        env = unit.env
        if env.get("kind") != "supervised" or env.get("path") is None:
            continue
        key = canonical_json(env)
        if key not in seen:
            seen.add(key)
            build_env(env)


def fusion_key(unit: WorkUnit) -> str | None:
    """What units must share to be advanced together over one environment draw (environment,
    seed, horizon, replications, checkpoints, imports), or None for a unit that never fuses (an
    engine other than "auto" or "compiled")."""
    if unit.engine not in ("auto", "compiled"):
        return None
    return canonical_json(
        {
            "env": unit.env,
            "seed": unit.seed,
            "horizon": unit.horizon,
            "replications": unit.replications,
            "checkpoints": unit.checkpoints,
            "imports": list(unit.imports),
        }
    )


def fused_groups(
    units: Sequence[WorkUnit],
    parts: int = 1,
    cost: Callable[[WorkUnit], tuple[float, float]] = unit_cost,
) -> list[list[int]]:
    """Indices of ``units`` grouped by :func:`fusion_key` (a unit that never fuses is a group of
    its own), split so that ``parts`` workers finish together.

    With ``parts = 1`` the groups come in first-seen order.  Otherwise the groups are balanced by
    estimated cost (``cost(unit) = (kernel, environment)``, default :func:`unit_cost`; a group
    costs the kernels of its units plus one environment draw): while it shortens the
    longest-processing-time-first schedule on ``parts`` workers, the costliest group is split
    into the number of parts (2 .. ``parts``) of near-equal cost that shortens it most.  The
    groups are returned costliest first, the order in which a pool that hands the next group to
    the first idle worker realizes that schedule.
    """
    groups: dict[Any, list[int]] = {}
    for i, unit in enumerate(units):
        key = fusion_key(unit)
        groups.setdefault(key if key is not None else ("alone", i), []).append(i)
    out = list(groups.values())
    if parts <= 1:
        return out
    est = [cost(u) for u in units]
    kernel = [k for k, _ in est]

    def gcost(g: list[int]) -> float:
        return sum(kernel[i] for i in g) + max(est[i][1] for i in g)

    while True:
        costs = [gcost(g) for g in out]
        span = makespan(costs, parts)
        big = max(range(len(out)), key=lambda j: (costs[j], -j))
        if len(out[big]) < 2:
            break
        best: tuple[float, list[list[int]]] | None = None
        for m in range(2, min(parts, len(out[big])) + 1):
            pieces = split_by_cost(out[big], kernel, m)
            trial = costs[:big] + costs[big + 1 :] + [gcost(p) for p in pieces]
            s = makespan(trial, parts)
            if best is None or s < best[0]:
                best = (s, pieces)
        if best is None or best[0] >= span * (1.0 - 1e-9):
            break
        out[big : big + 1] = best[1]
    order = sorted(range(len(out)), key=lambda j: (-gcost(out[j]), j))
    return [out[j] for j in order]


def execute_group(
    units: Sequence[WorkUnit], progress: Callable[[int, int], None] | None = None
) -> list[SimulationResult]:
    """Execute units of one fused group (:func:`fused_groups`) together: the environment is drawn
    once and every unit whose algorithm runs on the compiled driver advances over it
    (:func:`~privbandits.engine.fused.simulate_fused`); the others run on their own.  Each result
    is bit-identical to :func:`execute_unit` of its unit.  ``progress(i, rounds_done)`` for the
    ``i``-th unit."""
    if len(units) == 1:
        return [execute_unit(units[0], None if progress is None else (lambda t: progress(0, t)))]
    first = units[0]
    if any(fusion_key(u) != fusion_key(first) or fusion_key(u) is None for u in units):
        raise ValueError("execute_group needs units of one fused group (fused_groups)")
    import_modules(first.imports)
    algs = [make(u.algorithm, **u.params) for u in units]
    return simulate_fused(  # type: ignore[no-any-return]
        algs,
        lambda: build_env(first.env),
        horizon=first.horizon,
        replications=first.replications,
        seed=first.seed,
        checkpoints=first.checkpoint_rounds(),
        engines=[u.engine for u in units],
        progress=progress,
    )
