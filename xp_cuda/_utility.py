"""``all`` and ``any`` of 2023.12, plus the keyword-flag check the reductions share."""
from __future__ import annotations

from ._array import Array, _wrap, check_array
from ._dtypes import bool as _bool
from ._validation import check_bool, normalize_axes


def _reduce(op: str, x, axis, keepdims) -> Array:
    check_array(x, op)
    check_bool(keepdims, op, "keepdims")
    axes = normalize_axes(axis, x.ndim, op)
    return _wrap(x._b.reduce(op, x._data, axes, keepdims, _bool), x.device)


def all(x, /, *, axis=None, keepdims=False) -> Array:  # noqa: A001  (the standard's name)
    """Array API 2023.12 ``all``: logical AND over ``axis`` (any dtype; NaN counts as True)."""
    return _reduce("all", x, axis, keepdims)


def any(x, /, *, axis=None, keepdims=False) -> Array:  # noqa: A001
    """Array API 2023.12 ``any``: logical OR over ``axis`` (any dtype; NaN counts as True)."""
    return _reduce("any", x, axis, keepdims)


__all__ = ["all", "any"]
