"""Typed calibrations of the Chen et al. (2025) family: the constants each run resolves, read as
attributes, stored under the same keys as before the typed form."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import privbandits as pb
from privbandits.algorithms.chen.calibration import (
    ChenConstants,
    SquareCBConstants,
    SquareCBLDPConstants,
)
from privbandits.algorithms.chen.schedule import epoch_ends
from privbandits.algorithms.chen.squarecb import squarecb_epoch_ends
from privbandits.core.rng import make_streams

KEYS = {
    ChenConstants: [
        "sigma",
        "epoch_ends",
        "failure_prob_per_epoch",
        "c_b",
        "c_lam",
        "L_nu",
        "mu",
    ],
    SquareCBConstants: ["epoch_ends", "sigma", "c_gamma"],
    SquareCBLDPConstants: ["epoch_ends", "sigma", "c_gamma", "K", "eta"],
}


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("chen-elim", ChenConstants),
        ("chen-jdp", ChenConstants),
        ("chen-ldp", ChenConstants),
        ("squarecb", SquareCBConstants),
        ("squarecb-jdp", SquareCBConstants),
        ("squarecb-ldp", SquareCBLDPConstants),
    ],
)
def test_typed_constants_and_stable_resolved_keys(name: str, cls: type) -> None:
    """The calibration holds the family's dataclass; ``resolved`` is its dict under the stable
    keys (in order), the epochs are the horizon's schedule, and the noise multiplier is the
    estimator's (0 exactly for the non-private twins)."""
    T = 5000
    alg = pb.make(name)
    spec = pb.SyntheticEnv(d=3, K=5).reset(2, make_streams(0), T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alg.reset(spec, 2, make_streams(0))
    c = alg.calibration.typed(cls)
    assert list(alg.calibration.resolved) == KEYS[cls]
    assert alg.calibration.resolved == c.as_dict()
    assert isinstance(alg.calibration.resolved["epoch_ends"], list)
    want = epoch_ends(T, alg.first_epoch) if cls is ChenConstants else squarecb_epoch_ends(T, 9)
    assert c.epoch_ends == tuple(int(e) for e in want)
    private = alg.trust_model != "none"
    assert (c.sigma > 0.0) is private
    if cls is SquareCBLDPConstants:
        n = np.diff(want, prepend=0)
        assert len(c.K) == len(c.eta) == len(n) and all(1 <= k <= m for k, m in zip(c.K, n))
