"""Sarmasarkar (2026): joint-DP generalized linear bandit (Algorithm 2, JDP-GLM) and its primitives."""

from privbandits.algorithms.sarmasarkar.jdp_glm import JDPGLM, jdp_glm_accounting

__all__ = ["JDPGLM", "jdp_glm_accounting"]
