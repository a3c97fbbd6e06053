"""Privacy layer: samplers, mechanisms, accounting, shuffle protocols, tree aggregation, auditing.

=========================  ==========================================================================
module                     contents
=========================  ==========================================================================
``samplers``               one compiled sampler per noise type (what every kernel and mechanism draws
                           its privacy noise through, and what the audit checks)
``noise``                  numpy-facing batched wrappers of the samplers
``calibration``            noise calibration and inverse accounting (Gaussian, Laplace, l2-ball)
``sensitivity``            sensitivities and noise magnitudes the papers derive (with their corrections)
``mechanisms``             mechanism objects carrying their own guarantee (re-exports the three above)
``randomizers``            bit randomizers: randomized rounding, ``R*`` of Cheu et al., randomized
                           response
``accounting``             guarantee objects, composition, zCDP conversions, budget splits
``amplification``          amplification by shuffling (Feldman, McMillan & Talwar 2021)
``cheu``                   Cheu et al. (2022) shuffle vector / matrix summation
``laplace_shuffle``        Hanna et al. (2022) single-message Laplace shuffle protocol
``tree``                   binary-tree (continual release) Gaussian prefix sums
``inputs``                 checks of a user's own data before it is randomized
``guarantee``              :class:`PrivacyGuarantee`, the statement every algorithm reports
``audit``                  empirical privacy auditing (statistics, catalog, driver)
=========================  ==========================================================================

``privacy`` never imports ``algorithms``; the algorithms' client code paths are audited by
:mod:`privbandits.auditing`, one layer up.
"""

from privbandits.privacy.guarantee import NON_PRIVATE, TRUST_MODELS, PrivacyGuarantee

__all__ = ["NON_PRIVATE", "TRUST_MODELS", "PrivacyGuarantee"]
