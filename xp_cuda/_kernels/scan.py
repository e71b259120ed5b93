"""Launchers of scan.cu: prefix sums and products (cumulative_sum, cumulative_prod) and stream
compaction (nonzero, x[mask], x[mask] = v, the gather indices of repeat with counts).

Every launcher takes CuPy arrays the caller validated, runs on the current device and stream,
and returns CuPy arrays. The planning half (``CUMSUM_PAIRS``, ``cumsum_route``, ``plan_scan``,
``row_unit``) is pure Python, tested without a GPU; ``kernel_names()`` lists every kernel a
launcher can request (CI compiles scan.cu with NVRTC and checks each is in the PTX). Each
geometry is planned once and its launches recorded (the runtime's recorded programs); later
calls look the program up, allocate their outputs and replay it.

Float sums: accumulated in the out dtype, in a different order than NumPy's sequential loop,
so results differ from np.cumsum by rounding. The look-back scan adds at most
``scan_depth(plan)`` terms in sequence on the way to any output (thread-local run + warp and
block trees + one add per preceding tile; the strip scan: one add per step of the rows above,
the lanes above, the lane's own run), so |ours - exact| <= scan_depth * u * sum(|x_i|) to
first order, u the unit roundoff of the out dtype; NumPy's bound is the same with n for
scan_depth, which is never smaller. Integer sums are exact modulo 2**bits, as NumPy's.

Products (cumprod) run the same kernels with the combine Mul, the same routes (float32 works in
float64, fusion_plan.WIDER_PRODUCT, as prod does), and the same bound with relative errors:
each output is a product of its prefix's factors rounded at most scan_depth times in sequence.
Integer products are exact modulo 2**bits, as NumPy's.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .eager import astype as _astype
from .fusion_plan import WIDER_PRODUCT
from ._runtime import (c_contiguous, device_info, dtype_name, empty_allocator, grid,
                       instance_units, late, launch, load_kernel, memset, note_program, program,
                       read, replay, scratch, source)

__all__ = ["THREADS", "CHUNKS", "CHUNKS_8", "lookback_vectors", "ROW_V", "COUNT_ITEMS",
           "CUMSUM_PAIRS", "CUMPROD_PAIRS", "Route", "cumsum_route", "kernel_names", "ScanPlan",
           "plan_scan", "segmented_strips", "strip_rows", "scan_depth", "row_unit", "mask_tile",
           "cumsum", "cumprod", "cumulative", "nonzero", "mask_select", "mask_assign",
           "repeat_indices", "allocator", "dense"]

THREADS = 256      # THREADS in scan.cu
CHUNKS = 12        # CH: 16-byte vectors per thread in a look-back tile (scan.cu: CH_OF) ...
CHUNKS_8 = 8       # ... and for 8-byte values (fewer registers: three blocks an SM, not two)
ROW_V = 4          # RV: elements per lane per step of the short-row scan
# Axes with fewer than 32 elements after them are moved last (two copies) only for arrays this
# large: a small array's copies cost more host time (cumulative_sum(axis=0) of a (2, 4) array
# took 71 us, torch 9) than its column scan's idle lanes cost the GPU.
TRANSPOSE_MIN = 1 << 16
STRIP_COLS = 32    # columns a strip block takes (a warp's lanes; scan.cu, strip_scan)
STRIP_LANES = THREADS // 32  # its row lanes (warps)
STRIP_SEGMENT = 512  # the fewest rows of an axis segment of the strip scan
STRIP_BLOCKS = 2   # blocks an SM the segments aim at (segmented_strips)
STRIP_SEGMENT_STEPS = 25  # what segments cost, in steps of one segment (segmented_strips)
COUNT_ITEMS = 16   # IT_COUNT: elements per thread in a compaction tile
MAX_NZ_DIMS = 8    # coordinates nonzero writes directly (more: linear indices, unravelled)
# tiles a counting block takes (scan.cu, the K of NZ_INSTANCES and xp_count_u8_half): about 64
# bytes of loads in flight a thread
COUNT_TILES = {"xp_count_u8": 4, "xp_count_u16": 2, "xp_count_u8_half": 8}


def lookback_vectors(out_itemsize: int) -> int:
    """The 16-byte vectors a thread holds in a look-back tile of ``out_itemsize``-byte
    values (scan.cu's CH_OF)."""
    return CHUNKS_8 if out_itemsize == 8 else CHUNKS


# ---- the dtype table -----------------------------------------------------------------------
_KIND = {"bool": "bool", "int8": "int", "int16": "int", "int32": "int", "int64": "int",
         "uint8": "uint", "uint16": "uint", "uint32": "uint", "uint64": "uint",
         "float32": "float", "float64": "float", "complex64": "complex",
         "complex128": "complex"}
# cumulative_sum's out dtype for an input: the default (int64/uint64 for ints and bool, the
# input's own for floats and complex) or an explicit dtype, x cast to it first (any real kind
# from a real x; complex only from complex: xp_cuda._statistical._DTYPE_ARG_KINDS; bool as the
# integers, for revisions that take it).
_OUT_KINDS = {"bool": ("int", "uint", "float", "complex"),
              "int": ("int", "uint", "float", "complex"),
              "uint": ("int", "uint", "float", "complex"),
              "float": ("int", "uint", "float", "complex"), "complex": ("complex",)}
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
# cumulative_prod: the numeric pairs (bool is not numeric), on the same routes as the sums
CUMPROD_PAIRS = tuple((i, o) for i, o in CUMSUM_PAIRS if i != "bool")
PROD_TYPES = SAME_TYPE + tuple(t for t in FUSED if not t.startswith("b_"))
# scan.cu's kernel families: the combine's name prefix, and the value include_initial leads
# with (an empty axis with include_initial is all of it)
FAMILIES = {"sum": ("xp_scan", 0), "prod": ("xp_scanprod", 1)}


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


_SCAN_KERNELS = ("lb", "rows", "cols", "strip")


def kernel_names() -> list[str]:
    """Every kernel name a launcher here can request."""
    return ([f"xp_scan_{k}_{t}" for t in SCAN_TYPES for k in _SCAN_KERNELS]
            + [f"xp_scanprod_{k}_{t}" for t in PROD_TYPES for k in _SCAN_KERNELS]
            + [f"xp_count_{p}" for p in _PREDS]
            + ["xp_count_u8_half", "xp_tile_offsets", "xp_nzidx", "xp_repeat_idx"]
            + [f"xp_compact_{s}" for s in ITEM_SIZES] + [f"xp_rows_{s}" for s in ITEM_SIZES]
            + [f"xp_maskfill_{s}" for s in ITEM_SIZES])


# The instantiation macros of scan.cu and the kernel names each line makes from its first
# argument (None: the kernels written out, in every unit).
_MACRO_NAMES = {None: ("xp_tile_offsets", "xp_count_u8_half", "xp_repeat_idx"),
                "SCAN_INSTANCES": tuple(f"xp_scan_{k}_{{}}" for k in _SCAN_KERNELS),
                "PROD_INSTANCES": tuple(f"xp_scanprod_{k}_{{}}" for k in _SCAN_KERNELS),
                "NZ_INSTANCES": ("xp_count_{}",),
                "NZIDX_INSTANCE": ("xp_{}",),
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
    row), "columns" (inner >= 32, columns enough to fill the GPU with a thread each, walking
    the axis), "strips" (inner >= 32, fewer columns: a block per 32 columns, its warps
    stepping down the axis together; ``chunks`` segments of ``chunk`` rows where even the
    strips are too few for the SMs; ``vectors`` rows a lane takes a step, StripRows of
    scan.cu), "transpose" (inner < 32: the axis is made last by a copy, then ``inner_plan``
    runs, then the result is copied back; a column thread per 1-31 columns would idle most of
    its warp)."""
    kind: str
    outer: int
    n: int
    inner: int
    out_len: int
    shift: int
    tile: int = 0
    tiles_per_row: int = 0
    vectors: int = 0  # lookback: 16-byte vectors a thread holds; strips: rows a lane a step
    group: int = 0
    chunks: int = 1
    chunk: int = 0
    inner_plan: "ScanPlan | None" = None


def segmented_strips(strips: int, steps: float, sm_count: int) -> bool:
    """Whether the strip scan splits its axis into segments (blockIdx.y). One segment runs
    ``steps`` steps in sequence; a strip block at that pace moves about an SM's share of
    DRAM bandwidth (H200: 0.7-0.9 us a step of 32 KB), so with fewer strips than SMs the
    single pass is latency-bound. Segments fill the SMs but read x twice and add two launches
    and a second chain (about STRIP_SEGMENT_STEPS steps): they pay where the steps they save
    outweigh that, which needs strips below half the SMs. H200, float32, one segment against
    the best split, us: (32768, 1024) 228 / 126, (65536, 512) 410 / 127, (4096, 1024) 36 / 32,
    (4096, 4096) 56 / 75, (8192, 2048) 75 / 77."""
    return strips * 2 < sm_count and steps * (1 - 2 * strips / sm_count) > STRIP_SEGMENT_STEPS


def strip_rows(itemsize: int) -> int:
    """Rows a lane of the strip scan takes a step for a working value of ``itemsize`` bytes
    (scan.cu's StripRows: 64 bytes of them)."""
    return 16 if itemsize <= 4 else (8 if itemsize == 8 else 4)


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
        ch = lookback_vectors(out_itemsize)
        tile = THREADS * ch * _vec(out_itemsize)
        if n * 2 >= tile:  # at least half a tile per row: the one-pass look-back scan
            return ScanPlan("lookback", tile=tile, tiles_per_row=-(-n // tile), vectors=ch,
                            **base)
        lanes = -(-n // ROW_V)
        group = min(32, 1 << max(0, lanes - 1).bit_length())
        return ScanPlan("rows", group=group, **base)
    if inner < 32 and outer * n * inner >= TRANSPOSE_MIN:
        inner_plan = plan_scan((outer * inner, n), 1, out_itemsize, include_initial, sm_count)
        return ScanPlan("transpose", inner_plan=inner_plan, **base)
    cols = outer * inner
    u = strip_rows(out_itemsize)
    # a thread a column where that is half the threads every SM holds, or where the axis fits
    # one lane of a strip (its other warps would idle)
    if cols * 2 >= sm_count * 2048 or n <= u:
        return ScanPlan("columns", **base)
    strips = -(-cols // STRIP_COLS)
    chunks = 1
    if segmented_strips(strips, n / (STRIP_LANES * u), sm_count) and n >= 2 * STRIP_SEGMENT:
        chunks = min(-(-sm_count * STRIP_BLOCKS // strips), n // STRIP_SEGMENT)
    chunk = -(-n // chunks)
    chunks = -(-n // chunk)
    return ScanPlan("strips", chunks=chunks, chunk=chunk, vectors=u, **base)


def scan_depth(plan: ScanPlan) -> int:
    """The most additions in sequence on the way to one output: the float error bound of the
    module docstring (d * u * sum|x|)."""
    if plan.kind == "transpose":
        return scan_depth(plan.inner_plan)  # type: ignore[arg-type]  # (set where inner)
    if plan.kind == "lookback":
        ch = plan.vectors
        v = plan.tile // (THREADS * ch)
        # inside the tile: the in-vector run, per chunk 5 warp levels and the carry adds, 3
        # block levels, the final adds; the look-back: a hop over s tiles adds a butterfly of
        # depth log2(s) (zeros add exactly) and two adds, at most 2 per tile of the row
        return v + 7 * ch + 8 + 2 * plan.tiles_per_row
    if plan.kind == "rows":
        return ROW_V + 6 * (-(-plan.n // (plan.group * ROW_V))) + 1
    if plan.kind == "columns":
        return plan.n
    if plan.kind == "strips":
        u = plan.vectors

        def strip(rows):  # the run (one combine a step), the lanes above, the lane's own run
            return -(-rows // (STRIP_LANES * u)) + STRIP_LANES + u
        if plan.chunks == 1:
            return strip(plan.n)
        # a later segment starts from the scanned totals: a segment's total, scanned over
        # the segments
        return 2 * strip(plan.chunk) + strip(plan.chunks) + 1
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


# ---- launching -----------------------------------------------------------------------------
# Every launcher runs through a recorded Program (_runtime): the first call of a geometry
# (shapes, strides, dtypes, address residues modulo 16, device) plans with stand-in addresses
# and records its launches; each call then looks the Program up once, allocates its outputs
# and replays it with its own addresses. Planning (routes, plans, grids, device queries, dtype
# names) runs only while recording. Temporaries (a C-contiguous copy of a strided input, the
# look-back flags, the tile counts) are pieces of the Program's one scratch allocation.

def allocator(cp):
    """alloc(shape, dtype): the runtime's allocator (cp.empty costs ~3 us more), or the
    stand-in module's empty (tests emulate scan.cu on the CPU)."""
    if not hasattr(cp, "ndarray"):
        return lambda shape, dtype: cp.empty(shape, dtype=dtype)
    return empty_allocator(cp)


def dense(cp, shape, strides, itemsize: int, ptr: int) -> int:
    """Inside a recording: the address of the C-contiguous elements of the array at ``ptr``
    (itself when it is C-contiguous, else a copy by copy.cu into scratch; CuPy's copy kernel
    costs ~20 us of host time and its own compile on first use)."""
    shape, strides = tuple(shape), tuple(strides)
    if c_contiguous(shape, strides, itemsize):
        return ptr
    from .copy import plan_copy, run_copy
    cstr, acc = [], itemsize
    for n in reversed(shape):
        cstr.append(acc)
        acc *= n
    d = scratch(cp, acc)
    run_copy(cp, plan_copy(shape, tuple(reversed(cstr)), strides, itemsize, d % 16, ptr % 16),
             d, ptr)
    return d


_NULL = np.uint64(0)  # a null pointer parameter (a constant: never patched)

# ---- cumsum --------------------------------------------------------------------------------
def _lookback(cp, plan, xp, op, kernel, in_item, out_item, w_itemsize, fam):
    tiles = plan.outer * plan.tiles_per_row
    # scratch: the tile counter, 16 bytes on the flags (a 4-byte working value travels with its
    # flag in one 8-byte word: scan.cu, publish), then aggregates and inclusive prefixes
    flags_bytes = 16 + (8 if w_itemsize == 4 else 4) * tiles
    vals_off = -(-flags_bytes // 16) * 16
    vals_bytes = 0 if w_itemsize == 4 else w_itemsize * tiles
    ptr = scratch(cp, vals_off + 2 * vals_bytes)
    memset(cp, ptr, 0, flags_bytes)
    vec_in = xp % 16 == 0 and (plan.outer == 1 or (plan.n * in_item) % 16 == 0)
    out_first = op + plan.shift * out_item
    vec_out = out_first % 16 == 0 and (plan.outer == 1 or (plan.out_len * out_item) % 16 == 0)
    launch(cp, _kernel(f"{fam}_lb_{kernel}"), tiles, THREADS,
           (xp, op, np.int64(plan.n), np.int64(plan.tiles_per_row), np.int64(plan.out_len),
            np.int32(plan.shift), ptr, ptr + 16, ptr + vals_off, ptr + vals_off + vals_bytes,
            np.int32(vec_in), np.int32(vec_out)))


def _rows(cp, plan, xp, op, kernel, fam):
    blocks = grid(cp, plan.outer * plan.group, THREADS, 8)
    launch(cp, _kernel(f"{fam}_rows_{kernel}"), blocks, THREADS,
           (xp, op, np.int64(plan.outer), np.int64(plan.n), np.int64(plan.out_len),
            np.int32(plan.shift), np.int32(plan.group)))


def _columns(cp, plan, xp, op, kernel, fam):
    cols = plan.outer * plan.inner
    bx = max(1, min(-(-cols // THREADS), device_info(cp).sm_count * 16))
    launch(cp, _kernel(f"{fam}_cols_{kernel}"), bx, THREADS,
           (xp, op, np.int64(plan.outer), np.int64(plan.n), np.int64(plan.inner),
            np.int64(plan.out_len), np.int32(plan.shift)))


def _strips(cp, plan, xp, op, kernel, w_name, fam):
    cols = plan.outer * plan.inner
    strips = -(-cols // STRIP_COLS)
    kern = _kernel(f"{fam}_strip_{kernel}")
    geom = (np.int64(plan.outer), np.int64(plan.n), np.int64(plan.inner),
            np.int64(plan.out_len), np.int32(plan.shift), np.int64(plan.chunk))
    if plan.chunks == 1:
        launch(cp, kern, (strips, 1), THREADS, (xp, op) + geom + (_NULL, _NULL, np.int32(0)))
        return
    sums = scratch(cp, plan.chunks * cols * np.dtype(w_name).itemsize)
    launch(cp, kern, (strips, plan.chunks), THREADS,
           (xp, op) + geom + (sums, _NULL, np.int32(1)))
    # the segment totals, scanned in place along the segments (one segment of them)
    wk = _SHORT[w_name] + "_" + _SHORT[w_name]
    launch(cp, _kernel(f"{fam}_strip_{wk}"), (strips, 1), THREADS,
           (sums, sums, np.int64(1), np.int64(plan.chunks), np.int64(cols),
            np.int64(plan.chunks), np.int32(0), np.int64(plan.chunks), _NULL, _NULL,
            np.int32(0)))
    launch(cp, kern, (strips, plan.chunks), THREADS,
           (xp, op) + geom + (_NULL, sums, np.int32(0)))


_I64 = np.dtype(np.int64)


def _work_name(out_name: str, fam: str = "xp_scan") -> str:
    """The dtype scan.cu accumulates in for an out dtype (Work<A>; a product's float32 works
    in float64: the W of scan.cu's PROD_INSTANCES lines)."""
    if out_name in ("int8", "uint8", "int16", "uint16", "int32"):
        return "uint32"
    if out_name == "int64":
        return "uint64"
    if fam == "xp_scanprod":
        return WIDER_PRODUCT.get(out_name, out_name)
    return out_name


def _scan(cp, plan, route_kernel, xp, op, in_item, out_dtype, fam):
    """The launches of a lookback / rows / columns plan of dense (outer, n, inner) data."""
    w_name = _work_name(dtype_name(out_dtype), fam)
    if plan.kind == "lookback":
        _lookback(cp, plan, xp, op, route_kernel, in_item, out_dtype.itemsize,
                  np.dtype(w_name).itemsize, fam)
    elif plan.kind == "rows":
        _rows(cp, plan, xp, op, route_kernel, fam)
    elif plan.kind == "columns":
        _columns(cp, plan, xp, op, route_kernel, fam)
    else:
        _strips(cp, plan, xp, op, route_kernel, w_name, fam)


def _plan_cumsum(cp, shape, strides, dtype, axis, out_dtype, include_initial, xp, op,
                 fam="xp_scan"):
    """Records a cumsum; returns (what the call does, the out shape, the out dtype, the precast
    dtype): the call does "empty" (cp.empty), "zeros" (cp.zeros), "precast" (astype, then the
    Program of the cast array) or "launch" (allocates out and replays)."""
    route = cumsum_route(dtype_name(dtype), dtype_name(out_dtype))
    oshape = list(shape)
    oshape[axis] += 1 if include_initial else 0
    oshape = tuple(oshape)
    plan = plan_scan(tuple(shape), axis, out_dtype.itemsize, include_initial,
                     device_info(cp).sm_count)
    if plan.kind in ("empty", "zeros"):
        return plan.kind, oshape, out_dtype, None
    if route.precast is not None:
        return "precast", oshape, out_dtype, route.precast
    in_item, out_item = dtype.itemsize, out_dtype.itemsize
    src = dense(cp, shape, strides, in_item, xp)
    if plan.kind != "transpose":
        _scan(cp, plan, route.kernel, src, op, in_item, out_dtype, fam)
        return "launch", oshape, out_dtype, None
    # the axis made last by a copy, scanned as rows, and moved back by a second copy
    from .copy import plan_copy, run_copy
    o, n, i, m = plan.outer, plan.n, plan.inner, plan.out_len
    xt = scratch(cp, o * n * i * in_item)
    run_copy(cp, plan_copy((o, i, n), (i * n * in_item, n * in_item, in_item),
                           (n * i * in_item, in_item, i * in_item), in_item, xt % 16, src % 16),
             xt, src)
    rt = scratch(cp, o * i * m * out_item)
    _scan(cp, plan.inner_plan, route.kernel, xt, rt, in_item, out_dtype, fam)
    run_copy(cp, plan_copy((o, m, i), (m * i * out_item, i * out_item, out_item),
                           (i * m * out_item, out_item, m * out_item), out_item, op % 16,
                           rt % 16), op, rt)
    return "launch", oshape, out_dtype, None


def cumsum(cp, x, axis: int, out_dtype, include_initial: bool):
    """Inclusive prefix sum of x along axis (0 <= axis < x.ndim), accumulated in out_dtype (a
    NumPy dtype of CUMSUM_PAIRS with x's), each element converted to out_dtype before it is
    added. C-contiguous result of x.shape, or with the axis one longer and a leading 0 when
    include_initial.

    Layouts: a non-C-contiguous x is first copied C-contiguous (one extra pass; the kernels
    read rows and columns of a dense (outer, n, inner) view). An axis that is not last runs on
    the column or strip kernel when 32 or more elements follow it in memory (inner >= 32),
    else the axis is made last by a copy and moved back by another (see ScanPlan). With
    include_initial the rows start one element late, so 1-D results store element by element
    rather than in 16-byte vectors."""
    return cumulative(cp, "sum", x, axis, out_dtype, include_initial)


def cumprod(cp, x, axis: int, out_dtype, include_initial: bool):
    """Inclusive prefix product of x along axis (0 <= axis < x.ndim), as cumsum does it (x's
    dtype and out_dtype a pair of CUMPROD_PAIRS, each element converted to out_dtype first;
    the same layouts), with a leading 1 when include_initial. float32 products work in
    float64 and round once per output. Complex products are NumPy's (ac - bd, ad + bc), each
    operation rounded on its own; no element is ever multiplied by an identity, so special
    values come out as successive multiplies give them."""
    return cumulative(cp, "prod", x, axis, out_dtype, include_initial)


def cumulative(cp, combine, x, axis, out_dtype, include_initial):
    """cumsum (combine "sum") or cumprod ("prod"): the recorded program of x's geometry."""
    ptr = x.data.ptr
    shape, strides, dtype = x.shape, x.strides, x.dtype
    fam, lead = FAMILIES[combine]
    prog = program(cp, ("cum" + combine, shape, strides, dtype, out_dtype, axis,
                        include_initial),
                   (0, ptr & 15), lambda op, xp: _plan_cumsum(
                       cp, shape, strides, dtype, axis, np.dtype(out_dtype), include_initial,
                       xp, op, fam))
    what, oshape, odt, precast = prog.info
    if what == "launch":
        out = allocator(cp)(oshape, odt)
        slots = (out.data.ptr, ptr)  # (result, input): a caller may keep it (note_program)
        replay(cp, prog, slots)
        note_program(prog, slots)
        return out
    if what == "empty":
        return cp.empty(oshape, dtype=odt)
    if what == "zeros":  # the axis is empty: include_initial's leading value alone
        return cp.zeros(oshape, dtype=odt) if lead == 0 else cp.ones(oshape, dtype=odt)
    return cumulative(cp, combine, _precast(cp, x, precast), axis, out_dtype, include_initial)


def _precast(cp, x, name: str):
    """x cast to dtype `name`, C-contiguous, by the fused generator's astype (CuPy's astype
    would flush float32 subnormals: CuPy compiles its kernels with -ftz=true)."""
    return _astype(cp, x, name, cp.cuda.runtime.getDevice())


# ---- compaction ----------------------------------------------------------------------------
_zero_words: dict = {}  # (id(cp), device) -> (cp, a zeroed device array)


def _zero_word(cp) -> int:
    """The address of a zeroed int64 on the current device, kept for the process: the tile
    offsets of a one-tile compaction (its only offset is 0)."""
    key = (id(cp), cp.cuda.runtime.getDevice())
    z = _zero_words.get(key)
    if z is None or z[0] is not cp:
        word = cp.zeros(2, dtype=np.int64)
        # zeroed before any stream reads it (replays may run on other streams)
        cp.cuda.runtime.streamSynchronize(cp.cuda.get_current_stream().ptr)
        z = _zero_words[key] = (cp, word)
    return z[1].data.ptr


def _offsets(cp, src: int, n: int, tile: int, count_kernel: str):
    """Inside a recording: (offsets address, total, flags address): each tile's exclusive
    offset and the number of selected elements of the C-contiguous elements at ``src`` (n of
    them), and each thread's 16-bit word of flags (what pass 2 reads in their place); the total
    is read back (the phase ends: the one sync of a compaction) and is a late slot. One tile:
    its count is the total and its offset 0, so the offsets pass is skipped."""
    tiles = -(-n // tile)
    counts = scratch(cp, 8 * (tiles + 1))
    flags = scratch(cp, 2 * THREADS * tiles)
    launch(cp, _kernel(count_kernel), -(-tiles // COUNT_TILES.get(count_kernel, 1)), THREADS,
           (src, np.int64(n), counts, flags, np.int32(src % 16 == 0)))
    if tiles == 1:
        return _zero_word(cp), read(cp, counts), flags
    launch(cp, _kernel("xp_tile_offsets"), 1, 1024, (counts, np.int64(tiles)))
    return counts, read(cp, counts + 8 * tiles), flags


def _coords(cp, flags: int, dims, offsets: int, total: int, out: int):
    """Inside a recording: the launch writing the (len(dims), total) int64 coordinates, in a
    C-contiguous array of shape dims, of the elements pass 1 flagged at ``flags``;
    len(dims) <= 8."""
    n = math.prod(dims)
    d8 = tuple(np.int64(d) for d in dims) + (np.int64(1),) * (MAX_NZ_DIMS - len(dims))
    launch(cp, _kernel("xp_nzidx"), -(-n // (THREADS * COUNT_ITEMS)), THREADS,
           (flags, offsets, out, total, np.int32(len(dims)), np.int32(n < 2**32)) + d8)


def _plan_nonzero(cp, shape, strides, dtype, xp):
    """Records nonzero: phase 0 counts (the total read back), phase 1 (late slots: the total,
    the output) writes the coordinates. Returns the output's rows, or None when x is empty."""
    n = math.prod(shape)
    if n == 0:
        return None
    src = dense(cp, shape, strides, dtype.itemsize, xp)
    pred = _PRED[dtype_name(dtype)]
    offsets, total, flags = _offsets(cp, src, n, THREADS * COUNT_ITEMS, f"xp_count_{pred}")
    dims = tuple(shape) if len(shape) <= MAX_NZ_DIMS else (n,)
    _coords(cp, flags, dims, offsets, total, late(cp))
    return len(dims)


def nonzero(cp, x):
    """The indices of x's nonzero elements (x.ndim >= 1, any dtype and strides), one int64
    array per dimension, in C order of x's elements. One device-to-host read (the count)."""
    ptr = x.data.ptr
    shape, strides, dtype = x.shape, x.strides, x.dtype
    prog = program(cp, ("nonzero", shape, strides, dtype), (ptr & 15,),
                   lambda xp: _plan_nonzero(cp, shape, strides, dtype, xp))
    rows = prog.info
    if rows is None:
        return tuple(cp.empty(0, dtype=np.int64) for _ in shape)
    total, slots, mem = replay(cp, prog, (ptr,))
    out = allocator(cp)((rows, total), _I64)
    if total:
        replay(cp, prog, slots + (total, out.data.ptr), 1)
    if rows == len(shape):
        return tuple(out[d] for d in range(rows))
    return tuple(cp.ascontiguousarray(a) for a in cp.unravel_index(out[0], shape))


def _plan_mask_select(cp, xshape, xstrides, dtype, mshape, mstrides, xp, mp):
    """Records x[mask]: phase 0 counts the mask (the total read back); phase 1 moves the
    selected elements (late slots: the total, the output) or, for rows of several elements,
    writes their indices and copies the rows (late slots: the total, the indices, the output).
    Returns None (empty mask), "elements", "rows" or "count" (rows of no element)."""
    msize = math.prod(mshape)
    if msize == 0:
        return None
    inner = math.prod(xshape[len(mshape):])
    S = dtype.itemsize
    m = dense(cp, mshape, mstrides, 1, mp)
    xc = dense(cp, xshape, xstrides, S, xp)
    if inner == 1:
        tile, count_kernel = mask_tile(S)
        offsets, total, flags = _offsets(cp, m, msize, tile, count_kernel)
        out = late(cp)
        launch(cp, _kernel(f"xp_compact_{S}"), -(-msize // tile), THREADS,
               (flags, xc, np.int64(msize), offsets, out, np.int32(xc % 16 == 0)))
        return "elements"
    offsets, total, flags = _offsets(cp, m, msize, THREADS * COUNT_ITEMS, "xp_count_u8")
    if inner == 0:
        return "count"
    idx, out = late(cp), late(cp)
    _coords(cp, flags, (msize,), offsets, total, idx)
    _move_rows(cp, xc, out, idx, total, msize, inner * S, False)
    return "rows"


def mask_select(cp, x, mask):
    """x[mask]: mask a bool array of shape x.shape[:mask.ndim] (any strides for both); the
    result (count,) + x.shape[mask.ndim:], C-contiguous, elements in C order."""
    xp_, mp = x.data.ptr, mask.data.ptr
    xshape, mshape = x.shape, mask.shape
    prog = program(cp, ("mask_select", xshape, x.strides, x.dtype, mshape, mask.strides),
                   (xp_ & 15, mp & 15), lambda a, b: _plan_mask_select(
                       cp, xshape, x.strides, x.dtype, mshape, mask.strides, a, b))
    what = prog.info
    inner_shape = xshape[len(mshape):]
    if what is None:
        return cp.empty((0,) + inner_shape, dtype=x.dtype)
    total, slots, mem = replay(cp, prog, (xp_, mp))
    alloc = allocator(cp)
    out = alloc((total,) + inner_shape, x.dtype)
    if total and what == "elements":
        replay(cp, prog, slots + (total, out.data.ptr), 1)
    elif total and what == "rows":
        idx = alloc((total,), _I64)
        replay(cp, prog, slots + (total, idx.data.ptr, out.data.ptr), 1)
    return out


def _move_rows(cp, src, dst, idx, count, max_count, row_bytes, scatter):
    """Rows of ``row_bytes`` between src and dst through the ``count`` indices at ``idx``; the
    grid is sized for ``max_count`` rows (count may be a per-call slot), the kernel strides."""
    u = row_unit(row_bytes, src, dst)
    units = row_bytes // u
    blocks = grid(cp, max_count * units, THREADS, 16)
    launch(cp, _kernel(f"xp_rows_{u}"), blocks, THREADS,
           (src, dst, idx, count, np.int64(units), np.int32(scatter)))


def _plan_mask_fill(cp, mshape, mstrides, size, inner, item, xp, mp, vp, lo, hi):
    m = dense(cp, mshape, mstrides, 1, mp)
    launch(cp, _kernel(f"xp_maskfill_{item}"), grid(cp, size, THREADS, 16), THREADS,
           (m, xp, np.int64(size), np.int64(inner), vp, lo, hi))


def _plan_mask_scatter(cp, mshape, mstrides, inner, item, xp, mp, vp):
    msize = math.prod(mshape)
    m = dense(cp, mshape, mstrides, 1, mp)
    offsets, total, flags = _offsets(cp, m, msize, THREADS * COUNT_ITEMS, "xp_count_u8")
    idx = late(cp)
    _coords(cp, flags, (msize,), offsets, total, idx)
    _move_rows(cp, vp, xp, idx, total, msize, inner * item, True)


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
    item, size = x.itemsize, x.size
    mshape, mstrides = mask.shape, mask.strides
    xp_, mp = x.data.ptr, mask.data.ptr
    if isinstance(value, np.generic) or value.ndim == 0:
        if isinstance(value, np.generic):
            bits = np.asarray(value, dtype=x.dtype).tobytes().ljust(16, b"\0")
            vp, lo, hi = 0, int.from_bytes(bits[:8], "little"), int.from_bytes(bits[8:],
                                                                               "little")
        else:  # read on the device: no host sync
            vp, lo, hi = value.data.ptr, 0, 0
        # the value's address and bits are per-call slots (residue 0: never planned on)
        prog = program(cp, ("mask_fill", size, inner, item, mshape, mstrides),
                       (xp_ & 15, mp & 15, 0, 0, 0),
                       lambda a, b, c, d, e: _plan_mask_fill(cp, mshape, mstrides, size, inner,
                                                             item, a, b, c, d, e))
        replay(cp, prog, (xp_, mp, vp, lo, hi))
        return x
    v = value if value.flags.c_contiguous else cp.ascontiguousarray(value)
    vp = v.data.ptr
    prog = program(cp, ("mask_scatter", inner, item, mshape, mstrides),
                   (xp_ & 15, mp & 15, vp & 15),
                   lambda a, b, c: _plan_mask_scatter(cp, mshape, mstrides, inner, item, a, b,
                                                      c))
    total, slots, mem = replay(cp, prog, (xp_, mp, vp))
    if total:
        idx = allocator(cp)((total,), _I64)
        replay(cp, prog, slots + (total, idx.data.ptr), 1)
    return x


# ---- repeat --------------------------------------------------------------------------------
def repeat_indices(cp, counts, total: int):
    """int64 (total,): each i of range(counts.size) repeated counts[i] times, in order.
    counts 1-D int64 >= 0 with sum == total (the caller computed it)."""
    out = cp.empty(total, dtype=np.int64)
    if total == 0:
        return out
    cum = cumsum(cp, counts, 0, _I64, False)
    launch(cp, _kernel("xp_repeat_idx"), grid(cp, total, THREADS, 16), THREADS,
           (cum.data.ptr, np.int64(counts.size), out.data.ptr, np.int64(total)))
    return out
