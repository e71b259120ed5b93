"""Statistical functions against NumPy (float64/complex128 reference where precision matters)."""
import math

import numpy as np
import pytest

import xp_cuda as xp
from helpers import FLOATING, INTEGER, NUMERIC, REAL, random_array, random_numpy, to_numpy

AXES = [None, 0, -1, (0, 2), (), (2, 0, 1)]
SHAPE = (2, 3, 4)


def _ref_dtype(d):
    return {"float": np.float64, "complex": np.complex128}.get(d.kind)


def _tol(dtype):
    return 1e-4 if dtype in (xp.float32, xp.complex64) else 1e-10


def _close(got, ref, dtype, scale):
    """Relative to the magnitude of the inputs (sums may cancel to near zero)."""
    np.testing.assert_allclose(to_numpy(got), ref, rtol=_tol(dtype), atol=_tol(dtype) * scale)


# ---- sum / prod -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sum", "prod"])
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_sum_prod_values_and_dtypes(device, rng, name, dtype):
    x, a = random_array(rng, SHAPE, dtype, device)
    expected_dtype = {"int": xp.int64, "uint": xp.uint64}.get(dtype.kind, dtype)
    f, nf = getattr(xp, name), getattr(np, name)
    for axis in AXES:
        for keepdims in (False, True):
            out = f(x, axis=axis, keepdims=keepdims)
            assert out.dtype == expected_dtype
            if dtype.kind in ("int", "uint"):  # exact (modular) arithmetic, as NumPy's
                ref = nf(a, axis=axis, keepdims=keepdims, dtype=expected_dtype._np)
                assert out.shape == ref.shape
                np.testing.assert_array_equal(to_numpy(out), ref)
            else:
                ref = nf(a.astype(_ref_dtype(dtype)), axis=axis, keepdims=keepdims)
                assert out.shape == np.shape(ref)
                scale = np.abs(ref).max(initial=0) if name == "prod" else np.abs(a).sum()
                _close(out, ref, dtype, scale)


@pytest.mark.parametrize("name", ["sum", "prod"])
def test_sum_prod_explicit_dtype(device, rng, name):
    f, nf = getattr(xp, name), getattr(np, name)
    x, a = random_array(rng, (5, 3), xp.int8, device)
    for dt in (xp.int16, xp.uint8, xp.int8, xp.float32, xp.complex128):
        out = f(x, axis=0, dtype=dt)
        assert out.dtype == dt
        np.testing.assert_allclose(to_numpy(out), nf(a.astype(dt._np), axis=0, dtype=dt._np),
                                   rtol=1e-6)
    x, a = random_array(rng, (5, 3), xp.float32, device)
    out = f(x, dtype=xp.float64)
    assert out.dtype == xp.float64
    np.testing.assert_allclose(to_numpy(out), nf(a.astype(np.float64)), rtol=1e-12)
    # a dtype of a narrower kind: x is cast to it first (the spec's text for dtype)
    out = f(x, dtype=xp.int32)
    assert out.dtype == xp.int32
    assert int(to_numpy(out)) == nf(a.astype(np.int32), dtype=np.int32)
    xc, _ = random_array(rng, (3,), xp.complex64, device)
    with pytest.raises(TypeError, match="complex"):  # astype would refuse it too
        f(xc, dtype=xp.float64)
    with pytest.raises(TypeError, match="xp_cuda dtype"):
        f(x, dtype=np.float64)


def test_sum_prod_empty_and_special(device):
    z = xp.zeros((0, 3), dtype=xp.float32, device=device)
    assert to_numpy(xp.sum(z)) == 0 and xp.sum(z).shape == ()
    assert to_numpy(xp.prod(z)) == 1
    np.testing.assert_array_equal(to_numpy(xp.sum(z, axis=0)), np.zeros(3))
    x = xp.asarray([1.0, np.nan, 2.0], device=device)
    assert np.isnan(to_numpy(xp.sum(x))) and np.isnan(to_numpy(xp.prod(x)))


# ---- cumulative_sum ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_cumulative_sum(device, rng, dtype):
    x, a = random_array(rng, SHAPE, dtype, device)
    expected_dtype = {"int": xp.int64, "uint": xp.uint64}.get(dtype.kind, dtype)
    for axis in (0, 1, -1):
        for inc in (False, True):
            out = xp.cumulative_sum(x, axis=axis, include_initial=inc)
            assert out.dtype == expected_dtype
            ref = np.cumsum(a.astype(_ref_dtype(dtype) or expected_dtype._np), axis=axis)
            if inc:
                zshape = list(a.shape)
                zshape[axis] = 1
                ref = np.concatenate([np.zeros(zshape, ref.dtype), ref], axis=axis)
            assert out.shape == ref.shape
            if dtype.kind in ("int", "uint"):
                np.testing.assert_array_equal(to_numpy(out), ref)
            else:
                _close(out, ref, dtype, np.abs(a).sum())


