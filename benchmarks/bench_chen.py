"""Throughput of the Chen et al. (2025) elimination bandits: compiled planning step vs the numpy loop.

The problem of the ``chen2025-bandit`` preset (d = 3, K = 10, ill-conditioned normalized Gaussian
features, Rademacher rewards).  Algorithm 4 (survivors of every released estimate, a barycentric
spanner, the uniform draw) runs each round for every replication; the library runs it in one
compiled loop (:func:`privbandits.algorithms.chen.planning_kernel.select_planned`).  The baseline
is the same algorithm with the plain per-round, per-replication numpy form
(:func:`privbandits.algorithms.chen.planning.planning_support`) in the same process; both give the
same trajectory for the same seed (checked here by the final regrets).

Usage::

    python benchmarks/bench_chen.py [--horizon 16384] [--replications 10]

Prints markdown in replication-rounds per second (rr/s); copy it into benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import privbandits as pb
from privbandits.algorithms.chen.jdp import ChenJDP
from privbandits.algorithms.chen.ldp import ChenLDPClient
from privbandits.algorithms.chen.planning import Board, planning_support


class NumpyChenJDP(ChenJDP):
    """chen-jdp with the per-round numpy planning loop (the baseline)."""

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        out = np.empty(self.R, dtype=np.int64)
        rng = self.streams.policy
        for r in range(self.R):
            support = planning_support(contexts[r], self.boards[r], self.spanner_C)
            out[r] = support[min(int(rng.random() * support.size), support.size - 1)]
        return out


def numpy_choose(
    self: ChenLDPClient, t: int, public: object, contexts: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """ChenLDPClient.choose with the per-round numpy planning loop (the baseline)."""
    out = np.empty(contexts.shape[0], dtype=np.int64)
    for r in range(contexts.shape[0]):
        n = int(public["n_boards"][r])  # type: ignore[index]
        boards = [
            Board(
                public["board_theta"][r, j],
                public["board_U"][r, j],  # type: ignore[index]
                float(public["board_scale"][r, j]),
                self.link,
            )
            for j in range(n)
        ]  # type: ignore[index]
        support = planning_support(contexts[r], boards, self.spanner_C)
        out[r] = support[min(int(rng.random() * support.size), support.size - 1)]
    return out


def env() -> pb.SyntheticEnv:
    cov = np.diag([1.0, np.exp(-3.0), np.exp(-6.0)]).tolist()
    return pb.SyntheticEnv(
        d=3,
        K=10,
        setting="single",
        contexts="gaussian_normalized",
        context_cov=cov,
        link="identity",
        noise="rademacher",
    )


def timed(alg: object, T: int, R: int) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    res = pb.simulate(alg, env(), horizon=T, replications=R, seed=0, checkpoints=10)
    return time.perf_counter() - start, res.final_regret


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon", type=int, default=16384)
    ap.add_argument("--replications", type=int, default=10)
    args = ap.parse_args()
    T, R = args.horizon, args.replications
    timed(pb.make("chen-jdp", epsilon=1.0, c_b=0.1), 2048, R)  # warm-up: compilation excluded
    timed(pb.make("chen-ldp", epsilon=1.0, c_b=0.2), 2048, R)
    print(f"load average {os.getloadavg()[0]:.2f}; d = 3, K = 10, T = {T}, R = {R}, epsilon = 1\n")
    print(
        "| algorithm | planning step | wall (s) | rr/s | ratio to the numpy loop | same final regret |"
    )
    print("|---|---|---|---|---|---|")
    t_np, reg_np = timed(NumpyChenJDP(epsilon=1.0, c_b=0.1), T, R)
    t_c, reg_c = timed(pb.make("chen-jdp", epsilon=1.0, c_b=0.1), T, R)
    same = bool(np.array_equal(reg_np, reg_c))
    print(f"| chen-jdp | numpy loop | {t_np:.1f} | {T * R / t_np:.3g} | 1x | |")
    print(f"| chen-jdp | compiled | {t_c:.1f} | {T * R / t_c:.3g} | {t_np / t_c:.1f}x | {same} |")
    fast = ChenLDPClient.choose
    ChenLDPClient.choose = numpy_choose  # type: ignore[assignment]
    try:
        t_np, reg_np = timed(pb.make("chen-ldp", epsilon=1.0, c_b=0.2), T, R)
    finally:
        ChenLDPClient.choose = fast  # type: ignore[method-assign]
    t_c, reg_c = timed(pb.make("chen-ldp", epsilon=1.0, c_b=0.2), T, R)
    same = bool(np.array_equal(reg_np, reg_c))
    print(f"| chen-ldp | numpy loop | {t_np:.1f} | {T * R / t_np:.3g} | 1x | |")
    print(f"| chen-ldp | compiled | {t_c:.1f} | {T * R / t_c:.3g} | {t_np / t_c:.1f}x | {same} |")


if __name__ == "__main__":
    main()
