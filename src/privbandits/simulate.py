"""The single place where an algorithm meets an environment: :func:`simulate`.

It resets both from one seed (the documentation's Concepts: randomness and reproducibility), picks a driver (:mod:`privbandits.engine`) and
records cumulative pseudo-regret, realized reward and parameter-estimation error at checkpoints:

* ``engine="reference"``: message level, checks the trust boundary every round (every algorithm);
* ``engine="compiled"``: the same compiled steps in one compiled loop (algorithms with a kernel);
* ``engine="aggregate"``: the exact batch path of batched elimination on fixed action sets;
* ``engine="auto"`` (default): aggregate when supported, else compiled when available, else
  reference.  Reference and compiled give the same trajectory for the same seed.
"""

from __future__ import annotations

import contextlib
import html
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.algorithms.base import Algorithm
from privbandits.core.errors import ValidationError
from privbandits.core.rng import make_streams
from privbandits.core.validation import check_choice, check_int
from privbandits.engine import ENGINES
from privbandits.engine.aggregate import drive_aggregate, supports_aggregate
from privbandits.engine.compiled import drive_compiled, supports_compiled
from privbandits.engine.convex import convex_kernel, drive_convex, is_convex_env
from privbandits.engine.recorder import Recorder
from privbandits.engine.reference import drive_reference
from privbandits.envs.base import Environment
from privbandits.privacy.guarantee import PrivacyGuarantee

__all__ = ["SimulationResult", "make_checkpoints", "simulate"]

ProgressFn = Callable[[int], None]


def make_checkpoints(
    horizon: int,
    log_points: int = 50,
    every: int | None = None,
    points: Sequence[int] | None = None,
) -> np.ndarray:
    """Rounds (1-based counts ``t``) after which cumulative quantities are recorded.

    Parameters
    ----------
    horizon : int
        Number of rounds T; always included.
    log_points : int
        Number of log-spaced points between 1 and T (0 for none).
    every : int, optional
        Also record every ``every`` rounds.
    points : sequence of int, optional
        Explicit extra points (each in [1, T]).
    """
    T = check_int("horizon", horizon, 1)
    pts = [np.array([T])]
    if log_points:
        check_int("log_points", log_points, 0)
        pts.append(np.unique(np.round(np.logspace(0, np.log10(T), log_points)).astype(int)))
    if every:
        check_int("every", every, 1)
        pts.append(np.arange(every, T + 1, every))
    if points is not None:
        p = np.asarray(points, dtype=int)
        if p.size and (p.min() < 1 or p.max() > T):
            raise ValidationError(
                f"checkpoints must lie in [1, {T}], got range [{p.min()}, {p.max()}]"
            )
        pts.append(p)
    return np.unique(np.concatenate(pts))


