"""Launchers of sort.cu on the current CuPy device and stream: the segmented (last-axis) stable
sort/argsort (a warp per short row, a block per row up to L_MAX, several blocks per longer row),
histogram set functions of small integers, the set functions of 32/64-bit dtypes (sorted_unique:
hash tables when a long input holds few distinct values, hash_unique; else a sort and a pass
over its runs), searchsorted, and isin (membership in a sorted array, searched in one pass).

The caller validates everything; nothing here checks user input. The pure-Python part (key
modes, ``plan_segsort``, ``smem_bytes``, ``osort_smem``, ``osort_passes``, ``hist16_chunks``,
``kernel_names``, ``plan_unique``, the NumPy model of the key transform ``to_key``) is tested
without a GPU.
"""
from __future__ import annotations

from typing import Any

import functools
import math
from dataclasses import dataclass

import numpy as np

from ._runtime import (device_info, grid, instance_units, launch, load_kernel, memset,
                       note_program, program, read, read_now, replay, scratch, source)
from .scan import allocator, dense

_I64 = np.dtype(np.int64)
_U8 = np.dtype(np.uint8)
_NULL = np.uint64(0)  # a null pointer parameter (a constant: never patched)

__all__ = ["WARP_ITEMS", "WARP_ROWS", "SEGSORT_CONFIGS", "L_MAX", "OSORT_TILE", "OSORT_N_MAX",
           "SMALL_UNIQUE_DTYPES", "key_mode", "to_key", "plan_segsort", "smem_bytes", "osort_smem",
           "osort_passes", "osort_hist_blocks", "hist16_chunks", "kernel_names", "segmented_sort",
           "small_unique", "searchsorted", "SORTED_UNIQUE_DTYPES", "UNIQUE_TILE", "UniquePlan",
           "plan_unique", "keep_whole", "sorted_unique", "isin", "HQ_SLOTS", "HQ_MAX",
           "HashUniquePlan", "plan_hash_unique", "hash_unique"]

# (warps, items per thread) of the block sort tiers in sort.cu (SEGSORT_ALL), smallest first;
# a row goes to the smallest tier holding it. Capacity 32 * warps * items.
# Rows of at most 32 * IW elements (IW in WARP_ITEMS) go to xp_warpsort (a warp per row, ranks
# by counting, WARP_ROWS rows a block), longer ones to the radix tiers.
WARP_ITEMS = (1, 2)
WARP_ROWS = 8
SEGSORT_CONFIGS = ((1, 4), (4, 4), (8, 4), (8, 8), (16, 8), (32, 8), (32, 16))
L_MAX = max(32 * w * i for w, i in SEGSORT_CONFIGS)  # 16384: longer rows: xp_osort (or None)
KEY_WIDTHS = (1, 2, 4, 8)
_HIST_STRIDE = 257       # sort.cu: HS, one padded 256-counter histogram per warp
_SMEM_OPTIN = 232448     # sm_90's per-block opt-in shared memory; the device's value is used
_DEFAULT_SMEM = 49152    # above this a kernel must opt in (cuFuncSetAttribute)

_HIST16_SMEM = 32768 * 4  # xp_unique_hist16: half of the 65536 bins as 32-bit counters
_INV16_SMEM = 65536 * 2   # xp_unique_inverse16: the rank table as u16
_SEARCH_STAGE_BYTES = 16384  # searchsorted, isin: sorted arrays up to this size searched in
                              # shared memory, longer ones through a sample of this size
                              # (search_stage; kept small so several blocks per SM still fit)

MODE_UNSIGNED, MODE_SIGNED, MODE_FLOAT = 0, 1, 2
SMALL_UNIQUE_DTYPES = ("bool", "int8", "uint8", "int16", "uint16")
SORTED_UNIQUE_DTYPES = ("int32", "uint32", "int64", "uint64", "float32", "float64")
UNIQUE_WIDTHS = (4, 8)
UNIQUE_TILE = 2048  # sort.cu: UQ_TILE (8 warps x 8 rows of 32) elements per look-back tile
_UQ_THREADS = 256  # sort.cu: 32 * UQ_WARPS
_UQ_ROWS = UNIQUE_TILE // 32  # the fewest rows (of 32) a warp of the two-pass runs walks
WARP_GROUP_ROWS = 8  # sort.cu: UQ_ITEMS, the rows a warp of the two-pass runs loads at once
# the two-pass runs: warps a SM, each walking its share of the rows. H200, 16M float32, runs
# pass: 8 a SM 129 us, 16 79, 24 66, 32 76, 48 68 (the scan of their pairs 3.4 -> 8.8 us)
UQ_WARPS_PER_SM = 24


def key_mode(dtype) -> int:
    """sort.cu's MODE_* for a NumPy dtype: bool/unsigned, signed, or floating."""
    kind = np.dtype(dtype).kind
    if kind in "bu":
        return MODE_UNSIGNED
    if kind == "i":
        return MODE_SIGNED
    if kind == "f" and np.dtype(dtype).itemsize in (4, 8):  # sort.cu knows binary32/64 only
        return MODE_FLOAT
    raise TypeError(f"sort keys are bool, integers or floats, not {np.dtype(dtype)}")


def to_key(a: np.ndarray) -> np.ndarray:
    """NumPy model of sort.cu's to_key: the order-preserving unsigned key of each element
    (NaN the largest, -0.0 the key of +0.0). Used by tests to pin the device transform down."""
    a = np.asarray(a)
    ut = np.dtype(f"u{a.dtype.itemsize}")
    bits = np.ascontiguousarray(a).view(ut).copy()
    sign = ut.type(1 << (8 * a.dtype.itemsize - 1))
    mode = key_mode(a.dtype)
    if mode == MODE_SIGNED:
        return bits ^ sign
    if mode == MODE_FLOAT:
        key = np.where(bits & sign, ~bits, bits | sign).astype(ut)
        key[a == 0] = sign
        key[np.isnan(a)] = ~ut.type(0)
        return key
    return bits


def smem_bytes(warps: int, items: int, width: int, carry_index: bool) -> int:
    """Dynamic shared memory of one block sort (sort.cu's segsort layout)."""
    cap = 32 * warps * items
    return cap * width + 32 + 32 * 4 + warps * _HIST_STRIDE * 4 + (cap * 2 if carry_index else 0)


