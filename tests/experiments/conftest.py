"""Fixtures for the experiments tests: small configs and a registry-scoped test algorithm."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from privbandits.algorithms import registry
from privbandits.algorithms.base import Curator
from privbandits.core.validation import check_choice, check_delta, check_epsilon
from privbandits.privacy.guarantee import PrivacyGuarantee

SMALL = textwrap.dedent(
    """
    name = "small"
    horizon = 300
    replications = 3
    seeds = [0, 1]
    checkpoints = 10

    [env]
    kind = "synthetic"
    d = 3
    K = 4
    noise_scale = 0.1

    [[algorithms]]
    name = "linucb"
    label = "LinUCB"

    [[algorithms]]
    name = "uniform"
    """
)


class ExplorePrivate(Curator):
    """Test double with privacy parameters: plays uniformly, reports (epsilon, delta) as given.

    Only used to exercise grid expansion, preset routing and the central epsilon/delta checks of
    the config schema; it is registered for the duration of one test (monkeypatched registry).
    """

    name = "test-explore-private"
    trust_model = "central"
    settings = ("single", "multi")
    links = ("*",)
    paper = "test double"

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-5, preset: str = "strict") -> None:
        super().__init__(epsilon=epsilon, delta=delta, preset=preset)
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.preset = check_choice("preset", preset, ("strict", "paper", "authors_code"))

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        return self.streams.policy.integers(0, self.spec.K, size=self.R)

    def update(self, t, contexts, actions, rewards) -> None:  # noqa: ANN001
        return None

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(model="central", epsilon=self.epsilon, delta=self.delta, notes=self.preset)


@pytest.fixture
def fake_private(monkeypatch: pytest.MonkeyPatch) -> str:
    """Register :class:`ExplorePrivate` for one test only."""
    monkeypatch.setitem(registry._REGISTRY, ExplorePrivate.name, ExplorePrivate)
    return ExplorePrivate.name


@pytest.fixture
def small_toml(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path
