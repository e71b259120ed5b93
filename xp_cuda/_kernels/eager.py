"""Eager calls that are one node of the fused IR: ``where``, ``clip``, ``astype`` (conversions)
and elementwise functions of strided or broadcast arrays.

Each is the small graph input(s) -> node, planned and printed by the fused generator
(fusion_plan, fusion_render) and run by fusion.Launch, exactly as the same call inside a fused
function: one code path, any strides and broadcasting, 16-byte vectors where the operands are
contiguous. The source holds no sizes, so a new shape with the same ranks and broadcast
pattern reuses the compiled kernel; launches are kept per exact layout in the reductions'
bounded LRU (reduction.lookup/keep: the cache does not grow with user data).
"""
from __future__ import annotations

import math

from ._runtime import dtype_name
from .fusion_ir import Clip, DName, Elementwise, Graph, Input, Node, Op, Param
from .reduction import keep, lookup


def _inputs(arrays):
    return [Node(Op.INPUT, (), DName(dtype_name(a.dtype)), tuple(a.shape), Input(i))
            for i, a in enumerate(arrays)]


def launch_key(key, arrays, device) -> tuple:
    """The launch cache's key of a one-node program: ``key`` (what the node computes), the
    device, and each operand's dtype and layout. A caller holding these may look the launch
    up itself (``reduction.lookup``) before doing any other work."""
    return (key, device) + tuple((a.dtype, a.shape, a.strides) for a in arrays)


def launch_of(cp, key, arrays, build, device, shape, uses=()):
    """The launch for (key, the arrays' layouts, device), looked up first (a hit does no other
    work), else built by ``build(inputs) -> [out node]``; None for an empty ``shape`` (no
    launch is kept for an empty result). A caller may keep it and run it again on arrays of
    the same layouts (``launch(arrays, values)``; ``uses``: the Graph's parameter uses, whose
    values a call passes)."""
    full = launch_key(key, arrays, device)
    launch = lookup(full)
    if launch is None:
        if math.prod(shape) == 0:
            return None
        from .fusion import Launch
        ins = _inputs(arrays)
        launch = keep(full, Launch(cp, Graph(ins, uses), build(ins), list(arrays)))
    return launch


def where_launch(cp, cond, x1, x2, out_dtype: str, shape, device):
    """The launch of cond ? x1 : x2 broadcast to ``shape``, each side converted to
    ``out_dtype`` (a name); None where ``shape`` is empty."""
    return launch_of(cp, ("where", out_dtype, shape), (cond, x1, x2),
                     lambda ins: [Node(Op.WHERE, ins, DName(out_dtype), shape)], device, shape)


class _Value:
    """A scalar parameter of a one-node program: the k-th value a call passes."""

    __slots__ = ("fn",)

    def __init__(self, k: int):
        self.fn = lambda values: values[k]


def _as_is(value):
    return value


def clip_launch(cp, arrays, sides, compare, out_dtype: str, shape, device):
    """The launch of clip(x, lo, hi) broadcast to ``shape``, printed as the fused CLIP node
    (one code path: eager and fused clip give the same bits; a NaN bound gives NaN).
    ``arrays``: x, then each bound given as an array; ``sides``: per bound (lo, hi), "array",
    "scalar" (a kernel parameter of ``out_dtype``: a call passes its value, in order) or None;
    ``compare``: per bound, the dtype name both sides compare in (None where absent). None
    where ``shape`` is empty."""
    nscalars = sides.count("scalar")

    def build(ins):
        args, k, u = [ins[0]], 1, 0
        for side in sides:
            if side == "array":
                args.append(ins[k])
                k += 1
            elif side == "scalar":
                args.append(Node(Op.PARAM, (), DName(out_dtype), (), Param(u)))
                u += 1
            else:
                args.append(None)
        return [Node(Op.CLIP, args, DName(out_dtype), shape, Clip(*compare))]
    uses = tuple((_Value(u), DName(out_dtype), _as_is) for u in range(nscalars))
    return launch_of(cp, ("clip", out_dtype, sides, compare, shape), tuple(arrays), build,
                     device, shape, uses)


def astype_launch(cp, x, out_dtype: str, device):
    """The launch of x converted element by element to ``out_dtype`` (C casts, as CuPy's
    astype; to bool: nonzero, NaN included, is True) into a new C-contiguous array; None where
    x is empty."""
    return launch_of(cp, ("astype", out_dtype), (x,),
                     lambda ins: [Node(Op.ASTYPE, ins, DName(out_dtype), tuple(x.shape))],
                     device, x.shape)


def astype(cp, x, out_dtype: str, device):
    """x converted to ``out_dtype`` (see astype_launch), a new C-contiguous array."""
    launch = astype_launch(cp, x, out_dtype, device)
    return cp.empty(x.shape, dtype=out_dtype) if launch is None else launch((x,), ())[0]


def ew_key(name: str, compute_dtype: str, out_dtype: str, shape) -> tuple:
    """What ``elementwise`` computes, as its ``launch_key`` takes it."""
    return ("ew", name, compute_dtype, out_dtype, shape)


def elementwise_launch(cp, name: str, compute_dtype: str, out_dtype: str, arrays, shape,
                       device):
    """The launch of elementwise function ``name`` of the OPS table on arrays of any strides,
    broadcast to a non-empty ``shape``: each operand read through its strides in its own
    dtype, converted to ``compute_dtype`` in registers, the result written once,
    C-contiguous. (Contiguous operands of the output's shape take elementwise.Plan's hot path
    instead.)"""
    shape = tuple(shape)
    return launch_of(cp, ew_key(name, compute_dtype, out_dtype, shape), tuple(arrays),
                     lambda ins: [Node(Op.ELEMENTWISE, ins, DName(out_dtype), shape,
                                       Elementwise(name, compute_dtype))], device, shape)
