"""Known defects stay detectable: each mutant below once survived the test suite.

Every case is one hand-made single-line change to the library (a defect that either happened or
that an earlier mutation spot-check showed the tests could not see).  The test copies ``src/`` and
``tests/`` to a scratch directory, applies the change, runs the tests that are meant to catch it
in a subprocess and asserts that they fail (pytest exit status 1: a test failed, not a collection
or import error).  A case whose original line no longer exists fails with a message saying so, to
be updated together with the code.

These runs recompile the mutated package (a fresh compiled-code cache each), so they are marked
``mutation`` and run by ``.ci/mutation-sample``, not by the default ``pytest``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.mutation


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # under src/privbandits
    old: str
    new: str
    tests: tuple[str, ...]


MUTANTS = (
    Mutant(
        "hanna-shuffle client encodes the unclipped reward",
        "algorithms/hanna/shuffle.py",
        "return np.where(report, np.clip(y, b.r_lo, b.r_hi), 0.0)[:, None]",
        "return np.where(report, y, 0.0)[:, None]",
        (
            "tests/algorithms/test_hanna_sarmasarkar_devices.py::test_hanna_reward_clip_at_inside_and_beyond",
        ),
    ),
    Mutant(
        "aggregate path: commit-phase regret off by one round",
        "engine/aggregate.py",
        "rec.regret[r, lo:] = cum_reg[r] + (tail - t[r]) * gaps[r, a]",
        "rec.regret[r, lo:] = cum_reg[r] + (tail - t[r] - 1) * gaps[r, a]",
        (
            "tests/algorithms/test_hanna_fastpath.py::"
            "test_commit_phase_regret_is_the_committed_gap_times_the_remaining_rounds",
        ),
    ),
    Mutant(
        "aggregate path: committed action's gap dropped",
        "engine/aggregate.py",
        "rec.regret[r, lo:] = cum_reg[r] + (tail - t[r]) * gaps[r, a]",
        "rec.regret[r, lo:] = cum_reg[r]",
        (
            "tests/algorithms/test_hanna_fastpath.py::"
            "test_commit_phase_regret_is_the_committed_gap_times_the_remaining_rounds",
        ),
    ),
    Mutant(
        "work-unit key omits the horizon",
        "experiments/units.py",
        '"horizon": self.horizon,',
        "",
        ("tests/experiments/test_units.py",),
    ),
    Mutant(
        "resume: key lookup chunk 500 -> 499",
        "experiments/store.py",
        "chunk = wanted[i : i + 500]",
        "chunk = wanted[i : i + 499]",
        ("tests/experiments/test_units.py::test_resume_beyond_the_lookup_chunk",),
    ),
    Mutant(
        "multi-parameter LDP-SGD main-phase step eta0 K/(n + t0) -> eta0/(n + t0)",
        "algorithms/ldp_glb/kernels.py",
        "eta = step_size(counts[r, k], p.eta0, p.t0, p.inv_sqrt, float(K))",
        "eta = step_size(counts[r, k], p.eta0, p.t0, p.inv_sqrt, 1.0)",
        ("tests/test_golden.py::test_golden_trajectory[ldp-sgd/multi/compiled]",),
    ),
    # the four classes that escaped the suite (issue 28): noise on the online path, a clip at its
    # bound, service state across tokens, an accounting count at non-integer parameters
    Mutant(
        "LDP-OnePoint device adds half its Gaussian noise",
        "algorithms/ldp_onepoint/privatizer.py",
        "        add_gaussian(rng, scale, out)",
        "        add_gaussian(rng, 0.5 * scale, out)",
        (
            "tests/algorithms/test_bco_devices.py::test_randomize_minus_encode_has_the_declared_noise",
        ),
    ),
    Mutant(
        "LDP-OnePoint device sends its value unclipped",
        "algorithms/ldp_onepoint/privatizer.py",
        "out[i] = clip_scalar(values[i], lo, hi) if clip else values[i]",
        "out[i] = values[i]",
        ("tests/algorithms/test_bco_devices.py::test_value_clip_at_inside_and_beyond_the_range",),
    ),
    Mutant(
        "server store looks idempotency keys up without the token",
        "service/server/store.py",
        '"WHERE token = ? AND idem_key = ?"), (token, idem_key)',
        '"WHERE idem_key = ?"), (idem_key,)',
        ("tests/service/test_store_rows.py::test_lookup_is_scoped_by_token_and_key",),
    ),
    Mutant(
        "binomial accounting: largest coupled shift floor(2 g) instead of ceil(2 g)",
        "privacy/binomial_accounting.py",
        "math.ceil(2.0 * g)",
        "math.floor(2.0 * g)",
        (
            "tests/privacy/test_binomial_independent.py::test_one_label_shift_set_is_exactly_the_enumerated_coupling",
        ),
    ),
    Mutant(
        "Cheu summation: floor(2 g) + b bits per label",
        "privacy/cheu.py",
        "return math.ceil(2.0 * self.g) + self.b",
        "return math.floor(2.0 * self.g) + self.b",
        (
            "tests/privacy/test_accounting_independent.py::"
            "test_bits_per_label_is_the_largest_count_the_randomizer_sends",
        ),
    ),
)


def apply_mutant(work: Path, m: Mutant) -> None:
    """Copy ``src`` and ``tests`` (and ``pyproject.toml``) to ``work`` and apply ``m`` there."""
    ignore = shutil.ignore_patterns("__pycache__", ".hypothesis", "*.pyc")
    shutil.copytree(ROOT / "src", work / "src", ignore=ignore)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", work / "pyproject.toml")
    target = work / "src" / "privbandits" / m.path
    text = target.read_text()
    assert text.count(m.old) == 1, (
        f"mutant {m.name!r}: the line {m.old!r} occurs {text.count(m.old)} times in {m.path} "
        "(expected once); update the case with the code"
    )
    target.write_text(text.replace(m.old, m.new))


@pytest.mark.parametrize("m", MUTANTS, ids=[m.name for m in MUTANTS])
def test_named_mutant_is_killed(m: Mutant, tmp_path: Path) -> None:
    apply_mutant(tmp_path, m)
    env = dict(
        os.environ,
        PYTHONPATH=str(tmp_path / "src"),
        MPLBACKEND="Agg",
        PRIVBANDITS_CACHE_DIR=str(tmp_path / "cache"),
    )
    env.pop("NUMBA_CACHE_DIR", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-x",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not slow",
            *m.tests,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1, (
        f"mutant {m.name!r} survived (pytest exit {proc.returncode}):\n{proc.stdout[-3000:]}"
    )
