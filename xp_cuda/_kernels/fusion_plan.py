"""Planning of a fused kernel: every decision, as frozen dataclasses, before any C is printed.

Pure Python over the typed IR (fusion_ir) and the input layouts (itemsize, shape, strides,
C-contiguity): no NVRTC, no GPU, so tests/test_fusion_plan.py checks it directly. The printer
(fusion_render) reads these plans and decides nothing. In the manner of vecdot's plan_layout.

Elementwise outputs are grouped by shape (first-output order). A group is *flat* when every
operand bigger than one element has the output's shape, no view and C-contiguous inputs: then
element i of every operand is its flat index i, read in vectors (CONFIGS: bytes of the widest
operand per vector, vectors per thread, threads per block). Otherwise a grid-stride loop over
elements decomposes i into coordinates, once a run of RUN_ELEMS neighbours along the innermost
axis where its length allows.

A reduction of operand x over `axes` has P outputs of M reduced elements each. A work item
(output p, split s of its range) is taken by a group of G lanes. *Row-like* (the innermost axis
reduced, or a 0-d operand): a group's lanes are neighbouring threads reading along the row.
Otherwise (the innermost axis kept) a block holds THREADS // G groups for neighbouring outputs,
group-major, so neighbouring threads read neighbouring addresses. A long range is split into S
chunks of `chunk` elements so the grid fills about RED_WAVES waves of resident blocks; the last
block to finish an output combines the partials (scratch: P * S partials, P counters).
The reduced operand may be any elementwise expression of the inputs (a prologue, read at the
same coordinates); argmax/argmin and var/std carry a struct accumulator (STRUCT_ACC), planned
the same way, their partials held as 8-byte words. A mean of a var/std's operand over its axes,
or a min beside a max (or a max beside a min), rides on that section (rides: one read of x for
both).

Whole programs (reductions feeding further work) go through more passes first (merge_axes,
lower, split_stages, plan_rows, online_sumexp: see "whole programs" below) into a ProgramPlan: one
kernel as above per reduction depth, or one row kernel (RowPlan) for the whole program.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .fusion_ir import Const, DName, Elementwise, Epilogue, Input, Node, Op, Reduce

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
# Reductions split long ranges into about RED_WAVES waves of resident blocks (2048 threads an
# SM). Fewer, longer blocks won (H200, ms, one run, waves 2 / 1 / 0.75 / 0.5; torch): sum of
# (8192, 8192) float32 0.0710 / 0.0669 / 0.0665 / 0.0674, torch 0.0691; any of that bool
# 0.0300 / 0.0278 / 0.0239 / 0.0241; sum over axis 0 of (2^24, 4) 0.0818 / 0.0712 / 0.0702 /
# 0.0699, torch 0.075; of (8192, 8192) 0.0731 / 0.0737 / 0.0662 / 0.0679; more waves lost
# (4: 0.0767, 8: 0.0844 for the first). The moments (var, std: a 24-byte accumulator, more
# registers, fewer resident blocks) want fewer: var of (8192, 8192) 0.0913 / 0.0795 / 0.0894 /
# 0.0740, torch 0.0867. max and min over axis 0 of (8192, 8192) float32 wanted 0.5 too
# (0.0777 -> 0.0686 ms, torch 0.0737) at a small cost over all axes (0.0676 -> 0.0688, torch
# 0.0693) and over axis 0 of (2^24, 4) (0.0716 -> 0.0727, torch 0.0764); argmax/argmin lost
# more than they gained (all axes 0.0768 -> 0.0793, (2^24, 4) 0.0962 -> 0.1029).
RED_WAVES = 0.75
KIND_WAVES = {"var": 0.5, "std": 0.5, "max": 0.5, "min": 0.5}
# The runs' path (ReducePlan.seg) splits into SEG_WAVES for kinds of a plain accumulator
# without their own KIND_WAVES (argmax, argmin and sumexp were not measured there: they keep
# RED_WAVES). Fewer waves won (H200, ms, three rounds against 0.75 in alternating processes):
# mean over (0, 2, 3) of (256, 64, 64, 64) float32 0.096 -> 0.084, of (64, 64, 56, 56) 0.034
# -> 0.028, sum of int16 (64, 64, 56, 56) 0.024 -> 0.022; 0.5 gained less at the smaller
# sizes (0.031, 0.025). max at 0.35 against its 0.5 lost (0.080 -> 0.087): KIND_WAVES rules.
SEG_WAVES = 0.35
# A split never takes more than one wave of the blocks that can be resident: 256-thread blocks
# an SM as the register file holds them (H200 NUM_REGS: var 52 -> 4, max and argmax 40 -> 6,
# sum 32 -> 8, the default). The split count S rounds up to reach its wave target, and a
# rounded-up S past one wave left a tail of blocks: var over axis 0 of (8192, 8192) float32 as
# 768 blocks (1.45 waves of 528) 0.107 ms, as 512 0.084 (torch 0.107)
RESIDENT_BLOCKS = {"var": 4, "std": 4, "max": 6, "min": 6, "argmax": 6, "argmin": 6}
COL_GROUPS = 32  # at most this many neighbouring outputs per block (innermost axis kept);
# 64 or 128: (2^22, 64) 0.94 -> 0.71, (2^20, 256) 1.03 -> 0.95 / 0.73 (2 waves)
MAX_GRID = 2**31 - 1  # one thread per vector or element: see elementwise.MAX_GRID
RED_VECTOR_BYTES = 16  # the reduction's vector path reads 16-byte vectors, two in flight
# A row-like reduction that is not flat (kept axes not all leading, or a strided x) takes the
# vector path too (ReducePlan.seg: runs_of_vectors) where the innermost axis is contiguous and
# holds whole vectors: (N, C, H*W) over (0, 2) (image statistics once merge_axes/merge_dims
# have run), rows of a strided view. Vector t of output p's range is run t // (L / vec) at
# position t % (L / vec), addressed through x's strides: one multiply-and-shift division a
# vector where the element-wise loop divided once an element and read 4 bytes at a time.
# The element-wise loop (columns, strided operands) keeps this many bytes of loads in flight per
# lane, 4 to 16 elements a step: a memory-bound loop needs ~20 KiB in flight per SM, and four
# 1-byte loads per thread left any(axis=0) of a (8192, 8192) bool at 0.28 of the copy rate.
SCALAR_BYTES = 32
# ... but a strided row (trace's diagonal) steps 4 elements, whatever their width, for more
# lanes a row: H200, float32 trace, ms 8 a step / 4, three rounds: (16384, 64, 64)
# 0.037-0.042 / 0.035-0.040, (262144, 8, 8) 0.036-0.038 / 0.029-0.034; 16 a step 4-8% slower
STRIDED_ROW_STEP = 4
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
# ... and 2 outputs a lane (8-byte vectors) for float32 columns whose product accumulates in
# float64 (WIDER_PRODUCT): H200, prod over axis 0 of float32, ms one output a lane / 2 / 4
# (each against one in alternating processes, three rounds): (64, 2^20) 0.083-0.086 /
# 0.078-0.082 / 0.083-0.088, (256, 2^18) 0.083-0.087 / 0.076-0.080 / 0.079-0.086,
# (8192, 8192) 0.079-0.084 / 0.077-0.081 / 0.084-0.089
WIDE_PRODUCT_VECTOR = 2
# ... except max and min of few narrow columns (an accumulator of the input's width). Lanes
# of 2-byte columns (int16, uint16) read one 16-byte vector of 8 outputs a row. H200, ms, two
# runs, one output a lane / 8 (torch): max of (2^22, 64) 0.387-0.393 / 0.229-0.231 (0.223),
# min of (2^23, 32) uint16 0.287 / 0.204-0.209, max of (2^24, 4) 0.115 / 0.071-0.073 (4 a
# lane), of (2^22, 12) 0.109 / 0.081-0.084. Not for sum (8 int64 accumulators a lane: 0.214
# -> 0.249; 4 a lane won: NARROW_SUM_BYTES) nor any/all of int16 (0.214 -> 0.242), which run
# at 0.75 waves: with 8 a lane max/min at 0.75 waves ran 0.252-0.259 against 0.229-0.231 at
# their 0.5. Lanes of 1-byte
# columns (int8, uint8) read one 4-byte vector of 4 outputs: max of (2^22, 64) int8 0.353 ->
# 0.225 (torch 0.237), min of (2^22, 128) 0.71-0.72 -> 0.42 (0.61), of (2^23, 32) uint8
# 0.27-0.28 -> 0.189 (0.146), of (2^24, 4) 0.100 -> 0.066 (0.054); 8 a lane ran 0.232-0.236,
# 0.436, 0.214-0.222, 0.067-0.071; 16 a lane 0.247-0.249, 0.445-0.448, 0.223-0.234,
# 0.066-0.070.
# (Those figures were taken element by element, before WORD_KINDS.) any/all of few bool
# columns take the same 4-byte vectors, where their words combine (WORD_KINDS): (2^22, 64)
# 0.149-0.154 -> 0.126-0.132 (torch 0.213-0.233), all of (2^24, 4) 0.049-0.053 -> 0.040
# (0.057); 16-byte vectors ran any of (2^22, 64) at 0.183. Wide columns keep COL_VECTOR with
# the words too: 8 a lane for max/min (2 words of int8, 4 of int16) ran (8192, 8192) int16
# 0.053-0.056 -> 0.058-0.061 (torch 0.052), int8 0.035-0.040 -> 0.049-0.054, (2048, 32768)
# int16 0.048-0.055 -> 0.051, (65536, 1024) int16 0.067-0.068 -> 0.064.
NARROW_COLUMN_BYTES = {1: 4, 2: 16}  # input itemsize -> the bytes of a lane's vector
NARROW_COLUMN_KINDS = ("max", "min")  # and any (kind, dtype) of WORD_KINDS
# sum of 2-byte columns: 8 bytes (4 int64 accumulators) a lane, all 4 of a step's loads issued
# before the first add (kernel_sass), where one a lane held 8 bytes in flight. H200, two runs,
# ms, one / 4 a lane: int16 (2^22, 64) 0.219-0.223 / 0.165-0.169, (2^23, 32) 0.228-0.243 /
# 0.146-0.148; float32 control unchanged. 1-byte columns lost (int8 (2^22, 64) 0.157-0.168 ->
# 0.165-0.185 at 4 or 8 a lane) where uint8 (2^24, 16) won (0.152-0.156 -> 0.118): they keep one.
NARROW_SUM_BYTES = {2: 8}
# Column reductions (colvec > 1) of an input itself whose outputs combine four bytes or two
# halves of a 4-byte word at once: max/min through the SIMD video instructions (__vmaxs4 and
# kin), any/all of bool through OR of the words (all: of their zero bytes). A lane combines
# its row's words, then splits them into its colvec accumulators once for the trees: one
# instruction for 4 (or 2) elements where each element cost an extract, a conversion and a
# combination; narrow columns ran at about 1e12 elements a second whatever their width.
# H200, two runs, ms, element by element / words (torch): max of (2^22, 64) int8 0.220 /
# 0.125-0.127 (0.217), of (8192, 8192) 0.065 / 0.035-0.040 (0.054), of (2^24, 4) 0.066-0.072
# / 0.045 (0.061), of (2^22, 12) 0.078-0.084 / 0.055 (0.060), min of (2^23, 32) uint8
# 0.189-0.202 / 0.112 (0.156), of (2^22, 64) int16 0.224-0.226 / 0.191-0.192 (0.220), max of
# (8192, 8192) int16 0.065-0.066 / 0.055-0.058 (0.052); any/all of (8192, 8192) bool within
# the spread (0.033-0.038, torch 0.050-0.054).
# The vector path of rows and of whole arrays (flat) combines the 16-byte vectors of such an
# input as four words the same way, and splits the words into elements once at its end: any
# of a bool took an extract, a test and an OR for each byte, which kept its loads from
# staying in flight (see fusion_render.WORD_VEC_STEPS for the figures).
WORD_KINDS = frozenset([(k, d) for k in ("max", "min") for d in ("int8", "uint8", "int16",
                                                                  "uint16")]
                       + [("any", "bool"), ("all", "bool")])
# Reductions whose accumulator is a struct of fusion.cuh: kind -> its bytes (XpArg<T> for T of
# at most 8 bytes: 16; XpMom<double>: 24). Their partials are scratch of 8-byte words.
STRUCT_ACC = {"argmax": 16, "argmin": 16, "var": 24, "std": 24, "sumexp": 24}
# A reduction of the same operand over the same axes as another in one kernel, of a kind in
# RIDES[the other's kind] and the same dtype, rides on that one's section: x is read once for
# both. A mean on a var or std (a batch norm's statistics): the accumulator carries the mean's
# own sum beside the moments (RIDE_BYTES more, fusion_render.MOMENTS_SUM), the mean that sum over
# M as the eager mean's (its dtype, its NaN and overflow; the additions in the moments' order).
# A min on a max or a max on a min (a range, min-max scaling): a pair of accumulators
# (fusion_render.MIN_MAX), each the eager one's op in the same order (max's geometry is min's).
RIDES = {"var": ("mean",), "std": ("mean",), "max": ("min",), "min": ("max",)}
RIDE_BYTES = 8

_ITEMSIZE: dict = {}


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
    blocks_scalar: int  # grid for any alignment: one thread per element (per run)
    run: int = 1  # coordinates (not flat): elements a thread takes along the innermost axis
    vrun: int = 1  # coordinates: elements of a vector run (see VECTOR_RUNS), 1: none; its
    # vector inputs are flat_inputs


# Groups read through coordinates (strided or broadcast operands) take runs of RUN_ELEMS
# neighbours along the innermost axis where its length is a multiple: the index is decomposed
# once a run, not once an element (a division by a runtime size per axis). where(c, x,
# x[:, :1]) of a (2^20, 64) float32 x, H200: 0.452 -> 0.184 ms (torch 0.314).
RUN_ELEMS = 4
# VECTOR_RUNS: a group over coordinates whose innermost axis holds whole vectors, with inputs of
# its own shape, C-contiguous, read where it writes (own_coordinate_inputs: a batch norm's x
# beside its per-channel (1, C, 1) statistics), takes a thread a vector: those inputs and the
# outputs as 16-byte vectors at the flat index, the rest at coordinates decomposed once a
# vector (by multiply and shift under 2**31 elements). The element runs read 4 bytes a load
# and divided by every axis's length in 64 bits once a run.


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
    words: int = 0  # 4-byte words of a lane's row (colvec > 1) or vector (the vector path)
    # that combine as words (WORD_KINDS); 0: none
    seg: bool = False  # the vector path over runs of the innermost axis where the range is
    # not flat ((N, C, H*W) over (0, 2), strided rows): runs_of_vectors, RED_VECTOR_BYTES
    ride: int = -1  # the output of a reduction this section also writes (rides), -1: none


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


def own_coordinate_inputs(nodes, shape) -> tuple:
    """(positions of the inputs of `shape` that `nodes` (of that shape) read at their own
    coordinates, through no view and no broadcast, sorted; whether every operand bigger than
    one element is such an input): VECTOR_RUNS and runs_of_vectors."""
    found, seen = set(), set()
    only = True

    def walk(node):
        nonlocal only
        if node is None or id(node) in seen or size(node.shape) == 1:
            return
        seen.add(id(node))
        if node.shape != shape or node.op is Op.VIEW:
            only = False
        elif node.op is Op.INPUT:
            found.add(node.attr.pos)
        else:
            for a in node.args:
                walk(a)
    for n in nodes:
        walk(n)
    return tuple(sorted(found)), only


def plan_group(outs, idxs, shape, strides_ok, inputs, config, T) -> GroupPlan:
    n = size(shape)
    flat = all(contiguous(outs[j], shape, strides_ok) for j in idxs)
    fin: tuple = ()
    vec = unroll = vrun = 1
    sizes = [itemsize(outs[j].dtype.name) for j in idxs]
    if flat:
        fin = flat_inputs([outs[j] for j in idxs])
        sizes += [i.itemsize for k in fin for i in inputs if i.pos == k]
        vec = max(1, config[0] // max(sizes))
        if vec > 1:
            unroll = config[1]
    elif shape:
        rin = tuple(k for k in own_coordinate_inputs([outs[j] for j in idxs], shape)[0]
                    if strides_ok[k])
        v = config[0] // max(sizes + [i.itemsize for k in rin for i in inputs if i.pos == k])
        if rin and v > 1 and shape[-1] % v == 0:
            fin, vrun = rin, v
    run = RUN_ELEMS if not flat and shape and shape[-1] % RUN_ELEMS == 0 else 1
    # grid: with every operand aligned, blocks of U * T whole vectors, then one thread per
    # remaining element; otherwise one thread per element (per run); vector runs: a thread a
    # vector where aligned (grid-stride loops both)
    need_scalar = -(-n // T)
    per_block = 0
    if flat and vec > 1:
        per_block = unroll * T * vec
        need = n // per_block + -(-(n % per_block) // T)
    else:
        need = need_scalar = -(-n // (T * run))
        need = -(-n // (T * vrun)) if vrun > 1 else need
    if need_scalar > MAX_GRID:  # beyond any GPU's memory today
        raise ValueError(f"fuse: {n} elements exceed one launch ({MAX_GRID} blocks of "
                         f"{T} threads); split the arrays")
    return GroupPlan(tuple(idxs), tuple(shape), n, flat, fin, vec, unroll, T, per_block,
                     need, need_scalar, run, vrun)


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


def _pow2_floor(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


# A short range takes few lanes: each lane's share of a row (ROW_LANE_ELEMS elements at least)
# or of a column (COL_LANE_ROWS rows) keeps its loads in flight, and the shared-memory tree
# over the lanes (a barrier a level) stays short. A warp a row of 64 float32 and 8 lanes a
# column of 16 rows spent their time in the tree (H200, 2^26 float32, ms, before -> after,
# torch): sum over rows of 64 0.334 -> 0.076 (0.243-0.269), var 0.759 -> 0.098 (0.48-0.52),
# argmax 0.476 -> 0.102 (0.47); rows of 128 sum 0.161 -> 0.073 (0.132); over columns of 16
# rows sum 0.364 -> 0.080 (0.080), var 0.688 -> 0.120 (0.100), argmax 0.432 -> 0.117 (0.112);
# of 64 rows sum 0.105 -> 0.077 (0.076). Rows of 512 and more, columns of 256 and more: as
# before.
ROW_LANE_ELEMS = 16
COL_LANE_ROWS = 32
# A block a row from rows of this many bytes; shorter rows take up to a warp of lanes, a
# block several rows. From 2048 elements of any width, 256 threads shared a row of 2048
# float32s two vectors each. H200, ms, 2048 elements -> 16 KiB: rows of 2048 float32 (2^25
# elements) sum 0.048 -> 0.035 (0.68 -> 0.92 of the copy), var 0.124 -> 0.041, argmax 0.074
# -> 0.041; of 3072 var 0.098 -> 0.040; any over rows of 8192 bool (2^26) 0.034 -> 0.023,
# sum of int8 0.044 -> 0.028. From 16 KiB still: float64 rows of 3072 ran 4% slower with 32
# lanes, rows of 4096 float32 and of 16384 bool 1-5% slower.
# Reductions of a struct accumulator (var, std, argmax, ...) merge partials of 16-24 bytes in
# the tree over the lanes: a block a row only from 64 KiB rows. ms, 16 -> 64 KiB, torch in
# brackets: var over rows of 4096 float32 (2^26 elements) 0.116 -> 0.072 (0.087), of 8192
# 0.084 -> 0.069, argmax of 4096 0.100 -> 0.073 (0.079); float64 rows of 2048 var 0.182 ->
# 0.135 (0.201), argmax 0.157 -> 0.131 (0.138); float64 rows of 4096 var 0.133 -> 0.134-0.137.
ROW_BLOCK_BYTES = {False: 16384, True: 65536}  # by a struct accumulator


def row_lanes(M: int, isz: int = 4, block_bytes: int = ROW_BLOCK_BYTES[False]) -> int:
    """Lanes G a contiguous row of M elements of ``isz`` bytes (the widest input read) is
    reduced by (its last axis reduced): a block a row from ``block_bytes`` (ROW_BLOCK_BYTES),
    else a power of two up to a warp, ROW_LANE_ELEMS a lane. A row of 1- or 2-byte elements
    (bool, int8, int16) counts its lanes' elements as its bytes in float32s, so a lane reads
    as many bytes as a float32 row's (64 bool a lane, not 16: any(x, axis=-1) of a (2^22, 64)
    bool read one 16-byte vector a thread)."""
    if M * isz >= block_bytes:
        return 256
    M = M * min(isz, 4) // 4
    return min(32, _pow2_floor(M // ROW_LANE_ELEMS))


def column_lanes(M: int, PV: int) -> int:
    """Lanes G of a work item of a column-like reduction (innermost axes kept): PV items of
    neighbouring outputs, each over M rows; a block holds THREADS // G items (at most
    COL_GROUPS of them where the rows are long enough for several lanes)."""
    G = THREADS // min(COL_GROUPS, 1 << max(0, PV - 1).bit_length())
    return min(G, _pow2_floor(M // COL_LANE_ROWS))


def runs_of_vectors(x, inputs, V) -> bool:
    """Can the vector path read x in runs along its innermost axis (ReducePlan.seg)? Every
    operand bigger than one element is an input of x's shape read at x's coordinates (no
    view, no broadcast), all with one layout: the innermost axis contiguous and a multiple of
    V > 1 elements long, every other stride a multiple of V (whole vectors, aligned where the
    input is)."""
    if V < 2 or not x.shape or x.shape[-1] % V:
        return False
    found, only = own_coordinate_inputs([x], x.shape)
    if not (found and only):
        return False
    layouts = {i.strides for i in inputs if i.pos in found}
    if len(layouts) != 1:
        return False
    (st,) = layouts
    return st[-1] == 1 and all(s % V == 0 for s, n in zip(st[:-1], x.shape) if n > 1)


def struct_bytes(kind: str, ride: int = -1) -> int:
    """Bytes of a struct accumulator, a ride's sum included (ReducePlan.ride); 0: plain."""
    if kind not in STRUCT_ACC:
        return 0
    return STRUCT_ACC[kind] + (RIDE_BYTES if ride >= 0 else 0)


