"""The device side of a deployment: the SDK a user's device runs, and simulated devices.

:class:`DeviceClient` (local model and trusted curators, :mod:`.client`) and
:class:`ShuffleDevice` (shuffle model, reports sealed to the server and sent through the shuffler,
:mod:`.shuffle`) choose and randomize on the device through the one round protocol
(:mod:`privbandits.engine.protocol`), after checking the public state the server sends against
the space the algorithm declares, and refuse a served model whose accounted guarantee is weaker
than the one the app pinned (:class:`Pin`).  :mod:`.simulate` drives simulated users
(one after another: the reference trajectory; or concurrently: load).
"""

from privbandits.service.device.client import DeviceClient, ModelSnapshot, Pin, ServiceError
from privbandits.service.device.shuffle import Assignment, ShuffleDevice
from privbandits.service.device.simulate import (
    ShuffleRun,
    SimulatedRun,
    simulate_clients,
    simulate_shuffle_users,
    simulate_users,
)

__all__ = [
    "Assignment",
    "DeviceClient",
    "ModelSnapshot",
    "Pin",
    "ServiceError",
    "ShuffleDevice",
    "ShuffleRun",
    "SimulatedRun",
    "simulate_clients",
    "simulate_shuffle_users",
    "simulate_users",
]
