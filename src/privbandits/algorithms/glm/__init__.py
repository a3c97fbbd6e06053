"""Non-private generalized linear bandits: GLM-UCB, GLOC, RS-GLinUCB and ECOLog (the Sarmasarkar et al. baselines)."""

from privbandits.algorithms.glm import ecolog, glm_ucb, gloc, rs_glinucb  # noqa: F401  (registration)
