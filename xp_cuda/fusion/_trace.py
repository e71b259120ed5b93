"""The tracer: xp_cuda's own eager functions, run on Tracer arrays, record typed IR nodes.

A Tracer names the trace backend (``TraceBackend`` below) as its own, so the spec layer's
functions, unchanged, validate and compute the result dtype and shape exactly as they do
eagerly, then make their one backend call here, which records a node instead of computing
(torch's prims with meta functions, not a tracing flag in every function). So a fused function
has the dtypes, shapes and errors of the eager one by construction; this module decides none of
them. A primitive with no fused form refuses with the name the spec layer called it by. The
nodes are the kernel layer's typed IR (xp_cuda._kernels.fusion_ir): an ``Op`` and one attribute
dataclass per op, holding what the trace alone knows (e.g. a clip bound's comparison dtype).
"""
from __future__ import annotations

import operator
import threading

import numpy as np

from .. import _revisions
from .._array import Array, register_native_type
from .._backends import Backend, EmptyMask
from .._dtypes import PROMOTION_TABLE, TypedScalar, check_scalar, clip_scalar, scalar_type_name
from .._dtypes import scalar_dtype, typed_scalar
from .._dtypes import from_numpy_dtype
from .._dtypes import int64 as INDEX_DTYPE  # argmax/argmin: the default index dtype
from .._kernels.reduction import MOMENTS_ACC
from .._kernels.fusion_ir import (Clip, Const, Elementwise, Input, Node, Op, Param, Reduce,
                                  Slice, Take, View)
from .._validation import reduced_shape

_FUSE = "xp_cuda.fusion.fuse"


def unsupported(what: str) -> TypeError:
    return TypeError(
        f"{what} is not supported inside a function fused with {_FUSE} (it needs data-dependent "
        f"control flow or shapes, or has no fused form); move it outside the fused function")


class Meta:
    """What a Tracer holds instead of a backend array: dtype and shape, and its IR node. Any
    backend operation on it (an xp_cuda function with no fused form) raises the TypeError."""

    __slots__ = ("dtype", "shape", "ndim", "size", "node")

    def __init__(self, node):
        self.node = node
        self.dtype = node.dtype._np
        self.shape = node.shape
        self.ndim = len(node.shape)
        self.size = int(np.prod(node.shape, dtype=np.int64)) if node.shape else 1

    def _refuse(self, what=None):
        raise unsupported(f"an xp_cuda operation on a traced array's data ({what or 'values'})")

    def __getattr__(self, attr):
        self._refuse(attr)

    def __array__(self, *a, **k):
        self._refuse()

    def __array_function__(self, func, types, args, kwargs):
        self._refuse(func.__name__)

    def __array_ufunc__(self, ufunc, method, *args, **kwargs):
        self._refuse(ufunc.__name__)

    def __getitem__(self, key):
        self._refuse()

    def __len__(self):
        self._refuse()


class Tracer(Array):
    """An Array standing for a value of the function being fused."""

    __slots__ = ()

    def __repr__(self):
        return f"Tracer(shape={self.shape}, dtype={self.dtype}, device={self._device})"

    __str__ = __repr__

    def _no(self, what):
        raise unsupported(what)

    def __bool__(self):
        self._no("bool() of a traced array (a Python if/while/and/or/not on array values)")

    def __int__(self):
        self._no("int() of a traced array")

    def __float__(self):
        self._no("float() of a traced array")

    def __complex__(self):
        self._no("complex() of a traced array")

    def __index__(self):
        self._no("using a traced array as a Python index")

    def __setitem__(self, key, value):
        self._key(key, setting=True)  # a key eager indexing refuses gets the eager error
        self._no("item assignment (x[...] = v)")

    def to_device(self, device, /, *, stream=None):
        self._no("to_device")

    def __dlpack__(self, **kw):
        self._no("__dlpack__")

    def _operand(self, other, op):
        if isinstance(other, ScalarParam):
            check_scalar(other.sample, self.dtype, op)  # the eager error, at trace time
            dtype = self.dtype
            return _param_scalar(other, dtype, lambda v, d=dtype, o=op: check_scalar(v, d, o))
        return super()._operand(other, op)


