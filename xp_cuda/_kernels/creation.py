"""Launchers of creation.cu on the current CuPy device and stream (callers hold backend().ctx()).

Each launcher takes a freshly allocated, C-contiguous CuPy output (16-byte aligned, as every
CuPy allocation is) and the already-validated host parameters; nothing here checks user input.
"""
from __future__ import annotations

import functools
import math
from decimal import Decimal, localcontext
import numpy as np

from ._runtime import dtype_name, grid, instance_units, load_kernel, source

_THREADS = 256

# dtype name -> kernel suffix; the names the .cu file instantiates (tests check the PTX)
SPACE_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float32", "float64", "complex64", "complex128")
ARANGE_DTYPES = SPACE_DTYPES[:10]
ITEM_SIZES = (1, 2, 4, 8, 16)


def kernel_names() -> list[str]:
    """Every kernel name a launcher here can request."""
    return (["xp_fill"] + [f"xp_eye_diag_{s}" for s in ITEM_SIZES]
            + [f"xp_tri_{s}" for s in ITEM_SIZES] + [f"xp_arange_{d}" for d in ARANGE_DTYPES]
            + [f"xp_{f}_{d}" for f in ("linspace", "logspace", "logspace_exp2")
               for d in SPACE_DTYPES])


# The instantiation macros of creation.cu and the kernel names each line `MACRO(N, T)` makes
# (None: the kernels written out, in every unit).
_MACRO_NAMES = {None: ("xp_fill",), "XP_BY_SIZE": ("xp_eye_diag_{}", "xp_tri_{}"),
                "XP_ARANGE_INT": ("xp_arange_{}",), "XP_ARANGE_FLOAT": ("xp_arange_{}",),
                "XP_SPACE": ("xp_linspace_{}", "xp_logspace_{}", "xp_logspace_exp2_{}")}


@functools.lru_cache(maxsize=None)
def units() -> dict:
    """kernel name -> the source the runtime compiles for it (one instantiation line of
    creation.cu: a first arange waits for its own kernel, not logspace's twelve dtypes)."""
    return instance_units(source("creation.cu"), _MACRO_NAMES)


def _kernel(name):
    return load_kernel(units()[name], name)


def _blocks(cp, work: int) -> int:
    """16 blocks per SM, grid-stride: for logspace's arithmetic this beat one thread per vector
    (0.77 against 0.53 of memset on the H200); the pure stores are at 0.93-1.00 either way."""
    return grid(cp, work, _THREADS, 16)


def _launch(cp, name, work, args):
    if work > 0:
        _kernel(name)((_blocks(cp, work),), (_THREADS,), args)


