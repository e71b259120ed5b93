"""The trace backend: the third implementation of the backend primitives, for ``fuse``.

A traced array (``Tracer``) names this backend as its own, so the spec layer's functions,
unchanged, validate and compute result dtypes and shapes as they do eagerly and then make their
one backend call here, which records an IR node instead of computing (torch's prims with their
meta functions, not a tracing flag in every function). A primitive with no fused form refuses
with the name the spec layer called it by (``xp.sort``), and so does any NumPy-style call
through ``xp``.
"""
from __future__ import annotations

from .._array import Array, register_native_type
from .._backends import Backend
from .._dtypes import TypedScalar, clip_scalar
from . import _trace
from ._trace import Meta, ScalarParam, Tracer, unsupported


class _Refuse:
    """``b.xp`` of the trace backend: every NumPy-style function is one with no fused form."""

    def __getattr__(self, name):
        raise unsupported(f"xp.{name}")


def _arr(data):
    """The array a recorder takes for a native operand: a Tracer for a traced value; any other
    array (one the function closes over) as itself, which the recorder refuses by name."""
    t = _trace.current()
    if type(data) is Meta:
        return Tracer._new(data, t.device)
    return Array._new(data, t.device)


def _operand(o):
    return o if isinstance(o, TypedScalar) else _arr(o)


def _data(tracer):
    return tracer._data


class TraceBackend(Backend):
    xp = _Refuse()
    rank = 1  # a call that meets a traced array is recorded (or refused), never computed

    # ---- recorded ---------------------------------------------------------------------------
    def elementwise(self, name, fn, operands, in_dtype, out_dtype, shape):
        return _data(_trace.elementwise(name, [_operand(o) for o in operands], in_dtype,
                                        out_dtype, shape))

    def where(self, cond, x1, x2, dtype, shape):
        return _data(_trace.where(_arr(cond), _arr(x1), _arr(x2), dtype, shape))

    def astype(self, data, dtype, copy):
        return _data(_trace.astype(_arr(data), dtype, None))

    def clip_bound(self, value, dtype, argname):
        # A scalar argument of the fused function is checked with its value at trace time
        # and stays a kernel parameter; a Python scalar is checked and becomes a constant.
        clip_scalar(value.sample if isinstance(value, ScalarParam) else value, dtype, argname)
        return value

    def clip(self, data, lo, hi, dtype, shape):
        def bound(v):
            return v if v is None or isinstance(v, ScalarParam) or not hasattr(v, "shape") \
                else _arr(v)
        return _data(_trace.clip(_arr(data), bound(lo), bound(hi), shape))

    def reduce(self, kind, data, axes, keepdims, dtype):
        kwargs = {"axis": tuple(axes)}
        if kind in ("sum", "prod"):
            kwargs["dtype"] = dtype
        return _data(_trace.reduce(kind, _arr(data), axes, keepdims, dtype, kwargs))

    def getitem(self, data, key, user_key):
        return _data(_trace.getitem(_arr(data), user_key, key))

    # ---- refused ----------------------------------------------------------------------------
    def setitem(self, data, key, value, value_shape):
        raise unsupported("item assignment (x[...] = v)")

    def assign(self, data, value):
        raise unsupported("an in-place operator (write x = x + y instead of x += y)")

    def move(self, data, dst, stream=None):
        raise unsupported("moving a traced array to another device (to_device, device=)")

    def move_in(self, data, src_backend, stream=None):
        raise unsupported("moving data into a fused function (to_device, device=)")

    def to_host(self, data):
        raise unsupported("reading a traced array's values")

    def stable_sort(self, data, axis):
        raise unsupported("xp.sort")

    def stable_argsort(self, data, axis):
        raise unsupported("xp.argsort")

    def vecdot(self, d1, d2, axis, dtype):
        raise unsupported("xp.vecdot")

    def linalg_checked(self):
        raise unsupported("xp.linalg")


TRACE = TraceBackend()
Tracer._b = property(lambda self: TRACE)  # a Tracer's backend is the recorder, on any device
register_native_type(Meta, Tracer)
