"""The device checks of privbandits.testing on every registered local and shuffle algorithm.

Memory-safe inputs, public-space validation, the adversarial-server property and encode /
randomize consistency, on each algorithm's first parameter set and environment (the other
checks of the suite run in ``tests/test_conformance.py``).  A device that does not implement its
contract yet (``public_space`` / ``encode`` / ``noise`` / ``sensitivity``) is reported as an
expected failure naming the missing method.
"""

from __future__ import annotations

from typing import Any

import pytest

from privbandits.algorithms import available
from privbandits.testing import parametrize_with_checks

LOCAL = [cls for cls in available().values() if cls.trust_model in ("local", "shuffle")]
DEVICE = ["memory_safe_inputs", "public_space_validation", "adversarial_server", "encode_randomize"]


@parametrize_with_checks(LOCAL, checks=DEVICE, quick=True)
def test_registered_devices(case: Any, check: Any) -> None:
    try:
        check(case)
    except NotImplementedError as exc:
        pytest.xfail(f"the device does not implement its contract yet: {exc}")
