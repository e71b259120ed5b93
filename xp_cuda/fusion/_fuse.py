"""``fuse``: trace once per argument layout, then run the graph as the kernels the kernel layer
plans (cuda: fusion.fused_launch) or through the same eager functions (cpu, and the parts of a
result that are views of an argument); write the final values of arguments updated in place
into the caller's arrays. The layouts a fused function keeps are bounded (CACHE_SIZE, LRU)."""
from __future__ import annotations

import functools
from collections import OrderedDict
from typing import TYPE_CHECKING, Generic, ParamSpec, TypeVar, overload

from .. import _data_type_functions as dtf
from .. import _memory
from .. import _elementwise as ew
from .. import _linear_algebra as lin
from .. import linalg
from .. import _searching as srch
from .. import _statistical as st
from .. import _utility as ut
from .._array import Array, _filled_0d
from .._backends import backend
from .._dtypes import TypedScalar, scalar_type_name
from .._kernels.fusion_ir import Op
from .._validation import common_device
from . import _trace

if TYPE_CHECKING:
    from typing import Any, Callable

_EAGER = {"apply": ew.apply, "clip": ew.clip, "where": srch.where, "astype": dtf.astype,
          "sum": st.sum, "prod": st.prod, "max": st.max, "min": st.min, "mean": st.mean,
          "all": ut.all, "any": ut.any, "argmax": srch.argmax, "argmin": srch.argmin,
          "var": st.var, "std": st.std, "vector_norm": linalg.vector_norm, "vecdot": lin.vecdot}
CACHE_SIZE = 64  # argument layouts a fused function keeps (least recently used evicted)
_SCALAR_TYPES = (bool, int, float, complex)
_P = ParamSpec("_P")  # a fused function's parameters: the original's
_R = TypeVar("_R")  # its result: the original's


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
        return fns[a.kind](*[ev(x) for x in node.args], **dict(a.eager_kwargs))

    return {
        Op.INPUT: lambda node, ev, env: env[0][node.attr.pos],
        Op.CONST: lambda node, ev, env: TypedScalar(node.attr.value, node.dtype),
        Op.PARAM: lambda node, ev, env: TypedScalar(env[2][node.attr.use], node.dtype),
        Op.ELEMENTWISE: lambda node, ev, env: fns["apply"](node.attr.name,
                                                           tuple(ev(a) for a in node.args)),
        Op.WHERE: lambda node, ev, env: fns["where"](*_where_operands(
            [ev(a) for a in node.args])),
        Op.ASTYPE: lambda node, ev, env: fns["astype"](ev(node.args[0]), node.dtype),
        Op.CLIP: lambda node, ev, env: fns["clip"](ev(node.args[0]),
                                                   min=bound(node.args[1], ev, env),
                                                   max=bound(node.args[2], ev, env)),
        Op.VIEW: lambda node, ev, env: ev(node.args[0])[node.attr.key],
        Op.REDUCE: reduce,
    }


def _where_operands(args):
    """where's replayed operands: a constant (a Python scalar the 2024.12 rules made a 0-d
    array of, see _trace._scalar_or_arr) as that 0-d array again."""
    if not any(isinstance(a, TypedScalar) for a in args):
        return args
    dev = next(a.device for a in args if isinstance(a, Array))
    return [_filled_0d(a.value, a.dtype, dev) if isinstance(a, TypedScalar) else a
            for a in args]


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
    fused programs (cuda) the launcher of its kernels. The values computed are the outputs,
    then the final values of the arguments updated in place (written into the caller's
    arrays after the whole program ran: every read saw the trace's order already; on cuda
    the kernel writes one straight into the argument where no read in it can see the
    overwritten value: fusion.direct_writes, and ``plan()`` says which)."""

    __slots__ = ("trace", "nodes", "is_tuple", "launch", "kernel_idx", "eager_idx",
                 "in_pos", "device", "switch", "fast", "n_out", "writes", "arg_outs",
                 "natives")

    def __init__(self, fn, args, kwargs, values):
        arrays = [v for v in values if isinstance(v, Array)]
        if not arrays:
            raise TypeError("a function fused with xp_cuda.fusion.fuse needs at least one "
                            "xp_cuda array argument")
        device = common_device(arrays, "fuse") if len(arrays) > 1 else arrays[0].device
        self.device = device
        self.trace, outs, self.is_tuple, sources = _trace.trace(fn, args, kwargs, device)
        self.writes = [pos for pos in self.trace.writes]
        self.n_out = len(outs)
        self.nodes = list(outs) + [self.trace.writes[pos].node for pos in self.writes]
        # an output that is an argument (updated in place or not) is the caller's array
        self.arg_outs = [(j, pos) for j, pos in enumerate(sources) if pos is not None]
        skip = {j for j, _ in self.arg_outs}
        self.in_pos = [n.attr.pos for n in self.trace.inputs]
        self.kernel_idx, self.eager_idx = [], []
        for j, n in enumerate(self.nodes):  # views of an argument stay views (eager)
            if j in skip:
                continue
            (self.eager_idx if _view_only(n) else self.kernel_idx).append(j)
        b = backend(device)
        self.switch = b.switch  # None: no device to switch to
        natives = [values[p]._data for p in self.in_pos]
        self.natives = [_Layout(d) for d in natives]  # (plan(); never the arrays themselves)
        self.launch = b.fused_launch(self.trace, [self.nodes[j] for j in self.kernel_idx],
                                     natives) if self.kernel_idx else None
        if self.launch is None:  # a backend that evaluates eagerly (cpu)
            self.kernel_idx = []
            self.eager_idx = [j for j in range(len(self.nodes)) if j not in skip]
        self.fast = (self.switch is None and self.launch is not None and not self.eager_idx
                     and not self.writes and not self.arg_outs)

    def plan(self) -> str:
        """The program in words: on cuda the kernels that run; elsewhere the kernels a GPU
        with 132 multiprocessors (an H200) would run, after the line saying it replays."""
        from .._kernels.fusion import explain
        nodes = [self.nodes[j] for j in range(len(self.nodes))
                 if j not in {k for k, _ in self.arg_outs} and not _view_only(self.nodes[j])]
        head = ""
        if self.launch is None:
            head = (f"{self.device}: replayed through the eager functions; on a GPU with 132 "
                    f"multiprocessors:\n")
        if not nodes:
            return head + "no kernel (the results are the arguments or views of them)"
        sms = 132
        if self.launch is not None:
            from .._kernels._runtime import device_info
            sms = device_info(backend(self.device).xp).sm_count
        return head + explain(self.trace, nodes, self.natives, sms)

    def run(self, values):
        if self.fast:  # the kernels compute every output
            res = self.launch([values[p]._data for p in self.in_pos], values)
            dev = self.device
            if self.is_tuple:
                return tuple([Array._new(r, dev) for r in res])
            return Array._new(res[0], dev)
        if self.writes:
            _check_aliases(self.writes, values)
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
        for k, pos in enumerate(self.writes):  # in place: into the caller's array
            dst, val = values[pos], outs[self.n_out + k]
            if val._data is not dst._data:  # (a kernel that wrote it there: nothing to copy)
                dst._b.assign(dst._data, val._data)
        for j, pos in self.arg_outs:
            outs[j] = values[pos]
        outs = outs[:self.n_out]
        return tuple(outs) if self.is_tuple else outs[0]


class _Layout:
    """What planning reads of an array (its layout), kept instead of the array: a cached
    entry must not keep its first call's arrays alive."""

    __slots__ = ("itemsize", "shape", "strides", "nbytes", "flags")

    def __init__(self, a):
        self.itemsize, self.shape, self.strides, self.nbytes = \
            a.itemsize, tuple(a.shape), tuple(a.strides), a.nbytes
        self.flags = _Flags(bool(a.flags.c_contiguous))


