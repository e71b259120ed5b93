"""The fft extension of the Array API standard (2023.12): 14 functions.

Every transform validates its input (dtype category, n/s, axis/axes, norm) against the spec
text, resolves the transform sizes itself (so NumPy and CuPy see the same explicit arguments),
makes one call into ``x._b.xp.fft`` and casts to the spec's result dtype, which keeps
the input precision (complex64 <-> float32).

The library computes only the unscaled transform (cuFFT on cuda, pocketfft on cpu): the
``norm`` scaling, hfft's and ihfft's conjugation and any dtype conversion run through the
namespace's own functions and the backend's astype, on every device alike. On cuda those are
our kernels; CuPy's (the scaling and conjugation inside cupy.fft) are built with -ftz and would
flush float32 subnormal results to 0.
"""
from __future__ import annotations

import inspect
import math
import types
from typing import TYPE_CHECKING

from . import _elementwise, _memory, _revisions
from ._array import _wrap, check_array
from ._backends import backend
from ._devices import check_device, default_device
from ._dtypes import DEFAULT_DTYPES, complex_dtype, real_dtype
from ._validation import (check_dtype_arg, check_dtype_category, check_int, check_size,
                          normalize_axes, normalize_axis)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Literal

    from ._typing import Array, Device, DType

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")

# Spec table, one row per transform: (input dtype category from the stub's "Should/Must have"
# line, result dtype from the input dtype, kind). Kind decides the sizes:
#   "c2c": the output length along an axis is n;
#   "r2c": the output length along the (last) axis is n//2 + 1;
#   "c2r": n is the OUTPUT length (default 2*(M-1)); n//2 + 1 input points are used.
_SAME, _TO_COMPLEX, _TO_REAL = (lambda d: d), complex_dtype, real_dtype
_TRANSFORMS = {
    "fft": ("complex floating-point", _SAME, "c2c"),
    "ifft": ("complex floating-point", _SAME, "c2c"),
    "fftn": ("complex floating-point", _SAME, "c2c"),
    "ifftn": ("complex floating-point", _SAME, "c2c"),
    "rfft": ("real-valued floating-point", _TO_COMPLEX, "r2c"),
    "rfftn": ("real-valued floating-point", _TO_COMPLEX, "r2c"),
    "ihfft": ("real-valued floating-point", _TO_COMPLEX, "r2c"),
    "irfft": ("complex floating-point", _TO_REAL, "c2r"),
    "irfftn": ("complex floating-point", _TO_REAL, "c2r"),
    "hfft": ("complex floating-point", _TO_REAL, "c2r"),
}


# The norm under which the library's call leaves its transform unscaled: "backward" for a
# forward transform, "forward" for an inverse one (hfft is an inverse real transform of the
# conjugate; ihfft the conjugate of a forward real one).
_LIBRARY_INVERSE = {"ifft", "ifftn", "irfft", "irfftn", "hfft"}
# The functions whose "backward" norm scales by 1/n (the inverse transforms of the spec).
_INVERSE = {"ifft", "ifftn", "irfft", "irfftn", "ihfft"}


def _unguarded(f):
    return getattr(f, "__wrapped__", f)  # (the caller's guard names the fft function)


_conj = _unguarded(_elementwise.conj)


def _times(a, factor):
    """a * factor (a Python float) without the operator's guard: multiply's own path, which
    takes the scalar under every revision (multiply() itself takes one from 2024.12)."""
    return _elementwise._binary(a, factor, "multiply", "*")


def _factor(fname, norm, sizes):
    """The scale factor of a transform of `sizes` points under `norm`, or None (unscaled)."""
    if norm == "ortho":
        return 1.0 / math.sqrt(math.prod(sizes))
    if (norm == "backward") == (fname in _INVERSE):
        return 1.0 / math.prod(sizes)
    return None


