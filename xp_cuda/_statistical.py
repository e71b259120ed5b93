"""The 8 statistical functions of 2023.12, and 2024.12's cumulative_prod and count_nonzero.

Result dtypes follow the spec text: sum, prod, cumulative_sum, cumulative_prod (and
linalg.trace, which reuses `accumulation_dtype`) widen integers to the default integer (int64;
uint64 for unsigned) and keep floating-point dtypes; max/min/mean/std/var keep the input dtype;
count_nonzero counts in the default array index dtype (int64). (count_nonzero is a searching
function in the spec's chapters; it lives here beside the other reductions.)
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from . import _revisions
from ._array import _wrap, check_array, kept_one
from ._dtypes import DEFAULT_DTYPES
from ._dtypes import uint64 as _uint64
from ._revisions import since
from ._validation import (check_bool, check_dtype_arg, check_dtype_category, normalize_axes,
                          normalize_axis, option_type, planned, reduced_shape)

if TYPE_CHECKING:
    from ._typing import Array, DType

# dtype=None for sum/prod/cumulative_sum/trace: integers of a smaller range than the default
# integer widen to it (unsigned: to the unsigned integer of the same width); others are kept.
_ACCUMULATION_DEFAULT = {"int": DEFAULT_DTYPES["integral"], "uint": _uint64}
# An explicit dtype is honoured: x is cast to it first (the spec's text for the dtype argument),
# narrower kinds included (float x into an integer sum), as astype would cast it; a complex x
# only into a complex dtype, since astype itself must not cast complex to real.
_DTYPE_ARG_KINDS = {"int": ("int", "uint", "float", "complex"),
                    "uint": ("int", "uint", "float", "complex"),
                    "float": ("int", "uint", "float", "complex"), "complex": ("complex",)}


def accumulation_dtype(x, dtype, fname: str):
    """The result dtype of sum/prod/cumulative_sum/trace for input x and the dtype argument."""
    if dtype is None:
        return _ACCUMULATION_DEFAULT.get(x.dtype.kind, x.dtype)
    check_dtype_arg(dtype, fname, "numeric")
    if dtype.kind not in _DTYPE_ARG_KINDS[x.dtype.kind]:
        raise TypeError(f"{fname}: dtype={dtype} would cast complex x ({x.dtype}) to a real "
                        f"dtype, which the Array API does not permit (as astype does not); "
                        f"take xp.real(x), xp.imag(x) or xp.abs(x) first, or pass a complex "
                        f"dtype")
    return dtype


def _reduced(x, axis, keepdims, fname):
    axes = normalize_axes(axis, x.ndim, fname)
    check_bool(keepdims, fname, "keepdims")
    n = math.prod(x.shape[a] for a in axes)
    return axes, n


# Each function's checks depend only on x's dtype and shape and the options, so they run once
# per combination (_validation.planned); the key holds each option's type (True == 1).
# A hit costs one dictionary lookup; the validators below are what a miss runs.

def _check_sum_prod(name, x, axis, dtype, keepdims):
    check_dtype_category(x, "numeric", name, "x")
    axes, _ = _reduced(x, axis, keepdims, name)
    return axes, accumulation_dtype(x, dtype, name)


def _sum_prod(name, x, axis, dtype, keepdims):
    d = check_array(x, name, "x")._data
    key = (name, d.dtype, d.shape, axis, option_type(axis), keepdims, type(keepdims), dtype,
           type(dtype))
    r = kept_one(key, x, d)
    if r is not None:
        return r
    plan = planned(key, (axis, keepdims, dtype), _check_sum_prod, name, x, axis, dtype,
                   keepdims)
    return _wrap(x._b.reduce(name, d, plan[0], keepdims, plan[1], key), x._device)


def sum(x: Array, /, *, axis: int | tuple[int, ...] | None = None,  # noqa: A001
        dtype: DType | None = None, keepdims: bool = False) -> Array:
    """Array API 2023.12 ``sum`` (statistical functions): the sum over ``axis``, accumulated in
    the default dtype of the input's kind (integers widen) unless ``dtype`` is given."""
    return _sum_prod("sum", x, axis, dtype, keepdims)


def prod(x: Array, /, *, axis: int | tuple[int, ...] | None = None, dtype: DType | None = None,
         keepdims: bool = False) -> Array:
    """Array API 2023.12 ``prod`` (statistical functions): the product over ``axis``, accumulated
    in the default dtype of the input's kind (integers widen) unless ``dtype`` is given."""
    return _sum_prod("prod", x, axis, dtype, keepdims)


