"""The 5 searching functions of 2023.12: argmax, argmin, nonzero, searchsorted, where."""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import _revisions
from ._array import Array, _backend_of, _wrap, check_array, kept_one, kept_result, scalar_array
from ._backends import backend
from ._backends._base import FpQuiet
from ._dtypes import DEFAULT_DTYPES, check_scalar, promote, scalar_type_name
from ._dtypes import bool as _bool
from ._validation import PLANS as _PLANS
from ._validation import (broadcast_shapes, check_bool, check_dtype_category, common_device,
                          normalize_axis, option_type, planned)

if TYPE_CHECKING:
    from typing import Literal

    from ._typing import ArrayOrScalar

_MISS = object()  # a plan may be None (all axes): the marker of "not planned yet"

_INDEX = DEFAULT_DTYPES["indexing"]


def _check_arg_reduce(op: str, x, axis, keepdims):
    # Complex ordering is unspecified in 2023.12 ("should have a real-valued data type").
    check_dtype_category(x, "real-valued", op)
    check_bool(keepdims, op, "keepdims")
    if axis is None:
        if x.size == 0:
            raise ValueError(f"{op}: x is empty (shape {x.shape}); there is no element to "
                             f"find")
        return None
    ax = normalize_axis(axis, x.ndim, op)
    if x.shape[ax] == 0:
        raise ValueError(f"{op}: axis {ax} of x (shape {x.shape}) has size 0; there is "
                         f"no element to find")
    return ax


def _arg_reduce(op: str, x, axis, keepdims) -> Array:
    d = check_array(x, op)._data
    # The checks depend on x's dtype and shape and the options only: once per combination.
    key = (op, d.dtype, d.shape, axis, option_type(axis), keepdims, type(keepdims))
    r = kept_one(key, x, d)
    if r is not None:
        return r
    try:
        ax = _PLANS.get(key, _MISS)
    except TypeError:
        ax = _MISS
    if ax is _MISS:
        ax = planned(key, (axis, keepdims), _check_arg_reduce, op, x, axis, keepdims)
    return _wrap(x._b.argreduce(op, d, ax, keepdims, key), x._device)


