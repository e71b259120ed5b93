"""What every backend shares: the primitives NumPy and CuPy spell alike, the index key
vocabulary, and the hot path's memo of validated elementwise plans (see __init__)."""
from __future__ import annotations

from typing import Any, Callable

import contextlib
import math
import os

import numpy as np

from .._devices import CPU, Device
from .._dtypes import clip_scalar

# Validated launch plans of the eager elementwise hot path, filled by the cuda backend once
# the spec layer's full checks have passed for a (function, dtypes) pair:
# (name, numpy dtype(s), or "s" for a scalar operand) -> (Plan, Device, context or None).
# The context is None when only one GPU is visible (nothing to switch).
FAST: dict = {}
# The same for backends whose elementwise function takes operands of any strides (NumPy's
# ufuncs), filled by the cpu backend the same way: key as FAST -> (run, Device), where
# run(d1) / run(d1, d2) / run(d1, scalar value) returns the native result. A hit needs only
# the device identity and, for two arrays, equal shapes.
FAST_ANY_LAYOUT: dict = {}
# Calls whose spec checks have passed and whose whole device work a backend kept (the cuda
# backend, with one GPU visible; the cpu backend its plain NumPy call for broadcasts, concat,
# stack, where, searchsorted, repeat): the spec layer's key of the call -> a kept call,
# kept(datas, device) -> the native result, or None where it does not apply (other strides,
# alignment or device: the caller takes the full path). The key names the dtypes and shapes;
# the kept call checks the rest. Bounded: cleared when KEPT_MAX keys are held (keys hold user
# shapes).
KEPT: dict = {}
KEPT_MAX = 1024
# Reshapes a backend answers with its native data.reshape(target) alone (no device work, no
# context) for one layout: (shape, strides, dtype, the requested shape) -> target. The spec
# layer's hot path serves reshape(x, shape) with copy=None from it once a call of that layout
# passed the full checks, for a requested shape of Python ints only (8.0 and True hash like 8
# and 1, which the checks refuse). Bounded like KEPT.
RESHAPES: dict = {}

# Whether numpy.asarray(x) of a GPU array copies it to the host (True) or refuses with the
# explicit door named (False, the default): a process-wide switch for engines that read every
# task's result through numpy.asarray (xp_cuda.nonstandard.numpy_copies, xp_cuda.compat,
# XP_CUDA_NUMPY_COPIES=1). A one-element list: the cuda backend reads it on each conversion.
ENV_NUMPY_COPIES = "XP_CUDA_NUMPY_COPIES"
NUMPY_COPIES = [os.environ.get(ENV_NUMPY_COPIES, "").strip() == "1"]


def keep_call(key, kept) -> None:
    try:
        hash(key)
    except TypeError:  # an option passed as a list (valid where the spec says sequence)
        return
    if len(KEPT) >= KEPT_MAX:
        KEPT.clear()
    KEPT[key] = kept


def note_reshape(key, target) -> None:
    """Register a checked reshape a backend answers with data.reshape(target) (RESHAPES)."""
    if len(RESHAPES) >= KEPT_MAX:
        RESHAPES.clear()
    RESHAPES[key] = target


def kept_call(key):
    """The call kept under ``key``, or None (also for an unhashable key)."""
    try:
        return KEPT.get(key)
    except TypeError:
        return None


class KeptLaunch:
    """A compiled launch (a reduction, where, astype) for one layout of its inputs: it applies
    to inputs of the kept strides (a tuple per input) on the kept device."""

    __slots__ = ("launch", "strides", "device", "one")

    def __init__(self, launch, strides, device):
        self.launch, self.strides, self.device = launch, strides, device
        # a launch of one output and no parameters serves the call with fewer steps
        self.one = launch.one if getattr(launch, "single", False) else None

    def __call__(self, datas, device):
        if device is not self.device and device != self.device:
            return None
        strides = self.strides
        if len(strides) == 1:  # the reductions: one input
            if datas[0].strides != strides[0]:
                return None
        else:
            for d, st in zip(datas, strides):
                if d.strides != st:
                    return None
        one = self.one
        if one is not None:
            return one(datas)
        return self.launch(datas, ())[0]


class KeptScalarLaunch:
    """A strided launch (elementwise.StridedLaunch) of an array and a scalar operand, an
    operator's: it applies to an array of the kept strides on the kept device, the scalar's
    value a parameter of each call (its dtype is in the key it is kept under)."""

    __slots__ = ("scalar", "strides", "device")

    def __init__(self, launch, strides, device):
        self.scalar, self.strides, self.device = launch.scalar, strides, device

    def __call__(self, data, value, device):
        if device is not self.device and device != self.device or data.strides != self.strides:
            return None
        return self.scalar(data, value)


