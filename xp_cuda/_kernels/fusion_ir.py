"""The typed IR of fused functions: a closed set of operations and one attribute type per op.

xp_cuda.fusion's tracer builds it; fusion.fuse replays it eagerly (cpu); the kernel layer plans
(fusion_plan) and prints (fusion_render) it. A node's ``dtype`` is any object with a ``.name``
(the spec layer's DType, or ``DName`` here); attributes hold dtype NAMES, so the kernel layer
never needs the spec layer's tables. Nodes compare by identity (the printer memoises by node).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional


class Op(enum.Enum):
    INPUT = "input"  # an array argument of the fused function
    CONST = "const"  # a Python scalar written in the function, typed by the operator rules
    PARAM = "param"  # a Python scalar argument: a kernel parameter, its value set per call
    ELEMENTWISE = "ew"  # one function of the elementwise table (OPS)
    WHERE = "where"
    ASTYPE = "astype"
    CLIP = "clip"
    VIEW = "view"  # x[key] with ints, slices, None, ...: a strided view of x's values
    REDUCE = "reduce"  # sum, prod, max, min, mean, all, any, argmax, argmin, var, std, and (as
    # traced; fusion_plan.lower rewrites them) vector_norm, vecdot. A reduction may feed further
    # work: fusion_plan.split_stages ends a kernel at it, or plan_rows keeps it in a row kernel


@dataclass(frozen=True)
class DName:
    """A dtype known by name only (the eager entries of the kernel layer build nodes of it)."""
    name: str


@dataclass(frozen=True)
class Input:
    pos: int  # position among the fused function's arguments (keyword ones sorted after)


@dataclass(frozen=True)
class Const:
    value: Any  # the value as the kernel holds it (a clip bound already clamped to the dtype)
    source: Any  # the value the user wrote (eager replay passes it back to clip)


@dataclass(frozen=True)
class Param:
    use: int  # index into the trace's parameter uses


@dataclass(frozen=True)
class Elementwise:
    name: str  # key of the OPS table
    compute_dtype: str  # dtype name the operands are converted to before the op


@dataclass(frozen=True)
class Clip:
    """Per bound, the dtype name both sides are compared in (promotion of x's dtype and the
    bound's, decided at trace time); None where the bound is absent."""
    lo_compare: Optional[str]
    hi_compare: Optional[str]


class Take(NamedTuple):
    """A source axis indexed by an int: the view reads this index of it."""
    index: int  # type: ignore[assignment]  # a field named as tuple's method


class Slice(NamedTuple):
    """A source axis sliced: view axis `out_axis` reads source index start + step * i."""
    out_axis: int
    start: int
    step: int
    whole: bool  # `:`, the axis taken as it is


@dataclass(frozen=True)
class View:
    spec: tuple  # per source axis, a Take or a Slice
    key: Any  # the user's index key (eager replay indexes with it)


@dataclass(frozen=True)
class Epilogue:
    """One function of the elementwise table (OPS) applied to a reduction's value once, at its
    final write, in the accumulation dtype and before the conversion to the node's dtype: the
    sqrt of a 2-norm, the pow(., 1/p) of a p-norm."""
    name: str  # key of the OPS table
    operand: Any = None  # the second operand of a binary function (a Python scalar), else None


@dataclass(frozen=True)
class Reduce:
    """sum, prod, max, min, mean, all, any accumulate one value of the accumulation dtype.
    argmax, argmin (node dtype int64: the first extreme's C-order index in the reduced range,
    NaN the extreme) and var, std (Welford moments, N - correction degrees of freedom) carry a
    small struct (fusion.cuh)."""
    kind: str
    axes: tuple  # reduced axes of the operand, sorted
    keepdims: bool
    eager_kwargs: tuple = ()  # (name, value) pairs the eager function was called with
    acc: Optional[str] = None  # accumulation dtype name where it is not the node's dtype
    # (var/std: the moments' float dtype, float64 unless named)
    correction: float = 0.0  # var, std
    epilogue: Optional[Epilogue] = None
    ord: Optional[float] = None  # vector_norm (as traced, before fusion_plan.lower)


ATTR = {Op.INPUT: Input, Op.CONST: Const, Op.PARAM: Param, Op.ELEMENTWISE: Elementwise,
        Op.WHERE: type(None), Op.ASTYPE: type(None), Op.CLIP: Clip, Op.VIEW: View,
        Op.REDUCE: Reduce}


class Node:
    """One IR node: op, operand nodes (a clip's absent bound is None), result dtype, result
    shape, and the op's attribute (see ATTR)."""

    __slots__ = ("op", "args", "dtype", "shape", "attr")

    def __init__(self, op: Op, args, dtype, shape, attr=None):
        assert isinstance(attr, ATTR[op]), (op, attr)
        self.op, self.args, self.dtype, self.shape, self.attr = op, tuple(args), dtype, \
            tuple(shape), attr

    def __repr__(self):
        return f"Node({self.op.name}, {self.dtype}, {self.shape}, {self.attr!r})"


class Graph(NamedTuple):
    """What the kernel layer needs of a trace: the input nodes (by argument position) and the
    parameter uses, each (parameter, dtype, convert) as xp_cuda.fusion's Trace holds them."""
    inputs: list
    uses: tuple = ()
