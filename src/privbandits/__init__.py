"""privbandits: differentially private contextual bandits.

Quick start::

    import privbandits as pb
    env = pb.SyntheticEnv(d=5, K=10)
    result = pb.simulate(pb.make("linucb"), env, horizon=10_000, replications=8, seed=0)
    print(result.summary())
"""

from privbandits._cache import configure_numba_cache

configure_numba_cache()  # before any compiled function is defined (see privbandits._cache)

from privbandits.algorithms import available, make  # noqa: E402
from privbandits.core import PrivbanditsError  # noqa: E402
from privbandits.envs import (  # noqa: E402
    ContextSequenceEnv,
    ConvexLossEnv,
    FiniteActionEnv,
    MovieLensEnv,
    MultiArmedEnv,
    SyntheticEnv,
)
from privbandits.envs.datasets import (  # noqa: E402
    AutoLoanEnv,
    ChoiceEnv,
    ChoiceOfferEnv,
    ChoicePricingEnv,
    SupervisedEnv,
)
from privbandits.privacy.guarantee import PrivacyGuarantee  # noqa: E402
from privbandits.simulate import SimulationResult, make_checkpoints, simulate  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AutoLoanEnv",
    "ChoiceEnv",
    "ChoiceOfferEnv",
    "ChoicePricingEnv",
    "ContextSequenceEnv",
    "ConvexLossEnv",
    "FiniteActionEnv",
    "MovieLensEnv",
    "MultiArmedEnv",
    "PrivacyGuarantee",
    "PrivbanditsError",
    "SimulationResult",
    "SupervisedEnv",
    "SyntheticEnv",
    "__version__",
    "available",
    "make",
    "make_checkpoints",
    "simulate",
]
