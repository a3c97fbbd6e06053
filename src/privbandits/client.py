"""Former location of the device SDK, kept as an alias: use :mod:`privbandits.service.device`."""

from privbandits.service.device.client import (
    DeviceClient,
    ModelSnapshot,
    Pin,
    ServiceError,
    local_algorithm,
)
from privbandits.service.device.simulate import SimulatedRun, simulate_users

__all__ = [
    "DeviceClient",
    "ModelSnapshot",
    "Pin",
    "ServiceError",
    "SimulatedRun",
    "local_algorithm",
    "simulate_users",
]
