"""The cpu backend: NumPy, and the reference semantics every CUDA kernel is tested against.

Where NumPy itself misses a special case of the standard, the fix lives here (the complex
``expm1``/``tanh``/``sign`` overrides, exact integer rounding and powers), so the reference the
cuda tests compare with is the standard's result.
"""
from __future__ import annotations

import numpy as np

from .._devices import CPU
from .._dtypes import TypedScalar
from ._base import (_FP_IGNORE, FAST_ANY_LAYOUT, Backend, EmptyMask, FpQuiet, _reduced_shape,
                    fp_quiet_off, fp_quiet_on, keep_call)

# Rounding an integer is the identity; going through the backend would pass through float64
# and lose exactness above 2**53.
_IDENTITY_ON_INTEGERS = {"ceil", "floor", "trunc", "round"}


def _int_pow(base, exp, signed: bool):
    """Integer power. A negative exponent (left unspecified by the spec) gives the truncated
    exact result: 1 for base 1, +-1 for base -1, otherwise 0; never an error."""
    neg = exp < 0
    out = np.power(base, np.where(neg, np.zeros_like(exp), exp))
    if neg.any():
        one = np.ones_like(out)
        special = np.where(base == 1, one, np.zeros_like(out))
        if signed:
            special = np.where(base == -1, np.where(exp % 2 == 0, one, -one), special)
        out = np.where(neg, special, out)
    return out


def _complex_expm1(z):
    """expm1 for complex input with the spec's special cases (NumPy's misses several: e.g.
    expm1(+inf + 0j) must be +inf + 0j). expm1(a + ib) = expm1(a) cos b - 2 sin^2(b/2)
    + i e^a sin b keeps the accuracy of expm1 near 0."""
    a, b = z.real, z.imag
    half = np.sin(b / 2)
    re = np.expm1(a) * np.cos(b) - 2 * half * half
    im = np.exp(a) * np.sin(b)
    zero = np.zeros_like(a)
    im = np.where(b == 0, b, im)  # a real argument keeps an exact (signed) zero imaginary part
    re = np.where((a == 0) & (b == 0), zero, re)
    finite_b = np.isfinite(b)
    neg_inf, pos_inf = a == -np.inf, a == np.inf
    re = np.where(neg_inf, -np.ones_like(a), re)  # +0 cis(b) - 1
    im = np.where(neg_inf, np.where(finite_b, zero * np.sin(np.where(finite_b, b, 0)), zero), im)
    re = np.where(pos_inf & ~finite_b, np.full_like(a, np.inf), re)
    im = np.where(pos_inf & ~finite_b, np.full_like(a, np.nan), im)
    out = np.empty_like(z)
    out.real, out.imag = re, im
    return out


def _complex_tanh(z):
    """tanh for complex input; the spec wants tanh(+inf + ib) = 1 + 0j for every positive
    finite b (C99, and so NumPy, give 1 + 0*sin(2b) j, whose sign follows sin(2b)). By
    symmetry (odd, and conj-symmetric), an infinite real part gives sign(a) + copysign(0, b) j."""
    out = np.tanh(z)
    a, b = z.real, z.imag
    inf_a = np.isinf(a)
    if inf_a.any():
        zero = np.zeros_like(a)
        re = np.where(inf_a, np.where(a > 0, 1.0, -1.0).astype(a.dtype), out.real)
        im = np.where(inf_a, np.where(np.isfinite(b), np.copysign(zero, b), zero), out.imag)
        out = np.empty_like(z)
        out.real, out.imag = re, im
    return out


def _complex_sign(z):
    """sign for complex input: the spec makes any NaN part give NaN + NaN j (NumPy gives
    e.g. sign(inf + nan j) = 1 + 0j)."""
    out = np.sign(z)
    nan = np.isnan(z.real) | np.isnan(z.imag)
    return np.where(nan, np.asarray(complex(np.nan, np.nan), dtype=z.dtype), out)


# Functions whose NumPy misses special cases of the spec, replaced per input kind.
_OVERRIDES = {("expm1", "complex"): _complex_expm1, ("tanh", "complex"): _complex_tanh,
              ("sign", "complex"): _complex_sign}
