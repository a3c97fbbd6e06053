"""Hanna, Girgis, Fragouli & Diggavi (2022): private stochastic linear bandits (almost) for free.

Batched phased elimination with a G-optimal core set in three trust models:

* ``"hanna-central"`` -- :class:`HannaCentral`, Algorithm 1 (trusted server, ``Lap`` noise on each
  batch's per-action reward sums, pure eps-DP);
* ``"hanna-local"`` -- :class:`HannaLocal`, Algorithm 2 (each user privatizes its own reward, pure
  eps0-LDP);
* ``"hanna-shuffle"`` -- :class:`HannaShuffle`, Algorithm 3 (a trusted shuffler hides which user
  played which action; per-batch local budget from inverting the amplification bound).

The non-private references are ``"pe-batched"`` (the same skeleton without noise) and
``"phased-elimination"`` (Lattimore & Szepesvari, Algorithm 12) in
:mod:`privbandits.algorithms.phased_elimination`.  Calibration presets (``strict`` / ``paper``) are in
:mod:`~privbandits.algorithms.hanna.presets`, the confidence widths in
:mod:`~privbandits.algorithms.hanna.widths`.  All algorithms support the exact aggregate fast path of
:func:`privbandits.simulate.simulate` (``fast=True``).

References
----------
Hanna, Girgis, Fragouli & Diggavi (2022), "Differentially Private Stochastic Linear Bandits: (Almost)
for Free", arXiv:2207.03445; spec ``hanna2022-dp-linear-bandits.md``.
"""

from privbandits.algorithms.hanna.central import CentralLaplaceSums, HannaCentral, core_set_option
from privbandits.algorithms.hanna.local import (
    HannaLocal,
    LocalClient,
    LocalLaplaceRandomizer,
    LocalServer,
)
from privbandits.algorithms.hanna.presets import PRESETS, Switches, resolve_switches
from privbandits.algorithms.hanna.shuffle import (
    HannaShuffle,
    HannaShuffler,
    ShuffleAccountant,
    ShuffleAnalyzer,
    ShuffleCalibration,
    ShuffleClient,
)
from privbandits.algorithms.hanna.widths import CentralWidth, LocalWidth

__all__ = [
    "PRESETS",
    "CentralLaplaceSums",
    "CentralWidth",
    "HannaCentral",
    "HannaLocal",
    "HannaShuffle",
    "HannaShuffler",
    "LocalClient",
    "LocalLaplaceRandomizer",
    "LocalServer",
    "LocalWidth",
    "ShuffleAccountant",
    "ShuffleAnalyzer",
    "ShuffleCalibration",
    "ShuffleClient",
    "Switches",
    "core_set_option",
    "resolve_switches",
]
