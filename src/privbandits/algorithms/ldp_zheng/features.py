"""Feature maps: single-parameter contexts as given, multi-parameter contexts as block one-hot features.

In the multi-parameter setting (one shared context ``X`` in ``R^d``, one ``theta*_a`` per arm)
Zheng-type algorithms run a single linear model in dimension ``K d`` with the feature of arm ``a``
equal to ``e_a kron X`` and parameter ``vec(theta*_1, ..., theta*_K)`` (Han et al. 2021, section
4 of the project spec ``han2021-ldp-glb.md``: "a joint dK-dimensional linear model").  The noise is
added to the full ``K d`` statistics, so the message hides which arm was pulled.

:class:`FeatureMap` computes scores and chosen features without materializing the ``(R, K, K d)``
block tensor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privbandits.algorithms.base import argmax_random_ties
from privbandits.algorithms.linalg import chosen
from privbandits.core.errors import PrivbanditsError, ValidationError
from privbandits.core.features import block_features  # noqa: F401  (re-export)
from privbandits.core.spec import EnvSpec

__all__ = ["FeatureMap", "argmax_ties", "block_features", "check_flag", "require_reset"]


class FeatureMap:
    """Maps the environment's contexts to the features the linear model runs on.

    Parameters
    ----------
    spec : EnvSpec
        ``setting="single"``: contexts ``(R, K, d)`` are the features (this includes block
        features supplied by ``SyntheticEnv(setting="multi", features="block")``, which arrive as
        a single-parameter problem in dimension ``K d``).  ``setting="multi"``: contexts
        ``(R, d)`` are mapped to block one-hot features in dimension ``D = K d``.
    """

    def __init__(self, spec: EnvSpec) -> None:
        self.K = spec.K
        self.d = spec.d
        self.block = spec.setting == "multi"
        self.D = spec.K * spec.d if self.block else spec.d

    def linear_scores(self, theta: np.ndarray, contexts: np.ndarray) -> np.ndarray:
        """``x_a^T theta`` for every arm, ``(R, K)``."""
        if self.block:
            return np.einsum("rkd,rd->rk", theta.reshape(-1, self.K, self.d), contexts)
        return np.einsum("rkd,rd->rk", contexts, theta)

    def quad_scores(self, M: np.ndarray, contexts: np.ndarray) -> np.ndarray:
        """``x_a^T M x_a`` for every arm, ``(R, K)`` (only the diagonal blocks of ``M`` in the multi setting)."""
        if self.block:
            R = contexts.shape[0]
            blocks = np.einsum("rkdke->rkde", M.reshape(R, self.K, self.d, self.K, self.d))
            Mx = (blocks @ contexts[:, None, :, None])[..., 0]
            return np.einsum("rkd,rd->rk", Mx, contexts)
        # (X M) then a row-wise dot: several times faster than a three-operand einsum
        return np.einsum("rkd,rkd->rk", contexts @ M, contexts)

    def chosen(self, contexts: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Feature vector of the chosen arm, ``(R, D)``."""
        if self.block:
            R = contexts.shape[0]
            out = np.zeros((R, self.K, self.d))
            out[np.arange(R), actions] = contexts
            return out.reshape(R, self.D)
        return chosen(contexts, actions)

    def to_parameter_shape(self, theta: np.ndarray) -> np.ndarray:
        """``(R, D)`` -> ``(R, K, d)`` in the multi setting (the environment's ``theta_star`` shape)."""
        if self.block:
            return theta.reshape(theta.shape[0], self.K, self.d)
        return theta


def check_flag(name: str, value: object) -> bool:
    """A boolean parameter (``True``/``False`` only)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValidationError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def require_reset(alg: object, attr: str) -> Any:
    """``getattr(alg, attr)``, with a clear error when the algorithm has not been reset yet."""
    try:
        return getattr(alg, attr)
    except AttributeError:
        raise PrivbanditsError(
            f"{type(alg).__name__}: the privacy guarantee depends on the problem's bounds; "
            "call reset(spec, replications, streams) (or simulate) first"
        ) from None


#: Row-wise argmax with uniform tie breaking (kept as an alias for the Zheng modules).
argmax_ties = argmax_random_ties
