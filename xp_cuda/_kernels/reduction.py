"""Eager reductions on the fused reduction generator: one code path for eager and fused.

An eager ``sum(x, axis=...)`` is the two-node IR input -> reduce, planned (fusion_plan) and
printed (fusion_render) exactly as a fused reduction is, and run by the same fusion.Launch.
Each element is converted to the accumulation dtype before it is combined (as fused code
does), partials combine in a fixed order (deterministic), and a long range is split across
blocks without a second launch. Launches are kept per layout in a bounded LRU, so the cache
does not grow with user data.

The same way: ``arg_reduce`` (argmax/argmin, a (value, index) accumulator), ``moments``
(var/std, one pass of Welford moments merged by Chan's formula) and ``norm_reduce`` (vector
norms: an elementwise prologue abs -> square/pow before the reduction and the final sqrt or
pow(., 1/p) as the reduction's epilogue, one kernel reading x once), and ``count_nonzero``
(the predicate x != 0 as the reduction's prologue, counted in int64: no boolean array).
"""
from __future__ import annotations

import math

import numpy as np

from ._runtime import dtype_name, keep_program, lookup_program
from .fusion_ir import Const, DName, Elementwise, Graph, Input, Node, Op, Reduce
from .fusion_plan import merge_groups, norm_node

KINDS = ("sum", "prod", "max", "min", "mean", "all", "any")
_EMPTY_VALUE = {"sum": 0, "prod": 1, "mean": float("nan"), "all": True, "any": False}


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
        src = x
        if kind in ("sum", "prod") and not np.can_cast(in_name, acc_name, "safe"):
            # a narrowing dtype= (float64 into float32, float into int, ...): each element is
            # cast to the result dtype first, the spec's rule, as a prologue of the same
            # kernel (a float32 product would otherwise combine the float64 values in its
            # wider accumulator)
            src = Node(Op.ASTYPE, (x,), DName(acc_name), shape)
        out = Node(Op.REDUCE, (src,), DName(acc_name), out_shape(shape, axes, keepdims),
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
    if dtype_name(x.dtype) != in_name:
        raise ValueError(f"reduce_eager: x has dtype {dtype_name(x.dtype)}, in_dtype says {in_name}")
    g, out = graph(kind, in_name, acc_name, tuple(x.shape), axes, keepdims)
    return Launch(cp, g, [out], [x])


# The kernel layer's one bounded launch cache (the runtime's): these launches, eager.py's
# one-node programs and the recorded programs of copy, scan and sort share it.
lookup = lookup_program
keep = keep_program


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
    keepdims, device) in the runtime's one LRU (PROGRAM_CACHE_SIZE entries); safe to call
    from several threads.
    ``device``: the current device's index when the caller knows it (saves a driver query)."""
    launch, empty = eager_launch(cp, kind, x, axes, keepdims, in_dtype, acc_dtype, device)
    return empty if launch is None else launch((x,), ())[0]


def eager_launch(cp, kind, x, axes, keepdims, in_dtype, acc_dtype, device=None):
    """(the cached launch of ``reduce_eager``'s call, None), or (None, the result) where no
    kernel runs (an empty result or an empty range). A caller may keep the launch and run it
    again on arrays of x's layout (``launch((x,), ())[0]``)."""
    in_name, acc_name = _name(in_dtype), _name(acc_dtype)
    shape = x.shape
    axes = tuple(axes)
    if device is None:
        device = cp.cuda.runtime.getDevice()
    key = (kind, in_name, acc_name, shape, x.strides, axes, keepdims, device)
    return _layout_launch(cp, key, x, axes, keepdims, acc_name, _EMPTY_VALUE.get(kind, kind),
                          lambda xv, ax: _build(cp, kind, in_name, acc_name, xv, ax, keepdims))


