"""The shuffle-model budget of Hanna et al. (2022), Algorithm 3: default delta, calibrated batch sizes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from privbandits.algorithms.hanna.budget import ShuffleBudget, default_delta
from privbandits.algorithms.hanna.presets import resolve_switches
from privbandits.core.errors import ValidationError


def _budget(ranges: tuple[tuple[int, int], ...]) -> ShuffleBudget:
    return ShuffleBudget(1.0, 1e-6, -1.0, 1.0, resolve_switches(), "closed", ranges)


@pytest.mark.parametrize("T, delta", [(1, 0.25), (2, 0.25), (3, 1 / 9), (10, 0.01), (10**4, 1e-8)])
def test_default_delta_is_one_over_t_squared_with_t_at_least_two(T: int, delta: float) -> None:
    assert default_delta(T) == pytest.approx(delta, rel=1e-15)


def test_released_batch_sizes_must_be_calibrated_bounds_included() -> None:
    b = _budget(((3, 5), (10, 12)))
    b.check_released(np.array([3, 4, 5, 10, 12]))
    for n in (2, 6, 9, 13):
        with pytest.raises(ValidationError, match=f"batch size n={n} is outside the calibrated"):
            b.check_released(np.array([n]))
    assert b.n_max == 12 and b.sizes == (3, 4, 5, 10, 11, 12)
    assert _budget(()).n_max == 0


def test_budget_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        _budget(((3, 5),)).epsilon = 2.0  # type: ignore[misc]