def _check_cumulative(x, axis, dtype, include_initial, fname="cumulative_sum"):
    check_dtype_category(x, "numeric", fname, "x")
    check_bool(include_initial, fname, "include_initial")
    if x.ndim == 0:
        raise ValueError(f"{fname}: x is 0-d; a {fname.replace('_', ' ')} needs at least one "
                         f"dimension (use xp.reshape(x, (1,)))")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{fname}: x has shape {x.shape}; axis is required when x has "
                             f"more than one dimension (Array API {_revisions.api_version()})")
        axis = 0
    return normalize_axis(axis, x.ndim, fname), accumulation_dtype(x, dtype, fname)


def _cumulative(fname, kind, x, axis, dtype, include_initial):
    """cumulative_sum (kind "sum") and cumulative_prod ("prod"): the same checks and one
    backend primitive; a validated call's device work kept for the next (KEPT)."""
    d = check_array(x, fname, "x")._data
    key = (fname, d.dtype, d.shape, axis, option_type(axis), dtype, type(dtype),
           include_initial, type(include_initial))
    r = kept_one(key, x, d)
    if r is not None:
        return r
    plan = planned(key, (axis, dtype, include_initial), _check_cumulative, x, axis,
                   dtype, include_initial, fname)
    return _wrap(x._b.cumulative(kind, d, plan[0], plan[1], include_initial, key), x._device)


def cumulative_sum(x: Array, /, *, axis: int | None = None, dtype: DType | None = None,
                   include_initial: bool = False) -> Array:
    """Array API 2023.12 ``cumulative_sum`` (statistical functions): the running sum along
    ``axis`` (``include_initial`` prepends the zero), in the sum's default dtype unless
    ``dtype`` is given."""
    return _cumulative("cumulative_sum", "sum", x, axis, dtype, include_initial)


def _check_max_min(name, x, axis, keepdims):
    check_dtype_category(x, "real-valued", name, "x")
    axes, n = _reduced(x, axis, keepdims, name)
    if n == 0 and math.prod(reduced_shape(x.shape, axes, keepdims)) != 0:
        raise ValueError(
            f"{name}: the reduction over axis {axis} of an array of shape {x.shape} has no "
            f"elements, and an empty set has no "
            f"{'maximum' if name == 'max' else 'minimum'} (the Array API leaves it "
            f"undefined); check the shape before reducing")
    return axes, x.dtype


_COMPLEX_MEAN = "mean accepts complex input"


def _check_mean(name, x, axis, keepdims):
    check_dtype_category(x, "floating-point" if _revisions.allows(_COMPLEX_MEAN) else
                         "real-valued floating-point", name, "x")
    axes, _ = _reduced(x, axis, keepdims, name)  # the mean of nothing is NaN (spec)
    return axes, x.dtype


def _same_dtype_reduction(name, check, x, axis, keepdims):
    d = check_array(x, name, "x")._data
    key = (name, d.dtype, d.shape, axis, option_type(axis), keepdims, type(keepdims))
    r = kept_one(key, x, d)
    if r is not None:
        return r
    plan = planned(key, (axis, keepdims), check, name, x, axis, keepdims)
    return _wrap(x._b.reduce(name, d, plan[0], keepdims, plan[1], key), x._device)


def max(x: Array, /, *, axis: int | tuple[int, ...] | None = None,  # noqa: A001
        keepdims: bool = False) -> Array:
    """Array API 2023.12 ``max`` (statistical functions): the largest element over ``axis`` (NaN
    propagates); an empty reduction is a ValueError."""
    return _same_dtype_reduction("max", _check_max_min, x, axis, keepdims)


def min(x: Array, /, *, axis: int | tuple[int, ...] | None = None,  # noqa: A001
        keepdims: bool = False) -> Array:
    """Array API 2023.12 ``min`` (statistical functions): the smallest element over ``axis`` (NaN
    propagates); an empty reduction is a ValueError."""
    return _same_dtype_reduction("min", _check_max_min, x, axis, keepdims)


