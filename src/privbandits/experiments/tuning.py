"""Tuning an algorithm's exploration constants without touching its privacy.

An algorithm's *exploration constants* (the scale of a confidence radius, of an elimination
threshold, a step size) act only on what the algorithm has already released (noisy statistics,
a public state): they are post-processing, and changing them never changes the accounted
guarantee.  Its *privacy calibration* (epsilon, delta, clip norms, noise scales, budget split) is
what the guarantee is computed from and is never tuned here.  Each algorithm declares which of its
constructor parameters are exploration constants, with a small grid of values to try:

- a class attribute ``tuning_params: dict[str, tuple]`` (a user's own algorithm), or
- the table :data:`TUNING_GRIDS` below for the registered algorithms.

:func:`guarantee_across_grid` computes the accounted guarantee at every point of the grid (the
test suite checks it is the same everywhere), and :func:`tune` picks each algorithm entry's
constants on *tuning seeds* (never the evaluation seeds of the configuration) of the same
environment family: every point of the grid runs on those seeds, and the point with the lowest
mean log final regret over the configuration's cells (e.g. every epsilon) is chosen, one setting
per algorithm entry.  The choice is stored as TOML (:func:`write_choice`) and
:func:`tuned_config` adds a ``"<label> (tuned)"`` series beside each tuned one, with the paper's
claims repeated on the tuned series, so that a report shows the algorithms as published and each
at its best side by side.

Why never on real users' data: the constants chosen are a function of the rewards the users
produced, and publishing them (or running the bandit with them) releases information about those
users that no mechanism accounted for; the tuned algorithm is private only if the tuning data are
public, synthetic, or accounted for separately.  The documentation's "Tuning" page says more.
"""

from __future__ import annotations

import copy
import itertools
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privbandits.core.errors import ValidationError
from privbandits.experiments.config import ExperimentConfig, parse_config
from privbandits.experiments.summary import TUNED_SUFFIX

__all__ = [
    "TUNED_SUFFIX",
    "TUNING_GRIDS",
    "TuningChoice",
    "guarantee_across_grid",
    "read_choice",
    "tune",
    "tuned_config",
    "tuning_config",
    "tuning_grid",
    "tuning_note",
    "tuning_seeds",
    "write_choice",
]

#: Exploration constants of the registered algorithms and the values tried (the default first
#: where it is a number).  Only post-processing parameters belong here.
TUNING_GRIDS: dict[str, dict[str, tuple[Any, ...]]] = {
    # Han et al. (2021): the shift of the OLS Gram matrices, the SGD step size
    "ldp-ols": {"shift_scale": (1.0, 0.1, 0.01)},
    "ldp-sgd": {"eta0": (5.0, 1.0, 25.0)},
    "greedy-sgd": {"eta0": (5.0, 1.0, 25.0)},
    # Zheng et al. (2020): the confidence radius beta_t
    "ldp-ucb": {"beta_scale": (1.0, 0.1, 0.01)},
    "ldp-gloc": {"beta_scale": (1.0, 0.1, 0.01)},
    # Hanna et al. (2022) and the phased elimination they cite: the elimination widths
    "hanna-central": {"sigma": (1.0, 0.3, 0.1)},
    "hanna-local": {"sigma": (1.0, 0.3, 0.1)},
    "hanna-shuffle": {"sigma": (1.0, 0.3, 0.1)},
    "pe-batched": {"sigma": (1.0, 0.3, 0.1)},
    "phased-elimination": {"sigma": (1.0, 0.3, 0.1)},
    # Chen et al. (2025): the elimination widths; SquareCB's exploration scale
    "chen-ldp": {"c_b": (1.0, 0.2, 0.05)},
    "chen-jdp": {"c_b": (1.0, 0.2, 0.05)},
    "chen-elim": {"c_b": (1.0, 0.2, 0.05)},
    "squarecb": {"c_gamma": (1.0, 0.3, 3.0)},
    "squarecb-jdp": {"c_gamma": (1.0, 0.3, 3.0)},
    "squarecb-ldp": {"c_gamma": (1.0, 0.3, 3.0)},
    # Shariff & Sheffet (2018): the scale of Proposition 2's radius; Chowdhury & Zhou (2022): the
    # scale of the confidence radius beta of both shuffle instantiations
    "jdp-linucb": {"radius": (1.0, 0.3, 0.1)},
    "shuffle-linucb": {"beta_scale": (1.0, 0.3, 0.1)},
    "shuffle-linucb-vec": {"beta_scale": (1.0, 0.3, 0.1)},
    # non-private confidence-bound baselines
    "linucb": {"alpha": (1.0, 0.3, 0.1)},
    "gloc": {"alpha": (1.0, 0.3, 0.1)},
    "glm-ucb": {"alpha": (1.0, 0.3, 0.1)},
}

