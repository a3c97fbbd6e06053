"""Link functions of generalized linear reward models.

A link is the inverse canonical link ``mu`` of a GLM: the mean reward of an arm with feature
``x`` is ``mu(x @ theta)``.  Each link supplies ``mu``, its first and second derivatives, and the
antiderivative ``m`` (``m' = mu``) that appears in the GLM negative log-likelihood

    l(theta; x, r) = m(x @ theta) - r * (x @ theta).

All functions are vectorized over numpy arrays and numerically stable for any finite argument:

* identity: no clipping is needed.
* logistic: ``mu`` uses :func:`scipy.special.expit` and ``m`` uses ``logaddexp(0, z)``; both are
  exact for all finite ``z`` (no clipping).
* probit: ``mu = Phi`` via :func:`scipy.special.ndtr`; ``m(z) = z Phi(z) + phi(z)`` is computed with
  ``log_ndtr`` for very negative ``z`` so it never cancels catastrophically.
* Poisson (``mu = exp``): the linear predictor is clipped to ``[-inf, z_max]`` with
  ``z_max = 50`` (``exp(50)`` is about ``5e21``) so that ``mu``, ``mu'`` and ``m`` stay finite.
  The clip is the only approximation in this module and only affects ``z > 50``, which a bounded
  problem (``|x @ theta| <= C_B``) never reaches.

References
----------
McCullagh & Nelder (1989), *Generalized Linear Models*; Filippi et al. (2010) for the constants
``kappa = inf mu'`` and ``L = sup mu'`` used by GLM bandits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numba as nb
import numpy as np
from scipy import special

from privbandits.core.errors import UnknownNameError
from privbandits.core.validation import check_nonnegative

__all__ = ["IDENTITY", "LINKS", "LOGISTIC", "POISSON", "PROBIT", "Link", "get_link"]

ArrayFn = Callable[[np.ndarray], np.ndarray]

POISSON_Z_MAX = 50.0
#: Codes of the links in compiled kernels (:attr:`Link.code`).
LINK_IDENTITY, LINK_LOGISTIC, LINK_PROBIT, LINK_POISSON = 0, 1, 2, 3
_SQRT_2PI = float(np.sqrt(2.0 * np.pi))


@dataclass(frozen=True)
class Link:
    """An inverse link function with derivatives and antiderivative.

    Attributes
    ----------
    name : str
        Registry name ("identity", "logistic", "probit", "poisson").
    mu, dmu, d2mu : callable
        The mean function and its first two derivatives.
    m : callable
        Antiderivative of ``mu`` (``m' = mu``), used in the GLM log-likelihood.
    monotone_derivative : bool
        True when ``mu'`` is monotone (Poisson); otherwise ``mu'`` is symmetric unimodal around 0.
    """

    name: str
    mu: ArrayFn
    dmu: ArrayFn
    d2mu: ArrayFn
    m: ArrayFn
    monotone_derivative: bool = False
    code: int = 0

    def kappa(self, bound: float) -> float:
        """``inf_{|z| <= bound} mu'(z)``: the curvature lower bound (``zeta`` in Han et al. 2021)."""
        b = check_nonnegative("bound", bound)
        return float(min(self.dmu(np.array(-b)), self.dmu(np.array(b))))

    def lipschitz(self, bound: float) -> float:
        """``sup_{|z| <= bound} mu'(z)``: the Lipschitz constant ``L`` of ``mu`` on ``[-bound, bound]``."""
        b = check_nonnegative("bound", bound)
        if self.monotone_derivative:
            return float(self.dmu(np.array(b)))
        return float(self.dmu(np.array(0.0)))

    def neg_log_likelihood(self, z: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Per-observation GLM loss ``m(z) - r z`` (up to terms free of the parameter)."""
        return self.m(z) - r * z


def _as_float(z: np.ndarray) -> np.ndarray:
    return np.asarray(z, dtype=float)


# identity --------------------------------------------------------------------------------------
def _id_mu(z: np.ndarray) -> np.ndarray:
    return _as_float(z).copy()


def _id_dmu(z: np.ndarray) -> np.ndarray:
    return np.ones_like(_as_float(z))


def _id_d2mu(z: np.ndarray) -> np.ndarray:
    return np.zeros_like(_as_float(z))


def _id_m(z: np.ndarray) -> np.ndarray:
    z = _as_float(z)
    return 0.5 * z * z


# logistic --------------------------------------------------------------------------------------
def _logit_mu(z: np.ndarray) -> np.ndarray:
    return special.expit(_as_float(z))


def _logit_dmu(z: np.ndarray) -> np.ndarray:
    s = special.expit(_as_float(z))
    return s * (1.0 - s)


def _logit_d2mu(z: np.ndarray) -> np.ndarray:
    s = special.expit(_as_float(z))
    return s * (1.0 - s) * (1.0 - 2.0 * s)


def _logit_m(z: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, _as_float(z))


# probit ----------------------------------------------------------------------------------------
def _phi(z: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * z * z) / _SQRT_2PI


def _probit_mu(z: np.ndarray) -> np.ndarray:
    return special.ndtr(_as_float(z))


def _probit_dmu(z: np.ndarray) -> np.ndarray:
    return _phi(_as_float(z))


def _probit_d2mu(z: np.ndarray) -> np.ndarray:
    z = _as_float(z)
    return -z * _phi(z)


def _probit_m(z: np.ndarray) -> np.ndarray:
    # m(z) = z Phi(z) + phi(z).  For z << 0 both terms are tiny and nearly cancel; there use
    # m(z) = phi(z) * (1 + z * Phi(z)/phi(z)) with the Mills ratio from log_ndtr.
    z = _as_float(z)
    out = np.empty_like(z)
    neg = z < -5.0
    zp = z[~neg]
    out[~neg] = zp * special.ndtr(zp) + _phi(zp)
    zn = z[neg]
    if zn.size:
        ratio = np.exp(special.log_ndtr(zn) - (-0.5 * zn * zn - np.log(_SQRT_2PI)))  # Phi/phi
        out[neg] = _phi(zn) * (1.0 + zn * ratio)
    return out


# Poisson ---------------------------------------------------------------------------------------
def _pois_exp(z: np.ndarray) -> np.ndarray:
    return np.exp(np.minimum(_as_float(z), POISSON_Z_MAX))


POISSON = Link(
    "poisson",
    _pois_exp,
    _pois_exp,
    _pois_exp,
    _pois_exp,
    monotone_derivative=True,
    code=LINK_POISSON,
)
IDENTITY = Link("identity", _id_mu, _id_dmu, _id_d2mu, _id_m, code=LINK_IDENTITY)
LOGISTIC = Link("logistic", _logit_mu, _logit_dmu, _logit_d2mu, _logit_m, code=LINK_LOGISTIC)
PROBIT = Link("probit", _probit_mu, _probit_dmu, _probit_d2mu, _probit_m, code=LINK_PROBIT)


# compiled scalar forms (for kernels; ``code`` is :attr:`Link.code`) -----------------------------
@nb.njit(cache=True)
def link_mu(code: int, z: float) -> float:  # pragma: no cover - compiled
    """``mu(z)`` of the link with ``code`` (same conventions as the numpy forms)."""
    if code == LINK_IDENTITY:
        return z
    if code == LINK_LOGISTIC:
        if z >= 0.0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)
    if code == LINK_PROBIT:
        return 0.5 * math.erfc(-z / math.sqrt(2.0))
    return math.exp(min(z, POISSON_Z_MAX))


@nb.njit(cache=True)
def link_dmu(code: int, z: float) -> float:  # pragma: no cover - compiled
    """``mu'(z)`` of the link with ``code``."""
    if code == LINK_IDENTITY:
        return 1.0
    if code == LINK_LOGISTIC:
        p = link_mu(code, z)
        return p * (1.0 - p)
    if code == LINK_PROBIT:
        return math.exp(-0.5 * z * z) / _SQRT_2PI
    return math.exp(min(z, POISSON_Z_MAX))


LINKS: dict[str, Link] = {lk.name: lk for lk in (IDENTITY, LOGISTIC, PROBIT, POISSON)}
_ALIASES = {"linear": "identity", "logit": "logistic", "exp": "poisson", "log": "poisson"}


def get_link(name: str | Link) -> Link:
    """Return the link registered under ``name`` (aliases: linear, logit, exp/log)."""
    if isinstance(name, Link):
        return name
    key = _ALIASES.get(str(name).lower(), str(name).lower())
    if key not in LINKS:
        raise UnknownNameError(
            f"link must be one of {sorted(LINKS)} (or aliases {sorted(_ALIASES)}); got {name!r}"
        )
    return LINKS[key]