class ParamScalar(TypedScalar):
    """A scalar argument of the fused function met by an operator: a kernel parameter."""

    __slots__ = ("use",)


def _param_scalar(param, dtype, convert):
    ts = ParamScalar(None, dtype)
    ts.use = current().add_use(param, dtype, convert)
    return ts


# ---- scalar arguments -------------------------------------------------------------------------
class ScalarParam:
    """A Python scalar argument of the fused function (or Python arithmetic on such arguments).
    It stays a kernel parameter: ``fn(args)`` recomputes its value on every call, in Python, so
    the arithmetic is exactly Python's; ``sample`` is its value at trace time (for the checks)."""

    __slots__ = ("fn", "sample")

    def __init__(self, fn, sample):
        self.fn, self.sample = fn, sample

    def _no(self, what):
        raise unsupported(f"{what} of a scalar argument (its value is a kernel parameter)")

    def __bool__(self):
        self._no("bool() / a Python if")

    def __int__(self):
        self._no("int()")

    def __float__(self):
        self._no("float() (math module functions)")

    def __complex__(self):
        self._no("complex()")

    def __index__(self):
        self._no("use as an index, axis or size")

    __hash__ = None  # type: ignore[assignment]  # as Array's

    def __repr__(self):
        return f"ScalarParam(sample={self.sample!r})"

    def as_scalar_array(self, like, where):
        """The 0-d array the scalar rules make of this argument beside the array ``like`` (as
        _array.scalar_array does of a Python scalar; where's operands from 2024.12): a 0-d
        Tracer of a kernel parameter. Its dtype is decided by the value at trace time (the
        cache key holds the argument's Python type); each call converts its value by the
        same rule, with eager's errors (an int out of range raises then, as eagerly)."""
        dtype = scalar_dtype(self.sample, like.dtype, where)
        if dtype == like.dtype:
            def convert(v, d=dtype, w=where):
                return typed_scalar(v, d, w).value
        else:  # the revision's wider dtype (a complex beside a real floating array)
            def convert(v, d=dtype):  # type: ignore[misc]  # (no `where`: nothing to refuse)
                return d._np.type(v)
        t = current()
        return t.tracer(Node(Op.PARAM, (), dtype, (), Param(t.add_use(self, dtype, convert))))


def _lift(v):
    if isinstance(v, ScalarParam):
        return v
    if scalar_type_name(v) is not None:
        return ScalarParam(lambda a, v=v: v, v)
    return None


def _sbin(op, reflected=False):
    def method(self, other):
        o = _lift(other)
        if o is None:
            return NotImplemented
        f1, f2 = (o.fn, self.fn) if reflected else (self.fn, o.fn)
        s1, s2 = (o.sample, self.sample) if reflected else (self.sample, o.sample)
        return ScalarParam(lambda a: op(f1(a), f2(a)), op(s1, s2))
    return method


def _sun(op):
    def method(self):
        f = self.fn
        return ScalarParam(lambda a: op(f(a)), op(self.sample))
    return method


for _stem, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow), ("and", operator.and_),
                   ("or", operator.or_), ("xor", operator.xor), ("lshift", operator.lshift),
                   ("rshift", operator.rshift)):
    setattr(ScalarParam, f"__{_stem}__", _sbin(_op))
    setattr(ScalarParam, f"__r{_stem}__", _sbin(_op, True))
for _stem, _op in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                   ("ge", operator.ge), ("eq", operator.eq), ("ne", operator.ne)):
    setattr(ScalarParam, f"__{_stem}__", _sbin(_op))
