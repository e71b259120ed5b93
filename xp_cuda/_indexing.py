"""``take``, the one indexing function of 2023.12, and ``take_along_axis`` (2024.12)."""
from __future__ import annotations

from ._array import Array, _backend_of, _wrap, check_array
from ._backends._base import KEPT as _KEPT
from . import _revisions
from ._revisions import since
from ._validation import check_dtype_category, common_device, normalize_axis, planned


def _check_take(x, indices, axis):
    check_dtype_category(indices, "integer", "take", "indices")
    if indices.ndim != 1:
        raise ValueError(f"take: indices must be 1-D (Array API {_revisions.api_version()}), "
                         f"got shape "
                         f"{indices.shape}")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required when x is not 1-D (x has shape "
                             f"{x.shape})")
        return 0
    return normalize_axis(axis, x.ndim, "take")


def take(x: Array, indices: Array, /, *, axis: int | None = None) -> Array:
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
    dev = x._device
    # a call the backend kept (its layout, its gather and its check of the indices, as one
    # replay: host time), once the checks below have passed for this key; x's dtype is part
    # of the kept call's key, not of the checks'
    kept_key = (key, d.dtype)
    kept = _KEPT.get(kept_key)
    if kept is not None and type(x) is Array and type(indices) is Array and \
            indices._device is dev:
        r = kept((d, idx), dev)
        if r is not None:
            out, bad = r
            if bad is None:
                return _wrap(out, dev)
            _out_of_bounds(bad, 0 if axis is None else axis % d.ndim, d.shape)
    ax = planned(key, (axis,), _check_take, x, indices, axis)
    if indices._device is not dev:
        dev = common_device([x, indices], "take")
    b = x._b if type(x) is type(indices) else _backend_of([x, indices])
    out, bad = b.take(d, idx, ax, kept_key)
    if bad is not None:
        _out_of_bounds(bad, ax, d.shape)
    return _wrap(out, dev)


def _out_of_bounds(bad, ax, shape):
    n = shape[ax]
    raise IndexError(f"take: index {bad} is out of bounds for axis {ax} of size {n}; "
                     f"indices must lie in [-{n}, {n})")


def _check_take_along_axis(x, indices, axis):
    fname = "take_along_axis"
    check_dtype_category(indices, "integer", fname, "indices")
    if x.ndim == 0:
        raise ValueError(f"{fname}: x is 0-d; it needs at least one dimension to take along")
    ax = normalize_axis(axis, x.ndim, fname)
    if indices.ndim != x.ndim:
        raise ValueError(f"{fname}: indices has {indices.ndim} dimension(s) (shape "
                         f"{indices.shape}) but x has {x.ndim} (shape {x.shape}); they must "
                         f"have as many")
    shape = []
    for d, (n, m) in enumerate(zip(x.shape, indices.shape)):
        if d == ax:
            shape.append(m)
        elif n == m or m == 1:
            shape.append(n)
        elif n == 1:
            shape.append(m)
        else:
            raise ValueError(f"{fname}: x (shape {x.shape}) and indices (shape "
                             f"{indices.shape}) cannot be broadcast together in dimension "
                             f"{d} (sizes {n} and {m}); every dimension but axis {ax} must "
                             f"match or be 1 in one of them")
    return ax, tuple(shape)


@since("2024.12")
def take_along_axis(x: Array, indices: Array, /, *, axis: int = -1) -> Array:
    """Array API 2024.12 ``take_along_axis``: ``out[..., j, ...] = x[..., indices[..., j, ...],
    ...]`` along ``axis``: indices (integer) have x's number of dimensions, and x and indices
    broadcast against each other in every other dimension.

    As in ``take``, an index outside [-n, n) (n: x's length along axis) is an IndexError on
    every device (the spec leaves it unspecified); negative indices count from the end.
    """
    fname = "take_along_axis"
    d = check_array(x, fname)._data
    idx = check_array(indices, fname, "indices")._data
    # dtypes, shapes and axis decide the checks and the result's shape: once per combination
    key = (fname, d.shape, idx.dtype, idx.shape, axis, type(axis))
    ax, shape = planned(key, (axis,), _check_take_along_axis, x, indices, axis)
    dev = x._device
    if indices._device is not dev:
        dev = common_device([x, indices], fname)
    b = x._b if type(x) is type(indices) else _backend_of([x, indices])
    out, bad = b.take_along_axis(d, idx, ax, shape)
    if bad is not None:
        n = d.shape[ax]
        raise IndexError(f"{fname}: index {bad} is out of bounds for axis {ax} of size {n}; "
                         f"indices must lie in [-{n}, {n})")
    return _wrap(out, dev)


__all__ = ["take", "take_along_axis"]
