"""Ziggurat samplers for compiled code: normal, exponential and Laplace draws from raw 64-bit words.

The Gaussian and exponential samplers are the 256-layer ziggurat of Marsaglia & Tsang (2000),
"The ziggurat method for generating random variables" (J. Stat. Software 5(8)), in the variant
numpy's ``Generator`` uses (one 64-bit word per attempt: 8 bits pick the layer, the others the
abscissa; the exact base-strip tail of Marsaglia (1964) and the exact wedge rejection against
``exp(-x^2/2)`` / ``exp(-x)``), with numpy's tables.  They are exact in distribution, and on the
same words they return the same values as ``Generator.standard_normal`` /
``standard_exponential``.

Two sources of words:

* **a PCG64 stream, stepped inline** (:func:`pcg64_standard_normal`, :func:`pcg64_standard_exponential`):
  the 128-bit state of a ``numpy.random.PCG64`` is read once, advanced in registers (one 64 x 64
  -> 128-bit multiply per word instead of numpy's call through a function pointer) and written
  back.  The draws, and the generator's state afterwards, are *bit-identical* to
  ``rng.standard_normal(shape)`` / ``rng.standard_exponential(shape)``; any other bit generator
  falls back to those calls.  The environment's chunked draws use this when the sampler switch
  (below) is on.
* **a numba ``Generator``** (:func:`laplace_ziggurat`): one word per attempt through the bit
  generator's ``next_uint64``.  ``Lap(1)`` is ``+-Exp(1)`` with the sign taken from the lowest
  bit of the first word, a bit the exponential ziggurat does not read (it shifts the word right
  by 3), so sign and magnitude are independent and the draw is exact; it costs one word where the
  inversion of :func:`~privbandits.privacy.samplers.laplace_draw` costs one uniform and a
  logarithm.  This *changes the stream* of every Laplace draw.

The switch: ``PRIVBANDITS_SAMPLER=ziggurat`` (read at import) turns both on; the default,
``numpy``, keeps the streams of numpy's samplers (inversion for Laplace).  Compiled code freezes
the choice, so the compiled-code cache is keyed by it (:mod:`privbandits._cache`).
"""

from __future__ import annotations

import os

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic
from numba.np.random._constants import (
    fe_double,
    fi_double,
    ke_double,
    ki_double,
    we_double,
    wi_double,
    ziggurat_exp_r,
    ziggurat_nor_inv_r,
    ziggurat_nor_r,
)
from numba.np.random.generator_core import next_uint64

__all__ = [
    "SAMPLER",
    "SAMPLERS",
    "laplace_ziggurat",
    "pcg64_raw",
    "pcg64_standard_exponential",
    "pcg64_standard_normal",
    "use_ziggurat",
]

#: The sampler switch's values: ``numpy`` (numpy's streams) or ``ziggurat`` (this module).
SAMPLERS = ("numpy", "ziggurat")
#: The switch, from ``$PRIVBANDITS_SAMPLER`` at import (default ``numpy``).
SAMPLER = os.environ.get("PRIVBANDITS_SAMPLER", "numpy").strip().lower() or "numpy"
if SAMPLER not in SAMPLERS:
    raise ValueError(f"PRIVBANDITS_SAMPLER must be one of {SAMPLERS}; got {SAMPLER!r}")


def use_ziggurat() -> bool:
    """Whether the sampler switch selects this module's samplers."""
    return SAMPLER == "ziggurat"


#: numpy's PCG64 multiplier (PCG_DEFAULT_MULTIPLIER_128), high and low 64-bit halves.
_MUL_HI = np.uint64(2549297995355413924)
_MUL_LO = np.uint64(4865540595714422341)
_M64 = (1 << 64) - 1
_WI = np.asarray(wi_double, dtype=np.float64)
_KI = np.asarray(ki_double, dtype=np.uint64)
_FI = np.asarray(fi_double, dtype=np.float64)
_WE = np.asarray(we_double, dtype=np.float64)
_KE = np.asarray(ke_double, dtype=np.uint64)
_FE = np.asarray(fe_double, dtype=np.float64)
_NOR_R = float(ziggurat_nor_r)
_NOR_INV_R = float(ziggurat_nor_inv_r)
_EXP_R = float(ziggurat_exp_r)
_TWO_M53 = 1.0 / 9007199254740992.0