def test_cumulative_sum_rules(device, rng):
    x, a = random_array(rng, (6,), xp.int16, device)
    out = xp.cumulative_sum(x)  # 1-D: axis optional
    np.testing.assert_array_equal(to_numpy(out), np.cumsum(a, dtype=np.int64))
    out = xp.cumulative_sum(x, dtype=xp.int16, include_initial=True)
    assert out.dtype == xp.int16 and out.shape == (7,)
    x2, _ = random_array(rng, (2, 3), xp.float32, device)
    with pytest.raises(ValueError, match="axis is required"):
        xp.cumulative_sum(x2)
    with pytest.raises(ValueError, match="0-d"):
        xp.cumulative_sum(xp.asarray(1.0, device=device))
    with pytest.raises(IndexError):
        xp.cumulative_sum(x2, axis=2)
    with pytest.raises(TypeError):
        xp.cumulative_sum(x2, axis=0, include_initial=1)
    with pytest.raises(TypeError):
        xp.cumulative_sum(xp.asarray([True, False], device=device))
    e = xp.cumulative_sum(xp.zeros((0,), dtype=xp.float64, device=device), include_initial=True)
    np.testing.assert_array_equal(to_numpy(e), [0.0])


# ---- max / min --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dtype", REAL, ids=str)
def test_max_min(device, rng, name, dtype):
    x, a = random_array(rng, SHAPE, dtype, device)
    f, nf = getattr(xp, name), getattr(np, name)
    for axis in AXES:
        for keepdims in (False, True):
            out = f(x, axis=axis, keepdims=keepdims)
            ref = nf(a, axis=axis, keepdims=keepdims)
            assert out.dtype == dtype and out.shape == np.shape(ref)
            np.testing.assert_array_equal(to_numpy(out), ref)


@pytest.mark.parametrize("dtype", [xp.bool, xp.int8, xp.uint16, xp.int32, xp.float32,
                                   xp.float64, xp.complex64], ids=str)
def test_column_reductions_long_split_and_misaligned(device, rng, dtype):
    """Reductions keeping the innermost axis (on cuda: several outputs a lane, read as one
    vector per row, ranges split across blocks), on aligned data and on a view one element
    off alignment (the element-wise fallback), against NumPy."""
    rows, cols = 1001, 1032  # 1032 and 516 outputs: 4 and 2 a lane for narrow dtypes on cuda
    flat, f = random_array(rng, (rows * cols + 1,), dtype, device)
    views = {"aligned": (xp.reshape(flat[:-1], (rows, cols)), f[:-1].reshape(rows, cols)),
             "offset": (xp.reshape(flat[1:], (rows, cols)), f[1:].reshape(rows, cols)),
             "3-d": (xp.reshape(flat[:-1], (rows, 8, 129)), f[:-1].reshape(rows, 8, 129)),
             "516": (xp.reshape(flat[:-1], (2 * rows, 4, 129)),
                     f[:-1].reshape(2 * rows, 4, 129))}
    for vname, (x, a) in views.items():
        for axes in ((0,), (0, 1)) if a.ndim == 3 else ((0,),):
            msg = f"{vname} axes={axes}"
            if dtype.kind == "bool":
                for name in ("all", "any"):
                    got = getattr(xp, name)(x, axis=axes)
                    np.testing.assert_array_equal(to_numpy(got), getattr(np, name)(a, axis=axes),
                                                  err_msg=msg)
                continue
            for name in ("max", "min"):
                if dtype.kind == "complex":
                    continue
                got = getattr(xp, name)(x, axis=axes)
                np.testing.assert_array_equal(to_numpy(got), getattr(np, name)(a, axis=axes),
                                              err_msg=msg)
            got = xp.sum(x, axis=axes)
            if dtype.kind in ("int", "uint"):
                ref = np.sum(a, axis=axes, dtype=got.dtype._np)
                np.testing.assert_array_equal(to_numpy(got), ref, err_msg=msg)
            else:
                ref = np.sum(a.astype(_ref_dtype(dtype)), axis=axes)
                _close(got, ref, dtype, np.abs(a).sum(axis=axes).max())
                if dtype.kind == "float":  # mean of complex: 2024.12
                    m = xp.mean(x, axis=axes)
                    _close(m, ref / math.prod(a.shape[i] for i in axes), dtype,
                           np.abs(a).max())
                p = xp.prod(x[:12, ...] / 10 + 1, axis=axes)  # near 1: finite
                pr = np.prod((a[:12] / 10 + 1).astype(_ref_dtype(dtype)), axis=axes)
                _close(p, pr, dtype, np.abs(pr).max())


