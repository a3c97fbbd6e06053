"""What a device declares about its own message: the noise it adds and the sensitivity it enforces.

In the local and shuffle models a device keeps its guarantee on its own (the documentation's
Concepts: trust models, threat model): whatever public state the server sends, the device clips its
pre-noise message (``Client.encode``) so that the message of any two neighbouring users differ by
at most the accounted sensitivity, *measured in units of the noise the device adds*
(``Client.noise``).  That whitened distance is exactly the parameter the accountant composes
(``Delta / sigma`` for the Gaussian mechanism, ``Delta_1 / b`` for the Laplace one), so one
property covers every mechanism and every public state:

    ``whitened_distance(encode(D), encode(D'), noise) <= sensitivity().bound``

for every public state in ``Client.public_space()`` and every neighbouring pair of users ``D, D'``.
The adversarial-server tests and ``privbandits audit --adversarial`` check it; the online-path noise
tests check that ``randomize - encode`` has the declared distribution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privbandits.core.errors import ValidationError

__all__ = ["NOISE_KINDS", "DeviceNoise", "DeviceSensitivity", "whitened_distance"]

#: ``gaussian``: additive N(0, scale^2) per coordinate; ``laplace``: additive Lap(scale) per
#: coordinate; ``unbiased``: a randomizer whose output has mean ``encode`` and per-coordinate
#: variance ``variance`` (randomized response, the l2-ball randomizer, multi-message bits);
#: ``exact``: no noise on this part of the message (a public quantity such as a chosen slot).
NOISE_KINDS = ("gaussian", "laplace", "unbiased", "exact")


@dataclass(frozen=True)
class DeviceNoise:
    """The noise a device adds to its encoded message, per user and coordinate.

    Parameters
    ----------
    kind : str
        One of :data:`NOISE_KINDS`.
    scale : ndarray
        ``(R, m)``: the Gaussian standard deviation or the Laplace scale ``b`` of each coordinate;
        the unit of the whitened distance for ``unbiased`` / ``exact`` mechanisms (1 = the
        sensitivity is stated in message units).
    variance : ndarray
        ``(R, m)``: variance of ``message - encode`` per coordinate (``scale^2`` Gaussian,
        ``2 scale^2`` Laplace; the mechanism's own for ``unbiased``; 0 for ``exact``).
    """

    kind: str
    scale: np.ndarray
    variance: np.ndarray

    def __post_init__(self) -> None:
        if self.kind not in NOISE_KINDS:
            raise ValidationError(f"noise kind must be one of {NOISE_KINDS}, got {self.kind!r}")

    @classmethod
    def gaussian(cls, std: np.ndarray) -> DeviceNoise:
        s = np.asarray(std, dtype=float)
        return cls("gaussian", s, s * s)

    @classmethod
    def laplace(cls, b: np.ndarray) -> DeviceNoise:
        s = np.asarray(b, dtype=float)
        return cls("laplace", s, 2.0 * s * s)


@dataclass(frozen=True)
class DeviceSensitivity:
    """The accounted bound on the whitened distance of two neighbouring users' encoded messages.

    Parameters
    ----------
    norm : {"l1", "l2", "linf"}
        The norm the accountant uses (l2 for Gaussian mechanisms, l1 for Laplace ones).
    bound : float
        The bound, in units of the noise (``Delta / sigma``, ``Delta_1 / b``), or in message units
        where the noise scale is 1.
    """

    norm: str
    bound: float

    def __post_init__(self) -> None:
        if self.norm not in ("l1", "l2", "linf"):
            raise ValidationError(
                f"sensitivity norm must be 'l1', 'l2' or 'linf', got {self.norm!r}"
            )
        if not (self.bound >= 0 and np.isfinite(self.bound)):
            raise ValidationError(f"sensitivity bound must be finite and >= 0, got {self.bound!r}")


def whitened_distance(e0: np.ndarray, e1: np.ndarray, scale: np.ndarray, norm: str) -> np.ndarray:
    """Per-user distance ``|| (e0 - e1) / scale ||_norm`` of two encoded messages ``(R, m)``.

    Coordinates of zero scale must agree exactly (an exact coordinate that differs is infinitely
    distinguishable).
    """
    diff = np.asarray(e0, dtype=float) - np.asarray(e1, dtype=float)
    s = np.broadcast_to(np.asarray(scale, dtype=float), diff.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(s > 0, diff / np.where(s > 0, s, 1.0), np.where(diff == 0, 0.0, np.inf))
    w = w.reshape(w.shape[0], -1)
    if norm == "l1":
        return np.abs(w).sum(axis=1)
    if norm == "l2":
        return np.sqrt(np.einsum("ij,ij->i", w, w))
    return np.abs(w).max(axis=1, initial=0.0)
