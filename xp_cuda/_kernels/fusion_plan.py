"""Planning of a fused kernel: every decision, as frozen dataclasses, before any C is printed.

Pure Python over the typed IR (fusion_ir) and the input layouts (itemsize, shape, strides,
C-contiguity): no NVRTC, no GPU, so tests/test_fusion_plan.py checks it directly. The printer
(fusion_render) reads these plans and decides nothing. In the manner of vecdot's plan_layout.

Elementwise outputs are grouped by shape (first-output order). A group is *flat* when every
operand bigger than one element has the output's shape, no view and C-contiguous inputs: then
element i of every operand is its flat index i, read in vectors (CONFIGS: bytes of the widest
operand per vector, vectors per thread, threads per block). Otherwise a grid-stride loop over
elements decomposes i into coordinates.

A reduction of operand x over `axes` has P outputs of M reduced elements each. A work item
(output p, split s of its range) is taken by a group of G lanes. *Row-like* (the innermost axis
reduced, or a 0-d operand): a group's lanes are neighbouring threads reading along the row.
Otherwise (the innermost axis kept) a block holds THREADS // G groups for neighbouring outputs,
group-major, so neighbouring threads read neighbouring addresses. A long range is split into S
chunks of `chunk` elements so the grid fills about RED_WAVES waves of resident blocks; the last
block to finish an output combines the partials (scratch: P * S partials, P counters).
The reduced operand may be any elementwise expression of the inputs (a prologue, read at the
same coordinates); argmax/argmin and var/std carry a struct accumulator (STRUCT_ACC), planned
the same way, their partials held as 8-byte words.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .fusion_ir import Op

THREADS = 256  # threads per block of kernels with a reduction (the shared-memory tree's size)
# Flat elementwise sections read and write vectors: (bytes of the widest operand per vector,
# vectors per thread, block-interleaved: thread t of a block takes vectors t, t + T, ..;
# threads T per block). No one shape wins (H200, ratio to the copy rate in one run, for the
# three below in order, 256-thread blocks): cheap bodies want small vectors (1 + x*y*z 1.050 /
# 1.046 / 1.047, torch.compile 1.050); bodies heavy in transcendental or integer-division
# work want more elements per thread to hide their latency (float32 pow 0.85 / 0.95 / 1.00,
# atan2 0.75 / 0.92 / 1.03, the ten-op example 0.92 / 0.99 / 1.05); complex exp loses with
# two 16-byte vectors (0.96 / 1.05 / 0.97). Two vectors run best in 128-thread blocks (the
# shape torch.compile's Triton kernels take for such bodies: ten-op 955.4 -> 954.6 us, pow
# 984.8 -> 980.2 us). So a launch long enough to time tries each once and keeps the fastest
# (fusion.Launch._tune).
CONFIGS = ((16, 1, 256), (8, 1, 256), (16, 2, 128))  # the first: small launches, untimed
# Reductions split long ranges into about RED_WAVES waves of resident blocks (H200, ratio to
# the copy rate, same run, waves 1 / 2 / 4 / 8: sum(x*y+1) over 2^28 1.084 / 1.082 / 1.065 /
# 1.045, torch.compile 1.080; sum over axis 0 of (2^20, 256) 0.97 / 1.03 / 0.98 / 0.93).
RED_WAVES = 2
COL_GROUPS = 32  # at most this many neighbouring outputs per block (innermost axis kept);
# 64 or 128: (2^22, 64) 0.94 -> 0.71, (2^20, 256) 1.03 -> 0.95 / 0.73 (2 waves)
MAX_GRID = 2**31 - 1  # one thread per vector or element: see elementwise.MAX_GRID
RED_VECTOR_BYTES = 16  # the reduction's vector path reads 16-byte vectors, two in flight
# The element-wise loop (columns, strided operands) keeps this many bytes of loads in flight per
# lane, 4 to 16 elements a step: a memory-bound loop needs ~20 KiB in flight per SM, and four
# 1-byte loads per thread left any(axis=0) of a (8192, 8192) bool at 0.28 of the copy rate.
SCALAR_BYTES = 32
# Reductions that keep the innermost axes (sum over axis 0) give each lane COL_VECTOR
# neighbouring outputs, read as one vector per row (16 bytes at most), as torch's reduction
# kernel vectorises its outputs: a warp reading 32 neighbouring 1-byte columns moved one
# 32-byte sector per request, any(axis=0) of a (8192, 8192) bool ran at 0.28 of the copy.
COL_VECTOR = 4
# ... for inputs of at most this many bytes: 4-byte columns already fill a sector per request,
# and there the extra trees cost more than they save (sum(axis=0) of (8192, 8192) float32 went
# from 0.077 to 0.085 ms; of a tall (2^24, 4) one from 0.33 to 0.46 ms, torch 0.34)
COL_VECTOR_ITEM = 2
# ... and for at least this many groups: wide rows only (any(axis=0) of a tall (2^22, 64) bool
# ran 0.195 ms one output a lane, 0.29 ms two, torch 0.21)
COL_VECTOR_GROUPS = 256
# Reductions whose accumulator is a struct of fusion.cuh: kind -> its bytes (XpArg<T> for T of
# at most 8 bytes: 16; XpMom<double>: 24). Their partials are scratch of 8-byte words.
STRUCT_ACC = {"argmax": 16, "argmin": 16, "var": 24, "std": 24}

_ITEMSIZE = {}


def itemsize(name: str) -> int:
    """Bytes of one element of the dtype named `name`."""
    n = _ITEMSIZE.get(name)
    if n is None:
        n = _ITEMSIZE[name] = np.dtype(name).itemsize
    return n


def size(shape) -> int:
    return math.prod(shape)


@dataclass(frozen=True)
class InputLayout:
    """One array argument as the kernel reads it."""
    pos: int  # argument position (the kernel's in{pos})
    dtype: str
    itemsize: int
    shape: tuple
    strides: tuple  # in elements
    contiguous: bool  # C-contiguous: flat index i is element i


@dataclass(frozen=True)
class GroupPlan:
    """Elementwise outputs of one shape, computed by one section of the kernel."""
    outs: tuple  # indices of the kernel's outputs
    shape: tuple
    n: int
    flat: bool  # operands read at the flat index (else coordinates, grid-stride)
    flat_inputs: tuple  # positions of the inputs read at the flat index, sorted
    vec: int  # elements per vector (1: no vector path)
    unroll: int  # vectors per thread on the vector path
    threads: int
    per_block: int  # elements per block of whole vectors (0 without a vector path)
    blocks: int  # grid when every operand is aligned
    blocks_scalar: int  # grid for any alignment: one thread per element


@dataclass(frozen=True)
class ReducePlan:
    """One reduction output: see the module docstring for the layout."""
    out: int  # index of the kernel's output
    index: int  # among the kernel's reductions (its scratch is part{index}, cnt{index})
    kind: str
    dtype: str  # accumulation dtype (argmax/argmin: the operand's, compared as it is;
    # var/std: the moments' float dtype)
    result: str  # the node's dtype, written at the final step
    axes: tuple
    kept: tuple
    P: int
    M: int
    row_like: bool
    G: int  # lanes per work item
    S: int  # splits of each reduced range
    chunk: int  # elements per split (whole 16-byte vectors of any dtype when S > 1)
    per: int  # work items per block
    blocks: int
    flat: bool  # reduced axes trailing and operand flat: element (p, j) is p * M + j
    flat_inputs: tuple
    vec: int  # elements per vector on the vector path (1: no vector path)
    scratch: tuple  # ((P * S, dtype), (P, "uint32")) when S > 1, else (None, None); a
    # struct accumulator's partials as (P * S * words, "uint64")
    unroll: int = 4  # elements per step of the element-wise loop (see SCALAR_BYTES)
    colvec: int = 1  # columns (innermost axes kept): outputs per lane, read as one vector
    # per row from every input (flat_inputs); 1: one output per lane


@dataclass(frozen=True)
class KernelPlan:
    config: tuple  # (vector bytes, vectors per thread, threads) of flat sections
    threads: int
    inputs: tuple  # InputLayout per input, in trace order
    groups: tuple  # GroupPlan
    reductions: tuple  # ReducePlan
    blocks: int
    blocks_scalar: int
    layout: tuple  # (elements per vector, vectors per thread, threads) per flat group
    tunable: bool  # other CONFIGS could change this kernel: worth timing
    scratch: tuple  # (size, numpy dtype) or None, two per reduction (partials, counters)

    def input(self, pos) -> InputLayout:
        for i in self.inputs:
            if i.pos == pos:
                return i
        raise KeyError(pos)


def input_layouts(input_nodes, arrays) -> tuple:
    """InputLayouts of the trace's input nodes for arrays with .itemsize, .shape, .strides and
    .flags.c_contiguous (NumPy, CuPy or any stand-in)."""
    out = []
    for node, a in zip(input_nodes, arrays):
        isz = a.itemsize
        out.append(InputLayout(node.attr.pos, node.dtype.name, isz, tuple(a.shape),
                               tuple(s // isz for s in a.strides), bool(a.flags.c_contiguous)))
    return tuple(out)


def contiguous(node, shape, strides_ok) -> bool:
    """Can `node` (of shape `shape`) be evaluated at flat indices: no views, no broadcasting
    of operands bigger than one element, C-contiguous inputs?"""
    if size(node.shape) == 1:
        return True
    if node.shape != shape or node.op is Op.VIEW:
        return False
    if node.op is Op.INPUT:
        return strides_ok[node.attr.pos]
    return all(a is None or contiguous(a, shape, strides_ok) for a in node.args)


def flat_inputs(nodes) -> tuple:
    """Positions of the inputs a flat evaluation of `nodes` reads at the flat index: operands of
    one element are read at index 0 instead (the printer's rule, fusion_render._Values.val)."""
    found, seen = set(), set()

    def walk(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        if size(node.shape) == 1:
            return
        if node.op is Op.INPUT:
            found.add(node.attr.pos)
        for a in node.args:
            walk(a)
    for n in nodes:
        walk(n)
    return tuple(sorted(found))


def plan_group(outs, idxs, shape, strides_ok, inputs, config, T) -> GroupPlan:
    n = size(shape)
    flat = all(contiguous(outs[j], shape, strides_ok) for j in idxs)
    fin = ()
    vec = unroll = 1
    if flat:
        fin = flat_inputs([outs[j] for j in idxs])
        sizes = [itemsize(outs[j].dtype.name) for j in idxs]
        sizes += [i.itemsize for k in fin for i in inputs if i.pos == k]
        vec = max(1, config[0] // max(sizes))
        if vec > 1:
            unroll = config[1]
    # grid: with every operand aligned, blocks of U * T whole vectors, then one thread per
    # remaining element; otherwise one thread per element
    need_scalar = -(-n // T)
    per_block = 0
    if flat and vec > 1:
        per_block = unroll * T * vec
        need = n // per_block + -(-(n % per_block) // T)
    else:
        need = need_scalar
    if need_scalar > MAX_GRID:  # beyond any GPU's memory today
        raise ValueError(f"fuse: {n} elements exceed one launch ({MAX_GRID} blocks of "
                         f"{T} threads); split the arrays")
    return GroupPlan(tuple(idxs), tuple(shape), n, flat, fin, vec, unroll, T, per_block,
                     need, need_scalar)


# Products of float32 accumulate in float64. Factors near 1 combined in a tree round their
# ties one way (the dropped cross term a*b decides them): float32 drifts 11% off the true
# product of 16M such factors. Eager and fused prod share this rule. complex64 keeps its own
# dtype: an overflowing complex product must give NumPy's special values (nan+nanj), which a
# complex128 product rounded at the end would not.
WIDER_PRODUCT = {"float32": "float64"}


def accumulation_dtype(node) -> str:
    """The dtype a REDUCE node accumulates in (see ReducePlan.dtype)."""
    a = node.attr
    if a.kind in ("argmax", "argmin"):
        return node.args[0].dtype.name
    if a.kind in ("var", "std"):
        return a.acc or "float64"
    if a.kind == "prod" and a.acc is None:
        return WIDER_PRODUCT.get(node.dtype.name, node.dtype.name)
    return a.acc or node.dtype.name


def plan_reduction(node, j, r, strides_ok, inputs, sms) -> ReducePlan:
    a = node.attr
    kind, axes = a.kind, a.axes
    (x,) = node.args
    nd = len(x.shape)
    kept = tuple(ax for ax in range(nd) if ax not in axes)
    P = size([x.shape[ax] for ax in kept])
    M = size([x.shape[ax] for ax in axes])
    row_like = nd == 0 or (nd - 1) in axes
    flat = list(kept) == list(range(len(kept))) and contiguous(x, x.shape, strides_ok)
    unroll = min(16, max(4, SCALAR_BYTES // itemsize(x.dtype.name)))
    if row_like and not flat:
        # strided rows (a diagonal, a column view): lanes of whole unrolled steps, so short
        # rows keep their loads in flight and a block holds more of them
        G = min(256, 1 << (max(1, M // unroll).bit_length() - 1))
    elif row_like:
        G = 256 if M >= 2048 else 32 if M >= 64 else 1
    colvec, cfin = 1, ()
    if not row_like and kind not in STRUCT_ACC and kept == tuple(range(nd - len(kept), nd)) \
            and contiguous(x, x.shape, strides_ok):
        cfin = flat_inputs([x])
        widest = max([i.itemsize for k in cfin for i in inputs if i.pos == k] or [16])
        if widest <= COL_VECTOR_ITEM:
            colvec = COL_VECTOR
            while colvec > 1 and (P % colvec or P // colvec < COL_VECTOR_GROUPS):
                colvec //= 2
        if colvec == 1:
            cfin = ()
    PV = P // colvec  # work items across the kept axes: groups of colvec neighbouring outputs
    if not row_like:
        G = THREADS // min(COL_GROUPS, 1 << max(0, PV - 1).bit_length())
    # RED_WAVES waves of resident blocks (2048 threads per SM)
    target = sms * 2048 * RED_WAVES
    if PV * G >= target or M == 0 or P == 0:  # P == 0: nothing to compute, nothing to split
        S = 1
    else:
        S = max(1, min(-(-target // (PV * G)), M // (G * 32)))
    chunk = -(-M // S) if M else 0
    if S > 1:  # whole 16-byte vectors of any dtype per split (see the vector path)
        chunk = -(-chunk // 16) * 16
    if chunk:
        S = -(-M // chunk)
    acc = accumulation_dtype(node)
    part = (P * S * (STRUCT_ACC[kind] // 8), "uint64") if kind in STRUCT_ACC else (P * S, acc)
    scratch = (part, (P, "uint32")) if S > 1 else (None, None)
    per = THREADS // G
    blocks = max(1, min(MAX_GRID, -(-(P * S) // per) if row_like else -(-PV // per) * S))
    if colvec > 1:  # rows a step: the same bytes in flight as the element-wise loop
        unroll = min(16, max(4, SCALAR_BYTES // (colvec * itemsize(x.dtype.name))))
    fin, vec = cfin, 1
    if flat:
        fin = flat_inputs([x])
        if fin:
            widest = max(i.itemsize for k in fin for i in inputs if i.pos == k)
            vec = max(1, RED_VECTOR_BYTES // widest)
    return ReducePlan(j, r, kind, acc, node.dtype.name, tuple(axes), kept, P, M, row_like, G, S,
                      chunk, per, blocks, flat, fin, vec, scratch, unroll, colvec)


def plan_kernel(kernel_outs, inputs, sms, config) -> KernelPlan:
    """The whole kernel: groups, then reductions, then the grid that covers every section."""
    T = THREADS if any(n.op is Op.REDUCE for n in kernel_outs) else config[2]
    strides_ok = {i.pos: i.contiguous for i in inputs}
    shapes = {}
    for j, node in enumerate(kernel_outs):
        if node.op is not Op.REDUCE:
            shapes.setdefault(node.shape, []).append(j)
    groups = tuple(plan_group(kernel_outs, idxs, shape, strides_ok, inputs, config, T)
                   for shape, idxs in shapes.items())
    reds = []
    for j, node in enumerate(kernel_outs):
        if node.op is Op.REDUCE:
            reds.append(plan_reduction(node, j, len(reds), strides_ok, inputs, sms))
    blocks = max([1] + [g.blocks for g in groups] + [r.blocks for r in reds])
    blocks_scalar = max([1] + [g.blocks_scalar for g in groups] + [r.blocks for r in reds])
    layout = tuple((g.vec, g.unroll, T) for g in groups if g.flat)
    scratch = []
    for r in reds:
        scratch += [None if s is None else (s[0], np.dtype(s[1]).type) for s in r.scratch]
    return KernelPlan(tuple(config), T, tuple(inputs), groups, tuple(reds), blocks,
                      blocks_scalar, layout, bool(layout) and not reds, tuple(scratch))