def _scaled(b, res, factor, out_dtype, device):
    """The Array of the native result ``res`` times the Python float ``factor`` (our multiply
    in res's precision, factor rounded to it, as pocketfft's scaling is). A complex result is
    scaled part by part, through a real view of its memory: a complex product with
    factor + 0j would give an infinite part's partner a NaN (inf * 0)."""
    if factor is None:
        return _wrap(res, device)
    if res.dtype.kind != "c":
        return _times(_wrap(res, device), factor)
    # the axes in memory order (cuFFT's results along an inner axis are swapped views of a
    # C-contiguous buffer): the whole buffer is scaled as one flat real array
    order = sorted(range(res.ndim), key=lambda i: res.strides[i], reverse=True)
    t = res.transpose(order)
    if not t.flags.c_contiguous:
        t = b.copy(t)
    real = t.reshape(-1).view(real_dtype(out_dtype)._np)
    flat = _times(_wrap(real, device), factor)._data.view(t.dtype).reshape(t.shape)
    back = [0] * res.ndim
    for i, o in enumerate(order):
        back[o] = i
    return _wrap(flat.transpose(back), device)


def _check_input(x, fname):
    check_array(x, f"fft.{fname}")
    category, result, _ = _TRANSFORMS[fname]
    check_dtype_category(x, category, f"fft.{fname}")
    return result(x.dtype)


def _check_norm(norm, fname):
    if not (isinstance(norm, str) and norm in _NORMS):
        raise ValueError(f"fft.{fname}: norm must be one of 'backward', 'ortho', 'forward', "
                         f"got {norm!r}")
    return norm


def _check_length(n, fname, what, hint=""):
    if n < 1:
        raise ValueError(f"fft.{fname}: {what} is {n}, which is not a valid number of FFT "
                         f"points (it must be >= 1){hint}")
    return n


def _default_c2r_length(m, fname, argname):
    return _check_length(2 * (m - 1), fname, f"the default {argname} = 2*(M-1) for M={m} "
                         f"input points", f"; pass {argname} explicitly")


def _run(x, fname, out_dtype, out_shape, call, norm, sizes):
    """One backend call of the unscaled transform, ``call(xp.fft, data, norm)``, then the
    scaling of ``norm`` for transforms of ``sizes`` points; an empty result needs no transform
    (cuFFT rejects a batch of 0)."""
    b = x._b
    with b.ctx():
        if math.prod(out_shape) == 0 or x.size == 0:
            # Either nothing to compute, or the (padded) input is all zeros: so is its transform.
            return _wrap(b.xp.zeros(out_shape, dtype=out_dtype._np), x.device)
        data = _conj(x)._data if fname == "hfft" else x._data
        res = call(b.xp.fft, data, "forward" if fname in _LIBRARY_INVERSE else "backward")
        res = b.astype(res, out_dtype, False)  # (the library keeps the precision: no work)
        out = _scaled(b, res, _factor(fname, norm, sizes), out_dtype, x.device)
        return _conj(out) if fname == "ihfft" else out


# ---- one-dimensional transforms ---------------------------------------------------------------

def _transform_1d(fname, x, n, axis, norm):
    out_dtype = _check_input(x, fname)
    kind = _TRANSFORMS[fname][2]
    ax = normalize_axis(axis, x.ndim, f"fft.{fname}")
    norm = _check_norm(norm, fname)
    m = x.shape[ax]
    if n is None:
        n = (_default_c2r_length(m, fname, "n") if kind == "c2r"
             else _check_length(m, fname, f"n (the length {m} of axis {ax})"))
    else:
        # the Python int goes on (a 0-d integer array or NumPy integer is no n for the backend)
        n = _check_length(check_int(n, f"fft.{fname}", "n"), fname, "n")
    out_len = n // 2 + 1 if kind == "r2c" else n
    out_shape = check_size(x.shape[:ax] + (out_len,) + x.shape[ax + 1:], out_dtype,
                           f"fft.{fname}")
    library = {"hfft": "irfft", "ihfft": "rfft"}.get(fname, fname)
    return _run(x, fname, out_dtype, out_shape,
                lambda f, a, nn: getattr(f, library)(a, n=n, axis=ax, norm=nn), norm, (n,))


