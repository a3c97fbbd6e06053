"""An experiment with a ``[grid]`` keeps its name (the grid's key once replaced it)."""

from __future__ import annotations

from privbandits.experiments.config import parse_config


def test_a_grid_key_does_not_replace_the_experiment_name() -> None:
    cfg = parse_config(
        {
            "name": "named",
            "horizon": 10,
            "env": {"kind": "synthetic", "d": 2, "K": 3},
            "grid": {"epsilon": [1.0]},
            "algorithms": [{"name": "ldp-ucb"}],
        }
    )
    assert cfg.name == "named"
    assert {u.experiment for u in cfg.units()} == {"named"}
