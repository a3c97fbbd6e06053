"""Hanna, Girgis, Fragouli & Diggavi (2022): private stochastic linear bandits (almost) for free.

Batched phased elimination with a G-optimal core set (the role-free engine of
:mod:`~privbandits.algorithms.hanna.elimination`) in three trust models plus its non-private limit:

* ``"hanna-central"`` -- :class:`HannaCentral`, Algorithm 1 (trusted curator, ``Lap`` noise on each
  batch's per-action reward sums, pure eps-DP);
* ``"hanna-local"`` -- :class:`HannaLocal`, Algorithm 2 (each user privatizes its own reward, pure
  eps0-LDP);
* ``"hanna-shuffle"`` -- :class:`HannaShuffle`, Algorithm 3 (a trusted shuffler hides which user
  played which action; per-batch local budget from inverting the amplification bound);
* ``"pe-batched"`` -- :class:`NPBatched`, the same skeleton without noise.

The other non-private reference, Lattimore & Szepesvari's Algorithm 12 (``"phased-elimination"``),
is in :mod:`privbandits.algorithms.linear.phased_elimination`.  Calibration presets (``strict`` /
``paper``) are in :mod:`~privbandits.algorithms.hanna.presets`, the confidence widths in
:mod:`~privbandits.algorithms.hanna.widths`, the shuffle model's per-batch budgets in
:mod:`~privbandits.algorithms.hanna.budget`.  Every algorithm runs on the exact aggregate driver
(``simulate(..., engine="aggregate")``, chosen by ``engine="auto"``) and on the per-round /
per-user reference driver (``engine="reference"``).

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), "Differentially Private Stochastic Linear Bandits: (Almost)
for Free", arXiv:2207.03445; corrections in the documentation's Hanna et al. 2022 page.
"""

from privbandits.algorithms.hanna.budget import ShuffleBudget, default_delta
from privbandits.algorithms.hanna.central import CentralLaplaceSums, HannaCentral
from privbandits.algorithms.hanna.curator import BatchedCurator, RawSums
from privbandits.algorithms.hanna.elimination import (
    BatchPlan,
    EliminationCore,
    HannaElimination,
    batch_growth,
    batch_size_ranges,
    n_batches,
)
from privbandits.algorithms.hanna.local import HannaLocal, LocalClient, LocalServer
from privbandits.algorithms.hanna.np_batched import NPBatched
from privbandits.algorithms.hanna.presets import PRESETS, Switches, resolve_switches
from privbandits.algorithms.hanna.shuffle import (
    HannaShuffle,
    HannaShuffler,
    ShuffleAnalyzer,
    ShuffleClient,
)
from privbandits.algorithms.hanna.widths import CentralWidth, LocalWidth, NonPrivateWidth

__all__ = [
    "PRESETS",
    "BatchPlan",
    "BatchedCurator",
    "CentralLaplaceSums",
    "CentralWidth",
    "EliminationCore",
    "HannaCentral",
    "HannaElimination",
    "HannaLocal",
    "HannaShuffle",
    "HannaShuffler",
    "LocalClient",
    "LocalServer",
    "LocalWidth",
    "NPBatched",
    "NonPrivateWidth",
    "RawSums",
    "ShuffleAnalyzer",
    "ShuffleBudget",
    "ShuffleClient",
    "Switches",
    "batch_growth",
    "batch_size_ranges",
    "default_delta",
    "n_batches",
    "resolve_switches",
]
