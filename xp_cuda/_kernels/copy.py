"""Launchers of copy.cu: strided copies, transposes, concatenation and gathers of raw elements.

Every launcher works on the current CuPy device and stream (the caller holds the device), takes
CuPy arrays the caller has validated, and moves elements as opaque bits of 1, 2, 4, 8 or 16
bytes: no dtype enters a kernel, so -0.0, NaN payloads and every integer pass unchanged.

The public launchers:

- ``copy_into(cp, dst, src)``: ``dst[...] = src``. dst is any writable array or view (a slice
  of a bigger output, a transposed view...), src an array of the same dtype and shape with any
  strides (negative, or 0 where broadcast). dst and src must not overlap in memory.
- ``concat(cp, parts, axis, out)``: ``out`` (C-contiguous, preallocated) = the parts joined
  along ``axis``. Runs of C-contiguous parts go in one launch that walks the output; any other
  part is one ``copy_into`` into its slice of out. Empty parts are skipped.
- ``gather(cp, x, indices, axis, out)``: ``out[..., i, ...] = x[..., indices[i], ...]`` along
  ``axis`` (take). ``indices``: a 1-D C-contiguous **int64** CuPy array, every value already in
  ``[0, x.shape[axis])`` (no check, no wrap here); x any strides; out C-contiguous.
- ``gather_along(cp, x, indices, axis, out)`` (take_along_axis): ``out[c] = x[c with
  c[axis] = indices[c]]``, x and indices of one ndim, broadcast against each other in every
  other dim; indices **int64**, any strides; negative indices wrap; out C-contiguous.
  ``gather_along_checked`` checks the indices in the same pass (as ``gather_checked``).

Planning is pure Python and tested without a GPU (``plan_copy``, ``plan_gather``,
``plan_concat`` return small frozen dataclasses). A copy plan drops size-1 dims, turns dims of
negative destination stride around (moving both base offsets), sorts dims by destination
stride and merges neighbours contiguous in BOTH operands; elements whose addresses are not
aligned to their size are moved as smaller words (an extra inner dim), and a short contiguous
inner dim whose bytes form an aligned power of two up to 16 becomes one wider element. Then:

- ``memcpy``: one dim, contiguous in both: ``cudaMemcpyAsync`` device to device, the copy
  ceiling (also a 0-d or size-1 copy);
- ``rows``: the inner dim contiguous in both: threads along the rows in 16-byte chunks
  (``xp_copy_rows_<size>``), destination chunks aligned per row even in a slice of a wider
  output, source loads vectorised where aligned;
- ``transpose``: the destination's inner dim contiguous, the source's contiguous dim another
  one, both at least ``TRANSPOSE_MIN`` long: tiles through shared memory over those two dims
  (64x64 elements, 32x32 of 16 bytes; 1- and 2-byte elements as 4-byte words where both dims
  are whole words), every other dim a batch (``xp_transpose_<size>``);
- ``flat``: the destination contiguous, at most ``FLATND`` dims, short inner rows
  (``repeat``, small moved dims): the destination walked flat in 16-byte chunks, each chunk's
  source offsets stepped by an odometer (``xp_copy_flat_<size>``);
- ``strided``: anything else, any strides, broadcast included (``xp_copy_strided_<size>``):
  the rows' 16-byte destination chunks, element loads.

Rows of at least SEG chunks go a block per row segment (the row's offsets computed once per
SEG chunks); shorter rows a thread per chunk. Kernels are loaded on first use; the one module
(every name below) compiles once.

Measured on one H200 (fraction of a device-to-device copy of the same bytes, read + written;
peers in the same run): concat of three (8192, 8192) float32 along axis 0 0.99 (torch 0.96,
CuPy 0.40), along axis 1 0.91 (torch 0.95, CuPy 0.40); (8192, 8192) float32 transpose
0.81-0.92 (torch and CuPy 0.27), float64 0.93, complex128 0.94, int16 0.68-0.73, int8 0.59;
batched (64, 1024, 1024) permutation (0, 2, 1) 0.71 (torch 0.28), (1, 0, 2) 0.88; tile(x, (2, 1))
0.86 (torch 0.51); flips 0.89-0.90 (torch 0.70); rows into a misaligned slice 0.84 (its source
loads element by element: two aligned 16-byte loads shifted into place ran slower for float32,
docs/performance.md); take of 1M random rows of 64 float32 0.78
(torch 0.20), of 16 float32 0.59 (torch 0.05); 16M random int64 indices into float32 equal to
torch's index_select and CuPy's take.

How the namespace's functions map onto these primitives (the caller builds the views; each
line is what the planner tests below check):

- ``asarray(copy=True)``, ``reshape`` when it must copy, any materialisation of a view:
  ``copy_into(new C-contiguous out viewed with x's shape, x)``: reshape makes ``out`` of the
  new shape and passes ``out.reshape(x.shape)`` (a view of a C-contiguous array) as dst.
- ``permute_dims`` / ``moveaxis`` / ``matrix_transpose``: ``copy_into(out, x.transpose(p))``
  (the ``transpose`` path when the dims moved are long, else ``rows`` or ``strided``).
- ``flip``: ``copy_into(out, x[::-1, ...])``: a negative-stride view (``rows`` when the flipped
  dims are outer: the planner turns them around; ``strided`` when the inner dim is flipped).
- ``roll``: ``plan_roll``: one launch whose outer dims read their source coordinates wrapped
  (the inner dim not rolled, or a small array as one-element rows), else two ``copy_into`` of
  slices per rolled axis: ``out[..., k:, ...] = x[..., :n-k, ...]`` and
  ``out[..., :k, ...] = x[..., n-k:, ...]`` (several axes compose; ``axis=None`` rolls the
  flattened array).
- ``tile``: NumPy's way: x reshaped with size-1 dims inserted, ``(1, d0, 1, d1, ...)``,
  broadcast to ``(r0, d0, r1, d1, ...)`` (stride 0 on the repeat dims), copied into ``out``
  viewed with that shape, then out reshaped to ``(r0*d0, r1*d1, ...)``; the repeat dims are
  walked innermost, over rows of at most FAN_ROW_BYTES, so each row of x is read once.
- ``repeat`` with an int r along axis: x viewed as ``(..., d, 1, ...)`` broadcast to
  ``(..., d, r, ...)``, copied into out viewed with that shape.
- ``repeat`` with per-element counts: ``gather(x, idx, axis, out)`` with
  ``idx = searchsorted(cumsum(counts), arange(total), side='right')`` (the caller's scan).
- ``concat``: ``concat``; ``stack``: ``concat`` of the parts viewed with a size-1 dim at axis.
- ``take``: ``gather``; indexing by an integer array along one axis: ``gather``.
- ``broadcast_to(...)`` materialised, ``expand_dims`` + copy, ``squeeze`` + copy: ``copy_into``.
"""
from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ._runtime import MAX_SLOTS as _MAX_SLOTS
from ._runtime import c_contiguous, device_info, instance_units, load_kernel, source
from ._runtime import launch as _run_launch
from ._runtime import memcpy as _memcpy
from ._runtime import run_recorded as _run

