"""Bandit convex optimization (continuous actions): FKM, two-point BCO and LDP-TwoPoint.

Zheng, Cai, Huang, Li & Wang (2020), sections 3.1-3.2: the one-point black box FKM (wrapped by
LDP-OnePoint, :mod:`privbandits.algorithms.ldp_onepoint`) and the two-point reduction (Algorithm 2
around Algorithm 4).  These algorithms run on loss environments
(:class:`~privbandits.envs.convex.ConvexLossEnv`), where an action is a point of the decision set
(:mod:`privbandits.engine.convex`).
"""

from privbandits.algorithms.bco.fkm import FKM
from privbandits.algorithms.bco.ldp_two_point import LDPTwoPoint
from privbandits.algorithms.bco.two_point import TwoPointBCO

__all__ = ["FKM", "LDPTwoPoint", "TwoPointBCO"]
