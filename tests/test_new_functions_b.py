"""The later revisions' take_along_axis (2024.12), isin, broadcast_shapes, linalg.eig,
linalg.eigvals and searchsorted's Python scalar x2 (2025.12): each against NumPy on every
device under the revision that has it, absent (or refused) under the one before; the
take_along_axis gather (copy.gather_along) and the isin search (sort.isin) planned and emulated
without a GPU, compiled with NVRTC, and run on a GPU against NumPy."""
import math
import re

import numpy as np
import pytest

import xp_cuda as xp
from helpers import ALL_DTYPES, FLOATING, INTEGER, REAL, random_array, random_numpy, to_numpy
from helpers import nvrtc_missing as _nvrtc_reason
from xp_cuda import _revisions
from xp_cuda._devices import cuda_device_count
from xp_cuda._dtypes import promote
from xp_cuda._kernels import copy as C
from xp_cuda._kernels import sort as S

NAN = math.nan
ISIN_DTYPES = REAL  # integers and real floating (see _set._ISIN_CATEGORY)


def _same(out, expected, dtype, device, what=""):
    assert out.dtype is dtype, (what, out.dtype, dtype)
    assert out.device == device, what
    got = to_numpy(out)
    assert got.shape == np.shape(expected), (what, got.shape, np.shape(expected))
    np.testing.assert_array_equal(got, expected, err_msg=str(what))


# ---- the names: present under their revision, absent (naming it) under the one before --------

NEW_NAMES = [(xp, "take_along_axis", "2024.12", "2023.12"),
             (xp, "isin", "2025.12", "2024.12"),
             (xp, "broadcast_shapes", "2025.12", "2024.12"),
             (xp.linalg, "eig", "2025.12", "2024.12"),
             (xp.linalg, "eigvals", "2025.12", "2024.12")]


@pytest.mark.parametrize("module,name,first,before", NEW_NAMES,
                         ids=[n for _, n, _, _ in NEW_NAMES])
def test_names_follow_the_revision(revision, module, name, first, before):
    xp.set_api_version(before)
    assert name not in module.__all__
    with pytest.raises(AttributeError, match=rf"{name} is in the {re.escape(first)} revision.*"
                       rf"{re.escape(before)} is in force"):
        getattr(module, name)
    for v in _revisions.REVISIONS:
        if v >= first:
            xp.set_api_version(v)
            assert name in module.__all__ and callable(getattr(module, name))
            assert getattr(module, name).__xp_since__ == first


# ---- take_along_axis (2024.12) -----------------------------------------------------------------

def _ref_along(a, i, axis):
    """NumPy's take_along_axis, negative indices wrapped first (as the spec defines them)."""
    n = a.shape[axis]
    i = i.astype(np.int64)
    return np.take_along_axis(a, np.where(i < 0, i + n, i), axis=axis)


def _indices(rng, shape, n, dtype=np.int64):
    """Random indices in [-n, n) of shape (non-negative for unsigned dtypes)."""
    lo = 0 if np.dtype(dtype).kind == "u" else -n
    return rng.integers(lo, n, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_take_along_axis_every_dtype_and_axis(device, rng, v2024, dtype):
    for shape in [(7,), (5, 9), (3, 4, 6)]:
        x, a = random_array(rng, shape, dtype, device)
        for axis in range(-len(shape), len(shape)):
            ax = axis % len(shape)
            ishape = shape[:ax] + (2 * shape[ax] + 1,) + shape[ax + 1:]
            i = _indices(rng, ishape, shape[ax])
            got = xp.take_along_axis(x, xp.asarray(i, device=device), axis=axis)
            _same(got, _ref_along(a, i, ax), dtype, device, (shape, axis))
    x, a = random_array(rng, (4, 6), dtype, device)
    i = _indices(rng, (4, 3), 6)
    _same(xp.take_along_axis(x, xp.asarray(i, device=device)), _ref_along(a, i, 1), dtype,
          device, "default axis -1")


@pytest.mark.parametrize("idtype", INTEGER, ids=str)
def test_take_along_axis_every_index_dtype(device, rng, v2024, idtype):
    x, a = random_array(rng, (6, 100), xp.float32, device)
    i = _indices(rng, (6, 37), 100, idtype._np)
    _same(xp.take_along_axis(x, xp.asarray(i, device=device), axis=1), _ref_along(a, i, 1),
          xp.float32, device, idtype)
    i0 = _indices(rng, (5, 100), 6, idtype._np)
    _same(xp.take_along_axis(x, xp.asarray(i0, device=device), axis=0), _ref_along(a, i0, 0),
          xp.float32, device, idtype)


BROADCASTS = [((1, 5), (3, 2), 1), ((4, 5), (1, 3), 1), ((4, 1, 6), (1, 3, 2), 2),
              ((4, 1, 6), (2, 5, 6), 0), ((3, 1), (3, 4), 0), ((1, 1, 7), (2, 3, 7), 2),
              ((2, 1, 3), (1, 4, 1), 1)]


@pytest.mark.parametrize("xshape,ishape,axis", BROADCASTS)
def test_take_along_axis_broadcasts_x_and_indices(device, rng, v2024, xshape, ishape, axis):
    for dtype in (xp.int8, xp.float64, xp.complex128):
        x, a = random_array(rng, xshape, dtype, device)
        i = _indices(rng, ishape, xshape[axis])
        got = xp.take_along_axis(x, xp.asarray(i, device=device), axis=axis)
        want = _ref_along(a, i, axis)
        assert got.shape == want.shape
        _same(got, want, dtype, device, (xshape, ishape, axis))


def test_take_along_axis_strided_views(device, rng, v2024):
    """x and the indices as views with steps and negative strides (on the device too)."""
    for dtype in (xp.uint8, xp.int16, xp.float32, xp.float64, xp.complex128):
        x, a = random_array(rng, (9, 13, 5), dtype, device)
        for view in (lambda t: t[::-1, ::2, :], lambda t: t[::2, 1:, ::-1],
                     lambda t: t[:, ::-3, 1:4]):
            xv, av = view(x), view(a)
            for axis in range(3):
                t = av.shape[:axis] + (av.shape[axis] + 2,) + av.shape[axis + 1:]
                # the indices: a (-2, 1, 2)-step view of a bigger array, built alike on both
                ibig = _indices(rng, (2 * t[0], t[1] + 1, 2 * t[2]), av.shape[axis])
                ih = ibig[::-2, 1:, ::2]
                iv = xp.asarray(ibig, device=device)[::-2, 1:, ::2]
                got = xp.take_along_axis(xv, iv, axis=axis)
                _same(got, _ref_along(av, ih, axis), dtype, device, ("view", dtype, axis))


def test_take_along_axis_broadcast_stride_zero_inputs(device, rng, v2024):
    x, a = random_array(rng, (1, 8), xp.float32, device)
    xb = xp.broadcast_to(x, (5, 8))
    i = _indices(rng, (1, 3), 8)
    ib = xp.broadcast_to(xp.asarray(i, device=device), (5, 3))
    _same(xp.take_along_axis(xb, ib, axis=1),
          _ref_along(np.broadcast_to(a, (5, 8)), np.broadcast_to(i, (5, 3)), 1), xp.float32,
          device, "stride 0")


def test_take_along_axis_large_crosses_blocks(device, rng, v2024):
    for dtype in (xp.int8, xp.float32, xp.float64, xp.complex128):
        x, a = random_array(rng, (301, 257), dtype, device)
        for axis, ishape in ((0, (1001, 257)), (1, (301, 999)), (1, (301, 1))):
            i = _indices(rng, ishape, a.shape[axis])
            got = xp.take_along_axis(x, xp.asarray(i, device=device), axis=axis)
            _same(got, _ref_along(a, i, axis), dtype, device, (dtype, axis, ishape))


def test_take_along_axis_special_values_exact(device, v2024):
    a = np.array([-0.0, NAN, np.inf, -np.inf, 1.5], dtype=np.float64)
    x = xp.asarray(a, device=device)
    i = np.array([0, 1, 2, 3, 4, -5, -4, 0])
    got = to_numpy(xp.take_along_axis(x, xp.asarray(i, device=device)))
    want = _ref_along(a, i, 0)
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))  # -0.0 and NaN bits kept


