"""``take``, the one indexing function of 2023.12."""
from __future__ import annotations

from ._array import Array, _backend_of, _wrap, check_array
from ._validation import check_dtype_category, common_device, normalize_axis, planned


def _check_take(x, indices, axis):
    check_dtype_category(indices, "integer", "take", "indices")
    if indices.ndim != 1:
        raise ValueError(f"take: indices must be 1-D (Array API 2023.12), got shape "
                         f"{indices.shape}")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required when x is not 1-D (x has shape "
                             f"{x.shape})")
        return 0
    return normalize_axis(axis, x.ndim, "take")


def take(x, indices, /, *, axis=None) -> Array:
    """Array API 2023.12 ``take``: elements of x at ``indices`` (1-D, integer) along ``axis``.

    The spec leaves out-of-bounds indices unspecified; we refuse them with IndexError (on a
    GPU the gather itself checks them and the call waits for its verdict: one
    synchronization) so cpu and cuda agree instead of NumPy raising and CuPy wrapping
    silently. Negative indices count from the end.
    """
    d = check_array(x, "take")._data
    idx = check_array(indices, "take", "indices")._data
    # dtypes, shapes and axis decide the checks: once per combination (the indices' values
    # are data: their bounds are checked on every call below)
    key = ("take", d.shape, idx.dtype, idx.shape, axis, type(axis))
    ax = planned(key, (axis,), _check_take, x, indices, axis)
    dev = x._device
    if indices._device is not dev:
        dev = common_device([x, indices], "take")
    b = x._b if type(x) is type(indices) else _backend_of([x, indices])
    out, bad = b.take(d, idx, ax)
    if bad is not None:
        raise IndexError(f"take: index {bad} is out of bounds for axis {ax} of size "
                         f"{d.shape[ax]}; indices must lie in [-{d.shape[ax]}, "
                         f"{d.shape[ax]})")
    return _wrap(out, dev)


__all__ = ["take"]