__all__ = ["MAXND", "MAXPARTS", "FLATND", "THREADS", "TRANSPOSE_MIN", "MEMCPY_MIN", "ITEM_SIZES",
           "CopyPlan", "GatherPlan", "ConcatStep", "kernel_names", "tile_of",
           "transpose_packed", "plan_copy", "plan_gather", "plan_concat", "run_copy",
           "run_gather", "copy_into", "concat", "gather", "gather_checked", "roll",
           "RollPlan", "ROLL_ONE_MAX", "plan_roll",
           "AlongPlan", "plan_along", "along_kernel_names", "gather_along",
           "gather_along_checked"]

MAXND = 32        # XC_MAXND: outer dims one launch walks (more are walked here, in Python)
MAXPARTS = 32     # XC_MAXPARTS: parts one concat launch reads
FLATND = 4        # XC_FLATND: dims of a "flat" copy
THREADS = 256     # XC_THREADS: threads of every block
UNROLL = 4        # XC_UNROLL: chunks in flight per thread (a thread per chunk)
SEG_UNROLL = 4    # XC_SEG_UNROLL: chunks per thread of a row segment
SEG = THREADS * SEG_UNROLL  # XC_SEG: chunks of a row segment, one block step of a long row
TILE_WIDE = 64    # XC_TILE_WIDE: transpose tile edge of elements up to 8 bytes
FLAT_ROW_BYTES = 256  # strided rows shorter than this go "flat" when dst is contiguous
# A copy that repeats its source (tile, a broadcast materialised: outer dims of source stride
# 0) walks those dims innermost among the rows, over rows of FAN_ROW_BYTES at most, so the
# copies of one source row follow each other and read it from L2. tile(x, (2, 1)) of an
# (8192, 8192) float32 read x twice from DRAM as two rows of 256 MiB (0.69 of a copy; repeat,
# whose rows came so ordered already, 0.87).
FAN_ROW_BYTES = 1 << 16
FAN_ROW_MIN = 1 << 12  # no split into rows shorter than this: their lookups would cost more
MEMCPY_MIN = 1 << 20  # concat: single-row parts this large go by cudaMemcpyAsync
TRANSPOSE_MIN = 16  # both tiled dims at least this long, else a tile is mostly idle threads
BLOCKS_PER_SM = 16  # grid-stride cap of every kernel
ITEM_SIZES = (1, 2, 4, 8, 16)
_KINDS = ("copy_rows", "copy_strided", "copy_flat", "gather", "transpose", "concat")
_ALONG = "gather_along"  # take_along_axis's gather (its own argument struct, AlongArgs)
_MEMCPY_D2D = 3   # cudaMemcpyDeviceToDevice