def argmax(x: Array, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """Array API 2023.12 ``argmax``: index of the first maximum (int64), real-valued x."""
    return _arg_reduce("argmax", x, axis, keepdims)


def argmin(x: Array, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """Array API 2023.12 ``argmin``: index of the first minimum (int64), real-valued x."""
    return _arg_reduce("argmin", x, axis, keepdims)


def nonzero(x: Array, /) -> tuple[Array, ...]:
    """Array API 2023.12 ``nonzero``: a tuple of int64 index arrays, row-major order."""
    d = check_array(x, "nonzero")._data
    if d.ndim == 0:
        raise ValueError(f"nonzero: x must have at least one dimension (Array API "
                         f"{_revisions.api_version()}); use xp.reshape(x, (1,)) or "
                         f"xp.expand_dims first")
    dev = x._device
    return tuple([_wrap(i, dev) for i in x._b.nonzero(d)])


def _check_searchsorted(x1, x2, side, sorter):
    check_dtype_category(x1, "real-valued", "searchsorted", "x1")
    check_dtype_category(x2, "real-valued", "searchsorted", "x2")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {x1.shape}")
    try:
        dt = promote(x1.dtype, x2.dtype)
    except TypeError as e:
        raise TypeError(f"searchsorted: {e}") from None
    if sorter is not None:
        check_dtype_category(sorter, "integer", "searchsorted", "sorter")
        if sorter.shape != x1.shape:
            raise ValueError(f"searchsorted: sorter has shape {sorter.shape} but x1 has "
                             f"{x1.shape}; they must match")
    return dt


def searchsorted(x1: Array, x2: Array | int | float, /, *,
                 side: Literal["left", "right"] = "left",
                 sorter: Array | None = None) -> Array:
    """Array API 2023.12 ``searchsorted``: insertion indices (int64) of x2 into sorted 1-D x1.

    Both are compared in their promoted dtype; NaNs order last, as in ``sort``. From 2025.12
    x2 may be a Python int or float: a 0-d array of x1's dtype (the scalar rules), so the
    result is 0-d."""
    a = check_array(x1, "searchsorted", "x1")._data
    if not isinstance(x2, Array):  # the test check_array makes: the hot path pays nothing more
        return searchsorted(x1, _scalar_x2(x1, x2), side=side, sorter=sorter)
    v = x2._data
    key: tuple
    if sorter is None:
        s = None
        key = ("searchsorted", a.dtype, a.shape, v.dtype, v.shape, side, type(side))
    else:
        s = check_array(sorter, "searchsorted", "sorter")._data
        key = ("searchsorted", a.dtype, a.shape, v.dtype, v.shape, side, type(side),
               s.dtype, s.shape)
    # dtypes, shapes and side decide the checks: once per combination (the sorter's values
    # are data and are checked on every call below)
    dev = x1._device
    if s is None and x2._device is dev:  # a validated call kept whole
        r = kept_result(key, (x1, x2), (a, v), dev)
        if r is not None:
            return r
    dt = planned(key, (side,), _check_searchsorted, x1, x2, side, sorter)
    if x2._device is not dev or (sorter is not None and sorter._device is not dev):
        dev = common_device([x1, x2] if s is None else [x1, x2, sorter], "searchsorted")
    if s is None:
        b = x1._b if type(x1) is type(x2) else _backend_of([x1, x2])
        return _wrap(b.searchsorted(a, v, side, dt, key), dev)
    b = _backend_of([x1, x2, sorter])
    n = a.shape[0]
    if n:
        # Reorder x1 once here, then one plain search: the same path on both backends.
        a, bad = b.take(a, s, 0)
        if bad is not None:
            raise IndexError(f"searchsorted: sorter holds the index {bad}, outside "
                             f"[-{n}, {n})")
    return _wrap(b.searchsorted(a, v, side, dt), dev)


def _scalar_x2(x1, x2):
    """searchsorted's Python scalar x2 as a 0-d array of x1's dtype (2025.12), or the error."""
    fname = "searchsorted"
    kind = scalar_type_name(x2)
    allowed = _revisions.allows("python scalar x2 in searchsorted")
    if kind is None or not allowed and kind not in ("int", "float"):
        check_array(x2, fname, "x2")  # not an array: the error says how to bring one in
    if kind not in ("int", "float"):
        raise TypeError(f"{fname}: x2 must be an array, a Python int or a Python float, got "
                        f"{type(x2).__name__}")
    if not allowed:
        first = _revisions.RULES["python scalar x2 in searchsorted"]
        raise TypeError(f"{fname}: x2 is a Python {kind}, which the Array API allows from "
                        f"{first} on, and {_revisions.api_version()} is in force; pass "
                        f"xp.asarray(x2, dtype=x1.dtype), or call xp_cuda.set_api_version("
                        f"{first!r})")
    check_dtype_category(x1, "real-valued", fname, "x1")
    with FpQuiet():  # a float beyond float32's range is +-inf there (IEEE), not a warning
        value = check_scalar(x2, x1.dtype, f"{fname}: x2")
    # the device's own backend (x1 may be traced: the search then refuses it by name)
    return _wrap(backend(x1._device).full((), x1.dtype, value), x1._device)


def _check_where(condition, x1, x2):
    if condition.dtype is not _bool:
        raise TypeError(f"where: condition has dtype {condition.dtype}, but it must be bool; "
                        f"compare explicitly (e.g. x != 0)")
    try:
        dt = promote(x1.dtype, x2.dtype)
    except TypeError as e:
        raise TypeError(f"where: {e}") from None
    return dt, broadcast_shapes([condition.shape, x1.shape, x2.shape], "where")


def _scalar_kind(v):
    """'bool', 'int', 'float' or 'complex' for a Python scalar, and for a fused function's
    Python scalar argument (a tracer's ScalarParam: its value at trace time); else None."""
    kind = scalar_type_name(v)
    if kind is None and hasattr(type(v), "as_scalar_array"):
        kind = scalar_type_name(v.sample)
    return kind


def _where_scalars(x1, x2) -> tuple[Array, Array]:
    """where's x1 and x2 when one is not an array: from 2024.12 one Python scalar beside an
    array is the 0-d array the scalar rules make of it; two scalars, or anything else, is a
    TypeError. Inside a fused function a scalar argument follows the same rules (it makes
    its own 0-d array: a kernel parameter)."""
    s1, s2 = _scalar_kind(x1), _scalar_kind(x2)
    if _revisions.allows("python scalars in elementwise functions"):
        if s1 is not None and s2 is not None:
            raise TypeError(f"where: x1 and x2 are both Python scalars ({s1} and {s2}); at "
                            f"least one must be an array")
        if s2 is not None and isinstance(x1, Array):
            return x1, _scalar_array(x2, x1)
        if s1 is not None and isinstance(x2, Array):
            return _scalar_array(x1, x2), x2
    else:
        for k, (s, other) in enumerate(((s1, x2), (s2, x1)), 1):
            if s is not None and isinstance(other, Array):
                raise TypeError(_revisions.later("python scalars in elementwise functions",
                                                 f"where: x{k} is a Python {s}"))
    # (a scalar argument is refused as its value would be: "got float")
    return (check_array(x1.sample if hasattr(type(x1), "as_scalar_array") else x1, "where",
                        "x1"),
            check_array(x2.sample if hasattr(type(x2), "as_scalar_array") else x2, "where",
                        "x2"))


def _scalar_array(v, like):
    if hasattr(type(v), "as_scalar_array"):
        return v.as_scalar_array(like, "where")
    return scalar_array(v, like, "where")


def where(condition: Array, x1: ArrayOrScalar, x2: ArrayOrScalar, /) -> Array:
    """Array API ``where``: x1 where condition, else x2 (arrays, broadcast together; the
    result has x1 and x2's promoted dtype). From 2024.12 one of x1, x2 may be a Python
    scalar, typed by the scalar rules against the other."""
    c = check_array(condition, "where", "condition")._data
    if not (isinstance(x1, Array) and isinstance(x2, Array)):
        x1, x2 = _where_scalars(x1, x2)
    a = x1._data
    v = x2._data
    dev = condition._device
    if x1._device is not dev or x2._device is not dev:
        dev = common_device([condition, x1, x2], "where")
    # dtypes and shapes decide the checks: once per combination
    key = ("where", c.dtype, c.shape, a.dtype, a.shape, v.dtype, v.shape)
    r = kept_result(key, (condition, x1, x2), (c, a, v), dev)
    if r is not None:
        return r
    plan = _PLANS.get(key)
    if plan is None:
        plan = planned(key, (), _check_where, condition, x1, x2)
    dt, shape = plan
    b = condition._b if type(condition) is type(x1) is type(x2) else \
        _backend_of([condition, x1, x2])
    return _wrap(b.where(c, a, v, dt, shape, key), dev)


__all__ = ["argmax", "argmin", "nonzero", "searchsorted", "where"]
