"""``fuse``: trace once per argument layout, then run the graph as one kernel (cuda) or through
the same eager functions (cpu, and the parts of a result that are views of an argument)."""
from __future__ import annotations

import functools

from .. import _data_type_functions as dtf
from .. import _memory
from .. import _elementwise as ew
from .. import _searching as srch
from .. import _statistical as st
from .. import _utility as ut
from .._array import Array
from .._backends import backend
from .._dtypes import TypedScalar, scalar_type_name
from .._kernels.fusion_ir import Op
from .._validation import common_device
from . import _trace

_EAGER = {"apply": ew.apply, "clip": ew.clip, "where": srch.where, "astype": dtf.astype,
          "sum": st.sum, "prod": st.prod, "max": st.max, "min": st.min, "mean": st.mean,
          "all": ut.all, "any": ut.any}
_SCALAR_TYPES = (bool, int, float, complex)


def _replay_table(fns):
    """Per Op, how the eager replay computes a node: f(node, ev, env), where ev evaluates an
    operand node and env holds the call's values (see evaluate)."""
    def bound(b, ev, env):  # a clip bound as the user gave it
        if b is None:
            return None
        if b.op is Op.CONST:
            return b.attr.source
        if b.op is Op.PARAM:
            return env[1][b.attr.use]
        return ev(b)

    def reduce(node, ev, env):
        a = node.attr
        return fns[a.kind](ev(node.args[0]), **dict(a.eager_kwargs))

    return {
        Op.INPUT: lambda node, ev, env: env[0][node.attr.pos],
        Op.CONST: lambda node, ev, env: TypedScalar(node.attr.value, node.dtype),
        Op.PARAM: lambda node, ev, env: TypedScalar(env[2][node.attr.use], node.dtype),
        Op.ELEMENTWISE: lambda node, ev, env: fns["apply"](node.attr.name,
                                                           tuple(ev(a) for a in node.args)),
        Op.WHERE: lambda node, ev, env: fns["where"](*(ev(a) for a in node.args)),
        Op.ASTYPE: lambda node, ev, env: fns["astype"](ev(node.args[0]), node.dtype),
        Op.CLIP: lambda node, ev, env: fns["clip"](ev(node.args[0]),
                                                   min=bound(node.args[1], ev, env),
                                                   max=bound(node.args[2], ev, env)),
        Op.VIEW: lambda node, ev, env: ev(node.args[0])[node.attr.key],
        Op.REDUCE: reduce,
    }


def evaluate(nodes, values, raw, conv):
    """The graph, node by node, through xp_cuda's eager functions. values: the argument values
    by position; raw/conv: each parameter use's Python value and its typed NumPy scalar."""
    table = _REPLAY
    env = (values, raw, conv)
    memo = {}

    def ev(node):
        key = id(node)
        if key in memo:
            return memo[key]
        out = memo[key] = table[node.op](node, ev, env)
        return out

    return [ev(n) for n in nodes]


_REPLAY = _replay_table(_EAGER)


def _view_only(node) -> bool:
    while node.op is Op.VIEW:
        node = node.args[0]
    return node.op is Op.INPUT


class _Entry:
    """What one argument layout runs: the trace, and where the device's backend compiles
    fused programs (cuda) the kernel."""

    __slots__ = ("trace", "nodes", "is_tuple", "launch", "kernel_idx", "eager_idx",
                 "in_pos", "device", "switch", "fast")

    def __init__(self, fn, args, kwargs, values):
        arrays = [v for v in values if isinstance(v, Array)]
        if not arrays:
            raise TypeError("a function fused with xp_cuda.fusion.fuse needs at least one "
                            "xp_cuda array argument")
        device = common_device(arrays, "fuse") if len(arrays) > 1 else arrays[0].device
        self.device = device
        self.trace, self.nodes, self.is_tuple = _trace.trace(fn, args, kwargs, device)
        self.in_pos = [n.attr.pos for n in self.trace.inputs]
        self.kernel_idx, self.eager_idx = [], []
        for j, n in enumerate(self.nodes):  # views of an argument stay views (eager)
            (self.eager_idx if _view_only(n) else self.kernel_idx).append(j)
        b = backend(device)
        self.switch = b.switch  # None: no device to switch to
        self.launch = b.fused_launch(self.trace, [self.nodes[j] for j in self.kernel_idx],
                                     [values[p]._data for p in self.in_pos]) \
            if self.kernel_idx else None
        if self.launch is None:  # a backend that evaluates eagerly (cpu)
            self.kernel_idx, self.eager_idx = [], list(range(len(self.nodes)))
        self.fast = self.switch is None and self.launch is not None and not self.eager_idx

    def run(self, values):
        if self.fast:  # one kernel computes every output
            res = self.launch([values[p]._data for p in self.in_pos], values)
            dev = self.device
            if self.is_tuple:
                return tuple([Array._new(r, dev) for r in res])
            return Array._new(res[0], dev)
        uses = self.trace.uses
        outs = [None] * len(self.nodes)
        if self.launch is not None:
            dev = self.device
            if self.switch is None:
                res = self.launch([values[p]._data for p in self.in_pos], values)
            else:
                with self.switch:
                    res = self.launch([values[p]._data for p in self.in_pos], values)
            new = Array._new
            for j, r in zip(self.kernel_idx, res):
                outs[j] = new(r, dev)
        if self.eager_idx:
            raw = [u[0].fn(values) for u in uses]
            conv = [u[2](r) for u, r in zip(uses, raw)]
            res = evaluate([self.nodes[j] for j in self.eager_idx], values, raw, conv)
            for j, r in zip(self.eager_idx, res):
                outs[j] = r
        return tuple(outs) if self.is_tuple else outs[0]


class Fused:
    """A fused function: call it like the original."""

    def __init__(self, fn):
        self._fn = fn
        self._cache = {}
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        values = args + tuple(kwargs[k] for k in sorted(kwargs)) if kwargs else args
        key = [tuple(kwargs) if kwargs else None]
        for v in values:
            if type(v) is Array:
                d = v._data
                key += (d.dtype, d.shape, d.strides, v._device)
            elif type(v) in _SCALAR_TYPES:
                key.append(type(v))
            elif isinstance(v, Array):
                d = v._data
                key += (d.dtype, d.shape, d.strides, v._device)
            elif scalar_type_name(v) is not None:
                key.append(type(v))
            else:
                key += ("static", v)
        try:
            key = tuple(key)
            entry = self._cache.get(key)
        except TypeError:  # an unhashable static argument: trace every call
            key, entry = None, None
        if entry is None:
            entry = _Entry(self._fn, args, kwargs, values)
            if key is not None:
                self._cache[key] = entry
        return entry.run(values)


# The out-of-memory guard (xp_cuda._memory) around every call of a fused function (a wrapper:
# a fused call's host time is several microseconds; the guard's frame adds ~40 ns).
Fused.__call__ = _memory.guard(Fused.__call__, "fused function")


def fuse(fn=None, /):
    """Decorator: ``@fuse`` (or ``fuse(f)``) returns f traced into one kernel per argument layout.

    Inside, use xp_cuda's elementwise functions and operators, ``where``, ``clip``, ``astype``,
    indexing with ints, slices, None and ..., and reductions (sum, prod, max, min, mean, all,
    any) as results. Python scalars written in the function are constants typed by the same
    rules as eagerly; Python scalars passed as arguments are kernel parameters. Results equal
    the eager function's (dtype, shape and values). Anything data-dependent (if on a value,
    boolean masks, nonzero) raises a TypeError saying to move it outside.
    """
    if fn is None:
        return fuse
    return Fused(fn)
