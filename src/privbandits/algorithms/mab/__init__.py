"""Context-free K-armed bandit algorithms: the non-private black boxes of the one-point reduction and the private K-armed baselines.

Zheng, Cai, Huang, Li & Wang (2020), section 3.1, reduce locally private bandits with one-point
feedback to any non-private algorithm (:mod:`privbandits.algorithms.ldp_onepoint`).  These are the
multi-armed and best-arm-identification plug-ins; each runs non-privately too, on any fixed action
set (it uses the arm index only), and tunes itself from the public
:class:`~privbandits.core.spec.EnvSpec` (reward range and sub-Gaussian scale), which is how the
reduction hands it the enlarged range of the privatized feedback.

The private K-armed baselines the literature measures against run with a trusted learner (central,
pure epsilon-DP per reward): DP-UCB with one tree-based counter per arm (Mishra & Thakurta 2015),
DP-SE (Sajed & Sheffet 2019) and AdaP-UCB / AdaP-KLUCB (Azize & Basu 2022).
"""

from privbandits.algorithms.mab.adap_ucb import AdaPKLUCB, AdaPUCB
from privbandits.algorithms.mab.dp_se import DPSE
from privbandits.algorithms.mab.dp_ucb import DPUCB
from privbandits.algorithms.mab.exp3 import EXP3
from privbandits.algorithms.mab.successive_elimination import SuccessiveElimination
from privbandits.algorithms.mab.tsallis_inf import TsallisINF
from privbandits.algorithms.mab.ucb1 import UCB1

__all__ = [
    "DPSE",
    "DPUCB",
    "EXP3",
    "UCB1",
    "AdaPKLUCB",
    "AdaPUCB",
    "SuccessiveElimination",
    "TsallisINF",
]