class KeptMove:
    """A data movement's whole device work for one layout: allocate the C-contiguous result
    and replay one recorded program whose slots are (result, inputs...) addresses. It applies
    to inputs of the kept strides and address residues (mod 16: the program's alignment
    decisions) on the kept device."""

    __slots__ = ("replay", "shape", "dtype", "strides", "residues", "device", "alloc")

    def __init__(self, replay, shape, dtype, strides, residues, device, alloc):
        self.replay, self.shape, self.dtype = replay, shape, dtype
        self.strides, self.residues, self.device, self.alloc = strides, residues, device, alloc

    def __call__(self, datas, device):
        if device is not self.device and device != self.device:
            return None
        ptrs = [0]
        for d, st, r in zip(datas, self.strides, self.residues):
            if d.strides != st:
                return None
            p = d.data.ptr
            if p & 15 != r:
                return None
            ptrs.append(p)
        out = self.alloc(self.shape, self.dtype)
        ptrs[0] = out.data.ptr
        self.replay(tuple(ptrs))
        return out


_NO_SWITCH = contextlib.nullcontext()  # reusable: entering it does nothing

# NumPy's floating-point warnings off for a backend call (overflow, x/0 and NaN are results
# the standard defines, not errors). np.errstate(all="ignore") builds its error object on every
# entry (~1 us, as much as a whole 8-element NumPy call); NumPy 2 keeps that object in a
# context variable, so setting a prebuilt one costs ~0.15 us. Thread- and async-safe like
# np.errstate (a ContextVar); the fallback is np.errstate where NumPy hides those names.
try:
    # (NumPy's private names: the except below takes np.errstate where they are gone)
    from numpy._core._ufunc_config import _extobj_contextvar as _FP_STATE  # type: ignore[attr-defined]
    from numpy._core._ufunc_config import _make_extobj  # type: ignore[attr-defined]
    _FP_IGNORE = _make_extobj(all="ignore")
    fp_quiet_on = _FP_STATE.set
    fp_quiet_off = _FP_STATE.reset
except (ImportError, AttributeError, TypeError):  # pragma: no cover - other NumPy layouts
    _FP_IGNORE = None

    def fp_quiet_on(_):
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def fp_quiet_off(state):
        state.__exit__(None, None, None)


class FpQuiet:
    """``with FpQuiet():`` as np.errstate(all="ignore"), cheaper (see fp_quiet_on); hot
    paths inline ``t = fp_quiet_on(_FP_IGNORE)`` / ``fp_quiet_off(t)`` in try/finally."""

    __slots__ = ("_token",)

    def __enter__(self):
        self._token = fp_quiet_on(_FP_IGNORE)

    def __exit__(self, *exc):
        fp_quiet_off(self._token)


def _reduced_shape(shape, axes, keepdims):
    """The shape a reduction over `axes` leaves (the NaN results of empty ranges need it)."""
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


class EmptyMask:
    """An index key: a boolean mask with a size-0 dimension; it selects no element."""

    __slots__ = ("ndim",)

    def __init__(self, ndim):
        self.ndim = ndim


_NAN_CLASS = {1: 0xFFFFFFFD, 2: 0xFFFFFFFE}  # high words above every number's (see below)


def complex64_order_key(xp, c):
    """uint64 keys of the C-contiguous complex64 array c (NumPy or CuPy), of c's shape, whose
    unsigned order is NumPy's sort order of the values: real part, then imaginary part; then
    the values with a NaN imaginary part only (by real part), then those with a NaN real part
    only (by imaginary part), then those with both NaN. Two keys are equal exactly where the
    values are equivalent in that order (-0.0 is +0.0; NaN parts all alike), so a sort of the
    keys is one of the values (unique_*), with integer kernels only:
    CuPy's own kernels are built with -ftz, and its float32 comparisons took distinct
    subnormal parts for 0 (e.g. a complex64 unique merged 1e-45 and 2e-45); its integer
    arithmetic is exact.

    A part's bits p become an order-preserving word: -0.0 made +0.0, then ~p where the sign is
    set, p | 2**31 where not (+inf: 0xFF800000, the largest a number gets); a number's key is
    real word << 32 | imaginary word. NaN classes take high words above it (_NAN_CLASS)."""
    u = c.view(xp.uint32).reshape(c.shape + (2,))
    words, nans = [], []
    for part in (u[..., 0], u[..., 1]):
        mag = part & xp.uint32(0x7FFFFFFF)
        nans.append(mag > xp.uint32(0x7F800000))
        part = xp.where(mag == 0, xp.uint32(0), part)  # -0.0 -> +0.0
        w = xp.where(part >> xp.uint32(31) != 0, ~part, part | xp.uint32(0x80000000))
        words.append(w.astype(xp.uint64))
    (re, im), (re_nan, im_nan) = words, nans
    hi = xp.uint64(32)
    key = (re << hi) | im
    key = xp.where(im_nan, (xp.uint64(_NAN_CLASS[1]) << hi) | re, key)
    key = xp.where(re_nan, (xp.uint64(_NAN_CLASS[2]) << hi) | im, key)
    return xp.where(re_nan & im_nan, xp.uint64(0xFFFFFFFFFFFFFFFF), key)


