"""Searching, sorting, set and utility functions: against NumPy for every dtype, and errors."""
import math

import numpy as np
import pytest

import xp_cuda as xp
from helpers import ALL_DTYPES, REAL, random_array, to_numpy

NAN = math.nan


def same(out, expected, dtype):
    assert out.dtype is dtype
    got = to_numpy(out)
    assert got.shape == np.shape(expected)
    np.testing.assert_array_equal(got, expected)


def with_ties(rng, shape, dtype, device):
    """Random data with many repeated values, so ties and stability matter."""
    _, a = random_array(rng, shape, dtype, device)
    a = a.reshape(-1)
    a[rng.integers(0, a.size, a.size // 2)] = a[0]
    a = a.reshape(shape)
    return xp.asarray(a, device=device), a


@pytest.mark.parametrize("dtype", REAL, ids=str)
def test_argmax_argmin(device, rng, dtype):
    x, a = with_ties(rng, (3, 5), dtype, device)
    for name in ("argmax", "argmin"):
        f, g = getattr(xp, name), getattr(np, name)
        same(f(x), g(a), xp.int64)
        same(f(x, axis=0), g(a, axis=0), xp.int64)
        same(f(x, axis=-1, keepdims=True), g(a, axis=-1, keepdims=True), xp.int64)
        same(f(x, keepdims=True), g(a, keepdims=True), xp.int64)


@pytest.mark.parametrize("dtype", REAL, ids=str)
def test_sort_argsort(device, rng, dtype):
    x, a = with_ties(rng, (4, 37), dtype, device)
    for axis in (0, -1):
        same(xp.sort(x, axis=axis), np.sort(a, axis=axis), dtype)
        same(xp.argsort(x, axis=axis), np.argsort(a, axis=axis, kind="stable"), xp.int64)
        same(xp.sort(x, axis=axis, descending=True), np.flip(np.sort(a, axis=axis), axis),
             dtype)
        # Stable descending: ties keep their original order.
        n = a.shape[axis]
        exp = (n - 1) - np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
        got = xp.argsort(x, axis=axis, descending=True)
        same(got, exp, xp.int64)
        # stable=False may reorder ties; ours never does, so the results are the same.
        same(xp.argsort(x, axis=axis, stable=False),
             np.argsort(a, axis=axis, kind="stable"), xp.int64)


def test_descending_ties_and_nans(device):
    x = xp.asarray([1.0, NAN, 2.0, 1.0, -0.0, 0.0, 2.0], device=device)
    assert to_numpy(xp.argsort(x, descending=True)).tolist() == [1, 2, 6, 0, 3, 4, 5]
    assert to_numpy(xp.argsort(x)).tolist() == [4, 5, 0, 3, 2, 6, 1]
    s = to_numpy(xp.sort(x))
    assert np.isnan(s[-1]) and s[:-1].tolist() == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
    assert np.signbit(s[0]) and not np.signbit(s[1])  # stable: -0.0 came first
    d = to_numpy(xp.sort(x, descending=True))
    assert np.isnan(d[0]) and np.signbit(d[-2]) and not np.signbit(d[-1])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_nonzero_where_all_any(device, rng, dtype):
    x, a = random_array(rng, (3, 4), dtype, device)
    a.reshape(-1)[::3] = 0
    x = xp.asarray(a, device=device)
    for got, exp in zip(xp.nonzero(x), np.nonzero(a)):
        same(got, exp, xp.int64)
    c, ca = random_array(rng, (3, 1), xp.bool, device)
    y, ya = random_array(rng, (4,), dtype, device)
    same(xp.where(c, x, y), np.where(ca, a, ya), dtype)
    for name in ("all", "any"):
        f, g = getattr(xp, name), getattr(np, name)
        same(f(x), g(a), xp.bool)
        same(f(x, axis=0), g(a, axis=0), xp.bool)
        same(f(x, axis=(0, 1), keepdims=True), g(a, axis=(0, 1), keepdims=True), xp.bool)
        same(f(x, axis=-1, keepdims=True), g(a, axis=-1, keepdims=True), xp.bool)
    assert bool(xp.all(xp.zeros((2, 0), device=device)))
    assert not bool(xp.any(xp.zeros((2, 0), device=device)))
    if dtype.kind in ("float", "complex"):
        assert bool(xp.all(xp.asarray([NAN, math.inf], dtype=dtype, device=device)))


@pytest.mark.parametrize("d1,d2", [(xp.int8, xp.uint8), (xp.float32, xp.complex64),
                                   (xp.uint16, xp.uint32), (xp.bool, xp.bool)], ids=str)
def test_where_promotes(device, rng, d1, d2):
    c, ca = random_array(rng, (5,), xp.bool, device)
    x1, a1 = random_array(rng, (2, 1), d1, device)
    x2, a2 = random_array(rng, (5,), d2, device)
    dt = xp.result_type(d1, d2)
    same(xp.where(c, x1, x2), np.where(ca, a1, a2).astype(dt._np), dt)


@pytest.mark.parametrize("dtype", REAL, ids=str)
def test_searchsorted(device, rng, dtype):
    _, a = random_array(rng, (20,), dtype, device)
    v, va = random_array(rng, (3, 4), dtype, device)
    va = va.copy()
    va[0, :2] = a[:2]  # values landing exactly on elements
    v = xp.asarray(va, device=device)
    s = np.sort(a, kind="stable")
    for side in ("left", "right"):
        same(xp.searchsorted(xp.asarray(s, device=device), v, side=side),
             np.searchsorted(s, va, side=side), xp.int64)
        order = np.argsort(a, kind="stable")
        same(xp.searchsorted(xp.asarray(a, device=device), v, side=side,
                             sorter=xp.asarray(order, device=device)),
             np.searchsorted(a, va, side=side, sorter=order), xp.int64)


def test_searchsorted_nan_and_promotion(device):
    x1 = xp.asarray([1.0, 2.0, NAN], device=device)
    assert to_numpy(xp.searchsorted(x1, xp.asarray([NAN, 3.0], device=device))).tolist() == [2, 2]
    out = xp.searchsorted(xp.asarray([1, 5, 9], dtype=xp.int8, device=device),
                          xp.asarray([300], dtype=xp.int16, device=device))
    assert out.dtype is xp.int64 and to_numpy(out).tolist() == [3]


def _reference_unique(a):
    """The spec's rule by brute force: value equality (NaNs distinct, -0 == +0)."""
    flat = a.reshape(-1)
    groups = []  # [value, first index, count]
    inverse = np.empty(flat.size, dtype=np.int64)
    for i, v in enumerate(flat.tolist()):
        for g, grp in enumerate(groups):
            if grp[0] == v:  # nan != nan: every NaN opens its own group
                grp[2] += 1
                inverse[i] = g
                break
        else:
            inverse[i] = len(groups)
            groups.append([v, i, 1])
    return groups, inverse.reshape(a.shape)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_unique(device, rng, dtype):
    x, a = with_ties(rng, (3, 7), dtype, device)
    if dtype.kind in ("float", "complex"):
        a = a.copy()
        a[0, 1] = a[2, 2] = NAN
        a[1, 0], a[1, 1] = -0.0, 0.0
        x = xp.asarray(a, device=device)
    groups, inverse = _reference_unique(a)
    out = xp.unique_all(x)
    assert type(out).__name__ == "UniqueAllResult"
    assert out._fields == ("values", "indices", "inverse_indices", "counts")
    vals = to_numpy(out.values)
    assert out.values.dtype is dtype and vals.shape == (len(groups),)
    assert out.indices.dtype is out.inverse_indices.dtype is out.counts.dtype is xp.int64
    assert out.inverse_indices.shape == a.shape
    # Each unique value's first index, count and inverse agree with the brute-force groups.
    by_first = {g[1]: (gi, g) for gi, g in enumerate(groups)}
    idx, cnt, inv = (to_numpy(out.indices), to_numpy(out.counts),
                     to_numpy(out.inverse_indices))
    assert sorted(idx.tolist()) == sorted(by_first)
    for k, first in enumerate(idx.tolist()):
        gi, g = by_first[first]
        assert cnt[k] == g[2]
        np.testing.assert_array_equal(vals[k], a.reshape(-1)[first])
        np.testing.assert_array_equal(inv == k, inverse == gi)
    np.testing.assert_array_equal(vals[inv], np.where(a == 0, 0, a) if dtype.kind != "bool"
                                  else a)
    same(xp.unique_values(x), vals, dtype)
    uc = xp.unique_counts(x)
    assert uc._fields == ("values", "counts")
    same(uc.values, vals, dtype)
    same(uc.counts, cnt, xp.int64)
    ui = xp.unique_inverse(x)
    assert ui._fields == ("values", "inverse_indices")
    same(ui.inverse_indices, inv, xp.int64)


def test_unique_nan_rule_and_shapes(device):
    x = xp.asarray([NAN, 1.0, NAN, -0.0, 0.0], device=device)
    v = to_numpy(xp.unique_values(x))
    assert v.shape == (4,) and np.isnan(v).sum() == 2
    c = xp.unique_counts(x)
    assert sorted(to_numpy(c.counts).tolist()) == [1, 1, 1, 2]
    z = xp.unique_all(xp.asarray(5, device=device))
    assert z.values.shape == (1,) and z.inverse_indices.shape == ()
    e = xp.unique_inverse(xp.zeros((2, 0), device=device))
    assert e.values.shape == (0,) and e.inverse_indices.shape == (2, 0)
    assert xp.unique_values(xp.zeros((0,), device=device)).shape == (0,)


def test_errors(device):
    x = xp.reshape(xp.arange(12, device=device), (3, 4))
    c = xp.asarray(1 + 2j, device=device)
    with pytest.raises(TypeError, match="real-valued"):
        xp.argmax(xp.stack([c, c]))
    with pytest.raises(TypeError, match="real-valued"):
        xp.sort(xp.asarray([True], device=device))
    with pytest.raises(TypeError, match="real-valued"):
        xp.argsort(xp.stack([c, c]))
    with pytest.raises(TypeError, match="keepdims"):
        xp.argmin(x, keepdims=1)
    with pytest.raises(TypeError, match="descending"):
        xp.sort(x, descending=None)
    with pytest.raises(TypeError, match="stable"):
        xp.argsort(x, stable=0)
    with pytest.raises(ValueError, match="size 0"):
        xp.argmax(xp.zeros((0, 2), device=device), axis=0)
    with pytest.raises(ValueError, match="empty"):
        xp.argmin(xp.zeros((0,), device=device))
    with pytest.raises(IndexError, match="out of range"):
        xp.argmax(x, axis=2)
    with pytest.raises(IndexError, match="0-d"):
        xp.sort(x[0, 0])
    with pytest.raises(ValueError, match="at least one dimension"):
        xp.nonzero(x[0, 0])
    with pytest.raises(TypeError, match="bool"):
        xp.where(x, x, x)
    with pytest.raises(TypeError, match="cannot be promoted"):
        xp.where(x > 3, x, xp.ones((3, 4), device=device))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        xp.where(x > 3, x, xp.ones(3, dtype=xp.int64, device=device))
    with pytest.raises(TypeError, match="in the 2024.12 revision"):
        xp.where(x > 3, x, 1)  # 2023.12: arrays only
    with pytest.raises(ValueError, match="1-D"):
        xp.searchsorted(x, x)
    with pytest.raises(ValueError, match="side"):
        xp.searchsorted(x[0, ...], x, side="middle")
    with pytest.raises(TypeError, match="real-valued"):
        xp.searchsorted(xp.stack([c, c]), c)
    with pytest.raises(TypeError, match="cannot be promoted"):
        xp.searchsorted(x[0, ...], xp.ones(2, device=device))
    with pytest.raises(ValueError, match="sorter has shape"):
        xp.searchsorted(x[0, ...], x, sorter=x[0, :2])
    with pytest.raises(IndexError, match="sorter"):
        xp.searchsorted(x[0, ...], x, sorter=x[2, ...])
    with pytest.raises(TypeError, match="integer"):
        xp.searchsorted(x[0, ...], x, sorter=xp.ones(4, device=device))
    with pytest.raises(ValueError, match="repeats an axis"):
        xp.all(x, axis=(0, 0))
    with pytest.raises(IndexError, match="out of range"):
        xp.any(x, axis=-3)
    with pytest.raises(TypeError, match="not an xp_cuda array"):
        xp.unique_values(np.ones(3))