@dataclass
class SimulationResult:
    """Outcome of one :func:`simulate` call (all arrays have the replication axis first).

    Attributes
    ----------
    checkpoints : ndarray of shape (n,)
        Round counts t at which the cumulative quantities were recorded.
    regret : ndarray of shape (R, n)
        Cumulative pseudo-regret ``sum_{s<=t} max_a mu_s(a) - mu_s(a_s)``.
    reward : ndarray of shape (R, n)
        Cumulative realized reward.
    estimation_error : ndarray of shape (R, n) or None
        ``||theta_hat_t - theta*||_2`` (Frobenius over arms in the multi setting), when the
        algorithm exposes an estimate.
    guarantee : PrivacyGuarantee
        The algorithm's privacy guarantee, from its accountant.
    resolved_params : dict
        Every constant the run used after resolving presets and defaults (noise scales, clip
        norms, budget split, step sizes), from the algorithm's calibration.
    engine : str
        The driver that ran ("reference", "compiled" or "aggregate").
    """

    algorithm: str
    params: dict[str, Any]
    trust_model: str
    preset: str
    guarantee: PrivacyGuarantee
    env: dict[str, Any]
    seed: int
    horizon: int
    replications: int
    checkpoints: np.ndarray
    regret: np.ndarray
    reward: np.ndarray
    estimation_error: np.ndarray | None
    wall_time: float
    extra: dict[str, Any] = field(default_factory=dict)
    resolved_params: dict[str, Any] = field(default_factory=dict)
    engine: str = "reference"

    @property
    def final_regret(self) -> np.ndarray:
        """Cumulative regret at the horizon, one value per replication."""
        return self.regret[:, -1]

    def summary(self) -> dict[str, Any]:
        """Final regret across replications (mean, sample std, min, max) and the accounted guarantee
        (``epsilon``, ``delta``, ``trust_model`` and its text)."""
        fr = self.final_regret
        g = self.guarantee
        return {
            "mean": float(fr.mean()),
            "std": float(fr.std(ddof=1)) if fr.size > 1 else 0.0,
            "min": float(fr.min()),
            "max": float(fr.max()),
            "epsilon": float(g.epsilon),
            "delta": float(g.delta),
            "trust_model": self.trust_model,
            "guarantee": str(g),
        }

    def to_frame(self) -> Any:
        """A pandas DataFrame: one row per replication x checkpoint, with the run's algorithm, seed,
        engine, accounted guarantee and resolved parameters as columns (``param.<name>``).

        Needs pandas (``pip install pandas``).
        """
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - pandas ships with the test and data extras
            raise ValidationError(
                "SimulationResult.to_frame needs pandas: pip install pandas"
            ) from None
        R, n = self.regret.shape
        cols: dict[str, Any] = {
            "replication": np.repeat(np.arange(R), n),
            "t": np.tile(self.checkpoints, R),
            "regret": self.regret.reshape(-1),
            "reward": self.reward.reshape(-1),
        }
        if self.estimation_error is not None:
            cols["estimation_error"] = self.estimation_error.reshape(-1)
        frame = pd.DataFrame(cols)
        g = self.guarantee
        meta: dict[str, Any] = {
            "algorithm": self.algorithm,
            "trust_model": self.trust_model,
            "preset": self.preset,
            "epsilon": float(g.epsilon),
            "delta": float(g.delta),
            "seed": self.seed,
            "horizon": self.horizon,
            "engine": self.engine,
        }
        meta.update(
            {
                f"param.{k}": v
                for k, v in self.resolved_params.items()
                if isinstance(v, (bool, int, float, str)) or v is None
            }
        )
        for k, v in meta.items():
            frame[k] = v
        return frame

    def _repr_html_(self) -> str:
        """Notebook display: the final-regret summary and the accounted guarantee."""
        s = self.summary()
        rows = [
            ("algorithm", self.algorithm),
            ("guarantee", s["guarantee"]),
            ("engine", self.engine),
            ("horizon T", f"{self.horizon:,}"),
            ("replications", str(self.replications)),
            (
                "final regret",
                f"{s['mean']:.4g} ± {s['std']:.3g} (min {s['min']:.4g}, max {s['max']:.4g})",
            ),
            ("wall time", f"{self.wall_time:.2f} s"),
        ]
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>"
            f"{html.escape(v)}</td></tr>"
            for k, v in rows
        )
        return f"<table><caption>privbandits SimulationResult</caption>{body}</table>"


def _pick_engine(engine: str, alg: Algorithm, env: Environment) -> str:
    engine = check_choice("engine", engine, ENGINES)
    agg, comp = supports_aggregate(alg, env), supports_compiled(alg)
    if is_convex_env(env):  # continuous actions: the bandit-convex-optimization drivers
        comp = convex_kernel(alg) is not None
        if engine == "aggregate" or (engine == "compiled" and not comp):
            raise ValidationError(
                f"engine={engine!r}: on a loss environment (continuous actions) {alg.name!r} runs "
                f"on the {'reference or compiled' if comp else 'reference'} driver only (use "
                "'auto' or 'reference')"
            )
        return "compiled" if comp and engine in ("auto", "compiled") else "reference"
    if engine == "auto":
        return "aggregate" if agg else "compiled" if comp else "reference"
    if engine == "aggregate" and not agg:
        raise ValidationError(
            f"engine='aggregate' needs a batched elimination algorithm on a fixed action set; "
            f"{alg.name!r} on {type(env).__name__} does not support it (use 'auto' or 'reference')"
        )
    if engine == "compiled" and not comp:
        raise ValidationError(
            f"engine='compiled' needs an algorithm with a compiled kernel; {alg.name!r} has none "
            "(use 'auto' or 'reference')"
        )
    return engine


