"""Launcher of dense linear solves A X = B: LU with partial pivoting by cuSOLVER (getrf/getrs)
and cuBLAS (getrfBatched/getrsBatched), called directly.

Why not ``cupy.linalg.solve``: on a 4x4 system it spent ~120 us of host time in two ``.any()``
synchronisations of its info checks plus dtype-converting copies (220 us a call through it,
torch 98 us). A call here makes one copy of a (the factorisation overwrites its input), one copy
of b into the buffer the solution is written over, the library calls, and exactly ONE
device-to-host read: the factorisations' info values into pinned memory, then one stream
synchronize. That read is what lets the caller raise for an exactly singular matrix (getrf's
info > 0), as LAPACK does on cpu. Measured through the namespace on one H200 (host time per
call, pipelined, the synchronize included): a 4x4 float64 system 53 us (torch 92, CuPy 81,
before 220); 1000 4x4 float32 systems 53 us (torch 72, CuPy 98); a 4096x4096 float32 system
12.4 ms (torch 12.2, CuPy 12.4).

Column-major libraries, row-major arrays. cuSOLVER and cuBLAS read a matrix column-major; a
row-major (C-ordered) A read that way is A^T. getrf factors what it reads, M = A^T = P L U, and
getrs with op T solves op(M) X = (A^T)^T X = A X = B. For complex dtypes op is T as well, NOT C
(conjugate transpose): reading memory in the other order transposes without conjugating. So a
row-major copy of a needs no transposing copy; where a's matrices are column-major already (a
transposed view), the copy stays column-major and getrs uses op N. Either way one copy of a,
laid out as the source is (the cheaper copy). Pivoting A^T's rows is pivoting A's columns: the
same algorithm on the transpose, with the same backward-stability bound.

B must be column-major n x k and is overwritten by X. For k = 1 a column is contiguous in either
order, so b is copied once into the new C-contiguous result and solved in place. For k > 1 b is
copied into a column-major scratch buffer and X transposed into the C-contiguous result (getrs
has no row-major B).

Methods (``choose_method``), all measured on one H200 (host time per call, the final
synchronize included):

- ``batched``: cuBLAS getrfBatched/getrsBatched for a stack of matrices up to
  ``BATCHED_MAX_N``, and for one matrix up to ``ONE_BATCHED_MAX_N``: a few launches for the
  whole stack. cuSOLVER's getrf + getrs cost ~85 us a call even for a 4x4 matrix (cuBLAS
  batched with a batch of 1: 43 us); a loop of them ran 32 64x64 systems in 4.3 ms, the
  batched routines in 0.22 ms.
- ``single``: one matrix (a single system, or one broadcast along every batch dim) larger than
  that: cuSOLVER's blocked getrf and one getrs (4096x4096 float32: 12.4 ms, torch 12.3, CuPy
  12.5).
- ``loop``: a stack of matrices larger than ``BATCHED_MAX_N``: getrf/getrs per matrix with one
  workspace (calls on one stream run in order).

Where one matrix serves a whole stack (a broadcast along every batch dim), it is factored once
and solved with nrhs = batch * k: the stack of packed column-major n x k blocks is itself one
column-major n x (batch * k) matrix.

``lu_factor`` runs the factorisation alone (det and slogdet read U's diagonal and the pivots
with our own kernels): the same methods and thresholds, a C-contiguous copy of every matrix, and
no read of the info values (a zero on U's diagonal says singular), so no synchronisation.

Planning (``choose_method``, ``plan_solve``, ``plan_factor``) is pure Python, tested without a
GPU; ``solve`` and ``lu_factor`` are the launchers. CuPy and its library bindings are imported
inside functions: the module imports without CuPy.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

import numpy as np

from . import copy as _copy
from ._runtime import dtype_name, empty_allocator, library_handle

__all__ = ["DTYPES", "BATCHED_MAX_N", "ONE_BATCHED_MAX_N", "INFO_READ_MAX", "PTRS_HOST_MAX",
           "SolvePlan", "choose_method", "plan_solve", "solve", "FactorPlan", "plan_factor",
           "lu_factor"]

# cuBLAS/cuSOLVER type letter of each dtype the launcher takes.
DTYPES = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
# The largest n cuBLAS's batched routines take for a stack, and for one matrix; beyond,
# cuSOLVER's blocked getrf per matrix. Measured on one H200 (host time per call, float64, the
# final synchronize included): one matrix, batched vs cuSOLVER: n=8 66 vs 93 us, 32 113 vs
# 124, 48 tie, 64 199 vs 183, 128 431 vs 287, 512 4.7 ms vs 1.1 ms. Stacks of 4: 128 448 vs
# 1013 us (loop), 256 1.50 vs 1.97 ms, 384 3.8 vs 3.3 ms, 1024 24 vs 10 ms; stacks of 32: 256
# 1.57 vs 15.4 ms (the batched time hardly grows with the stack, the loop's grows linearly).
BATCHED_MAX_N = 256
ONE_BATCHED_MAX_N = 32
# Info values read back whole; a longer stack's are reduced on the device first (one int32).
INFO_READ_MAX = 4096
# Stacks up to this many matrices get their pointer arrays from pinned host memory (one
# host-to-device copy, ~2 us of host time); longer ones compute them on the device.
PTRS_HOST_MAX = 65536
_ALIGN = 256  # bytes: each scratch region starts on the allocator's granularity
_OP_N, _OP_T = 0, 1  # cublasOperation_t


def _up(nbytes: int) -> int:
    return -(-nbytes // _ALIGN) * _ALIGN


@dataclass(frozen=True)
class SolvePlan:
    """One call's fixed arguments: method, layouts and the scratch allocation's regions.

    Strides are in bytes. ``lu_shape``/``lu_strides`` describe the copy of a (the view the
    copy writes through, same shape as its source); ``rhs_strides`` the column-major scratch
    buffer of b viewed with b's shape, or None where the result buffer itself is B (k == 1).
    Region offsets (``lu``, ``piv``, ``info``, ``ptrs``, ``rhs``, ``work``) are byte offsets in
    one device allocation of ``nbytes``; the host side (pinned) holds the pointer arrays at 0
    (``host_ptrs`` bytes), then ``read`` int32 info values, then getrsBatched's host info.
    """
    dtype: str
    itemsize: int
    shape: tuple            # b's and the result's: (..., n, k)
    batch: int
    n: int
    k: int
    method: str             # "empty", "single", "batched", "loop"
    trans: int              # op getrs applies to the stored factors: N (column-major copy), T
    mats: int               # matrices factored: 1 where one matrix serves the stack
    lu_shape: tuple
    lu_strides: tuple
    rhs_strides: tuple | None
    nrhs: int               # columns of one getrs call (batch * k where one matrix serves)
    lwork: int              # cuSOLVER workspace, elements
    lu: int = 0
    piv: int = 0
    info: int = 0
    info_count: int = 0     # int32 info values the calls write
    read: int = 0           # of them read back whole (0: reduced on the device to one)
    ptrs: int = 0
    rhs: int = 0
    work: int = 0
    nbytes: int = 0
    host_ptrs: int = 0      # bytes of pointer arrays staged in pinned memory
    host_bytes: int = 0
    a_step: int = 0         # bytes between consecutive matrices of the LU copy / of B
    b_step: int = 0
    a_memcpy: int = 0       # bytes: a (its first matrix where one serves) is laid out as its
    b_memcpy: int = 0       # copy is, one cudaMemcpyAsync; likewise b; 0: copy.copy_into
    offsets: np.ndarray | None = field(default=None, compare=False, repr=False)  # uint64, host_ptrs


def choose_method(batch: int, n: int, shared: bool) -> str:
    """The method for ``batch`` systems of order n, ``shared`` when they all have one matrix
    (see the module docstring and the thresholds above)."""
    if batch == 0 or n == 0:
        return "empty"
    if batch == 1 or shared:
        return "batched" if n <= ONE_BATCHED_MAX_N else "single"
    return "batched" if n <= BATCHED_MAX_N else "loop"


def _packed_strides(batch_shape, block: int) -> tuple:
    """C-order byte strides of batch dims over packed blocks of ``block`` bytes."""
    out, s = [], block
    for d in reversed(batch_shape):
        out.append(s)
        s *= d
    return tuple(reversed(out))


def plan_solve(a_shape, a_strides, b_shape, b_strides, dtype: str, lwork: int = 0,
               method: str | None = None) -> SolvePlan:
    """The plan of solving a (..., n, n) X = b (..., n, k) (one batch shape, byte strides of any
    sign, 0 where broadcast). ``lwork``: cuSOLVER's getrf workspace for (dtype, n) in elements
    (used by "single" and "loop"). ``method`` forces a method (tests reach every path at every
    size with it; "single" only where a is one matrix)."""
    S = np.dtype(dtype).itemsize
    *bshape, n, k = b_shape
    bshape = tuple(bshape)
    assert tuple(a_shape) == bshape + (n, n), (a_shape, b_shape)
    batch = math.prod(bshape)
    nb = len(bshape)
    shared = all(st == 0 or d == 1 for d, st in zip(bshape, a_strides[:nb]))
    auto = choose_method(batch, n, shared)
    if method is None or auto == "empty" or k == 0:
        method = "empty" if k == 0 else auto
    assert method in ("single", "batched", "loop", "empty"), method
    assert method != "single" or shared, "single: a must be one matrix (or one broadcast)"
    one = shared and method != "loop"  # one LU serves the whole stack
    rs, cs = a_strides[-2:]
    # the copy keeps a's layout (the cheaper copy): op N or op T ran alike in cuBLAS, and
    # neither was faster throughout in cuSOLVER (n=4096 k=16 float32: T 14.2 ms, N 13.6;
    # n=2048 k=16 float64: T 6.7 ms, N 8.0)
    column_major = n > 1 and abs(rs) < abs(cs)
    trans = _OP_N if column_major else _OP_T
    mat = (S, n * S) if column_major else (n * S, S)
    mats = 1 if one else batch
    lu_shape = (n, n) if one else tuple(a_shape)  # one: a's first matrix (all alike)
    lu_strides = mat if one else _packed_strides(bshape, n * n * S) + mat
    rhs_strides = None if k == 1 else _packed_strides(bshape, n * k * S) + (S, n * S)
    cusolver = method in ("single", "loop")
    common: dict = dict(dtype=dtype, itemsize=S, shape=tuple(b_shape), batch=batch, n=n, k=k,
                  method=method, trans=trans, mats=mats, lu_shape=lu_shape,
                  lu_strides=lu_strides, rhs_strides=rhs_strides,
                  nrhs=batch * k if one else k, lwork=lwork if cusolver else 0)
    if method == "empty":
        return SolvePlan(**common)
    info_count = {"single": 2, "loop": batch + 1, "batched": mats}[method]
    read = info_count if info_count <= INFO_READ_MAX else 0
    host_ptrs = 2 * mats * 8 if method == "batched" and mats <= PTRS_HOST_MAX else 0
    off = 0
    regions: dict = {}
    for name, size in (("lu", mats * n * n * S), ("piv", mats * n * 4), ("info", info_count * 4),
                       ("ptrs", host_ptrs), ("rhs", batch * n * k * S if k > 1 else 0),
                       ("work", common["lwork"] * S)):
        regions[name] = off
        off += _up(size)
    host_bytes = host_ptrs + 4 * (max(read, 1) + 1)
    offsets = None
    if host_ptrs:  # i * step of A's matrices, then of B's: a call adds the two base addresses
        i = np.arange(mats, dtype=np.uint64)
        offsets = np.concatenate([i * np.uint64(n * n * S), i * np.uint64(n * k * S)])
    # The copies in: one cudaMemcpyAsync where source and copy have the same layout (the
    # common case: contiguous inputs), which costs a third of the copy kernel's host time.
    a_src = a_strides[-2:] if one else a_strides
    b_dst = rhs_strides if k > 1 else _packed_strides(tuple(b_shape), S)
    a_memcpy = mats * n * n * S if _same(lu_shape, a_src, lu_strides) else 0
    b_memcpy = batch * n * k * S if _same(b_shape, b_strides, b_dst) else 0
    return SolvePlan(**common, **regions, info_count=info_count, read=read, nbytes=off,
                     host_ptrs=host_ptrs, host_bytes=host_bytes, a_step=n * n * S,
                     b_step=n * k * S, offsets=offsets, a_memcpy=a_memcpy, b_memcpy=b_memcpy)


def _same(shape, s1, s2) -> bool:
    """Do strides s1 and s2 address the elements of ``shape`` alike (unit dims aside)?"""
    return all(x == y for d, x, y in zip(shape, s1, s2) if d > 1)


# ---- runtime (CuPy, cuSOLVER, cuBLAS) --------------------------------------------------------

class _Raw:
    """A typed view of device memory as ``copy.copy_into`` reads one (shape, strides, dtype,
    data.ptr): a region of the scratch allocation without building a CuPy array (~3 us)."""
    __slots__ = ("shape", "strides", "dtype", "itemsize", "ptr")

    def __init__(self, shape, strides, dtype, ptr):
        self.shape, self.strides, self.dtype, self.ptr = shape, strides, dtype, ptr
        self.itemsize = dtype.itemsize

    @property
    def data(self):
        return self


class _Pinned(threading.local):
    """One pinned host buffer per thread and device, grown on demand. A call's stream is
    synchronized before it returns, so its transfers are done when the next call reuses it."""

    def __init__(self):
        self.bufs = {}  # device -> (PinnedMemoryPointer, numpy uint8 view, address)


_PINNED = _Pinned()
_plans: dict = {}      # (dtype, shapes, strides, device, method) -> SolvePlan
_lwork: dict = {}      # (dtype, n, device) -> cuSOLVER getrf workspace (elements)
_PLAN_CACHE_SIZE = 512
_MEMCPY_H2D, _MEMCPY_D2H, _MEMCPY_D2D = 1, 2, 3


def _pinned(cp, dev: int, nbytes: int):
    entry = _PINNED.bufs.get(dev)
    if entry is None or entry[1].size < nbytes:
        size = max(4096, 1 << (nbytes - 1).bit_length())
        mem = cp.cuda.alloc_pinned_memory(size)
        entry = _PINNED.bufs[dev] = (mem, np.frombuffer(mem, np.uint8, size), mem.ptr)
    return entry


def _getrf_lwork(cp, cusolver, handle, letter, dtype, n, dev, a_ptr) -> int:
    key = (dtype, n, dev)
    lwork = _lwork.get(key)
    if lwork is None:
        # a valid device address for the query (it reads only the sizes)
        lwork = _lwork[key] = int(getattr(cusolver, letter + "getrf_bufferSize")(
            handle, n, n, a_ptr, n))
    return lwork


def _plan(cp, a, b, dev, method):
    key = (a.dtype.char, a.shape, a.strides, b.shape, b.strides, dev, method)
    plan = _plans.get(key)
    if plan is not None:
        return plan
    dtype = dtype_name(a.dtype)
    plan = plan_solve(a.shape, a.strides, b.shape, b.strides, dtype, 0, method)
    if plan.method in ("single", "loop"):  # cuSOLVER: its workspace size, then the regions
        from cupy_backends.cuda.libs import cusolver
        lwork = _getrf_lwork(cp, cusolver, library_handle("cusolver", dev),
                             DTYPES[dtype], dtype, plan.n, dev, a.data.ptr)
        plan = plan_solve(a.shape, a.strides, b.shape, b.strides, dtype, lwork, method)
    if len(_plans) >= _PLAN_CACHE_SIZE:  # bounded: shapes are user data
        _plans.clear()
    _plans[key] = plan
    return plan


def solve(cp, a, b, method: str | None = None):
    """Solve a X = b on the current device and stream.

    ``a``: a CuPy array (..., n, n); ``b``: (..., n, k) with the same batch shape (broadcast
    views allowed, any strides); one dtype of DTYPES for both. Returns ``(x, singular)``: x a
    new C-contiguous array of b's shape and dtype, singular True when some matrix of the stack
    is exactly singular (getrf's info > 0; x then holds infs/NaNs there). ``method`` forces a
    method of ``choose_method`` (tests). One device-to-host read and one stream synchronize
    per call (none for an empty result).
    """
    assert a.dtype == b.dtype and dtype_name(a.dtype) in DTYPES, (a.dtype, b.dtype)
    dev = cp.cuda.runtime.getDevice()
    plan = _plan(cp, a, b, dev, method)
    alloc = empty_allocator(cp)
    out = alloc(plan.shape, a.dtype)
    if plan.method == "empty":
        return out, False
    scratch = alloc((plan.nbytes,), np.uint8)
    base = scratch.data.ptr
    stream = cp.cuda.get_current_stream().ptr
    n, dt = plan.n, a.dtype
    mem, host, host_ptr = _pinned(cp, dev, plan.host_bytes)
    lu, piv, info = base + plan.lu, base + plan.piv, base + plan.info
    try:
        # the copy of a the factorisation overwrites (one matrix where all are alike)
        if plan.a_memcpy:
            cp.cuda.runtime.memcpyAsync(lu, a.data.ptr, plan.a_memcpy, _MEMCPY_D2D, stream)
        else:
            _copy.copy_into(cp, _Raw(plan.lu_shape, plan.lu_strides, dt, lu),
                            a if plan.mats == plan.batch else _Raw(
                                (n, n), a.strides[-2:], dt, a.data.ptr))
        rhs = out.data.ptr if plan.rhs_strides is None else base + plan.rhs
        if plan.b_memcpy:
            cp.cuda.runtime.memcpyAsync(rhs, b.data.ptr, plan.b_memcpy, _MEMCPY_D2D, stream)
        else:
            _copy.copy_into(cp, out if plan.rhs_strides is None else _Raw(
                plan.shape, plan.rhs_strides, dt, rhs), b)
        letter = DTYPES[plan.dtype]
        if plan.method == "batched":
            keep = _batched(cp, plan, letter, stream, lu, piv, info, rhs, base, host,  # noqa: F841
                            host_ptr)  # (keep: device pointer arrays, alive until the sync)
        else:
            from cupy_backends.cuda.libs import cusolver
            handle = library_handle("cusolver", dev, stream)
            getrf = getattr(cusolver, letter + "getrf")
            getrs = getattr(cusolver, letter + "getrs")
            work = base + plan.work
            if plan.method == "single":
                getrf(handle, n, n, lu, n, work, piv, info)
                getrs(handle, plan.trans, n, plan.nrhs, lu, n, piv, rhs, n, info + 4)
            else:  # loop: one workspace, in stream order
                rs_info = info + 4 * plan.batch
                for i in range(plan.batch):
                    lu_i = lu + i * plan.a_step
                    piv_i = piv + 4 * i * n
                    getrf(handle, n, n, lu_i, n, work, piv_i, info + 4 * i)
                    getrs(handle, plan.trans, n, plan.k, lu_i, n, piv_i,
                          rhs + i * plan.b_step, n, rs_info)
        if plan.rhs_strides is not None:
            _copy.copy_into(cp, out, _Raw(plan.shape, plan.rhs_strides, dt, rhs))
        # the one read: every info value (or their maximum, for a long stack)
        at = plan.host_ptrs
        if plan.read:
            cp.cuda.runtime.memcpyAsync(host_ptr + at, info, 4 * plan.read, _MEMCPY_D2H, stream)
        else:
            worst = cp.ndarray((plan.info_count,), np.int32, scratch.data + plan.info).max()
            cp.cuda.runtime.memcpyAsync(host_ptr + at, worst.data.ptr, 4, _MEMCPY_D2H, stream)
    finally:
        # also on an error: the pinned buffer is free for the next call only once this
        # call's transfers are done
        cp.cuda.runtime.streamSynchronize(stream)
    got = host[at:at + 4 * max(plan.read, 1)].view(np.int32)
    if plan.read <= 8:  # a list's min and max cost less than NumPy's on a few values
        got = got.tolist()
        low, high = min(got), max(got)
    else:  # (Python's min over a NumPy array makes a scalar per value: 80 us for 1000)
        low, high = int(got.min()), int(got.max())
    if plan.read and low < 0:
        raise RuntimeError(f"xp_cuda: LU solve: the library reports illegal argument {-low} "
                           f"({plan.method}, n={n}, k={plan.k}); a bug here")
    return out, bool(high > 0)


def _batched(cp, plan, letter, stream, lu, piv, info, rhs, base, host, host_ptr):
    """cuBLAS getrfBatched + getrsBatched over the plan's matrices. The pointer arrays (A's
    matrices, then B's) are base + i * step: staged in pinned memory and copied in, or for a
    long stack computed on the device (returned, to be kept until the call's synchronize)."""
    from cupy_backends.cuda.libs import cublas
    m = plan.mats
    keep = None
    if plan.host_ptrs:
        p = host[:plan.host_ptrs].view(np.uint64)
        np.add(plan.offsets[:m], np.uint64(lu), out=p[:m])
        np.add(plan.offsets[m:], np.uint64(rhs), out=p[m:])
        aptrs = base + plan.ptrs
        bptrs = aptrs + 8 * m
        cp.cuda.runtime.memcpyAsync(aptrs, host_ptr, plan.host_ptrs, _MEMCPY_H2D, stream)
    else:
        va = cp.arange(lu, lu + plan.a_step * m, plan.a_step, dtype=np.uint64)
        vb = cp.arange(rhs, rhs + plan.b_step * m, plan.b_step, dtype=np.uint64)
        aptrs, bptrs = va.data.ptr, vb.data.ptr
        keep = (va, vb)
    handle = library_handle("cublas", cp.cuda.runtime.getDevice(), stream)
    n = plan.n
    getattr(cublas, letter + "getrfBatched")(handle, n, aptrs, n, piv, info, m)
    rs = plan.host_bytes - 4  # getrsBatched's info is a host int, written before it returns
    getattr(cublas, letter + "getrsBatched")(handle, plan.trans, n, plan.nrhs, aptrs, n, piv,
                                             bptrs, n, host_ptr + rs, m)
    got = int(host[rs:rs + 4].view(np.int32)[0])
    if got < 0:
        raise RuntimeError(f"xp_cuda: cuBLAS getrsBatched reports illegal argument {-got} "
                           f"(n={n}, nrhs={plan.nrhs}, batch={m}); a bug here")
    return keep


# ---- LU factorisation alone (det, slogdet) ---------------------------------------------------

@dataclass(frozen=True)
class FactorPlan:
    """One ``lu_factor`` call's fixed arguments: the method of ``choose_method`` (never a shared
    matrix: every matrix of the stack is factored), the stack's size, and the cuSOLVER
    workspace (elements; 0 for cuBLAS's batched routine)."""
    dtype: str
    shape: tuple    # (..., n, n)
    batch: int
    n: int
    method: str     # "empty", "single", "batched", "loop"
    lwork: int
    step: int       # bytes between consecutive matrices of the C-contiguous copy


def plan_factor(shape, dtype: str, lwork: int = 0, method: str | None = None) -> FactorPlan:
    """The plan of factoring the stack of square matrices of ``shape`` (..., n, n).
    ``method`` forces one (tests; "single" only for one matrix)."""
    *bshape, n, m = shape
    assert n == m, shape
    batch = math.prod(bshape)
    auto = choose_method(batch, n, False)
    if method is None or auto == "empty":
        method = auto
    assert method in ("single", "batched", "loop", "empty"), method
    assert method != "single" or batch == 1, "single: one matrix"
    S = np.dtype(dtype).itemsize
    return FactorPlan(dtype=dtype, shape=tuple(shape), batch=batch, n=n, method=method,
                      lwork=lwork if method in ("single", "loop") else 0, step=n * n * S)


def lu_factor(cp, a, method: str | None = None):
    """LU factorisation with partial pivoting of every matrix of ``a`` (..., n, n) (a CuPy array
    of a DTYPES dtype, any strides, batch and n at least 1), on the current device and stream.

    Returns ``(lu, piv)``: lu a new C-contiguous array of a's shape and dtype, piv int32
    (..., n). The library reads lu's memory column-major, so what it factors is each matrix's
    TRANSPOSE, A^T = P L U (det(A^T) = det(A), for complex too: no conjugation), written over
    lu: U's diagonal is ``lu``'s diagonal, and piv holds LAPACK's 1-based row interchanges (row
    i was swapped with row piv[i]; the permutation is odd when an odd number of piv[i] differ
    from i + 1). An exactly singular matrix is factored all the same (a zero on U's diagonal,
    as LAPACK's info > 0): no info value is read, so nothing here waits for the device."""
    assert dtype_name(a.dtype) in DTYPES and a.ndim >= 2, a.dtype
    dev = cp.cuda.runtime.getDevice()
    dtype = dtype_name(a.dtype)
    plan = plan_factor(a.shape, dtype, 0, method)
    assert plan.method != "empty", a.shape
    letter = DTYPES[dtype]
    n, m = plan.n, plan.batch
    alloc = empty_allocator(cp)
    lu = alloc(a.shape, a.dtype)
    piv = alloc(a.shape[:-1], np.int32)
    info = alloc((m,), np.int32)  # written by the library, never read (see above)
    stream = cp.cuda.get_current_stream().ptr
    if a.flags.c_contiguous:
        cp.cuda.runtime.memcpyAsync(lu.data.ptr, a.data.ptr, a.nbytes, _MEMCPY_D2D, stream)
    else:  # a view (strided, transposed, broadcast): our copy kernel
        _copy.copy_into(cp, lu, a)
    base, pbase, ibase = lu.data.ptr, piv.data.ptr, info.data.ptr
    if plan.method == "batched":
        from cupy_backends.cuda.libs import cublas
        # the pointer array on the device (an integer arange: exact); CuPy's pool hands its
        # memory to a later allocation only in this stream's order, after getrfBatched read it
        ptrs = cp.arange(base, base + plan.step * m, plan.step, dtype=np.uint64)
        handle = library_handle("cublas", dev, stream)
        getattr(cublas, letter + "getrfBatched")(handle, n, ptrs.data.ptr, n, pbase, ibase, m)
        return lu, piv
    from cupy_backends.cuda.libs import cusolver
    handle = library_handle("cusolver", dev, stream)
    lwork = _getrf_lwork(cp, cusolver, handle, letter, dtype, n, dev, base)
    work = alloc((max(lwork, 1),), a.dtype)
    getrf = getattr(cusolver, letter + "getrf")
    for i in range(m):  # "single" (m == 1) or "loop": one workspace, in stream order
        getrf(handle, n, n, base + i * plan.step, n, work.data.ptr, pbase + 4 * i * n,
              ibase + 4 * i)
    return lu, piv
