"""The learning check's exploration phase: how long a series stays at uniform play's regret."""

from __future__ import annotations

import numpy as np

from privbandits.experiments.learning import NEAR_UNIFORM, exploration_rounds, learning_checks
from privbandits.experiments.summary import Series
from privbandits.privacy.guarantee import NON_PRIVATE

T = 10_000
CKPT = np.linspace(500, T, 20)


def _series(label: str, curve: np.ndarray, n: int = 10, noise: float = 0.01) -> Series:
    rng = np.random.default_rng(1)
    regret = curve[None, :] * np.exp(noise * rng.standard_normal((n, CKPT.size)))
    return Series(
        label=label,
        algorithm="uniform" if label == "uniform" else label,
        grid={},
        params={},
        horizon=T,
        trust_model="local",
        preset="strict",
        guarantee=NON_PRIVATE,
        seeds=(0,),
        checkpoints=CKPT,
        regret=regret,
        wall_time=0.0,
    )


UNIFORM = _series("uniform", 0.5 * CKPT)


def test_a_series_significantly_below_but_near_uniform_is_flagged_as_still_exploring() -> None:
    """95 % of uniform's regret with little noise is a significant difference, yet no learning."""
    near = _series("near", 0.95 * 0.5 * CKPT)
    (check,) = learning_checks([UNIFORM, near])
    assert check.comparison.verdict == "agree"  # significantly below uniform ...
    assert check.verdict == "no learning detected"  # ... but still exploring at T
    assert check.explores_until == T
    assert "exploration phase lasts at least T = 10000 rounds" in check.line()


def test_the_exploration_phase_ends_where_the_curve_leaves_uniform_play() -> None:
    """Uniform play until t = 3000, nothing after: the phase lasts ~3000 rounds and it learns."""
    curve = 0.5 * np.minimum(CKPT, 3000.0)
    learner = _series("explore-then-commit", curve)
    (check,) = learning_checks([UNIFORM, learner])
    assert check.verdict == "learns"
    # the ratio falls below NEAR_UNIFORM at the first checkpoint past 3000 / NEAR_UNIFORM
    expected = CKPT[CKPT <= 3000.0 / NEAR_UNIFORM][-1]
    assert check.explores_until == expected == exploration_rounds(learner, UNIFORM)
    assert expected < T


def test_a_series_with_no_common_checkpoints_has_no_phase() -> None:
    other = _series("x", 0.1 * CKPT)
    other.checkpoints = CKPT + 1
    assert exploration_rounds(other, UNIFORM) is None