def plan_segsort(n: int, width: int, mode: int, want_indices: bool,
                 smem_limit: int = _SMEM_OPTIN):
    """(kernel name, threads, dynamic shared bytes, rows per block) of the tier sorting rows
    of length n (1 <= n), or None when no tier holds a row (n > L_MAX) within smem_limit.
    Float rows may need the index array (values of NaN and -0.0 are gathered by index), so it
    is sized in."""
    for iw in WARP_ITEMS:
        if n <= 32 * iw:
            return f"xp_warpsort_{width}_{iw}", 32 * WARP_ROWS, 0, WARP_ROWS
    carry = bool(want_indices) or mode == MODE_FLOAT
    for warps, items in SEGSORT_CONFIGS:
        if 32 * warps * items >= n:
            smem = smem_bytes(warps, items, width, carry)
            if smem > smem_limit:
                return None
            return f"xp_segsort_{width}_{warps}x{items}", 32 * warps, smem, 1
    return None


def hist16_chunks(n: int, sm_count: int) -> int:
    """Chunks of the 16-bit histogram (two blocks each, one per half of the bins): enough to
    fill the SMs (one 128 KiB block each), but about 2**18 elements or more per block, since
    every block adds up to 32768 bins to the global histogram at its end."""
    return max(1, min(sm_count // 2, n >> 18))


def kernel_names() -> list[str]:
    """Every kernel name a launcher here can request."""
    return ([f"xp_segsort_{w}_{a}x{b}" for w in KEY_WIDTHS for a, b in SEGSORT_CONFIGS]
            + [f"xp_warpsort_{w}_{i}" for w in KEY_WIDTHS for i in WARP_ITEMS]
            + [f"xp_osort_{k}_{w}" for k in ("hist", "pass", "gather") for w in KEY_WIDTHS]
            + [f"xp_unique_{k}{b}" for k in ("hist", "scan", "inverse") for b in (8, 16)]
            + ["xp_unique_hist_bool"]
            + [f"xp_sortuniq_{k}_{w}" for k in ("keys", "wtiles", "runs", "wruns", "wvals")
               for w in UNIQUE_WIDTHS] + ["xp_sortuniq_scan"]
            + [f"xp_hashuniq_{k}_{w}" for k in ("count", "finish", "inverse")
               for w in UNIQUE_WIDTHS]
            + [f"xp_searchsorted_{w}" for w in KEY_WIDTHS]
            + [f"xp_isin_{w}" for w in KEY_WIDTHS])


@functools.lru_cache(maxsize=None)
def units() -> dict:
    """kernel name -> the source the runtime compiles for it: one instantiation line of sort.cu
    (the whole file takes 10 s to compile; a first sort waits for its one tier's kernel)."""
    macros = {None: [n for n in kernel_names()
                     if n.startswith(("xp_unique", "xp_sortuniq_scan"))],
              "SEGSORT": ["xp_segsort_{0}_{2}x{3}"],
              "WARPSORT": ["xp_warpsort_{0}_{2}"],
              "OSORT": [f"xp_osort_{k}_{{0}}" for k in ("hist", "pass", "gather")],
              "SEARCHSORTED": ["xp_searchsorted_{0}"],
              "ISIN": ["xp_isin_{0}"],
              "SORTUNIQ": ["xp_sortuniq_keys_{0}", "xp_sortuniq_wtiles_{0}",
                           "xp_sortuniq_runs_{0}", "xp_sortuniq_wruns_{0}",
                           "xp_sortuniq_wvals_{0}"],
              "HASHUNIQ": [f"xp_hashuniq_{k}_{{0}}" for k in ("count", "finish", "inverse")]}
    return instance_units(source("sort.cu"), macros)


def _kernel(name):
    return load_kernel(units()[name], name)


_optin: dict = {}  # device id -> max opt-in shared memory per block
_raised: set = set()  # (device, kernel ptr) already allowed its dynamic shared memory


def _smem_limit(cp) -> int:
    dev = cp.cuda.runtime.getDevice()
    lim = _optin.get(dev)
    if lim is None:
        attrs = cp.cuda.Device(dev).attributes
        lim = _optin[dev] = int(attrs.get("MaxSharedMemoryPerBlockOptin", _DEFAULT_SMEM))
    return lim


def _allow_smem(cp, kern, smem: int):
    """Opt the kernel in to dynamic shared memory above 48 KiB: the device's whole opt-in
    limit, once per kernel, so every launch that fits the device fits the kernel."""
    if smem <= _DEFAULT_SMEM:
        return
    key = (cp.cuda.runtime.getDevice(), kern.ptr)
    if key in _raised:
        return
    from cupy.cuda import driver
    driver.funcSetAttribute(kern.ptr, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            _smem_limit(cp))
    _raised.add(key)


def _segsort(cp, plan, xp, vp, ip, nrows: int, n: int, mode: int) -> None:
    """The launch of a plan_segsort tier over nrows rows of n at xp (vp / ip: the values and
    indices outputs, 0 for none)."""
    name, threads, smem, rows_per_block = plan
    kern = _kernel(name)
    _allow_smem(cp, kern, smem)
    # rows loop inside the kernels for the rest
    blocks = min(-(-nrows // rows_per_block), device_info(cp).sm_count * 64)
    launch(cp, kern, blocks, threads,
           (xp, vp, ip, np.int64(nrows), np.int32(n), np.int32(mode), np.int32(vp != 0),
            np.int32(ip != 0)), smem)


def _plan_segmented(cp, shape, dtype, want_values, want_indices, xp, vp, ip):
    """Records a segmented sort; returns "empty", "sorted" (replayed), "long" (the multi-block
    sort, run per call: it reads the key range back) or None (no path here)."""
    n = shape[-1] if shape else 1
    size = math.prod(shape)
    if size == 0:
        return "empty"
    nrows = size // n
    mode = key_mode(dtype)
    width = dtype.itemsize
    plan = plan_segsort(n, width, mode, want_indices, _smem_limit(cp))
    if plan is None:
        # many long rows: the onesweep sort. One long row (a 1-D sort): CuPy's (CUB's) sort,
        # the caller's fallback, is faster (H200, 16M float32: 0.54 ms against 0.85-0.94;
        # these kernels' passes issue about twice CUB's instructions)
        if nrows > 1 and n < OSORT_N_MAX and _smem_limit(cp) >= osort_smem(width):
            return "long"
        return None
    _segsort(cp, plan, xp, vp if want_values else 0, ip if want_indices else 0, nrows, n, mode)
    return "sorted"


def segmented_sort(cp, x, want_values: bool, want_indices: bool):
    """Stable ascending sort of each row (last axis) of the C-contiguous CuPy array x (bool,
    integer or float dtype; NaNs last in their order, -0.0 == +0.0 in stable order).

    Returns (values or None, int64 indices or None), both of x's shape. Rows of at most 64
    elements: a warp each; up to L_MAX: a block each, in shared memory; longer: the onesweep
    radix sort (xp_osort_*, no host sync). None when no path here serves the rows best: a
    single row longer than L_MAX (a 1-D sort; CuPy's is faster there), n >= OSORT_N_MAX, or a
    device without the shared memory: the caller falls back. Float values are bit-exact, NaN
    payloads and zero signs included (rows holding NaN or -0.0 gather them by index). Up to
    L_MAX, a recorded program per geometry."""
    shape, dtype, xp = x.shape, x.dtype, x.data.ptr
    prog = program(cp, ("segsort", shape, dtype, want_values, want_indices), (xp & 15, 0, 0),
                   lambda a, b, c: _plan_segmented(cp, shape, dtype, want_values, want_indices,
                                                   a, b, c))
    what = prog.info
    if what is None:
        return None
    alloc = allocator(cp)
    values: Any = alloc(shape, dtype) if want_values else None
    indices: Any = alloc(shape, _I64) if want_indices else None
    if what == "sorted":
        replay(cp, prog, (xp, values.data.ptr if want_values else 0,
                          indices.data.ptr if want_indices else 0))
    elif what == "long":
        n = shape[-1]
        _long_sort(cp, x, values, indices, x.size // n, n, key_mode(dtype), dtype.itemsize)
    return values, indices


# sort.cu: LT, the tile of the long-row radix sort (16 warps x 8 items; LWARPS and LITEMS
# there may be set with -D for a sweep: H200, 16M float32 in one row, ms, (warps, items)
# (16, 8) 0.859, (32, 8) 0.855, (16, 16) 0.957, (8, 16) 0.987, (16, 12) 1.030, (8, 24) 1.284;
# CuPy's (CUB's) sort of the same row 0.516: the tile is not what keeps it at half CUB's rate)
OSORT_TILE = 4096
OSORT_N_MAX = 2**30  # sort.cu: rows below this (its status words count in 30 bits)
_OS_WANT_VALUES, _OS_WANT_INDICES = 1, 2  # sort.cu: OS_WANT_VALUES, OS_WANT_INDICES
_OS_THREADS = 32 * 16  # sort.cu: 32 * LWARPS


def osort_smem(width: int) -> int:
    """Dynamic shared memory of xp_osort_pass: the tile's keys and int32 positions, the
    16 x 257 warp histograms, 32 scan words, 257 digit starts in the tile, 256 offsets into
    the row and the tile's number."""
    return OSORT_TILE * (width + 4) + 16 * _HIST_STRIDE * 4 + 32 * 4 + 257 * 4 + 256 * 4 + 4


def osort_passes(top: int, width: int) -> list[int]:
    """The shifts of the radix passes that run (sort.cu's xp_osort_pass decides it on the
    device; the others exit at once) when ``top`` is the number of low bits in which some row's
    smallest and largest keys differ: the bytes holding them (a row's keys agree above that
    bit), at least one (the last pass writes the output)."""
    return [shift for shift in range(0, 8 * width, 8) if shift < top] or [0]


def osort_hist_blocks(n: int, nrows: int, sm_count: int) -> int:
    """Blocks a row of the upfront count: about four a SM over all rows, a tile each at least."""
    return max(1, min(-(-n // OSORT_TILE), -(-4 * sm_count // nrows)))


def _long_sort(cp, x, values, indices, nrows: int, n: int, mode: int, width: int):
    """Rows longer than L_MAX: sort.cu's onesweep radix sort (xp_osort_*), into the allocated
    values / indices (either may be None). No host sync: a pass per key byte is launched, and
    the upfront count's summary tells each on the device whether it runs and where it writes."""
    ut = np.dtype(f"u{width}")
    alloc = allocator(cp)
    stream = cp.cuda.get_current_stream().ptr
    total = nrows * n
    ntiles = -(-n // OSORT_TILE)
    hist_bytes = nrows * width * 256 * 4
    status_bytes = width * nrows * (ntiles * 256 + 1) * 4  # every pass's words, then counters
    work = alloc((hist_bytes + nrows * 24 + 16 + status_bytes,), _U8)
    hp = work.data.ptr
    statp = hp + hist_bytes
    sump = statp + nrows * 24
    sp = sump + 16
    ctrp = sp + width * nrows * ntiles * 256 * 4
    cp.cuda.runtime.memsetAsync(hp, 0, work.nbytes, stream)
    chunks = [(r0, min(65535, nrows - r0)) for r0 in range(0, nrows, 65535)]  # grid y limit
    per_row = osort_hist_blocks(n, nrows, device_info(cp).sm_count)
    chunk = -(-n // per_row)
    for r0, rows in chunks:
        _kernel(f"xp_osort_hist_{width}")(
            (per_row, rows), (_OS_THREADS,),
            (x, np.uint64(hp), np.uint64(statp), np.uint64(sump), np.int64(r0), np.int64(nrows),
             np.int32(n), np.int32(chunk), np.int32(mode), np.uint32(per_row * nrows)))
    # positions travel for indices, and for float values (rows holding NaN or -0.0 gather)
    gatherable = values is not None and mode == MODE_FLOAT
    carry = indices is not None or gatherable
    nbuf = min(2, width - 1)  # a 1-byte key is sorted by its one pass
    null = np.uint64(0)
    keys = [alloc((total,), ut) for _ in range(nbuf)] + [null] * (2 - nbuf)
    pos = ([alloc((total,), np.dtype(np.int32)) for _ in range(nbuf)] if carry else []) + \
        [null] * (2 - (nbuf if carry else 0))
    iout = indices if indices is not None else (alloc((total,), _I64) if gatherable else null)
    want = (_OS_WANT_VALUES if values is not None else 0) | \
        (_OS_WANT_INDICES if indices is not None else 0)
    smem = osort_smem(width)
    pk = _kernel(f"xp_osort_pass_{width}")
    _allow_smem(cp, pk, smem)
    vout = values if values is not None else null
    for p in range(width):
        for r0, rows in chunks:
            pk((ntiles, rows), (_OS_THREADS,),
               (x, keys[0], keys[1], pos[0], pos[1], vout, iout, np.uint64(hp), np.uint64(sump),
                np.uint64(sp), np.uint64(ctrp), np.int64(r0), np.int64(nrows), np.int32(n),
                np.int32(ntiles), np.int32(p), np.int32(mode), np.int32(want)),
               shared_mem=smem)
    if gatherable:  # exits at once where no row holds NaN or -0.0
        _kernel(f"xp_osort_gather_{width}")(
            (grid(cp, total, 256, 8),), (256,),
            (x, iout, values, np.uint64(sump), np.int64(total), np.int32(n)))


def _plan_small_unique(cp, shape, strides, dt, want_counts, want_inverse, want_indices, xp,
                       vp, cp_, fp, ip):
    """Records small_unique into the outputs at vp (values), cp_ (counts), fp (first indices),
    ip (inverse): histogram, scan, inverse, the count read. Returns the number of bins, or
    None when x is empty."""
    n = math.prod(shape)
    if n == 0:
        return None
    width = dt.itemsize
    nb = 1 << (8 * width)
    flip = (1 << (8 * width - 1)) if dt.kind == "i" else 0
    flat = dense(cp, shape, strides, width, xp)
    bits = 8 * width
    hist = scratch(cp, 2 * nb * 8)  # counts, then first indices
    memset(cp, hist, 0, nb * 8)
    first = hist + nb * 8
    if want_indices:
        memset(cp, first, 0xFF, nb * 8)
    per_vec = 16 // width
    head = min(n, ((-flat) % 16) // width)
    nvec = (n - head) // per_vec
    hargs = (flat, np.int64(n), np.int64(head), np.uint32(flip), hist, first,
             np.int32(bool(want_indices)))
    if dt.kind == "b":
        launch(cp, _kernel("xp_unique_hist_bool"), grid(cp, max(nvec, 1), 256, 8), 256, hargs)
    elif bits == 8:
        launch(cp, _kernel("xp_unique_hist8"), grid(cp, max(nvec, 1), 256, 4), 256, hargs)
    else:
        kern = _kernel("xp_unique_hist16")
        _allow_smem(cp, kern, _HIST16_SMEM)
        launch(cp, kern, 2 * hist16_chunks(n, device_info(cp).sm_count), 1024, hargs,
               _HIST16_SMEM)
    rank = scratch(cp, 4 * (nb + 2))  # the last 8 bytes: the number of unique values
    nuniq = rank + 4 * nb
    launch(cp, _kernel(f"xp_unique_scan{bits}"), 1, 1024,
           (hist, first, np.int32(nb), np.uint32(flip), vp, cp_ if want_counts else _NULL,
            fp if want_indices else _NULL, rank, nuniq))
    if want_inverse:
        iargs = (flat, np.int64(n), np.uint32(flip), rank, ip)
        if bits == 8:
            launch(cp, _kernel("xp_unique_inverse8"), grid(cp, n, 256, 16), 256, iargs)
        else:
            kern = _kernel("xp_unique_inverse16")
            _allow_smem(cp, kern, _INV16_SMEM)
            launch(cp, kern, grid(cp, n, 4 * 1024, 1), 1024, iargs, _INV16_SMEM)
    read(cp, nuniq)  # the one device-to-host transfer
    return nb


def small_unique(cp, x, want_counts: bool, want_inverse: bool, want_indices: bool) -> dict:
    """The set functions of x (bool, int8, uint8, int16 or uint16; any shape and strides) by a
    histogram over all 256 / 65536 possible values.

    Returns {"values": sorted unique values (x's dtype, 1-D)} plus, when asked,
    "counts" (int64, 1-D), "indices" (int64, 1-D: the first occurrence in C order of x) and
    "inverse_indices" (int64, shape x.shape, C order: values[inverse] == x). Reads one number
    back to the host (how many unique values), nothing else. Non-contiguous x is copied to C
    order first. A recorded program per geometry."""
    dt, shape, xp = x.dtype, x.shape, x.data.ptr
    prog = program(cp, ("small_unique", shape, x.strides, dt, want_counts, want_inverse,
                        want_indices), (xp & 15, 0, 0, 0, 0),
                   lambda a, b, c, d, e: _plan_small_unique(
                       cp, shape, x.strides, dt, want_counts, want_inverse, want_indices, a, b,
                       c, d, e))
    nb = prog.info
    alloc = allocator(cp)
    out = {}
    if nb is None:
        out["values"] = alloc((0,), dt)
        if want_counts:
            out["counts"] = alloc((0,), _I64)
        if want_indices:
            out["indices"] = alloc((0,), _I64)
        if want_inverse:
            out["inverse_indices"] = alloc(shape, _I64)
        return out
    values = alloc((nb,), dt)
    counts: Any = alloc((nb,), _I64) if want_counts else None
    firsts: Any = alloc((nb,), _I64) if want_indices else None
    inverse: Any = alloc(shape, _I64) if want_inverse else None
    k, _, _ = replay(cp, prog, (xp, values.data.ptr, counts.data.ptr if want_counts else 0,
                                firsts.data.ptr if want_indices else 0,
                                inverse.data.ptr if want_inverse else 0))
    out["values"] = values[:k]
    if want_counts:
        out["counts"] = counts[:k]
    if want_indices:
        out["indices"] = firsts[:k]
    if want_inverse:
        out["inverse_indices"] = inverse
    return out

# ---- sort-based set functions of 32/64-bit dtypes --------------------------------------------

_UQ_HEAD = 20  # scratch: nuniq (8 bytes), ~first zero index (8), tile counter (4), then flags


@dataclass(frozen=True)
class UniquePlan:
    """How sorted_unique serves n elements.

    sort: "empty" (n == 0: nothing launched), "block" (n <= L_MAX: segmented_sort of the one
    row, stable and bit-exact, its raw values scanned), or "keys" (longer rows: the keys of
    xp_sortuniq_keys sorted by CuPy's Thrust/CUB radix sort, alone or with the permutation; on
    one long row it is as fast as torch's, faster than our multi-block sort).
    perm: the stable permutation is computed (first indices or the inverse were asked for).
    tiles: blocks of xp_sortuniq_runs (UNIQUE_TILE elements each). The scratch buffer holds
    the count read back, the first-zero word, the tile counter and the look-back flags (the
    first ``zero_bytes``, zeroed before any launch), then 16-byte pairs per tile at
    ``aggs_off`` and ``incls_off``; ``scratch_bytes`` in all. The block path looks back
    (its few tiles, a block each); the keys path fills one pair per warp (runs_warps: never
    more than the tiles) in two passes (xp_sortuniq_wtiles, then xp_sortuniq_scan), and its
    runs pass (xp_sortuniq_wruns) starts each warp from its pair."""
    sort: str
    perm: bool
    tiles: int
    zero_bytes: int
    aggs_off: int
    incls_off: int
    scratch_bytes: int


@functools.lru_cache(maxsize=256)  # ~3 us a call saved: a long unique's host time before its
# first launch is time its GPU waits
def plan_unique(n: int, dtype, want_index: bool, want_inverse: bool,
                smem_limit: int = _SMEM_OPTIN) -> UniquePlan:
    """The UniquePlan of sorted_unique for n elements of dtype (a SORTED_UNIQUE_DTYPES one).
    Counts need no permutation: run lengths come from the sorted values alone."""
    perm = bool(want_index or want_inverse)
    if n == 0:
        return UniquePlan("empty", perm, 0, 0, 0, 0, 0)
    dt = np.dtype(dtype)
    width = dt.itemsize
    assert width in UNIQUE_WIDTHS, dt
    block = n <= L_MAX and plan_segsort(n, width, key_mode(dt), perm, smem_limit) is not None
    tiles = -(-n // UNIQUE_TILE)
    zero_bytes = _UQ_HEAD + 4 * tiles
    aggs_off = -(-zero_bytes // 16) * 16
    incls_off = aggs_off + 16 * tiles
    return UniquePlan("block" if block else "keys", perm, tiles, zero_bytes, aggs_off,
                      incls_off, incls_off + 16 * tiles)


def runs_warps(n: int, sm_count: int) -> tuple[int, int]:
    """(warps, rows per warp) of the two-pass runs (xp_sortuniq_wtiles, xp_sortuniq_wruns)
    over n >= 1 elements: warp w walks rows [w * rpw, (w + 1) * rpw) of 32 elements, the last
    warp what is left. About UQ_WARPS_PER_SM warps a SM, each at least a tile's rows: never
    more warps than tiles, so their pairs fit the plan's tile pairs."""
    rows = -(-n // 32)
    rpw = max(_UQ_ROWS, -(-rows // (sm_count * UQ_WARPS_PER_SM)))
    rpw = -(-rpw // WARP_GROUP_ROWS) * WARP_GROUP_ROWS  # whole groups of rows
    return -(-rows // rpw), rpw


def keep_whole(k: int, n: int) -> bool:
    """Whether sorted_unique returns its k results as views of the n-element buffers the run
    kernel wrote (4k > n: they hold under 4x what is used) rather than copies of them (few
    unique values: a copy of under a quarter of the buffers frees most of their memory)."""
    return 4 * k > n


def _sort_pairs(cp, keys):
    """(the keys sorted, the int64 stable permutation) of the 1-D unsigned keys: one CUB radix
    sort of (key, index) pairs through CuPy's Thrust binding, which sorts its data argument in
    place, so the sorted keys come free (cp.argsort sorts a copy and drops it; getting the
    sorted keys back would cost a gather through the permutation, the fallback here)."""
    n = keys.size
    perm = cp.empty(n, dtype=np.int64)
    try:
        from cupy.cuda import thrust
        argsort = thrust.argsort
    except (ImportError, AttributeError):
        argsort = None
    if argsort is not None:
        try:
            argsort(keys.dtype, perm.data.ptr, keys.data.ptr, 0, (n,))
            return keys, perm
        except TypeError:  # another CuPy's signature: rejected before anything ran
            pass
    perm = cp.argsort(keys)  # stable (Thrust's stable_sort_by_key), int64
    return cp.take(keys, perm), perm


def _plan_sorted_unique(cp, shape, strides, dt, want_index, want_inverse, want_counts, fp, vp,
                        ip, cp_, invp):
    """Records the "block" path of sorted_unique (one row of n <= L_MAX sorted in a block,
    then the runs pass and the count read) into the outputs at vp, ip, cp_, invp; returns
    (plan.sort, n): "empty" and "keys" record nothing (the keys path sorts with CuPy's radix
    sort, which a program cannot hold)."""
    n = math.prod(shape)
    plan = plan_unique(n, dt, want_index, want_inverse, _smem_limit(cp) if n else _SMEM_OPTIN)
    if plan.sort != "block":
        return plan.sort, n
    width = dt.itemsize
    mode = key_mode(dt)
    src = dense(cp, shape, strides, width, fp)
    ptr = scratch(cp, plan.scratch_bytes)
    memset(cp, ptr, 0, plan.zero_bytes)
    s = scratch(cp, n * width)
    perm = scratch(cp, n * 8) if plan.perm else 0
    seg = plan_segsort(n, width, mode, plan.perm, _smem_limit(cp))
    assert seg is not None  # plan_unique checked the tier fits
    _segsort(cp, seg, src, s, perm, 1, n, mode)
    launch(cp, _kernel(f"xp_sortuniq_runs_{width}"), plan.tiles, _UQ_THREADS,
           (s, np.int32(0), perm if plan.perm else _NULL, src, ptr + 8, np.int64(n),
            np.int32(mode), vp, ip if want_index else _NULL, cp_ if want_counts else _NULL,
            invp if want_inverse else _NULL, ptr, ptr + 16, ptr + 20, ptr + plan.aggs_off,
            ptr + plan.incls_off))
    read(cp, ptr)  # the one device-to-host transfer
    return "block", n


def sorted_unique(cp, flat, want_values_only: bool, want_index: bool, want_inverse: bool,
                  want_counts: bool) -> dict:
    """The set functions of the 1-D C-contiguous CuPy array flat (a SORTED_UNIQUE_DTYPES
    dtype; other shapes are flattened in C order), from one stable sort and one pass over it.

    Returns {"values": the sorted unique values (flat's dtype)} plus, as asked, "indices"
    (int64: each value's first occurrence), "inverse_indices" (int64, flat's length:
    values[inverse] == flat up to the sign of zero and NaN identity), "counts" (int64).
    want_values_only excludes the other three (the values-only path: no permutation).
    Array API 2023.12 semantics (NumPy's np.unique with equal_nan=False): every NaN is its own
    value with count 1, after every number, in flat's order; -0.0 and +0.0 are one value,
    written with the bits of its first occurrence. With a permutation (index or inverse) every
    value is bit-exact flat[indices]; without one, n <= L_MAX is still exact (a stable block
    sort of the values), longer inputs write NaNs as the default quiet NaN and the zero with
    the sign of flat's first zero. Reads one number back to the host (how many unique values).
    Results of few unique values (keep_whole) are copied out of the n-element buffers.
    n <= L_MAX: a recorded program per geometry; longer inputs try hash_unique first (at most
    HQ_MAX distinct values and no NaN: no sort) unless the last long input held more values
    than that (_REFUSED)."""
    assert not (want_values_only and (want_index or want_inverse or want_counts))
    if flat.size > L_MAX:  # never the block path (plan_unique): no program to look up
        return _sorted_unique_direct(cp, flat, want_values_only, want_index, want_inverse,
                                     want_counts)
    shape, strides, dt, fp = flat.shape, flat.strides, flat.dtype, flat.data.ptr
    prog = program(cp, ("sorted_unique", shape, strides, dt, want_index, want_inverse,
                        want_counts), (fp & 15, 0, 0, 0, 0),
                   lambda a, b, c, d, e: _plan_sorted_unique(
                       cp, shape, strides, dt, want_index, want_inverse, want_counts, a, b, c,
                       d, e))
    sort, n = prog.info
    if sort != "block":
        return _sorted_unique_direct(cp, flat, want_values_only, want_index, want_inverse,
                                     want_counts)
    alloc = allocator(cp)
    values = alloc((n,), dt)
    indices: Any = alloc((n,), _I64) if want_index else None
    counts: Any = alloc((n,), _I64) if want_counts else None
    inverse: Any = alloc((n,), _I64) if want_inverse else None
    k, _, _ = replay(cp, prog, (fp, values.data.ptr, indices.data.ptr if want_index else 0,
                                counts.data.ptr if want_counts else 0,
                                inverse.data.ptr if want_inverse else 0))
    whole = keep_whole(k, n)
    out = {"values": values[:k] if whole else values[:k].copy()}
    if want_index:
        out["indices"] = indices[:k] if whole else indices[:k].copy()
    if want_inverse:
        out["inverse_indices"] = inverse
    if want_counts:
        out["counts"] = counts[:k] if whole else counts[:k].copy()
    return out


# ---- set functions of few distinct values: a hash table (sort.cu's xp_hashuniq_*) ------------

HQ_SLOTS = 4096   # sort.cu: slots of each table (shared per block, and the global one)
HQ_MAX = 2048     # sort.cu: the most distinct keys a table takes (half its slots); more: the
                  # sort (the integer dtypes' largest value is counted beside the table)
_HQ_THREADS = 512  # the counting kernel's block
# the fewest elements a counting block takes: enough that one block alone meets HQ_MAX + 1
# distinct keys and refuses. With a round's 2048 (one vector a thread) every block of an
# all-distinct input filled its table without refusing and merged it into the global one
# (H200, 1M distinct float32: 0.89 ms before any sort, torch's whole unique 0.11 ms).
HQ_MIN_CHUNK = 2 * HQ_MAX
# counting blocks a SM, by key width: as many as the shared tables let reside (48 KiB a block
# for 4-byte keys, 64 KiB for 8-byte: three fit, so two, in one wave); H200: 16M float32 of
# 1000 values 67 -> 56 us with 4 blocks, int64 71 -> 89 us with 4
_HQ_BLOCKS_PER_SM = {4: 4, 8: 2}


@dataclass(frozen=True)
class HashUniquePlan:
    """How hash_unique lays out one call: ``blocks`` counting blocks of ``chunk`` elements
    each (a multiple of the 16-byte vector), ``smem`` dynamic shared bytes a block (its table:
    keys, 32-bit counts, 32-bit first offsets; then 20 bytes of block state), and one scratch
    buffer of ``total`` bytes: the abort word and the claim count (8 bytes), the unique count
    read back (8), the global counts, {the largest integer key's count, its first index, the
    float zero's first index} (32), the first indices, the keys, then each slot's rank (for
    the inverse). Bytes [0, zero_bytes) start zeroed, [zero_bytes, ff_end) all ones.
    ``inverse_smem``: the inverse kernel's staged table (keys and ranks)."""
    blocks: int
    chunk: int
    smem: int
    counts_off: int
    max_off: int
    first_off: int
    keys_off: int
    rank_off: int
    zero_bytes: int
    ff_end: int
    total: int
    inverse_smem: int


def plan_hash_unique(n: int, width: int, sm_count: int) -> HashUniquePlan:
    """The HashUniquePlan of n (>= 1) elements of a 4- or 8-byte dtype on sm_count SMs."""
    assert n >= 1 and width in UNIQUE_WIDTHS
    per_vec = 16 // width
    blocks = max(1, min(sm_count * _HQ_BLOCKS_PER_SM[width], n // HQ_MIN_CHUNK),
                 -(-n // 2**31))  # chunk offsets are 32-bit
    chunk = -(-n // blocks)
    chunk = -(-chunk // per_vec) * per_vec
    blocks = -(-n // chunk)  # every block has elements
    assert chunk < 2**32
    counts_off = 16
    max_off = counts_off + 8 * HQ_SLOTS
    first_off = max_off + 32
    keys_off = first_off + 8 * HQ_SLOTS
    rank_off = keys_off + width * HQ_SLOTS
    return HashUniquePlan(blocks, chunk, HQ_SLOTS * (width + 8) + 20, counts_off, max_off,
                          first_off, keys_off, rank_off, max_off + 8, rank_off,
                          rank_off + 4 * HQ_SLOTS, HQ_SLOTS * (width + 4))


def _plan_hash_unique(cp, n, dt, want_index, want_inverse, want_counts, xp, vp, ip, cp_, invp):
    """Records hash_unique's steps into the outputs at vp (values), ip (indices), cp_
    (counts), invp (inverse): the table's initial state, the count, the finish, the inverse,
    and the read of the unique count (-1: refused)."""
    width = dt.itemsize
    mode = key_mode(dt)
    plan = plan_hash_unique(n, width, device_info(cp).sm_count)
    p = scratch(cp, plan.total)
    memset(cp, p, 0, plan.zero_bytes)
    memset(cp, p + plan.zero_bytes, 0xFF, plan.ff_end - plan.zero_bytes)
    keys, counts, first, top = (p + plan.keys_off, p + plan.counts_off, p + plan.first_off,
                                p + plan.max_off)
    kern = _kernel(f"xp_hashuniq_count_{width}")
    _allow_smem(cp, kern, plan.smem)
    launch(cp, kern, plan.blocks, _HQ_THREADS,
           (xp, np.int64(n), np.int64(plan.chunk), np.int32(mode), np.int32(xp % 16 == 0),
            np.int32(bool(want_index)), keys, counts, first, p, top), plan.smem)
    launch(cp, _kernel(f"xp_hashuniq_finish_{width}"), 1, HQ_MAX // 2,
           (xp, keys, counts, first, p, top, np.int32(mode), vp, ip if want_index else _NULL,
            cp_ if want_counts else _NULL, p + plan.rank_off, p + 8))
    if want_inverse:
        kern = _kernel(f"xp_hashuniq_inverse_{width}")
        _allow_smem(cp, kern, plan.inverse_smem)
        launch(cp, kern, grid(cp, n, _HQ_THREADS, 4), _HQ_THREADS,
               (xp, np.int64(n), np.int32(mode), keys, p + plan.rank_off, p + 8, invp),
               plan.inverse_smem)
    read(cp, p + 8)  # the one device-to-host transfer


def hash_unique(cp, flat, want_index: bool, want_inverse: bool, want_counts: bool):
    """sorted_unique's results for the 1-D C-contiguous flat (a SORTED_UNIQUE_DTYPES dtype,
    n >= 1) when it holds at most HQ_MAX distinct keys and no NaN, from hash tables (no sort);
    None otherwise (the caller sorts). The same results as the sort: values bit-exact (a
    float zero has its first occurrence's sign). Reads one number back (the unique count, -1
    for "sort instead"); a refusal costs the counting kernel's first rounds and that read.
    Few values are copied out of the HQ_MAX + 1 buffers (keep_whole). A recorded program per
    (length, dtype, parts asked)."""
    n, dt, x = flat.size, flat.dtype, flat.data.ptr
    prog = program(cp, ("hash_unique", n, dt, want_index, want_inverse, want_counts),
                   (x & 15, 0, 0, 0, 0),
                   lambda a, b, c, d, e: _plan_hash_unique(cp, n, dt, want_index, want_inverse,
                                                           want_counts, a, b, c, d, e))
    alloc = allocator(cp)
    values = alloc((HQ_MAX + 1,), dt)
    indices: Any = alloc((HQ_MAX + 1,), _I64) if want_index else None
    ucounts: Any = alloc((HQ_MAX + 1,), _I64) if want_counts else None
    inverse: Any = alloc((n,), _I64) if want_inverse else None
    k, _, mem = replay(cp, prog, (x, values.data.ptr, indices.data.ptr if want_index else 0,
                                  ucounts.data.ptr if want_counts else 0,
                                  inverse.data.ptr if want_inverse else 0))
    del mem  # the scratch goes back to the pool behind everything enqueued on it
    if k < 0:
        return None
    return _unique_parts(k, HQ_MAX + 1, values, indices, inverse, ucounts)


def _unique_parts(k: int, cap: int, values, indices, inverse, counts) -> dict:
    """The set functions' results from buffers of cap entries holding k: views, or copies of
    few values (keep_whole); None buffers were not asked for."""
    whole = keep_whole(k, cap)

    def part(a):
        return a[:k] if whole else a[:k].copy()

    out = {"values": part(values)}
    if indices is not None:
        out["indices"] = part(indices)
    if inverse is not None:
        out["inverse_indices"] = inverse
    if counts is not None:
        out["counts"] = part(counts)
    return out


# Whether the last long input held more distinct values than the table takes (HQ_MAX): then
# the next goes straight to the sort, without the table's try. A try that ends in a refusal
# costs the counting kernel's first rounds, its verdict's round trip to the host, and the key
# pass behind it (H200, 16M float32 of 16M values, events around each step: the count 32 us,
# the key pass 36 us only after the verdict, the sort's first launch after that). The sort's
# own count of values teaches the next call (k <= HQ_MAX: the table may serve it); results
# never depend on the guess, only the time: a long input of few values after one of many
# takes the sort once (16M float32 of 1000 values: about 0.7 ms where the table takes 0.15),
# one of many after few pays one refusal. The first long input of a process tries the table.
_REFUSED = [False]


def _addr(a) -> int:
    """A device buffer's address, 0 for an output not asked for (the kernels skip it)."""
    return 0 if a is None else a.data.ptr


def _sorted_unique_direct(cp, flat, want_values_only: bool, want_index: bool,
                          want_inverse: bool, want_counts: bool) -> dict:
    """sorted_unique planned and launched on each call: the empty input, and n > L_MAX (the
    "keys" path: CuPy's radix sort between our kernels)."""
    assert not (want_values_only and (want_index or want_inverse or want_counts))
    if flat.ndim != 1 or not flat._c_contiguous:
        flat = cp.ascontiguousarray(flat).reshape(-1)
    dt = flat.dtype
    n = flat.size
    plan = plan_unique(n, dt, want_index, want_inverse, _smem_limit(cp) if n else _SMEM_OPTIN)
    if plan.sort == "empty":
        out = {"values": cp.empty(0, dtype=dt)}
        for want, name in ((want_index, "indices"), (want_inverse, "inverse_indices"),
                           (want_counts, "counts")):
            if want:
                out[name] = cp.empty(0, dtype=np.int64)
        return out
    width = dt.itemsize
    mode = key_mode(dt)
    alloc = allocator(cp)  # ~1 us a buffer, where cp.empty takes ~3
    perm = None
    if plan.sort == "keys" and not _REFUSED[0]:  # few distinct values, guessed: no sort
        got = hash_unique(cp, flat, want_index, want_inverse, want_counts)
        if got is not None:
            return got
        _REFUSED[0] = True
    stream = cp.cuda.get_current_stream().ptr
    scratch = alloc((plan.scratch_bytes,), _U8)
    ptr = scratch.data.ptr
    cp.cuda.runtime.memsetAsync(ptr, 0, _UQ_HEAD, stream)  # the look-back flags go unused
    if plan.sort == "block":
        res = segmented_sort(cp, flat.reshape(1, n), True, plan.perm)
        assert res is not None  # plan_unique checked the tier fits
        s = res[0].reshape(-1)
        if plan.perm:
            perm = res[1].reshape(-1)
        s_is_key = 0
    else:  # the keys (and the first zero's index, at ptr + 8), sorted
        s = alloc((n,), np.dtype(f"u{width}"))
        launch(cp, _kernel(f"xp_sortuniq_keys_{width}"),
               grid(cp, max(1, n // (16 // width)), 256, 8), 256,
               (flat.data.ptr, s.data.ptr, n, np.int32(mode),
                np.int32(flat.data.ptr % 16 == 0), ptr + 8))
        if plan.perm:
            s, perm = _sort_pairs(cp, s)
        else:
            s.sort()  # in place: CUB's radix sort of unsigned keys
        s_is_key = 1
    values = alloc((n,), dt)
    indices: Any = alloc((n,), _I64) if want_index else None
    counts: Any = alloc((n,), _I64) if want_counts else None
    inverse: Any = alloc((n,), _I64) if want_inverse else None
    aggs, incls = ptr + plan.aggs_off, ptr + plan.incls_off
    # the warps' prefixes in two passes (sort.cu, xp_sortuniq_wtiles, then one block's scan),
    # then the runs pass over the same warps' rows
    warps, rpw = runs_warps(n, device_info(cp).sm_count)
    blocks = -(-warps * 32 // _UQ_THREADS)
    sp = s.data.ptr
    launch(cp, _kernel(f"xp_sortuniq_wtiles_{width}"), blocks, _UQ_THREADS,
           (sp, np.int32(s_is_key), n, np.int32(mode), rpw, aggs))
    launch(cp, _kernel("xp_sortuniq_scan"), 1, 1024, (aggs, incls, warps))
    # values only: the runs pass compiled without the other outputs' code (sort.cu,
    # xp_sortuniq_wvals: 64 registers, 4 blocks an SM where wruns has 77 and 3). H200, 16M
    # float32 of 15M distinct values, the three passes after the sort: 0.104 -> 0.095 ms;
    # float64 (8M) 0.082 -> 0.078, int32 (8644 values) 0.089 -> 0.079; the whole
    # unique_values in three rounds 0.665-0.722 -> 0.648-0.701 (a noisy machine)
    if want_values_only and s_is_key:
        launch(cp, _kernel(f"xp_sortuniq_wvals_{width}"), blocks, _UQ_THREADS,
               (sp, flat.data.ptr, ptr + 8, n, np.int32(mode), values.data.ptr, ptr, incls,
                rpw))
    else:
        launch(cp, _kernel(f"xp_sortuniq_wruns_{width}"), blocks, _UQ_THREADS,
               (sp, np.int32(s_is_key), _addr(perm), flat.data.ptr, ptr + 8, n,
                np.int32(mode), values.data.ptr, _addr(indices), _addr(counts), _addr(inverse),
                ptr, incls, rpw))
    k = read_now(cp, ptr, stream)  # the one device-to-host transfer
    if plan.sort == "keys":
        _REFUSED[0] = k > HQ_MAX
    return _unique_parts(k, n, values, indices, inverse, counts)


def _plan_search(cp, kernel, flag, ashape, astrides, vshape, vstrides, dt, ap, vp, op) -> bool:
    """One launch of a search kernel (``xp_searchsorted_<w>``, ``xp_isin_<w>``) of every query
    of v into the sorted a, with the kernel's one flag (searchsorted: side == "right"; isin:
    invert); a set small enough is staged in shared memory first."""
    m = math.prod(vshape)
    if m == 0:
        return False
    width = dt.itemsize
    a = dense(cp, ashape, astrides, width, ap)
    v = dense(cp, vshape, vstrides, width, vp)
    asize = math.prod(ashape)
    stage, smem = search_stage(asize, width)
    launch(cp, _kernel(f"{kernel}_{width}"), grid(cp, m, 256, 16), 256,
           (a, np.int64(asize), v, np.int64(m), op, np.int32(key_mode(dt)),
            np.int32(flag), np.int64(stage)), smem)
    return True


def search_stage(asize: int, width: int) -> tuple[int, int]:
    """(stage, shared bytes) of a search into ``asize`` sorted elements of ``width`` bytes
    (sort.cu, stage_keys): 1, every key staged, when they fit _SEARCH_STAGE_BYTES; else the
    bucket length s of a sample of at most that many keys (each bucket's last)."""
    cap = _SEARCH_STAGE_BYTES // width
    if asize <= cap:
        return 1, asize * width
    step = -(-asize // cap)
    return step, -(-asize // step) * width


def _search(cp, kernel, flag, sorted_1d, x, out_dtype):
    """The result (x's shape, ``out_dtype``) of search ``kernel`` with ``flag``: a recorded
    program per geometry, over (result, sorted_1d, x) addresses (noted: a backend may keep
    the whole call)."""
    ap, vp = sorted_1d.data.ptr, x.data.ptr
    out = allocator(cp)(x.shape, out_dtype)
    op = out.data.ptr
    ashape, astrides, vshape, vstrides, dt = (sorted_1d.shape, sorted_1d.strides, x.shape,
                                              x.strides, sorted_1d.dtype)
    prog = program(cp, (kernel, ashape, astrides, vshape, vstrides, dt, flag),
                   (op & 15, ap & 15, vp & 15), lambda o, a, v: _plan_search(
                       cp, kernel, flag, ashape, astrides, vshape, vstrides, dt, a, v, o))
    if prog.info:
        replay(cp, prog, (op, ap, vp))
        note_program(prog, (op, ap, vp))
    return out


def searchsorted(cp, sorted_1d, x2, side: str):
    """int64 insertion indices of every element of x2 (any shape and strides) into the sorted
    1-D sorted_1d of the same dtype (bool, integer or float); side "left" or "right". NaN sorts
    last and -0.0 equals +0.0 (NumPy's order): a NaN query with "left" gives the first NaN."""
    return _search(cp, "xp_searchsorted", int(side == "right"), sorted_1d, x2, _I64)


def isin(cp, sorted_1d, x1, invert: bool):
    """bool membership of every element of x1 (any shape and strides) in the sorted 1-D
    sorted_1d of the same dtype (bool, integer or float; sorted in sort's order, NaNs last),
    negated when ``invert``. Equality as the standard's ``equal``: -0.0 is +0.0, and a NaN is
    in no array. One search pass writes the result (searchsorted's binary search, then one key
    comparison)."""
    return _search(cp, "xp_isin", int(bool(invert)), sorted_1d, x1, np.dtype(np.bool_))