def test_take_along_axis_empty_and_size_one(device, rng, v2024):
    x, a = random_array(rng, (4, 6), xp.float32, device)
    e = xp.asarray(np.zeros((4, 0), np.int64), device=device)
    _same(xp.take_along_axis(x, e, axis=1), np.zeros((4, 0), np.float32), xp.float32, device)
    x0, a0 = random_array(rng, (0, 6), xp.int32, device)
    i = _indices(rng, (1, 3), 6)
    _same(xp.take_along_axis(x0, xp.asarray(i, device=device), axis=1),
          np.zeros((0, 3), np.int32), xp.int32, device)
    xe = xp.asarray(np.zeros((3, 0), np.float64), device=device)
    _same(xp.take_along_axis(xe, xp.asarray(np.zeros((3, 0), np.int64), device=device)),
          np.zeros((3, 0)), xp.float64, device)
    x1, a1 = random_array(rng, (1,), xp.int64, device)
    i1 = np.array([0, -1, 0], np.int64)
    _same(xp.take_along_axis(x1, xp.asarray(i1, device=device)), _ref_along(a1, i1, 0),
          xp.int64, device)


@pytest.mark.parametrize("bad,n", [(6, 6), (-7, 6), (100, 6)])
def test_take_along_axis_out_of_bounds_names_the_index(device, rng, v2024, bad, n):
    x, _ = random_array(rng, (3, n), xp.float64, device)
    i = _indices(rng, (3, 5), n)
    i[1, 2] = bad
    with pytest.raises(IndexError, match=rf"index {bad} is out of bounds for axis 1 of size "
                       rf"{n}; indices must lie in \[-{n}, {n}\)"):
        xp.take_along_axis(x, xp.asarray(i, device=device), axis=1)


def test_take_along_axis_out_of_bounds_special_cases(device, rng, v2024):
    x, _ = random_array(rng, (3, 4), xp.float32, device)
    big = np.full((3, 2), 2**63 + 5, dtype=np.uint64)
    with pytest.raises(IndexError, match=str(2**63 + 5)):
        xp.take_along_axis(x, xp.asarray(big, device=device), axis=1)
    xe = xp.asarray(np.zeros((3, 0), np.float32), device=device)
    with pytest.raises(IndexError, match="of size 0"):
        xp.take_along_axis(xe, xp.asarray(np.zeros((3, 2), np.int64), device=device))
    # an empty result still has its indices checked
    x0 = xp.asarray(np.zeros((0, 4), np.float32), device=device)
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        xp.take_along_axis(x0, xp.asarray(np.array([[1, 9]]), device=device), axis=1)


