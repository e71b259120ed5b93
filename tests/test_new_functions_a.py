"""2024.12's nextafter, reciprocal, count_nonzero, cumulative_prod and diff: shown only under
2024.12, and on every device equal to NumPy (exact where the math is exact) on random data of
every dtype they accept, 0-d where allowed, empty, strided, and the spec's special values. The
CPU half also compiles every new kernel (the elementwise rows, the count_nonzero programs and
fused programs using the new rows) with NVRTC; the scan kernels of cumulative_prod are compiled
and emulated in tests/test_scan_kernels.py."""
import math

import numpy as np
import pytest

import xp_cuda as xp
from helpers import ALL_DTYPES, nvrtc_missing, random_numpy, to_numpy
from xp_cuda._dtypes import in_category

NEW = ("nextafter", "reciprocal", "count_nonzero", "cumulative_prod", "diff")
FLOATS = [d for d in ALL_DTYPES if d.kind == "float"]
FLOATING = [d for d in ALL_DTYPES if d.kind in ("float", "complex")]
NUMERIC = [d for d in ALL_DTYPES if d.kind != "bool"]
INTS = [d for d in ALL_DTYPES if d.kind in ("int", "uint")]
ids = str


def _nonzero(rng, shape, dtype):
    """Random data with no zero element (a zero would make the cases below trivial)."""
    a = random_numpy(rng, shape, dtype)
    if dtype.kind == "bool":
        return np.ones(shape, bool)
    return np.where(a == 0, np.ones((), a.dtype), a).astype(dtype._np)


def _views(a):
    """(name, NumPy view): C order, a strided and reversed view, the transpose."""
    out = [("c", a)]
    if a.ndim >= 1 and a.shape[-1] > 2:
        out.append(("strided", a[..., ::-2]))
    if a.ndim >= 2:
        out.append(("T", a.T))
    return out


def _dev(a, device):
    """The NumPy view `a` as an xp_cuda array on device with the same strides (a view of a
    copy of its base where possible)."""
    return xp.asarray(np.ascontiguousarray(a), device=device)