#: Offset of the first tuning seed above the largest evaluation seed.
SEED_OFFSET = 10_000


def tuning_grid(algorithm: str | type) -> dict[str, tuple[Any, ...]]:
    """The exploration constants of an algorithm (registry name or class) and their grid.

    A class attribute ``tuning_params`` takes precedence over :data:`TUNING_GRIDS`; an algorithm
    with neither has nothing to tune (empty dict).
    """
    from privbandits.algorithms import get

    cls = get(algorithm) if isinstance(algorithm, str) else algorithm
    own = getattr(cls, "tuning_params", None)
    if own is not None:
        return {k: tuple(v) for k, v in dict(own).items()}
    return dict(TUNING_GRIDS.get(getattr(cls, "name", ""), {}))


def grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of a tuning grid (one dict per point)."""
    keys = list(grid)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))]


def guarantee_across_grid(
    algorithm: str,
    params: Mapping[str, Any],
    spec: Any,
    grid: Mapping[str, Sequence[Any]] | None = None,
) -> list[tuple[dict[str, Any], Any]]:
    """The accounted guarantee of ``algorithm(**params)`` at every point of its tuning grid.

    Parameters
    ----------
    algorithm : str
        Registry name.
    params : mapping
        The privacy and other parameters held fixed.
    spec : ProblemSpec
        The problem the algorithm is reset for (its calibration may depend on it).
    grid : mapping, optional
        Default :func:`tuning_grid`.

    Returns
    -------
    list of (point, PrivacyGuarantee)
    """
    import warnings

    from privbandits.algorithms import make
    from privbandits.core.rng import make_streams

    out = []
    for point in grid_points(tuning_grid(algorithm) if grid is None else grid):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            alg = make(algorithm, **{**params, **point})
            alg.reset(spec, 1, make_streams(0))
        out.append((point, alg.guarantee))
    return out


def tuning_seeds(config: ExperimentConfig, n: int = 1) -> tuple[int, ...]:
    """``n`` seeds disjoint from the configuration's evaluation seeds (above the largest by
    :data:`SEED_OFFSET`)."""
    start = max(config.seeds) + SEED_OFFSET
    seeds = tuple(range(start, start + n))
    assert not set(seeds) & set(config.seeds)
    return seeds


def _strip(raw: dict[str, Any]) -> dict[str, Any]:
    """The raw configuration without what refers to series labels (claims, numbers, figures)."""
    out = copy.deepcopy(raw)
    for key in ("claims", "paper_numbers", "tables", "figures", "quick"):
        out.pop(key, None)
    rep = dict(out.get("report", {}))
    rep.pop("claimed_order", None)
    out["report"] = rep
    return out


def _label(label: str, point: Mapping[str, Any]) -> str:
    return (
        f"{label} ["
        + ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in point.items())
        + "]"
    )


def tuning_config(
    config: ExperimentConfig,
    *,
    seeds: Sequence[int] | None = None,
    replications: int | None = None,
    horizon: int | None = None,
) -> tuple[ExperimentConfig, dict[str, list[tuple[str, dict[str, Any]]]]]:
    """The configuration that runs every tuning-grid point of every tunable entry on tuning seeds.

    Returns the configuration (named ``<name>-tune``) and, per tuned entry label, its candidates
    ``(candidate label, point)``.  Seeds default to :func:`tuning_seeds` and must not overlap the
    evaluation seeds.
    """
    seeds = tuple(seeds) if seeds is not None else tuning_seeds(config)
    if set(seeds) & set(config.seeds):
        raise ValidationError(
            f"tuning seeds {sorted(set(seeds) & set(config.seeds))} are evaluation seeds of "
            f"{config.name!r}: tune on other seeds of the same environment family"
        )
    raw = _strip(config.raw)
    raw["name"] = f"{config.name}-tune"
    raw["seeds"] = list(seeds)
    raw["horizon"] = int(horizon or config.horizon)
    raw.pop("horizons", None)  # several horizons: tuned at one (the largest, or the given one)
    raw["replications"] = int(replications or config.replications)
    if horizon is not None and "checkpoints" in raw:
        raw.pop("checkpoints")
    entries = []
    candidates: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    by_label = {e.get("label", e["name"]): e for e in config.raw.get("algorithms", [])}
    for entry in config.algorithms:
        grid = tuning_grid(entry.name)
        if not grid:
            continue
        base = by_label[entry.label]
        for point in grid_points(grid):
            e = copy.deepcopy(base)
            e["label"] = _label(entry.label, point)
            e["params"] = {**e.get("params", {}), **point}
            entries.append(e)
            candidates.setdefault(entry.label, []).append((e["label"], point))
    if not entries:
        raise ValidationError(
            f"{config.name!r}: no algorithm has exploration constants to tune "
            "(declare tuning_params on the class, or see privbandits.experiments.tuning.TUNING_GRIDS)"
        )
    raw["algorithms"] = entries
    cfg = parse_config(raw, source=f"{config.source} (tuning)", default_name=raw["name"])
    return cfg, candidates


@dataclass(frozen=True)
class TuningChoice:
    """The constants chosen for each algorithm entry of an experiment, and how."""

    experiment: str
    seeds: tuple[int, ...]
    horizon: int
    replications: int
    #: entry label -> chosen point
    chosen: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: entry label -> [(point, mean log final regret over the cells)]
    scores: dict[str, list[tuple[dict[str, Any], float]]] = field(default_factory=dict)


def choose(
    series: Sequence[Any], candidates: Mapping[str, Sequence[tuple[str, dict[str, Any]]]]
) -> tuple[dict[str, dict[str, Any]], dict[str, list[tuple[dict[str, Any], float]]]]:
    """Per entry, the candidate with the lowest mean log final regret over its cells."""
    chosen: dict[str, dict[str, Any]] = {}
    scores: dict[str, list[tuple[dict[str, Any], float]]] = {}
    for label, cands in candidates.items():
        rows = []
        for cand_label, point in cands:
            finals = [s.final_mean for s in series if s.label == cand_label]
            if not finals:
                continue
            score = sum(math.log(max(f, 1e-12)) for f in finals) / len(finals)
            rows.append((point, score))
        if rows:
            scores[label] = rows
            chosen[label] = min(rows, key=lambda r: r[1])[0]
    return chosen, scores


def tune(
    config: ExperimentConfig,
    db: str | Path,
    *,
    seeds: Sequence[int] | None = None,
    replications: int | None = None,
    horizon: int | None = None,
    workers: int | None = None,
    quiet: bool = True,
) -> TuningChoice:
    """Run the tuning grid on tuning seeds (results in ``db``) and choose each entry's constants."""
    from privbandits.experiments.runner import run_experiment
    from privbandits.experiments.store import ResultsStore
    from privbandits.experiments.summary import build_series

    cfg, candidates = tuning_config(config, seeds=seeds, replications=replications, horizon=horizon)
    with ResultsStore(db) as store:
        run = run_experiment(cfg, store, workers=workers, quiet=quiet)
    chosen, scores = choose(build_series(run.results), candidates)
    return TuningChoice(config.name, cfg.seeds, cfg.horizon, cfg.replications, chosen, scores)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _inline(d: Mapping[str, Any]) -> str:
    return "{ " + ", ".join(f'"{k}" = {_toml_value(v)}' for k, v in d.items()) + " }"


