"""Sarmasarkar (2026): shuffle-DP (Algorithm 1, ShuffleGLM) and joint-DP (Algorithm 2, JDP-GLM) generalized linear bandits."""

from privbandits.algorithms.sarmasarkar.jdp_glm import JDPGLM, jdp_glm_accounting
from privbandits.algorithms.sarmasarkar.shuffle_glm import ShuffleGLM

__all__ = ["JDPGLM", "ShuffleGLM", "jdp_glm_accounting"]
