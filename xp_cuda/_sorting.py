"""``argsort`` and ``sort`` of 2023.12: stable in both directions, NaNs last when ascending."""
from __future__ import annotations

import numpy as np

from ._array import Array, _wrap
from ._devices import backend
from ._dtypes import DEFAULT_DTYPES
from ._validation import check_array, check_bool, check_dtype_category, normalize_axis

_INDEX = DEFAULT_DTYPES["indexing"]


def stable_argsort(xp, data, axis: int):
    """Stable ascending argsort on either backend. NumPy's default is not stable; CuPy's
    sorts are always stable (Thrust stable sort) and take no ``kind``."""
    if xp is np:
        return np.argsort(data, axis=axis, kind="stable")
    return xp.argsort(data, axis=axis)


def stable_sort(xp, data, axis: int):
    if xp is np:
        return np.sort(data, axis=axis, kind="stable")
    return xp.sort(data, axis=axis)


def _check(fname, x, axis, descending, stable):
    check_array(x, fname)
    # 2023.12: "Should have a real-valued data type"; complex ordering is unspecified.
    check_dtype_category(x, "real-valued", fname)
    check_bool(descending, fname, "descending")
    check_bool(stable, fname, "stable")
    return normalize_axis(axis, x.ndim, fname)


def _reverse(data, axis):
    return data[(slice(None),) * axis + (slice(None, None, -1),)]


def argsort(x, /, *, axis=-1, descending=False, stable=True) -> Array:
    """Array API 2023.12 ``argsort``: int64 indices that sort x along ``axis``. Always stable:
    equal elements keep their original order, also when ``descending``."""
    ax = _check("argsort", x, axis, descending, stable)
    b = backend(x.device)
    xp = b.xp
    with b.ctx():
        data = x._data
        if not descending:
            out = stable_argsort(xp, data, ax)
        else:
            # Sorting the reversed array ascending and reversing the result gives descending
            # order with ties in their original order; positions map back by n-1-i.
            n = data.shape[ax]
            out = (n - 1) - _reverse(stable_argsort(xp, _reverse(data, ax), ax), ax)
        return _wrap(out.astype(_INDEX._np, copy=False), x.device)


def sort(x, /, *, axis=-1, descending=False, stable=True) -> Array:
    """Array API 2023.12 ``sort``: a sorted copy of x along ``axis`` (stable; NaNs last when
    ascending, first when descending)."""
    ax = _check("sort", x, axis, descending, stable)
    b = backend(x.device)
    xp = b.xp
    with b.ctx():
        data = x._data
        if not descending:
            out = stable_sort(xp, data, ax)
        else:
            # Same reversal trick as argsort, so equal values (-0.0, +0.0) keep their order.
            out = xp.ascontiguousarray(_reverse(stable_sort(xp, _reverse(data, ax), ax), ax))
        return _wrap(out, x.device)


__all__ = ["argsort", "sort"]