def write_choice(choice: TuningChoice, path: str | Path) -> Path:
    """Store a :class:`TuningChoice` as TOML (read back by :func:`read_choice`)."""
    lines = [
        "# Exploration constants chosen by `privbandits tune` on tuning seeds (never the evaluation",
        "# seeds); post-processing only: the accounted guarantees are those of the untuned algorithms.",
        f"experiment = {_toml_value(choice.experiment)}",
        f"seeds = [{', '.join(str(s) for s in choice.seeds)}]",
        f"horizon = {choice.horizon}",
        f"replications = {choice.replications}",
        "",
    ]
    for label, point in choice.chosen.items():
        lines += [
            "[[choice]]",
            f"label = {_toml_value(label)}",
            f"params = {_inline(point)}",
            "scores = ["
            + ", ".join(
                f"{{ params = {_inline(p)}, mean_log_final_regret = {s!r} }}"
                for p, s in choice.scores.get(label, [])
            )
            + "]",
            "",
        ]
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines), encoding="utf-8")
    return out


def read_choice(path: str | Path) -> TuningChoice:
    """Read a file written by :func:`write_choice`."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValidationError(f"tuning choice {str(path)!r}: {exc}") from None
    chosen = {c["label"]: dict(c["params"]) for c in data.get("choice", [])}
    scores = {
        c["label"]: [
            (dict(s["params"]), float(s["mean_log_final_regret"])) for s in c.get("scores", [])
        ]
        for c in data.get("choice", [])
    }
    return TuningChoice(
        str(data["experiment"]),
        tuple(data["seeds"]),
        int(data["horizon"]),
        int(data["replications"]),
        chosen,
        scores,
    )


def tuned_config(config: ExperimentConfig, choice: TuningChoice) -> ExperimentConfig:
    """``config`` with a ``"<label> (tuned)"`` entry after each tuned entry and every claim that
    names a tuned label repeated on the tuned labels (the as-published claims stay)."""
    if choice.experiment != config.name:
        raise ValidationError(
            f"the tuning choice is for {choice.experiment!r}, not {config.name!r}"
        )
    if set(choice.seeds) & set(config.seeds):
        raise ValidationError("the tuning choice was made on evaluation seeds; tune on other seeds")
    raw = copy.deepcopy(config.raw)
    entries = []
    for e in raw.get("algorithms", []):
        entries.append(e)
        label = e.get("label", e["name"])
        if label in choice.chosen:
            t = copy.deepcopy(e)
            t["label"] = label + TUNED_SUFFIX
            t["params"] = {**t.get("params", {}), **choice.chosen[label]}
            entries.append(t)
    raw["algorithms"] = entries
    rename = {lab: lab + TUNED_SUFFIX for lab in choice.chosen}
    claims = list(raw.get("claims", []))
    rep = dict(raw.get("report", {}))
    if "claimed_order" in rep:
        claims.insert(0, {"kind": "order", "items": list(rep.pop("claimed_order"))})
        raw["report"] = rep
    extra = []
    for c in claims:
        names = [*c.get("items", []), *c.get("above", [])]
        if any(n in rename for n in names):
            t = copy.deepcopy(c)
            t["items"] = [rename.get(n, n) for n in c.get("items", [])]
            if "above" in c:
                t["above"] = [rename.get(n, n) for n in c["above"]]
            t["text"] = ("tuned: " + c.get("text", "")).strip()
            extra.append(t)
    if claims or extra:
        raw["claims"] = claims + extra
    rep = dict(raw.get("report", {}))
    rep["notes"] = (str(rep.get("notes", "")).strip() + "\n\n" + tuning_note(choice)).strip()
    raw["report"] = rep
    return parse_config(raw, source=config.source, default_name=config.name)


def tuning_note(choice: TuningChoice) -> str:
    """The report note of a tuned run: where the tuned series' constants come from, and which."""
    chosen = "; ".join(
        f"{label}: "
        + ", ".join(f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}" for k, v in p.items())
        for label, p in choice.chosen.items()
    )
    return (
        f'Each series labelled "(tuned)" runs the exploration constants `privbandits tune` chose on '
        f"tuning seeds {list(choice.seeds)} (never the evaluation seeds) at T = {choice.horizon}, "
        f"{choice.replications} replications per seed, as the lowest mean log final regret over the "
        f"cells; its privacy calibration and accounted guarantee are those of the series as "
        f"published.  Chosen: {chosen}."
    )
