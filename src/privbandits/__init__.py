"""privbandits: differentially private contextual bandits.

Quick start::

    import privbandits as pb
    env = pb.SyntheticEnv(d=5, K=10)
    result = pb.simulate(pb.make("linucb"), env, horizon=10_000, replications=8, seed=0)
    print(result.summary())
"""

from privbandits.algorithms import available, make
from privbandits.core import PrivbanditsError
from privbandits.envs import ContextSequenceEnv, FiniteActionEnv, SyntheticEnv
from privbandits.privacy.guarantee import PrivacyGuarantee
from privbandits.simulate import SimulationResult, make_checkpoints, simulate

__version__ = "0.1.0"

__all__ = [
    "available",
    "make",
    "PrivbanditsError",
    "ContextSequenceEnv",
    "FiniteActionEnv",
    "SyntheticEnv",
    "PrivacyGuarantee",
    "SimulationResult",
    "make_checkpoints",
    "simulate",
    "__version__",
]
