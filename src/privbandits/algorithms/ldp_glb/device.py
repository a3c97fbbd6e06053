"""The device contract of LDP-OLS and LDP-SGD (Han, Liang, Wang & Zhang 2021, Algorithms 1-2).

What the user's device declares (:class:`~privbandits.algorithms.base.Client`), built from the
calibration (the documentation's Concepts: trust models, threat model):

* **public-state space**: the estimates ``theta`` (``(R, 1, d)`` single-parameter, ``(R, K, d)``
  multi-parameter) and the frozen warm-up estimates ``theta_warm`` (multi), finite, each arm's
  estimate in the ball the server keeps them in (the SGD projection radius, else
  :data:`~privbandits.algorithms.kernel.ESTIMATE_BOUND`).  The estimates only steer the choice and
  the SGD gradient, which the device clips itself: the bound keeps ``x^T theta`` finite, privacy
  does not rest on it.
* **noise**: OLS (eq. 3.3) adds Gaussian noise of std ``s_W`` to every entry of ``x x^T`` (drawn on
  and above the diagonal, mirrored) and ``s_u`` to ``r x``; the whitening scale of a mirrored
  entry is ``sqrt(2) s_W`` (:func:`~privbandits.algorithms.kernel.mirrored_scale`), so the whitened
  l2 distance is the accountant's ``sqrt(||ut(D)||^2 / s_W^2 + ||r x - r' x'||^2 / s_u^2)``.  SGD
  releases the l2-ball mechanism's output (Lemma 2.2), unbiased for the clipped gradient ``g``:
  kind ``unbiased``, variance ``radius^2 / dim - mean^2`` per coordinate (the output has norm
  ``radius`` and ``E[Z Z^T] = radius^2 / dim I``).  In the multi-parameter warm-up only the
  public arm's slot carries a message; the other slots are exactly 0.
* **sensitivity** (l2, in noise units): OLS ``mu = ols_sensitivity(s_W, s_u)`` of the worse phase
  (the accountant's parameter of the Gaussian mechanism; two slots of Algorithm 2 differ by at most
  that); SGD ``2``: two clipped gradients of norm at most ``R`` differ by at most ``2 R``, and the
  l2-ball's unit is ``R`` times its mean factor (the whole ball's diameter is the accountant's
  premise).  With the authors' OLS warm-up, the SGD unit is rescaled so that both phases share the
  OLS phase's bound.
"""

from __future__ import annotations

import numpy as np

from privbandits.algorithms.kernel import DeviceNoiseFn, mirrored_scale
from privbandits.core.public_space import PublicField, PublicSpace
from privbandits.privacy.device import DeviceNoise

__all__ = ["estimates_space", "ols_message_noise", "sgd_message_noise"]


def estimates_space(multi: bool, bound: float) -> PublicSpace:
    """``theta`` (and ``theta_warm`` multi-parameter): each arm's estimate of norm at most ``bound``."""
    if not multi:
        return PublicSpace((PublicField("theta", ("R", 1, "d"), norm=bound),))
    return PublicSpace(
        (
            PublicField("theta", ("R", "K", "d"), norm=bound),
            PublicField("theta_warm", ("R", "K", "d"), norm=bound),
        )
    )


def _ols_slot(d: int, s_W: float, s_u: float) -> tuple[np.ndarray, np.ndarray]:
    """Scale and variance of one OLS slot's ``M`` (``d * d``) and ``u`` (``d``) entries."""
    scale_M, scale_u = mirrored_scale(d, s_W, "l2"), np.full(d, s_u)
    return (
        np.concatenate([scale_M, scale_u]),
        np.concatenate([np.full(d * d, s_W * s_W), np.full(d, s_u * s_u)]),
    )


def _slots(K: int, d: int, per_slot: np.ndarray, a: np.ndarray | None) -> np.ndarray:
    """``(R, K (d d + d))`` in the message layout ``M (K, d, d), u (K, d)`` from one slot's values
    ``per_slot`` (``d d + d``): every slot, or only slot ``a[i]`` of user ``i`` (others 0)."""
    m = d * d
    M, u = per_slot[:m], per_slot[m:]
    R = 1 if a is None else a.shape[0]
    out_M, out_u = np.zeros((R, K, m)), np.zeros((R, K, d))
    if a is None:
        out_M[:], out_u[:] = M, u
    else:
        rows = np.arange(R)
        out_M[rows, a], out_u[rows, a] = M, u
    return np.concatenate([out_M.reshape(R, -1), out_u.reshape(R, -1)], axis=1)


