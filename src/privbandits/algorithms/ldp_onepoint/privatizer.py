"""The user-side randomizer of LDP-OnePoint: one scalar, clipped, plus Gaussian or Laplace noise.

Zheng, Cai, Huang, Li & Wang (2020), Algorithm 1, lines 4-7: user ``t`` evaluates its own loss at
the server's query point, clips it into the declared range and sends ``m_t = v + Z_t`` with
``Z_t ~ N(0, sigma^2)`` (or ``Lap(b)`` for the pure variant).  The message does not depend on the
query point, so whatever the (untrusted) server proposes, two users' encoded values are at most
``hi - lo`` apart against noise of a fixed scale.  :func:`encode_values` and
:func:`add_value_noise` are the only implementation of the two steps (the client's ``encode`` and
``randomize`` and the composite :func:`privatize_values` call them); the noise comes from the
compiled samplers of :mod:`privbandits.privacy.samplers` (the code the audit checks).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from privbandits.privacy.samplers import add_gaussian, add_laplace, clip_scalar

__all__ = ["add_value_noise", "encode_values", "privatize_values"]


@nb.njit(cache=True)
def encode_values(
    values: np.ndarray, lo: float, hi: float, clip: bool, out: np.ndarray
) -> None:  # pragma: no cover - compiled
    """``out[i] = clip(values[i], lo, hi)`` (``values[i]`` without ``clip``)."""
    if out.shape[0] != values.shape[0]:
        raise ValueError("encode_values: values and out must both be (R,)")
    for i in range(values.shape[0]):
        out[i] = clip_scalar(values[i], lo, hi) if clip else values[i]


@nb.njit(cache=True)
def add_value_noise(
    rng: np.random.Generator, scale: float, laplace: bool, out: np.ndarray
) -> None:  # pragma: no cover - compiled
    """``out[i] += Z_i``, ``Z_i ~ N(0, scale^2)`` or ``Lap(scale)``: one variate per user, in index
    order (so a batch consumes the generator exactly as the users one at a time)."""
    if laplace:
        add_laplace(rng, scale, out)
    else:
        add_gaussian(rng, scale, out)


@nb.njit(cache=True)
def privatize_values(
    rng: np.random.Generator,
    values: np.ndarray,
    lo: float,
    hi: float,
    clip: bool,
    scale: float,
    laplace: bool,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """``out[i] = clip(values[i], lo, hi) + Z_i`` for a vector of users, in place
    (:func:`encode_values` then :func:`add_value_noise`).

    Without ``clip`` the values are sent as they are (the guarantee is then conditional on their
    lying in ``[lo, hi]``).
    """
    encode_values(values, lo, hi, clip, out)
    add_value_noise(rng, scale, laplace, out)