def _same_bits(got, ref, what):
    """Equal values, NaN where NaN, and the sign of every zero."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.dtype == ref.dtype and got.shape == ref.shape, (what, got.dtype, ref.dtype,
                                                               got.shape, ref.shape)
    parts = [(got.real, ref.real), (got.imag, ref.imag)] if got.dtype.kind == "c" else \
        [(got, ref)]
    for g, r in parts:
        nan = np.isnan(r)
        bad = (np.isnan(g) != nan) | (~nan & ((g != r) | (np.signbit(g) != np.signbit(r))))
        assert not bad.any(), (what, [(i, g[i], r[i]) for i in zip(*np.nonzero(bad))][:6])


# ---- the revision gate ----------------------------------------------------------------------
def test_absent_under_2023_12_naming_2024_12(revision):
    xp.set_api_version("2023.12")
    for name in NEW:
        assert name not in xp.__all__
        with pytest.raises(AttributeError, match=rf"xp_cuda\.{name} is in the 2024\.12 revision"):
            getattr(xp, name)
    xp.set_api_version("2024.12")
    for name in NEW:
        assert name in xp.__all__ and getattr(xp, name).__xp_since__ == "2024.12"
        assert "2024.12" in getattr(xp, name).__doc__
    xp.set_api_version("2025.12")
    assert all(name in xp.__all__ for name in NEW)


def test_elementwise_rows_carry_their_revision():
    """The later rows are data: the same fields as ELEMENTWISE, then the revision; the table
    the functions read holds both, and the kernel table covers every row."""
    from xp_cuda import _elementwise as E
    from xp_cuda._kernels.elementwise import OPS
    assert set(E.LATER) == {"nextafter", "reciprocal"}
    assert not set(E.LATER) & set(E.ELEMENTWISE)
    assert set(E.ROWS) == set(E.ELEMENTWISE) | set(E.LATER) == set(OPS)
    for name, row in E.LATER.items():
        assert E.ROWS[name] == row[:4] and row[4] == "2024.12"
        assert getattr(E, name).__xp_since__ == "2024.12"
    assert E.ROWS["nextafter"][:3] == (2, "real-valued floating-point", "same")
    assert E.ROWS["reciprocal"][:3] == (1, "floating-point", "same")


# ---- nextafter ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
def test_nextafter_random(v2024, rng, device, dtype):
    a = _nonzero(rng, (37, 29), dtype)
    b = _nonzero(rng, (29,), dtype)  # broadcasts against a
    for name, va in _views(a):
        vb = b[: va.shape[-1]] if name != "T" else _nonzero(rng, (va.shape[-1],), dtype)
        got = xp.nextafter(_dev(va, device), _dev(vb, device))
        assert got.dtype == dtype and got.device == device
        _same_bits(to_numpy(got), np.nextafter(va, vb), (name, dtype))
    # toward itself: x; 0-d with 1-D; empty; a long array crossing many blocks
    x = _dev(a, device)
    _same_bits(to_numpy(xp.nextafter(x, x)), a, "self")
    s = xp.asarray(a[0, 0], device=device)
    _same_bits(to_numpy(xp.nextafter(s, xp.asarray(b, device=device))), np.nextafter(a[0, 0], b),
               "0-d")
    assert xp.nextafter(s, s).shape == ()
    e = xp.asarray(np.empty((0, 3), dtype._np), device=device)
    assert xp.nextafter(e, xp.asarray(b[:3], device=device)).shape == (0, 3)
    big = _nonzero(rng, (70001,), dtype)
    _same_bits(to_numpy(xp.nextafter(xp.asarray(big, device=device),
                                      xp.asarray(-big, device=device))),
               np.nextafter(big, -big), "long")


def test_nextafter_mixed_dtypes_promote(v2024, rng, device):
    a = _nonzero(rng, (50,), xp.float32)
    b = _nonzero(rng, (50,), xp.float64)
    got = xp.nextafter(xp.asarray(a, device=device), xp.asarray(b, device=device))
    assert got.dtype == xp.float64
    _same_bits(to_numpy(got), np.nextafter(a.astype(np.float64), b), "mixed")


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
def test_nextafter_special_values(v2024, device, dtype):
    fi = np.finfo(dtype._np)
    sub = fi.smallest_subnormal
    vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, sub, -sub, 2 * sub,
                     fi.tiny, -fi.tiny, fi.max, -fi.max, fi.eps], dtype._np)
    a, b = np.repeat(vals, vals.size), np.tile(vals, vals.size)
    got = to_numpy(xp.nextafter(xp.asarray(a, device=device), xp.asarray(b, device=device)))
    with np.errstate(over="ignore"):  # max toward inf: inf, as the spec's IEEE step gives
        _same_bits(got, np.nextafter(a, b), dtype)
    # the spec's cases, spelled out
    z = [(-0.0, 0.0, 0.0, False), (0.0, -0.0, -0.0, True)]
    for x1, x2, want, sign in z:
        r = float(xp.nextafter(xp.asarray(x1, dtype=dtype, device=device),
                               xp.asarray(x2, dtype=dtype, device=device)))
        assert r == want and math.copysign(1, r) == (-1 if sign else 1)
    assert math.isnan(float(xp.nextafter(xp.asarray(np.nan, dtype=dtype, device=device),
                                         xp.asarray(1.0, dtype=dtype, device=device))))
    up = float(xp.nextafter(xp.asarray(0.0, dtype=dtype, device=device),
                            xp.asarray(1.0, dtype=dtype, device=device)))
    assert up == sub  # a subnormal, not flushed to zero


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d.kind != "float"], ids=ids)
def test_nextafter_rejects_other_dtypes(v2024, device, dtype):
    x = xp.ones(3, dtype=dtype, device=device)
    with pytest.raises(TypeError, match="nextafter.*requires"):
        xp.nextafter(x, x)


# ---- reciprocal -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATING, ids=ids)
def test_reciprocal_random(v2024, rng, device, dtype):
    a = _nonzero(rng, (37, 29), dtype)
    for name, va in _views(a):
        got = xp.reciprocal(_dev(va, device))
        assert got.dtype == dtype and got.device == device
        with np.errstate(all="ignore"):
            ref = np.reciprocal(va)
        if dtype.kind == "float":  # one correctly rounded division: exact
            _same_bits(to_numpy(got), ref, (name, dtype))
        else:
            rtol = 4 * np.finfo(ref.real.dtype).eps
            np.testing.assert_allclose(to_numpy(got), ref, rtol=rtol, atol=0)
    s = xp.asarray(a[1, 2], device=device)
    assert xp.reciprocal(s).shape == ()
    np.testing.assert_allclose(to_numpy(xp.reciprocal(s)), np.reciprocal(a[1, 2]),
                               rtol=4 * np.finfo(np.float32).eps)
    assert xp.reciprocal(xp.asarray(np.empty((2, 0), dtype._np), device=device)).shape == (2, 0)
    big = _nonzero(rng, (70001,), dtype)
    np.testing.assert_allclose(to_numpy(xp.reciprocal(xp.asarray(big, device=device))),
                               np.reciprocal(big), rtol=4 * np.finfo(big.real.dtype).eps)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
def test_reciprocal_special_values_real(v2024, device, dtype):
    """As 1.0 / x (the spec): +-0 -> +-inf, +-inf -> +-0, NaN -> NaN, a subnormal -> inf."""
    fi = np.finfo(dtype._np)
    vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -2.0, fi.smallest_subnormal,
                     fi.max, -fi.tiny], dtype._np)
    got = to_numpy(xp.reciprocal(xp.asarray(vals, device=device)))
    with np.errstate(all="ignore"):
        _same_bits(got, (np.ones((), dtype._np) / vals).astype(dtype._np), dtype)
    assert got[0] == np.inf and got[1] == -np.inf and np.signbit(got[3]) and not \
        np.signbit(got[2])


@pytest.mark.parametrize("dtype", [xp.complex64, xp.complex128], ids=ids)
def test_reciprocal_special_values_complex(v2024, device, dtype):
    """The spec's 1.0 / z with a real numerator, computed as NumPy's reciprocal (its cpu
    reference): e.g. 1 / (1 + 0j) = 1 - 0j, 1 / 0j = NaN + NaN j."""
    fi = np.finfo(np.float32 if dtype == xp.complex64 else np.float64)
    parts = [0.0, -0.0, 1.0, -1.0, 0.5, fi.smallest_subnormal, fi.max, np.inf, -np.inf, np.nan]
    z = np.array([complex(a, b) for a in parts for b in parts], dtype._np)
    got = to_numpy(xp.reciprocal(xp.asarray(z, device=device)))
    with np.errstate(all="ignore"):
        _same_bits(got, np.reciprocal(z), dtype)
    one = complex(xp.reciprocal(xp.asarray(1 + 0j, dtype=dtype, device=device)))
    assert one == 1 and math.copysign(1, one.imag) == -1


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d.kind in ("bool", "int", "uint")],
                         ids=ids)
def test_reciprocal_rejects_non_floating(v2024, device, dtype):
    with pytest.raises(TypeError, match="reciprocal.*requires"):
        xp.reciprocal(xp.ones(3, dtype=dtype, device=device))


# ---- count_nonzero --------------------------------------------------------------------------
def _with_zeros(rng, shape, dtype, density=0.3):
    """Random data with about `density` of its elements zero (for bool, False), and for
    floating dtypes -0.0 (a zero), NaN (not a zero) and, for complex, one-part-zero values."""
    a = np.array(_nonzero(rng, shape, dtype))
    if dtype.kind == "bool":
        return rng.random(shape) > density
    a[rng.random(shape) < density] = 0
    if dtype.kind in ("float", "complex") and a.size >= 8:
        flat = a.reshape(-1)
        flat[1], flat[3] = -0.0, np.nan
        if dtype.kind == "complex":
            flat[5], flat[7] = complex(0, -2), complex(-0.0, 0.0)
    return a


_AXES = [None, 0, -1, (0,), (1, 0), ()]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_count_nonzero_every_dtype(v2024, rng, device, dtype):
    a = _with_zeros(rng, (33, 41), dtype)
    for name, va in _views(a):
        x = _dev(va, device)
        for axis in _AXES:
            for keepdims in (False, True):
                got = xp.count_nonzero(x, axis=axis, keepdims=keepdims)
                ref = np.count_nonzero(va, axis=axis, keepdims=keepdims)
                assert got.dtype == xp.int64 and got.device == device
                np.testing.assert_array_equal(to_numpy(got), np.asarray(ref, np.int64),
                                              err_msg=f"{name} axis={axis} keep={keepdims}")
    # 3-D, a middle axis and two non-neighbouring ones; long rows crossing blocks
    c = _with_zeros(rng, (4, 5, 6), dtype)
    for axis in (1, (0, 2), (2, 0, 1)):
        np.testing.assert_array_equal(
            to_numpy(xp.count_nonzero(xp.asarray(c, device=device), axis=axis)),
            np.count_nonzero(c, axis=axis))
    big = _with_zeros(rng, (3, 70001), dtype, 0.5)
    xb = xp.asarray(big, device=device)
    assert int(xp.count_nonzero(xb)) == np.count_nonzero(big)
    np.testing.assert_array_equal(to_numpy(xp.count_nonzero(xb, axis=1)),
                                  np.count_nonzero(big, axis=1))


def test_count_nonzero_0d_empty_and_values(v2024, device):
    for v, want in ((3.5, 1), (0.0, 0), (-0.0, 0), (np.nan, 1), (True, 1), (False, 0)):
        r = xp.count_nonzero(xp.asarray(v, device=device))
        assert r.shape == () and r.dtype == xp.int64 and int(r) == want, v
    z = xp.asarray(complex(0, -0.0), device=device)
    assert int(xp.count_nonzero(z)) == 0
    assert int(xp.count_nonzero(xp.asarray(complex(0, 1e-300), device=device))) == 1
    e = xp.zeros((0, 3), device=device)
    assert int(xp.count_nonzero(e)) == 0
    np.testing.assert_array_equal(to_numpy(xp.count_nonzero(e, axis=0)), [0, 0, 0])
    assert xp.count_nonzero(e, axis=1).shape == (0,)
    assert xp.count_nonzero(e, axis=0, keepdims=True).shape == (1, 3)
    assert xp.count_nonzero(xp.asarray(2.0, device=device), axis=()).shape == ()


def test_count_nonzero_rejections(v2024, device):
    x = xp.ones((2, 3), device=device)
    with pytest.raises(IndexError, match="count_nonzero"):
        xp.count_nonzero(x, axis=2)
    with pytest.raises(ValueError, match="repeats"):
        xp.count_nonzero(x, axis=(0, -2))
    with pytest.raises(TypeError, match="keepdims"):
        xp.count_nonzero(x, keepdims=1)
    with pytest.raises(TypeError, match="asarray"):
        xp.count_nonzero(np.ones(3))
    for _ in range(2):  # the second call takes the kept path on cuda: same answer
        assert int(xp.count_nonzero(x)) == 6


# ---- cumulative_prod ------------------------------------------------------------------------
def _factors(rng, shape, dtype):
    """Factors whose long products stay finite and non-zero: small non-zero ints, floats
    e^N(0, 0.05) with random signs, complex numbers of modulus e^N(0, 0.05)."""
    if dtype.kind in ("int", "uint"):
        lo = -3 if dtype.kind == "int" else 1
        v = rng.integers(lo, 4, size=shape)
        return np.where(v == 0, 1, v).astype(dtype._np)
    mag = np.exp(rng.standard_normal(shape) * 0.05)
    if dtype.kind == "float":
        return (mag * rng.choice([-1.0, 1.0], size=shape)).astype(dtype._np)
    return (mag * np.exp(2j * np.pi * rng.random(shape))).astype(dtype._np)


def _default_prod_dtype(dtype):
    if dtype.kind == "int":
        return xp.int64
    if dtype.kind == "uint":
        return xp.uint64
    return dtype


def _check_cumprod(got, a, axis, out, include_initial, what):
    """Ints exactly (cast first, wrapping); floats within (k + 2) u of the long-double
    product of their k factors, relative."""
    assert got.dtype == out, (what, got.dtype, out)
    g = to_numpy(got)
    xc = a.astype(out._np)
    if include_initial:
        oshape = list(a.shape)
        oshape[axis] = 1
        xc = np.concatenate([np.ones(oshape, out._np), xc], axis=axis)
    assert g.shape == xc.shape, (what, g.shape, xc.shape)
    if out.kind in ("int", "uint"):
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(g, np.cumprod(xc, axis=axis, dtype=out._np),
                                          err_msg=str(what))
        return
    wide = np.clongdouble if out.kind == "complex" else np.longdouble
    ref = np.cumprod(xc.astype(wide), axis=axis)
    k = np.cumsum(np.ones(xc.shape), axis=axis)
    u = np.finfo(out._np).eps / 2
    bound = (k + 2) * u * (4 if out.kind == "complex" else 1)
    err = np.abs(g.astype(wide) - ref) / np.abs(ref)
    bad = ~(err <= bound)
    assert not bad.any(), (what, np.argwhere(bad)[:3], g[bad][:3], ref[bad][:3])


@pytest.mark.parametrize("dtype", NUMERIC, ids=ids)
def test_cumulative_prod_every_dtype(v2024, rng, device, dtype):
    out = _default_prod_dtype(dtype)
    for shape, axis in (((1000,), None), ((5000,), 0), ((33, 41), 1), ((33, 41), 0),
                        ((33, 41), -1), ((3, 300, 5), 1), ((1,), 0)):
        a = _factors(rng, shape, dtype)
        for name, va in _views(a):
            ax = 0 if axis is None else axis
            if axis is None and va.ndim > 1:
                continue
            for ii in (False, True):
                got = xp.cumulative_prod(_dev(va, device), axis=axis, include_initial=ii)
                _check_cumprod(got, va, ax % va.ndim, out, ii, (name, shape, axis, ii))


@pytest.mark.parametrize("dtype,out", [(xp.int8, xp.float64), (xp.float32, xp.float64),
                                       (xp.int16, xp.int32), (xp.uint8, xp.int16),
                                       (xp.int32, xp.complex128), (xp.float64, xp.complex128),
                                       (xp.uint32, xp.uint64), (xp.int64, xp.int8)], ids=ids)
def test_cumulative_prod_dtype_argument(v2024, rng, device, dtype, out):
    a = _factors(rng, (41, 7), dtype)
    for ii in (False, True):
        got = xp.cumulative_prod(xp.asarray(a, device=device), axis=0, dtype=out,
                                 include_initial=ii)
        _check_cumprod(got, a, 0, out, ii, (dtype, out, ii))


def test_cumulative_prod_empty_special_and_rejections(v2024, device):
    e = xp.zeros((3, 0), device=device)
    assert xp.cumulative_prod(e, axis=1).shape == (3, 0)
    ones = xp.cumulative_prod(e, axis=1, include_initial=True)
    assert ones.shape == (3, 1) and to_numpy(ones).tolist() == [[1.0]] * 3
    assert xp.cumulative_prod(xp.zeros((0, 4), device=device), axis=0).shape == (0, 4)
    i = xp.cumulative_prod(xp.zeros((0,), dtype=xp.int8, device=device), include_initial=True)
    assert i.dtype == xp.int64 and to_numpy(i).tolist() == [1]
    inf, nan = math.inf, math.nan
    for dt in (xp.float32, xp.float64):
        for vals in ([inf, 0.0, 2.0], [-0.0, 3.0, -1.0], [nan, 1.0, 0.0], [-inf, -2.0, 0.5]):
            a = np.array(vals, dt._np)
            with np.errstate(all="ignore"):
                ref = np.cumprod(a)
            _same_bits(to_numpy(xp.cumulative_prod(xp.asarray(a, device=device))), ref,
                       (dt, vals))
    for dt in (xp.complex64, xp.complex128):  # z[0] comes out as itself: never times 1 + 0j
        a = np.array([complex(inf, 0), 1 + 0j], dt._np)
        got = to_numpy(xp.cumulative_prod(xp.asarray(a, device=device)))
        _same_bits(got[:1], a[:1], dt)
        b = np.array([1 + 0j, complex(inf, 0)], dt._np)
        with np.errstate(all="ignore"):
            _same_bits(to_numpy(xp.cumulative_prod(xp.asarray(b, device=device))),
                       np.array([b[0], b[0] * b[1]], dt._np), dt)
    with pytest.raises(ValueError, match="0-d"):
        xp.cumulative_prod(xp.asarray(2.0, device=device))
    with pytest.raises(ValueError, match="axis is required"):
        xp.cumulative_prod(xp.ones((2, 2), device=device))
    with pytest.raises(TypeError, match="numeric"):
        xp.cumulative_prod(xp.ones(3, dtype=xp.bool, device=device))
    with pytest.raises(TypeError, match="include_initial"):
        xp.cumulative_prod(xp.ones(3, device=device), include_initial=1)
    with pytest.raises(TypeError, match="complex"):  # a real dtype= casts real x only
        xp.cumulative_prod(xp.ones(3, dtype=xp.complex64, device=device), dtype=xp.float64)
    with pytest.raises(IndexError, match="cumulative_prod"):
        xp.cumulative_prod(xp.ones((2, 2), device=device), axis=2)


def test_cumulative_prod_float32_long(v2024, rng, device):
    """16384 float32 factors near 1: within float32 rounding of the true products (cuda works
    in float64; the cpu reference is NumPy's float32 loop, within k u)."""
    a = _factors(rng, (16384,), xp.float32)
    got = xp.cumulative_prod(xp.asarray(a, device=device))
    _check_cumprod(got, a, 0, xp.float32, False, "long")


# ---- diff -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", NUMERIC, ids=ids)
def test_diff_every_dtype(v2024, rng, device, dtype):
    a = _nonzero(rng, (9, 11, 7), dtype)
    for name, va in _views(a):
        x = _dev(va, device)
        for axis in (-1, 0, 1):
            for n in (0, 1, 2, 3):
                got = xp.diff(x, axis=axis, n=n)
                with np.errstate(over="ignore"):
                    ref = np.diff(va, axis=axis, n=n)
                assert got.dtype == dtype and got.device == device
                np.testing.assert_array_equal(to_numpy(got), ref,
                                              err_msg=f"{name} axis={axis} n={n}")
    # prepend / append of other lengths along the axis; n past the joined length
    p = _nonzero(rng, (9, 2, 7), dtype)
    q = _nonzero(rng, (9, 1, 7), dtype)
    x = xp.asarray(a, device=device)
    xp_p, xp_q = xp.asarray(p, device=device), xp.asarray(q, device=device)
    for n in (0, 1, 2, 13, 14, 20):
        got = xp.diff(x, axis=1, n=n, prepend=xp_p, append=xp_q)
        joined = np.concatenate([p, a, q], axis=1)
        with np.errstate(over="ignore"):
            ref = np.diff(joined, axis=1, n=n)
        assert got.shape == (9, max(0, 14 - n), 7), (n, got.shape)
        np.testing.assert_array_equal(to_numpy(got), ref, err_msg=f"n={n}")
    np.testing.assert_array_equal(to_numpy(xp.diff(x, axis=0, prepend=xp.asarray(a[:1], device=device))),
                                  np.diff(a, axis=0, prepend=a[:1]))
    np.testing.assert_array_equal(to_numpy(xp.diff(x, axis=-1, append=xp.asarray(a[..., :3], device=device))),
                                  np.diff(a, axis=-1, append=a[..., :3]))


def test_diff_values_and_edges(v2024, rng, device):
    x = xp.asarray([1, 4, 9, 16, 25], dtype=xp.int16, device=device)
    assert to_numpy(xp.diff(x)).tolist() == [3, 5, 7, 9]
    assert to_numpy(xp.diff(x, n=2)).tolist() == [2, 2, 2]
    assert to_numpy(xp.diff(x, n=5)).shape == (0,)
    assert to_numpy(xp.diff(x, n=9)).shape == (0,)
    u = xp.asarray([5, 2, 250], dtype=xp.uint8, device=device)
    assert to_numpy(xp.diff(u)).tolist() == [253, 248]  # wraps, as subtract does
    f = xp.asarray([1.0, np.inf, np.inf, -0.0, 0.0, np.nan], device=device)
    with np.errstate(invalid="ignore"):
        _same_bits(to_numpy(xp.diff(f)), np.diff(np.array([1.0, np.inf, np.inf, -0.0, 0.0,
                                                           np.nan])), "special")
    assert xp.diff(xp.zeros((0,), device=device)).shape == (0,)
    assert xp.diff(xp.zeros((3, 1), device=device)).shape == (3, 0)
    assert xp.diff(xp.zeros((3, 1), device=device), axis=0).shape == (2, 1)
    big = _nonzero(rng, (70001,), xp.float32)
    np.testing.assert_array_equal(to_numpy(xp.diff(xp.asarray(big, device=device))),
                                  np.diff(big))
    # n = 0: the joined array (the spec's M + N1 + N2 - n; NumPy ignores prepend there)
    p = xp.asarray([7], dtype=xp.int16, device=device)
    assert to_numpy(xp.diff(x, n=0, prepend=p)).tolist() == [7, 1, 4, 9, 16, 25]
    assert to_numpy(xp.diff(x, n=0)).tolist() == [1, 4, 9, 16, 25]


def test_diff_rejections(v2024, device):
    x = xp.ones((3, 4), device=device)
    with pytest.raises(TypeError, match="numeric"):
        xp.diff(xp.ones(3, dtype=xp.bool, device=device))
    with pytest.raises(IndexError, match="diff"):
        xp.diff(xp.asarray(1.0, device=device))
    with pytest.raises(IndexError, match="diff"):
        xp.diff(x, axis=2)
    with pytest.raises(ValueError, match="negative"):
        xp.diff(x, n=-1)
    with pytest.raises(TypeError, match="n must be an integer"):
        xp.diff(x, n=1.0)
    with pytest.raises(TypeError, match="prepend has dtype .*float32"):
        xp.diff(x, prepend=xp.ones((3, 1), dtype=xp.float32, device=device))
    with pytest.raises(ValueError, match="append has shape"):
        xp.diff(x, append=xp.ones((2, 1), device=device))
    with pytest.raises(ValueError, match="append has shape"):
        xp.diff(x, append=xp.ones((3,), device=device))
    with pytest.raises(TypeError, match="asarray"):
        xp.diff(x, prepend=np.ones((3, 1)))


# ---- fuse -----------------------------------------------------------------------------------
def test_fuse_takes_the_new_elementwise_rows_and_diff(v2024, rng, device):
    from xp_cuda.fusion import fuse

    def f(a, b):
        return xp.nextafter(a, b) * xp.reciprocal(b) + xp.diff(a, axis=-1)[..., :1]

    def g(a):
        return xp.reciprocal(a * 2.0 + 1.0), xp.diff(a, n=2)

    for dtype in FLOATS:
        a = xp.asarray(_nonzero(rng, (6, 9), dtype), device=device)
        b = xp.asarray(_nonzero(rng, (6, 9), dtype), device=device)
        np.testing.assert_array_equal(to_numpy(fuse(f)(a, b)), to_numpy(f(a, b)))
        for got, want in zip(fuse(g)(a), g(a)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(to_numpy(got), to_numpy(want))
    c = xp.asarray(_nonzero(rng, (5,), xp.complex64), device=device)
    np.testing.assert_allclose(to_numpy(fuse(lambda z: xp.reciprocal(z) * z)(c)),
                               to_numpy(xp.reciprocal(c) * c), rtol=1e-6)


def test_fuse_refuses_count_nonzero_and_cumulative_prod_by_name(v2024, device):
    from xp_cuda.fusion import fuse
    x = xp.ones((3, 4), device=device)
    with pytest.raises(TypeError, match=r"xp\.count_nonzero is not supported"):
        fuse(lambda a: xp.count_nonzero(a))(x)
    with pytest.raises(TypeError, match=r"xp\.cumulative_prod is not supported"):
        fuse(lambda a: xp.cumulative_prod(a, axis=0))(x)


# ---- NVRTC: every new kernel source compiles (no GPU) ---------------------------------------
needs_nvrtc = pytest.mark.skipif(nvrtc_missing() is not None, reason=str(nvrtc_missing()))


@needs_nvrtc
def test_new_elementwise_rows_compile():
    """Every (dtypes, layout) kernel of nextafter and reciprocal, as the runtime builds them."""
    import re
    from xp_cuda._dtypes import PROMOTION_TABLE
    from xp_cuda._elementwise import ROWS, result_dtype
    from xp_cuda._kernels import elementwise as gen
    from xp_cuda._kernels import nvrtc_compile
    items = []
    for name in ("nextafter", "reciprocal"):
        arity, cat = ROWS[name][:2]
        ok = [d for d in ALL_DTYPES if in_category(d, cat)]
        combos = [(d,) for d in ok] if arity == 1 else \
            [(a, b) for a in ok for b in ok if (a, b) in PROMOTION_TABLE]
        for ds in combos:
            tc, to = result_dtype(name, list(ds))
            items.append((name, tuple(d.name for d in ds), tc.name, to.name))
    ptx = nvrtc_compile(gen.translation_unit(items), name="new_rows.cu", options=gen.OPTIONS)
    entries = set(re.findall(r"\.entry (\w+)\(", ptx))
    want = {gen.kernel_name(n, d, lay) for n, d, _, _ in items for lay in gen.layouts_for(d)}
    # nextafter: 2 same-dtype pairs x every binary and scalar layout, 2 mixed pairs x the
    # binary ones; reciprocal: 4 dtypes x the unary ones
    binary, scalar, unary = (len(gen.BINARY_LAYOUTS), len(gen.SCALAR_LAYOUTS),
                             len(gen.UNARY_LAYOUTS))
    assert want <= entries and len(want) == 2 * (binary + scalar) + 2 * binary + 4 * unary, \
        sorted(want - entries)


def _fake(shape, itemsize, strides=None):
    import types
    contiguous = strides is None
    if strides is None:
        st, acc = [], itemsize
        for n in reversed(shape):
            st.append(acc)
            acc *= max(n, 1)
        strides = tuple(reversed(st))
    return types.SimpleNamespace(itemsize=itemsize, shape=tuple(shape), strides=tuple(strides),
                                 nbytes=0, flags=types.SimpleNamespace(c_contiguous=contiguous))


@needs_nvrtc
def test_count_nonzero_programs_compile():
    """count_nonzero's programs for every dtype: rows, columns, all axes, none (the 0/1 of
    each element), strided, 0-d."""
    from xp_cuda._kernels import fusion as kfusion
    from xp_cuda._kernels import nvrtc_compile
    from xp_cuda._kernels import reduction as kred
    from xp_cuda._kernels.fusion_ir import Op
    progs, seen = [], set()
    for d in ALL_DTYPES:
        isz = d._np.itemsize
        for shape, axl in (((129, 67), ((0,), (1,), (0, 1), ())), ((3, 5, 7), ((0, 2), (1,))),
                           ((), ((),))):
            layouts = [_fake(shape, isz)]
            if len(shape) == 2:
                layouts.append(_fake(shape, isz, (isz, shape[0] * isz)))
            for x in layouts:
                for axes in axl:
                    g, out = kred.count_graph(d.name, shape, axes, False)
                    assert out.dtype.name == "int64"
                    assert out.op is (Op.REDUCE if axes else Op.ASTYPE)
                    p = kfusion.Program(g, [out], [x], 132, name=f"c{len(progs)}")
                    text = p.kernel.replace(f" c{len(progs)}(", " C(")
                    if text not in seen:
                        seen.add(text)
                        progs.append(p)
    assert len(progs) > 40
    for s in range(0, len(progs), 24):
        chunk = progs[s:s + 24]
        ptx = nvrtc_compile(kfusion.translation_unit(chunk), name=f"cnt_{s}.cu",
                            options=kfusion.OPTIONS)
        for p_ in chunk:
            assert f".entry {p_.name}(" in ptx


@needs_nvrtc
def test_fused_programs_with_the_new_rows_compile():
    """nextafter and reciprocal inside fused programs (the op structs of the same OPS rows)."""
    from xp_cuda._kernels import fusion as kfusion
    from xp_cuda._kernels import nvrtc_compile
    from xp_cuda._kernels.fusion_ir import DName, Elementwise, Graph, Input, Node, Op
    progs = []
    for d in ("float32", "float64", "complex64", "complex128"):
        shape = (64, 33)
        a = Node(Op.INPUT, (), DName(d), shape, Input(0))
        b = Node(Op.INPUT, (), DName(d), shape, Input(1))
        r = Node(Op.ELEMENTWISE, (a,), DName(d), shape, Elementwise("reciprocal", d))
        out = r
        if d.startswith("float"):
            out = Node(Op.ELEMENTWISE, (r, b), DName(d), shape, Elementwise("nextafter", d))
        isz = np.dtype(d).itemsize
        progs.append(kfusion.Program(Graph([a, b]), [out], [_fake(shape, isz), _fake(shape, isz)],
                                     132, name=f"f_{d}"))
    ptx = nvrtc_compile(kfusion.translation_unit(progs), name="fused_new.cu",
                        options=kfusion.OPTIONS)
    for p in progs:
        assert f".entry {p.name}(" in ptx
