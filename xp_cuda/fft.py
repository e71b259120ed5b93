"""The fft extension of the Array API standard (2023.12): 14 functions.

Every transform validates its input (dtype category, n/s, axis/axes, norm) against the spec
text, resolves the transform sizes itself (so NumPy and CuPy see the same explicit arguments),
makes one call into ``x._b.xp.fft`` and casts to the spec's result dtype, which keeps
the input precision (complex64 <-> float32).
"""
from __future__ import annotations

import inspect
import math
import types

from . import _memory, _revisions
from ._array import _wrap, check_array
from ._backends import backend
from ._devices import check_device, default_device
from ._dtypes import DEFAULT_DTYPES, complex_dtype, real_dtype
from ._validation import (check_dtype_arg, check_dtype_category, check_int, check_size,
                          normalize_axes, normalize_axis)

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


def _run(x, fname, out_dtype, out_shape, call):
    """One backend call; an empty result needs no transform (cuFFT rejects a batch of 0)."""
    b = x._b
    with b.ctx():
        if math.prod(out_shape) == 0 or x.size == 0:
            # Either nothing to compute, or the (padded) input is all zeros: so is its transform.
            return _wrap(b.xp.zeros(out_shape, dtype=out_dtype._np), x.device)
        res = call(b.xp.fft, x._data)
        return _wrap(res.astype(out_dtype._np, copy=False), x.device)


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
    return _run(x, fname, out_dtype, out_shape,
                lambda f, a: getattr(f, fname)(a, n=n, axis=ax, norm=norm))


def fft(x, /, *, n=None, axis=-1, norm="backward"):
    """One-dimensional discrete Fourier transform of a complex array (same dtype out)."""
    return _transform_1d("fft", x, n, axis, norm)


def ifft(x, /, *, n=None, axis=-1, norm="backward"):
    """One-dimensional inverse discrete Fourier transform of a complex array."""
    return _transform_1d("ifft", x, n, axis, norm)


def rfft(x, /, *, n=None, axis=-1, norm="backward"):
    """One-dimensional DFT of a real array; n//2 + 1 complex outputs of matching precision."""
    return _transform_1d("rfft", x, n, axis, norm)


def irfft(x, /, *, n=None, axis=-1, norm="backward"):
    """Inverse of rfft: n real outputs (default 2*(M-1)) from a complex array."""
    return _transform_1d("irfft", x, n, axis, norm)


def hfft(x, /, *, n=None, axis=-1, norm="backward"):
    """DFT of a Hermitian-symmetric signal given by its first half: n real outputs."""
    return _transform_1d("hfft", x, n, axis, norm)


def ihfft(x, /, *, n=None, axis=-1, norm="backward"):
    """Inverse of hfft: n//2 + 1 complex outputs from a real array."""
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
            return _wrap(x._data.astype(out_dtype._np, copy=True), x.device)
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
                    lambda fm, a: getattr(fm, fname)(a, s=c_sizes, axes=c_axes, norm=norm))

    # Real n-D transforms by their definition: a real transform over the last listed axis and
    # complex ones over the others. (CuPy's own rfftn returns wrong shapes for axes listed out
    # of order, e.g. axes=[0, 2, 1].)
    def split(fm, a):
        c_axes, c_sizes = _ascending(axes[:-1], sizes[:-1])
        rest = dict(s=c_sizes, axes=c_axes, norm=norm)
        if kind == "r2c":
            return fm.fftn(fm.rfft(a, n=sizes[-1], axis=axes[-1], norm=norm), **rest)
        return fm.irfft(fm.ifftn(a, **rest), n=sizes[-1], axis=axes[-1], norm=norm)
    return _run(x, fname, out_dtype, tuple(out_shape), split)


def _ascending(axes, sizes):
    """(axes, sizes) in increasing axis order. Complex transforms along different axes
    commute, so the order is free; CuPy's c2c fftn/ifftn padded the wrong axes when s was
    given with axes listed out of order (ifftn(x, s=(1, 2), axes=[1, 0]) on a (1, 2) input
    returned shape (1, 2), not (2, 1))."""
    pairs = sorted(zip(axes, sizes))
    return tuple(a for a, _ in pairs), tuple(n for _, n in pairs)


def fftn(x, /, *, s=None, axes=None, norm="backward"):
    """n-dimensional discrete Fourier transform of a complex array (same dtype out)."""
    return _transform_nd("fftn", x, s, axes, norm)


def ifftn(x, /, *, s=None, axes=None, norm="backward"):
    """n-dimensional inverse discrete Fourier transform of a complex array."""
    return _transform_nd("ifftn", x, s, axes, norm)


def rfftn(x, /, *, s=None, axes=None, norm="backward"):
    """n-dimensional DFT of a real array; the last axis gets s[-1]//2 + 1 complex outputs."""
    return _transform_nd("rfftn", x, s, axes, norm)


def irfftn(x, /, *, s=None, axes=None, norm="backward"):
    """Inverse of rfftn: real output of sizes s (last default 2*(M-1))."""
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
        # computed in float64, then rounded once to dtype
        res = getattr(b.xp.fft, fname)(n, d)
        return _wrap(res.astype(dtype._np, copy=False), device)


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


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """Sample frequencies of an n-point DFT: [0, 1, ..., -1] / (d*n), in the default float
    dtype; from 2024.12 ``dtype`` (a real floating dtype) chooses it."""
    return _freq("fftfreq", n, d, dtype, device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """Non-negative sample frequencies of an n-point rfft: n//2 + 1 values (``dtype`` as in
    fftfreq)."""
    return _freq("rfftfreq", n, d, dtype, device)


for _f in (fftfreq, rfftfreq):
    _f.__signature__ = _SignatureOfRevision(_f, "fftfreq dtype", ("dtype",))
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


def fftshift(x, /, *, axes=None):
    """Move the zero-frequency component to the centre along axes (all by default)."""
    return _shift("fftshift", x, axes)


def ifftshift(x, /, *, axes=None):
    """Inverse of fftshift (they differ by one sample on odd lengths)."""
    return _shift("ifftshift", x, axes)


_memory.install(__name__)  # the out-of-memory guard of every function (xp_cuda._memory)
_revisions.install(__name__)  # names of later revisions show only while one is in force


def __getattr__(name):
    raise _revisions.missing(__name__, name)
