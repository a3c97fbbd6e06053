"""Private linear and generalized-linear regression with per-point confidence widths.

Usable without bandits: every estimator has ``fit(X, y, rng) -> RegressionEstimate`` whose
``predict`` and ``width`` give ``f_hat`` and a confidence width at any covariate, and whose
``guarantee`` is the accountant's statement about the noise actually added.

=============================  ======================================================================
estimator                      method
=============================  ======================================================================
:class:`ReweightedRegression`  Chen, Li, Rakhlin & Simchi-Levi (2025), Algorithms 1, 2, 7 (JDP) and 8
                               (LDP): re-weighted GLM regression, widths ``L_nu e_bar ||U phi||``
:class:`ImproperBatchSGD`      Chen et al. (2025), Algorithms 5 (JDP) and 6 (LDP): dimension-free improper
                               square-loss regression (trivial widths)
:class:`SSPRidge`              sufficient-statistics perturbation ridge regression
:class:`DPGradientDescent`     full-batch gradient descent with per-sample clipping and Gaussian noise
:class:`LeastSquares`          non-private (ridge) least squares with self-normalized widths
=============================  ======================================================================

This package imports only :mod:`privbandits.core` and :mod:`privbandits.privacy`.
"""

from privbandits.regression.baselines import DPGradientDescent, LeastSquares, SSPRidge
from privbandits.regression.dimfree import ImproperBatchSGD
from privbandits.regression.estimate import RegressionEstimate
from privbandits.regression.normalization import learn_normalization
from privbandits.regression.reweighted import ReweightedRegression

__all__ = [
    "DPGradientDescent",
    "ImproperBatchSGD",
    "LeastSquares",
    "RegressionEstimate",
    "ReweightedRegression",
    "SSPRidge",
    "learn_normalization",
]
