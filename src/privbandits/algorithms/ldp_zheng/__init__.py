"""Locally private contextual bandits of Zheng, Cai, Huang, Li & Wang (2020).

* :class:`LDPUCB` (registered ``"ldp-ucb"``): Algorithm 5, linear rewards.
* :class:`LDPGLOC` (registered ``"ldp-gloc"``): Algorithm 3, any GLM link.

Both are :class:`~privbandits.algorithms.base.LocalAlgorithm` objects: a client that chooses the
arm from the server's public state and its own context and randomizes its own data, and a server
that only receives privatized messages.  Single- and multi-parameter settings are supported; in
the multi-parameter setting the model runs on block one-hot features ``e_a kron X`` in dimension
``K d`` (built by the client from the shared context, or supplied by
``SyntheticEnv(setting="multi", features="block")``).

References
----------
Zheng, Cai, Huang, Li & Wang (2020), "Locally Differentially Private (Contextual) Bandits
Learning", NeurIPS.  Han, Liang, Wang & Zhang (2021), "Generalized Linear Bandits with Local
Differential Privacy", NeurIPS, section 5 (these algorithms as baselines).
"""

from privbandits.algorithms.ldp_zheng.ldp_gloc import LDPGLOC, GLOCClient, GLOCServer
from privbandits.algorithms.ldp_zheng.ldp_ucb import LDPUCB, UCBClient
from privbandits.algorithms.ldp_zheng.presets import PRESETS
from privbandits.algorithms.ldp_zheng.server import NoisyRidgeServer

__all__ = ["LDPGLOC", "LDPUCB", "PRESETS", "GLOCClient", "GLOCServer", "NoisyRidgeServer", "UCBClient"]