@pytest.mark.parametrize("dtype", [xp.int16, xp.uint16, xp.int8, xp.uint8], ids=str)
def test_max_min_of_few_narrow_columns(device, rng, dtype):
    """max/min keeping few 1- or 2-byte columns (on cuda: up to 4 or 8 outputs a lane, one
    vector a row, long ranges split across blocks), aligned, one element off alignment (the
    element-wise fallback), and a kept pair of axes, against NumPy."""
    rows = 100003
    for cols in (64, 24, 12, 7):
        flat, f = random_array(rng, (rows * cols + 1,), dtype, device)
        views = {"aligned": (xp.reshape(flat[:-1], (rows, cols)), f[:-1].reshape(rows, cols)),
                 "offset": (xp.reshape(flat[1:], (rows, cols)), f[1:].reshape(rows, cols))}
        if cols == 64:
            views["kept pair"] = (xp.reshape(flat[:-1], (rows, 8, 8)),
                                  f[:-1].reshape(rows, 8, 8))
        for vname, (x, a) in views.items():
            for name in ("max", "min"):
                for n in (rows, 5):  # split ranges, and rows fewer than a lane's step
                    got = getattr(xp, name)(x[:n, ...], axis=0)
                    np.testing.assert_array_equal(to_numpy(got), getattr(np, name)(
                        a[:n], axis=0), err_msg=f"{name} {cols} {vname} {n}")