def test_take_along_axis_errors(device, rng, v2024):
    x, _ = random_array(rng, (3, 4), xp.float32, device)
    i = xp.asarray(np.zeros((3, 2), np.int64), device=device)
    with pytest.raises(TypeError, match="indices has dtype xp_cuda.float32.*integer"):
        xp.take_along_axis(x, xp.astype(i, xp.float32))
    with pytest.raises(ValueError, match="indices has 1 dimension.*x has 2"):
        xp.take_along_axis(x, xp.asarray(np.zeros(2, np.int64), device=device))
    with pytest.raises(ValueError, match=r"cannot be broadcast together in dimension 0 "
                       r"\(sizes 3 and 2\)"):
        xp.take_along_axis(x, xp.asarray(np.zeros((2, 2), np.int64), device=device))
    with pytest.raises(IndexError, match="axis=2 is out of range"):
        xp.take_along_axis(x, i, axis=2)
    with pytest.raises(TypeError, match="axis must be an integer"):
        xp.take_along_axis(x, i, axis=1.0)
    with pytest.raises(ValueError, match="0-d"):
        xp.take_along_axis(xp.asarray(1.0, device=device),
                           xp.asarray(0, device=device), axis=0)
    with pytest.raises(TypeError, match="indices: a numpy.ndarray is not an xp_cuda array"):
        xp.take_along_axis(x, np.zeros((3, 2), np.int64))


# ---- isin (2025.12) ------------------------------------------------------------------------

def _ref_isin(a1, a2, invert=False):
    """Membership by the standard's equality, written out (NaN equals nothing, -0.0 == 0.0)."""
    a1, a2 = np.asarray(a1), np.asarray(a2).reshape(-1)
    hit = (a1[..., None] == a2).any(axis=-1) if a2.size else np.zeros(a1.shape, bool)
    return ~hit if invert else hit


def _overlapping(rng, shape1, shape2, dtype, device):
    """x1 and x2 of dtype with about half of x1's values also in x2."""
    x1, a1 = random_array(rng, shape1, dtype, device)
    a2 = random_numpy(rng, shape2, dtype).reshape(-1)
    if a1.size and a2.size:
        k = a2.size // 2
        a2[:k] = a1.reshape(-1)[rng.integers(0, a1.size, k)]
    a2 = a2.reshape(shape2)
    return x1, a1, xp.asarray(a2, device=device), a2


@pytest.mark.parametrize("dtype", ISIN_DTYPES, ids=str)
def test_isin_every_dtype(device, rng, v2025, dtype):
    for s1, s2 in [((37,), (11,)), ((4, 9), (3, 5)), ((), (6,)), ((5,), ()), ((3, 0), (4,)),
                   ((7,), (0,)), ((1,), (1,))]:
        x1, a1, x2, a2 = _overlapping(rng, s1, s2, dtype, device)
        for invert in (False, True):
            got = xp.isin(x1, x2, invert=invert)
            _same(got, _ref_isin(a1, a2, invert), xp.bool, device, (s1, s2, invert))
        _same(xp.isin(x1, x2), _ref_isin(a1, a2), xp.bool, device, "default invert")


PROMOTABLE = [(xp.int8, xp.int16), (xp.uint8, xp.int16), (xp.int32, xp.int64),
              (xp.uint16, xp.uint64), (xp.uint32, xp.int64), (xp.float32, xp.float64)]


@pytest.mark.parametrize("d1,d2", PROMOTABLE + [(b, a) for a, b in PROMOTABLE], ids=str)
def test_isin_mixed_dtypes_compare_in_the_promoted_one(device, rng, v2025, d1, d2):
    dt = promote(d1, d2)
    x1, a1 = random_array(rng, (50,), d1, device)
    a2 = np.concatenate([a1[::3].astype(d2._np), random_numpy(rng, (20,), d2)])
    x2 = xp.asarray(a2, device=device)
    want = _ref_isin(a1.astype(dt._np), a2.astype(dt._np))
    _same(xp.isin(x1, x2), want, xp.bool, device, (d1, d2))
    _same(xp.isin(x1, x2, invert=True), ~want, xp.bool, device, (d1, d2))


def test_isin_nan_never_matches_and_zeros_are_equal(device, v2025):
    for t in (np.float32, np.float64):
        a1 = np.array([NAN, 0.0, -0.0, 1.0, -np.inf, np.inf, 2.0, NAN], t)
        a2 = np.array([NAN, -0.0, np.inf, 2.0, NAN], t)
        x1, x2 = xp.asarray(a1, device=device), xp.asarray(a2, device=device)
        want = np.array([False, True, True, False, False, True, True, False])
        _same(xp.isin(x1, x2), want, xp.bool, device, t)
        _same(xp.isin(x1, x2, invert=True), ~want, xp.bool, device, t)
        _same(xp.isin(x2, x2), ~np.isnan(a2), xp.bool, device, "NaN not in itself")


def test_isin_integer_extremes(device, v2025):
    for t in (np.int64, np.uint64, np.int8, np.uint8, np.int32):
        info = np.iinfo(t)
        a1 = np.array([info.min, info.max, info.min + 1, info.max - 1, 0, 1], t)
        a2 = np.array([info.max, info.min, 1], t)
        _same(xp.isin(xp.asarray(a1, device=device), xp.asarray(a2, device=device)),
              _ref_isin(a1, a2), xp.bool, device, t)