def mean(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
         keepdims: bool = False) -> Array:
    """Array API ``mean``: real floating input; complex too from 2024.12."""
    d = check_array(x, "mean", "x")._data
    if d.dtype.kind == "c":
        return _complex_mean(x, d, axis, keepdims)
    # _same_dtype_reduction's steps, inline: x is checked already (host time, issue #15)
    key = ("mean", d.dtype, d.shape, axis, option_type(axis), keepdims, type(keepdims))
    r = kept_one(key, x, d)
    if r is not None:
        return r
    plan = planned(key, (axis, keepdims), _check_mean, "mean", x, axis, keepdims)
    return _wrap(x._b.reduce("mean", d, plan[0], keepdims, plan[1], key), x._device)


def _complex_mean(x, d, axis, keepdims):
    if not _revisions.allows(_COMPLEX_MEAN):
        # checked before the memos: a plan or kept launch made for complex input under
        # 2024.12 must not answer once 2023.12 is back in force
        raise TypeError(_revisions.later(_COMPLEX_MEAN, f"mean of a {x.dtype} array"))
    if d.size == 0:  # the mean of nothing is NaN + NaN j (spec), where the backends give NaN
        axes, n = _reduced(x, axis, keepdims, "mean")
        if n == 0:
            b = x._b
            with b.ctx():
                return _wrap(b.full(reduced_shape(x.shape, axes, keepdims), x.dtype,
                                    complex(math.nan, math.nan)), x._device)
    return _same_dtype_reduction("mean", _check_mean, x, axis, keepdims)


def _check_var(fname, x, axis, keepdims):
    check_dtype_category(x, "real-valued floating-point", fname, "x")
    return _reduced(x, axis, keepdims, fname)


def _var(fname, x, axis, correction, keepdims):
    d = check_array(x, fname, "x")._data
    # correction is a value, not a choice among few: checked on every call, never keyed
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"{fname}: correction must be a Python int or float, got {correction!r}")
    key = (fname, d.dtype, d.shape, axis, option_type(axis), keepdims, type(keepdims))
    kept_key = (key, correction)  # a kept launch holds its correction
    r = kept_one(kept_key, x, d)
    if r is not None:
        return r
    plan = planned(key, (axis, keepdims), _check_var, fname, x, axis, keepdims)
    axes, n = plan
    # spec: NaN when N - correction <= 0
    return _wrap(x._b.var(fname, d, axes, n - correction, keepdims, x.dtype, kept_key),
                 x._device)


def var(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        correction: int | float = 0.0, keepdims: bool = False) -> Array:
    """Array API 2023.12 ``var`` (statistical functions): the variance over ``axis`` with
    ``correction`` degrees of freedom subtracted."""
    return _var("var", x, axis, correction, keepdims)


def std(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        correction: int | float = 0.0, keepdims: bool = False) -> Array:
    """Array API 2023.12 ``std`` (statistical functions): the standard deviation over ``axis``
    with ``correction`` degrees of freedom subtracted."""
    return _var("std", x, axis, correction, keepdims)


# ---- 2024.12 ------------------------------------------------------------------------------
@since("2024.12")
def cumulative_prod(x: Array, /, *, axis: int | None = None, dtype: DType | None = None,
                    include_initial: bool = False) -> Array:
    """Array API 2024.12 ``cumulative_prod``: the products of x's elements along ``axis`` (which
    may be left out for 1-D x), in ``dtype`` (by default as prod: integers widen to the default
    integer), each element cast first; include_initial leads with 1 (the axis one longer)."""
    return _cumulative("cumulative_prod", "prod", x, axis, dtype, include_initial)


def _check_count_nonzero(x, axis, keepdims):
    axes, _ = _reduced(x, axis, keepdims, "count_nonzero")
    return axes


@since("2024.12")
def count_nonzero(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
                  keepdims: bool = False) -> Array:
    """Array API 2024.12 ``count_nonzero``: how many elements of x over ``axis`` (None: all;
    an int or a tuple) are nonzero (complex: either part; bool: True; NaN counts), as the
    default array index dtype (int64)."""
    d = check_array(x, "count_nonzero", "x")._data
    key = ("count_nonzero", d.dtype, d.shape, axis, option_type(axis), keepdims,
           type(keepdims))
    r = kept_one(key, x, d)
    if r is not None:
        return r
    axes = planned(key, (axis, keepdims), _check_count_nonzero, x, axis, keepdims)
    return _wrap(x._b.count_nonzero(d, axes, keepdims, key), x._device)


__all__ = ["count_nonzero", "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod",
           "std", "sum", "var"]
