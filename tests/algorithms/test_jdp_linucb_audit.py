"""The central audit of JDP LinUCB's tree release (``privbandits audit jdp-linucb-tree``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privbandits.algorithms.shariff.audit import AUDIT_SPEC, tree_release_spec
from privbandits.algorithms.shariff.constants import JDPConstants
from privbandits.algorithms.shariff.jdp_linucb import JDPLinUCB


def test_the_audited_statistic_has_the_accounted_law() -> None:
    """Each side's statistic is Gaussian with mean +-2 (the clipped rows' outer products differ by
    2 in ``u~_1`` per release, two releases) and std ``sqrt(2) sigma_noise`` (one node per release);
    checked within 5 standard errors on 20 000 draws."""
    spec = tree_release_spec()
    sig = JDPLinUCB(epsilon=1.0, delta=1e-5, tree="binary").calibrate(AUDIT_SPEC)
    s = math.sqrt(2.0) * sig.typed(JDPConstants).sigma_noise
    n = 20_000
    for side, mean in ((0, 2.0), (1, -2.0)):
        x = spec.sample(side, n, np.random.default_rng(side))
        assert abs(x.mean() - mean) <= 5 * s / math.sqrt(n)
        assert x.std() == pytest.approx(s, rel=0.03)


@pytest.mark.slow
def test_tree_release_passes_and_its_half_noise_twin_is_flagged() -> None:
    from privbandits.auditing import audit_mechanism

    ok = audit_mechanism("jdp-linucb-tree")
    half = audit_mechanism("jdp-linucb-tree", under_noised=0.5)
    assert ok.passed, ok
    assert not half.passed, half