def test_isin_strided_and_large(device, rng, v2025):
    # x2 of 40000 float64: beyond one block sort (L_MAX) and the shared-memory stage; x1 of
    # 100003 crosses many blocks
    for dtype, n2 in ((xp.float64, 40000), (xp.int32, 3000), (xp.int16, 100), (xp.uint64, 17)):
        x1, a1, x2, a2 = _overlapping(rng, (100003,), (n2,), dtype, device)
        _same(xp.isin(x1, x2), _ref_isin(a1, a2), xp.bool, device, (dtype, n2))
        _same(xp.isin(x1[::-3], x2[1::2]), _ref_isin(a1[::-3], a2[1::2]), xp.bool, device,
              "strided")
    x1, a1, x2, a2 = _overlapping(rng, (6, 8), (5, 7), xp.float32, device)
    _same(xp.isin(x1[::2, ::-1], x2[::-1, 1::3]), _ref_isin(a1[::2, ::-1], a2[::-1, 1::3]),
          xp.bool, device, "2-D views")
    xb = xp.broadcast_to(x1[:1, :], (4, 8))
    _same(xp.isin(xb, x2), _ref_isin(np.broadcast_to(a1[:1], (4, 8)), a2), xp.bool, device,
          "broadcast x1")


def test_isin_python_int_operands(device, rng, v2025):
    x, a = random_array(rng, (20,), xp.int16, device)
    v = int(a[3])
    _same(xp.isin(v, x), np.asarray(True), xp.bool, device, "int in array")
    _same(xp.isin(12345, x, invert=True), np.asarray(12345 not in a.tolist()), xp.bool,
          device, "absent int")
    _same(xp.isin(x, v), a == v, xp.bool, device, "array in int")
    f = xp.asarray(np.array([1.0, 2.5, NAN], np.float32), device=device)
    _same(xp.isin(f, 1), np.array([True, False, False]), xp.bool, device, "int vs float")
    _same(xp.isin(2, f), np.asarray(False), xp.bool, device, "int in float array")


def test_isin_errors(device, rng, v2025):
    x, _ = random_array(rng, (5,), xp.int32, device)
    f, _ = random_array(rng, (5,), xp.float32, device)
    with pytest.raises(TypeError, match="cannot be promoted"):
        xp.isin(x, f)
    for d in (xp.bool, xp.complex64):
        y, _ = random_array(rng, (5,), d, device)
        with pytest.raises(TypeError, match=f"has dtype {d}.*real-valued"):
            xp.isin(y, y)
        with pytest.raises(TypeError, match=f"x2 has dtype {d}"):
            xp.isin(x if d is xp.bool else f, y)
    with pytest.raises(TypeError, match="both Python scalars"):
        xp.isin(1, 2)
    with pytest.raises(TypeError, match="Python int.*got float"):
        xp.isin(f, 1.5)
    with pytest.raises(TypeError, match="Python int.*got bool"):
        xp.isin(True, x)
    with pytest.raises(OverflowError, match="out of range for xp_cuda.int8"):
        xp.isin(xp.asarray(np.array([1, 2], np.int8), device=device), 1000)
    with pytest.raises(TypeError, match="invert must be True or False"):
        xp.isin(x, x, invert=1)
    with pytest.raises(TypeError, match="x2: a numpy.ndarray is not an xp_cuda array"):
        xp.isin(x, np.arange(3))
    with pytest.raises(TypeError, match="x1: a numpy.ndarray is not an xp_cuda array"):
        xp.isin(np.arange(3), x)


# ---- broadcast_shapes (2025.12) ------------------------------------------------------------

@pytest.mark.parametrize("shapes", [(), ((),), ((3,),), ((2, 1), (3,)), ((1, 4), (5, 1)),
                                    ((0,), (1,)), ((2, 0, 3), (1, 1), (2, 1, 3)),
                                    ((7, 1, 5), (1, 6, 1), (6, 5), ()), ((1,), (1, 1, 1))])
def test_broadcast_shapes_matches_numpy(v2025, shapes):
    got = xp.broadcast_shapes(*shapes)
    assert got == np.broadcast_shapes(*shapes) and type(got) is tuple
    assert all(type(n) is int for n in got)


def test_broadcast_shapes_errors(v2025):
    from xp_cuda._validation import broadcast_shapes as rule
    with pytest.raises(ValueError) as e1:
        xp.broadcast_shapes((2, 3), (4,))
    with pytest.raises(ValueError) as e2:
        rule([(2, 3), (4,)], "broadcast_shapes")
    assert str(e1.value) == str(e2.value) == (
        "broadcast_shapes: shapes (2, 3) and (4,) cannot be broadcast together (dimension -1 "
        "has sizes 3 and 4)")
    with pytest.raises(ValueError, match="dimension -2 has sizes 3 and 0"):
        xp.broadcast_shapes((3, 1), (0, 1))
    with pytest.raises(TypeError, match="each shape must be a tuple"):
        xp.broadcast_shapes([2, 3])
    with pytest.raises(TypeError, match="holds None"):
        xp.broadcast_shapes((2, None))
    with pytest.raises(TypeError, match="holds True"):
        xp.broadcast_shapes((True,))
    with pytest.raises(ValueError, match="negative size"):
        xp.broadcast_shapes((2, -1))


def test_broadcast_arrays_and_to_keep_their_rule(device, v2025):
    """broadcast_arrays and broadcast_to call the internal rule, not the public function."""
    a, b = xp.broadcast_arrays(xp.ones((2, 1), device=device), xp.ones(3, device=device))
    assert a.shape == b.shape == (2, 3)
    with pytest.raises(ValueError, match="broadcast_arrays: shapes"):
        xp.broadcast_arrays(xp.ones((2,), device=device), xp.ones(3, device=device))
    assert xp.broadcast_to(xp.ones(3, device=device), (2, 3)).shape == (2, 3)


# ---- linalg.eig and linalg.eigvals (2025.12) -----------------------------------------------

_TOL = {"float32": 2e-3, "complex64": 2e-3, "float64": 1e-9, "complex128": 1e-9}


