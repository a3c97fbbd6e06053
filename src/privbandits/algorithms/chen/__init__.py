"""Chen, Li, Rakhlin & Simchi-Levi (2025): private contextual bandits by re-weighted regression.

``chen-jdp`` (joint DP) and ``chen-ldp`` (local DP) run Algorithm 3 -- doubling epochs, elimination
by the confidence widths of the previous epochs' estimates, uniform play over a barycentric spanner
of the survivors -- on the re-weighted regression estimators of :mod:`privbandits.regression`;
``chen-elim`` is the non-private twin.  ``squarecb-jdp`` and ``squarecb-ldp`` run SquareCB on the
dimension-free estimators (Algorithms 5 and 6), ``squarecb`` on the noiseless Algorithm 5.
"""

from privbandits.algorithms.chen.jdp import ChenElimination, ChenJDP
from privbandits.algorithms.chen.ldp import ChenLDP
from privbandits.algorithms.chen.planning import Board, planning_support, surviving
from privbandits.algorithms.chen.spanner import barycentric_spanner
from privbandits.algorithms.chen.squarecb import SquareCB, SquareCBJDP, igw_probabilities
from privbandits.algorithms.chen.squarecb_ldp import SquareCBLDP

__all__ = [
    "Board",
    "ChenElimination",
    "ChenJDP",
    "ChenLDP",
    "SquareCB",
    "SquareCBJDP",
    "SquareCBLDP",
    "barycentric_spanner",
    "igw_probabilities",
    "planning_support",
    "surviving",
]