class _Flags:
    __slots__ = ("c_contiguous",)

    def __init__(self, c):
        self.c_contiguous = c


def _check_aliases(writes, values):
    """An argument updated in place passed again as another argument: the trace took them as
    two arrays, so the other would not see the update."""
    for pos in writes:
        for q, v in enumerate(values):
            if q != pos and v is values[pos]:
                raise ValueError(
                    f"fuse: argument {pos} is updated in place by the fused function and is "
                    f"also passed as argument {q}; pass a copy (the trace takes them as two "
                    f"arrays)")


class Fused(Generic[_P, _R]):
    """A fused function: call it like the original. ``plan(*args)`` says which kernels a call
    with these arguments runs."""

    def __init__(self, fn: Callable[_P, _R]) -> None:
        self._fn = fn
        # argument layout -> _Entry, least recently used first
        self._cache: OrderedDict[Any, _Entry] = OrderedDict()
        functools.update_wrapper(self, fn)

    def _entry(self, args, kwargs):
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
        cache = self._cache
        try:
            key = tuple(key)
            entry = cache.get(key)
        except TypeError:  # an unhashable static argument: trace every call
            key, entry = None, None
        if entry is None:
            entry = _Entry(self._fn, args, kwargs, values)
            if key is not None:
                cache[key] = entry
                if len(cache) > CACHE_SIZE:  # shapes are user data: keep a bounded set
                    cache.popitem(last=False)
        elif len(cache) > 1:
            cache.move_to_end(key)
        return entry, values

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        entry, values = self._entry(args, kwargs)
        return entry.run(values)

    def plan(self, *args: _P.args, **kwargs: _P.kwargs) -> str:
        """The kernels a call with these arguments runs, in words (nothing is computed)."""
        return self._entry(args, kwargs)[0].plan()


# The out-of-memory guard (xp_cuda._memory) around every call of a fused function (a wrapper:
# a fused call's host time is several microseconds; the guard's frame adds ~40 ns).
Fused.__call__ = _memory.guard(Fused.__call__, "fused function")  # type: ignore[method-assign]


@overload
def fuse(fn: None = None, /) -> Callable[[Callable[_P, _R]], Fused[_P, _R]]: ...


@overload
def fuse(fn: Callable[_P, _R], /) -> Fused[_P, _R]: ...


def fuse(fn: Callable[_P, _R] | None = None, /
         ) -> Fused[_P, _R] | Callable[[Callable[_P, _R]], Fused[_P, _R]]:
    """Decorator: ``@fuse`` (or ``fuse(f)``) returns f traced into one kernel per argument layout.

    Inside, use xp_cuda's elementwise functions and operators, ``where``, ``clip``, ``astype``,
    indexing with ints, slices, None and ..., and reductions (sum, prod, max, min, mean, var,
    std, all, any, argmax, argmin, linalg.vector_norm, vecdot), whose results may feed further
    work (softmax, layer norm: the program runs as one row kernel where every reduction
    reduces the innermost axis and a row fits on chip, else as one kernel per reduction
    depth; ``fused.plan(*args)`` says which). An in-place operator on an argument
    (``b += 1``) writes the final value into the caller's array, with the eager rules (no
    dtype or shape change); on a view, or on an array a view was taken of, it is refused.
    Python scalars written in the function are constants typed by the same rules as eagerly;
    Python scalars passed as arguments are kernel parameters. Results equal the eager
    function's (dtype, shape and values). Anything data-dependent (if on a value, boolean
    masks, nonzero) raises a TypeError saying to move it outside. Each fused function keeps
    the programs of its CACHE_SIZE most recently used argument layouts.
    """
    if fn is None:
        return fuse
    return Fused(fn)
