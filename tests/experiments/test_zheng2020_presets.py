"""The zheng2020-* presets parse, and the log-log slope report measures growth exponents."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.core.errors import ConfigError
from privbandits.experiments.config import parse_config
from privbandits.experiments.presets import available_presets, load_preset
from privbandits.experiments.slopes import loglog_slope

ZHENG = ["zheng2020-e1", "zheng2020-e2", "zheng2020-e3", "zheng2020-e4", "zheng2020-mab"]


@pytest.mark.parametrize("name", ZHENG)
def test_zheng_presets_parse_with_slopes_for_their_labels(name: str) -> None:
    assert name in available_presets()
    cfg = load_preset(name)
    labels = {a.label for a in cfg.algorithms}
    assert cfg.report.slopes and set(cfg.report.slopes) <= labels
    assert cfg.units()


@pytest.mark.parametrize("a", [0.0, 0.5, 0.75, 1.0])
def test_loglog_slope_recovers_the_exponent(a: float) -> None:
    t = np.unique(np.round(np.logspace(0, 5, 40)))
    r = 3.0 * t**a + (1.0 if a == 0 else 0.0)
    assert loglog_slope(t, r) == pytest.approx(a, abs=1e-9 if a else 1e-3)
    # the early phase (t < T/10) does not count
    r2 = np.where(t < 1e4, 1e6, r)
    assert loglog_slope(t, r2) == pytest.approx(loglog_slope(t[t >= 1e4], r[t >= 1e4]))
    assert np.isnan(loglog_slope(t[:1], r[:1]))


def test_report_slopes_must_name_algorithms_and_exponents() -> None:
    base = """
name = "x"
horizon = 100
[env]
kind = "k-armed"
K = 3
[[algorithms]]
name = "ucb1"
label = "UCB1"
[report]
"""
    assert parse_config(base + "slopes = { UCB1 = 0.5 }").report.slopes == {"UCB1": 0.5}
    with pytest.raises(ConfigError, match="report.slopes.LinUCB"):
        parse_config(base + "slopes = { LinUCB = 0.5 }")
    with pytest.raises(ConfigError, match="report.slopes.UCB1"):
        parse_config(base + "slopes = { UCB1 = 2.0 }")
