"""``all`` and ``any`` of 2023.12, 2024.12's ``diff``, plus the keyword-flag check the
reductions share."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._array import Array, _wrap, check_array, kept_one
from ._dtypes import bool as _bool
from ._elementwise import subtract
from ._manipulation import concat
from ._revisions import since
from ._validation import (check_bool, check_dtype_category, check_int, common_device,
                          normalize_axes, normalize_axis, option_type, planned)

if TYPE_CHECKING:
    from types import EllipsisType

    from ._typing import Axes


def _check_reduce(op, x, axis, keepdims):
    check_bool(keepdims, op, "keepdims")
    return normalize_axes(axis, x.ndim, op)


def _reduce(op: str, x, axis, keepdims) -> Array:
    d = check_array(x, op)._data
    # the checks need only the shape; the dtype is in the key for the kept launch (KEPT),
    # the reductions' hot path (kept_one), as in sum and max
    key = (op, d.dtype, d.shape, axis, option_type(axis), keepdims, type(keepdims))
    r = kept_one(key, x, d)
    if r is not None:
        return r
    axes = planned(key, (axis, keepdims), _check_reduce, op, x, axis, keepdims)
    return _wrap(x._b.reduce(op, d, axes, keepdims, _bool, key), x._device)


def all(x: Array, /, *, axis: Axes = None,  # noqa: A001  (the standard's name)
        keepdims: bool = False) -> Array:
    """Array API 2023.12 ``all``: logical AND over ``axis`` (any dtype; NaN counts as True)."""
    return _reduce("all", x, axis, keepdims)


def any(x: Array, /, *, axis: Axes = None, keepdims: bool = False) -> Array:  # noqa: A001
    """Array API 2023.12 ``any``: logical OR over ``axis`` (any dtype; NaN counts as True)."""
    return _reduce("any", x, axis, keepdims)


def _check_diff(x, axis, n, prepend, append) -> int:
    # bool is refused: the spec asks for a numeric x, and subtract has no boolean form
    check_dtype_category(x, "numeric", "diff", "x")
    ax = normalize_axis(axis, x.ndim, "diff")
    if check_int(n, "diff", "n") < 0:
        raise ValueError(f"diff: n={n} is negative; n is how many times differences are "
                         f"taken (0 or more)")
    for argname, a in (("prepend", prepend), ("append", append)):
        if a is None:
            continue
        check_array(a, "diff", argname)
        # another dtype is left unspecified by the spec (promote, cast or raise): refused,
        # so code that relies on one library's choice fails here first
        if a.dtype != x.dtype:
            raise TypeError(f"diff: {argname} has dtype {a.dtype} and x has {x.dtype}; the "
                            f"Array API leaves mixed dtypes unspecified; convert {argname} "
                            f"with xp.astype(..., x.dtype)")
        if a.ndim != x.ndim or a.shape[:ax] + a.shape[ax + 1:] != x.shape[:ax] + x.shape[ax + 1:]:
            raise ValueError(f"diff: {argname} has shape {a.shape}; it must have x's shape "
                             f"{x.shape} except along axis {ax}")
        common_device([x, a], "diff")
    return ax


@since("2024.12")
def diff(x: Array, /, *, axis: int = -1, n: int = 1, prepend: Array | None = None,
         append: Array | None = None) -> Array:
    """Array API 2024.12 ``diff``: the n-th forward difference along ``axis``,
    out[i] = x[i+1] - x[i] applied n times, after ``prepend`` and ``append`` are concatenated
    to x along the axis; the axis keeps max(0, M + N1 + N2 - n) elements. Views and subtract:
    integers wrap as subtract does; n == 0 gives the joined array."""
    check_array(x, "diff", "x")
    ax = _check_diff(x, axis, n, prepend, append)
    parts = [a for a in (prepend, x, append) if a is not None]
    a = concat(parts, axis=ax) if len(parts) > 1 else x
    hi: tuple[slice | EllipsisType, ...] = (slice(None),) * ax + (slice(1, None), Ellipsis)
    lo: tuple[slice | EllipsisType, ...] = (slice(None),) * ax + (slice(None, -1), Ellipsis)
    for _ in range(n):
        if a.shape[ax] == 0:  # nothing left to difference: the result stays empty
            break
        a = subtract(a[hi], a[lo])
    return a


__all__ = ["all", "any", "diff"]
