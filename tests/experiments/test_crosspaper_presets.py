"""The cross-paper comparison presets: every private contextual algorithm that runs on their environment,
one epsilon and delta for all, every trust model present."""

from __future__ import annotations

import pytest

from privbandits.algorithms import available
from privbandits.experiments.presets import available_presets, load_preset


@pytest.mark.slow  # loading validates every algorithm on the problem (ShuffleGLM, Private-GLM: minutes)
@pytest.mark.parametrize(
    "name,link", [("crosspaper-linear", "identity"), ("crosspaper-logistic", "logistic")]
)
def test_crosspaper_preset_covers_every_private_contextual_algorithm(name: str, link: str) -> None:
    assert name in available_presets()
    cfg = load_preset(name)
    names = {e.name for e in cfg.algorithms}
    runs_here = {
        n
        for n, cls in available().items()
        if cls.trust_model != "none"
        and "single" in cls.settings
        and ("*" in cls.links or link in cls.links)
        and "synthetic" in cls.test_envs
    }
    assert runs_here <= names, sorted(runs_here - names)
    models = {available()[n].trust_model for n in names}
    assert {"local", "shuffle", "joint"} <= models
    for e in cfg.algorithms:
        params, grid = e.variants[0]
        if available()[e.name].trust_model != "none":
            assert grid["epsilon"] == 1.0 and params.get("delta", 0.01) == 0.01, e.name
