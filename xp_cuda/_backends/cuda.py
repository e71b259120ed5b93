"""The cuda backend: CuPy memory and library calls, plus our generated kernels.

Each primitive that differs from NumPy's spelling lives here under the name the cpu backend
gives its reference. CuPy is imported when a cuda device is first used.
"""
from __future__ import annotations

import contextlib
import math
import sys

import numpy as np

from .._devices import Device, cuda_device_count, cupy_module
from .._dtypes import PROMOTION_TABLE, TypedScalar, from_numpy_dtype
from .._dtypes import int64 as _INT64
from .._dtypes import bool as _BOOL
from .._dtypes import int32 as _INT32
from .._dtypes import real_dtype
from .._kernels import copy as _copy
from .._kernels._runtime import (dtype_name, empty_allocator, library_handle, noting_programs,
                                 reset_library_handles)
from .._kernels._runtime import replayer as _replayer
from .._kernels import creation as _creation
from .._kernels import eager as _eager
from .._kernels.elementwise import Plan as _Plan
from .._kernels.fusion import fused_launch as _fused_launch
from .._kernels import reduction as _reduction
from .._kernels import scan as _scan
from .._kernels import sort as _sort
from .._kernels.reduction import lookup as _lookup
from .._kernels.reduction import reduce_eager as _reduce_eager
from .._kernels.vecdot import vecdot_cuda as _vecdot
from ._base import (_NO_SWITCH, FAST, NUMPY_COPIES, Backend, KeptLaunch, KeptMove,
                    KeptScalarLaunch, complex64_order_key, keep_call, kept_call, note_reshape)


_RESHAPE_VIEWS: dict = {}  # (shape, strides, itemsize, new shape) -> view strides, or False
_RESHAPE_VIEWS_MAX = 4096  # layouts remembered (cleared when full: the cache stays bounded)
_EAGER_STRIDED_MAX = 1 << 16  # elements: below, a launch costs more than the kernel runs


def _value_bytes(value, dtype) -> bytes:
    return np.asarray(value, dtype=dtype._np).tobytes()


_GEMM = {"float32": "sgemm", "float64": "dgemm", "complex64": "cgemm", "complex128": "zgemm"}
_SCALARS = {name: (np.ones(1, name), np.zeros(1, name)) for name in _GEMM}  # alpha, beta


def _gemm_operand(d, rows, cols):
    """(cuBLAS op, leading dimension) of a row-major (.., rows, cols) operand whose matrices
    are packed one after another, or (None, None) where its strides are neither layout."""
    s = d.itemsize
    batch_ok = all(st == rows * cols * s * math.prod(d.shape[i + 1:-2])
                   for i, st in enumerate(d.strides[:-2]) if d.shape[i] > 1)
    if not batch_ok:
        return None, None
    r, c = d.strides[-2:]
    if (c == s or cols == 1) and (r == cols * s or rows == 1):
        return 0, cols  # CUBLAS_OP_N
    if (r == s or rows == 1) and (c == rows * s or cols == 1):
        return 1, rows  # CUBLAS_OP_T
    return None, None


# (result dtype, operands' dtypes, shapes and strides) -> _gemm_plan's answer
_GEMM_PLANS: dict = {}


# Matrices times a vector whose rows are at most this long (float32 / float64) go to our vecdot
# kernel: cuBLAS's gemv read such rows at 0.35-0.45 of the copy rate on the H200 (1M x 64
# float32: 147 us against vecdot's 82; x 4: 482 against 184), and was level or ahead from 128
# float32 / 16 float64 elements a row on. Matrices of at most _VECDOT_SMALL bytes go to vecdot
# at any row length: there both wait for the host, and vecdot's recorded launch took 12.5-14.4
# us a call against gemv's 18-24 (4 MB, rows of 4 to 512, float32 and float64). A float32
# matrix times a float64 vector goes to vecdot at any size: vecdot reads the matrix as float32
# where cuBLAS needs it cast to float64 first (a pass writing twice its bytes): 2.1-4.4x faster
# at rows of 4 to 1024 (H200, 256 MB and 4 MB).
_VECDOT_ROWS = {"float32": 64, "float64": 8}
_VECDOT_SMALL = 1 << 22


def vecdot_route(name, d1, d2) -> bool:
    """Whether d1 @ d2 (result dtype `name`) is a C-contiguous stack of matrices times a
    contiguous vector (float32 or float64) with rows of at most _VECDOT_ROWS[name] elements,
    at most _VECDOT_SMALL bytes in all, or a matrix of another dtype than the result's
    (vecdot's case)."""
    rows = _VECDOT_ROWS.get(name)
    return (rows is not None and d2.ndim == 1 and d1.ndim >= 2
            and (d1.shape[-1] <= rows or d1.nbytes <= _VECDOT_SMALL or d1.dtype.name != name)
            and d1.flags.c_contiguous and d2.strides[0] == d2.itemsize)


def _gemm_plan(name, d1, d2):
    """The fixed arguments of one cuBLAS call computing d1 @ d2 (both of dtype `name`),
    "vecdot" (vecdot_route's case: our vecdot over the last axis, each operand read in its own
    dtype), "cast" (operands of another dtype: planned again once cast), or False (CuPy's
    matmul)."""
    if vecdot_route(name, d1, d2):
        return "vecdot"
    if d1.dtype.name != name or d2.dtype.name != name:
        return "cast"
    from cupy_backends.cuda.libs import cublas
    gemm = _GEMM.get(name)
    if gemm is None or d1.ndim < 2 or d1.ndim != d2.ndim or d1.shape[:-2] != d2.shape[:-2]:
        return False
    (m, k), n = d1.shape[-2:], d2.shape[-1]
    batch = math.prod(d1.shape[:-2])
    if not (m and n and k and batch):
        return False
    # row-major C = A B is column-major C^T = B^T A^T: a C-contiguous operand is its
    # transpose as cuBLAS sees it ("N"), an F-contiguous one needs "T"
    ob, ldb = _gemm_operand(d2, k, n)
    oa, lda = _gemm_operand(d1, m, k)
    if ob is None or oa is None:
        return False
    one, zero = _SCALARS[name]
    fn = getattr(cublas, gemm if d1.ndim == 2 else gemm + "StridedBatched")
    return (fn, d1.shape[:-2] + (m, n), ob, oa, n, m, k, ldb, lda, one.ctypes.data,
            zero.ctypes.data, None if d1.ndim == 2 else batch, cublas)


