"""Eager reductions on the fused reduction generator: one code path for eager and fused.

An eager ``sum(x, axis=...)`` is the two-node IR input -> reduce, planned (fusion_plan) and
printed (fusion_render) exactly as a fused reduction is, and run by the same fusion.Launch.
Each element is converted to the accumulation dtype before it is combined (as fused code
does), partials combine in a fixed order (deterministic), and a long range is split across
blocks without a second launch. Launches are kept per layout in a bounded LRU, so the cache
does not grow with user data.
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict

from .fusion_ir import DName, Graph, Input, Node, Op, Reduce

KINDS = ("sum", "prod", "max", "min", "mean", "all", "any")
CACHE_SIZE = 256  # compiled launches kept (least recently used dropped first)
_EMPTY_VALUE = {"sum": 0, "prod": 1, "mean": float("nan"), "all": True, "any": False}
_cache = OrderedDict()
_lock = threading.Lock()


def _name(dtype) -> str:
    return dtype if isinstance(dtype, str) else dtype.name


def out_shape(shape, axes, keepdims) -> tuple:
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def graph(kind, in_name, acc_name, shape, axes, keepdims):
    """(Graph, output node) of an eager reduction. With no axis reduced (axes=()), sum, prod,
    max, min and mean are a conversion of each element (the result NumPy gives: no identity is
    combined in, so -0.0 stays -0.0); all and any still take each element's truth value."""
    x = Node(Op.INPUT, (), DName(in_name), shape, Input(0))
    axes = tuple(sorted(axes))
    if not axes and kind not in ("all", "any"):
        out = Node(Op.ASTYPE, (x,), DName(acc_name), shape)
    else:
        out = Node(Op.REDUCE, (x,), DName(acc_name), out_shape(shape, axes, keepdims),
                   Reduce(kind, axes, keepdims))
    return Graph([x]), out


def program(kind, in_name, acc_name, x, axes, keepdims, sms, name="xp_reduce"):
    """The fusion.Program of an eager reduction of arrays laid out like `x` (anything with
    .itemsize, .shape, .strides, .flags.c_contiguous): for compile tests and planning tests."""
    from .fusion import Program
    g, out = graph(kind, in_name, acc_name, tuple(x.shape), axes, keepdims)
    return Program(g, [out], [x], sms, name=name)


def _build(cp, kind, in_name, acc_name, x, axes, keepdims):
    from .fusion import Launch
    if x.dtype.name != in_name:
        raise ValueError(f"reduce_eager: x has dtype {x.dtype.name}, in_dtype says {in_name}")
    g, out = graph(kind, in_name, acc_name, tuple(x.shape), axes, keepdims)
    return Launch(cp, g, [out], [x])


def reduce_eager(cp, kind, x, axes, keepdims, in_dtype, acc_dtype, device=None):
    """``kind`` (sum, prod, max, min, mean, all, any) of the CuPy array ``x`` over ``axes``
    (a tuple of distinct non-negative axes of x, already normalised by the spec layer; () for
    none) on the current device and stream; returns a new CuPy array of dtype ``acc_dtype`` and
    shape x.shape without the reduced axes (kept as 1 with ``keepdims``).

    ``in_dtype`` is x's dtype, ``acc_dtype`` the accumulation and result dtype (bool for
    all/any; for mean, x's floating dtype): DType objects or dtype names, read by ``.name``.
    Each element is converted to acc_dtype before it is combined (all/any: its truth value,
    nonzero or NaN is true). Any strides work (non-contiguous, negative, broadcast stride 0).
    An empty result returns at once; an empty reduced range gives sum 0, prod 1, mean NaN,
    all True, any False (max and min of an empty range raise ValueError: the spec layer
    refuses them first). Compiled launches are cached per (kind, dtypes, shape, strides, axes,
    keepdims, device) in an LRU of CACHE_SIZE entries; safe to call from several threads.
    ``device``: the current device's index when the caller knows it (saves a driver query)."""
    in_name, acc_name = _name(in_dtype), _name(acc_dtype)
    shape = x.shape
    axes = tuple(axes)
    if device is None:
        device = cp.cuda.runtime.getDevice()
    key = (kind, in_name, acc_name, shape, x.strides, axes, keepdims, device)
    launch = _cache.get(key)
    if launch is not None:  # a cached layout is never empty: run it
        try:
            _cache.move_to_end(key)
        except KeyError:  # dropped by another thread meanwhile: still valid to run
            pass
        return launch((x,), ())[0]
    P = math.prod(s for i, s in enumerate(shape) if i not in axes)
    M = math.prod(shape[a] for a in axes)
    if P == 0:
        return cp.empty(out_shape(shape, axes, keepdims), dtype=acc_name)
    if M == 0:
        if kind not in _EMPTY_VALUE:
            raise ValueError(f"{kind} of an empty range has no value")
        return cp.full(out_shape(shape, axes, keepdims), _EMPTY_VALUE[kind], dtype=acc_name)
    launch = _build(cp, kind, in_name, acc_name, x, axes, keepdims)
    with _lock:
        _cache[key] = launch
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return launch((x,), ())[0]