def fft(x: Array, /, *, n: int | None = None, axis: int = -1,
        norm: Literal["backward", "ortho", "forward"] = "backward") -> Array:
    """Array API 2023.12 ``fft.fft`` (Fourier transform extension): one-dimensional discrete
    Fourier transform of a complex array (same dtype out)."""
    return _transform_1d("fft", x, n, axis, norm)


def ifft(x: Array, /, *, n: int | None = None, axis: int = -1,
         norm: Literal["backward", "ortho", "forward"] = "backward") -> Array:
    """Array API 2023.12 ``fft.ifft`` (Fourier transform extension): one-dimensional inverse
    discrete Fourier transform of a complex array."""
    return _transform_1d("ifft", x, n, axis, norm)


def rfft(x: Array, /, *, n: int | None = None, axis: int = -1,
         norm: Literal["backward", "ortho", "forward"] = "backward") -> Array:
    """Array API 2023.12 ``fft.rfft`` (Fourier transform extension): one-dimensional DFT of a
    real array; n//2 + 1 complex outputs of matching precision."""
    return _transform_1d("rfft", x, n, axis, norm)


def irfft(x: Array, /, *, n: int | None = None, axis: int = -1,
          norm: Literal["backward", "ortho", "forward"] = "backward") -> Array:
    """Array API 2023.12 ``fft.irfft`` (Fourier transform extension): inverse of rfft: n real
    outputs (default 2*(M-1)) from a complex array."""
    return _transform_1d("irfft", x, n, axis, norm)


def hfft(x: Array, /, *, n: int | None = None, axis: int = -1,
         norm: Literal["backward", "ortho", "forward"] = "backward") -> Array:
    """Array API 2023.12 ``fft.hfft`` (Fourier transform extension): DFT of a
    Hermitian-symmetric signal given by its first half: n real outputs."""
    return _transform_1d("hfft", x, n, axis, norm)


def ihfft(x: Array, /, *, n: int | None = None, axis: int = -1,
          norm: Literal["backward", "ortho", "forward"] = "backward") -> Array:
    """Array API 2023.12 ``fft.ihfft`` (Fourier transform extension): inverse of hfft: n//2 + 1
    complex outputs from a real array."""
    return _transform_1d("ihfft", x, n, axis, norm)


# ---- n-dimensional transforms -----------------------------------------------------------------

def _int_sequence(value, fname, argname):
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"fft.{fname}: {argname} must be a sequence (tuple or list) of Python "
                        f"ints or None, got {value!r}")
    return tuple(check_int(v, f"fft.{fname}", argname) for v in value)


def _transform_nd(fname, x, s, axes, norm):
    out_dtype = _check_input(x, fname)
    kind = _TRANSFORMS[fname][2]
    f = f"fft.{fname}"
    if s is not None:
        s = _int_sequence(s, fname, "s")
        if axes is None:
            raise ValueError(f"{f}: when s is given, axes must be given too (Array API "
                             f"2023.12: 'If s is not None, axes must not be None')")
    if axes is not None:
        axes = normalize_axes(_int_sequence(axes, fname, "axes"), x.ndim, f, "axes")
    else:
        axes = tuple(range(x.ndim))
    if s is not None and len(s) != len(axes):
        raise ValueError(f"{f}: s={s} and axes={axes} must have the same length")
    norm = _check_norm(norm, fname)
    if not axes:
        if kind != "c2c":
            raise ValueError(f"{f}: needs at least one axis to transform (x has shape "
                             f"{x.shape} and axes is empty)")
        b = x._b
        with b.ctx():  # nothing to transform: the result is a copy
            return _wrap(b.astype(x._data, out_dtype, True), x.device)
    last = len(axes) - 1
    sizes = []
    for i, ax in enumerate(axes):
        m = x.shape[ax]
        si = None if s is None else s[i]
        if si is not None and si != -1:
            sizes.append(_check_length(si, fname, f"s[{i}]"))
        elif kind == "c2r" and i == last:
            # -1 keeps all M input points of the last axis, which is the default output 2*(M-1).
            sizes.append(_default_c2r_length(m, fname, f"s[{i}]"))
        else:
            sizes.append(_check_length(m, fname, f"s[{i}] (the length {m} of axis {ax})"))
    sizes = tuple(sizes)
    out_shape = list(x.shape)
    for i, ax in enumerate(axes):
        out_shape[ax] = sizes[i] // 2 + 1 if kind == "r2c" and i == last else sizes[i]
    check_size(tuple(out_shape), out_dtype, f)
    if kind == "c2c" or len(axes) == 1:
        c_axes, c_sizes = _ascending(axes, sizes)
        return _run(x, fname, out_dtype, tuple(out_shape),
                    lambda fm, a, nn: getattr(fm, fname)(a, s=c_sizes, axes=c_axes, norm=nn),
                    norm, sizes)

    # Real n-D transforms by their definition: a real transform over the last listed axis and
    # complex ones over the others. (CuPy's own rfftn returns wrong shapes for axes listed out
    # of order, e.g. axes=[0, 2, 1].)
    def split(fm, a, nn):
        c_axes, c_sizes = _ascending(axes[:-1], sizes[:-1])
        rest = dict(s=c_sizes, axes=c_axes, norm=nn)
        if kind == "r2c":
            return fm.fftn(fm.rfft(a, n=sizes[-1], axis=axes[-1], norm=nn), **rest)
        return fm.irfft(fm.ifftn(a, **rest), n=sizes[-1], axis=axes[-1], norm=nn)
    return _run(x, fname, out_dtype, tuple(out_shape), split, norm, sizes)