def _layout_launch(cp, key, x, axes, keepdims, out_name, empty_range, build):
    """The reductions' one way to their launch: (the launch kept under ``key``, None), built by
    ``build(x or a transposed view of it, axes in that view)`` (see ``orientation``) on
    first sight; or (None, the result) where no kernel runs: an empty result, or
    an empty range, whose value is ``empty_range`` (a str: the reduction's name, which has
    none: a ValueError). A cached layout is never empty, so a hit needs no other test."""
    launch = lookup(key)
    if launch is not None:
        return launch, None
    shape = x.shape
    if math.prod(s for i, s in enumerate(shape) if i not in axes) == 0:
        return None, cp.empty(out_shape(shape, axes, keepdims), dtype=out_name)
    if math.prod(shape[a] for a in axes) == 0:
        if type(empty_range) is str:
            raise ValueError(f"{empty_range} of an empty range has no value")
        return None, cp.full(out_shape(shape, axes, keepdims), empty_range, dtype=out_name)
    perm = orientation(shape, x.strides, axes)
    xv, ax = (x, tuple(axes)) if perm is None else (
        x.transpose(perm), tuple(perm.index(a) for a in axes))
    merged = merge_dims(xv.shape, xv.strides, ax)
    if merged is not None:  # a view of the same memory: the launch reads only its address
        mshape, mstrides, ax = merged
        xv = cp.lib.stride_tricks.as_strided(xv, mshape, mstrides)
    launch = build(xv, ax)
    if merged is not None or (perm is not None and keepdims):
        # the kernel writes its output flat, in the kept axes' order: only the shape differs
        launch.out_specs = [(out_shape(shape, axes, keepdims), dt)
                            for _, dt in launch.out_specs]
    return keep(key, launch), None


def merge_dims(shape, strides, axes):
    """(shape, strides, axes) of the same reduction of one input over fewer axes
    (fusion_plan.merge_groups' rule), or None when no two neighbouring axes merge."""
    if len(shape) < 2:
        return None
    groups, (mstrides,) = merge_groups(shape, (tuple(strides),), axes)
    if len(groups) == len(shape):
        return None
    red = set(axes)
    return (tuple(math.prod(shape[a] for a in g) for g in groups), mstrides,
            tuple(i for i, g in enumerate(groups) if g[0] in red))


def orientation(shape, strides, axes):
    """The axis order a reduction reads x in, or None for x's own. The kernels know two
    layouts: row-like (the last axis reduced: lanes walk it) and column-like (the last axis
    kept: lanes cover neighbouring outputs). When x's smallest stride lies in the other group
    (a sum over axis 1 of x.T), the two groups trade places, each keeping its own order, so
    the lanes walk memory: sum(x.T, axis=1) of (8192, 8192) float32 read x as a strided row
    per output, 0.465 ms on the H200, torch 0.074."""
    nd = len(shape)
    live = [(abs(st), a) for a, (n, st) in enumerate(zip(shape, strides)) if n > 1 and st]
    if not live or not axes or len(axes) == nd:
        return None
    inner = min(live)[1]
    row_like = nd - 1 in axes
    if row_like == (inner in axes):
        return None
    red = [a for a in range(nd) if a in axes]
    kept = [a for a in range(nd) if a not in axes]
    return tuple(red + kept) if row_like else tuple(kept + red)


# ---- struct accumulators and prologues --------------------------------------------------------
def _launch(cp, g, out, x):
    from .fusion import Launch
    return Launch(cp, g, [out], [x])


def arg_graph(kind, in_name, shape, axis, keepdims):
    """(Graph, output node) of argmax/argmin over `axis` (an int) or every axis (None)."""
    x = Node(Op.INPUT, (), DName(in_name), shape, Input(0))
    axes = tuple(range(len(shape))) if axis is None else (axis,)
    return Graph([x]), Node(Op.REDUCE, (x,), DName("int64"), out_shape(shape, axes, keepdims),
                            Reduce(kind, axes, keepdims))


def arg_reduce(cp, kind, x, axis, keepdims, device=None):
    """argmax or argmin (``kind``) of the CuPy array ``x`` (real: bool, integer or real
    floating; any strides) over ``axis``, a non-negative int, or over every axis (None: the
    flat C-order index); a new int64 CuPy array of x's shape without that axis (all axes for
    None; kept as 1 with ``keepdims``). Ties give the first occurrence; a NaN is both the
    maximum and the minimum, the first NaN wins (NumPy's rule). The reduced range must not be
    empty (the spec layer refuses it; ValueError here); an empty result returns at once.
    ``device``: the current device's index when the caller knows it (saves a driver query)."""
    launch, empty = arg_launch(cp, kind, x, axis, keepdims, device)
    return empty if launch is None else launch((x,), ())[0]


