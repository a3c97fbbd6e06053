"""The supervised real-data presets: valid, every trust model beside a non-private twin."""

from __future__ import annotations

import pytest

from privbandits.algorithms import available
from privbandits.experiments.presets import available_presets, load_preset

pytest.importorskip("sklearn")

ALL_MODELS = ("realdata-supervised-wine", "realdata-supervised-breast-cancer")
PRESETS = (*ALL_MODELS, "realdata-supervised-digits")


@pytest.mark.parametrize("name", PRESETS)
def test_preset_is_valid_and_on_bundled_data(name: str) -> None:
    assert name in available_presets()
    cfg = load_preset(name)  # validates the environment and every algorithm on it
    assert cfg.env["kind"] == "supervised" and cfg.env["dataset"] in (
        "wine",
        "breast_cancer",
        "digits",
    )
    models = {available()[e.name].trust_model for e in cfg.algorithms}
    assert "none" in models and "local" in models
    assert any(e.name == "uniform" for e in cfg.algorithms)
    for entry in cfg.algorithms:
        if available()[entry.name].trust_model != "none":
            assert sorted(grid["epsilon"] for _, grid in entry.variants) == [1.0, 4.0]
    assert cfg.claims


@pytest.mark.parametrize("name", ALL_MODELS)
def test_all_trust_models_with_their_twins(name: str) -> None:
    cfg = load_preset(name)
    by_model: dict[str, set[str]] = {}
    for e in cfg.algorithms:
        by_model.setdefault(available()[e.name].trust_model, set()).add(e.name)
    assert by_model["local"] == {"ldp-sgd", "ldp-gloc", "chen-ldp"}
    assert by_model["shuffle"] == {"shuffle-glm"}
    assert by_model["joint"] == {"jdp-glm", "chen-jdp"}
    assert {"greedy-sgd", "gloc", "chen-elim", "rs-glinucb"} <= by_model["none"]
    assert cfg.env["encoding"] == "shared" and cfg.env["link"] == "logistic"