def _ascending(axes, sizes):
    """(axes, sizes) in increasing axis order. Complex transforms along different axes
    commute, so the order is free; CuPy's c2c fftn/ifftn padded the wrong axes when s was
    given with axes listed out of order (ifftn(x, s=(1, 2), axes=[1, 0]) on a (1, 2) input
    returned shape (1, 2), not (2, 1))."""
    pairs = sorted(zip(axes, sizes))
    return tuple(a for a, _ in pairs), tuple(n for _, n in pairs)


def fftn(x: Array, /, *, s: Sequence[int] | None = None,
         axes: Sequence[int] | None = None,
         norm: Literal["backward", "ortho", "forward"] = "backward") -> Array:
    """Array API 2023.12 ``fft.fftn`` (Fourier transform extension): n-dimensional discrete
    Fourier transform of a complex array (same dtype out)."""
    return _transform_nd("fftn", x, s, axes, norm)


def ifftn(x: Array, /, *, s: Sequence[int] | None = None,
          axes: Sequence[int] | None = None,
          norm: Literal["backward", "ortho", "forward"] = "backward") -> Array:
    """Array API 2023.12 ``fft.ifftn`` (Fourier transform extension): n-dimensional inverse
    discrete Fourier transform of a complex array."""
    return _transform_nd("ifftn", x, s, axes, norm)


def rfftn(x: Array, /, *, s: Sequence[int] | None = None,
          axes: Sequence[int] | None = None,
          norm: Literal["backward", "ortho", "forward"] = "backward") -> Array:
    """Array API 2023.12 ``fft.rfftn`` (Fourier transform extension): n-dimensional DFT of a
    real array; the last axis gets s[-1]//2 + 1 complex outputs."""
    return _transform_nd("rfftn", x, s, axes, norm)


def irfftn(x: Array, /, *, s: Sequence[int] | None = None,
           axes: Sequence[int] | None = None,
           norm: Literal["backward", "ortho", "forward"] = "backward") -> Array:
    """Array API 2023.12 ``fft.irfftn`` (Fourier transform extension): inverse of rfftn: real
    output of sizes s (last default 2*(M-1))."""
    return _transform_nd("irfftn", x, s, axes, norm)


# ---- sample frequencies -----------------------------------------------------------------------

