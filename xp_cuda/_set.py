"""The 4 set functions of 2023.12, all from one sort-based pass, and ``isin`` (2025.12).

Uniqueness follows ``equal``: every NaN (and every complex value with a NaN component) is its
own unique value with a count of one, and -0.0 and +0.0 are one value (the first occurrence
represents it). Values come out in ascending order, NaNs last.
"""
from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING

from ._array import Array, _backend_of, _wrap, check_array
from ._backends import backend
from ._dtypes import check_scalar, promote, scalar_type_name
from ._revisions import since
from ._validation import check_bool, check_dtype_category, common_device


UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices",
                                                 "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _unique(fname, x, want_index, want_inverse, want_counts):
    check_array(x, fname)
    parts = x._b.unique(x._data, want_index, want_inverse, want_counts)
    return {k: _wrap(v, x.device) for k, v in parts.items()}


def unique_all(x: Array, /) -> UniqueAllResult:
    """Array API 2023.12 ``unique_all``: (values, indices, inverse_indices, counts)."""
    return UniqueAllResult(**_unique("unique_all", x, True, True, True))


def unique_counts(x: Array, /) -> UniqueCountsResult:
    """Array API 2023.12 ``unique_counts``: (values, counts)."""
    return UniqueCountsResult(**_unique("unique_counts", x, False, False, True))


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """Array API 2023.12 ``unique_inverse``: (values, inverse_indices), inverse_indices of
    x's shape."""
    return UniqueInverseResult(**_unique("unique_inverse", x, False, True, False))


def unique_values(x: Array, /) -> Array:
    """Array API 2023.12 ``unique_values``: the unique elements of x, 1-D."""
    return _unique("unique_values", x, False, False, False)["values"]


# isin's dtypes: the spec says "should have an integer data type"; real floating arrays are
# served too (NaN is in no array, -0.0 equals +0.0, as ``equal``); bool and complex are refused
# (no order to search). Change this one word to "integer" for the strict reading.
_ISIN_CATEGORY = "real-valued"


def _isin_scalar(value, other, argname: str) -> Array:
    """A Python int operand of isin as a 0-d array of the other operand's dtype (the spec's
    signature: Union[array, int]; the scalar rules then type it)."""
    fname = "isin"
    if not isinstance(other, Array):
        if scalar_type_name(other) is not None:
            raise TypeError(f"{fname}: x1 and x2 are both Python scalars; at least one must be "
                            f"an array")
        check_array(other, fname, "x2" if argname == "x1" else "x1")
    kind = scalar_type_name(value)
    if kind is None:
        check_array(value, fname, argname)  # a foreign array: the error says how to bring it in
    if kind != "int":
        raise TypeError(f"{fname}: {argname} must be an array or a Python int (Array API "
                        f"2025.12), got {type(value).__name__}")
    check_dtype_category(other, _ISIN_CATEGORY, fname, "x2" if argname == "x1" else "x1")
    v = check_scalar(value, other.dtype, f"{fname}: {argname}")
    # the device's own backend (other may be traced: isin then refuses it by name)
    return _wrap(backend(other._device).full((), other.dtype, v), other._device)


@since("2025.12")
def isin(x1: Array | int, x2: Array | int, /, *, invert: bool = False) -> Array:
    """Array API 2025.12 ``isin``: whether each element of x1 equals some element of x2
    (``equal``'s equality: NaN equals nothing, -0.0 equals +0.0), or with ``invert`` whether it
    equals none; a bool array of x1's shape (0-d when x1 is a Python int). x1 and x2 are arrays
    of integer or real floating dtypes (or one of them a Python int), compared in their promoted
    dtype; dtypes without a promotion are a TypeError."""
    fname = "isin"
    if not isinstance(x1, Array):
        x1 = _isin_scalar(x1, x2, "x1")
    elif not isinstance(x2, Array):
        x2 = _isin_scalar(x2, x1, "x2")
    if TYPE_CHECKING:  # _isin_scalar returns only beside an array: both are arrays now
        assert isinstance(x2, Array)
    check_bool(invert, fname, "invert")
    check_dtype_category(x1, _ISIN_CATEGORY, fname, "x1")
    check_dtype_category(x2, _ISIN_CATEGORY, fname, "x2")
    try:
        dt = promote(x1.dtype, x2.dtype)
    except TypeError as e:
        raise TypeError(f"{fname}: {e}") from None
    dev = x1._device
    if x2._device is not dev:
        dev = common_device([x1, x2], fname)
    b = x1._b if type(x1) is type(x2) else _backend_of([x1, x2])
    return _wrap(b.isin(x1._data, x2._data, dt, invert), dev)


__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values", "isin"]