# (name, input kind) pairs that leave the plain ufunc call: a set, one lookup per call.
_SPECIAL = frozenset(_OVERRIDES) | {(n, k) for n in _IDENTITY_ON_INTEGERS
                                   for k in ("int", "uint")} | {("pow", "int"), ("pow", "uint")}
# NumPy's functions by name, looked up once instead of getattr(np, name) per call.
_FUNCS: dict = {}
# ufunc.reduce directly: np.sum & co. spend ~1 us of Python in front of the same call.
_REDUCE = {"sum": np.add.reduce, "prod": np.multiply.reduce, "max": np.maximum.reduce,
           "min": np.minimum.reduce, "all": np.logical_and.reduce, "any": np.logical_or.reduce}


def lin_at(p, i: int, last: int) -> float:
    """Element i of a linspace grid p = (start, mult, div, stop, mode), with the float64
    operations of NumPy 2.x and the kernel: i*mult + start (mode 0) or (i/div)*mult + start
    (mode 1, when the step underflows to 0); index `last` is stop exactly."""
    start, mult, div, stop, mode = p
    if i == last:
        return stop
    return ((i / div) * mult if mode else i * mult) + start


def _remember(name, f, operands):
    """Register the plain NumPy call f for these operand dtypes in FAST_ANY_LAYOUT: the spec
    layer called elementwise only after its checks passed for them, f gave the result dtype
    itself (no cast), and NumPy's result dtype follows from the operand dtypes alone, so a later
    call with the same dtypes (and, for two arrays, equal shapes) may run f directly (a
    scalar first too: the reflected operators)."""
    x1 = operands[0]
    if len(operands) == 1:
        if type(x1) is not np.ndarray:
            return
        key = (name, x1.dtype)
    else:
        x2 = operands[1]
        if type(x1) is TypedScalar:  # a reflected operator (1.0 / x)
            if type(x2) is not np.ndarray:
                return
            key = (name, "s", x2.dtype)
        elif type(x1) is not np.ndarray:
            return
        elif type(x2) is TypedScalar:
            key = (name, x1.dtype, "s")
        elif type(x2) is np.ndarray:
            key = (name, x1.dtype, x2.dtype)
        else:
            return
    if key not in FAST_ANY_LAYOUT:  # (broadcasting calls come here every time)
        FAST_ANY_LAYOUT[key] = (_run1(f) if len(operands) == 1 else _run2(f), CPU)


def _run1(f):
    def run(a):
        token = fp_quiet_on(_FP_IGNORE)
        try:
            out = f(a)
        finally:
            fp_quiet_off(token)
        return out if type(out) is np.ndarray else np.asarray(out)
    return run


def _run2(f):
    def run(a, b):
        token = fp_quiet_on(_FP_IGNORE)
        try:
            out = f(a, b)
        finally:
            fp_quiet_off(token)
        return out if type(out) is np.ndarray else np.asarray(out)
    return run


class _KeptRun:
    """A checked NumPy call kept for the spec layer's hot path (KEPT): the plain call for
    the operands' device, None for another (the caller then takes the full path)."""
    __slots__ = ("run", "device")

    def __init__(self, run, device):
        self.run, self.device = run, device

    def __call__(self, datas, device):
        return self.run(*datas) if device is self.device else None


