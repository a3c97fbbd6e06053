"""Joint-DP LinUCB with tree-aggregated Gaussian or Wishart noise (Shariff & Sheffet 2018)."""

from privbandits.algorithms.shariff.jdp_linucb import JDPLinUCB

__all__ = ["JDPLinUCB"]