def rides(kernel_outs) -> dict:
    """{output of a reduction: output of one that rides on its section (RIDES)} among a
    kernel's outputs: the same operand node, the same axes, the same dtype, neither with an
    epilogue or (but var/std) an accumulation dtype of its own (lower's norms). A section
    hosts one rider and rides on none."""
    out: dict = {}

    def plain(n):  # (var/std name the moments' dtype as theirs)
        return n.op is Op.REDUCE and n.attr.epilogue is None and (
            n.attr.acc is None or n.attr.kind in ("var", "std"))
    for j, node in enumerate(kernel_outs):
        if not plain(node) or node.attr.kind not in RIDES or j in out.values():
            continue
        for k, m in enumerate(kernel_outs):
            if k != j and plain(m) and m.attr.kind in RIDES[node.attr.kind] and \
                    k not in out and k not in out.values() and m.args[0] is node.args[0] and \
                    tuple(sorted(m.attr.axes)) == tuple(sorted(node.attr.axes)) and \
                    m.dtype.name == node.dtype.name:
                out[j] = k
                break
    return out


def plan_reduction(node, j, r, strides_ok, inputs, sms, ride=-1) -> ReducePlan:
    a = node.attr
    kind, axes = a.kind, a.axes
    (x,) = node.args
    nd = len(x.shape)
    kept = tuple(ax for ax in range(nd) if ax not in axes)
    P = size([x.shape[ax] for ax in kept])
    M = size([x.shape[ax] for ax in axes])
    row_like = nd == 0 or (nd - 1) in axes
    flat = list(kept) == list(range(len(kept))) and contiguous(x, x.shape, strides_ok)
    # the inputs a flat read of x reads, and the widest of them (0: none)
    xin = flat_inputs([x])
    xwide = max((i.itemsize for k in xin for i in inputs if i.pos == k), default=0)
    unroll = min(16, max(4, SCALAR_BYTES // itemsize(x.dtype.name)))
    if row_like and not flat:
        # strided rows (a diagonal, a column view): lanes of whole unrolled steps, so short
        # rows keep their loads in flight and a block holds more of them. STRIDED_ROW_STEP
        # elements a step whatever their width: each load is a sector of its own
        unroll = STRIDED_ROW_STEP
        G = min(256, 1 << (max(1, M // unroll).bit_length() - 1))
    elif row_like:  # lanes by the bytes of the widest input read
        G = row_lanes(M, xwide or itemsize(x.dtype.name), ROW_BLOCK_BYTES[kind in STRUCT_ACC])
    colvec = 1
    cfin: tuple = ()
    acc = accumulation_dtype(node)
    wide_product = kind == "prod" and WIDER_PRODUCT.get(x.dtype.name) == acc
    if not row_like and kind not in STRUCT_ACC and kept == tuple(range(nd - len(kept), nd)) \
            and contiguous(x, x.shape, strides_ok):
        cfin = xin
        if (xwide or 16) <= COL_VECTOR_ITEM or wide_product:
            colvec = WIDE_PRODUCT_VECTOR if wide_product else COL_VECTOR
            while colvec > 1 and (P % colvec or P // colvec < COL_VECTOR_GROUPS):
                colvec //= 2
            narrow = None
            if kind == "sum":
                narrow = NARROW_SUM_BYTES.get(xwide)
            elif kind in NARROW_COLUMN_KINDS or (kind, x.dtype.name) in WORD_KINDS:
                narrow = NARROW_COLUMN_BYTES.get(xwide)
            if colvec == 1 and narrow:
                colvec = narrow // xwide
                while colvec > 1 and P % colvec:
                    colvec //= 2
        if colvec == 1:
            cfin = ()
    PV = P // colvec  # work items across the kept axes: groups of colvec neighbouring outputs
    if not row_like:
        G = column_lanes(M, PV)
    seg = row_like and not flat and runs_of_vectors(x, inputs, RED_VECTOR_BYTES // (xwide or 16))
    waves = SEG_WAVES if seg and kind not in STRUCT_ACC else RED_WAVES
    target = int(sms * 2048 * KIND_WAVES.get(kind, waves))
    if PV * G >= target or M == 0 or P == 0:  # P == 0: nothing to compute, nothing to split
        S = 1
    else:
        S = max(1, min(-(-target // (PV * G)), M // (G * 32),
                       sms * RESIDENT_BLOCKS.get(kind, 8) * THREADS // (PV * G)))
    chunk = -(-M // S) if M else 0
    if S > 1:  # whole 16-byte vectors of any dtype per split (see the vector path)
        chunk = -(-chunk // 16) * 16
    if chunk:
        S = -(-M // chunk)
    sw = struct_bytes(kind, ride) // 8
    # (a plain kind hosting a rider: a pair of accumulators, fusion_render.MIN_MAX)
    part = (P * S * sw, "uint64") if sw else (P * S * (2 if ride >= 0 else 1), acc)
    scratch = (part, (P, "uint32")) if S > 1 else (None, None)
    per = THREADS // G
    blocks = max(1, min(MAX_GRID, -(-(P * S) // per) if row_like else -(-PV // per) * S))
    if colvec > 1:  # rows a step: the same bytes in flight as the element-wise loop
        unroll = min(16, max(4, SCALAR_BYTES // (colvec * itemsize(x.dtype.name))))
    if not row_like and wide_product:
        # a column product accumulated wider (float32 in float64): SCALAR_BYTES of the
        # accumulator a step. With 8 elements ptxas kept the kernel at 32 registers by issuing
        # 4 loads, then the rest as the float64 tree freed registers (H200, prod over axis 0
        # of float32, ms 8 / 4 a step: (64, 2^20) 0.089 / 0.081, (8192, 8192) 0.082 / 0.076,
        # (2^22, 64) 0.319 / 0.287). Integer sums into int64 lost by the same rule (int32
        # (2^22, 64) 0.270 / 0.282), so other kinds keep their input's step.
        unroll = max(4, SCALAR_BYTES // itemsize(acc))
    words = 0
    if colvec > 1 and x.op is Op.INPUT and (kind, x.dtype.name) in WORD_KINDS and \
            colvec * itemsize(x.dtype.name) % 4 == 0:
        words = colvec * itemsize(x.dtype.name) // 4
    fin, vec = cfin, 1
    if flat or seg:
        fin = xin
        if fin:
            vec = max(1, RED_VECTOR_BYTES // xwide)
            if vec > 1 and colvec == 1 and x.op is Op.INPUT and \
                    (kind, x.dtype.name) in WORD_KINDS:
                # the vector path combines its words (above); not a column section's lanes
                # (no axis reduced: every axis kept is both leading and trailing)
                words = RED_VECTOR_BYTES // 4
    return ReducePlan(j, r, kind, acc, node.dtype.name, tuple(axes), kept, P, M, row_like, G, S,
                      chunk, per, blocks, flat, fin, vec, scratch, unroll, colvec, words, seg,
                      ride)


def plan_kernel(kernel_outs, inputs, sms, config) -> KernelPlan:
    """The whole kernel: groups, then reductions, then the grid that covers every section."""
    T = THREADS if any(n.op is Op.REDUCE for n in kernel_outs) else config[2]
    strides_ok = {i.pos: i.contiguous for i in inputs}
    shapes: dict = {}
    for j, node in enumerate(kernel_outs):
        if node.op is not Op.REDUCE:
            shapes.setdefault(node.shape, []).append(j)
    groups = tuple(plan_group(kernel_outs, idxs, shape, strides_ok, inputs, config, T)
                   for shape, idxs in shapes.items())
    reds: list = []
    ride = rides(kernel_outs)
    for j in list(ride):  # a max/min section of words or column vectors holds one element type
        r = plan_reduction(kernel_outs[j], j, 0, strides_ok, inputs, sms)
        if r.colvec > 1 or r.words:
            del ride[j]
    ridden = set(ride.values())
    for j, node in enumerate(kernel_outs):
        if node.op is Op.REDUCE and j not in ridden:
            reds.append(plan_reduction(node, j, len(reds), strides_ok, inputs, sms,
                                       ride.get(j, -1)))
    blocks = max([1] + [g.blocks for g in groups] + [r.blocks for r in reds])
    blocks_scalar = max([1] + [g.blocks_scalar for g in groups] + [r.blocks for r in reds])
    layout = tuple((g.vec, g.unroll, T) for g in groups if g.flat)
    scratch = []
    for r in reds:
        scratch += [None if s is None else (s[0], np.dtype(s[1]).type) for s in r.scratch]
    return KernelPlan(tuple(config), T, tuple(inputs), groups, tuple(reds), blocks,
                      blocks_scalar, layout, bool(layout) and not reds, tuple(scratch))


# ---- whole programs: reductions that feed further work ----------------------------------------
# A fused function is a DAG whose reductions may feed elementwise work and further reductions
# (softmax: max, then sum of exp(x - max), then a division). Five passes, each pure:
#   merge_axes    (first, where it applies: see "merged axes" below) the program over fewer
#                 axes, neighbours that memory walks as one in every input run as one
#   lower         rewrites the traced forms the generator has no section for (vector_norm,
#                 vecdot) into its own (a prologue of elementwise nodes, a sum with an epilogue)
#   split_stages  ends a kernel at every reduction whose value feeds other nodes: kernel k
#                 computes the reductions k reductions deep and the outputs of that depth,
#                 reading the earlier reductions' values as inputs broadcast over their
#                 consumers (elementwise work is recomputed, never stored)
#   plan_rows     where every reduction reduces the innermost axis of one shape and a row fits
#                 in a block's registers, the whole program is one kernel instead: a block per
#                 row, the row loaded once, each reduction a block-wide tree, then the outputs
#                 (fusion_render.render_rows)
#   online_sumexp where no row kernel holds the row: sum(exp(x - max(x))) over the max's axes
#                 becomes one "sumexp" reduction of x, so the max and the sum take one pass
#                 (log-sum-exp over columns reads x once; the max rides on the sum's section)
# The chosen plan is a ProgramPlan; ``describe`` prints it for people (fuse's ``plan()``).

def transform(outs, fn):
    """The DAG of `outs` with every node passed through fn(node, new_args) -> a node or None
    (None: keep the node, copied only where an operand changed). Returns the new outputs;
    nodes that nothing changed stay the same objects (their kernels print as before)."""
    memo = {}

    def walk(node):
        if node is None:
            return None
        key = id(node)
        got = memo.get(key)
        if got is None:
            args = tuple(walk(a) for a in node.args)
            got = fn(node, args)
            if got is None:
                got = node if all(a is b for a, b in zip(args, node.args)) else \
                    Node(node.op, args, node.dtype, node.shape, node.attr)
            memo[key] = got
        return got
    return [walk(n) for n in outs]


def norm_node(x, ord, axes, keepdims, out_name):
    """The REDUCE node of the vector norm of order `ord` of node `x` over `axes`: the prologue
    abs(x) -> (square | pow p | != 0) as IR nodes feeding one reduction whose epilogue is the
    final sqrt or pow(., 1/ord). Sums accumulate in float64 whatever the input (NumPy sums
    float32 pairwise in float32: float64 sums are at least as accurate, and cost nothing on a
    memory-bound kernel); max/min (ord = +-inf) are exact, taken in the result dtype. The
    elementwise steps run in x's real dtype as NumPy's (abs(x)**p for float32 in float32);
    integers and bools are converted to the result dtype first. Eager norms
    (reduction.norm_graph) and fused ones (lower) build the same nodes."""
    rd = out_name
    in_name, shape = x.dtype.name, x.shape
    cdt = in_name if np.dtype(in_name).kind in "fc" else rd  # abs of an integer in floating: no wrap
    real = ("float32" if in_name == "complex64" else "float64" if in_name == "complex128"
            else cdt)
    axes = tuple(sorted(axes))
    oshape = tuple(1 if i in axes else s for i, s in enumerate(shape)) if keepdims else \
        tuple(s for i, s in enumerate(shape) if i not in axes)
    acc, epi, kind = "float64", None, "sum"

    def ew(name, args, compute, dtype):
        return Node(Op.ELEMENTWISE, args, DName(dtype), shape, Elementwise(name, compute))

    def const(v, dtype):
        return Node(Op.CONST, (), DName(dtype), (), Const(v, v))
    if ord == 0:  # the count of nonzero elements
        v = ew("not_equal", (x, const(0, in_name)), in_name, "bool")
    elif ord == 2:
        if np.dtype(in_name).kind == "c":
            # |z| (our hypot: no overflow, inf beats NaN as the spec's abs), squared in float64;
            # re^2 + im^2 gave NaN for inf + NaN j, whose modulus is inf
            v = ew("square", (ew("abs", (x,), in_name, real),), acc, acc)
        else:  # square in float64 (exact for float32 input)
            v = ew("square", (x,), acc, acc)
        epi = Epilogue("sqrt")
    else:
        v = ew("abs", (x,), cdt, real)
        if ord in (math.inf, -math.inf):
            kind, acc = ("max" if ord > 0 else "min"), rd
        elif ord != 1:
            v = ew("pow", (v, const(float(ord), real)), real, real)
            epi = Epilogue("pow", 1.0 / float(ord))
    return Node(Op.REDUCE, (v,), DName(rd), oshape,
                Reduce(kind, axes, keepdims, acc=acc, epilogue=epi))


def lower(outs):
    """vector_norm -> reduction.norm_node's prologue and sum (or max/min) with its epilogue;
    vecdot -> multiply(conj(x1), x2) in the result dtype, summed over the contracted axis."""

    def fn(node, args):
        if node.op is not Op.REDUCE or node.attr.kind not in ("vector_norm", "vecdot"):
            return None
        a = node.attr
        if a.kind == "vector_norm":
            return norm_node(args[0], a.ord, a.axes, a.keepdims, node.dtype.name)
        x1, x2 = args
        dt = node.dtype.name
        shape = tuple(np.broadcast_shapes(x1.shape, x2.shape))
        if np.dtype(dt).kind == "c":
            x1 = Node(Op.ELEMENTWISE, (x1,), DName(dt), x1.shape, Elementwise("conj", dt))
        prod = Node(Op.ELEMENTWISE, (x1, x2), DName(dt), shape, Elementwise("multiply", dt))
        return Node(Op.REDUCE, (prod,), node.dtype, node.shape, Reduce("sum", a.axes, False))
    return transform(outs, fn)


def online_sumexp(outs):
    """sum(exp(x - max(x, axis=A, keepdims=True)), axis=A) -> one "sumexp" reduction of x over
    A: a running maximum and the sum of exp(x - that maximum), rescaled when it grows (the
    online form of softmax kernels). The max node stays for the program's other uses, now
    independent of the sum, so both are computed in one pass over x: log-sum-exp over a
    column reads x once instead of twice. Terms are exp(x - m) in x's dtype, as the eager
    sum's; the sum (and a rescale) in float64, so it differs from the eager float32/64 sum by
    the order of additions only. Only for the multi-kernel plans: a row kernel holds its row."""
    floats = ("float32", "float64")

    def is_ew(n, name, dt):
        return (n.op is Op.ELEMENTWISE and n.attr.name == name and n.dtype.name == dt
                and n.attr.compute_dtype == dt)

    def fn(node, args):
        a = node.attr
        if node.op is not Op.REDUCE or a.kind != "sum" or a.acc is not None or \
                a.epilogue is not None or node.dtype.name not in floats:
            return None
        dt = node.dtype.name
        (e,) = args
        if not is_ew(e, "exp", dt) or not is_ew(e.args[0], "subtract", dt):
            return None
        x, m = e.args[0].args
        if not (m.op is Op.REDUCE and m.attr.kind == "max" and m.attr.keepdims and
                m.attr.axes == a.axes and m.attr.epilogue is None and m.args[0] is x and
                x.dtype.name == dt and tuple(x.shape) == tuple(e.shape)):
            return None
        return Node(Op.REDUCE, (x,), node.dtype, node.shape,
                    Reduce("sumexp", a.axes, a.keepdims, acc="float64"))
    return transform(outs, fn)


def reduce_depths(outs) -> dict:
    """id(node) -> the number of reductions on the longest path below the node's value: the
    kernel that can compute it (a reduction is computed in the kernel of its operand's
    depth; its consumers one kernel later)."""
    depth: dict = {}

    def d(node):
        key = id(node)
        v = depth.get(key)
        if v is None:
            v = 0
            for a in node.args:
                if a is not None:
                    v = max(v, d(a) + (a.op is Op.REDUCE))
            depth[key] = v
        return v
    for n in outs:
        d(n)
    return depth


@dataclass(frozen=True)
class ContiguousLayout:
    """The layout of an intermediate a kernel writes and a later kernel reads: C-contiguous,
    freshly allocated (aligned)."""
    shape: tuple
    itemsize: int

    @property
    def strides(self):
        st, acc = [], self.itemsize
        for n in reversed(self.shape):
            st.append(acc)
            acc *= max(n, 1)
        return tuple(reversed(st))

    @property
    def nbytes(self):
        return size(self.shape) * self.itemsize

    class flags:  # noqa: N801  (NumPy's spelling)
        c_contiguous = True


@dataclass(frozen=True)
class Stage:
    """One kernel of a multi-kernel program. `outs`: its output nodes, rewritten so that the
    reductions of earlier kernels it reads are INPUT nodes (positions `first_mid` + m for
    intermediate m); `inputs`: its INPUT nodes (the function's, then those intermediates);
    `reads`: the intermediates it reads, by number; `results`: per output, (the program's
    output index or None, the intermediate number it provides or None)."""
    outs: tuple
    inputs: tuple
    reads: tuple
    results: tuple


def split_stages(outs, inputs, first_mid):
    """The stages (kernels) of the program computing `outs` (lowered IR) from `inputs` (the
    trace's INPUT nodes): see the pass list above. One stage where no reduction feeds another
    node (its outs are then the given nodes themselves)."""
    depth = reduce_depths(outs)
    mids = {}  # id(reduction read by another node) -> (number, node)

    def find(node, seen):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        for a in node.args:
            if a is not None and a.op is Op.REDUCE and id(a) not in mids:
                mids[id(a)] = (len(mids), a)
            find(a, seen)
    seen = set()
    for n in outs:
        find(n, seen)
    if not mids:
        return (Stage(tuple(outs), tuple(inputs), (), tuple((j, None) for j in range(len(outs)))),)
    # numbered in the order kernels make them (readable plans)
    order = sorted(mids.items(), key=lambda kv: (depth[kv[0]], kv[1][0]))
    mids = {key: (m, node) for m, (key, (_, node)) in enumerate(order)}
    mid_inputs = {key: Node(Op.INPUT, (), node.dtype, node.shape, Input(first_mid + m))
                  for key, (m, node) in mids.items()}
    n_stages = 1 + max(depth[id(n)] for n in outs)
    stages = []
    for k in range(n_stages):
        todo, results = [], []
        for j, n in enumerate(outs):
            if depth[id(n)] == k:
                m = mids.get(id(n))
                todo.append(n)
                results.append((j, None if m is None else m[0]))
        for key, (m, node) in mids.items():
            if depth[key] == k and not any(node is t for t in todo):
                todo.append(node)
                results.append((None, m))
        if not todo:
            continue
        reads = set()
        memo = {}

        def rewrite(node, top, reads=reads, memo=memo):
            """A reduction met as an operand is an earlier kernel's intermediate (its own
            operands are not walked: that kernel computed them)."""
            if node is None:
                return None
            if not top and node.op is Op.REDUCE:
                reads.add(mids[id(node)][0])
                return mid_inputs[id(node)]
            got = memo.get(id(node))
            if got is None:
                args = tuple(rewrite(a, False) for a in node.args)
                got = node if all(x is y for x, y in zip(args, node.args)) else \
                    Node(node.op, args, node.dtype, node.shape, node.attr)
                memo[id(node)] = got
            return got
        rewritten = [rewrite(n, True) for n in todo]
        by_num = {m: mid_inputs[key] for key, (m, _) in mids.items()}
        rd = tuple(sorted(reads))
        stages.append(Stage(tuple(rewritten), tuple(inputs) + tuple(by_num[m] for m in rd), rd,
                            tuple(results)))
    return tuple(stages)


# ---- the row kernel ---------------------------------------------------------------------------
# A block per row holds the row in registers: thread t keeps vectors t, t + T, ... (U vectors
# of V elements: coalesced 16-byte loads, all issued before any use, so a block keeps U * 16
# bytes per thread in flight). Threads per block: enough for about ROW_ELEMS_PER_THREAD
# elements each (fewer threads per row means fewer tree steps; more elements per thread means
# more registers), at most 1024; a row longer than 1024 * ROW_MAX_VECTORS vectors, or inputs
# needing more than ROW_REG_BYTES of registers per thread, take the multi-kernel plan instead.
ROW_ELEMS_VECTORS = 2  # vectors per thread the thread count aims at (with the register cap
# below: 512 threads of 8 float32 a (32768, 4096) row, 4 blocks an SM, against 256 of 16 at
# 64 registers: layer norm 0.2602 -> 0.2563 ms, softmax 0.2643 -> 0.261, x / norm(x)
# 0.265 -> 0.261 on the H200; 512 threads without the cap: 0.2778)
ROW_RESIDENT_THREADS = 2048  # threads an SM holds (sm_80 to sm_100): the register cap of
# a row kernel is what lets that many be resident (__launch_bounds__ min blocks); a kernel
# that spills under it is built again without (fusion.RowLaunch)
ROW_MAX_VECTORS = 8  # at most this many vectors per thread (32 float32 registers an input)
ROW_REG_BYTES = 160  # bytes of row data a thread may hold, over all inputs it loads
ROW_MIN_THREADS = 32
ROW_MAX_THREADS = 1024
# Rows short enough for one warp (32 threads) take a warp each, ROW_WARPS rows a block: a
# 32-thread block per row would cap an SM at 32 resident blocks (1024 threads, a few KiB of
# loads in flight), and a warp's tree needs no block barrier.
ROW_WARPS = 8


@dataclass(frozen=True)
class RowReduce:
    """One reduction of a row kernel (the fields fusion_render._Acc reads)."""
    out: tuple  # a unique key for its runtime slots
    index: int  # its place in the kernel's order (variable r{index})
    kind: str
    dtype: str  # accumulation dtype
    result: str  # the node's dtype
    M: int
    ride: int = -1  # never: a row kernel reads its row once for every reduction anyway


@dataclass(frozen=True)
class RowPlan:
    """The whole program as one kernel over rows of the innermost axis of `shape` (P rows of
    M elements): a block per row (grid-stride over rows), the row's inputs loaded once into
    registers, the reductions in dependency order (each a block-wide tree), then the
    outputs: "row" ones element by element over the row, "one" ones a value per row."""
    shape: tuple
    P: int
    M: int
    threads: int
    vec: int  # elements per vector
    per_thread: int  # vectors per thread (U)
    packed: tuple  # (input position, full): loaded into registers; full: of the row shape
    # (offset by the row), else one row-long vector every row reads
    reduces: tuple  # (REDUCE node, RowReduce) in dependency order
    outs: tuple  # per output: "row" or "one"
    blocks: int
    inputs: tuple  # InputLayout per input
    rows_per_block: int = 1  # > 1: a warp per row (threads == 32), this many rows a block
    kept: tuple = ()  # row values one pass computes and later passes read from registers
    # (softmax's exp(x - max): computed for the sum, read again by the division)
    reads: tuple = ()  # per pass (each reduction, then the row outputs): the positions of the
    # row-shaped inputs it reads

    @property
    def reloads(self) -> tuple:
        """The row-shaped inputs that a reduction reads and then the row outputs read again:
        the kernel's reread variant loads those twice instead of holding them to the end."""
        if "row" not in self.outs:
            return ()
        before = {k for r in self.reads[:len(self.reduces)] for k in r}
        return tuple(k for k in self.reads[-1] if k in before)


@dataclass(frozen=True)
class ProgramPlan:
    """A fused function's program: its stages (kernels) as split_stages made them, and the row
    kernel that replaces them where plan_rows found one (then `rows` is what runs)."""
    stages: tuple
    rows: object = None
    outs: tuple = ()  # the lowered outputs the plans' nodes belong to


def _compatible(shape, S) -> bool:
    """Does `shape` broadcast to S without moving axes (right-aligned, each dim S's or 1)?"""
    if len(shape) > len(S):
        return False
    return all(d == s or d == 1 for d, s in zip(shape[::-1], S[::-1]))


def _row_roles(outs, S):
    """id(node) -> "row" (a value over the row space: broadcasts to S), "red" (a value per row
    of shape S[:-1]) or "scalar" (one element, anything's operand); None where some node fits
    none of them (a view, an operand broadcast along another axis)."""
    roles = {}
    red_shape = S[:-1]

    def role(node):
        key = id(node)
        if key in roles:
            return roles[key]
        r = _role(node)
        roles[key] = r
        return r

    def _role(node):
        if node.op is Op.VIEW:
            # only m[..., None] of a per-row value m (lse: x - max(x, axis=-1)[..., None]):
            # every source axis taken whole, the row space's shape with one column
            (src,) = node.args
            r = role(src)
            if r == "scalar":
                return "scalar"
            whole = all(isinstance(sp, tuple) and len(sp) == 4 and sp.whole
                        for sp in node.attr.spec)
            return "row" if r == "red" and whole and node.shape == red_shape + (1,) else None
        if node.op is Op.REDUCE:
            (x,) = node.args
            if role(x) not in ("row", "scalar") or x.shape != S:
                return None
            return "row" if node.attr.keepdims else "red"
        if node.op in (Op.CONST, Op.PARAM):
            return "scalar"
        if node.op is Op.INPUT:
            if size(node.shape) == 1:
                return "scalar"
            if _compatible(node.shape, S):
                return "row"
            return "red" if node.shape == red_shape else None
        rs = [role(a) for a in node.args if a is not None]
        if None in rs:
            return None
        if "red" in rs:
            return "red" if "row" not in rs and node.shape == red_shape else None
        if "row" in rs:
            return "row" if _compatible(node.shape, S) else None
        return "scalar"
    ok = all(role(n) is not None for n in outs)
    return roles if ok else None


def plan_rows(outs, inputs, sms):
    """The RowPlan of a lowered program, or None where it has none (see the pass list): every
    reduction reduces only the innermost axis of operands of one shape S (rows of M >= 2
    elements), no views, every value either over the row space or one per row, the outputs of
    shape S or one per row (S[:-1], or S[:-1] + (1,)), and the row fits in registers."""
    reds = [n for n in _walk_all(outs) if n.op is Op.REDUCE]
    if not reds:
        return None
    S = reds[0].args[0].shape
    nd = len(S)
    if nd == 0 or any(r.args[0].shape != S or r.attr.axes != (nd - 1,) for r in reds):
        return None
    P, M = size(S[:-1]), S[-1]
    if P == 0 or M < 2:
        return None
    roles = _row_roles(outs, S)
    if roles is None:
        return None
    kinds = []
    for n in outs:
        role = roles[id(n)]
        if role == "row" and n.shape == S:
            kinds.append("row")
        elif (role == "red" and n.shape == S[:-1]) or (role == "row" and
                                                       n.shape == S[:-1] + (1,)):
            kinds.append("one")
        else:
            return None
    # inputs read into registers: row-shaped and C-contiguous (full), or a contiguous row
    # vector every row reads; any other input is read through its strides where used
    used = {id(n) for n in _walk_all(outs)}
    packed = []
    for lay in inputs:
        node = next((n for n in _walk_all(outs) if n.op is Op.INPUT and n.attr.pos == lay.pos),
                    None)
        if node is None or id(node) not in used or roles.get(id(node)) != "row":
            continue
        if node.shape == S and lay.contiguous:
            packed.append((lay.pos, True))
        elif node.shape and node.shape[-1] == M and size(node.shape) == M and lay.strides[-1] == 1:
            packed.append((lay.pos, False))
    isz = {lay.pos: lay.itemsize for lay in inputs}
    widest = max([isz[k] for k, _ in packed] +
                 [itemsize(n.dtype.name) for n, kd in zip(outs, kinds) if kd == "row"] + [1])
    V = max(1, 16 // widest)
    T = 1 << max(0, -(-M // (ROW_ELEMS_VECTORS * V)) - 1).bit_length()
    T = min(ROW_MAX_THREADS, max(ROW_MIN_THREADS, T))
    U = -(-M // (T * V))
    if U > ROW_MAX_VECTORS or U * V * sum(isz[k] for k, _ in packed) > ROW_REG_BYTES:
        return None
    depth = reduce_depths(outs)
    order = sorted(range(len(reds)), key=lambda i: (depth[id(reds[i])], i))
    reduces = tuple((reds[i], RowReduce(("row", k), k, reds[i].attr.kind,
                                        accumulation_dtype(reds[i]), reds[i].dtype.name, M))
                    for k, i in enumerate(order))
    R = ROW_WARPS if T == 32 else 1
    blocks = max(1, min(-(-P // R), MAX_GRID))
    budget = ROW_REG_BYTES - U * V * sum(isz[k] for k, _ in packed)
    row_outs = [n for n, kd in zip(outs, kinds) if kd == "row"]
    kept = _row_kept([r.args[0] for r, _ in reduces] + row_outs, S, U * V, [budget])
    passes = [[r.args[0]] for r, _ in reduces] + ([row_outs] if row_outs else [])
    reads = _row_reads(passes, kept, {k for k, full in packed if full})
    return RowPlan(tuple(S), P, M, T, V, U, tuple(packed), reduces, tuple(kinds), blocks,
                   tuple(inputs), R, kept, reads)


def _row_reads(passes, kept, full) -> tuple:
    """Per pass (its roots), the positions in `full` of the inputs whose elements it reads:
    a walk stopping at reductions (a value per row by then) and at kept values an earlier
    pass computed (read from registers), as the renderer's memo does."""
    kept_ids = {id(n) for n in kept}
    done, reads = set(), []
    for roots in passes:
        here, got = set(), set()

        def walk(node):
            if node is None or id(node) in here:
                return
            here.add(id(node))
            if node.op is Op.REDUCE or id(node) in done:
                return
            if node.op is Op.INPUT and node.attr.pos in full:
                got.add(node.attr.pos)
            for a in node.args:
                walk(a)
        for r in roots:
            walk(r)
        done |= here & kept_ids
        reads.append(tuple(sorted(got)))
    return tuple(reads)


_KEEPABLE = (Op.ELEMENTWISE, Op.WHERE, Op.ASTYPE, Op.CLIP)


# Values worth keeping: those whose computation holds a transcendental function (a dozen or more
# instructions an element). Cheaper ones are recomputed: registers bought occupancy (ptxas,
# sm_90: softmax over (32768, 4096) takes 48 registers without the kept exp and 64 with it;
# layer norm's kept x - mean took 80 instead of 64 for one subtraction an element saved).
TRANSCENDENTAL = frozenset({
    "exp", "expm1", "log", "log1p", "log2", "log10", "logaddexp", "pow", "sin", "cos", "tan",
    "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "hypot"})


# A value computed by this many operations or more (an element) is costly too, as a
# transcendental is: recomputing a long chain (x = x * a + b, 30 times) in every pass also
# printed it once a pass, and NVVM and ptxas time grow with the code (a first call's compile)
KEEP_OPS = 16


def _costly(node, leaves) -> bool:
    """Does computing `node` (down to `leaves` ids, inputs and reductions) call a
    transcendental function or take KEEP_OPS operations or more?"""
    seen = set()
    ops = [0]

    def walk(n):
        if n is None or id(n) in seen or id(n) in leaves or n.op is Op.REDUCE:
            return False
        seen.add(id(n))
        if n.op is Op.ELEMENTWISE and n.attr.name in TRANSCENDENTAL:
            return True
        if n.op in _KEEPABLE:
            ops[0] += 1
            if ops[0] >= KEEP_OPS:
                return True
        return any(walk(a) for a in n.args)
    return walk(node)


def _row_kept(bodies, S, per_thread, budget):
    """The row values worth keeping in registers between the row kernel's passes (`bodies`:
    the values each pass computes, in order): a value of the row shape that an earlier pass
    computed (the largest such, not its operands) and whose computation is costly, while the
    registers it takes (per_thread elements) fit `budget` bytes beside the inputs held. At 32
    float32 a thread the exp of softmax over (4096, 32768) would spill (ptxas: 132 bytes), so
    the budget stays the inputs' (no reuse of their registers is assumed)."""
    kept, kept_ids, before = [], set(), set()
    for root in bodies:
        here = set()

        def walk(node):
            if node is None or id(node) in here:
                return
            here.add(id(node))
            if node.op is Op.REDUCE:
                return  # its value is the reduction's (a scalar per row)
            if id(node) in before and node.op in _KEEPABLE and node.shape == S:
                cost = per_thread * itemsize(node.dtype.name)
                if id(node) not in kept_ids and cost <= budget[0] and _costly(node, kept_ids):
                    budget[0] -= cost
                    kept.append(node)
                    kept_ids.add(id(node))
                if id(node) in kept_ids:
                    return
            for a in node.args:
                walk(a)
        walk(root)
        before |= here
    return tuple(kept)


def _walk_all(outs):
    seen, order = set(), []

    def walk(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        for a in node.args:
            walk(a)
        order.append(node)
    for n in outs:
        walk(n)
    return order


# ---- merged axes --------------------------------------------------------------------------------
# A reduction over several neighbouring axes (the batch and the pixels of images: (0, 2, 3) of
# NCHW) splits every reduced index into the axes' coordinates, a division a load. Where memory
# walks neighbouring axes as one in every input, a program runs over fewer axes instead: one
# rule (merge_groups) for the eager reductions (reduction.merge_dims) and fused programs
# (merge_axes). H200, prod over axes (0, 1) of a (64, 64, 16384) float32: 0.175 ms, over axis 0
# of (4096, 16384): 0.079.


def merge_groups(shape, strides_sets, axes):
    """(groups, merged strides) of `shape`'s axes: each group a run of neighbouring axes that
    are all reduced (in `axes`) or all kept, and that memory walks as one in every stride tuple
    of `strides_sets` (an input's byte strides over `shape`, 0 where it broadcasts): of two
    neighbours one has length 1, or the outer one's stride is the inner one's span. The merged
    strides: per stride tuple, each group's innermost stride (that of its last axis longer
    than 1). The kept axes keep their order, so a flat output is the same."""
    red = set(axes)
    groups = [[0]]
    runs = [[[shape[0], st[0]]] for st in strides_sets]  # per tuple: per group [length, stride]
    for a in range(1, len(shape)):
        n = shape[a]
        ok = (a in red) == (groups[-1][0] in red) and all(
            n == 1 or run[-1][0] == 1 or run[-1][1] == st[a] * n
            for st, run in zip(strides_sets, runs))
        if ok:
            groups[-1].append(a)
            for st, run in zip(strides_sets, runs):
                if n != 1:
                    run[-1][1] = st[a]
                run[-1][0] *= n
        else:
            groups.append([a])
            for st, run in zip(strides_sets, runs):
                run.append([n, st[a]])
    return (tuple(tuple(g) for g in groups),
            tuple(tuple(g[1] for g in run) for run in runs))


@dataclass(frozen=True)
class StridedLayout:
    """An input's layout over merged axes: a view of the same memory (byte strides), as C-
    contiguous as the array it views."""
    shape: tuple
    strides: tuple
    itemsize: int
    c_contiguous: bool

    @property
    def nbytes(self):
        return size(self.shape) * self.itemsize

    @property
    def flags(self):
        return self  # (.c_contiguous, NumPy's spelling)


@dataclass(frozen=True)
class MergedAxes:
    """merge_axes' answer: the program over fewer axes. `groups`: per merged axis, the
    original axes it covers; `inputs`, `outs`: the rewritten INPUT and output nodes (the
    outputs' flat C order is that of the originals, so only their shapes differ);
    `layouts`: per input, its StridedLayout."""
    groups: tuple
    inputs: tuple
    outs: tuple
    layouts: tuple


def merge_axes(outs, inputs, layouts):
    """The program computing `outs` from `inputs` (INPUT nodes, with their arrays' layouts:
    .shape, .strides in bytes, .itemsize, .flags.c_contiguous) over merged axes, or None.

    Where it applies: every reduction reduces one operand of one shape S over the same axes A,
    no node is a view, and every other node is S, S with 1 on A (keepdims; a reduction over
    leading axes feeding further work), or one element, after broadcasting's left padding. Two
    neighbouring axes merge when both are reduced or both kept and memory walks them as one in
    every input (length 1 in it, or the outer stride the inner one's span)."""
    nodes = _walk_all(outs)
    reds = [n for n in nodes if n.op is Op.REDUCE]
    if not reds or any(n.op is Op.VIEW for n in nodes):
        return None
    S, A = reds[0].args[0].shape, tuple(reds[0].attr.axes)
    nd = len(S)
    if nd < 2:
        return None
    for r in reds:
        if len(r.args) != 1 or r.args[0].shape != S or tuple(r.attr.axes) != A:
            return None
    red = set(A)
    K = tuple(1 if a in red else n for a, n in enumerate(S))
    ones = (1,) * nd
    fed = {id(a) for n in nodes for a in n.args if a is not None}

    def pad(shape):
        return (1,) * (nd - len(shape)) + tuple(shape) if len(shape) <= nd else None
    for n in nodes:
        if n.op is Op.REDUCE and id(n) not in fed:
            continue  # an output only: any shape its keepdims gives
        if pad(n.shape) not in (S, K, ones):
            return None
    bstrides = []  # per input: its byte strides over S (0 where it broadcasts)
    for node, lay in zip(inputs, layouts):
        p = pad(node.shape)
        if p not in (S, K, ones) or tuple(lay.shape) != tuple(node.shape):
            return None
        st = (0,) * (nd - len(node.shape)) + tuple(lay.strides)
        bstrides.append(tuple(0 if e == 1 else t for e, t in zip(p, st)))
    groups, mstrides = merge_groups(S, bstrides, A)
    if len(groups) == nd:
        return None
    mS = tuple(math.prod(S[a] for a in g) for g in groups)
    mA = tuple(i for i, g in enumerate(groups) if g[0] in red)
    mK = tuple(1 if i in mA else n for i, n in enumerate(mS))
    kept = tuple(n for i, n in enumerate(mS) if i not in mA)

    def shape_of(n):
        if n.op is Op.REDUCE:
            return mK if n.attr.keepdims else kept
        if n.shape == ():
            return ()
        p = pad(n.shape)
        return mS if p == S else mK if p == K else (1,) * len(mS)
    memo: dict = {}

    def walk(node):
        if node is None:
            return None
        got = memo.get(id(node))
        if got is None:
            args = tuple(walk(a) for a in node.args)
            attr = node.attr
            if node.op is Op.REDUCE:  # (its eager call's axis too: the program replays alike)
                kw = tuple((k, v if k != "axis" or v is None else mA[0] if type(v) is int
                            else mA) for k, v in attr.eager_kwargs)
                attr = replace(attr, axes=mA, eager_kwargs=kw)
            got = memo[id(node)] = Node(node.op, args, node.dtype, shape_of(node), attr)
        return got
    new_outs = tuple(walk(n) for n in outs)
    new_inputs = tuple(walk(n) for n in inputs)
    new_lays = []
    for node, lay, st in zip(new_inputs, layouts, mstrides):
        if node.shape == ():
            new_lays.append(StridedLayout((), (), lay.itemsize, True))
        else:
            new_lays.append(StridedLayout(node.shape, st, lay.itemsize,
                                          bool(lay.flags.c_contiguous)))
    return MergedAxes(groups, new_inputs, new_outs, tuple(new_lays))


# ---- plans in words ----------------------------------------------------------------------------
def _red_words(node) -> str:
    a = node.attr
    return f"{a.kind} over axes {a.axes} of {tuple(node.args[0].shape)}"


def describe_merge(groups) -> str:
    """merge_axes' groups in words (a plan's first line)."""
    runs = ", ".join("(" + ", ".join(map(str, g)) + ")" for g in groups if len(g) > 1)
    return f"axes {runs} run as one each (memory walks them so): {len(groups)} axes in all\n"


def describe_rows(rows) -> str:
    reds = "; ".join(f"{_red_words(n)}" for n, _ in rows.reduces)
    who = (f"one warp per row ({rows.rows_per_block} rows a block)" if rows.rows_per_block > 1
           else f"one block of {rows.threads} threads per row")
    return (f"1 kernel (rows): {who}, {rows.P} rows of "
            f"{rows.M} elements held in registers ({rows.per_thread} x {rows.vec}-element "
            f"vectors a thread); reductions in the row, in order: {reds}; outputs: "
            f"{', '.join(rows.outs)}"
            + (f"; a launch long enough to time also tries reading arguments "
               f"{list(rows.reloads)} again for the outputs (L2 keeps the rows between) and "
               f"keeps the faster" if rows.reloads and rows.M % rows.vec == 0 else ""))


def describe_stages(plan, kernel_plans) -> str:
    lines = [f"{len(plan.stages)} kernel{'s' if len(plan.stages) > 1 else ''}"
             + (" (stages: each ends at reductions later work reads)"
                if len(plan.stages) > 1 else "")]
    for k, (st, kp) in enumerate(zip(plan.stages, kernel_plans)):
        parts = []
        for r, node in zip(kp.reductions, [st.outs[r.out] for r in kp.reductions]):
            how = ("rows" if r.row_like else "columns") + (f", split {r.S} ways" if r.S > 1
                                                            else "")
            m = st.results[r.out][1]
            into = "" if m is None else f" -> intermediate {m}"
            parts.append(f"{_red_words(node)} ({r.P} outputs of {r.M} elements: {how}){into}")
            if r.ride >= 0:
                m = st.results[r.ride][1]
                into = "" if m is None else f" -> intermediate {m}"
                parts.append(f"{_red_words(st.outs[r.ride])} (in the {r.kind}'s pass, "
                             f"one read of x){into}")
        for g in kp.groups:
            parts.append(f"elementwise over {g.shape} ({'flat' if g.flat else 'strided'})")
        reads = f", reading intermediates {list(st.reads)}" if st.reads else ""
        lines.append(f"  kernel {k}{reads}: " + "; ".join(parts))
    return "\n".join(lines)
