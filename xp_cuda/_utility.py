"""``all`` and ``any`` of 2023.12, plus the keyword-flag check the reductions share."""
from __future__ import annotations

from ._array import Array, _wrap, check_array
from ._dtypes import bool as _bool
from ._validation import check_bool, normalize_axes, option_type, planned


def _check_reduce(op, x, axis, keepdims):
    check_bool(keepdims, op, "keepdims")
    return normalize_axes(axis, x.ndim, op)


def _reduce(op: str, x, axis, keepdims) -> Array:
    d = check_array(x, op)._data
    key = (op, d.shape, axis, option_type(axis), keepdims, type(keepdims))
    axes = planned(key, (axis, keepdims), _check_reduce, op, x, axis, keepdims)
    return _wrap(x._b.reduce(op, d, axes, keepdims, _bool), x._device)


def all(x, /, *, axis=None, keepdims=False) -> Array:  # noqa: A001  (the standard's name)
    """Array API 2023.12 ``all``: logical AND over ``axis`` (any dtype; NaN counts as True)."""
    return _reduce("all", x, axis, keepdims)


def any(x, /, *, axis=None, keepdims=False) -> Array:  # noqa: A001
    """Array API 2023.12 ``any``: logical OR over ``axis`` (any dtype; NaN counts as True)."""
    return _reduce("any", x, axis, keepdims)


__all__ = ["all", "any"]
