"""Empirical audits of the regression releases: pass as calibrated, flagged when under-noised."""

from __future__ import annotations

import pytest

from privbandits.privacy.audit import audit_spec
from privbandits.regression.audit import FLAGGED_FACTOR, REGRESSION_AUDITS


@pytest.mark.parametrize("name", sorted(REGRESSION_AUDITS))
def test_calibrated_release_passes_and_under_noised_is_flagged(name: str) -> None:
    ok = audit_spec(REGRESSION_AUDITS[name]())
    assert ok.passed, str(ok)
    bad = audit_spec(REGRESSION_AUDITS[name](FLAGGED_FACTOR[name]))
    assert not bad.passed, str(bad)
