"""The 5 searching functions of 2023.12: argmax, argmin, nonzero, searchsorted, where."""
from __future__ import annotations

from ._array import Array, _backend_of, _wrap, check_array
from ._dtypes import DEFAULT_DTYPES, promote
from ._dtypes import bool as _bool
from ._validation import (broadcast_shapes, check_bool, check_dtype_category, common_device,
                          normalize_axis)

_INDEX = DEFAULT_DTYPES["indexing"]


def _arg_reduce(op: str, x, axis, keepdims) -> Array:
    check_array(x, op)
    # Complex ordering is unspecified in 2023.12 ("should have a real-valued data type").
    check_dtype_category(x, "real-valued", op)
    check_bool(keepdims, op, "keepdims")
    if axis is None:
        if x.size == 0:
            raise ValueError(f"{op}: x is empty (shape {x.shape}); there is no element to "
                             f"find")
        ax = None
    else:
        ax = normalize_axis(axis, x.ndim, op)
        if x.shape[ax] == 0:
            raise ValueError(f"{op}: axis {ax} of x (shape {x.shape}) has size 0; there is "
                             f"no element to find")
    return _wrap(x._b.argreduce(op, x._data, ax, keepdims), x.device)


def argmax(x, /, *, axis=None, keepdims=False) -> Array:
    """Array API 2023.12 ``argmax``: index of the first maximum (int64), real-valued x."""
    return _arg_reduce("argmax", x, axis, keepdims)


def argmin(x, /, *, axis=None, keepdims=False) -> Array:
    """Array API 2023.12 ``argmin``: index of the first minimum (int64), real-valued x."""
    return _arg_reduce("argmin", x, axis, keepdims)


def nonzero(x, /) -> tuple:
    """Array API 2023.12 ``nonzero``: a tuple of int64 index arrays, row-major order."""
    check_array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: x must have at least one dimension (Array API 2023.12); "
                         "use xp.reshape(x, (1,)) or xp.expand_dims first")
    return tuple(_wrap(i, x.device) for i in x._b.nonzero(x._data))


def searchsorted(x1, x2, /, *, side="left", sorter=None) -> Array:
    """Array API 2023.12 ``searchsorted``: insertion indices (int64) of x2 into sorted 1-D x1.

    Both are compared in their promoted dtype; NaNs order last, as in ``sort``."""
    check_array(x1, "searchsorted", "x1")
    check_array(x2, "searchsorted", "x2")
    check_dtype_category(x1, "real-valued", "searchsorted", "x1")
    check_dtype_category(x2, "real-valued", "searchsorted", "x2")
    arrays = [x1, x2] if sorter is None else [x1, x2, check_array(sorter, "searchsorted",
                                                                    "sorter")]
    dev = common_device(arrays, "searchsorted")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {x1.shape}")
    try:
        dt = promote(x1.dtype, x2.dtype)
    except TypeError as e:
        raise TypeError(f"searchsorted: {e}") from None
    b = _backend_of(arrays)
    a = x1._data
    if sorter is not None:
        check_dtype_category(sorter, "integer", "searchsorted", "sorter")
        if sorter.shape != x1.shape:
            raise ValueError(f"searchsorted: sorter has shape {sorter.shape} but x1 has "
                             f"{x1.shape}; they must match")
        n = x1.shape[0]
        if n:
            lo, hi = b.bounds(sorter._data)
            if lo < -n or hi >= n:
                raise IndexError(f"searchsorted: sorter holds indices outside [-{n}, {n})")
            # Reorder x1 once here, then one plain search: the same path on both backends.
            a = b.take(a, sorter._data, 0, lo < 0)
    return _wrap(b.searchsorted(a, x2._data, side, dt), dev)


def where(condition, x1, x2, /) -> Array:
    """Array API 2023.12 ``where``: x1 where condition, else x2 (arrays, broadcast together;
    the result has x1 and x2's promoted dtype)."""
    check_array(condition, "where", "condition")
    check_array(x1, "where", "x1")
    check_array(x2, "where", "x2")
    if condition.dtype is not _bool:
        raise TypeError(f"where: condition has dtype {condition.dtype}, but it must be bool; "
                        f"compare explicitly (e.g. x != 0)")
    dev = common_device([condition, x1, x2], "where")
    try:
        dt = promote(x1.dtype, x2.dtype)
    except TypeError as e:
        raise TypeError(f"where: {e}") from None
    shape = broadcast_shapes([condition.shape, x1.shape, x2.shape], "where")
    b = _backend_of([condition, x1, x2])
    return _wrap(b.where(condition._data, x1._data, x2._data, dt, shape), dev)


__all__ = ["argmax", "argmin", "nonzero", "searchsorted", "where"]
