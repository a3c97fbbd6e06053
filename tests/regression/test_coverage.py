"""Coverage of the confidence widths at the chen2025-bandit preset's multipliers across seeds.

The claim checked is ``P(the widths cover f* at every held-out point) >= 1 - alpha`` with
``alpha = 0.05``.  Over ``N`` independent seeds the number of covering fits is binomial; the test
accepts when it is at least ``N (1 - alpha) - 3 sqrt(N alpha (1 - alpha))`` (three binomial standard
deviations below the claimed mean: at N = 60 a coverage of 95 % fails with probability 0.3 %, one of
85 % passes with probability 0.44 and one of 80 % with probability 0.13).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privbandits as pb
from privbandits.envs.contexts import sample_contexts
from privbandits.experiments.presets import load_preset
from privbandits.experiments.regression_experiment import BANDIT_ENV, bandit_coverage_rows

ALPHA = 0.05


def preset_c_b(algorithm: str) -> float:
    """The width multiplier the chen2025-bandit preset runs ``algorithm`` with."""
    entry = next(a for a in load_preset("chen2025-bandit").algorithms if a.name == algorithm)
    return float(entry.variants[0][0]["c_b"])


def binomial_threshold(N: int, alpha: float = ALPHA, z: float = 3.0) -> int:
    """Smallest count of covering fits accepted: ``ceil(N (1 - alpha) - z sqrt(N alpha (1 - alpha)))``."""
    return math.ceil(N * (1 - alpha) - z * math.sqrt(N * alpha * (1 - alpha)))


def test_threshold() -> None:
    assert binomial_threshold(60) == 52 and binomial_threshold(400) == 367


@pytest.mark.parametrize("algorithm", ["chen-jdp", "chen-ldp"])
def test_epoch_estimator_covers_at_the_preset_multiplier(algorithm: str) -> None:
    """The per-epoch estimator of the chen2025-bandit preset (epsilon = 1, its c_b, T = 2^16, its failure
    probability per epoch), fitted on the first epoch's n = 1024 users drawn from the environment's feature
    law: covers f* at 2,000 held-out features in at least binomial_threshold(60) of 60 seeds."""
    env = pb.SyntheticEnv(**BANDIT_ENV)
    spec = env.reset(1, pb.core.make_streams(0), 2**16)
    alg = pb.make(algorithm, epsilon=1.0, c_b=preset_c_b(algorithm))
    alg.reset(spec, 1, pb.core.make_streams(0))
    reg = alg.regressor(spec)
    N, n, d = 60, 1024, spec.d
    covered = 0
    for seed in range(N):
        rng = np.random.default_rng([seed, 17])
        theta = rng.normal(size=d)
        theta /= np.linalg.norm(theta)
        X, _ = sample_contexts(rng, (n,), d, env.contexts, env.context_bound, env.cov_sqrt)
        y = np.where(rng.random(n) < (1.0 + X @ theta) / 2.0, 1.0, -1.0)
        est = reg.fit(X, y, rng)
        F, _ = sample_contexts(rng, (2000,), d, env.contexts, env.context_bound, env.cov_sqrt)
        covered += int(np.all(np.abs(est.predict(F) - F @ theta) <= est.width(F) + 1e-12))
    assert covered >= binomial_threshold(N), covered


@pytest.mark.slow
def test_released_estimates_cover_in_bandit_runs() -> None:
    """The estimates chen-jdp and chen-ldp actually release in bandit runs (T = 2^13, first epoch 1024,
    the preset's c_b, epsilon = 1, 12 replications each: about 36 estimates per algorithm) cover f* at
    every held-out feature in at least the binomial threshold of them."""
    for algorithm in ("chen-jdp", "chen-ldp"):
        params = {"epsilon": 1.0, "c_b": preset_c_b(algorithm)}
        rows = bandit_coverage_rows(algorithm, params, BANDIT_ENV, 2**13, 12, n_test=5000)
        assert len(rows) >= 30
        assert sum(r["covered"] for r in rows) >= binomial_threshold(len(rows)), algorithm