def _random_matrices(rng, shape, dtype):
    a = rng.standard_normal(shape)
    if dtype.kind == "complex":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype._np)


def _sorted_eigs(w):
    w = np.asarray(w, np.complex128)
    return np.sort_complex(np.round(w, 6)) if w.ndim == 1 else np.array(
        [_sorted_eigs(r) for r in w.reshape(-1, w.shape[-1])]).reshape(w.shape)


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_eig_and_eigvals_match_numpy(device, rng, v2025, dtype):
    cdt = xp.complex64 if dtype in (xp.float32, xp.complex64) else xp.complex128
    tol = _TOL[dtype.name]
    for shape in [(1, 1), (3, 3), (6, 6), (2, 4, 4), (2, 3, 5, 5)]:
        a = _random_matrices(rng, shape, dtype)
        x = xp.asarray(a, device=device)
        res = xp.linalg.eig(x)
        assert type(res).__name__ == "EigResult" and res._fields == ("eigenvalues",
                                                                      "eigenvectors")
        w, v = res
        assert w.dtype is cdt and v.dtype is cdt and w.device == device == v.device
        assert w.shape == shape[:-1] and v.shape == shape
        wn, vn = to_numpy(w).astype(np.complex128), to_numpy(v).astype(np.complex128)
        a64 = a.astype(np.complex128)
        scale = max(1.0, float(np.abs(a64).max()))
        # each column is an eigenvector of unit norm: a v = v diag(w)
        np.testing.assert_allclose(a64 @ vn, vn * wn[..., None, :], atol=tol * scale * 10,
                                   err_msg=f"a v != v w for {shape} {dtype}")
        np.testing.assert_allclose(np.linalg.norm(vn, axis=-2), 1.0, atol=tol * 10)
        ref = np.linalg.eigvals(a.astype(np.complex128 if dtype.kind == "complex"
                                         else np.float64))
        np.testing.assert_allclose(np.sort_complex(wn.reshape(-1, shape[-1])),
                                   np.sort_complex(ref.reshape(-1, shape[-1]).astype(
                                       np.complex128)), atol=tol * scale * 10,
                                   err_msg=f"eigenvalues {shape} {dtype}")
        ev = xp.linalg.eigvals(x)
        assert ev.dtype is cdt and ev.shape == shape[:-1] and ev.device == device
        np.testing.assert_allclose(np.sort_complex(to_numpy(ev).reshape(-1, shape[-1])),
                                   np.sort_complex(wn.reshape(-1, shape[-1])),
                                   atol=tol * scale * 10)


def test_eig_real_matrix_with_complex_eigenvalues(device, v2025):
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])  # eigenvalues +-i
    w = to_numpy(xp.linalg.eigvals(xp.asarray(rot, device=device)))
    np.testing.assert_allclose(np.sort_complex(w), [-1j, 1j], atol=1e-12)
    w, v = xp.linalg.eig(xp.asarray(np.diag([3.0, -2.0, 0.5]), device=device))
    np.testing.assert_allclose(np.sort(to_numpy(w).real), [-2.0, 0.5, 3.0])
    np.testing.assert_allclose(to_numpy(w).imag, 0.0)


def test_eig_empty(device, v2025):
    for shape in [(0, 3, 3), (2, 0, 0), (0, 0)]:
        x = xp.asarray(np.zeros(shape, np.float32), device=device)
        w, v = xp.linalg.eig(x)
        assert w.shape == shape[:-1] and v.shape == shape
        assert w.dtype is xp.complex64 is v.dtype
        ev = xp.linalg.eigvals(xp.astype(x, xp.float64))
        assert ev.shape == shape[:-1] and ev.dtype is xp.complex128


def test_eig_errors(device, v2025):
    for f in (xp.linalg.eig, xp.linalg.eigvals):
        name = f.__name__
        with pytest.raises(ValueError, match=f"{name}: x has shape \\(2, 3\\); its last two "
                           "dimensions must be equal"):
            f(xp.ones((2, 3), device=device))
        with pytest.raises(ValueError, match="at least 2 dimensions"):
            f(xp.ones((3,), device=device))
        with pytest.raises(TypeError, match=f"{name}: x has dtype xp_cuda.int64.*"
                           "floating-point"):
            f(xp.ones((2, 2), dtype=xp.int64, device=device))
        with pytest.raises(ValueError, match=f"{name}: the eigenvalue computation failed"):
            f(xp.asarray(np.array([[1.0, NAN], [0.0, 1.0]]), device=device))


# ---- searchsorted with a Python scalar x2 (2025.12) ----------------------------------------

@pytest.mark.parametrize("dtype", REAL, ids=str)
def test_searchsorted_python_scalar_x2(device, rng, v2025, dtype):
    _, a = random_array(rng, (41,), dtype, device)
    a = np.sort(a)
    x1 = xp.asarray(a, device=device)
    values = [int(a[0]), int(a[20]), int(a[-1])]
    if dtype.kind == "float":
        values += [float(a[7]), float(a[7]) + 0.25, -1e300, 1e300, NAN, -0.0]
    else:
        values += [int(np.iinfo(dtype._np).max), int(np.iinfo(dtype._np).min)]
    for v in values:
        for side in ("left", "right"):
            got = xp.searchsorted(x1, v, side=side)
            with np.errstate(over="ignore"):  # 1e300 is inf in float32
                want = np.searchsorted(a, np.asarray(v, dtype=dtype._np), side=side)
            _same(got, np.asarray(want, np.int64), xp.int64, device, (v, side))
    perm = rng.permutation(41)
    shuffled = xp.asarray(a[perm], device=device)
    sorter = xp.asarray(np.argsort(a[perm], kind="stable"), device=device)
    v = values[1]
    _same(xp.searchsorted(shuffled, v, sorter=sorter),
          np.asarray(np.searchsorted(a, np.asarray(v, dtype._np)), np.int64), xp.int64, device,
          "sorter")


