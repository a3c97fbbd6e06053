"""Fixtures for the experiments tests: small configs and a registry-scoped test algorithm."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from privbandits.algorithms import registry
from privbandits.algorithms.base import Curator
from privbandits.algorithms.calibration import Calibration
from privbandits.core.params import Choice, Delta, Epsilon
from privbandits.core.spec import EnvSpec
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

    constraints = {
        "epsilon": Epsilon,
        "delta": Delta,
        "preset": Choice("strict", "paper", "authors_code"),
    }

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-5, preset: str = "strict") -> None:
        pass

    def select(self, t: int, contexts: np.ndarray) -> np.ndarray:
        return self.streams.policy.integers(0, self.spec.K, size=self.R)

    def update(self, t, contexts, actions, rewards) -> None:
        return None

    def calibrate(self, spec: EnvSpec) -> Calibration:
        g = PrivacyGuarantee(
            model="central", epsilon=self.epsilon, delta=self.delta, notes=self.preset
        )
        return Calibration(g, {}, "strict", (self.epsilon, self.delta))


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