def tile_of(itemsize: int, packed: bool = False) -> int:
    """Transpose tile edge in elements (copy.cu): 32 four-byte words for the packed 1- and
    2-byte kernel, else 64 (32 for 16-byte elements)."""
    if packed:
        return 32 * (4 // itemsize)
    return 32 if itemsize >= 16 else TILE_WIDE


def transpose_packed(plan: "CopyPlan", dst_align: int, src_align: int) -> bool:
    """Can a 1- or 2-byte transpose move 4-byte words: both tiled dims whole words, every
    other stride and both (offset) bases 4-byte aligned?"""
    S = plan.itemsize
    if S >= 4:
        return False
    P = 4 // S
    sh, dst, src, b = plan.shape, plan.dst_strides, plan.src_strides, plan.tile_dim
    if src[b] != S or sh[-1] % P or sh[b] % P:
        return False
    others = [v for i in range(len(sh)) for v in (dst[i], src[i]) if i not in (b, len(sh) - 1)]
    others += [dst[b], src[-1], dst_align + plan.dst_offset, src_align + plan.src_offset]
    return all(v % 4 == 0 for v in others)


@functools.lru_cache(maxsize=None)
def units() -> dict:
    """kernel name -> the source the runtime compiles for it: one instantiation line of copy.cu
    (the whole file took 18 s to compile on a two-core machine)."""
    return instance_units(source("copy.cu"),
                          {f"XC_{k.upper()}": [f"xp_{k}_{{0}}"] for k in _KINDS + (_ALONG,)})


def kernel_names() -> list[str]:
    """Every kernel name a launcher here can request (tests find each in the PTX)."""
    return [f"xp_{k}_{s}" for k in _KINDS for s in ITEM_SIZES]


def along_kernel_names() -> list[str]:
    """The kernel names ``gather_along`` can request (beside ``kernel_names()``: together,
    every name a launcher here can request)."""
    return [f"xp_{_ALONG}_{s}" for s in ITEM_SIZES]


# ---- planning (pure Python) ---------------------------------------------------------------

@dataclass(frozen=True)
class CopyPlan:
    """How ``copy_into`` moves one array into another.

    ``shape`` and the strides are the collapsed dims in destination order, outermost first (for
    ``rows``, the outer dims of source stride 0 innermost of the outer dims: see
    FAN_ROW_BYTES); strides in bytes, destination strides all >= 0. ``itemsize`` is the element
    the kernel moves (smaller than the dtype's when the data are not aligned to it, larger when
    a short contiguous inner dim was folded into one element). The offsets are added to the
    arrays' pointers. For ``transpose``, the tiled dims are the last one (the destination's
    contiguous dim) and ``tile_dim`` (the source's); for the others ``tile_dim`` is -1.
    ``shift``: rows are not all 16-byte aligned in the destination, so chunks move per row (see
    copy.cu).
    """
    path: str                  # "empty" | "memcpy" | "rows" | "transpose" | "flat" | "strided"
    itemsize: int
    shape: tuple = ()
    dst_strides: tuple = ()
    src_strides: tuple = ()
    dst_offset: int = 0
    src_offset: int = 0
    tile_dim: int = -1
    shift: int = 0

    @property
    def nbytes(self) -> int:
        return self.itemsize * math.prod(self.shape)


@dataclass(frozen=True)
class GatherPlan:
    """How ``gather`` runs: the output's dims (C order, size-1 dims dropped, dims contiguous in
    x merged) with their byte strides in out and in x; dim ``gdim`` is the gathered one (its x
    stride is x's stride along the axis, applied to ``indices[i]``). ``path``: "scalars" when
    the gathered dim is the inner one, "rows" when the inner dim is contiguous in x (each index
    moves whole rows), "strided" otherwise, "empty" when out has no element."""
    path: str
    itemsize: int
    shape: tuple = ()
    dst_strides: tuple = ()
    src_strides: tuple = ()
    gdim: int = -1
    shift: int = 0


@dataclass(frozen=True)
class ConcatStep:
    """One launch of ``concat``: "kernel" (the C-contiguous parts ``parts`` in one walk of
    output columns ``[col, col + width)`` of each output row), "memcpy" (one part, one output
    row) or "copy" (one part through ``copy_into``). Columns count elements of the output
    viewed as (prod(shape[:axis]), prod(shape[axis:]))."""
    kind: str
    parts: tuple
    col: int
    width: int


def _word(itemsize: int, values) -> int:
    """The largest power of two <= itemsize dividing every value (addresses, strides)."""
    w = itemsize
    while w > 1 and any(v % w for v in values):
        w //= 2
    return w


def _needs_shift(itemsize: int, dst_base: int, outer_dst_strides) -> int:
    """1 when some destination row starts off a 16-byte boundary (chunks then move per row)."""
    if itemsize >= 16:
        return 0
    return int(dst_base % 16 != 0 or any(s % 16 for s in outer_dst_strides))


def _fan_inner(sh, dst, src, S):
    """Rows (the inner dim contiguous in both) whose outer dims of source stride 0 (fans)
    are walked innermost among the outer dims, after the inner dim is cut into rows of at most
    FAN_ROW_BYTES where it is longer (into equal rows of whole 16-byte chunks, the longest
    that divide it; uncut when none of FAN_ROW_MIN bytes or more does): see FAN_ROW_BYTES.
    The other outer dims keep their order."""
    n = sh[-1]
    outer = [(sh[i], dst[i], src[i]) for i in range(len(sh) - 1)]
    rows = [d for d in outer if d[2] != 0]
    if n * S > FAN_ROW_BYTES:
        for m in range(FAN_ROW_BYTES // S, max(FAN_ROW_MIN // S, 1) - 1, -1):
            if n % m == 0 and m * S % 16 == 0:
                rows.append((n // m, dst[-1] * m, src[-1] * m))
                n = m
                break
    dims = rows + [d for d in outer if d[2] == 0] + [(n, dst[-1], src[-1])]
    return [d[0] for d in dims], [d[1] for d in dims], [d[2] for d in dims]


@lru_cache(maxsize=1024)
def plan_copy(shape, dst_strides, src_strides, itemsize: int, dst_align: int = 0,
              src_align: int = 0) -> CopyPlan:
    """The plan of ``dst[...] = src`` for dst's shape and both operands' byte strides.
    ``dst_align`` / ``src_align``: the pointers modulo 16 (plans are cached on them)."""
    dims = []
    for n, ds, ss in zip(shape, dst_strides, src_strides):
        if n == 0:
            return CopyPlan("empty", itemsize)
        if n != 1:
            dims.append((n, ds, ss))
    doff = soff = 0
    norm = []
    for n, ds, ss in dims:  # destination strides >= 0: both walk the dim backwards
        if ds < 0:
            doff += (n - 1) * ds
            soff += (n - 1) * ss
            ds, ss = -ds, -ss
        norm.append((n, ds, ss))
    S = itemsize
    w = _word(S, [dst_align + doff, src_align + soff]
              + [v for _, ds, ss in norm for v in (ds, ss)])
    if w < S:  # misaligned elements move as aligned words: one more dim, innermost
        norm.append((S // w, w, w))
        S = w
    norm.sort(key=lambda t: (-t[1], -abs(t[2])))  # stable: destination order, outermost first
    sh: list = []
    dst: list = []
    src: list = []
    for n, ds, ss in norm:
        if sh and dst[-1] == ds * n and src[-1] == ss * n:
            sh[-1] *= n
            dst[-1], src[-1] = ds, ss
        else:
            sh.append(n)
            dst.append(ds)
            src.append(ss)
    # a short contiguous inner dim of 2..16 aligned bytes: one wider element
    if len(sh) >= 2 and dst[-1] == S and src[-1] == S:
        wide = sh[-1] * S
        if (wide in (2, 4, 8, 16)
                and _word(wide, [dst_align + doff, src_align + soff] + dst[:-1] + src[:-1])
                == wide):
            S = wide
            sh, dst, src = sh[:-1], dst[:-1], src[:-1]
    geo: dict = dict(shape=tuple(sh), dst_strides=tuple(dst), src_strides=tuple(src),
               dst_offset=doff, src_offset=soff)
    if not sh or (len(sh) == 1 and dst[0] == S and src[0] == S):
        return CopyPlan("memcpy", S, **geo)
    if dst[-1] == S and src[-1] == S and 0 in src:
        sh, dst, src = _fan_inner(sh, dst, src, S)
        geo.update(shape=tuple(sh), dst_strides=tuple(dst), src_strides=tuple(src))
    shift = _needs_shift(S, dst_align + doff, dst[:-1]) if dst[-1] == S else 0
    if dst[-1] == S and src[-1] == S:
        return CopyPlan("rows", S, shift=shift, **geo)
    if dst[-1] == S and abs(src[-1]) != S and src[-1] != 0 and sh[-1] >= TRANSPOSE_MIN:
        cands = [i for i in range(len(sh) - 1) if abs(src[i]) == S and sh[i] >= TRANSPOSE_MIN]
        if cands:
            return CopyPlan("transpose", S, tile_dim=cands[-1], **geo)
    dst_contiguous = all(dst[i] == dst[i + 1] * sh[i + 1] for i in range(len(sh) - 1))
    if (dst[-1] == S and dst_contiguous and len(sh) <= FLATND
            and sh[-1] * S < FLAT_ROW_BYTES):
        return CopyPlan("flat", S, **geo)
    return CopyPlan("strided", S, shift=shift, **geo)


@dataclass(frozen=True)
class RollPlan:
    """How ``roll`` runs. "rows": the inner dim is not rolled and contiguous in both, so one
    row launch moves it while the outer dims wrap their source coordinates (``roll``, per
    outer dim); "elements": a small array, every dim an outer one wrapping, rows of one
    element, one launch; "pieces": each rolled axis split into two slices that trade places
    (2**k row copies: a large array whose inner dim is rolled, where element-wise reads
    would fall below row speed). ``shape`` and the byte strides: the outer dims, then the
    inner one; size-1 dims dropped and neighbours contiguous in both and not rolled merged."""
    path: str  # "empty" | "rows" | "elements" | "pieces"
    itemsize: int
    shape: tuple = ()
    dst_strides: tuple = ()
    src_strides: tuple = ()
    roll: tuple = ()
    shift: int = 0


# A roll of at most this many bytes goes in one launch even when its inner dim is rolled: an
# element per thread costs less than a launch per slice (four for two rolled axes) there.
ROLL_ONE_MAX = 1 << 20


@lru_cache(maxsize=1024)
def plan_roll(shape, dst_strides, src_strides, itemsize: int, shifts, dst_align: int = 0,
              src_align: int = 0) -> RollPlan:
    """The plan of out = roll(x, shifts) (``shifts[d]`` in [0, shape[d])) for out's and x's
    byte strides; pointers modulo 16 as in ``plan_copy``."""
    S = itemsize
    if any(n == 0 for n in shape):
        return RollPlan("empty", S)
    dims = [[n, ds, ss, k] for n, ds, ss, k in zip(shape, dst_strides, src_strides, shifts)
            if n != 1]
    merged: list = []
    for d in dims:  # an unrolled dim contiguous in both with its unrolled inner neighbour
        p = merged[-1] if merged else None
        if (p is not None and p[3] == 0 and d[3] == 0 and p[1] == d[1] * d[0]
                and p[2] == d[2] * d[0]):
            p[0] *= d[0]
            p[1], p[2] = d[1], d[2]
        else:
            merged.append(list(d))
    if not merged:
        merged = [[1, S, S, 0]]
    # the kernels read whole elements (16-byte ones 8-byte aligned: copy.cu's b16)
    unit = min(S, 8)
    if any(v % unit for d in merged for v in d[1:3]) or (dst_align | src_align) % unit:
        return RollPlan("pieces", S)
    sh, dst, src, rl = (tuple(d[i] for d in merged) for i in range(4))
    if rl[-1] == 0 and dst[-1] == S and src[-1] == S and len(sh) - 1 <= MAXND:
        return RollPlan("rows", S, sh, dst, src, rl[:-1],
                        _needs_shift(S, dst_align, dst[:-1]))
    if S * math.prod(sh) <= ROLL_ONE_MAX and len(sh) <= MAXND:
        return RollPlan("elements", S, sh + (1,), dst + (S,), src + (S,), rl)
    return RollPlan("pieces", S)


@lru_cache(maxsize=1024)
def plan_gather(x_shape, x_strides, axis: int, m: int, itemsize: int, x_align: int = 0,
                out_align: int = 0) -> GatherPlan:
    """The plan of taking ``m`` indices along ``axis`` (>= 0) of x (its shape and byte
    strides); out is C-contiguous. Pointers modulo 16 as in ``plan_copy``."""
    if m == 0 or any(n == 0 for i, n in enumerate(x_shape) if i != axis):
        return GatherPlan("empty", itemsize)
    # [n, x stride, gathered?] in output order; size-1 dims dropped except the gathered one
    dims = [[m if i == axis else n, s, i == axis]
            for i, (n, s) in enumerate(zip(x_shape, x_strides)) if i == axis or n != 1]
    S = itemsize
    w = _word(S, [x_align, out_align] + [d[1] for d in dims])
    if w < S:
        dims.append([S // w, w, False])
        S = w
    merged: list = []
    for d in dims:
        p = merged[-1] if merged else None
        if p is not None and not p[2] and not d[2] and p[1] == d[1] * d[0]:
            p[0] *= d[0]
            p[1] = d[1]
        else:
            merged.append(list(d))
    last = merged[-1]
    if not last[2] and last[1] == S and len(merged) >= 2:
        wide = last[0] * S
        if (wide in (2, 4, 8, 16)
                and _word(wide, [x_align, out_align] + [d[1] for d in merged[:-1]]) == wide):
            S = wide
            merged = merged[:-1]
    shape = tuple(d[0] for d in merged)
    steps_out, acc = [], S
    for n in reversed(shape):
        steps_out.append(acc)
        acc *= n
    dst = tuple(reversed(steps_out))
    src = tuple(d[1] for d in merged)
    gdim = next(i for i, d in enumerate(merged) if d[2])
    shift = _needs_shift(S, out_align, dst[:-1])
    if gdim == len(shape) - 1:
        path = "scalars"
    elif src[-1] == S:
        path = "rows"
    else:
        path = "strided"
    return GatherPlan(path, S, shape, dst, src, gdim, shift)


def plan_concat(out_shape, axis: int, parts, itemsize: int = 1) -> tuple:
    """The launches of ``concat``: ``parts`` as (shape, C-contiguous and aligned?) pairs.
    Consecutive C-contiguous parts share a "kernel" step (MAXPARTS at most); with a single
    output row (axis 0, or leading dims of 1) a contiguous part of MEMCPY_MIN bytes or more is
    a "memcpy" of its own (the copy ceiling: three 256 MiB parts ran at 0.996 of a copy as
    memcpys, 0.92 as one kernel), as is a lone smaller one; any other part is a "copy"; empty
    parts are skipped."""
    outer = math.prod(out_shape[:axis])
    inner = math.prod(out_shape[axis + 1:])
    steps: list = []
    run: list = []
    col = 0

    def flush():
        for k in range(0, len(run), MAXPARTS):
            group = run[k:k + MAXPARTS]
            c0 = group[0][1]
            width = group[-1][1] + group[-1][2] - c0
            if len(group) == 1 and outer == 1:
                steps.append(ConcatStep("memcpy", (group[0][0],), c0, width))
            else:
                steps.append(ConcatStep("kernel", tuple(g[0] for g in group), c0, width))
        run.clear()

    if outer == 0 or inner == 0:
        return ()
    for i, (shape, contiguous) in enumerate(parts):
        w = shape[axis] * inner
        if w == 0:
            continue
        if contiguous and outer == 1 and w * itemsize >= MEMCPY_MIN:
            flush()
            steps.append(ConcatStep("memcpy", (i,), col, w))
        elif contiguous:
            run.append((i, col, w))
        else:
            flush()
            steps.append(ConcatStep("copy", (i,), col, w))
        col += w
    flush()
    return tuple(steps)


# ---- launching ------------------------------------------------------------------------------

# Recorded programs (each geometry planned once, replayed per call): _runtime's
# run_recorded, launch and memcpy.

_MOVE_FIELDS = 14      # MoveArgs: scalars before the four per-dim arrays
_TRANS_FIELDS = 14     # TransArgs
_CONCAT_FIELDS = 8     # ConcatArgs: scalars before src, w, start


def _kernel(name):
    return load_kernel(units()[name], name)


def _launch(cp, name, blocks, threads, args):
    """One launch with the argument struct ``args`` (int64 cells) as its only parameter
    (noted instead inside a recording)."""
    _run_launch(cp, _kernel(name), blocks, (threads[0], threads[1]), (args,))


def _blocks(cp, work: int) -> int:
    return max(1, min(-(-work // (THREADS * UNROLL)), device_info(cp).sm_count * BLOCKS_PER_SM))


def _segments(cp, rows: int, cpr: int) -> tuple[int, int]:
    """(segments per row, blocks): rows of SEG chunks or more go a block per segment (the row
    lookup paid once per SEG chunks), shorter ones a thread per chunk (segs = 0): a segment
    longer than the row idles the rest of the block (rows of 256 chunks ran at 0.62 of a
    copy that way, 0.84 a thread per chunk)."""
    if cpr >= SEG:
        segs = -(-cpr // SEG)
        return segs, max(1, min(rows * segs, device_info(cp).sm_count * BLOCKS_PER_SM))
    return 0, _blocks(cp, rows * cpr)


def _flat(cp, plan: CopyPlan, dst_ptr, src_ptr):
    S, sh = plan.itemsize, plan.shape
    n = math.prod(sh)
    a = np.zeros(_MOVE_FIELDS + 4 * MAXND, dtype=np.int64)
    nd = len(sh)
    F = _MOVE_FIELDS
    a[:F] = (dst_ptr, src_ptr, 0, n, S, 0, 0, 1, nd, -1, 0, 0, 0, 0)
    a[F:F + nd] = sh
    a[F + 2 * MAXND:F + 2 * MAXND + nd] = plan.src_strides
    V = max(1, 16 // S)
    work = -(-(n + V - 1) // V)
    blocks = max(1, min(-(-work // THREADS), device_info(cp).sm_count * BLOCKS_PER_SM))
    _launch(cp, f"xp_copy_flat_{S}", blocks, (THREADS, 1), a)


def _outer_split(shape, dstr, sstr, keep):
    """Leading dims beyond what one launch walks: (dst offset, src offset) of each slice and
    the dims left (``keep`` of them at most). Python walks these; only >MAXND dims that no
    merge could fold come here."""
    lead = len(shape) - keep
    if lead <= 0:
        return [(0, 0)], shape, dstr, sstr
    offs = [(0, 0)]
    for n, ds, ss in zip(shape[:lead], dstr[:lead], sstr[:lead]):
        offs = [(d + k * ds, s + k * ss) for d, s in offs for k in range(n)]
    return offs, shape[lead:], dstr[lead:], sstr[lead:]


def _move(cp, kind, S, dst_ptr, src_ptr, idx_ptr, shape, dstr, sstr, gdim, shift, glen=0,
          err=0, roll=()):
    """Launch xp_<kind>_<S> over ``shape`` (last dim inner) at the given byte addresses.
    ``gdim``: the outer dim read through the indices, or -1; ``glen``, ``err``: see
    ``gather``; ``roll``: per outer dim, the shift its source coordinate wraps by (roll)."""
    V = max(1, 16 // S)
    n = shape[-1]
    cpr = -(-(n + (V - 1 if shift else 0)) // V)
    offs, oshape, odst, osrc = _outer_split(shape[:-1], dstr[:-1], sstr[:-1], MAXND)
    if len(offs) > 1 and gdim >= 0:  # the gathered dim among the walked ones: keep it in
        gdim -= len(shape) - 1 - len(oshape)
        assert gdim >= 0, "a gathered dim beyond MAXND outer dims"
    rows = math.prod(oshape)
    nd = len(oshape)
    segs, blocks = _segments(cp, rows, cpr)
    a = np.zeros(_MOVE_FIELDS + 4 * MAXND, dtype=np.int64)
    F = _MOVE_FIELDS
    a[3:F] = (n, dstr[-1], sstr[-1], cpr, rows, nd, gdim, shift, segs, glen, err)
    if roll:
        assert len(offs) == 1 and len(roll) == nd, "a roll walks all its outer dims itself"
        a[F + 3 * MAXND:F + 3 * MAXND + nd] = roll
    a[F:F + nd] = oshape
    a[F + MAXND:F + MAXND + nd] = odst
    a[F + 2 * MAXND:F + 2 * MAXND + nd] = osrc
    a[2] = idx_ptr
    name = f"xp_{kind}_{S}"
    for do, so in offs:
        a[0] = dst_ptr + do
        a[1] = src_ptr + so
        _launch(cp, name, blocks, (THREADS, 1), a)


def _transpose(cp, plan: CopyPlan, dst_ptr, src_ptr, packed: bool):
    sh, dst, src, b = plan.shape, plan.dst_strides, plan.src_strides, plan.tile_dim
    na, nb = sh[-1], sh[b]
    rest = [i for i in range(len(sh) - 1) if i != b]
    offs, bshape, bdst, bsrc = _outer_split(tuple(sh[i] for i in rest),
                                            tuple(dst[i] for i in rest),
                                            tuple(src[i] for i in rest), MAXND)
    tile = tile_of(plan.itemsize, packed)
    ta, tb = -(-na // tile), -(-nb // tile)
    batch, nd = math.prod(bshape), len(bshape)
    a = np.zeros(_TRANS_FIELDS + 3 * MAXND, dtype=np.int64)
    a[2:14] = (na, nb, dst[-1], dst[b], src[-1], src[b], ta, tb, batch, nd, int(packed), 0)
    a[14:14 + nd] = bshape
    a[14 + MAXND:14 + MAXND + nd] = bdst
    a[14 + 2 * MAXND:14 + 2 * MAXND + nd] = bsrc
    blocks = max(1, min(batch * ta * tb, device_info(cp).sm_count * BLOCKS_PER_SM))
    name = f"xp_transpose_{plan.itemsize}"
    for do, so in offs:
        a[0] = dst_ptr + do
        a[1] = src_ptr + so
        _launch(cp, name, blocks, (THREADS, 1), a)


def run_copy(cp, plan: CopyPlan, dst_ptr: int, src_ptr: int) -> None:
    """Execute a CopyPlan between two device addresses (the arrays' data pointers, whose
    values modulo 16 are the ones the plan was made for)."""
    if plan.path == "empty":
        return
    d, s = dst_ptr + plan.dst_offset, src_ptr + plan.src_offset
    if plan.path == "memcpy":
        _memcpy(cp, d, s, plan.nbytes)
    elif plan.path == "transpose":
        _transpose(cp, plan, d, s, transpose_packed(plan, dst_ptr % 16, src_ptr % 16))
    elif plan.path == "flat":
        _flat(cp, plan, d, s)
    else:
        kind = "copy_rows" if plan.path == "rows" else "copy_strided"
        _move(cp, kind, plan.itemsize, d, s, 0, plan.shape, plan.dst_strides,
              plan.src_strides, -1, plan.shift)


def copy_into(cp, dst, src):
    """dst[...] = src, elementwise (see the module docstring for the preconditions)."""
    assert dst.shape == src.shape and dst.dtype == src.dtype, (dst.shape, src.shape)
    shape, dstr, sstr, S = dst.shape, dst.strides, src.strides, dst.itemsize

    def run(d, s):
        run_copy(cp, plan_copy(shape, dstr, sstr, S, d % 16, s % 16), d, s)
    _run(cp, ("copy", shape, dstr, sstr, S), (dst.data.ptr, src.data.ptr), run)
    return dst


def concat(cp, parts, axis: int, out):
    """out = the parts joined along ``axis`` (out C-contiguous, of the joined shape); a part is
    anything with ``.shape``, ``.strides`` and ``.data.ptr`` (a CuPy array, or a view of one
    described without making it)."""
    if out.size == 0:
        return out
    axis = axis + out.ndim if axis < 0 else axis
    S, oshape, ostr = out.itemsize, out.shape, out.strides
    shapes = tuple(p.shape for p in parts)
    strides = tuple(p.strides for p in parts)

    def run(o, *pp):
        infos = [(sh, c_contiguous(sh, st, S) and q % S == 0)
                 for sh, st, q in zip(shapes, strides, pp)]
        inner = math.prod(oshape[axis + 1:])
        for st in plan_concat(oshape, axis, infos, S):
            i = st.parts[0]
            if st.kind == "copy":  # into the part's columns of out: out's strides
                vshape = oshape[:axis] + (shapes[i][axis],) + oshape[axis + 1:]
                d = o + st.col * S
                run_copy(cp, plan_copy(vshape, ostr, strides[i], S, d % 16, pp[i] % 16), d,
                         pp[i])
            elif st.kind == "memcpy":
                _memcpy(cp, o + st.col * S, pp[i], st.width * S)
            else:
                _concat_launch(cp, [(pp[k], shapes[k][axis] * inner) for k in st.parts], S,
                               o + st.col * S, math.prod(oshape[:axis]),
                               oshape[axis] * inner * S, st.width)
    ptrs = (out.data.ptr,) + tuple(p.data.ptr for p in parts)
    if len(ptrs) > _MAX_SLOTS:  # too many addresses to stand in for: plan this call alone
        run(*ptrs)
    else:
        _run(cp, ("concat", oshape, axis, S, shapes, strides), ptrs, run)
    return out


def roll(cp, x, out, shifts):
    """out = x rolled by ``shifts`` (one non-negative shift below its length per axis of x),
    as ``plan_roll`` says: one launch whose outer dims wrap their source coordinates, or each
    rolled axis split into two slices that trade places (2**k copies), in one recorded
    program. out: C-contiguous, x's shape and dtype, not overlapping x."""
    shape, xs, os_, S = x.shape, x.strides, out.strides, x.itemsize

    def run(o, s):
        plan = plan_roll(shape, os_, xs, S, tuple(shifts), o % 16, s % 16)
        if plan.path == "empty":
            return
        if plan.path != "pieces":
            _move(cp, "copy_rows", S, o, s, 0, plan.shape, plan.dst_strides, plan.src_strides,
                  -1, plan.shift, roll=plan.roll)
            return
        pieces = [((), 0, 0)]  # (piece shape, dst byte offset, src byte offset)
        for a, (n, k) in enumerate(zip(shape, shifts)):
            parts = ((n, 0, 0),) if k == 0 else ((n - k, k, 0), (k, 0, n - k))
            pieces = [(sh + (m,), do + d0 * os_[a], so + s0 * xs[a])
                      for sh, do, so in pieces for m, d0, s0 in parts]
        for sh, do, so in pieces:
            run_copy(cp, plan_copy(sh, os_, xs, S, (o + do) % 16, (s + so) % 16), o + do,
                     s + so)
    _run(cp, ("roll", shape, xs, os_, S, tuple(shifts)), (out.data.ptr, x.data.ptr), run)
    return out


def _concat_launch(cp, group, S, dst_ptr, outer, row_stride, width):
    """One launch joining ``group``'s (address, width in elements) parts, a row each."""
    V = max(1, 16 // S)
    shift = _needs_shift(S, dst_ptr, (row_stride,) if outer > 1 else ())
    cpr = -(-(width + (V - 1 if shift else 0)) // V)
    segs, blocks = _segments(cp, outer, cpr)
    a = np.zeros(_CONCAT_FIELDS + 3 * MAXPARTS + 1, dtype=np.int64)
    a[:8] = (dst_ptr, outer, row_stride, width, cpr, shift, len(group), segs)
    col = 0
    for k, (ptr, w) in enumerate(group):
        a[8 + k] = ptr
        a[8 + MAXPARTS + k] = w
        a[8 + 2 * MAXPARTS + k] = col
        col += w
    a[8 + 2 * MAXPARTS + len(group)] = col
    _launch(cp, f"xp_concat_{S}", blocks, (THREADS, 1), a)


def gather(cp, x, indices, axis: int, out, err: int = 0):
    """out = take(x, indices, axis): indices 1-D C-contiguous int64 in [-n, n) for the n of
    x's axis, a negative one counting from the end. ``err``: 0 when the indices are known to
    be in range, else the address of two int64 words (host-mapped, zeroed by the caller) that
    an index out of range sets to (1, the index); its element of out is then undefined."""
    assert indices.dtype == np.int64 and indices.ndim == 1 and indices.flags.c_contiguous
    assert out.flags.c_contiguous and out.dtype == x.dtype
    axis = axis + x.ndim if axis < 0 else axis
    shape, xstr, m, S = x.shape, x.strides, indices.size, x.itemsize
    glen = shape[axis]

    def run(o, xp_, ip, e=0):
        plan = plan_gather(shape, xstr, axis, m, S, xp_ % 16, o % 16)
        if plan.path != "empty":
            run_gather(cp, plan, o, xp_, ip, glen, e)
    ptrs = (out.data.ptr, x.data.ptr, indices.data.ptr) + ((err,) if err else ())
    _run(cp, ("gather", shape, xstr, axis, m, S), ptrs, run)
    return out


_err_words = threading.local()  # per thread: the host-mapped words a checked gather reports in


def _err_word(cp):
    """This thread's two int64 words in pinned host memory: with unified addressing the
    device writes them directly (no copy back, no memset before; the host zeroes them)."""
    w = getattr(_err_words, "w", None)
    if w is None:
        mem = cp.cuda.alloc_pinned_memory(16)
        w = _err_words.w = (np.frombuffer(mem, np.int64, 2), mem.ptr, mem)
    return w


def gather_checked(cp, x, indices, axis: int, out):
    """``gather`` of indices not yet checked: None when all lie in [-n, n) (out is then the
    result), else an index outside it. Waits for the gather (one stream synchronisation):
    the one wait a checked take costs, where a separate min/max of the indices cost two
    reductions, a copy back and a pass wrapping negative indices."""
    words, addr, _ = _err_word(cp)
    words[0] = 0
    gather(cp, x, indices, axis, out, addr)
    cp.cuda.get_current_stream().synchronize()
    return int(words[1]) if words[0] else None


def run_gather(cp, plan: GatherPlan, out_ptr: int, x_ptr: int, idx_ptr: int, glen: int,
               err: int = 0) -> None:
    """Execute a GatherPlan between device addresses (``glen``, ``err``: see ``gather``)."""
    if plan.path == "scalars":
        _move(cp, "gather", plan.itemsize, out_ptr, x_ptr, idx_ptr, plan.shape,
              plan.dst_strides, plan.src_strides, -1, plan.shift, glen, err)
    else:
        kind = "copy_rows" if plan.path == "rows" else "copy_strided"
        _move(cp, kind, plan.itemsize, out_ptr, x_ptr, idx_ptr, plan.shape, plan.dst_strides,
              plan.src_strides, plan.gdim, plan.shift, glen, err)


# ---- take_along_axis: a gather with an index per output element --------------------------

_ALONG_FIELDS = 8  # AlongArgs: scalars before the three per-dim arrays


@dataclass(frozen=True)
class AlongPlan:
    """How ``gather_along`` runs: the output's dims (C order, size-1 dims dropped, neighbours
    merged where x and the indices both step contiguously across them; at least one dim) with
    byte strides in x (0 where x is broadcast and on the gathered dim, whose offset the index
    gives: ``gstride`` bytes per index) and in the indices (0 where broadcast). ``path``:
    "empty" when out has no element, else "along"."""
    path: str
    itemsize: int
    shape: tuple = ()
    x_strides: tuple = ()
    idx_strides: tuple = ()
    gstride: int = 0

    @property
    def size(self) -> int:
        return math.prod(self.shape)


def along_shape(x_shape, idx_shape, axis: int) -> tuple:
    """The output shape of take_along_axis: the indices' length along ``axis``, elsewhere the
    broadcast of x and the indices (the caller checked they broadcast)."""
    return tuple(m if i == axis else (m if n == 1 else n)
                 for i, (n, m) in enumerate(zip(x_shape, idx_shape)))


@lru_cache(maxsize=1024)
def plan_along(x_shape, x_strides, idx_shape, idx_strides, axis: int,
               itemsize: int) -> AlongPlan:
    """The plan of ``gather_along`` for x and indices of these shapes and byte strides (one
    ndim, broadcast-compatible except along ``axis`` >= 0)."""
    out = along_shape(x_shape, idx_shape, axis)
    if 0 in out:
        return AlongPlan("empty", itemsize)
    dims: list = []  # [n, x stride, index stride] in output order, size-1 dims dropped
    for i, n in enumerate(out):
        if n == 1:
            continue
        xs = 0 if i == axis or x_shape[i] == 1 else x_strides[i]
        ist = 0 if idx_shape[i] == 1 else idx_strides[i]
        p = dims[-1] if dims else None
        if p is not None and p[1] == xs * n and p[2] == ist * n:
            p[0] *= n
            p[1], p[2] = xs, ist
        else:
            dims.append([n, xs, ist])
    if not dims:  # a single element
        dims = [[1, 0, 0]]
    return AlongPlan("along", itemsize, tuple(d[0] for d in dims), tuple(d[1] for d in dims),
                     tuple(d[2] for d in dims), x_strides[axis])


def _along(cp, plan: AlongPlan, out_ptr: int, x_ptr: int, idx_ptr: int, glen: int, err: int):
    S, nd = plan.itemsize, len(plan.shape)
    assert nd <= MAXND, "more than MAXND dims that no merge could fold"
    n = plan.size
    a = np.zeros(_ALONG_FIELDS + 3 * MAXND, dtype=np.int64)
    F = _ALONG_FIELDS
    a[:F] = (out_ptr, x_ptr, idx_ptr, n, nd, plan.gstride, glen, err)
    a[F:F + nd] = plan.shape
    a[F + MAXND:F + MAXND + nd] = plan.x_strides
    a[F + 2 * MAXND:F + 2 * MAXND + nd] = plan.idx_strides
    V = max(1, 16 // S)
    # the output walked flat in 16-byte chunks (one vector store each): a thread per chunk
    work = -(-(n + V - 1) // V)
    blocks = max(1, min(-(-work // THREADS), device_info(cp).sm_count * BLOCKS_PER_SM))
    _launch(cp, f"xp_{_ALONG}_{S}", blocks, (THREADS, 1), a)


def gather_along(cp, x, indices, axis: int, out, err: int = 0):
    """out = take_along_axis(x, indices, axis): x and indices of one ndim, every dim but
    ``axis`` equal or 1 in one of them (broadcast); indices int64 of any strides (0 included),
    each in [-n, n) for the n = x.shape[axis] (negative ones count from the end); x of any
    strides, its address and strides multiples of its element's alignment (complex128: 8);
    out C-contiguous of ``along_shape``. ``err`` as in ``gather``. A recorded program per
    geometry."""
    assert indices.dtype == np.int64 and indices.ndim == x.ndim
    axis = axis + x.ndim if axis < 0 else axis
    shape, xstr, ishape, istr, S = x.shape, x.strides, indices.shape, indices.strides, x.itemsize
    assert out.flags.c_contiguous and out.dtype == x.dtype
    assert out.shape == along_shape(shape, ishape, axis), (out.shape, shape, ishape)
    glen = shape[axis]

    def run(o, xp_, ip, e=0):
        plan = plan_along(shape, xstr, ishape, istr, axis, S)
        if plan.path != "empty":
            _along(cp, plan, o, xp_, ip, glen, e)
    ptrs = (out.data.ptr, x.data.ptr, indices.data.ptr) + ((err,) if err else ())
    _run(cp, ("gather_along", shape, xstr, ishape, istr, axis, S), ptrs, run)
    return out


def gather_along_checked(cp, x, indices, axis: int, out):
    """``gather_along`` of indices not yet checked: None when all it read lie in [-n, n) (out
    is then the result), else an index outside it. One stream synchronisation, as
    ``gather_checked``. Only indices some output element reads are checked (with an empty
    output, none: the caller checks those itself)."""
    words, addr, _ = _err_word(cp)
    words[0] = 0
    gather_along(cp, x, indices, axis, out, addr)
    cp.cuda.get_current_stream().synchronize()
    return int(words[1]) if words[0] else None