class _KeptGemm:
    """matmul's one cuBLAS call for one layout (_gemm_plan's arguments): allocate the result,
    bind this thread's handle to the current stream, call. As a kept call (KEPT) it applies
    to operands of the kept strides on the kept device: the spec layer's key names their
    dtypes and shapes, the plan depends on nothing else (addresses need no alignment)."""

    __slots__ = ("plan", "dtype", "s1", "s2", "device", "alloc", "stream")

    def __init__(self, plan, dtype, s1, s2, device, alloc, stream):
        self.plan, self.dtype, self.s1, self.s2 = plan, dtype, s1, s2
        self.device, self.alloc, self.stream = device, alloc, stream

    def __call__(self, datas, device):
        if device is not self.device and device != self.device:
            return None
        d1, d2 = datas
        if d1.strides != self.s1 or d2.strides != self.s2:
            return None
        return _gemm_call(self.plan, self.dtype, self.alloc, self.stream, device.index, d1, d2)


def _gemm_call(plan, dtype, alloc, stream, index, d1, d2):
    """d1 @ d2 by the one cuBLAS call of ``plan`` (_gemm_plan's arguments) on device
    ``index`` (current), into a new array of ``dtype``, on the current stream."""
    fn, shape, ob, oa, n, m, k, ldb, lda, one, zero, batch, _ = plan
    out = alloc(shape, dtype)
    handle = library_handle("cublas", index, stream().ptr)
    if batch is None:
        fn(handle, ob, oa, n, m, k, one, d2.data.ptr, ldb, d1.data.ptr, lda, zero,
           out.data.ptr, n)
    else:
        fn(handle, ob, oa, n, m, k, one, d2.data.ptr, ldb, k * n, d1.data.ptr, lda, m * k,
           zero, out.data.ptr, n, m * n, batch)
    return out


class _KeptGather:
    """take's whole device work for one layout (a gather that checks its indices as it reads
    them, then one wait for the verdict): allocate the result, replay the recorded gather with
    (result, x, indices, this thread's error words) and read the words. It applies to an x of
    the kept strides and indices of the kept dtype (int64, C-contiguous: 1-D of the kept
    length), all at the kept address residues, on the kept device. Returns (out, None) or
    (None, an index out of bounds), as CudaBackend.take."""

    __slots__ = ("replay", "shape", "dtype", "strides", "residues", "device", "alloc", "cp")

    def __init__(self, cp, replay, shape, dtype, strides, residues, device, alloc):
        self.cp, self.replay, self.shape, self.dtype = cp, replay, shape, dtype
        self.strides, self.residues, self.device, self.alloc = strides, residues, device, alloc

    def __call__(self, datas, device):
        if device is not self.device and device != self.device:
            return None
        d, idx = datas
        if d.strides != self.strides or idx.dtype != _I8 or not idx._c_contiguous:
            return None
        words, err, _ = _copy._err_word(self.cp)
        xp_, ip = d.data.ptr, idx.data.ptr
        if (xp_ & 15, ip & 15, err & 15) != self.residues:
            return None
        out = self.alloc(self.shape, self.dtype)
        words[0] = 0
        self.replay((out.data.ptr, xp_, ip, err))
        self.cp.cuda.get_current_stream().synchronize()
        return (None, int(words[1])) if words[0] else (out, None)


_I8 = np.dtype(np.int64)


class _Unit:
    """An array seen with a size-1 axis inserted at `axis`, as copy.concat reads a part (shape,
    strides, data): stack's parts without a CuPy view each (~3 us of host time apiece)."""
    __slots__ = ("shape", "strides", "data")

    def __init__(self, a, axis):
        self.shape = a.shape[:axis] + (1,) + a.shape[axis:]
        self.strides = a.strides[:axis] + (a.itemsize,) + a.strides[axis:]
        self.data = a.data


