"""The public-state space an algorithm declares: what a device accepts from an untrusted server.

In the local and shuffle models the server (and the analyzer behind the shuffler) is adversarial
(the documentation's Concepts: trust models, threat model).  It chooses every array a device reads:
weights, estimates, slots, query points, matrices.  A device's privacy guarantee must therefore
hold for *every* public state it can be sent, and memory safety must never depend on the server's
honesty.  Each local and shuffle algorithm declares its :class:`PublicSpace` -- one
:class:`PublicField` per broadcast array with its shape (in the symbols ``R``, ``K``, ``d``, ``D``
of the problem), kind (float / integer) and range -- and the device checks what it reads against it
before any of it reaches its own code (:meth:`PublicSpace.validate`).

The space is also what adversarial tests draw from (:meth:`PublicSpace.draw`): random members and
the extremes of each range, so that a clip that only holds on honest states is found.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from privbandits.core.errors import TrustBoundaryError
from privbandits.core.messages import PublicState
from privbandits.core.spec import EnvSpec

__all__ = ["CheckedPublicState", "PublicField", "PublicSpace", "PublicStateError", "dims_of"]

Dim = int | str


class PublicStateError(TrustBoundaryError):
    """A public state a device received is outside the space its algorithm declares."""


def dims_of(spec: EnvSpec, R: int, **extra: int) -> dict[str, int]:
    """The shape symbols of a problem: ``R`` (users), ``K`` (arms), ``d`` (features),
    ``D = K d`` (the stacked dimension of the multi-parameter setting, ``d`` in the single one),
    plus any ``extra`` symbols an algorithm uses."""
    D = spec.K * spec.d if spec.setting == "multi" else spec.d
    return {"R": int(R), "K": spec.K, "d": spec.d, "D": D, **extra}


@dataclass(frozen=True)
class PublicField:
    """One broadcast array and the values a device accepts in it.

    Parameters
    ----------
    name : str
        Key in the :class:`~privbandits.core.messages.PublicState`.
    shape : tuple of int or str
        Shape with symbols resolved by :func:`dims_of` (``("R", "d")``); a symbol ``"*"`` matches
        any length (and is drawn as 1).
    kind : {"f", "i"}
        Real (finite float64) or integer entries.
    low, high : float, optional
        Elementwise closed range (``None``: unbounded on that side).
    norm : float, optional
        Largest l2 norm along the last axis.
    values : tuple of int, optional
        Allowed integer values (slots, phases).
    symmetric : bool
        The last two axes form a symmetric matrix.
    psd_floor : float, optional
        Smallest eigenvalue allowed of that symmetric matrix (a positive floor keeps an inverse
        bounded).
    """

    name: str
    shape: tuple[Dim, ...]
    kind: str = "f"
    low: float | None = None
    high: float | None = None
    norm: float | None = None
    values: tuple[int, ...] | None = None
    symmetric: bool = False
    psd_floor: float | None = None

    def resolve(self, dims: Mapping[str, int]) -> tuple[int | None, ...]:
        """The concrete shape (``None`` for ``"*"``)."""
        out: list[int | None] = []
        for s in self.shape:
            if isinstance(s, int):
                out.append(s)
            elif s == "*":
                out.append(None)
            else:
                out.append(int(dims[s]))
        return tuple(out)

    # -- validation ---------------------------------------------------------------------------
    def validate(self, value: object, dims: Mapping[str, int]) -> np.ndarray:
        """``value`` as a contiguous array of this field, or :class:`PublicStateError`."""
        where = f"public state field {self.name!r}"
        arr = np.asarray(value)
        shape = self.resolve(dims)
        if arr.ndim != len(shape) or any(
            w is not None and w != s for w, s in zip(shape, arr.shape)
        ):
            want = tuple("*" if w is None else w for w in shape)
            raise PublicStateError(
                f"{where} has shape {arr.shape}, expected {want} "
                f"({', '.join(map(str, self.shape))}); the device refuses it"
            )
        if self.kind == "i":
            exact = (
                arr.dtype.kind == "f"
                and bool(np.all(np.isfinite(arr)))
                and bool(np.all(arr == np.round(arr)))
            )
            if arr.dtype.kind not in "iu" and not exact:
                raise PublicStateError(f"{where} must hold integers, got dtype {arr.dtype}")
            arr = np.ascontiguousarray(arr, dtype=np.int64)
        else:
            if arr.dtype.kind not in "fiub":
                raise PublicStateError(f"{where} must hold real numbers, got dtype {arr.dtype}")
            arr = np.ascontiguousarray(arr, dtype=np.float64)
            if arr.size and not np.all(np.isfinite(arr)):
                raise PublicStateError(f"{where} holds NaN or infinite values")
        if arr.size == 0:
            return arr
        if self.low is not None and arr.min() < self.low:
            raise PublicStateError(
                f"{where} has a value {arr.min():.6g} below its allowed minimum {self.low:g}"
            )
        if self.high is not None and arr.max() > self.high:
            raise PublicStateError(
                f"{where} has a value {arr.max():.6g} above its allowed maximum {self.high:g}"
            )
        if self.values is not None:
            bad = ~np.isin(arr, np.asarray(self.values))
            if bad.any():
                raise PublicStateError(
                    f"{where} has the value {int(arr[bad].reshape(-1)[0])}; "
                    f"allowed: {list(self.values)}"
                )
        if self.norm is not None:
            worst = float(np.sqrt(np.max(np.einsum("...i,...i->...", arr, arr))))
            if worst > self.norm * (1 + 1e-9):
                raise PublicStateError(
                    f"{where} has a row of l2 norm {worst:.6g} above its allowed {self.norm:g}"
                )
        if self.symmetric or self.psd_floor is not None:
            if not np.allclose(arr, np.swapaxes(arr, -1, -2), rtol=1e-9, atol=1e-12):
                raise PublicStateError(f"{where} must be a symmetric matrix")
            if self.psd_floor is not None:
                eig = np.linalg.eigvalsh(arr)
                low = float(np.min(eig))
                # eigenvalues are computed to ~1e-16 of the largest one: the slack scales with it
                if low < self.psd_floor * (1 - 1e-9) - 1e-12 * max(1.0, float(np.max(np.abs(eig)))):
                    raise PublicStateError(
                        f"{where} has an eigenvalue {low:.6g} below its allowed "
                        f"minimum {self.psd_floor:g}"
                    )
        return arr

    # -- drawing (adversarial tests) -------------------------------------------------------------
    def draw(
        self, dims: Mapping[str, int], rng: np.random.Generator, extreme: bool = False
    ) -> np.ndarray:
        """A member of this field: random, or (``extreme``) with entries at the ends of the range."""
        shape = tuple(1 if w is None else w for w in self.resolve(dims))
        if self.values is not None:
            choices = np.asarray(self.values, dtype=np.int64)
            if extreme:
                choices = np.asarray([choices.min(), choices.max()], dtype=np.int64)
            return rng.choice(choices, size=shape)
        lo = -1e6 if self.low is None else self.low
        hi = 1e6 if self.high is None else self.high
        if self.kind == "i":
            lo, hi = math.ceil(max(lo, -1e6)), math.floor(min(hi, 1e6))
            out = (
                rng.choice(np.asarray([lo, hi]), size=shape)
                if extreme
                else rng.integers(lo, hi + 1, size=shape)
            )
            return np.asarray(out, dtype=np.int64)
        if self.psd_floor is not None:
            return self._draw_matrix(shape, rng, extreme)
        if extreme:
            x = rng.choice(np.asarray([lo, hi, 0.0 if lo <= 0 <= hi else lo]), size=shape)
        else:
            scale = rng.choice(np.asarray([1e-3, 1.0, 1e3]))
            x = np.clip(rng.standard_normal(shape) * scale, lo, hi)
        if self.symmetric:
            x = (x + np.swapaxes(x, -1, -2)) / 2
        if self.norm is not None:
            n = np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]
            x = np.where(
                n > 0,
                x / np.maximum(n, 1e-300) * (self.norm if extreme else np.minimum(n, self.norm)),
                x,
            )
        return np.ascontiguousarray(x, dtype=float)

    def _draw_matrix(
        self, shape: tuple[int, ...], rng: np.random.Generator, extreme: bool
    ) -> np.ndarray:
        assert self.psd_floor is not None
        n = shape[-1]
        lead = shape[:-2]
        Q, _ = np.linalg.qr(rng.standard_normal(lead + (n, n)))
        top = self.high if self.high is not None else 1e6
        if extreme:
            eig = rng.choice(np.asarray([self.psd_floor, min(top, 1e6)]), size=lead + (n,))
        else:
            eig = self.psd_floor + rng.exponential(10.0, size=lead + (n,))
        M = np.einsum("...ij,...j,...kj->...ik", Q, eig, Q)
        return np.ascontiguousarray((M + np.swapaxes(M, -1, -2)) / 2)


class CheckedPublicState(PublicState):
    """A public state a :class:`PublicSpace` has validated for given dimensions.

    Validating it again against the *same* space object and dimensions is free, so the round
    protocol and the device's own checks do not pay twice.  A state that arrives from a server
    (decoded from its bytes) is a plain :class:`PublicState` and is always checked.
    """

    __slots__ = ("_mark",)

    def __init__(
        self, arrays: Mapping[str, np.ndarray], mark: tuple[object, tuple[tuple[str, int], ...]]
    ) -> None:
        super().__init__(arrays)
        self._mark = mark


@dataclass(frozen=True)
class PublicSpace:
    """Every public state a device accepts: the declared fields, nothing more, nothing less."""

    fields: tuple[PublicField, ...] = field(default_factory=tuple)

    @property
    def names(self) -> tuple[str, ...]:
        """Field names, in declaration order."""
        return tuple(f.name for f in self.fields)

    def validate(self, public: object, dims: Mapping[str, int]) -> PublicState:
        """``public`` checked field by field (a new read-only :class:`PublicState`).

        Raises
        ------
        PublicStateError
            Unknown or missing fields, wrong shape or kind, non-finite values, out-of-range values.
        """
        mark = (self, tuple(sorted(dims.items())))
        if (
            isinstance(public, CheckedPublicState)
            and public._mark[0] is self
            and public._mark[1] == mark[1]
        ):
            return public
        if not isinstance(public, Mapping):
            raise PublicStateError(
                f"the device received {type(public).__name__}, not a public state"
            )
        extra = sorted(set(public) - set(self.names))
        if extra:
            raise PublicStateError(
                f"public state field {extra[0]!r} is not part of this algorithm's public "
                f"state (fields: {list(self.names)}); the device refuses it"
            )
        missing = [n for n in self.names if n not in public]
        if missing:
            raise PublicStateError(
                f"public state field {missing[0]!r} is missing (fields: {list(self.names)})"
            )
        return CheckedPublicState(
            {f.name: f.validate(public[f.name], dims) for f in self.fields}, mark
        )

    def draw(
        self, dims: Mapping[str, int], rng: np.random.Generator, extreme: bool = False
    ) -> PublicState:
        """A member of the space (see :meth:`PublicField.draw`)."""
        return PublicState({f.name: f.draw(dims, rng, extreme) for f in self.fields})