def _freq(fname, n, d, dtype, device):
    f = f"fft.{fname}"
    if dtype is not None:
        if not _revisions.allows("fftfreq dtype"):
            raise TypeError(f"{f}() got an unexpected keyword argument 'dtype': dtype= is in "
                            f"the 2024.12 revision of the Array API standard, and "
                            f"{_revisions.api_version()} is in force")
        check_dtype_arg(dtype, f, "real floating")
    n = check_int(n, f, "n")
    if n < 1:
        raise ValueError(f"{f}: n={n} must be >= 1 (the window length)")
    if isinstance(d, bool) or not isinstance(d, (int, float)):
        raise TypeError(f"{f}: d must be a Python float (the sample spacing), got {d!r}")
    d = float(d)
    if d == 0.0:
        raise ValueError(f"{f}: d must be non-zero (the frequencies are k / (d*n))")
    device = default_device() if device is None else check_device(device, f)
    if dtype is None:
        dtype = DEFAULT_DTYPES["real floating"]
    check_size((n if fname == "fftfreq" else n // 2 + 1,), dtype, f)
    b = backend(device)
    with b.ctx():
        # computed in float64 (no float64 operation flushes), then rounded once to dtype by
        # the backend's astype (CuPy's float32 rounding flushes subnormal results to 0)
        res = getattr(b.xp.fft, fname)(n, d)
        return _wrap(b.astype(res, dtype, False), device)


class _SignatureOfRevision(inspect.Signature):
    """A function's signature that shows the keywords a later revision added (``later``) only
    while that revision's rule is in force: inspect.signature(xp.fft.fftfreq) reads as the
    revision in force defines fftfreq."""

    __slots__ = ("_rule", "_later")

    def __init__(self, func, rule: str, later: tuple):
        full = inspect.signature(func)
        super().__init__(list(full.parameters.values()),
                         return_annotation=full.return_annotation)
        self._rule, self._later = rule, later

    @property
    def parameters(self):
        params = inspect.Signature.parameters.fget(self)
        if _revisions.allows(self._rule):
            return params
        return types.MappingProxyType({k: p for k, p in params.items() if k not in self._later})


def fftfreq(n: int, /, *, d: float = 1.0, dtype: DType | None = None,
            device: Device | None = None) -> Array:
    """Array API 2023.12 ``fft.fftfreq`` (Fourier transform extension): sample frequencies of an
    n-point DFT: [0, 1, ..., -1] / (d*n), in the default float dtype; from 2024.12 ``dtype`` (a
    real floating dtype) chooses it."""
    return _freq("fftfreq", n, d, dtype, device)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: DType | None = None,
             device: Device | None = None) -> Array:
    """Array API 2023.12 ``fft.rfftfreq`` (Fourier transform extension): non-negative sample
    frequencies of an n-point rfft: n//2 + 1 values (``dtype`` as in fftfreq)."""
    return _freq("rfftfreq", n, d, dtype, device)


for _f in (fftfreq, rfftfreq):
    _f.__signature__ = _SignatureOfRevision(_f, "fftfreq dtype", ("dtype",))  # type: ignore[attr-defined]
del _f


# ---- shifts -----------------------------------------------------------------------------------

def _shift(fname, x, axes):
    f = f"fft.{fname}"
    check_array(x, f)
    check_dtype_category(x, "floating-point", f)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, (tuple, list)):
        axes = normalize_axes(tuple(axes), x.ndim, f, "axes")
    else:
        axes = normalize_axes(axes, x.ndim, f, "axes")  # a single int (check_int rejects others)
    b = x._b
    with b.ctx():
        if not axes:
            return _wrap(x._data.copy(), x.device)
        return _wrap(getattr(b.xp.fft, fname)(x._data, axes=axes), x.device)


def fftshift(x: Array, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """Array API 2023.12 ``fft.fftshift`` (Fourier transform extension): move the zero-frequency
    component to the centre along axes (all by default)."""
    return _shift("fftshift", x, axes)


def ifftshift(x: Array, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """Array API 2023.12 ``fft.ifftshift`` (Fourier transform extension): inverse of fftshift
    (they differ by one sample on odd lengths)."""
    return _shift("ifftshift", x, axes)


_memory.install(__name__)  # the out-of-memory guard of every function (xp_cuda._memory)
_revisions.install(__name__)  # names of later revisions show only while one is in force


def __getattr__(name):
    raise _revisions.missing(__name__, name)
