"""The 4 set functions of 2023.12, all from one sort-based pass.

Uniqueness follows ``equal``: every NaN (and every complex value with a NaN component) is its
own unique value with a count of one, and -0.0 and +0.0 are one value (the first occurrence
represents it). Values come out in ascending order, NaNs last.
"""
from __future__ import annotations

from collections import namedtuple

from ._array import Array, _wrap, check_array


UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices",
                                                 "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _unique(fname, x, want_index, want_inverse, want_counts):
    check_array(x, fname)
    parts = x._b.unique(x._data, want_index, want_inverse, want_counts)
    return {k: _wrap(v, x.device) for k, v in parts.items()}


def unique_all(x, /) -> UniqueAllResult:
    """Array API 2023.12 ``unique_all``: (values, indices, inverse_indices, counts)."""
    return UniqueAllResult(**_unique("unique_all", x, True, True, True))


def unique_counts(x, /) -> UniqueCountsResult:
    """Array API 2023.12 ``unique_counts``: (values, counts)."""
    return UniqueCountsResult(**_unique("unique_counts", x, False, False, True))


def unique_inverse(x, /) -> UniqueInverseResult:
    """Array API 2023.12 ``unique_inverse``: (values, inverse_indices), inverse_indices of
    x's shape."""
    return UniqueInverseResult(**_unique("unique_inverse", x, False, True, False))


def unique_values(x, /) -> Array:
    """Array API 2023.12 ``unique_values``: the unique elements of x, 1-D."""
    return _unique("unique_values", x, False, False, False)["values"]


__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values"]
