"""The 4 set functions of 2023.12, all from one sort-based pass.

Uniqueness follows ``equal``: every NaN (and every complex value with a NaN component) is its
own unique value with a count of one, and -0.0 and +0.0 are one value (the first occurrence
represents it). Values come out in ascending order, NaNs last.
"""
from __future__ import annotations

from collections import namedtuple

from ._array import Array, _wrap, check_array
from ._dtypes import DEFAULT_DTYPES

_INDEX = DEFAULT_DTYPES["indexing"]._np

UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices",
                                                 "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _group_starts(xp, s):
    """Mask of the first element of each run of equal values in sorted s. NaN != NaN, so each
    NaN starts its own run; -0.0 == +0.0, so they share one."""
    mask = xp.empty(s.shape, dtype=bool)
    if s.shape[0]:
        mask[0] = True
        mask[1:] = s[1:] != s[:-1]
    return mask


def _unique(fname, x, want_index, want_inverse, want_counts):
    check_array(x, fname)
    b = x._b
    xp = b.xp
    with b.ctx():
        flat = x._data.reshape(-1)
        n = flat.shape[0]
        # Sort bools as uint8: one comparison path on both backends.
        key = flat.astype("uint8") if flat.dtype == bool else flat
        perm = b.stable_argsort(key, 0)
        s = xp.take(flat, perm)
        mask = _group_starts(xp, s)
        starts = xp.nonzero(mask)[0]
        out = {"values": _wrap(s[mask], x.device)}
        if want_index:
            # The sort is stable, so a run's first element is its first occurrence in x.
            out["indices"] = _wrap(xp.take(perm, starts).astype(_INDEX), x.device)
        if want_inverse:
            inv = xp.empty(n, dtype=_INDEX)
            inv[perm] = xp.cumsum(mask, dtype=_INDEX) - 1
            out["inverse_indices"] = _wrap(inv.reshape(x.shape), x.device)
        if want_counts:
            ends = xp.concatenate([starts[1:], xp.asarray([n], dtype=starts.dtype)])
            out["counts"] = _wrap((ends - starts).astype(_INDEX), x.device)
        return out


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
    check_array(x, "unique_values")
    b = x._b
    xp = b.xp
    with b.ctx():
        flat = x._data.reshape(-1)
        if flat.dtype == bool:
            s = b.stable_sort(flat.astype("uint8"), 0).astype(bool)
        else:
            s = b.stable_sort(flat, 0)
        return _wrap(s[_group_starts(xp, s)], x.device)


__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values"]