def ols_message_noise(
    d: int, K: int, multi: bool, n_warmup: int, main: tuple[float, float], warm: tuple[float, float]
) -> DeviceNoiseFn:
    """The noise of LDP-OLS's message: ``main = (s_W, s_u)`` (Algorithm 1, and every slot of
    Algorithm 2's main phase), ``warm`` (the public arm's slot of the warm-up)."""

    def noise(t: int, a: np.ndarray, encoded: np.ndarray | None) -> DeviceNoise:
        R = a.shape[0]
        if not multi:
            scale, var = _ols_slot(d, *main)
            return DeviceNoise("gaussian", np.tile(scale, (R, 1)), np.tile(var, (R, 1)))
        warm_phase = t < n_warmup
        scale, var = _ols_slot(d, *(warm if warm_phase else main))
        who = a if warm_phase else None
        return DeviceNoise(
            "gaussian",
            np.broadcast_to(_slots(K, d, scale, who), (R, K * (d * d + d))).copy(),
            np.broadcast_to(_slots(K, d, var, who), (R, K * (d * d + d))).copy(),
        )

    return noise


def sgd_message_noise(
    d: int,
    K: int,
    multi: bool,
    n_warmup: int,
    *,
    grad_bound: float,
    unit: float,
    radius: float,
    radius_warm: float,
    joint: bool,
    radius_joint: float,
    mean_joint: float,
    ols_warm: tuple[float, float] | None,
) -> DeviceNoiseFn:
    """The noise of LDP-SGD's message (module docstring).

    ``unit``: the whitening unit per ``R`` of mean (``R * mean factor * unit`` is the scale of an
    l2-ball coordinate); ``ols_warm = (s_W, s_u)`` of the authors' OLS warm-up, else None.
    """
    n_ols = K * (d * d + d) if ols_warm is not None else 0

    def ball(
        R: int,
        dim: int,
        rad: float,
        mean: float,
        cols: slice,
        a: np.ndarray | None,
        enc: np.ndarray | None,
        scale: np.ndarray,
        var: np.ndarray,
    ) -> None:
        """Fill the l2-ball coordinates ``cols`` (all slots, or user i's slot a[i] only)."""
        width = cols.stop - cols.start
        mask = np.ones((R, width), dtype=bool)
        if a is not None:
            mask = (np.arange(width)[None, :] // d) == a[:, None]
        second = rad * rad / dim
        m2 = np.zeros((R, width)) if enc is None else enc[:, cols] ** 2
        scale[:, cols] = np.where(mask, grad_bound * mean * unit, 0.0)
        var[:, cols] = np.where(mask, np.maximum(second - m2, 0.0), 0.0)

    def noise(t: int, a: np.ndarray, encoded: np.ndarray | None) -> DeviceNoise:
        R = a.shape[0]
        if not multi:
            scale, var = np.zeros((R, d)), np.zeros((R, d))
            ball(R, d, radius, 1.0, slice(0, d), None, encoded, scale, var)
            return DeviceNoise("unbiased", scale, var)
        m = n_ols + K * d
        scale, var = np.zeros((R, m)), np.zeros((R, m))
        z = slice(n_ols, m)
        if t < n_warmup:
            if ols_warm is not None:
                s, v = _ols_slot(d, *ols_warm)
                scale[:, :n_ols], var[:, :n_ols] = _slots(K, d, s, a), _slots(K, d, v, a)
                return DeviceNoise("gaussian", scale, var)
            ball(R, d, radius_warm, 1.0, z, a, encoded, scale, var)
        elif joint:
            ball(R, K * d, radius_joint, mean_joint, z, None, encoded, scale, var)
        else:
            ball(R, d, radius, 1.0, z, None, encoded, scale, var)
        return DeviceNoise("unbiased", scale, var)

    return noise