_UNARY: tuple = (("neg", operator.neg), ("pos", operator.pos), ("abs", operator.abs),
                 ("invert", operator.invert))
for _stem, _op in _UNARY:
    setattr(ScalarParam, f"__{_stem}__", _sun(_op))
del _stem, _op


# ---- the trace being recorded ---------------------------------------------------------------
_local = threading.local()


class Trace:
    """Nodes recorded by one run of the user's function on Tracers."""

    def __init__(self, device):
        self.device = device
        self.inputs = []  # input Nodes, by array-argument position
        self.uses = []  # (ScalarParam, DType, convert) per parameter use
        self.n_nodes = 0
        self.args = {}  # id(Meta) -> argument position, for each array argument's Meta
        self.writes = {}  # argument position -> its Meta, for each argument updated in place
        self.viewed = {}  # id(Meta) -> Meta, for each value a view was taken of

    def assign(self, meta, value):
        """An in-place operator's update (the spec layer checked dtype and shape): the value
        now names the new node, so every later read of it (through any Python name bound to
        the same array) sees the update; an argument's final node is written back to the
        caller's array. A view shares memory with its base, which a rebinding cannot follow:
        an update of a view, or of a value a view was taken of, is refused."""
        if meta.node.op is Op.VIEW or id(meta) in self.viewed:
            raise unsupported("an in-place operator on a view, or on an array a view was taken "
                              "of (they share memory; write y = x + 1 and use y)")
        meta.node = value.node
        pos = self.args.get(id(meta))
        if pos is not None:
            self.writes[pos] = meta

    def add_use(self, param, dtype, convert):
        self.uses.append((param, dtype, convert))
        return len(self.uses) - 1

    def tracer(self, node):
        return Tracer._new(Meta(node), self.device)


def current() -> Trace:
    t = getattr(_local, "trace", None)
    if t is None:
        raise unsupported("a Tracer used after its fused function returned")
    return t


def _node_of(x, what):
    """The node of an operand: Tracers, typed constants, parameter uses."""
    if isinstance(x, Array):
        if not isinstance(x, Tracer):
            raise TypeError(
                f"{what}: an xp_cuda array that is not an argument of the fused function (a "
                f"global or closure variable) was used inside it; pass it as an argument "
                f"({_FUSE} traces arguments only)")
        return x._data.node
    if isinstance(x, ParamScalar):
        return Node(Op.PARAM, (), x.dtype, (), Param(x.use))
    if isinstance(x, TypedScalar):  # a Python scalar typed by the operator rules: a constant
        return Node(Op.CONST, (), x.dtype, (), Const(x.value, x.value))
    raise AssertionError(f"unexpected operand {x!r}")


def _bound(v, dtype, argname):
    """A clip bound: None, a Tracer, a Python scalar (constant) or a scalar argument."""
    if v is None:
        return None
    if isinstance(v, Array):
        return _node_of(v, "clip")
    if isinstance(v, ScalarParam):
        return Node(Op.PARAM, (), dtype, (), Param(current().add_use(
            v, dtype, lambda val, d=dtype, a=argname: clip_scalar(val, d, a))))
    return Node(Op.CONST, (), dtype, (), Const(clip_scalar(v, dtype, argname), v))


# ---- the recorders the hooks call (after their validation) ----------------------------------
def elementwise(name, operands, in_dtype, out_dtype, shape):
    args = [_node_of(o, name) for o in operands]
    return current().tracer(Node(Op.ELEMENTWISE, args, out_dtype, shape,
                                 Elementwise(name, in_dtype.name)))


def where(condition, x1, x2, dtype, shape):
    args = [_node_of(a, "where") for a in (condition, x1, x2)]
    return current().tracer(Node(Op.WHERE, args, dtype, shape))


