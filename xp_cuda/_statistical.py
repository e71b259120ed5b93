"""The 8 statistical functions of 2023.12.

Result dtypes follow the spec text: sum, prod, cumulative_sum (and linalg.trace, which reuses
`accumulation_dtype`) widen integers to the default integer (int64; uint64 for unsigned) and
keep floating-point dtypes; max/min/mean/std/var keep the input dtype.
"""
from __future__ import annotations

import math


from ._array import _wrap, check_array
from ._dtypes import DEFAULT_DTYPES
from ._dtypes import uint64 as _uint64
from ._validation import (check_bool, check_dtype_arg, check_dtype_category, normalize_axes,
                          normalize_axis, planned, reduced_shape)

# dtype=None for sum/prod/cumulative_sum/trace: integers of a smaller range than the default
# integer widen to it (unsigned: to the unsigned integer of the same width); others are kept.
_ACCUMULATION_DEFAULT = {"int": DEFAULT_DTYPES["integral"], "uint": _uint64}
# An explicit dtype is honoured, but never one that drops a part of the value's kind.
_DTYPE_ARG_KINDS = {"int": ("int", "uint", "float", "complex"),
                    "uint": ("int", "uint", "float", "complex"),
                    "float": ("float", "complex"), "complex": ("complex",)}


def accumulation_dtype(x, dtype, fname: str):
    """The result dtype of sum/prod/cumulative_sum/trace for input x and the dtype argument."""
    if dtype is None:
        return _ACCUMULATION_DEFAULT.get(x.dtype.kind, x.dtype)
    check_dtype_arg(dtype, fname, "numeric")
    if dtype.kind not in _DTYPE_ARG_KINDS[x.dtype.kind]:
        raise TypeError(f"{fname}: dtype={dtype} would discard part of the values of x "
                        f"({x.dtype}); pass a dtype of the same kind or wider, or convert x "
                        f"with xp.astype first")
    return dtype


def _reduced(x, axis, keepdims, fname):
    axes = normalize_axes(axis, x.ndim, fname)
    check_bool(keepdims, fname, "keepdims")
    n = math.prod(x.shape[a] for a in axes)
    return axes, n


def _sum_prod(name, x, axis, dtype, keepdims):
    check_array(x, name, "x")
    d = x._data

    def validate():
        check_dtype_category(x, "numeric", name, "x")
        axes, _ = _reduced(x, axis, keepdims, name)
        return axes, accumulation_dtype(x, dtype, name)
    axes, rdt = planned((name, d.dtype, d.shape, axis, type(axis), keepdims, type(keepdims),
                         dtype, type(dtype)), (axis, keepdims, dtype), validate)
    return _wrap(x._b.reduce(name, d, axes, keepdims, rdt), x._device)


def sum(x, /, *, axis=None, dtype=None, keepdims=False):  # noqa: A001
    return _sum_prod("sum", x, axis, dtype, keepdims)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    return _sum_prod("prod", x, axis, dtype, keepdims)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    fname = "cumulative_sum"
    check_array(x, fname, "x")
    check_dtype_category(x, "numeric", fname, "x")
    check_bool(include_initial, fname, "include_initial")
    if x.ndim == 0:
        raise ValueError(f"{fname}: x is 0-d; a cumulative sum needs at least one dimension "
                         f"(use xp.reshape(x, (1,)))")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{fname}: x has shape {x.shape}; axis is required when x has "
                             f"more than one dimension (Array API 2023.12)")
        axis = 0
    ax = normalize_axis(axis, x.ndim, fname)
    rdt = accumulation_dtype(x, dtype, fname)
    return _wrap(x._b.cumsum(x._data, ax, rdt, include_initial), x.device)


def _max_min(name, x, axis, keepdims):
    check_array(x, name, "x")
    d = x._data

    def validate():
        check_dtype_category(x, "real-valued", name, "x")
        axes, n = _reduced(x, axis, keepdims, name)
        if n == 0 and math.prod(reduced_shape(x.shape, axes, keepdims)) != 0:
            raise ValueError(
                f"{name}: the reduction over axis {axis} of an array of shape {x.shape} has no "
                f"elements, and an empty set has no "
                f"{'maximum' if name == 'max' else 'minimum'} (the Array API leaves it "
                f"undefined); check the shape before reducing")
        return axes, x.dtype
    axes, rdt = planned((name, d.dtype, d.shape, axis, type(axis), keepdims, type(keepdims)),
                        (axis, keepdims), validate)
    return _wrap(x._b.reduce(name, d, axes, keepdims, rdt), x._device)


def max(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _max_min("max", x, axis, keepdims)


def min(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _max_min("min", x, axis, keepdims)


def mean(x, /, *, axis=None, keepdims=False):
    fname = "mean"
    check_array(x, fname, "x")
    d = x._data

    def validate():
        check_dtype_category(x, "real-valued floating-point", fname, "x")
        axes, _ = _reduced(x, axis, keepdims, fname)  # the mean of nothing is NaN (spec)
        return axes, x.dtype
    axes, rdt = planned((fname, d.dtype, d.shape, axis, type(axis), keepdims, type(keepdims)),
                        (axis, keepdims), validate)
    return _wrap(x._b.reduce(fname, d, axes, keepdims, rdt), x._device)


def _var(fname, x, axis, correction, keepdims, root):
    check_array(x, fname, "x")
    check_dtype_category(x, "real-valued floating-point", fname, "x")
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"{fname}: correction must be a Python int or float, got {correction!r}")
    axes, n = _reduced(x, axis, keepdims, fname)
    # spec: NaN when N - correction <= 0
    return _wrap(x._b.var(fname, x._data, axes, n - correction, keepdims, x.dtype),
                 x.device)


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    return _var("var", x, axis, correction, keepdims, root=False)


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    return _var("std", x, axis, correction, keepdims, root=True)


__all__ = ["cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"]
