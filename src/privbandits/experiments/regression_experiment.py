"""Private regression error experiment (Chen et al. 2025 report no experiments; this is ours).

L1 error ``E|<phi, theta_hat - theta*>|``, L2 error ``E <phi, theta_hat - theta*>^2`` (both on
held-out covariates), coverage of the confidence widths and their mean, for the re-weighted
estimator (Algorithm 2) against SSP ridge, clipped DP-GD and non-private least squares, over a grid of
``n``, ``d``, ``epsilon`` and the conditioning of the covariates.  Covariates
``phi = z / max(1, ||z||)`` with ``z ~ N(0, diag(s_i^2))``, ``s_i = exp(-c (i-1)/(d-1))``; or the
one-dimensional instance of Proposition 3.1 (``phi in {0, 1}``, ``P(phi = 1) = p0``).  Responses
are Rademacher with mean ``<phi, theta*>`` (``theta*`` uniform on the sphere, 0.8 in one dimension).

Run ``python -m privbandits.experiments.regression_experiment OUT.csv [--quick]``.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from privbandits.regression.baselines import DPGradientDescent, LeastSquares, SSPRidge
from privbandits.regression.reweighted import ReweightedRegression

__all__ = [
    "ESTIMATORS",
    "bandit_coverage_rows",
    "covariates",
    "coverage_rows",
    "error_rows",
    "iter_error_rows",
    "main",
    "released_boards",
    "seed_rows",
    "summarize",
]

#: Estimators compared, by label: factory(epsilon) -> estimator.
ESTIMATORS: dict[str, Callable[[float], Any]] = {
    "reweighted": lambda eps: ReweightedRegression(eps),
    "reweighted-bernstein": lambda eps: ReweightedRegression(eps, lam_shape="bernstein"),
    "ssp-ridge": lambda eps: SSPRidge(eps),
    "dp-gd": lambda eps: DPGradientDescent(eps, steps=50),
    "least-squares": lambda eps: LeastSquares(),
}


def covariates(n: int, d: int, c: float, p0: float | None, rng: np.random.Generator) -> np.ndarray:
    """The covariate law of the module docstring (``p0`` given: the 1-D two-point instance)."""
    if p0 is not None:
        return (rng.random((n, 1)) < p0).astype(float)
    s = np.exp(-c * np.arange(d) / max(d - 1, 1))
    z = rng.normal(size=(n, d)) * s
    out: np.ndarray = z / np.maximum(1.0, np.linalg.norm(z, axis=1))[:, None]
    return out


def error_rows(
    grid: Iterable[dict[str, Any]],
    seeds: int,
    n_test: int = 100_000,
    estimators: Iterable[str] = tuple(ESTIMATORS),
) -> list[dict[str, Any]]:
    """One row per (grid cell, estimator, seed)."""
    return list(iter_error_rows(grid, seeds, n_test, estimators))


def iter_error_rows(
    grid: Iterable[dict[str, Any]],
    seeds: int,
    n_test: int = 100_000,
    estimators: Iterable[str] = tuple(ESTIMATORS),
) -> Iterator[dict[str, Any]]:
    """:func:`error_rows` one row at a time."""
    names = tuple(estimators)
    for cell in grid:
        for seed in range(seeds):
            yield from seed_rows(cell, seed, n_test, names)


def seed_rows(
    cell: dict[str, Any],
    seed: int,
    n_test: int = 100_000,
    estimators: Iterable[str] = tuple(ESTIMATORS),
) -> Iterator[dict[str, Any]]:
    """The rows of one grid cell and one seed (one per estimator, all on the same data)."""
    n, d, eps, c, p0 = cell["n"], cell["d"], cell["epsilon"], cell.get("c", 0.0), cell.get("p0")
    rng = np.random.default_rng([seed, n, d])
    if p0 is None:
        theta = rng.normal(size=d)
        theta /= np.linalg.norm(theta)
    else:
        theta = np.array([0.8])
    X = covariates(n, d, c, p0, rng)
    y = np.where(rng.random(n) < (1.0 + X @ theta) / 2.0, 1.0, -1.0)
    Xt = covariates(n_test, d, c, p0, rng)
    f = Xt @ theta
    for name in estimators:
        t0 = time.perf_counter()
        est = ESTIMATORS[name](eps).fit(X, y, rng)
        err = Xt @ est.theta - f
        w = est.width(Xt)
        miss = np.abs(np.clip(Xt @ est.theta, -1, 1) - f) > w + 1e-12
        yield {
            **cell,
            "c": c,
            "p0": p0,
            "estimator": name,
            "seed": seed,
            "l1": float(np.mean(np.abs(err))),
            "l2": float(np.mean(err**2)),
            "coverage": float(1.0 - np.mean(miss)),
            "all_covered": bool(not np.any(miss)),
            "mean_width": float(np.mean(w)),
            "epsilon_accounted": est.guarantee.epsilon,
            "seconds": time.perf_counter() - t0,
        }


def coverage_rows(
    ns: Iterable[int],
    d: int,
    epsilons: Iterable[float],
    seeds: int,
    c: float = 3.0,
    n_test: int = 20_000,
) -> list[dict[str, Any]]:
    """Width multiplier each fit needs: ``c_b* = max_phi |f_hat - f*| / (L_nu e_bar ||U phi||)`` on held-out
    covariates (the widths with multiplier ``c_b`` cover every held-out point iff ``c_b >= c_b*``)."""
    rows = []
    for n, eps in itertools.product(ns, epsilons):
        est = ReweightedRegression(eps)
        for seed in range(seeds):
            rng = np.random.default_rng([seed, n, d, 7])
            theta = rng.normal(size=d)
            theta /= np.linalg.norm(theta)
            X = covariates(n, d, c, None, rng)
            y = np.where(rng.random(n) < (1.0 + X @ theta) / 2.0, 1.0, -1.0)
            Xt = covariates(n_test, d, c, None, rng)
            e = est.fit(X, y, rng)
            unit_width = e.width_scale / est.c_b * np.linalg.norm(Xt @ e.width_matrix, axis=1)
            need = float(np.max(np.abs(e.predict(Xt) - Xt @ theta) / unit_width))
            rows.append(
                {
                    "n": n,
                    "d": d,
                    "epsilon": eps,
                    "c": c,
                    "seed": seed,
                    "c_b_needed": need,
                    "e_bar": est.e_bar(n, d),
                    "lam": est.lam(n, d),
                }
            )
    return rows


#: The environment of the chen2025-bandit preset (d = 3, K = 10, scales 1, e^-3/2, e^-3 of the features).
BANDIT_ENV: dict[str, Any] = {
    "d": 3,
    "K": 10,
    "contexts": "gaussian_normalized",
    "noise": "rademacher",
    "context_cov": np.diag(np.exp(-3.0 * np.arange(3) / 2.0) ** 2).tolist(),
}
#: (algorithm, epsilon) of the bandit coverage study (None: non-private).
BANDIT_COVERAGE_RUNS: tuple[tuple[str, float | None], ...] = (
    ("chen-elim", None),
    ("chen-jdp", 1.0),
    ("chen-jdp", 0.3),
    ("chen-ldp", 1.0),
    ("chen-ldp", 0.3),
)


def released_boards(alg: Any) -> list[list[Any]]:
    """The estimates a Chen et al. (2025) bandit released, per replication, as
    :class:`~privbandits.algorithms.chen.planning.Board` objects (curator: its billboard; local model:
    the untrusted server's posted ``(theta, U, scale)``)."""
    holder = alg if hasattr(alg, "billboard") else alg.server
    return [holder.billboard.boards(r, holder.reg.link) for r in range(holder.R)]


def bandit_coverage_rows(
    algorithm: str,
    params: dict[str, Any],
    env_args: dict[str, Any],
    horizon: int,
    replications: int,
    seed: int = 0,
    n_test: int = 20_000,
) -> list[dict[str, Any]]:
    """Coverage of the widths the bandit actually used: run ``algorithm`` (``chen-elim``, ``chen-jdp`` or
    ``chen-ldp``) on the synthetic environment ``env_args``, then for every released estimate of every
    replication compute, on ``n_test`` held-out arm features from the environment's feature law,
    ``c_b* = max |f_hat - f*| / (L_nu e_bar ||U phi||)`` (the estimate's widths with multiplier ``c_b``
    cover every held-out point iff ``c_b >= c_b*``) and whether the widths at the run's ``c_b`` covered."""
    import privbandits as pb
    from privbandits.algorithms.chen.schedule import epoch_ends
    from privbandits.envs.contexts import sample_contexts

    env = pb.SyntheticEnv(**env_args)
    alg = pb.make(algorithm, **params)
    pb.simulate(alg, env, horizon=horizon, replications=replications, seed=seed, engine="reference")
    theta_star = np.asarray(env.theta_matrix if hasattr(env, "theta_matrix") else env._theta)
    c_b = float(alg.c_b)
    rng = np.random.default_rng([seed, 991])
    rows = []
    ends = [0, *(int(e) for e in epoch_ends(alg.spec.horizon, alg.first_epoch))]
    for r, boards in enumerate(released_boards(alg)):
        F, _ = sample_contexts(rng, (n_test,), env.d, env.contexts, env.context_bound, env.cov_sqrt)
        f_star = np.clip(boards[0].link.nu(F @ theta_star[r]), -1.0, 1.0) if boards else None
        fitted = [j for j in range(len(ends) - 1) if ends[j + 1] - ends[j] >= alg.min_fit]
        for j, board in enumerate(boards):
            f_hat, b = board.bounds(F)
            V = F @ board.U
            unit = board.scale / c_b * np.sqrt(np.einsum("ij,ij->i", V, V))
            err = np.abs(f_hat - f_star)
            n_epoch = ends[fitted[j] + 1] - ends[fitted[j]]
            rows.append(
                {
                    "algorithm": algorithm,
                    "epsilon": float(params.get("epsilon", math.inf)),
                    "c_b": c_b,
                    "replication": r,
                    "epoch": fitted[j] + 1,
                    "n": n_epoch,
                    "c_b_needed": float(np.max(err / unit)),
                    "covered": bool(np.all(err <= b + 1e-12)),
                }
            )
    return rows


def summarize(path: str, metric: str = "l1") -> str:
    """Markdown table of the mean ``metric`` per grid cell and estimator from a CSV of :func:`error_rows`
    (with the best private estimator of each cell in the last column)."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    cols = ("block", "n", "d", "epsilon", "c", "p0")
    cells: dict[tuple[str, ...], dict[str, list[float]]] = {}
    names: list[str] = []
    for r in rows:
        v = r[metric]
        x = float(v == "True") if v in ("True", "False") else float(v)
        cells.setdefault(tuple(r[c] for c in cols), {}).setdefault(r["estimator"], []).append(x)
        if r["estimator"] not in names:
            names.append(r["estimator"])
    private = [n for n in names if n != "least-squares"]
    out = [
        "| " + " | ".join((*cols, *names, "best private")) + " |",
        "|" + "---|" * (len(cols) + len(names) + 1),
    ]
    for key, by in cells.items():
        means = {n: float(np.mean(v)) for n, v in by.items()}
        seeds = len(next(iter(by.values())))
        best = min((n for n in private if n in means), key=lambda n: means[n])
        vals = [f"{means[n]:.3g}" if n in means else "" for n in names]
        out.append("| " + " | ".join((*key, *vals, f"{best} ({seeds} seeds)")) + " |")
    return "\n".join(out)


def _grid(quick: bool) -> list[dict[str, Any]]:
    ns = [10_000, 100_000] if quick else [10_000, 100_000, 1_000_000]
    cells: list[dict[str, Any]] = []
    for p0, eps in itertools.product(
        [1e-1, 1e-2, 1e-3, 1e-4, 1e-5], [0.1, 1.0]
    ):  # Prop 3.1 instance
        cells.append(
            {"block": "two-point", "n": ns[-1], "d": 1, "epsilon": eps, "c": 0.0, "p0": p0}
        )
    for n, eps in itertools.product(ns, [0.01, 0.03]):  # strong privacy, small d, ill-conditioned
        cells.append({"block": "strong-privacy", "n": n, "d": 2, "epsilon": eps, "c": 6.0})
    for n, eps, c in itertools.product(
        ns, [0.1, 1.0], [0.0, 3.0, 6.0]
    ):  # conditioning sweep, d = 4
        cells.append({"block": "conditioning", "n": n, "d": 4, "epsilon": eps, "c": c})
    for d in [2, 10] if quick else [2, 5, 10, 20]:  # dimension sweep
        cells.append({"block": "dimension", "n": ns[-1], "d": d, "epsilon": 1.0, "c": 3.0})
    return cells


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="CSV file to write")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument(
        "--coverage", action="store_true", help="width multipliers needed at bandit epoch sizes"
    )
    ap.add_argument(
        "--bandit-coverage",
        type=int,
        metavar="T",
        default=0,
        help="coverage of the estimates released in bandit runs of horizon T (the chen2025-bandit "
        "environment, c_b = 0.1, --seeds replications)",
    )
    args = ap.parse_args(argv)
    rows: Iterable[dict[str, Any]]
    if args.bandit_coverage:
        rows = (
            row
            for alg, eps in BANDIT_COVERAGE_RUNS
            for row in bandit_coverage_rows(
                alg,
                {"c_b": 0.1, **({} if eps is None else {"epsilon": eps})},
                BANDIT_ENV,
                args.bandit_coverage,
                args.seeds,
            )
        )
    elif args.coverage:
        rows = coverage_rows([1024, 4096, 16_384, 65_536], 3, [0.3, 1.0, math.inf], args.seeds)
    else:
        rows = iter_error_rows(_grid(args.quick), 2 if args.quick else args.seeds)
    count = 0
    with open(args.out, "w", newline="") as fh:
        wr: csv.DictWriter[str] | None = None
        for row in rows:  # written as produced: an interrupted run keeps its finished rows
            if wr is None:
                wr = csv.DictWriter(fh, fieldnames=list(row))
                wr.writeheader()
            wr.writerow(row)
            fh.flush()
            count += 1
    print(f"{count} rows -> {args.out}")


if __name__ == "__main__":  # pragma: no cover
    main()
