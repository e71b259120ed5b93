"""``argsort`` and ``sort`` of 2023.12: stable in both directions, NaNs last when ascending."""
from __future__ import annotations

from ._array import Array, _wrap, check_array
from ._dtypes import DEFAULT_DTYPES
from ._validation import check_bool, check_dtype_category, normalize_axis, planned

_INDEX = DEFAULT_DTYPES["indexing"]
_INDEX_NP = _INDEX._np


def _check(fname, x, axis, descending, stable):
    # 2023.12: "Should have a real-valued data type"; complex ordering is unspecified.
    check_dtype_category(x, "real-valued", fname)
    check_bool(descending, fname, "descending")
    check_bool(stable, fname, "stable")
    return normalize_axis(axis, x.ndim, fname)


def _axis(fname, x, axis, descending, stable):
    """The checked axis: the checks read only x's dtype and rank and the options, so they run
    once per combination (_validation.planned)."""
    d = check_array(x, fname)._data
    key = (fname, d.dtype, d.ndim, axis, type(axis), descending, type(descending), stable,
           type(stable))
    return planned(key, (axis, descending, stable), _check, fname, x, axis, descending, stable)


def _reverse(data, axis):
    return data[(slice(None),) * axis + (slice(None, None, -1),)]


def argsort(x: Array, /, *, axis: int = -1, descending: bool = False,
            stable: bool = True) -> Array:
    """Array API 2023.12 ``argsort``: int64 indices that sort x along ``axis``. Always stable:
    equal elements keep their original order, also when ``descending``."""
    ax = _axis("argsort", x, axis, descending, stable)
    b = x._b
    data = x._data
    if not descending and b.switch is None:  # no device to make current: no context
        out = b.stable_argsort(data, ax)
        return _wrap(out if out.dtype == _INDEX_NP else out.astype(_INDEX_NP), x._device)
    with b.ctx():
        if not descending:
            out = b.stable_argsort(data, ax)
        else:
            # Sorting the reversed array ascending and reversing the result gives descending
            # order with ties in their original order; positions map back by n-1-i.
            n = data.shape[ax]
            out = (n - 1) - _reverse(b.stable_argsort(_reverse(data, ax), ax), ax)
        return _wrap(out.astype(_INDEX_NP, copy=False), x._device)


def sort(x: Array, /, *, axis: int = -1, descending: bool = False,
         stable: bool = True) -> Array:
    """Array API 2023.12 ``sort``: a sorted copy of x along ``axis`` (stable; NaNs last when
    ascending, first when descending)."""
    ax = _axis("sort", x, axis, descending, stable)
    b = x._b
    data = x._data
    if not descending and b.switch is None:  # no device to make current: no context
        return _wrap(b.stable_sort(data, ax), x._device)
    xp = b.xp
    with b.ctx():
        if not descending:
            out = b.stable_sort(data, ax)
        else:
            # Same reversal trick as argsort, so equal values (-0.0, +0.0) keep their order.
            out = xp.ascontiguousarray(_reverse(b.stable_sort(_reverse(data, ax), ax), ax))
        return _wrap(out, x._device)


__all__ = ["argsort", "sort"]
