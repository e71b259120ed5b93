"""Launchers of scan.cu: prefix sums (cumulative_sum) and stream compaction (nonzero, x[mask],
x[mask] = v, the gather indices of repeat with counts).

Every launcher takes CuPy arrays the caller validated, runs on the current device and stream,
and returns CuPy arrays. The planning half (``CUMSUM_PAIRS``, ``cumsum_route``, ``plan_scan``,
``row_unit``) is pure Python, tested without a GPU; ``kernel_names()`` lists every kernel a
launcher can request (CI compiles scan.cu with NVRTC and checks each is in the PTX).

Float sums: accumulated in the out dtype, in a different order than NumPy's sequential loop,
so results differ from np.cumsum by rounding. The look-back scan adds at most
``scan_depth(plan)`` terms in sequence on the way to any output (thread-local run + warp and
block trees + one add per preceding tile; the column scan: the chunk's run + one add per
preceding chunk), so |ours - exact| <= scan_depth * u * sum(|x_i|) to first order, u the unit
roundoff of the out dtype; NumPy's bound is the same with n for scan_depth, which is never
smaller. Integer sums are exact modulo 2**bits, as NumPy's.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ._runtime import (device_info, dtype_name, empty_allocator, grid, instance_units, load_kernel,
                       source)

__all__ = ["THREADS", "CHUNKS", "ROW_V", "COUNT_ITEMS", "CUMSUM_PAIRS", "Route", "cumsum_route",
           "kernel_names", "ScanPlan", "plan_scan", "scan_depth", "row_unit", "mask_tile",
           "cumsum", "nonzero", "mask_select", "mask_assign", "repeat_indices"]

THREADS = 256      # THREADS in scan.cu
CHUNKS = 4         # CH: 16-byte vectors per thread in a look-back tile
ROW_V = 4          # RV: elements per lane per step of the short-row scan
# Axes with fewer than 32 elements after them are moved last (two copies) only for arrays this
# large: a small array's copies cost more host time (cumulative_sum(axis=0) of a (2, 4) array
# took 71 us, torch 9) than its column scan's idle lanes cost the GPU.
TRANSPOSE_MIN = 1 << 16
COUNT_ITEMS = 16   # IT_COUNT: elements per thread in a compaction tile
MAX_NZ_DIMS = 8    # coordinates nonzero writes directly (more: linear indices, unravelled)

# ---- the dtype table -----------------------------------------------------------------------
_KIND = {"bool": "bool", "int8": "int", "int16": "int", "int32": "int", "int64": "int",
         "uint8": "uint", "uint16": "uint", "uint32": "uint", "uint64": "uint",
         "float32": "float", "float64": "float", "complex64": "complex",
         "complex128": "complex"}
# cumulative_sum's out dtype for an input: the default (int64/uint64 for ints and bool, the
# input's own for floats and complex) or an explicit dtype of the same or a wider kind
# (xp_cuda._statistical._DTYPE_ARG_KINDS; bool as the integers, for revisions that take it).
_OUT_KINDS = {"bool": ("int", "uint", "float", "complex"),
              "int": ("int", "uint", "float", "complex"),
              "uint": ("int", "uint", "float", "complex"),
              "float": ("float", "complex"), "complex": ("complex",)}
CUMSUM_PAIRS = tuple((i, o) for i in _KIND for o in _KIND if _KIND[o] in _OUT_KINDS[_KIND[i]])

# dtype -> the kernels' name of its bits: ints wrap alike, so signed ints use the unsigned twin
_SHORT = {"bool": "b", "int8": "u8", "int16": "u16", "int32": "u32", "int64": "u64",
          "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "float32": "f32",
          "float64": "f64", "complex64": "c64", "complex128": "c128"}
# the input side of a fused widening keeps its sign (sign-extension into 64 bits)
_WIDEN_IN = {"bool": "b", "int8": "i8", "int16": "i16", "int32": "i32", "uint8": "u8",
             "uint16": "u16", "uint32": "u32"}
SAME_TYPE = ("u8_u8", "u16_u16", "u32_u32", "u64_u64", "f32_f32", "f64_f64", "c64_c64",
             "c128_c128")
FUSED = ("b_u64", "i8_u64", "i16_u64", "i32_u64", "u8_u64", "u16_u64", "u32_u64", "f32_f64")
SCAN_TYPES = SAME_TYPE + FUSED


@dataclass(frozen=True)
class Route:
    """How one (input, out) dtype pair is summed: ``precast`` (a dtype name, or None) is an
    astype to the out dtype first (cast-first semantics made literal, for the rare explicit
    dtype= pairs), then the kernels named ``xp_scan_*_{kernel}``."""
    precast: str | None
    kernel: str


def cumsum_route(in_name: str, out_name: str) -> Route:
    """The Route of a CUMSUM_PAIRS pair. Same bits in and out, and the defaults that widen
    (bool and ints narrower than 64 bits into int64/uint64, float32 into float64), convert in
    the kernel's load; every other pair converts with astype first."""
    isz, osz = np.dtype(in_name).itemsize, np.dtype(out_name).itemsize
    ik, ok = _KIND[in_name], _KIND[out_name]
    if ok in ("int", "uint"):
        if ik in ("bool", "int", "uint"):
            if isz == osz and ik != "bool":
                return Route(None, f"{_SHORT[out_name]}_{_SHORT[out_name]}")
            if osz == 8:
                return Route(None, f"{_WIDEN_IN[in_name]}_u64")
        return Route(out_name, f"{_SHORT[out_name]}_{_SHORT[out_name]}")
    if in_name == out_name:
        return Route(None, f"{_SHORT[out_name]}_{_SHORT[out_name]}")
    if (in_name, out_name) == ("float32", "float64"):
        return Route(None, "f32_f64")
    return Route(out_name, f"{_SHORT[out_name]}_{_SHORT[out_name]}")


