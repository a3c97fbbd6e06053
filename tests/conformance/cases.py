"""The conformance cases: every registered algorithm x its ``test_params`` x its ``test_envs``.

The cases, environments and invalid-value generator are the shipped ones
(:mod:`privbandits.testing.cases`); this module only turns them into ``pytest.param`` lists.
"""

from __future__ import annotations

from typing import Any

import pytest

from privbandits.algorithms import available
from privbandits.testing.cases import (
    BASELINE,
    ENV_KINDS,
    NOISE_FOR_LINK,
    Case,
    constrained,
    env_kinds,
    invalid_values,
    link_for,
    make_env,
    registry_cases,
)

__all__ = [
    "BASELINE",
    "ENV_KINDS",
    "NOISE_FOR_LINK",
    "Case",
    "algorithm_params",
    "cases",
    "constrained",
    "env_kinds",
    "invalid_values",
    "link_for",
    "make_env",
]


def cases(kinds: tuple[str, ...] | None = None) -> list[Any]:
    """``pytest.param`` of every (algorithm, test parameters, environment) case of the registry."""
    return [pytest.param(c, id=c.id) for c in registry_cases(kinds)]


def algorithm_params() -> list[Any]:
    """``pytest.param`` of every (algorithm, test parameters) pair (cases without an environment)."""
    return [
        pytest.param(Case(cls, dict(p), "", i), id=f"{cls.name}-p{i}")
        for cls in available().values()
        for i, p in enumerate(cls.test_params)
    ]
