"""Non-private linear contextual bandits: LinUCB, greedy, phased elimination, and the uniform baseline."""

from privbandits.algorithms.linear import greedy, linucb, phased_elimination, uniform  # noqa: F401  (registration)