def clip(x, lo, hi, shape):
    args = [_node_of(x, "clip"), _bound(lo, x.dtype, "min"), _bound(hi, x.dtype, "max")]
    # each side compares in the promotion of x's dtype and the bound's (a bound of another
    # kind was refused by the eager check; a scalar bound has x's dtype)
    cmp = [None if b is None else PROMOTION_TABLE.get((x.dtype, b.dtype), x.dtype).name
           for b in args[1:]]
    return current().tracer(Node(Op.CLIP, args, x.dtype, shape, Clip(*cmp)))


def astype(x, dtype, device):
    if device is not None and device != x.device:
        raise unsupported("astype(..., device=...) moving data to another device")
    return current().tracer(Node(Op.ASTYPE, [_node_of(x, "astype")], dtype, x.shape))


def reduce(kind, x, axes, keepdims, rdtype, kwargs, operands=None, shape=None, **fields):
    """A REDUCE node of `kind` over `axes` of x (or of `operands`, vecdot's two); `kwargs`: the
    eager function's keyword arguments for the replay; `fields`: the Reduce attribute's
    kind-specific fields (acc, correction, ord)."""
    args = [_node_of(o, kind) for o in (operands or [x])]
    if shape is None:
        shape = reduced_shape(x.shape, axes, keepdims)
    eager = tuple(kwargs.items())  # the replay's keyword arguments
    return current().tracer(Node(Op.REDUCE, args, rdtype, shape,
                                 Reduce(kind, tuple(sorted(axes)), keepdims, eager, **fields)))


def getitem(x, key, k):
    """x[key] with ints, slices, None and Ellipsis: a strided view of x's values."""
    if isinstance(k, EmptyMask) or (hasattr(k, "dtype") and not isinstance(k, tuple)):
        raise unsupported("boolean-mask indexing (its result shape depends on the data)")
    node = _node_of(x, "__getitem__")
    current().viewed[id(x._data)] = x._data  # an in-place update of x would miss the view
    parts = k if isinstance(k, tuple) else (k,)
    n_axes = sum(1 for p in parts if p is not None and p is not Ellipsis)
    spec, shape = [], []  # per source axis: Take(index) or Slice(out_axis, start, step, whole)
    axis = 0
    for p in parts:
        if p is Ellipsis:
            for _ in range(x.ndim - n_axes):
                spec.append(Slice(len(shape), 0, 1, True))
                shape.append(x.shape[axis])
                axis += 1
        elif p is None:
            shape.append(1)
        elif isinstance(p, slice):
            start, stop, step = p.indices(x.shape[axis])
            n = len(range(start, stop, step))
            full = p.start is None and p.stop is None and p.step is None
            spec.append(Slice(len(shape), start, step, full))
            shape.append(n)
            axis += 1
        else:
            i = int(p)
            spec.append(Take(i + x.shape[axis] if i < 0 else i))
            axis += 1
    # (Array._key refused a key naming fewer axes than x has without an ellipsis, as eagerly)
    return current().tracer(Node(Op.VIEW, [node], x.dtype, shape, View(tuple(spec), key)))