def test_any_all_of_bool_columns_with_sparse_exceptions(device, rng):
    """any/all keeping the innermost axis of bool arrays whose answer differs by column: all
    of mostly True (a False in some columns only), any of mostly False (on cuda: 4 columns a
    lane combined as one 4-byte word a row where columns are many), against NumPy."""
    for rows, cols in ((3001, 1032), (20011, 64), (5, 1032)):
        for name, fill in (("all", True), ("any", False)):
            a = np.full((rows, cols + 1), fill)
            hit = rng.integers(0, cols, cols // 3)
            a[rng.integers(0, rows, hit.size), hit] = not fill  # some columns only
            a[-1, cols // 2] = not fill  # the last row counts too
            flat = xp.asarray(a.reshape(-1), device=device)
            n = rows * cols
            for vname, x, ref in (("aligned", xp.reshape(flat[:n], (rows, cols)),
                                   a.reshape(-1)[:n].reshape(rows, cols)),
                                  ("offset", xp.reshape(flat[1:n + 1], (rows, cols)),
                                   a.reshape(-1)[1:n + 1].reshape(rows, cols))):
                want = getattr(np, name)(ref, axis=0)
                assert 0 < want.sum() < cols  # the columns differ
                got = getattr(xp, name)(x, axis=0)
                np.testing.assert_array_equal(to_numpy(got), want,
                                              err_msg=f"{name} {rows}x{cols} {vname}")


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_nan_empty_and_types(device, name):
    f = getattr(xp, name)
    x = xp.asarray([[1.0, np.nan], [3.0, 4.0]], device=device)
    np.testing.assert_array_equal(to_numpy(f(x, axis=1)), [np.nan, 4.0 if name == "max" else 3.0])
    assert np.isnan(to_numpy(f(x)))
    e = xp.zeros((0, 3), dtype=xp.int32, device=device)
    with pytest.raises(ValueError, match="no elements"):
        f(e)
    with pytest.raises(ValueError, match="no elements"):
        f(e, axis=0)
    assert f(e, axis=1).shape == (0,)  # every (empty) reduction has 3 elements
    with pytest.raises(TypeError):
        f(xp.asarray([1 + 1j], device=device))
    with pytest.raises(TypeError):
        f(xp.asarray([True], device=device))
    with pytest.raises(TypeError, match="xp_cuda array"):
        f(np.ones(3))
    with pytest.raises(ValueError, match="repeats"):
        f(x, axis=(0, 0))
    with pytest.raises(IndexError):
        f(x, axis=2)
    with pytest.raises(TypeError):
        f(x, keepdims=None)


# ---- mean / var / std -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [xp.float32, xp.float64], ids=str)
def test_mean_var_std(device, rng, dtype):
    x, a = random_array(rng, SHAPE, dtype, device)
    a64 = a.astype(np.float64)
    rtol = 1e-5 if dtype is xp.float32 else 1e-12
    for axis in AXES:
        for keepdims in (False, True):
            out = xp.mean(x, axis=axis, keepdims=keepdims)
            ref = np.mean(a64, axis=axis, keepdims=keepdims)
            assert out.dtype == dtype and out.shape == np.shape(ref)
            np.testing.assert_allclose(to_numpy(out), ref, rtol=rtol, atol=rtol * 10)
            for corr in (0, 1, 0.5):
                n = math.prod(a.shape[i] for i in
                              (range(3) if axis is None else np.atleast_1d(axis))) \
                    if axis != () else 1
                for name in ("var", "std"):
                    out = getattr(xp, name)(x, axis=axis, correction=corr, keepdims=keepdims)
                    assert out.dtype == dtype
                    if n - corr <= 0:
                        assert np.isnan(to_numpy(out)).all()
                        continue
                    ref = getattr(np, name)(a64, axis=axis, ddof=corr, keepdims=keepdims)
                    assert out.shape == np.shape(ref)
                    np.testing.assert_allclose(to_numpy(out), ref, rtol=rtol * 10, atol=1e-6)


def test_mean_var_special(device):
    e = xp.zeros((0, 2), dtype=xp.float32, device=device)
    assert np.isnan(to_numpy(xp.mean(e)))
    np.testing.assert_array_equal(to_numpy(xp.mean(e, axis=0)), [np.nan, np.nan])
    x = xp.asarray([1.0, 2.0, 4.0], device=device)
    assert np.isnan(to_numpy(xp.var(x, correction=3)))
    assert np.isnan(to_numpy(xp.std(x, correction=5.5)))
    assert np.isnan(to_numpy(xp.var(xp.asarray([1.0, np.nan], device=device))))
    for v in (2.5, np.nan):  # 0-d input: the variance of one value (NaN propagates)
        z = xp.asarray(v, device=device)
        for f in (xp.var, xp.std):
            r = to_numpy(f(z))
            assert r.shape == () and (np.isnan(r) if v != v else r == 0.0), (f, v, r)
    for f in (xp.mean, xp.var, xp.std):
        with pytest.raises(TypeError, match="real-valued floating-point"):
            f(xp.asarray([1, 2], device=device))
        with pytest.raises(TypeError):
            f(xp.asarray([1j], device=device))
    with pytest.raises(TypeError, match="correction"):
        xp.var(x, correction=True)
    with pytest.raises(TypeError, match="correction"):
        xp.std(x, correction=xp.asarray(1.0, device=device))


@pytest.mark.parametrize("dtype", INTEGER + FLOATING, ids=str)
def test_zero_dim_inputs(device, rng, dtype):
    x, a = random_array(rng, (), dtype, device)
    out = xp.sum(x)
    assert out.shape == ()
    np.testing.assert_allclose(to_numpy(out), a)


@pytest.mark.parametrize("dtype", [xp.bool, xp.int8, xp.uint32, xp.int64, xp.float32,
                                   xp.float64, xp.complex64], ids=str)
def test_all_any_repeated_calls_and_views(device, rng, dtype):
    """all/any repeated on one key (the second call takes the kept launch on cuda) and on a
    view of the same shape with other strides (which the kept launch must decline), each
    against NumPy: some zeros make rows differ; NaN counts as True."""
    a = random_numpy(rng, (6, 5, 8), dtype)
    a[rng.random(a.shape) < 0.15] = 0
    if dtype.kind in ("float", "complex"):
        a[0, 0, 0] = np.nan
    x = xp.asarray(a, device=device, copy=True)
    b = random_numpy(rng, a.shape, dtype)  # other data of x's shape and strides
    b[rng.random(b.shape) < 0.5] = 0
    views = {"whole": (x, a), "strided": (x[::2, :, ::2], a[::2, :, ::2]),
             "transposed": (xp.permute_dims(x[:, :, :6], (2, 0, 1)),
                            a[:, :, :6].transpose(2, 0, 1)),
             "other data": (xp.asarray(b, device=device, copy=True), b)}
    for axis in (None, 0, -1, (0, 2)):
        for keepdims in (False, True):
            for name in ("all", "any"):
                for vname, (v, ref) in views.items():
                    for _ in range(2):
                        got = getattr(xp, name)(v, axis=axis, keepdims=keepdims)
                        want = getattr(np, name)(ref, axis=axis, keepdims=keepdims)
                        assert got.dtype == xp.bool and got.shape == want.shape
                        np.testing.assert_array_equal(to_numpy(got), want,
                                                      err_msg=f"{name} {vname} {axis}")
