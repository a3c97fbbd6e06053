"""The ziggurat samplers: exact in distribution, and bit-identical to numpy where they claim it.

* the inline-PCG64 step, normal and exponential ziggurats reproduce numpy's ``Generator`` draws
  bit for bit (and leave the generator in the same state), including the rare tail and wedge
  paths (a million draws visit the base strip ~260 times);
* the Laplace ziggurat (a stream of its own) against numpy's ``Generator.laplace``: two-sample
  Kolmogorov-Smirnov, moments, symmetry and scale, every threshold from the statistic's null
  distribution at a fixed seed;
* tail probabilities near 1e-6 (``P(|Z| > 4.89)``, ``P(|L| > 13.8)``) against exact binomial
  bounds, so a truncated or mis-scaled tail fails.

Each check is a function of a sample so that it can be run by hand on a deliberately wrong
sampler (``python -m tests.privacy.test_ziggurat``).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numba as nb
import numpy as np
import pytest
from scipy import stats

from privbandits.privacy import ziggurat as zig

#: Per-check false-alarm probability (each check is run once at a fixed seed).
ALPHA = 1e-6


@nb.njit(cache=False)
def _laplace_sample(rng: np.random.Generator, n: int) -> np.ndarray:  # pragma: no cover
    out = np.empty(n)
    for i in range(n):
        out[i] = zig.laplace_ziggurat(rng)
    return out


@nb.njit(cache=False)
def _laplace_tail_count(rng: np.random.Generator, n: int, t: float) -> int:  # pragma: no cover
    c = 0
    for _ in range(n):
        if abs(zig.laplace_ziggurat(rng)) > t:
            c += 1
    return c


def _ks_threshold(n: int, m: int, alpha: float = ALPHA) -> float:
    """Two-sample KS critical value: the asymptotic Kolmogorov quantile ``sqrt(-log(alpha/2)/2)``
    times ``sqrt((n + m) / (n m))``."""
    return math.sqrt(-math.log(alpha / 2.0) / 2.0) * math.sqrt((n + m) / (n * m))


def _binomial_ok(count: int, n: int, p: float, alpha: float = ALPHA) -> bool:
    lo = stats.binom.ppf(alpha / 2.0, n, p)
    hi = stats.binom.isf(alpha / 2.0, n, p)
    return bool(lo <= count <= hi)


def check_two_sample(x: np.ndarray, y: np.ndarray) -> None:
    """KS distance of two samples of one law below its ``ALPHA`` critical value."""
    d = stats.ks_2samp(x, y).statistic
    assert d < _ks_threshold(x.size, y.size), d


def check_laplace_moments(x: np.ndarray, scale: float) -> None:
    """Mean 0, ``E|X| = b``, ``E X^2 = 2 b^2`` and a symmetric sign, each within the CLT bound
    (5.3 standard errors: two-sided 1e-7) of its true value; ``Var|X| = b^2``,
    ``Var X^2 = 20 b^4``, ``Var X = 2 b^2``."""
    n = x.size
    z = 5.3
    b = scale
    assert abs(x.mean()) < z * math.sqrt(2.0 * b * b / n), x.mean()
    assert abs(np.abs(x).mean() - b) < z * math.sqrt(b * b / n), np.abs(x).mean()
    assert abs((x * x).mean() - 2.0 * b * b) < z * math.sqrt(20.0 * b**4 / n), (x * x).mean()
    pos = int((x > 0).sum())
    assert _binomial_ok(pos, n, 0.5), pos
    # magnitudes of the two signs: one law (the sign is independent of |X|)
    check_two_sample(np.abs(x[x > 0]), -x[x < 0])


def check_normal_tails(count_above: Callable[[float], tuple[int, int]]) -> None:
    """``P(|Z| > t)`` at t = 2.0 (layers), 3.8 (just beyond the base strip's r = 3.654) and
    4.89 (~1.0e-6) within exact binomial bounds; ``count_above(t) = (count, n)``."""
    for t in (2.0, 3.8, 4.89):
        c, n = count_above(t)
        p = 2.0 * stats.norm.sf(t)
        assert _binomial_ok(c, n, p), (t, c, n * p)


def _normal_counter(seed: int, n: int, chunk: int = 1 << 22) -> Callable[[float], tuple[int, int]]:
    def count(t: float) -> tuple[int, int]:
        rng = np.random.default_rng([seed, int(t * 1000)])
        c = 0
        for _ in range(n // chunk):
            c += int((np.abs(zig.pcg64_standard_normal(rng, chunk)) > t).sum())
        return c, (n // chunk) * chunk

    return count


# ------------------------------------------------------------------------------------------
# bit-identity with numpy
# ------------------------------------------------------------------------------------------
def test_pcg64_step_and_draws_are_numpys() -> None:
    a, b = np.random.default_rng(12345), np.random.default_rng(12345)
    assert np.array_equal(zig.pcg64_raw(a, 1000), b.bit_generator.random_raw(1000))
    x = zig.pcg64_standard_normal(a, (500_000, 2))
    assert np.array_equal(x, b.standard_normal((500_000, 2)))
    assert (np.abs(x) > 3.6541528853610088).sum() > 100  # the exact tail path was taken
    e = zig.pcg64_standard_exponential(a, 1_000_000)
    assert np.array_equal(e, b.standard_exponential(1_000_000))
    assert (e > 7.69711747013104972).sum() > 100
    assert a.bit_generator.state == b.bit_generator.state
    assert a.standard_normal() == b.standard_normal()  # the generator continues as numpy's


def test_other_bit_generators_fall_back_to_numpy() -> None:
    a, b = (np.random.Generator(np.random.Philox(3)) for _ in range(2))
    assert np.array_equal(zig.pcg64_standard_normal(a, 1000), b.standard_normal(1000))
    assert np.array_equal(zig.pcg64_standard_exponential(a, 7), b.standard_exponential(7))
    assert np.array_equal(zig.pcg64_raw(a, 5), b.bit_generator.random_raw(5))


def test_normal_two_sample_and_tails() -> None:
    x = zig.pcg64_standard_normal(np.random.default_rng(1), 400_000)
    check_two_sample(x, np.random.default_rng(2).standard_normal(400_000))
    n = x.size
    assert abs(x.mean()) < 5.3 / math.sqrt(n) and abs(x.var() - 1.0) < 5.3 * math.sqrt(2.0 / n)


@pytest.mark.slow
def test_normal_tail_probability_near_1e6() -> None:
    check_normal_tails(_normal_counter(7, 1 << 28))  # 2.7e8 draws: ~270 beyond 4.89


# ------------------------------------------------------------------------------------------
# the Laplace ziggurat
# ------------------------------------------------------------------------------------------
def test_laplace_matches_numpy_two_sample_and_moments() -> None:
    x = _laplace_sample(np.random.default_rng(3), 400_000)
    check_two_sample(x, np.random.default_rng(4).laplace(0.0, 1.0, 400_000))
    check_laplace_moments(x, 1.0)
    check_laplace_moments(2.5 * x, 2.5)  # laplace_draw's scaling


def test_laplace_tail_probability_near_1e6() -> None:
    n = 100_000_000
    for t in (6.0, 13.8155):  # beyond the ziggurat's base strip (7.697) and at ~1e-6
        c = _laplace_tail_count(np.random.default_rng([5, int(t)]), n, t)
        assert _binomial_ok(c, n, math.exp(-t)), (t, c, n * math.exp(-t))


@pytest.mark.slow
def test_the_switch_routes_laplace_draws_through_the_ziggurat(tmp_path: Path) -> None:
    """Under ``PRIVBANDITS_SAMPLER=ziggurat`` the audited sampler ``laplace_draw`` is
    ``scale * laplace_ziggurat`` word for word, and the environment's Gaussian reward variates
    keep numpy's values."""
    code = (
        "import numpy as np, privbandits.privacy.samplers as s, privbandits.privacy.ziggurat as z;"
        "from privbandits.envs.noise import RewardNoise;"
        "v = np.zeros(1000); s.add_laplace(np.random.default_rng(9), 2.0, v);"
        "w = np.zeros(1000); z.laplace_ziggurat(np.random.default_rng(0));"
        "import numba as nb;"
        "f = nb.njit(lambda r, n: [2.0 * z.laplace_ziggurat(r) for _ in range(n)]);"
        "assert np.array_equal(v, np.array(f(np.random.default_rng(9), 1000)));"
        "g = RewardNoise('gaussian', 0.1).draw_variates(np.random.default_rng(4), (33, 3));"
        "assert np.array_equal(g, np.random.default_rng(4).standard_normal((33, 3)));"
        "print('ok')"
    )
    env = dict(os.environ, PRIVBANDITS_SAMPLER="ziggurat", PRIVBANDITS_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