# ---- running the user's function ------------------------------------------------------------
def trace(fn, args, kwargs, device):
    """Run fn on Tracers for its array arguments and ScalarParams for its Python scalars.
    Returns (Trace, output nodes, is_tuple, output sources): per output, the position of the
    argument it is (the same array object, possibly updated in place), else None. The
    arguments updated in place are ``Trace.writes`` (position -> Meta; ``.node`` the final
    value)."""
    t = Trace(device)
    names = [("a", i) for i in range(len(args))] + [("k", k) for k in sorted(kwargs)]
    values = list(args) + [kwargs[k] for k in sorted(kwargs)]
    targs = []
    for pos, v in enumerate(values):
        if isinstance(v, Array):
            node = Node(Op.INPUT, (), v.dtype, v.shape, Input(pos))
            t.inputs.append(node)
            tr = t.tracer(node)
            t.args[id(tr._data)] = pos
            targs.append(tr)
        elif scalar_type_name(v) is not None:
            targs.append(ScalarParam(lambda a, pos=pos: a[pos], v))
        else:
            targs.append(v)  # anything else is static: part of the cache key
    prev = getattr(_local, "trace", None)
    _local.trace = t
    try:
        out = fn(*targs[:len(args)], **{n[1]: v for n, v in zip(names[len(args):],
                                                                 targs[len(args):])})
    finally:
        _local.trace = prev
    is_tuple = isinstance(out, (tuple, list))
    outs = list(out) if is_tuple else [out]
    nodes, sources = [], []
    for o in outs:
        if not isinstance(o, Tracer):
            raise TypeError(f"a function fused with {_FUSE} must return arrays computed from "
                            f"its array arguments (or a tuple of them); got {type(o).__name__}")
        nodes.append(o._data.node)
        sources.append(t.args.get(id(o._data)))
    for pos in list(t.writes):
        if t.writes[pos].node is t.inputs[[n.attr.pos for n in t.inputs].index(pos)]:
            del t.writes[pos]  # updated back to its own value (x += 0 never records that)
    return t, nodes, is_tuple, sources


# ---- the trace backend: the primitives, recorded -------------------------------------------
class _Refuse:
    """``b.xp`` of the trace backend: every NumPy-style function is one with no fused form."""

    def __getattr__(self, name):
        raise unsupported(f"xp.{name}")


def _arr(data):
    """The array a recorder takes for a native operand: a Tracer for a traced value; any other
    array (one the function closes over) as itself, which the recorder refuses by name."""
    t = current()
    if type(data) is Meta:
        return Tracer._new(data, t.device)
    return Array._new(data, t.device)


def _scalar_or_arr(data):
    """A where operand: from 2024.12 the spec layer makes a Python scalar the 0-d array of the
    scalar rules before the backend sees it; inside a trace that 0-d array (the only untraced
    0-d array where can meet under that rule) is a constant of its value."""
    if type(data) is not Meta and getattr(data, "ndim", None) == 0 and \
            _revisions.allows("python scalars in elementwise functions"):
        dtype = from_numpy_dtype(data.dtype)
        return TypedScalar(dtype._np.type(data.item()), dtype)
    return _arr(data)


def _operand(o):
    return o if isinstance(o, TypedScalar) else _arr(o)


def _data(tracer):
    return tracer._data