def test_searchsorted_python_scalar_rules(device, v2025):
    i8 = xp.asarray(np.array([1, 5, 9], np.int8), device=device)
    with pytest.raises(TypeError, match="a Python float cannot be combined with a "
                       "xp_cuda.int8 array"):
        xp.searchsorted(i8, 2.5)
    with pytest.raises(OverflowError, match="out of range"):
        xp.searchsorted(i8, 1000)
    with pytest.raises(TypeError, match="x2 must be an array, a Python int or a Python float"):
        xp.searchsorted(i8, True)
    with pytest.raises(TypeError, match="x2 must be an array, a Python int or a Python float"):
        xp.searchsorted(i8, 1j)
    c = xp.asarray(np.array([1, 2], np.complex64), device=device)
    with pytest.raises(TypeError, match="x1 has dtype xp_cuda.complex64"):
        xp.searchsorted(c, 1)
    with pytest.raises(TypeError, match="x2: a numpy.ndarray is not an xp_cuda array"):
        xp.searchsorted(i8, np.arange(2))


def test_searchsorted_python_scalar_needs_2025_12(device, revision):
    x1 = xp.asarray(np.array([1.0, 2.0]), device=device)
    for v in ("2023.12", "2024.12"):
        xp.set_api_version(v)
        with pytest.raises(TypeError, match=rf"x2 is a Python int, which the Array API allows "
                           rf"from 2025\.12 on, and {v} is in force"):
            xp.searchsorted(x1, 1)
        with pytest.raises(TypeError, match="x2 is a Python float"):
            xp.searchsorted(x1, 1.5)
        with pytest.raises(TypeError, match="x2: expected an xp_cuda array, got bool"):
            xp.searchsorted(x1, True)
        # arrays keep working
        assert int(xp.searchsorted(x1, xp.asarray(1.5, device=device))) == 1


# ---- the kernels without a GPU: plans, an emulation of the launch, NVRTC --------------------

def _aplan(x, i, axis):
    return C.plan_along(x.shape, x.strides, i.shape, i.strides, axis, x.itemsize)


def test_plan_along_merges_drops_and_broadcasts():
    x = np.empty((4, 6), np.float32)
    p = _aplan(x, np.empty((4, 3), np.int64), 1)
    assert (p.path, p.shape, p.x_strides, p.idx_strides, p.gstride) == (
        "along", (4, 3), (24, 0), (24, 8), 4)
    # axis 0 with contiguous rows: the inner dims merge in x and the indices
    x3 = np.empty((5, 4, 6), np.float64)
    p = _aplan(x3, np.empty((7, 4, 6), np.int64), 0)
    assert (p.shape, p.x_strides, p.idx_strides, p.gstride) == ((7, 24), (0, 8), (192, 8), 192)
    # broadcast x (size 1) and broadcast indices: stride 0 there
    p = _aplan(np.empty((1, 5), np.int8), np.empty((2, 3), np.int64).T, 1)
    assert (p.shape, p.x_strides, p.idx_strides) == ((3, 2), (0, 0), (8, 24))
    p = _aplan(np.empty((4, 5), np.int8), np.empty((1, 2), np.int64), 1)
    assert (p.shape, p.x_strides, p.idx_strides) == ((4, 2), (5, 0), (0, 8))
    # a gathered dim of length 1 is dropped (its offset comes from the index alone)
    p = _aplan(np.empty((3, 7), np.int16), np.empty((3, 1), np.int64), 1)
    assert (p.shape, p.x_strides, p.idx_strides, p.gstride) == ((3,), (14,), (8,), 2)
    # the gathered dim merges with a neighbour where x is broadcast
    p = _aplan(np.empty((1, 5), np.float32), np.empty((3, 4), np.int64), 1)
    assert (p.shape, p.x_strides, p.idx_strides) == ((12,), (0,), (8,))
    # one element; empty results
    assert _aplan(np.empty((1,), np.float32), np.empty((1,), np.int64), 0).shape == (1,)
    assert _aplan(np.empty((3, 4)), np.empty((3, 0), np.int64), 1).path == "empty"
    assert _aplan(np.empty((0, 4)), np.empty((1, 2), np.int64), 1).path == "empty"
    assert C.along_shape((0, 4), (1, 2), 1) == (0, 2)
    assert C.along_shape((1, 4), (3, 2), 1) == (3, 2)


class _Fake:
    """What gather_along reads of a CuPy array, at a fake device address."""

    def __init__(self, like, ptr):
        self.shape, self.strides, self.itemsize, self.dtype = (like.shape, like.strides,
                                                               like.itemsize, like.dtype)
        self.ndim, self.size, self.flags = like.ndim, like.size, like.flags
        self.data = type("M", (), {"ptr": ptr})()