# nonzero's predicate by dtype: its bits for ints and bool, a float compare for floats
# (-0.0 is zero, NaN is not), either part for complex
_PRED = {"bool": "u8", "int8": "u8", "uint8": "u8", "int16": "u16", "uint16": "u16",
         "int32": "u32", "uint32": "u32", "int64": "u64", "uint64": "u64", "float32": "f32",
         "float64": "f64", "complex64": "c64", "complex128": "c128"}
_PREDS = ("u8", "u16", "u32", "u64", "f32", "f64", "c64", "c128")
ITEM_SIZES = (1, 2, 4, 8, 16)


def kernel_names() -> list[str]:
    """Every kernel name a launcher here can request."""
    return ([f"xp_scan_{k}_{t}" for t in SCAN_TYPES for k in ("lb", "rows", "cols")]
            + [f"xp_count_{p}" for p in _PREDS] + [f"xp_nzidx_{p}" for p in _PREDS]
            + ["xp_count_u8_half", "xp_tile_offsets", "xp_repeat_idx"]
            + [f"xp_compact_{s}" for s in ITEM_SIZES] + [f"xp_rows_{s}" for s in ITEM_SIZES]
            + [f"xp_maskfill_{s}" for s in ITEM_SIZES])


# The instantiation macros of scan.cu and the kernel names each line makes from its first
# argument (None: the kernels written out, in every unit).
_MACRO_NAMES = {None: ("xp_tile_offsets", "xp_count_u8_half", "xp_repeat_idx"),
                "SCAN_INSTANCES": ("xp_scan_lb_{}", "xp_scan_rows_{}", "xp_scan_cols_{}"),
                "NZ_INSTANCES": ("xp_count_{}", "xp_nzidx_{}"),
                "COMPACT_INSTANCE": ("xp_compact_{}",),
                "MOVE_INSTANCES": ("xp_rows_{}", "xp_maskfill_{}")}


@functools.lru_cache(maxsize=None)
def units() -> dict:
    """kernel name -> the source the runtime compiles for it: one instantiation line of
    scan.cu (the whole file, 82 kernels, took 6 s on the H200 host for a first x[mask])."""
    return instance_units(source("scan.cu"), _MACRO_NAMES)


def _kernel(name):
    return load_kernel(units()[name], name)


# ---- planning ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScanPlan:
    """cumsum of x viewed as (outer, n, inner) C-contiguous into (outer, out_len, inner).

    kind: "empty" (nothing to write), "zeros" (n == 0 with include_initial), "lookback"
    (inner == 1, rows long enough to fill tiles), "rows" (inner == 1, short rows: G lanes per
    row), "columns" (inner >= 32: a thread per column, ``chunks`` splits of the axis when
    columns are too few to fill the GPU), "transpose" (inner < 32: the axis is made last by a
    copy, then ``inner_plan`` runs, then the result is copied back; a column thread per 1-31
    columns would idle most of its warp)."""
    kind: str
    outer: int
    n: int
    inner: int
    out_len: int
    shift: int
    tile: int = 0
    tiles_per_row: int = 0
    group: int = 0
    chunks: int = 1
    chunk: int = 0
    inner_plan: "ScanPlan | None" = None


