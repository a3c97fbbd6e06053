"""The Calibration record: the request check and the summary stored with every result."""

from __future__ import annotations

import inspect
import math
import warnings

import pytest

from privbandits.algorithms.calibration import (
    NON_PRIVATE_CALIBRATION,
    Calibration,
    CalibrationWarning,
    warn_if_not_strict,
)
from privbandits.privacy.guarantee import PrivacyGuarantee


def _cal(eps: float, delta: float, preset: str = "strict") -> Calibration:
    return Calibration(PrivacyGuarantee("local", eps, delta), {"sigma": 2.0}, preset, (1.0, 0.01))


@pytest.mark.parametrize(
    "eps, delta, meets",
    [
        (1.0, 0.01, True),
        (0.5, 0.0, True),
        (1.0 + 1e-12, 0.01 * (1 + 1e-12), True),  # float rounding of an exact calibration
        (1.0 * (1.0 + 1e-9), 0.01, True),
        (1.0, 0.01 * (1.0 + 1e-9), True),  # the tolerance is inclusive
        (1.0 + 1e-6, 0.01, False),
        (1.0, 0.01 * (1 + 1e-6), False),
        (1.5, 0.01, False),
        (1.0, 0.015, False),
        (2.5, 0.0, False),
        (1.0, 0.03, False),
    ],
)
def test_meets_request_allows_rounding_only(eps: float, delta: float, meets: bool) -> None:
    assert _cal(eps, delta).meets_request is meets


def test_non_private_calibration_meets_no_request() -> None:
    assert NON_PRIVATE_CALIBRATION.requested is None and NON_PRIVATE_CALIBRATION.meets_request


def test_as_dict_is_json_ready() -> None:
    d = _cal(0.9, 0.01).as_dict()
    assert d == {
        "preset": "strict",
        "requested": [1.0, 0.01],
        "epsilon": 0.9,
        "delta": 0.01,
        "model": "local",
        "resolved": {"sigma": 2.0},
    }
    none = NON_PRIVATE_CALIBRATION.as_dict()
    assert none["requested"] is None and none["epsilon"] is None and none["preset"] == "none"
    assert math.isinf(NON_PRIVATE_CALIBRATION.guarantee.epsilon)


def test_warnings_name_the_reason_and_the_guarantee() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_not_strict("x", _cal(1.0, 0.01))  # strict and within the request: silent
        warn_if_not_strict("x", NON_PRIVATE_CALIBRATION)  # nothing requested: silent
    with pytest.warns(CalibrationWarning, match=r"x: preset='paper' is not the default provable"):
        warn_if_not_strict("x", _cal(1.0, 0.01, "paper"))
    with pytest.warns(
        CalibrationWarning,
        match=r"weaker than the request \(epsilon=1, delta=0.01\); "
        r"accounted guarantee: ",
    ):
        warn_if_not_strict("x", _cal(2.0, 0.01))


def _calibrate_like_an_algorithm(cal: Calibration) -> None:
    """Stands for an algorithm's ``calibrate``, which calls warn_if_not_strict itself."""
    warn_if_not_strict("x", cal)


def test_warning_points_at_the_code_that_built_the_algorithm() -> None:
    """stacklevel 3: the warning is attributed to the caller of the method that checks (the user's
    line), not to the library."""
    with pytest.warns(CalibrationWarning) as rec:
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        _calibrate_like_an_algorithm(_cal(1.0, 0.01, "paper"))
    assert (rec[0].filename, rec[0].lineno) == (__file__, line)


def test_calibration_is_immutable() -> None:
    """The guarantee reported for a run is the one of the noise it adds: nothing may change it later."""
    import dataclasses

    cal = _cal(1.0, 0.01)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cal.guarantee = PrivacyGuarantee("local", 0.1, 0.0)  # type: ignore[misc]