def _emulate(name, a, mem):
    """What xp_gather_along_<S> computes from its argument cells ``a`` (copy.cu's along_loop
    and along_row, element by element): mem maps a fake base address to (bytes, its data)."""
    S = int(name.rsplit("_", 1)[1])
    dst, src, idx, n, nd, gstride, glen, err = (int(v) for v in a[:8])
    F, M = 8, C.MAXND
    shape = [int(v) for v in a[F:F + nd]]
    xstr = [int(v) for v in a[F + M:F + M + nd]]
    istr = [int(v) for v in a[F + 2 * M:F + 2 * M + nd]]

    def read(addr, size):
        for base, buf in mem.items():
            if base <= addr < base + len(buf):
                return buf[addr - base:addr - base + size]
        raise AssertionError(f"read outside every buffer at {addr:#x}")

    out = bytearray()
    inner = shape[-1]
    bad = None
    for e in range(n):
        r, c = divmod(e, inner)
        xoff = ioff = 0
        for d in range(nd - 2, -1, -1):
            r, k = divmod(r, shape[d])
            xoff += k * xstr[d]
            ioff += k * istr[d]
        i = int(np.frombuffer(read(idx + ioff + c * istr[-1], 8), np.int64)[0])
        k = i + glen if i < 0 else i
        if not 0 <= k < glen:
            bad, k = i, 0
        out += read(src + xoff + c * xstr[-1] + k * gstride, S)
    return bytes(out), bad


@pytest.mark.parametrize("case", range(8))
def test_gather_along_launch_computes_take_along_axis(monkeypatch, rng, case):
    """gather_along's argument cells, run through an emulation of the kernel, give NumPy's
    take_along_axis (wrapped), for views, broadcasts and every element size."""
    dtypes = [np.int8, np.int16, np.float32, np.float64, np.complex128]
    xshape, ishape, axis = [((9, 13, 5), (9, 4, 5), 1), ((1, 7), (3, 5), 1), ((6, 4), (11, 4), 0),
                            ((4, 1, 6), (1, 3, 2), 2), ((2, 3, 4, 5), (2, 3, 7, 5), 2),
                            ((5,), (12,), 0), ((3, 8), (3, 1), 1), ((2, 5, 3), (2, 5, 3), 0)][
        case]
    launched = []
    monkeypatch.setattr(C, "_run", lambda cp, key, ptrs, run: run(*ptrs))
    monkeypatch.setattr(C, "_launch", lambda cp, name, b, t, a: launched.append((name,
                                                                                a.copy())))
    monkeypatch.setattr(C, "device_info", lambda cp: type("D", (), {"sm_count": 132})())
    for dt in dtypes:
        base = rng.integers(0, 256, 4 * math.prod(xshape) * np.dtype(dt).itemsize,
                            dtype=np.uint8).view(dt)
        x = base[: 2 * math.prod(xshape)][::2].reshape(xshape)  # a strided view of base
        if case % 2:
            x = x[..., ::-1]  # negative inner stride
        n = xshape[axis]
        ibig = _indices(rng, (2 * math.prod(ishape),), n)
        i = ibig[::-2].reshape(ishape) if case % 3 == 0 else ibig[: math.prod(ishape)].reshape(
            ishape)
        want = _ref_along(x, i, axis)
        out = np.empty(want.shape, dt)
        XB, IB, OB = 0x10000000, 0x40000000, 0x70000000
        xb_off = x.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        ib_off = i.__array_interface__["data"][0] - ibig.__array_interface__["data"][0]
        launched.clear()
        C.gather_along(None, _Fake(x, XB + xb_off), _Fake(i, IB + ib_off), axis,
                       _Fake(out, OB))
        assert len(launched) == 1
        name, a = launched[0]
        assert name in C.along_kernel_names() and name.endswith(f"_{np.dtype(dt).itemsize}")
        assert a[0] == OB and a[7] == 0  # the output's address; unchecked (err 0)
        got, bad = _emulate(name, a, {XB: base.tobytes(), IB: ibig.tobytes()})
        assert bad is None
        assert got == np.ascontiguousarray(want).tobytes(), (case, dt)


def test_gather_along_emulation_reports_the_bad_index(monkeypatch, rng):
    launched = []
    monkeypatch.setattr(C, "_run", lambda cp, key, ptrs, run: run(*ptrs))
    monkeypatch.setattr(C, "_launch", lambda cp, name, b, t, a: launched.append((name,
                                                                                a.copy())))
    monkeypatch.setattr(C, "device_info", lambda cp: type("D", (), {"sm_count": 132})())
    x = rng.standard_normal((3, 4))
    i = np.array([[0, 1], [4, -1], [-4, 3]])
    C.gather_along(None, _Fake(x, 0x1000), _Fake(i, 0x100000), 1,
                   _Fake(np.empty((3, 2)), 0x200000), err=0x300000)
    name, a = launched[0]
    assert a[7] == 0x300000  # the error words' address rides in the cells
    _, bad = _emulate(name, a, {0x1000: x.tobytes(), 0x100000: i.tobytes()})
    assert bad == 4


def test_isin_search_model_matches_the_reference(rng):
    """sort.cu's isin on keys (sort.to_key, NumPy's model): the left insertion point of the
    query's key, one key comparison there, NaN excluded; against the written-out equality."""
    for t in (np.float32, np.float64, np.int8, np.uint16, np.int64, np.uint64):
        if np.dtype(t).kind == "f":
            a2 = np.concatenate([rng.standard_normal(50), [NAN, -0.0, 0.0, np.inf]]).astype(t)
            a1 = np.concatenate([a2[::3], rng.standard_normal(20), [NAN, -0.0, -np.inf]]
                                ).astype(t)
        else:
            info = np.iinfo(t)
            a2 = rng.integers(info.min, info.max, 60, dtype=t, endpoint=True)
            a1 = np.concatenate([a2[::4], rng.integers(info.min, info.max, 20, dtype=t)])
        keys = np.sort(S.to_key(a2))
        q = S.to_key(a1)
        at = np.searchsorted(keys, q, side="left")
        nan_key = np.iinfo(keys.dtype).max if np.dtype(t).kind == "f" else None
        found = (at < keys.size) & (keys[np.minimum(at, keys.size - 1)] == q)
        if nan_key is not None:
            found &= q != nan_key
        np.testing.assert_array_equal(found, _ref_isin(a1, a2), err_msg=str(t))


