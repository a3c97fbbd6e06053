"""Context-free K-armed bandit algorithms: the non-private black boxes of the one-point reduction.

Zheng, Cai, Huang, Li & Wang (2020), section 3.1, reduce locally private bandits with one-point
feedback to any non-private algorithm (:mod:`privbandits.algorithms.ldp_onepoint`).  These are the
multi-armed and best-arm-identification plug-ins; each runs non-privately too, on any fixed action
set (it uses the arm index only), and tunes itself from the public
:class:`~privbandits.core.spec.EnvSpec` (reward range and sub-Gaussian scale), which is how the
reduction hands it the enlarged range of the privatized feedback.
"""

from privbandits.algorithms.mab.exp3 import EXP3
from privbandits.algorithms.mab.successive_elimination import SuccessiveElimination
from privbandits.algorithms.mab.tsallis_inf import TsallisINF
from privbandits.algorithms.mab.ucb1 import UCB1

__all__ = ["EXP3", "UCB1", "SuccessiveElimination", "TsallisINF"]