class CudaBackend(Backend):
    def __init__(self, device: Device):
        self.device = device
        self.xp = cp = cupy_module()
        self._dev = cp.cuda.Device(device.index)
        self.switch = None if cuda_device_count() == 1 else self._dev
        self._alloc = empty_allocator(cp)  # cp.empty's Python layers cost ~4 us a call
        self._stream = cp.cuda.get_current_stream
        self._plans: dict = {}  # (name, dtype names) -> elementwise Plan on this device

    def ctx(self):
        # one visible GPU: it is always current, and entering CuPy's Device costs ~1 us
        return self._dev if self.switch is not None else _NO_SWITCH

    def to_host(self, data):
        return data.get()

    def release_memory(self) -> None:
        """CuPy's cached blocks (device and pinned pools) back to the driver, cuFFT's plans
        (each holds a work area in the pool) dropped, and the library handles we own made
        anew on next use (a cuBLAS handle whose lazy workspace allocation failed keeps
        failing: see _runtime.reset_library_handles)."""
        cp = self.xp
        with self._dev:
            reset_library_handles(self.device.index)
            if "cupy.fft" in sys.modules:  # (never loaded: no plans to drop)
                try:
                    cp.fft.config.get_plan_cache().clear()
                except Exception:  # (a cuFFT that does not load holds no plans)
                    pass
            cp.get_default_memory_pool().free_all_blocks()
            cp.get_default_pinned_memory_pool().free_all_blocks()

    def free_bytes(self):
        """The driver's free bytes plus the blocks CuPy's pool holds unused."""
        cp = self.xp
        with self._dev:
            return int(cp.cuda.runtime.memGetInfo()[0]
                       + cp.get_default_memory_pool().free_bytes())

    def move_in(self, data, src_backend, stream=None):
        cp = self.xp
        with self._dev:
            s = contextlib.nullcontext() if stream is None else (
                cp.cuda.ExternalStream(stream) if isinstance(stream, int) else stream)
            with s:
                if isinstance(data, np.ndarray):
                    # A plain memcpy: cupy.array(0-d host array) goes through fill(), whose
                    # memset shortcut turns -0.0 into +0.0.
                    out = cp.empty(data.shape, dtype=data.dtype)
                    out.set(data if data.flags.c_contiguous else data.copy(order="C"))
                    return out
                return cp.array(data, copy=True)

    # ---- elementwise: one generated kernel per (function, dtypes) -------------------------
    def _plan(self, name, dtypes, in_dtype, out_dtype):
        key = (name, dtypes)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _Plan(self.xp, name, dtypes, in_dtype.name,
                                                 out_dtype.name)
        return plan

    def elementwise(self, name, fn, operands, in_dtype, out_dtype, shape, plan_key=None):
        """Operands read in their own dtypes (scalars as parameters), converted in registers,
        the output written once. Registers the validated plan for the spec layer's hot path
        (FAST for contiguous operands; KEPT under ``plan_key`` for strided or broadcast ones)."""
        n = 1
        for s in shape:
            n *= s
        if n <= _EAGER_STRIDED_MAX and type(operands[0]) is not TypedScalar and (
                len(operands) == 1 or type(operands[-1]) is not TypedScalar):
            # a broadcast or strided call seen before: its launch found by layout alone
            launch = _lookup(_eager.launch_key(
                _eager.ew_key(name, in_dtype.name, out_dtype.name, shape), operands,
                self.device.index))
            if launch is not None:
                with self.ctx():
                    return self._launch_kept(launch, operands, plan_key)
        dtypes = tuple(o.dtype.name if type(o) is TypedScalar else dtype_name(o.dtype)
                       for o in operands)
        with self.ctx():
            plan = self._plan(name, dtypes, in_dtype, out_dtype)
            # (a scalar and an array: "s" first, for the reflected operators, or last)
            if type(operands[0]) is not TypedScalar or type(operands[-1]) is not TypedScalar:
                key = (name,) + tuple(o.dtype if type(o) is not TypedScalar else "s"
                                      for o in operands)
                FAST[key] = (plan, self.device, self.switch)
            args, modes = [], []
            for o in operands:
                if type(o) is TypedScalar:
                    args.append(o.value)
                    modes.append("s")
                    continue
                args.append(o)
                if o._c_contiguous and o.shape == shape:
                    modes.append("c")
                elif o.size == 1:
                    modes.append("z")  # read once, whatever its shape
                else:
                    modes.append("g")
            layout = "".join(modes)
            if "g" in modes and "s" not in modes and n <= _EAGER_STRIDED_MAX:
                # small strided or broadcast arrays: the fused generator's one-node program
                # (its launch packs parameters once per layout; a RawKernel call with the
                # geometry's ~30 arguments cost ~50 us of host time). Large ones keep the
                # Plan's strided kernel: on the H200 it ran (4096, 1) + (1, 16384) in 0.18 ms
                # where the one-node program took 0.32 ms.
                launch = _eager.elementwise_launch(self.xp, name, in_dtype.name,
                                                   out_dtype.name, operands, shape,
                                                   self.device.index)
                if launch is None:  # an empty result
                    return self.xp.empty(shape, dtype=out_dtype._np)
                return self._launch_kept(launch, operands, plan_key)
            if "g" in modes or layout in ("z", "sz", "zs", "zz"):
                layout = "".join("s" if m == "s" else "g" for m in modes)
                if plan_key is not None and self.switch is None:
                    # kept for the spec layer's hot path, as the eager programs above
                    launch = plan.kept(layout, tuple(args), shape, n)
                    if launch is not None:
                        if "s" not in layout:
                            return self._launch_kept(launch, args, plan_key)
                        data = args[0] if layout[0] == "g" else args[1]
                        keep_call(plan_key, KeptScalarLaunch(launch, data.strides,
                                                             self.device))
                return plan.strided(layout, tuple(args), shape, n)
            return plan.contiguous(layout, tuple(args), shape, n)

    # ---- one-node programs of the fused generator ------------------------------------------
    def where(self, cond, x1, x2, dtype, shape, plan_key=None):
        with self.ctx():
            launch = _eager.where_launch(self.xp, cond, x1, x2, dtype.name, shape,
                                         self.device.index)
            if launch is None:
                return self.xp.empty(shape, dtype=dtype._np)
            return self._launch_kept(launch, (cond, x1, x2), plan_key)

    def clip(self, data, lo, hi, dtype, shape):
        """One kernel printed as the fused clip (CuPy's comparisons and casts would flush
        float32 subnormals): a scalar bound (a NumPy scalar of x's dtype) is a kernel
        parameter; an array bound compares in its promotion with x's dtype, as the tracer's."""
        arrays, sides, compare, scalars = [data], [], [], []
        for b in (lo, hi):
            if b is None:
                sides.append(None)
                compare.append(None)
            elif isinstance(b, np.generic):
                sides.append("scalar")
                compare.append(dtype.name)
                scalars.append(b)
            else:
                arrays.append(b)
                sides.append("array")
                compare.append(PROMOTION_TABLE.get((dtype, from_numpy_dtype(b.dtype)),
                                                   dtype).name)
        with self.ctx():
            launch = _eager.clip_launch(self.xp, arrays, tuple(sides), tuple(compare),
                                        dtype.name, shape, self.device.index)
            if launch is None:
                return self.xp.empty(shape, dtype=dtype._np)
            return launch(arrays, tuple(scalars))[0]

    def astype(self, data, dtype, copy: bool, plan_key=None):
        if not copy and dtype_name(data.dtype) == dtype.name:
            return data
        with self.ctx():
            launch = _eager.astype_launch(self.xp, data, dtype.name, self.device.index)
            if launch is None:
                return self.xp.empty(data.shape, dtype=dtype._np)
            return self._launch_kept(launch, (data,), plan_key)

    def _launch_kept(self, launch, datas, plan_key):
        """launch(datas); with a plan key and one GPU visible, kept for the spec layer's hot
        path (KEPT) under it."""
        if plan_key is not None and self.switch is None:
            keep_call(plan_key, KeptLaunch(launch, tuple(d.strides for d in datas),
                                           self.device))
        return launch(datas, ())[0]

    # ---- indexing: boolean masks by stream compaction (scan.cu) ---------------------------
    def getitem(self, data, key, user_key):
        t = type(key)
        if t is tuple or t is slice or t is int:  # basic indexing: a view (no device work)
            return data[key]
        if type(key) is type(data):  # a boolean mask over the leading dimensions
            with self.ctx():
                return _scan.mask_select(self.xp, data, key)
        return super().getitem(data, key, user_key)

    def _setitem(self, data, key, value, value_shape):
        if type(key) is type(data) and key.size == 0 and value_shape:
            # an empty mask selects (0,) + the rest: CuPy takes any value there, NumPy (and
            # the standard's broadcasting) only one that broadcasts to it
            try:
                np.broadcast_shapes(tuple(value_shape), (0,) + tuple(data.shape[key.ndim:]))
            except ValueError:
                raise ValueError(
                    f"__setitem__: a value of shape {tuple(value_shape)} cannot be broadcast "
                    f"to the selected elements of an array of shape {tuple(data.shape)}"
                ) from None
        if type(value) is type(data) and value.dtype != data.dtype:
            # a value of a narrower dtype (float32 into float64 or complex): converted by our
            # kernel, so that CuPy's assignment only moves elements (its casting kernel is
            # built with -ftz and flushes float32 subnormals to 0)
            value = self.astype(value, from_numpy_dtype(data.dtype), False)
        if type(key) is type(data) and (isinstance(value, np.generic) or (
                type(value) is type(data) and value.ndim == 0)):
            with self.ctx():  # a scalar (or 0-d array) into the masked elements
                _scan.mask_assign(self.xp, data, key, value)
            return
        if isinstance(value, np.generic):  # a device scalar: CuPy's fill() loses -0.0
            value = self.move_in(np.asarray(value), None)
        super()._setitem(data, key, value, value_shape)

    def assign(self, data, value):
        if value.dtype is not data.dtype and value.dtype != data.dtype:
            # (no caller passes another dtype today; if one does, our kernel converts, as in
            # setitem: CuPy's casting assignment flushes float32 subnormals)
            value = self.astype(value, from_numpy_dtype(data.dtype), False)
        super().assign(data, value)

    def bounds(self, data):
        # our min and max reductions, both results brought back in one transfer
        cp = self.xp
        with self.ctx():
            name = dtype_name(data.dtype)
            ax = tuple(range(data.ndim))
            pair = self._alloc((2,), data.dtype)
            stream = cp.cuda.get_current_stream().ptr
            for k, kind in enumerate(("min", "max")):
                r = _reduce_eager(cp, kind, data, ax, False, name, name, self.device.index)
                cp.cuda.runtime.memcpyAsync(pair.data.ptr + k * data.itemsize, r.data.ptr,
                                            data.itemsize, 3, stream)  # device to device
            lo, hi = pair.get().tolist()
            return int(lo), int(hi)

    def nonzero(self, data):
        with self.ctx():
            return _scan.nonzero(self.xp, data)

    def cumulative(self, kind, data, axis, dtype, include_initial, plan_key=None):
        with self.ctx():
            return self._moved(plan_key, (data,), lambda: _scan.cumulative(
                self.xp, kind, data, axis, dtype._np, include_initial))

    # ---- manipulation: copy.cu moves raw elements (views built here, one copy each) --------
    def _into(self, shape, dtype, view_of_out, src):
        """A new C-contiguous array of `shape`, filled by copying `src` into the view
        `view_of_out(out)` (a reshaped view of the same elements)."""
        out = self._alloc(shape, dtype)
        if out.size:
            _copy.copy_into(self.xp, view_of_out(out), src)
        return out

    def copy(self, data):
        with self.ctx():
            return self._into(data.shape, data.dtype, lambda o: o, data)

    def reshape(self, data, shape, plan_key=None, view_key=None):
        if data._c_contiguous:  # a view of CuPy's: registered for the hot path (RESHAPES)
            if view_key is not None:
                note_reshape(view_key, shape)
            return data.reshape(shape)
        key = (data.shape, data.strides, data.itemsize, shape)
        strides = _RESHAPE_VIEWS.get(key)
        if strides is None:
            # NumPy's rule says whether these strides can view `shape` (on a stand-in array of
            # one element: only the strides matter); else our copy, not CuPy's. Decided once
            # per layout: the probe costs ~5 us, a refusal more.
            probe = np.lib.stride_tricks.as_strided(np.empty(1, data.dtype), data.shape,
                                                    data.strides)
            try:
                strides = probe.reshape(shape, copy=False).strides
            except ValueError:
                strides = False
            if len(_RESHAPE_VIEWS) >= _RESHAPE_VIEWS_MAX:
                _RESHAPE_VIEWS.clear()
            _RESHAPE_VIEWS[key] = strides
        if strides is False:  # a copy: kept under the spec layer's key (its layouts vary)
            kept = kept_call(plan_key) if plan_key is not None else None
            out = kept((data,), self.device) if kept is not None else None
            if out is not None:
                return out
            with self.ctx():
                return self._moved(plan_key, (data,), lambda: self.copy(data).reshape(shape))
        return self._view(data, tuple(shape), strides, 0)

    def _view(self, data, shape, strides, offset):
        """A view of data's memory from byte ``offset`` (CuPy's as_strided and diagonal cost
        3 and 8 us of host time; the constructor 1.8 us; the allocator's view form ~1)."""
        if data.size == 0:
            return self.xp.lib.stride_tricks.as_strided(data, shape, strides)
        return self._alloc(shape, data.dtype, data.data + offset if offset else data.data,
                           strides)

    def flip(self, data, index):
        """Base's view made directly from the strides (CuPy's indexing with a tuple of
        slices costs ~2 us more host time): each flipped axis starts at its last element and
        steps back."""
        if data.size == 0:
            return data[index]
        strides = list(data.strides)
        offset = 0
        for a, s in enumerate(index):
            if s.step is not None:
                offset += (data.shape[a] - 1) * strides[a]
                strides[a] = -strides[a]
        return self._view(data, data.shape, tuple(strides), offset)

    def diagonal(self, data, offset, copy):
        m, n = data.shape[-2:]
        length = min(m, n - offset) if offset >= 0 else min(m + offset, n)
        if length <= 0 or data.size == 0:
            return super().diagonal(data, offset, copy)
        s0, s1 = data.strides[-2:]
        view = self._view(data, data.shape[:-2] + (length,), data.strides[:-2] + (s0 + s1,),
                          offset * s1 if offset >= 0 else -offset * s0)
        return self.copy(view) if copy else view

    def trace(self, data, offset, dtype, plan_key=None):
        """The diagonal view reduced where it lies. A diagonal that starts at data's own
        address (offset 0, or any empty one) is kept under the plan key as a launch over data
        itself: the launch reads only its input's address, and data's shape and strides fix
        the diagonal's."""
        diag = self.diagonal(data, offset, False)
        with self.ctx():
            launch, empty = _reduction.eager_launch(self.xp, "sum", diag, (diag.ndim - 1,),
                                                    False, dtype_name(diag.dtype), dtype.name,
                                                    self.device.index)
            if launch is None:
                return empty
            if diag.data.ptr != data.data.ptr:  # not x's address: not kept
                return launch((diag,), ())[0]
            return self._launch_kept(launch, (data,), plan_key)

    def _flat(self, data):
        return self.reshape(data, (data.size,))

    def concat(self, parts, axis, dtype, plan_key=None):
        with self.ctx():
            return self._moved(plan_key, parts, lambda: self._concat(parts, axis, dtype))

    def _concat(self, parts, axis, dtype):
        parts = [self.astype(p, dtype, False) for p in parts]
        if axis is None:
            parts, axis = [self._flat(p) for p in parts], 0
        shape = list(parts[0].shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        return _copy.concat(self.xp, parts, axis, self._alloc(tuple(shape), dtype._np))

    def stack(self, parts, axis, dtype, plan_key=None):
        with self.ctx():
            return self._moved(plan_key, parts, lambda: self._stack(parts, axis, dtype))

    def _stack(self, parts, axis, dtype):
        parts = [_Unit(self.astype(p, dtype, False), axis) for p in parts]
        shape = list(parts[0].shape)
        shape[axis] = len(parts)
        return _copy.concat(self.xp, parts, axis, self._alloc(tuple(shape), dtype._np))

    def roll(self, data, shifts, axes, plan_key=None):
        """Each rolled axis splits into two slices that trade places (copy.roll)."""
        with self.ctx():
            return self._moved(plan_key, (data,), lambda: self._roll(data, shifts, axes))

    def _roll(self, data, shifts, axes):
        if axes is None:
            return self._roll(self._flat(data), shifts, (0,)).reshape(data.shape)
        total = [0] * data.ndim
        for s, a in zip(shifts, axes):  # repeated axes add up
            total[a] += s
        out = self._alloc(data.shape, data.dtype)
        if out.size == 0:
            return out
        return _copy.roll(self.xp, data, out, [t % n for t, n in zip(total, data.shape)])

    def tile(self, data, reps, plan_key=None):
        with self.ctx():
            return self._moved(plan_key, (data,), lambda: self._tile(data, reps))

    def _tile(self, data, reps):
        """x viewed as (1, d0, 1, d1, ...), broadcast to (r0, d0, r1, d1, ...), copied."""
        cp = self.xp
        nd = max(len(reps), data.ndim)
        reps = (1,) * (nd - len(reps)) + tuple(reps)
        x = data.reshape((1,) * (nd - data.ndim) + data.shape) if nd > data.ndim else data
        inter = tuple(v for r, d in zip(reps, x.shape) for v in (r, d))
        src = cp.broadcast_to(x[(None, slice(None)) * nd], inter)
        return self._into(tuple(r * d for r, d in zip(reps, x.shape)), data.dtype,
                          lambda o: o.reshape(inter), src)

    def repeat(self, data, repeats, axis, plan_key=None):
        cp = self.xp
        with self.ctx():
            if isinstance(repeats, int):
                # x viewed as (..., d, 1, ...) broadcast to (..., d, r, ...), copied
                view = data[(slice(None),) * (axis + 1) + (None,)]
                inter = data.shape[:axis + 1] + (repeats,) + data.shape[axis + 1:]
                shape = data.shape[:axis] + (data.shape[axis] * repeats,) + data.shape[axis + 1:]
                return self._moved(plan_key, (data,), lambda: self._into(
                    shape, data.dtype, lambda o: o.reshape(inter), cp.broadcast_to(view, inter)))
            total = int(_reduce_eager(cp, "sum", repeats, (0,), False, "int64", "int64",
                                      self.device.index).get())
            return self._gather(data, _scan.repeat_indices(cp, repeats, total), axis)

    def _gather(self, data, idx, axis):
        shape = data.shape[:axis] + (idx.shape[0],) + data.shape[axis + 1:]
        return _copy.gather(self.xp, data, idx, axis, self._alloc(shape, data.dtype))

    def take(self, data, idx, axis, plan_key=None):
        """With a plan key and one GPU visible, a call whose indices were int64 already is
        kept for the spec layer's hot path (KEPT: _KeptGather)."""
        n, m = data.shape[axis], idx.shape[0]
        if n == 0 or m == 0 or idx.dtype == np.uint64:
            # nothing to gather, or indices of 2**63 and above (which int64 would wrap)
            return super().take(data, idx, axis)
        with self.ctx():
            keep = plan_key is not None and self.switch is None and idx.dtype == _I8
            idx = self.astype(idx, _INT64, False)
            if not idx.flags.c_contiguous:
                keep = False
                idx = self.copy(idx)
            shape = data.shape[:axis] + (m,) + data.shape[axis + 1:]
            out = self._alloc(shape, data.dtype)
            # the gather checks the indices and wraps the negative ones as it reads them
            if not keep:
                bad = _copy.gather_checked(self.xp, data, idx, axis, out)
                return (None, bad) if bad is not None else (out, None)
            with noting_programs() as seen:
                bad = _copy.gather_checked(self.xp, data, idx, axis, out)
            if len(seen) == 1:
                prog, slots = seen[0]
                err = _copy._err_word(self.xp)[1]
                if slots == (out.data.ptr, data.data.ptr, idx.data.ptr, err):
                    keep_call(plan_key, _KeptGather(
                        self.xp, _replayer(self.xp, prog), shape, out.dtype, data.strides,
                        tuple(p & 15 for p in slots[1:]), self.device, self._alloc))
            return (None, bad) if bad is not None else (out, None)

    # ---- reductions: the generator fused reductions use ------------------------------------
    def reduce(self, kind, data, axes, keepdims, dtype, plan_key=None):
        with self.ctx():
            launch, empty = _reduction.eager_launch(self.xp, kind, data, axes, keepdims,
                                                    dtype_name(data.dtype), dtype.name,
                                                    self.device.index)
            return self._run_kept(launch, empty, data, plan_key)

    def argreduce(self, kind, data, axis, keepdims, plan_key=None):
        with self.ctx():
            launch, empty = _reduction.arg_launch(self.xp, kind, data, axis, keepdims,
                                                  self.device.index)
            return self._run_kept(launch, empty, data, plan_key)

    def _run_kept(self, launch, empty, data, plan_key):
        """Run a reduction's launch (or return its empty result); with one GPU visible, keep
        the launch for the spec layer's hot path under its plan key (KEPT)."""
        if launch is None:
            return empty
        return self._launch_kept(launch, (data,), plan_key)

    def _moved(self, plan_key, ins, run):
        """``run()``: a new C-contiguous array made from the arrays ``ins``. With a plan key
        and one GPU visible, the call is kept for the spec layer's hot path (KEPT) when its
        whole device work was one recorded program over (result, ins...) addresses; the
        positional match leaves out any call that made an intermediate array."""
        if plan_key is None or self.switch is not None:
            return run()
        with noting_programs() as seen:
            out = run()
        if len(seen) == 1 and out.flags.c_contiguous:
            prog, slots = seen[0]
            ptrs = (out.data.ptr,) + tuple(d.data.ptr for d in ins)
            if slots == ptrs:
                keep_call(plan_key, KeptMove(_replayer(self.xp, prog), out.shape, out.dtype,
                                             tuple(d.strides for d in ins),
                                             tuple(p & 15 for p in ptrs[1:]), self.device,
                                             self._alloc))
        return out

    def var(self, fname, data, axes, dof, keepdims, dtype, plan_key=None):
        # one pass (Welford per lane, Chan's merge); the generator takes the correction
        n = 1
        for a in axes:
            n *= data.shape[a]
        with self.ctx():
            launch, empty = _reduction.moments_launch(self.xp, fname, data, tuple(axes),
                                                      n - dof, keepdims, dtype.name,
                                                      self.device.index)
            return self._run_kept(launch, empty, data, plan_key)

    def vector_norm(self, data, axes, keepdims, ord, dtype, plan_key=None):
        with self.ctx():
            launch, empty = _reduction.norm_launch(self.xp, data, ord, tuple(axes), keepdims,
                                                   dtype.name, self.device.index)
            return self._run_kept(launch, empty, data, plan_key)

    def fused_launch(self, trace, outs, natives):
        with self._dev:
            return _fused_launch(self.xp, trace, outs, natives)

    # ---- creation: our kernels ------------------------------------------------------------
    def empty(self, shape, dtype):
        return self._alloc(shape, dtype._np)

    def full(self, shape, dtype, value):
        return _creation.fill(self.xp, self.empty(shape, dtype), _value_bytes(value, dtype))

    def eye(self, n_rows, n_cols, k, dtype):
        return _creation.eye(self.xp, self.empty((n_rows, n_cols), dtype), k,
                                  _value_bytes(1, dtype))

    def tri(self, data, k, upper):
        cp = self.xp
        src = data if data.flags.c_contiguous else cp.ascontiguousarray(data)
        return _creation.tri(cp, src, cp.empty(data.shape, dtype=src.dtype), k, upper)

    def arange(self, n, dtype, start, step, exact):
        return _creation.arange(self.xp, self.empty((n,), dtype), start, step)

    def linspace(self, num, dtype, a, b, endpoint, re, im, last):
        return _creation.linspace(self.xp, self.empty((num,), dtype), re, im, last)

    def logspace(self, num, dtype, start, stop, base, endpoint, lin, last, values):
        base_is_int = bool(np.isfinite(base)) and float(base).is_integer() and abs(base) < 2**63
        ibase = int(base) if base_is_int else 0
        return _creation.logspace(self.xp, self.empty((num,), dtype), lin, last, base,
                                       ibase, base_is_int)

    # ---- linear algebra and sorting -------------------------------------------------------
    def matmul(self, d1, d2, dtype, plan_key=None):
        """Matrices (2-D, or stacks of one batch shape) of a floating dtype, each C- or
        F-contiguous in its last two dims: one cuBLAS call, made here (CuPy's matmul spent
        ~16 us of host time on an 8x8 product); anything else through CuPy. The call's
        layout is planned once per (dtype, shapes, strides); with ``plan_key`` and one GPU
        visible, a cuBLAS call is kept for the spec layer's hot path (_KeptGemm)."""
        if self.switch is None:  # one visible GPU: no device to make current
            return self._matmul(d1, d2, dtype, plan_key)
        with self._dev:
            return self._matmul(d1, d2, dtype)

    def _matmul(self, d1, d2, dtype, plan_key=None):
        t = dtype._np
        key = (t, d1.dtype, d1.shape, d1.strides, d2.dtype, d2.shape, d2.strides)
        plan = _GEMM_PLANS.get(key)
        if plan is None:
            if len(_GEMM_PLANS) >= 4096:  # bounded: shapes are user data
                _GEMM_PLANS.clear()
            plan = _GEMM_PLANS[key] = _gemm_plan(dtype.name, d1, d2)
        if plan is False:
            return self.xp.matmul(d1, d2)
        if plan == "vecdot":  # the same sums (real: no conjugate), in vecdot's order
            return _vecdot(d1, d2, -1, t)
        if plan == "cast":
            return self._matmul(self.astype(d1, dtype, False), self.astype(d2, dtype, False),
                                dtype)
        if plan_key is not None:
            keep_call(plan_key, _KeptGemm(plan, t, d1.strides, d2.strides, self.device,
                                          self._alloc, self._stream))
        return _gemm_call(plan, t, self._alloc, self._stream, self.device.index, d1, d2)

    def vecdot(self, d1, d2, axis, dtype):
        # Our kernel reads both inputs through their strides as their own dtypes.
        return _vecdot(d1, d2, axis, dtype._np)

    def _segmented(self, data, axis, want_values):
        """Our segmented radix sort along `axis` (made last and C-contiguous), or None where it
        has no path (one long 1-D row: CuPy's Thrust sort is as fast there)."""
        cp = self.xp
        if data.dtype.kind == "c" or data.ndim == 0:
            return None
        last = data.ndim - 1
        moved = data if axis == last else cp.moveaxis(data, axis, last)
        with self.ctx():
            if not moved.flags.c_contiguous:
                moved = _eager.astype(cp, moved, dtype_name(moved.dtype), self.device.index)
            got = _sort.segmented_sort(cp, moved, want_values, not want_values)
        if got is None:
            return None
        out = got[0] if want_values else got[1]
        return out if axis == last else cp.moveaxis(out, last, axis)

    # complex64 (unique_*: the one complex use of the sorts) sorted through uint64 order keys
    # (_base.complex64_order_key: integer kernels), runs found by our not_equal: CuPy's
    # float32 comparisons (its -ftz build) took distinct subnormal parts for 0. complex128
    # keeps CuPy's sort: -ftz changes nothing in float64.
    def _c64_key(self, data):
        if not data.flags.c_contiguous:
            data = self.copy(data)  # our copy kernel: the key views the bits in place
        with self.ctx():
            return complex64_order_key(self.xp, data)

    def _group_starts(self, xp, s):
        """Base's mask of run starts, the comparison by our not_equal (NaN != NaN)."""
        if s.dtype.kind not in "fc":
            return Backend._group_starts(xp, s)
        n = s.shape[0]
        mask = xp.empty(s.shape, dtype=bool)
        if n:
            mask[0] = True
            dt = from_numpy_dtype(s.dtype)
            mask[1:] = self.elementwise("not_equal", None, (s[1:], s[:-1]), dt, _BOOL, (n - 1,))
        return mask

    def stable_argsort(self, data, axis: int):
        if data.dtype == np.complex64:
            return self.stable_argsort(self._c64_key(data), axis)
        out = self._segmented(data, axis, False)
        if out is None:  # CuPy's sorts are stable (Thrust) and take no kind
            with self.ctx():
                return self.xp.argsort(data, axis=axis)
        return out

    def stable_sort(self, data, axis: int):
        if data.dtype == np.complex64:  # the values gathered in their keys' order (moves)
            with self.ctx():
                return self.xp.take_along_axis(data, self.stable_argsort(data, axis), axis)
        out = self._segmented(data, axis, True)
        if out is None:
            with self.ctx():
                return self.xp.sort(data, axis=axis)
        return out

    def unique(self, data, want_index, want_inverse, want_counts):
        name = dtype_name(data.dtype)
        if name in _sort.SMALL_UNIQUE_DTYPES:
            with self.ctx():  # at most 65536 values: a histogram, no sort
                out = _sort.small_unique(self.xp, data, want_counts, want_inverse, want_index)
        elif name in _sort.SORTED_UNIQUE_DTYPES:
            only = not (want_index or want_inverse or want_counts)
            with self.ctx():  # one stable sort, then one pass over the runs
                out = _sort.sorted_unique(self.xp, self._flat(data), only, want_index,
                                          want_inverse, want_counts)
        else:  # complex: the generic path over our sorts
            return super().unique(data, want_index, want_inverse, want_counts)
        if want_inverse:
            out["inverse_indices"] = out["inverse_indices"].reshape(data.shape)
        return out

    def searchsorted(self, a, v, side, dtype, plan_key=None):
        cp = self.xp
        if dtype.kind == "complex":
            return super().searchsorted(a, v, side, dtype)
        with self.ctx():
            if a.dtype != dtype._np or v.dtype != dtype._np:  # converted first: not kept
                return _sort.searchsorted(cp, self.astype(a, dtype, False),
                                          self.astype(v, dtype, False), side)
            return self._moved(plan_key, (a, v), lambda: _sort.searchsorted(cp, a, v, side))

    def linalg_errors(self) -> tuple:
        return (np.linalg.LinAlgError, getattr(self.xp.linalg, "LinAlgError",
                                               np.linalg.LinAlgError))

    def linalg_checked(self):
        """cuSOLVER's status raises like LAPACK's does on cpu."""
        import cupyx
        return cupyx.errstate(linalg="raise")

    def solve(self, a, b, dtype):
        """Our direct LU solve (_kernels/lapack.py: cuSOLVER getrf/getrs, cuBLAS batched for
        stacks of small matrices): one read of the factorisations' info values per call instead
        of CuPy's two synchronising checks (a 4x4 system: 220 us a call through CuPy's solve).
        CuPy's solve serves what the launcher does not take (no such dtype in practice)."""
        from .._kernels import lapack
        if dtype.name not in lapack.DTYPES:
            return super().solve(a, b, dtype)
        t = dtype._np
        with self.ctx():
            if a.dtype != t or b.dtype != t:
                a, b = self.astype(a, dtype, False), self.astype(b, dtype, False)
            x, singular = lapack.solve(self.xp, a, b)
        if singular:
            raise ValueError("solve: x1 is singular (not invertible) (Singular matrix: an "
                             "exactly zero pivot in its LU factorization)")
        return x

    def _slogdet_parts(self, data, dtype, real):
        """(sign, logabsdet) of every matrix: NumPy's formula (umath_linalg) over our LU
        (lapack.lu_factor) with our kernels, none of CuPy's (built with -ftz: its log, sum,
        exp and product flushed float32 subnormals, e.g. det of diag(1e-20, 1e-20) became 0).
        sign = (-1)^(row interchanges) times, per diagonal element u, sign(u) (real) or u/|u|
        (complex); logabsdet = sum(log|u|); a zero u anywhere (LAPACK's info > 0) gives
        (0, -inf). Native arrays of the stack's shape, of ``dtype`` and ``real``."""
        from .._kernels import lapack
        cp, ew = self.xp, self.elementwise
        with self.ctx():
            data = self.astype(data, dtype, False)
            lu, piv = lapack.lu_factor(cp, data)
            n = data.shape[-1]
            u = lu.diagonal(0, lu.ndim - 2, lu.ndim - 1)  # (..., n): a view, read by strides
            shape, last = u.shape, (u.ndim - 1,)
            # rows interchanged: piv[i] != i + 1 (1-based)
            swapped = ew("not_equal", None, (piv, self.arange(n, _INT32, 1, 1, True)), _INT32,
                         _BOOL, shape)
            absu = ew("abs", None, (u,), dtype, real, shape)
            if dtype.kind == "complex":
                unit = ew("divide", None, (u, absu), dtype, dtype, shape)  # u / |u|
                prod = self.reduce("prod", unit, last, False, dtype)
                flips = swapped
            else:  # a negative u flips the sign as an interchange does: one parity count
                neg = ew("less", None, (u, TypedScalar(real._np.type(0), real)), real, _BOOL,
                         shape)
                flips = ew("not_equal", None, (neg, swapped), _BOOL, _BOOL, shape)
                prod = self.full((), dtype, 1)
            count = self.reduce("sum", flips, last, False, _INT64)
            odd = self.astype(ew("bitwise_and", None, (count, TypedScalar(np.int64(1), _INT64)),
                                 _INT64, _INT64, count.shape), _BOOL, False)
            sign = self.where(odd, ew("negative", None, (prod,), dtype, dtype, prod.shape), prod,
                              dtype, count.shape)
            zero = self.reduce("any", ew("equal", None, (
                u, TypedScalar(dtype._np.type(0), dtype)), dtype, _BOOL, shape), last, False,
                _BOOL)
            sign = self.where(zero, self.full((), dtype, 0), sign, dtype, count.shape)
            logs = ew("log", None, (absu,), real, real, shape)
            logabs = self.where(zero, self.full((), real, -math.inf),
                                self.reduce("sum", logs, last, False, real), real, count.shape)
            return sign, logabs

    def slogdet(self, data, dtype, real):
        from .._kernels import lapack
        if dtype.name not in lapack.DTYPES:
            return super().slogdet(data, dtype, real)
        return self._slogdet_parts(data, dtype, real)

    def det(self, data, dtype):
        """sign * exp(logabsdet), as NumPy's det (not the product of U's diagonal: the same
        value on both devices, and no overflow or underflow of partial products)."""
        from .._kernels import lapack
        if dtype.name not in lapack.DTYPES:
            return super().det(data, dtype)
        real = real_dtype(dtype)  # (det's exp runs in it)
        sign, logabs = self._slogdet_parts(data, dtype, real)
        with self.ctx():
            mag = self.elementwise("exp", None, (logabs,), real, real, logabs.shape)
            return self.elementwise("multiply", None, (sign, mag), dtype, dtype, logabs.shape)

    # ---- the NumPy door and integer array indexing --------------------------------------------
    def numpy_door(self, data, device, dtype, copy):
        """numpy.asarray(x) of a GPU array: refused, naming the explicit door (a silent copy
        to the host is the slow path this namespace exists to make visible), unless the
        process asked for copies (_base.NUMPY_COPIES: engines that store every task's
        result through numpy.asarray); copy=False refuses even then (the host array is
        always a copy)."""
        if not NUMPY_COPIES[0]:
            raise TypeError(f"numpy.asarray cannot read an array on {device}: its data is in "
                            f"GPU memory; copy it to the host explicitly with "
                            f"numpy.from_dlpack(x, device=\"cpu\") (or, for an engine that "
                            f"reads its chunks through numpy.asarray, allow the copies with "
                            f"xp_cuda.nonstandard.numpy_copies(True))")
        if copy is False:
            raise ValueError(f"__array__: an array on {device} reaches NumPy only as a copy "
                             f"in host memory, but copy=False was passed")
        with self.ctx():
            host = data.get()
        return host if dtype is None else host.astype(dtype, copy=False)

    def _int64_scalar_op(self, name, v, c, shape):
        return self.elementwise(name, name, (v, TypedScalar(np.int64(c), _INT64)), _INT64,
                                _INT64, shape)

    def linear_index(self, indices, dims, shape, wrap):
        # Backend.linear_index on our elementwise kernels (int64 remainder, multiply and
        # add over broadcast views: no index array is materialised at the broadcast shape
        # before the sum); the checked gather of take then reads the offsets.
        cp = self.xp
        lin, mult = None, 1
        with self.ctx():
            for idx, n, w in zip(reversed(indices), reversed(dims), reversed(wrap)):
                v = cp.broadcast_to(self.astype(idx, _INT64, False), shape)
                if w:
                    v = self._int64_scalar_op("remainder", v, n, shape)
                if mult != 1:
                    v = self._int64_scalar_op("multiply", v, mult, shape)
                lin = v if lin is None else self.elementwise("add", "add", (lin, v), _INT64,
                                                             _INT64, shape)
                mult *= n
            if not lin.flags.c_contiguous:  # one array, neither wrapped nor scaled: a view
                lin = self.copy(lin)
            return lin.reshape(-1)

    # ---- 2024.12: on the scan and reduction generators ------------------------------------
    def count_nonzero(self, data, axes, keepdims, plan_key=None):
        # x != 0 fused into the reduction's read, counted in int64 (no boolean array)
        with self.ctx():
            launch, empty = _reduction.count_launch(self.xp, data, tuple(axes), keepdims,
                                                    self.device.index)
            return self._run_kept(launch, empty, data, plan_key)


    # ---- later revisions (2024.12, 2025.12) -----------------------------------------------
    def take_along_axis(self, data, idx, axis, shape):
        """Our gather with an index per output element (copy.gather_along), which wraps the
        negative indices and checks them in the same pass (one wait). The base class serves an
        empty result or an empty axis (no gather to run: the bounds reduction checks them)."""
        n = data.shape[axis]
        if n == 0 or math.prod(shape) == 0:
            return super().take_along_axis(data, idx, axis, shape)
        cp = self.xp
        with self.ctx():
            if idx.dtype == np.uint64:  # 2**63 and above would wrap in int64: bounds first
                lo, hi = self.bounds(idx)
                if hi >= n:
                    return None, hi
            idx = self.astype(idx, _INT64, False)  # any strides: the kernel reads through them
            a = min(data.itemsize, 8)  # the kernel's element alignment (complex128: 8)
            if data.data.ptr % a or any(st % a for st in data.strides):
                data = self.copy(data)  # a misaligned view (a foreign import): one copy
            out = self._alloc(shape, data.dtype)
            bad = _copy.gather_along_checked(cp, data, idx, axis, out)
            return (None, bad) if bad is not None else (out, None)

    def isin(self, x1, x2, dtype, invert: bool):
        """x2 sorted (our sorts; CuPy's for one long row), then one pass of our search kernel
        writes the bool result (sort.isin). Complex has no order: the base class's path
        (unreachable: the spec layer takes real-valued arrays only)."""
        if dtype.kind == "complex":
            return super().isin(x1, x2, dtype, invert)
        with self.ctx():
            s = self.stable_sort(self._flat(self.astype(x2, dtype, False)), 0)
            return _sort.isin(self.xp, s, self.astype(x1, dtype, False), invert)

    def from_host(self, array):
        return self.move_in(array, None)


__all__ = ["CudaBackend"]