def _pattern(value_bytes: bytes) -> tuple[np.uint64, np.uint64]:
    """One element's bytes repeated to 16 bytes, as two little-endian uint64 words."""
    rep = value_bytes * (16 // len(value_bytes))
    return (np.uint64(int.from_bytes(rep[:8], "little")),
            np.uint64(int.from_bytes(rep[8:], "little")))


def _memset(cp, out, byte: int):
    if out.nbytes:
        stream = cp.cuda.get_current_stream()
        cp.cuda.runtime.memsetAsync(out.data.ptr, byte, out.nbytes, stream.ptr)


def fill(cp, out, value_bytes: bytes):
    """Every element of out set to the element whose bytes are value_bytes."""
    if len(set(value_bytes)) == 1:  # zeros, int8 ones, -1: the copy engine's memset
        _memset(cp, out, value_bytes[0])
        return out
    lo, hi = _pattern(value_bytes)
    nbytes = out.nbytes
    _launch(cp, "xp_fill", max(nbytes // 16, 1 if nbytes else 0),
            (out, np.int64(nbytes), lo, hi))
    return out


def eye(cp, out, k: int, one_bytes: bytes):
    """out (n_rows, n_cols) zeroed by memset, then its k-th diagonal set to one."""
    n_rows, n_cols = out.shape
    _memset(cp, out, 0)
    r0, c0 = max(0, -k), max(0, k)
    ndiag = max(0, min(n_rows - r0, n_cols - c0))
    lo, hi = _pattern(one_bytes)
    _launch(cp, f"xp_eye_diag_{out.itemsize}", ndiag,
            (out, np.int64(n_cols), np.int64(r0), np.int64(c0), np.int64(ndiag), lo, hi))
    return out


def tri(cp, x, out, k: int, upper: bool):
    """tril/triu of a C-contiguous x (..., rows, cols) into out of the same shape."""
    rows, cols = x.shape[-2:]
    _launch(cp, f"xp_tri_{x.itemsize}", x.size,
            (x, out, np.int64(x.size), np.int64(rows), np.int64(cols),
             np.int64(max(min(k, 2**62), -2**62)), np.int32(upper)))
    return out


def arange(cp, out, start, step):
    """out[i] = start + i*step: Python ints (any integer dtype) or floats (float dtypes)."""
    name = f"xp_arange_{dtype_name(out.dtype)}"
    if out.dtype.kind in "iu":
        args = (np.uint64(start % 2**64), np.uint64(step % 2**64))
    else:
        args = (np.float64(start), np.float64(step))
    _launch(cp, name, out.size, (out, np.int64(out.size)) + args)
    return out


def _lin_args(p):
    start, mult, div, stop, mode = p
    return (np.float64(start), np.float64(mult), np.float64(div), np.float64(stop),
            np.int32(mode))


def linspace(cp, out, re, im, last: int):
    """re, im: (start, mult, div, stop, mode) per component (see Lin in creation.cu)."""
    _launch(cp, f"xp_linspace_{dtype_name(out.dtype)}", out.size,
            (out, np.int64(out.size)) + _lin_args(re) + _lin_args(im) + (np.int64(last),))
    return out


def _dd(value: Decimal) -> tuple[float, float]:
    """A number as the double-double hi + lo (hi the nearest double)."""
    hi = float(value)
    return hi, float(value - Decimal(hi))


def _exp2_table() -> np.ndarray:
    """Pow2's table in creation.cu: 2**(j/128) for j < 128 as (hi, lo) pairs, from 60-digit
    decimal arithmetic."""
    with localcontext() as ctx:
        ctx.prec = 60
        ln2 = Decimal(2).ln()
        pairs = [_dd((ln2 * j / 128).exp()) for j in range(128)]
    return np.array([v for pair in pairs for v in pair], dtype=np.float64)


def _exp2_coefficients() -> tuple[float, ...]:
    """Pow2's c1..c5: ln2**k / k!, the Taylor coefficients of 2**r - 1."""
    with localcontext() as ctx:
        ctx.prec = 60
        ln2 = Decimal(2).ln()
        return tuple(float(ln2 ** k / math.factorial(k)) for k in range(1, 6))


_tables: dict[int, object] = {}  # device id -> Pow2's table on that device
_COEFFICIENT_ARGS = tuple(np.float64(c) for c in _exp2_coefficients())


@functools.lru_cache(maxsize=64)  # 60-digit logarithms cost tens of us; bases repeat
def _log2_dd(base: float) -> tuple[float, float]:
    with localcontext() as ctx:
        ctx.prec = 60
        return _dd(Decimal(base).ln() / Decimal(2).ln())


def logspace(cp, out, lin, last: int, base: float, ibase: int, base_is_int: bool):
    dev = cp.cuda.runtime.getDevice()
    tab = _tables.get(dev)
    if tab is None:
        tab = _tables[dev] = cp.asarray(_exp2_table())
    fast = math.isfinite(base) and base > 0
    lh, ll = _log2_dd(base) if fast else (0.0, 0.0)
    # every y lies between start and stop up to an ulp of rounding: with the margin to Pow2's
    # limit (1015), the whole grid is in its exp2 range and the kernel without pow runs
    exp2_only = fast and all(math.isfinite(v) and abs(v * lh) <= 1014.0 for v in (lin[0], lin[3]))
    name = "logspace_exp2" if exp2_only else "logspace"
    _launch(cp, f"xp_{name}_{dtype_name(out.dtype)}", out.size,
            (out, np.int64(out.size)) + _lin_args(lin)
            + (np.int64(last), np.float64(base), np.int64(ibase), np.int32(base_is_int),
               tab, np.float64(lh), np.float64(ll))
            + _COEFFICIENT_ARGS + (np.int32(fast),))
    return out