def arg_launch(cp, kind, x, axis, keepdims, device=None):
    """(the cached launch of ``arg_reduce``'s call, None), or (None, the empty result)."""
    shape = x.shape
    key = (kind, x.dtype, shape, x.strides, axis, keepdims,
           cp.cuda.runtime.getDevice() if device is None else device)
    assert kind in ("argmax", "argmin") and x.dtype.kind in "biuf", (kind, x.dtype)
    axes = tuple(range(len(shape))) if axis is None else (axis,)
    return _layout_launch(cp, key, x, axes, keepdims, "int64", kind, lambda xv, ax: _launch(
        cp, *arg_graph(kind, dtype_name(x.dtype), tuple(xv.shape),
                       None if axis is None else ax[0], keepdims), xv))


# var/std accumulate their moments in float64 for float32 input too: the kernel is bound by
# memory, and the FP64 work (one conversion, three operations an element, one division per
# batch of 4 or 8 elements) stays under the H200's FP64 rate, while float32 moments would lose
# about log2(N) bits of a variance NumPy's float64 reference keeps.
MOMENTS_ACC = "float64"


def moments_graph(kind, in_name, shape, axes, correction, keepdims, out_name):
    """(Graph, output node) of var/std over `axes` (sorted, distinct, non-negative)."""
    x = Node(Op.INPUT, (), DName(in_name), shape, Input(0))
    axes = tuple(sorted(axes))
    return Graph([x]), Node(Op.REDUCE, (x,), DName(out_name), out_shape(shape, axes, keepdims),
                            Reduce(kind, axes, keepdims, acc=MOMENTS_ACC,
                                   correction=float(correction)))


def moments(cp, kind, x, axes, correction, keepdims, out_dtype, device=None):
    """var or std (``kind``) of the CuPy array ``x`` (real floating, any strides) over
    ``axes`` (distinct non-negative ints; () for none) with N - ``correction`` degrees of
    freedom (a Python int or float; NaN where N - correction <= 0), in one pass over x: Welford
    moments per lane in float64, merged by Chan's formula across lanes, blocks and splits in a
    fixed order (deterministic). Returns a new CuPy array of ``out_dtype`` (a dtype name or an
    object with .name; the input's floating dtype) and x's shape without ``axes`` (kept as 1
    with ``keepdims``); std is the square root of var, taken in float64 before the final
    rounding. An empty range gives NaN, an empty result returns at once. The correction is a
    runtime value of the kernel: every correction shares one compiled kernel. ``device``: the
    current device's index when the caller knows it (saves a driver query)."""
    launch, empty = moments_launch(cp, kind, x, axes, correction, keepdims, out_dtype, device)
    return empty if launch is None else launch((x,), ())[0]


def moments_launch(cp, kind, x, axes, correction, keepdims, out_dtype, device=None):
    """(the cached launch of ``moments``' call, None), or (None, the result) where no kernel
    runs (an empty result or an empty range)."""
    out_name = _name(out_dtype)
    shape = x.shape
    axes = tuple(sorted(axes))
    correction = float(correction)
    key = (kind, x.dtype, out_name, shape, x.strides, axes, keepdims, correction,
           cp.cuda.runtime.getDevice() if device is None else device)
    assert kind in ("var", "std") and x.dtype.kind == "f", (kind, x.dtype)
    # an empty range: the sum of no squared deviations (0) over N - correction = -correction,
    # NaN where that is <= 0 (the spec)
    empty = 0.0 if correction < 0 else math.nan
    return _layout_launch(cp, key, x, axes, keepdims, out_name, empty, lambda xv, ax: _launch(
        cp, *moments_graph(kind, dtype_name(x.dtype), tuple(xv.shape), ax, correction, keepdims,
                           out_name), xv))


def _floating(name):
    return np.dtype(name).kind in "fc"


def norm_graph(in_name, shape, ord, axes, keepdims, out_name):
    """(Graph, output node) of the vector norm of order `ord` over `axes` (see norm_node)."""
    x = Node(Op.INPUT, (), DName(in_name), shape, Input(0))
    return Graph([x]), norm_node(x, ord, axes, keepdims, out_name)


