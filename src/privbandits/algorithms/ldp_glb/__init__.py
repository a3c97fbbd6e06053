"""Local-DP generalized linear bandits of Han, Liang, Wang & Zhang (2021), NeurIPS.

Registered algorithms: ``"ldp-ols"`` (:class:`LDPOLS`) and ``"ldp-sgd"`` (:class:`LDPSGD`); each
runs Algorithm 1 in the single-parameter setting and Algorithm 2 in the multi-parameter setting.

Modules: :mod:`.presets` (calibrations strict / paper / authors_code), :mod:`.randomizers`
(user-side psi), :mod:`.estimators` (server-side phi, shared with the non-private twins in
:mod:`privbandits.algorithms.greedy`), :mod:`.single` (Algorithm 1), :mod:`.multi`
(Algorithm 2), :mod:`.accountant` (guarantees from the noise added).
"""

from privbandits.algorithms.ldp_glb.ols import LDPOLS
from privbandits.algorithms.ldp_glb.sgd import LDPSGD

__all__ = ["LDPOLS", "LDPSGD"]
