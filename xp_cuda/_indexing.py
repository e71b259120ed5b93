"""``take``, the one indexing function of 2023.12."""
from __future__ import annotations

from ._array import Array, _backend_of, _wrap, check_array
from ._validation import check_dtype_category, common_device, normalize_axis


def take(x, indices, /, *, axis=None) -> Array:
    """Array API 2023.12 ``take``: elements of x at ``indices`` (1-D, integer) along ``axis``.

    The spec leaves out-of-bounds indices unspecified; we refuse them with IndexError (one
    min/max over the indices, a synchronization on a GPU) so cpu and cuda agree instead of
    NumPy raising and CuPy wrapping silently. Negative indices count from the end.
    """
    check_array(x, "take")
    check_array(indices, "take", "indices")
    check_dtype_category(indices, "integer", "take", "indices")
    dev = common_device([x, indices], "take")
    if indices.ndim != 1:
        raise ValueError(f"take: indices must be 1-D (Array API 2023.12), got shape "
                         f"{indices.shape}")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required when x is not 1-D (x has shape "
                             f"{x.shape})")
        ax = 0
    else:
        ax = normalize_axis(axis, x.ndim, "take")
    n = x.shape[ax]
    b = _backend_of([x, indices])
    idx = indices._data
    lo = 0
    if indices.size:
        lo, hi = b.bounds(idx)
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"take: index {bad} is out of bounds for axis {ax} of size {n}")
    return _wrap(b.take(x._data, idx, ax, lo < 0), dev)


__all__ = ["take"]