class TraceBackend(Backend):
    xp = _Refuse()  # type: ignore[assignment]  # a stand-in that refuses every use
    rank = 1  # a call that meets a traced array is recorded (or refused), never computed

    # ---- recorded ---------------------------------------------------------------------------
    def elementwise(self, name, fn, operands, in_dtype, out_dtype, shape, plan_key=None):
        # (each method records through the module's recorder of the same name)
        return _data(elementwise(name, [_operand(o) for o in operands], in_dtype, out_dtype,
                                 shape))

    def where(self, cond, x1, x2, dtype, shape, plan_key=None):
        return _data(where(_arr(cond), _scalar_or_arr(x1), _scalar_or_arr(x2), dtype, shape))

    def astype(self, data, dtype, copy, plan_key=None):
        return _data(astype(_arr(data), dtype, None))

    def clip_bound(self, value, dtype, argname):
        # A scalar argument of the fused function is checked with its value at trace time
        # and stays a kernel parameter; a Python scalar is checked and becomes a constant.
        clip_scalar(value.sample if isinstance(value, ScalarParam) else value, dtype, argname)
        return value

    def clip(self, data, lo, hi, dtype, shape):
        def bound(v):
            return v if v is None or isinstance(v, ScalarParam) or not hasattr(v, "shape") \
                else _arr(v)
        return _data(clip(_arr(data), bound(lo), bound(hi), shape))

    def reduce(self, kind, data, axes, keepdims, dtype, plan_key=None):
        kwargs = {"axis": tuple(axes), "keepdims": keepdims}
        if kind in ("sum", "prod"):
            kwargs["dtype"] = dtype
        return _data(reduce(kind, _arr(data), axes, keepdims, dtype, kwargs))

    def argreduce(self, kind, data, axis, keepdims, plan_key=None):
        x = _arr(data)
        axes = tuple(range(x.ndim)) if axis is None else (axis,)
        return _data(reduce(kind, x, axes, keepdims, INDEX_DTYPE,
                            {"axis": axis, "keepdims": keepdims}))

    def var(self, fname, data, axes, dof, keepdims, dtype, plan_key=None):
        x = _arr(data)
        n = 1
        for a in axes:
            n *= x.shape[a]
        correction = n - dof  # the spec layer passes N - correction
        return _data(reduce(fname, x, axes, keepdims, dtype,
                            {"axis": tuple(axes), "correction": correction,
                             "keepdims": keepdims},
                            acc=MOMENTS_ACC, correction=float(correction)))

    def vector_norm(self, data, axes, keepdims, ord, dtype, plan_key=None):
        return _data(reduce("vector_norm", _arr(data), axes, keepdims, dtype,
                            {"axis": tuple(axes), "keepdims": keepdims, "ord": ord},
                            ord=float(ord)))

    def vecdot(self, d1, d2, axis, dtype):
        x1, x2 = _arr(d1), _arr(d2)
        shape = tuple(np.broadcast_shapes(x1.shape, x2.shape))
        ax = len(shape) + axis  # the spec layer made it negative, counted from the end
        return _data(reduce("vecdot", None, (ax,), False, dtype, {"axis": axis},
                            operands=[x1, x2], shape=shape[:ax] + shape[ax + 1:]))

    def getitem(self, data, key, user_key):
        return _data(getitem(_arr(data), user_key, key))

    # ---- refused ----------------------------------------------------------------------------
    def setitem(self, data, key, value, value_shape):
        raise unsupported("item assignment (x[...] = v)")

    def assign(self, data, value):
        if type(data) is not Meta:
            raise TypeError(f"an in-place operator on an xp_cuda array that is not an argument "
                            f"of the fused function (a global or closure variable); pass it as "
                            f"an argument ({_FUSE} traces arguments only)")
        current().assign(data, value)

    def move(self, data, dst, stream=None):
        raise unsupported("moving a traced array to another device (to_device, device=)")

    def move_in(self, data, src_backend, stream=None):
        raise unsupported("moving data into a fused function (to_device, device=)")

    def to_host(self, data):
        raise unsupported("reading a traced array's values")


    def linalg_checked(self):
        raise unsupported("xp.linalg")



# Backend primitives with no fused form -> the namespace call a user wrote to reach them.
REFUSED = {
    "stable_sort": "xp.sort", "stable_argsort": "xp.argsort", "cumulative": "xp.cumulative_sum and xp.cumulative_prod",
    "count_nonzero": "xp.count_nonzero",
    "concat": "xp.concat", "stack": "xp.stack", "copy": "xp.reshape(copy=True)",
    "roll": "xp.roll", "tile": "xp.tile", "repeat": "xp.repeat",
    "bounds": "reading a traced array's values (xp.take, xp.repeat and searchsorted's sorter "
              "check them)",
    "take": "xp.take", "nonzero": "xp.nonzero", "searchsorted": "xp.searchsorted",
    "unique": "xp.unique_*", "take_along_axis": "xp.take_along_axis", "isin": "xp.isin",
    "eig": "xp.linalg.eig / eigvals", "take_arrays": "integer array indexing",
}


def _refuser(what):
    def refuse(self, *args, **kwargs):
        raise unsupported(what)
    return refuse


for _name, _what in REFUSED.items():
    setattr(TraceBackend, _name, _refuser(_what))

TRACE = TraceBackend()
Tracer._b = TRACE  # type: ignore[method-assign, assignment]  # a Tracer's backend is the recorder, whatever its device
register_native_type(Meta, Tracer)