def test_new_kernel_names_have_units():
    cu = C.units()
    for name in C.along_kernel_names():
        assert f"XC_GATHER_ALONG({name.rsplit('_', 1)[1]}," in cu[name]
    su = S.units()
    for w in S.KEY_WIDTHS:
        assert f"xp_isin_{w}" in S.kernel_names()
        assert f"ISIN({w}," in su[f"xp_isin_{w}"]


@pytest.mark.skipif(_nvrtc_reason() is not None, reason=str(_nvrtc_reason()))
def test_every_new_kernel_compiles():
    """One NVRTC compile per file: the body and every new instantiation line."""
    from xp_cuda._kernels import nvrtc_compile
    for units, names, line in (
            (C.units(), C.along_kernel_names(),
             lambda n: f"XC_GATHER_ALONG({n.rsplit('_', 1)[1]}, "),
            (S.units(), [f"xp_isin_{w}" for w in S.KEY_WIDTHS] +
             [f"xp_searchsorted_{w}" for w in S.KEY_WIDTHS], None)):
        text = units[names[0]]
        extra = [ln for n in names[1:] for ln in units[n].splitlines()[-1:]]
        src = text + "\n" + "\n".join(extra) + "\n"
        ptx = nvrtc_compile(src, name="new_functions_b.cu")
        entries = set(re.findall(r"\.entry (\w+)\(", ptx))
        missing = set(names) - entries
        assert not missing, f"kernels absent from the PTX: {sorted(missing)}"


# ---- the kernels on a GPU, against NumPy ---------------------------------------------------

gpu = pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")


@gpu
@pytest.mark.cuda
@pytest.mark.parametrize("dt", [np.int8, np.int16, np.float32, np.float64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_gather_along_kernel_bit_exact(rng, dt):
    import cupy as cp
    raw = rng.integers(0, 256, 64 * 37 * 5 * np.dtype(dt).itemsize, dtype=np.uint8)
    h = raw.view(dt).reshape(64, 37, 5)
    d = cp.asarray(h)
    for view in (lambda t: t, lambda t: t[::-1, 1::2, :], lambda t: t[:, ::-3, ::-1]):
        hv, dv = view(h), view(d)
        for axis in range(3):
            n = hv.shape[axis]
            ishape = hv.shape[:axis] + (2 * n + 3,) + hv.shape[axis + 1:]
            i = _indices(rng, ishape, n)
            want = _ref_along(hv, i, axis)
            out = cp.empty(want.shape, dt)
            bad = C.gather_along_checked(cp, dv, cp.asarray(i), axis, out)
            assert bad is None
            assert np.array_equal(np.ascontiguousarray(cp.asnumpy(out)).view(np.uint8),
                                  np.ascontiguousarray(want).view(np.uint8)), (dt, axis)
    i = np.zeros((64, 3, 5), np.int64)
    i[10, 1, 2] = 37
    bad = C.gather_along_checked(cp, d, cp.asarray(i), 1, cp.empty((64, 3, 5), dt))
    assert bad == 37


@gpu
@pytest.mark.cuda
def test_isin_kernel_staged_and_not(rng):
    import cupy as cp
    for t, n2 in ((np.float32, 100), (np.float64, 5000), (np.int8, 50), (np.uint16, 3000),
                  (np.int64, 2500), (np.uint64, 10)):
        if np.dtype(t).kind == "f":
            a2 = np.sort(np.concatenate([rng.standard_normal(n2), [NAN, -0.0]]).astype(t))
            a1 = np.concatenate([a2[::3], rng.standard_normal(3001), [NAN, 0.0]]).astype(t)
        else:
            info = np.iinfo(t)
            a2 = np.sort(rng.integers(info.min, info.max, n2, dtype=t, endpoint=True))
            a1 = np.concatenate([a2[::2], rng.integers(info.min, info.max, 3001, dtype=t)])
        for invert in (False, True):
            got = cp.asnumpy(S.isin(cp, cp.asarray(a2), cp.asarray(a1[::-1]), invert))
            np.testing.assert_array_equal(got, _ref_isin(a1[::-1], a2, invert),
                                          err_msg=f"{np.dtype(t).name} {n2} {invert}")


def test_fuse_refuses_the_new_gathers_by_name(v2025, device):
    """Inside fuse, take_along_axis, isin, eig and integer array indexing are refused with
    their own names (not a generic message about reading traced values)."""
    from xp_cuda.fusion import fuse
    x = xp.asarray(random_numpy(np.random.default_rng(3), (2, 3), xp.float64), device=device)
    i = xp.asarray(np.array([[0, 2, 1], [1, 1, 0]]), device=device)
    m = xp.asarray(random_numpy(np.random.default_rng(4), (3, 3), xp.float64), device=device)
    for f, args, what in ((lambda a, j: xp.take_along_axis(a, j, axis=1), (x, i),
                           "xp.take_along_axis"),
                          (lambda a, j: xp.isin(j, j), (x, i), "xp.isin"),
                          (lambda a, j: a[j[0, :], j[1, :]], (x, i), "integer array indexing"),
                          (lambda a: xp.linalg.eigvals(a), (m,), "xp.linalg.eig")):
        with pytest.raises(TypeError, match="move it outside") as e:
            fuse(f)(*args)
        assert what in str(e.value)