class Backend:
    """Primitives shared by NumPy and CuPy (their APIs agree here)."""

    xp = np
    device: Device = CPU
    # When arrays of several backends meet in one call (an argument of a fused function and
    # an array it closes over), the one of higher rank handles it (and reports the problem).
    # (primitives every backend defines, declared for the type checker)
    move_in: Callable[..., Any]
    full: Callable[..., Any]
    rank = 0

    # A context that makes this backend's device current, or None where there is no device
    # to switch to (hot paths then skip the context).
    switch = None

    def ctx(self):
        return _NO_SWITCH

    # ---- data movement --------------------------------------------------------------------
    def to_host(self, data):
        return data

    def move(self, data, dst: "Backend", stream=None):
        """A copy of `data` (a native array of this backend) on dst's device."""
        return dst.move_in(data, self, stream)

    # ---- memory (xp_cuda._memory's out-of-memory path) ------------------------------------
    def release_memory(self) -> None:
        """Give back what this backend caches (pools, plans, library handles) so that a retried
        allocation can succeed."""

    def free_bytes(self):
        """The bytes free on this device now, or None where that is not known cheaply. Here
        (the host): Linux's estimate of memory available without swapping."""
        try:
            with open("/proc/meminfo") as f:
                for line in f:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return None

    # ---- elementwise family ---------------------------------------------------------------
    def where(self, cond, x1, x2, dtype, shape, plan_key=None):
        xp = self.xp
        with self.ctx():
            return xp.where(cond, x1.astype(dtype._np, copy=False), x2.astype(dtype._np, copy=False))

    def astype(self, data, dtype, copy: bool, plan_key=None):
        with self.ctx():
            return data.astype(dtype._np, copy=copy)

    def clip_bound(self, value, dtype, argname):
        """A scalar bound of clip, typed as x's dtype (the scalar rules checked)."""
        return clip_scalar(value, dtype, argname)

    def clip(self, data, lo, hi, dtype, shape):
        """lo, hi: native arrays, checked Python scalars, or None."""
        xp = self.xp
        with self.ctx(), FpQuiet():
            out = xp.array(xp.broadcast_to(data, shape), copy=True)
            # where(...) keeps NaN in x (comparisons with NaN are false) and never promotes.
            # A NaN bound makes the result NaN (the spec's special cases): a scalar bound is
            # checked once on the host, a floating array bound per element. min > max gives
            # max (unspecified by the spec; the fused printer applies the bounds in this order).
            for b, below in ((lo, True), (hi, False)):
                if b is None:
                    continue
                if isinstance(b, np.generic):  # a scalar, already typed as x's dtype
                    if b != b:
                        out.fill(b)
                        continue
                    cond = out < b if below else out > b
                else:
                    cond = out < b if below else out > b
                    if b.dtype.kind == "f":
                        cond |= b != b
                out = xp.where(cond, xp.asarray(b).astype(out.dtype), out)
            return out.astype(dtype._np, copy=False)

    # ---- reductions -----------------------------------------------------------------------
    def reduce(self, kind, data, axes, keepdims, dtype, plan_key=None):
        """sum, prod, max, min, mean, all, any over `axes`; the result in `dtype`. The spec
        layer has handled the cases the standard defines specially (empty max/min, the NaN
        mean of nothing). ``plan_key``: the spec layer's key of this validated call, under
        which a backend may keep the call (KEPT; the cuda backend does)."""
        xp = self.xp
        with self.ctx(), FpQuiet():
            if kind in ("sum", "prod"):
                # Cast first (spec: the dtype argument exists to prevent overflow).
                data = data.astype(dtype._np, copy=False)
                out = getattr(xp, kind)(data, axis=axes, dtype=dtype._np, keepdims=keepdims)
            elif kind == "mean" and not math.prod(data.shape[a] for a in axes):
                out = xp.full(_reduced_shape(data.shape, axes, keepdims), np.nan,
                              dtype=dtype._np)
            elif kind in ("max", "min"):  # amax/amin propagate NaN, as the spec asks
                out = getattr(xp, "amax" if kind == "max" else "amin")(data, axis=axes,
                                                                      keepdims=keepdims)
            else:
                out = getattr(xp, kind)(data, axis=axes, keepdims=keepdims)
            return xp.asarray(out).astype(dtype._np, copy=False)

    def var(self, fname, data, axes, dof, keepdims, dtype, plan_key=None):
        """var (std: fname "std", its square root) over `axes` with `dof` = N - correction
        degrees of freedom; NaN where dof <= 0."""
        xp = self.xp
        with self.ctx(), FpQuiet():
            if not dof > 0:
                out = xp.full(_reduced_shape(data.shape, axes, keepdims), np.nan,
                              dtype=dtype._np)
            else:
                dev = data - xp.mean(data, axis=axes, keepdims=True)
                out = xp.sum(dev * dev, axis=axes, keepdims=keepdims)
                out = out / xp.asarray(dof, dtype=dtype._np)
                if fname == "std":
                    out = xp.sqrt(out)
            return xp.asarray(out).astype(dtype._np, copy=False)

    def cumulative(self, kind, data, axis: int, dtype, include_initial: bool, plan_key=None):
        """Inclusive prefix sums (kind "sum") or products ("prod") along `axis` in `dtype`
        (each element cast first, the spec's rule), led by the identity (0 or 1) when
        include_initial."""
        xp = self.xp
        scan, lead = (xp.cumsum, xp.zeros) if kind == "sum" else (xp.cumprod, xp.ones)
        with self.ctx(), FpQuiet():
            out = scan(data.astype(dtype._np, copy=False), axis=axis, dtype=dtype._np)
            if include_initial:
                lshape = tuple(1 if i == axis else s for i, s in enumerate(data.shape))
                out = xp.concatenate([lead(lshape, dtype=dtype._np), out], axis=axis)
            return out.astype(dtype._np, copy=False)

    def argreduce(self, kind, data, axis, keepdims, plan_key=None):
        """argmax/argmin (kind) over one axis or all (None), as int64; the range is not empty."""
        xp = self.xp
        with self.ctx():
            out = getattr(xp, kind)(data, axis=axis, keepdims=keepdims)
            return xp.asarray(out).astype(np.int64, copy=False)

    def vector_norm(self, data, axes, keepdims, ord, dtype, plan_key=None):
        """The vector norm of `ord` over `axes` (a tuple), in the real floating `dtype`."""
        xp = self.xp
        shape = data.shape
        count = math.prod(shape[a] for a in axes)
        rest = tuple(i for i in range(data.ndim) if i not in axes)
        with self.ctx(), FpQuiet():
            # Reduced axes moved to the end and flattened: one reduction over one axis.
            a = xp.abs(xp.transpose(data, rest + axes)).astype(dtype._np, copy=False)
            a = a.reshape(tuple(shape[i] for i in rest) + (count,))
            if count == 0:  # the norm of an empty vector: 0 (and +inf for ord < 0, its limit)
                out = xp.full(a.shape[:-1], np.inf if ord < 0 else 0.0, dtype=dtype._np)
            elif ord == math.inf:
                out = xp.max(a, axis=-1)
            elif ord == -math.inf:
                out = xp.min(a, axis=-1)
            elif ord == 0:
                out = xp.sum(a != 0, axis=-1).astype(dtype._np)
            elif ord == 1:
                out = xp.sum(a, axis=-1)
            elif ord == 2:
                out = xp.sqrt(xp.sum(a * a, axis=-1))
            else:
                p = xp.asarray(ord, dtype=dtype._np)
                out = xp.power(xp.sum(xp.power(a, p), axis=-1), 1 / p)
            out = xp.asarray(out).astype(dtype._np, copy=False)
            return out.reshape(_reduced_shape(shape, axes, True)) if keepdims else out

    # ---- manipulation: the functions that move data ---------------------------------------
    def concat(self, parts, axis, dtype, plan_key=None):
        """parts joined along `axis` (None: each flattened first), converted to `dtype`."""
        xp = self.xp
        with self.ctx():
            if axis is None:
                parts, axis = [p.reshape(-1) for p in parts], 0
            return xp.concatenate([p.astype(dtype._np, copy=False) for p in parts], axis=axis)

    def stack(self, parts, axis, dtype, plan_key=None):
        with self.ctx():
            return self.xp.stack([p.astype(dtype._np, copy=False) for p in parts], axis=axis)

    def diagonal(self, data, offset, copy):
        """The diagonals of the matrices in data (offset checked by the caller): a new
        C-contiguous array, or with copy=False possibly a read-only view."""
        m, n = data.shape[-2:]
        with self.ctx():
            if offset >= n or -offset >= m:  # entirely outside the matrix: empty diagonals
                return self.xp.zeros(data.shape[:-2] + (0,), dtype=data.dtype)
            view = self.xp.diagonal(data, offset=offset, axis1=-2, axis2=-1)
        return self.copy(view) if copy else view

    def trace(self, data, offset, dtype, plan_key=None):
        """The sums of the ``offset`` diagonals of the matrices in data, in ``dtype``: each
        diagonal reduced where it lies (no copy)."""
        diag = self.diagonal(data, offset, False)
        return self.reduce("sum", diag, (diag.ndim - 1,), False, dtype)

    def matmul(self, d1, d2, dtype, plan_key=None):
        """d1 @ d2 in `dtype` (shapes checked by the caller). ``plan_key``: the spec layer's
        key of the checked call, under which a backend may keep it (KEPT)."""
        with self.ctx():
            return self.xp.matmul(d1.astype(dtype._np, copy=False),
                                  d2.astype(dtype._np, copy=False))

    def reshape(self, data, shape, plan_key=None, view_key=None):
        """data in `shape`: a view where the strides allow one, else a C-contiguous copy.
        ``view_key``: the RESHAPES key of a checked call with copy=None (NumPy's reshape
        answers any layout: registered)."""
        if view_key is not None:
            note_reshape(view_key, shape)
        return data.reshape(shape)

    def flip(self, data, index):
        """data[index] for flip's index (a tuple of one slice per axis: step -1 on the flipped
        axes, the whole axis elsewhere): a view."""
        return data[index]

    def copy(self, data):
        """A C-contiguous copy (reshape(copy=True), materialised views)."""
        with self.ctx():
            return self.xp.array(data, copy=True, order="C")

    def roll(self, data, shifts, axes, plan_key=None):
        """axes None: the flattened array shifted by shifts[0], shape kept."""
        with self.ctx():
            if axes is None:
                return self.xp.roll(data, shifts[0])
            return self.xp.roll(data, shifts, axis=axes)

    def tile(self, data, reps, plan_key=None):
        with self.ctx():
            return self.xp.tile(data, reps)

    def repeat(self, data, repeats, axis, plan_key=None):
        """repeats: a non-negative int, or a native int64 array of data.shape[axis]
        non-negative counts (checked by the caller)."""
        xp = self.xp
        with self.ctx():
            if isinstance(repeats, int):
                return xp.repeat(data, repeats, axis=axis)
            # Source index of each output position: the count of cumulative ends at or below it.
            ends = xp.cumsum(repeats)
            total = int(ends[-1]) if ends.shape[0] else 0
            src = xp.searchsorted(ends, xp.arange(total, dtype=ends.dtype), side="right")
            return xp.take(data, src, axis=axis)

    def bounds(self, data):
        """(min, max) of a non-empty integer array, as Python ints (one synchronisation)."""
        with self.ctx():
            return int(data.min()), int(data.max())

    def take(self, data, idx, axis, plan_key=None):
        """(data taken at idx along axis, None), or (None, an index outside [-n, n)) for the
        n of that axis: idx is a native 1-D integer array whose values are data, checked here
        (the spec leaves out-of-range indices unspecified; both devices refuse them alike).
        Negative indices count from the end."""
        n = data.shape[axis]
        if idx.shape[0]:
            lo, hi = self.bounds(idx)
            if lo < -n or hi >= n:
                return None, (lo if lo < -n else hi)
        with self.ctx():
            if idx.dtype.kind == "u":  # NumPy refuses to index with uint64; bounds make it exact
                idx = idx.astype("int64")
            return self.xp.take(data, idx, axis=axis), None

    # ---- searching and sets -------------------------------------------------------------------
    def nonzero(self, data):
        with self.ctx():
            return tuple(i.astype(np.int64, copy=False) for i in self.xp.nonzero(data))

    def searchsorted(self, a, v, side, dtype, plan_key=None):
        """Insertion indices (int64) of v into the sorted 1-D a, both compared in `dtype`."""
        xp = self.xp
        with self.ctx():
            out = xp.searchsorted(a.astype(dtype._np, copy=False),
                                  v.astype(dtype._np, copy=False), side=side)
            return xp.asarray(out).astype(np.int64, copy=False)

    @staticmethod
    def _group_starts(xp, s):
        """Mask of the first element of each run of equal values in sorted s. NaN != NaN, so
        each NaN starts its own run; -0.0 == +0.0, so they share one."""
        mask = xp.empty(s.shape, dtype=bool)
        if s.shape[0]:
            mask[0] = True
            mask[1:] = s[1:] != s[:-1]
        return mask

    def unique(self, data, want_index, want_inverse, want_counts):
        """The set functions' parts, from one stable sort: a dict of native arrays
        ("values", and "indices", "inverse_indices" (data's shape), "counts" as asked)."""
        xp = self.xp
        with self.ctx():
            flat = data.reshape(-1)
            n = flat.shape[0]
            # Sort bools as uint8: one comparison path on both backends.
            key = flat.astype("uint8") if flat.dtype == bool else flat
            if not (want_index or want_inverse or want_counts):
                s = self.stable_sort(key, 0).astype(flat.dtype, copy=False)
                return {"values": s[self._group_starts(xp, s)]}
            perm = self.stable_argsort(key, 0)
            s = xp.take(flat, perm)
            mask = self._group_starts(xp, s)
            starts = xp.nonzero(mask)[0]
            out = {"values": s[mask]}
            if want_index:
                # The sort is stable, so a run's first element is its first occurrence.
                out["indices"] = xp.take(perm, starts).astype(np.int64)
            if want_inverse:
                inv = xp.empty(n, dtype=np.int64)
                inv[perm] = xp.cumsum(mask, dtype=np.int64) - 1
                out["inverse_indices"] = inv.reshape(data.shape)
            if want_counts:
                ends = xp.concatenate([starts[1:], xp.asarray([n], dtype=starts.dtype)])
                out["counts"] = (ends - starts).astype(np.int64)
            return out

    # ---- indexing -------------------------------------------------------------------------
    def getitem(self, data, key, user_key):
        """key: validated by the spec layer (an EmptyMask, a native bool array, or a tuple of
        ints, slices, None and Ellipsis); user_key: the key as the user wrote it."""
        with self.ctx():
            if isinstance(key, EmptyMask):
                return self.xp.empty((0,) + data.shape[key.ndim:], data.dtype)
            return data[key]

    def writable(self, data) -> bool:
        """Whether data's elements may be written: a view whose elements share memory (a
        stride of 0 over an extent above 1, as broadcast_to makes) may not; an empty array
        has no element to share (CuPy gives empty arrays zero strides)."""
        return all(s or n <= 1 for s, n in zip(data.strides, data.shape)) or 0 in data.shape

    def check_writable(self, data, what):
        if not self.writable(data):
            raise ValueError(
                f"{what}: this array is read-only: a broadcast view (broadcast_to and "
                f"broadcast_arrays return views whose elements share memory) or memory "
                f"imported read-only; copy it first with xp.asarray(x, copy=True)")

    def setitem(self, data, key, value, value_shape):
        """value: a native array or a checked NumPy scalar of data's dtype."""
        if isinstance(key, EmptyMask):
            return
        self.check_writable(data, "__setitem__")
        self._setitem(data, key, value, value_shape)

    def _setitem(self, data, key, value, value_shape):
        with self.ctx():
            try:
                data[key] = value
            except ValueError:
                raise ValueError(
                    f"__setitem__: a value of shape {value_shape} cannot be broadcast to the "
                    f"selected elements of an array of shape {tuple(data.shape)}") from None

    def assign(self, data, value):
        """data[...] = value for the in-place operators (same shape and dtype)."""
        self.check_writable(data, "an in-place operator")
        with self.ctx():
            data[...] = value

    # ---- sorting --------------------------------------------------------------------------
    def stable_argsort(self, data, axis: int):
        return self.xp.argsort(data, axis=axis, kind="stable")

    def stable_sort(self, data, axis: int):
        return self.xp.sort(data, axis=axis, kind="stable")

    # ---- fused programs (xp_cuda.fusion) -----------------------------------------------------
    def fused_launch(self, trace, outs, natives):
        """A compiled kernel computing the IR nodes `outs` of `trace` from arrays laid out like
        `natives`, or None where this backend evaluates the graph through the eager functions."""
        return None

    # ---- linear algebra -------------------------------------------------------------------
    def linalg_errors(self) -> tuple:
        """The exceptions a failing factorisation raises here."""
        return (np.linalg.LinAlgError,)

    def linalg_checked(self):
        """A context in which a failing factorisation raises (as LAPACK does on cpu)."""
        return contextlib.nullcontext()

    def svd(self, data, full_matrices: bool, compute_uv: bool):
        """The array module's SVD of the (..., M, N) stack ``data`` (non-empty): (U, S, Vh),
        or S alone without ``compute_uv``. A failure raises one of linalg_errors(); the caller
        (linalg._run) makes it current and checked, and names the function."""
        if compute_uv:
            return self.xp.linalg.svd(data, full_matrices=full_matrices)
        return self.xp.linalg.svd(data, compute_uv=False)

    def solve(self, a, b, dtype):
        """X with a @ X == b for every matrix of the stack, in ``dtype`` (the result DType).

        a: (..., M, M), b: (..., M, K) native arrays of floating dtypes with the SAME batch
        shape (the spec layer broadcasts them: views of any strides, 0 where broadcast; it
        answers empty results itself, and turns a 1-D x2 into K = 1). Returns a new
        (..., M, K) array of ``dtype``. An exactly singular matrix anywhere in the stack raises
        ValueError("solve: x1 is singular (not invertible) (...)"). Here: the array module's
        own solve under its error checks (the cuda backend's fallback).
        """
        errors = self.linalg_errors()
        t = dtype._np
        with self.ctx(), self.linalg_checked():
            try:
                out = self.xp.linalg.solve(a.astype(t, copy=False), b.astype(t, copy=False))
            except errors as e:
                raise ValueError(f"solve: x1 is singular (not invertible) ({e})") from None
        return out.astype(t, copy=False)

    def slogdet(self, data, dtype, real):
        """(sign, logabsdet) of every matrix of data (..., n, n): sign of ``dtype`` (the result
        DType: x's), logabsdet of ``real`` (its real DType), each of the stack's shape. The
        spec layer answers empty stacks and n == 0 itself. An exactly singular matrix (a zero
        pivot) gives (0, -inf), as LAPACK's info > 0 does in NumPy. Here: the array module's
        own slogdet (on cpu, NumPy: LAPACK's getrf, then its formula over U's diagonal; the
        cuda backend computes the same formula from our LU with our kernels)."""
        xp = self.xp
        with self.ctx():
            s, lg = xp.linalg.slogdet(data)
            return (xp.asarray(s).astype(dtype._np, copy=False),
                    xp.asarray(lg).astype(real._np, copy=False))

    def det(self, data, dtype):
        """The determinant of every matrix of data (..., n, n), in ``dtype``; as slogdet (same
        preconditions), sign * exp(logabsdet), as NumPy computes it (0 where singular)."""
        xp = self.xp
        with self.ctx():
            return xp.asarray(xp.linalg.det(data)).astype(dtype._np, copy=False)

    # ---- integer array indexing (2024.12) ----------------------------------------------------
    def take_arrays(self, data, axis: int, indices, shape):
        """data indexed along its axes axis, ..., axis + k - 1 by the k native integer arrays
        ``indices`` (any integer dtypes, values not yet checked), which broadcast together
        to ``shape``: the standard's integer array indexing. Returns (out, None), out of
        shape data.shape[:axis] + shape + data.shape[axis + k:], or (None, (j, i)) for an
        index i of indices[j] outside [-n, n) of its axis (refused on every device alike, as
        take refuses). Negative indices count from the end. One array is a take along its
        axis; several are checked one by one (a wrapped linear offset cannot tell which axis
        an index overran), then merged into linear offsets over those axes, viewed as one."""
        k = len(indices)
        rest = data.shape[axis + k:]
        dims = data.shape[axis:axis + k]
        result_shape = data.shape[:axis] + tuple(shape) + rest
        if k == 1:
            out, bad = self.take(data, self.reshape(indices[0], (-1,)), axis)
            return (None, (0, bad)) if bad is not None else (out.reshape(result_shape), None)
        if not math.prod(shape):  # nothing selected: no index is read
            with self.ctx():
                return self.xp.empty(result_shape, data.dtype), None
        wrap = []
        for j, (idx, n) in enumerate(zip(indices, dims)):
            lo, hi = self.bounds(idx)
            if lo < -n or hi >= n:
                return None, (j, lo if lo < -n else hi)
            wrap.append(lo < 0)
        lin = self.linear_index(indices, dims, shape, wrap)
        merged = self.reshape(data, data.shape[:axis] + (math.prod(dims),) + rest)
        out, bad = self.take(merged, lin, axis)
        assert bad is None, bad  # every index was checked above
        return out.reshape(result_shape), None

    def linear_index(self, indices, dims, shape, wrap):
        """The C-order offsets over axes of sizes ``dims`` of the coordinates ``indices``
        (native integer arrays, each in [-n, n) of its axis; those with ``wrap`` true hold
        negative values, counted from the end), broadcast to ``shape``: a C-contiguous 1-D
        int64 array of prod(shape) offsets."""
        xp = self.xp
        with self.ctx():
            lin = xp.zeros(shape, dtype=np.int64)
            mult = 1
            for idx, n, w in zip(reversed(indices), reversed(dims), reversed(wrap)):
                v = idx.astype(np.int64)
                if w:
                    v = xp.remainder(v, n)  # floor modulo: [-n, n) onto [0, n)
                lin += v * mult
                mult *= n
            return lin.reshape(-1)

    # ---- 2024.12 ----------------------------------------------------------------------------
    def count_nonzero(self, data, axes, keepdims, plan_key=None):
        """The number of nonzero elements over `axes` (a tuple; () for none) as int64: complex
        counts where either part is nonzero, NaN counts, -0.0 does not."""
        xp = self.xp
        with self.ctx():
            out = xp.count_nonzero(data, axis=axes, keepdims=keepdims)
            return xp.asarray(out).astype(np.int64, copy=False)

    # ---- later revisions (2024.12, 2025.12) -----------------------------------------------
    def take_along_axis(self, data, idx, axis, shape):
        """(data taken along ``axis`` at ``idx``, None), or (None, an index outside [-n, n))
        for the n of that axis, as ``take``. data and idx have one ndim and broadcast against
        each other in every dim but ``axis``; ``shape`` is the result's (idx's length along
        axis). Every index of idx is checked, whether or not the result is empty. Negative
        indices count from the end."""
        n = data.shape[axis]
        if idx.size:
            lo, hi = self.bounds(idx)
            if lo < -n or hi >= n:
                return None, (lo if lo < -n else hi)
        xp = self.xp
        with self.ctx():
            if math.prod(shape) == 0:
                return xp.empty(shape, dtype=data.dtype), None
            if idx.dtype.kind == "u":  # NumPy refuses to index with uint64; bounds make it exact
                idx = idx.astype("int64")
            # fancy indexing under the hood: x and idx broadcast against each other
            return xp.take_along_axis(data, idx, axis=axis), None

    def isin(self, x1, x2, dtype, invert: bool):
        """A bool array of x1's shape: whether each element of x1 equals some element of x2
        (negated when ``invert``), both compared in ``dtype`` (their promoted dtype, real).
        Equality as ``equal``: NaN equals nothing, -0.0 equals +0.0."""
        xp = self.xp
        t = dtype._np
        with self.ctx(), FpQuiet():
            out = xp.isin(x1.astype(t, copy=False), x2.astype(t, copy=False).reshape(-1),
                          invert=invert)
            return xp.asarray(out)

    def from_host(self, array):
        """A NumPy array's data on this backend's device (here: the array itself)."""
        return array

    def eig(self, data, vectors: bool, dtype):
        """(eigenvalues, eigenvectors or None) of the stack of square matrices ``data`` (none
        empty), both in the complex ``dtype``: LAPACK's geev through numpy.linalg on the host,
        on every backend. Why the host on cuda too: cuSOLVER's only general eigensolver is
        cusolverDnXgeev (CUDA 12.6 and later), which CuPy 14 calls one matrix at a time from a
        Python loop and refuses on older runtimes; the host path is the one that serves every
        runtime, and a stack is one LAPACK loop in C. A failure raises numpy's LinAlgError."""
        host = np.ascontiguousarray(self.to_host(data))
        t = dtype._np
        with FpQuiet():
            if vectors:
                w, v = np.linalg.eig(host)
                return (self.from_host(w.astype(t, copy=False)),
                        self.from_host(v.astype(t, copy=False)))
            w = np.linalg.eigvals(host)
            return self.from_host(w.astype(t, copy=False)), None
