"""Former location of the shuffle-model device SDK, kept as an alias: use :mod:`privbandits.service.device`."""

from privbandits.service.device.shuffle import Assignment, ShuffleDevice
from privbandits.service.device.simulate import ShuffleRun, simulate_shuffle_users

__all__ = ["Assignment", "ShuffleDevice", "ShuffleRun", "simulate_shuffle_users"]