@contextlib.contextmanager
def _progress_bar(
    progress: ProgressFn | bool | None, name: str, T: int
) -> Iterator[ProgressFn | None]:
    """The reporting function of ``simulate(progress=...)``: a rich bar for ``True``."""
    if progress is True:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            transient=False,
        ) as bar:
            task = bar.add_task(f"{name} (rounds)", total=T)
            yield lambda done: bar.update(task, completed=done)
        return
    yield progress if callable(progress) else None


def simulate(
    algorithm: Algorithm,
    env: Environment,
    horizon: int,
    replications: int = 1,
    seed: int = 0,
    checkpoints: Sequence[int] | np.ndarray | int | None = None,
    progress: ProgressFn | bool | None = None,
    engine: str = "auto",
) -> SimulationResult:
    """Run ``algorithm`` on ``env`` for ``horizon`` rounds in ``replications`` parallel copies.

    Parameters
    ----------
    algorithm : Algorithm
        A freshly constructed or reused algorithm (it is reset here).
    env : Environment
        The environment (reset here; the same seed gives the same instance, contexts and
        rewards for every algorithm).
    horizon : int
        Number of rounds T.
    replications : int
        Number of independent replications R, advanced together.
    seed : int
        Root seed (the documentation's Concepts: randomness and reproducibility).
    checkpoints : int, sequence of int or None
        An int ``n`` asks for ``n`` log-spaced checkpoints; a sequence gives them explicitly
        (1-based round counts); None means 50 log-spaced points plus the horizon.
    progress : bool or callable, optional
        ``True`` shows a progress bar (rich; in a terminal or a notebook); a callable is called
        with the number of rounds completed, about 200 times per run.
    engine : {"auto", "reference", "compiled", "aggregate"}
        The driver (see the module docstring).

    Returns
    -------
    SimulationResult
    """
    T = check_int("horizon", horizon, 1)
    R = check_int("replications", replications, 1)
    check_choice("engine", engine, ENGINES)
    if checkpoints is None:
        ckpt = make_checkpoints(T)
    elif isinstance(checkpoints, (int, np.integer)):
        ckpt = make_checkpoints(T, log_points=int(checkpoints))
    else:
        ckpt = make_checkpoints(
            T, log_points=0, points=[int(c) for c in np.asarray(checkpoints).ravel()]
        )
    streams = make_streams(seed)
    spec = env.reset(R, streams, T)
    algorithm.reset(spec, R, streams)
    chosen = _pick_engine(engine, algorithm, env)
    rec = Recorder(algorithm.estimate, env.theta_star, R, ckpt)

    stride = max(1, T // 200)
    last = [0]
    if progress is not None and not isinstance(progress, bool) and not callable(progress):
        raise ValidationError(
            f"progress must be True, False, None or a callable taking the rounds done, "
            f"got {type(progress).__name__}"
        )
    with _progress_bar(progress, algorithm.name, T) as report:

        def tick(done: int) -> None:
            if report is not None and (done - last[0] >= stride or done == T):
                last[0] = done
                report(done)

        start = time.perf_counter()
        if chosen == "aggregate":
            drive_aggregate(algorithm, env, T, rec, tick)
        elif chosen == "compiled":
            drive_compiled(algorithm, env, T, rec, tick)
        elif is_convex_env(env):
            drive_convex(algorithm, env, T, rec, tick)
        else:
            drive_reference(algorithm, env, T, rec, tick)
        wall = time.perf_counter() - start
    return run_result(algorithm, env, rec, seed, T, R, ckpt, wall, chosen)


def run_result(
    algorithm: Algorithm,
    env: Environment,
    rec: Recorder,
    seed: int,
    T: int,
    R: int,
    ckpt: np.ndarray,
    wall_time: float,
    engine: str,
) -> SimulationResult:
    """The :class:`SimulationResult` of ``algorithm``'s finished run on ``env`` (recorded in
    ``rec``); shared by :func:`simulate` and the fused driver."""
    return SimulationResult(
        algorithm=algorithm.name,
        params=algorithm.get_params(),
        trust_model=algorithm.trust_model,
        preset=algorithm.calibration.preset,
        guarantee=algorithm.guarantee,
        env=env.describe(),
        seed=seed,
        horizon=T,
        replications=R,
        checkpoints=ckpt,
        regret=rec.regret,
        reward=rec.reward,
        estimation_error=rec.err,
        wall_time=wall_time,
        extra={"contexts_clipped": env.n_clipped},
        resolved_params=algorithm.resolved_params(),
        engine=engine,
    )
