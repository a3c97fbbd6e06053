"""Local-DP generalized linear bandits of Han, Liang, Wang & Zhang (2021), NeurIPS.

Registered algorithms: ``"ldp-ols"`` (:class:`LDPOLS`) and ``"ldp-sgd"`` (:class:`LDPSGD`); each
runs Algorithm 1 in the single-parameter setting and Algorithm 2 in the multi-parameter setting,
as compiled steps (:class:`~privbandits.algorithms.kernel.LocalKernel`).

Modules: :mod:`.calibration` (presets strict / paper / authors_code, noise scales, tight
accounting), :mod:`.randomizers` (user-side psi), :mod:`.estimators` (server-side phi, shared with
the non-private twins in :mod:`privbandits.algorithms.linear.greedy`), :mod:`.policy` (the user's arm
choice), :mod:`.kernels` (the per-round steps of Algorithms 1 and 2), :mod:`.ols` and :mod:`.sgd`
(the algorithms: parameters, calibration, kernel construction).
"""

from privbandits.algorithms.ldp_glb.ols import LDPOLS
from privbandits.algorithms.ldp_glb.sgd import LDPSGD

__all__ = ["LDPOLS", "LDPSGD"]