def _vec(itemsize: int) -> int:
    return max(1, 16 // itemsize)


@functools.lru_cache(maxsize=1024)
def plan_scan(shape, axis: int, out_itemsize: int, include_initial: bool,
              sm_count: int = 132) -> ScanPlan:
    """The kernel and its geometry for a cumsum along ``axis`` (0 <= axis < len(shape))."""
    shape = tuple(int(d) for d in shape)
    outer = math.prod(shape[:axis])
    n = shape[axis]
    inner = math.prod(shape[axis + 1:])
    shift = 1 if include_initial else 0
    out_len = n + shift
    base = dict(outer=outer, n=n, inner=inner, out_len=out_len, shift=shift)
    if outer * out_len * inner == 0:
        return ScanPlan("empty", **base)
    if n == 0:
        return ScanPlan("zeros", **base)
    if inner == 1:
        tile = THREADS * CHUNKS * _vec(out_itemsize)
        if n * 2 >= tile:  # at least half a tile per row: the one-pass look-back scan
            return ScanPlan("lookback", tile=tile, tiles_per_row=-(-n // tile), **base)
        lanes = -(-n // ROW_V)
        group = min(32, 1 << max(0, lanes - 1).bit_length())
        return ScanPlan("rows", group=group, **base)
    if inner < 32 and outer * n * inner >= TRANSPOSE_MIN:
        inner_plan = plan_scan((outer * inner, n), 1, out_itemsize, include_initial, sm_count)
        return ScanPlan("transpose", inner_plan=inner_plan, **base)
    cols = outer * inner
    target = sm_count * 2048  # threads to keep every SM full
    chunks = 1
    if cols * 2 < target and n >= 256:
        # split the axis, but keep each chunk long enough that the extra pass over the chunk
        # totals stays small
        chunks = max(1, min(-(-target // cols), n // 128))
    chunk = -(-n // chunks)
    chunks = -(-n // chunk)
    return ScanPlan("columns", chunks=chunks, chunk=chunk, **base)


def scan_depth(plan: ScanPlan) -> int:
    """The most additions in sequence on the way to one output: the float error bound of the
    module docstring (d * u * sum|x|)."""
    if plan.kind == "transpose":
        return scan_depth(plan.inner_plan)
    if plan.kind == "lookback":
        v = plan.tile // (THREADS * CHUNKS)
        # inside the tile: the in-vector run, per chunk 5 warp levels and the carry adds, 3
        # block levels, the final adds; the look-back: a hop over s tiles adds a butterfly of
        # depth log2(s) (zeros add exactly) and two adds, at most 2 per tile of the row
        return v + 7 * CHUNKS + 8 + 2 * plan.tiles_per_row
    if plan.kind == "rows":
        return ROW_V + 6 * (-(-plan.n // (plan.group * ROW_V))) + 1
    if plan.kind == "columns":
        # the chunk's own run, and for later chunks the carry: a chunk total (chunk adds)
        # scanned over the chunks
        return plan.chunk if plan.chunks == 1 else 2 * plan.chunk + plan.chunks + 1
    return 0


def row_unit(row_bytes: int, *ptrs: int) -> int:
    """The widest word (16, 8, 4, 2 or 1 bytes) dividing a row and every pointer: whole rows
    move as words of that size."""
    for u in (16, 8, 4, 2, 1):
        if row_bytes % u == 0 and all(p % u == 0 for p in ptrs):
            return u
    return 1


def mask_tile(itemsize: int) -> tuple[int, str]:
    """Elements per compaction tile and the count kernel for x's item size: 16-byte items
    stage half as many per tile (32 KB of shared memory either way)."""
    if itemsize >= 16:
        return THREADS * COUNT_ITEMS // 2, "xp_count_u8_half"
    return THREADS * COUNT_ITEMS, "xp_count_u8"


# ---- cumsum --------------------------------------------------------------------------------
def _lookback(cp, plan, x, out, kernel, w_itemsize):
    tiles = plan.outer * plan.tiles_per_row
    # scratch: counter, flags, then aggregates and inclusive prefixes (16-byte aligned)
    flags_bytes = 4 * (tiles + 1)
    vals_off = -(-flags_bytes // 16) * 16
    vals_bytes = w_itemsize * tiles
    scratch = cp.empty(vals_off + 2 * vals_bytes, dtype=np.uint8)
    ptr = scratch.data.ptr
    stream = cp.cuda.get_current_stream()
    cp.cuda.runtime.memsetAsync(ptr, 0, flags_bytes, stream.ptr)
    in_item, out_item = x.itemsize, out.itemsize
    vec_in = x.data.ptr % 16 == 0 and (plan.outer == 1 or (plan.n * in_item) % 16 == 0)
    out_first = out.data.ptr + plan.shift * out_item
    vec_out = out_first % 16 == 0 and (plan.outer == 1 or (plan.out_len * out_item) % 16 == 0)
    _kernel(f"xp_scan_lb_{kernel}")(
        (tiles,), (THREADS,),
        (x, out, np.int64(plan.n), np.int64(plan.tiles_per_row), np.int64(plan.out_len),
         np.int32(plan.shift), np.uint64(ptr), np.uint64(ptr + 4),
         np.uint64(ptr + vals_off), np.uint64(ptr + vals_off + vals_bytes),
         np.int32(vec_in), np.int32(vec_out)))


def _rows(cp, plan, x, out, kernel):
    blocks = grid(cp, plan.outer * plan.group, THREADS, 8)
    _kernel(f"xp_scan_rows_{kernel}")(
        (blocks,), (THREADS,),
        (x, out, np.int64(plan.outer), np.int64(plan.n), np.int64(plan.out_len),
         np.int32(plan.shift), np.int32(plan.group)))


def _columns(cp, plan, x, out, kernel, w_name):
    cols = plan.outer * plan.inner
    sm = device_info(cp).sm_count
    # no more threads per block than columns (rounded to warps): with few columns the axis
    # chunks (grid.y) supply the parallelism, and idle threads would only hold slots
    threads = min(THREADS, -(-cols // 32) * 32)
    bx = max(1, min(-(-cols // threads), sm * 16))
    name = f"xp_scan_cols_{kernel}"
    geom = (np.int64(plan.outer), np.int64(plan.n), np.int64(plan.inner),
            np.int64(plan.out_len), np.int32(plan.shift), np.int64(plan.chunk))
    null = np.uint64(0)
    if plan.chunks == 1:
        _kernel(name)((bx, 1), (threads,), (x, out) + geom + (null, null, np.int32(0)))
        return
    w = np.dtype(w_name)
    sums = cp.empty((plan.chunks, cols), dtype=w)
    _kernel(name)((bx, plan.chunks), (threads,), (x, out) + geom + (sums, null, np.int32(1)))
    # the chunk totals, scanned in place along the chunks (a plain column scan of them)
    wk = _SHORT[w_name] + "_" + _SHORT[w_name]
    _kernel(f"xp_scan_cols_{wk}")(
        (bx, 1), (threads,),
        (sums, sums, np.int64(1), np.int64(plan.chunks), np.int64(cols),
         np.int64(plan.chunks), np.int32(0), np.int64(plan.chunks), null, null, np.int32(0)))
    _kernel(name)((bx, plan.chunks), (threads,), (x, out) + geom + (null, sums, np.int32(0)))


_I64 = np.dtype(np.int64)


def _empty(cp, shape, dtype):
    """A new C-contiguous array (the runtime's allocator: cp.empty costs ~3 us more)."""
    if not hasattr(cp, "ndarray"):  # a stand-in module (tests emulate scan.cu on the CPU)
        return cp.empty(shape, dtype=dtype)
    return empty_allocator(cp)(shape, np.dtype(dtype))


def _contig(cp, a):
    """a, or a C-contiguous copy of it by copy.cu (CuPy's copy kernel costs ~20 us of host
    time and its own compile on first use)."""
    if a.flags.c_contiguous:
        return a
    if not hasattr(cp, "ndarray"):  # a stand-in module (tests emulate scan.cu on the CPU)
        return cp.ascontiguousarray(a)
    from .copy import copy_into
    return copy_into(cp, empty_allocator(cp)(a.shape, a.dtype), a)


def _work_name(out_name: str) -> str:
    """The dtype scan.cu accumulates in for an out dtype (Work<A>)."""
    if out_name in ("int8", "uint8", "int16", "uint16", "int32"):
        return "uint32"
    if out_name == "int64":
        return "uint64"
    return out_name


def cumsum(cp, x, axis: int, out_dtype, include_initial: bool):
    """Inclusive prefix sum of x along axis (0 <= axis < x.ndim), accumulated in out_dtype (a
    NumPy dtype of CUMSUM_PAIRS with x's), each element converted to out_dtype before it is
    added. C-contiguous result of x.shape, or with the axis one longer and a leading 0 when
    include_initial.

    Layouts: a non-C-contiguous x is first copied C-contiguous (one extra pass; the kernels
    read rows and columns of a dense (outer, n, inner) view). An axis that is not last runs on
    the column kernel when 32 or more elements follow it in memory (inner >= 32), else the
    axis is made last by a copy and moved back by another (see ScanPlan). With
    include_initial the rows start one element late, so 1-D results store element by element
    rather than in 16-byte vectors."""
    out_dtype = np.dtype(out_dtype)
    route = cumsum_route(dtype_name(x.dtype), dtype_name(out_dtype))
    shape = list(x.shape)
    shape[axis] += 1 if include_initial else 0
    plan = plan_scan(tuple(x.shape), axis, out_dtype.itemsize, include_initial,
                     device_info(cp).sm_count)
    if plan.kind == "empty":
        return cp.empty(tuple(shape), dtype=out_dtype)
    if plan.kind == "zeros":
        return cp.zeros(tuple(shape), dtype=out_dtype)
    if route.precast is not None:
        x = x.astype(route.precast, order="C")
    if plan.kind == "transpose":
        # the axis made last by a copy, scanned as rows, and moved back by a second copy
        xt = _contig(cp, cp.moveaxis(x, axis, -1))
        rt = cumsum(cp, xt, x.ndim - 1, out_dtype, include_initial)
        return _contig(cp, cp.moveaxis(rt, -1, axis))
    x = _contig(cp, x)
    out = _empty(cp, tuple(shape), out_dtype)
    w_name = _work_name(dtype_name(out_dtype))
    if plan.kind == "lookback":
        _lookback(cp, plan, x, out, route.kernel, np.dtype(w_name).itemsize)
    elif plan.kind == "rows":
        _rows(cp, plan, x, out, route.kernel)
    else:
        _columns(cp, plan, x, out, route.kernel, w_name)
    return out


# ---- compaction ----------------------------------------------------------------------------
def _offsets(cp, flags_src, n: int, tile: int, count_kernel: str):
    """(offsets, total): each tile's exclusive offset and the number of selected elements of
    the C-contiguous flags_src (n elements). The one device-to-host read of a compaction."""
    tiles = -(-n // tile)
    counts = _empty(cp, (tiles + 1,), _I64)
    vec = np.int32(flags_src.data.ptr % 16 == 0)
    _kernel(count_kernel)((tiles,), (THREADS,), (flags_src, np.int64(n), counts, vec))
    _kernel("xp_tile_offsets")((1,), (1024,), (counts, np.int64(tiles)))
    return counts, int(counts[tiles].get())


def _coords(cp, src, pred: str, dims, counts, total):
    """(len(dims), total) int64: the coordinates, in a C-contiguous array of shape dims, of the
    nonzero elements of src (its C-contiguous data); len(dims) <= MAX_NZ_DIMS."""
    out = _empty(cp, (len(dims), total), _I64)
    if total:
        n = math.prod(dims)
        d8 = tuple(np.int64(d) for d in dims) + (np.int64(1),) * (MAX_NZ_DIMS - len(dims))
        _kernel(f"xp_nzidx_{pred}")(
            (-(-n // (THREADS * COUNT_ITEMS)),), (THREADS,),
            (src, np.int64(n), counts, out, np.int64(total), np.int32(len(dims)),
             np.int32(src.data.ptr % 16 == 0)) + d8)
    return out


def nonzero(cp, x):
    """The indices of x's nonzero elements (x.ndim >= 1, any dtype and strides), one int64
    array per dimension, in C order of x's elements. One device-to-host read (the count)."""
    ndim = x.ndim
    if x.size == 0:
        return tuple(cp.empty(0, dtype=np.int64) for _ in range(ndim))
    xc = _contig(cp, x)
    pred = _PRED[dtype_name(x.dtype)]
    counts, total = _offsets(cp, xc, x.size, THREADS * COUNT_ITEMS, f"xp_count_{pred}")
    if ndim <= MAX_NZ_DIMS:
        out = _coords(cp, xc, pred, x.shape, counts, total)
        return tuple(out[d] for d in range(ndim))
    lin = _coords(cp, xc, pred, (x.size,), counts, total)[0]
    return tuple(_contig(cp, a) for a in cp.unravel_index(lin, x.shape))


def _mask_flat(cp, mask):
    return _contig(cp, mask).reshape(-1)


def _selected_rows(cp, m):
    """(linear indices of the set elements of the flat C-contiguous bool m, their number)."""
    counts, total = _offsets(cp, m, m.size, THREADS * COUNT_ITEMS, "xp_count_u8")
    return _coords(cp, m, "u8", (m.size,), counts, total)[0], total


def mask_select(cp, x, mask):
    """x[mask]: mask a bool array of shape x.shape[:mask.ndim] (any strides for both); the
    result (count,) + x.shape[mask.ndim:], C-contiguous, elements in C order."""
    inner_shape = tuple(x.shape[mask.ndim:])
    inner = math.prod(inner_shape)
    if mask.size == 0:
        return cp.empty((0,) + inner_shape, dtype=x.dtype)
    m = _mask_flat(cp, mask)
    xc = _contig(cp, x)
    if inner == 1:
        tile, count_kernel = mask_tile(x.itemsize)
        counts, total = _offsets(cp, m, m.size, tile, count_kernel)
        out = _empty(cp, (total,) + inner_shape, x.dtype)
        if total:
            _kernel(f"xp_compact_{x.itemsize}")(
                (-(-m.size // tile),), (THREADS,),
                (m, xc, np.int64(m.size), counts, out, np.int32(m.data.ptr % 16 == 0)))
        return out
    # rows of the trailing block: positions of the set mask elements, then whole rows copied
    idx, total = _selected_rows(cp, m)
    out = _empty(cp, (total,) + inner_shape, x.dtype)
    if total and inner:
        _move_rows(cp, xc, out, idx, total, inner * x.itemsize, scatter=False)
    return out


def _move_rows(cp, src, dst, idx, count, row_bytes, scatter):
    u = row_unit(row_bytes, src.data.ptr, dst.data.ptr)
    units = row_bytes // u
    blocks = grid(cp, count * units, THREADS, 16)
    _kernel(f"xp_rows_{u}")((blocks,), (THREADS,),
                            (src, dst, idx, np.int64(count), np.int64(units), np.int32(scatter)))


def mask_assign(cp, x, mask, value):
    """x[mask] = value, in place. mask as for mask_select; value a 0-d CuPy array or NumPy
    scalar of x's dtype (written to every selected element), or a CuPy array of shape
    (count,) + x.shape[mask.ndim:] of x's dtype (row k to the k-th selected position).
    A non-C-contiguous x is written through CuPy's own indexing (no kernel of ours)."""
    if mask.size == 0 or x.size == 0:
        return x
    if not x.flags.c_contiguous:
        x[mask] = value
        return x
    inner = math.prod(x.shape[mask.ndim:])
    m = _mask_flat(cp, mask)
    item = x.itemsize
    if isinstance(value, np.generic) or value.ndim == 0:
        if isinstance(value, np.generic):
            bits = np.asarray(value, dtype=x.dtype).tobytes().ljust(16, b"\0")
            vp, lo, hi = np.uint64(0), bits[:8], bits[8:]
        else:  # read on the device: no host sync
            vp, lo, hi = value, b"", b""
        _kernel(f"xp_maskfill_{item}")(
            (grid(cp, x.size, THREADS, 16),), (THREADS,),
            (m, x, np.int64(x.size), np.int64(inner), vp,
             np.uint64(int.from_bytes(lo, "little")), np.uint64(int.from_bytes(hi, "little"))))
        return x
    idx, total = _selected_rows(cp, m)
    if total:
        v = _contig(cp, value)
        _move_rows(cp, v, x, idx, total, inner * item, scatter=True)
    return x


# ---- repeat --------------------------------------------------------------------------------
def repeat_indices(cp, counts, total: int):
    """int64 (total,): each i of range(counts.size) repeated counts[i] times, in order.
    counts 1-D int64 >= 0 with sum == total (the caller computed it)."""
    out = cp.empty(total, dtype=np.int64)
    if total == 0:
        return out
    cum = cumsum(cp, counts, 0, np.int64, False)
    _kernel("xp_repeat_idx")((grid(cp, total, THREADS, 16),), (THREADS,),
                             (cum, np.int64(counts.size), out, np.int64(total)))
    return out