def norm_reduce(cp, x, ord, axes, keepdims, out_dtype, device=None):
    """The vector norm of order ``ord`` (1, 2, inf, -inf, 0 or any other finite nonzero
    number: (sum |x|^ord)^(1/ord)) of the CuPy array ``x`` (any dtype, any strides) over
    ``axes`` (distinct non-negative ints; () for none), in one kernel reading x once. Returns a
    new CuPy array of ``out_dtype`` (x's real floating dtype: float32 for float32/complex64,
    float64 for float64/complex128) and x's shape without ``axes`` (kept as 1 with
    ``keepdims``); the final sqrt / pow(., 1/ord) is applied in the kernel, in float64 for the
    sums. NaN propagates. An empty range gives 0 (+inf for ord < 0, the limit). ``device``: the
    current device's index when the caller knows it (saves a driver query)."""
    launch, empty = norm_launch(cp, x, ord, axes, keepdims, out_dtype, device)
    return empty if launch is None else launch((x,), ())[0]


def norm_launch(cp, x, ord, axes, keepdims, out_dtype, device=None):
    """(the cached launch of ``norm_reduce``'s call, None), or (None, the result) where no
    kernel runs (an empty result or an empty range)."""
    out_name = _name(out_dtype)
    shape = x.shape
    axes = tuple(sorted(axes))
    ord = float(ord)
    key = ("norm", x.dtype, out_name, shape, x.strides, axes, keepdims, ord,
           cp.cuda.runtime.getDevice() if device is None else device)
    return _layout_launch(cp, key, x, axes, keepdims, out_name, math.inf if ord < 0 else 0.0,
                          lambda xv, ax: _launch(cp, *norm_graph(dtype_name(x.dtype),
                                                                 tuple(xv.shape), ord, ax,
                                                                 keepdims, out_name), xv))


# ---- count_nonzero: the predicate fused into the read ---------------------------------------
COUNT_DTYPE = "int64"  # the default array index dtype: the spec's result dtype


def count_graph(in_name, shape, axes, keepdims):
    """(Graph, output node) of count_nonzero over ``axes`` (sorted, distinct, non-negative; ()
    for none): the elementwise not_equal(x, 0) of the OPS table (complex: either part nonzero;
    NaN counts, -0.0 does not; bool: True) feeding an int64 sum, so x is read once and no
    boolean array is made. With no axis reduced, each element's 0 or 1 (an ASTYPE)."""
    x = Node(Op.INPUT, (), DName(in_name), shape, Input(0))
    zero = Node(Op.CONST, (), DName(in_name), (), Const(0, 0))
    nz = Node(Op.ELEMENTWISE, (x, zero), DName("bool"), shape, Elementwise("not_equal", in_name))
    axes = tuple(sorted(axes))
    if not axes:
        return Graph([x]), Node(Op.ASTYPE, (nz,), DName(COUNT_DTYPE), shape)
    return Graph([x]), Node(Op.REDUCE, (nz,), DName(COUNT_DTYPE),
                            out_shape(shape, axes, keepdims), Reduce("sum", axes, keepdims))


def count_nonzero(cp, x, axes, keepdims, device=None):
    """The number of nonzero elements of the CuPy array ``x`` (any dtype, any strides) over
    ``axes`` (distinct non-negative ints; () for none), as a new int64 CuPy array of x's shape
    without ``axes`` (kept as 1 with ``keepdims``); an empty range counts 0, an empty result
    returns at once. ``device``: the current device's index when the caller knows it."""
    launch, empty = count_launch(cp, x, axes, keepdims, device)
    return empty if launch is None else launch((x,), ())[0]


def count_launch(cp, x, axes, keepdims, device=None):
    """(the cached launch of ``count_nonzero``'s call, None), or (None, the result) where no
    kernel runs (an empty result or an empty range)."""
    shape = x.shape
    axes = tuple(sorted(axes))
    key = ("count_nonzero", x.dtype, shape, x.strides, axes, keepdims,
           cp.cuda.runtime.getDevice() if device is None else device)
    return _layout_launch(cp, key, x, axes, keepdims, COUNT_DTYPE, 0, lambda xv, ax: _launch(
        cp, *count_graph(dtype_name(x.dtype), tuple(xv.shape), ax, keepdims), xv))
