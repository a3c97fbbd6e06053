"""Locally private contextual bandits of Zheng, Cai, Huang, Li & Wang (2020).

* :class:`LDPUCB` (registered ``"ldp-ucb"``): Algorithm 5, linear rewards.
* :class:`LDPGLOC` (registered ``"ldp-gloc"``): Algorithm 3, any GLM link.

Both are :class:`~privbandits.algorithms.base.LocalAlgorithm` objects with a compiled
:class:`~privbandits.algorithms.kernel.LocalKernel`: the user chooses the arm from the server's
public state and its own context and randomizes its own data (clipping, then Gaussian or Laplace
noise from :mod:`privbandits.privacy.samplers`); the server only receives the flat privatized
message.  Single- and multi-parameter settings are supported; in the multi-parameter setting the
model runs on block one-hot features ``e_a kron X`` in dimension ``K d`` (built by the user from
the shared context, or supplied by ``SyntheticEnv(setting="multi", features="block")``).

Both derive from :class:`~privbandits.algorithms.ldp_zheng.base.ZhengAlgorithm` (the shared
parameters, guarantee and kernel assembly) and resolve a typed calibration
(:class:`~privbandits.algorithms.ldp_zheng.calibration.LDPUCBConstants`,
:class:`~privbandits.algorithms.ldp_zheng.calibration.LDPGLOCConstants`).

Modules: :mod:`.constants` (``Upsilon_t``, ``c_t``, ``beta_t``, ``zeta``), :mod:`.calibration`
(sensitivities, noise scales, accounting, typed constants), :mod:`.base` (the shared base class),
:mod:`.ridge` (the shared optimistic choice and noisy ridge server), :mod:`.ldp_ucb`,
:mod:`.ldp_gloc`.

References
----------
Zheng, Cai, Huang, Li & Wang (2020), "Locally Differentially Private (Contextual) Bandits
Learning", NeurIPS.  Han, Liang, Wang & Zhang (2021), "Generalized Linear Bandits with Local
Differential Privacy", NeurIPS, section 5 (these algorithms as baselines).
"""

from privbandits.algorithms.ldp_zheng.base import ZhengAlgorithm
from privbandits.algorithms.ldp_zheng.calibration import (
    PRESETS,
    LDPGLOCConstants,
    LDPUCBConstants,
    ZhengConstants,
)
from privbandits.algorithms.ldp_zheng.ldp_gloc import LDPGLOC
from privbandits.algorithms.ldp_zheng.ldp_ucb import LDPUCB

__all__ = [
    "LDPGLOC",
    "LDPUCB",
    "PRESETS",
    "LDPGLOCConstants",
    "LDPUCBConstants",
    "ZhengAlgorithm",
    "ZhengConstants",
]