class CpuBackend(Backend):
    xp = np
    device = CPU

    def __init__(self, device=CPU):
        self.device = device  # cpu, or a simulated cpu:N (the same NumPy, a distinct device)

    def _kept(self, plan_key, run, *datas):
        """run(*datas), the plain NumPy call of a checked call, first kept for the spec
        layer's hot path under ``plan_key`` (KEPT; None: not kept), as the cuda backend keeps
        its launches."""
        if plan_key is not None:
            keep_call(plan_key, _KeptRun(run, self.device))
        return run(*datas)

    def repeat(self, data, repeats, axis, plan_key=None):
        # an int count: the array's own method, kept for the spec layer's hot path (KEPT),
        # which then skips repeat's checks (2.9-4.0 -> 1.4 us for 16 elements); an array of
        # counts is data, never kept. (Kept calls of roll, tile, trace, vector_norm, matmul
        # and astype saved nothing measurable: their checks were already one plan lookup.)
        if type(repeats) is int:
            return self._kept(plan_key, lambda d: d.repeat(repeats, axis), data)
        return super().repeat(data, repeats, axis)

    def elementwise(self, name, fn, operands, in_dtype, out_dtype, shape, plan_key=None):
        """One of the 65 functions: NumPy's `fn`, with the standard's fixes. operands: native
        arrays or TypedScalars of the operators."""
        kind = in_dtype.kind
        token = fp_quiet_on(_FP_IGNORE)
        try:
            if (name, kind) in _SPECIAL:
                out = self._special(name, kind, operands, in_dtype)
            else:
                f = _FUNCS.get(fn)
                if f is None:
                    f = _FUNCS[fn] = getattr(np, fn)
                if len(operands) == 2:
                    x1, x2 = operands
                    out = f(x1.value if type(x1) is TypedScalar else x1,
                            x2.value if type(x2) is TypedScalar else x2)
                    # a call the hot path could take: remember it (a broadcast of two
                    # arrays under the spec layer's key of its dtypes and shapes)
                    if out.dtype == out_dtype._np:
                        if type(x2) is TypedScalar or type(x1) is TypedScalar or \
                                x1.shape == x2.shape:
                            _remember(name, f, operands)
                        elif plan_key is not None:
                            keep_call(plan_key, _KeptRun(_run2(f), self.device))
                else:
                    out = f(operands[0])
                    if out.dtype == out_dtype._np:
                        _remember(name, f, operands)
            if type(out) is not np.ndarray:  # 0-d work gives a NumPy scalar
                out = np.asarray(out)
            if out.dtype != out_dtype._np:
                out = out.astype(out_dtype._np)
        finally:
            fp_quiet_off(token)
        return out

    @staticmethod
    def _special(name, kind, operands, in_dtype):
        natives = [o.value if type(o) is TypedScalar else o for o in operands]
        if name in _IDENTITY_ON_INTEGERS:
            return np.array(natives[0], copy=True)
        if name == "pow":
            x1, x2 = (np.asarray(v, dtype=in_dtype._np) for v in natives)
            return _int_pow(x1, x2, kind == "int")
        return _OVERRIDES[name, kind](*(np.asarray(v) for v in natives))

    def vector_norm(self, data, axes, keepdims, ord, dtype, plan_key=None):
        """Backend.vector_norm, the 2-norm of real data over trailing axes without its moves:
        their transpose is the identity and |x|*|x| is x*x (~1 us of calls saved). The sum is
        over the same flattened last axis, so the result is the same to the bit."""
        ndim = data.ndim
        if ord != 2 or data.dtype.kind == "c" or not axes or \
                axes != tuple(range(ndim - len(axes), ndim)):
            return super().vector_norm(data, axes, keepdims, ord, dtype)
        t = dtype._np
        shape = data.shape
        count = 1
        for a in axes:
            count *= shape[a]
        token = fp_quiet_on(_FP_IGNORE)
        try:
            a = data if data.dtype == t else data.astype(t)
            a = a.reshape(shape[:ndim - len(axes)] + (count,))
            if count == 0:
                out = np.zeros(a.shape[:-1], dtype=t)
            else:
                out = np.sqrt(np.add.reduce(np.multiply(a, a), -1))
            if type(out) is not np.ndarray:
                out = np.asarray(out)
            return out.reshape(_reduced_shape(shape, axes, True)) if keepdims else out
        finally:
            fp_quiet_off(token)

    def bounds(self, data):
        # the ufuncs' reduce directly: data.min() and data.max() cost ~0.5 us more each
        return int(np.minimum.reduce(data, None)), int(np.maximum.reduce(data, None))

    def concat(self, parts, axis, dtype, plan_key=None):
        """Backend.concat as one NumPy call (its dtype= converts each part: no astype), kept
        for the spec layer's hot path under ``plan_key`` (KEPT: the parts' dtypes and shapes
        and the axis decide the call)."""
        t = dtype._np

        def run(*ps):
            return np.concatenate(ps, axis=axis, dtype=t)
        return self._kept(plan_key, run, *parts)

    def stack(self, parts, axis, dtype, plan_key=None):
        """Backend.stack as concat of each part viewed with the new axis (np.stack's own
        Python costs ~3 us), kept like concat."""
        t, new = dtype._np, (slice(None),) * axis + (None,)

        def run(*ps):
            return np.concatenate([p[new] for p in ps], axis=axis, dtype=t)
        return self._kept(plan_key, run, *parts)

    def searchsorted(self, a, v, side, dtype, plan_key=None):
        """Backend.searchsorted through the array's own method (np.searchsorted's wrapper
        costs ~1 us), kept for the spec layer's hot path under ``plan_key`` (KEPT)."""
        t = dtype._np

        def run(a, v):
            out = a.astype(t, copy=False).searchsorted(v.astype(t, copy=False), side)
            return out.astype(np.int64, copy=False) if type(out) is np.ndarray else \
                np.asarray(out, dtype=np.int64)
        return self._kept(plan_key, run, a, v)

    def take(self, data, idx, axis, plan_key=None):
        # NumPy's own take refuses an index outside [-n, n) as we do (mode "raise"), so signed
        # indices go to it unchecked and their bounds are read only when it refuses (two
        # reductions, ~2.8 us of an 8 us call); unsigned ones keep the check first (uint64
        # past int64's range would wrap into a valid negative index)
        if idx.dtype.kind == "u" or not idx.shape[0]:
            return super().take(data, idx, axis, plan_key)
        try:
            return data.take(idx, axis), None
        except IndexError:
            lo, hi = self.bounds(idx)
            return None, (lo if lo < -data.shape[axis] else hi)

    def stable_argsort(self, data, axis: int):
        return data.argsort(axis, "stable")  # the method: np.argsort's wrapper costs ~0.4 us

    def stable_sort(self, data, axis: int):
        out = data.copy("K")  # np.sort is this copy and sort behind ~0.5 us of Python
        out.sort(axis, "stable")
        return out

    def astype(self, data, dtype, copy: bool, plan_key=None):
        return data.astype(dtype._np, copy=copy)  # no device to make current

    def where(self, cond, x1, x2, dtype, shape, plan_key=None):
        t = dtype._np  # a cast only where an operand's dtype differs (each astype ~0.1 us)
        if x1.dtype == t and x2.dtype == t:
            run = np.where
        else:
            def run(c, a, b):
                return np.where(c, a if a.dtype == t else a.astype(t),
                                b if b.dtype == t else b.astype(t))
        return self._kept(plan_key, run, cond, x1, x2)

    def nonzero(self, data):
        return tuple([i if i.dtype == np.int64 else i.astype(np.int64) for i in data.nonzero()])

    def getitem(self, data, key, user_key):
        if type(key) is EmptyMask:
            return np.empty((0,) + data.shape[key.ndim:], data.dtype)
        out = data[key]  # no device to switch to: NumPy's indexing directly
        return out if type(out) is np.ndarray else np.asarray(out)

    def reduce(self, kind, data, axes, keepdims, dtype, plan_key=None):
        """Backend.reduce's results through the ufuncs' reduce: max/min are maximum/minimum
        (NaN propagates, as np.amax), all/any reduce to bool, sum/prod accumulate in dtype
        (each element cast first), mean is the sum over the count (NaN for none)."""
        t = dtype._np
        token = fp_quiet_on(_FP_IGNORE)
        try:
            if kind == "mean":
                n = 1
                for a in axes:
                    n *= data.shape[a]
                if not n:
                    out = np.full(_reduced_shape(data.shape, axes, keepdims), np.nan, dtype=t)
                else:
                    out = np.asarray(np.add.reduce(data, axes, None, None, keepdims))
                    # true division by the count in the sum's dtype, as np.mean rounds; a
                    # complex sum part by part (NumPy's complex division by n + 0j turns the
                    # partner of an infinite part into NaN: mean(0 + inf j) is 0 + inf j)
                    for part in ((out.real, out.imag) if out.dtype.kind == "c" else (out,)):
                        np.true_divide(part, n, out=part)
            elif kind in ("sum", "prod"):
                try:
                    out = _REDUCE[kind](data, axes, t, None, keepdims)
                except TypeError:  # a dtype of a narrower kind (float into int): cast first
                    out = _REDUCE[kind](data.astype(t), axes, t, None, keepdims)
            elif kind in ("all", "any"):
                out = _REDUCE[kind](data, axes, np.bool_, None, keepdims)
            elif data.size == 0:  # max/min into an empty result (the spec layer refuses
                # an empty range with a non-empty result): nothing to reduce
                out = np.empty(_reduced_shape(data.shape, axes, keepdims), dtype=data.dtype)
            else:
                out = _REDUCE[kind](data, axes, None, None, keepdims)
            if type(out) is not np.ndarray:
                out = np.asarray(out)
            if out.dtype != t:
                out = out.astype(t)
        finally:
            fp_quiet_off(token)
        return out

    def var(self, fname, data, axes, dof, keepdims, dtype, plan_key=None):
        """Backend.var through the ufuncs (np.mean and np.sum spend ~1 us each in Python in
        front of the same reductions): the mean is the sum divided by the count as an intp,
        as np.mean divides."""
        t = dtype._np
        token = fp_quiet_on(_FP_IGNORE)
        try:
            if not dof > 0:
                return np.full(_reduced_shape(data.shape, axes, keepdims), np.nan, dtype=t)
            n = 1
            for a in axes:
                n *= data.shape[a]
            mean = np.add.reduce(data, axes, None, None, True)
            if type(mean) is not np.ndarray:  # 0-d data: NumPy's reduce gives a scalar
                mean = np.asarray(mean)
            mean = np.true_divide(mean, np.intp(n), out=mean, casting="unsafe")
            dev = data - mean
            out = np.add.reduce(np.multiply(dev, dev), axes, None, None, keepdims)
            out = np.true_divide(out, np.asarray(dof, dtype=t))
            if fname == "std":
                out = np.sqrt(out)
            if type(out) is not np.ndarray:
                out = np.asarray(out)
            return out if out.dtype == t else out.astype(t)
        finally:
            fp_quiet_off(token)

    def cumulative(self, kind, data, axis: int, dtype, include_initial: bool, plan_key=None):
        t = dtype._np
        if include_initial:
            return super().cumulative(kind, data, axis, dtype, include_initial)
        token = fp_quiet_on(_FP_IGNORE)
        try:  # np.cumsum's own Python costs ~1 us in front of this call
            ufunc = np.add if kind == "sum" else np.multiply
            try:
                out = ufunc.accumulate(data, axis, t)
            except TypeError:  # a dtype of a narrower kind (float into int): cast first
                out = ufunc.accumulate(data.astype(t), axis, t)
        finally:
            fp_quiet_off(token)
        return out if out.dtype == t else out.astype(t)

    def argreduce(self, kind, data, axis, keepdims, plan_key=None):
        # the methods directly: np.argmax adds ~0.5 us of Python in front of them
        out = (data.argmax if kind == "argmax" else data.argmin)(axis, None, keepdims=keepdims)
        if type(out) is not np.ndarray:
            out = np.asarray(out)
        return out if out.dtype == np.int64 else out.astype(np.int64)

    def writable(self, data) -> bool:
        return data.flags.writeable  # (NumPy marks broadcast views and read-only imports)

    # ---- moving data ----------------------------------------------------------------------
    def move_in(self, data, src_backend, stream=None):
        """A copy on this device of a native array of another device."""
        if stream is not None:
            raise ValueError("to_device: stream must be None when moving to the cpu")
        if isinstance(src_backend, CpuBackend):  # between cpu and a simulated cpu:N: a copy,
            return np.array(data, copy=True)  # as between any two devices (never an alias)
        return src_backend.to_host(data)

    # ---- creation: the references of the cuda kernels --------------------------------------
    def empty(self, shape, dtype):
        return np.empty(shape, dtype=dtype._np)

    def full(self, shape, dtype, value):
        # np.full is empty + copyto behind ~1 us of Python; fill is the same copy of value
        out = np.empty(shape, dtype=dtype._np)
        out.fill(value)
        return out

    def eye(self, n_rows, n_cols, k, dtype):
        return np.eye(n_rows, n_cols, k=k, dtype=dtype._np)

    def tri(self, data, k, upper):
        return (np.triu if upper else np.tril)(data, k=k)

    def arange(self, n, dtype, start, step, exact):
        """start + i*step: in modular uint64 arithmetic when exact (every value fits dtype),
        else in float64, as the kernel computes it."""
        if exact:
            i = np.arange(n, dtype=np.uint64)
            return (i * np.uint64(step % 2**64) + np.uint64(start % 2**64)).astype(dtype._np)
        i = np.arange(n, dtype=np.float64)
        return (i * step + start).astype(dtype._np)

    def linspace(self, num, dtype, a: complex, b: complex, endpoint, re, im, last):
        with FpQuiet():
            if dtype.kind != "complex":
                return np.linspace(a.real, b.real, num=num, endpoint=endpoint, dtype=dtype._np)
            # Componentwise, as the spec defines the complex grid (two real grids).
            parts = [np.linspace(u, v, num=num, endpoint=endpoint, dtype=np.float64)
                     for u, v in ((a.real, b.real), (a.imag, b.imag))]
            out = np.empty((num,), dtype=dtype._np)
            out.real, out.imag = parts
            return out

    def logspace(self, num, dtype, start, stop, base, endpoint, lin, last, values):
        """values(y, base, dtype): the integer-exact power the kernel reproduces."""
        with FpQuiet():
            y = np.linspace(start, stop, num, endpoint=endpoint)
        return values(y, base, dtype)

    # ---- linear algebra and sorting ---------------------------------------------------------
    def vecdot(self, d1, d2, axis, dtype):
        a = np.moveaxis(d1.astype(dtype._np, copy=False), axis, -1)
        c = np.moveaxis(d2.astype(dtype._np, copy=False), axis, -1)
        if dtype.kind == "complex":
            a = np.conj(a)
        # (..., 1, K) @ (..., K, 1): one batched product, stacks broadcast by matmul.
        out = np.matmul(a[..., None, :], c[..., :, None])[..., 0, 0]
        return np.asarray(out).astype(dtype._np, copy=False)

    def svd(self, data, full_matrices: bool, compute_uv: bool):
        """np.linalg.svd, refusing a matrix that holds inf or NaN first: LAPACK's gesdd loops
        forever on some with inf (Reference-LAPACK/lapack#1409; NumPy before 2.5 called it:
        numpy/numpy#32591, svd of diag(inf, 1, 2) never returned), and raises for NaN. NumPy
        2.5 refuses both the same way."""
        if not np.isfinite(data).all():
            raise np.linalg.LinAlgError(
                "x holds an infinite or NaN value; replace those first, e.g. "
                "xp.where(xp.isfinite(x), x, 0.0)")
        return super().svd(data, full_matrices, compute_uv)

    def solve(self, a, b, dtype):
        """np.linalg.solve (LAPACK gesv) on the (..., M, M) and (..., M, K) stacks (the
        reference of the cuda launcher); LAPACK's singular-matrix error becomes the
        namespace's ValueError. Both operands have as many dims, so NumPy 1 and 2 alike read
        b as a stack of matrices."""
        t = dtype._np
        token = fp_quiet_on(_FP_IGNORE)
        try:
            out = np.linalg.solve(a.astype(t, copy=False), b.astype(t, copy=False))
        except np.linalg.LinAlgError as e:
            raise ValueError(f"solve: x1 is singular (not invertible) ({e})") from None
        finally:
            fp_quiet_off(token)
        return out if out.dtype == t else out.astype(t)

    # ---- the NumPy door and integer array indexing --------------------------------------------
    def numpy_door(self, data, device, dtype, copy):
        """numpy.asarray(x) of a cpu array (x.__array__): NumPy 2's copy semantics."""
        if dtype is not None and np.dtype(dtype) != data.dtype:
            if copy is False:
                raise ValueError(f"__array__: converting {data.dtype} to {np.dtype(dtype)} "
                                 f"needs a copy, but copy=False was passed")
            return data.astype(dtype)
        return data.copy() if copy else data

    def take_arrays(self, data, axis, indices, shape):
        # NumPy's own vectorized indexing (the arrays stand next to each other, so NumPy
        # places their shape where they stood); the shared checked path where NumPy would
        # wrap (uint64 indices of 2**63 and above read as negative) or refuses (to name
        # the index out of range).
        for idx in indices:
            if idx.dtype == np.uint64:
                return super().take_arrays(data, axis, indices, shape)
        try:
            return data[(slice(None),) * axis + tuple(indices)], None
        except IndexError:
            return super().take_arrays(data, axis, indices, shape)


__all__ = ["CpuBackend", "lin_at"]
