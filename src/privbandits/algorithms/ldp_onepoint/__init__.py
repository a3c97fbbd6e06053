"""LDP-OnePoint: the black-box reduction of Zheng, Cai, Huang, Li & Wang (2020), Algorithm 1."""

from privbandits.algorithms.ldp_onepoint.algorithm import LDPOnePoint
from privbandits.algorithms.ldp_onepoint.calibration import (
    OnePointCalibration,
    OnePointConstants,
    calibrate_onepoint,
    inflated_spec,
)
from privbandits.algorithms.ldp_onepoint.privatizer import privatize_values

__all__ = [
    "LDPOnePoint",
    "OnePointCalibration",
    "OnePointConstants",
    "calibrate_onepoint",
    "inflated_spec",
    "privatize_values",
]
