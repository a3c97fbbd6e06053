"""Former location of the simulated traffic, kept as an alias: use :mod:`privbandits.service.device.simulate`."""

from privbandits.service.device.simulate import ClientsSummary, simulate_clients

__all__ = ["ClientsSummary", "simulate_clients"]