@intrinsic
def _mulhi(typingctx, a, b):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """High 64 bits of the 128-bit product of two uint64 (one machine multiply)."""
    sig = types.uint64(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        i128 = ir.IntType(128)
        p = builder.mul(builder.zext(args[0], i128), builder.zext(args[1], i128))
        return builder.trunc(builder.lshr(p, ir.Constant(i128, 64)), ir.IntType(64))

    return sig, codegen


@nb.njit(cache=True, inline="always")
def _step(
    hi: np.uint64, lo: np.uint64, ihi: np.uint64, ilo: np.uint64
) -> tuple[np.uint64, np.uint64, np.uint64]:  # pragma: no cover - compiled
    """One PCG64 step in registers: the new state ``(hi, lo)`` from the state and the increment
    ``(ihi, ilo)``, and its word (the XSL-RR output of the new state, as numpy's ``pcg64_next64``)."""
    nlo = lo * _MUL_LO
    nhi = _mulhi(lo, _MUL_LO) + lo * _MUL_HI + hi * _MUL_LO  # type: ignore[call-arg]
    lo = nlo + ilo
    hi = nhi + ihi + (np.uint64(1) if lo < nlo else np.uint64(0))
    w = hi ^ lo
    rot = hi >> np.uint64(58)
    return hi, lo, (w >> rot) | (w << ((np.uint64(64) - rot) & np.uint64(63)))


@nb.njit(cache=True, inline="always")
def _next(s: np.ndarray) -> np.uint64:  # pragma: no cover - compiled
    """Advance the PCG64 state ``s = [state_hi, state_lo, inc_hi, inc_lo]`` and return its next
    word."""
    hi, lo, w = _step(s[0], s[1], s[2], s[3])
    s[0] = hi
    s[1] = lo
    return w


@nb.njit(cache=True, inline="always")
def _double(s: np.ndarray) -> float:  # pragma: no cover - compiled
    """A uniform on [0, 1) from the top 53 bits of one word (numpy's ``next_double``)."""
    return float(_next(s) >> np.uint64(11)) * _TWO_M53


@nb.njit(cache=True, inline="always")
def _normal_try(s: np.ndarray, r: np.uint64) -> tuple[bool, float]:  # pragma: no cover - compiled
    """One attempt of the normal ziggurat on the word ``r`` (the tail or the wedge test drawing
    further words from ``s``): ``(True, x)`` if accepted, ``(False, 0)`` if rejected."""
    idx = r & np.uint64(0xFF)
    r >>= np.uint64(8)
    rabs = (r >> np.uint64(1)) & np.uint64(0x000FFFFFFFFFFFFF)
    x = float(rabs) * _WI[idx]
    if r & np.uint64(1):
        x = -x
    if rabs < _KI[idx]:
        return True, x  # inside the layer's rectangle (~99.3%)
    if idx == 0:  # the base strip: the exact tail beyond r (Marsaglia 1964)
        while True:
            xx = -_NOR_INV_R * np.log1p(-_double(s))
            yy = -np.log1p(-_double(s))
            if yy + yy > xx * xx:
                return True, (
                    -(_NOR_R + xx) if (rabs >> np.uint64(8)) & np.uint64(1) else _NOR_R + xx
                )
    if (_FI[idx - 1] - _FI[idx]) * _double(s) + _FI[idx] < np.exp(-0.5 * x * x):
        return True, x  # the wedge, accepted against the density
    return False, 0.0


@nb.njit(cache=True, inline="always")
def _exponential_try(s: np.ndarray, r: np.uint64) -> tuple[bool, float]:  # pragma: no cover
    """One attempt of the exponential ziggurat on the word ``r``, as :func:`_normal_try`."""
    ri = r >> np.uint64(3)
    idx = ri & np.uint64(0xFF)
    ri >>= np.uint64(8)
    x = float(ri) * _WE[idx]
    if ri < _KE[idx]:
        return True, x
    if idx == 0:  # the exact tail beyond r: r + Exp(1) (memorylessness)
        return True, _EXP_R - np.log1p(-_double(s))
    if (_FE[idx - 1] - _FE[idx]) * _double(s) + _FE[idx] < np.exp(-x):
        return True, x
    return False, 0.0


@nb.njit(cache=True)
def _normal(s: np.ndarray) -> float:  # pragma: no cover - compiled
    """One standard normal (numpy's ``random_standard_normal`` on the words of ``s``)."""
    while True:
        ok, x = _normal_try(s, _next(s))
        if ok:
            return x


@nb.njit(cache=True)
def _exponential(s: np.ndarray) -> float:  # pragma: no cover - compiled
    """One standard exponential (numpy's ``random_standard_exponential`` on the words of ``s``)."""
    while True:
        ok, x = _exponential_try(s, _next(s))
        if ok:
            return x


@nb.njit(cache=True)
def _normal_after(s: np.ndarray, r0: np.uint64) -> float:  # pragma: no cover - compiled
    """Finish a normal draw whose first word ``r0`` fell outside its layer's rectangle: the
    tail or the wedge test of that word, then :func:`_normal` if it is rejected."""
    ok, x = _normal_try(s, r0)
    return x if ok else _normal(s)


@nb.njit(cache=True)
def _exponential_after(s: np.ndarray, r0: np.uint64) -> float:  # pragma: no cover - compiled
    """:func:`_normal_after` for the exponential ziggurat."""
    ok, x = _exponential_try(s, r0)
    return x if ok else _exponential(s)


@nb.njit(cache=True, inline="always")
def _fill_ziggurat(s: np.ndarray, out: np.ndarray, normal: bool) -> None:  # pragma: no cover
    """``out[i] = _normal(s)`` (``normal``) or ``_exponential(s)`` for every ``i``, the state kept
    in registers on the fast path (``normal`` is a constant in each caller, so the branches on it
    are folded away)."""
    hi = s[0]
    lo = s[1]
    ihi = s[2]
    ilo = s[3]
    i = 0
    n = out.shape[0]
    while i < n:
        hi, lo, r = _step(hi, lo, ihi, ilo)
        if normal:
            idx = r & np.uint64(0xFF)
            rabs = (r >> np.uint64(9)) & np.uint64(0x000FFFFFFFFFFFFF)
            fast = rabs < _KI[idx]  # inside the layer's rectangle (~99.3%)
            if fast:
                x = float(rabs) * _WI[idx]
                out[i] = -x if (r >> np.uint64(8)) & np.uint64(1) else x
        else:
            ri = r >> np.uint64(11)
            idx = (r >> np.uint64(3)) & np.uint64(0xFF)
            fast = ri < _KE[idx]  # (~98.9%)
            if fast:
                out[i] = float(ri) * _WE[idx]
        if not fast:  # the rare path: finish this draw from the state in memory
            s[0] = hi
            s[1] = lo
            out[i] = _normal_after(s, r) if normal else _exponential_after(s, r)
            hi = s[0]
            lo = s[1]
        i += 1
    s[0] = hi
    s[1] = lo


@nb.njit(cache=True)
def _fill_normal(s: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out[i] = _normal(s)`` for every ``i``."""
    _fill_ziggurat(s, out, True)


@nb.njit(cache=True)
def _fill_exponential(s: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out[i] = _exponential(s)`` for every ``i``."""
    _fill_ziggurat(s, out, False)


@nb.njit(cache=True)
def _fill_raw(s: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    for i in range(out.shape[0]):
        out[i] = _next(s)


def _state(rng: np.random.Generator) -> np.ndarray | None:
    """``[state_hi, state_lo, inc_hi, inc_lo]`` of a PCG64 generator, or None for any other."""
    bg = rng.bit_generator
    if type(bg) is not np.random.PCG64:
        return None
    st = bg.state["state"]
    return np.array(
        [st["state"] >> 64, st["state"] & _M64, st["inc"] >> 64, st["inc"] & _M64], dtype=np.uint64
    )


def _store(rng: np.random.Generator, s: np.ndarray) -> None:
    bg = rng.bit_generator
    full = bg.state
    full["state"]["state"] = (int(s[0]) << 64) | int(s[1])
    bg.state = full


def _run(rng: np.random.Generator, fill: object, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    s = _state(rng)
    assert s is not None
    out: np.ndarray = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=dtype)
    fill(s, out)  # type: ignore[operator]
    _store(rng, s)
    return out.reshape(shape)


def pcg64_standard_normal(rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
    """``rng.standard_normal(shape)``, bit for bit (and the same state of ``rng`` afterwards),
    drawn by the inline-PCG64 ziggurat when ``rng`` runs on ``numpy.random.PCG64``."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if _state(rng) is None:
        return rng.standard_normal(shape)
    return _run(rng, _fill_normal, shape, np.float64)


def pcg64_standard_exponential(
    rng: np.random.Generator, shape: int | tuple[int, ...]
) -> np.ndarray:
    """``rng.standard_exponential(shape)``, bit for bit, by the inline-PCG64 ziggurat when
    ``rng`` runs on ``numpy.random.PCG64``."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if _state(rng) is None:
        return rng.standard_exponential(shape)
    return _run(rng, _fill_exponential, shape, np.float64)


def pcg64_raw(rng: np.random.Generator, n: int) -> np.ndarray:
    """``rng.bit_generator.random_raw(n)`` by the inline PCG64 step (tests the step)."""
    if _state(rng) is None:
        return rng.bit_generator.random_raw(n)  # type: ignore[no-any-return]
    return _run(rng, _fill_raw, (n,), np.uint64)


@nb.njit(cache=True)
def laplace_ziggurat(rng: np.random.Generator) -> float:  # pragma: no cover - compiled
    """One ``Lap(1)`` draw: the exponential ziggurat on ``rng``'s words, signed by the lowest bit
    of the first word (unread by the ziggurat, so independent of the magnitude)."""
    bg = rng.bit_generator
    w = next_uint64(bg)
    sign = -1.0 if w & np.uint64(1) else 1.0
    ri = w >> np.uint64(3)
    idx = ri & np.uint64(0xFF)
    ri >>= np.uint64(8)
    x = float(ri) * _WE[idx]
    if ri < _KE[idx]:
        return sign * x  # inside the layer's rectangle (~98.9%)
    while True:
        if idx == 0:  # the exact tail beyond r: r + Exp(1)
            u = float(next_uint64(bg) >> np.uint64(11)) * _TWO_M53
            return sign * (_EXP_R - np.log1p(-u))
        u = float(next_uint64(bg) >> np.uint64(11)) * _TWO_M53
        if (_FE[idx - 1] - _FE[idx]) * u + _FE[idx] < np.exp(-x):
            return sign * x  # the wedge, accepted against the density
        ri = next_uint64(bg) >> np.uint64(3)  # rejected: a new attempt, the sign kept
        idx = ri & np.uint64(0xFF)
        ri >>= np.uint64(8)
        x = float(ri) * _WE[idx]
        if ri < _KE[idx]:
            return sign * x
